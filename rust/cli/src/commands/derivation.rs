//! `chock derivation show [-r] DRV...`: the JSON of `nix show-derivation`,
//! read straight from the `.drv` files with chock-store.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context as _, bail};
use chock_store::StorePath;
use chock_store::derivation::{json, read_closure};
use clap::Subcommand;

use crate::exit;

#[derive(Debug, Subcommand)]
#[command(defer = true)]
pub enum Command {
    /// Print derivations as `nix show-derivation` does.
    Show {
        /// Include every derivation the given ones depend on.
        #[arg(short, long)]
        recursive: bool,
        /// The `.drv` files to show (store paths or files).
        #[arg(required = true, value_name = "DRV")]
        paths: Vec<PathBuf>,
    },
}

pub fn run(command: Command) -> anyhow::Result<ExitCode> {
    match command {
        Command::Show { recursive, paths } => show(recursive, &paths),
    }
}

fn show(recursive: bool, paths: &[PathBuf]) -> anyhow::Result<ExitCode> {
    let roots = paths
        .iter()
        .map(|p| drv_path(p))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let derivations = read_closure(&roots, recursive)?;
    let mut stdout = std::io::BufWriter::with_capacity(256 * 1024, crate::out::stdout());
    json::write_show_derivation_json(&derivations, &mut stdout)?;
    stdout
        .write_all(b"\n")
        .and_then(|()| stdout.flush())
        .context("cannot write to standard output")?;
    // The process ends right after this: freeing thousands of parsed
    // derivations one by one would cost a tenth of the run for nothing.
    std::mem::forget(derivations);
    Ok(exit::SUCCESS.into())
}

/// A `.drv` store path from an argument: the path itself, or a link to it
/// (such as a GC root) resolved.
fn drv_path(arg: &Path) -> anyhow::Result<StorePath> {
    let text = arg.to_string_lossy();
    let path = match StorePath::from_absolute_path(&text) {
        Ok(p) => p,
        Err(first) => {
            let resolved = std::fs::canonicalize(arg)
                .with_context(|| format!("{text} is not a store path ({first})"))?;
            StorePath::from_absolute_path(&resolved.to_string_lossy()).with_context(|| {
                format!("{text} is not a store path: give a /nix/store/…drv path")
            })?
        }
    };
    if !path.is_derivation() {
        bail!(
            "{path} is not a derivation; give its .drv (nix-store --query --deriver {path} names it)"
        );
    }
    Ok(path)
}
