//! The background tools: run_command's `background: true` start, and
//! task_output, stop_task, list_tasks and serve_port.
//!
//! The task tools act only on the session's own tasks, each decided when
//! it started, so they decide nothing more; serve_port is decided at
//! `net.serve.<port>`.

use std::fmt::Write as _;
use std::sync::Arc;
use std::time::Duration;

use chock_policy::{Decision, Suggestion, Verdict, names};
use chock_sandbox::exec::{self, ExecRequest, ProjectToolchain};
use chock_sandbox::netmode::{self, Network};
use serde::Deserialize;

use super::{Call, ToolError};
use crate::ROUTE;
use crate::ask::Client;
use crate::gate::{Act, Asking};
use crate::ports::{PortError, Reserved};
use crate::session::Session;
use crate::tasks::{MAX_RUNNING, OUTPUT_BYTES, TASKS_MOUNT, Task, ids};

/// The tool that publishes a port.
pub const SERVE_PORT: &str = "serve_port";
/// How much output one task_output call gives when it names no `max_bytes`.
const DEFAULT_READ_BYTES: u64 = 64 << 10;
/// The longest `wait_seconds` a task_output call may ask for.
pub const MAX_WAIT_SECONDS: u64 = 30;
/// How long stop_task waits for a stopped task to be reaped.
const STOP_WAIT: Duration = Duration::from_secs(5);

/// What every sandbox of the session is given besides the project's own:
/// the task records, read-only, the network the policy says, and the
/// session's scratchpad when it has one.
pub fn furnish(
    session: &Session,
    prepared: &mut exec::Prepared,
    network: Network,
) -> Result<(), chock_sandbox::SandboxError> {
    let sandbox = prepared.sandbox_mut();
    sandbox.show_read_only(session.tasks.dir().to_path_buf(), TASKS_MOUNT.into());
    sandbox.set_network(network);
    if let Some(scratchpad) = &session.scratchpad {
        sandbox.give_scratchpad(scratchpad)?;
        prepared.set_env(SCRATCHPAD_VAR, chock_sandbox::SCRATCH_MOUNT);
    }
    Ok(())
}

/// Why a long-lived piped program of the session (a third-party MCP
/// server, a language server) did not start; `by` names the part of Chock
/// a bug would be in.
#[derive(Debug, thiserror::Error)]
pub enum PipedError {
    #[error(transparent)]
    Exec(#[from] exec::ExecError),
    #[error(transparent)]
    Sandbox(#[from] chock_sandbox::SandboxError),
    #[error("the sandbox gave no {what}; this is a bug in {by}")]
    NoPipe {
        what: &'static str,
        by: &'static str,
    },
    #[error("its thread could not start ({0})")]
    Thread(std::io::Error),
    #[error("starting it stopped unexpectedly; this is a bug in {0}")]
    Lost(&'static str),
    #[error("its {what} cannot be used: {source}")]
    Pipe {
        what: &'static str,
        #[source]
        source: std::io::Error,
    },
}

impl PipedError {
    /// A pipe of the started program that cannot be used by the runtime.
    pub fn pipe(what: &'static str) -> impl FnOnce(std::io::Error) -> PipedError {
        move |source| PipedError::Pipe { what, source }
    }
}

/// A long-lived program of the session's (a third-party MCP server, a
/// language server) prepared in the sandbox a tool call gets, its stdin,
/// stdout and stderr piped to Chock. Nobody can be asked while it starts,
/// so a dev shell that needs a question is refused, naming the rule to add.
pub fn prepare_piped(
    session: &Session,
    argv: &[String],
) -> Result<exec::Prepared, exec::ExecError> {
    let request = ExecRequest {
        project: session.project.clone(),
        dev_shell: session.dev_shell.clone(),
        argv: argv.iter().map(std::ffi::OsString::from).collect(),
        cwd: session.project.dir.clone(),
        capture: None,
    };
    let builder = exec::devshell_builder(
        &session.policy,
        &session.log,
        &chock_policy::Nobody,
        crate::ROUTE,
    );
    let toolchain = exec::toolchain(&request.project, &request.dev_shell, &builder)?;
    let prepared = exec::prepare_allowed(
        &request,
        toolchain,
        &session.policy,
        &session.log,
        crate::ROUTE,
    )?;
    Ok(prepared.piped())
}

/// The variable that tells a command where its session's scratchpad is.
pub const SCRATCHPAD_VAR: &str = "CHOCK_SCRATCHPAD";

/// Starts an allowed command as a background task and publishes the ports
/// rules name for it.
pub async fn start(
    call: &Call<'_>,
    request: ExecRequest,
    toolchain: ProjectToolchain,
    command: String,
) -> Result<String, ToolError> {
    let session = call.session.clone();
    session.tasks.room()?;
    let network = netmode::background(&session.policy);
    // A background command never asks: its router reaches what the rules
    // allow outright, and refuses the rest with nobody asked.
    let router = exec::router(
        network,
        super::command::SessionPolicy(session.clone()),
        &session.log,
        std::sync::Arc::new(chock_policy::Nobody),
        (ROUTE, &call.client.name()),
        &session.project,
    )
    .map_err(sandbox_failed)?;
    let started = tokio::task::spawn_blocking(move || {
        let mut prepared =
            exec::prepare_allowed(&request, toolchain, &session.policy, &session.log, ROUTE)
                .map_err(sandbox_failed)?;
        let notices: Vec<String> = prepared
            .notices
            .iter()
            .map(exec::Notice::for_agent)
            .collect();
        furnish(&session, &mut prepared, network).map_err(sandbox_failed)?;
        if let Some(router) = router {
            prepared = prepared.with_router(router);
        }
        prepared.sandbox_mut().with_dialer();
        prepared.stream_output();
        let task = session.tasks.start(prepared, command, network)?;
        Ok::<_, ToolError>((notices, task))
    })
    .await
    .map_err(|e| ToolError::stopped("run_command", e, call.session.command))?;
    let (notices, task) = started?;
    let mut out = String::new();
    for notice in notices {
        let _ = writeln!(out, "note: {notice}");
    }
    let _ = writeln!(
        out,
        "started task {} in the background: {}\nnetwork: {}",
        task.id,
        task.command,
        network_words(network)
    );
    for line in publish_named(call, &task).await {
        let _ = writeln!(out, "{line}");
    }
    let _ = write!(
        out,
        "Read its output with task_output {{\"task\": {id}}}, stop it with stop_task {{\"task\": {id}}}; it is killed when this session ends. Its record is {TASKS_MOUNT}/{id}.json inside the sandbox.",
        id = task.id
    );
    call.session.tasks.write_record(&task);
    Ok(exec::as_seen_inside(
        &out,
        &super::command::inside_names(call.session),
    ))
}

fn network_words(network: Network) -> &'static str {
    match network {
        Network::Closed => {
            "none (loopback inside its own sandbox only; .policy.net.background decides this)"
        }
        Network::Filtered => "filtered: each host it reaches must be allowed outright",
    }
}

/// A background command the sandbox could not start, as run_command says it.
fn sandbox_failed(e: impl std::fmt::Display) -> ToolError {
    ToolError::Sandbox(format!("run_command: {e}"))
}

/// The ports the rules name exactly (`net.serve.3000`), lowest first: a
/// pattern names no port to open.
fn named_ports(session: &Session) -> Vec<u16> {
    let mut ports: Vec<u16> = session
        .policy
        .rules()
        .iter()
        .filter(|rule| rule.decision != Decision::Deny)
        .filter_map(|rule| rule.action.as_ref())
        .filter(|action| !action.is_class())
        .filter_map(|action| action.as_str().strip_prefix("net.serve.")?.parse().ok())
        .collect();
    ports.sort_unstable();
    ports.dedup();
    ports
}

/// Whether some rule could permit a port (serve_port is offered only then).
pub fn could_permit_a_port(session: &Session) -> bool {
    session.policy.rules().iter().any(|rule| {
        rule.decision != Decision::Deny
            && rule.action.as_ref().is_some_and(|action| {
                action.as_str().starts_with("net.serve.")
                    || (action.is_class() && action.matches("net.serve.1024"))
            })
    })
}

/// Publishes, for a task that just started, each port a rule names with
/// allow and no other task holds; one line per port.
async fn publish_named(call: &Call<'_>, task: &Arc<Task>) -> Vec<String> {
    let session = call.session;
    let mut lines = Vec::new();
    for port in named_ports(session) {
        if let Some(holder) = session.tasks.ports.holder(port) {
            lines.push(format!("port {port}: stays published for task {holder}"));
            continue;
        }
        let reserved = match session.tasks.ports.reserve(port) {
            Ok(reserved) => reserved,
            Err(why) => {
                lines.push(format!("not published: {why}"));
                continue;
            }
        };
        let act = serve_act(port, task, exec::TOOL);
        if let Err(refused) = call.gate(&act, Asking::NeverBackground).await {
            lines.push(format!("port {port} not published: {refused}"));
            continue;
        }
        lines.push(
            publish(session, reserved, task).unwrap_or_else(|why| format!("not published: {why}")),
        );
    }
    lines
}

fn serve_act(port: u16, task: &Task, tool: &'static str) -> Act<'static> {
    Act {
        tool,
        action: names::net_serve(port),
        subject: Some(format!("127.0.0.1:{port}")),
        detail: vec![format!(
            "publish port {port} of task {} ({}) on this machine's 127.0.0.1:{port}",
            task.id, task.command
        )],
    }
}

/// Serves a reserved port for `task`; the line that says so.
fn publish(session: &Session, reserved: Reserved, task: &Task) -> Result<String, PortError> {
    let port = reserved.port();
    let dialer = task.dialer().ok_or(PortError::NoHelper { task: task.id })?;
    session.tasks.ports.publish(reserved, task.id, dialer)?;
    session.tasks.write_record(task);
    Ok(format!(
        "published: http://127.0.0.1:{port} on this machine reaches port {port} inside task {}'s sandbox ({}), until the task or the session ends",
        task.id, task.command
    ))
}

/// A running task by its id, or the one running task when none is named.
fn pick(session: &Session, task: Option<u32>, tool: &str) -> Result<Arc<Task>, ToolError> {
    match task {
        Some(id) => session.tasks.get(id).ok_or_else(|| {
            ToolError::NotFound(format!(
                "{tool}: there is no task {id}; the session's tasks are: {}",
                listing(session)
            ))
        }),
        None => {
            let running = session.tasks.running();
            match running.as_slice() {
                [only] => Ok(only.clone()),
                [] => Err(ToolError::NotFound(format!(
                    "{tool}: no background command is running; start one with run_command and `background: true`"
                ))),
                _ => Err(ToolError::Argument(format!(
                    "{tool}: name the task: {} are running",
                    ids(&running)
                ))),
            }
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServePort {
    port: u16,
    task: Option<u32>,
}

pub async fn serve_port(call: &Call<'_>, args: ServePort) -> Result<String, ToolError> {
    let session = call.session;
    let task = pick(session, args.task, SERVE_PORT)?;
    if !task.running() {
        return Err(ToolError::Unavailable(format!(
            "{SERVE_PORT}: task {} has ended ({}); a port is published only for a running task",
            task.id,
            task.state().words()
        )));
    }
    let port = args.port;
    // Bound before the act is decided, so what was asked about is what is
    // served; each refusal says which port and why.
    let reserved = session.tasks.ports.reserve(port)?;
    let act = serve_act(port, &task, SERVE_PORT);
    let verdict = port_verdict(session, call.client, &act, port);
    call.session
        .gate_verdict(call.client, &call.cancel, &act, Asking::Person, verdict)
        .await?;
    Ok(publish(session, reserved, &task)?)
}

/// `net.serve.<port>`, read so that only a rule naming the port allows it
/// outright: a pattern's allow names no port, so a person answers for the
/// number instead.
fn port_verdict(session: &Session, client: &Client, act: &Act, port: u16) -> Verdict {
    let verdict = session.verdict(client, act);
    let exact = format!("\"{}\"", act.action);
    let by_pattern = verdict.decision == Decision::Allow
        && verdict
            .decided_by
            .rule
            .as_deref()
            .is_some_and(|rule| !rule.contains(&exact));
    if !by_pattern {
        return verdict;
    }
    Verdict {
        decision: Decision::Ask,
        suggestion: Some(Suggestion {
            rule: format!(".{{ .action = \"net.serve.{port}\", .decision = .allow }}"),
            block: format!(
                ".policy.rules in {}",
                session.policy.project_file().display()
            ),
        }),
        decided_by: verdict.decided_by,
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TaskOutput {
    task: u32,
    offset: Option<u64>,
    max_bytes: Option<u64>,
    wait_seconds: Option<u64>,
}

pub async fn task_output(call: &Call<'_>, args: TaskOutput) -> Result<String, ToolError> {
    let task = pick(call.session, Some(args.task), "task_output")?;
    let offset = args.offset.unwrap_or(0);
    if let Some(wait) = args.wait_seconds.filter(|w| *w > 0) {
        task.wait_past(offset, Duration::from_secs(wait.min(MAX_WAIT_SECONDS)))
            .await;
    }
    let max = usize::try_from(args.max_bytes.unwrap_or(DEFAULT_READ_BYTES)).unwrap_or(usize::MAX);
    let chunk = task.read(offset, max);
    let total = task.output_len();
    let mut out = format!(
        "task {} ({}): {}\n",
        task.id,
        task.command,
        task.state().words()
    );
    if chunk.skipped > 0 {
        let _ = writeln!(
            out,
            "(output cut: {} bytes from offset {offset} were dropped; a task keeps its last {} MiB)",
            chunk.skipped,
            OUTPUT_BYTES >> 20
        );
    }
    let _ = writeln!(
        out,
        "bytes {}..{} of {total}; next offset {}{}",
        chunk.from,
        chunk.next,
        chunk.next,
        if chunk.next < total {
            " (more is there: call again from it)"
        } else {
            ""
        }
    );
    // In the sandbox's names, as run_command's own result.
    let shown = exec::as_seen_inside(&chunk.text, &super::command::inside_names(call.session));
    let _ = write!(out, "--- output ---\n{shown}");
    Ok(out)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StopTask {
    task: u32,
}

pub async fn stop_task(call: &Call<'_>, args: StopTask) -> Result<String, ToolError> {
    let task = pick(call.session, Some(args.task), "stop_task")?;
    if !task.running() {
        return Ok(format!(
            "task {} had already ended: {}",
            task.id,
            task.state().words()
        ));
    }
    task.stop();
    task.wait_past(u64::MAX, STOP_WAIT).await;
    Ok(format!(
        "task {} ({}): {}; its published ports are closed",
        task.id,
        task.command,
        task.state().words()
    ))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ListTasks {}

pub async fn list_tasks(call: &Call<'_>, _args: ListTasks) -> Result<String, ToolError> {
    Ok(listing(call.session))
}

fn listing(session: &Session) -> String {
    let tasks = session.tasks.all();
    if tasks.is_empty() {
        return format!(
            "no background commands in this session (at most {MAX_RUNNING} run at once)"
        );
    }
    tasks
        .iter()
        .map(|task| {
            let ports = session.tasks.ports.of_task(task.id);
            format!(
                "task {}: {} | {} | network {} | output {} bytes{}",
                task.id,
                task.command,
                task.state().words(),
                task.network.word(),
                task.output_len(),
                if ports.is_empty() {
                    String::new()
                } else {
                    format!(
                        " | published: {}",
                        ports
                            .iter()
                            .map(|p| format!("127.0.0.1:{p}"))
                            .collect::<Vec<_>>()
                            .join(", ")
                    )
                }
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}
