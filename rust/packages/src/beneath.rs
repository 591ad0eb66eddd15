//! Writing beneath `.agents/policies/` through descriptors, never through a
//! path resolved twice. Each folder on the way (`.agents`, `policies`, a
//! package's own) is opened relative to the one before with `O_NOFOLLOW`,
//! so a symbolic link planted at any step (by a program that ran in the
//! project) is refused rather than followed; a package is written into a
//! fresh staging folder opened the same way and renamed into place from
//! one descriptor to the other, so nothing lands outside the folder a name
//! opened to.

use std::ffi::OsStr;
use std::fs::File;
use std::io::Write as _;
use std::os::fd::{AsFd, AsRawFd as _, OwnedFd};
use std::os::unix::ffi::OsStrExt as _;
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use chock_policy::package::POLICIES_DIR;
use rustix::fs::{AtFlags, FileType, Mode, OFlags, RenameFlags};
use rustix::io::Errno;

use crate::PackageError;

/// One file of a package to write: its path inside the package, its bytes
/// and whether it is executable.
pub struct PackageFile {
    pub rel: PathBuf,
    pub bytes: Vec<u8>,
    pub executable: bool,
}

/// The folder of `.agents/policies/` that disabled packages wait in.
pub const DISABLED_DIR: &str = ".disabled";

/// `.agents/policies/` of a project, opened folder by folder.
pub struct PoliciesDir {
    fd: OwnedFd,
    path: PathBuf,
}

fn failed(path: &Path, action: &'static str, e: Errno) -> PackageError {
    PackageError::Io {
        path: path.to_path_buf(),
        action,
        source: e.into(),
    }
}

/// A link or a file where a folder must be.
fn not_a_folder(path: &Path) -> PackageError {
    PackageError::Refused(format!(
        "{}: is a symbolic link or not a folder, and Chock writes policy packages only into real folders beneath {POLICIES_DIR}/ (a link there could send the write anywhere): remove it and run the command again",
        path.display()
    ))
}

const DIR_FLAGS: OFlags = OFlags::RDONLY
    .union(OFlags::DIRECTORY)
    .union(OFlags::NOFOLLOW)
    .union(OFlags::CLOEXEC);

/// Opens the folder `name` in `parent`, refusing a link; with `create`, a
/// missing one is made first.
fn open_dir(
    parent: impl AsFd,
    name: &OsStr,
    shown: &Path,
    create: bool,
) -> Result<OwnedFd, PackageError> {
    let parent = parent.as_fd();
    match rustix::fs::openat(parent, name, DIR_FLAGS, Mode::empty()) {
        Ok(fd) => Ok(fd),
        Err(Errno::NOENT) if create => {
            match rustix::fs::mkdirat(parent, name, Mode::from_raw_mode(0o755)) {
                Ok(()) | Err(Errno::EXIST) => {}
                Err(e) => return Err(failed(shown, "creating", e)),
            }
            open_dir(parent, name, shown, false)
        }
        Err(Errno::LOOP | Errno::NOTDIR) => Err(not_a_folder(shown)),
        Err(e) => Err(failed(shown, "opening", e)),
    }
}

impl PoliciesDir {
    /// Opens `project/.agents/policies/`, making the folders that are
    /// missing; a link at either step is refused.
    pub fn open(project: &Path) -> Result<PoliciesDir, PackageError> {
        let mut fd = rustix::fs::open(
            project,
            DIR_FLAGS.difference(OFlags::NOFOLLOW),
            Mode::empty(),
        )
        .map_err(|e| failed(project, "opening", e))?;
        let mut path = project.to_path_buf();
        for step in Path::new(POLICIES_DIR).components() {
            path.push(step);
            fd = open_dir(&fd, step.as_os_str(), &path, true)?;
        }
        Ok(PoliciesDir { fd, path })
    }

    /// Where the folder is, for messages.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// `.agents/policies/.disabled/`, where `chock disable` keeps a package
    /// out of force (a folder whose name starts with `.` is no package),
    /// made when missing; a link at any step is refused.
    pub fn open_disabled(project: &Path) -> Result<PoliciesDir, PackageError> {
        let policies = PoliciesDir::open(project)?;
        let path = policies.path.join(DISABLED_DIR);
        let fd = open_dir(&policies.fd, OsStr::new(DISABLED_DIR), &path, true)?;
        Ok(PoliciesDir { fd, path })
    }

    /// Removes the package `id`, if there is one: renamed aside in one
    /// step (so no half-removed package is ever read as one), then its
    /// tree removed without following a link. What was renamed must be the
    /// folder opened first (its device and inode): anything swapped in
    /// meanwhile is put back and nothing removed. Whether there was one.
    pub fn remove(&self, id: &str) -> Result<bool, PackageError> {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let Some(opened) = self.installed(id)? else {
            return Ok(false);
        };
        let aside = format!(
            ".{id}.gone-{}-{}",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed)
        );
        let shown = self.path.join(id);
        rustix::fs::renameat_with(
            &self.fd,
            id,
            &self.fd,
            aside.as_str(),
            RenameFlags::NOREPLACE,
        )
        .map_err(|e| failed(&shown, "removing", e))?;
        if !same_object(&opened, &self.fd, &aside)? {
            put_back(&self.fd, &aside, &self.fd, id, &shown)?;
            return Err(changed_meanwhile(&shown, "removed"));
        }
        remove_tree(&self.fd, OsStr::new(&aside), &self.path.join(&aside))?;
        Ok(true)
    }

    /// Moves the package `id` from this folder into `to` in one rename,
    /// never over a folder there. What arrived must be the folder opened
    /// first (its device and inode): anything swapped in meanwhile is put
    /// back and the move refused.
    pub fn move_to(&self, id: &str, to: &PoliciesDir) -> Result<(), PackageError> {
        let shown = self.path.join(id);
        let Some(opened) = self.installed(id)? else {
            return Err(PackageError::Refused(format!(
                "{}: there is no policy `{id}` there",
                self.path.display()
            )));
        };
        let target = to.path.join(id);
        rustix::fs::renameat_with(&self.fd, id, &to.fd, id, RenameFlags::NOREPLACE).map_err(
            |e| match e {
                Errno::EXIST => PackageError::Refused(format!(
                    "{} already exists: remove one of the two copies of `{id}` first",
                    target.display()
                )),
                e => failed(&target, "moving", e),
            },
        )?;
        if !same_object(&opened, &to.fd, id)? {
            put_back(&to.fd, id, &self.fd, id, &shown)?;
            return Err(changed_meanwhile(&shown, "moved"));
        }
        Ok(())
    }

    /// The package folder `id` as it is now: none, or the folder opened (a
    /// link or a file in its place is refused). Read it through
    /// [`fd_path`], which names the opened folder and no other.
    pub fn installed(&self, id: &str) -> Result<Option<OwnedFd>, PackageError> {
        let shown = self.path.join(id);
        match rustix::fs::statat(&self.fd, id, AtFlags::SYMLINK_NOFOLLOW) {
            Err(Errno::NOENT) => Ok(None),
            Err(e) => Err(failed(&shown, "opening", e)),
            Ok(stat) if FileType::from_raw_mode(stat.st_mode) != FileType::Directory => {
                Err(not_a_folder(&shown))
            }
            Ok(_) => open_dir(&self.fd, OsStr::new(id), &shown, false).map(Some),
        }
    }

    /// Writes `files` as the package `id`: into a fresh staging folder, then
    /// renamed into place. With `replace`, what is at `id` now is moved
    /// into the staging folder first and removed with it; without, a
    /// folder that appeared at `id` meanwhile is left alone and the write
    /// refused.
    pub fn put(&self, id: &str, files: &[PackageFile], replace: bool) -> Result<(), PackageError> {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let staging = format!(
            ".{id}.new-{}-{}",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed)
        );
        let staging_path = self.path.join(&staging);
        rustix::fs::mkdirat(&self.fd, staging.as_str(), Mode::from_raw_mode(0o700))
            .map_err(|e| failed(&staging_path, "creating", e))?;
        let result = self.fill_and_swap(id, &staging, &staging_path, files, replace);
        let cleaned = remove_tree(&self.fd, OsStr::new(&staging), &staging_path);
        result.and(cleaned)
    }

    fn fill_and_swap(
        &self,
        id: &str,
        staging: &str,
        staging_path: &Path,
        files: &[PackageFile],
        replace: bool,
    ) -> Result<(), PackageError> {
        let staging_fd = open_dir(&self.fd, OsStr::new(staging), staging_path, false)?;
        let fresh = staging_path.join("package");
        let package_fd = open_dir(&staging_fd, OsStr::new("package"), &fresh, true)?;
        for file in files {
            write_file(&package_fd, &fresh, file)?;
        }
        let target = self.path.join(id);
        if replace {
            match rustix::fs::renameat(&self.fd, id, &staging_fd, "old") {
                Ok(()) | Err(Errno::NOENT) => {}
                Err(e) => return Err(failed(&target, "putting in place", e)),
            }
        }
        rustix::fs::renameat_with(&staging_fd, "package", &self.fd, id, RenameFlags::NOREPLACE)
            .map_err(|e| match e {
                Errno::EXIST => PackageError::Refused(format!(
                    "{}: something appeared there while the package was written; nothing was replaced: run the command again",
                    target.display()
                )),
                e => failed(&target, "putting in place", e),
            })
    }

    /// Writes `bytes` as the file `name` of this folder, replacing it in
    /// one rename (a link there is replaced, never written through).
    pub fn write_file(&self, name: &str, bytes: &[u8]) -> Result<(), PackageError> {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let temp = format!(
            ".{name}.new-{}-{}",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed)
        );
        let shown = self.path.join(name);
        let file = PackageFile {
            rel: PathBuf::from(&temp),
            bytes: bytes.to_vec(),
            executable: false,
        };
        write_file(&self.fd, &self.path, &file)?;
        rustix::fs::renameat(&self.fd, temp.as_str(), &self.fd, name).map_err(|e| {
            let _ = rustix::fs::unlinkat(&self.fd, temp.as_str(), AtFlags::empty());
            failed(&shown, "putting in place", e)
        })
    }
}

/// Creates the new file `rel` beneath the folder `root` (shown as
/// `shown`): each folder on the way opened relative to the one before
/// without following a link (made when missing), the bytes written to a
/// fresh temporary file there and renamed onto `rel`'s name only if
/// nothing is at that name, so a reader sees the whole file or none and an
/// existing file is never written over. A link or file where a folder must
/// be is refused, naming it.
pub fn create_new(root: &Path, rel: &Path, bytes: &[u8]) -> Result<PathBuf, PackageError> {
    let root_fd = rustix::fs::open(root, DIR_FLAGS.difference(OFlags::NOFOLLOW), Mode::empty())
        .map_err(|e| failed(root, "opening", e))?;
    create_new_at(root_fd, root, rel, bytes)
}

/// [`create_new`] beneath the folder already opened as `root_fd`, shown
/// in messages as `root`.
pub fn create_new_at(
    root_fd: OwnedFd,
    root: &Path,
    rel: &Path,
    bytes: &[u8],
) -> Result<PathBuf, PackageError> {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let (Some(parent), Some(name)) = (rel.parent(), rel.file_name()) else {
        return Err(PackageError::Refused(format!(
            "{}: not a file's path",
            rel.display()
        )));
    };
    let mut dir = root_fd;
    let mut shown = root.to_path_buf();
    for step in parent.components() {
        let Component::Normal(step) = step else {
            return Err(PackageError::Refused(format!(
                "{}: a path inside {}, with no `..` and not absolute",
                rel.display(),
                root.display()
            )));
        };
        shown.push(step);
        dir = open_dir(&dir, step, &shown, true)?;
    }
    let target = shown.join(name);
    let temp = format!(
        ".{}.new-{}-{}",
        name.to_string_lossy(),
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    );
    let file = PackageFile {
        rel: PathBuf::from(&temp),
        bytes: bytes.to_vec(),
        executable: false,
    };
    write_file(&dir, &shown, &file)?;
    let placed = rustix::fs::renameat_with(&dir, temp.as_str(), &dir, name, RenameFlags::NOREPLACE);
    if placed.is_err() {
        let _ = rustix::fs::unlinkat(&dir, temp.as_str(), AtFlags::empty());
    }
    placed.map_err(|e| match e {
        Errno::EXIST => PackageError::Refused(format!(
            "{} already exists: pick another name, or edit that file",
            target.display()
        )),
        e => failed(&target, "putting in place", e),
    })?;
    Ok(target)
}

/// Whether `name` in `parent` is, without following a link, the object
/// `opened` is (the same device and inode).
fn same_object(opened: &OwnedFd, parent: &OwnedFd, name: &str) -> Result<bool, PackageError> {
    let was = rustix::fs::fstat(opened).map_err(|e| failed(Path::new(name), "reading", e))?;
    let now = rustix::fs::statat(parent, name, AtFlags::SYMLINK_NOFOLLOW)
        .map_err(|e| failed(Path::new(name), "reading", e))?;
    Ok(was.st_dev == now.st_dev && was.st_ino == now.st_ino)
}

/// Renames `from` in `from_dir` back to `to` in `to_dir`, never over
/// anything there.
fn put_back(
    from_dir: &OwnedFd,
    from: &str,
    to_dir: &OwnedFd,
    to: &str,
    shown: &Path,
) -> Result<(), PackageError> {
    rustix::fs::renameat_with(from_dir, from, to_dir, to, RenameFlags::NOREPLACE)
        .map_err(|e| failed(shown, "putting back what was swapped in", e))
}

fn changed_meanwhile(shown: &Path, verb: &str) -> PackageError {
    PackageError::Refused(format!(
        "{}: it was replaced while it was being {verb} (a link or another folder was swapped in); it was put back and nothing was {verb}: run the command again",
        shown.display()
    ))
}

/// `/proc/self/fd/N` of an opened folder: a path that reaches that folder
/// and no other, whatever is renamed or linked meanwhile.
pub fn fd_path(fd: &OwnedFd) -> PathBuf {
    PathBuf::from(format!("/proc/self/fd/{}", fd.as_raw_fd()))
}

/// Creates `file` under the folder `root`, each folder on its way opened
/// without following a link, the file itself new (`O_EXCL`).
fn write_file(root: &OwnedFd, shown: &Path, file: &PackageFile) -> Result<(), PackageError> {
    let mut parts: Vec<&OsStr> = Vec::new();
    for part in file.rel.components() {
        match part {
            Component::Normal(name) => parts.push(name),
            _ => {
                return Err(PackageError::Refused(format!(
                    "{}: a package's file names a path inside it, with no `..` and not absolute",
                    file.rel.display()
                )));
            }
        }
    }
    let Some((name, folders)) = parts.split_last() else {
        return Err(PackageError::Refused(
            "a package's file has an empty name".into(),
        ));
    };
    let mut path = shown.to_path_buf();
    let mut dir: Option<OwnedFd> = None;
    for folder in folders {
        path.push(folder);
        let parent = dir.as_ref().unwrap_or(root);
        dir = Some(open_dir(parent, folder, &path, true)?);
    }
    path.push(name);
    let parent = dir.as_ref().unwrap_or(root);
    let mode = Mode::from_raw_mode(if file.executable { 0o755 } else { 0o644 });
    let fd = rustix::fs::openat(
        parent,
        *name,
        OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        mode,
    )
    .map_err(|e| failed(&path, "writing", e))?;
    rustix::fs::fchmod(&fd, mode).map_err(|e| failed(&path, "writing", e))?;
    let mut out = File::from(fd);
    out.write_all(&file.bytes)
        .map_err(|source| PackageError::Io {
            path: path.clone(),
            action: "writing",
            source,
        })?;
    Ok(())
}

/// Removes `name` in `parent` and everything under it, descending only
/// into folders opened without following a link (a link is unlinked
/// itself).
fn remove_tree(parent: &OwnedFd, name: &OsStr, shown: &Path) -> Result<(), PackageError> {
    match open_dir(parent, name, shown, false) {
        Ok(fd) => {
            let entries =
                rustix::fs::Dir::read_from(&fd).map_err(|e| failed(shown, "removing", e))?;
            for entry in entries {
                let entry = entry.map_err(|e| failed(shown, "removing", e))?;
                let child = OsStr::from_bytes(entry.file_name().to_bytes());
                if child == "." || child == ".." {
                    continue;
                }
                remove_tree(&fd, child, &shown.join(child))?;
            }
            rustix::fs::unlinkat(parent, name, AtFlags::REMOVEDIR)
                .map_err(|e| failed(shown, "removing", e))
        }
        Err(PackageError::Refused(_)) => rustix::fs::unlinkat(parent, name, AtFlags::empty())
            .map_err(|e| failed(shown, "removing", e)),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Swaps `.agents/policies/p` with a link to a folder outside, over and
    /// over, while `remove` and `move_to` run: whatever they meet, nothing
    /// outside is touched, no link lands in `.disabled`, and a swap between
    /// the check and the rename is caught by the inode and put back.
    #[test]
    fn a_link_swapped_in_is_never_followed_and_a_swap_is_put_back() {
        let root = tempfile::tempdir().unwrap();
        let project = root.path().join("project");
        let victim = root.path().join("victim");
        std::fs::create_dir_all(victim.join("sub")).unwrap();
        std::fs::write(victim.join("sub/keep"), "keep").unwrap();
        std::fs::create_dir_all(&project).unwrap();
        let policies = PoliciesDir::open(&project).unwrap();
        let disabled = PoliciesDir::open_disabled(&project).unwrap();
        let dir = policies.path().to_path_buf();
        std::os::unix::fs::symlink(&victim, dir.join(".swap")).unwrap();
        let (mut caught, mut done) = (0, 0);
        for round in 0..400 {
            let package = [PackageFile {
                rel: PathBuf::from("manifest.zon"),
                bytes: b".{}".to_vec(),
                executable: false,
            }];
            if policies.installed("p").ok().flatten().is_none() && !dir.join("p").is_symlink() {
                policies.put("p", &package, false).unwrap();
            }
            let _ = disabled.remove("p");
            let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
            let started = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
            let swapper = {
                let (stop, started, dir) = (stop.clone(), started.clone(), dir.clone());
                std::thread::spawn(move || {
                    let fd = rustix::fs::open(&dir, DIR_FLAGS, Mode::empty()).unwrap();
                    for _ in 0..20_000 {
                        started.store(true, Ordering::Relaxed);
                        if stop.load(Ordering::Relaxed) {
                            break;
                        }
                        let _ = rustix::fs::renameat_with(
                            &fd,
                            "p",
                            &fd,
                            ".swap",
                            RenameFlags::EXCHANGE,
                        );
                    }
                })
            };
            while !started.load(Ordering::Relaxed) {
                std::thread::yield_now();
            }
            let result = if round % 2 == 0 {
                policies.remove("p").map(|_| ())
            } else {
                policies.move_to("p", &disabled)
            };
            stop.store(true, Ordering::Relaxed);
            swapper.join().unwrap();
            match result {
                Ok(()) => done += 1,
                Err(e) if e.to_string().contains("was replaced while") => caught += 1,
                Err(_) => {}
            }
            assert!(
                victim.join("sub/keep").is_file(),
                "round {round}: the link was followed"
            );
            assert!(
                !disabled.path().join("p").is_symlink(),
                "round {round}: a link was moved"
            );
            // Put the names back as they were: `p` a folder (or gone), `.swap` the link.
            if dir.join("p").is_symlink() {
                let _ = std::fs::rename(dir.join("p"), dir.join(".tmp"));
                let _ = std::fs::rename(dir.join(".swap"), dir.join("p"));
                std::fs::rename(dir.join(".tmp"), dir.join(".swap")).unwrap();
            }
        }
        eprintln!("400 rounds: {done} removed or moved, {caught} swaps caught and put back");
        assert!(
            caught > 0,
            "no round caught a swap ({done} done): the race was not run"
        );
    }
}
