//! `chock apply`: carry a session workspace's work into the project after
//! one `workspace.apply` question at this terminal. The workspace, the
//! landing and the question are chock-sandbox's; this module picks the
//! workspace and prints the outcome.

use std::path::PathBuf;
use std::process::ExitCode;

use chock_sandbox::exec;
use chock_sandbox::project::Project;
use chock_sandbox::workspace::{self, SessionWorkspace, apply::Applied};

use chock_policy::{Answer, Asker, Question};

use crate::ask::TerminalAsker;
use crate::{exit, pager};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The session whose workspace to apply (default: the project's only workspace not in use).
    #[arg(value_name = "SESSION")]
    pub session: Option<String>,
    /// The project directory (default: the nearest directory up from here with chock.zon, flake.nix or .git).
    #[arg(long, value_name = "DIR")]
    pub project: Option<PathBuf>,
    /// An organisation bundle to bind, besides those found on this machine (repeatable).
    #[arg(long = "org-bundle", value_name = "FILE")]
    pub org_bundle: Vec<PathBuf>,
    /// Print one JSON object: the plan and what became of it.
    #[arg(long)]
    pub json: bool,
    /// Print the question's diff at the prompt instead of through $PAGER.
    #[arg(long)]
    pub no_pager: bool,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let project = Project::for_command(args.project.as_deref())?;
    let policy = exec::load_policy(&project, args.org_bundle)?;
    for warning in policy.warnings() {
        eprintln!("chock: {warning}");
    }
    let log = exec::open_log(&policy)?;
    // An apply killed half-way is finished or rolled back first.
    match workspace::journal::recover(&project) {
        Ok(said) => {
            for line in said {
                eprintln!("chock: {}", shown(&line));
            }
        }
        Err(error) => {
            eprintln!("chock: {}", shown(&error.to_string()));
            return Ok(exit::FAILURE.into());
        }
    }
    let dir = match args.session {
        Some(session) => SessionWorkspace::dir_of(&project, &session)?,
        None => {
            let (live, kept): (Vec<_>, Vec<_>) = workspace::list(Some(&project))?
                .into_iter()
                .partition(|w| w.live);
            match kept.as_slice() {
                [one] => one.dir.clone(),
                [] if !live.is_empty() => {
                    eprintln!(
                        "chock: the workspace of {} is in use by a running session (or a program it started); run `chock apply` again once it ends",
                        project.dir.display()
                    );
                    return Ok(exit::FAILURE.into());
                }
                [] => {
                    eprintln!(
                        "chock: {} has no workspace to apply (`chock exec --workspace` makes one)",
                        project.dir.display()
                    );
                    return Ok(exit::FAILURE.into());
                }
                many => {
                    eprintln!(
                        "chock: {} workspaces could be applied; name one:",
                        many.len()
                    );
                    for w in many {
                        eprintln!("  chock apply {}", w.meta.session);
                    }
                    return Ok(exit::FAILURE.into());
                }
            }
        }
    };
    let outcome = SessionWorkspace::open_dir(&dir).and_then(|mut held| {
        let outcome = workspace::apply::apply(
            &mut held,
            &policy,
            &log,
            exec::ROUTE,
            &PagedAsker {
                pager: !args.no_pager,
            },
            &chock_nix::Who::default(),
        )?;
        // Carried (landed, parked or written) or empty: the workspace has
        // done its work. Work kept or refused stays where it is.
        if matches!(
            outcome.1,
            Applied::Nothing
                | Applied::Landed { .. }
                | Applied::Parked { .. }
                | Applied::Written { .. }
        ) {
            held.remove()?;
        }
        Ok(outcome)
    });
    let (plan, applied) = match outcome {
        Ok(done) => done,
        Err(error) => {
            eprintln!("chock: {}", shown(&error.to_string()));
            return Ok(exit::FAILURE.into());
        }
    };
    if args.json {
        outln!(
            "{}",
            serde_json::json!({ "plan": plan, "applied": applied })
        );
    } else {
        if let Some(plan) = &plan {
            eprintln!("chock: {}", shown(&plan.summary()));
        }
        outln!("{}", shown(&applied.to_string()));
    }
    Ok(match applied {
        Applied::Refused { .. } => exit::REFUSED,
        _ => exit::SUCCESS,
    }
    .into())
}

/// The person at this terminal, shown the apply's diff through the pager
/// first (when `pager` and there is a terminal), then asked with the
/// question's lines above the diff.
struct PagedAsker {
    pager: bool,
}

impl Asker for PagedAsker {
    fn ask(&self, question: &Question) -> Answer {
        let start = workspace::apply::diff_start(&question.detail);
        match start {
            Some(start) if self.pager && pager::can_page() && pager::page(&question.shown()) => {
                let mut short = question.clone();
                short.detail.truncate(start);
                short.detail.push(
                    "(the diff was shown in your pager; `chock apply --no-pager` prints it here)"
                        .into(),
                );
                TerminalAsker::default().ask(&short)
            }
            _ => TerminalAsker::default().ask(question),
        }
    }

    fn ask_text(&self, question: &Question) -> Option<String> {
        TerminalAsker::default().ask_text(question)
    }

    fn can_ask(&self) -> bool {
        TerminalAsker::default().can_ask()
    }
}

/// `text` as a terminal shows it: each line escaped as the question is
/// (a name an agent chose cannot forge a line or hide part of one), the
/// lines Chock itself broke kept.
fn shown(text: &str) -> String {
    text.split('\n')
        .map(|line| chock_policy::visible(line).into_owned())
        .collect::<Vec<_>>()
        .join("\n")
}
