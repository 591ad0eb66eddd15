//! Shell completions and manual pages, generated from the command line's own
//! clap definitions, so they never disagree with what `chock` accepts.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap_complete::Shell;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The shell to complete for.
    pub shell: Shell,
}

#[derive(Debug, clap::Args)]
pub struct ManArgs {
    /// Write chock.1 and a page for every subcommand (chock-policy.1, chock-policy-check.1, ...) into DIR instead of printing chock.1.
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
}

/// Prints the completion script for `args.shell` on stdout.
pub fn run(args: Args, mut command: clap::Command) -> anyhow::Result<ExitCode> {
    let mut script = Vec::new();
    clap_complete::generate(args.shell, &mut command, "chock", &mut script);
    print(&script)
}

/// Prints chock(1) on stdout, or writes every page into `args.dir`.
pub fn man(args: ManArgs, command: clap::Command) -> anyhow::Result<ExitCode> {
    let command = command.disable_help_subcommand(true);
    match args.dir {
        Some(dir) => {
            clap_mangen::generate_to(command, &dir)
                .with_context(|| format!("cannot write the manual pages into {}", dir.display()))?;
            Ok(ExitCode::SUCCESS)
        }
        None => {
            let mut page = Vec::new();
            clap_mangen::Man::new(command).render(&mut page)?;
            print(&page)
        }
    }
}

fn print(bytes: &[u8]) -> anyhow::Result<ExitCode> {
    let mut out = crate::out::stdout();
    out.write_all(bytes)
        .and_then(|()| out.flush())
        .context("cannot write to stdout")?;
    Ok(ExitCode::SUCCESS)
}
