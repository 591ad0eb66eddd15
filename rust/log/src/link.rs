//! The chain fields of one line (`seq`, `prev`, `unchained`): how a
//! chained line is built, and read back fast. The one place for it: the
//! decision log writes its lines with [`body`] and [`line`], and so does
//! every other hash-chained file of Chock (a session's log).

use std::borrow::Cow;
use std::time::SystemTime;

use serde::{Deserialize, Serialize};

use crate::record::Sha256Hash;

/// The time a line is written with: RFC 3339, UTC, milliseconds
/// (`2026-04-30T12:34:56.789Z`).
pub fn timestamp(at: SystemTime) -> String {
    humantime::format_rfc3339_millis(at).to_string()
}

/// The part of a line after the chain fields: `"ts":"...",<fields>}`, where
/// `fields` serialises as a JSON object (a struct, or an enum tagged inside).
pub fn body(ts: &str, fields: &impl Serialize) -> Result<Vec<u8>, serde_json::Error> {
    #[derive(Serialize)]
    struct Body<'a, T> {
        ts: &'a str,
        #[serde(flatten)]
        fields: &'a T,
    }
    let mut body = serde_json::to_vec(&Body { ts, fields })?;
    // Drop the opening brace: the chain fields go before the rest.
    body.remove(0);
    Ok(body)
}

/// A whole line (without its newline): `{"seq":N,"prev":"<hex>",`, then
/// `"unchained":"why",` when given, then `body`. For a decision it is byte
/// for byte what `serde_json` writes for a [`crate::Record`].
pub fn line(
    seq: u64,
    prev: Sha256Hash,
    unchained: Option<&str>,
    body: &[u8],
) -> Result<Vec<u8>, serde_json::Error> {
    let mut line = Vec::with_capacity(body.len() + 160);
    line.extend_from_slice(format!(r#"{{"seq":{seq},"prev":"{prev}","#).as_bytes());
    if let Some(why) = unchained {
        line.extend_from_slice(br#""unchained":"#);
        serde_json::to_writer(&mut line, why)?;
        line.push(b',');
    }
    line.extend_from_slice(body);
    Ok(line)
}

/// What a line says about its place in the chain.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Link {
    pub seq: u64,
    pub prev: Sha256Hash,
    pub unchained: Option<String>,
}

/// Reads a line exactly as this crate writes it: `{"seq":N,"prev":"<hex>","ts":...`.
///
/// This only looks at the start of the line; it is the fast path that lets
/// verify keep pace with hashing. It answers `None` for anything else
/// (another field order, an unchained line), and the caller falls back to
/// [`strict`]. A line that passes here but is not whole JSON is still caught:
/// its hash is checked by the next line's `prev`, and verify reads the last
/// line and every line around a break with [`strict`].
pub fn fast(line: &[u8]) -> Option<Link> {
    let rest = line.strip_prefix(br#"{"seq":"#)?;
    let digits = rest.iter().take_while(|b| b.is_ascii_digit()).count();
    if digits == 0 || digits > 20 {
        return None;
    }
    let (seq, rest) = rest.split_at_checked(digits)?;
    let seq = std::str::from_utf8(seq).ok()?.parse::<u64>().ok()?;
    let rest = rest.strip_prefix(br#","prev":""#)?;
    let (hex, rest) = rest.split_at_checked(64)?;
    if !hex.iter().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
        return None;
    }
    rest.strip_prefix(br#"","ts":""#)?;
    let prev = Sha256Hash::from_hex(std::str::from_utf8(hex).ok()?)?;
    Some(Link {
        seq,
        prev,
        unchained: None,
    })
}

#[derive(Deserialize)]
struct RawLink<'a> {
    seq: u64,
    #[serde(borrow)]
    prev: Cow<'a, str>,
    #[serde(default, borrow)]
    unchained: Option<Cow<'a, str>>,
}

/// Why a line is not a link of the chain.
#[derive(Debug, Clone, thiserror::Error)]
pub enum LinkError {
    /// It is not a JSON object with a numeric `seq` and a string `prev`.
    #[error("{0}")]
    Json(std::sync::Arc<serde_json::Error>),
    /// Its `prev` is not a hash.
    #[error("its prev `{0}` is not 64 hex digits")]
    Prev(String),
}

/// Reads a line as whole JSON: an object with a numeric `seq`, a `prev` of
/// 64 hex digits and, when present, `unchained`; other fields are not looked at.
pub fn strict(line: &[u8]) -> Result<Link, LinkError> {
    let raw: RawLink<'_> = serde_json::from_slice(line).map_err(|e| LinkError::Json(e.into()))?;
    let prev = Sha256Hash::from_hex(&raw.prev)
        .ok_or_else(|| LinkError::Prev(raw.prev.clone().into_owned()))?;
    Ok(Link {
        seq: raw.seq,
        prev,
        unchained: raw.unchained.map(Cow::into_owned),
    })
}

/// [`fast`], else [`strict`].
pub fn read(line: &[u8]) -> Result<Link, LinkError> {
    fast(line).map_or_else(|| strict(line), Ok)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const HEX: &str = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";

    #[test]
    fn fast_and_strict_agree_on_written_lines() {
        let line = format!(r#"{{"seq":12,"prev":"{HEX}","ts":"t","action":"a"}}"#);
        let link = fast(line.as_bytes()).unwrap();
        assert_eq!(link.seq, 12);
        assert_eq!(link.prev.to_string(), HEX);
        assert_eq!(strict(line.as_bytes()).ok(), Some(link));
    }

    #[test]
    fn unchained_lines_take_the_strict_path() {
        let line = format!(
            r#"{{"seq":3,"prev":"{HEX}","unchained":"the lock \"stayed\" held","ts":"t"}}"#
        );
        assert_eq!(fast(line.as_bytes()), None);
        let link = read(line.as_bytes()).unwrap();
        assert_eq!(link.unchained.as_deref(), Some(r#"the lock "stayed" held"#));
    }

    #[test]
    fn broken_lines_are_not_links() {
        let cut = format!(r#"{{"seq":12,"prev":"{HEX}","ts":"t","act"#);
        assert!(
            fast(cut.as_bytes()).is_some(),
            "the fast path only reads the start"
        );
        assert!(strict(cut.as_bytes()).is_err());
        for bad in [
            "".to_owned(),
            "{}".to_owned(),
            r#"{"seq":-1,"prev":"00"}"#.to_owned(),
            format!(r#"{{"seq":1,"prev":"{}"}}"#, &HEX[1..]),
            format!(r#"{{"seq":99999999999999999999999,"prev":"{HEX}","ts":""}}"#),
            "[1,2]".to_owned(),
        ] {
            assert!(read(bad.as_bytes()).is_err(), "{bad}");
        }
    }

    proptest! {
        #[test]
        fn no_input_panics_and_fast_never_contradicts_strict(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
            if let (Some(fast), Ok(strict)) = (fast(&bytes), strict(&bytes)) {
                prop_assert_eq!(fast, strict);
            }
        }

        #[test]
        fn fast_reads_any_written_prefix(seq in any::<u64>(), hash in any::<[u8; 32]>()) {
            let prev = Sha256Hash(hash);
            let line = format!(r#"{{"seq":{seq},"prev":"{prev}","ts":"x"}}"#);
            prop_assert_eq!(fast(line.as_bytes()), Some(Link { seq, prev, unchained: None }));
        }
    }
}
