//! Answering every act of a call from the policy, and the sentence the agent
//! and the person read.
//!
//! Each named act is put to the policy on its own; the call's answer is the
//! minimum. The sentence names the act that decided, the rule that decided
//! it (file and line) and the rule that would change it.

use chock_gate::{Outcome, Refused, Route, Settled};
use chock_policy::{Answer, DecidedBy, Decision, Key, Layer, Policy, Question, Reading, Verdict};

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
    /// What a guard said of it: told to whoever is answered, never
    /// logged, since it may quote what the guard read.
    pub said: Option<String>,
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
                    said: None,
                }
            }
            Named::Unnameable { subject, why } => Judged {
                action: UNNAMED.to_owned(),
                subject: Some(subject),
                verdict: Verdict::bare(Decision::Deny, Layer::Nothing),
                unnamed: Some(why),
                said: None,
            },
        })
        .collect()
}

/// Whoever a hook's question reaches: the agent's own prompt, which a person
/// answers and whose answer Chock never hears, or nobody (an agent whose
/// hooks cannot ask, or a mode in which it will not show the ask).
struct AgentPrompt {
    shows: bool,
}

impl chock_policy::Asker for AgentPrompt {
    fn ask(&self, _question: &Question) -> Answer {
        if self.shows {
            Answer::Handed
        } else {
            Answer::Unavailable
        }
    }
}

/// The gate's end for one act's verdict on the hook route (see chock-gate):
/// `ask` and `agent_review` go to the agent's prompt when it will show one,
/// else are refused; `agent_then_human` is refused (no reviewer agent); an
/// allow that only a shipped default gives is no objection, because those
/// defaults were written for Chock's sandbox and a hook runs on the host.
pub fn settle(verdict: &Verdict, can_ask: bool) -> Settled {
    chock_gate::settle(
        Route::Hook,
        verdict,
        &AgentPrompt { shows: can_ask },
        || Question {
            action: String::new(),
            decision: verdict.decision,
            summary: String::new(),
            detail: Vec::new(),
            rules: verdict.suggestion.iter().cloned().collect(),
        },
    )
}

/// One act and the end the gate brought it to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ended {
    pub judged: Judged,
    pub settled: Settled,
}

/// A call's acts, each through the gate once: the answer, the log lines
/// and the sentence all read these ends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Call {
    pub acts: Vec<Ended>,
}

impl Call {
    /// Ends every act of a call whose agent shows an ask when `can_ask`.
    pub fn end(judged: Vec<Judged>, can_ask: bool) -> Call {
        Call {
            acts: judged
                .into_iter()
                .map(|judged| Ended {
                    settled: settle(&judged.verdict, can_ask),
                    judged,
                })
                .collect(),
        }
    }

    /// The act that decides the call: the first of the strictest ends.
    pub fn deciding(&self) -> Option<&Ended> {
        chock_gate::strictest_end(&self.acts, |ended| ended.settled.outcome)
    }

    /// The call's answer: its deciding act's; no objection for a call
    /// with no act (it changes only the conversation).
    pub fn answer(&self) -> HookAnswer {
        self.deciding().map_or(HookAnswer::Pass, |ended| {
            HookAnswer::of(ended.settled.outcome)
        })
    }

    /// The sentence for the answer: which act and rule decided, and the
    /// rule that would change it.
    pub fn reason(&self, agent_title: &str) -> String {
        let mut text = self.reason_body(agent_title);
        text.push_str(&held_sentence(self.acts.iter().map(|e| &e.judged)));
        text
    }

    fn actions(&self) -> String {
        let actions: Vec<&str> = self.acts.iter().map(|e| e.judged.action.as_str()).collect();
        actions.join(", ")
    }

    fn reason_body(&self, agent_title: &str) -> String {
        let Some(decider) = self.deciding() else {
            return "Chock: this call changes only the conversation; nothing to decide".to_owned();
        };
        let judged = &decider.judged;
        let act = describe_act(judged);
        let of = if self.acts.len() > 1 {
            format!(" (1 of {} acts in this call)", self.acts.len())
        } else {
            String::new()
        };
        if let Some(why) = &judged.unnamed {
            return format!("Chock refused {act}{of}: {why}");
        }
        let by = describe_decided_by(&judged.verdict.decided_by);
        let change = format!(
            "{}{}",
            change_sentence(&judged.verdict),
            control_sentence(&judged.action)
        );
        let decision = judged.verdict.decision;
        match decider.settled.outcome {
            Outcome::Go => format!("Chock allows {}", self.actions()),
            Outcome::NoObjection => format!(
                "Chock has no objection to {} (only its shipped defaults allow it), so {agent_title}'s own permissions decide",
                self.actions()
            ),
            Outcome::Prompt => {
                format!("Chock asks you about {act}{of}: {by} answers {decision}.{change}")
            }
            Outcome::Refused(Refused::NoReviewer) => format!(
                "Chock refused {act}{of}: {by} wants a reviewer agent and then a person (agent_then_human), and a hook can reach only a person.{change}"
            ),
            Outcome::Refused(Refused::Nobody) => format!(
                "Chock refused {act}{of}: {by} wants a person to approve it ({decision}), and {agent_title} cannot ask one here (its hooks cannot ask, or its permission mode does not show the question). Run it yourself, or change the rule.{change}"
            ),
            Outcome::Refused(_) => {
                format!("Chock refused {act}{of}: {by} answers {decision}.{change}")
            }
        }
    }
}

/// What each policy held back by its rollout stage would have answered:
/// an `observe` stage's refusal is a warning, told, never enforced.
pub fn held_sentence<'j>(judged: impl IntoIterator<Item = &'j Judged>) -> String {
    judged
        .into_iter()
        .filter_map(|j| j.verdict.decided_by.held.as_ref().map(|h| (j, h)))
        .map(|(j, held)| {
            format!(
                " The policy `{}` is rolled out at its `{}` stage: in force it would answer {} to `{}`.",
                held.policy,
                held.stage.as_str(),
                held.would,
                j.action
            )
        })
        .collect()
}

/// What would change the answer, as the gate words it (the rule computed
/// for this call's own key, so adding it changes this answer), else nothing.
pub fn change_sentence(verdict: &Verdict) -> String {
    chock_gate::Refusal::new(Refused::Denied, verdict).advice(chock_gate::Layout::Line)
}

/// Why a write to a control input is asked on its own, for its action;
/// nothing for any other.
fn control_sentence(action: &str) -> &'static str {
    let control = chock_policy::control::CONTROL_INPUTS
        .iter()
        .any(|input| chock_policy::control::control_write(input.kind) == action);
    if control {
        " The file is a control input: it configures Chock or an agent, or runs programs on your machine outside any sandbox, so a write to it is decided on its own, whatever rule allows other writes."
    } else {
        ""
    }
}

fn describe_act(judged: &Judged) -> String {
    match (&judged.subject, &judged.said) {
        (Some(subject), _) if judged.action == UNNAMED => format!("`{subject}`"),
        (Some(subject), Some(said)) => format!("`{}` ({subject}: {said})", judged.action),
        (Some(subject), None) => format!("`{}` ({subject})", judged.action),
        (None, Some(said)) => format!("`{}` ({said})", judged.action),
        (None, None) => format!("`{}`", judged.action),
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
        Layer::Policy => format!(
            "the installed policy `{}`{rule}{place}",
            by.policy.as_deref().unwrap_or("?")
        ),
        Layer::Default => format!("Chock's shipped default{rule}"),
        Layer::Nothing => "no rule names it, so Chock".to_owned(),
        Layer::Promise => format!("the session's own promise{rule}"),
        Layer::Stop => "a person's `chock stop`".to_owned(),
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
        let call = Call::end(judged, true);
        assert_eq!(call.answer(), HookAnswer::Deny);
        assert_eq!(
            call.deciding().map(|e| e.judged.action.as_str()),
            Some("exec.path.rm")
        );
        let text = call.reason("Claude Code");
        assert!(
            text.contains("exec.path.rm") && text.contains("1 of 2"),
            "{text}"
        );
    }

    #[test]
    fn a_control_write_says_why_it_is_asked() {
        let policy = policy(&[("call.write_file", Decision::Allow)]);
        let call = Call::end(
            judge(&policy, &asker(), vec![act("control.write.host")]),
            true,
        );
        assert_eq!(call.answer(), HookAnswer::Ask);
        let text = call.reason("Claude Code");
        assert!(text.contains("is a control input"), "{text}");
        let call = Call::end(judge(&policy, &asker(), vec![act("exec.path.rm")]), true);
        assert!(!call.reason("x").contains("control input"));
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
        let call = Call::end(judged, true);
        assert_eq!(call.answer(), HookAnswer::Deny);
        assert!(call.reason("x").contains("not http"));
    }

    #[test]
    fn hooks_reach_only_a_person() {
        let verdict = Verdict::bare;
        let act_answer = |v: &Verdict, can_ask| HookAnswer::of(settle(v, can_ask).outcome);
        let project = |d| verdict(d, Layer::Project);
        assert_eq!(
            act_answer(&project(Decision::AgentReview), true),
            HookAnswer::Ask
        );
        assert_eq!(
            act_answer(&project(Decision::AgentThenHuman), true),
            HookAnswer::Deny
        );
        assert_eq!(act_answer(&project(Decision::Ask), false), HookAnswer::Deny);
        assert_eq!(
            act_answer(&project(Decision::Allow), false),
            HookAnswer::Allow
        );
        // A shipped default's allow leaves the agent's own prompt in place.
        assert_eq!(
            act_answer(&verdict(Decision::Allow, Layer::Default), true),
            HookAnswer::Pass
        );
        assert_eq!(Call::end(vec![], true).answer(), HookAnswer::Pass);
    }

    #[test]
    fn a_rule_s_allow_and_a_default_s_meet_at_no_objection() {
        let policy = policy(&[("exec.path.cargo", Decision::Allow)]);
        let judged = judge(
            &policy,
            &asker(),
            vec![act("exec.path.cargo"), act("exec.path.tail")],
        );
        assert_eq!(Call::end(judged, true).answer(), HookAnswer::Pass);
        let judged = judge(&policy, &asker(), vec![act("exec.path.cargo")]);
        assert_eq!(Call::end(judged, true).answer(), HookAnswer::Allow);
    }
}
