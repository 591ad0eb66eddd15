//! `chock skills list`: every skill the project's sessions would list, with
//! its layer, the decision `skill.read.<layer>` answers now and the rule
//! that gives it, and every skill that is not listed and why.

use std::path::PathBuf;
use std::process::ExitCode;

use chock_policy::{Key, LoadOptions, Policy, Reading, SkillLayer};
use chock_sandbox::project::Project;
use chock_skills::Layers;
use serde_json::json;

use crate::exit;

#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// List each skill by layer, name and description, with the decision a read of it gets.
    List(ListArgs),
}

#[derive(Debug, clap::Args)]
pub struct ListArgs {
    /// The project (default: found from the working directory).
    #[arg(long)]
    pub project: Option<PathBuf>,
    /// Print one JSON object: `{"skills": [{"name", "layer", "package", "description", "allowed_tools", "file", "decision", "decided_by"}], "not_listed": [sentences], "layers": [labels]}`.
    #[arg(long)]
    pub json: bool,
}

pub fn run(command: Command) -> anyhow::Result<ExitCode> {
    match command {
        Command::List(args) => list(args),
    }
}

fn list(args: ListArgs) -> anyhow::Result<ExitCode> {
    let project = Project::for_command(args.project.as_deref())?;
    let policy = Policy::load(&LoadOptions::from_env(&project.dir, Vec::new())?)?;
    let settings = policy.config().skills();
    let catalog = chock_skills::list(&Layers::of(&policy, &project.dir), &settings);
    let decided = |layer: SkillLayer| policy.decide(&Key::new(layer.action()), Reading::Act);
    if args.json {
        let skills: Vec<_> = catalog
            .skills
            .iter()
            .map(|s| {
                let verdict = decided(s.layer);
                json!({
                    "name": s.name,
                    "layer": s.layer.label(),
                    "package": s.package,
                    "description": s.description,
                    "allowed_tools": s.allowed_tools,
                    "file": s.file,
                    "decision": verdict.decision.as_str(),
                    "decided_by": verdict.decided_by,
                })
            })
            .collect();
        let not_listed: Vec<String> = catalog.problems.iter().map(|p| p.to_string()).collect();
        let layers: Vec<&str> = settings.layers.iter().map(|l| l.label()).collect();
        outln!(
            "{}",
            json!({"skills": skills, "not_listed": not_listed, "layers": layers})
        );
        return Ok(exit::SUCCESS.into());
    }
    for layer in SkillLayer::ALL {
        if !settings.layers.contains(&layer) {
            outln!(
                "{} layer: not listed (.skills.layers leaves it out)",
                layer.label()
            );
        }
    }
    if catalog.skills.is_empty() {
        outln!("no skill is listed");
    }
    for skill in &catalog.skills {
        let verdict = decided(skill.layer);
        let by = match (&verdict.decided_by.file, verdict.decided_by.line) {
            (Some(file), Some(line)) => format!("{}:{line}", file.display()),
            _ => verdict.decided_by.layer.describe().to_owned(),
        };
        let package = skill
            .package
            .as_deref()
            .map(|p| format!(" (policy package {p})"))
            .unwrap_or_default();
        outln!(
            "{:<9} {}{package}: {} [{} {}, by {by}]",
            skill.layer.label(),
            skill.name,
            skill.description.replace('\n', " "),
            skill.layer.action(),
            verdict.decision.as_str()
        );
        if !skill.allowed_tools.is_empty() {
            outln!(
                "          allowed-tools (advisory, grants nothing): {}",
                skill.allowed_tools.join(", ")
            );
        }
    }
    for problem in &catalog.problems {
        outln!("not listed: {problem}");
    }
    Ok(exit::SUCCESS.into())
}
