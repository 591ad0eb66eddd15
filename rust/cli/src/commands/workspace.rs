//! `chock workspace`: the session workspaces kept on this machine (a
//! session that ended with work not applied, or was killed), and `clear`,
//! which removes them, asking first about any that hold unapplied work.

use std::io::{BufRead, IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use chock_sandbox::project::Project;
use chock_sandbox::workspace::{self, SessionWorkspace};

use crate::exit;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The project directory (default: the nearest directory up from here with chock.zon, flake.nix or .git).
    #[arg(long, value_name = "DIR", global = true)]
    pub project: Option<PathBuf>,
    /// Every project's workspaces, not only this one's.
    #[arg(long, global = true)]
    pub all: bool,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
    #[command(subcommand)]
    pub command: Option<Command>,
}

#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// Remove the workspaces no running session holds; one with unapplied work is removed only after you say yes (or with --yes).
    Clear {
        /// Remove those with unapplied work without asking.
        #[arg(long)]
        yes: bool,
    },
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let project = if args.all {
        None
    } else {
        Some(Project::for_command(args.project.as_deref())?)
    };
    if let Some(project) = &project
        && let Some(said) = workspace::journal::interrupted(project)?
    {
        eprintln!("chock: {}", chock_policy::visible(&said));
    }
    let found = workspace::list(project.as_ref())?;
    match args.command {
        None => {
            if args.json {
                outln!("{}", serde_json::to_string(&found)?);
                return Ok(exit::SUCCESS.into());
            }
            if found.is_empty() {
                outln!("no workspace is kept");
            }
            for w in &found {
                let state = match &w.pending {
                    _ if w.live => "in use by a running session".to_owned(),
                    Some(pending) => pending.to_string(),
                    None => "cannot be read".to_owned(),
                };
                outln!(
                    "{}  {}  {}\n    {}",
                    w.meta.session,
                    w.meta.project.display(),
                    state,
                    w.dir.join("tree").display()
                );
            }
            Ok(exit::SUCCESS.into())
        }
        Some(Command::Clear { yes }) => {
            let mut kept = 0;
            for w in found.into_iter().filter(|w| !w.live) {
                let pending = w.pending.clone().unwrap_or_default();
                if !pending.is_empty() && !yes && !confirm(&w, &pending) {
                    outln!("kept {} ({pending})", w.meta.session);
                    kept += 1;
                    continue;
                }
                match SessionWorkspace::open_dir(&w.dir).and_then(SessionWorkspace::remove) {
                    Ok(()) => outln!("removed {}", w.meta.session),
                    Err(error) => {
                        eprintln!("chock: {}", chock_policy::visible(&error.to_string()));
                        kept += 1;
                    }
                }
            }
            Ok(if kept == 0 {
                exit::SUCCESS
            } else {
                exit::REFUSED
            }
            .into())
        }
    }
}

/// Asks at the terminal; with none, the answer is no.
fn confirm(w: &workspace::Listed, pending: &workspace::Pending) -> bool {
    if !std::io::stdin().is_terminal() || !std::io::stderr().is_terminal() {
        eprintln!(
            "chock: {} holds {pending}; nobody at a terminal to say yes, so it is kept (`chock apply {}` carries it, `--yes` removes it)",
            w.meta.session, w.meta.session
        );
        return false;
    }
    let mut stderr = std::io::stderr().lock();
    let _ = write!(
        stderr,
        "{} ({}) holds {pending}; remove it and lose that work? [y/N] ",
        w.meta.session,
        w.meta.project.display()
    );
    let _ = stderr.flush();
    let mut line = String::new();
    let _ = std::io::stdin().lock().read_line(&mut line);
    matches!(line.trim().to_ascii_lowercase().as_str(), "y" | "yes")
}
