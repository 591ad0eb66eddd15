//! Writing a fetched tree (from an archive or a git revision) under one
//! directory, and nowhere else.
//!
//! The entries come from whoever serves the input, so every path is checked
//! component by component: no absolute paths, no `..`, and no component on
//! the way that is a symlink (an archive that writes `a -> /etc` and then
//! `a/passwd` writes a symlink and refuses the file). Sizes and entry counts
//! are bounded. Only what a NAR records is kept: contents, the executable
//! bit and symlink targets.

use std::ffi::OsStr;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Read};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt, symlink};
use std::path::{Component, Path, PathBuf};

use super::{FetchError, Limits};

/// A directory being filled, with what it has taken so far.
pub(crate) struct TreeWriter {
    root: PathBuf,
    limits: Limits,
    bytes: u64,
    entries: u64,
}

impl TreeWriter {
    /// Fills `root`, which must exist and be empty.
    pub(crate) fn new(root: &Path, limits: Limits) -> TreeWriter {
        TreeWriter {
            root: root.to_path_buf(),
            limits,
            bytes: 0,
            entries: 0,
        }
    }

    /// Checks `relative` and returns it as components under the root.
    fn place(&mut self, relative: &Path) -> Result<PathBuf, FetchError> {
        self.entries += 1;
        if self.entries > self.limits.max_tree_entries {
            return Err(FetchError::TreeTooLarge {
                limit: format!("{} entries", self.limits.max_tree_entries),
            });
        }
        let mut clean = PathBuf::new();
        for component in relative.components() {
            match component {
                Component::Normal(name) => clean.push(name),
                Component::CurDir => {}
                Component::ParentDir | Component::RootDir | Component::Prefix(_) => {
                    return Err(bad_path(relative, "it leaves the tree"));
                }
            }
        }
        if clean.as_os_str().is_empty() {
            return Err(bad_path(relative, "it names no entry"));
        }
        Ok(clean)
    }

    /// Creates every directory on the way to `clean`'s parent, refusing a
    /// component that exists and is not a directory.
    fn parents(&self, clean: &Path) -> Result<PathBuf, FetchError> {
        let mut at = self.root.clone();
        if let Some(parent) = clean.parent() {
            for name in parent.components() {
                at.push(name);
                make_dir(&at, clean)?;
            }
        }
        Ok(at)
    }

    /// Removes what is at `path` unless it is a directory (an archive may
    /// name one entry twice: the later wins, as tar does).
    fn clear(path: &Path, shown: &Path) -> Result<(), FetchError> {
        match fs::symlink_metadata(path) {
            Ok(meta) if meta.is_dir() => Err(bad_path(shown, "a directory is already there")),
            Ok(_) => fs::remove_file(path).map_err(|e| io_error(path, e)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(io_error(path, e)),
        }
    }

    pub(crate) fn dir(&mut self, relative: &Path) -> Result<(), FetchError> {
        let clean = self.place(relative)?;
        let parent = self.parents(&clean)?;
        let name = clean.file_name().unwrap_or_default();
        make_dir(&parent.join(name), &clean)
    }

    pub(crate) fn file(
        &mut self,
        relative: &Path,
        contents: &mut dyn Read,
        executable: bool,
    ) -> Result<(), FetchError> {
        let clean = self.place(relative)?;
        let path = self
            .parents(&clean)?
            .join(clean.file_name().unwrap_or_default());
        Self::clear(&path, &clean)?;
        let mode = if executable { 0o755 } else { 0o644 };
        let mut out = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(mode)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&path)
            .map_err(|e| io_error(&path, e))?;
        let room = self.limits.max_tree_bytes.saturating_sub(self.bytes);
        let copied = io::copy(&mut contents.take(room.saturating_add(1)), &mut out)
            .map_err(|e| io_error(&path, e))?;
        self.bytes += copied;
        if copied > room {
            return Err(FetchError::TreeTooLarge {
                limit: format!("{} bytes", self.limits.max_tree_bytes),
            });
        }
        // The umask may have taken bits the NAR needs; say them exactly.
        fs::set_permissions(&path, fs::Permissions::from_mode(mode)).map_err(|e| io_error(&path, e))
    }

    pub(crate) fn symlink(&mut self, relative: &Path, target: &Path) -> Result<(), FetchError> {
        let clean = self.place(relative)?;
        let path = self
            .parents(&clean)?
            .join(clean.file_name().unwrap_or_default());
        Self::clear(&path, &clean)?;
        if target.as_os_str().is_empty() {
            return Err(bad_path(relative, "it is a symlink to nothing"));
        }
        symlink(target, &path).map_err(|e| io_error(&path, e))
    }

    /// A hard link in an archive: the NAR holds the contents twice.
    pub(crate) fn hard_link(&mut self, relative: &Path, target: &Path) -> Result<(), FetchError> {
        let target_clean = self.place(target)?;
        let source = self.root.join(&target_clean);
        let meta = fs::symlink_metadata(&source).map_err(|e| io_error(&source, e))?;
        if !meta.is_file() || !inside_without_links(&self.root, &target_clean) {
            return Err(bad_path(
                relative,
                "it is a hard link to something that is not a file of the tree",
            ));
        }
        let executable = meta.permissions().mode() & 0o100 != 0;
        let mut contents = File::open(&source).map_err(|e| io_error(&source, e))?;
        self.file(relative, &mut contents, executable)
    }

    /// The single entry at the top of the tree, as Nix takes an archive.
    pub(crate) fn single_top(&self) -> Result<PathBuf, FetchError> {
        let mut names = Vec::new();
        for entry in fs::read_dir(&self.root).map_err(|e| io_error(&self.root, e))? {
            names.push(entry.map_err(|e| io_error(&self.root, e))?.file_name());
            if names.len() > 1 {
                break;
            }
        }
        match names.as_slice() {
            [one] => Ok(self.root.join(one)),
            [] => Err(FetchError::Archive {
                why: "it holds nothing".into(),
            }),
            _ => Err(FetchError::Archive {
                why: "it holds more than one entry at its top, and an input's archive holds exactly one directory".into(),
            }),
        }
    }
}

/// Whether every component of `clean` below `root` is a real directory
/// (not a symlink), so the path does not lead out of the tree.
fn inside_without_links(root: &Path, clean: &Path) -> bool {
    let mut at = root.to_path_buf();
    let Some(parent) = clean.parent() else {
        return true;
    };
    parent.components().all(|c| {
        at.push(c);
        fs::symlink_metadata(&at).is_ok_and(|m| m.is_dir())
    })
}

fn make_dir(path: &Path, shown: &Path) -> Result<(), FetchError> {
    match fs::symlink_metadata(path) {
        Ok(meta) if meta.is_dir() => Ok(()),
        Ok(_) => Err(bad_path(
            shown,
            "something that is not a directory is on its way",
        )),
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            fs::create_dir(path).map_err(|e| io_error(path, e))?;
            fs::set_permissions(path, fs::Permissions::from_mode(0o755))
                .map_err(|e| io_error(path, e))
        }
        Err(e) => Err(io_error(path, e)),
    }
}

fn bad_path(path: &Path, why: &str) -> FetchError {
    FetchError::Archive {
        why: format!("the entry `{}` is refused: {why}", path.display()),
    }
}

pub(crate) fn io_error(path: &Path, source: io::Error) -> FetchError {
    FetchError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// A path from raw bytes (tar and git names need not be UTF-8).
pub(crate) fn path_from_bytes(bytes: &[u8]) -> &Path {
    Path::new(OsStr::from_bytes(bytes))
}

/// Copies the file or directory at `from` into the (empty) root, refusing
/// what a NAR cannot hold, for `path` inputs and `file://` archives.
pub(crate) fn copy_local(
    writer: &mut TreeWriter,
    from: &Path,
    relative: &Path,
) -> Result<(), FetchError> {
    let meta = fs::symlink_metadata(from).map_err(|e| io_error(from, e))?;
    if meta.file_type().is_symlink() {
        let target = fs::read_link(from).map_err(|e| io_error(from, e))?;
        writer.symlink(relative, &target)
    } else if meta.is_file() {
        let mut file = File::open(from).map_err(|e| io_error(from, e))?;
        writer.file(relative, &mut file, meta.permissions().mode() & 0o100 != 0)
    } else if meta.is_dir() {
        writer.dir(relative)?;
        for entry in fs::read_dir(from).map_err(|e| io_error(from, e))? {
            let entry = entry.map_err(|e| io_error(from, e))?;
            copy_local(writer, &entry.path(), &relative.join(entry.file_name()))?;
        }
        Ok(())
    } else {
        Err(bad_path(
            from,
            "it is neither a file, a directory nor a symlink",
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn writer(dir: &Path) -> TreeWriter {
        TreeWriter::new(dir, Limits::default())
    }

    #[test]
    fn paths_that_leave_the_tree_are_refused() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut w = writer(dir.path());
        for bad in ["../x", "/etc/x", "a/../../x", "", "."] {
            assert!(
                w.file(Path::new(bad), &mut io::empty(), false).is_err(),
                "{bad}"
            );
        }
    }

    #[test]
    fn a_symlink_on_the_way_is_never_followed() {
        let dir = tempfile::tempdir().expect("tempdir");
        let outside = tempfile::tempdir().expect("tempdir");
        let mut w = writer(dir.path());
        w.symlink(Path::new("top/a"), outside.path())
            .expect("symlink");
        let err = w
            .file(Path::new("top/a/passwd"), &mut &b"x"[..], false)
            .expect_err("through a symlink");
        assert!(err.to_string().contains("top/a/passwd"), "{err}");
        assert!(!outside.path().join("passwd").exists());
        // Replacing the link itself with a file writes no file through it.
        w.file(Path::new("top/a"), &mut &b"x"[..], false)
            .expect("replaces the link");
        assert!(
            fs::symlink_metadata(dir.path().join("top/a"))
                .expect("meta")
                .is_file()
        );
        // A hard link whose target goes through a symlink is refused.
        w.symlink(Path::new("top/l"), outside.path())
            .expect("symlink");
        fs::write(outside.path().join("secret"), "s").expect("write");
        assert!(
            w.hard_link(Path::new("top/h"), Path::new("top/l/secret"))
                .is_err()
        );
    }

    #[test]
    fn sizes_and_counts_are_bounded() {
        let dir = tempfile::tempdir().expect("tempdir");
        let limits = Limits {
            max_tree_bytes: 10,
            max_tree_entries: 3,
            ..Limits::default()
        };
        let mut w = TreeWriter::new(dir.path(), limits);
        w.file(Path::new("a"), &mut &b"12345"[..], false)
            .expect("fits");
        assert!(matches!(
            w.file(Path::new("b"), &mut &b"123456"[..], false),
            Err(FetchError::TreeTooLarge { .. })
        ));
        w.dir(Path::new("c")).expect("third entry");
        assert!(matches!(
            w.dir(Path::new("d")),
            Err(FetchError::TreeTooLarge { .. })
        ));
    }

    #[test]
    fn the_executable_bit_is_exactly_what_was_asked() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut w = writer(dir.path());
        w.file(Path::new("t/run"), &mut &b"#!/bin/sh"[..], true)
            .expect("file");
        w.file(Path::new("t/data"), &mut &b"x"[..], false)
            .expect("file");
        w.hard_link(Path::new("t/again"), Path::new("t/run"))
            .expect("hard link");
        let mode = |p: &str| {
            fs::metadata(dir.path().join(p))
                .expect("meta")
                .permissions()
                .mode()
                & 0o777
        };
        assert_eq!(mode("t/run"), 0o755);
        assert_eq!(mode("t/data"), 0o644);
        assert_eq!(mode("t/again"), 0o755);
        assert_eq!(w.single_top().expect("one top"), dir.path().join("t"));
    }
}
