//! Every path a mount takes from the workspace, resolved once, by
//! descriptor.
//!
//! A program in one sandbox can rename, swap (`renameat2(RENAME_EXCHANGE)`)
//! and link names in the workspace while another sandbox of the same
//! project is being built, so a name checked first and mounted later may by
//! then be a link to the host's `/`. Nothing here walks a workspace path
//! twice: the workspace and the cache are opened once (`openat2` with
//! `RESOLVE_NO_SYMLINKS`), each folder or file the sandbox holds is opened
//! beneath the workspace's descriptor (`RESOLVE_BENEATH`, no link followed
//! anywhere), and what is recorded is its identity (device, inode, type).
//! The sandbox's first process opens each again the same way, from the
//! workspace as mounted inside, refuses to go on unless it is the same
//! object, and binds that descriptor over itself (`open_tree` and
//! `move_mount`, no path). Landlock is given the same workspace descriptor.
//!
//! A guarded name that does not exist (`chock.zon`, `.git/hooks`,
//! `.git/commondir`...) could be created by the program for the person's
//! next `git commit` or the next command to obey, and nothing can be mounted
//! over a name that is not there. So Chock makes it first, with contents
//! that mean what its absence meant (see [`Placeholder`]), and holds it
//! read-only like any other: no program ever runs while one of them is
//! missing.

use std::ffi::CString;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use nix::errno::Errno;

use crate::error::SandboxError;
use crate::mounts::{Layout, cstring};
use crate::sys::{self, FileId};

/// What Chock writes where a guarded name was missing: contents that mean
/// to git (or to Chock) exactly what the missing name meant.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Placeholder {
    /// An empty folder (`hooks`, `info`: no hook, no attribute).
    Dir,
    /// A file with these bytes.
    File(&'static [u8]),
}

/// The identity of the workspace, the cache and each held path: plain data
/// the mount plan is made from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Anchored {
    pub(crate) workspace: FileId,
    pub(crate) cache: FileId,
    /// The scratchpad, when the run is given one.
    pub(crate) scratch: Option<FileId>,
    /// Shallowest first, the writable pins before the read-only binds.
    pub(crate) held: Vec<Held>,
    /// A session workspace's objects, binds and covers.
    pub(crate) session: Option<crate::workspace::Anchored>,
}

/// One folder or file inside the workspace bound over itself.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Held {
    /// Relative to the workspace.
    pub(crate) rel: CString,
    pub(crate) id: FileId,
    pub(crate) writable: bool,
}

/// The descriptors behind [`Anchored`], kept for Landlock, and what was made.
pub(crate) struct Anchors {
    pub(crate) workspace: OwnedFd,
    pub(crate) cache: OwnedFd,
    /// The scratchpad, when the run is given one.
    pub(crate) scratch: Option<OwnedFd>,
    /// A session workspace's view of the person's objects, for Landlock.
    pub(crate) objects: Option<OwnedFd>,
    pub(crate) anchored: Anchored,
    /// Placeholders made now that stay, for the person to be told.
    pub(crate) created: Vec<PathBuf>,
    /// The hold on the placeholders that go when the project's last
    /// sandbox does, kept while the sandbox and every program it ran live.
    pub(crate) lease: Option<std::sync::Arc<crate::lease::Lease>>,
    /// An overlay workspace's work folder for this sandbox, removed when
    /// the sandbox and every program it ran are gone.
    pub(crate) own_work: Option<std::sync::Arc<crate::workspace::OwnWork>>,
}

pub(crate) fn open_top(path: &Path) -> Result<(OwnedFd, FileId), SandboxError> {
    let io = |errno: Errno| SandboxError::host("opening", path, std::io::Error::from(errno));
    let fd = sys::owned(sys::open_path(libc::AT_FDCWD, &cstring(path), false).map_err(io)?);
    let id = sys::file_id(fd.as_raw_fd()).map_err(io)?;
    if id.kind != libc::S_IFDIR {
        return Err(SandboxError::Workspace {
            path: path.to_path_buf(),
            reason: "it is no longer a directory (it changed while the sandbox was prepared); run the command again".into(),
        });
    }
    Ok((fd, id))
}

fn relative<'a>(workspace: &Path, path: &'a Path) -> Result<&'a Path, SandboxError> {
    path.strip_prefix(workspace)
        .ok()
        .filter(|r| !r.as_os_str().is_empty())
        .ok_or_else(|| SandboxError::Workspace {
            path: path.to_path_buf(),
            reason: "it is not inside the workspace".into(),
        })
}

pub(crate) fn changed(path: &Path, what: &str) -> SandboxError {
    SandboxError::Workspace {
        path: path.to_path_buf(),
        reason: format!(
            "{what}; something in the project changed it while the sandbox was prepared (another command may be running there), so nothing ran; run the command again"
        ),
    }
}

/// What an `openat2` beneath the workspace that failed means: a name that
/// is gone, or a link on the way, is the project changing under a command
/// running beside this one (a race, refused as such); anything else is the
/// host's fault.
pub(crate) fn beneath_error(step: &'static str, path: &Path, errno: Errno) -> SandboxError {
    match errno {
        Errno::ELOOP | Errno::EXDEV | Errno::ENOENT | Errno::ENOTDIR => {
            changed(path, "it is gone, or a symbolic link is on its way")
        }
        other => SandboxError::host(step, path, std::io::Error::from(other)),
    }
}

/// Opens `rel` beneath `workspace`, no link followed, and says what it is.
pub(crate) fn open_beneath(workspace: &OwnedFd, rel: &Path) -> Result<FileId, Errno> {
    let fd = sys::owned(sys::open_path(workspace.as_raw_fd(), &cstring(rel), true)?);
    sys::file_id(fd.as_raw_fd())
}

/// Makes `placeholder` at `rel` beneath `workspace`, through a descriptor of
/// its folder (an empty folder taken from `pool` when there is one);
/// whether it was made (false: something is there already).
fn make(
    workspace: &OwnedFd,
    path: &Path,
    rel: &Path,
    placeholder: Placeholder,
    pool: Option<&crate::lease::Lease>,
) -> Result<bool, SandboxError> {
    let io = |errno: Errno| beneath_error("making the placeholder", path, errno);
    let (Some(parent), Some(name)) = (rel.parent(), rel.file_name()) else {
        return Err(changed(path, "it has no folder"));
    };
    let folder = if parent.as_os_str().is_empty() {
        sys::owned(sys::open_path(workspace.as_raw_fd(), c".", true).map_err(io)?)
    } else {
        sys::owned(sys::open_path(workspace.as_raw_fd(), &cstring(parent), true).map_err(io)?)
    };
    if sys::file_id(folder.as_raw_fd()).map_err(io)?.kind != libc::S_IFDIR {
        return Err(changed(path, "its folder is not a folder"));
    }
    let name = CString::new(name.as_bytes()).map_err(|_| changed(path, "its name holds a NUL"))?;
    if let Some(pool) = pool.filter(|_| placeholder == Placeholder::Dir) {
        match pool.take_folder(&folder, &name) {
            Some(Ok(())) => return Ok(true),
            Some(Err(Errno::EEXIST)) => return Ok(false),
            Some(Err(errno)) => return Err(io(errno)),
            None => {}
        }
    }
    match make_placeholder(&folder, &name, placeholder) {
        Ok(()) => Ok(true),
        Err(Errno::EEXIST) => Ok(false),
        Err(errno) => Err(io(errno)),
    }
}

/// Makes `placeholder` named `name` in the folder `dir`, never through a
/// link and never over something already there (`EEXIST`).
fn make_placeholder(
    dir: &OwnedFd,
    name: &std::ffi::CStr,
    placeholder: Placeholder,
) -> Result<(), Errno> {
    use nix::fcntl::OFlag;
    use nix::sys::stat::Mode;
    match placeholder {
        Placeholder::Dir => nix::sys::stat::mkdirat(dir, name, Mode::from_bits_truncate(0o755)),
        Placeholder::File(contents) => {
            // O_EXCL with O_CREAT never follows a link.
            let file = nix::fcntl::openat(
                dir,
                name,
                OFlag::O_WRONLY
                    | OFlag::O_CREAT
                    | OFlag::O_EXCL
                    | OFlag::O_NOFOLLOW
                    | OFlag::O_CLOEXEC,
                Mode::from_bits_truncate(0o644),
            )?;
            sys::write_all(file.as_raw_fd(), contents)
        }
    }
}

/// Opens the workspace and the cache, makes each missing guarded name, and
/// records the identity of every path the sandbox holds.
pub(crate) fn anchor(layout: &Layout) -> Result<Anchors, SandboxError> {
    // A session workspace's tree is what is bound at the project's path.
    let host = layout
        .session
        .as_ref()
        .map_or(&layout.workspace, |s| &s.source);
    let (workspace, workspace_id) = open_top(host)?;
    let (cache, cache_id) = open_top(&layout.cache_dir)?;
    let (scratch, scratch_id) = match &layout.scratch_dir {
        Some(dir) => {
            let (fd, id) = open_top(dir)?;
            (Some(fd), Some(id))
        }
        None => (None, None),
    };
    let mut created = Vec::new();
    let mut held = Vec::new();
    let lease = layout.lease.clone();
    if lease
        .as_ref()
        .is_some_and(|l| l.workspace_id() != workspace_id)
    {
        return Err(changed(host, "it is no longer the folder it was"));
    }
    for (path, placeholder) in &layout.missing {
        let rel = relative(host, path)?;
        let passing = lease.as_deref().filter(|_| layout.passing.contains(path));
        if !make(&workspace, path, rel, *placeholder, passing)? {
            continue;
        }
        match passing {
            Some(lease) => {
                let id = open_beneath(&workspace, rel)
                    .map_err(|errno| beneath_error("opening", path, errno))?;
                lease.record(rel, id)?;
            }
            None => created.push(path.clone()),
        }
    }
    let binds = layout
        .pinned
        .iter()
        .map(|p| (p, true))
        .chain(layout.read_only.iter().map(|p| (p, false)))
        .chain(layout.missing.iter().map(|(p, _)| (p, false)));
    for (path, writable) in binds {
        let rel = relative(host, path)?;
        let id =
            open_beneath(&workspace, rel).map_err(|errno| beneath_error("opening", path, errno))?;
        if id.kind == libc::S_IFLNK || (writable && id.kind != libc::S_IFDIR) {
            return Err(changed(
                path,
                "it is a symbolic link, or not the folder it was",
            ));
        }
        held.push(Held {
            rel: cstring(rel),
            id,
            writable,
        });
    }
    let (objects, session, own_work) = match &layout.session {
        Some(view) => {
            let (objects, session, own_work) = crate::workspace::anchor(&workspace, view)?;
            (objects, Some(session), own_work)
        }
        None => (None, None, None),
    };
    Ok(Anchors {
        workspace,
        cache,
        scratch,
        objects,
        anchored: Anchored {
            workspace: workspace_id,
            cache: cache_id,
            scratch: scratch_id,
            held,
            session,
        },
        created,
        lease,
        own_work,
    })
}
