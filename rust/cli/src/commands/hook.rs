//! `chock hook`, `chock sync`, `chock stop`, `chock resume`.

use std::process::ExitCode;

use crate::exit;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The agent whose hook payload arrives on stdin.
    pub agent: String,
}

#[derive(Debug, clap::Args)]
pub struct SyncArgs {}

#[derive(Debug, clap::Args)]
pub struct StopArgs {}

pub fn run(_args: Args) -> anyhow::Result<ExitCode> {
    Ok(exit::not_built("hook", "issue #13 (hooks)"))
}

pub fn sync(_args: SyncArgs) -> anyhow::Result<ExitCode> {
    Ok(exit::not_built("sync", "issue #13 (hooks)"))
}

pub fn stop(_args: StopArgs) -> anyhow::Result<ExitCode> {
    Ok(exit::not_built("stop", "issue #13 (hooks)"))
}

pub fn resume(_args: StopArgs) -> anyhow::Result<ExitCode> {
    Ok(exit::not_built("resume", "issue #13 (hooks)"))
}
