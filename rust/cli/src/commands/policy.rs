//! `chock policy check|explain|defaults`.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Subcommand;

use crate::exit;

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Load every layer and report the first fault, or a one-line summary.
    Check {
        #[arg(long, value_name = "DIR")]
        project: Option<PathBuf>,
        #[arg(long, value_name = "FILE")]
        org_bundle: Option<PathBuf>,
    },
    /// Answer one action and say what decided it.
    Explain {
        action: String,
        #[arg(long, value_name = "DIR")]
        project: Option<PathBuf>,
        #[arg(long, value_name = "FILE")]
        org_bundle: Option<PathBuf>,
        #[arg(long)]
        json: bool,
    },
    /// Print the shipped default rules.
    Defaults {
        #[arg(long)]
        json: bool,
    },
}

pub fn run(_command: Command) -> anyhow::Result<ExitCode> {
    Ok(exit::not_built("policy", "issue #2 (the policy engine)"))
}
