//! `chock sync`: wiring Chock into each agent's own hook file, the git
//! hooks and, with `--ci`, a GitHub Actions workflow.
//!
//! Every file is read, changed in memory and written only when its text
//! differs, so a second sync changes nothing. The person's own settings,
//! hooks and lines stay as they were. A file that cannot be read as what it
//! should be is left untouched and reported with its path; the other files
//! are still synced. Each is read and written beneath the folder it belongs
//! to, through descriptors, and a link on its way is refused (`write`).

mod ci;
mod git_hooks;
mod json;
mod write;

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::HookError;
use crate::agent::Agent;

pub use git_hooks::{GitHook, hooks_dir};

/// What `chock sync` was asked to do.
#[derive(Debug, Clone)]
pub struct SyncOptions {
    /// The project to wire.
    pub project: PathBuf,
    /// The agents to wire; `None`: the agents whose folder the project has.
    pub agents: Option<Vec<Agent>>,
    /// Also write the GitHub Actions workflow.
    pub ci: bool,
    /// How hook files call Chock (`chock`, found on PATH).
    pub chock: String,
    /// Only say what a sync would change (`chock sync --check`): nothing
    /// is written, no folder made.
    pub check: bool,
    /// Take back what sync wrote (`chock sync --remove`): Chock's entries
    /// and blocks, the person's own lines kept. The workflow `--ci` wrote
    /// is not touched.
    pub remove: bool,
    /// `project` is the person's home folder (`chock sync --user`): the
    /// agents' user-level settings, which every project of theirs reads;
    /// no git hooks, no workflow.
    pub user: bool,
}

/// What a sync does to each file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Write,
    Check,
    Remove,
}

impl SyncOptions {
    fn mode(&self) -> Mode {
        if self.check {
            Mode::Check
        } else if self.remove {
            Mode::Remove
        } else {
            Mode::Write
        }
    }
}

/// What happened to one file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    /// The file did not exist and was written.
    Created,
    /// The file existed and Chock's part of it changed.
    Updated,
    /// The file already held exactly Chock's part.
    Unchanged,
}

/// One file of a sync.
#[derive(Debug)]
pub struct FileOutcome {
    /// What the file is, for the report ("Claude Code hooks").
    pub what: String,
    /// The file.
    pub path: PathBuf,
    /// What happened, or why it was left untouched.
    pub result: Result<Change, HookError>,
}

/// Everything a sync did.
#[derive(Debug)]
pub struct SyncReport {
    /// The agents wired.
    pub agents: Vec<Agent>,
    /// Whether the agents were found in the project rather than named.
    pub detected: bool,
    /// Each file, in the order it was synced.
    pub files: Vec<FileOutcome>,
}

impl SyncReport {
    /// Whether every file was synced.
    pub fn succeeded(&self) -> bool {
        self.files.iter().all(|f| f.result.is_ok())
    }
}

/// Runs one sync.
pub fn sync(options: &SyncOptions) -> SyncReport {
    let detected = options.agents.is_none();
    let agents = options
        .agents
        .clone()
        .unwrap_or_else(|| detect_agents(&options.project));
    let mut files = Vec::new();
    for &agent in &agents {
        let path = agent_file(&options.project, agent);
        let result = sync_agent(agent, options, &path);
        files.push(FileOutcome {
            what: format!("{} hooks", agent.title()),
            path,
            result,
        });
    }
    if options.user {
        return SyncReport {
            agents,
            detected,
            files,
        };
    }
    files.extend(sync_git_hooks(
        &options.project,
        &options.chock,
        options.mode(),
    ));
    if options.ci && !options.remove {
        let path = ci::path(&options.project);
        let result = sync_text_file(&options.project, &path, false, options.mode(), |current| {
            ci::updated(&path, current)
        });
        files.push(FileOutcome {
            what: "GitHub Actions workflow".to_owned(),
            path,
            result,
        });
    }
    SyncReport {
        agents,
        detected,
        files,
    }
}

/// Each git hook of the repository holding `project`, written, checked or
/// taken back as `how` says.
fn sync_git_hooks(project: &Path, chock: &str, how: Mode) -> Vec<FileOutcome> {
    let dir = match git_hooks::hooks_dir(project) {
        Ok(dir) => dir,
        Err(error) => {
            return vec![FileOutcome {
                what: "git hooks".to_owned(),
                path: project.to_owned(),
                result: Err(error),
            }];
        }
    };
    GitHook::ALL
        .into_iter()
        .map(|hook| {
            let path = dir.join(hook.name());
            let result = sync_text_file(&dir, &path, true, how, |current| {
                if how == Mode::Remove {
                    git_hooks::removed(&path, current)
                } else {
                    git_hooks::updated(hook, &path, current, chock)
                }
            });
            FileOutcome {
                what: format!("git {} hook ({})", hook.name(), hook.action()),
                path,
                result,
            }
        })
        .collect()
}

/// What `chock hook session-start <agent>` runs when an agent's session
/// starts: the git hooks of the project written as `chock sync` writes
/// them (only where they differ, so every later start changes nothing).
/// A fresh clone has no git hooks, since `.git/hooks` is never
/// committed; the agent's committed hook file arms them on its first
/// session.
pub fn arm(project: &Path, chock: &str) -> Vec<FileOutcome> {
    sync_git_hooks(project, chock, Mode::Write)
}

/// The word after `chock hook` in the entry that arms the git hooks when
/// an agent's session starts.
pub const SESSION_START: &str = "session-start";

/// The agents whose own folder the project has, holding anything: an
/// empty one configures nothing, and is what Chock's sandbox makes where
/// a project had none (so that no program can plant one).
pub fn detect_agents(project: &Path) -> Vec<Agent> {
    Agent::ALL
        .into_iter()
        .filter(|agent| {
            agent_file(project, *agent).parent().is_some_and(|folder| {
                std::fs::read_dir(folder).is_ok_and(|mut entries| entries.next().is_some())
            })
        })
        .collect()
}

/// The file an agent reads its project hooks from.
pub fn agent_file(project: &Path, agent: Agent) -> PathBuf {
    match agent {
        Agent::Claude => project.join(".claude").join("settings.json"),
        Agent::Cursor => project.join(".cursor").join("hooks.json"),
        Agent::Gemini => project.join(".gemini").join("settings.json"),
        Agent::Codex => project.join(".codex").join("hooks.json"),
    }
}

/// How long an agent's hook entry lets `chock hook` run, in seconds: above
/// its own 9 s watchdog, so every call Chock can decide is answered by
/// Chock, and well below [`AGENT_TIMEOUT_SECS`].
const HOOK_BOUND_SECS: u32 = 20;
/// How long after [`HOOK_BOUND_SECS`] a process that ignores SIGTERM has
/// before it is killed.
const HOOK_KILL_AFTER_SECS: u32 = 5;
/// The agent's own timeout written on Chock's entry, in seconds. An agent
/// whose hook outlives it runs the call anyway, so the entry's own bound
/// ends first.
const AGENT_TIMEOUT_SECS: u64 = 60;

/// The command an agent's hook entry runs. `timeout`: a `chock` that never
/// reaches its watchdog (stuck before it starts, or something slow in its
/// place) is ended after [`HOOK_BOUND_SECS`], and the call refused, before
/// the agent's own timeout would let it run. `|| exit 2`: an agent reads
/// exit 2 as a refusal and most other failures as "go on", so a missing
/// `chock` (exit 127), a missing `timeout`, a bound reached (124, 137) or
/// any failure of chock refuses the call instead of letting it through.
/// Before it, a teammate whose machine has no `chock` (the file is
/// committed) is told what to install, and the call is still refused.
fn hook_command(chock: &str, agent: Agent) -> String {
    format!(
        "command -v {chock} >/dev/null 2>&1 || {{ echo \"{MISSING}\" >&2; exit 2; }}; \
         timeout -k {HOOK_KILL_AFTER_SECS} {HOOK_BOUND_SECS} {chock} hook {} || exit 2",
        agent.name()
    )
}

/// The command an agent's session-start entry runs: the git hooks armed
/// ([`arm`]), bounded as the tool entry is. A session start cannot refuse
/// anything, so where `chock` is missing the entry only says so; the tool
/// entry refuses every call there.
fn session_start_command(chock: &str, agent: Agent) -> String {
    format!(
        "command -v {chock} >/dev/null 2>&1 || {{ echo \"{MISSING_AT_START}\" >&2; exit 0; }}; \
         timeout -k {HOOK_KILL_AFTER_SECS} {HOOK_BOUND_SECS} {chock} hook {SESSION_START} {}",
        agent.name()
    )
}

/// What a session-start entry says where `chock` is not installed.
const MISSING_AT_START: &str = "This project's git hooks and agent tool calls are checked by Chock, which is not installed here, so every tool call will be refused. Install it (https://github.com/chock-dev/chock, or nix profile install github:chock-dev/chock).";

/// What a hook entry says where `chock` is not installed.
const MISSING: &str = "This project decides each agent tool call with Chock, which is not installed here, so the call is refused. Install it (https://github.com/chock-dev/chock, or nix profile install github:chock-dev/chock), or remove Chock from this agent's hook settings.";

/// Whether a handler in an agent's file is Chock's tool entry for `agent`
/// (by any path to the binary, with any arguments, under `timeout` or not).
fn is_chocks(agent: Agent) -> impl Fn(&Value) -> bool {
    is_chocks_running(vec!["hook", agent.name()])
}

/// Whether a handler is Chock's session-start entry for `agent`.
fn is_chocks_start(agent: Agent) -> impl Fn(&Value) -> bool {
    is_chocks_running(vec!["hook", SESSION_START, agent.name()])
}

/// Whether a handler runs `chock` with `args` first (by any path to the
/// binary, under `timeout` or not).
fn is_chocks_running(args: Vec<&'static str>) -> impl Fn(&Value) -> bool {
    let base = |word: &str| {
        word.rsplit('/')
            .next()
            .unwrap_or(word)
            .trim_matches('"')
            .to_owned()
    };
    move |handler| {
        let Some(command) = handler.get("command").and_then(Value::as_str) else {
            return false;
        };
        let words: Vec<&str> = command.split_whitespace().collect();
        // `chock <args>` run first, or under `timeout`.
        (0..words.len()).any(|at| {
            base(words[at]) == "chock"
                && words.get(at + 1..at + 1 + args.len()) == Some(&args[..])
                && (at == 0 || words[..at].iter().any(|w| base(w) == "timeout"))
        })
    }
}

/// The hook events Chock's entry goes under in each agent's file, and
/// whether that layout nests handlers in matcher groups. Cursor's
/// preToolUse sees every tool; its beforeMCPExecution names the MCP
/// server, which preToolUse does not.
fn events(agent: Agent) -> &'static [(&'static str, bool)] {
    match agent {
        Agent::Claude | Agent::Codex => &[("PreToolUse", true)],
        Agent::Gemini => &[("BeforeTool", true)],
        Agent::Cursor => &[("preToolUse", false), ("beforeMCPExecution", false)],
    }
}

/// The event an agent runs hooks on when a session starts, and whether
/// its layout nests handlers: each of the four has one.
fn session_event(agent: Agent) -> (&'static str, bool) {
    match agent {
        Agent::Claude | Agent::Codex | Agent::Gemini => ("SessionStart", true),
        Agent::Cursor => ("sessionStart", false),
    }
}

fn sync_agent(agent: Agent, options: &SyncOptions, path: &Path) -> Result<Change, HookError> {
    let command = hook_command(&options.chock, agent);
    let start = session_start_command(&options.chock, agent);
    let (start_event, start_nested) = session_event(agent);
    sync_text_file(&options.project, path, false, options.mode(), |current| {
        if options.remove {
            return match current {
                Some(text) => {
                    let document = json::Document::parse(path, Some(text))?;
                    for &(event, nested) in events(agent) {
                        document.remove(event, nested, is_chocks(agent))?;
                    }
                    document.remove(start_event, start_nested, is_chocks_start(agent))?;
                    Ok(document.changed_text())
                }
                None => Ok(None),
            };
        }
        let document = json::Document::parse(path, current)?;
        // The handler each agent's layout takes for `command`.
        let handler = |command: &str, name: &str| match agent {
            Agent::Claude | Agent::Codex => {
                json!({"type": "command", "command": command, "timeout": AGENT_TIMEOUT_SECS})
            }
            Agent::Gemini => json!({
                "name": name,
                "type": "command",
                "command": command,
                "timeout": AGENT_TIMEOUT_SECS * 1000
            }),
            Agent::Cursor => json!({"command": command, "failClosed": true}),
        };
        if agent == Agent::Cursor {
            document.ensure_field("version", json::input(&json!(1)));
        }
        for &(event, nested) in events(agent) {
            let handler = handler(&command, "chock");
            if nested {
                let group = json!({"matcher": "*", "hooks": [handler]});
                document.ensure_nested(event, &group, is_chocks(agent))?;
            } else {
                document.ensure_flat(event, &handler, is_chocks(agent))?;
            }
        }
        // The user-level file is read in every project the person opens,
        // and arming git hooks is a project's choice, made by its sync.
        if !options.user {
            let handler = match agent {
                // Nothing to close at a session start: the tool entry
                // refuses every call while chock cannot run.
                Agent::Cursor => json!({"command": start}),
                _ => handler(&start, "chock-session-start"),
            };
            if start_nested {
                // No matcher: every start (a new session, a resumed or
                // cleared one) arms them, as Claude Code, Codex and Gemini
                // CLI each run a group without one for every source.
                let group = json!({"hooks": [handler]});
                document.ensure_nested(start_event, &group, is_chocks_start(agent))?;
            } else {
                document.ensure_flat(start_event, &handler, is_chocks_start(agent))?;
            }
        }
        Ok(document.changed_text())
    })
}

/// Reads a text file beneath `root`, asks `update` for its new text, and
/// writes it when it changed. `executable`: the file must be runnable (a
/// git hook). `Mode::Check`: the change is only reported, and a missing
/// file's folders are not made; `Mode::Remove`: a missing file holds
/// nothing to take back, and nothing is made for it.
fn sync_text_file(
    root: &Path,
    path: &Path,
    executable: bool,
    how: Mode,
    update: impl FnOnce(Option<&str>) -> Result<Option<String>, HookError>,
) -> Result<Change, HookError> {
    let missing = |e: &HookError| matches!(e, HookError::Io { source, .. } if source.kind() == std::io::ErrorKind::NotFound);
    if how == Mode::Check {
        let current = match write::Placed::open(root, path, false) {
            Ok(placed) => placed.read()?,
            Err(e) if missing(&e) => None,
            Err(e) => return Err(e),
        };
        let current = current
            .map(|(bytes, _)| {
                String::from_utf8(bytes).map_err(|_| HookError::Unparsable {
                    path: path.to_owned(),
                    message: "not UTF-8 text".to_owned(),
                })
            })
            .transpose()?;
        return Ok(match (update(current.as_deref())?, &current) {
            (None, _) => Change::Unchanged,
            (Some(_), Some(_)) => Change::Updated,
            (Some(_), None) => Change::Created,
        });
    }
    let placed = match write::Placed::open(root, path, false) {
        Ok(placed) => placed,
        Err(e) if missing(&e) && how == Mode::Remove => return Ok(Change::Unchanged),
        Err(e) if missing(&e) => write::Placed::open(root, path, true)?,
        Err(e) => return Err(e),
    };
    let (current, mode) = match placed.read()? {
        Some((bytes, mode)) => {
            let text = String::from_utf8(bytes).map_err(|_| HookError::Unparsable {
                path: path.to_owned(),
                message: "not UTF-8 text".to_owned(),
            })?;
            (Some(text), Some(mode))
        }
        None => (None, None),
    };
    let runnable = |mode: u32| if executable { mode | 0o111 } else { mode };
    match update(current.as_deref())? {
        Some(text) => {
            let mode = mode.unwrap_or(if executable { 0o755 } else { 0o644 });
            placed.replace(text.as_bytes(), runnable(mode))?;
            Ok(if current.is_some() {
                Change::Updated
            } else {
                Change::Created
            })
        }
        None => {
            if let Some(mode) = mode.filter(|m| runnable(*m) != *m) {
                placed.set_mode(runnable(mode))?;
            }
            Ok(Change::Unchanged)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sync_claude(project: &Path, ci: bool) -> SyncReport {
        sync(&SyncOptions {
            project: project.to_owned(),
            agents: Some(vec![Agent::Claude]),
            ci,
            chock: "chock".to_owned(),
            check: false,
            remove: false,
            user: false,
        })
    }

    /// Chock's entry is known in the form sync writes now and in the one it
    /// wrote before the time bound, so a second sync replaces it; the
    /// person's own handlers are not taken for it.
    #[test]
    fn chock_s_entry_is_known_bounded_or_not() {
        let ours = is_chocks(Agent::Claude);
        let handler = |command: &str| json!({"type": "command", "command": command});
        for command in [
            hook_command("chock", Agent::Claude),
            hook_command("/opt/chock/bin/chock", Agent::Claude),
            "chock hook claude || exit 2".to_owned(),
            "timeout -k 5 20 chock hook claude || exit 2".to_owned(),
            "\"/usr/local/bin/chock\" hook claude".to_owned(),
        ] {
            assert!(ours(&handler(&command)), "{command}");
        }
        for command in [
            "echo chock hook claude",
            "mychock hook claude",
            "timeout 20 chock hook cursor || exit 2",
            "chock sync",
            "./fmt.sh",
        ] {
            assert!(!ours(&handler(command)), "{command}");
        }
    }

    /// A cloned project holding links where sync's files go: each is
    /// refused, naming the link, and nothing is written where they point.
    #[test]
    fn sync_never_writes_through_a_link() {
        let dir = tempfile::tempdir().expect("tempdir");
        let project = dir.path().join("project");
        let outside = dir.path().join("outside");
        std::fs::create_dir_all(&project).expect("project");
        std::fs::create_dir_all(&outside).expect("outside");
        std::fs::write(outside.join("bashrc"), "mine\n").expect("bashrc");
        std::os::unix::fs::symlink(&outside, project.join(".claude")).expect("link");
        std::os::unix::fs::symlink(&outside, project.join(".github")).expect("link");
        let report = sync_claude(&project, true);
        for what in ["Claude Code hooks", "GitHub Actions workflow"] {
            let file = report.files.iter().find(|f| f.what == what).expect(what);
            let error = file.result.as_ref().expect_err(what).to_string();
            assert!(error.contains("symbolic link"), "{what}: {error}");
        }
        let names: Vec<_> = std::fs::read_dir(&outside)
            .expect("outside")
            .map(|e| e.expect("entry").file_name())
            .collect();
        assert_eq!(names, ["bashrc"], "nothing written outside");

        std::fs::remove_file(project.join(".claude")).expect("unlink");
        std::fs::create_dir(project.join(".claude")).expect("mkdir");
        std::os::unix::fs::symlink(
            outside.join("bashrc"),
            project.join(".claude/settings.json"),
        )
        .expect("link");
        let report = sync_claude(&project, false);
        let error = report.files[0]
            .result
            .as_ref()
            .expect_err("refused")
            .to_string();
        assert!(error.contains("symbolic link"), "{error}");
        assert_eq!(
            std::fs::read_to_string(outside.join("bashrc")).expect("bashrc"),
            "mine\n"
        );

        std::fs::remove_file(project.join(".claude/settings.json")).expect("unlink");
        let report = sync_claude(&project, false);
        assert!(
            matches!(report.files[0].result, Ok(Change::Created)),
            "{:?}",
            report.files[0].result
        );
        let written =
            std::fs::read_to_string(project.join(".claude/settings.json")).expect("settings");
        assert!(written.contains("chock hook claude"), "{written}");
    }
}
