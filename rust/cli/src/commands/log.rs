//! `chock log verify|head|show`.

use std::process::ExitCode;

use clap::Subcommand;

use crate::exit;

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Walk every log file and report the first break in the chain.
    Verify,
    /// Print `SEQ:SHA256` of the newest line.
    Head,
    /// Show the decisions as a table.
    Show,
}

pub fn run(_command: Command) -> anyhow::Result<ExitCode> {
    Ok(exit::not_built("log", "issue #3 (the decision log)"))
}
