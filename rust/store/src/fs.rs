//! Reading files of a tree that is read beneath a held descriptor.
//!
//! An overlay workspace (a project that is not a git repository) is shown
//! at the project's own path, but what the session wrote is only in the
//! overlay mounted for one tool call (detached: attached to no mount
//! namespace, so no path leads into it). While a [`Shown`] guard is alive,
//! every read of these functions under its path is resolved beneath the
//! overlay's root descriptor with `openat2(RESOLVE_BENEATH)`: a path that
//! climbs out with `..` or through an absolute link is refused by the
//! kernel at the moment of opening, a link that stays inside is followed,
//! and overlayfs says what each name is (a file the session removed is
//! absent, one it wrote is its own). A directory walk opens each entry
//! beneath that root afresh, so a folder swapped for a link meanwhile is
//! never followed out of it. Any other path is read on the host as it is.
//!
//! A folder on the host is shown the same way ([`Tree::AtItsPath`]): the
//! tool server shows the project (or the session's worktree) for each nix
//! call, so a link an agent swaps between the evaluator's check of a path
//! and its read can never lead the read out of the tree; only programs
//! that walk paths themselves (git, for a flake's state) still reach it
//! by its path, which a detached tree has not.
//!
//! The guard is process-wide, not passed along: the evaluator, the NAR
//! writer, the flake lock reader and the build all read the project through
//! here, on threads of their own, without each being told. The tool
//! server registers one for each nix call, for as long as the call runs
//! (and holds an overlay's mount).

use std::ffi::OsString;
use std::fs::{File, FileType, Metadata};
use std::io::{self, Read};
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, PoisonError, RwLock};

use rustix::fs::{Mode, OFlags, ResolveFlags};

/// What a shown tree is besides its root.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tree {
    /// Reachable by no path (an overlay mounted for one call): only its
    /// root descriptor leads into it, so programs that walk paths (git)
    /// cannot read it.
    Detached,
    /// A folder on the host, also at its own path: read beneath its root
    /// descriptor all the same, so a link swapped in between a check and
    /// a read never leads out of it.
    AtItsPath,
}

/// One shown tree.
struct Registered {
    id: u64,
    path: PathBuf,
    root: Arc<OwnedFd>,
    tree: Tree,
}

static SHOWN: RwLock<Vec<Registered>> = RwLock::new(Vec::new());
static NEXT: AtomicU64 = AtomicU64::new(0);

/// While alive, paths under `path` are read beneath `root`.
#[derive(Debug)]
pub struct Shown(u64);

/// Reads paths under `path` (absolute) beneath the folder descriptor
/// `root` until the guard is dropped. A path is read beneath the shown
/// tree nearest to it (the longest shown path it is under), so a tree
/// shown at a folder above does not take over one shown inside it. When
/// two guards show the same path (two calls at once, each with its own
/// mount of the same overlay) the later one's root is read.
pub fn show(path: &Path, root: OwnedFd, tree: Tree) -> Shown {
    register(
        &mut SHOWN.write().unwrap_or_else(PoisonError::into_inner),
        path.to_path_buf(),
        Arc::new(root),
        tree,
    )
}

fn register(shown: &mut Vec<Registered>, path: PathBuf, root: Arc<OwnedFd>, tree: Tree) -> Shown {
    let id = NEXT.fetch_add(1, Ordering::Relaxed);
    shown.push(Registered {
        id,
        path,
        root,
        tree,
    });
    Shown(id)
}

/// The shown tree `path` is read beneath: the nearest (longest path)
/// that `path` is under, the latest shown of those at the same path; and
/// `path` relative to it.
fn nearest<'a, 'p>(shown: &'a [Registered], path: &'p Path) -> Option<(&'a Registered, &'p Path)> {
    shown
        .iter()
        .enumerate()
        .filter_map(|(at, shown)| Some((at, shown, path.strip_prefix(&shown.path).ok()?)))
        .max_by_key(|(at, shown, _)| (shown.path.as_os_str().len(), *at))
        .map(|(_, shown, rel)| (shown, rel))
}

impl Drop for Shown {
    fn drop(&mut self) {
        SHOWN
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .retain(|shown| shown.id != self.0);
    }
}

/// Shows the host folder `dir` at its own path ([`Tree::AtItsPath`]) for
/// as long as the guard lives: what a host-side evaluation or build reads
/// of a project an agent can write. The folder is opened with no link
/// anywhere along its name, so a link swapped in after it was checked is
/// refused (`ELOOP`), never followed.
///
/// For a folder a shown tree already covers (another call's, or another
/// evaluation's of the same project), the guard shows that tree again,
/// with its root and at its path, so that its reads stay beneath that
/// root for as long as the guard lives even when the other guard goes
/// first; the check and the registration are one step under the lock.
///
/// Nothing is held (`None`) for the root of the file system (nothing is
/// outside it), or for a name that is not its own real path or not a
/// folder (no real path is under such a name, so a check by real path
/// finds nothing inside it anyway).
pub fn hold_at_its_path(dir: &Path) -> io::Result<Option<Shown>> {
    let named_by_real_path = std::fs::canonicalize(dir).is_ok_and(|real| real == dir);
    let whole = dir.parent().is_none();
    if !named_by_real_path || whole || !dir.is_dir() {
        return Ok(None);
    }
    let root = rustix::fs::openat2(
        rustix::fs::CWD,
        dir,
        OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
        ResolveFlags::NO_SYMLINKS,
    )?;
    let mut shown = SHOWN.write().unwrap_or_else(PoisonError::into_inner);
    let (path, root, tree) = match nearest(&shown, dir) {
        Some((covering, _)) => (covering.path.clone(), covering.root.clone(), covering.tree),
        None => (dir.to_path_buf(), Arc::new(root), Tree::AtItsPath),
    };
    Ok(Some(register(&mut shown, path, root, tree)))
}

/// Where a path is read.
enum At {
    Host,
    /// Beneath this root, at this relative path (`.` for the root).
    Beneath(Arc<OwnedFd>, PathBuf),
}

fn at(path: &Path) -> At {
    let shown = SHOWN.read().unwrap_or_else(PoisonError::into_inner);
    let Some((Registered { root, .. }, rel)) = nearest(&shown, path) else {
        return At::Host;
    };
    let rel = if rel.as_os_str().is_empty() {
        PathBuf::from(".")
    } else {
        rel.to_path_buf()
    };
    At::Beneath(root.clone(), rel)
}

/// The shown tree `path` is read beneath (its own path, or a path under
/// it): that tree's path and what it is.
fn shown_tree(path: &Path) -> Option<(PathBuf, Tree)> {
    let shown = SHOWN.read().unwrap_or_else(PoisonError::into_inner);
    nearest(&shown, path).map(|(shown, _)| (shown.path.clone(), shown.tree))
}

/// Whether `path` is read beneath a shown tree's root (its own path, or a
/// path under it), and that tree's path.
pub fn shown_under(path: &Path) -> Option<PathBuf> {
    shown_tree(path).map(|(top, _)| top)
}

/// Whether `path` is in a shown tree no path leads into ([`Tree::Detached`]).
pub fn detached_under(path: &Path) -> bool {
    matches!(shown_tree(path), Some((_, Tree::Detached)))
}

/// Whether `path`, lexically, has `..` in it.
fn climbs(rel: &Path) -> bool {
    rel.components().any(|c| c == Component::ParentDir)
}

fn beneath(root: &OwnedFd, rel: &Path, flags: OFlags) -> io::Result<OwnedFd> {
    if climbs(rel) {
        // A shown path is lexically inside its tree; `..` would be a
        // second reading of what the name means.
        return Err(rustix::io::Errno::XDEV.into());
    }
    Ok(rustix::fs::openat2(
        root,
        rel,
        flags | OFlags::CLOEXEC,
        Mode::empty(),
        ResolveFlags::BENEATH | ResolveFlags::NO_MAGICLINKS,
    )?)
}

/// Opens the file at `path` for reading, following a last link (inside a
/// shown tree, only one that stays inside).
pub fn open(path: &Path) -> io::Result<File> {
    open_with(path, OFlags::empty())
}

/// Opens the file at `path` for reading without waiting (a FIFO planted
/// in its place cannot hold the reader), following a last link.
pub fn open_nonblocking(path: &Path) -> io::Result<File> {
    open_with(path, OFlags::NONBLOCK)
}

/// Opens the file at `path` for reading, never through a last link.
pub fn open_nofollow(path: &Path) -> io::Result<File> {
    open_with(path, OFlags::NOFOLLOW)
}

/// Opens the file at `path` for reading with `flags` besides.
fn open_with(path: &Path, flags: OFlags) -> io::Result<File> {
    match at(path) {
        At::Host => {
            use std::os::unix::fs::OpenOptionsExt;
            std::fs::OpenOptions::new()
                .read(true)
                .custom_flags(flags.bits() as i32)
                .open(path)
        }
        At::Beneath(root, rel) => beneath(&root, &rel, OFlags::RDONLY | flags).map(File::from),
    }
}

/// The bytes of the file at `path`.
pub fn read(path: &Path) -> io::Result<Vec<u8>> {
    let mut bytes = Vec::new();
    open(path)?.read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// What `path` itself is (a last link is not followed).
pub fn symlink_metadata(path: &Path) -> io::Result<Metadata> {
    match at(path) {
        At::Host => std::fs::symlink_metadata(path),
        At::Beneath(root, rel) => {
            File::from(beneath(&root, &rel, OFlags::PATH | OFlags::NOFOLLOW)?).metadata()
        }
    }
}

/// What `path` names, a last link followed.
pub fn metadata(path: &Path) -> io::Result<Metadata> {
    match at(path) {
        At::Host => std::fs::metadata(path),
        At::Beneath(root, rel) => File::from(beneath(&root, &rel, OFlags::PATH)?).metadata(),
    }
}

/// Whether `path` exists, a last link not followed.
pub fn exists_no_follow(path: &Path) -> bool {
    symlink_metadata(path).is_ok()
}

/// Whether `path` is a regular file, a last link followed.
pub fn is_file(path: &Path) -> bool {
    metadata(path).is_ok_and(|m| m.is_file())
}

/// Whether `path` is a folder, a last link followed.
pub fn is_dir(path: &Path) -> bool {
    metadata(path).is_ok_and(|m| m.is_dir())
}

/// The target of the link at `path`.
pub fn read_link(path: &Path) -> io::Result<PathBuf> {
    match at(path) {
        At::Host => std::fs::read_link(path),
        At::Beneath(root, rel) => {
            let link = beneath(&root, &rel, OFlags::PATH | OFlags::NOFOLLOW)?;
            let target = rustix::fs::readlinkat(&link, "", Vec::new())?;
            Ok(PathBuf::from(std::ffi::OsStr::from_bytes(
                target.as_bytes(),
            )))
        }
    }
}

/// The entries of the folder at `path` (a last link followed), each with
/// what it is (a link not followed), unsorted.
pub fn read_dir(path: &Path) -> io::Result<Vec<(OsString, FileType)>> {
    match at(path) {
        At::Host => std::fs::read_dir(path)?
            .map(|entry| {
                let entry = entry?;
                Ok((entry.file_name(), entry.file_type()?))
            })
            .collect(),
        At::Beneath(root, rel) => {
            let dir = beneath(&root, &rel, OFlags::RDONLY | OFlags::DIRECTORY)?;
            let mut out = Vec::new();
            for entry in rustix::fs::Dir::read_from(&dir)? {
                let entry = entry?;
                let name = entry.file_name().to_bytes();
                if name == b"." || name == b".." {
                    continue;
                }
                let name = std::ffi::OsStr::from_bytes(name).to_os_string();
                // What the entry is, from the folder held: never the name
                // walked again from the root.
                let kind = File::from(rustix::fs::openat(
                    dir.as_fd(),
                    name.as_os_str(),
                    OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                    Mode::empty(),
                )?)
                .metadata()?
                .file_type();
                out.push((name, kind));
            }
            Ok(out)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A shown path is read beneath its root: the root's files, not the
    /// path's; a link out and `..` refused; the guard's end ends it.
    #[test]
    fn a_shown_path_is_read_beneath_its_root() {
        let shown = tempfile::tempdir().expect("tempdir");
        let real = tempfile::tempdir().expect("tempdir");
        let outside = tempfile::tempdir().expect("tempdir");
        std::fs::write(shown.path().join("a"), "host").expect("write");
        std::fs::write(real.path().join("a"), "beneath").expect("write");
        std::fs::write(outside.path().join("secret"), "s").expect("write");
        std::os::unix::fs::symlink(outside.path().join("secret"), real.path().join("out"))
            .expect("link");
        std::os::unix::fs::symlink("a", real.path().join("in")).expect("link");
        std::fs::create_dir(real.path().join("d")).expect("mkdir");
        let root = File::open(real.path()).expect("open").into();
        let guard = show(shown.path(), root, Tree::Detached);
        let a = shown.path().join("a");
        assert_eq!(read(&a).expect("read"), b"beneath");
        assert_eq!(read(&shown.path().join("in")).expect("read"), b"beneath");
        assert!(read(&shown.path().join("out")).is_err());
        assert!(read(&shown.path().join("d/../a")).is_err());
        assert!(symlink_metadata(&shown.path().join("out")).is_ok_and(|m| m.is_symlink()));
        assert_eq!(
            read_link(&shown.path().join("in")).expect("link"),
            Path::new("a")
        );
        let mut names: Vec<_> = read_dir(shown.path())
            .expect("list")
            .into_iter()
            .map(|(n, k)| (n.into_string().expect("utf-8"), k.is_dir()))
            .collect();
        names.sort();
        assert_eq!(
            names,
            [
                ("a".into(), false),
                ("d".into(), true),
                ("in".into(), false),
                ("out".into(), false)
            ]
        );
        assert!(shown_under(&a).is_some() && detached_under(&a));
        drop(guard);
        assert_eq!(read(&a).expect("read"), b"host");
        assert!(shown_under(&a).is_none() && !detached_under(&a));
    }

    /// Two holders of one folder: the first one's end leaves the second's
    /// reads beneath the root, as the check and the read of a path in an
    /// evaluation running beside another one need.
    #[test]
    fn a_folder_held_twice_stays_shown_until_both_holders_end() {
        let dir = tempfile::tempdir().expect("tempdir");
        let dir = std::fs::canonicalize(dir.path()).expect("real path");
        let file = dir.join("f");
        let first = hold_at_its_path(&dir).expect("hold").expect("a guard");
        let second = hold_at_its_path(&dir).expect("hold").expect("a guard");
        drop(first);
        assert_eq!(shown_under(&file).as_deref(), Some(dir.as_path()));
        drop(second);
        assert!(shown_under(&file).is_none());
    }

    /// A folder shown above another shown one does not take over the
    /// paths inside the nearer one, whichever was shown last.
    #[test]
    fn a_path_is_read_beneath_the_nearest_shown_tree() {
        let top = tempfile::tempdir().expect("tempdir");
        let top = std::fs::canonicalize(top.path()).expect("real path");
        let inner = top.join("inner");
        std::fs::create_dir(&inner).expect("mkdir");
        let file = inner.join("f");
        let inner_guard = hold_at_its_path(&inner).expect("hold").expect("a guard");
        let top_guard = hold_at_its_path(&top).expect("hold").expect("a guard");
        assert_eq!(shown_under(&file).as_deref(), Some(inner.as_path()));
        assert_eq!(shown_under(&top.join("g")).as_deref(), Some(top.as_path()));
        drop(inner_guard);
        assert_eq!(shown_under(&file).as_deref(), Some(top.as_path()));
        drop(top_guard);
    }
}
