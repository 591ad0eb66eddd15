//! `chock exec`: decide a program's `exec.*` action, then run it in the
//! sandbox with the project's dev shell as its toolchain. The deciding,
//! logging and sandboxing are chock-sandbox's; this module turns flags into
//! an `ExecRequest` and the outcome into output and an exit code.

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::ExitCode;

use chock_gate::{Layout, Refusal, Refused};
use chock_inputs::Asking;
use chock_log::{AnsweredBy, Log};
use chock_nix::BuildError;
use chock_policy::Policy;
use chock_sandbox::devshell::DevShellError;
use chock_sandbox::exec::{self, ExecError, ExecRequest, Planned};
use chock_sandbox::project::Project;
use chock_sandbox::workspace::{self, SessionWorkspace};
use chock_sandbox::{Exit, SandboxError};

use crate::ask::{EditLog, TerminalAsker};
use crate::exit;
use crate::inputs::ProjectInputs;

/// The most bytes of each stream `--json` keeps.
const CAPTURE_LIMIT: usize = 1 << 20;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The project directory (default: the nearest directory up from here with chock.zon, flake.nix or .git).
    #[arg(long, value_name = "DIR")]
    pub project: Option<PathBuf>,
    /// The dev shell to use (devShells.<system>.<NAME>); wins over `.nix.dev_shell` in chock.zon.
    #[arg(long, value_name = "NAME")]
    pub dev_shell: Option<String>,
    /// Capture the program's output and print one JSON object with the decision and the result.
    #[arg(long)]
    pub json: bool,
    /// An organisation bundle to bind, besides those found on this machine (repeatable).
    #[arg(long = "org-bundle", value_name = "FILE")]
    pub org_bundle: Vec<PathBuf>,
    /// Run on a session workspace (a copy of the repository's HEAD under Chock's state directory) instead of the project, made when missing; its work reaches the project only through `chock apply`. SESSION defaults to `exec`.
    #[arg(long, value_name = "SESSION", num_args = 0..=1, default_missing_value = "exec")]
    pub workspace: Option<String>,
    /// With --workspace: copy the project's uncommitted work into a workspace being made.
    #[arg(long, requires = "workspace")]
    pub allow_dirty: bool,
    /// Leave out Chock's notes on stderr (the toolchain, the cache, what was made read-only); a refusal or a failure is still said.
    #[arg(short, long)]
    pub quiet: bool,
    /// The program and its arguments, after `--`.
    #[arg(last = true, required = true, value_name = "PROGRAM")]
    pub command: Vec<OsString>,
}

/// The program's own status, or Chock's outcome in the codes no program's
/// ordinary status is taken for (`exit::EXEC_FAILED`, `exit::EXEC_REFUSED`).
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let json = args.json;
    execute(args).or_else(|error| {
        let message = format!("{error:#}");
        if json {
            outln!("{}", crate::out::error_json(&message, None));
        }
        eprintln!("chock: {message}");
        Ok(exit::EXEC_FAILED.into())
    })
}

fn execute(args: Args) -> anyhow::Result<ExitCode> {
    let cwd = std::env::current_dir()?;
    let project = Project::for_command(args.project.as_deref())?;
    let note = |text: &dyn std::fmt::Display| {
        if !args.quiet {
            eprintln!("chock: {text}");
        }
    };
    for notice in project.ignored_notices() {
        note(&notice);
    }
    let policy = std::sync::Arc::new(exec::load_policy(&project, args.org_bundle)?);
    for warning in policy.warnings() {
        eprintln!("chock: {warning}");
    }
    if let (Some(name), Some(container)) = (&args.dev_shell, policy.config().container()) {
        anyhow::bail!(
            "--dev-shell {name} names a dev shell, and {}:{} names the container image {} as this project's toolchain; a toolchain is one or the other, so drop --dev-shell",
            container.file.display(),
            container.line,
            container.image
        );
    }
    let log = exec::open_log(&policy)?;
    let mut project = project;
    // Held (locked) while the command runs; what it holds is shown by
    // `chock workspace`, not after each command (a walk of the whole tree).
    let _held = match &args.workspace {
        Some(session) => {
            let made = SessionWorkspace::open_or_make(&workspace::Request {
                project: &project,
                session,
                allow_dirty: args.allow_dirty,
                policy: &policy,
                log: &log,
                route: exec::ROUTE,
            });
            let (held, notices) = match made {
                Ok(made) => made,
                Err(error) => {
                    eprintln!("chock: {error}");
                    return Ok(exit::EXEC_FAILED.into());
                }
            };
            for notice in notices {
                note(&notice);
            }
            project.workspace = Some(held.view());
            Some(held)
        }
        None => None,
    };
    let request = ExecRequest {
        project,
        dev_shell: exec::dev_shell_name(args.dev_shell, &policy),
        argv: args.command,
        cwd,
        capture: args.json.then_some(CAPTURE_LIMIT),
    };
    // A changed dev shell is built through chock-nix first; its questions
    // reach the person at this terminal, and the flake inputs it lacks are
    // fetched, as chock build's are.
    let inputs = ProjectInputs {
        policy: &policy,
        log: &log,
        asking: Asking {
            agent_kind: exec::AGENT_KIND.into(),
            model: None,
            tool: Some(exec::TOOL.into()),
            route: exec::ROUTE,
        },
    };
    let asker = terminal(&policy, &log, &request.project);
    let planned = match crate::progress::during(|| {
        exec::plan(&request, &policy, &log, &asker, Some(&inputs))
    }) {
        Ok(planned) => planned,
        Err(error) => return Ok(failed(&error, args.json)),
    };
    if !args.json {
        for notice in &planned.notices {
            note(notice);
        }
    }
    let program = request
        .argv
        .first()
        .map(|p| p.to_string_lossy().into_owned())
        .unwrap_or_default();
    let Some(prepared) = planned.prepared else {
        return Ok(refused(&planned, &program, asker.reason(), args.json));
    };
    // With a router, each host the program reaches is asked at this terminal.
    let router = match exec::router(
        chock_sandbox::netmode::session(&policy),
        policy.clone(),
        &log,
        std::sync::Arc::new(terminal(&policy, &log, &request.project)),
        (exec::ROUTE, exec::AGENT_KIND),
        &request.project,
    ) {
        Ok(router) => router,
        Err(error) => return Ok(failed(&error, args.json)),
    };
    // An allowed push gets its credential for this command only: the
    // person's ssh agent, and for an http or https remote a credential
    // socket (the operator's helper, else this terminal).
    let mut prepared = prepared;
    let push = planned
        .pushes
        .then(|| chock_mcp::push::Armed::arm(router.as_ref(), crate::ask::credential, |_| {}));
    if let Some(push) = &push {
        push.bind(&mut prepared);
    }
    if let Some(router) = router {
        prepared = prepared.with_router(router);
    }
    let ran = match prepared.run() {
        Ok(ran) => ran,
        Err(error) => return Ok(failed(&error, args.json)),
    };
    for pushed in push.iter().flat_map(chock_mcp::push::Armed::notes) {
        note(&pushed);
    }
    drop(push);
    if ran.finished.space_floor {
        eprintln!(
            "chock: the command was killed: free space on the workspace's or the cache's file system fell below the floor of {} MiB a command leaves to the host",
            exec::FREE_SPACE_FLOOR >> 20
        );
    }
    if args.json {
        let finished = &ran.finished;
        let report = serde_json::json!({
            "action": planned.action,
            "decision": planned.verdict.decision.as_str(),
            "decided_by": planned.verdict.decided_by,
            "notices": planned.notices.iter().map(ToString::to_string).collect::<Vec<_>>(),
            "exit": finished.exit,
            "stdout": String::from_utf8_lossy(&finished.stdout),
            "stderr": String::from_utf8_lossy(&finished.stderr),
            "truncated": finished.truncated,
            "cgroup": finished.cgroup,
            "space_floor": finished.space_floor,
        });
        outln!("{report}");
        return Ok(match finished.exit {
            Exit::Code(code) => u8::try_from(code).unwrap_or(1),
            Exit::Signal(signal) => u8::try_from(128 + signal).unwrap_or(255),
        }
        .into());
    }
    Ok(ran.finished.exit.pass_through().into())
}

/// The person at this terminal (or, with none, at `chock approve` or
/// `chock ui`), who may answer "always" for the project.
fn terminal(policy: &Policy, log: &Log, project: &Project) -> TerminalAsker {
    TerminalAsker::for_project(
        policy.project_file(),
        EditLog {
            log: log.clone(),
            route: exec::ROUTE,
            project: project.dir.to_string_lossy().into_owned(),
        },
    )
}

/// Anything that does not go ahead: refused by a rule, by the person, or
/// asked with nobody to ask. Says which rule would let the program run.
fn refused(planned: &Planned, program: &str, reason: Option<String>, json: bool) -> ExitCode {
    let verdict = &planned.verdict;
    if json {
        let report = serde_json::json!({
            "action": planned.action,
            "decision": verdict.decision.as_str(),
            "decided_by": verdict.decided_by,
            "answered_by": planned.answered_by,
            "suggestion": verdict.suggestion,
            "notices": planned.notices.iter().map(ToString::to_string).collect::<Vec<_>>(),
        });
        outln!("{report}");
        return exit::EXEC_REFUSED.into();
    }
    let by = match (
        &verdict.decided_by.rule,
        &verdict.decided_by.file,
        verdict.decided_by.line,
    ) {
        (Some(rule), Some(file), Some(line)) => format!("{rule} ({}:{line})", file.display()),
        (Some(rule), _, _) => format!("{rule} ({})", verdict.decided_by.layer.describe()),
        _ => "no rule (an act no rule names asks)".into(),
    };
    let action = &planned.action;
    let decision = verdict.decision;
    let why = match planned.answered_by {
        AnsweredBy::Person => Refused::PersonSaidNo,
        AnsweredBy::Nobody if chock_gate::askable(decision) => Refused::Nobody,
        _ => Refused::Denied,
    };
    match why {
        Refused::PersonSaidNo => eprintln!(
            "chock: `{program}` is {action}, answered {decision} by {by}, and you answered no{}",
            reason.map_or(String::new(), |r| format!(
                ", because: {}",
                chock_policy::visible(&r)
            ))
        ),
        Refused::Nobody => eprintln!(
            "chock: `{program}` is {action}, answered {decision} by {by}; chock exec asks at its terminal, and it has none (stdin and stderr are not a terminal), so it is refused"
        ),
        _ => eprintln!(
            "chock: `{program}` is {action}, answered {decision} by {by}; chock exec runs only what is allowed or what you allow when asked"
        ),
    }
    let advice = Refusal::new(why, verdict).advice(Layout::Lines);
    if let Some(advice) = advice.strip_prefix('\n') {
        eprintln!("{advice}");
    }
    exit::EXEC_REFUSED.into()
}

fn failed(error: &ExecError, json: bool) -> ExitCode {
    if json {
        outln!("{}", crate::out::error_json(&error.to_string(), None));
    }
    eprintln!("chock: {error}");
    if let ExecError::Sandbox(SandboxError::Exec { program, .. }) = error
        && let Some(why) = missing_interpreter(program)
    {
        eprintln!("  {why}");
    }
    let code = match error {
        ExecError::NotFound { .. } => 127,
        ExecError::Sandbox(e @ SandboxError::Exec { .. }) => {
            if e.is_program_missing() {
                127
            } else {
                126
            }
        }
        // A refused build of the dev shell is a refusal of the command.
        ExecError::DevShell(DevShellError::Build {
            source: BuildError::Refused(_),
            ..
        }) => exit::EXEC_REFUSED,
        ExecError::Sandbox(_)
        | ExecError::Cache { .. }
        | ExecError::Project(_)
        | ExecError::DevShell(_)
        | ExecError::Image(_)
        | ExecError::NoProgram => exit::EXEC_FAILED,
    };
    code.into()
}

/// Why a program that is there could not be found: its `#!` names an
/// interpreter the sandbox does not have (the kernel's ENOENT names the
/// script, not what it lacks).
fn missing_interpreter(program: &std::path::Path) -> Option<String> {
    use std::io::Read as _;
    let mut head = [0u8; 256];
    let read = std::fs::File::open(program).ok()?.read(&mut head).ok()?;
    let first = head[..read].split(|b| *b == b'\n').next()?;
    let line = std::str::from_utf8(first.strip_prefix(b"#!")?).ok()?.trim();
    let interpreter = line.split_whitespace().next()?;
    Some(format!(
        "{} starts with `#!{line}`, and {interpreter} is not in the sandbox: its toolchain is the project's dev shell (or the host's /usr, /bin and /sbin without a flake); add the interpreter to the dev shell, or name one that is there (`#!/usr/bin/env {}`)",
        program.display(),
        interpreter.rsplit('/').next().unwrap_or(interpreter)
    ))
}
