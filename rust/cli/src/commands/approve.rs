//! `chock approve`.

use std::process::ExitCode;

use crate::exit;

#[derive(Debug, clap::Args)]
pub struct Args {}

pub fn run(_args: Args) -> anyhow::Result<ExitCode> {
    Ok(exit::not_built("approve", "issue #11 (the tool server)"))
}
