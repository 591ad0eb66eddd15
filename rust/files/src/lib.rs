//! Replacing a file whole, the one way every Chock writer does it: a
//! fresh temporary in the same folder, created with `O_EXCL` and
//! `O_NOFOLLOW` (a name made in advance, a link or a file, is passed over
//! for the next, never written through), written, synced, renamed over
//! the file, and the folder synced. A reader sees the old content or the
//! new, never part of either, and a failure leaves the old file and no
//! temporary behind.

#![forbid(unsafe_code)]

use std::fs::{File, OpenOptions, Permissions};
use std::io::{self, Write};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// Who may read the new file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Its owner only (0600): state, keys, cursors, notes.
    Private,
    /// As the file it replaces was, else as a new file is made (0666 less
    /// the umask): a file a person keeps, such as `chock.zon`.
    Kept,
}

/// How many names are tried for the temporary before giving up.
const TRIES: u32 = 16;

/// Replaces `path` with `bytes`, all at once (see the crate's doc).
pub fn replace(path: &Path, bytes: &[u8], access: Access) -> io::Result<()> {
    let folder = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    let (temporary, mut out) = fresh_temporary(folder, &name, access)?;
    let written = (|| {
        if access == Access::Kept
            && let Ok(meta) = std::fs::symlink_metadata(path)
        {
            out.set_permissions(Permissions::from_mode(meta.permissions().mode()))?;
        }
        out.write_all(bytes)?;
        out.sync_all()?;
        std::fs::rename(&temporary, path)?;
        File::open(folder)?.sync_all()
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&temporary);
    }
    written
}

/// Creates a temporary in `folder`, trying further names while one is
/// taken.
fn fresh_temporary(folder: &Path, name: &str, access: Access) -> io::Result<(PathBuf, File)> {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let pid = std::process::id();
    let mut last = None;
    for attempt in 0..TRIES {
        let temporary = folder.join(match attempt {
            0 => format!(".{name}.{pid}.tmp"),
            n => format!(
                ".{name}.{pid}.{:08x}.tmp",
                nanos.wrapping_add(n.wrapping_mul(0x9e37_79b9))
            ),
        });
        let mut options = OpenOptions::new();
        options
            .write(true)
            .create_new(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC);
        if access == Access::Private {
            options.mode(0o600);
        }
        match options.open(&temporary) {
            Ok(out) => return Ok((temporary, out)),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => last = Some(e),
            Err(e) => return Err(e),
        }
    }
    Err(last.unwrap_or_else(|| io::Error::other("no temporary name was free")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_is_replaced_whole_and_keeps_its_mode_or_is_private() {
        let dir = tempfile::tempdir().unwrap();
        let kept = dir.path().join("chock.zon");
        std::fs::write(&kept, "old").unwrap();
        std::fs::set_permissions(&kept, Permissions::from_mode(0o640)).unwrap();
        replace(&kept, b"new", Access::Kept).unwrap();
        assert_eq!(std::fs::read_to_string(&kept).unwrap(), "new");
        let mode = std::fs::metadata(&kept).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o640);
        let private = dir.path().join("cursor");
        replace(&private, b"1", Access::Private).unwrap();
        let mode = std::fs::metadata(&private).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().flatten().collect();
        assert_eq!(names.len(), 2, "no temporary is left");
    }

    #[test]
    fn a_name_made_in_advance_is_passed_over_never_written_through() {
        let dir = tempfile::tempdir().unwrap();
        let outside = dir.path().join("outside");
        std::fs::write(&outside, "untouched").unwrap();
        let file = dir.path().join("state");
        let planted = dir
            .path()
            .join(format!(".state.{}.tmp", std::process::id()));
        std::os::unix::fs::symlink(&outside, &planted).unwrap();
        replace(&file, b"written", Access::Private).unwrap();
        assert_eq!(std::fs::read_to_string(&outside).unwrap(), "untouched");
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "written");
        assert!(std::fs::symlink_metadata(&planted).unwrap().is_symlink());
    }

    #[test]
    fn a_failure_leaves_the_old_file_and_no_temporary() {
        let dir = tempfile::tempdir().unwrap();
        // A folder where the file would be: the rename fails.
        let file = dir.path().join("taken");
        std::fs::create_dir(&file).unwrap();
        std::fs::write(file.join("inside"), "x").unwrap();
        assert!(replace(&file, b"new", Access::Private).is_err());
        let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().flatten().collect();
        assert_eq!(names.len(), 1, "{names:?}");
    }
}
