//! `chock migrate <agent>`: an agent's MCP servers and their permissions as
//! `chock.zon` blocks and rules, shown, and written with `--write`.

use std::path::PathBuf;
use std::process::ExitCode;

use chock_hook::agent::Agent;
use chock_hook::migrate::Migration;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The agent whose settings are read: claude, codex, cursor or gemini.
    pub agent: String,
    /// The project (default: the nearest folder holding chock.zon or .git).
    #[arg(long, value_name = "DIR")]
    pub project: Option<PathBuf>,
    /// Add the blocks to the project's chock.zon (without it, nothing is written).
    #[arg(long)]
    pub write: bool,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let agent: Agent = args.agent.parse()?;
    let project = super::hook::project_dir(args.project.as_deref())?;
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let migration = Migration::read(agent, &project, home.as_deref());
    let file = project.join(chock_policy::PROJECT_FILE);
    for read in &migration.read {
        outln!("read {}", read.display());
    }
    if migration.is_empty() {
        outln!(
            "{} names no MCP server and no MCP permission: nothing to migrate",
            agent.title()
        );
        print_notes(&migration);
        return Ok(ExitCode::SUCCESS);
    }
    outln!("\nfor {}:\n{}", file.display(), migration.zon());
    if let Some(operator) = migration.operator_zon() {
        outln!(
            "for your config.zon (where each secret is kept; never the project's file):\n{operator}"
        );
    }
    print_notes(&migration);
    if !args.write {
        outln!(
            "nothing was written; run again with --write to add these to {}",
            file.display()
        );
        return Ok(ExitCode::SUCCESS);
    }
    migration
        .write(&file)
        .map_err(|why| anyhow::anyhow!("{}: {why}", file.display()))?;
    outln!(
        "wrote {}; point {} at `chock mcp` alone (`chock sync` wires its hooks) so every call goes through the gateway",
        file.display(),
        agent.title()
    );
    Ok(ExitCode::SUCCESS)
}

fn print_notes(migration: &Migration) {
    if !migration.notes.is_empty() {
        outln!("not carried over:");
        for note in &migration.notes {
            outln!("  - {note}");
        }
    }
}
