//! NAR hashing of a tree with a filter (`builtins.path { filter; }`,
//! `filterSource`): the filter is a Nix function, so the walk lives here,
//! next to the evaluator that calls it. Without a filter, chock-store's
//! `nar::hash_path` does the same walk.

use chock_store::hash::Hasher;
use chock_store::{Hash, HashAlgo};
use std::collections::BTreeSet;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// What a filtered walk found: the NAR's hash, and the entries (relative
/// to the root) the filter let through.
pub struct Filtered {
    pub hash: Hash,
    pub kept: BTreeSet<PathBuf>,
}

/// The kind of an entry as the filter is told it.
pub fn kind_name(kind: &std::fs::FileType) -> &'static str {
    if kind.is_symlink() {
        "symlink"
    } else if kind.is_dir() {
        "directory"
    } else if kind.is_file() {
        "regular"
    } else {
        "unknown"
    }
}

/// Why a walk stopped: a file could not be read, or the filter failed.
pub enum WalkError<E> {
    Io(PathBuf, io::Error),
    Filter(E),
    TooLarge(u64),
}

struct Writer {
    hasher: Hasher,
    size: u64,
    max: u64,
}

impl Writer {
    fn bytes(&mut self, data: &[u8]) {
        self.hasher.update(data);
        self.size += data.len() as u64;
    }

    fn string(&mut self, data: &[u8]) {
        self.bytes(&(data.len() as u64).to_le_bytes());
        self.bytes(data);
        let pad = (8 - data.len() % 8) % 8;
        self.bytes(&[0u8; 8][..pad]);
    }
}

/// Hashes the NAR of `root`, asking `filter(path, kind)` about every entry
/// below it (never the root), in Nix's order: sorted by name, depth first.
pub fn hash_filtered<E>(
    root: &Path,
    max: u64,
    filter: &mut dyn FnMut(&Path, &'static str) -> Result<bool, E>,
) -> Result<Filtered, WalkError<E>> {
    let mut w = Writer {
        hasher: Hasher::new(HashAlgo::Sha256),
        size: 0,
        max,
    };
    let mut kept = BTreeSet::new();
    w.string(b"nix-archive-1");
    node(&mut w, root, root, filter, &mut kept)?;
    Ok(Filtered {
        hash: w.hasher.finish(),
        kept,
    })
}

fn node<E>(
    w: &mut Writer,
    root: &Path,
    path: &Path,
    filter: &mut dyn FnMut(&Path, &'static str) -> Result<bool, E>,
    kept: &mut BTreeSet<PathBuf>,
) -> Result<(), WalkError<E>> {
    let io_err = |e| WalkError::Io(path.to_path_buf(), e);
    let meta = chock_store::fs::symlink_metadata(path).map_err(io_err)?;
    w.string(b"(");
    w.string(b"type");
    let kind = meta.file_type();
    if kind.is_symlink() {
        let target = chock_store::fs::read_link(path).map_err(io_err)?;
        w.string(b"symlink");
        w.string(b"target");
        w.string(target.as_os_str().as_bytes());
    } else if kind.is_dir() {
        w.string(b"directory");
        let mut entries = Vec::new();
        for (name, _) in chock_store::fs::read_dir(path).map_err(io_err)? {
            entries.push(name);
        }
        entries.sort_by(|a, b| a.as_bytes().cmp(b.as_bytes()));
        for name in entries {
            let child = path.join(&name);
            let child_kind = chock_store::fs::symlink_metadata(&child)
                .map_err(|e| WalkError::Io(child.clone(), e))?
                .file_type();
            if !filter(&child, kind_name(&child_kind)).map_err(WalkError::Filter)? {
                continue;
            }
            if let Ok(relative) = child.strip_prefix(root) {
                kept.insert(relative.to_path_buf());
            }
            w.string(b"entry");
            w.string(b"(");
            w.string(b"name");
            w.string(name.as_bytes());
            w.string(b"node");
            node(w, root, &child, filter, kept)?;
            w.string(b")");
        }
    } else {
        w.string(b"regular");
        if meta.permissions().mode() & 0o100 != 0 {
            w.string(b"executable");
            w.string(b"");
        }
        if w.size.saturating_add(meta.len()) > w.max {
            return Err(WalkError::TooLarge(w.size.saturating_add(meta.len())));
        }
        let contents = chock_store::fs::read(path).map_err(io_err)?;
        w.string(b"contents");
        w.string(&contents);
    }
    w.string(b")");
    if w.size > w.max {
        return Err(WalkError::TooLarge(w.size));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unfiltered_walk_hashes_like_chock_store() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir(dir.path().join("sub")).expect("mkdir");
        std::fs::write(dir.path().join("sub/a"), b"hello").expect("write");
        std::fs::write(dir.path().join("b"), b"").expect("write");
        std::os::unix::fs::symlink("b", dir.path().join("link")).expect("symlink");
        let mut all = |_: &Path, _: &'static str| Ok::<bool, ()>(true);
        let Ok(ours) = hash_filtered(dir.path(), u64::MAX, &mut all) else {
            panic!("walk failed")
        };
        let theirs = chock_store::nar::hash_path(dir.path()).expect("hash");
        assert_eq!(ours.hash, theirs.nar_hash);
        assert_eq!(ours.kept.len(), 4);
    }

    #[test]
    fn filtered_entries_are_left_out_and_caps_hold() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join("keep"), b"1").expect("write");
        std::fs::write(dir.path().join("drop"), b"2").expect("write");
        let mut only_keep = |p: &Path, _: &'static str| Ok::<bool, ()>(p.ends_with("keep"));
        let Ok(filtered) = hash_filtered(dir.path(), u64::MAX, &mut only_keep) else {
            panic!("walk failed")
        };
        assert_eq!(filtered.kept, BTreeSet::from([PathBuf::from("keep")]));
        let mut all = |_: &Path, _: &'static str| Ok::<bool, ()>(true);
        assert!(matches!(
            hash_filtered(dir.path(), 40, &mut all),
            Err(WalkError::TooLarge(_))
        ));
    }
}
