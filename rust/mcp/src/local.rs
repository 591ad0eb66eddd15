//! The tools called in this process, outside MCP: `chock run` starts the
//! same [`Session`] as `chock mcp` (the policy, the log, the workspace, the
//! people it can ask), offers the model the same definitions, and runs
//! each call through the same dispatch and the same gate, and the MCP
//! servers `chock.zon` names (the gateway) as `chock mcp` offers them. Only
//! the caller differs: a [`Local`] one, whose person is asked at its
//! terminal before `chock approve`. The caller's own tools decide through
//! [`InProcess::decide`], ask through [`InProcess::ask`], and may bound
//! every decision made for the session with a [`crate::Ceiling`], bound to
//! the policy the start hook is given ([`Policy::bound_by`]).

use std::sync::Arc;

use chock_log::Log;
use chock_policy::Policy;
use chock_sandbox::project::Project;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::ask::{Client, Local, Reply, Unanswered};
use crate::error::McpError;
use crate::gate::{Act, Asking, Decided, Refusal, Reviewer};
use crate::gateway::{Gateway, GatewayError};
use crate::session::{EndTasks, Failed, ServeOptions, Session};
use crate::tools::{self, Call, REQUEST_APPLY, ToolError};
use crate::workspace::FileError;

/// A part of the session that is set once was set a second time.
#[derive(Debug, thiserror::Error)]
#[error("the session's {0} is already set")]
pub struct AlreadySet(&'static str);

/// A tool as a model is told of it.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolDefinition {
    pub name: String,
    pub description: String,
    /// A JSON schema of its arguments (an object schema).
    pub input_schema: Value,
}

/// How the session's workspace ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Finished {
    /// No session workspace (`workspace` was off).
    NoWorkspace,
    /// Nothing in it was left to apply; it was removed.
    Nothing,
    /// Its work was applied: what `workspace.apply` said.
    Applied(String),
    /// Its work was not applied (refused, or not asked): why, and it is kept.
    Kept(String),
}

/// A session of the tool server, called in this process.
pub struct InProcess {
    session: Arc<Session>,
    client: Client,
    gateway: Arc<Gateway>,
    // However the session ends, its background commands end with it (with
    // the last of the callers that share it).
    _tasks: Arc<EndTasks>,
}

impl InProcess {
    /// Starts the session as `chock mcp` does (`options.workspace` makes a
    /// session workspace), asking `before` first once the policy is read
    /// (its `Err` stops the start: nothing is made; its `Ok` is given
    /// back); `caller` is who calls its tools. The gateway's servers are
    /// started as `chock mcp` starts them. Must run on a multi-threaded
    /// tokio runtime, outside its async tasks' threads.
    pub fn start<T, E: std::fmt::Display>(
        options: &ServeOptions,
        caller: Local,
        before: impl FnOnce(&Project, &Policy, &Log) -> Result<T, E>,
    ) -> Result<(InProcess, T), McpError> {
        let (session, before) = Session::start_after(options, before)?;
        let session = Arc::new(session);
        crate::build::fetch_inputs_at_start(&session);
        let tasks = EndTasks(session.tasks.clone());
        let gateway = tokio::runtime::Handle::current().block_on(Gateway::start(&session));
        let started = InProcess {
            _tasks: Arc::new(tasks),
            session,
            client: Client::Local(caller),
            gateway: Arc::new(gateway),
        };
        Ok((started, before))
    }

    /// The same session called by an agent of `kind` that this caller
    /// spawns: its acts are decided through the spawn chain with `kind`
    /// last, so it never gets more than any agent above it, logged under
    /// `kind`, and asked about to the same person. The caller's
    /// [`InProcess::finish`] ends the workspace; the spawned one never does.
    pub fn spawned(&self, kind: &str) -> InProcess {
        let (person, mut spawned) = match &self.client {
            Client::Local(local) => (local.person.clone(), local.spawned.clone()),
            Client::Mcp(_) => (
                Arc::new(chock_policy::Nobody) as Arc<dyn crate::Person>,
                Vec::new(),
            ),
        };
        if spawned.is_empty() {
            spawned.push(crate::AGENT_KIND.to_owned());
        }
        spawned.push(kind.to_owned());
        InProcess {
            session: self.session.clone(),
            client: Client::Local(Local {
                name: kind.to_owned(),
                person,
                spawned,
            }),
            gateway: self.gateway.clone(),
            _tasks: self._tasks.clone(),
        }
    }

    /// The agent kinds this caller was spawned through, the main agent's
    /// first and its own last.
    pub fn chain(&self) -> Vec<&str> {
        self.client.chain()
    }

    /// The policy's caps on the spawn tree.
    pub fn subagent_caps(&self) -> chock_policy::SubagentCaps {
        self.session.policy.config().subagents()
    }

    /// The agent kinds `chock.zon` declares.
    pub fn agent_kinds(&self) -> &[chock_policy::Agent] {
        self.session.policy.config().agents()
    }

    /// The tools offered, in their order, as the MCP server lists them
    /// (Chock's own, then the gateway's `<server>__<tool>`); request_apply
    /// is left to the end of the session.
    pub async fn tools(&self) -> Vec<ToolDefinition> {
        let own = self
            .session
            .offered
            .iter()
            .filter(|name| **name != REQUEST_APPLY)
            .filter_map(|name| tools::offered_definition(&self.session, name));
        let extra = crate::extra::definitions(&self.session);
        let gateway = self.gateway.tools(&self.session).await;
        own.chain(extra)
            .chain(gateway)
            .map(|tool| ToolDefinition {
                name: tool.name.to_string(),
                description: tool.description.as_deref().unwrap_or_default().to_owned(),
                input_schema: Value::Object((*tool.input_schema).clone()),
            })
            .collect()
    }

    /// Why tools are not offered (a rule took them away at start, a
    /// gateway server was not reached), one sentence each.
    pub fn withheld(&self) -> Vec<String> {
        self.session
            .withheld
            .iter()
            .filter(|w| w.by_rule)
            .map(|w| w.why.clone())
            .chain(self.gateway.instructions())
            .collect()
    }

    /// Asks a person for one line of text about `question` by the path
    /// every ask takes (the caller's person, then `chock approve`), raw as
    /// typed; `Err` says why none came. It never waits past the session's
    /// ask timeout.
    pub async fn ask_text(
        &self,
        tool: &str,
        question: chock_policy::Question,
    ) -> Result<String, Unanswered> {
        let asker = self
            .session
            .asker(&self.client, &CancellationToken::new(), tool);
        tokio::task::spawn_blocking(move || asker.ask_text(&question))
            .await
            .unwrap_or_else(|e| Err(Unanswered::Failed(format!("asking failed ({e})"))))
    }

    /// Puts every later act of the session whose rules answer
    /// `agent_review` or `agent_then_human` to `reviewer` first; set once
    /// (a second is refused).
    pub fn reviewed_by(&self, reviewer: Arc<dyn Reviewer>) -> Result<(), AlreadySet> {
        self.session
            .reviewer
            .set(reviewer)
            .map_err(|_| AlreadySet("reviewer"))
    }

    /// Tells `observer` of each decision the session logs, from now on;
    /// set once (a second is refused).
    pub fn observed_by(&self, observer: Arc<dyn Decided>) -> Result<(), AlreadySet> {
        self.session
            .decided
            .set(observer)
            .map_err(|_| AlreadySet("observer"))
    }

    /// The reviewer agent `chock.zon` names, unless a bundle forbids
    /// reviewer agents: `Err` says why there is none.
    pub fn reviewer_kind(&self) -> Result<String, chock_policy::NoReviewer> {
        self.session
            .policy
            .config()
            .reviewer()
            .map(|r| r.agent_kind.clone())
    }

    /// Decides one act of the caller's own tool `tool` through the gate,
    /// as a tool call's act is decided (a person asked when the answer is
    /// ask, the decision logged): `Err` is the refusal the model reads.
    pub async fn decide(
        &self,
        tool: &str,
        action: &str,
        subject: Option<String>,
        detail: Vec<String>,
    ) -> Result<(), Refusal> {
        let act = Act {
            tool,
            action: action.to_owned(),
            subject,
            detail,
        };
        let cancel = CancellationToken::new();
        self.session
            .gate(&self.client, &cancel, &act, Asking::Person)
            .await
    }

    /// Puts `question` to a person by the path every ask takes (the
    /// caller's person, then `chock approve`); `None` when nobody could be
    /// asked. It never waits past the session's ask timeout.
    pub async fn ask(&self, tool: &str, question: chock_policy::Question) -> Option<Reply> {
        let asker = self
            .session
            .asker(&self.client, &CancellationToken::new(), tool);
        tokio::task::spawn_blocking(move || asker.ask_why(&question))
            .await
            .unwrap_or_else(|e| Some(Reply::Unanswered(format!("asking failed ({e})"))))
    }

    /// What the model reads of a caller's own tool's outcome, as of every
    /// tool's: the session's secrets scrubbed, and a note the first time
    /// `chock.zon` is seen changed.
    pub fn answer(
        &self,
        outcome: Result<String, impl std::fmt::Display>,
    ) -> Result<String, Failed> {
        self.session.answer(outcome)
    }

    /// The refusal a call of `tool` gets when a start row withheld it (it
    /// is then not offered), else `None`.
    pub fn withheld_refusal(&self, tool: &str) -> Option<String> {
        self.session.withheld_refusal(tool)
    }

    /// The project the session serves.
    pub fn project(&self) -> &Project {
        &self.session.project
    }

    /// The session's policy (bound by its promises, in `chock run`) and
    /// its decision log, for a decision the caller makes itself.
    pub fn policy_and_log(&self) -> (&Policy, &Log) {
        (&self.session.policy, &self.session.log)
    }

    /// The text of `given`, a file of the workspace read beneath it by
    /// descriptor (no link leads out), of at most `limit` bytes; `Ok(None)`
    /// when there is no such file.
    pub fn read_text(&self, given: &str, limit: u64) -> Result<Option<String>, FileError> {
        self.read_with(given, |opened, rel| opened.read_text(rel, limit))
    }

    /// The bytes of `given`, read as [`InProcess::read_text`] reads.
    pub fn read_bytes(&self, given: &str, limit: u64) -> Result<Option<Vec<u8>>, FileError> {
        self.read_with(given, |opened, rel| opened.read(rel, limit))
    }

    fn read_with<T>(
        &self,
        given: &str,
        read: impl FnOnce(
            &crate::workspace::Opened<'_>,
            &std::path::Path,
        ) -> Result<T, crate::workspace::FileError>,
    ) -> Result<Option<T>, FileError> {
        let workspace = &self.session.workspace;
        let rel = workspace.relative(given)?;
        let opened = workspace.opened()?;
        match read(&opened, &rel) {
            Ok(read) => Ok(Some(read)),
            Err(FileError::NotFound { .. }) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Calls one tool by name: `Ok` is what the model reads, `Err` the
    /// sentence of a tool error (a refusal among them), secrets scrubbed.
    /// `cancel` ends the call as an MCP client's cancellation does: a
    /// command it runs is killed, a question still waiting withdrawn.
    pub async fn call(
        &self,
        name: &str,
        arguments: Value,
        cancel: &CancellationToken,
    ) -> Result<String, Failed> {
        if let Some(refusal) = self.session.withheld_refusal(name) {
            return self.session.answer(Err(ToolError::Refused(refusal)));
        }
        if self.gateway.owns(name) {
            let request = rmcp::model::CallToolRequestParams::new(name.to_owned()).with_arguments(
                match arguments {
                    Value::Object(map) => map,
                    _ => Default::default(),
                },
            );
            let cancel = CancellationToken::new();
            let outcome = self
                .gateway
                .call_as(&self.session, &self.client, &cancel, request, None)
                .await
                .map_err(ToolError::from)
                .and_then(|result| {
                    let text = result_text(&result);
                    if result.is_error == Some(true) {
                        Err(ToolError::Upstream(GatewayError::Server(text)))
                    } else {
                        Ok(text)
                    }
                });
            return self.session.answer(outcome);
        }
        let call = Call {
            session: &self.session,
            client: &self.client,
            cancel: cancel.clone(),
        };
        let extra = tokio::select! {
            outcome = crate::extra::dispatch(&call, name, arguments.clone()) => outcome,
            () = cancel.cancelled() => Some(Err(ToolError::Cancelled { tool: name.to_owned(), by: "the person" })),
        };
        if let Some(outcome) = extra {
            return self.session.answer(outcome);
        }
        if name == REQUEST_APPLY || !self.session.offered.contains(&name) {
            let offered = self.tools().await.into_iter().map(|t| t.name);
            return Err(Failed(format!(
                "there is no tool named `{name}`; the tools are {}",
                offered.collect::<Vec<_>>().join(", ")
            )));
        }
        let outcome = tokio::select! {
            outcome = tools::dispatch(&call, name, arguments) => outcome,
            () = cancel.cancelled() => Err(ToolError::Cancelled { tool: name.to_owned(), by: "the person" }),
        };
        self.session.answer(outcome)
    }

    /// Ends the workspace: with `apply`, work left in it goes through the
    /// `workspace.apply` question as request_apply asks it; whatever is not
    /// applied is kept and said where (on stderr), never lost.
    pub async fn finish(&self, apply: bool) -> Finished {
        let Some(held) = &self.session.session_workspace else {
            return Finished::NoWorkspace;
        };
        let pending = {
            let held = held
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            held.pending().map(|p| (p.is_empty(), p.to_string()))
        };
        let finished = match pending {
            Ok((true, _)) => Finished::Nothing,
            Ok((false, _)) if apply => {
                let call = Call {
                    session: &self.session,
                    client: &self.client,
                    cancel: CancellationToken::new(),
                };
                match tools::dispatch(&call, REQUEST_APPLY, Value::Object(Default::default())).await
                {
                    Ok(said) => Finished::Applied(said),
                    Err(why) => Finished::Kept(why.to_string()),
                }
            }
            Ok((false, pending)) => Finished::Kept(format!("it holds {pending}, not applied")),
            Err(e) => Finished::Kept(e.to_string()),
        };
        tokio::task::block_in_place(|| tools::finish_workspace(&self.session));
        finished
    }
}

/// What a model reads of a gateway tool's result: its text blocks, one
/// after the other, with other content named; the structured content when
/// there is no text.
fn result_text(result: &rmcp::model::CallToolResult) -> String {
    let mut parts: Vec<String> = result
        .content
        .iter()
        .map(|block| match block.as_text() {
            Some(text) => text.text.clone(),
            None => match serde_json::to_value(block) {
                Ok(value) => format!(
                    "[{} content, not shown]",
                    value["type"].as_str().unwrap_or("other")
                ),
                Err(_) => "[content, not shown]".to_owned(),
            },
        })
        .collect();
    if parts.is_empty()
        && let Some(structured) = &result.structured_content
    {
        parts.push(structured.to_string());
    }
    parts.join("\n")
}
