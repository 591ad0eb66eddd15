//! `chock compile`: the control each hook point enforces, compiled from
//! the installed policies into `.agents/policies/compiled.json`, with
//! `INDEX.md` and the pointer in `AGENTS.md` (the work is
//! chock-packages'). `chock sync` runs the same compile first.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use chock_packages::index::{self, Written};

use crate::exit;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Write nothing; exit 1 when a compiled file differs from what the policies compile to (for CI).
    #[arg(long)]
    check: bool,
    /// The project (default: the nearest folder holding chock.zon or .git).
    #[arg(long, value_name = "DIR")]
    project: Option<PathBuf>,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let project = crate::commands::hook::project_dir(args.project.as_deref())?;
    let differs = compile(&project, args.check)?;
    Ok(if args.check && differs {
        exit::FAILURE.into()
    } else {
        exit::SUCCESS.into()
    })
}

/// Compiles the project's policies and writes what differs, or with
/// `check` only says what would change; one line per file, as `chock
/// sync` prints its own. Whether any file differs. A policy that does not
/// read is an error naming its file and line, and nothing is written.
pub fn compile(project: &Path, check: bool) -> anyhow::Result<bool> {
    let policy =
        chock_policy::Policy::load(&chock_policy::LoadOptions::from_env(project, Vec::new())?)?;
    let files = if check {
        index::drift(project, policy.packages())?
    } else {
        index::sync(project, policy.packages())?
    };
    let mut differs = false;
    for (path, written) in files {
        differs |= written != Written::Unchanged;
        let word = match (written, check) {
            (Written::Created, false) => "created",
            (Written::Updated, false) => "updated",
            (Written::Created, true) => "would create",
            (Written::Updated, true) => "would update",
            (Written::Unchanged, _) => "unchanged",
        };
        let width = if check { 12 } else { 9 };
        let shown = path.strip_prefix(project).unwrap_or(&path);
        outln!("{word:<width$} {}  (policies)", shown.display());
    }
    Ok(differs)
}
