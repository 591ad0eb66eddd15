//! Turning "run this program in this project" into a sandbox and a command:
//! the toolchain (dev shell or host), the cache, the environment, where the
//! program is, and the notices a person should read.
//!
//! [`plan`] names the program's `exec.*` action, decides it (and
//! `sandbox.jit`) through the policy, writes one decision-log line per
//! decision (all of them in one append), and either refuses or hands back
//! a [`Prepared`] command; the caller prints the notices and calls
//! [`Prepared::run`].

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Component, Path, PathBuf};

use chock_gate::Route;
use chock_log::Log;
use chock_policy::{Key, Policy, Reading, StartQuestion, Verdict};

use crate::cache::{self, CACHE_BOUND, CacheStart};
use crate::devshell::{self, DevShell, DevShellError};
use crate::error::SandboxError;
use crate::layout::{self, HOST_SYSTEM, Toolchain};
use crate::limits::Limits;
use crate::mounts::{CACHE_MOUNT, Layout, StoreView, TMP_MOUNT};
use crate::project::{Project, ProjectError};
use crate::seccomp::WriteExecute;
use crate::spawn::{Command, Finished, Sandbox, Stdio};

/// The capped tmpfs's size.
pub const TMP_BYTES: u64 = 256 << 20;
pub use crate::spawn::FREE_SPACE_FLOOR;
/// The `PATH` a project without a flake gets.
const HOST_PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
/// Caller variables that say how to talk to the person, never what they
/// know: passed through unchanged.
const PASSED: [&str; 5] = ["TERM", "COLORTERM", "NO_COLOR", "LANG", "LC_ALL"];

/// Why a command could not be prepared.
#[derive(Debug, thiserror::Error)]
pub enum ExecError {
    /// The project could not be placed.
    #[error(transparent)]
    Project(#[from] ProjectError),
    /// The dev shell could not be read.
    #[error(transparent)]
    DevShell(#[from] DevShellError),
    /// The sandbox could not be built or started.
    #[error(transparent)]
    Sandbox(#[from] SandboxError),
    /// Nothing to run.
    #[error("no program was given; put it after `--`, e.g. `chock exec -- make test`")]
    NoProgram,
    /// A bare name that no directory on the sandbox's PATH holds.
    #[error(
        "`{name}` is not on the sandbox's PATH ({path}); add it to the dev shell in flake.nix, or give its path"
    )]
    NotFound {
        /// The name as given.
        name: String,
        /// The PATH searched.
        path: String,
    },
    /// The container image chock.zon names cannot be the toolchain.
    #[error(transparent)]
    Image(#[from] crate::image::ImageLoadError),
    /// The cache could not be prepared.
    #[error("the cache {path} cannot be used: {source}; `chock cache clear` empties it")]
    Cache {
        /// The host directory.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
}

/// Something a person should read before the program's own output.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Notice {
    /// No flake.nix: the whole store and the host's system directories.
    NoFlake,
    /// A flake.nix that declares no `devShells`: the same as no flake.
    NoDevShells,
    /// The cache was made for this project now.
    CacheCreated {
        /// Where it is on the host.
        dir: PathBuf,
    },
    /// The cache was over its bound and was emptied.
    CacheEmptied {
        /// What it held.
        bytes: u64,
        /// The bound.
        bound: u64,
    },
    /// The dev shell was built through chock-nix and read through `nix print-dev-env`.
    DevShellRead {
        /// `devShells.<system>.<name>`.
        attribute: String,
        /// Store paths in its closure.
        paths: usize,
    },
    /// The container image's tree was written now.
    ImageWritten {
        /// The reference.
        reference: String,
        /// Files and bytes written.
        files: u64,
        /// Bytes.
        bytes: u64,
        /// Milliseconds it took.
        millis: u64,
        /// Set-ID bits and device nodes left out.
        dropped: u64,
        /// The tree.
        rootfs: PathBuf,
    },
    /// `sandbox.jit` answered allow: no write-and-execute rule for this command.
    WriteExecuteOff {
        /// The rule that allowed it, as written.
        rule: Option<String>,
    },
    /// The decision log could not be written (the decision stands).
    LogNotWritten {
        /// Where the log is.
        dir: PathBuf,
    },
    /// A device the project names that is not bound, and why.
    Device {
        /// The sentence, naming the device's action.
        line: String,
    },
    /// Guarded names that were missing, made before the program started so
    /// that it cannot create them (each is bound read-only).
    Placeholders {
        /// What was made.
        made: Vec<PathBuf>,
    },
}

impl std::fmt::Display for Notice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Notice::NoFlake => write!(
                f,
                "no flake.nix here: the program runs on the host's toolchain ({}) with the whole Nix store read-only",
                host_system()
            ),
            Notice::NoDevShells => write!(
                f,
                "flake.nix declares no devShells: the program runs on the host's toolchain ({}) with the whole Nix store read-only, as in a project without a flake; a devShells.<system>.default there would be the toolchain instead",
                host_system()
            ),
            Notice::CacheCreated { dir } => write!(
                f,
                "this project's cache is new: {CACHE_MOUNT} (HOME inside the sandbox) is {} on this machine, kept between runs, at most {} GiB",
                dir.display(),
                CACHE_BOUND >> 30
            ),
            Notice::CacheEmptied { bytes, bound } => write!(
                f,
                "the cache held {:.1} GiB, over its bound of {} GiB, so it was emptied; what it held is rebuilt as needed",
                *bytes as f64 / (1u64 << 30) as f64,
                bound >> 30
            ),
            Notice::DevShellRead { attribute, paths } => write!(
                f,
                "built the dev shell {attribute} through chock-nix and read it through `nix print-dev-env` ({paths} store paths); it stays cached until flake.nix or flake.lock change"
            ),
            Notice::ImageWritten {
                reference,
                files,
                bytes,
                millis,
                dropped,
                rootfs,
            } => write!(
                f,
                "wrote the image {reference} into {} ({files} files, {}, in {:.1} s{}); every session on it shares that tree, read-only, until the image changes",
                rootfs.display(),
                crate::image::mib(*bytes),
                *millis as f64 / 1000.0,
                if *dropped > 0 {
                    format!(", {dropped} set-ID bits and device nodes left out")
                } else {
                    String::new()
                }
            ),
            Notice::WriteExecuteOff { rule } => write!(
                f,
                "sandbox.jit answered allow ({}): the write-and-execute rule is OFF for this command, so a page may be writable and executable at once",
                rule.as_deref().unwrap_or("no rule named")
            ),
            Notice::LogNotWritten { dir } => write!(
                f,
                "the decision log in {} could not be written; the decision stands, but it is not on record",
                dir.display()
            ),
            Notice::Device { line } => f.write_str(line),
            Notice::Placeholders { made } => write!(
                f,
                "made {}, which did not exist, before the program started: a program in the sandbox could otherwise create them for git, Chock, an agent or an editor to obey outside it; each means what its absence meant (no rule, no hook, no setting) and is read-only inside",
                made.iter()
                    .map(|p| p.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        }
    }
}

/// The first of the host's system folders, as a notice names them.
fn host_system() -> String {
    HOST_SYSTEM
        .iter()
        .take(3)
        .copied()
        .collect::<Vec<_>>()
        .join(", ")
}

impl Notice {
    /// The notice as an agent reads it: what it says about the sandbox,
    /// in the names the sandbox shows, never where Chock keeps its state
    /// on the host (a person reads those in [`Notice`]'s own text).
    pub fn for_agent(&self) -> String {
        match self {
            Notice::CacheCreated { .. } => format!(
                "this project's cache is new: {CACHE_MOUNT} (HOME inside the sandbox) is kept between runs, at most {} GiB",
                CACHE_BOUND >> 30
            ),
            Notice::ImageWritten { reference, .. } => format!(
                "wrote the image {reference}'s tree; every session on it shares that tree, read-only, until the image changes"
            ),
            Notice::LogNotWritten { .. } => "the decision log could not be written; the decision stands, but it is not on record".into(),
            other => other.to_string(),
        }
    }
}

/// Each host folder a sandbox of `project` shows at another path, with
/// that path: the session workspace's tree (at the project's own path),
/// the person's objects, the cache, and `extra` (a scratchpad, say).
/// [`as_seen_inside`] puts what a program or Chock said in those names.
pub fn inside_names(project: &Project, extra: &[(PathBuf, PathBuf)]) -> Vec<(PathBuf, PathBuf)> {
    let mut names = extra.to_vec();
    if let Some(view) = &project.workspace {
        names.push((view.source.clone(), view.shown.clone()));
        if let Some(objects) = &view.objects {
            names.push((objects.clone(), crate::workspace::OBJECTS_MOUNT.into()));
        }
    }
    if let Ok(cache) = project.cache_dir() {
        names.push((cache, CACHE_MOUNT.into()));
    }
    // The longest first, so a folder inside another is named by its own.
    names.sort_by_key(|(host, _)| std::cmp::Reverse(host.as_os_str().len()));
    names
}

/// `text` with every host folder of `names` ([`inside_names`]) replaced by
/// the path the sandbox shows it at, where it stands as a whole path part
/// (`/a/ws` in `/a/ws/src`, not in `/a/ws2`).
pub fn as_seen_inside(text: &str, names: &[(PathBuf, PathBuf)]) -> String {
    let mut text = text.to_owned();
    for (host, inside) in names {
        let (Some(host), Some(inside)) = (host.to_str(), inside.to_str()) else {
            continue;
        };
        if host.len() < 2 || host == inside {
            continue;
        }
        let mut out = String::with_capacity(text.len());
        let mut rest = text.as_str();
        while let Some(at) = rest.find(host) {
            let after = &rest[at + host.len()..];
            let whole = after
                .chars()
                .next()
                .is_none_or(|c| !(c.is_alphanumeric() || "-_.+@".contains(c)));
            out.push_str(&rest[..at]);
            out.push_str(if whole { inside } else { host });
            rest = after;
        }
        out.push_str(rest);
        text = out;
    }
    text
}

/// What a command needs, before the policy is asked.
pub struct ExecRequest {
    /// The project.
    pub project: Project,
    /// The dev shell's name (`--dev-shell`, else chock.zon, else `default`).
    pub dev_shell: String,
    /// The program and its arguments as given.
    pub argv: Vec<OsString>,
    /// The caller's working directory (used inside when it is in the workspace).
    pub cwd: PathBuf,
    /// Capture the streams (at most this many bytes each) instead of inheriting them.
    pub capture: Option<usize>,
}

/// The toolchain of a project, read (or not) before anything is decided.
pub struct ProjectToolchain {
    /// The dev shell, when the project has a flake.
    pub dev_shell: Option<DevShell>,
    /// The container image's tree, when chock.zon names one (then there is
    /// no dev shell).
    pub image: Option<chock_image::Tree>,
    /// Notices so far.
    pub notices: Vec<Notice>,
}

/// Reads the project's toolchain: the container image chock.zon names
/// (written into its tree first when needed), else its dev shell when it
/// has a flake.nix, built through chock-nix by `builder`'s rules unless it
/// is cached.
pub fn toolchain(
    project: &Project,
    dev_shell: &str,
    builder: &devshell::Builder<'_>,
) -> Result<ProjectToolchain, ExecError> {
    if let Some(container) = builder.policy.config().container() {
        let tree = crate::image::tree(container)?;
        let notices = if tree.written {
            let stats = tree.record.stats;
            vec![Notice::ImageWritten {
                reference: tree.record.reference.clone(),
                files: stats.files,
                bytes: stats.bytes,
                millis: tree.record.millis,
                dropped: stats.setid_dropped + stats.devices_dropped,
                rootfs: tree.rootfs.clone(),
            }]
        } else {
            Vec::new()
        };
        return Ok(ProjectToolchain {
            dev_shell: None,
            image: Some(tree),
            notices,
        });
    }
    if !project.dir.join("flake.nix").is_file() {
        return Ok(ProjectToolchain {
            dev_shell: None,
            image: None,
            notices: vec![Notice::NoFlake],
        });
    }
    let Some(shell) = devshell::load(&project.dir, dev_shell, &project.dev_shell_dir()?, builder)?
    else {
        return Ok(ProjectToolchain {
            dev_shell: None,
            image: None,
            notices: vec![Notice::NoDevShells],
        });
    };
    let notices = if shell.cached {
        Vec::new()
    } else {
        vec![Notice::DevShellRead {
            attribute: shell.attribute.clone(),
            paths: shell.store_paths.len(),
        }]
    };
    Ok(ProjectToolchain {
        dev_shell: Some(shell),
        image: None,
        notices,
    })
}

/// A command ready to run, once the policy allowed it.
pub struct Prepared {
    sandbox: Sandbox,
    command: Command,
    /// Notices for the person, in order.
    pub notices: Vec<Notice>,
}

/// Builds the sandbox and the command for `request`.
pub fn prepare(
    request: &ExecRequest,
    toolchain: ProjectToolchain,
    limits: Limits,
    write_execute: WriteExecute,
) -> Result<Prepared, ExecError> {
    let program_name = request.argv.first().ok_or(ExecError::NoProgram)?;
    // Read while the sandbox is prepared, not before it.
    let identity = crate::workspace::read_person_identity(&request.project.dir);
    let mut notices = toolchain.notices;
    let cache_dir = request.project.cache_dir()?;
    match cache::start(&cache_dir, CACHE_BOUND).map_err(|source| ExecError::Cache {
        path: cache_dir.clone(),
        source,
    })? {
        CacheStart::Created => notices.push(Notice::CacheCreated {
            dir: cache_dir.clone(),
        }),
        CacheStart::Emptied { bytes } => notices.push(Notice::CacheEmptied {
            bytes,
            bound: CACHE_BOUND,
        }),
        CacheStart::Kept => {}
    }
    let tool = match (&toolchain.dev_shell, &toolchain.image) {
        (Some(shell), _) => Toolchain::DevShell {
            store_paths: shell.store_paths.clone(),
            links: shell.links.clone(),
        },
        (None, Some(tree)) => Toolchain::Image {
            rootfs: tree.rootfs.clone(),
        },
        (None, None) => Toolchain::Host,
    };
    let layout = match &request.project.workspace {
        Some(view) => crate::workspace::fit(view, &cache_dir, &tool, TMP_BYTES)?,
        None => layout::resolve_project(
            &request.project.dir,
            &cache_dir,
            &request.project.lease_record()?,
            &tool,
            TMP_BYTES,
        )?,
    };
    let cwd = if request.cwd.starts_with(&layout.workspace) {
        request.cwd.clone()
    } else {
        layout.workspace.clone()
    };
    let base = match (&toolchain.dev_shell, &toolchain.image) {
        (Some(shell), _) => Some(shell.env.clone()),
        (None, Some(tree)) => Some(image_env(tree)),
        (None, None) => None,
    };
    let mut env = environment(base, &cwd);
    // The person's name and address, so an agent's commit is made as it is
    // everywhere else; HOME inside is the cache, so nothing else of their
    // git config (aliases, helpers, hooks) is there.
    for (name, value) in identity.finish() {
        env.entry(name).or_insert(value);
    }
    if layout.session.as_ref().is_some_and(|s| s.objects.is_some()) {
        env.insert(
            "GIT_ALTERNATE_OBJECT_DIRECTORIES".into(),
            crate::workspace::OBJECTS_MOUNT.into(),
        );
    }
    let program = locate(program_name, &env, &cwd, &layout)?;
    let command = Command {
        program,
        args: request.argv.clone(),
        env: env.into_iter().map(|(k, v)| (k.into(), v.into())).collect(),
        cwd,
        stdio: request
            .capture
            .map_or(Stdio::Inherit, |limit| Stdio::Capture { limit }),
    };
    let sandbox = Sandbox::new(layout, limits, write_execute)?;
    if !sandbox.placeholders().is_empty() {
        notices.push(Notice::Placeholders {
            made: sandbox.placeholders().to_vec(),
        });
    }
    Ok(Prepared {
        sandbox,
        command,
        notices,
    })
}

/// What a run left.
pub struct Ran {
    /// How the program ended, and its captured output.
    pub finished: Finished,
}

impl Prepared {
    /// The command that will run.
    pub fn command(&self) -> &Command {
        &self.command
    }

    /// The sandbox it runs in.
    pub fn sandbox(&self) -> &Sandbox {
        &self.sandbox
    }

    /// Gives the program a network through `router`: the resolver named in
    /// its `/etc/resolv.conf`, the relay, and the host's trust store
    /// (`SSL_CERT_FILE`, unless the dev shell set its own).
    pub fn with_router(mut self, router: crate::net::Router) -> Prepared {
        let env = &self.command.env;
        let files = crate::net::files(&|name| {
            env.iter()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.to_string_lossy().into_owned())
        });
        self.command
            .env
            .extend(files.env.iter().map(|(k, v)| (k.into(), v.into())));
        self.sandbox = self.sandbox.with_router(router, &files);
        self
    }

    /// The sandbox it runs in, to add to before it starts (a folder shown
    /// read-only, the network, a port dialer).
    pub fn sandbox_mut(&mut self) -> &mut Sandbox {
        &mut self.sandbox
    }

    /// Sets one variable of the program's environment, replacing one of
    /// the same name.
    pub fn set_env(&mut self, name: impl Into<OsString>, value: impl Into<OsString>) {
        let name = name.into();
        self.command.env.retain(|(k, _)| *k != name);
        self.command.env.push((name, value.into()));
    }

    /// Sends the program's stdout and stderr into one pipe the caller reads
    /// while it runs ([`Started::take_stream`]), instead of capturing them.
    pub fn stream_output(&mut self) {
        self.command.stdio = Stdio::Stream;
    }

    /// Runs the program, forwarding the terminal's signals to it, and waits.
    pub fn run(self) -> Result<Ran, ExecError> {
        let started = self.start()?;
        let forwarding = started.running.forward_signals();
        let ran = started.wait();
        drop(forwarding);
        ran
    }

    /// Speaks to the program through pipes ([`Started::take_pipes`])
    /// instead of the streams the request chose (an MCP server).
    pub fn piped(mut self) -> Prepared {
        self.command.stdio = Stdio::Pipe;
        self
    }

    /// Adds `env` to the program's environment (the secrets it was
    /// granted), replacing a variable of the same name.
    pub fn with_env(mut self, env: Vec<(OsString, OsString)>) -> Prepared {
        for (name, value) in env {
            self.set_env(name, value);
        }
        self
    }

    /// Gives the program `files` under `/run/chock/secrets` (the secrets it
    /// was granted as files; see [`Sandbox::give_secret_files`]).
    pub fn with_secret_files(
        mut self,
        files: Vec<crate::mounts::SecretFile>,
    ) -> Result<Prepared, ExecError> {
        if !files.is_empty() {
            self.sandbox.give_secret_files(files)?;
        }
        Ok(self)
    }

    /// Starts the program and returns at once; [`Started::signal`] cancels
    /// it, [`Started::wait`] collects it (for callers that run several
    /// commands, such as the tool server).
    pub fn start(self) -> Result<Started, ExecError> {
        let running = self.sandbox.spawn(&self.command)?;
        Ok(Started { running })
    }
}

/// A program running in its sandbox.
pub struct Started {
    running: crate::spawn::Running,
}

impl Started {
    /// Sends `signal` to the program's process group.
    pub fn signal(&self, signal: i32) -> Result<(), ExecError> {
        Ok(self.running.signal(signal)?)
    }

    /// The read end of the program's output, after [`Prepared::stream_output`] (once).
    pub fn take_stream(&mut self) -> Option<std::os::fd::OwnedFd> {
        self.running.take_stream()
    }

    /// The sandbox's port dialer, after [`Sandbox::with_dialer`] (once).
    pub fn take_dialer(&mut self) -> Option<crate::publish::Dialer> {
        self.running.take_dialer()
    }

    /// With [`Prepared::piped`], once: the program's stdin (to write) and stdout (to read).
    pub fn take_pipes(&mut self) -> Option<(std::os::fd::OwnedFd, std::os::fd::OwnedFd)> {
        self.running.take_pipes()
    }

    /// With [`Prepared::piped`], once: the read end of the program's stderr.
    pub fn take_stderr(&mut self) -> Option<std::os::fd::OwnedFd> {
        self.running.take_stderr()
    }

    /// A handle that signals the program from another thread while
    /// [`Started::wait`] runs.
    pub fn signal_handle(&self) -> Result<crate::spawn::SignalHandle, ExecError> {
        Ok(self.running.signal_handle()?)
    }

    /// Waits for the program to end.
    pub fn wait(self) -> Result<Ran, ExecError> {
        let finished = self.running.wait()?;
        Ok(Ran { finished })
    }
}

/// Bytes an unprivileged user may still write on `dir`'s file system.
pub(crate) fn free_space(dir: &Path) -> Option<u64> {
    let stat = nix::sys::statvfs::statvfs(dir).ok()?;
    Some(stat.blocks_available().saturating_mul(stat.fragment_size()))
}

/// What an image's configuration sets, less what describes a container
/// rather than a toolchain (`HOME`, `TMPDIR`... as for a dev shell), with
/// the usual PATH when it sets none.
fn image_env(tree: &chock_image::Tree) -> BTreeMap<String, String> {
    let mut env: BTreeMap<String, String> = tree
        .record
        .env
        .iter()
        .filter(|(name, _)| !devshell::SKIPPED.contains(&name.as_str()))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    env.entry("PATH".into()).or_insert_with(|| HOST_PATH.into());
    env
}

/// The program's environment: the toolchain's variables (or a plain PATH),
/// then the sandbox's own directories, then a few caller variables that
/// only say how to talk to the person. Nothing else of the caller's
/// environment reaches the program, so no key in it leaks.
fn environment(base: Option<BTreeMap<String, String>>, cwd: &Path) -> BTreeMap<String, String> {
    let mut env: BTreeMap<String, String> =
        base.unwrap_or_else(|| BTreeMap::from([("PATH".to_owned(), HOST_PATH.to_owned())]));
    for name in PASSED {
        if let Ok(value) = std::env::var(name) {
            env.insert(name.into(), value);
        }
    }
    for (name, value) in std::env::vars().filter(|(k, _)| k.starts_with("LC_")) {
        env.insert(name, value);
    }
    let user = layout::caller().user.clone();
    env.insert("USER".into(), user.clone());
    env.insert("LOGNAME".into(), user);
    env.insert("HOME".into(), CACHE_MOUNT.into());
    env.insert("XDG_CACHE_HOME".into(), format!("{CACHE_MOUNT}/.cache"));
    env.insert("TMPDIR".into(), TMP_MOUNT.into());
    env.insert("PWD".into(), cwd.to_string_lossy().into_owned());
    env.insert("CHOCK_SANDBOX".into(), "1".into());
    env
}

/// Whether the sandbox shows `path` (a host path) at the same place.
fn visible(path: &Path, layout: &Layout) -> bool {
    if path.starts_with(&layout.workspace) {
        return true;
    }
    match &layout.store {
        StoreView::Closure { entries, .. } => entries.iter().any(|e| path.starts_with(&e.path)),
        StoreView::Image { entries, .. } => entries.iter().any(|e| path.starts_with(&e.entry.path)),
        StoreView::Host { store_dir, system } => {
            store_dir.as_ref().is_some_and(|s| path.starts_with(s))
                || system.iter().any(|e| path.starts_with(&e.path))
        }
    }
}

fn is_executable_file(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// Where the program is, as seen inside: a path with a slash is taken as
/// given (relative to the working directory); a bare name is looked up on
/// the sandbox's PATH, in directories the sandbox shows.
fn locate(
    name: &OsString,
    env: &BTreeMap<String, String>,
    cwd: &Path,
    layout: &Layout,
) -> Result<PathBuf, ExecError> {
    let given = Path::new(name);
    if given.components().count() > 1 || given.is_absolute() {
        return Ok(if given.is_absolute() {
            given.to_path_buf()
        } else {
            cwd.join(given)
        });
    }
    let path_var = env.get("PATH").cloned().unwrap_or_default();
    let found = path_var
        .split(':')
        .map(Path::new)
        .filter(|dir| dir.is_absolute() && !dir.components().any(|c| c == Component::ParentDir))
        .map(|dir| dir.join(given))
        .find(|candidate| {
            visible(candidate, layout)
                && match &layout.store {
                    // Resolved inside the image, as the sandbox will.
                    StoreView::Image { rootfs, .. }
                        if !candidate.starts_with(&layout.workspace) =>
                    {
                        chock_image::executable(rootfs, candidate)
                    }
                    _ => is_executable_file(candidate),
                }
        });
    found.ok_or_else(|| ExecError::NotFound {
        name: name.to_string_lossy().into_owned(),
        path: path_var,
    })
}

/// Loads every policy layer for `project` (its chock.zon, the operator's
/// config.zon, the organisation's bundles and any named ones).
pub fn load_policy(
    project: &Project,
    org_bundles: Vec<PathBuf>,
) -> Result<Policy, chock_policy::PolicyError> {
    Policy::load(&chock_policy::LoadOptions::from_env(
        &project.dir,
        org_bundles,
    )?)
}

/// The decision log, rotated as the operator's config.zon says.
pub fn open_log(policy: &Policy) -> Result<Log, chock_log::LogError> {
    Log::configured(policy.config())
}

/// The dev shell a command uses: `--dev-shell`, else chock.zon's
/// `.nix.dev_shell`, else `default`.
pub fn dev_shell_name(flag: Option<String>, policy: &Policy) -> String {
    flag.or_else(|| policy.config().nix_settings().dev_shell)
        .unwrap_or_else(|| crate::devshell::DEFAULT_SHELL.into())
}

/// What `sandbox.jit` answers, for `chock doctor` (not a decision, so not logged).
pub fn write_execute_state(policy: &Policy) -> WriteExecute {
    match chock_gate::start::at_start(policy, AGENT_KIND, &StartQuestion::SandboxJit) {
        Ok(answer) if answer.granted => WriteExecute::Allowed,
        _ => WriteExecute::Refused,
    }
}

/// The router a command of `project` gets under `policy` when its
/// `network` is filtered ([`crate::netmode::session`] for a foreground
/// command, [`crate::netmode::background`] for a background one): its names and
/// connections decided through the gate on `route`, a question going to
/// `asker`, each answer logged to `log` under the agent name `agent`.
/// Hand it to [`Prepared::with_router`].
pub fn router<P>(
    network: crate::netmode::Network,
    policy: P,
    log: &Log,
    asker: std::sync::Arc<dyn chock_policy::Asker + Send + Sync>,
    (route, agent): (Route, &str),
    project: &Project,
) -> Result<Option<crate::net::Router>, ExecError>
where
    P: std::ops::Deref<Target = Policy> + Send + Sync + 'static,
{
    if network != crate::netmode::Network::Filtered {
        return Ok(None);
    }
    let gate = crate::net::NetGate::new(
        policy,
        log.clone(),
        asker,
        (
            route,
            project.dir.to_string_lossy().into_owned(),
            agent.to_owned(),
        ),
    );
    crate::net::Router::new(std::sync::Arc::new(gate))
        .map(Some)
        .map_err(|e| ExecError::Sandbox(SandboxError::Unsupported(e.to_string())))
}

/// The tool a command is asked through, in the policy key and the log.
pub const TOOL: &str = "run_command";
/// The asking agent's kind for a command run through `chock exec`.
pub const AGENT_KIND: &str = "main";

/// What the policy answered for one command.
pub struct Planned {
    /// The action that decided: the first of the strictest answer among the
    /// command's acts (the program's own `exec.*` action when all allow).
    pub action: String,
    /// Its answer, and what gave it.
    pub verdict: Verdict,
    /// Who gave the answer: a rule, a person at the terminal, or nobody
    /// (an ask with no terminal to ask at).
    pub answered_by: chock_log::AnsweredBy,
    /// Ready to run when the answer is allow; `None` when refused.
    pub prepared: Option<Prepared>,
    /// Notices for the person (also when refused).
    pub notices: Vec<Notice>,
    /// Whether the command holds `git.push` (allowed, when it runs): its
    /// caller may give it a credential for the push.
    pub pushes: bool,
}

/// Names every act of the command, decides each and `sandbox.jit`, logs
/// each, and prepares the command when all go ahead. An act the rules ask
/// about is put to `asker` (a terminal, or nobody, whose silence refuses),
/// and only when no act of the command is refused outright: nobody is
/// asked about a command that cannot run anyway. A dev shell that must be
/// built first is decided as `chock build` decides it, `asker` answering
/// what the rules leave open, and the flake inputs it needs that are
/// missing from the store are fetched by `inputs` when given.
pub fn plan(
    request: &ExecRequest,
    policy: &Policy,
    log: &Log,
    asker: &dyn chock_policy::Asker,
    inputs: Option<&dyn chock_nix::InputFetcher>,
) -> Result<Planned, ExecError> {
    let builder = devshell::Builder {
        inputs,
        ..devshell_builder(policy, log, asker, ROUTE)
    };
    let named = name_program(request, &builder)?;
    let verdicts: Vec<Verdict> = named
        .acts
        .iter()
        .map(|act| policy.decide(&Key::new(act.action.clone()).with_tool(TOOL), Reading::Act))
        .collect();
    // Nobody is asked about a command an act of which the rules refuse.
    let refused = |verdict: &Verdict| chock_gate::refused_by_rules(ROUTE, verdict);
    let asker: &dyn chock_policy::Asker = if verdicts.iter().any(refused) {
        &chock_policy::Nobody
    } else {
        asker
    };
    let mut entries = Vec::new();
    let mut ended = Vec::new();
    for (act, verdict) in named.acts.iter().zip(verdicts) {
        let settled = chock_gate::settle(ROUTE, &verdict, asker, || {
            question(request, &act.action, &verdict)
        });
        entries.push(settled.entry(
            ROUTE,
            request.project.dir.to_string_lossy(),
            &exec_key(&act.action),
            &verdict,
            act.subject.clone(),
        ));
        ended.push((act.action.clone(), verdict, settled));
    }
    let Some((action, verdict, settled)) =
        chock_gate::answering_act(ROUTE, ended, |(_, verdict, settled)| (verdict, *settled))
    else {
        return Err(ExecError::NoProgram);
    };
    let pushes = named.acts.iter().any(|act| act.action == "git.push");
    if !settled.goes() {
        let mut all = named.toolchain.notices;
        all.extend(record(log, &entries));
        return Ok(Planned {
            action,
            verdict,
            answered_by: settled.answered_by,
            prepared: None,
            notices: all,
            pushes,
        });
    }
    // The command's lines and `sandbox.jit`'s go to the log together (the
    // command's alone when `sandbox.jit` cannot be named).
    let jit = sandbox_jit(policy);
    if let Ok(jit) = &jit {
        entries.push(entry(request, ROUTE, "sandbox.jit", &jit.verdict, None));
    }
    let mut notices: Vec<Notice> = record(log, &entries).into_iter().collect();
    let jit = jit?;
    let mut prepared = prepare_decided(request, named.toolchain, policy, jit)?;
    notices.append(&mut prepared.notices);
    notices.extend(reach_devices(&mut prepared, request, policy, log, ROUTE));
    Ok(Planned {
        action,
        verdict,
        answered_by: settled.answered_by,
        prepared: Some(prepared),
        notices,
        pushes,
    })
}

/// The route `chock exec` logs under.
pub const ROUTE: Route = Route::Exec;

/// How a command's dev shell is built when it is not cached: by `policy`,
/// `asker` answering what it leaves open, logged under `route` as asked by
/// the main agent through [`TOOL`] (the key every `exec.*` line carries).
/// A flake input missing from the store stops the build until the caller
/// gives a fetcher ([`devshell::Builder::fetching_inputs`]).
pub fn devshell_builder<'a>(
    policy: &'a Policy,
    log: &'a Log,
    asker: &'a dyn chock_policy::Asker,
    route: Route,
) -> devshell::Builder<'a> {
    devshell::Builder {
        policy,
        log,
        asker,
        route,
        who: chock_nix::Who {
            agent_kind: AGENT_KIND.into(),
            tool: Some(TOOL.into()),
            model: None,
        },
        inputs: None,
    }
}

/// A command named act by act, with the toolchain that named it.
pub struct Named {
    /// The program as given (`argv[0]`).
    pub program: String,
    /// Every act the command holds, in order: the program's `exec.*`
    /// action first, then what it runs in turn (`sh -c TEXT` read per
    /// segment, wrappers looked through, `git.*` for git), as
    /// `chock_shell::naming` names them for every route.
    pub acts: Vec<chock_shell::naming::Named>,
    /// The toolchain read to name it (the dev shell's closure decides
    /// `exec.devshell.*`); [`prepare_allowed`] takes it on.
    pub toolchain: ProjectToolchain,
}

/// Reads the project's toolchain (building a changed dev shell through
/// chock-nix, which decides `nix.build.*` and the hosts it reaches with
/// `builder`) and names every act of the command, deciding nothing else:
/// for callers that decide (and ask) each themselves, such as the tool
/// server, before [`prepare_allowed`].
pub fn name_program(
    request: &ExecRequest,
    builder: &devshell::Builder<'_>,
) -> Result<Named, ExecError> {
    let program = request
        .argv
        .first()
        .ok_or(ExecError::NoProgram)?
        .to_string_lossy()
        .into_owned();
    let toolchain = toolchain(&request.project, &request.dev_shell, builder)?;
    let store = layout::store_dir();
    let image_dirs = toolchain
        .image
        .as_ref()
        .map(|tree| crate::image::shown_dirs(&tree.rootfs, &request.project.dir))
        .unwrap_or_default();
    let paths = toolchain
        .dev_shell
        .as_ref()
        .map(|s| s.store_paths.as_slice())
        .unwrap_or_default();
    // The command runs with the sandbox's environment: HOME is the cache,
    // and no CDPATH is set.
    let place = chock_shell::naming::Place {
        project: &request.project.dir,
        home: Some(Path::new(CACHE_MOUNT)),
        cdpath: false,
        store_dir: &store,
        dev_shell_paths: paths,
        image_dirs: &image_dirs,
        confined: true,
    };
    let acts = chock_shell::naming::name_argv(&request.argv, &request.cwd, &place);
    Ok(Named {
        program,
        acts,
        toolchain,
    })
}

/// Prepares a command whose `exec.*` action was allowed (by the policy or
/// a person): decides and logs `sandbox.jit` under `route`, applies the
/// machine's floor and the policy's limits, and builds the sandbox. The
/// returned command's notices hold every notice for the person, in order.
pub fn prepare_allowed(
    request: &ExecRequest,
    toolchain: ProjectToolchain,
    policy: &Policy,
    log: &Log,
    route: Route,
) -> Result<Prepared, ExecError> {
    let jit = sandbox_jit(policy)?;
    let logged = record(
        log,
        &[entry(request, route, "sandbox.jit", &jit.verdict, None)],
    );
    let mut prepared = prepare_decided(request, toolchain, policy, jit)?;
    prepared.notices.splice(0..0, logged);
    let devices = reach_devices(&mut prepared, request, policy, log, route);
    prepared.notices.extend(devices);
    Ok(prepared)
}

/// Binds into `prepared`'s sandbox each device the project names that the
/// policy allows on `route` and that sysfs shows now (so one plugged in
/// since the last command is there, and one unplugged is not), logs each
/// decision, and says why each other named device is not bound.
fn reach_devices(
    prepared: &mut Prepared,
    request: &ExecRequest,
    policy: &Policy,
    log: &Log,
    route: Route,
) -> Vec<Notice> {
    let reached = crate::devices::reach(
        policy,
        route,
        &request.project.dir.to_string_lossy(),
        exec_key,
        &crate::devices::Roots::default(),
    );
    let mut notices = Vec::new();
    if !reached.entries.is_empty() {
        notices.extend(record(log, &reached.entries));
    }
    notices.extend(
        reached
            .notes
            .into_iter()
            .map(|line| Notice::Device { line }),
    );
    prepared.sandbox.give_devices(reached.granted);
    notices
}

/// [`prepare_allowed`] once `sandbox.jit` is decided and logged.
fn prepare_decided(
    request: &ExecRequest,
    toolchain: ProjectToolchain,
    policy: &Policy,
    jit: chock_gate::start::StartAnswer,
) -> Result<Prepared, ExecError> {
    let (write_execute, jit_notice) = if jit.granted {
        (
            WriteExecute::Allowed,
            Some(Notice::WriteExecuteOff {
                rule: jit.verdict.decided_by.rule,
            }),
        )
    } else {
        (WriteExecute::Refused, None)
    };
    // One look at the machine serves both the floor and the policy's limits.
    let machine = chock_config::Machine::detect();
    let project_limits = policy.config().limits_on(&machine);
    let limits = Limits::for_machine(&machine).lowered(
        Some(project_limits.processes),
        Some(project_limits.memory_bytes),
    );
    let mut prepared = prepare(request, toolchain, limits, write_execute)?;
    prepared.notices.splice(0..0, jit_notice);
    Ok(prepared)
}

/// `sandbox.jit`, read once per command: only allow lifts the rule.
fn sandbox_jit(policy: &Policy) -> Result<chock_gate::start::StartAnswer, ExecError> {
    chock_gate::start::at_start(policy, AGENT_KIND, &StartQuestion::SandboxJit).map_err(|e| {
        ExecError::Sandbox(SandboxError::Unsupported(format!(
            "sandbox.jit could not be named: {e}"
        )))
    })
}

/// One decision-log line, as the gate ends the act with nobody to ask
/// (`chock exec` asks nobody about a program, and `sandbox.jit` is read
/// before anyone could be).
fn entry(
    request: &ExecRequest,
    route: Route,
    action: &str,
    verdict: &Verdict,
    subject: Option<&str>,
) -> chock_log::Entry {
    let settled = chock_gate::settle(route, verdict, &chock_policy::Nobody, || {
        question(request, action, verdict)
    });
    settled.entry(
        route,
        request.project.dir.to_string_lossy(),
        &exec_key(action),
        verdict,
        subject.map(str::to_owned),
    )
}

/// The key `chock exec` decides `action` under.
fn exec_key(action: &str) -> Key {
    Key {
        agent_kind: AGENT_KIND.into(),
        model: None,
        tool: Some(TOOL.into()),
        action: action.into(),
    }
}

/// The question put to the person about one act of the command.
fn question(request: &ExecRequest, action: &str, verdict: &Verdict) -> chock_policy::Question {
    let line: Vec<_> = request.argv.iter().map(|a| a.to_string_lossy()).collect();
    let by = &verdict.decided_by;
    let decided = match (&by.rule, &by.file, by.line) {
        (Some(rule), Some(file), Some(line)) => format!("{rule} ({}:{line})", file.display()),
        (Some(rule), _, _) => format!("{rule} ({})", by.layer.describe()),
        _ => "no rule names it".into(),
    };
    chock_policy::Question {
        action: action.into(),
        decision: verdict.decision,
        summary: format!("chock exec wants {action}"),
        detail: vec![
            format!("command: {}", line.join(" ")),
            format!("answered {} by {decided}", verdict.decision),
        ],
        rules: verdict.suggestion.iter().cloned().collect(),
    }
}

/// Writes `entries` to the log in one append (one open and one turn of
/// its lock for all of them); a notice when they could not be written.
fn record(log: &Log, entries: &[chock_log::Entry]) -> Option<Notice> {
    match log.append_all(entries) {
        Some(_) => None,
        None => Some(Notice::LogNotWritten {
            dir: log.dir().to_path_buf(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_folders_are_named_as_the_sandbox_shows_them_and_only_whole() {
        let names = [
            (PathBuf::from("/s/ws/tree"), PathBuf::from("/home/p/proj")),
            (PathBuf::from("/s/ws"), PathBuf::from("/run/other")),
        ];
        assert_eq!(
            as_seen_inside(
                "at /s/ws/tree/src/a.c, /s/ws/tree2 and /s/ws/tree; /s/ws",
                &names
            ),
            "at /home/p/proj/src/a.c, /run/other/tree2 and /home/p/proj; /run/other"
        );
        assert_eq!(as_seen_inside("/s/wsx", &names), "/s/wsx");
    }

    #[test]
    fn the_caller_environment_does_not_leak() {
        let env = environment(None, Path::new("/w"));
        assert!(env.keys().all(|k| {
            [
                "PATH",
                "HOME",
                "XDG_CACHE_HOME",
                "TMPDIR",
                "PWD",
                "CHOCK_SANDBOX",
                "USER",
                "LOGNAME",
            ]
            .contains(&k.as_str())
                || PASSED.contains(&k.as_str())
                || k.starts_with("LC_")
        }));
        assert_eq!(env.get("HOME").map(String::as_str), Some(CACHE_MOUNT));
    }
}
