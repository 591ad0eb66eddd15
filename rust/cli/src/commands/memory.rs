//! `chock memory [clear]`: the notes agents kept about this project
//! (`chock run`'s write_memory), shown or removed. The notes are
//! chock-agent's ([`chock_agent::memory`]).

use std::io::{BufRead, IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use chock_agent::memory::Memory;
use chock_sandbox::project::Project;

use crate::exit;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The project directory (default: the nearest directory up from here with chock.zon, flake.nix or .git).
    #[arg(long, value_name = "DIR", global = true)]
    pub project: Option<PathBuf>,
    /// Print the result as one JSON object: `{"project", "file", "notes"}` (notes null when none are kept); with `clear`, `{"file", "removed"}`.
    #[arg(long, global = true)]
    pub json: bool,
    #[command(subcommand)]
    pub command: Option<Command>,
}

#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// Remove the notes, after you say yes at the terminal (or with --yes).
    Clear {
        /// Remove them without asking.
        #[arg(long)]
        yes: bool,
    },
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let project = Project::for_command(args.project.as_deref())?;
    let memory = Memory::of(&project).map_err(anyhow::Error::msg)?;
    let file = memory.file();
    match args.command {
        None if args.json => {
            let notes = memory.read().map_err(anyhow::Error::msg)?;
            outln!(
                "{}",
                serde_json::json!({ "project": project.dir, "file": file, "notes": notes })
            );
        }
        None => match memory.read().map_err(anyhow::Error::msg)? {
            Some(notes) => {
                eprintln!(
                    "chock: the notes agents kept about {} ({}):",
                    project.dir.display(),
                    file.display()
                );
                out!("{notes}");
                if !notes.ends_with('\n') {
                    outln!();
                }
            }
            None => outln!("no notes are kept about {}", project.dir.display()),
        },
        Some(Command::Clear { yes }) => {
            // Whatever it holds (over its bound, not text), it can be removed.
            let kept = std::fs::symlink_metadata(&file).is_ok();
            let removed = kept && (yes || confirm(&file));
            if removed {
                memory.clear().map_err(anyhow::Error::msg)?;
            }
            if args.json {
                outln!(
                    "{}",
                    serde_json::json!({ "file": file, "removed": removed })
                );
            } else if !kept {
                outln!("no notes are kept about {}", project.dir.display());
            } else if removed {
                outln!("removed {}", file.display());
            }
            if kept && !removed {
                return Ok(exit::REFUSED.into());
            }
        }
    }
    Ok(exit::SUCCESS.into())
}

/// Asks at the terminal; with none, the answer is no.
fn confirm(file: &std::path::Path) -> bool {
    if !std::io::stdin().is_terminal() || !std::io::stderr().is_terminal() {
        eprintln!(
            "chock: nobody at a terminal to say yes, so {} is kept; `chock memory clear --yes` removes it",
            file.display()
        );
        return false;
    }
    let mut stderr = std::io::stderr().lock();
    let _ = write!(stderr, "remove the notes {}? [y/N] ", file.display());
    let _ = stderr.flush();
    let mut line = String::new();
    let _ = std::io::stdin().lock().read_line(&mut line);
    matches!(line.trim().to_ascii_lowercase().as_str(), "y" | "yes")
}
