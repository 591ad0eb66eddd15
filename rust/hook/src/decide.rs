//! Answering every act of a call from the policy, and the sentence the agent
//! and the person read.
//!
//! Each named act is put to the policy on its own; the call's answer is the
//! minimum. The sentence names the act that decided, the rule that decided
//! it (file and line) and the rule that would change it.

use chock_policy::{DecidedBy, Decision, Key, Layer, Policy, Reading, Verdict};

use crate::answer::HookAnswer;
use crate::naming::Named;

/// Who asks: the policy key's fields other than the action.
#[derive(Debug, Clone, Copy)]
pub struct Asker<'a> {
    /// The agent kind: `claude`, `cursor`, `gemini`, `codex`, or `git`.
    pub agent_kind: &'a str,
    /// The agent's own tool name (`Bash`, `run_shell_command`).
    pub tool: Option<&'a str>,
    /// The model, when the payload says.
    pub model: Option<&'a str>,
}

/// One act and the policy's answer to it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Judged {
    /// The action name, or `unnamed` for an act Chock could not name.
    pub action: String,
    /// What the act is about, by name only.
    pub subject: Option<String>,
    /// The policy's answer (a refusal for an unnamed act).
    pub verdict: Verdict,
    /// Why an act could not be named.
    pub unnamed: Option<String>,
}

/// The action written for an act that could not be named.
pub const UNNAMED: &str = "unnamed";

/// Puts every act to the policy.
pub fn judge(policy: &Policy, asker: &Asker<'_>, acts: Vec<Named>) -> Vec<Judged> {
    acts.into_iter()
        .map(|act| match act {
            Named::Act { action, subject } => {
                let key = Key {
                    agent_kind: asker.agent_kind.to_owned(),
                    model: asker.model.map(str::to_owned),
                    tool: asker.tool.map(str::to_owned),
                    action: action.clone(),
                };
                Judged {
                    verdict: policy.decide(&key, Reading::Act),
                    action,
                    subject,
                    unnamed: None,
                }
            }
            Named::Unnameable { subject, why } => Judged {
                action: UNNAMED.to_owned(),
                subject: Some(subject),
                verdict: Verdict {
                    decision: Decision::Deny,
                    decided_by: DecidedBy {
                        layer: Layer::Nothing,
                        file: None,
                        line: None,
                        rule: None,
                    },
                    suggestion: None,
                },
                unnamed: Some(why),
            },
        })
        .collect()
}

/// What a hook can do with a policy decision. A hook reaches the agent's
/// own prompt, which a person answers; it cannot reach a reviewer agent.
pub fn hook_answer(decision: Decision, can_ask: bool) -> HookAnswer {
    let answer = match decision {
        Decision::Allow => HookAnswer::Allow,
        // One yes from a person is at least as strict as one from a reviewer.
        Decision::AgentReview | Decision::Ask => HookAnswer::Ask,
        // A reviewer and then a person: the reviewer cannot be reached.
        Decision::AgentThenHuman | Decision::Deny => HookAnswer::Deny,
    };
    if answer == HookAnswer::Ask && !can_ask {
        HookAnswer::Deny
    } else {
        answer
    }
}

/// The act that decides the call: the first with the lowest decision.
pub fn deciding(judged: &[Judged]) -> Option<&Judged> {
    let lowest = judged.iter().map(|j| j.verdict.decision).min()?;
    judged.iter().find(|j| j.verdict.decision == lowest)
}

/// The call's decision: the minimum over its acts (`allow` for a call with no act).
pub fn decision(judged: &[Judged]) -> Decision {
    judged
        .iter()
        .map(|j| j.verdict.decision)
        .min()
        .unwrap_or(Decision::Allow)
}

/// The sentence for the answer: which act and rule decided, and the rule
/// that would change it.
pub fn reason(judged: &[Judged], answer: HookAnswer, agent_title: &str) -> String {
    let Some(decider) = deciding(judged) else {
        return "Chock: this call changes only the conversation; nothing to decide".to_owned();
    };
    let act = describe_act(decider);
    let others = judged.len().saturating_sub(1);
    let of = if others > 0 {
        format!(" (1 of {} acts in this call)", judged.len())
    } else {
        String::new()
    };
    if let Some(why) = &decider.unnamed {
        return format!("Chock refused {act}{of}: {why}");
    }
    let by = describe_decided_by(&decider.verdict.decided_by);
    let change = decider
        .verdict
        .suggestion
        .as_ref()
        .map(|s| format!(" To allow it, add `{}` to {}.", s.rule, s.block))
        .unwrap_or_default();
    let decision = decider.verdict.decision;
    match answer {
        HookAnswer::Allow => {
            let actions: Vec<&str> = judged.iter().map(|j| j.action.as_str()).collect();
            format!("Chock allows {}", actions.join(", "))
        }
        HookAnswer::Ask => {
            format!("Chock asks you about {act}{of}: {by} answers {decision}.{change}")
        }
        HookAnswer::Deny => match decision {
            Decision::Deny => format!("Chock refused {act}{of}: {by} answers deny.{change}"),
            Decision::AgentThenHuman => format!(
                "Chock refused {act}{of}: {by} wants a reviewer agent and then a person (agent_then_human), and a hook can reach only a person.{change}"
            ),
            _ => format!(
                "Chock refused {act}{of}: {by} wants a person to approve it ({decision}), and {agent_title}'s hooks cannot ask one. Run it yourself, or change the rule.{change}"
            ),
        },
    }
}

fn describe_act(judged: &Judged) -> String {
    match &judged.subject {
        Some(subject) if judged.action == UNNAMED => format!("`{subject}`"),
        Some(subject) => format!("`{}` ({subject})", judged.action),
        None => format!("`{}`", judged.action),
    }
}

fn describe_decided_by(by: &DecidedBy) -> String {
    let place = match (&by.file, by.line) {
        (Some(file), Some(line)) => format!(" at {}:{line}", file.display()),
        (Some(file), None) => format!(" in {}", file.display()),
        _ => String::new(),
    };
    let rule = by
        .rule
        .as_deref()
        .map(|r| format!(" `{r}`"))
        .unwrap_or_default();
    match by.layer {
        Layer::Project => format!("the project's rule{rule}{place}"),
        Layer::Org => format!("the organisation's rule{rule}{place} (no project can loosen it)"),
        Layer::Default => format!("Chock's shipped default{rule}"),
        Layer::Nothing => "no rule names it, so Chock".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chock_policy::{Pattern, Rule};

    fn policy(rules: &[(&str, Decision)]) -> Policy {
        let rules = rules
            .iter()
            .filter_map(|(action, decision)| {
                Pattern::parse(action)
                    .ok()
                    .map(|p| Rule::new(Some(p), *decision))
            })
            .collect();
        Policy::from_rules(rules, Vec::new())
    }

    fn asker() -> Asker<'static> {
        Asker {
            agent_kind: "claude",
            tool: Some("Bash"),
            model: None,
        }
    }

    fn act(action: &str) -> Named {
        Named::Act {
            action: action.to_owned(),
            subject: None,
        }
    }

    #[test]
    fn the_answer_is_the_minimum() {
        let policy = policy(&[
            ("exec.path.cd", Decision::Allow),
            ("exec.path.rm", Decision::Deny),
        ]);
        let judged = judge(
            &policy,
            &asker(),
            vec![act("exec.path.cd"), act("exec.path.rm")],
        );
        assert_eq!(decision(&judged), Decision::Deny);
        assert_eq!(
            deciding(&judged).map(|j| j.action.as_str()),
            Some("exec.path.rm")
        );
        let text = reason(&judged, HookAnswer::Deny, "Claude Code");
        assert!(
            text.contains("exec.path.rm") && text.contains("1 of 2"),
            "{text}"
        );
    }

    #[test]
    fn unnamed_acts_are_refused() {
        let policy = policy(&[]);
        let judged = judge(
            &policy,
            &asker(),
            vec![Named::Unnameable {
                subject: "file:///x".into(),
                why: "not http".into(),
            }],
        );
        assert_eq!(decision(&judged), Decision::Deny);
        assert!(reason(&judged, HookAnswer::Deny, "x").contains("not http"));
    }

    #[test]
    fn hooks_reach_only_a_person() {
        assert_eq!(hook_answer(Decision::AgentReview, true), HookAnswer::Ask);
        assert_eq!(
            hook_answer(Decision::AgentThenHuman, true),
            HookAnswer::Deny
        );
        assert_eq!(hook_answer(Decision::Ask, false), HookAnswer::Deny);
        assert_eq!(hook_answer(Decision::Allow, false), HookAnswer::Allow);
    }
}
