//! `.witnesses`: the C2SP tlog-witnesses `chock log checkpoint` has cosign
//! each checkpoint of the decision log, named in an organisation bundle or
//! in the operator's `config.zon`, each with the key its cosignatures must
//! verify under.
//!
//! ```zon
//! .witnesses = .{
//!     .{ .url = "https://witness.example", .key = "witness.example+1a2b3c4d+AbCd..." },
//! },
//! ```

use chock_zon::Spanned;
use serde::Deserialize;

use crate::{ConfigError, Source};

/// At most this many witnesses in one file.
pub const MAX_WITNESSES: usize = 4;

/// One entry of `.witnesses` as written.
#[derive(Debug, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a witness `.{ .url = \"https://witness.example\", .key = \"NAME+KEYID+KEY\" }`"
)]
pub struct WitnessFields {
    url: String,
    key: String,
}

/// A witness: where it answers `add-checkpoint`, and its verifier key as
/// written (`<name>+<8 hex>+<base64>`; read whole where it is used).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Witness {
    pub url: String,
    pub key: String,
}

impl Witness {
    /// `URL#KEY`, the command line's way of naming a witness and its key
    /// (a URL's fragment is never sent, so it can carry the key).
    pub fn parse_flag(text: &str) -> Result<Witness, String> {
        let (url, key) = text.split_once('#').ok_or_else(|| {
            format!("`{text}` names no key: write the witness as URL#VERIFIER_KEY (`chock witness serve` prints its key)")
        })?;
        Witness::checked(url, key)
    }

    fn checked(url: &str, key: &str) -> Result<Witness, String> {
        if !(url.starts_with("http://") || url.starts_with("https://")) || url.contains('#') {
            return Err(format!(
                "`{url}` is not a witness's address: write http://HOST[:PORT][/PATH] or https://..."
            ));
        }
        let parts: Vec<&str> = key.splitn(3, '+').collect();
        let shaped = parts.len() == 3
            && !parts[0].is_empty()
            && parts[1].len() == 8
            && parts[1].bytes().all(|b| b.is_ascii_hexdigit())
            && !parts[2].is_empty();
        if !shaped {
            return Err(format!(
                "`{key}` is not a verifier key: it reads NAME+KEYID+KEY, as `chock witness key` prints it"
            ));
        }
        Ok(Witness {
            url: url.to_owned(),
            key: key.to_owned(),
        })
    }
}

/// Reads one file's `.witnesses`: at most [`MAX_WITNESSES`], each an
/// http(s) address and a verifier key.
pub fn check_witnesses(
    source: &Source<'_>,
    list: Spanned<Vec<Spanned<WitnessFields>>>,
) -> Result<Vec<Witness>, ConfigError> {
    if list.value.len() > MAX_WITNESSES {
        return Err(source.error(
            list.span,
            format!("a file names at most {MAX_WITNESSES} witnesses"),
        ));
    }
    list.value
        .into_iter()
        .map(|Spanned { span, value }| {
            Witness::checked(&value.url, &value.key).map_err(|why| source.error(span, why))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_flag_names_an_address_and_a_key() {
        let w = Witness::parse_flag("http://127.0.0.1:8440#w.example+0a1b2c3d+AQ+D=").unwrap();
        assert_eq!(w.url, "http://127.0.0.1:8440");
        assert_eq!(w.key, "w.example+0a1b2c3d+AQ+D=");
        for bad in [
            "http://127.0.0.1:8440",
            "ftp://h#w+0a1b2c3d+AQ",
            "http://h#w+0a1b2c3+AQ",
            "http://h#w+0a1b2c3d",
            "http://h#+0a1b2c3d+AQ",
        ] {
            assert!(Witness::parse_flag(bad).is_err(), "{bad}");
        }
    }
}
