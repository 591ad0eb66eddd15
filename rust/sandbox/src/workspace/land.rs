//! An overlay's apply landing in the person's tree, by descriptor.
//!
//! The project is opened once; each folder a change lands in is opened
//! beneath it (`openat2` with `RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS`, so no
//! link anywhere on the way is followed) and held, and every write and
//! removal is a call on that held folder (`openat`, `mkdirat`,
//! `renameat2`, `unlinkat`). A folder of the person's swapped for a link
//! between the check and the write cannot lead the write out: either the
//! folder is opened before the swap, and the write lands in it wherever it
//! now is in the tree, or the link is met and the apply refuses. The upper
//! layer is read the same way, beneath its own descriptor.
//!
//! It lands whole or not at all, in two steps:
//!
//! 1. **Staged.** Every changed path is written beside its target under a
//!    temporary name (`.chock-apply-<pid>-<n>`, a folder with everything in
//!    it), and every path to remove is found. Nothing of the person's has
//!    changed yet: a failure here (a link on the way, a folder gone, a full
//!    disk) removes the temporaries and says what failed.
//! 2. **Landed.** Each staged path takes its target's place in one
//!    `renameat2` (`RENAME_EXCHANGE` when there is one, so the old entry is
//!    kept under the temporary name; `RENAME_NOREPLACE` when there is
//!    none), and each removal is a rename to a temporary name. When the
//!    fifth of ten fails (the person removed the folder meanwhile), the
//!    four done are exchanged back in reverse order, the temporaries are
//!    removed, and the apply says nothing was written. Only when every step
//!    is done are the old entries (now under temporary names) removed.
//!
//! What a person sees after a failure is their tree as it was; the work
//! stays in the workspace. Should putting a step back fail too (the
//! folder itself went away), the error names each path and the temporary
//! name its old entry is under.

use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use nix::errno::Errno;
use nix::fcntl::{OFlag, OpenHow, RenameFlags, ResolveFlag, openat2, renameat2};
use nix::sys::stat::{Mode, fstatat};
use nix::unistd::UnlinkatFlags;

use super::WorkspaceError;
use super::overlay::Change;
use crate::anchor::open_top;
use crate::mounts::cstring;
use crate::sys;

/// At most this many entries are written for one apply.
const MAX_ENTRIES: usize = 200_000;

static TEMPORARY: AtomicU64 = AtomicU64::new(0);

/// A fresh temporary name, beside a target.
fn temporary() -> OsString {
    OsString::from(format!(
        ".chock-apply-{}-{}",
        std::process::id(),
        TEMPORARY.fetch_add(1, Ordering::Relaxed)
    ))
}

/// One step of the landing.
struct Step {
    /// The path, for messages.
    rel: PathBuf,
    /// The held folder it is in.
    parent: usize,
    name: OsString,
    /// The temporary name: the staged entry before, the old one after.
    temporary: OsString,
    /// Whether a staged entry takes the place (else the path is removed).
    write: bool,
    /// Whether the landing exchanged it with an old entry.
    exchanged: bool,
    /// Whether it is in place (and not put back).
    landed: bool,
}

/// One step as the journal keeps it: the path, its temporary name, and
/// for a write the identity (device, inode) of the entry staged there.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(crate) struct Staged {
    pub(crate) rel: PathBuf,
    pub(crate) temporary: String,
    pub(crate) staged: Option<(u64, u64)>,
}

/// Where a landing is, for its journal.
pub(crate) enum Phase<'a> {
    /// Every step staged, none landed yet.
    Staged(&'a [Staged]),
    /// Every step landed; the old entries are to be removed.
    Landed,
}

/// Writes `changes` (read from the upper layer `upper`) into `project`,
/// leaving out `denied` paths (relative): all of them or none. `journal`
/// is told each phase before it starts, and a failure there stops the
/// landing as any other does.
pub(crate) fn write_changes(
    upper: &Path,
    project: &Path,
    changes: &[Change],
    denied: &[&Path],
    journal: &mut dyn FnMut(Phase<'_>) -> Result<(), WorkspaceError>,
) -> Result<(), WorkspaceError> {
    let refused = |e: crate::SandboxError| WorkspaceError::Refused(e.to_string());
    let (top, _) = open_top(project).map_err(refused)?;
    let (upper_top, _) = open_top(upper).map_err(refused)?;
    let mut folders = Folders {
        project,
        top,
        held: Vec::new(),
        index: BTreeMap::new(),
    };
    // A path the session replaced whole (a folder for a file) is both
    // removed and written: the write's exchange does both.
    let written: Vec<&Path> = changes
        .iter()
        .filter(|c| matches!(c, Change::Write(_)))
        .map(Change::rel)
        .collect();
    let mut steps: Vec<Step> = Vec::new();
    let mut count = 0;
    let staged = (|| {
        for change in changes {
            let rel = change.rel();
            let (dir, name) = split(rel)?;
            let parent = folders.hold(dir)?;
            let held = folders.held[parent].as_fd();
            match change {
                Change::Remove(_) if written.contains(&rel) => {}
                Change::Remove(_) => {
                    if lstat(held, name).is_some() {
                        steps.push(Step {
                            rel: rel.to_path_buf(),
                            parent,
                            name: name.to_os_string(),
                            temporary: temporary(),
                            write: false,
                            exchanged: false,
                            landed: false,
                        });
                    }
                }
                Change::Write(_) => {
                    let temporary = temporary();
                    let step = Step {
                        rel: rel.to_path_buf(),
                        parent,
                        name: name.to_os_string(),
                        temporary: temporary.clone(),
                        write: true,
                        exchanged: false,
                        landed: false,
                    };
                    // Pushed first, so a half-made temporary is removed too.
                    steps.push(step);
                    if !copy(&upper_top, denied, &mut count, rel, held, &temporary)? {
                        steps.pop();
                    }
                }
            }
        }
        Ok(())
    })();
    let staged = staged.and_then(|()| {
        let kept: Vec<Staged> = steps
            .iter()
            .map(|step| Staged {
                rel: step.rel.clone(),
                temporary: step.temporary.to_string_lossy().into_owned(),
                staged: step
                    .write
                    .then(|| lstat(folders.held[step.parent].as_fd(), &step.temporary))
                    .flatten()
                    .map(|st| (st.st_dev, st.st_ino)),
            })
            .collect();
        journal(Phase::Staged(&kept))
    });
    if let Err(e) = staged {
        clear(&folders, &steps);
        return Err(nothing_written(project, e));
    }
    for done in 0..steps.len() {
        if let Err(e) = land(&folders, &mut steps[done]) {
            let not_back = put_back(&folders, &mut steps[..done]);
            clear(&folders, &steps);
            if not_back.is_empty() {
                return Err(nothing_written(project, e));
            }
            return Err(WorkspaceError::Refused(format!(
                "the apply into {} stopped ({e}), and these could not be put back as they were: {}; the work stays in the workspace",
                project.display(),
                not_back.join("; ")
            )));
        }
    }
    // Every step is done: what the temporaries hold now is the old. A
    // journal that cannot say so leaves them, for the next apply to see
    // the landing whole and remove them.
    journal(Phase::Landed)?;
    for step in &steps {
        if !step.write || step.exchanged {
            let _ = remove_beneath(folders.held[step.parent].as_fd(), &step.temporary);
        }
    }
    Ok(())
}

fn nothing_written(project: &Path, e: WorkspaceError) -> WorkspaceError {
    let why = match e {
        WorkspaceError::Refused(why) => why,
        other => other.to_string(),
    };
    WorkspaceError::Refused(format!(
        "nothing was written into {}: {why}; your tree is as it was and the work stays in the workspace",
        project.display()
    ))
}

/// One step of the landing, on the held folder.
fn land(folders: &Folders<'_>, step: &mut Step) -> Result<(), WorkspaceError> {
    landing(folders, step)?;
    step.landed = true;
    Ok(())
}

fn landing(folders: &Folders<'_>, step: &mut Step) -> Result<(), WorkspaceError> {
    let dir = folders.held[step.parent].as_fd();
    let failed = |e: Errno| {
        WorkspaceError::Refused(format!(
            "{} could not be {}: {}",
            step.rel.display(),
            if step.write { "written" } else { "removed" },
            e.desc()
        ))
    };
    if !step.write {
        return renameat2(
            dir,
            step.name.as_os_str(),
            dir,
            step.temporary.as_os_str(),
            RenameFlags::RENAME_NOREPLACE,
        )
        .map_err(failed);
    }
    // Over what is there, exchanged (so it can be put back); else only
    // where nothing is.
    let exists = lstat(dir, &step.name).is_some();
    let flags = if exists {
        RenameFlags::RENAME_EXCHANGE
    } else {
        RenameFlags::RENAME_NOREPLACE
    };
    renameat2(
        dir,
        step.temporary.as_os_str(),
        dir,
        step.name.as_os_str(),
        flags,
    )
    .map_err(failed)?;
    step.exchanged = exists;
    Ok(())
}

/// Undoes landed `steps`, the last first; the paths that could not be.
fn put_back(folders: &Folders<'_>, steps: &mut [Step]) -> Vec<String> {
    let mut not_back = Vec::new();
    for step in steps.iter_mut().rev() {
        let dir = folders.held[step.parent].as_fd();
        let (from, to, flags) = if step.exchanged {
            (&step.temporary, &step.name, RenameFlags::RENAME_EXCHANGE)
        } else if step.write {
            (&step.name, &step.temporary, RenameFlags::RENAME_NOREPLACE)
        } else {
            (&step.temporary, &step.name, RenameFlags::RENAME_NOREPLACE)
        };
        match renameat2(dir, from.as_os_str(), dir, to.as_os_str(), flags) {
            Ok(()) => step.landed = false,
            Err(e) => not_back.push(format!(
                "{} (your old entry is {}: {})",
                step.rel.display(),
                folders.shown(step.parent).join(&step.temporary).display(),
                e.desc()
            )),
        }
    }
    not_back
}

/// Removes every staged temporary of a step not in place (the old entries
/// of steps put back are under their own names again; a step that could
/// not be put back keeps the old entry under its temporary name).
fn clear(folders: &Folders<'_>, steps: &[Step]) {
    for step in steps.iter().filter(|s| s.write && !s.landed) {
        let _ = remove_beneath(folders.held[step.parent].as_fd(), &step.temporary);
    }
}

/// The folders changes land in, each opened once beneath the project.
struct Folders<'a> {
    project: &'a Path,
    top: OwnedFd,
    held: Vec<OwnedFd>,
    index: BTreeMap<PathBuf, usize>,
}

impl Folders<'_> {
    /// The folder `dir` (relative, `""` for the project), opened beneath
    /// the project with no link followed, and held.
    fn hold(&mut self, dir: &Path) -> Result<usize, WorkspaceError> {
        if let Some(&known) = self.index.get(dir) {
            return Ok(known);
        }
        let fd = if dir.as_os_str().is_empty() {
            self.top
                .try_clone()
                .map_err(|e| WorkspaceError::Refused(format!("{}: {e}", self.project.display())))?
        } else {
            let shown = self.project.join(dir);
            let fd = sys::open_path(self.top.as_raw_fd(), &cstring(dir), true)
                .map(sys::owned)
                .map_err(|e| match e {
                    Errno::ELOOP | Errno::EXDEV => WorkspaceError::Refused(format!(
                        "{} is or goes through a symbolic link in your tree, so nothing is written through it",
                        shown.display()
                    )),
                    e => WorkspaceError::Refused(format!("{}: {}", shown.display(), e.desc())),
                })?;
            match sys::file_id(fd.as_raw_fd()) {
                Ok(id) if id.kind == libc::S_IFDIR => fd,
                _ => {
                    return Err(WorkspaceError::Refused(format!(
                        "{} is no longer a folder in your tree",
                        shown.display()
                    )));
                }
            }
        };
        self.held.push(fd);
        self.index.insert(dir.to_path_buf(), self.held.len() - 1);
        Ok(self.held.len() - 1)
    }

    fn shown(&self, index: usize) -> PathBuf {
        let rel = self
            .index
            .iter()
            .find(|(_, i)| **i == index)
            .map(|(rel, _)| rel.clone())
            .unwrap_or_default();
        self.project.join(rel)
    }
}

/// Makes `name` in `dir` what the upper layer (opened as `upper`) holds at
/// `rel`, read beneath it with no link followed: a file, a link, a folder
/// with its entries, `denied` paths left out. `false` when there is
/// nothing to carry (a socket, a FIFO, a device, a denied path).
pub(super) fn copy(
    upper: &OwnedFd,
    denied: &[&Path],
    count: &mut usize,
    rel: &Path,
    dir: std::os::fd::BorrowedFd<'_>,
    name: &OsStr,
) -> Result<bool, WorkspaceError> {
    if denied.contains(&rel) {
        return Ok(false);
    }
    *count += 1;
    if *count > MAX_ENTRIES {
        return Err(WorkspaceError::Refused(format!(
            "the session's changes hold more than {MAX_ENTRIES} entries, more than Chock writes in one apply"
        )));
    }
    let failed = |what: &'static str| {
        move |e: Errno| WorkspaceError::Refused(format!("{what} {}: {}", rel.display(), e.desc()))
    };
    let source = beneath(upper, rel, OFlag::O_PATH | OFlag::O_NOFOLLOW)
        .map_err(failed("reading the session's"))?;
    let stat = nix::sys::stat::fstat(&source).map_err(failed("reading the session's"))?;
    let mode = Mode::from_bits_truncate(stat.st_mode & 0o7777);
    match stat.st_mode & libc::S_IFMT {
        libc::S_IFREG => {
            let mut from = std::fs::File::from(
                beneath(upper, rel, OFlag::O_RDONLY | OFlag::O_NOFOLLOW)
                    .map_err(failed("reading the session's"))?,
            );
            let mut to = std::fs::File::from(
                nix::fcntl::openat(
                    dir,
                    name,
                    OFlag::O_WRONLY
                        | OFlag::O_CREAT
                        | OFlag::O_EXCL
                        | OFlag::O_NOFOLLOW
                        | OFlag::O_CLOEXEC,
                    Mode::from_bits_truncate(0o600),
                )
                .map_err(failed("writing"))?,
            );
            std::io::copy(&mut from, &mut to)
                .map_err(|e| WorkspaceError::Refused(format!("writing {}: {e}", rel.display())))?;
            nix::sys::stat::fchmod(&to, mode).map_err(failed("writing"))?;
            Ok(true)
        }
        libc::S_IFLNK => {
            let target = nix::fcntl::readlinkat(&source, "").map_err(failed("reading the link"))?;
            nix::unistd::symlinkat(target.as_os_str(), dir, name).map_err(failed("linking"))?;
            Ok(true)
        }
        libc::S_IFDIR => {
            nix::sys::stat::mkdirat(dir, name, Mode::from_bits_truncate(0o700))
                .map_err(failed("making the folder"))?;
            let made = openat2(
                dir,
                name,
                OpenHow::new()
                    .flags(OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC)
                    .resolve(ResolveFlag::RESOLVE_BENEATH | ResolveFlag::RESOLVE_NO_SYMLINKS),
            )
            .map_err(failed("opening the folder made for"))?;
            let listing = beneath(upper, rel, OFlag::O_RDONLY | OFlag::O_DIRECTORY)
                .map_err(failed("reading the session's"))?;
            let mut names: Vec<OsString> = nix::dir::Dir::from_fd(listing)
                .map_err(failed("reading the session's"))?
                .iter()
                .filter_map(Result::ok)
                .map(|e| OsStr::from_bytes(e.file_name().to_bytes()).to_os_string())
                .filter(|n| n != "." && n != "..")
                .collect();
            names.sort();
            for child in names {
                copy(
                    upper,
                    denied,
                    count,
                    &rel.join(&child),
                    made.as_fd(),
                    &child,
                )?;
            }
            nix::sys::stat::fchmod(&made, mode).map_err(failed("writing"))?;
            Ok(true)
        }
        // Sockets, FIFOs, devices: nothing to carry.
        _ => Ok(false),
    }
}

/// Finishes a landing into `project` that a killed apply (process `pid`)
/// left: before every step landed (`landed` false), each step that landed
/// is put back and every staged entry removed, so the tree is as it was;
/// after, the old entries left under temporary names are removed. With
/// no steps known (it was killed while staging), every temporary of
/// `pid`'s in the folders of `changes` is removed. What could not be
/// done, one sentence each.
pub(crate) fn recover(
    project: &Path,
    pid: u32,
    changes: &[PathBuf],
    steps: Option<&[Staged]>,
    landed: bool,
) -> Result<Vec<String>, WorkspaceError> {
    let refused = |e: crate::SandboxError| WorkspaceError::Refused(e.to_string());
    let (top, _) = open_top(project).map_err(refused)?;
    let mut folders = Folders {
        project,
        top,
        held: Vec::new(),
        index: BTreeMap::new(),
    };
    let mut left = Vec::new();
    let Some(steps) = steps else {
        let prefix = format!(".chock-apply-{pid}-");
        let mut dirs: Vec<&Path> = changes.iter().filter_map(|c| c.parent()).collect();
        dirs.sort();
        dirs.dedup();
        for dir in dirs {
            let Ok(at) = folders.hold(dir) else { continue };
            let held = folders.held[at].as_fd();
            for name in names_in(held).unwrap_or_default() {
                if name.as_bytes().starts_with(prefix.as_bytes())
                    && remove_beneath(held, &name).is_err()
                {
                    left.push(format!("{}", project.join(dir).join(&name).display()));
                }
            }
        }
        return Ok(left);
    };
    for step in steps.iter().rev() {
        let (dir, name) = split(&step.rel)?;
        let Ok(at) = folders.hold(dir) else {
            left.push(format!("{} (its folder is gone)", step.rel.display()));
            continue;
        };
        let held = folders.held[at].as_fd();
        let temporary = OsString::from(&step.temporary);
        let id = |n: &OsStr| lstat(held, n).map(|st| (st.st_dev, st.st_ino));
        let done = if landed {
            remove_beneath(held, &temporary)
        } else {
            match step.staged {
                // A write that landed: the old entry (if any) back.
                Some(staged) if id(name) == Some(staged) => {
                    if id(&temporary).is_some() {
                        renameat2(
                            held,
                            temporary.as_os_str(),
                            held,
                            name,
                            RenameFlags::RENAME_EXCHANGE,
                        )
                        .and_then(|()| remove_beneath(held, &temporary))
                    } else {
                        remove_beneath(held, name)
                    }
                }
                // Staged, not landed.
                Some(staged) if id(&temporary) == Some(staged) => remove_beneath(held, &temporary),
                Some(_) => Ok(()),
                // A removal that landed: the entry back under its name.
                None if id(name).is_none() && id(&temporary).is_some() => renameat2(
                    held,
                    temporary.as_os_str(),
                    held,
                    name,
                    RenameFlags::RENAME_NOREPLACE,
                ),
                None => Ok(()),
            }
        };
        if let Err(e) = done {
            left.push(format!(
                "{} (its old entry may be {}: {})",
                step.rel.display(),
                project.join(dir).join(&temporary).display(),
                e.desc()
            ));
        }
    }
    Ok(left)
}

/// The names in the folder `dir`, `.` and `..` aside.
fn names_in(dir: std::os::fd::BorrowedFd<'_>) -> Result<Vec<OsString>, Errno> {
    let inner = openat2(
        dir,
        ".",
        OpenHow::new()
            .flags(OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC)
            .resolve(ResolveFlag::RESOLVE_BENEATH | ResolveFlag::RESOLVE_NO_SYMLINKS),
    )?;
    Ok(nix::dir::Dir::from_fd(inner)?
        .iter()
        .filter_map(Result::ok)
        .map(|e| OsStr::from_bytes(e.file_name().to_bytes()).to_os_string())
        .filter(|n| n != "." && n != "..")
        .collect())
}

/// `rel` beneath `dir`, no link followed anywhere on the way.
pub(super) fn beneath(dir: &OwnedFd, rel: &Path, flags: OFlag) -> Result<OwnedFd, Errno> {
    openat2(
        dir,
        rel,
        OpenHow::new().flags(flags | OFlag::O_CLOEXEC).resolve(
            ResolveFlag::RESOLVE_BENEATH
                | ResolveFlag::RESOLVE_NO_SYMLINKS
                | ResolveFlag::RESOLVE_NO_MAGICLINKS,
        ),
    )
}

/// What `name` in `dir` is, no link followed; `None` when nothing is there.
fn lstat(dir: impl AsFd, name: &OsStr) -> Option<nix::sys::stat::FileStat> {
    fstatat(dir, name, nix::fcntl::AtFlags::AT_SYMLINK_NOFOLLOW).ok()
}

/// Removes `name` in `dir` and, for a folder, everything in it, each
/// entry by its folder's descriptor (a folder is given write permission
/// first if a program took it away).
pub(super) fn remove_beneath(dir: std::os::fd::BorrowedFd<'_>, name: &OsStr) -> Result<(), Errno> {
    let Some(stat) = lstat(dir, name) else {
        return Ok(());
    };
    if stat.st_mode & libc::S_IFMT != libc::S_IFDIR {
        return nix::unistd::unlinkat(dir, name, UnlinkatFlags::NoRemoveDir);
    }
    let inner = openat2(
        dir,
        name,
        OpenHow::new()
            .flags(OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC)
            .resolve(ResolveFlag::RESOLVE_BENEATH | ResolveFlag::RESOLVE_NO_SYMLINKS),
    )?;
    let _ = nix::sys::stat::fchmod(&inner, Mode::from_bits_truncate(0o700));
    let names: Vec<OsString> =
        nix::dir::Dir::from_fd(inner.try_clone().map_err(|_| Errno::EMFILE)?)?
            .iter()
            .filter_map(Result::ok)
            .map(|e| OsStr::from_bytes(e.file_name().to_bytes()).to_os_string())
            .filter(|n| n != "." && n != "..")
            .collect();
    for child in names {
        remove_beneath(inner.as_fd(), &child)?;
    }
    nix::unistd::unlinkat(dir, name, UnlinkatFlags::RemoveDir)
}

/// `rel`'s folder and name.
pub(super) fn split(rel: &Path) -> Result<(&Path, &OsStr), WorkspaceError> {
    match (rel.parent(), rel.file_name()) {
        (Some(dir), Some(name)) => Ok((dir, name)),
        _ => Err(WorkspaceError::Refused(format!(
            "`{}` is no path of a file in the project",
            rel.display()
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;
    use std::sync::Arc;
    use std::sync::atomic::AtomicBool;

    /// A project and an upper layer holding `files` (relative path, text).
    fn layers(files: &[(&str, &str)]) -> (tempfile::TempDir, PathBuf, PathBuf) {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path().canonicalize().expect("canonical");
        let (project, upper) = (root.join("project"), root.join("upper"));
        for (rel, text) in files {
            let path = upper.join(rel);
            std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
            std::fs::write(path, text).expect("write");
        }
        std::fs::create_dir_all(&project).expect("mkdir");
        (dir, project, upper)
    }

    fn temporaries(dir: &Path) -> Vec<String> {
        std::fs::read_dir(dir)
            .expect("list")
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with(".chock-apply-"))
            .collect()
    }

    /// Files written, replaced, a folder replaced by a file, a file
    /// removed; the old entries are gone and no temporary is left.
    #[test]
    fn an_apply_writes_replaces_and_removes_by_descriptor() {
        let (_dir, project, upper) = layers(&[
            ("new", "new\n"),
            ("kept/changed", "after\n"),
            ("was_a_folder", "file now\n"),
            ("tree/a/b", "deep\n"),
        ]);
        std::fs::create_dir_all(project.join("kept")).expect("mkdir");
        std::fs::write(project.join("kept/changed"), "before\n").expect("write");
        std::fs::set_permissions(
            project.join("kept/changed"),
            std::fs::Permissions::from_mode(0o755),
        )
        .expect("chmod");
        std::fs::create_dir_all(project.join("was_a_folder/inner")).expect("mkdir");
        std::fs::write(project.join("gone"), "x").expect("write");
        std::os::unix::fs::symlink("new", upper.join("link")).expect("link");
        let changes = [
            Change::Write("kept/changed".into()),
            Change::Write("link".into()),
            Change::Write("new".into()),
            Change::Remove("gone".into()),
            Change::Remove("was_a_folder".into()),
            Change::Write("was_a_folder".into()),
            Change::Write("tree".into()),
        ];
        write_changes(&upper, &project, &changes, &[], &mut |_| Ok(())).expect("applied");
        let read = |rel: &str| std::fs::read_to_string(project.join(rel)).expect(rel);
        assert_eq!(read("new"), "new\n");
        assert_eq!(read("kept/changed"), "after\n");
        assert_eq!(read("was_a_folder"), "file now\n");
        assert_eq!(read("tree/a/b"), "deep\n");
        assert_eq!(
            std::fs::read_link(project.join("link")).expect("link"),
            Path::new("new")
        );
        assert!(!project.join("gone").exists());
        assert!(temporaries(&project).is_empty());
        assert!(temporaries(&project.join("kept")).is_empty());
    }

    /// The fifth of ten files cannot take its place (the person made it
    /// immutable): the four written before it are put back, and the
    /// person's tree is byte for byte as it was, with no temporary left.
    #[test]
    fn a_step_that_fails_puts_back_every_step_before_it() {
        let files: Vec<(String, String)> = (0..10)
            .map(|i| (format!("d{i}/f"), format!("session {i}\n")))
            .collect();
        let borrowed: Vec<(&str, &str)> = files
            .iter()
            .map(|(a, b)| (a.as_str(), b.as_str()))
            .collect();
        let (_dir, project, upper) = layers(&borrowed);
        for i in 0..10 {
            std::fs::create_dir_all(project.join(format!("d{i}"))).expect("mkdir");
            std::fs::write(project.join(format!("d{i}/f")), format!("person {i}\n"))
                .expect("write");
        }
        let fifth = project.join("d4/f");
        let immutable = std::process::Command::new("chattr")
            .arg("+i")
            .arg(&fifth)
            .status()
            .is_ok_and(|s| s.success());
        if !immutable {
            eprintln!("skipped: chattr +i needs root and a file system that keeps the flag");
            return;
        }
        let changes: Vec<Change> = (0..10)
            .map(|i| Change::Write(format!("d{i}/f").into()))
            .collect();
        let result = write_changes(&upper, &project, &changes, &[], &mut |_| Ok(()));
        let _ = std::process::Command::new("chattr")
            .arg("-i")
            .arg(&fifth)
            .status();
        let why = result.expect_err("refused").to_string();
        assert!(why.contains("nothing was written"), "{why}");
        assert!(why.contains("d4/f"), "{why}");
        for i in 0..10 {
            let dir = project.join(format!("d{i}"));
            assert_eq!(
                std::fs::read_to_string(dir.join("f")).expect("read"),
                format!("person {i}\n")
            );
            assert!(temporaries(&dir).is_empty(), "{dir:?}");
        }
    }

    /// A folder of the person's is swapped again and again with a link to
    /// a folder outside (`renameat2(RENAME_EXCHANGE)`) while applies run:
    /// none ever writes outside. Each either lands in the folder itself
    /// (wherever it is named at the time) or refuses, leaving nothing.
    #[test]
    fn an_apply_racing_a_folder_swapped_for_a_link_never_writes_outside() {
        let (dir, project, upper) = layers(&[("sub/new", "session\n"), ("sub/other", "more\n")]);
        let outside = dir
            .path()
            .canonicalize()
            .expect("canonical")
            .join("outside");
        std::fs::create_dir(&outside).expect("mkdir");
        std::fs::create_dir(project.join("sub")).expect("mkdir");
        std::os::unix::fs::symlink(&outside, project.join("link")).expect("link");
        let held = std::fs::File::open(project.join("sub")).expect("open");
        let real = PathBuf::from(format!("/proc/self/fd/{}", held.as_raw_fd()));
        let stop = Arc::new(AtomicBool::new(false));
        let swapper = {
            let (stop, project) = (stop.clone(), project.clone());
            std::thread::spawn(move || {
                let mut swaps = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    renameat2(
                        nix::fcntl::AT_FDCWD,
                        &project.join("sub"),
                        nix::fcntl::AT_FDCWD,
                        &project.join("link"),
                        RenameFlags::RENAME_EXCHANGE,
                    )
                    .expect("exchanged");
                    swaps += 1;
                }
                swaps
            })
        };
        let changes = [
            Change::Write("sub/new".into()),
            Change::Write("sub/other".into()),
        ];
        let (mut landed, mut refused) = (0, 0);
        let until = std::time::Instant::now() + std::time::Duration::from_secs(3);
        while std::time::Instant::now() < until {
            match write_changes(&upper, &project, &changes, &[], &mut |_| Ok(())) {
                Ok(()) => {
                    landed += 1;
                    assert_eq!(
                        std::fs::read_to_string(real.join("new")).expect("in the folder"),
                        "session\n"
                    );
                    for name in ["new", "other"] {
                        std::fs::remove_file(real.join(name)).expect("remove");
                    }
                }
                Err(e) => {
                    refused += 1;
                    assert!(e.to_string().contains("nothing was written"), "{e}");
                    assert!(!real.join("new").exists() && !real.join("other").exists());
                }
            }
            assert!(temporaries(&real).is_empty());
            let left: Vec<_> = std::fs::read_dir(&outside).expect("list").collect();
            assert!(left.is_empty(), "written outside: {left:?}");
        }
        stop.store(true, Ordering::Relaxed);
        let swaps = swapper.join().expect("swapper");
        eprintln!("{landed} applies landed, {refused} refused, {swaps} swaps");
        assert!(swaps > 0 && landed + refused > 0);
        assert!(std::fs::read_dir(&outside).expect("list").next().is_none());
    }
}
