//! `chock exec`.

use std::process::ExitCode;

use crate::exit;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The program and its arguments, after `--`.
    #[arg(last = true, required = true, value_name = "PROGRAM")]
    pub command: Vec<String>,
}

pub fn run(_args: Args) -> anyhow::Result<ExitCode> {
    Ok(exit::not_built("exec", "issue #9 (the sandbox)"))
}
