//! run_command: a program in the sandbox, named `exec.*` by its class.
//!
//! Naming, preparing and running are chock-sandbox's (the same path
//! `chock exec` takes); this module only puts the gate between naming and
//! preparing, so an `ask` can reach a person, and logs under route `mcp`.

use std::ffi::OsString;
use std::fmt::Write as _;

use chock_sandbox::Exit;
use chock_sandbox::exec::{self, ExecRequest};
use serde::Deserialize;

use super::{Call, ToolError};
use crate::ROUTE;
use crate::build::SessionInputs;
use crate::gate::{Act, Asking};

/// The most bytes of each stream an agent is given.
pub const CAPTURE_BYTES: usize = 256 << 10;
/// How long a program may run when the call names no `timeout_seconds`.
pub const DEFAULT_TIMEOUT_SECONDS: u64 = 300;
/// The longest `timeout_seconds` a call may ask for.
pub const MAX_TIMEOUT_SECONDS: u64 = 3600;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunCommand {
    argv: Vec<String>,
    cwd: Option<String>,
    timeout_seconds: Option<u64>,
    background: Option<bool>,
    #[serde(default)]
    secrets: Vec<String>,
    #[serde(default)]
    secret_files: Vec<String>,
}

/// The command line as a person reads it (shown when asking, never logged).
fn shown(argv: &[String]) -> String {
    argv.iter()
        .map(|a| {
            if !a.is_empty()
                && a.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_./=:@%+,".contains(c))
            {
                a.clone()
            } else {
                format!("'{}'", a.replace('\'', r"'\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

pub async fn run_command(call: &Call<'_>, args: RunCommand) -> Result<String, ToolError> {
    check_arguments(&args)?;
    let background = args.background == Some(true);
    let session = call.session.clone();
    let cwd = match &args.cwd {
        Some(cwd) => session.project.dir.join(session.workspace.relative(cwd)?),
        None => session.project.dir.clone(),
    };
    let request = ExecRequest {
        project: session.project.clone(),
        dev_shell: session.dev_shell.clone(),
        argv: args.argv.iter().map(OsString::from).collect(),
        cwd,
        capture: Some(CAPTURE_BYTES),
    };
    // A changed dev shell is built through chock-nix before anything is
    // named; its questions reach this call's client, and the flake inputs
    // it lacks are fetched as nix_build fetches them.
    let asker = session.asker(call.client, &call.cancel, exec::TOOL);
    let building = session.clone();
    let (request, named) = tokio::task::spawn_blocking(move || {
        let inputs = SessionInputs::new(&building, &asker, exec::TOOL);
        let builder = exec::devshell_builder(&building.policy, &building.log, &asker, ROUTE)
            .fetching_inputs(&inputs);
        let named = exec::name_program(&request, &builder);
        (request, named)
    })
    .await
    .map_err(|e| ToolError::stopped("run_command", e, call.session.command))?;
    let named = named.map_err(|e| ToolError::Sandbox(format!("run_command: {e}")))?;
    // Every act the command holds (`sh -c` read per segment, wrappers
    // looked through, `git.*`) passes the gate, each logged: one refusal
    // refuses the command. A background command is never asked about.
    let asking = if background {
        Asking::NeverBackground
    } else {
        Asking::Person
    };
    for named_act in &named.acts {
        let act = Act {
            tool: exec::TOOL,
            action: named_act.action.clone(),
            subject: named_act.subject.clone(),
            detail: vec![format!("command: {}", shown(&args.argv))],
        };
        call.gate(&act, asking).await?;
    }
    if let Some(missing) = super::git::not_carried_out(&named.acts, &shown(&args.argv)) {
        return Err(ToolError::Unavailable(missing));
    }
    let secrets =
        crate::secrets::for_call(call, exec::TOOL, &args.secrets, &args.secret_files).await?;
    // Named above by the dev shell alone; what provide_tool built is then
    // shown as well, so its programs run, under exec.nix.store.*.
    let mut toolchain = named.toolchain;
    if let Some(shell) = &mut toolchain.dev_shell {
        let provided = session
            .provided
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let known: std::collections::BTreeSet<&std::path::PathBuf> =
            shell.store_paths.iter().collect();
        let extra: Vec<std::path::PathBuf> = provided
            .iter()
            .filter(|p| !known.contains(p))
            .cloned()
            .collect();
        shell.store_paths.extend(extra);
    }
    if background {
        return super::tasks::start(call, request, toolchain, shown(&args.argv)).await;
    }
    let pushes = named.acts.iter().any(|act| act.action == "git.push");
    // A call the client cancels, or a program past its time, is killed:
    // the handle goes to a task that outlives this call's future, which is
    // dropped on cancel.
    let limit = std::time::Duration::from_secs(
        args.timeout_seconds
            .unwrap_or(DEFAULT_TIMEOUT_SECONDS)
            .clamp(1, MAX_TIMEOUT_SECONDS),
    );
    let timed_out = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let (started_tell, started) = tokio::sync::oneshot::channel();
    let cancel = call.cancel.clone();
    let timing = timed_out.clone();
    let killer = tokio::spawn(async move {
        let Ok(handle) = started.await else { return };
        tokio::select! {
            () = cancel.cancelled() => {}
            () = tokio::time::sleep(limit) => {
                timing.store(true, std::sync::atomic::Ordering::SeqCst);
            }
        }
        if let Err(e) = chock_sandbox::SignalHandle::signal(&handle, nix::libc::SIGKILL) {
            tracing::warn!("a command could not be killed: {e}");
        }
    });
    // With a router, each host the program reaches is decided as it
    // connects, its questions going to this call's client or `chock approve`.
    let router = exec::router(
        chock_sandbox::netmode::session(&session.policy),
        SessionPolicy(session.clone()),
        &session.log,
        std::sync::Arc::new(session.asker(call.client, &call.cancel, exec::TOOL)),
        (ROUTE, &call.client.name()),
        &session.project,
    )
    .map_err(|e| ToolError::Sandbox(format!("run_command: {e}")))?;
    // An allowed push is given the person's ssh agent and (with a router)
    // a credential socket, for this call only.
    let push = pushes.then(|| arm_push(call, router.as_ref()));
    let ran = tokio::task::spawn_blocking(move || {
        let mut prepared =
            exec::prepare_allowed(&request, toolchain, &session.policy, &session.log, ROUTE)?
                .with_env(secrets.env)
                .with_secret_files(secrets.files)?;
        super::furnish(
            &session,
            &mut prepared,
            chock_sandbox::netmode::session(&session.policy),
        )?;
        if let Some(push) = &push {
            push.bind(&mut prepared);
        }
        if let Some(router) = router {
            prepared = prepared.with_router(router);
        }
        let mut notices: Vec<String> = prepared
            .notices
            .iter()
            .map(exec::Notice::for_agent)
            .collect();
        let started = prepared.start()?;
        started_tell.send(started.signal_handle()?).ok();
        let ran = started.wait()?;
        // Closed with the call.
        if let Some(push) = push {
            notices.extend(push.notes());
        }
        Ok::<_, exec::ExecError>((notices, ran))
    })
    .await
    .map_err(|e| ToolError::stopped("run_command", e, call.session.command));
    killer.abort();
    // What the model reads names the sandbox's paths, never the host
    // folders behind them (the workspace, the cache, the scratchpad).
    let inside = inside_names(call.session);
    let ran = ran?;
    let (notices, ran) = ran.map_err(|e| {
        ToolError::Sandbox(exec::as_seen_inside(&format!("run_command: {e}"), &inside))
    })?;
    let finished = &ran.finished;
    let mut out = String::new();
    for notice in notices {
        let _ = writeln!(out, "note: {notice}");
    }
    let status = match finished.exit {
        _ if timed_out.load(std::sync::atomic::Ordering::SeqCst) => format!(
            "killed after {} s: the program was still running at its time limit (timeout_seconds, default {DEFAULT_TIMEOUT_SECONDS}, at most {MAX_TIMEOUT_SECONDS}); what it printed until then is below",
            limit.as_secs()
        ),
        Exit::Code(code) => format!("exit status {code}"),
        Exit::Signal(signal) => format!("killed by signal {signal}"),
    };
    let _ = writeln!(out, "{status}");
    if finished.truncated {
        let _ = writeln!(out, "(output cut at {CAPTURE_BYTES} bytes per stream)");
    }
    let _ = write!(
        out,
        "--- stdout ---\n{}\n--- stderr ---\n{}",
        String::from_utf8_lossy(&finished.stdout),
        String::from_utf8_lossy(&finished.stderr)
    );
    let out = exec::as_seen_inside(&out, &inside);
    if timed_out.load(std::sync::atomic::Ordering::SeqCst) {
        Err(ToolError::TimedOut(out))
    } else if finished.exit == Exit::Code(0) {
        Ok(out)
    } else {
        Err(ToolError::Ran(out))
    }
}

/// Refuses arguments no command can be run with, naming the argument.
fn check_arguments(args: &RunCommand) -> Result<(), ToolError> {
    let background = args.background == Some(true);
    let wrong = if args.argv.first().is_none_or(String::is_empty) {
        "run_command: `argv` needs the program first, e.g. [\"make\", \"test\"]"
    } else if args.argv.iter().any(|a| a.contains('\0')) {
        "run_command: an argument holds a NUL byte, which no program can receive"
    } else if background && args.timeout_seconds.is_some() {
        "run_command: `timeout_seconds` does not apply to a background command, which runs until stop_task or the end of the session; leave it out"
    } else if background && !(args.secrets.is_empty() && args.secret_files.is_empty()) {
        "run_command: `secrets` and `secret_files` are given to a command the person can be asked about, and a background command is never asked; run it in the foreground, or leave them out"
    } else {
        return Ok(());
    };
    Err(ToolError::Argument(wrong.to_owned()))
}

/// The host folders a command of `session` sees elsewhere, with where
/// ([`exec::inside_names`]): the session's task records and its
/// scratchpad besides the project's own.
pub(crate) fn inside_names(
    session: &crate::session::Session,
) -> Vec<(std::path::PathBuf, std::path::PathBuf)> {
    let mut own = vec![(
        session.tasks.dir().to_path_buf(),
        crate::tasks::TASKS_MOUNT.into(),
    )];
    own.extend(
        session
            .scratchpad
            .iter()
            .map(|dir| (dir.clone(), chock_sandbox::SCRATCH_MOUNT.into())),
    );
    exec::inside_names(&session.project, &own)
}

/// What one push call is given: a person for its credential is asked
/// through this call's channel, and what is given is scrubbed from then on.
fn arm_push(call: &Call<'_>, router: Option<&chock_sandbox::net::Router>) -> crate::push::Armed {
    let asker = call.session.asker(call.client, &call.cancel, exec::TOOL);
    let session = call.session.clone();
    crate::push::Armed::arm(
        router,
        move |wanted| asker.ask_credential("git.push", &wanted.url(), wanted.username.as_deref()),
        move |given| {
            session
                .secrets
                .remember(crate::credential::SCRUBBED_AS, &given.password);
        },
    )
}

/// The session's policy, held for as long as a command's router decides.
pub(crate) struct SessionPolicy(pub(crate) std::sync::Arc<crate::session::Session>);

impl std::ops::Deref for SessionPolicy {
    type Target = chock_policy::Policy;

    fn deref(&self) -> &chock_policy::Policy {
        &self.0.policy
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_command_line_is_shown_quoted_where_needed() {
        let argv = ["sh", "-c", "echo it's"].map(String::from);
        assert_eq!(shown(&argv), r"sh -c 'echo it'\''s'");
    }
}
