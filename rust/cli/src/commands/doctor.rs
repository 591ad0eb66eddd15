//! `chock doctor`: probe each sandbox layer for real and say whether commands
//! can run here. The probes are chock-sandbox's; this module prints the rows.

use std::path::PathBuf;
use std::process::ExitCode;

use chock_sandbox::doctor::{self, Options, State};
use chock_sandbox::exec;
use chock_sandbox::project::Project;

use crate::exit;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The project directory (default: the nearest directory up from here with chock.zon, flake.nix or .git).
    #[arg(long, value_name = "DIR")]
    pub project: Option<PathBuf>,
    /// Print one JSON object instead of the table.
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let project = Project::for_command(args.project.as_deref())?;
    // The doctor answers even when chock.zon does not load: the policy's
    // only part here is whether sandbox.jit lifts the write-and-execute rule.
    let (write_execute, policy_note) = match exec::load_policy(&project, Vec::new()) {
        Ok(policy) => (exec::write_execute_state(&policy), None),
        Err(error) => (
            chock_sandbox::WriteExecute::Refused,
            Some(error.to_string()),
        ),
    };
    let report = doctor::run(&Options {
        project: &project.dir,
        write_execute,
    });
    if args.json {
        outln!("{}", serde_json::to_string(&report)?);
    } else {
        let verdict = if report.can_run {
            "commands can run here"
        } else {
            "commands cannot run here"
        };
        outln!("chock doctor: {verdict} ({})", project.dir.display());
        let width = report.rows.iter().map(|r| r.name.len()).max().unwrap_or(0);
        for row in &report.rows {
            let state = match row.state {
                State::Ok => "ok  ",
                State::Warn => "WARN",
                State::Fail if row.blocking => "FAIL",
                State::Fail => "off ",
            };
            outln!("  {state}  {:width$}  {}", row.name, row.detail);
        }
        if let Some(note) = policy_note {
            outln!(
                "  note  the project's policy did not load, so write^execute shows the default: {note}"
            );
        }
    }
    Ok(if report.can_run {
        exit::SUCCESS
    } else {
        exit::FAILURE
    }
    .into())
}
