//! Deciding one act: the policy's answer, a person when it asks, one line
//! in the decision log, and the sentence an agent reads when it is refused.

use std::future::Future;
use std::pin::Pin;

use chock_gate::{Offer, Outcome, Refused, Review, Scope, Settled, Step};
use chock_log::AnsweredBy;
use chock_policy::{Answer, Decision, Key, Layer, Question, Reading, StartQuestion, Verdict};
use tokio_util::sync::CancellationToken;

use crate::ask::{CallAsker, Client, Reply};
use crate::session::Session;
use crate::{AGENT_KIND, ROUTE};

/// One act a tool call asks for.
#[derive(Debug, Clone)]
pub struct Act<'a> {
    /// The tool the agent called (a gateway's tool is `<server>__<tool>`).
    pub tool: &'a str,
    /// The action answered.
    pub action: String,
    /// What it is about, by name (logged and shown).
    pub subject: Option<String>,
    /// What a person reads besides the name (never logged).
    pub detail: Vec<String>,
}

/// How much of a call's arguments a question shows.
const ARGUMENTS_SHOWN: usize = 2048;

/// A call's arguments as a person reads them when asked: compact JSON (no
/// control character survives its escaping), cut at [`ARGUMENTS_SHOWN`]
/// bytes with what was left out counted. A detail line, so never logged.
pub(crate) fn arguments_line(arguments: &impl serde::Serialize) -> String {
    let Ok(text) = serde_json::to_string(arguments) else {
        return "arguments: (not JSON)".into();
    };
    if text.len() <= ARGUMENTS_SHOWN {
        return format!("arguments: {text}");
    }
    let mut end = ARGUMENTS_SHOWN;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!(
        "arguments: {}… ({} bytes more)",
        &text[..end],
        text.len() - end
    )
}

/// Whether an `ask` may reach a person for this act.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Asking {
    /// The agent named it: a person may be asked.
    Person,
    /// A redirect hop: never asked, only a rule can allow it.
    NeverHop,
    /// A background command: nobody waits for its answer, so only a rule
    /// can allow it.
    NeverBackground,
}

/// A reviewer agent: answers an act whose rules said `agent_review` or
/// `agent_then_human` before any person is asked. Only Chock's own session
/// has one (`chock run`, `chock acp`, when `chock.zon` names its kind), set
/// once per session ([`crate::local::InProcess::reviewed_by`]).
pub trait Reviewer: Send + Sync {
    /// The reviewer's answer to `asked`; it never fails: a reviewer that
    /// cannot answer says [`Review::Failed`] and why.
    fn review<'a>(
        &'a self,
        asked: ForReview<'a>,
    ) -> Pin<Box<dyn Future<Output = Reviewed> + Send + 'a>>;
}

/// Told of each decision the gate logs for a session, as it is logged: the
/// tool called, the action, the decision and who answered. Only Chock's
/// own session has one (`chock run --json` shows them), set once per
/// session ([`crate::local::InProcess::observed_by`]).
pub trait Decided: Send + Sync {
    fn decided(&self, tool: &str, action: &str, decision: Decision, answered_by: AnsweredBy);
}

/// The action of the log line an "always" writes: the rule it added to
/// `chock.zon`.
pub const POLICY_EDIT: &str = "policy.edit";

/// What a reviewer is given: the act, the rule that answered, and whose act it is.
pub struct ForReview<'a> {
    pub act: &'a Act<'a>,
    pub decision: Decision,
    /// The rule that answered, in words ([`decided_by_words`]).
    pub rule: String,
    /// The agent's name as the log has it, and the kinds it was spawned through.
    pub agent: String,
    pub chain: Vec<String>,
}

/// A reviewer's answer: yes, no, or none, with its reason (or why it gave none).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reviewed {
    pub review: Review,
    pub reason: String,
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

/// What would change the answer, as the gate words it: the rule and the
/// block it goes in, or for a session's own promise the action that can
/// lift it.
fn change_sentence(verdict: &Verdict) -> String {
    chock_gate::Refusal::new(Refused::Denied, verdict).advice(chock_gate::Layout::Line)
}

impl Session {
    /// Why an `agent_then_human` act of `client` found no reviewer agent, in words.
    fn no_reviewer_words(&self, client: &Client, asking: Asking) -> String {
        match (self.reviewer.get(), client) {
            (Some(_), _) if asking == Asking::NeverHop => {
                "a redirect hop is never put to a reviewer or a person".into()
            }
            (Some(_), _) => "a background command is never put to a reviewer or a person: run it without `background`".into(),
            (None, Client::Mcp(_)) => format!(
                "{} has no reviewer agent (only `chock run` and `chock acp` run the one chock.zon names)",
                self.command
            ),
            (None, Client::Local(_)) => match self.policy.config().reviewer() {
                Err(none) => none.to_string(),
                Ok(_) => "no reviewer agent was started".into(),
            },
        }
    }

    /// Why nobody at `client` could be asked, in its command's words.
    fn nobody_words(&self, client: &Client) -> String {
        match client {
            Client::Mcp(_) => "this client does not support MCP elicitation".into(),
            Client::Local(_) => format!(
                "{} has no terminal to ask at (its stdin and stderr are not one terminal, or the task was read from stdin)",
                self.command
            ),
        }
    }

    /// Writes the gate's line for `action` asked through `tool`, by the
    /// agent `agent` (the client's name from `initialize`, `main` before a
    /// client has said it).
    pub(crate) fn record(
        &self,
        agent: &str,
        tool: &str,
        action: &str,
        subject: Option<&str>,
        verdict: &Verdict,
        settled: &Settled,
    ) {
        let key = Key::new(action).with_tool(tool).with_agent_kind(agent);
        let entry = settled.entry(
            ROUTE,
            self.project.dir.display().to_string(),
            &key,
            verdict,
            subject.map(str::to_owned),
        );
        if self.log.append(&entry).is_none() {
            tracing::warn!("the decision for {action} was not logged");
        }
        if let Some(observer) = self.decided.get() {
            observer.decided(tool, action, settled.decision, settled.answered_by);
        }
    }

    /// The asker for one call of `tool`, to hand to blocking code (it must
    /// be called from the runtime's handle, on a thread of its own).
    pub fn asker(&self, client: &Client, cancel: &CancellationToken, tool: &str) -> CallAsker {
        CallAsker {
            askers: self.askers.clone(),
            client: client.clone(),
            tool: tool.into(),
            project: self.project.dir.display().to_string(),
            runtime: tokio::runtime::Handle::current(),
            cancel: cancel.clone(),
        }
    }

    /// Reads one start row and logs it; `None` when the tool stays, else
    /// why it does not.
    pub fn start_row(&self, tool: &'static str, row: &StartRow) -> Option<Withheld> {
        let answer = match chock_gate::start::at_start(&self.policy, AGENT_KIND, &row.question) {
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
            let settled = answer.settled();
            self.record(
                AGENT_KIND,
                tool,
                &row.action,
                None,
                &answer.verdict,
                &settled,
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

    /// Decides `act` through the gate: asks a person when the answer is
    /// `ask` or `agent_review` and one can be reached, and logs the end.
    /// `Ok` means go ahead; `Err` holds the sentence the agent reads.
    pub async fn gate(
        &self,
        client: &Client,
        cancel: &CancellationToken,
        act: &Act<'_>,
        asking: Asking,
    ) -> Result<(), Refusal> {
        let verdict = self.verdict(client, act);
        self.gate_verdict(client, cancel, act, asking, verdict)
            .await
    }

    /// The policy's answer for `act` of `client`, as [`Session::gate`]
    /// reads it: folded over every link of the client's spawn chain (a
    /// spawned agent never gets more than any agent above it). The
    /// session's own promises, once bound to the policy
    /// ([`chock_policy::Policy::bound_by`]), are a term of that fold: where
    /// a promise is lower, it is the answer, and it names the promise.
    pub fn verdict(&self, client: &Client, act: &Act) -> Verdict {
        self.policy
            .decide_chain(&client.chain(), &self.key(client, act), Reading::Act)
    }

    /// The policy's key for `act` of `client`: its action, tool and the
    /// kind of agent at the end of the client's spawn chain.
    fn key(&self, client: &Client, act: &Act) -> Key {
        let kind = client.chain().last().copied().unwrap_or(AGENT_KIND);
        Key::new(act.action.clone())
            .with_tool(act.tool)
            .with_agent_kind(kind)
    }

    /// Keeps a person's yes for `scope` (a session's grant, or the rule
    /// written into `chock.zon`, logged as `policy.edit` with the rule as
    /// its subject). A rule that cannot be written leaves the yes once,
    /// and says why on stderr. Returns the scope kept.
    fn keep(&self, scope: Scope, key: &Key, question: &Question) -> Scope {
        let project_file = self.policy.project_file();
        match chock_gate::scope::keep(scope, key, question, Some(&self.grants), project_file) {
            Ok(Some(edit)) => {
                eprintln!(
                    "{}: wrote to {}:\n{}",
                    self.command,
                    edit.file.display(),
                    edit.diff()
                );
                let (verdict, settled) = chock_gate::scope::rule_written();
                for rule in &question.rules {
                    self.record(
                        &key.agent_kind,
                        "",
                        POLICY_EDIT,
                        Some(&rule.rule),
                        &verdict,
                        &settled,
                    );
                }
                scope
            }
            Ok(None) => scope,
            Err(why) => {
                eprintln!(
                    "{}: the answer \"always\" was kept for this once: {why}",
                    self.command
                );
                Scope::Once
            }
        }
    }

    /// [`Session::gate`] with the answer already read (for a caller that
    /// reads it more strictly than the policy does).
    pub async fn gate_verdict(
        &self,
        client: &Client,
        cancel: &CancellationToken,
        act: &Act<'_>,
        asking: Asking,
        verdict: Verdict,
    ) -> Result<(), Refusal> {
        let agent = client.name();
        let action = &act.action;
        // A reviewer agent answers first, where the session has one and the
        // act is one a person could be asked about.
        let reviewer = self
            .reviewer
            .get()
            .filter(|_| asking == Asking::Person && chock_gate::reviewed_first(verdict.decision));
        let (step, reviewed) = match reviewer {
            Some(reviewer) => {
                let reviewed = reviewer
                    .review(ForReview {
                        act,
                        decision: verdict.decision,
                        rule: decided_by_words(&verdict),
                        agent: agent.clone(),
                        chain: client.chain().iter().map(|k| (*k).to_owned()).collect(),
                    })
                    .await;
                (
                    chock_gate::after_review(verdict.decision, reviewed.review),
                    Some(reviewed),
                )
            }
            None => (chock_gate::before_asking(ROUTE, &verdict), None),
        };
        let (settled, why) = match step {
            Step::Settled(settled) => (settled, None),
            // A redirect hop is never asked: a page could otherwise ask at every hop.
            Step::Ask if asking != Asking::Person => (
                chock_gate::heard(verdict.decision, Answer::Unavailable),
                None,
            ),
            Step::Ask if self.grants.granted(&self.key(client, act)) => (
                Settled {
                    scope: Some(Scope::Session),
                    ..chock_gate::heard(verdict.decision, Answer::Yes)
                },
                None,
            ),
            Step::Ask => {
                let question = question(act, &verdict, reviewed.as_ref());
                let offer = Offer::of(&question, true, self.policy.project_file());
                let asker = self.asker(client, cancel, act.tool);
                let asked = question.clone();
                let heard = tokio::task::spawn_blocking(move || asker.ask_offering(&asked, offer))
                    .await
                    .unwrap_or_else(|e| Some(Reply::Unanswered(format!("asking failed ({e})"))));
                let (answer, why, scope) = match heard {
                    Some(Reply::YesFor(scope)) => {
                        let kept = self.keep(scope, &self.key(client, act), &question);
                        (Answer::Yes, None, Some(kept))
                    }
                    Some(Reply::Yes) => (Answer::Yes, None, Some(Scope::Once)),
                    Some(Reply::No) => (Answer::No, None, None),
                    Some(Reply::NoBecause(reason)) => (Answer::No, Some(reason), None),
                    Some(Reply::Cancelled) => (Answer::Cancelled, None, None),
                    Some(Reply::Unanswered(why)) => (Answer::Unavailable, Some(why), None),
                    None => (Answer::Unavailable, None, None),
                };
                (
                    Settled {
                        scope,
                        ..chock_gate::heard(verdict.decision, answer)
                    },
                    why,
                )
            }
        };
        self.record(
            &agent,
            act.tool,
            action,
            act.subject.as_deref(),
            &verdict,
            &settled,
        );
        let change = change_sentence(&verdict);
        let by = decided_by_words(&verdict);
        let refusal = match settled.outcome {
            Outcome::Go => return Ok(()),
            // Only a hook hands an act to its agent; here that would be a
            // bug, and it fails closed.
            Outcome::NoObjection | Outcome::Prompt => format!(
                "refused: {action} was left to the agent's own prompt, which {0} does not have; this is a bug in {0}",
                self.command
            ),
            Outcome::Refused(Refused::Denied) => {
                format!("refused: {action} is denied by {by}.{change}")
            }
            Outcome::Refused(Refused::NoReviewer) => format!(
                "refused: {action} needs a reviewer agent and then a person ({by}), and {}, so nobody was asked.{change}",
                self.no_reviewer_words(client, asking)
            ),
            Outcome::Refused(Refused::ReviewerSaidNo) => format!(
                "refused by the reviewer agent: {action} ({by}) was reviewed and the answer was no: {}. Do not call again for the same act unchanged; tell the person what you wanted it for.{change}",
                reviewed.as_ref().map_or("", |r| r.reason.as_str())
            ),
            Outcome::Refused(Refused::ReviewFailed) => format!(
                "refused: {action} needs a reviewer agent's yes and then a person's ({by}), and the reviewer agent gave no answer ({}), so nobody was asked.{change}",
                reviewed.as_ref().map_or("", |r| r.reason.as_str())
            ),
            Outcome::Refused(Refused::PersonSaidNo) => match why {
                Some(reason) => format!(
                    "refused by a person: {action} was asked about and the answer was no, because: {}. Do not ask again for the same act; do what the person said instead.",
                    chock_policy::visible(&reason)
                ),
                None => format!(
                    "refused by a person: {action} was asked about and the answer was no. Do not ask again for the same act; tell the person what you wanted it for."
                ),
            },
            Outcome::Refused(why @ Refused::Stopped) => format!(
                "refused: {action}: {}.",
                chock_gate::Refusal::new(why, &verdict).why_words()
            ),
            Outcome::Refused(Refused::Cancelled) => format!(
                "refused: {action} needs a person's yes, and {agent} dismissed the question without a person answering it (a client in print mode cancels every question); no `chock approve` is running to ask instead. Run `chock approve` in another terminal and call again, or add the rule.{change}"
            ),
            Outcome::Refused(Refused::Nobody) if asking == Asking::NeverHop => format!(
                "refused: a redirect led to {action}, which no rule allows, and a redirect hop is never asked (a page could otherwise ask at every hop).{change}"
            ),
            Outcome::Refused(Refused::Nobody) if asking == Asking::NeverBackground => format!(
                "refused: {action} would need a person's yes ({by}), and a background command never asks: it runs after its call has returned, when nobody waits for an answer. Run it without `background` so a person can be asked, or allow it outright.{change}"
            ),
            Outcome::Refused(Refused::Nobody) => match why {
                Some(why) => format!("refused: {action} needs a person's yes and {why}.{change}"),
                None => format!(
                    "refused: {action} needs a person's yes, and nobody can be asked: {} and no `chock approve` is running. Run `chock approve` in another terminal and call again.{change}",
                    self.nobody_words(client)
                ),
            },
        };
        Err(Refusal(refusal))
    }
}

/// Why the gate did not let an act go ahead: the sentence the agent
/// reads, which names the rule that decided and what would allow it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Refusal(pub String);

/// The policy's question for `act`: what a yes lets happen, what a person
/// reads, and the rule that would answer it next time. After a reviewer
/// agent's answer, the person reads it too; after its yes on
/// `agent_then_human`, what is left to ask is one person's yes (`ask`).
fn question(act: &Act<'_>, verdict: &Verdict, reviewed: Option<&Reviewed>) -> Question {
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
    let mut decision = verdict.decision;
    match reviewed {
        Some(Reviewed {
            review: Review::Yes,
            reason,
        }) => {
            detail.push(format!("the reviewer agent said yes: {reason}"));
            decision = Decision::Ask;
        }
        Some(Reviewed { reason, .. }) => {
            detail.push(format!("the reviewer agent gave no answer: {reason}"))
        }
        None => {}
    }
    Question {
        action: act.action.clone(),
        decision,
        summary,
        detail,
        rules: verdict.suggestion.iter().cloned().collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_are_shown_whole_up_to_the_bound_then_cut_with_the_rest_counted() {
        let small = serde_json::json!({"path": "a\u{1b}[2J"});
        assert_eq!(
            arguments_line(&small),
            r#"arguments: {"path":"a\u001b[2J"}"#
        );
        // Two-byte characters put the bound inside one: the cut is before it.
        let big = serde_json::json!({"text": "é".repeat(3000)});
        let whole = big.to_string();
        let shown = arguments_line(&big);
        let (kept, rest) = shown
            .strip_prefix("arguments: ")
            .and_then(|s| s.split_once("… ("))
            .expect(&shown);
        assert_eq!(kept.len(), ARGUMENTS_SHOWN - 1);
        assert!(whole.starts_with(kept));
        assert_eq!(rest, format!("{} bytes more)", whole.len() - kept.len()));
    }
}
