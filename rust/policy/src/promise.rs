//! A session's own promises (`restrict_self` in `chock run`): a further
//! term of the minimum every answer of a [`Policy`] takes, once a session
//! binds them to it. Every route that decides on the session's behalf
//! reads the same policy (the tool server's calls, the router's hosts for
//! run_command, a build's and its inputs' hosts, `model.select`), so one
//! binding holds them all.

use std::sync::{Arc, OnceLock};

use crate::{DecidedBy, Decision, Layer, Policy, Verdict};

/// The most an action may be answered, beside the rules. It can only
/// lower an answer, never raise one.
pub trait Ceiling: Send + Sync {
    /// The most `action` may be answered, and the promise that says so as
    /// it is shown in a refusal; `None` when nothing bounds it.
    fn ceiling(&self, action: &str) -> Option<(Decision, String)>;
}

/// A second binding of a policy that is already bound.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the session's ceiling is already set")]
pub struct AlreadyBound;

/// The ceiling a policy is bound by, set at most once.
#[derive(Default)]
pub(crate) struct Bound(OnceLock<Arc<dyn Ceiling>>);

impl std::fmt::Debug for Bound {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.get().is_some() {
            "Bound(set)"
        } else {
            "Bound(unset)"
        })
    }
}

impl Policy {
    /// Bounds every later answer of this policy by `ceiling`, a further
    /// term of each decision's minimum; set once (a second is refused).
    pub fn bound_by(&self, ceiling: Arc<dyn Ceiling>) -> Result<(), AlreadyBound> {
        self.bound.0.set(ceiling).map_err(|_| AlreadyBound)
    }

    /// `verdict` for `action` held under the bound ceiling: where a
    /// promise is lower, it is the answer, and it names the promise (no
    /// rule to add can lift it).
    pub(crate) fn promised(&self, verdict: Verdict, action: &str) -> Verdict {
        match self.bound.0.get().and_then(|c| c.ceiling(action)) {
            Some((ceiling, promise)) if ceiling < verdict.decision => Verdict {
                decision: ceiling,
                decided_by: DecidedBy {
                    layer: Layer::Promise,
                    file: None,
                    line: None,
                    rule: Some(promise),
                    policy: None,
                    held: None,
                    identity: None,
                },
                suggestion: None,
            },
            _ => verdict,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Key, Reading, Rule};

    /// Promises `net.*` and the either-phase `nix.net.org.*` at most deny.
    struct OnNet;

    impl Ceiling for OnNet {
        fn ceiling(&self, action: &str) -> Option<(Decision, String)> {
            (action.starts_with("net.") || action.starts_with("nix.net.org."))
                .then(|| (Decision::Deny, "`net.*` at most deny".into()))
        }
    }

    fn allowing(actions: &[&str]) -> Policy {
        Policy::from_rules(
            actions
                .iter()
                .map(|a| {
                    let pattern = crate::Pattern::parse(a).expect("a pattern");
                    Rule::new(Some(pattern), Decision::Allow)
                })
                .collect(),
            Vec::new(),
        )
    }

    #[test]
    fn a_bound_policy_answers_every_reading_under_the_promise() {
        let policy = allowing(&["net.connect.*", "call.write_file", "nix.net.*"]);
        let key = Key::new("net.connect.org.example.443");
        assert_eq!(policy.decide(&key, Reading::Act).decision, Decision::Allow);
        policy.bound_by(Arc::new(OnNet)).expect("first binding");
        let verdict = policy.decide(&key, Reading::Act);
        assert_eq!(verdict.decision, Decision::Deny);
        assert_eq!(verdict.decided_by.layer, Layer::Promise);
        assert!(verdict.suggestion.is_none());
        assert_eq!(
            policy
                .decide_chain(
                    &["main", "tester"],
                    &key.with_agent_kind("tester"),
                    Reading::Act
                )
                .decided_by
                .layer,
            Layer::Promise
        );
        // A build's host, when the promise covers either of its names.
        let either = policy.decide_either(
            &Key::new("nix.net.build.org.example.443"),
            &Key::new("nix.net.org.example.443"),
            Reading::Act,
        );
        assert_eq!(either.decision, Decision::Deny);
        // What no promise covers is the rules' answer.
        assert_eq!(
            policy
                .decide(&Key::new("call.write_file"), Reading::Act)
                .decision,
            Decision::Allow
        );
        assert!(policy.bound_by(Arc::new(OnNet)).is_err());
    }
}
