//! A refusal's words, for every route: why nobody said yes, and what would
//! change the answer (the rule to add and the block it goes in). Every
//! route writes them from [`Refusal`]; the wording is in [`Refusal::words`]
//! and nowhere else.

use chock_policy::{Decision, Layer, Suggestion, Verdict};

use crate::Refused;

/// What would change a refused answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// A rule to add, and the block it goes in (computed by the policy for
    /// the key the route asked with, so adding it changes that answer).
    Add(Suggestion),
    /// The session's own promise: only `policy.widen` lifts it.
    Promise,
    /// An installed policy's rule as specific as a rule for this call can
    /// be: no rule in `chock.zon` raises it.
    Ceiling {
        policy: String,
        /// Where its rule is written, when known.
        at: Option<String>,
    },
    /// Nothing the project can write changes it.
    Nothing,
}

impl Change {
    /// What would change `verdict`'s answer.
    pub fn of(verdict: &Verdict) -> Change {
        let by = &verdict.decided_by;
        match (&verdict.suggestion, &by.policy) {
            (Some(suggestion), _) => Change::Add(suggestion.clone()),
            (None, _) if by.layer == Layer::Promise => Change::Promise,
            (None, Some(id)) if verdict.decision < Decision::Allow => Change::Ceiling {
                policy: id.clone(),
                at: by
                    .file
                    .as_ref()
                    .zip(by.line)
                    .map(|(file, line)| format!("{}:{line}", file.display())),
            },
            (None, _) => Change::Nothing,
        }
    }
}

/// Where the words are read: one line an agent reads, or lines at a
/// person's terminal (the rule on a line of its own, ready to paste).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    Line,
    Lines,
}

/// One refused act: why, and what would change it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub why: Refused,
    pub change: Change,
}

/// A refusal in words: why nobody said yes (empty where the route's own
/// sentence says it), and the advice with the rule it names.
struct Words {
    why: &'static str,
    advice: Option<String>,
    rule: Option<String>,
}

impl Refusal {
    /// The refusal `why` of an act the rules answered with `verdict`.
    pub fn new(why: Refused, verdict: &Verdict) -> Refusal {
        Refusal {
            why,
            change: Change::of(verdict),
        }
    }

    /// The one place a refusal's wording lives.
    fn words(&self) -> Words {
        let why = match self.why {
            Refused::Cancelled => {
                "the client dismissed the question without a person answering it (Claude Code in print mode cancels every question), and no `chock approve` is running"
            }
            Refused::NoReviewer => {
                "it needs a reviewer agent's yes and then a person's, and only Chock's own session has a reviewer agent (when chock.zon names its kind in .review), so a person's yes alone cannot lift it"
            }
            Refused::ReviewFailed => {
                "it needs a reviewer agent's yes and then a person's, and the reviewer agent gave no answer"
            }
            Refused::Nobody => "nobody could be asked",
            Refused::Stopped => {
                "a person stopped Chock (`chock stop`), and every call is refused until they resume it"
            }
            Refused::Denied | Refused::ReviewerSaidNo | Refused::PersonSaidNo => "",
        };
        let (advice, rule) = match &self.change {
            Change::Add(s) => (
                Some(format!("to allow it, add to {}:", s.block)),
                Some(s.rule.clone()),
            ),
            Change::Promise => (
                Some(
                    "only policy.widen, naming that promise, can lift it, and a person is asked"
                        .into(),
                ),
                None,
            ),
            Change::Ceiling { policy, at } => (
                Some(format!(
                    "the installed policy `{policy}` is a ceiling here: its rule is as specific as a rule for this call can be, and of two equal rules the more restrictive wins, so no rule in chock.zon raises it; to allow it, remove the policy (`chock remove {policy}`) or change its rule{}",
                    at.as_ref()
                        .map(|at| format!(" at {at}"))
                        .unwrap_or_default()
                )),
                None,
            ),
            Change::Nothing => (None, None),
        };
        Words { why, advice, rule }
    }

    /// Why nobody said yes, in words; empty for a rule's deny and for a
    /// no (the route's sentence says who answered).
    pub fn why_words(&self) -> &'static str {
        self.words().why
    }

    /// The rule to add, as ZON, when one would change the answer.
    pub fn rule(&self) -> Option<String> {
        self.words().rule
    }

    /// What would change the answer, laid out for its reader; empty when
    /// nothing the project writes would. A line is one sentence with a
    /// leading space, to follow the route's own; lines start on a new line.
    pub fn advice(&self, layout: Layout) -> String {
        let Words { advice, rule, .. } = self.words();
        let Some(advice) = advice else {
            return String::new();
        };
        match (layout, rule) {
            (Layout::Line, Some(rule)) => format!(" {} {rule}", capitalised(&advice)),
            (Layout::Line, None) => format!(" {}.", capitalised(&advice)),
            (Layout::Lines, Some(rule)) => format!("\n  {advice}\n    {rule},"),
            (Layout::Lines, None) => format!("\n  {advice}"),
        }
    }
}

fn capitalised(text: &str) -> String {
    let mut chars = text.chars();
    chars
        .next()
        .map(|first| first.to_uppercase().chain(chars).collect())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn verdict(decision: Decision, layer: Layer, suggestion: Option<Suggestion>) -> Verdict {
        let mut v = Verdict::bare(decision, layer);
        v.suggestion = suggestion;
        v
    }

    fn add() -> Suggestion {
        Suggestion {
            rule: ".{ .action = \"git.push\", .decision = .allow }".into(),
            block: ".policy.rules in /p/chock.zon".into(),
        }
    }

    #[test]
    fn the_rule_and_its_block_read_the_same_on_a_line_and_at_a_terminal() {
        let refusal = Refusal::new(
            Refused::Denied,
            &verdict(Decision::Deny, Layer::Project, Some(add())),
        );
        assert_eq!(
            refusal.advice(Layout::Line),
            " To allow it, add to .policy.rules in /p/chock.zon: .{ .action = \"git.push\", .decision = .allow }"
        );
        assert_eq!(
            refusal.advice(Layout::Lines),
            "\n  to allow it, add to .policy.rules in /p/chock.zon:\n    .{ .action = \"git.push\", .decision = .allow },"
        );
        assert_eq!(refusal.rule(), Some(add().rule));
        assert_eq!(refusal.why_words(), "");
    }

    #[test]
    fn a_promise_and_a_ceiling_name_what_lifts_them_and_nothing_says_nothing() {
        let promise = Refusal::new(
            Refused::Denied,
            &verdict(Decision::Deny, Layer::Promise, None),
        );
        assert!(promise.advice(Layout::Line).contains("policy.widen"));
        assert_eq!(promise.rule(), None);
        let mut packaged = verdict(Decision::Ask, Layer::Policy, None);
        packaged.decided_by.policy = Some("acme".into());
        let ceiling = Refusal::new(Refused::Nobody, &packaged);
        assert!(
            ceiling
                .advice(Layout::Lines)
                .contains("remove the policy (`chock remove acme`)")
        );
        assert_eq!(ceiling.why_words(), "nobody could be asked");
        let none = Refusal::new(
            Refused::Nobody,
            &verdict(Decision::Ask, Layer::Nothing, None),
        );
        assert_eq!(none.advice(Layout::Line), "");
        assert_eq!(none.advice(Layout::Lines), "");
    }
}
