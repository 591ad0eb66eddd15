//! Questions read once, before the first turn, when nobody can be asked:
//! what each answer does there. The policy gives the verdict
//! ([`Policy::start_verdict`]); only here is it spent.
//!
//! | question | action | granted by |
//! |---|---|---|
//! | provide_tool exists | `nix.build` | `allow` only |
//! | the write-and-execute rule is lifted | `sandbox.jit` | `allow` only |
//! | the project's style rules run on writes | `style.parse` | `allow` only |
//! | a model may be used | `provider.<instance>.<model>` | `allow` only |
//! | a host reached at start | `mcp.<s>.host.*`, `nix.net.eval.*` | `allow` only |
//! | an approved apply may move a branch | `workspace.integrate` | anything but `deny` |
//! | a third-party tool is offered | `mcp.<s>.tool.<t>`, `plugin.<p>.tool.<t>` | anything but `deny` |

use chock_log::AnsweredBy;
use chock_policy::{Decision, NameError, Policy, StartQuestion, Verdict};

use crate::{Outcome, Refused, Settled};

/// How a start question's verdict is spent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StartRule {
    /// Nobody can be asked, so only `allow` grants it.
    OnlyAllow,
    /// A capability kept unless denied: what it does is asked about per
    /// act later (a tool's calls), or it was approved already (an apply).
    AnythingButDeny,
}

impl StartRule {
    /// The rule for `question`.
    pub fn of(question: &StartQuestion) -> StartRule {
        match question {
            StartQuestion::NixBuild
            | StartQuestion::SandboxJit
            | StartQuestion::StyleParse
            | StartQuestion::ModelSelect { .. }
            | StartQuestion::Host { .. } => StartRule::OnlyAllow,
            StartQuestion::WorkspaceIntegrate | StartQuestion::ThirdPartyTool { .. } => {
                StartRule::AnythingButDeny
            }
        }
    }

    /// Whether `decision` grants the question.
    pub fn grants(self, decision: Decision) -> bool {
        match self {
            StartRule::OnlyAllow => decision == Decision::Allow,
            StartRule::AnythingButDeny => decision != Decision::Deny,
        }
    }
}

/// The answer to a start question: yes or no, and the verdict behind it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StartAnswer {
    pub granted: bool,
    pub verdict: Verdict,
}

impl StartAnswer {
    /// The act's end, as the log records it: the rules' decision, given by
    /// the layer that decided (nobody is asked at start); a refusal says
    /// why nobody could lift it.
    pub fn settled(&self) -> Settled {
        let decision = self.verdict.decision;
        let outcome = match (self.granted, decision) {
            (true, _) => Outcome::Go,
            (false, Decision::Deny) => Outcome::Refused(Refused::Denied),
            (false, Decision::AgentThenHuman) => Outcome::Refused(Refused::NoReviewer),
            (false, _) => Outcome::Refused(Refused::Nobody),
        };
        Settled {
            outcome,
            decision,
            answered_by: AnsweredBy::of_layer(self.verdict.decided_by.layer),
            scope: None,
        }
    }
}

/// Answers `question` for an agent of `agent_kind` before the first turn.
pub fn at_start(
    policy: &Policy,
    agent_kind: &str,
    question: &StartQuestion,
) -> Result<StartAnswer, NameError> {
    let verdict = policy.start_verdict(agent_kind, question)?;
    Ok(StartAnswer {
        granted: StartRule::of(question).grants(verdict.decision),
        verdict,
    })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Every start question, with the action a rule names to answer it
    /// (the gate's table test walks them on every route).
    pub(crate) fn questions() -> Vec<(StartQuestion, &'static str)> {
        vec![
            (StartQuestion::NixBuild, "nix.build"),
            (StartQuestion::SandboxJit, "sandbox.jit"),
            (StartQuestion::StyleParse, "style.parse"),
            (StartQuestion::WorkspaceIntegrate, "workspace.integrate"),
            (
                StartQuestion::ModelSelect {
                    instance: "work".into(),
                    model: "m-1".into(),
                },
                "provider.work.m-1",
            ),
            (
                StartQuestion::ThirdPartyTool {
                    action: "mcp.time.tool.now".into(),
                },
                "mcp.time.tool.now",
            ),
            (
                StartQuestion::Host {
                    action: "mcp.notion.host.com.notion".into(),
                },
                "mcp.notion.host.com.notion",
            ),
        ]
    }

    #[test]
    fn a_start_answer_ends_as_the_rule_s_word_with_nobody_asked() {
        use chock_policy::{Layer, Pattern, Rule};
        let end = |decision| {
            let rule = Rule::new(
                Some(Pattern::parse("nix.build").expect("pattern")),
                decision,
            );
            let policy = Policy::from_rules(vec![rule], vec![]);
            let settled = at_start(&policy, "main", &StartQuestion::NixBuild)
                .expect("named")
                .settled();
            (settled.outcome, settled.decision, settled.answered_by)
        };
        assert_eq!(
            end(Decision::Allow),
            (Outcome::Go, Decision::Allow, AnsweredBy::Rule)
        );
        assert_eq!(
            end(Decision::Deny),
            (
                Outcome::Refused(Refused::Denied),
                Decision::Deny,
                AnsweredBy::Rule
            )
        );
        assert_eq!(
            end(Decision::Ask),
            (
                Outcome::Refused(Refused::Nobody),
                Decision::Ask,
                AnsweredBy::Rule
            )
        );
        let unnamed = Policy::from_rules(vec![], vec![]);
        let settled = at_start(&unnamed, "main", &StartQuestion::NixBuild)
            .expect("named")
            .settled();
        assert_eq!(settled.answered_by, AnsweredBy::of_layer(Layer::Nothing));
    }

    #[test]
    fn a_name_that_cannot_be_an_action_is_an_error_not_a_grant() {
        let policy = Policy::from_rules(vec![], vec![]);
        let question = StartQuestion::ModelSelect {
            instance: "no.dots".into(),
            model: "m".into(),
        };
        assert!(at_start(&policy, "main", &question).is_err());
    }
}
