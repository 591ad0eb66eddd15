//! The session workspace: the copy of the project an agent works on, whose
//! work reaches the person's tree only through an approved apply.
//!
//! In a git project it is a repository of its own under Chock's state
//! directory (`<state>/workspaces/<project>/<session>/tree`), detached at the
//! project's `HEAD`, with its own index, refs and git directory, and an
//! `objects/info/alternates` that names the person's object directory, so
//! nothing is copied but the checked-out files. The person's `.git` is never
//! shown inside a sandbox: its objects are bound read-only at
//! [`OBJECTS_MOUNT`], and every hook, config or ref the agent writes lands in
//! the session's own git directory, whose hooks, config and info are held
//! read-only like a project's. Chock reads the session's repository on the
//! host only with hooks, fsmonitor and pager off.
//!
//! A project that is not a git repository gets an overlay instead (see
//! [`overlay`]): the project is the lower layer, and every write lands in an
//! upper layer under the workspace's folder.
//!
//! A sandbox given a workspace ([`View`]) shows the tree at the project's own
//! path, so paths mean what they meant; see [`apply`] for how its work lands.

pub mod apply;
mod files;
mod frozen;
mod git;
mod history;
pub mod journal;
mod land;
mod merged;
mod mount;
mod overlay;
mod view;

use std::fs::File;
use std::path::{Path, PathBuf};

use chock_gate::Route;
use chock_log::Log;
use chock_policy::workspace::{Bind, BindMode, WorkspaceSettings};
use chock_policy::{Decision, Key, Policy, Reading, Verdict};
use serde::{Deserialize, Serialize};

pub(crate) use merged::OwnWork;
pub use merged::{Merged, mount as mount_overlay};
pub(crate) use mount::{Anchored, anchor, plan_overlay, plan_session};
pub(crate) use view::fit;
pub use view::{BindMount, Cover, Layers, OBJECTS_MOUNT, View};

use crate::project::{Project, ProjectError};
use git::Git;

/// The session's commit parks here in the person's repository.
pub const REF_PREFIX: &str = "refs/chock/";
/// The agent kind a workspace's start questions are asked as.
const AGENT_KIND: &str = "main";

/// Why a workspace could not be made, read or applied.
#[derive(Debug, thiserror::Error)]
pub enum WorkspaceError {
    #[error("`{command}` failed in {}: {stderr}", dir.display())]
    Git {
        command: String,
        dir: PathBuf,
        stderr: String,
    },
    #[error("{what} {}: {source}", path.display())]
    Io {
        what: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// Refused, with the sentence saying why and what to do.
    #[error("{0}")]
    Refused(String),
    #[error(transparent)]
    Log(#[from] chock_log::LogError),
    #[error(transparent)]
    Project(#[from] ProjectError),
}

pub(crate) fn io(what: &'static str, path: &Path) -> impl FnOnce(std::io::Error) -> WorkspaceError {
    let path = path.to_path_buf();
    move |source| WorkspaceError::Io { what, path, source }
}

/// A `deny_read` file inside the workspace, by the identity it had when
/// the workspace was made (before any program of the session ran).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Covered {
    pub rel: PathBuf,
    pub dev: u64,
    pub ino: u64,
    /// Where it is named (`chock.zon:12`), for the notice a reader finds.
    pub named_in: String,
}

/// A bind as made, after `workspace.bind.<name>` was answered.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MadeBind {
    pub name: String,
    pub mode: String,
    /// The person's own path is shown writable (`write` with the fold at allow).
    pub writable: bool,
    /// A `copy` bind the apply writes back (the fold at allow).
    pub write_back: bool,
}

/// What a workspace is, kept beside it as `meta.json`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Meta {
    pub session: String,
    pub project: PathBuf,
    /// The commit the workspace holds changes against: `HEAD` when it was
    /// made, then each applied session commit.
    pub base: String,
    pub created_ms: u64,
    /// An overlay's last apply that wrote into the project: from then on
    /// the project holds the session's work so far, and only a change of
    /// the person's after it is a conflict.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub applied_ms: Option<u64>,
    pub allow_dirty: bool,
    /// The person's object directory, shown read-only inside.
    pub host_objects: PathBuf,
    pub deny_read: Vec<Covered>,
    pub binds: Vec<MadeBind>,
    /// An overlay over a project that is not a git repository: no commit,
    /// no objects; the work is the upper layer.
    #[serde(default)]
    pub overlay: bool,
    /// The tree is not yet checked out (made, its index, binds and covers
    /// in place, the files still to write: [`SessionWorkspace::finish`]).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub unfilled: bool,
}

/// One session's workspace, held (locked) by this process.
pub struct SessionWorkspace {
    /// `<state>/workspaces/<project id>/<session>`.
    pub dir: PathBuf,
    pub meta: Meta,
    _lock: nix::fcntl::Flock<File>,
}

/// What a workspace holds that the person's repository does not.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Pending {
    /// Files changed in the tree and not yet committed there.
    pub uncommitted: Vec<String>,
    /// Commits made in the workspace since its base.
    pub commits: usize,
}

impl Pending {
    pub fn is_empty(&self) -> bool {
        self.uncommitted.is_empty() && self.commits == 0
    }
}

impl std::fmt::Display for Pending {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.is_empty() {
            return write!(f, "nothing unapplied");
        }
        write!(
            f,
            "{} file{} changed and not committed, {} commit{} not applied",
            self.uncommitted.len(),
            if self.uncommitted.len() == 1 { "" } else { "s" },
            self.commits,
            if self.commits == 1 { "" } else { "s" }
        )
    }
}

/// Where every workspace lives: `<state>/workspaces` (the state directory
/// the decision log is in).
pub fn root() -> Result<PathBuf, WorkspaceError> {
    Ok(chock_log::state_dir_from_env()?.join("workspaces"))
}

/// Whether `name` can name a session (and `refs/chock/<name>`): 1 to 64 of
/// `a-z A-Z 0-9 - _`, not starting with `-`.
pub fn valid_session(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && !name.starts_with('-')
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// A fresh session name: `<prefix>-<UTC date and time>-<4 hex digits>`.
pub fn new_session(prefix: &str) -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    let salt = sha2::Digest::finalize(sha2::Digest::chain_update(
        <sha2::Sha256 as sha2::Digest>::new(),
        format!("{}{}", now.as_nanos(), std::process::id()),
    ));
    format!(
        "{prefix}-{}-{}",
        now.as_secs(),
        hex::encode(salt.get(..2).unwrap_or_default())
    )
}

/// The time now in milliseconds since the epoch, rounded up: an entry
/// changed before the call has a change time no later than it, even one
/// changed earlier within the same millisecond (the overlay's apply reads
/// a change time after a workspace's time as the person's change).
pub(crate) fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| {
            u64::try_from(d.as_nanos().div_ceil(1_000_000)).unwrap_or(u64::MAX)
        })
}

fn lock(dir: &Path) -> Result<Option<nix::fcntl::Flock<File>>, WorkspaceError> {
    lock_file(&dir.join("lock"))
}

/// Takes the lock file `path` exclusively, or `None` while another holds it.
pub(crate) fn lock_file(path: &Path) -> Result<Option<nix::fcntl::Flock<File>>, WorkspaceError> {
    let path = path.to_path_buf();
    let file = File::options()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(io("opening the lock", &path))?;
    match nix::fcntl::Flock::lock(file, nix::fcntl::FlockArg::LockExclusiveNonblock) {
        Ok(held) => Ok(Some(held)),
        Err((_, nix::errno::Errno::EWOULDBLOCK)) => Ok(None),
        Err((_, errno)) => Err(WorkspaceError::Io {
            what: "locking",
            path,
            source: errno.into(),
        }),
    }
}

fn read_meta(dir: &Path) -> Result<Meta, WorkspaceError> {
    let path = dir.join("meta.json");
    let text = std::fs::read(&path).map_err(io("reading", &path))?;
    serde_json::from_slice(&text).map_err(|e| {
        WorkspaceError::Refused(format!(
            "{} is not a workspace Chock can read ({e}); remove it with `chock workspace clear`",
            path.display()
        ))
    })
}

/// What a person is told when a workspace is made or used.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WorkspaceNotice {
    Made {
        session: String,
        dir: PathBuf,
    },
    /// The project had uncommitted work the workspace does not hold.
    DirtyLeftOut {
        files: usize,
    },
    /// Uncommitted work copied in (`--allow-dirty`).
    DirtyCopied {
        files: usize,
    },
    /// A bind the rules kept out, or made read-only.
    Bind {
        name: String,
        how: String,
    },
    /// `--allow-dirty` given for a workspace that was already made.
    Existing {
        session: String,
    },
    /// The project is no git repository: the workspace is an overlay.
    Overlay,
}

impl std::fmt::Display for WorkspaceNotice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            WorkspaceNotice::Made { session, dir } => write!(
                f,
                "made the workspace {session} ({}): commands run on it, and its work reaches your tree only through `chock apply`",
                dir.display()
            ),
            WorkspaceNotice::DirtyLeftOut { files } => write!(
                f,
                "the project has {files} uncommitted file{} that the workspace does not hold (it holds the committed state); pass --allow-dirty to copy them in",
                if *files == 1 { "" } else { "s" }
            ),
            WorkspaceNotice::DirtyCopied { files } => write!(
                f,
                "copied {files} uncommitted file{} of the project into the workspace (--allow-dirty)",
                if *files == 1 { "" } else { "s" }
            ),
            WorkspaceNotice::Bind { name, how } => write!(f, "workspace bind {name}: {how}"),
            WorkspaceNotice::Overlay => write!(
                f,
                "the project is not a git repository, so the workspace is an overlay over it: it shows the project as it is now, and every write lands in the workspace until `chock apply` writes it into the project"
            ),
            WorkspaceNotice::Existing { session } => write!(
                f,
                "the workspace {session} was made earlier, so --allow-dirty copied nothing (it copies only into a workspace being made); `chock workspace clear` removes it"
            ),
        }
    }
}

/// How a workspace is asked for.
pub struct Request<'a> {
    pub project: &'a Project,
    pub session: &'a str,
    pub allow_dirty: bool,
    pub policy: &'a Policy,
    pub log: &'a Log,
    pub route: Route,
}

impl SessionWorkspace {
    /// The directory of `session`'s workspace for `project`.
    pub fn dir_of(project: &Project, session: &str) -> Result<PathBuf, WorkspaceError> {
        Ok(root()?.join(&project.id).join(session))
    }

    /// Opens the workspace `request.session` names, making it when it does
    /// not exist, its tree written whole; refused while another process
    /// holds it.
    pub fn open_or_make(
        request: &Request<'_>,
    ) -> Result<(SessionWorkspace, Vec<WorkspaceNotice>), WorkspaceError> {
        let (mut held, mut notices) = Self::open_or_start(request)?;
        notices.extend(held.finish(request)?);
        Ok((held, notices))
    }

    /// [`open_or_make`](Self::open_or_make) with the tree's files left to
    /// write: everything a sandbox and the file tools check is in place
    /// (the repository and its index, the binds, every `deny_read` cover
    /// by identity, [`view`](Self::view) is final), and the checkout, the
    /// costly part, is [`finish`](Self::finish)'s, before any use of the
    /// tree (a tool server answers `initialize` meanwhile).
    pub fn open_or_start(
        request: &Request<'_>,
    ) -> Result<(SessionWorkspace, Vec<WorkspaceNotice>), WorkspaceError> {
        if !valid_session(request.session) {
            return Err(WorkspaceError::Refused(format!(
                "`{}` cannot name a workspace: use 1 to 64 letters, digits, `-` or `_`",
                request.session
            )));
        }
        let dir = Self::dir_of(request.project, request.session)?;
        if dir.join("meta.json").is_file() {
            let held = Self::open_dir(&dir)?;
            let notices = if request.allow_dirty {
                vec![WorkspaceNotice::Existing {
                    session: request.session.to_owned(),
                }]
            } else {
                Vec::new()
            };
            return Ok((held, notices));
        }
        Self::make(request, &dir)
    }

    /// Opens the workspace at `dir` (one [`list`] names), holding it.
    pub fn open_dir(dir: &Path) -> Result<SessionWorkspace, WorkspaceError> {
        let held = lock(dir)?.ok_or_else(|| {
            WorkspaceError::Refused(format!(
                "the workspace {} is in use by a running session; wait for it to end",
                dir.display()
            ))
        })?;
        Ok(SessionWorkspace {
            dir: dir.to_path_buf(),
            meta: read_meta(dir)?,
            _lock: held,
        })
    }

    /// The `deny_read` files, relative to the tree: never read, never
    /// carried.
    fn denied(&self) -> Vec<&Path> {
        self.meta
            .deny_read
            .iter()
            .map(|c| c.rel.as_path())
            .collect()
    }

    /// The tree the agent works on (an overlay's upper layer: its changes).
    pub fn tree(&self) -> PathBuf {
        if self.meta.overlay {
            return self.upper();
        }
        self.dir.join("tree")
    }

    fn git_dir(&self) -> PathBuf {
        self.tree().join(".git")
    }

    pub(crate) fn git(&self) -> Git {
        Git::session(&self.git_dir(), &self.tree())
    }

    fn save(&self) -> Result<(), WorkspaceError> {
        let path = self.dir.join("meta.json");
        let text = serde_json::to_vec_pretty(&self.meta)
            .map_err(|e| WorkspaceError::Refused(format!("cannot write the workspace: {e}")))?;
        let temp = self.dir.join("meta.json.new");
        std::fs::write(&temp, text).map_err(io("writing", &temp))?;
        std::fs::rename(&temp, &path).map_err(io("writing", &path))
    }

    fn make(
        request: &Request<'_>,
        dir: &Path,
    ) -> Result<(SessionWorkspace, Vec<WorkspaceNotice>), WorkspaceError> {
        let project = &request.project.dir;
        let host = Git::host(project);
        // One call: the top of the work tree, the common git directory
        // and HEAD's commit (it fails outside a repository or before the
        // first commit, which a second look tells apart).
        let found = host.output(
            [
                "rev-parse",
                "--path-format=absolute",
                "--show-toplevel",
                "--git-common-dir",
                "HEAD^{commit}",
            ],
            None,
        )?;
        let text = found.text();
        let lines: Vec<&str> = text.lines().collect();
        let (true, [top, common, base]) = (found.ok, lines.as_slice()) else {
            let repository = host.output(["rev-parse", "--is-inside-work-tree"], None)?;
            if repository.ok {
                return Err(WorkspaceError::Refused(format!(
                    "the repository {} has no commit yet, and a workspace starts from HEAD; commit once first",
                    project.display()
                )));
            }
            return Self::make_overlay(request, dir);
        };
        let (top, common, base) = (PathBuf::from(top), PathBuf::from(common), base.to_string());
        if top.canonicalize().ok().as_deref() != Some(project.as_path()) {
            return Err(WorkspaceError::Refused(format!(
                "the project {} is inside the repository {}, and a workspace holds a whole repository; run Chock from {}",
                project.display(),
                top.display(),
                top.display()
            )));
        }
        let host_objects = common
            .join("objects")
            .canonicalize()
            .map_err(io("reading the object directory", &common.join("objects")))?;
        let settings = request.policy.workspace();
        check_deny_read(&settings, project)?;
        let mut workspace = Self::start(request, dir, base, host_objects, false)?;
        let made = workspace.fill(request, &settings);
        Self::made(workspace, made, request, dir)
    }

    /// Writes the tree's files when they are not yet written (a workspace
    /// [`open_or_start`](Self::open_or_start) made, or one whose checkout
    /// was stopped): the checkout (`deny_read` files and binds, already
    /// in place, left as they are), then the person's uncommitted work
    /// when `--allow-dirty` asked for it. What to tell.
    pub fn finish(
        &mut self,
        request: &Request<'_>,
    ) -> Result<Vec<WorkspaceNotice>, WorkspaceError> {
        if !self.meta.unfilled {
            return Ok(Vec::new());
        }
        let tree = self.tree();
        // Every entry of the index but the skip-worktree ones (the
        // deny_read files, each already held by identity), each file's
        // stat data written into the index as it is checked out (`-u`):
        // without it every later `git status` or `git add -A` of the
        // session hashes the whole tree again, as `read-tree` left no
        // stat data to compare with.
        self.git().run(["checkout-index", "-u", "-a", "-f", "-q"])?;
        let mut notices = Vec::new();
        let dirty = dirty_files(&Git::host(&request.project.dir))?;
        if !dirty.is_empty() {
            if self.meta.allow_dirty {
                let denied = self.denied();
                for rel in &dirty {
                    files::mirror(&request.project.dir, &tree, Path::new(rel), &denied)?;
                }
                notices.push(WorkspaceNotice::DirtyCopied { files: dirty.len() });
            } else {
                notices.push(WorkspaceNotice::DirtyLeftOut { files: dirty.len() });
            }
        }
        self.meta.unfilled = false;
        self.save()?;
        Ok(notices)
    }

    /// The overlay workspace of a project that is not a git repository.
    fn make_overlay(
        request: &Request<'_>,
        dir: &Path,
    ) -> Result<(SessionWorkspace, Vec<WorkspaceNotice>), WorkspaceError> {
        let project = &request.project.dir;
        if std::fs::symlink_metadata(project.join(".git")).is_ok() {
            return Err(WorkspaceError::Refused(format!(
                "{} has a .git that git does not read as a repository; repair or remove it, then run again",
                project.display()
            )));
        }
        let settings = request.policy.workspace();
        check_deny_read(&settings, project)?;
        // Every sandbox holds chock.zon, making it first where the project
        // has none (see `layout::POLICY_PLACEHOLDER`). Made now, before the
        // workspace's time is taken: the apply reads any change of the
        // project's after that time (its root's too) as the person's.
        let policy_file = project.join(crate::layout::POLICY_FILE);
        match std::fs::File::create_new(&policy_file) {
            Ok(mut file) => std::io::Write::write_all(&mut file, crate::layout::POLICY_PLACEHOLDER)
                .map_err(io("writing", &policy_file))?,
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(io("creating", &policy_file)(e)),
        }
        let mut workspace = Self::start(request, dir, String::new(), PathBuf::new(), true)?;
        let made = workspace.fill_overlay(request, &settings);
        Self::made(workspace, made, request, dir)
    }

    /// The workspace's folder made and locked, and its metadata begun.
    fn start(
        request: &Request<'_>,
        dir: &Path,
        base: String,
        host_objects: PathBuf,
        overlay: bool,
    ) -> Result<SessionWorkspace, WorkspaceError> {
        std::fs::create_dir_all(dir).map_err(io("creating the workspace", dir))?;
        let held = lock(dir)?.ok_or_else(|| {
            WorkspaceError::Refused(format!(
                "the workspace {} is being made by another process",
                dir.display()
            ))
        })?;
        Ok(SessionWorkspace {
            dir: dir.to_path_buf(),
            meta: Meta {
                session: request.session.to_owned(),
                project: request.project.dir.clone(),
                base,
                created_ms: now_ms(),
                applied_ms: None,
                allow_dirty: request.allow_dirty,
                host_objects,
                deny_read: Vec::new(),
                binds: Vec::new(),
                overlay,
                unfilled: false,
            },
            _lock: held,
        })
    }

    /// The workspace with what to tell, or nothing of it kept.
    fn made(
        workspace: SessionWorkspace,
        made: Result<Vec<WorkspaceNotice>, WorkspaceError>,
        request: &Request<'_>,
        dir: &Path,
    ) -> Result<(SessionWorkspace, Vec<WorkspaceNotice>), WorkspaceError> {
        if let Err(error) = made {
            // Half a workspace is no workspace: nothing of it is kept.
            let _ = files::remove_all(dir);
            return Err(error);
        }
        let mut notices = vec![WorkspaceNotice::Made {
            session: request.session.to_owned(),
            dir: workspace.tree(),
        }];
        notices.extend(made.unwrap_or_default());
        Ok((workspace, notices))
    }

    /// Makes the overlay's layers, the binds (decided, nothing to copy: the
    /// overlay is the copy) and a notice in the upper layer over each
    /// `deny_read` file: overlayfs shows the upper layer's file, and a
    /// rename or removal of it leaves a whiteout, never the project's.
    fn fill_overlay(
        &mut self,
        request: &Request<'_>,
        settings: &WorkspaceSettings,
    ) -> Result<Vec<WorkspaceNotice>, WorkspaceError> {
        let upper = self.upper();
        for layer in [&upper, &self.dir.join(overlay::WORK)] {
            std::fs::create_dir_all(layer).map_err(io("creating", layer))?;
        }
        let mut notices = vec![WorkspaceNotice::Overlay];
        let mut excluded = Vec::new();
        for bind in &settings.binds {
            if let Some(notice) = self.make_bind(request, bind, &mut excluded)? {
                notices.push(notice);
            }
        }
        for deny in &settings.deny_read {
            if let Some(covered) = self.bind_cover(request, deny)? {
                self.meta.deny_read.push(covered);
                continue;
            }
            let path = upper.join(&deny.path);
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent).map_err(io("creating", parent))?;
            }
            std::fs::write(&path, view::NOTICE).map_err(io("writing", &path))?;
            let meta = std::fs::symlink_metadata(&path).map_err(io("reading", &path))?;
            self.meta.deny_read.push(Covered {
                rel: deny.path.clone(),
                dev: std::os::unix::fs::MetadataExt::dev(&meta),
                ino: std::os::unix::fs::MetadataExt::ino(&meta),
                named_in: deny.place(),
            });
        }
        self.save()?;
        Ok(notices)
    }

    /// The cover of a `deny_read` file inside a `read_only` or `write` bind
    /// (a mount of the person's own path, over whatever the workspace has
    /// there): the person's own file, by the identity it has now.
    fn bind_cover(
        &self,
        request: &Request<'_>,
        deny: &chock_policy::workspace::DenyRead,
    ) -> Result<Option<Covered>, WorkspaceError> {
        let Some(bind) = self.meta.binds.iter().find(|b| {
            deny.path.starts_with(&b.name)
                && (b.mode == BindMode::ReadOnly.as_str() || b.mode == BindMode::Write.as_str())
        }) else {
            return Ok(None);
        };
        let named_in = deny.place();
        let (dev, ino) = person_file(&request.project.dir, &deny.path, &bind.name, &named_in)?;
        Ok(Some(Covered {
            rel: deny.path.clone(),
            dev,
            ino,
            named_in,
        }))
    }

    /// Makes the repository and its index, the binds' mount points and
    /// copies and every `deny_read` cover, recording each identity the
    /// sandbox will check; the files of the tree are [`finish`](Self::finish)'s.
    fn fill(
        &mut self,
        request: &Request<'_>,
        settings: &WorkspaceSettings,
    ) -> Result<Vec<WorkspaceNotice>, WorkspaceError> {
        let tree = self.tree();
        std::fs::create_dir_all(&tree).map_err(io("creating", &tree))?;
        let git = self.git();
        // No template: no sample hooks, nothing Chock did not write.
        git.run(["init", "-q", "--template="])?;
        let info = self.git_dir().join("objects/info");
        std::fs::create_dir_all(&info).map_err(io("creating", &info))?;
        let mut alternates = self
            .meta
            .host_objects
            .as_os_str()
            .as_encoded_bytes()
            .to_vec();
        alternates.push(b'\n');
        std::fs::write(info.join("alternates"), alternates)
            .map_err(io("writing", &info.join("alternates")))?;
        // Detached at the base: HEAD holds the commit itself.
        let head = self.git_dir().join("HEAD");
        std::fs::write(&head, format!("{}\n", self.meta.base)).map_err(io("writing", &head))?;
        // The index alone: the files are written by `finish`.
        git.run(["read-tree", "--reset", "HEAD"])?;
        let mut excluded: Vec<String> = vec![format!("/{}", crate::layout::POLICY_FILE)];
        let mut notices = Vec::new();
        for bind in &settings.binds {
            if let Some(notice) = self.make_bind(request, bind, &mut excluded)? {
                notices.push(notice);
            }
        }
        for deny in &settings.deny_read {
            let named_in = deny.place();
            if let Some(covered) = self.bind_cover(request, deny)? {
                self.meta.deny_read.push(covered);
                continue;
            }
            let rel = deny.path.to_string_lossy();
            let tracked = git
                .output(["ls-files", "--error-unmatch", "--", &rel], None)?
                .ok;
            if tracked {
                // Never checked out (the tree holds an empty file in its
                // place); inside, git would read the notice as a change to
                // commit, and the apply refuses any commit that changes it.
                git.run(["update-index", "--skip-worktree", "--", &rel])?;
            }
            let (dev, ino, made) = files::hold_file(&tree, &deny.path)?;
            if made && !tracked {
                excluded.push(format!("/{}", deny.path.display()));
            }
            self.meta.deny_read.push(Covered {
                rel: deny.path.clone(),
                dev,
                ino,
                named_in,
            });
        }
        let exclude = self.git_dir().join("info/exclude");
        std::fs::create_dir_all(self.git_dir().join("info")).map_err(io("creating", &exclude))?;
        std::fs::write(&exclude, excluded.join("\n") + "\n").map_err(io("writing", &exclude))?;
        self.meta.unfilled = true;
        self.save()?;
        Ok(notices)
    }

    fn make_bind(
        &mut self,
        request: &Request<'_>,
        bind: &Bind,
        excluded: &mut Vec<String>,
    ) -> Result<Option<WorkspaceNotice>, WorkspaceError> {
        let tree = self.tree();
        let host_path = request.project.dir.join(&bind.name);
        let tracked = !self.meta.overlay
            && self
                .git()
                .output(["ls-files", "--error-unmatch", "--", &bind.name], None)?
                .ok;
        if tracked {
            return Err(WorkspaceError::Refused(format!(
                "{}:{}: workspace bind `{}` is in the repository, which the workspace already holds; name only paths git does not carry",
                bind.file.display(),
                bind.line,
                bind.name
            )));
        }
        let meta = std::fs::symlink_metadata(&host_path).map_err(|_| {
            WorkspaceError::Refused(format!(
                "{}:{}: workspace bind `{}` does not exist in {}; make it or remove the bind",
                bind.file.display(),
                bind.line,
                bind.name,
                request.project.dir.display()
            ))
        })?;
        if meta.file_type().is_symlink() {
            return Err(WorkspaceError::Refused(format!(
                "{}:{}: workspace bind `{}` is a symbolic link; name the path it leads to",
                bind.file.display(),
                bind.line,
                bind.name
            )));
        }
        let action = format!("workspace.bind.{}", bind.name);
        let verdict = decide(request, &action);
        let rule = verdict.decision;
        let fold = rule.min(bind.write);
        let (made, writable, write_back) = match bind.mode {
            BindMode::ReadOnly | BindMode::TempCopy => (rule == Decision::Allow, false, false),
            BindMode::Write => (rule != Decision::Deny, fold == Decision::Allow, false),
            BindMode::Copy => (rule != Decision::Deny, false, fold == Decision::Allow),
        };
        log_start(request, &action, &verdict, made);
        if !made {
            return Ok(Some(WorkspaceNotice::Bind {
                name: bind.name.clone(),
                how: format!(
                    "not made: {action} answered {rule}, and a bind is read before anyone can be asked, so only allow makes it{}",
                    verdict
                        .suggestion
                        .as_ref()
                        .map(|s| format!(" (add to {}: {})", s.block, s.rule))
                        .unwrap_or_default()
                ),
            }));
        }
        let denied: Vec<PathBuf> = request
            .policy
            .workspace()
            .deny_read
            .into_iter()
            .map(|d| d.path)
            .collect();
        let denied: Vec<&Path> = denied.iter().map(PathBuf::as_path).collect();
        // An overlay is already a copy of every path, and shows each one a
        // mount needs; the apply leaves out what is not written back.
        match bind.mode {
            _ if self.meta.overlay => {}
            BindMode::TempCopy | BindMode::Copy => {
                files::mirror(&request.project.dir, &tree, Path::new(&bind.name), &denied)?;
            }
            BindMode::ReadOnly | BindMode::Write => {
                files::mount_point(&tree, Path::new(&bind.name), meta.is_dir())?;
            }
        }
        excluded.push(format!("/{}", bind.name));
        self.meta.binds.push(MadeBind {
            name: bind.name.clone(),
            mode: bind.mode.as_str().into(),
            writable,
            write_back,
        });
        let how = match bind.mode {
            BindMode::Write if !writable => Some(format!(
                "shown read-only: {action} folded with the block's .write answers {fold}, and only allow makes it writable"
            )),
            BindMode::Copy if !write_back => Some(format!(
                "a copy that is never written back: {action} folded with the block's .write answers {fold}, and only allow lets an apply write it"
            )),
            _ => None,
        };
        Ok(how.map(|how| WorkspaceNotice::Bind {
            name: bind.name.clone(),
            how,
        }))
    }

    /// What the workspace holds that the person's repository does not.
    pub fn pending(&self) -> Result<Pending, WorkspaceError> {
        if self.meta.overlay {
            let changes = overlay::changes(&self.upper(), &self.meta.project)?;
            return Ok(Pending {
                uncommitted: changes
                    .iter()
                    .map(|c| c.rel().display().to_string())
                    .collect(),
                commits: 0,
            });
        }
        let git = self.git();
        let uncommitted = changed_files(&git)?;
        let commits = git
            .line(["rev-list", "--count", &format!("{}..HEAD", self.meta.base)])?
            .parse()
            .unwrap_or(0);
        Ok(Pending {
            uncommitted,
            commits,
        })
    }

    /// What a sandbox needs to show this workspace at the project's path.
    pub fn view(&self) -> View {
        let overlay = self.meta.overlay.then(|| Layers {
            upper: self.upper(),
            work: self.dir.join(overlay::WORK),
        });
        View {
            // An overlay's lower layer is the project itself.
            source: if overlay.is_some() {
                self.meta.project.clone()
            } else {
                self.tree()
            },
            shown: self.meta.project.clone(),
            objects: (!self.meta.overlay).then(|| self.meta.host_objects.clone()),
            binds: self
                .meta
                .binds
                .iter()
                .filter(|b| {
                    b.mode == BindMode::ReadOnly.as_str() || b.mode == BindMode::Write.as_str()
                })
                .map(|b| BindMount {
                    rel: PathBuf::from(&b.name),
                    host: self.meta.project.join(&b.name),
                    writable: b.writable,
                })
                .collect(),
            covers: self
                .meta
                .deny_read
                .iter()
                // An overlay covers a file of its own with the notice in
                // its upper layer; one inside a bind is the person's own
                // file, mounted over in every sandbox as in a repository.
                .filter(|c| {
                    !self.meta.overlay
                        || self.meta.binds.iter().any(|b| {
                            c.rel.starts_with(&b.name)
                                && (b.mode == BindMode::ReadOnly.as_str()
                                    || b.mode == BindMode::Write.as_str())
                        })
                })
                .map(|c| Cover {
                    rel: c.rel.clone(),
                    dev: c.dev,
                    ino: c.ino,
                    named_in: c.named_in.clone(),
                })
                .collect(),
            overlay,
        }
    }

    /// Removes the workspace and everything in it.
    pub fn remove(self) -> Result<(), WorkspaceError> {
        remove_dir(&self.dir)
    }
}

/// Removes a workspace's folder whole; for a holder that cannot give up
/// its [`SessionWorkspace`] (it is shared), while it holds the lock.
pub fn remove_dir(dir: &Path) -> Result<(), WorkspaceError> {
    files::remove_all(dir)
}

/// The files of a tree that differ from its `HEAD` (changed, deleted, or
/// new and not ignored): one `git status`, which walks the tree once,
/// taking no lock on the index.
fn changed_files(git: &Git) -> Result<Vec<String>, WorkspaceError> {
    let status = git.run([
        "--no-optional-locks",
        "status",
        "--porcelain=v1",
        "-z",
        "--untracked-files=all",
        "--no-renames",
    ])?;
    Ok(git::split_z(&status.stdout)
        .into_iter()
        .filter_map(|line| line.get(3..).map(str::to_owned))
        .collect())
}

/// The person's uncommitted files, `chock.zon` aside (never copied).
fn dirty_files(host: &Git) -> Result<Vec<String>, WorkspaceError> {
    let mut all = changed_files(host)?;
    all.retain(|p| p != crate::layout::POLICY_FILE);
    Ok(all)
}

/// The identity of the person's file `rel` (a `deny_read` file inside the
/// bind `bind`), opened beneath the project with no link followed; refused
/// when it cannot be covered (missing, a link on the way, not a file).
fn person_file(
    project: &Path,
    rel: &Path,
    bind: &str,
    named_in: &str,
) -> Result<(u64, u64), WorkspaceError> {
    let refused = |why: &str| {
        WorkspaceError::Refused(format!(
            "{named_in}: deny_read `{}` is inside the workspace bind `{bind}`, and {why}, so no sandbox could cover it and none starts; make it a plain file in {} or remove it from deny_read",
            rel.display(),
            project.display()
        ))
    };
    let (top, _) = crate::anchor::open_top(project).map_err(|e| refused(&e.to_string()))?;
    let id = crate::anchor::open_beneath(&top, rel).map_err(|e| match e {
        nix::errno::Errno::ENOENT => refused("it does not exist there"),
        nix::errno::Errno::ELOOP | nix::errno::Errno::EXDEV => {
            refused("it is or goes through a symbolic link")
        }
        e => refused(e.desc()),
    })?;
    if id.kind != libc::S_IFREG {
        return Err(refused("it is not a plain file"));
    }
    Ok((id.dev, id.ino))
}

/// Refuses at start what `deny_read` cannot cover: a folder (name each
/// file), a link. Globs, absolute paths and chock.zon were refused when the
/// policy was read; a bundle's list is checked here too.
fn check_deny_read(settings: &WorkspaceSettings, project: &Path) -> Result<(), WorkspaceError> {
    for deny in &settings.deny_read {
        let named = deny.place();
        let text = deny.path.to_string_lossy();
        if let Some(fault) = chock_policy::workspace::path_fault(&text) {
            return Err(WorkspaceError::Refused(format!(
                "{named}: deny_read `{text}`: {fault}"
            )));
        }
        if let Ok(meta) = std::fs::symlink_metadata(project.join(&deny.path)) {
            if meta.is_dir() {
                return Err(WorkspaceError::Refused(format!(
                    "{named}: deny_read `{text}` is a folder; name each file in it instead"
                )));
            }
            if meta.file_type().is_symlink() {
                return Err(WorkspaceError::Refused(format!(
                    "{named}: deny_read `{text}` is a symbolic link; name the file it leads to"
                )));
            }
        }
    }
    Ok(())
}

fn decide(request: &Request<'_>, action: &str) -> Verdict {
    request.policy.decide(
        &Key::new(action.to_owned()).with_agent_kind(AGENT_KIND),
        Reading::Act,
    )
}

/// One decision-log line for a question read at start, when nobody can be
/// asked (`granted` is what it came to).
fn log_start(request: &Request<'_>, action: &str, verdict: &Verdict, granted: bool) {
    let key = Key::new(action.to_owned()).with_agent_kind(AGENT_KIND);
    let answered_by = chock_log::AnsweredBy::of_layer(verdict.decided_by.layer);
    let entry = chock_gate::line(
        request.route,
        request.project.dir.to_string_lossy(),
        &key,
        verdict,
        (verdict.decision, answered_by),
        Some(if granted { "made" } else { "not made" }.to_owned()),
    );
    let _ = request.log.append(&entry);
}

/// One workspace found on disk.
#[derive(Clone, Debug, Serialize)]
pub struct Listed {
    pub dir: PathBuf,
    pub meta: Meta,
    /// A running session holds it.
    pub live: bool,
    /// What it holds that is not applied (`None` while it is live).
    pub pending: Option<Pending>,
}

/// Every workspace under [`root`], for `project` alone when given.
pub fn list(project: Option<&Project>) -> Result<Vec<Listed>, WorkspaceError> {
    let root = root()?;
    let mut found = Vec::new();
    let projects: Vec<PathBuf> = match project {
        Some(p) => vec![root.join(&p.id)],
        None => match std::fs::read_dir(&root) {
            Ok(entries) => entries.flatten().map(|e| e.path()).collect(),
            Err(_) => Vec::new(),
        },
    };
    for dir in projects {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let dir = entry.path();
            let Ok(meta) = read_meta(&dir) else {
                continue;
            };
            match SessionWorkspace::open_dir(&dir) {
                Ok(held) => {
                    let pending = held.pending().ok();
                    found.push(Listed {
                        dir,
                        meta,
                        live: false,
                        pending,
                    });
                }
                Err(_) => found.push(Listed {
                    dir,
                    meta,
                    live: true,
                    pending: None,
                }),
            }
        }
    }
    found.sort_by_key(|a| a.meta.created_ms);
    Ok(found)
}

/// Starts reading the person's git identity for the project at `dir`, as
/// git's author and committer variables (`GIT_AUTHOR_NAME`...): a commit
/// made in a sandbox of that project is theirs, and nothing else of their
/// config is given. [`git::IdentityRead::finish`] gives the variables.
pub(crate) fn read_person_identity(dir: &Path) -> git::IdentityRead {
    git::IdentityRead::start(&git::Git::host(dir))
}
