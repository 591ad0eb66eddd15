//! Answering one host under its two names: the phase name
//! `nix.net.eval.<reversed host>.<port>` and the either-phase name
//! `nix.net.<reversed host>.<port>`, read together by
//! [`Policy::decide_either`] (the most specific rule across both names
//! decides, each organisation bundle a ceiling on the pair).

use chock_policy::names::{self, NameError, Phase};
use chock_policy::{Endpoint, Key, Policy, Reading, Verdict};

/// Who is asking: the rest of the policy key, and the log's route.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Asking {
    pub agent_kind: String,
    pub model: Option<String>,
    pub tool: Option<String>,
    /// The decision log's route: `inputs` at session start, `build` at
    /// build time (or the route of the command that needed the build).
    pub route: chock_gate::Route,
}

impl Asking {
    /// Session start: the main agent, no tool, route `inputs`.
    pub fn at_start() -> Asking {
        Asking {
            agent_kind: "main".into(),
            model: None,
            tool: None,
            route: chock_gate::Route::Inputs,
        }
    }

    /// A build the main agent asked for through `tool`, route `build`.
    pub fn at_build(tool: Option<&str>) -> Asking {
        Asking {
            agent_kind: "main".into(),
            model: None,
            tool: tool.map(str::to_string),
            route: chock_gate::Route::Build,
        }
    }

    pub(crate) fn key(&self, action: &str) -> Key {
        Key {
            agent_kind: self.agent_kind.clone(),
            model: self.model.clone(),
            tool: self.tool.clone(),
            action: action.to_string(),
        }
    }
}

/// The answer for one host: both its names and the verdict.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostVerdict {
    /// `nix.net.eval.<reversed>.<port>`: the name logged and shown.
    pub action: String,
    /// `nix.net.<reversed>.<port>`.
    pub either: String,
    pub verdict: Verdict,
}

/// The act reading's answer for `endpoint` in the eval phase.
pub fn decide_host(
    policy: &Policy,
    asking: &Asking,
    endpoint: &Endpoint,
) -> Result<HostVerdict, NameError> {
    let action = names::nix_net(Phase::Eval, &endpoint.host, endpoint.port)?;
    let either = names::nix_net_either(&endpoint.host, endpoint.port)?;
    let verdict = policy.decide_either(&asking.key(&action), &asking.key(&either), Reading::Act);
    Ok(HostVerdict {
        action,
        either,
        verdict,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use chock_policy::{Decision, Pattern, Rule};

    fn rule(action: &str, decision: Decision) -> Rule {
        Rule::new(Some(Pattern::parse(action).expect("pattern")), decision)
    }

    fn decide(project: Vec<Rule>, host: &str) -> HostVerdict {
        let policy = Policy::from_rules(project, vec![]);
        let endpoint = Endpoint {
            scheme: "https".into(),
            host: host.into(),
            port: 443,
        };
        decide_host(&policy, &Asking::at_start(), &endpoint).expect("named")
    }

    /// The seed's table: a host rule covers both phases, `nix.net.eval.*`
    /// lets inputs resolve, `nix.net.*` turns the rest off.
    #[test]
    fn the_seeds_table_answers_inputs() {
        let table = || {
            vec![
                rule("nix.net.com.github.443", Decision::Allow),
                rule("nix.net.eval.*", Decision::Allow),
                rule("nix.net.build.*", Decision::Ask),
                rule("nix.net.*", Decision::Deny),
            ]
        };
        assert_eq!(
            decide(table(), "github.com").verdict.decision,
            Decision::Allow
        );
        assert_eq!(
            decide(table(), "example.org").verdict.decision,
            Decision::Allow
        );
        let off = vec![rule("nix.net.*", Decision::Deny)];
        assert_eq!(decide(off, "example.org").verdict.decision, Decision::Deny);
        let build_only = vec![rule("nix.net.build.*", Decision::Allow)];
        assert_eq!(
            decide(build_only, "example.org").verdict.decision,
            Decision::Ask
        );
    }

    #[test]
    fn both_names_are_given_and_the_phase_rule_suggested() {
        let answer = decide(vec![], "api.github.com");
        assert_eq!(answer.action, "nix.net.eval.com.github.api.443");
        assert_eq!(answer.either, "nix.net.com.github.api.443");
        assert_eq!(answer.verdict.decision, Decision::Ask);
        let suggestion = answer.verdict.suggestion.expect("a rule to write");
        assert!(
            suggestion
                .rule
                .contains("\"nix.net.eval.com.github.api.443\""),
            "{}",
            suggestion.rule
        );
    }
}
