//! The Merkle tree over the decision log's lines, and the signed
//! checkpoint kept beside the log.
//!
//! The leaves are the log's whole lines, each line's exact bytes without
//! its newline, oldest file first. The leaf hashes of the last checkpoint
//! are kept in `checkpoint.tree` (32 bytes a line), so that the tree still
//! covers lines whose file rotation has since removed.

use std::path::{Path, PathBuf};

use chock_log::Log;

use crate::TlogError;
use crate::checkpoint::Checkpoint;
use crate::files;
use crate::note::{MAX_NOTE_BYTES, Note};
use crate::tree::{Hash, Tree, leaf_hash};

/// The signed checkpoint's file in the log's folder.
pub const CHECKPOINT: &str = "checkpoint";
/// The leaf hashes the stored checkpoint covers, in the log's folder.
pub const TREE: &str = "checkpoint.tree";

/// The most leaf hashes `checkpoint.tree` is read with: 2^32 lines.
const MAX_TREE_BYTES: usize = 32 << 32;

/// The checkpoint kept beside the log, and the leaves it covers.
#[derive(Debug, Clone)]
pub struct Stored {
    pub note: Note,
    pub checkpoint: Checkpoint,
    pub leaves: Vec<Hash>,
}

/// Where the stored checkpoint of the log in `dir` is.
pub fn checkpoint_path(dir: &Path) -> PathBuf {
    dir.join(CHECKPOINT)
}

/// The stored checkpoint and its leaves, or `None` before the first one.
/// The two files must agree: the leaves' root is the checkpoint's.
pub fn stored(dir: &Path) -> Result<Option<Stored>, TlogError> {
    let io = |path: PathBuf| move |source| TlogError::Io { path, source };
    let note_path = dir.join(CHECKPOINT);
    let tree_path = dir.join(TREE);
    let Some(bytes) =
        files::read_bounded(&note_path, MAX_NOTE_BYTES).map_err(io(note_path.clone()))?
    else {
        return Ok(None);
    };
    let note = Note::parse(&bytes)?;
    let checkpoint = Checkpoint::parse(&note.text)?;
    let raw = files::read_bounded(&tree_path, MAX_TREE_BYTES)
        .map_err(io(tree_path.clone()))?
        .unwrap_or_default();
    let leaves: Vec<Hash> = raw
        .chunks(32)
        .filter_map(|chunk| Hash::try_from(chunk).ok())
        .collect();
    let tree = Tree::from_leaves(leaves);
    if raw.len() % 32 != 0
        || tree.size() != checkpoint.size
        || tree.root(tree.size())? != checkpoint.root
    {
        return Err(TlogError::StoredDisagree {
            dir: dir.to_owned(),
        });
    }
    Ok(Some(Stored {
        note,
        checkpoint,
        leaves: tree.leaves().to_vec(),
    }))
}

/// The tree over the log now: the leaves of the stored checkpoint whose
/// lines rotation removed, then every line the log still has. A line the
/// stored checkpoint covers that is still in the log must be unchanged.
pub fn current(log: &Log) -> Result<Tree, TlogError> {
    let mut present = Vec::new();
    log.for_each_line(|line| present.push(leaf_hash(line)))?;
    let covered = stored(log.dir())?.map(|s| s.leaves).unwrap_or_default();
    joined(covered, present)
}

/// `covered` then `present`, overlapping where the first line still in the
/// log is: every covered line from there on must be the same line.
fn joined(covered: Vec<Hash>, present: Vec<Hash>) -> Result<Tree, TlogError> {
    if covered.is_empty() {
        return Ok(Tree::from_leaves(present));
    }
    let removed = (0..covered.len()).find(|&k| {
        let kept = &covered[k..];
        present.len() >= kept.len() && present[..kept.len()] == *kept
    });
    let Some(removed) = removed else {
        return Err(TlogError::Rewritten {
            covered: covered.len() as u64,
        });
    };
    let mut leaves = covered;
    leaves.truncate(removed);
    leaves.extend(present);
    Ok(Tree::from_leaves(leaves))
}

/// Takes the lock that one `chock log checkpoint` at a time holds while
/// it reads the stored checkpoint and writes the next.
pub fn lock(dir: &Path) -> Result<std::fs::File, TlogError> {
    let path = dir.join("checkpoint.lock");
    files::lock(&path).map_err(|source| TlogError::Io { path, source })
}

/// Keeps `note` (a checkpoint of `tree`) beside the log: the leaves first,
/// then the note, each written whole.
pub fn store(dir: &Path, tree: &Tree, note: &Note) -> Result<(), TlogError> {
    let leaves: Vec<u8> = tree.leaves().iter().flatten().copied().collect();
    let tree_path = dir.join(TREE);
    files::write_atomically(&tree_path, &leaves).map_err(|source| TlogError::Io {
        path: tree_path,
        source,
    })?;
    let note_path = dir.join(CHECKPOINT);
    files::write_atomically(&note_path, note.to_string().as_bytes()).map_err(|source| {
        TlogError::Io {
            path: note_path,
            source,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn leaves(range: std::ops::Range<u8>) -> Vec<Hash> {
        range.map(|i| leaf_hash(&[i])).collect()
    }

    #[test]
    fn rotated_away_lines_stay_in_the_tree_and_edited_ones_are_refused() {
        let grown = joined(leaves(0..5), leaves(2..9)).unwrap();
        assert_eq!(grown.leaves(), leaves(0..9).as_slice());
        let same = joined(leaves(0..5), leaves(0..5)).unwrap();
        assert_eq!(same.size(), 5);
        let mut edited = leaves(0..9);
        edited[3] = leaf_hash(b"edited");
        assert!(matches!(
            joined(leaves(0..5), edited),
            Err(TlogError::Rewritten { covered: 5 })
        ));
        assert!(joined(leaves(0..5), leaves(0..4)).is_err());
        assert!(joined(leaves(0..5), leaves(7..9)).is_err());
    }
}
