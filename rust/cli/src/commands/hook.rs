//! `chock hook`, `chock sync`, `chock stop`, `chock resume`: the command
//! lines of chock-hook. The answers, the files and the stop are all the
//! library's; this module reads arguments, prompts at the terminal for a git
//! hook that asks, prints, and exits.

use std::io::{BufRead as _, Write as _};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context as _;
use chock_hook::agent::{self, Agent};
use chock_hook::run::{self, Env, Gate};
use chock_hook::stop::{self, Scope};
use chock_hook::sync::{self, Change, GitHook, SyncOptions};
use chock_hook::watchdog::Watchdog;

use crate::exit;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Who is asking: claude, cursor, gemini or codex (the payload is on
    /// standard input), the git hook pre-commit or pre-push, or
    /// session-start AGENT (an agent's session start: arms the git hooks).
    pub agent: String,
    /// What git passes a hook (pre-push: the remote's name and URL).
    pub git_args: Vec<String>,
    /// The project whose policy answers (default: the agent's project root,
    /// else the nearest folder holding chock.zon or .git).
    #[arg(long, value_name = "DIR")]
    pub project: Option<PathBuf>,
    /// Running in CI, where nobody can be asked: a git gate that would ask passes with a note.
    #[arg(long)]
    pub ci: bool,
    /// With --ci: the base the change under review is `REF...HEAD` of
    /// (default: the pull request's, from the CI's own variables).
    #[arg(long, value_name = "REF", requires = "ci")]
    pub base: Option<String>,
}

#[derive(Debug, clap::Args)]
pub struct SyncArgs {
    /// The project to wire (default: the nearest folder holding chock.zon or .git).
    #[arg(long, value_name = "DIR")]
    pub project: Option<PathBuf>,
    /// The agents to wire, e.g. `claude,cursor` (default: those whose folder the project has).
    #[arg(long, value_name = "LIST", value_parser = agent_list)]
    pub agents: Option<AgentList>,
    /// Also write the GitHub Actions workflow .github/workflows/chock.yml.
    #[arg(long)]
    pub ci: bool,
    /// Write nothing; exit 1 when a file differs from what sync would write (for CI).
    #[arg(long)]
    pub check: bool,
    /// Take back what sync wrote: Chock's entry in each agent's hook file and its block in the git hooks, your own lines kept.
    #[arg(long, conflicts_with_all = ["check", "ci"])]
    pub remove: bool,
    /// Wire the agents' user-level settings (~/.claude/settings.json, ...), read in every project of yours; nothing in the project, nothing to commit.
    #[arg(long, conflicts_with_all = ["project", "ci"])]
    pub user: bool,
    /// Print one JSON object on stdout: `{"ok", "agents", "files": [{"path", "what", "done", "error"}]}`.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, clap::Args)]
pub struct StopArgs {
    /// The project (default: the nearest folder holding chock.zon or .git).
    #[arg(long, value_name = "DIR")]
    pub project: Option<PathBuf>,
    /// Every project of this user, not only this one.
    #[arg(long)]
    pub everywhere: bool,
}

fn var(name: &str) -> Option<std::ffi::OsString> {
    std::env::var_os(name)
}

fn cwd() -> anyhow::Result<PathBuf> {
    std::env::current_dir().context("cannot read the current directory")
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let env = Env {
        cwd: cwd()?,
        var: &var,
    };
    if let Some(hook) = GitHook::from_name(&args.agent) {
        return Ok(git_hook(hook, &args, &env));
    }
    if args.agent == sync::SESSION_START {
        return session_start(&args, &env);
    }
    let agent: Agent = args.agent.parse()?;
    if !args.git_args.is_empty() {
        anyhow::bail!(
            "`chock hook {agent}` reads its payload from standard input and takes no other arguments (got {:?})",
            args.git_args
        );
    }
    // Whatever is slow, the agent hears a deny before its own timeout.
    let (explicit, cwd) = (args.project.clone(), env.cwd.clone());
    let watchdog = Watchdog::start(agent, move || {
        chock_hook::project::resolve(explicit.as_deref(), Some(agent), var, &cwd)
    });
    let reply = run::agent_hook(
        agent,
        args.project.as_deref(),
        &mut std::io::stdin().lock(),
        &env,
    );
    watchdog.claim();
    // Not `out::stdout`, which ends a closed pipe quietly: a hook's 0 is
    // the agent's "go on", so an answer that cannot be written fails
    // (exit 1), and the entry's `|| exit 2` refuses the call.
    let mut stdout = std::io::stdout().lock();
    stdout.write_all(reply.stdout.as_bytes())?;
    stdout.flush()?;
    eprint!("{}", reply.stderr);
    Ok(reply.exit_code.into())
}

/// `chock hook session-start <agent>`, run by an agent's session-start
/// entry: arms the project's git hooks (a fresh clone has none). Its
/// payload is drained after, not read; a hook that cannot be armed is said on
/// standard error, naming its file, and exits 1.
fn session_start(args: &Args, env: &Env<'_>) -> anyhow::Result<ExitCode> {
    let [name] = args.git_args.as_slice() else {
        anyhow::bail!(
            "`chock hook {}` takes the agent whose session starts: claude, cursor, gemini or codex (got {:?})",
            sync::SESSION_START,
            args.git_args
        );
    };
    let agent: Agent = name.parse()?;
    let project = chock_hook::project::resolve(args.project.as_deref(), Some(agent), var, &env.cwd);
    let mut armed = true;
    for file in sync::arm(&project, "chock") {
        match file.result {
            Ok(Change::Unchanged) => {}
            Ok(_) => eprintln!("chock: armed {} ({})", file.path.display(), file.what),
            Err(error) => {
                armed = false;
                eprintln!(
                    "chock: the git hooks are not armed: {error}; run `chock sync` in {}",
                    project.display()
                );
            }
        }
    }
    // Armed first, then the payload drained, so an agent slow to close
    // the pipe never keeps the hooks unarmed (the entry's bound ends it).
    std::io::copy(&mut std::io::stdin().lock(), &mut std::io::sink())?;
    Ok(if armed {
        exit::SUCCESS.into()
    } else {
        exit::FAILURE.into()
    })
}

fn git_hook(hook: GitHook, args: &Args, env: &Env<'_>) -> ExitCode {
    let gate = Gate {
        hook,
        project: args.project.as_deref(),
        ci: args.ci,
        args: &args.git_args,
        base: args.base.as_deref(),
    };
    let reply = run::git_gate(&gate, env, &mut ask_at_terminal);
    if !reply.message.is_empty() {
        eprintln!("{}", reply.message);
    }
    if reply.passed {
        exit::SUCCESS.into()
    } else {
        exit::REFUSED.into()
    }
}

/// Puts a question to the person at the controlling terminal; `None` when
/// there is none (an agent's shell, CI, a GUI client).
pub(crate) fn ask_at_terminal(question: &str) -> Option<bool> {
    let tty = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/tty")
        .ok()?;
    let mut writer = tty.try_clone().ok()?;
    writer.write_all(question.as_bytes()).ok()?;
    writer.flush().ok()?;
    let mut line = String::new();
    std::io::BufReader::new(tty).read_line(&mut line).ok()?;
    let answer = line.trim().to_ascii_lowercase();
    Some(answer == "y" || answer == "yes")
}

pub(crate) fn project_dir(explicit: Option<&Path>) -> anyhow::Result<PathBuf> {
    let cwd = cwd()?;
    Ok(chock_hook::project::resolve(explicit, None, var, &cwd))
}

/// `--agents`: parsed by clap, so a name it does not know is a usage
/// error (exit 2) naming the agents it does.
#[derive(Clone, Debug)]
pub struct AgentList(Vec<agent::Agent>);

fn agent_list(text: &str) -> Result<AgentList, chock_hook::HookError> {
    agent::parse_list(text).map(AgentList)
}

pub fn sync(args: SyncArgs) -> anyhow::Result<ExitCode> {
    let project = if args.user {
        home()?
    } else {
        project_dir(args.project.as_deref())?
    };
    let agents = args.agents.map(|list| list.0);
    let report = sync::sync(&SyncOptions {
        project: project.clone(),
        agents,
        ci: args.ci,
        chock: "chock".to_owned(),
        check: args.check,
        remove: args.remove,
        user: args.user,
    });
    let wired_none = report.agents.is_empty();
    if wired_none && !args.remove {
        eprintln!(
            "chock sync: no agent is wired: {} holds no agent folder with anything in it (.claude, .cursor, .gemini, .codex); name them with --agents claude,cursor,gemini,codex",
            project.display()
        );
    }
    let mut differs = false;
    let mut files = Vec::new();
    for file in &report.files {
        let relative = file.path.strip_prefix(&project).unwrap_or(&file.path);
        let shown = if args.user {
            Path::new("~").join(relative)
        } else {
            relative.to_owned()
        };
        let word = match &file.result {
            Ok(change) => {
                differs |= *change != Change::Unchanged;
                done_word(*change, args.check, args.remove)
            }
            Err(error) => {
                eprintln!("chock sync: {error}");
                "failed"
            }
        };
        files.push(serde_json::json!({
            "path": file.path,
            "what": file.what,
            "done": word,
            "error": file.result.as_ref().err().map(ToString::to_string),
        }));
        if args.json || file.result.is_err() {
            continue;
        }
        if args.remove {
            outln!("{word} {}  ({})", shown.display(), file.what);
        } else {
            let width = if args.check { 12 } else { 9 };
            outln!("{word:<width$} {}  ({})", shown.display(), file.what);
        }
    }
    // The compiled policies too (not at --user, where there are none): a
    // policy changed without `chock compile` is a difference.
    let mut compiled = true;
    if !args.remove && !args.user {
        match crate::commands::compile::compile(&project, args.check) {
            Ok(written) => {
                for file in written {
                    differs |= file.written != chock_packages::index::Written::Unchanged;
                    files.push(serde_json::json!({
                        "path": file.path,
                        "what": "policies",
                        "done": file.word(),
                        "error": null,
                    }));
                    if !args.json {
                        let width = if args.check { 12 } else { 9 };
                        outln!(
                            "{:<width$} {}  (policies)",
                            file.word(),
                            file.shown(&project).display()
                        );
                    }
                }
            }
            Err(error) => {
                eprintln!("chock sync: the policies do not compile: {error:#}");
                compiled = false;
            }
        }
    }
    let ok =
        report.succeeded() && compiled && (args.remove || !wired_none) && !(args.check && differs);
    if !args.check && !args.remove && !args.user && chock_sandbox::on_path("chock").is_none() {
        eprintln!(
            "chock sync: the hook files call `chock`, which is not on PATH here: install it (cargo install --path rust/cli) so the hooks can run"
        );
    }
    if args.json {
        let agents: Vec<_> = report.agents.iter().map(|a| a.name()).collect();
        outln!(
            "{}",
            serde_json::json!({ "ok": ok, "agents": agents, "files": files })
        );
    }
    Ok(if ok { exit::SUCCESS } else { exit::FAILURE }.into())
}

/// What sync did to one file, in its report's words.
fn done_word(change: Change, check: bool, remove: bool) -> &'static str {
    match (change, check, remove) {
        (Change::Unchanged, _, true) => "nothing of Chock's in",
        (_, _, true) => "removed Chock's entry from",
        (Change::Created, false, _) => "created",
        (Change::Updated, false, _) => "updated",
        (Change::Created, true, _) => "would create",
        (Change::Updated, true, _) => "would update",
        (Change::Unchanged, _, _) => "unchanged",
    }
}

/// The person's home folder, where the agents keep their user-level settings.
pub(crate) fn home() -> anyhow::Result<PathBuf> {
    var("HOME")
        .map(PathBuf::from)
        .filter(|home| home.is_absolute())
        .context("HOME is not set to an absolute path, so the agents' user-level settings cannot be found")
}

fn scope(everywhere: bool) -> Scope {
    if everywhere {
        Scope::Everywhere
    } else {
        Scope::Project
    }
}

pub fn stop(args: StopArgs) -> anyhow::Result<ExitCode> {
    let project = project_dir(args.project.as_deref())?;
    let state = stop::state_dir_from(var)?;
    let (file, already) = stop::stop(scope(args.everywhere), &project, &state)?;
    run::log_person(&project, "chock.stop", &file);
    let whom = if args.everywhere {
        "every project of yours".to_owned()
    } else {
        project.display().to_string()
    };
    let again = if already { " (it already was)" } else { "" };
    outln!(
        "Chock is stopped for {whom}{again}: every hook refuses every tool call until `chock resume{}`.",
        if args.everywhere { " --everywhere" } else { "" }
    );
    Ok(exit::SUCCESS.into())
}

pub fn resume(args: StopArgs) -> anyhow::Result<ExitCode> {
    let project = project_dir(args.project.as_deref())?;
    let state = stop::state_dir_from(var)?;
    let (file, removed) = stop::resume(scope(args.everywhere), &project, &state)?;
    if removed {
        run::log_person(&project, "chock.resume", &file);
        outln!("Chock resumed: {} is gone.", file.display());
    } else {
        outln!("There was no stop at {}.", file.display());
    }
    if let Some(still) = stop::in_force(&project, Some(&state)) {
        outln!("Still stopped: {}", still.reason());
    }
    Ok(exit::SUCCESS.into())
}
