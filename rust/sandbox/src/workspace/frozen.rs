//! An overlay's changes frozen for an apply.
//!
//! The upper layer is the sandbox's: a program still running in it can
//! change it at any moment, swap a folder for a link, or name a path on
//! the host. So an apply never reads it twice: the changes are copied out
//! once, through descriptors opened beneath it with no link followed,
//! into a folder of Chock's own beside it that no sandbox shows. The
//! question is computed from that copy (lines, diff, a digest of every
//! entry), and what lands is a copy made the same way whose digest must be
//! the one the person was shown.

use std::fs::File;
use std::os::fd::AsFd;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use nix::errno::Errno;
use nix::fcntl::OFlag;
use sha2::{Digest, Sha256};

use super::overlay::Change;
use super::{WorkspaceError, io, land};
use crate::anchor::open_top;

/// The changes as they were when frozen, in a folder removed on drop.
pub(crate) struct Frozen {
    dir: PathBuf,
}

impl Drop for Frozen {
    fn drop(&mut self) {
        // A folder a program made without write permission is frozen as
        // it was; the removal gives it back first.
        let _ = super::files::remove_all(&self.dir);
    }
}

impl Frozen {
    /// Copies every `Write` of `changes` out of `upper` into a new folder
    /// under `beside`, leaving out `denied` paths. Fails, and nothing is
    /// carried, when a path of the upper layer is no longer what it was
    /// listed as (a folder swapped for a link is not followed).
    pub(crate) fn freeze(
        upper: &Path,
        beside: &Path,
        changes: &[Change],
        denied: &[&Path],
    ) -> Result<Frozen, WorkspaceError> {
        sweep_left(beside);
        let frozen = Frozen {
            dir: fresh_folder(beside)?,
        };
        let (upper_top, _) = open_top(upper).map_err(|e| WorkspaceError::Refused(e.to_string()))?;
        let mut count = 0;
        for change in changes {
            let Change::Write(rel) = change else { continue };
            let (parent, name) = land::split(rel)?;
            let into = frozen.dir.join(parent);
            std::fs::create_dir_all(&into).map_err(io("making", &into))?;
            let held = File::options()
                .read(true)
                .custom_flags(libc::O_DIRECTORY | libc::O_NOFOLLOW)
                .open(&into)
                .map_err(io("opening", &into))?;
            land::copy(&upper_top, denied, &mut count, rel, held.as_fd(), name)?;
        }
        Ok(frozen)
    }

    /// The folder holding the frozen changes, at their paths in the project.
    pub(crate) fn path(&self) -> &Path {
        &self.dir
    }

    /// A digest of every entry frozen: its path, kind, mode and bytes (or
    /// link target), in path order. Two freezes with one digest carry the
    /// same thing.
    pub(crate) fn digest(&self) -> Result<String, WorkspaceError> {
        let mut hash = Sha256::new();
        let mut entries = Vec::new();
        entries_of(self.path(), Path::new(""), &mut entries)?;
        entries.sort();
        for rel in entries {
            let path = self.path().join(&rel);
            let meta = std::fs::symlink_metadata(&path).map_err(io("reading", &path))?;
            hash.update(rel.as_os_str().as_encoded_bytes());
            hash.update([0]);
            hash.update(meta.mode().to_le_bytes());
            if meta.file_type().is_symlink() {
                let target = std::fs::read_link(&path).map_err(io("reading", &path))?;
                hash.update(target.as_os_str().as_encoded_bytes());
            } else if meta.is_file() {
                hash.update(meta.len().to_le_bytes());
                let mut file = File::open(&path).map_err(io("reading", &path))?;
                let mut chunk = vec![0; 1 << 16];
                loop {
                    match std::io::Read::read(&mut file, &mut chunk)
                        .map_err(io("reading", &path))?
                    {
                        0 => break,
                        n => hash.update(&chunk[..n]),
                    }
                }
            }
            hash.update([0]);
        }
        Ok(hex::encode(hash.finalize()))
    }
}

/// Removes the freezes an apply that was killed left in `beside`: those
/// whose process is gone.
fn sweep_left(beside: &Path) {
    let Ok(entries) = std::fs::read_dir(beside) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix("frozen."))
            .and_then(|rest| rest.split('.').next())
            .and_then(|pid| pid.parse::<i32>().ok())
        else {
            continue;
        };
        let gone =
            nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None) == Err(Errno::ESRCH);
        if gone {
            let _ = super::files::remove_all(&entry.path());
        }
    }
}

/// A new folder `frozen.<pid>.<n>` in `beside`, made under a name not
/// taken (one made in advance is passed over, never used).
fn fresh_folder(beside: &Path) -> Result<PathBuf, WorkspaceError> {
    static MADE: AtomicU64 = AtomicU64::new(0);
    let mut last = None;
    for _ in 0..16 {
        let n = MADE.fetch_add(1, Ordering::Relaxed);
        let dir = beside.join(format!("frozen.{}.{n}", std::process::id()));
        match std::fs::DirBuilder::new().mode(0o700).create(&dir) {
            Ok(()) => return Ok(dir),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => last = Some(dir),
            Err(e) => return Err(io("making", &dir)(e)),
        }
    }
    let taken = last.unwrap_or_else(|| beside.to_path_buf());
    Err(WorkspaceError::Refused(format!(
        "no free name for a folder in {} (the last tried, {}, was taken)",
        beside.display(),
        taken.display()
    )))
}

/// Every entry under `root/rel`, folders too. The folder is Chock's own,
/// so a path read there is what the freeze made.
fn entries_of(root: &Path, rel: &Path, out: &mut Vec<PathBuf>) -> Result<(), WorkspaceError> {
    let dir = root.join(rel);
    for entry in std::fs::read_dir(&dir).map_err(io("reading", &dir))? {
        let entry = entry.map_err(io("reading", &dir))?;
        let child = rel.join(entry.file_name());
        let is_dir = entry.file_type().map_err(io("reading", &dir))?.is_dir();
        out.push(child.clone());
        if is_dir {
            entries_of(root, &child, out)?;
        }
    }
    Ok(())
}

/// Removes each of `changes` from the upper layer `upper` once it has
/// landed, through a descriptor of its folder opened beneath the layer
/// with no link followed: a folder swapped for a link since is refused,
/// never followed out of the layer.
pub(crate) fn remove_landed(upper: &Path, changes: &[Change]) -> Result<(), WorkspaceError> {
    let (upper_top, _) = open_top(upper).map_err(|e| WorkspaceError::Refused(e.to_string()))?;
    let refused = |rel: &Path, e: Errno| {
        WorkspaceError::Refused(format!(
            "removing {} from the workspace: {}",
            rel.display(),
            e.desc()
        ))
    };
    for change in changes {
        let rel = change.rel();
        let (parent, name) = land::split(rel)?;
        let held = if parent.as_os_str().is_empty() {
            None
        } else {
            match land::beneath(&upper_top, parent, OFlag::O_RDONLY | OFlag::O_DIRECTORY) {
                Ok(fd) => Some(fd),
                Err(Errno::ENOENT) => continue,
                Err(e) => return Err(refused(rel, e)),
            }
        };
        let dir = held.as_ref().map_or(upper_top.as_fd(), AsFd::as_fd);
        land::remove_beneath(dir, name).map_err(|e| refused(rel, e))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use nix::fcntl::{AT_FDCWD, RenameFlags, renameat2};
    use std::sync::Arc;
    use std::sync::atomic::AtomicBool;

    /// An upper layer holding `a/b` ("session's"), and beside it a host
    /// folder holding `b` ("host secret") that `a` can be swapped for.
    fn layers() -> (tempfile::TempDir, PathBuf, PathBuf, PathBuf) {
        let root = tempfile::tempdir().unwrap();
        let upper = root.path().join("upper");
        let host = root.path().join("host");
        let beside = root.path().join("ws");
        for dir in [&upper.join("a"), &host, &beside] {
            std::fs::create_dir_all(dir).unwrap();
        }
        std::fs::write(upper.join("a/b"), "session's\n").unwrap();
        std::fs::write(host.join("b"), "host secret\n").unwrap();
        (root, upper, host, beside)
    }

    /// Writes the session's `b` into `dir` if it is a folder, never
    /// through a link.
    fn put_back(dir: &Path) {
        let Ok(held) = File::options()
            .read(true)
            .custom_flags(libc::O_DIRECTORY | libc::O_NOFOLLOW)
            .open(dir)
        else {
            return;
        };
        let flags = OFlag::O_WRONLY | OFlag::O_CREAT | OFlag::O_TRUNC | OFlag::O_NOFOLLOW;
        if let Ok(fd) = nix::fcntl::openat(
            &held,
            "b",
            flags,
            nix::sys::stat::Mode::from_bits_truncate(0o644),
        ) {
            let _ = std::io::Write::write_all(&mut File::from(fd), b"session's\n");
        }
    }

    fn changes() -> Vec<Change> {
        vec![Change::Write(PathBuf::from("a/b"))]
    }

    #[test]
    fn a_freeze_copies_what_the_upper_layer_holds_and_a_change_moves_its_digest() {
        let (_root, upper, _host, beside) = layers();
        let first = Frozen::freeze(&upper, &beside, &changes(), &[]).unwrap();
        assert_eq!(
            std::fs::read_to_string(first.path().join("a/b")).unwrap(),
            "session's\n"
        );
        let again = Frozen::freeze(&upper, &beside, &changes(), &[]).unwrap();
        assert_eq!(first.digest().unwrap(), again.digest().unwrap());
        // The same number of lines, other bytes: another digest.
        std::fs::write(upper.join("a/b"), "sessiom's\n").unwrap();
        let changed = Frozen::freeze(&upper, &beside, &changes(), &[]).unwrap();
        assert_ne!(first.digest().unwrap(), changed.digest().unwrap());
        let kept = first.path().to_path_buf();
        drop(first);
        assert!(!kept.exists(), "a freeze is removed with it");
    }

    #[test]
    fn a_freeze_a_killed_apply_left_is_swept_and_a_live_one_kept() {
        let (_root, upper, _host, beside) = layers();
        let mut dead = std::process::Command::new("true").spawn().unwrap();
        let gone = dead.id();
        dead.wait().unwrap();
        let left = beside.join(format!("frozen.{gone}.0"));
        let live = beside.join("frozen.1.0");
        for dir in [&left, &live] {
            std::fs::create_dir_all(dir.join("a")).unwrap();
        }
        let _frozen = Frozen::freeze(&upper, &beside, &changes(), &[]).unwrap();
        assert!(!left.exists(), "the killed apply's freeze is swept");
        assert!(live.exists(), "a freeze of a live process is kept");
    }

    #[test]
    fn a_folder_swapped_for_a_link_is_never_followed_out_of_the_layer() {
        let (_root, upper, host, beside) = layers();
        std::fs::rename(upper.join("a"), beside.join("a.kept")).unwrap();
        std::os::unix::fs::symlink(&host, upper.join("a")).unwrap();
        assert!(Frozen::freeze(&upper, &beside, &changes(), &[]).is_err());
        assert!(remove_landed(&upper, &changes()).is_err());
        assert_eq!(
            std::fs::read_to_string(host.join("b")).unwrap(),
            "host secret\n"
        );
    }

    /// A program still running in the sandbox swaps the layer's folder for
    /// a link to the host and back (`RENAME_EXCHANGE`, in a loop) while
    /// changes are frozen and removed: no freeze ever holds the host's
    /// file, and the host's file is never removed.
    #[test]
    fn a_swap_raced_against_freeze_and_removal_never_reaches_the_host() {
        let (_root, upper, host, beside) = layers();
        let swap = beside.join("swap");
        std::os::unix::fs::symlink(&host, &swap).unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let racer = {
            let (stop, a, swap) = (stop.clone(), upper.join("a"), swap.clone());
            std::thread::spawn(move || {
                let mut swaps = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    if renameat2(AT_FDCWD, &a, AT_FDCWD, &swap, RenameFlags::RENAME_EXCHANGE)
                        .is_ok()
                    {
                        swaps += 1;
                    }
                }
                swaps
            })
        };
        let mut frozen_whole = 0;
        for _ in 0..300 {
            if let Ok(frozen) = Frozen::freeze(&upper, &beside, &changes(), &[]) {
                let held = std::fs::read_to_string(frozen.path().join("a/b")).unwrap();
                assert_eq!(held, "session's\n", "a freeze read through the link");
                frozen_whole += 1;
            }
            let _ = remove_landed(&upper, &changes());
            assert!(host.join("b").exists(), "the host's file was removed");
            // Put the session's file back for the next round, wherever
            // the folder is now (through its descriptor: never the host's).
            for dir in [upper.join("a"), swap.clone()] {
                put_back(&dir);
            }
        }
        stop.store(true, Ordering::Relaxed);
        let swaps = racer.join().unwrap();
        assert!(swaps > 100, "the race ran ({swaps} swaps)");
        assert!(frozen_whole > 0, "some freeze fell between swaps");
        assert_eq!(
            std::fs::read_to_string(host.join("b")).unwrap(),
            "host secret\n"
        );
    }
}
