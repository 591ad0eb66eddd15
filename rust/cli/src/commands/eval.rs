//! `chock eval`.

use std::path::PathBuf;
use std::process::ExitCode;

use crate::exit;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The file to evaluate.
    pub file: Option<PathBuf>,
    /// Evaluate this expression instead of a file.
    #[arg(long, value_name = "EXPR")]
    pub expr: Option<String>,
}

pub fn run(_args: Args) -> anyhow::Result<ExitCode> {
    Ok(exit::not_built("eval", "issue #5 (fix, the evaluator)"))
}
