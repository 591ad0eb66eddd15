//! ZON (Zig Object Notation) reader as a serde Deserializer, and a writer, with
//! file:line:col diagnostics.
//!
//! Chock's configuration (`chock.zon`, the operator's `config.zon`, an
//! organisation's policy bundle) is ZON because the tool it reimplements used
//! it, and because Zig is a strict oracle: whatever `zig ast-check --zon`
//! refuses, this reader refuses too, and whatever the writer produces, Zig
//! accepts. The grammar is in `docs/zon.md`.
//!
//! Reading is two steps: the whole text is parsed into a tree that remembers
//! byte spans (so a syntax error anywhere refuses the file, even in a block the
//! caller ignores), then serde walks the tree. Types choose their own
//! strictness: `#[serde(deny_unknown_fields)]` refuses a misspelt field at
//! its name; without it, unknown fields are skipped.

#![forbid(unsafe_code)]

mod de;
mod edit;
mod error;
mod number;
mod parse;
mod ser;
mod spanned;

use std::io::Read;
use std::path::Path;

use serde::de::DeserializeOwned;

pub use edit::append_to_list;
pub use error::{Error, Span, WriteError, line_col, nearest};
pub use parse::MAX_DEPTH;
pub use ser::{quote_name, quote_string, to_string};
pub use spanned::Spanned;

/// The largest file the reader accepts: 1 MiB. A configuration file that
/// large is a mistake or an attack, and a bound keeps reading predictable.
pub const MAX_FILE_BYTES: usize = 1 << 20;

/// Checks `text` against the ZON grammar without reading it into a type.
pub fn validate(text: &str) -> Result<(), Error> {
    parse_checked(text).map(|_| ())
}

/// Reads `text` as a `T`. Errors name `<input>` as the file; use
/// [`Error::with_file`] or [`from_str_in`] to name the real one.
pub fn from_str<T: DeserializeOwned>(text: &str) -> Result<T, Error> {
    from_str_in(None, text)
}

/// Reads `text`, which came from `file`, as a `T`.
pub fn from_str_in<T: DeserializeOwned>(file: Option<&Path>, text: &str) -> Result<T, Error> {
    let node = parse_checked(text).map_err(|e| name_file(e, file))?;
    T::deserialize(de::NodeDeserializer { node: &node }).map_err(|e| {
        let span = e.span.unwrap_or(node.span);
        Error::at(file, text, span, e.message)
    })
}

/// Reads raw bytes (as they come from disk): refuses text that is not UTF-8,
/// naming the line of the first bad byte.
pub fn from_slice_in<T: DeserializeOwned>(file: Option<&Path>, bytes: &[u8]) -> Result<T, Error> {
    let text = utf8(file, bytes)?;
    from_str_in(file, text)
}

/// Reads the file at `path` as a `T`: at most [`MAX_FILE_BYTES`], UTF-8, ZON.
/// The returned text is the exact source, for callers that quote rules back.
pub fn read_file<T: DeserializeOwned>(path: &Path) -> Result<(T, String), ReadError> {
    let text = read_text(path)?;
    let value = from_str_in(Some(path), &text)?;
    Ok((value, text))
}

/// Reads the text of a ZON file within the size bound, without parsing it.
pub fn read_text(path: &Path) -> Result<String, ReadError> {
    let file = std::fs::File::open(path).map_err(|source| ReadError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    let mut bytes = Vec::new();
    file.take(MAX_FILE_BYTES as u64 + 1)
        .read_to_end(&mut bytes)
        .map_err(|source| ReadError::Io {
            path: path.to_path_buf(),
            source,
        })?;
    if bytes.len() > MAX_FILE_BYTES {
        return Err(too_large(Some(path)).into());
    }
    let text = utf8(Some(path), &bytes)?;
    Ok(text.to_string())
}

/// Why a file could not be read: the file itself, or what is in it.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("cannot read {}: {source}", path.display())]
    Io {
        path: std::path::PathBuf,
        source: std::io::Error,
    },
    #[error(transparent)]
    Zon(#[from] Error),
}

fn parse_checked(text: &str) -> Result<parse::Node, Error> {
    if text.len() > MAX_FILE_BYTES {
        return Err(too_large(None));
    }
    parse::parse_document(text).map_err(|(span, message)| Error::at(None, text, span, message))
}

fn too_large(file: Option<&Path>) -> Error {
    Error::whole_file(
        file,
        format!(
            "the file is larger than {MAX_FILE_BYTES} bytes (1 MiB): a ZON configuration file must be smaller"
        ),
    )
}

fn name_file(e: Error, file: Option<&Path>) -> Error {
    match file {
        Some(file) => e.with_file(file),
        None => e,
    }
}

fn utf8<'a>(file: Option<&Path>, bytes: &'a [u8]) -> Result<&'a str, Error> {
    std::str::from_utf8(bytes).map_err(|e| {
        let good = bytes.get(..e.valid_up_to()).unwrap_or(&[]);
        let valid = std::str::from_utf8(good).unwrap_or("");
        Error::at(
            file,
            valid,
            Span {
                start: valid.len(),
                end: valid.len(),
            },
            "this byte is not UTF-8: Chock reads ZON files as UTF-8 text",
        )
    })
}
