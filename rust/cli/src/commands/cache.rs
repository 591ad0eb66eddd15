//! `chock cache [clear]`.

use std::process::ExitCode;

use crate::exit;

#[derive(Debug, clap::Args)]
pub struct Args {}

pub fn run(_args: Args) -> anyhow::Result<ExitCode> {
    Ok(exit::not_built("cache", "issue #9 (the sandbox)"))
}
