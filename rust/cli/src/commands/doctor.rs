//! `chock doctor`: probe each sandbox layer for real and say whether commands
//! can run here, then what the agents' hooks need: a policy that loads,
//! `chock` and `timeout` on their PATH, writable state and cache folders
//! with space, and each wired agent's entry reaching a working chock. The
//! sandbox's probes are chock-sandbox's; the hooks' are here.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};

use chock_hook::agent::Agent;
use chock_sandbox::doctor::{self, Options, Row, State};
use chock_sandbox::exec;
use chock_sandbox::project::Project;

use crate::exit;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The project directory (default: the nearest directory up from here with chock.zon, flake.nix or .git).
    #[arg(long, value_name = "DIR")]
    pub project: Option<PathBuf>,
    /// Print one JSON object instead of the table.
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let project = Project::for_command(args.project.as_deref())?;
    // The doctor answers even when chock.zon does not load: the policy's
    // only part here is whether sandbox.jit lifts the write-and-execute rule.
    let (write_execute, policy_note, named) = match exec::load_policy(&project, Vec::new()) {
        Ok(policy) => (
            exec::write_execute_state(&policy),
            None,
            [devices_row(&policy), sinks_row(&policy)],
        ),
        Err(error) => (
            chock_sandbox::WriteExecute::Refused,
            Some(error.to_string()),
            [None, None],
        ),
    };
    let mut report = doctor::run(&Options {
        project: &project.dir,
        write_execute,
    });
    report.rows.extend(hook_rows(&project.dir));
    report.rows.push(apply_row(&project));
    report.rows.extend(named.into_iter().flatten());
    report.can_run = !report
        .rows
        .iter()
        .any(|row| row.blocking && row.state == State::Fail);
    if args.json {
        outln!("{}", serde_json::to_string(&report)?);
    } else {
        let verdict = if report.can_run {
            "commands can run here"
        } else {
            "commands cannot run here"
        };
        outln!("chock doctor: {verdict} ({})", project.dir.display());
        let width = report.rows.iter().map(|r| r.name.len()).max().unwrap_or(0);
        for row in &report.rows {
            let state = match row.state {
                State::Ok => "ok  ",
                State::Warn => "WARN",
                State::Fail if row.blocking => "FAIL",
                State::Fail => "off ",
            };
            outln!("  {state}  {:width$}  {}", row.name, row.detail);
        }
        if let Some(note) = policy_note {
            outln!(
                "  note  the project's policy did not load, so write^execute shows the default: {note}"
            );
        }
    }
    Ok(if report.can_run {
        exit::SUCCESS
    } else {
        exit::FAILURE
    }
    .into())
}

/// The least free space the state and cache folders need: the log, a stop
/// file and a dev shell's environment are small, but a full disk refuses
/// every hook call (the log line cannot be written).
const MIN_FREE_BYTES: u64 = 64 << 20;

/// What the agents' hooks need, each a row that blocks when every hook
/// call would be refused without it.
fn hook_rows(project: &Path) -> Vec<Row> {
    let wired: Vec<(Agent, PathBuf)> = Agent::ALL
        .into_iter()
        .filter_map(|agent| {
            crate::commands::status::wired_file(project, agent).map(|file| (agent, file))
        })
        .collect();
    let any_wired = !wired.is_empty();
    let mut rows = vec![policy_row(project)];
    // The hooks run `timeout -k 5 20 chock hook <agent>` through the
    // agent's shell, with the PATH the agent was started with: this one.
    let chock = on_path("chock").map_err(|e| {
        format!("{e}: a wired agent's hooks would refuse every call; install chock there (cargo install --path rust/cli, or nix profile install)")
    }).and_then(|path| working_chock(&path).map_err(|e| e.to_string()));
    rows.push(row("chock on the hooks' PATH", any_wired, chock.clone()));
    let timeout = on_path("timeout")
        .map(|path| {
            format!(
                "{} (the hook entries bound chock hook with it)",
                path.display()
            )
        })
        .map_err(|e| format!("{e}: every hook entry fails; install coreutils"));
    rows.push(row("timeout on the hooks' PATH", any_wired, timeout));
    let state = chock_hook::stop::state_dir_from(|name| std::env::var_os(name))
        .map_err(|e| e.to_string())
        .and_then(|dir| writable_with_space(&dir).map_err(|e| e.to_string()));
    rows.push(row("state folder", true, state));
    let cache = chock_sandbox::project::cache_home()
        .map_err(|e| e.to_string())
        .and_then(|dir| writable_with_space(&dir.join("chock")).map_err(|e| e.to_string()));
    rows.push(row("cache folder", false, cache));
    for (agent, file) in &wired {
        let shown = file.strip_prefix(project).unwrap_or(file).display();
        let detail = match &chock {
            Ok(found) => Ok(format!("{shown} calls chock hook {agent}: {found}")),
            Err(_) => Err(format!(
                "{shown} calls chock hook {agent}, and no working chock is on PATH: every call is refused"
            )),
        };
        rows.push(row(hooks_row(*agent), true, detail));
    }
    if !any_wired {
        rows.push(Row {
            name: "agents wired",
            state: State::Warn,
            blocking: false,
            detail: "none in this project: `chock sync --agents claude` (or cursor, gemini, codex) wires one".into(),
        });
    }
    rows
}

fn hooks_row(agent: Agent) -> &'static str {
    match agent {
        Agent::Claude => "claude hooks",
        Agent::Cursor => "cursor hooks",
        Agent::Gemini => "gemini hooks",
        Agent::Codex => "codex hooks",
    }
}

/// A check's row: its finding when it passed, why when it failed.
fn row(name: &'static str, blocking: bool, result: Result<String, impl std::fmt::Display>) -> Row {
    let (state, detail) = match result {
        Ok(detail) => (State::Ok, detail),
        Err(why) => (State::Fail, why.to_string()),
    };
    Row {
        name,
        state,
        blocking,
        detail,
    }
}

/// Every layer the hooks load (chock.zon, its packages, the operator's
/// config.zon): one that does not load refuses every call.
fn policy_row(project: &Path) -> Row {
    let loaded = chock_policy::LoadOptions::from_env(project, Vec::new())
        .map_err(|e| e.to_string())
        .and_then(|options| chock_policy::Policy::load(&options).map_err(|e| e.to_string()))
        .map(|_| "chock.zon, its packages and config.zon load".to_owned())
        .map_err(|e| format!("{e}: every hook call is refused until it loads"));
    row("policy loads", true, loaded)
}

/// An apply into the project that was interrupted (killed, or its machine
/// stopped) is finished or taken back, as the next `chock apply` would;
/// one that cannot be blocks, since no apply can run until it is.
fn apply_row(project: &Project) -> Row {
    let result = chock_sandbox::workspace::journal::recover(project)
        .map(|said| match said.as_slice() {
            [] => "no apply was interrupted".to_owned(),
            said => chock_policy::visible(&said.join("; ")).into_owned(),
        })
        .map_err(|e| chock_policy::visible(&e.to_string()).into_owned());
    row("interrupted apply", true, result)
}

/// The devices chock.zon names and whether each is plugged in now; none
/// when it names none. A missing one only warns: commands run without it.
fn devices_row(policy: &chock_policy::Policy) -> Option<Row> {
    let named = policy.config().devices();
    if named.is_empty() {
        return None;
    }
    let presence = chock_sandbox::devices::presence(named, &Default::default());
    let all_present = presence.iter().all(|(_, node)| node.is_some());
    let detail: Vec<String> = presence
        .into_iter()
        .map(|(action, node)| match node {
            Some(node) => format!("{action} present ({})", node.display()),
            None => format!("{action} not present"),
        })
        .collect();
    Some(Row {
        name: "devices named",
        state: if all_present { State::Ok } else { State::Warn },
        blocking: false,
        detail: detail.join("; "),
    })
}

/// The sinks the bundles and config.zon name, and how far each has got:
/// its cursor against the log's newest line, whether a shipper holds it,
/// and what its last round met. None when no sink is named. A sink behind
/// or not reached only warns: decisions go on, and wait in the log.
fn sinks_row(policy: &chock_policy::Policy) -> Option<Row> {
    let sinks = policy.config().sinks();
    if sinks.is_empty() {
        return None;
    }
    let log = chock_log::Log::configured(policy.config()).ok()?;
    let newest = log.head().ok().flatten().map_or(0, |head| head.seq);
    let mut all_well = true;
    let detail: Vec<String> = sinks
        .iter()
        .map(|sink| {
            let state = chock_sinks::state(log.dir(), sink);
            let (text, well) = describe_sink(sink, &state, newest);
            all_well &= well;
            text
        })
        .collect();
    Some(Row {
        name: "sinks named",
        state: if all_well { State::Ok } else { State::Warn },
        blocking: false,
        detail: detail.join("; "),
    })
}

/// One sink's line in the sinks row, and whether it is caught up and reached.
fn describe_sink(
    sink: &chock_sinks::Sink,
    state: &chock_sinks::SinkState,
    newest: u64,
) -> (String, bool) {
    let mut text = format!("{} ({})", sink.id, sink.target);
    let at = match &state.cursor {
        Ok(cursor) => cursor.at.seq,
        Err(why) => return (format!("{text}: {why}"), false),
    };
    let waiting = newest.saturating_sub(at);
    text.push_str(&format!(": at seq {at} of {newest}, {waiting} waiting"));
    text.push_str(if state.shipping {
        ", a shipper running"
    } else {
        ", no shipper running"
    });
    let down = state.last.as_ref().and_then(|last| last.down.as_deref());
    if let Some(why) = down {
        text.push_str(&format!("; last round not reached: {why}"));
    }
    (text, waiting == 0 && down.is_none())
}

/// Why a program or a folder a check looks for does not do; the words are
/// the row's detail.
#[derive(Debug, thiserror::Error)]
enum CheckError {
    #[error("no `{name}` on PATH ({paths})")]
    NotOnPath { name: String, paths: String },
    #[error("{} does not run: {source}", path.display())]
    DoesNotRun {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(
        "{} is no working chock (`--version` answered {code:?}): every hook call is refused",
        path.display()
    )]
    NotChock { path: PathBuf, code: Option<i32> },
    #[error("{} cannot be made: {source}", path.display())]
    Unmade {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{} is not writable: {source}", path.display())]
    NotWritable {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{}: statvfs: {source}", path.display())]
    Statvfs {
        path: PathBuf,
        source: rustix::io::Errno,
    },
    #[error(
        "{} has {} MiB free, under the {} MiB the log and caches need: free some space",
        path.display(),
        free >> 20,
        MIN_FREE_BYTES >> 20
    )]
    Full { path: PathBuf, free: u64 },
}

/// The first `name` on this process's PATH that is an executable file.
fn on_path(name: &str) -> Result<PathBuf, CheckError> {
    chock_sandbox::on_path(name).ok_or_else(|| CheckError::NotOnPath {
        name: name.to_owned(),
        paths: std::env::var_os("PATH")
            .unwrap_or_default()
            .to_string_lossy()
            .into_owned(),
    })
}

/// The chock at `path` answers `--version`.
fn working_chock(path: &Path) -> Result<String, CheckError> {
    let out = Command::new(path)
        .arg("--version")
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .map_err(|source| CheckError::DoesNotRun {
            path: path.to_owned(),
            source,
        })?;
    let version = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    if out.status.success() && version.starts_with("chock ") {
        Ok(format!("{} ({version})", path.display()))
    } else {
        Err(CheckError::NotChock {
            path: path.to_owned(),
            code: out.status.code(),
        })
    }
}

/// `dir` (made when missing) takes a file, and its file system has
/// [`MIN_FREE_BYTES`] free.
fn writable_with_space(dir: &Path) -> Result<String, CheckError> {
    std::fs::create_dir_all(dir).map_err(|source| CheckError::Unmade {
        path: dir.to_owned(),
        source,
    })?;
    let probe = dir.join(format!(".chock-doctor-{}", std::process::id()));
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&probe)
        .map_err(|source| CheckError::NotWritable {
            path: dir.to_owned(),
            source,
        })?;
    let _ = std::fs::remove_file(&probe);
    let stat = rustix::fs::statvfs(dir).map_err(|source| CheckError::Statvfs {
        path: dir.to_owned(),
        source,
    })?;
    let free = stat.f_bavail.saturating_mul(stat.f_frsize);
    if free < MIN_FREE_BYTES {
        return Err(CheckError::Full {
            path: dir.to_owned(),
            free,
        });
    }
    Ok(format!("{} ({} MiB free)", dir.display(), free >> 20))
}
