//! `chock plugins list`, `install` and `remove`: WebAssembly plugins, each
//! tool decided at session start (the work is chock-plugins').

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use chock_plugins::store::{self, Place, PlaceKind};
use chock_plugins::{Bounds, Host, Plugins, Reach, Started};
use chock_policy::{LoadOptions, Policy};

use crate::exit;

#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// Each plugin chock.lock pins, and each of its tools: offered to a session, or why not.
    List(ListArgs),
    /// Install a plugin from a folder holding plugin.zon and plugin.wasm, pinned in chock.lock (--operator: yours, for every project).
    Install(InstallArgs),
    /// Remove an installed plugin and its pin (--operator: one of yours).
    Remove(RemoveArgs),
}

#[derive(Debug, clap::Args)]
pub struct ListArgs {
    /// Decide for this kind of agent (its rules' `agent_kind`).
    #[arg(long, value_name = "KIND", default_value = "main")]
    agent_kind: String,
    /// The project (default: the nearest folder holding chock.zon or .git).
    #[arg(long, value_name = "DIR")]
    project: Option<PathBuf>,
    /// Print the list as JSON on stdout.
    #[arg(long)]
    json: bool,
}

#[derive(Debug, clap::Args)]
pub struct InstallArgs {
    /// The folder holding the plugin's plugin.zon and plugin.wasm.
    source: PathBuf,
    #[command(flatten)]
    place: PlaceArgs,
}

/// Which plugins a command changes: the project's, or the person's own.
#[derive(Debug, clap::Args)]
pub struct PlaceArgs {
    /// The project (default: the nearest folder holding chock.zon or .git).
    #[arg(long, value_name = "DIR", conflicts_with = "operator")]
    project: Option<PathBuf>,
    /// Your own plugins, offered in every project ($XDG_DATA_HOME/chock/plugins), instead of the project's.
    #[arg(long)]
    operator: bool,
}

impl PlaceArgs {
    fn place(&self) -> anyhow::Result<Place> {
        if self.operator {
            return Ok(Place::operator()?);
        }
        Ok(Place::project(&project_dir(self.project.as_deref())?))
    }
}

#[derive(Debug, clap::Args)]
pub struct RemoveArgs {
    /// The plugin's id.
    id: String,
    #[command(flatten)]
    place: PlaceArgs,
}

/// The project's plugins, as every session (`chock mcp`, `run`, `acp`)
/// offers them beside Chock's own tools.
pub fn tools() -> std::sync::Arc<dyn chock_mcp::extra::ExtraTools> {
    std::sync::Arc::new(chock_plugins::PluginTools::default())
}

pub fn run(command: Command) -> anyhow::Result<ExitCode> {
    match command {
        Command::List(args) => list(args),
        Command::Install(args) => install(args),
        Command::Remove(args) => remove(args),
    }
}

fn project_dir(explicit: Option<&Path>) -> anyhow::Result<PathBuf> {
    crate::commands::hook::project_dir(explicit)
}

fn install(args: InstallArgs) -> anyhow::Result<ExitCode> {
    let place = args.place.place()?;
    let host = Host::new(Bounds::default())?;
    let source = std::path::absolute(&args.source)?;
    let plugin = store::install(&place, &source, &host)?;
    let manifest = &plugin.manifest;
    outln!(
        "installed {} {}  ({}, {} tools)",
        manifest.id,
        manifest.version,
        plugin.hash,
        manifest.tools.len()
    );
    outln!("`chock plugins list` shows which tools a session is offered");
    Ok(exit::SUCCESS.into())
}

fn remove(args: RemoveArgs) -> anyhow::Result<ExitCode> {
    if store::remove(&args.place.place()?, &args.id)? {
        outln!("removed   {}", args.id);
    } else {
        outln!("unchanged {}  (was not installed)", args.id);
    }
    Ok(exit::SUCCESS.into())
}

fn list(args: ListArgs) -> anyhow::Result<ExitCode> {
    let project = project_dir(args.project.as_deref())?;
    let policy = Policy::load(&LoadOptions::from_env(&project, Vec::new())?)?;
    let host = Host::new(Bounds::default())?;
    let plugins = Plugins::start(
        &Place::every(&project),
        &policy,
        &args.agent_kind,
        &host,
        &Reach::default(),
    )?;
    if args.json {
        let listed: Vec<_> = plugins.started().iter().map(as_json).collect();
        outln!("{}", serde_json::json!({ "plugins": listed }));
        return Ok(exit::SUCCESS.into());
    }
    if plugins.started().is_empty() {
        outln!("no plugin is installed (`chock plugins install DIR`)");
    }
    for started in plugins.started() {
        show(started);
    }
    Ok(exit::SUCCESS.into())
}

fn show(started: &Started) {
    outln!(
        "{} {}  ({}, {})",
        started.pin.id,
        started.pin.version,
        whose(started.place),
        started.pin.hash
    );
    if let Some(problem) = &started.problem {
        outln!("  not offered: {problem}");
    }
    let Some(offer) = &started.offer else { return };
    for tool in &offer.manifest.tools {
        let capabilities: Vec<String> = tool.capabilities.iter().map(|c| c.action()).collect();
        let needs = match capabilities.is_empty() {
            true => String::from("no capability"),
            false => capabilities.join(" "),
        };
        match offer.withheld.iter().find(|w| w.tool == tool.name) {
            None => outln!("  {:<20} offered      {needs}", tool.name),
            Some(withheld) => outln!("  {:<20} not offered: {}", tool.name, withheld.why),
        }
    }
}

fn whose(place: PlaceKind) -> &'static str {
    match place {
        PlaceKind::Project => "the project's",
        PlaceKind::Operator => "yours",
    }
}

fn as_json(started: &Started) -> serde_json::Value {
    let tools: Vec<_> = started
        .offer
        .iter()
        .flat_map(|offer| {
            offer.manifest.tools.iter().map(move |tool| {
                let withheld = offer.withheld.iter().find(|w| w.tool == tool.name);
                serde_json::json!({
                    "name": tool.name,
                    "capabilities": tool.capabilities.iter().map(|c| c.action()).collect::<Vec<_>>(),
                    "offered": withheld.is_none(),
                    "why": withheld.map(|w| w.why.as_str()),
                })
            })
        })
        .collect();
    serde_json::json!({
        "id": started.pin.id,
        "version": started.pin.version,
        "place": match started.place {
            PlaceKind::Project => "project",
            PlaceKind::Operator => "operator",
        },
        "hash": started.pin.hash,
        "problem": started.problem,
        "tools": tools,
    })
}
