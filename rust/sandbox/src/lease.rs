//! Placeholders that last only while the project's sandboxes run.
//!
//! A control input that does not exist (`.vscode`, `.agents/policies`,
//! `.envrc`...) is held by an empty folder Chock makes at its name and binds
//! read-only, so no program can create it (an empty folder configures
//! nothing, git lists none, and a reader that wants a file finds none). It
//! must not outlive the sandboxes that needed it: the person's project is
//! left as it was. So each one made is written to the project's record, a
//! file under Chock's data folder that no sandbox shows, and every sandbox
//! holds a shared lock on that record while it (or any program it started)
//! lives. The last to let go takes the lock exclusively and removes what the
//! record names: only an empty folder that is still the one made (device and
//! inode), through a descriptor of the workspace opened with no link
//! followed. A record left by a Chock that was killed is swept by the next
//! sandbox of the project to end.
//!
//! Making a folder allocates an inode, which on some file systems costs
//! far more than the rest of a sandbox's start (a millisecond each on a
//! loaded ext4). So the folders are kept, empty, in the record's pool (a
//! folder beside the record, on the workspace's file system) and moved
//! into place and back with `rename`: a folder is taken from the pool only
//! into a name that is free (`RENAME_NOREPLACE`), and put back only while
//! it is empty, checked again once it is there (one the person filled in
//! the meantime goes back where it was). Where the pool is on another file
//! system, folders are made and removed.

use std::fs::File;
use std::io::{Read, Seek, Write};
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use nix::fcntl::{Flock, FlockArg};

use crate::error::SandboxError;
use crate::mounts::cstring;
use crate::sys::{self, FileId};

/// The longest record read back; more than any project's control inputs
/// could make, so a longer one is not Chock's and is left alone.
const MAX_RECORD_BYTES: u64 = 64 * 1024;

/// A shared hold on a project's placeholders, released when dropped.
pub(crate) struct Lease {
    record: Flock<File>,
    path: PathBuf,
    /// Empty folders to move into place, on the workspace's file system.
    pool: Option<OwnedFd>,
    /// The pool's names not yet tried, listed at the first take: one
    /// listing for every folder a start takes.
    untried: std::sync::Mutex<Option<Vec<std::ffi::CString>>>,
    /// The workspace, opened with no link followed.
    workspace: OwnedFd,
    workspace_id: FileId,
}

impl std::fmt::Debug for Lease {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lease").field("path", &self.path).finish()
    }
}

impl Lease {
    /// Takes a shared hold on the record at `path` for the folder
    /// `workspace`, waiting while another Chock sweeps it.
    pub(crate) fn take(path: &Path, workspace: &Path) -> Result<Lease, SandboxError> {
        let host = |what: &'static str, e: std::io::Error| SandboxError::host(what, path, e);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)
                .map_err(|e| host("making the folder of the placeholder record", e))?;
        }
        let file = std::fs::OpenOptions::new()
            .read(true)
            .append(true)
            .create(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(path)
            .map_err(|e| host("opening the placeholder record", e))?;
        let record = Flock::lock(file, FlockArg::LockShared)
            .map_err(|(_, errno)| host("locking the placeholder record", errno.into()))?;
        let (workspace, workspace_id) = crate::anchor::open_top(workspace)?;
        let mut pool_path = path.as_os_str().to_owned();
        pool_path.push(".pool");
        let pool = open_pool(Path::new(&pool_path), workspace_id.dev);
        Ok(Lease {
            record,
            path: path.to_path_buf(),
            pool,
            untried: std::sync::Mutex::new(None),
            workspace,
            workspace_id,
        })
    }

    /// The workspace this hold is for.
    pub(crate) fn workspace_id(&self) -> FileId {
        self.workspace_id
    }

    /// Moves an empty folder of the pool to `name` in `folder`: `None`
    /// when the pool has none to give (make one instead), `EEXIST` when
    /// the name is taken.
    pub(crate) fn take_folder(
        &self,
        folder: &OwnedFd,
        name: &std::ffi::CStr,
    ) -> Option<Result<(), nix::errno::Errno>> {
        let pool = self.pool.as_ref()?;
        let mut untried = self.untried.lock().ok()?;
        let names = untried.get_or_insert_with(|| {
            let mut names = pool_entries(pool);
            names.reverse();
            names
        });
        while let Some(entry) = names.pop() {
            match nix::fcntl::renameat2(
                pool,
                entry.as_c_str(),
                folder,
                name,
                nix::fcntl::RenameFlags::RENAME_NOREPLACE,
            ) {
                Ok(()) => return Some(Ok(())),
                // Taken by a sandbox starting beside this one.
                Err(nix::errno::Errno::ENOENT) => continue,
                // Another mount of the file system: make one instead.
                Err(nix::errno::Errno::EXDEV) => return None,
                Err(errno) => return Some(Err(errno)),
            }
        }
        None
    }

    /// Records the placeholder made at `rel` (relative to the workspace),
    /// whose identity is `id`, in one write, so holders appending together
    /// never interleave.
    pub(crate) fn record(&self, rel: &Path, id: FileId) -> Result<(), SandboxError> {
        let line = format!(
            "{} {} {} {} {}\n",
            self.workspace_id.dev,
            self.workspace_id.ino,
            id.dev,
            id.ino,
            rel.display()
        );
        (&*self.record)
            .write_all(line.as_bytes())
            .map_err(|e| SandboxError::host("writing the placeholder record", &self.path, e))
    }

    /// Removes what the record names, when no other sandbox of the project
    /// holds it. Whatever cannot be removed (a folder the person has since
    /// filled, one that is no longer the one made) is left as it is.
    fn sweep(&self) {
        if self.record.relock(FlockArg::LockExclusiveNonblock).is_err() {
            return;
        }
        let mut text = String::new();
        let mut file = &*self.record;
        let read = file
            .seek(std::io::SeekFrom::Start(0))
            .and_then(|_| file.take(MAX_RECORD_BYTES).read_to_string(&mut text));
        if read.is_err() {
            return;
        }
        // The deepest first: a folder made beneath one made earlier
        // (`.agents/policies` in `.agents`) empties it.
        let mut lines: Vec<&str> = text.lines().collect();
        lines.sort_by_key(|line| std::cmp::Reverse(line.matches('/').count()));
        let kept: String = lines
            .into_iter()
            .filter(|line| !self.remove(line))
            .map(|line| format!("{line}\n"))
            .collect();
        if self.record.set_len(0).is_ok() {
            let _ = file.write_all(kept.as_bytes());
        }
    }

    /// Removes the placeholder one record line names; whether the line is
    /// done with (removed, gone, or not this workspace's to judge).
    fn remove(&self, line: &str) -> bool {
        let mut fields = line.splitn(5, ' ');
        let mut number = || fields.next().and_then(|f| f.parse::<u64>().ok());
        let (Some(ws_dev), Some(ws_ino), Some(dev), Some(ino)) =
            (number(), number(), number(), number())
        else {
            return true;
        };
        let Some(rel) = fields.next().map(Path::new) else {
            return true;
        };
        if (ws_dev, ws_ino) != (self.workspace_id.dev, self.workspace_id.ino) {
            // Another folder of the same project id (moved, re-made):
            // nothing here can say what that line named.
            return true;
        }
        remove_placeholder(&self.workspace, self.pool.as_ref(), rel, dev, ino)
    }
}

/// A hold on a project's placeholders kept by a long-lived caller (the
/// tool server, for its whole session), so the sandboxes it starts one after
/// another find them made and do not make and remove them each time; they
/// go when the last holder, this one or a sandbox, lets go.
#[derive(Debug)]
pub struct PlaceholderHold {
    _lease: Lease,
}

/// Holds the placeholders of `project` (the person's own folder, not a
/// session workspace) until the hold is dropped.
pub fn hold_placeholders(
    project: &crate::project::Project,
) -> Result<PlaceholderHold, SandboxError> {
    let record = project.lease_record().map_err(|e| {
        SandboxError::host(
            "finding the placeholder record",
            &project.dir,
            std::io::Error::other(e.to_string()),
        )
    })?;
    let canonical = project
        .dir
        .canonicalize()
        .map_err(|e| SandboxError::host("reading the workspace", &project.dir, e))?;
    Ok(PlaceholderHold {
        _lease: Lease::take(&record, &canonical)?,
    })
}

impl Drop for Lease {
    fn drop(&mut self) {
        self.sweep();
    }
}

/// Removes the empty folder at `rel` beneath `workspace` if it is still the
/// one with this identity, into `pool` when there is one; whether the
/// record's line is done with.
fn remove_placeholder(
    workspace: &OwnedFd,
    pool: Option<&OwnedFd>,
    rel: &Path,
    dev: u64,
    ino: u64,
) -> bool {
    let (Some(parent), Some(name)) = (rel.parent(), rel.file_name()) else {
        return true;
    };
    let parent = if parent.as_os_str().is_empty() {
        Path::new(".")
    } else {
        parent
    };
    let Ok(folder) = sys::open_path(workspace.as_raw_fd(), &cstring(parent), true) else {
        return true;
    };
    let folder = sys::owned(folder);
    let Ok(target) = sys::open_path(folder.as_raw_fd(), &cstring(Path::new(name)), true) else {
        return true;
    };
    let target = sys::owned(target);
    match sys::file_id(target.as_raw_fd()) {
        Ok(id) if id.dev == dev && id.ino == ino && id.kind == libc::S_IFDIR => {}
        _ => return true,
    }
    let name = cstring(Path::new(name));
    if let Some(pool) = pool
        && is_empty(&target)
    {
        drop(target);
        let kept = cstring(Path::new(&ino.to_string()));
        let flags = nix::fcntl::RenameFlags::RENAME_NOREPLACE;
        if nix::fcntl::renameat2(&folder, name.as_c_str(), pool, kept.as_c_str(), flags).is_ok() {
            // Filled between the look and the move: the person's again.
            let back = sys::open_path(pool.as_raw_fd(), &kept, true)
                .map(sys::owned)
                .is_ok_and(|moved| !is_empty(&moved));
            if back {
                let _ =
                    nix::fcntl::renameat2(pool, kept.as_c_str(), &folder, name.as_c_str(), flags);
            }
            return true;
        }
    } else {
        drop(target);
    }
    // ENOTEMPTY: the person put something there since; it is theirs now.
    let _ = nix::unistd::unlinkat(
        &folder,
        name.as_c_str(),
        nix::unistd::UnlinkatFlags::RemoveDir,
    );
    true
}

/// The pool at `path`, made when missing, when it is on the workspace's
/// file system `dev`.
fn open_pool(path: &Path, dev: u64) -> Option<OwnedFd> {
    match std::fs::create_dir(path) {
        Ok(()) => {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o700)).ok()?;
        }
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(_) => return None,
    }
    let fd = sys::owned(sys::open_path(libc::AT_FDCWD, &cstring(path), false).ok()?);
    let id = sys::file_id(fd.as_raw_fd()).ok()?;
    (id.kind == libc::S_IFDIR && id.dev == dev).then_some(fd)
}

/// The names in the pool, at most a few more than any project needs.
fn pool_entries(pool: &OwnedFd) -> Vec<std::ffi::CString> {
    let Ok(dir) = nix::dir::Dir::openat(
        pool,
        c".",
        nix::fcntl::OFlag::O_RDONLY | nix::fcntl::OFlag::O_DIRECTORY,
        nix::sys::stat::Mode::empty(),
    ) else {
        return Vec::new();
    };
    let mut names = Vec::new();
    for entry in dir.into_iter().flatten().take(64) {
        let name = entry.file_name();
        if name != c"." && name != c".." {
            names.push(name.to_owned());
        }
    }
    names
}

/// Whether the folder `fd` holds nothing.
fn is_empty(fd: &OwnedFd) -> bool {
    let Ok(dir) = nix::dir::Dir::openat(
        fd,
        c".",
        nix::fcntl::OFlag::O_RDONLY | nix::fcntl::OFlag::O_DIRECTORY,
        nix::sys::stat::Mode::empty(),
    ) else {
        return false;
    };
    dir.into_iter()
        .flatten()
        .all(|entry| entry.file_name() == c"." || entry.file_name() == c"..")
}
