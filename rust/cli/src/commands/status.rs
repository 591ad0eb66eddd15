//! `chock status`: the state a person asks about first (is Chock stopped,
//! where the decision log stands, which agents are wired), and with
//! `--verify-log` the walk of the log's chain.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use chock_hook::agent::Agent;
use chock_hook::{stop, sync};
use chock_log::{Head, Log, Rotation};

use crate::exit;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Walk the decision log's hash chain and report the first break (exit 1 at a break).
    #[arg(long)]
    verify_log: bool,
    /// A head kept earlier (SEQ:SHA256, as `chock witness export` carries it): confirm it is still there.
    #[arg(long, value_name = "SEQ:SHA", requires = "verify_log")]
    head: Option<Head>,
    /// Print one JSON object instead of text.
    #[arg(long)]
    json: bool,
    /// The project (default: the nearest folder holding chock.zon or .git).
    #[arg(long, value_name = "DIR")]
    project: Option<PathBuf>,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    if args.verify_log {
        return crate::commands::log::run(crate::commands::log::Command::Verify {
            head: args.head,
            json: args.json,
        });
    }
    let project = crate::commands::hook::project_dir(args.project.as_deref())?;
    let state = stop::state_dir_from(|name| std::env::var_os(name))?;
    let stopped = stop::in_force(&project, Some(&state)).map(|stop| stop.reason());
    let log = Log::from_env(Rotation::default())?;
    let head = log.head()?.map(|head| head.to_string());
    let agents: Vec<(Agent, PathBuf, bool)> = Agent::ALL
        .into_iter()
        .map(|agent| match wired_file(&project, agent) {
            Some(file) => (agent, file, true),
            None => (agent, sync::agent_file(&project, agent), false),
        })
        .collect();
    if args.json {
        let agents: serde_json::Map<_, _> = agents
            .iter()
            .map(|(agent, file, wired)| {
                let entry = serde_json::json!({ "file": file, "wired": wired });
                (agent.name().to_owned(), entry)
            })
            .collect();
        outln!(
            "{}",
            serde_json::json!({
                "project": project,
                "stopped": stopped,
                "log": { "dir": log.dir(), "head": head },
                "agents": agents,
            })
        );
        return Ok(exit::SUCCESS.into());
    }
    outln!("project  {}", project.display());
    match &stopped {
        Some(reason) => outln!("stopped  {reason} (`chock resume` undoes it)"),
        None => outln!("running  every wired agent's calls are decided by the policy"),
    }
    match &head {
        Some(head) => outln!("log      {head}  ({})", log.dir().display()),
        None => outln!("log      nothing logged yet  ({})", log.dir().display()),
    }
    for (agent, file, wired) in &agents {
        let shown = file.strip_prefix(&project).unwrap_or(file);
        let word = if *wired { "wired" } else { "not wired" };
        outln!("{:<8} {word}  ({})", agent.name(), shown.display());
    }
    if !agents.iter().any(|(_, _, wired)| *wired) {
        outln!(
            "no agent is wired here: `chock sync --agents claude` (or cursor, gemini, codex) wires one"
        );
    }
    Ok(exit::SUCCESS.into())
}

/// The hook file that wires `agent` for `project`: the project's own, or
/// the user-level one `chock sync --user` writes, which every project
/// reads; `None` when neither holds the entry `chock sync` writes.
pub(crate) fn wired_file(project: &Path, agent: Agent) -> Option<PathBuf> {
    let home = crate::commands::hook::home().ok();
    std::iter::once(sync::agent_file(project, agent))
        .chain(home.map(|home| sync::agent_file(&home, agent)))
        .find(|file| {
            std::fs::read_to_string(file)
                .is_ok_and(|text| text.contains(&format!("chock hook {agent}")))
        })
}
