//! One server's life: the policy read once, the log, the workspace, the
//! people it can ask, and the tools it offers.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use chock_log::Log;
use chock_policy::{Policy, names};
use chock_sandbox::project::Project;
use rmcp::ServiceExt;
use sha2::{Digest, Sha256};
use tokio::io::{AsyncRead, AsyncWrite};

use crate::approve::{self, ApproveHub};
use crate::ask::{ASK_TIMEOUT, Askers};
use crate::error::McpError;
use crate::gate::{StartRow, Withheld};
use crate::server::ChockServer;
use crate::tasks::Tasks;
use crate::tools::{
    PROVIDE_TOOL, READ_SKILL, REQUEST_APPLY, Robots, SERVE_PORT, TOOL_NAMES, WEB_SEARCH,
};
use crate::transport::LineTransport;
use crate::workspace::Workspace;
use chock_sandbox::workspace::SessionWorkspace;

/// How `chock mcp` was started.
#[derive(Debug, Clone)]
pub struct ServeOptions {
    /// The project (default: found from the working directory).
    pub project: Option<PathBuf>,
    /// Organisation bundles to bind besides those found on the machine.
    pub org_bundles: Vec<PathBuf>,
    /// The name agents know this server by, as in their configuration
    /// (`mcp.<name>.tool.<tool>` is read at start for each tool).
    pub name: String,
    /// Listen for `chock approve` on a socket beside the log.
    pub approve: bool,
    /// How long a question waits for a person.
    pub ask_timeout: Duration,
    /// The dev shell run_command uses (default: chock.zon's, else `default`).
    pub dev_shell: Option<String>,
    /// Work on a session workspace of its own instead of the project.
    pub workspace: bool,
    /// Copy the project's uncommitted work into that workspace.
    pub allow_dirty: bool,
    /// The command this server runs as (`chock mcp`, `chock run`): what
    /// it says to the person begins with it, and its workspace's session
    /// name with its last word.
    pub command: &'static str,
    /// A folder every run_command is given read-write at
    /// `/run/chock/scratch` (`CHOCK_SCRATCHPAD`): `chock run`'s scratchpad,
    /// made and removed by its session.
    pub scratchpad: Option<PathBuf>,
    /// The workspace's session name, when the caller chose it (`chock run`
    /// names it after its session, and reuses a kept one on resume); else
    /// a fresh one with [`ServeOptions::workspace_prefix`].
    pub workspace_session: Option<String>,
    /// Tools offered beside Chock's own and the gateway's (the project's
    /// plugins), started with the session.
    pub extra_tools: Option<Arc<dyn crate::extra::ExtraTools>>,
}

impl ServeOptions {
    /// What the workspace's session name begins with: `mcp`, `run`.
    pub fn workspace_prefix(&self) -> &'static str {
        self.command.rsplit(' ').next().unwrap_or(self.command)
    }
}

impl Default for ServeOptions {
    fn default() -> Self {
        ServeOptions {
            project: None,
            org_bundles: Vec::new(),
            name: "chock".into(),
            approve: true,
            ask_timeout: ASK_TIMEOUT,
            dev_shell: None,
            workspace: false,
            allow_dirty: false,
            command: "chock mcp",
            scratchpad: None,
            workspace_session: None,
            extra_tools: None,
        }
    }
}

/// Everything a tool call needs, shared by every call of the session.
pub struct Session {
    pub project: Project,
    pub workspace: Arc<Workspace>,
    /// The tools offered beside Chock's own and the gateway's.
    pub extra: Option<Arc<dyn crate::extra::ExtraSession>>,
    pub policy: Policy,
    pub log: Log,
    pub askers: Askers,
    /// The tools offered, after the rows read at start.
    pub offered: Vec<&'static str>,
    /// Tools a start row took away, with the sentence saying which rule.
    pub withheld: Vec<Withheld>,
    pub dev_shell: String,
    /// The name agents know this server by (`--name`).
    pub name: String,
    /// The command it runs as ([`ServeOptions::command`]).
    pub command: &'static str,
    pub watch: PolicyWatch,
    /// What nix_build and provide_tool have written to the store this
    /// session, against `max_session_bytes`.
    pub nix_session: std::sync::Mutex<chock_nix::Session>,
    /// Each flake's inputs, read once per session by the first build that
    /// misses one (so a host a person refused is not asked about again).
    /// The acts a person allowed for the rest of this session (held in
    /// memory only, gone when the server ends).
    pub grants: chock_gate::SessionGrants,
    pub flake_inputs:
        std::sync::Mutex<std::collections::HashMap<PathBuf, chock_inputs::FlakeInputs>>,
    /// The store paths provide_tool made available (each program's runtime
    /// closure): every later run_command is shown them besides the dev shell.
    pub provided: std::sync::Mutex<std::collections::BTreeSet<PathBuf>>,
    /// Each origin's robots.txt, read once per session.
    pub robots: std::sync::Mutex<std::collections::HashMap<String, Robots>>,
    /// Background commands and the ports published for them.
    pub tasks: Arc<Tasks>,
    /// The secret values given out this session, scrubbed from every answer.
    pub secrets: crate::secrets::Given,
    /// The session workspace every tool works on (`--workspace`).
    pub session_workspace: Option<std::sync::Mutex<SessionWorkspace>>,
    /// Set when the workspace's files are still being written
    /// ([`crate::tools::fill_workspace`]); every tool call waits on it.
    pub workspace_ready: Option<Arc<Ready>>,
    /// The scratchpad run_command is given ([`ServeOptions::scratchpad`]).
    pub scratchpad: Option<PathBuf>,
    /// The reviewer agent that answers `agent_review` and
    /// `agent_then_human` first, set once by a caller that runs one
    /// (`chock run`, when chock.zon names its kind); none in `chock mcp`.
    pub reviewer: std::sync::OnceLock<Arc<dyn crate::gate::Reviewer>>,
    /// Told of each decision as it is logged, set once by a caller that
    /// shows them (`chock run --json`).
    pub decided: std::sync::OnceLock<Arc<dyn crate::gate::Decided>>,
    /// The placeholders of the person's missing control inputs, kept for
    /// the session so its commands do not make and remove them each time
    /// (none for a session workspace, whose copy is the agent's).
    pub placeholders: Option<chock_sandbox::PlaceholderHold>,
    /// The style rules write_file and edit_file check what they would
    /// leave against; none when there are none, or `style.parse` did not
    /// answer allow at start.
    pub style: Option<crate::style::Style>,
    /// The language servers chock.zon's `.lsp` names, started as tools need them.
    pub lsp: crate::tools::LspServers,
}

/// A session that names devices says when one arrives or leaves (each
/// command's sandbox binds what is present at its start); a session that
/// names none listens to nothing.
fn watch_devices(policy: &Policy, command: &'static str) {
    if !policy.config().devices().is_empty() {
        chock_sandbox::devices::watch(
            policy.config().devices().to_vec(),
            chock_sandbox::devices::Roots::default(),
            move |line| tracing::warn!("{command}: {line}"),
        );
    }
}

impl Session {
    /// Loads the policy once, opens the log and the workspace, reads the
    /// start rows and, when asked to, listens for `chock approve`.
    /// A new workspace's files are left to write (`workspace_ready`), so
    /// the server answers `initialize` at once.
    pub fn start(options: &ServeOptions) -> Result<Session, McpError> {
        Session::begin(options, |_, _, _| Ok::<_, McpError>(()), true).map(|(session, ())| session)
    }

    /// [`Session::start`], with `before` asked once the policy is read and
    /// the log open, before anything is made: its `Err` stops the start.
    pub fn start_after<T, E: std::fmt::Display>(
        options: &ServeOptions,
        before: impl FnOnce(&Project, &Policy, &Log) -> Result<T, E>,
    ) -> Result<(Session, T), McpError> {
        Session::begin(options, before, false)
    }

    fn begin<T, E: std::fmt::Display>(
        options: &ServeOptions,
        before: impl FnOnce(&Project, &Policy, &Log) -> Result<T, E>,
        defer: bool,
    ) -> Result<(Session, T), McpError> {
        let mut project = Project::for_command(options.project.as_deref())?;
        let policy = chock_sandbox::exec::load_policy(&project, options.org_bundles.clone())?;
        for warning in policy.warnings() {
            tracing::warn!("{}: {warning}", options.command);
        }
        let log = chock_sandbox::exec::open_log(&policy)?;
        let before =
            before(&project, &policy, &log).map_err(|why| McpError::Stopped(why.to_string()))?;
        // A container image is read, written when needed and held (shared)
        // now, so a session that cannot have its tree is refused before
        // its first call, and no tree is replaced under it until it ends.
        if let Some(container) = policy.config().container() {
            chock_sandbox::image::tree(container)?;
        }
        let session_workspace = if options.workspace {
            let name = options.workspace_session.clone().unwrap_or_else(|| {
                chock_sandbox::workspace::new_session(options.workspace_prefix())
            });
            let held = crate::tools::make_workspace(
                &project,
                &policy,
                &log,
                (options.command, &name, options.allow_dirty, defer),
            )?;
            project.workspace = Some(held.view());
            Some(held)
        } else {
            None
        };
        let opened = match &project.workspace {
            Some(view) => Workspace::open_session(view),
            None => Workspace::open(&project.dir),
        };
        let workspace = Arc::new(opened.map_err(|source| McpError::Workspace {
            path: project.dir.clone(),
            source,
        })?);
        let extra = start_extra(options, &project, &policy, &workspace);
        let project_text = project.dir.display().to_string();
        let approve = if options.approve {
            match approve::socket_dir()
                .and_then(|dir| ApproveHub::start(&dir, &project_text, options.command))
            {
                Ok(hub) => Some(hub),
                Err(e) => {
                    tracing::warn!(
                        "{}: `chock approve` cannot reach this server: {e}",
                        options.command
                    );
                    None
                }
            }
        } else {
            None
        };
        watch_devices(&policy, options.command);
        let dev_shell = chock_sandbox::exec::dev_shell_name(options.dev_shell.clone(), &policy);
        let watch = PolicyWatch::new(policy.project_file().to_path_buf(), options.command);
        let tasks_dir = chock_log::dir_from_env()?.join("tasks");
        let tasks = Tasks::new(&tasks_dir).map_err(|source| McpError::TasksDir {
            path: tasks_dir,
            source,
        })?;
        let mut session = Session {
            project,
            workspace,
            extra,
            policy,
            log,
            askers: Askers {
                approve,
                timeout: options.ask_timeout,
            },
            offered: Vec::new(),
            withheld: Vec::new(),
            dev_shell,
            name: options.name.clone(),
            command: options.command,
            watch,
            nix_session: Default::default(),
            grants: Default::default(),
            flake_inputs: Default::default(),
            provided: Default::default(),
            robots: Default::default(),
            tasks: Arc::new(tasks),
            secrets: Default::default(),
            workspace_ready: session_workspace
                .as_ref()
                .filter(|held| held.meta.unfilled)
                .map(|_| Arc::new(Ready::default())),
            session_workspace: session_workspace.map(std::sync::Mutex::new),
            scratchpad: options.scratchpad.clone(),
            reviewer: std::sync::OnceLock::new(),
            decided: std::sync::OnceLock::new(),
            placeholders: None,
            style: None,
            lsp: Default::default(),
        };
        if session.project.workspace.is_none() {
            let held = chock_sandbox::hold_placeholders(&session.project)
                .map_err(|e| McpError::Stopped(e.to_string()))?;
            session.placeholders = Some(held);
        }
        session
            .read_start_rows(&options.name)
            .map_err(|source| McpError::Name {
                name: options.name.clone(),
                source,
            })?;
        session.style = crate::style::start(&session)?;
        Ok((session, before))
    }

    /// What the agent reads of a call's outcome: the session's secrets
    /// scrubbed, and a note the first time `chock.zon` is seen changed.
    ///
    /// This is where a tool's error (a `ToolError`, or a caller's own
    /// tool's) becomes the text of its result: `Ok` and `Err` are both what
    /// the agent reads, `Err` marked as an error.
    pub fn answer(
        &self,
        outcome: Result<String, impl std::fmt::Display>,
    ) -> Result<String, Failed> {
        let outcome = outcome.map_err(|error| error.to_string());
        let note = self.watch.notice();
        let said = |text: String| {
            let mut text = self.secrets.scrub(&text);
            if let Some(note) = &note {
                text.push_str(&format!("\n\nnote: {note}"));
            }
            text
        };
        outcome.map(said).map_err(|text| Failed(said(text)))
    }

    /// The refusal a call of a tool a start row took away is answered with.
    pub fn withheld_refusal(&self, tool: &str) -> Option<String> {
        self.withheld
            .iter()
            .find(|w| w.tool == tool)
            .map(|withheld| format!("refused: {}", withheld.why))
    }

    /// The rows read once, before the first call: each tool's
    /// `mcp.<name>.tool.<tool>`, where only a deny is spent (the tool is
    /// not offered, and costs the agent no context), and `nix.build`,
    /// where only an allow offers provide_tool (nobody can be asked before
    /// the first call, so an ask is a refusal there). A row some rule
    /// names is logged; one nothing names says nothing.
    fn read_start_rows(&mut self, name: &str) -> Result<(), chock_policy::NameError> {
        for tool in TOOL_NAMES {
            if tool == REQUEST_APPLY && self.session_workspace.is_none() {
                continue;
            }
            let mut rows = vec![StartRow::third_party_tool(names::mcp_tool(name, tool)?)];
            if tool == PROVIDE_TOOL {
                rows.push(StartRow::nix_build());
            }
            match rows.iter().find_map(|row| self.start_row(tool, row)) {
                // Offered only where some rule could permit a port.
                None if tool == SERVE_PORT && !crate::tools::could_permit_a_port(self) => {
                    self.withheld.push(Withheld {
                        tool,
                        why: format!(
                            "{SERVE_PORT} is not offered: no rule in {} names a port under net.serve (a rule such as .{{ .action = \"net.serve.3000\", .decision = .allow }} publishes one)",
                            self.policy.project_file().display()
                        ),
                        by_rule: false,
                    });
                }
                // Offered only where config.zon names an engine.
                None if tool == WEB_SEARCH && self.policy.config().search().is_none() => {
                    self.withheld.push(Withheld {
                        tool,
                        why: format!(
                            "{WEB_SEARCH} is not offered: config.zon names no search engine (.search = .{{ .kind = .searxng, .url = \"http://127.0.0.1:8888\" }}, or .brave, .tavily with a .key)"
                        ),
                        by_rule: false,
                    });
                }
                // Offered only where chock.zon names a language server.
                None if crate::tools::LSP_TOOLS.contains(&tool)
                    && !crate::tools::has_language_servers(self) =>
                {
                    self.withheld.push(Withheld {
                        tool,
                        why: format!(
                            "{tool} is not offered: {} names no language server (.lsp = .{{ .{{ .command = .{{ \"pyright-langserver\", \"--stdio\" }}, .language = \"python\", .extensions = .{{ \"py\" }} }} }})",
                            self.policy.project_file().display()
                        ),
                        by_rule: false,
                    });
                }
                // Offered only where some layer holds a skill.
                None if tool == READ_SKILL && !crate::tools::has_skills(self) => {
                    self.withheld.push(Withheld {
                        tool,
                        why: format!(
                            "{READ_SKILL} is not offered: no skill layer holds a readable skill (`chock skills list` shows each layer and why)"
                        ),
                        by_rule: false,
                    });
                }
                None => self.offered.push(tool),
                Some(withheld) => self.withheld.push(withheld),
            }
        }
        Ok(())
    }
}

/// Starts the caller's extra tools with the session's policy and
/// workspace; none when they were not given or no runtime runs them.
fn start_extra(
    options: &ServeOptions,
    project: &Project,
    policy: &Policy,
    workspace: &Arc<Workspace>,
) -> Option<Arc<dyn crate::extra::ExtraSession>> {
    let tools = options.extra_tools.as_ref()?;
    let runtime = match tokio::runtime::Handle::try_current() {
        Ok(runtime) => runtime,
        Err(e) => {
            tracing::warn!("{}: no plugin is offered: {e}", options.command);
            return None;
        }
    };
    Some(tools.start(crate::extra::ExtraStart {
        project: &project.dir,
        policy,
        agent_kind: crate::AGENT_KIND,
        workspace: workspace.clone(),
        runtime,
    }))
}

/// Notices when `chock.zon` changes after the policy was read.
pub struct PolicyWatch {
    file: PathBuf,
    command: &'static str,
    at_start: Option<Fingerprint>,
    told: AtomicBool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Fingerprint {
    len: u64,
    modified: Option<std::time::SystemTime>,
    sha256: [u8; 32],
}

fn fingerprint(file: &std::path::Path) -> Option<Fingerprint> {
    let meta = std::fs::metadata(file).ok()?;
    let bytes = std::fs::read(file).ok()?;
    Some(Fingerprint {
        len: meta.len(),
        modified: meta.modified().ok(),
        sha256: Sha256::digest(&bytes).into(),
    })
}

impl PolicyWatch {
    fn new(file: PathBuf, command: &'static str) -> PolicyWatch {
        let at_start = fingerprint(&file);
        PolicyWatch {
            file,
            command,
            at_start,
            told: AtomicBool::new(false),
        }
    }

    /// The first time the file is seen to differ from what was read, the
    /// sentence to say; `None` before and after. A look costs one `stat`
    /// unless the size or time moved.
    pub fn notice(&self) -> Option<String> {
        if self.told.load(Ordering::Relaxed) {
            return None;
        }
        let meta = std::fs::metadata(&self.file).ok();
        let same_stat = match (&self.at_start, &meta) {
            (None, None) => true,
            (Some(start), Some(meta)) => {
                start.len == meta.len() && start.modified == meta.modified().ok()
            }
            _ => false,
        };
        if same_stat {
            return None;
        }
        let now = fingerprint(&self.file);
        let changed = match (&self.at_start, &now) {
            (Some(a), Some(b)) => a.sha256 != b.sha256,
            (None, None) => false,
            _ => true,
        };
        if !changed || self.told.swap(true, Ordering::Relaxed) {
            return None;
        }
        let sentence = format!(
            "{} changed after this server read it; the rules read at start still answer every call until the server is restarted (restart your agent's MCP server to use the new rules)",
            self.file.display()
        );
        tracing::warn!("{}: {sentence}", self.command);
        Some(sentence)
    }
}

/// Kills the session's background commands when dropped.
pub(crate) struct EndTasks(pub(crate) Arc<Tasks>);

impl Drop for EndTasks {
    fn drop(&mut self) {
        tokio::task::block_in_place(|| self.0.shutdown());
    }
}

/// Runs the server on stdin and stdout until the client closes stdin.
pub fn serve_stdio(options: ServeOptions) -> Result<(), McpError> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(McpError::Runtime)?;
    runtime.block_on(serve(options, tokio::io::stdin(), tokio::io::stdout()))
}

/// Runs the server on any pair of streams (tests use pipes).
pub async fn serve<R, W>(options: ServeOptions, reader: R, writer: W) -> Result<(), McpError>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let session = Arc::new(tokio::task::block_in_place(|| Session::start(&options))?);
    if session.workspace_ready.is_some() {
        let filling = session.clone();
        std::thread::spawn(move || {
            let filled = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                crate::tools::fill_workspace(&filling);
            }));
            // A call never waits for a writing that stopped short.
            if filled.is_err()
                && let Some(ready) = &filling.workspace_ready
            {
                ready.set(Err(Unmade::stopped()));
            }
        });
    }
    crate::build::fetch_inputs_at_start(&session);
    // However the session ends, its background commands end with it.
    let _tasks_end = EndTasks(session.tasks.clone());
    let gateway = crate::gateway::Gateway::start(&session).await;
    let server = ChockServer::new(session.clone(), gateway);
    let running = match server.serve(LineTransport::new(reader, writer)).await {
        Ok(running) => running,
        // The client went away before it began: nothing was asked, nothing failed.
        Err(rmcp::service::ServerInitializeError::ConnectionClosed(_)) => return Ok(()),
        Err(e) => return Err(McpError::Session(e.to_string())),
    };
    let waited = running
        .waiting()
        .await
        .map_err(|e| McpError::Session(e.to_string()));
    crate::tools::finish_workspace(&session);
    waited?;
    Ok(())
}

/// A tool call's error as the model reads it once the reply is written:
/// the error's sentence (a refusal's among them), the only form it has
/// from there on, in a reply, a log or on a screen.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, serde::Serialize)]
#[serde(transparent)]
#[error("{0}")]
pub struct Failed(pub String);

/// Why the session's workspace was not made, as every call waiting for it
/// is told.
#[derive(Debug, Clone, thiserror::Error)]
#[error("the session's workspace could not be made{0}")]
pub struct Unmade(String);

impl Unmade {
    /// The writing stopped short, for no reason it could say.
    pub fn stopped() -> Unmade {
        Unmade(String::new())
    }

    /// The writing failed with `why`.
    pub fn because(why: impl std::fmt::Display) -> Unmade {
        Unmade(format!(": {why}"))
    }
}

/// Whether the session's workspace is ready: `None` while its files are
/// written, then how that ended.
#[derive(Default)]
pub struct Ready {
    state: std::sync::Mutex<Option<Result<(), Unmade>>>,
    changed: std::sync::Condvar,
}

impl Ready {
    /// Says how the writing ended, to every waiter.
    pub fn set(&self, outcome: Result<(), Unmade>) {
        let mut state = self
            .state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        *state = Some(outcome);
        self.changed.notify_all();
    }

    /// Waits until the writing ended; how it did.
    pub fn wait(&self) -> Result<(), Unmade> {
        let mut state = self
            .state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        loop {
            if let Some(outcome) = state.as_ref() {
                return outcome.clone();
            }
            state = self
                .changed
                .wait(state)
                .unwrap_or_else(std::sync::PoisonError::into_inner);
        }
    }
}
