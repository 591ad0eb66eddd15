//! The tools called in this process, outside MCP: `chock run` starts the
//! same [`Session`] as `chock mcp` (the policy, the log, the workspace, the
//! people it can ask), offers the model the same definitions, and runs
//! each call through the same dispatch and the same gate. Only the caller
//! differs: a [`Local`] one, whose person is asked at its terminal before
//! `chock approve`.

use std::sync::Arc;

use chock_log::Log;
use chock_policy::Policy;
use chock_sandbox::project::Project;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::ask::{Client, Local};
use crate::error::McpError;
use crate::session::{EndTasks, ServeOptions, Session};
use crate::tools::{self, Call, REQUEST_APPLY};

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
    // However the session ends, its background commands end with it.
    _tasks: EndTasks,
}

impl InProcess {
    /// Starts the session as `chock mcp` does (`options.workspace` makes a
    /// session workspace), asking `before` first once the policy is read
    /// (its `Err` stops the start: nothing is made; its `Ok` is given
    /// back); `caller` is who calls its tools. Must run on a
    /// multi-threaded tokio runtime, outside its async tasks' threads.
    pub fn start<T>(
        options: &ServeOptions,
        caller: Local,
        before: impl FnOnce(&Project, &Policy, &Log) -> Result<T, String>,
    ) -> Result<(InProcess, T), McpError> {
        let (session, before) = Session::start_after(options, before)?;
        let session = Arc::new(session);
        let started = InProcess {
            _tasks: EndTasks(session.tasks.clone()),
            session,
            client: Client::Local(caller),
        };
        Ok((started, before))
    }

    /// The tools offered, in their order, as the MCP server lists them;
    /// request_apply is left to the end of the session.
    pub fn tools(&self) -> Vec<ToolDefinition> {
        self.session
            .offered
            .iter()
            .filter(|name| **name != REQUEST_APPLY)
            .filter_map(|name| tools::definition(name))
            .map(|tool| ToolDefinition {
                name: tool.name.to_string(),
                description: tool.description.as_deref().unwrap_or_default().to_owned(),
                input_schema: Value::Object((*tool.input_schema).clone()),
            })
            .collect()
    }

    /// Why tools a rule took away at start are not offered, one sentence each.
    pub fn withheld(&self) -> Vec<String> {
        self.session
            .withheld
            .iter()
            .filter(|w| w.by_rule)
            .map(|w| w.why.clone())
            .collect()
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
    ) -> Result<String, String> {
        if let Some(refusal) = self.session.withheld_refusal(name) {
            return self.session.answer(Err(refusal));
        }
        if name == REQUEST_APPLY || !self.session.offered.contains(&name) {
            let offered = self.tools().into_iter().map(|t| t.name);
            return Err(format!(
                "there is no tool named `{name}`; the tools are {}",
                offered.collect::<Vec<_>>().join(", ")
            ));
        }
        let call = Call {
            session: &self.session,
            client: &self.client,
            cancel: cancel.clone(),
        };
        let outcome = tokio::select! {
            outcome = tools::dispatch(&call, name, arguments) => outcome,
            () = cancel.cancelled() => Err(format!("{name} was cancelled by the person")),
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
                    Err(why) => Finished::Kept(why),
                }
            }
            Ok((false, pending)) => Finished::Kept(format!("it holds {pending}, not applied")),
            Err(e) => Finished::Kept(e.to_string()),
        };
        tokio::task::block_in_place(|| tools::finish_workspace(&self.session));
        finished
    }
}
