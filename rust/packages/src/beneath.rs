//! Writing beneath a folder Chock keeps (`.agents/policies/`,
//! `.agents/plugins/`, the person's own plugins) through descriptors, never
//! through a path resolved twice. Each folder on the way (`.agents`,
//! `policies`, a package's own) is opened relative to the one before with
//! `O_NOFOLLOW`, so a symbolic link planted at any step (by a program that
//! ran in the project) is refused rather than followed; a package is
//! written into a fresh staging folder opened the same way and renamed into
//! place from one descriptor to the other, so nothing lands outside the
//! folder a name opened to.

use std::ffi::OsStr;
use std::fs::File;
use std::io::{Read as _, Write as _};
use std::os::fd::{AsFd, AsRawFd as _, OwnedFd};
use std::os::unix::ffi::OsStrExt as _;
use std::os::unix::fs::DirBuilderExt as _;
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

/// A folder opened beneath a base, folder by folder without following a
/// link: `.agents/policies/` or `.agents/plugins/` of a project, or the
/// person's own plugins beneath their data folder. One folder in it per
/// package or plugin.
pub struct Beneath {
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
        "{}: is a symbolic link or not a folder, and Chock writes and reads policy packages and plugins only through real folders (a link there could send them anywhere): remove it and run the command again",
        path.display()
    ))
}

/// A link or something else where a plain file must be.
fn not_a_file(path: &Path) -> PackageError {
    PackageError::Refused(format!(
        "{}: is a symbolic link or not a plain file, and Chock reads it only as a real file (a link there could point anywhere): install it again",
        path.display()
    ))
}

const DIR_FLAGS: OFlags = OFlags::RDONLY
    .union(OFlags::DIRECTORY)
    .union(OFlags::NOFOLLOW)
    .union(OFlags::CLOEXEC);

/// Folders made for what every user of the machine may read.
const SHARED: Mode = Mode::from_raw_mode(0o755);
/// Folders made for the person alone.
const PRIVATE: Mode = Mode::from_raw_mode(0o700);

/// Opens the folder `name` in `parent`, refusing a link; none when it is
/// missing.
fn find_dir(
    parent: impl AsFd,
    name: &OsStr,
    shown: &Path,
) -> Result<Option<OwnedFd>, PackageError> {
    match rustix::fs::openat(parent, name, DIR_FLAGS, Mode::empty()) {
        Ok(fd) => Ok(Some(fd)),
        Err(Errno::NOENT) => Ok(None),
        Err(Errno::LOOP | Errno::NOTDIR) => Err(not_a_folder(shown)),
        Err(e) => Err(failed(shown, "opening", e)),
    }
}

/// Opens the folder `name` in `parent`, refusing a link; with `make`, a
/// missing one is made first with that mode.
fn open_dir(
    parent: impl AsFd,
    name: &OsStr,
    shown: &Path,
    make: Option<Mode>,
) -> Result<OwnedFd, PackageError> {
    let parent = parent.as_fd();
    if let Some(fd) = find_dir(parent, name, shown)? {
        return Ok(fd);
    }
    let missing = || failed(shown, "opening", Errno::NOENT);
    let mode = make.ok_or_else(missing)?;
    match rustix::fs::mkdirat(parent, name, mode) {
        Ok(()) | Err(Errno::EXIST) => {}
        Err(e) => return Err(failed(shown, "creating", e)),
    }
    find_dir(parent, name, shown)?.ok_or_else(missing)
}

impl Beneath {
    /// Opens `base/below` (`below` one of the folders Chock keeps in a
    /// project, such as [`POLICIES_DIR`]): `base` as it is, then each
    /// folder of `below` without following a link, made when missing.
    pub fn open(base: &Path, below: &str) -> Result<Beneath, PackageError> {
        Beneath::chain(base, below, Some(SHARED))?
            .ok_or_else(|| failed(base, "opening", Errno::NOENT))
    }

    /// [`Beneath::open`] for a folder of the person's own (their plugins
    /// beneath `$XDG_DATA_HOME`): what is missing of `base` and `below` is
    /// made for them alone (0700).
    pub fn open_private(base: &Path, below: &str) -> Result<Beneath, PackageError> {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(PRIVATE.as_raw_mode())
            .create(base)
            .map_err(|source| PackageError::Io {
                path: base.to_path_buf(),
                action: "creating",
                source,
            })?;
        Beneath::chain(base, below, Some(PRIVATE))?
            .ok_or_else(|| failed(base, "opening", Errno::NOENT))
    }

    /// [`Beneath::open`] without making anything: none when `base` or a
    /// folder of `below` is missing.
    pub fn existing(base: &Path, below: &str) -> Result<Option<Beneath>, PackageError> {
        Beneath::chain(base, below, None)
    }

    /// `project/.agents/policies/`, made when missing.
    pub fn policies(project: &Path) -> Result<Beneath, PackageError> {
        Beneath::open(project, POLICIES_DIR)
    }

    fn chain(
        base: &Path,
        below: &str,
        make: Option<Mode>,
    ) -> Result<Option<Beneath>, PackageError> {
        let mut fd =
            match rustix::fs::open(base, DIR_FLAGS.difference(OFlags::NOFOLLOW), Mode::empty()) {
                Ok(fd) => fd,
                Err(Errno::NOENT) if make.is_none() => return Ok(None),
                Err(e) => return Err(failed(base, "opening", e)),
            };
        let mut path = base.to_path_buf();
        for step in Path::new(below).components() {
            let Component::Normal(step) = step else {
                return Err(PackageError::Refused(format!(
                    "{below}: a folder beneath {}, with no `..` and not absolute",
                    base.display()
                )));
            };
            path.push(step);
            fd = match make {
                Some(mode) => open_dir(&fd, step, &path, Some(mode))?,
                None => match find_dir(&fd, step, &path)? {
                    Some(fd) => fd,
                    None => return Ok(None),
                },
            };
        }
        Ok(Some(Beneath { fd, path }))
    }

    /// Where the folder is, for messages.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// `.agents/policies/.disabled/`, where `chock disable` keeps a package
    /// out of force (a folder whose name starts with `.` is no package),
    /// made when missing; a link at any step is refused.
    pub fn disabled(project: &Path) -> Result<Beneath, PackageError> {
        let policies = Beneath::policies(project)?;
        let path = policies.path.join(DISABLED_DIR);
        let fd = open_dir(&policies.fd, OsStr::new(DISABLED_DIR), &path, Some(SHARED))?;
        Ok(Beneath { fd, path })
    }

    /// Removes the package `id`, if there is one: renamed aside in one
    /// step (so no half-removed package is ever read as one), then its
    /// tree removed without following a link. What was renamed must be the
    /// folder opened first (its device and inode): anything swapped in
    /// meanwhile is put back and nothing removed. A symbolic link at `id`
    /// is removed itself, never what it points to. Whether there was one.
    pub fn remove(&self, id: &str) -> Result<bool, PackageError> {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        if self.remove_link(id)? {
            return Ok(true);
        }
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

    /// Unlinks `id` if it is a symbolic link; whether it was. A folder
    /// swapped in meanwhile is not unlinked (`EISDIR`), and refused.
    fn remove_link(&self, id: &str) -> Result<bool, PackageError> {
        let shown = self.path.join(id);
        match rustix::fs::statat(&self.fd, id, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(stat) if FileType::from_raw_mode(stat.st_mode) == FileType::Symlink => {
                rustix::fs::unlinkat(&self.fd, id, AtFlags::empty())
                    .map_err(|e| failed(&shown, "removing", e))?;
                Ok(true)
            }
            Ok(_) | Err(Errno::NOENT) => Ok(false),
            Err(e) => Err(failed(&shown, "removing", e)),
        }
    }

    /// Moves the package `id` from this folder into `to` in one rename,
    /// never over a folder there. What arrived must be the folder opened
    /// first (its device and inode): anything swapped in meanwhile is put
    /// back and the move refused.
    pub fn move_to(&self, id: &str, to: &Beneath) -> Result<(), PackageError> {
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
            Ok(_) => open_dir(&self.fd, OsStr::new(id), &shown, None).map(Some),
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
        let staging_fd = open_dir(&self.fd, OsStr::new(staging), staging_path, None)?;
        let fresh = staging_path.join("package");
        let package_fd = open_dir(&staging_fd, OsStr::new("package"), &fresh, Some(SHARED))?;
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
        dir = open_dir(&dir, step, &shown, Some(SHARED))?;
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

/// The plain file `name` in the opened folder `dir` (shown as `shown`),
/// opened without following a link and read to at most `limit` bytes: a
/// link, a folder or anything else there is refused, naming it, as is a
/// longer file.
pub fn read_file(
    dir: &OwnedFd,
    shown: &Path,
    name: &str,
    limit: u64,
) -> Result<Vec<u8>, PackageError> {
    let path = shown.join(name);
    let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
    let fd = rustix::fs::openat(dir, name, flags, Mode::empty()).map_err(|e| match e {
        Errno::LOOP => not_a_file(&path),
        e => failed(&path, "reading", e),
    })?;
    let stat = rustix::fs::fstat(&fd).map_err(|e| failed(&path, "reading", e))?;
    if FileType::from_raw_mode(stat.st_mode) != FileType::RegularFile {
        return Err(not_a_file(&path));
    }
    let mut bytes = Vec::new();
    File::from(fd)
        .take(limit.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(|source| PackageError::Io {
            path: path.clone(),
            action: "reading",
            source,
        })?;
    if bytes.len() as u64 > limit {
        return Err(PackageError::Refused(format!(
            "{}: over the {limit}-byte bound",
            path.display()
        )));
    }
    Ok(bytes)
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
        dir = Some(open_dir(parent, folder, &path, Some(SHARED))?);
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
    match open_dir(parent, name, shown, None) {
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
        let policies = Beneath::policies(&project).unwrap();
        let disabled = Beneath::disabled(&project).unwrap();
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
            if !dir.join(".swap").is_symlink() {
                // `remove` met the link at `p` and removed it (the link itself).
                std::fs::remove_dir_all(dir.join(".swap")).unwrap();
                std::os::unix::fs::symlink(&victim, dir.join(".swap")).unwrap();
            }
        }
        eprintln!("400 rounds: {done} removed or moved, {caught} swaps caught and put back");
        assert!(
            caught > 0,
            "no round caught a swap ({done} done): the race was not run"
        );
    }

    /// The person's own folder is made for them alone; `existing` makes
    /// nothing; a link at a step is refused by every opening; and a link in
    /// place of a package is removed itself, not what it points to.
    #[test]
    fn folders_are_made_private_or_not_at_all_and_a_link_is_removed_itself() {
        use std::os::unix::fs::PermissionsExt as _;
        let root = tempfile::tempdir().unwrap();
        let data = root.path().join("data");
        assert!(Beneath::existing(&data, "chock/plugins").unwrap().is_none());
        assert!(!data.exists(), "nothing was made");
        let own = Beneath::open_private(&data, "chock/plugins").unwrap();
        for made in ["data", "data/chock", "data/chock/plugins"] {
            let mode = std::fs::metadata(root.path().join(made))
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o700, "{made}");
        }
        assert_eq!(
            Beneath::existing(&data, "chock/plugins")
                .unwrap()
                .map(|b| b.path().to_path_buf()),
            Some(own.path().to_path_buf())
        );

        let outside = root.path().join("outside");
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(outside.join("keep"), "keep").unwrap();
        std::os::unix::fs::symlink(&outside, own.path().join("p")).unwrap();
        assert!(own.installed("p").is_err(), "a link is no package");
        assert!(own.remove("p").unwrap());
        assert!(!own.path().join("p").is_symlink());
        assert!(outside.join("keep").is_file(), "the link was followed");

        std::fs::remove_dir_all(data.join("chock")).unwrap();
        std::os::unix::fs::symlink(&outside, data.join("chock")).unwrap();
        for opened in [
            Beneath::open_private(&data, "chock/plugins").map(|_| ()),
            Beneath::open(&data, "chock/plugins").map(|_| ()),
            Beneath::existing(&data, "chock/plugins").map(|_| ()),
        ] {
            let error = opened.unwrap_err().to_string();
            assert!(
                error.contains("is a symbolic link or not a folder"),
                "{error}"
            );
        }
        assert!(
            !outside.join("plugins").exists(),
            "nothing was made through the link"
        );
    }
}
