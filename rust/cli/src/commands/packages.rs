//! `chock new policy`, `chock check`, `chock install`, `chock witness
//! export` and `chock status --verify-log`: policy packages from authoring
//! to the kept witness (the work is chock-packages').

use std::io::{IsTerminal as _, Write as _};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use chock_log::{Log, Rotation};
use chock_packages::install::{self, Installed, Pending};
use chock_packages::manage::{self, Done};
use chock_packages::{check, skeleton, witness};

use crate::exit;

#[derive(Debug, clap::Subcommand)]
pub enum NewCommand {
    /// Write a policy package skeleton in .agents/policies/<ID>/ that passes `chock check`.
    Policy {
        /// The policy's id: one label of letters, digits, `-` and `_` (the folder .agents/policies/<ID>/).
        id: String,
        /// The project (default: the nearest folder holding chock.zon or .git).
        #[arg(long, value_name = "DIR")]
        project: Option<PathBuf>,
    },
    /// Write a skill skeleton: .agents/skills/<NAME>/SKILL.md, or with --policy inside that package (skills/<NAME>/SKILL.md).
    Skill(PieceArgs),
    /// Write a subagent skeleton: .claude/agents/<NAME>.md, or with --policy inside that package (agents/<NAME>.md).
    Subagent(PieceArgs),
    /// Write a Rust WebAssembly plugin in a new folder (default ./<ID>) that builds with `cargo build --target wasm32-wasip2`.
    Plugin {
        /// The plugin's id: one label of letters, digits, `-` and `_` (its tools are plugin.<ID>.tool.<TOOL>).
        id: String,
        /// The folder to create (default: ./<ID>).
        #[arg(long, value_name = "DIR")]
        dir: Option<PathBuf>,
    },
}

#[derive(Debug, clap::Args)]
pub struct PieceArgs {
    /// Its name: lowercase letters, digits and single `-` between them.
    name: String,
    /// Write it inside this policy package (.agents/policies/<ID>/), so it ships with the package.
    #[arg(long, value_name = "ID")]
    policy: Option<String>,
    /// The project (default: the nearest folder holding chock.zon or .git).
    #[arg(long, value_name = "DIR")]
    project: Option<PathBuf>,
}

#[derive(Debug, clap::Args)]
pub struct CheckArgs {
    /// Run only these stages, e.g. `validate,evals` (validate, verify, evals, matrix, mechanisms, index, conflicts, baseline).
    #[arg(long, value_name = "STAGES")]
    only: Option<String>,
    /// Print the stages as one JSON document, for CI.
    #[arg(long)]
    json: bool,
    /// In a CI job's fresh clone: its git hooks (never committed) are not asked for; the CI gate stands in for them.
    #[arg(long)]
    ci: bool,
    /// Record the decisions of the sample of calls (the decision log's, the policies' own) as the baseline, instead of checking.
    #[arg(long)]
    record_baseline: bool,
    /// The project (default: the nearest folder holding chock.zon or .git).
    #[arg(long, value_name = "DIR")]
    project: Option<PathBuf>,
}

#[derive(Debug, clap::Args)]
pub struct InstallArgs {
    /// SOURCE#ID: a catalog (a directory or a git repository) and the policy's id; none reinstalls exactly what chock.lock names.
    spec: Option<String>,
    /// Replace an installed policy whose content differs, after showing the diff, without asking.
    #[arg(long)]
    yes: bool,
    /// The project (default: the nearest folder holding chock.zon or .git).
    #[arg(long, value_name = "DIR")]
    project: Option<PathBuf>,
    /// Print the result as JSON on stdout (see the README's `--json`).
    #[arg(long)]
    json: bool,
}

#[derive(Debug, clap::Args)]
pub struct SearchArgs {
    /// Words to look for in each policy's id, summary and guidance (none lists every one).
    query: Vec<String>,
    /// The catalog to search: a directory or a git repository.
    #[arg(long, value_name = "SOURCE")]
    catalog: String,
    /// The project a relative catalog is read from (default: the nearest folder holding chock.zon or .git).
    #[arg(long, value_name = "DIR")]
    project: Option<PathBuf>,
    /// Print the result as JSON on stdout (see the README's `--json`).
    #[arg(long)]
    json: bool,
}

#[derive(Debug, clap::Args)]
pub struct InfoArgs {
    /// SOURCE#ID: a catalog and the policy's id.
    spec: String,
    /// The project a relative catalog is read from (default: the nearest folder holding chock.zon or .git).
    #[arg(long, value_name = "DIR")]
    project: Option<PathBuf>,
    /// Print the result as JSON on stdout (see the README's `--json`).
    #[arg(long)]
    json: bool,
}

#[derive(Debug, clap::Args)]
pub struct ManageArgs {
    /// The policy's id (its folder .agents/policies/<ID>/).
    id: String,
    /// The project (default: the nearest folder holding chock.zon or .git).
    #[arg(long, value_name = "DIR")]
    project: Option<PathBuf>,
    /// Print the result as JSON on stdout (see the README's `--json`).
    #[arg(long)]
    json: bool,
}

#[derive(Debug, clap::Args)]
pub struct OverrideArgs {
    /// The policy whose next refusal of a git commit or push you may let through, once.
    id: String,
    /// The project (default: the nearest folder holding chock.zon or .git).
    #[arg(long, value_name = "DIR")]
    project: Option<PathBuf>,
}

/// What `chock remove`, `disable` and `enable` do.
#[derive(Debug, Clone, Copy)]
pub enum Manage {
    Remove,
    Disable,
    Enable,
}

#[derive(Debug, clap::Subcommand)]
pub enum WitnessCommand {
    /// Print the log head, the verify result and the lock's hashes as one JSON document to keep elsewhere.
    Export {
        /// The project (default: the nearest folder holding chock.zon or .git).
        #[arg(long, value_name = "DIR")]
        project: Option<PathBuf>,
    },
    /// Serve a C2SP tlog-witness: cosign the checkpoints of the logs it knows, never a smaller or inconsistent tree.
    Serve(crate::commands::witness::ServeArgs),
    /// Make a witness's cosignature key and print its verifier key.
    Key(crate::commands::witness::KeyArgs),
}

fn project_dir(explicit: Option<&Path>) -> anyhow::Result<PathBuf> {
    let cwd = std::env::current_dir()?;
    Ok(chock_hook::project::resolve(
        explicit,
        None,
        |name| std::env::var_os(name),
        &cwd,
    ))
}

pub fn new(command: NewCommand) -> anyhow::Result<ExitCode> {
    let (piece, args) = match command {
        NewCommand::Policy { id, project } => {
            let project = project_dir(project.as_deref())?;
            let dir = skeleton::new_policy(&project, &id)?;
            outln!("created   {}", dir.display());
            outln!(
                "edit its manifest.zon and evals/, then `chock check` and `chock sync` to put it in force"
            );
            return Ok(exit::SUCCESS.into());
        }
        NewCommand::Plugin { id, dir } => {
            let dir = dir.unwrap_or_else(|| PathBuf::from(&id));
            for file in chock_plugins::scaffold::new_plugin(&dir, &id)? {
                outln!("created   {}", file.display());
            }
            outln!(
                "then in {}: {}",
                dir.display(),
                chock_plugins::scaffold::build_steps(&id)
            );
            return Ok(exit::SUCCESS.into());
        }
        NewCommand::Skill(args) => (skeleton::Piece::Skill, args),
        NewCommand::Subagent(args) => (skeleton::Piece::Subagent, args),
    };
    let project = project_dir(args.project.as_deref())?;
    let file = skeleton::new_piece(&project, piece, &args.name, args.policy.as_deref())?;
    outln!("created   {}", file.display());
    outln!("edit its description and body: an agent decides from the description when to use it");
    Ok(exit::SUCCESS.into())
}

pub fn check(args: CheckArgs) -> anyhow::Result<ExitCode> {
    let project = project_dir(args.project.as_deref())?;
    if args.record_baseline {
        let count = check::record_baseline(&project)?;
        outln!("recorded  the decisions of {count} calls as the baseline");
        return Ok(exit::SUCCESS.into());
    }
    let stages = check::parse_stages(args.only.as_deref())?;
    let report = check::run(&project, &stages, args.ci);
    let failed = report.iter().any(check::Stage::failed);
    if args.json {
        let out = serde_json::json!({ "passed": !failed, "stages": report });
        outln!("{}", serde_json::to_string_pretty(&out)?);
    } else {
        for stage in &report {
            outln!("{:<10} {}", stage.stage, stage.status);
            for note in &stage.notes {
                outln!("  {note}");
            }
            for problem in &stage.problems {
                for line in problem.what.lines() {
                    outln!("  {line}");
                }
                outln!("    fix: {}", problem.fix);
            }
        }
    }
    Ok(if failed { exit::FAILURE } else { exit::SUCCESS }.into())
}

fn confirm(pending: &Pending, yes: bool) -> bool {
    outln!("{}", pending.diff);
    if yes {
        return true;
    }
    if !std::io::stdin().is_terminal() {
        return false;
    }
    out!(
        "replace the installed policy `{}` with this? [y/N] ",
        pending.id
    );
    let _ = crate::out::stdout().flush();
    let mut answer = String::new();
    std::io::stdin().read_line(&mut answer).is_ok() && answer.trim().eq_ignore_ascii_case("y")
}

/// Prints what an install did (as text, or not at all under `--json`)
/// and gives it as the JSON `chock install --json` lists.
fn show(installed: &Installed, json: bool) -> serde_json::Value {
    let (word, id, hash) = match installed {
        Installed::New { id, hash } => ("installed", id, hash),
        Installed::Unchanged { id, hash } => ("unchanged", id, hash),
        Installed::Replaced { id, hash } => ("replaced", id, hash),
    };
    if !json {
        outln!("{word:<9} {id}  {hash}");
    }
    serde_json::json!({ "id": id, "done": word, "hash": hash.to_string() })
}

pub fn install(args: InstallArgs) -> anyhow::Result<ExitCode> {
    let project = project_dir(args.project.as_deref())?;
    let yes = args.yes;
    let shown = match args.spec.as_deref() {
        Some(spec) => {
            let (source, id) = install::parse_spec(spec)?;
            let done = install::install(&project, source, id, &mut |p| confirm(p, yes))?;
            vec![show(&done, args.json)]
        }
        None => {
            // The lock is what the project agreed on: a local change to an
            // installed policy is shown, then put back.
            let done = install::install_locked(&project, &mut |p| confirm(p, true))?;
            done.iter().map(|one| show(one, args.json)).collect()
        }
    };
    if args.json {
        outln!("{}", serde_json::json!({ "installed": shown }));
        return Ok(exit::SUCCESS.into());
    }
    outln!("run `chock sync` to compile the policies into the hooks and INDEX.md");
    Ok(exit::SUCCESS.into())
}

fn hooks_of(package: &chock_policy::PolicyPackage) -> String {
    let hooks: Vec<&str> = package.hooks.iter().map(|h| h.as_str()).collect();
    hooks.join(", ")
}

pub fn search(args: SearchArgs) -> anyhow::Result<ExitCode> {
    let project = project_dir(args.project.as_deref())?;
    let catalog = install::open_catalog(&project, &args.catalog, None)?;
    let words: Vec<String> = args.query.iter().map(|w| w.to_lowercase()).collect();
    let mut found = Vec::new();
    for package in catalog.packages()? {
        let text =
            format!("{} {} {}", package.id, package.summary, package.guidance).to_lowercase();
        if !words.iter().all(|w| text.contains(w.as_str())) {
            continue;
        }
        found.push(serde_json::json!({
            "id": package.id,
            "version": package.version,
            "summary": package.summary,
            "hooks": package.hooks.iter().map(|h| h.as_str()).collect::<Vec<_>>(),
        }));
        if !args.json {
            outln!(
                "{} {}  {}  ({})",
                package.id,
                package.version,
                package.summary,
                hooks_of(&package)
            );
        }
    }
    if args.json {
        outln!(
            "{}",
            serde_json::json!({ "catalog": args.catalog, "found": found })
        );
        return Ok(if found.is_empty() {
            exit::FAILURE
        } else {
            exit::SUCCESS
        }
        .into());
    }
    if found.is_empty() {
        outln!("no policy in {} matches", args.catalog);
        return Ok(exit::FAILURE.into());
    }
    outln!(
        "`chock info {}#ID` shows one; `chock install {}#ID` installs it",
        args.catalog,
        args.catalog
    );
    Ok(exit::SUCCESS.into())
}

pub fn info(args: InfoArgs) -> anyhow::Result<ExitCode> {
    let project = project_dir(args.project.as_deref())?;
    let (source, id) = install::parse_spec(&args.spec)?;
    let catalog = install::open_catalog(&project, source, None)?;
    let dir = catalog.package_dir(id)?;
    let package = chock_policy::package::read_package(&dir)?;
    let cases = chock_packages::evals::read_cases(&package)?;
    let content = chock_packages::lock::content_hash(&dir)?;
    if args.json {
        let guard = package.guard.as_ref().map(|guard| {
            let program = guard.program.strip_prefix(&dir).unwrap_or(&guard.program);
            serde_json::json!({
                "program": program,
                "timeout_ms": guard.timeout_ms,
                "memory_bytes": guard.memory_bytes,
            })
        });
        let rules: Vec<String> = package.rules.rules().iter().map(|r| r.to_zon()).collect();
        outln!(
            "{}",
            serde_json::json!({
                "id": package.id,
                "version": package.version,
                "summary": package.summary,
                "hooks": package.hooks.iter().map(|h| h.as_str()).collect::<Vec<_>>(),
                "rules": rules,
                "guard": guard,
                "evals": cases.len(),
                "guidance": package.guidance,
                "commit": (!catalog.commit.is_empty()).then_some(&catalog.commit),
                "content": content,
            })
        );
        return Ok(exit::SUCCESS.into());
    }
    outln!("{} {}", package.id, package.version);
    outln!("  {}", package.summary);
    outln!("  hooks:    {}", hooks_of(&package));
    for rule in package.rules.rules() {
        outln!("  rule:     {}", rule.to_zon());
    }
    if let Some(guard) = &package.guard {
        let program = guard.program.strip_prefix(&dir).unwrap_or(&guard.program);
        outln!(
            "  guard:    {} (at most {} ms, {} bytes)",
            program.display(),
            guard.timeout_ms,
            guard.memory_bytes
        );
    }
    outln!("  evals:    {} cases", cases.len());
    outln!("  guidance: {}", package.guidance);
    if !catalog.commit.is_empty() {
        outln!("  commit:   {}", catalog.commit);
    }
    outln!("  content:  {content}");
    outln!("`chock install {}` installs it", args.spec);
    Ok(exit::SUCCESS.into())
}

pub fn manage(what: Manage, args: ManageArgs) -> anyhow::Result<ExitCode> {
    let project = project_dir(args.project.as_deref())?;
    let id = args.id.as_str();
    let (done, word, already) = match what {
        Manage::Remove => (
            manage::remove(&project, id)?,
            "removed",
            "was not installed",
        ),
        Manage::Disable => (
            manage::disable(&project, id)?,
            "disabled",
            "was disabled already",
        ),
        Manage::Enable => (
            manage::enable(&project, id)?,
            "enabled",
            "was in force already",
        ),
    };
    if args.json {
        let changed = matches!(done, Done::Changed);
        outln!(
            "{}",
            serde_json::json!({ "id": id, "done": word, "changed": changed })
        );
        return Ok(exit::SUCCESS.into());
    }
    match done {
        Done::Changed => outln!("{word:<9} {id}"),
        Done::Already => outln!("unchanged {id}  ({already})"),
    }
    outln!("run `chock sync` to write the hooks and INDEX.md for the policies in force");
    Ok(exit::SUCCESS.into())
}

pub fn witness(command: WitnessCommand) -> anyhow::Result<ExitCode> {
    let project = match command {
        WitnessCommand::Export { project } => project,
        WitnessCommand::Serve(args) => return crate::commands::witness::serve(args),
        WitnessCommand::Key(args) => return crate::commands::witness::key(&args),
    };
    let project = project_dir(project.as_deref())?;
    let log = Log::from_env(Rotation::default())?;
    let out = witness::export(&project, &log)?;
    outln!("{}", serde_json::to_string_pretty(&out)?);
    Ok(exit::SUCCESS.into())
}

/// `chock override <ID>`: a person arms a one-time override of a policy's
/// refusal, asked at their terminal (`/dev/tty`); with none there (an
/// agent's shell, the tool server, CI) nothing is armed. The next git
/// commit or push the policy refuses asks them again; see
/// `chock_hook::overrides`.
pub fn override_once(args: OverrideArgs) -> anyhow::Result<ExitCode> {
    let project = project_dir(args.project.as_deref())?;
    install::check_id(&args.id)?;
    let policy =
        chock_policy::Policy::load(&chock_policy::LoadOptions::from_env(&project, Vec::new())?)?;
    if !policy.packages().iter().any(|p| p.id == args.id) {
        anyhow::bail!(
            "no policy `{}` is in force in {}: `chock policy explain` names the one that decided",
            args.id,
            project.display()
        );
    }
    let state = chock_hook::stop::state_dir_from(|name| std::env::var_os(name))?;
    let minutes = chock_hook::overrides::VALID_FOR.as_secs() / 60;
    let question = format!(
        "Chock: arm a one-time override of the policy `{}` in {}? The next git commit or push it refuses within {minutes} minutes will ask you to use it. [y/N] ",
        args.id,
        project.display()
    );
    // A person types at a terminal: standard input is one, and so is the
    // controlling terminal the question goes to.
    let asked = if std::io::stdin().is_terminal() {
        crate::commands::hook::ask_at_terminal(&question)
    } else {
        None
    };
    match asked {
        Some(true) => {}
        Some(false) => {
            outln!("nothing armed");
            return Ok(exit::FAILURE.into());
        }
        None => anyhow::bail!(
            "an override is a person's, asked at their terminal, and no terminal is here (an agent's shell, the tool server and CI have none): run `chock override {}` yourself in a terminal",
            args.id
        ),
    }
    let file = chock_hook::overrides::arm(&state, &project, &args.id)?;
    chock_hook::run::log_person(&project, &chock_hook::overrides::action(&args.id), &file);
    outln!(
        "armed     a one-time override of `{}` for {minutes} minutes: the next git commit or push it refuses asks you to use it",
        args.id
    );
    Ok(exit::SUCCESS.into())
}
