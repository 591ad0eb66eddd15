//! Deciding one act: the policy's answer, a person when it asks, one line
//! in the decision log, and the sentence an agent reads when it is refused.

use chock_log::{AnsweredBy, Entry};
use chock_policy::{Decision, Key, Layer, Question, Reading, StartQuestion, Verdict};
use rmcp::{Peer, RoleServer};
use tokio_util::sync::CancellationToken;

use crate::ask::{CallAsker, Reply};
use crate::session::Session;
use crate::{AGENT_KIND, ROUTE};

/// One act a tool call asks for.
#[derive(Debug, Clone)]
pub struct Act {
    /// The tool the agent called.
    pub tool: &'static str,
    /// The action answered.
    pub action: String,
    /// What it is about, by name (logged and shown).
    pub subject: Option<String>,
    /// What a person reads besides the name (never logged).
    pub detail: Vec<String>,
}

/// Whether an `ask` may reach a person for this act.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Asking {
    /// The agent named it: a person may be asked.
    Person,
    /// A redirect hop: never asked, only a rule can allow it.
    NeverHop,
}

/// A tool a row read at start took away.
#[derive(Debug, Clone)]
pub struct Withheld {
    pub tool: &'static str,
    /// The sentence a call to it is refused with.
    pub why: String,
    /// Whether a rule (or a bundle, or a shipped default) said so; a tool
    /// withheld because nothing named its row is not mentioned to the
    /// agent at start, where it would cost context in every session.
    pub by_rule: bool,
}

/// A row read once at start.
pub struct StartRow {
    question: StartQuestion,
    action: String,
}

impl StartRow {
    pub fn third_party_tool(action: String) -> StartRow {
        StartRow {
            question: StartQuestion::ThirdPartyTool {
                action: action.clone(),
            },
            action,
        }
    }

    /// `nix.build`: whether the session has provide_tool at all.
    pub fn nix_build() -> StartRow {
        StartRow {
            question: StartQuestion::NixBuild,
            action: "nix.build".into(),
        }
    }
}

/// What decided, in words: the rule and its place, or the default, or nothing.
pub fn decided_by_words(verdict: &Verdict) -> String {
    let by = &verdict.decided_by;
    match (&by.rule, &by.file, by.line) {
        (Some(rule), Some(file), Some(line)) => {
            format!("{} {rule} ({}:{line})", by.layer.describe(), file.display())
        }
        (Some(rule), _, _) => format!("{} {rule}", by.layer.describe()),
        _ => "no rule (an act no rule names is asked about)".into(),
    }
}

/// "To allow it, add to ...": the rule and where it goes, when there is one.
fn change_sentence(verdict: &Verdict) -> String {
    match &verdict.suggestion {
        Some(s) => format!(" To allow it, add to {}: {},", s.block, s.rule),
        None => String::new(),
    }
}

impl Session {
    fn entry(
        &self,
        act_tool: &str,
        action: &str,
        subject: Option<&str>,
        verdict: &Verdict,
    ) -> Entry {
        let key = Key::new(action).with_tool(act_tool);
        let mut entry =
            Entry::decided(ROUTE, self.project.dir.display().to_string(), &key, verdict);
        entry.subject = subject.map(str::to_owned);
        entry
    }

    fn record(&self, mut entry: Entry, decision: Decision, answered_by: AnsweredBy) {
        entry.decision = decision.as_str().into();
        entry.answered_by = answered_by;
        if self.log.append(&entry).is_none() {
            tracing::warn!("the decision for {} was not logged", entry.action);
        }
    }

    /// The asker for one call of `tool`, to hand to blocking code (it must
    /// be called from the runtime's handle, on a thread of its own).
    pub fn asker(
        &self,
        peer: &Peer<RoleServer>,
        cancel: &CancellationToken,
        tool: &str,
    ) -> CallAsker {
        CallAsker {
            askers: self.askers.clone(),
            peer: peer.clone(),
            tool: tool.into(),
            project: self.project.dir.display().to_string(),
            runtime: tokio::runtime::Handle::current(),
            cancel: cancel.clone(),
        }
    }

    /// Reads one start row and logs it; `None` when the tool stays, else
    /// why it does not.
    pub fn start_row(&self, tool: &'static str, row: &StartRow) -> Option<Withheld> {
        let answer = match self.policy.at_start(AGENT_KIND, &row.question) {
            Ok(answer) => answer,
            Err(e) => {
                return Some(Withheld {
                    tool,
                    why: format!("{} cannot be named: {e}", row.action),
                    by_rule: true,
                });
            }
        };
        let decision = answer.verdict.decision;
        if answer.verdict.decided_by.layer != Layer::Nothing {
            let entry = self.entry(tool, &row.action, None, &answer.verdict);
            self.record(
                entry,
                decision,
                AnsweredBy::of_layer(answer.verdict.decided_by.layer),
            );
        }
        (!answer.granted).then(|| Withheld {
            tool,
            by_rule: answer.verdict.decided_by.layer != Layer::Nothing,
            why: format!(
                "{tool} is not offered: {} answered {} at start, by {}{}",
                row.action,
                decision,
                decided_by_words(&answer.verdict),
                match row.question {
                    // Read before the first call, when nobody can be asked.
                    StartQuestion::NixBuild => format!(
                        "; only allow offers it, because nobody can be asked at start.{}",
                        change_sentence(&answer.verdict)
                    ),
                    _ => String::new(),
                }
            ),
        })
    }

    /// Decides `act`, asks a person when the answer is `ask` and one can be
    /// reached, and logs the final answer. `Ok` means go ahead; `Err` holds
    /// the sentence the agent reads.
    pub async fn gate(
        &self,
        peer: &Peer<RoleServer>,
        cancel: &CancellationToken,
        act: &Act,
        asking: Asking,
    ) -> Result<(), String> {
        let key = Key::new(act.action.clone())
            .with_tool(act.tool)
            .with_agent_kind(AGENT_KIND);
        let verdict = self.policy.decide(&key, Reading::Act);
        let entry = self.entry(act.tool, &act.action, act.subject.as_deref(), &verdict);
        let action = &act.action;
        match verdict.decision {
            Decision::Allow => {
                self.record(
                    entry,
                    Decision::Allow,
                    AnsweredBy::of_layer(verdict.decided_by.layer),
                );
                Ok(())
            }
            Decision::Deny => {
                self.record(
                    entry,
                    Decision::Deny,
                    AnsweredBy::of_layer(verdict.decided_by.layer),
                );
                Err(format!(
                    "refused: {action} is denied by {}.{}",
                    decided_by_words(&verdict),
                    change_sentence(&verdict)
                ))
            }
            Decision::AgentThenHuman => {
                self.record(entry, verdict.decision, AnsweredBy::Nobody);
                Err(format!(
                    "refused: {action} needs a reviewer agent and then a person ({}), and chock mcp has no reviewer agent.{}",
                    decided_by_words(&verdict),
                    change_sentence(&verdict)
                ))
            }
            // A reviewer agent's yes is asked of a person here: chock mcp has
            // no reviewer, and a person is the stricter of the two.
            Decision::Ask | Decision::AgentReview => {
                if asking == Asking::NeverHop {
                    self.record(entry, verdict.decision, AnsweredBy::Nobody);
                    return Err(format!(
                        "refused: a redirect led to {action}, which no rule allows, and a redirect hop is never asked (a page could otherwise ask at every hop).{}",
                        change_sentence(&verdict)
                    ));
                }
                let question = question(act, &verdict);
                let asker = self.asker(peer, cancel, act.tool);
                let heard = tokio::task::spawn_blocking(move || asker.ask_why(&question))
                    .await
                    .unwrap_or_else(|e| Some(Reply::Unanswered(format!("asking failed ({e})"))));
                match heard {
                    Some(Reply::Yes) => {
                        self.record(entry, Decision::Allow, AnsweredBy::Person);
                        Ok(())
                    }
                    Some(Reply::No) => {
                        self.record(entry, Decision::Deny, AnsweredBy::Person);
                        Err(format!(
                            "refused by a person: {action} was asked about and the answer was no. Do not ask again for the same act; tell the person what you wanted it for."
                        ))
                    }
                    Some(Reply::Unanswered(why)) => {
                        self.record(entry, verdict.decision, AnsweredBy::Nobody);
                        Err(format!(
                            "refused: {action} needs a person's yes and {why}.{}",
                            change_sentence(&verdict)
                        ))
                    }
                    None => {
                        self.record(entry, verdict.decision, AnsweredBy::Nobody);
                        Err(format!(
                            "refused: {action} needs a person's yes, and nobody can be asked: this client does not support MCP elicitation and no `chock approve` is running. Run `chock approve` in another terminal and call again.{}",
                            change_sentence(&verdict)
                        ))
                    }
                }
            }
        }
    }
}

/// The policy's question for `act`: what a yes lets happen, what a person
/// reads, and the rule that would answer it next time.
fn question(act: &Act, verdict: &Verdict) -> Question {
    let summary = match &act.subject {
        Some(subject) => format!("{} wants {} ({subject})", act.tool, act.action),
        None => format!("{} wants {}", act.tool, act.action),
    };
    let mut detail = act.detail.clone();
    detail.push(format!(
        "answered {} by {}",
        verdict.decision,
        decided_by_words(verdict)
    ));
    Question {
        action: act.action.clone(),
        decision: verdict.decision,
        summary,
        detail,
        rules: verdict.suggestion.iter().cloned().collect(),
    }
}
