//! NAR (`nix-archive-1`), the archive Nix hashes and ships store objects in.
//!
//! [`write`] packs a directory tree (or bytes) exactly as Nix does; [`read`]
//! parses a NAR as a stream, refusing anything Nix would not have written:
//! unsorted or duplicate entries, non-zero padding, names that are empty,
//! `.`, `..`, or hold `/` or NUL, and lengths past sane limits. It never
//! allocates more than a limit allows, whatever a length field says.

pub mod read;
pub mod write;

use thiserror::Error;

pub use read::{NarLimits, NarReader, NarVisitor, restore, validate};
pub use write::{NarInfo, hash_path, write_bytes, write_path};

/// The magic string every NAR starts with.
pub const MAGIC: &str = "nix-archive-1";

/// Why a NAR could not be written or read.
#[derive(Debug, Error)]
pub enum NarError {
    #[error("i/o error at {path:?}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
    #[error("the NAR stream failed after byte {offset}: {source}")]
    Stream { offset: u64, source: std::io::Error },
    #[error("the NAR ends early at byte {offset}: it is truncated")]
    Truncated { offset: u64 },
    #[error("malformed NAR at byte {offset}: expected {expected}, found {found:?}")]
    Unexpected {
        offset: u64,
        expected: &'static str,
        found: String,
    },
    #[error("malformed NAR at byte {offset}: a {what} of {len} bytes exceeds the limit of {limit}")]
    TooLong {
        offset: u64,
        what: &'static str,
        len: u64,
        limit: u64,
    },
    #[error("malformed NAR at byte {offset}: padding after a string is not zero")]
    BadPadding { offset: u64 },
    #[error(
        "malformed NAR at byte {offset}: entry name {name:?} is not allowed (empty, \".\", \"..\", or containing / or NUL)"
    )]
    BadName { offset: u64, name: String },
    #[error(
        "malformed NAR at byte {offset}: entry {name:?} is not after {previous:?}: entries must be unique and sorted"
    )]
    Unsorted {
        offset: u64,
        name: String,
        previous: String,
    },
    #[error("malformed NAR at byte {offset}: directories nest deeper than {limit}")]
    TooDeep { offset: u64, limit: usize },
    #[error(
        "{path:?} is neither a regular file, a directory nor a symlink, and a NAR cannot hold it"
    )]
    UnsupportedFileType { path: String },
    #[error(
        "{path:?} changed size while it was being archived; archive it again when it is not being written"
    )]
    FileChanged { path: String },
    #[error("cannot restore the NAR: {path:?} already exists; choose a destination that does not")]
    DestinationExists { path: String },
}
