//! `chock derivation show`.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Subcommand;

use crate::exit;

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Print derivations as `nix show-derivation` does.
    Show {
        /// Include every derivation the given ones depend on.
        #[arg(short, long)]
        recursive: bool,
        #[arg(required = true, value_name = "DRV")]
        paths: Vec<PathBuf>,
    },
}

pub fn run(_command: Command) -> anyhow::Result<ExitCode> {
    Ok(exit::not_built("derivation", "issue #4 (store formats)"))
}
