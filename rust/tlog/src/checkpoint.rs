//! C2SP checkpoints (<https://c2sp.org/tlog-checkpoint>): a note whose
//! text is `<origin>\n<size>\n<base64 root>\n`, then any extension lines.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;

use crate::note::NoteError;
use crate::tree::Hash;

/// A tree head: which log, how many lines, and the root over them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Checkpoint {
    pub origin: String,
    pub size: u64,
    pub root: Hash,
    /// Lines after the root, each non-empty, kept as they were.
    pub extensions: Vec<String>,
}

impl Checkpoint {
    /// A checkpoint with no extension lines.
    pub fn new(origin: &str, size: u64, root: Hash) -> Checkpoint {
        Checkpoint {
            origin: origin.to_owned(),
            size,
            root,
            extensions: Vec::new(),
        }
    }

    /// Reads a note's text as a checkpoint, strictly: a non-empty origin,
    /// a decimal size with no leading zero, a 32-byte base64 root, then
    /// non-empty extension lines, every line ending in a newline.
    pub fn parse(text: &str) -> Result<Checkpoint, NoteError> {
        let body = text
            .strip_suffix('\n')
            .ok_or(NoteError::Malformed("a checkpoint ends with a newline"))?;
        let mut lines = body.split('\n');
        let origin = lines
            .next()
            .filter(|o| !o.is_empty())
            .ok_or(NoteError::Malformed("a checkpoint begins with its origin"))?;
        let size = lines
            .next()
            .filter(|s| canonical_decimal(s))
            .and_then(|s| s.parse().ok())
            .ok_or(NoteError::Malformed(
                "a checkpoint's size is a decimal number",
            ))?;
        let root = lines
            .next()
            .and_then(|r| BASE64.decode(r).ok())
            .and_then(|r| Hash::try_from(r).ok())
            .ok_or(NoteError::Malformed(
                "a checkpoint's root is 32 bytes of base64",
            ))?;
        let extensions: Vec<String> = lines.map(str::to_owned).collect();
        if extensions.iter().any(String::is_empty) {
            return Err(NoteError::Malformed("a checkpoint has an empty line"));
        }
        Ok(Checkpoint {
            origin: origin.to_owned(),
            size,
            root,
            extensions,
        })
    }

    /// The note text.
    pub fn text(&self) -> String {
        let mut text = format!(
            "{}\n{}\n{}\n",
            self.origin,
            self.size,
            BASE64.encode(self.root)
        );
        for line in &self.extensions {
            text.push_str(line);
            text.push('\n');
        }
        text
    }
}

/// Digits only, and no leading zero unless it is `0`.
pub(crate) fn canonical_decimal(text: &str) -> bool {
    !text.is_empty()
        && text.bytes().all(|b| b.is_ascii_digit())
        && (text == "0" || !text.starts_with('0'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_what_it_writes_and_nothing_loose() {
        let checkpoint = Checkpoint::new("example.com/log", 7, [9; 32]);
        assert_eq!(Checkpoint::parse(&checkpoint.text()).unwrap(), checkpoint);
        let text = checkpoint.text();
        for bad in [
            text.trim_end().to_owned(),
            text.replace("\n7\n", "\n07\n"),
            text.replace("\n7\n", "\n-7\n"),
            text.replace("example.com/log", ""),
            format!("{text}\n"),
            "o\n1\nAAAA\n".to_owned(),
        ] {
            assert!(Checkpoint::parse(&bad).is_err(), "{bad:?}");
        }
        let extended = format!("{text}ext\n");
        assert_eq!(Checkpoint::parse(&extended).unwrap().extensions, ["ext"]);
    }
}
