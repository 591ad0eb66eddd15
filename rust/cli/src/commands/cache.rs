//! `chock cache [clear|clear-images]`: what a project's toolchain cache
//! holds and the container image trees on this machine, emptying the one
//! and removing those of the others no session holds. The measuring and the
//! link-safe emptying are chock-sandbox's; the trees are chock-image's.

use std::path::PathBuf;
use std::process::ExitCode;

use chock_image::Images;
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
    /// Remove every container image tree no session holds (each is written again from the image when a project next needs it).
    ClearImages,
}

use chock_sandbox::image::mib;

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let project = Project::for_command(args.project.as_deref())?;
    let dir = project.cache_dir()?;
    let shells_dir = project.dev_shell_dir()?;
    match args.action {
        Some(Action::ClearImages) => {
            let removed = Images::from_env()?.remove_unused()?;
            if args.json {
                outln!("{}", serde_json::json!({ "images": removed }));
            } else if removed.is_empty() {
                outln!("no image trees on this machine");
            }
            for tree in removed.iter().filter(|_| !args.json) {
                if tree.removed {
                    outln!("removed {} ({})", tree.dir.display(), mib(tree.bytes));
                } else {
                    outln!(
                        "kept {}: a session is using it (or writing it) now",
                        tree.dir.display()
                    );
                }
            }
        }
        Some(Action::Clear) => {
            let freed = cache::clear(&dir)?;
            devshell::forget(&shells_dir)?;
            if args.json {
                outln!("{}", serde_json::json!({ "dir": dir, "freed": freed }));
            } else {
                outln!(
                    "emptied {} (freed {}); the dev shell will be read again",
                    dir.display(),
                    mib(freed)
                );
            }
        }
        None => {
            let usage = cache::usage(&dir)?;
            let shells = devshell::cached(&shells_dir);
            let images = Images::from_env()?;
            let trees = images.list();
            if args.json {
                let shells: Vec<_> = shells
                    .iter()
                    .map(|s| serde_json::json!({ "attribute": s.attribute, "store_paths": s.store_paths.len(), "env_path": s.env_path }))
                    .collect();
                outln!(
                    "{}",
                    serde_json::json!({ "cache": usage, "dev_shells": shells, "images": trees })
                );
            } else {
                outln!("cache of {}: {}", project.dir.display(), dir.display());
                outln!(
                    "  holds {} of at most {} (emptied at the next start when over)",
                    mib(usage.bytes),
                    mib(usage.bound)
                );
                for (name, bytes) in &usage.entries {
                    outln!("  {:>12}  {name}", mib(*bytes));
                }
                for shell in &shells {
                    outln!(
                        "  dev shell {} cached: {} store paths, rooted at {}",
                        shell.attribute,
                        shell.store_paths.len(),
                        shell.env_path.display()
                    );
                }
                if !trees.is_empty() {
                    outln!(
                        "container image trees (every project's) in {}:",
                        images.dir().display()
                    );
                }
                for tree in &trees {
                    let (reference, bytes) = tree.shown();
                    outln!(
                        "  {:>12}  {reference}{}",
                        mib(bytes),
                        if tree.in_use { "  (in use)" } else { "" }
                    );
                }
            }
        }
    }
    Ok(exit::SUCCESS.into())
}
