//! `chock cache [clear]`: what a project's toolchain cache holds, and
//! emptying it. The measuring and the link-safe emptying are chock-sandbox's.

use std::path::PathBuf;
use std::process::ExitCode;

use chock_sandbox::cache;
use chock_sandbox::devshell;
use chock_sandbox::project::Project;

use crate::exit;

#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    pub action: Option<Action>,
    /// The project directory (default: the nearest directory up from here with chock.zon, flake.nix or .git).
    #[arg(long, value_name = "DIR", global = true)]
    pub project: Option<PathBuf>,
    /// Print one JSON object instead of text.
    #[arg(long, global = true)]
    pub json: bool,
}

#[derive(Debug, clap::Subcommand)]
pub enum Action {
    /// Empty the cache (no confirmation: a cache is rebuilt as needed) and forget the cached dev shell.
    Clear,
}

fn mib(bytes: u64) -> String {
    format!("{:.1} MiB", bytes as f64 / f64::from(1 << 20))
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let project = Project::for_command(args.project.as_deref())?;
    let dir = project.cache_dir()?;
    let shells_dir = project.dev_shell_dir()?;
    match args.action {
        Some(Action::Clear) => {
            let freed = cache::clear(&dir)?;
            devshell::forget(&shells_dir)?;
            if args.json {
                println!("{}", serde_json::json!({ "dir": dir, "freed": freed }));
            } else {
                println!(
                    "emptied {} (freed {}); the dev shell will be read again",
                    dir.display(),
                    mib(freed)
                );
            }
        }
        None => {
            let usage = cache::usage(&dir)?;
            let shells = devshell::cached(&shells_dir);
            if args.json {
                let shells: Vec<_> = shells
                    .iter()
                    .map(|s| serde_json::json!({ "attribute": s.attribute, "store_paths": s.store_paths.len(), "env_path": s.env_path }))
                    .collect();
                println!(
                    "{}",
                    serde_json::json!({ "cache": usage, "dev_shells": shells })
                );
            } else {
                println!("cache of {}: {}", project.dir.display(), dir.display());
                println!(
                    "  holds {} of at most {} (emptied at the next start when over)",
                    mib(usage.bytes),
                    mib(usage.bound)
                );
                for (name, bytes) in &usage.entries {
                    println!("  {:>12}  {name}", mib(*bytes));
                }
                for shell in &shells {
                    println!(
                        "  dev shell {} cached: {} store paths, rooted at {}",
                        shell.attribute,
                        shell.store_paths.len(),
                        shell.env_path.display()
                    );
                }
            }
        }
    }
    Ok(exit::SUCCESS.into())
}
