//! The decision log's heads, published: an RFC 6962 Merkle tree over the
//! log's lines beside the hash chain, signed checkpoints in the C2SP
//! `tlog-checkpoint` format, inclusion and consistency proofs, and a C2SP
//! `tlog-witness` that cosigns a checkpoint only when it is consistent
//! with the last one it cosigned.
//!
//! A chain shows tampering only to someone who kept a head; a witness
//! keeps one automatically, somewhere else. What this proves and what it
//! does not is in `docs/log.md` ("Checkpoints and witnesses").

#![forbid(unsafe_code)]

pub mod checkpoint;
pub mod files;
pub mod log_tree;
pub mod note;
pub mod tree;
pub mod witness;

use std::path::PathBuf;

pub use checkpoint::Checkpoint;
pub use note::{KeyKind, Note, NoteError, NoteSignature, SignerKey, VerifierKey};
pub use tree::{Hash, ProofError, Tree, leaf_hash, verify_consistency, verify_inclusion};
pub use witness::{AddCheckpoint, Answer, Witness, WitnessError};

/// Why a tree, a proof or a checkpoint of the log was not made.
#[derive(Debug, thiserror::Error)]
pub enum TlogError {
    #[error(transparent)]
    Log(#[from] chock_log::LogError),
    #[error(transparent)]
    Note(#[from] NoteError),
    #[error(transparent)]
    Proof(#[from] ProofError),
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("the checkpoint and checkpoint.tree in {dir} disagree: one of them was changed")]
    StoredDisagree { dir: PathBuf },
    #[error(
        "the log no longer holds the lines the last checkpoint covered (of its {covered} lines, the first still in the log is not where it was, or one was changed): it was rewritten"
    )]
    Rewritten { covered: u64 },
}
