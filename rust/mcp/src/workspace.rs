//! The workspace, and nothing outside it.
//!
//! Every file tool goes through a [`Workspace`]: a directory handle from
//! cap-std, which opens each path beneath it with `openat2(RESOLVE_BENEATH)`
//! where the kernel has it and a component-by-component `O_NOFOLLOW` walk
//! where it does not. So `..` that climbs out, an absolute path elsewhere and
//! a symbolic link that leads out are all refused by the kernel at the moment
//! of opening, not by a check that a concurrent rename could slip past. A
//! link that stays inside is followed.
//!
//! Writes are stricter: each folder on the way is opened beneath the
//! workspace descriptor with `openat2(RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS)`,
//! so no link is followed at all, and what may not be written (the root's
//! `chock.zon`, a git directory) is recognised by the (device, inode) of
//! what was opened, not by its name. A concurrent swap of a folder for a
//! link cannot redirect a write: the folder judged is the folder held.
//!
//! In the person's project, no control input (`chock_policy::control`:
//! the policy files, what agents and editors run, what runs on the host)
//! is written: the path is refused as it is opened (no link followed, `..`
//! resolved first), and again just before the write lands, by where the
//! kernel says the held folder is then, so a folder renamed under such a
//! name meanwhile is refused too. A session workspace is a copy whose
//! apply names and refuses such changes, so there only the root's
//! `chock.zon` and git directories are refused.
//!
//! Writes go to a fresh file beside the target and are renamed over it, so a
//! refused or failed write leaves the old file as it was, and `renameat`
//! replaces a name without following it.
//!
//! Each call works on an [`Opened`] workspace: a tree's handle as it is,
//! or, for an overlay workspace (a project that is not a git repository),
//! the root of an overlay mounted for that call alone (see
//! `chock_sandbox::workspace::Merged`), so overlayfs says what each path
//! is (whiteouts, opaque folders, copy-up) exactly as in a sandbox, and
//! the same rules above apply beneath it. What a given path means is
//! decided in one place, [`Workspace::relative`].

use std::ffi::OsStr;
use std::io::{Read, Write};
use std::os::fd::{AsFd, OwnedFd};
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use cap_std::ambient_authority;
use cap_std::fs::Dir;

use chock_policy::PROJECT_FILE;

/// Why a file tool refused or failed; each message says what to do.
#[derive(Debug, thiserror::Error)]
pub enum FileError {
    #[error(
        "`{path}` is outside the workspace {root}; give a path inside it (relative paths start at the workspace)"
    )]
    Outside { path: String, root: String },
    #[error(
        "`{path}` leads outside the workspace through a symbolic link; the link is not followed"
    )]
    Escapes { path: String },
    #[error("`{path}` does not exist in the workspace")]
    NotFound { path: String },
    #[error("`{path}` is a folder, not a file")]
    IsFolder { path: String },
    #[error("`{path}` is not a folder")]
    NotFolder { path: String },
    #[error("`{path}` is {size} bytes, over the {limit}-byte bound; {what}")]
    TooLarge {
        path: String,
        size: u64,
        limit: u64,
        what: &'static str,
    },
    #[error("`{path}` is not UTF-8 text ({size} bytes); this tool reads text only")]
    NotText { path: String, size: u64 },
    #[error("{PROJECT_FILE} holds the rules this server obeys; only a person edits it, by hand")]
    PolicyFile,
    #[error(
        "`{path}` is in the project's git directory, whose hooks and config git runs outside any sandbox on the person's next commit; the file tools never write there (git itself works through run_command, with hooks, config and info read-only)"
    )]
    GitDirectory { path: String },
    #[error(
        "`{path}` is a control input ({read_by}): it configures Chock, or runs programs on the person's machine outside any sandbox, so only a person edits it, by hand; the file tools never write it in the person's project, and no sandbox can (a session workspace's copy may be written, but its apply names the change and refuses it unless the project's policy says otherwise)"
    )]
    ControlInput { path: String, read_by: &'static str },
    #[error(
        "`{path}` is or goes through a symbolic link, and the file tools never write through one (a link could lead outside the workspace, into the git directory or to chock.zon); give the real path"
    )]
    LinkOnPath { path: String },
    #[error("`{path}` is named in deny_read: no session reads it")]
    DenyRead { path: String },
    #[error(
        "`{path}` is under a read_only or write bind of the person's own path, which the file tools of an overlay workspace never write (the write would stay in the overlay, and no apply carries it); a writable bind is written by run_command"
    )]
    OverlayBind { path: String },
    #[error(
        "`{path}`: its folder was moved or removed while it was being written; nothing was written. Look where it is now and try again"
    )]
    Moved { path: String },
    #[error("the workspace could not be opened: {why}")]
    Overlay { why: String },
    #[error("`{path}` is not a regular file")]
    NotAFile { path: String },
    #[error("`{path}`: the path holds a NUL byte or is empty")]
    BadPath { path: String },
    #[error("`{path}`: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "`{path}` kept changing while it was being edited; nothing was written. Read it again and retry"
    )]
    KeptChanging { path: String },
    #[error(
        "`{path}` stayed locked by another edit or program for {seconds} s; nothing was written. Try again when it is done"
    )]
    Locked { path: String, seconds: u64 },
    /// A write that failed part way: what failed, and that nothing was written.
    #[error("{0}; nothing was written")]
    NotWritten(Box<FileError>),
}

/// One entry of a listing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listed {
    pub name: String,
    pub kind: Kind,
    pub size: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Kind {
    File,
    Folder,
    Link,
    Other,
}

/// The project directory as a capability: paths resolve beneath it only.
pub struct Workspace {
    source: Source,
    /// Where paths are given from: the project's path, also for a
    /// session workspace shown there.
    root_path: PathBuf,
    /// Where the root is on the host (a session workspace's tree; for an
    /// overlay, the project).
    host_root: PathBuf,
    /// `deny_read` files, by (device, inode): never read.
    denied: Vec<(u64, u64)>,
    /// An overlay's binds of the person's own paths (`read_only`,
    /// `write`): mounts in a sandbox, but plain paths of the overlay here,
    /// where a write would land in the upper layer and no apply carries
    /// it, so the file tools do not write under them.
    bound: Vec<PathBuf>,
    /// Whether this is the person's project itself, not a session's copy:
    /// then every control input (`chock_policy::control`: the policy
    /// files, what agents and editors run, what runs on the host) is the
    /// person's alone to write, as it is in a sandbox.
    in_place: bool,
}

/// What the file tools open paths beneath.
enum Source {
    /// A folder on the host: the project, or a session workspace's tree.
    Tree(Dir),
    /// An overlay workspace: mounted afresh for each call (see
    /// [`chock_sandbox::workspace::Merged`]), so every call sees the
    /// overlay as a command would, whiteouts and all.
    Overlay(chock_sandbox::workspace::View),
}

/// The workspace opened for one tool call: every path of the call is
/// opened beneath `root`.
pub struct Opened<'a> {
    root: Dir,
    of: &'a Workspace,
    /// An overlay's mount, kept until the call is done (after `root`).
    _merged: Option<chock_sandbox::workspace::Merged>,
}

impl std::ops::Deref for Opened<'_> {
    type Target = Workspace;

    fn deref(&self) -> &Workspace {
        self.of
    }
}

static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

impl Workspace {
    /// Opens `root` (an absolute, canonical directory).
    pub fn open(root: &Path) -> std::io::Result<Workspace> {
        Ok(Workspace {
            source: Source::Tree(Dir::open_ambient_dir(root, ambient_authority())?),
            root_path: root.to_path_buf(),
            host_root: root.to_path_buf(),
            denied: Vec::new(),
            bound: Vec::new(),
            in_place: true,
        })
    }

    /// Opens a session workspace: its tree `view.source` (or the overlay
    /// over it), given paths from the project's path `view.shown`, its
    /// `deny_read` files refused by identity (an overlay's are covered by
    /// the notice in its upper layer, which is what a read finds).
    pub fn open_session(view: &chock_sandbox::workspace::View) -> std::io::Result<Workspace> {
        let source = if view.overlay.is_some() {
            Source::Overlay(view.clone())
        } else {
            Source::Tree(Dir::open_ambient_dir(&view.source, ambient_authority())?)
        };
        Ok(Workspace {
            source,
            root_path: view.shown.clone(),
            host_root: view.source.clone(),
            denied: view.covers.iter().map(|c| (c.dev, c.ino)).collect(),
            bound: match view.overlay {
                Some(_) => view.binds.iter().map(|b| b.rel.clone()).collect(),
                None => Vec::new(),
            },
            in_place: false,
        })
    }

    /// `given` as a path relative to the workspace: a relative path as it
    /// is, an absolute one only when it is under the workspace. `..` is
    /// resolved lexically and may not climb above the workspace. The empty
    /// path and `.` are the workspace itself.
    pub fn relative(&self, given: &str) -> Result<PathBuf, FileError> {
        if given.contains('\0') {
            return Err(FileError::BadPath { path: given.into() });
        }
        let path = Path::new(given);
        let rest = if path.is_absolute() {
            path.strip_prefix(&self.root_path)
                .map_err(|_| self.outside(given))?
        } else {
            path
        };
        let mut parts: Vec<&std::ffi::OsStr> = Vec::new();
        for component in rest.components() {
            match component {
                Component::Normal(part) => parts.push(part),
                Component::CurDir => {}
                Component::ParentDir => {
                    if parts.pop().is_none() {
                        return Err(self.outside(given));
                    }
                }
                Component::RootDir | Component::Prefix(_) => return Err(self.outside(given)),
            }
        }
        Ok(parts.iter().collect())
    }

    fn outside(&self, given: &str) -> FileError {
        FileError::Outside {
            path: given.into(),
            root: self.root_path.display().to_string(),
        }
    }

    /// A path for messages: relative to the workspace, `.` for the root.
    pub fn show(rel: &Path) -> String {
        if rel.as_os_str().is_empty() {
            ".".into()
        } else {
            rel.display().to_string()
        }
    }

    /// Opens the workspace for one call: a tree as it is, an overlay
    /// mounted for the call.
    pub fn opened(&self) -> Result<Opened<'_>, FileError> {
        match &self.source {
            Source::Tree(dir) => Ok(Opened {
                root: dir.try_clone().map_err(|e| io_error(Path::new(""), e))?,
                of: self,
                _merged: None,
            }),
            Source::Overlay(view) => {
                let (merged, root) = mounted_for_call(view)?;
                Ok(Opened {
                    root: Dir::from_std_file(std::fs::File::from(root)),
                    of: self,
                    _merged: Some(merged),
                })
            }
        }
    }
}

/// The overlay `view` mounted for one call, and a descriptor of its root.
fn mounted_for_call(
    view: &chock_sandbox::workspace::View,
) -> Result<(chock_sandbox::workspace::Merged, std::os::fd::OwnedFd), FileError> {
    let merged = chock_sandbox::workspace::mount_overlay(view)
        .map_err(|e| FileError::Overlay { why: e.to_string() })?
        .ok_or_else(|| FileError::Overlay {
            why: "the workspace is no overlay".into(),
        })?;
    let root = merged
        .root()
        .ok_or_else(|| FileError::Overlay {
            why: "the overlay has no root".into(),
        })?
        .try_clone()
        .map_err(|e| io_error(Path::new(""), e))?;
    Ok((merged, root))
}

/// The workspace shown to a nix call (`nix_eval`, `nix_build`,
/// `provide_tool`): while it lives, the evaluator, the flake lock reader
/// and the writing of sources into the store read every path under the
/// workspace's beneath its root descriptor (`chock_store::fs`): an
/// overlay's, mounted for this call, so they see what the session wrote
/// and removed; a folder's, held open, so a link swapped in after a check
/// never leads a read out of it.
pub struct ShownToNix {
    /// Dropped first: nothing reads beneath the mount once it goes.
    _shown: chock_store::fs::Shown,
    _merged: Option<chock_sandbox::workspace::Merged>,
}

impl Workspace {
    /// The workspace shown to one nix call.
    pub fn shown_to_nix(&self) -> Result<ShownToNix, FileError> {
        let (root, merged, tree) = match &self.source {
            Source::Tree(dir) => {
                let root = dir
                    .try_clone()
                    .map_err(|e| io_error(Path::new(""), e))?
                    .into_std_file();
                (root.into(), None, chock_store::fs::Tree::AtItsPath)
            }
            Source::Overlay(view) => {
                let (merged, root) = mounted_for_call(view)?;
                (root, Some(merged), chock_store::fs::Tree::Detached)
            }
        };
        Ok(ShownToNix {
            _shown: chock_store::fs::show(&self.host_root, root, tree),
            _merged: merged,
        })
    }
}

impl Opened<'_> {
    /// Reads a file of at most `limit` bytes.
    pub fn read(&self, rel: &Path, limit: u64) -> Result<Vec<u8>, FileError> {
        let file = self.root.open(at(rel)).map_err(|e| io_error(rel, e))?;
        let meta = file.metadata().map_err(|e| io_error(rel, e))?;
        if meta.is_dir() {
            return Err(FileError::IsFolder {
                path: Workspace::show(rel),
            });
        }
        {
            use cap_std::fs::MetadataExt;
            if self.denied.contains(&(meta.dev(), meta.ino())) {
                return Err(FileError::DenyRead {
                    path: Workspace::show(rel),
                });
            }
        }
        if meta.len() > limit {
            return Err(FileError::TooLarge {
                path: Workspace::show(rel),
                size: meta.len(),
                limit,
                what: "read a part of it with `offset` and `limit`",
            });
        }
        let mut bytes = Vec::with_capacity(meta.len() as usize);
        file.take(limit + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| io_error(rel, e))?;
        if bytes.len() as u64 > limit {
            return Err(FileError::TooLarge {
                path: Workspace::show(rel),
                size: bytes.len() as u64,
                limit,
                what: "it grew while being read",
            });
        }
        Ok(bytes)
    }

    /// A file's text: [`Workspace::read`], refusing what is not UTF-8.
    pub fn read_text(&self, rel: &Path, limit: u64) -> Result<String, FileError> {
        let bytes = self.read(rel, limit)?;
        let size = bytes.len() as u64;
        String::from_utf8(bytes).map_err(|_| FileError::NotText {
            path: Workspace::show(rel),
            size,
        })
    }

    /// The entries of a folder, sorted by name.
    pub fn list(&self, rel: &Path) -> Result<Vec<Listed>, FileError> {
        let dir = self.open_dir(rel)?;
        let mut listed = Vec::new();
        for entry in dir.entries().map_err(|e| io_error(rel, e))? {
            let entry = entry.map_err(|e| io_error(rel, e))?;
            let name = entry.file_name().to_string_lossy().into_owned();
            let meta = entry.metadata().map_err(|e| io_error(rel, e))?;
            let file_type = meta.file_type();
            let kind = if file_type.is_symlink() {
                Kind::Link
            } else if file_type.is_dir() {
                Kind::Folder
            } else if file_type.is_file() {
                Kind::File
            } else {
                Kind::Other
            };
            listed.push(Listed {
                name,
                kind,
                size: meta.len(),
            });
        }
        listed.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(listed)
    }

    fn open_dir(&self, rel: &Path) -> Result<Dir, FileError> {
        if rel.as_os_str().is_empty() {
            return self.root.try_clone().map_err(|e| io_error(rel, e));
        }
        self.root.open_dir(rel).map_err(|e| match io_error(rel, e) {
            FileError::Io { source, .. } if source.raw_os_error() == Some(nix::libc::ENOTDIR) => {
                FileError::NotFolder {
                    path: Workspace::show(rel),
                }
            }
            other => other,
        })
    }

    /// Every entry under `rel`, depth first, names relative to the
    /// workspace. Folders are entered, symbolic links never (a link is
    /// reported as an entry of its own); `.git` is skipped. Stops after
    /// `limit` entries and says so.
    pub fn walk(&self, rel: &Path, limit: usize) -> Result<Walked, FileError> {
        let mut walked = Walked::default();
        let start = self.open_dir(rel)?;
        let mut stack = vec![(start, rel.to_path_buf())];
        while let Some((dir, path)) = stack.pop() {
            let Ok(entries) = dir.entries() else { continue };
            let mut children: Vec<(String, cap_std::fs::Metadata)> = entries
                .filter_map(Result::ok)
                .filter_map(|e| {
                    let meta = e.metadata().ok()?;
                    Some((e.file_name().to_string_lossy().into_owned(), meta))
                })
                .collect();
            children.sort_by(|a, b| b.0.cmp(&a.0));
            for (name, meta) in children {
                if walked.entries.len() >= limit {
                    walked.cut = true;
                    return Ok(walked);
                }
                let child = path.join(&name);
                let file_type = meta.file_type();
                if file_type.is_dir() && !file_type.is_symlink() {
                    if name == chock_policy::control::GIT_DIR {
                        continue;
                    }
                    if let Ok(sub) = dir.open_dir(&name) {
                        stack.push((sub, child.clone()));
                    }
                    walked.entries.push((child, Kind::Folder));
                } else if file_type.is_symlink() {
                    walked.entries.push((child, Kind::Link));
                } else if file_type.is_file() {
                    walked.entries.push((child, Kind::File));
                }
            }
        }
        walked.entries.sort();
        Ok(walked)
    }

    /// Writes `bytes` to `rel` whole: a fresh file beside it, renamed over
    /// it. Folders on the way are made. What is refused is decided on what
    /// was opened (see [`Workspace::parent`] and [`Target`]), before
    /// anything is written.
    pub fn write(&self, rel: &Path, bytes: &[u8]) -> Result<(), FileError> {
        let (parent, name) = split(rel)?;
        let dir = self.parent(rel, parent, true)?;
        let target = self.target(rel, &dir, name)?;
        self.held_not_control(rel, &dir, name)?;
        let temp = replace(&dir, name, bytes, target.mode, false).map_err(|e| io_error(rel, e))?;
        debug_assert!(temp.is_none());
        Ok(())
    }

    /// Edits the text of `rel` with `edit` and writes the result whole, as
    /// [`Workspace::write`] does. The file is read and replaced through one
    /// opened folder; bytes another process appended to the old file while
    /// the edit was made are carried over to the new one, and any other
    /// change made meanwhile makes the edit start again (a few times, then
    /// refuse), so nothing written beside the edit is lost. Edits of one
    /// file take turns, by an exclusive `flock` on the file they read and on
    /// the file they put in its place, held until the carrying is done: one
    /// edit's carrying never meets another's exchange, in this server or
    /// another.
    pub fn edit<E: From<FileError>>(
        &self,
        rel: &Path,
        limit: u64,
        edit: impl Fn(&str) -> Result<String, E>,
    ) -> Result<(), E> {
        let (parent, name) = split(rel)?;
        let dir = self.parent(rel, parent, false)?;
        let until = std::time::Instant::now() + EDIT_TURN_WAIT;
        for _ in 0..EDIT_ATTEMPTS {
            let target = self.target(rel, &dir, name)?;
            let mut file = file_for_edit(&dir, name, rel, until)?;
            let text = read_text_from(&mut file, rel, limit)?;
            let before = Seen::of(&file).map_err(|e| io_error(rel, e))?;
            if u64::try_from(before.size).ok() != Some(text.1) {
                // It grew while being read.
                continue;
            }
            let edited = edit(&text.0)?;
            self.held_not_control(rel, &dir, name)?;
            let replaced = replace(&dir, name, edited.as_bytes(), target.mode, true)
                .map_err(|e| FileError::NotWritten(Box::new(io_error(rel, e))))?;
            // The edited file stays locked (`_turn`) until what was
            // appended meanwhile is carried into it.
            let Some((old_name, _turn)) = replaced else {
                return Ok(());
            };
            // The old file now sits at `old_name`: what changed in it
            // since it was read decides whether the edit stands.
            let settled = carry_appended(&dir, name, &old_name, &file, &before, text.1);
            rustix::fs::unlinkat(&dir, old_name.as_str(), rustix::fs::AtFlags::empty()).ok();
            match settled {
                Ok(()) => return Ok(()),
                Err(Changed) => {
                    // Someone rewrote the file meanwhile: put theirs back and start again.
                    continue;
                }
            }
        }
        Err(FileError::KeptChanging {
            path: Workspace::show(rel),
        }
        .into())
    }

    /// The folder `parent` of `rel`, opened beneath the workspace one
    /// component at a time with `openat2(RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS)`:
    /// no link is followed on the way, so a link (`selflink -> .`,
    /// `notes/up -> ..`, a folder swapped for a link mid-call) is refused
    /// by the kernel at the moment of opening, and the folder held is the
    /// one judged. Each folder opened is refused when it is a git
    /// directory, by its (device, inode); missing folders are made when
    /// `create` is set.
    fn parent(&self, rel: &Path, parent: &Path, create: bool) -> Result<OwnedFd, FileError> {
        if self.bound.iter().any(|bind| rel.starts_with(bind)) {
            return Err(FileError::OverlayBind {
                path: Workspace::show(rel),
            });
        }
        if rel
            .components()
            .any(|c| c.as_os_str() == chock_policy::control::GIT_DIR)
        {
            return Err(FileError::GitDirectory {
                path: Workspace::show(rel),
            });
        }
        self.not_control(rel)?;
        let protected = self.git_identities();
        let mut dir = open_beneath(&self.root, ".").map_err(|e| io_error(rel, e))?;
        for part in parent.components() {
            let part = part.as_os_str();
            let is_link = || {
                rustix::fs::statat(&dir, part, rustix::fs::AtFlags::SYMLINK_NOFOLLOW).is_ok_and(
                    |st| {
                        rustix::fs::FileType::from_raw_mode(st.st_mode)
                            == rustix::fs::FileType::Symlink
                    },
                )
            };
            let next = match open_beneath(&dir, part) {
                Err(e) if e.kind() == std::io::ErrorKind::NotFound && create => {
                    match rustix::fs::mkdirat(&dir, part, rustix::fs::Mode::from_raw_mode(0o755)) {
                        Ok(()) | Err(rustix::io::Errno::EXIST) => {}
                        Err(e) => return Err(io_error(rel, e.into())),
                    }
                    open_beneath(&dir, part)
                }
                other => other,
            };
            let next = match next {
                Ok(next) => next,
                Err(_) if is_link() => {
                    return Err(FileError::LinkOnPath {
                        path: Workspace::show(rel),
                    });
                }
                Err(e) => return Err(io_error(rel, e)),
            };
            if protected.contains(&identity(&next).map_err(|e| io_error(rel, e))?) {
                return Err(FileError::GitDirectory {
                    path: Workspace::show(rel),
                });
            }
            dir = next;
        }
        Ok(dir)
    }

    /// In the person's project, `rel` refused when it is, or lies beneath,
    /// a control input. `rel` is what the write opens: [`Workspace::relative`]
    /// resolved its `..`, and [`Opened::parent`] follows no link, so the
    /// name judged is the path opened.
    fn not_control(&self, rel: &Path) -> Result<(), FileError> {
        match chock_policy::control::control_input(rel) {
            Some(input) if self.in_place => Err(FileError::ControlInput {
                path: Workspace::show(rel),
                read_by: input.read_by,
            }),
            _ => Ok(()),
        }
    }

    /// Just before a write puts `name` into the folder held as `dir`: where
    /// that folder is now, asked of the kernel (`/proc/self/fd`), not the
    /// path it was opened by. A folder renamed under a control input's name
    /// while the write held it is refused, and so is one that left the
    /// workspace or was removed; nothing is written then.
    fn held_not_control(&self, rel: &Path, dir: &OwnedFd, name: &OsStr) -> Result<(), FileError> {
        if !self.in_place {
            return Ok(());
        }
        let moved = || FileError::Moved {
            path: Workspace::show(rel),
        };
        let root = place_of(&self.root).map_err(|e| io_error(rel, e))?;
        let now = place_of(dir).map_err(|e| io_error(rel, e))?;
        let within = now.strip_prefix(&root).map_err(|_| moved())?;
        if within
            .components()
            .any(|c| !matches!(c, Component::Normal(_)))
        {
            return Err(moved());
        }
        let at = within.join(name);
        self.not_control(&at).map_err(|e| match e {
            FileError::ControlInput { read_by, .. } => FileError::ControlInput {
                path: format!("{} (now {})", Workspace::show(rel), Workspace::show(&at)),
                read_by,
            },
            other => other,
        })
    }

    /// What `name` in the opened folder `dir` is, refused when it may not
    /// be written: the policy file (the root's `chock.zon`, by its identity,
    /// and that name in the root folder), a `.git`, a folder, a link.
    fn target(&self, rel: &Path, dir: &OwnedFd, name: &OsStr) -> Result<Target, FileError> {
        if name == chock_policy::control::GIT_DIR {
            return Err(FileError::GitDirectory {
                path: Workspace::show(rel),
            });
        }
        let root = identity(&self.root).map_err(|e| io_error(rel, e))?;
        if name == PROJECT_FILE && identity(dir).map_err(|e| io_error(rel, e))? == root {
            return Err(FileError::PolicyFile);
        }
        let policy_file = rustix::fs::statat(
            &self.root,
            PROJECT_FILE,
            rustix::fs::AtFlags::SYMLINK_NOFOLLOW,
        )
        .ok()
        .map(|st| (st.st_dev, st.st_ino));
        match rustix::fs::statat(dir, name, rustix::fs::AtFlags::SYMLINK_NOFOLLOW) {
            Err(rustix::io::Errno::NOENT) => Ok(Target { mode: None }),
            Err(e) => Err(io_error(rel, e.into())),
            Ok(st) => {
                let kind = rustix::fs::FileType::from_raw_mode(st.st_mode);
                if Some((st.st_dev, st.st_ino)) == policy_file {
                    return Err(FileError::PolicyFile);
                }
                match kind {
                    rustix::fs::FileType::Directory => Err(FileError::IsFolder {
                        path: Workspace::show(rel),
                    }),
                    rustix::fs::FileType::Symlink => Err(FileError::LinkOnPath {
                        path: Workspace::show(rel),
                    }),
                    rustix::fs::FileType::RegularFile => Ok(Target {
                        mode: Some(st.st_mode & 0o7777),
                    }),
                    _ => Err(FileError::NotAFile {
                        path: Workspace::show(rel),
                    }),
                }
            }
        }
    }

    /// The (device, inode) of every git directory git uses for the workspace.
    fn git_identities(&self) -> Vec<(u64, u64)> {
        chock_sandbox::git::git_dirs(&self.host_root)
            .iter()
            .filter_map(|dir| std::fs::metadata(dir).ok())
            .map(|meta| {
                use std::os::unix::fs::MetadataExt;
                (meta.dev(), meta.ino())
            })
            .collect()
    }
}

/// How many times an edit starts again when its file keeps changing.
const EDIT_ATTEMPTS: usize = 8;
/// How long (checks of 5 ms) the replaced file must stay still before it is
/// removed: a writer that opened it before the exchange writes within that.
const QUIET_CHECKS: u32 = 20;

/// A file about to be replaced: its permission bits, when it exists.
struct Target {
    mode: Option<u32>,
}

/// The folder `path` beneath `dir`, no link followed, never above `dir`.
fn open_beneath(dir: &impl AsFd, path: impl rustix::path::Arg) -> std::io::Result<OwnedFd> {
    use rustix::fs::{Mode, OFlags, ResolveFlags};
    Ok(rustix::fs::openat2(
        dir,
        path,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC | OFlags::NOFOLLOW,
        Mode::empty(),
        ResolveFlags::BENEATH | ResolveFlags::NO_SYMLINKS | ResolveFlags::NO_MAGICLINKS,
    )?)
}

/// Where the folder `fd` is now, as the kernel names it.
fn place_of(fd: &impl AsFd) -> std::io::Result<PathBuf> {
    use std::os::fd::AsRawFd;
    std::fs::read_link(format!("/proc/self/fd/{}", fd.as_fd().as_raw_fd()))
}

fn identity(fd: &impl AsFd) -> std::io::Result<(u64, u64)> {
    let st = rustix::fs::fstat(fd)?;
    Ok((st.st_dev, st.st_ino))
}

/// How long an edit waits for its turn on a file before it refuses.
const EDIT_TURN_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

/// The file `name` in `dir` opened for an edit and locked (`flock`, so
/// every open of it contends, in this process and in others): waits while
/// another edit holds it, until `until`, and opens again when the name
/// moved on to another file meanwhile (the other edit's result).
fn file_for_edit(
    dir: &OwnedFd,
    name: &OsStr,
    rel: &Path,
    until: std::time::Instant,
) -> Result<std::fs::File, FileError> {
    loop {
        let file = open_file(dir, name, rel)?;
        match rustix::fs::flock(&file, rustix::fs::FlockOperation::NonBlockingLockExclusive) {
            Ok(()) => {
                let held = Seen::of(&file).map_err(|e| io_error(rel, e))?;
                let named = rustix::fs::statat(dir, name, rustix::fs::AtFlags::SYMLINK_NOFOLLOW)
                    .map(|st| st.st_ino)
                    .ok();
                if named == Some(held.ino) {
                    return Ok(file);
                }
            }
            Err(rustix::io::Errno::WOULDBLOCK) => {
                if std::time::Instant::now() >= until {
                    return Err(FileError::Locked {
                        path: Workspace::show(rel),
                        seconds: EDIT_TURN_WAIT.as_secs(),
                    });
                }
                std::thread::sleep(std::time::Duration::from_millis(2));
            }
            Err(e) => return Err(io_error(rel, e.into())),
        }
    }
}

/// The regular file `name` in `dir`, for reading, never through a link.
fn open_file(dir: &OwnedFd, name: &OsStr, rel: &Path) -> Result<std::fs::File, FileError> {
    use rustix::fs::{Mode, OFlags, ResolveFlags};
    rustix::fs::openat2(
        dir,
        name,
        OFlags::RDONLY | OFlags::CLOEXEC | OFlags::NOFOLLOW,
        Mode::empty(),
        ResolveFlags::BENEATH | ResolveFlags::NO_SYMLINKS,
    )
    .map(std::fs::File::from)
    .map_err(|e| io_error(rel, e.into()))
}

/// The text of an open file of at most `limit` bytes, and its length.
fn read_text_from(
    file: &mut std::fs::File,
    rel: &Path,
    limit: u64,
) -> Result<(String, u64), FileError> {
    let mut bytes = Vec::new();
    (&mut *file)
        .take(limit + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| io_error(rel, e))?;
    let size = bytes.len() as u64;
    if size > limit {
        return Err(FileError::TooLarge {
            path: Workspace::show(rel),
            size,
            limit,
            what: "it is too large to edit",
        });
    }
    let text = String::from_utf8(bytes).map_err(|_| FileError::NotText {
        path: Workspace::show(rel),
        size,
    })?;
    Ok((text, size))
}

/// What a file looked like when it was read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Seen {
    ino: u64,
    size: i64,
}

impl Seen {
    fn of(fd: &impl AsFd) -> std::io::Result<Seen> {
        let st = rustix::fs::fstat(fd)?;
        Ok(Seen {
            ino: st.st_ino,
            size: st.st_size,
        })
    }
}

/// The old file was changed in a way other than appending.
struct Changed;

/// After the edited file took the old one's name: the bytes appended to the
/// old file (`old`, now at `old_name`) since `read` bytes were read are
/// added to the new one, until the old file stops growing. Any change that
/// is not an append puts the old file back and is [`Changed`].
fn carry_appended(
    dir: &OwnedFd,
    name: &OsStr,
    old_name: &str,
    old: &std::fs::File,
    before: &Seen,
    read: u64,
) -> Result<(), Changed> {
    use std::os::unix::fs::FileExt;
    let exchange_back = || {
        let _ =
            rustix::fs::renameat_with(dir, old_name, dir, name, rustix::fs::RenameFlags::EXCHANGE);
    };
    // The file moved aside must be the one that was read: another writer
    // may have replaced it by a rename in between.
    let moved = rustix::fs::statat(dir, old_name, rustix::fs::AtFlags::SYMLINK_NOFOLLOW);
    if moved.map(|st| st.st_ino).ok() != Some(before.ino) {
        exchange_back();
        return Err(Changed);
    }
    let mut carried = read;
    let mut quiet = 0;
    while quiet < QUIET_CHECKS {
        let Ok(now) = Seen::of(old) else {
            return Err(Changed);
        };
        let grown = u64::try_from(now.size).unwrap_or(0);
        if grown < carried {
            // Shrunk: not an append.
            exchange_back();
            return Err(Changed);
        }
        if grown == carried {
            // A writer that opened the old file before the exchange may
            // still write to it: it is watched until it has been still a while.
            quiet += 1;
            std::thread::sleep(std::time::Duration::from_millis(5));
            continue;
        }
        quiet = 0;
        let mut tail = vec![0; (grown - carried) as usize];
        if old.read_exact_at(&mut tail, carried).is_err() {
            return Err(Changed);
        }
        let appended = rustix::fs::openat2(
            dir,
            name,
            rustix::fs::OFlags::WRONLY
                | rustix::fs::OFlags::APPEND
                | rustix::fs::OFlags::CLOEXEC
                | rustix::fs::OFlags::NOFOLLOW,
            rustix::fs::Mode::empty(),
            rustix::fs::ResolveFlags::BENEATH | rustix::fs::ResolveFlags::NO_SYMLINKS,
        );
        let Ok(appended) = appended else {
            return Err(Changed);
        };
        if std::fs::File::from(appended).write_all(&tail).is_err() {
            return Err(Changed);
        }
        carried = grown;
    }
    Ok(())
}

/// Writes `bytes` to a fresh file in `dir` and puts it at `name` with the
/// old file's permission bits: renamed over it, or, when `exchange` is set
/// and a file is there, exchanged with it, so the old file stays reachable
/// under the returned name for the caller to look at (and remove), and the
/// new file is returned open and locked (`flock`), so no other edit takes
/// it before the caller lets go.
fn replace(
    dir: &OwnedFd,
    name: &OsStr,
    bytes: &[u8],
    mode: Option<u32>,
    exchange: bool,
) -> std::io::Result<Option<(String, std::fs::File)>> {
    use rustix::fs::{Mode, OFlags};
    let temp = format!(
        ".{}.chock-{}-{}",
        name.to_string_lossy(),
        std::process::id(),
        TEMP_COUNTER.fetch_add(1, Ordering::Relaxed)
    );
    let written = (|| {
        let fd = rustix::fs::openat(
            dir,
            temp.as_str(),
            OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::from_raw_mode(0o644),
        )?;
        if let Some(mode) = mode {
            rustix::fs::fchmod(&fd, Mode::from_raw_mode(mode))?;
        }
        let mut file = std::fs::File::from(fd);
        file.write_all(bytes)?;
        file.sync_all()?;
        if exchange && mode.is_some() {
            rustix::fs::flock(&file, rustix::fs::FlockOperation::LockExclusive)?;
            rustix::fs::renameat_with(
                dir,
                temp.as_str(),
                dir,
                name,
                rustix::fs::RenameFlags::EXCHANGE,
            )?;
            Ok(Some((temp.clone(), file)))
        } else {
            rustix::fs::renameat(dir, temp.as_str(), dir, name)?;
            Ok(None)
        }
    })();
    if written.is_err() {
        rustix::fs::unlinkat(dir, temp.as_str(), rustix::fs::AtFlags::empty()).ok();
    }
    written
}

fn split(rel: &Path) -> Result<(&Path, &std::ffi::OsStr), FileError> {
    match (rel.parent(), rel.file_name()) {
        (Some(parent), Some(name)) => Ok((parent, name)),
        _ => Err(FileError::IsFolder {
            path: Workspace::show(rel),
        }),
    }
}

/// cap-std takes `.` for the root.
fn at(rel: &Path) -> &Path {
    if rel.as_os_str().is_empty() {
        Path::new(".")
    } else {
        rel
    }
}

/// What a walk found.
#[derive(Debug, Default)]
pub struct Walked {
    pub entries: Vec<(PathBuf, Kind)>,
    /// The walk stopped at its bound.
    pub cut: bool,
}

/// Names the refusal the kernel (or cap-std's walk) gave: an escape is
/// reported as one, not as a plain permission error.
fn io_error(rel: &Path, source: std::io::Error) -> FileError {
    let path = Workspace::show(rel);
    let escaped = source.raw_os_error() == Some(nix::libc::EXDEV)
        || (source.kind() == std::io::ErrorKind::PermissionDenied
            && source.raw_os_error().is_none());
    if escaped {
        return FileError::Escapes { path };
    }
    match source.kind() {
        std::io::ErrorKind::NotFound => FileError::NotFound { path },
        _ if source.raw_os_error() == Some(nix::libc::EISDIR) => FileError::IsFolder { path },
        _ => FileError::Io { path, source },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn workspace() -> (tempfile::TempDir, Workspace) {
        let dir = tempfile::tempdir().expect("tempdir");
        let canonical = dir.path().canonicalize().expect("canonical");
        let workspace = Workspace::open(&canonical).expect("open");
        (dir, workspace)
    }

    #[test]
    fn paths_are_made_relative_or_refused() {
        let (_dir, ws) = workspace();
        let root = ws.root_path.display().to_string();
        assert_eq!(ws.relative("a/./b/../c").ok(), Some(PathBuf::from("a/c")));
        assert_eq!(ws.relative("").ok(), Some(PathBuf::new()));
        assert_eq!(
            ws.relative(&format!("{root}/x")).ok(),
            Some(PathBuf::from("x"))
        );
        for outside in ["..", "a/../../b", "/etc/passwd", &format!("{root}/../x")] {
            assert!(
                matches!(ws.relative(outside), Err(FileError::Outside { .. })),
                "{outside}"
            );
        }
        assert!(matches!(
            ws.relative("a\0b"),
            Err(FileError::BadPath { .. })
        ));
    }

    #[test]
    fn a_write_replaces_the_file_whole_and_keeps_its_mode() {
        use std::os::unix::fs::PermissionsExt;
        let (dir, ws) = workspace();
        let file = dir.path().join("run.sh");
        std::fs::write(&file, "old").expect("write");
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o750)).expect("chmod");
        ws.opened()
            .expect("opened")
            .write(Path::new("run.sh"), b"new")
            .expect("write");
        assert_eq!(std::fs::read_to_string(&file).ok().as_deref(), Some("new"));
        let mode = std::fs::metadata(&file).expect("meta").permissions().mode();
        assert_eq!(mode & 0o777, 0o750);
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .expect("list")
            .filter_map(Result::ok)
            .map(|e| e.file_name())
            .collect();
        assert_eq!(names.len(), 1, "no temporary file is left: {names:?}");
    }

    #[test]
    fn nothing_is_written_in_a_git_directory() {
        let (dir, ws) = workspace();
        std::fs::create_dir_all(dir.path().join(".git/hooks")).expect("mkdir");
        std::fs::create_dir_all(dir.path().join("meta")).expect("mkdir");
        std::fs::write(dir.path().join("sub.git"), "").expect("file");
        for path in [
            ".git/hooks/pre-commit",
            ".git/config",
            "vendor/x/.git/config",
            ".git",
        ] {
            assert!(
                matches!(
                    ws.opened().expect("opened").write(Path::new(path), b"x"),
                    Err(FileError::GitDirectory { .. })
                ),
                "{path}"
            );
        }
        std::fs::remove_dir_all(dir.path().join(".git")).expect("rm");
        std::fs::write(dir.path().join(".git"), "gitdir: meta\n").expect(".git file");
        assert!(matches!(
            ws.opened()
                .expect("opened")
                .write(Path::new("meta/hooks/pre-commit"), b"x"),
            Err(FileError::GitDirectory { .. })
        ));
        assert!(!dir.path().join("meta/hooks").exists());
        ws.opened()
            .expect("opened")
            .write(Path::new("sub.git"), b"a name that only looks like it")
            .expect("written");
    }

    /// The held folder is judged where it is when the write lands: renamed
    /// under a control input's name, or out of the workspace, after it was
    /// opened, the write is refused.
    #[test]
    fn a_folder_renamed_while_held_is_judged_where_it_is_now() {
        let (dir, ws) = workspace();
        std::fs::create_dir(dir.path().join("work")).expect("mkdir");
        let opened = ws.opened().expect("opened");
        let rel = Path::new("work/pre-commit");
        let held = opened.parent(rel, Path::new("work"), false).expect("held");
        let name = OsStr::new("pre-commit");
        assert!(opened.held_not_control(rel, &held, name).is_ok());
        std::fs::rename(dir.path().join("work"), dir.path().join(".husky")).expect("rename");
        assert!(matches!(
            opened.held_not_control(rel, &held, name),
            Err(FileError::ControlInput { .. })
        ));
        let outside = tempfile::tempdir().expect("tempdir");
        std::fs::rename(dir.path().join(".husky"), outside.path().join("w")).expect("rename");
        assert!(matches!(
            opened.held_not_control(rel, &held, name),
            Err(FileError::Moved { .. })
        ));
    }

    /// In a session workspace (a copy the apply checks) only the root's
    /// chock.zon and git directories are refused; the person's project
    /// refuses every control input.
    #[test]
    fn control_inputs_are_refused_in_place_and_written_in_a_copy() {
        let (dir, ws) = workspace();
        let copy = Workspace {
            in_place: false,
            ..Workspace::open(&dir.path().canonicalize().expect("canonical")).expect("open")
        };
        for rel in [
            ".claude/settings.json",
            ".envrc",
            ".agents/policies/p/manifest.zon",
        ] {
            assert!(
                matches!(
                    ws.opened().expect("opened").write(Path::new(rel), b"x"),
                    Err(FileError::ControlInput { .. })
                ),
                "{rel}"
            );
            assert!(!dir.path().join(rel).exists(), "{rel}");
            copy.opened()
                .expect("opened")
                .write(Path::new(rel), b"x")
                .expect("a copy's is written");
        }
        assert!(matches!(
            copy.opened()
                .expect("opened")
                .write(Path::new("chock.zon"), b"x"),
            Err(FileError::PolicyFile)
        ));
    }

    proptest::proptest! {
        #[test]
        fn a_relative_path_never_climbs_out(given in "[a-z./\\\\]{0,24}") {
            let (_dir, ws) = workspace();
            if let Ok(rel) = ws.relative(&given) {
                proptest::prop_assert!(rel.components().all(|c| matches!(c, Component::Normal(_))));
            }
        }
    }
}
