//! `chock build`.

use std::process::ExitCode;

use crate::exit;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The attribute path, one name per argument.
    #[arg(value_name = "ATTR")]
    pub attribute: Vec<String>,
}

pub fn run(_args: Args) -> anyhow::Result<ExitCode> {
    Ok(exit::not_built("build", "issue #7 (nix_build)"))
}
