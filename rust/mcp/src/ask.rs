//! Asking a person: the question, and the two ways it reaches someone.
//!
//! The client's own prompt (MCP elicitation) comes first, because the person
//! is looking at it. A client that cannot elicit leaves `chock approve`,
//! running in another terminal. With neither there is nobody to ask, and
//! the act is refused with the rule that would answer it next time.

use std::time::Duration;

use rmcp::model::{ElicitRequestParams, ElicitationAction, ElicitationSchema, EnumSchema};
use rmcp::service::ElicitationMode;
use rmcp::{Peer, RoleServer};
use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

use chock_gate::{Offer, Scope, Word};
use chock_policy::{Answer, Asker, Question, visible};

use crate::approve::ApproveHub;
use crate::credential::Credential;

/// A question as a person reads it on any screen: the policy's question,
/// with the tool and project it came from. This is what travels to
/// `chock approve` and into the client's prompt.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Asked {
    /// The project the server serves.
    pub project: String,
    /// The tool the agent called.
    pub tool: String,
    /// The action asked about, e.g. `net.fetch.org.ziglang.docs`.
    pub action: String,
    /// One line saying what a yes lets happen.
    pub summary: String,
    /// More for the person to read (a URL, the command line, what decided), one line each.
    pub detail: Vec<String>,
    /// The rules that would answer yes with nobody asked, each with where it goes.
    pub allow_rules: Vec<(String, String)>,
    /// The rule that would refuse it with nobody asked (empty when no rule
    /// could answer the question).
    pub deny_rule: String,
    /// Set when the question asks for a credential rather than a yes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub credential: Option<CredentialFor>,
    /// Set when the question asks for one line of text rather than a yes
    /// (the agent's own question, `ask_user` with `text`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub wants_text: bool,
    /// The scopes a yes may have beyond once (`session`, `always`), where
    /// the asking session can keep them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scopes: Vec<Scope>,
}

/// What a credential question asks for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CredentialFor {
    /// The remote, as a person reads it (`https://host:port/path`).
    pub remote: String,
    /// The user name the remote's URL names, offered as the answer's.
    pub username: Option<String>,
}

impl Asked {
    pub fn new(question: &Question, tool: &str, project: &str) -> Asked {
        Asked {
            project: project.into(),
            tool: tool.into(),
            action: question.action.clone(),
            summary: question.summary.clone(),
            detail: question.detail.clone(),
            allow_rules: question
                .rules
                .iter()
                .map(|s| (s.rule.clone(), s.block.clone()))
                .collect(),
            // A question no rule could answer (the agent's own, ask_user)
            // names none either way.
            deny_rule: if question.rules.is_empty() {
                String::new()
            } else {
                format!(
                    ".{{ .action = \"{}\", .decision = .deny }}",
                    question.action
                )
            },
            credential: None,
            wants_text: false,
            scopes: Vec::new(),
        }
    }

    /// The same question, offering a yes the scopes of `offer` beyond once.
    pub fn offering(mut self, offer: Offer) -> Asked {
        self.scopes = offer
            .scopes()
            .into_iter()
            .filter(|s| *s != Scope::Once)
            .collect();
        self
    }

    /// The scope of a yes the person chose, held to what was offered: a
    /// scope not offered is once.
    pub fn yes_for(&self, scope: Option<Scope>) -> Reply {
        match scope.filter(|s| self.scopes.contains(s)) {
            Some(scope) => Reply::YesFor(scope),
            None => Reply::Yes,
        }
    }

    /// The same question, asking for one line of text rather than a yes.
    pub fn wanting_text(mut self) -> Asked {
        self.wants_text = true;
        self
    }

    /// A question for the user name and password (or token) of `remote`,
    /// for a call of `tool` already allowed under `action`.
    pub fn credential(
        (tool, action, project): (&str, &str, &str),
        remote: &str,
        username: Option<&str>,
    ) -> Asked {
        Asked {
            project: project.into(),
            tool: tool.into(),
            action: action.into(),
            summary: format!("git push to {remote} needs a user name and password (or token)"),
            detail: vec![
                format!("project: {project}"),
                "It is handed to git in the sandbox for this one call over a socket, never logged, and removed from what the agent reads.".into(),
            ],
            allow_rules: Vec::new(),
            deny_rule: String::new(),
            credential: Some(CredentialFor {
                remote: remote.into(),
                username: username.map(str::to_owned),
            }),
            wants_text: false,
            scopes: Vec::new(),
        }
    }

    /// One line: what the agent wants.
    pub fn headline(&self) -> String {
        visible(&self.summary).into_owned()
    }

    /// Everything a person should read before answering, each part as a
    /// terminal shows it ([`visible`]).
    pub fn text(&self) -> String {
        let mut text = format!("Chock: {}", visible(&self.summary));
        for line in &self.detail {
            text.push_str(&format!("\n  {}", visible(line)));
        }
        let mut last_block: Option<&str> = None;
        for (rule, block) in &self.allow_rules {
            if last_block != Some(block.as_str()) {
                text.push_str(&format!(
                    "\n  to stop being asked, add to {}:",
                    visible(block)
                ));
                last_block = Some(block);
            }
            text.push_str(&format!("\n    {},", visible(rule)));
        }
        if !self.deny_rule.is_empty() {
            text.push_str(&format!(
                "\n  to refuse it with nobody asked:\n    {},",
                visible(&self.deny_rule)
            ));
        }
        text
    }
}

/// What a person said, or why nobody did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Reply {
    Yes,
    /// Yes, and to every identical act for the session, or always (the
    /// suggested rule written into `chock.zon`).
    YesFor(Scope),
    No,
    /// No, with the person's reason, which the agent is told
    /// ([`Reply::no_because`]).
    NoBecause(String),
    /// Nobody answered; the reason is said to the agent and the act refused.
    Unanswered(String),
    /// The client dismissed the question (an elicitation answered `cancel`)
    /// and no `chock approve` was there to ask instead: no person answered.
    Cancelled,
}

/// Why a question for words or for a credential has no answer; the
/// words are what the agent reads (or the note of a `git push`).
#[derive(Debug, thiserror::Error)]
pub enum Unanswered {
    /// Nobody could be asked: the sentence says who was looked for.
    #[error("{0}")]
    Nobody(&'static str),
    /// The person answered without an answer that can be used (declined,
    /// or an empty or multi-line part); the sentence says which.
    #[error("{0}")]
    NoneGiven(&'static str),
    /// The call was cancelled while the question waited.
    #[error("the client cancelled the call")]
    Cancelled,
    /// The question went unanswered where it was put (timed out, dropped,
    /// the client's prompt failed): why, as [`Reply::Unanswered`] says it.
    #[error("{0}")]
    Failed(String),
    /// What the person typed at the terminal could not be read.
    #[error("reading the {what} failed: {source}")]
    Unread {
        what: &'static str,
        #[source]
        source: std::io::Error,
    },
}

/// The longest reason the agent is told, in characters.
pub const MAX_REASON: usize = 2000;

impl Reply {
    /// A no, with `reason` when the person gave one (trimmed, cut to
    /// [`MAX_REASON`] characters); a plain no when it is empty.
    pub fn no_because(reason: Option<&str>) -> Reply {
        match reason.map(str::trim).filter(|r| !r.is_empty()) {
            Some(reason) => Reply::NoBecause(reason.chars().take(MAX_REASON).collect()),
            None => Reply::No,
        }
    }
}

/// Who calls the tools: an MCP client over the protocol, or a program
/// running them in this process (`chock run`), with the person at its
/// terminal. The gate names the caller in the log and asks through it.
#[derive(Clone)]
pub enum Client {
    Mcp(Peer<RoleServer>),
    Local(Local),
}

/// The person a caller in this process asks first: a blocking [`Asker`]
/// (the terminal's, an editor's permission prompt) that can offer a yes's
/// scopes and take a no's reason.
pub trait Person: Asker + Send + Sync {
    /// The answer to `question`, a yes offered the scopes of `offer`; a
    /// person that knows no scopes answers as [`Asker::ask`] does, once.
    fn ask_scoped(&self, question: &Question, _offer: Offer) -> Word {
        Word::plain(self.ask(question))
    }
}

impl Person for chock_policy::Nobody {}

/// A caller in this process: its name, and the person it can ask first
/// ([`Person`], e.g. the terminal's), before `chock approve`.
#[derive(Clone)]
pub struct Local {
    pub name: String,
    pub person: std::sync::Arc<dyn Person>,
    /// The agent kinds it was spawned through, the main agent's first and
    /// its own last; empty for the main agent.
    pub spawned: Vec<String>,
}

impl Client {
    /// The caller's name in the log: the MCP client's name as it gave it in
    /// `initialize` (`clientInfo.name`), a local caller's own; `main` when
    /// it gave none.
    pub fn name(&self) -> String {
        let name = match self {
            Client::Mcp(peer) => peer
                .peer_info()
                .map(|info| info.client_info.name.trim().to_owned()),
            Client::Local(local) => Some(local.name.trim().to_owned()),
        };
        name.filter(|name| !name.is_empty())
            .unwrap_or_else(|| crate::AGENT_KIND.to_owned())
    }

    /// The spawn chain every act of this caller is decided through
    /// ([`chock_policy::Policy::decide_chain`]): the main agent's kind, then
    /// each spawned kind down to the caller's.
    pub fn chain(&self) -> Vec<&str> {
        match self {
            Client::Local(local) if !local.spawned.is_empty() => {
                local.spawned.iter().map(String::as_str).collect()
            }
            _ => vec![crate::AGENT_KIND],
        }
    }

    fn elicits(&self) -> Option<&Peer<RoleServer>> {
        match self {
            Client::Mcp(peer)
                if peer
                    .supported_elicitation_modes()
                    .contains(&ElicitationMode::Form) =>
            {
                Some(peer)
            }
            _ => None,
        }
    }
}

/// How long a question waits for a person before it counts as unanswered.
pub const ASK_TIMEOUT: Duration = Duration::from_secs(600);

/// The people a call can reach: the client's prompt, `chock approve`, both or neither.
#[derive(Clone)]
pub struct Askers {
    pub approve: Option<ApproveHub>,
    pub timeout: Duration,
}

impl Askers {
    /// Asks through the client when it elicits, else (or when the client
    /// dismisses the question) `chock approve` when one is watching; `None`
    /// when neither can be reached.
    pub async fn ask(&self, client: &Client, question: &Asked) -> Option<Reply> {
        let elicited = if let Some(peer) = client.elicits() {
            match elicit(peer, question, self.timeout).await {
                Reply::Cancelled => Some(Reply::Cancelled),
                reply => return Some(reply),
            }
        } else {
            None
        };
        match &self.approve {
            Some(hub) if hub.watched() => Some(hub.ask(question.clone(), self.timeout).await),
            _ => elicited,
        }
    }
}

impl Askers {
    /// Asks a person for one line of text (`question` made with
    /// [`Asked::wanting_text`]) in `chock approve`; `Err` says why none
    /// came. A client's prompt is not asked: only a local caller asks for
    /// text, and its own person first ([`CallAsker::ask_text`]).
    pub async fn ask_text(&self, question: Asked) -> Result<String, Unanswered> {
        match &self.approve {
            Some(hub) if hub.watched() => hub.ask_text(question, self.timeout).await,
            _ => Err(Unanswered::Nobody(
                "nobody can be asked for an answer in words: there is no terminal to ask at (an editor over ACP offers choices only) and no `chock approve` is running",
            )),
        }
    }
}

/// The properties of the client's form for a credential.
pub const USERNAME_FIELD: &str = "username";
pub const PASSWORD_FIELD: &str = "password";

impl Askers {
    /// Asks a person for the user name and password (or token) of one
    /// remote through the client's prompt; `Err` says why none was given.
    /// `message` says what for; the answer is never logged.
    pub async fn ask_credential(
        &self,
        client: &Client,
        question: Asked,
    ) -> Result<Credential, Unanswered> {
        // `chock approve` first when one watches: the password then never
        // passes through the client.
        if let Some(hub) = &self.approve
            && hub.watched()
        {
            return hub.ask_credential(question, self.timeout).await;
        }
        let Some(peer) = client.elicits() else {
            return Err(Unanswered::Nobody(
                "nobody could be asked for it: this client does not support MCP elicitation and no `chock approve` is running (a git credential helper on the host is asked first)",
            ));
        };
        let username = question
            .credential
            .as_ref()
            .and_then(|c| c.username.as_deref());
        let message = question.text();
        let schema = ElicitationSchema::builder()
            .required_string_property(USERNAME_FIELD, |s| {
                let s = s.title("User name");
                match username {
                    Some(name) => s.with_default(name),
                    None => s,
                }
            })
            .required_string_property(PASSWORD_FIELD, |s| {
                s.title("Password or token")
                    .description("Given to git for this one push, never logged, and removed from what the agent reads.")
            })
            .build_unchecked();
        let params = ElicitRequestParams::FormElicitationParams {
            meta: None,
            message,
            requested_schema: schema,
        };
        let result = peer
            .create_elicitation_with_timeout(params, Some(self.timeout))
            .await
            .map_err(|e| Unanswered::Failed(format!("the client's prompt failed: {e}")))?;
        if result.action != ElicitationAction::Accept {
            return Err(Unanswered::NoneGiven("the person gave none"));
        }
        let field = |name: &str| {
            result
                .content
                .as_ref()
                .and_then(|c| c.get(name))
                .and_then(serde_json::Value::as_str)
                .map(str::to_owned)
                .unwrap_or_default()
        };
        crate::credential::typed(&field(USERNAME_FIELD), &field(PASSWORD_FIELD))
            .ok_or(Unanswered::NoneGiven(crate::credential::UNUSABLE))
    }
}

/// The property the client's form asks for.
pub const ELICIT_FIELD: &str = "allow";
/// The form's property for the reason of a no, which the agent is told.
pub const REASON_FIELD: &str = "reason";

/// The form's property for how far a yes reaches (`once`, and `session`
/// or `always` where the question offers them); absent when it offers
/// once only.
pub const SCOPE_FIELD: &str = "scope";

/// The client's form for `question`: allow, how far where more than once
/// is offered, and the reason of a no.
fn form(question: &Asked) -> ElicitationSchema {
    let mut form = ElicitationSchema::builder().required_bool_property(ELICIT_FIELD, |b| {
        b.title("Allow")
            .description("Yes lets this call go ahead; anything else refuses it.")
            .with_default(false)
    });
    if !question.scopes.is_empty() {
        let scopes = std::iter::once(Scope::Once)
            .chain(question.scopes.iter().copied())
            .map(|s| s.as_str().to_owned())
            .collect();
        form = form.optional_enum_schema(
            SCOPE_FIELD,
            EnumSchema::builder(scopes)
                .title("For how long (with yes)")
                .description("once: this call; session: every identical call until this session ends; always: the rule above is written into chock.zon.")
                .build(),
        );
    }
    form.optional_string_with(REASON_FIELD, |s| {
        s.title("Why not (with no)")
            .description("Told to the agent with the no, so it can do something else instead.")
            .max_length(MAX_REASON as u32)
    })
    .build_unchecked()
}

/// The person's answer in the accepted form: a yes with the scope chosen
/// (held to what was offered), else a no with its reason.
fn read_form(question: &Asked, content: Option<&serde_json::Value>) -> Reply {
    let field = |name: &str| content.and_then(|c| c.get(name));
    let yes = field(ELICIT_FIELD).and_then(serde_json::Value::as_bool) == Some(true);
    if yes {
        let scope = field(SCOPE_FIELD)
            .and_then(serde_json::Value::as_str)
            .and_then(Scope::parse);
        question.yes_for(scope)
    } else {
        Reply::no_because(field(REASON_FIELD).and_then(serde_json::Value::as_str))
    }
}

async fn elicit(peer: &Peer<RoleServer>, question: &Asked, timeout: Duration) -> Reply {
    let schema = form(question);
    let params = ElicitRequestParams::FormElicitationParams {
        meta: None,
        message: question.text(),
        requested_schema: schema,
    };
    match peer
        .create_elicitation_with_timeout(params, Some(timeout))
        .await
    {
        Ok(result) => match result.action {
            ElicitationAction::Accept => read_form(question, result.content.as_ref()),
            // The person declined.
            ElicitationAction::Decline => Reply::No,
            // Dismissed, by a person or (Claude Code in print mode) by the
            // client itself: nobody said no.
            _ => Reply::Cancelled,
        },
        Err(e) => Reply::Unanswered(format!("the client's prompt failed: {e}")),
    }
}

/// The asker one tool call hands to code that asks as it goes (the gate,
/// nix_build): it reaches the client's prompt or `chock approve` from a
/// blocking thread. It must not be used on the runtime's own threads.
pub struct CallAsker {
    pub askers: Askers,
    pub client: Client,
    pub tool: String,
    pub project: String,
    pub runtime: tokio::runtime::Handle,
    /// The call's own token: when the client cancels the call, a question
    /// still waiting is withdrawn and counts as unanswered.
    pub cancel: CancellationToken,
}

impl CallAsker {
    /// Asks, and says why when nobody answered; `None` when nobody could be
    /// asked. Only `ask` and `agent_review` are put to a person
    /// ([`chock_gate::askable`]); anything else is unanswered.
    pub fn ask_why(&self, question: &Question) -> Option<Reply> {
        self.ask_offering(question, Offer::default())
    }

    /// [`CallAsker::ask_why`], a yes offered the scopes of `offer`.
    pub fn ask_offering(&self, question: &Question, offer: Offer) -> Option<Reply> {
        if !chock_gate::askable(question.decision) {
            return Some(Reply::Unanswered(format!(
                "a person is never asked about {}",
                question.decision
            )));
        }
        // A local caller's person is asked first, on this blocking thread;
        // with nobody there, `chock approve` is.
        let asked = Asked::new(question, &self.tool, &self.project).offering(offer);
        if let Client::Local(local) = &self.client {
            let word = local.person.ask_scoped(question, offer);
            match word.answer {
                Answer::Yes => return Some(asked.yes_for(Some(word.scope))),
                Answer::No => return Some(Reply::no_because(word.reason.as_deref())),
                Answer::Cancelled | Answer::Unavailable | Answer::Handed => {}
            }
        }
        self.runtime.block_on(async {
            tokio::select! {
                reply = self.askers.ask(&self.client, &asked) => reply,
                () = self.cancel.cancelled() => Some(Reply::Unanswered(
                    "the client cancelled the call".into(),
                )),
            }
        })
    }
}

impl CallAsker {
    /// [`Askers::ask_credential`] from a blocking thread; the call's
    /// cancellation withdraws the question.
    pub fn ask_credential(
        &self,
        action: &str,
        remote: &str,
        username: Option<&str>,
    ) -> Result<Credential, Unanswered> {
        let question = Asked::credential((&self.tool, action, &self.project), remote, username);
        self.runtime.block_on(async {
            tokio::select! {
                answer = self.askers.ask_credential(&self.client, question) => answer,
                () = self.cancel.cancelled() => Err(Unanswered::Cancelled),
            }
        })
    }
}

impl CallAsker {
    /// One line of text for `question` from a blocking thread, raw as
    /// typed: a local caller's person first (its terminal), else `chock
    /// approve`; `Err` says why none came. The call's cancellation
    /// withdraws the question.
    pub fn ask_text(&self, question: &Question) -> Result<String, Unanswered> {
        if let Client::Local(local) = &self.client
            && let Some(text) = local.person.ask_text(question)
        {
            return Ok(text);
        }
        let asked = Asked::new(question, &self.tool, &self.project).wanting_text();
        self.runtime.block_on(async {
            tokio::select! {
                answer = self.askers.ask_text(asked) => answer,
                () = self.cancel.cancelled() => Err(Unanswered::Cancelled),
            }
        })
    }
}

impl Asker for CallAsker {
    fn ask(&self, question: &Question) -> Answer {
        match self.ask_why(question) {
            Some(Reply::Yes | Reply::YesFor(_)) => Answer::Yes,
            Some(Reply::No | Reply::NoBecause(_)) => Answer::No,
            Some(Reply::Cancelled) => Answer::Cancelled,
            Some(Reply::Unanswered(_)) | None => Answer::Unavailable,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chock_policy::{Decision, Suggestion};
    use serde_json::json;

    fn offering(offer: Offer) -> Asked {
        let question = Question {
            action: "call.read_file".into(),
            decision: Decision::Ask,
            summary: "read a.txt".into(),
            detail: vec![],
            rules: vec![Suggestion {
                rule: ".{ .action = \"call.read_file\", .decision = .allow }".into(),
                block: ".policy.rules in /p/chock.zon".into(),
            }],
        };
        Asked::new(&question, "read_file", "/p").offering(offer)
    }

    #[test]
    fn the_form_offers_a_scope_only_beyond_once_and_reads_it_back_held_to_the_offer() {
        let session_only = offering(Offer {
            session: true,
            always: false,
        });
        let properties =
            serde_json::to_value(form(&session_only)).expect("schema")["properties"].clone();
        assert_eq!(properties[SCOPE_FIELD]["enum"], json!(["once", "session"]));
        let once = offering(Offer::default());
        let properties = serde_json::to_value(form(&once)).expect("schema")["properties"].clone();
        assert!(properties.get(SCOPE_FIELD).is_none(), "{properties}");
        let read = |asked: &Asked, content| read_form(asked, Some(&content));
        assert_eq!(
            read(&session_only, json!({"allow": true, "scope": "session"})),
            Reply::YesFor(Scope::Session)
        );
        // A scope not offered, or no word, is once.
        assert_eq!(
            read(&session_only, json!({"allow": true, "scope": "always"})),
            Reply::Yes
        );
        assert_eq!(
            read(&session_only, json!({"allow": true, "scope": 3})),
            Reply::Yes
        );
        assert_eq!(
            read(
                &session_only,
                json!({"allow": false, "scope": "session", "reason": "no"})
            ),
            Reply::NoBecause("no".into())
        );
        assert_eq!(read_form(&once, None), Reply::No);
    }
}
