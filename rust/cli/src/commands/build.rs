//! `chock build`: one attribute of the project's flake, built through the
//! Nix daemon after every host it reaches is answered. The work is
//! chock-nix's; this module turns flags into a request and the outcome
//! into output and an exit code.

use std::path::PathBuf;
use std::process::ExitCode;

use chock_inputs::Asking;
use chock_nix::{
    BuildError, BuildRequest, Built, Context, Decided, FixEvaluator, Plan, Session, Who,
};
use chock_policy::{Answer, LoadOptions, Policy};
use chock_sandbox::project::Project;

use crate::ask::{EditLog, TerminalAsker};
use crate::exit;
use crate::inputs::ProjectInputs;

/// The route the command line's build lines carry in the decision log.
const ROUTE: chock_gate::Route = chock_gate::Route::Build;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// A flake inside the project (`./sub`, `path:./sub`), read from the project directory; without it, the project's own flake.
    #[arg(long, value_name = "REF")]
    pub flake: Option<String>,
    /// The project directory (default: the nearest directory up from here with chock.zon, flake.nix or .git).
    #[arg(long, value_name = "DIR")]
    pub project: Option<PathBuf>,
    /// Say what would be written, asked and built; ask nobody, write and build nothing.
    #[arg(long)]
    pub plan: bool,
    /// Print one JSON object on stdout.
    #[arg(long)]
    pub json: bool,
    /// Print only the built output paths, one a line (as `nix build --print-out-paths` does), for scripts.
    #[arg(long, conflicts_with_all = ["json", "plan"])]
    pub print_out_paths: bool,
    /// An organisation bundle to bind, besides those found on this machine (repeatable).
    #[arg(long = "org-bundle", value_name = "FILE")]
    pub org_bundle: Vec<PathBuf>,
    /// The attribute path, one name per argument (`packages x86_64-linux default`).
    #[arg(value_name = "ATTR", required = true)]
    pub attribute: Vec<String>,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let project = Project::for_command(args.project.as_deref())?;
    let policy = Policy::load(&LoadOptions::from_env(&project.dir, args.org_bundle)?)?;
    for warning in policy.warnings() {
        eprintln!("chock: {warning}");
    }
    let log = chock_log::Log::configured(policy.config())?;
    let request = BuildRequest {
        project: project.dir,
        flake: args.flake,
        attribute: args.attribute,
        who: Who::default(),
    };
    let inputs = ProjectInputs {
        policy: &policy,
        log: &log,
        asking: Asking::at_build(None),
    };
    let asker = TerminalAsker::for_project(
        policy.project_file(),
        EditLog {
            log: log.clone(),
            route: ROUTE,
            project: request.project.to_string_lossy().into_owned(),
        },
    );
    let context = Context {
        policy: &policy,
        evaluator: &FixEvaluator::for_policy(&policy),
        asker: &asker,
        log: &log,
        route: ROUTE,
        daemon: Default::default(),
    };
    if args.plan {
        return Ok(match chock_nix::plan(&request, &context) {
            Ok(plan) => {
                print_plan(&plan, args.json)?;
                exit::SUCCESS.into()
            }
            Err(error) => failed(&error, args.json),
        });
    }
    Ok(
        match crate::progress::during(|| {
            chock_nix::build_fetching_inputs(&request, &context, &mut Session::default(), &inputs)
        }) {
            Ok(built) => {
                print_built(&built, args.json, args.print_out_paths)?;
                exit::SUCCESS.into()
            }
            Err(error) => failed(&error, args.json),
        },
    )
}

/// The build's result: JSON, the output paths alone, or a sentence.
fn print_built(built: &Built, json: bool, paths_only: bool) -> anyhow::Result<()> {
    if json {
        outln!("{}", serde_json::to_string(built)?);
        return Ok(());
    }
    if paths_only {
        for path in built.built.values() {
            outln!("{path}");
        }
        return Ok(());
    }
    let outputs: Vec<String> = built
        .built
        .iter()
        .map(|(name, path)| {
            if built.built.len() == 1 {
                path.clone()
            } else {
                format!("{name}: {path}")
            }
        })
        .collect();
    outln!(
        "{} was built. It produced {}.",
        built.plan.derivation,
        outputs.join(", ")
    );
    Ok(())
}

fn print_plan(plan: &Plan, json: bool) -> anyhow::Result<()> {
    if json {
        outln!("{}", serde_json::to_string(plan)?);
        return Ok(());
    }
    let mut out = format!(
        "{}\n  evaluates to {} ({} in its closure)\n",
        plan.installable,
        plan.derivation,
        counted(plan.closure, "derivation")
    );
    for d in &plan.decisions {
        out.push_str(&format!("  {}\n", answer(d)));
    }
    out.push_str(&format!(
        "  writes {}\n",
        counted(plan.write.len(), "object")
    ));
    for w in &plan.write {
        out.push_str(&format!("    {} {}\n", w.kind, w.path));
    }
    if !plan.hosts.is_empty() {
        out.push_str(&format!(
            "  fetches from {}\n",
            counted(plan.hosts.len(), "host")
        ));
        for h in &plan.hosts {
            out.push_str(&format!(
                "    {}:{} {} (for {})\n",
                h.host,
                h.port,
                answer(&h.decision),
                h.derivations.first().map(String::as_str).unwrap_or("?")
            ));
        }
    }
    for site in &plan.mirrors {
        let how = match (&site.chosen_by_host, &site.decision) {
            (Some(host), _) => format!("a rule allows its host ({})", host.action),
            (None, Some(d)) => answer(d),
            (None, None) => "no mirror".into(),
        };
        out.push_str(&format!(
            "    mirror site {} through {}: {how}\n",
            site.site,
            site.chosen.as_deref().unwrap_or("(none)")
        ));
    }
    if let Some(opaque) = &plan.opaque {
        out.push_str(&format!(
            "  {} no URL: {}\n",
            match opaque.derivations.len() {
                1 => "1 fetching derivation names".to_owned(),
                n => format!("{n} fetching derivations name"),
            },
            answer(&opaque.decision)
        ));
    }
    if !plan.present.is_empty() {
        out.push_str(&format!(
            "  {} in the store already\n",
            match plan.present.len() {
                1 => "1 fixed output is".to_owned(),
                n => format!("{n} fixed outputs are"),
            }
        ));
    }
    for q in &plan.questions {
        out.push_str(&format!("  would ask {}: {}\n", q.action, q.summary));
    }
    for p in &plan.pinned {
        out.push_str(&format!("  pins {} as {}\n", p.original, p.copy));
    }
    for b in &plan.build {
        out.push_str(&format!("  builds {b}\n"));
    }
    out!("{out}");
    Ok(())
}

/// `1 host`, `2 hosts`.
fn counted(n: usize, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

/// `action: decision (by what)`, and the person's answer when there was one.
fn answer(d: &Decided) -> String {
    let by = match (&d.decided_by.rule, &d.decided_by.file, d.decided_by.line) {
        (Some(rule), Some(file), Some(line)) => format!("{rule} at {}:{line}", file.display()),
        (Some(rule), _, _) => format!("{rule}, {}", d.decided_by.layer.describe()),
        _ => "no rule".into(),
    };
    let person = match d.answer {
        Some(Answer::Yes) => ", a person said yes",
        Some(Answer::No) => ", a person said no",
        Some(Answer::Unavailable) => ", nobody could be asked",
        Some(Answer::Cancelled) => ", the question was dismissed with no person answering",
        Some(Answer::Handed) => ", handed to the agent's own prompt",
        None => "",
    };
    format!("{}: {} ({by}{person})", d.action, d.decision)
}

fn failed(error: &BuildError, json: bool) -> ExitCode {
    let (kind, code) = match error {
        BuildError::Request(_) => ("request", exit::FAILURE),
        BuildError::Eval(_) => ("evaluation", exit::FAILURE),
        BuildError::Refused(_) => ("refused", exit::REFUSED),
        BuildError::Fault(_) => ("fault", exit::FAILURE),
    };
    if json {
        outln!("{}", crate::out::error_json(&error.to_string(), Some(kind)));
    } else {
        eprintln!("chock build: {error}");
    }
    code.into()
}
