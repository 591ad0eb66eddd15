//! The session workspace of `chock mcp --workspace`: made at start, every
//! tool working on it; `request_apply`, with which an agent asks for its
//! work to be carried into the person's repository (one `workspace.apply`
//! question, asked of the person as any other); and what is said at the
//! end about work never applied, which is kept, never lost.

use chock_log::Log;
use chock_policy::Policy;
use chock_sandbox::project::Project;
use chock_sandbox::workspace::{self, SessionWorkspace, apply::Applied};
use serde::Deserialize;

use super::{Call, ToolError};
use crate::ROUTE;
use crate::error::McpError;
use crate::session::Session;

/// The tool's name.
pub const REQUEST_APPLY: &str = "request_apply";

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RequestApply {}

/// Makes this server's workspace, saying on stderr what the person should
/// know; with `defer`, its tree's files are left for [`fill_workspace`]
/// (everything the tools check is in place already).
pub fn make_workspace(
    project: &Project,
    policy: &Policy,
    log: &Log,
    (command, session, allow_dirty, defer): (&str, &str, bool, bool),
) -> Result<SessionWorkspace, McpError> {
    let request = workspace::Request {
        project,
        session,
        allow_dirty,
        policy,
        log,
        route: ROUTE,
    };
    let (held, notices) = if defer {
        SessionWorkspace::open_or_start(&request)?
    } else {
        SessionWorkspace::open_or_make(&request)?
    };
    for notice in notices {
        tracing::warn!("{command}: {notice}");
    }
    Ok(held)
}

/// Writes the files of the session's workspace [`make_workspace`] left
/// (run on a thread of its own while the server answers), then lets every
/// tool call waiting for them go on, or fail with what went wrong.
pub fn fill_workspace(session: &Session) {
    let (Some(held), Some(ready)) = (&session.session_workspace, &session.workspace_ready) else {
        return;
    };
    let mut held = held
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let name = held.meta.session.clone();
    let allow_dirty = held.meta.allow_dirty;
    let filled = held.finish(&workspace::Request {
        project: &session.project,
        session: &name,
        allow_dirty,
        policy: &session.policy,
        log: &session.log,
        route: ROUTE,
    });
    drop(held);
    ready.set(match filled {
        Ok(notices) => {
            for notice in notices {
                tracing::warn!("{}: {notice}", session.command);
            }
            Ok(())
        }
        Err(e) => Err(crate::session::Unmade::because(e)),
    });
}

/// At the end: a workspace holding nothing unapplied is removed; one that
/// does is kept, and the person told where and how to apply it.
pub fn finish_workspace(session: &Session) {
    let Some(held) = &session.session_workspace else {
        return;
    };
    let held = held
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    match held.pending() {
        Ok(pending) if pending.is_empty() => {
            let dir = held.dir.clone();
            // Removed under the lock this process holds.
            if let Err(e) = workspace::remove_dir(&dir) {
                tracing::warn!("{}: {e}", session.command);
            }
        }
        Ok(pending) => {
            let name = &held.meta.session;
            let line = format!(
                "{}: the workspace {name} holds {pending}, kept at {}; `chock apply {name}` carries it into {}, `chock workspace` lists it",
                session.command,
                held.tree().display(),
                held.meta.project.display()
            );
            eprintln!("{line}");
        }
        Err(e) => eprintln!(
            "{}: the workspace {} is kept: {e}",
            session.command,
            held.dir.display()
        ),
    }
}

impl Session {
    /// The tree the tools read and evaluate: the session workspace's, or
    /// the project itself.
    pub fn tree(&self) -> std::path::PathBuf {
        self.project
            .workspace
            .as_ref()
            .map_or_else(|| self.project.dir.clone(), |w| w.source.clone())
    }
}

pub async fn request_apply(call: &Call<'_>, _args: RequestApply) -> Result<String, ToolError> {
    let session = call.session.clone();
    let no_workspace = || {
        ToolError::Unavailable(
            "request_apply: this server works on the project itself (started without --workspace), so there is nothing to apply"
                .into(),
        )
    };
    if session.session_workspace.is_none() {
        return Err(no_workspace());
    }
    let asker = session.asker(call.client, &call.cancel, REQUEST_APPLY);
    let who = chock_nix::Who {
        agent_kind: call.client.name(),
        tool: Some(REQUEST_APPLY.into()),
        model: None,
    };
    let outcome = tokio::task::spawn_blocking(move || {
        let Some(held) = &session.session_workspace else {
            return Err(no_workspace());
        };
        let mut held = held
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        workspace::apply::apply(
            &mut held,
            &session.policy,
            &session.log,
            ROUTE,
            &asker,
            &who,
        )
        .map_err(|e| ToolError::Sandbox(format!("request_apply: {e}")))
    })
    .await
    .map_err(|e| ToolError::stopped(REQUEST_APPLY, e, call.session.command))??;
    let (plan, applied) = outcome;
    let said = match &plan {
        Some(plan) => format!("{}\n{applied}", plan.summary()),
        None => applied.to_string(),
    };
    match applied {
        Applied::Refused { .. } => Err(ToolError::Refused(format!("refused: {said}"))),
        _ => Ok(said),
    }
}
