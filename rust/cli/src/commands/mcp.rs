//! `chock mcp`: Chock's tools over the Model Context Protocol on stdio. The
//! server is chock-mcp's; this module turns flags into its options.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use crate::exit;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The project directory (default: the nearest directory up from here with chock.zon, flake.nix or .git).
    #[arg(long, value_name = "DIR")]
    pub project: Option<PathBuf>,
    /// An organisation bundle to bind, besides those found on this machine (repeatable).
    #[arg(long = "org-bundle", value_name = "FILE")]
    pub org_bundle: Vec<PathBuf>,
    /// The name your agent's configuration gives this server; each tool's `mcp.<NAME>.tool.<TOOL>` row is read at start, and a deny there withholds the tool.
    #[arg(long, value_name = "NAME", default_value = "chock")]
    pub name: String,
    /// Do not listen for `chock approve`; an ask then reaches a person only through the client's own prompt.
    #[arg(long)]
    pub no_approve: bool,
    /// How long a question waits for a person before it counts as unanswered, in seconds.
    #[arg(long, value_name = "SECONDS", default_value_t = 600)]
    pub ask_timeout: u64,
    /// The dev shell run_command uses (devShells.<system>.<NAME>); wins over `.nix.dev_shell` in chock.zon.
    #[arg(long, value_name = "NAME")]
    pub dev_shell: Option<String>,
    /// Work on a session workspace of this server's own (a copy of the repository's HEAD, or an overlay over a project that is not a git repository) instead of the project; its work reaches the project through request_apply or `chock apply`.
    #[arg(long)]
    pub workspace: bool,
    /// With --workspace: copy the project's uncommitted work into it.
    #[arg(long, requires = "workspace")]
    pub allow_dirty: bool,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let options = chock_mcp::ServeOptions {
        project: args.project,
        org_bundles: args.org_bundle,
        name: args.name,
        approve: !args.no_approve,
        ask_timeout: Duration::from_secs(args.ask_timeout),
        dev_shell: args.dev_shell,
        workspace: args.workspace,
        allow_dirty: args.allow_dirty,
        extra_tools: Some(crate::commands::plugins::tools()),
        ..chock_mcp::ServeOptions::default()
    };
    match chock_mcp::serve_stdio(options) {
        Ok(()) => Ok(exit::SUCCESS.into()),
        Err(error) => {
            eprintln!("chock mcp: {error}");
            Ok(exit::FAILURE.into())
        }
    }
}
