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
    let mut differs = false;
    for file in compile(&project, args.check)? {
        differs |= file.written != Written::Unchanged;
        let width = if args.check { 12 } else { 9 };
        outln!(
            "{:<width$} {}  (policies)",
            file.word(),
            file.shown(&project).display()
        );
    }
    Ok(if args.check && differs {
        exit::FAILURE.into()
    } else {
        exit::SUCCESS.into()
    })
}

/// One file the compile wrote, or with `check` would write.
pub struct Compiled {
    pub path: PathBuf,
    pub written: Written,
    check: bool,
}

impl Compiled {
    /// What was done to it, in the words `chock sync` uses for its files.
    pub fn word(&self) -> &'static str {
        match (self.written, self.check) {
            (Written::Created, false) => "created",
            (Written::Updated, false) => "updated",
            (Written::Created, true) => "would create",
            (Written::Updated, true) => "would update",
            (Written::Unchanged, _) => "unchanged",
        }
    }

    /// Its path within `project`.
    pub fn shown(&self, project: &Path) -> PathBuf {
        self.path
            .strip_prefix(project)
            .unwrap_or(&self.path)
            .to_owned()
    }
}

/// Compiles the project's policies and writes what differs, or with
/// `check` only says what would change: each file and what was (or would
/// be) done to it. A policy that does not read is an error naming its
/// file and line, and nothing is written.
pub fn compile(project: &Path, check: bool) -> anyhow::Result<Vec<Compiled>> {
    let policy =
        chock_policy::Policy::load(&chock_policy::LoadOptions::from_env(project, Vec::new())?)?;
    let files = if check {
        index::drift(project, policy.packages())?
    } else {
        index::sync(project, policy.packages())?
    };
    Ok(files
        .into_iter()
        .map(|(path, written)| Compiled {
            path,
            written,
            check,
        })
        .collect())
}
