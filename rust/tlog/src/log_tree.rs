//! The Merkle tree over the decision log's lines, and the signed
//! checkpoint kept beside the log.
//!
//! The leaves are the log's whole lines, each line's exact bytes without
//! its newline, oldest file first. The leaves of the last checkpoint are
//! kept in `checkpoint.tree` (each line's leaf hash and seq, 40 bytes), so
//! that the tree still covers lines whose file rotation has since removed.

use std::path::{Path, PathBuf};

use chock_log::Log;

use crate::TlogError;
use crate::checkpoint::Checkpoint;
use crate::files;
use crate::note::{MAX_NOTE_BYTES, Note};
use crate::tree::{Hash, Tree, leaf_hash};

/// The signed checkpoint's file in the log's folder.
pub const CHECKPOINT: &str = "checkpoint";
/// The leaves the stored checkpoint covers, in the log's folder.
pub const TREE: &str = "checkpoint.tree";

/// One leaf hash and the seq of its line (0 for a line that names none).
const RECORD: usize = 40;
/// The most bytes `checkpoint.tree` is read with: 2^32 lines.
const MAX_TREE_BYTES: usize = RECORD << 32;

/// The tree over the log's lines, with each line's seq.
#[derive(Debug, Clone, Default)]
pub struct LogTree {
    pub tree: Tree,
    seqs: Vec<u64>,
}

impl LogTree {
    fn push(&mut self, leaf: Hash, seq: u64) {
        self.tree.push(leaf);
        self.seqs.push(seq);
    }

    /// The highest seq of a line in it.
    fn last_seq(&self) -> u64 {
        self.seqs.iter().copied().max().unwrap_or(0)
    }
}

/// The checkpoint kept beside the log, and the leaves it covers.
#[derive(Debug, Clone)]
pub struct Stored {
    pub note: Note,
    pub checkpoint: Checkpoint,
    pub covered: LogTree,
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
    let mut covered = LogTree::default();
    for record in raw.chunks_exact(RECORD) {
        let (leaf, seq) = record.split_at(32);
        let leaf = Hash::try_from(leaf).unwrap_or_default();
        covered.push(leaf, u64::from_be_bytes(seq.try_into().unwrap_or_default()));
    }
    let tree = &covered.tree;
    if raw.len() % RECORD != 0
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
        covered,
    }))
}

/// The tree over the log now: the leaves of the stored checkpoint whose
/// lines rotation removed, then every line the log still has. A line the
/// stored checkpoint covers that is still in the log must be unchanged.
pub fn current(log: &Log) -> Result<LogTree, TlogError> {
    let mut present = LogTree::default();
    log.for_each_line(|line| {
        let seq = chock_log::link::read(line).map_or(0, |link| link.seq);
        present.push(leaf_hash(line), seq);
    })?;
    let covered = stored(log.dir())?.map(|s| s.covered).unwrap_or_default();
    joined(covered, present)
}

/// `covered` then `present`, overlapping where the first line still in the
/// log is: every covered line from there on must be the same line. With no
/// line in common, every line the log holds must be newer (a higher seq)
/// than every covered one: rotation removed all the covered lines.
fn joined(covered: LogTree, present: LogTree) -> Result<LogTree, TlogError> {
    let (old, new) = (covered.tree.leaves(), present.tree.leaves());
    let overlap = (0..old.len()).find(|&k| {
        let kept = &old[k..];
        new.len() >= kept.len() && new[..kept.len()] == *kept
    });
    let newer = present.seqs.iter().all(|&seq| seq > covered.last_seq()) && !new.is_empty();
    let removed = match overlap {
        Some(k) => k,
        None if old.is_empty() || newer => old.len(),
        None => {
            return Err(TlogError::Rewritten {
                covered: covered.tree.size(),
            });
        }
    };
    let mut joined = LogTree::default();
    for (leaf, seq) in old.iter().zip(&covered.seqs).take(removed) {
        joined.push(*leaf, *seq);
    }
    for (leaf, seq) in new.iter().zip(&present.seqs) {
        joined.push(*leaf, *seq);
    }
    Ok(joined)
}

/// Takes the lock that one `chock log checkpoint` at a time holds while
/// it reads the stored checkpoint and writes the next.
pub fn lock(dir: &Path) -> Result<std::fs::File, TlogError> {
    let path = dir.join("checkpoint.lock");
    files::lock(&path).map_err(|source| TlogError::Io { path, source })
}

/// Keeps `note` (a checkpoint of `tree`) beside the log: the leaves first,
/// then the note, each written whole.
pub fn store(dir: &Path, tree: &LogTree, note: &Note) -> Result<(), TlogError> {
    let mut records = Vec::with_capacity(tree.seqs.len() * RECORD);
    for (leaf, seq) in tree.tree.leaves().iter().zip(&tree.seqs) {
        records.extend_from_slice(leaf);
        records.extend_from_slice(&seq.to_be_bytes());
    }
    let tree_path = dir.join(TREE);
    chock_files::replace(&tree_path, &records, chock_files::Access::Private).map_err(|source| {
        TlogError::Io {
            path: tree_path,
            source,
        }
    })?;
    let note_path = dir.join(CHECKPOINT);
    chock_files::replace(
        &note_path,
        note.to_string().as_bytes(),
        chock_files::Access::Private,
    )
    .map_err(|source| TlogError::Io {
        path: note_path,
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Lines with seqs `range`, their leaves made from the seq.
    fn lines(range: std::ops::Range<u64>) -> LogTree {
        let mut tree = LogTree::default();
        for seq in range {
            tree.push(leaf_hash(&seq.to_be_bytes()), seq);
        }
        tree
    }

    fn leaves(tree: &LogTree) -> Vec<Hash> {
        tree.tree.leaves().to_vec()
    }

    #[test]
    fn rotated_away_lines_stay_in_the_tree_and_edited_ones_are_refused() {
        let grown = joined(lines(1..6), lines(3..10)).unwrap();
        assert_eq!(leaves(&grown), leaves(&lines(1..10)));
        assert_eq!(joined(lines(1..6), lines(1..6)).unwrap().tree.size(), 5);
        // Every covered line rotated away: the newer ones follow them.
        let gapped = joined(lines(1..6), lines(8..10)).unwrap();
        assert_eq!(gapped.tree.size(), 7);
        let mut edited = lines(1..10);
        edited.tree = Tree::from_leaves({
            let mut l = leaves(&edited);
            l[3] = leaf_hash(b"edited");
            l
        });
        assert!(matches!(
            joined(lines(1..6), edited),
            Err(TlogError::Rewritten { covered: 5 })
        ));
        assert!(joined(lines(1..6), lines(1..5)).is_err(), "fewer lines");
        assert!(joined(lines(1..6), lines(5..5)).is_err(), "no lines");
        assert!(
            joined(lines(1..6), lines(4..5)).is_err(),
            "fewer lines, a newer one among them"
        );
    }
}
