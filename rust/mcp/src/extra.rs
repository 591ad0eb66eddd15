//! Tools a caller brings beside Chock's own and the gateway's (a project's
//! WebAssembly plugins): started once the session's policy is read, listed
//! after Chock's own tools, and each call decided at its own action through
//! the gate, as every call is (asked, logged), then run off the async
//! threads.

use std::path::Path;
use std::sync::Arc;

use chock_policy::Policy;
use serde_json::Value;

use crate::gate::{Act, Asking, arguments_line};
use crate::session::Session;
use crate::tools::{Call, ToolError};
use crate::workspace::Workspace;

/// One tool offered: its name in the tool list, the action each call is
/// decided at, what the model reads of it, and a line for the person.
#[derive(Debug, Clone)]
pub struct ExtraTool {
    pub name: String,
    pub action: String,
    pub description: String,
    /// A JSON schema object of the tool's input.
    pub input_schema: serde_json::Map<String, Value>,
    pub detail: String,
}

/// What the tools start with: the session's project, policy, workspace
/// and runtime.
pub struct ExtraStart<'a> {
    pub project: &'a Path,
    pub policy: &'a Policy,
    pub agent_kind: &'a str,
    pub workspace: Arc<Workspace>,
    pub runtime: tokio::runtime::Handle,
}

/// A source of tools, started with each session.
pub trait ExtraTools: Send + Sync + std::fmt::Debug {
    /// Decides once, at the session's start, what is offered; a tool not
    /// offered is the source's to explain (it is simply not listed).
    fn start(&self, start: ExtraStart<'_>) -> Arc<dyn ExtraSession>;
}

/// The tools of one session.
pub trait ExtraSession: Send + Sync {
    fn tools(&self) -> &[ExtraTool];
    /// Runs the offered tool `name` (its call already decided); blocks.
    fn call(&self, name: &str, input: Value) -> Result<String, String>;
}

/// The session's extra tools, as `tools/list` sends them.
pub(crate) fn definitions(session: &Session) -> Vec<rmcp::model::Tool> {
    let Some(extra) = &session.extra else {
        return Vec::new();
    };
    extra
        .tools()
        .iter()
        .map(|t| {
            rmcp::model::Tool::new(
                t.name.clone(),
                t.description.clone(),
                Arc::new(t.input_schema.clone()),
            )
        })
        .collect()
}

/// Runs the session's extra tool `name` when it has one (`None` when it
/// has not): decided at the tool's action through the gate and, let
/// through, run on a blocking thread.
pub(crate) async fn dispatch(
    call: &Call<'_>,
    name: &str,
    arguments: Value,
) -> Option<Result<String, ToolError>> {
    let extra = call.session.extra.as_ref()?;
    let tool = extra.tools().iter().find(|t| t.name == name)?;
    Some(run(call, extra, tool, arguments).await)
}

async fn run(
    call: &Call<'_>,
    extra: &Arc<dyn ExtraSession>,
    tool: &ExtraTool,
    arguments: Value,
) -> Result<String, ToolError> {
    let act = Act {
        tool: &tool.name,
        action: tool.action.clone(),
        subject: None,
        detail: vec![tool.detail.clone(), arguments_line(&arguments)],
    };
    call.gate(&act, Asking::Person).await?;
    let extra = extra.clone();
    let name = tool.name.clone();
    tokio::task::spawn_blocking(move || extra.call(&name, arguments))
        .await
        .map_err(|e| ToolError::stopped("the plugin", e, call.session.command))?
        .map_err(ToolError::Ran)
}
