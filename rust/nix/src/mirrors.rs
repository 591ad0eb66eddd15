//! Mirror lists: what `mirror://<site>/...` stands for. nixpkgs' fetchurl
//! names a mirrors file, the output of a `mirrors-list` derivation whose
//! environment holds every site's list; so the lists are read from that
//! derivation when it is in the closure (no build needed), else from the
//! file itself.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::Path;

use sha2::{Digest, Sha256};

use chock_store::Derivation;

/// The most of a mirrors file that is read.
pub const MAX_MIRRORS_FILE_BYTES: u64 = 256 * 1024;

/// The site that holds the hashed mirrors (`<mirror>/<algo>/<hash>`).
pub(crate) const HASHED_MIRRORS: &str = "hashedMirrors";

/// Each site's mirrors, in the list's own order.
pub(crate) type MirrorLists = BTreeMap<String, Vec<String>>;

/// The lists in a `mirrors-list` derivation's environment: every variable
/// named by letters alone whose value holds `://`. `None` when it has none.
pub(crate) fn from_env(drv: &Derivation) -> Option<MirrorLists> {
    let lists: MirrorLists = drv
        .env
        .iter()
        .filter(|(k, v)| is_site(k) && v.contains("://"))
        .map(|(k, v)| (k.clone(), v.split_whitespace().map(str::to_owned).collect()))
        .collect();
    (!lists.is_empty()).then_some(lists)
}

/// Reads a mirrors file of at most [`MAX_MIRRORS_FILE_BYTES`].
pub(crate) fn read_file(path: &Path) -> Result<MirrorLists, Unread> {
    let file = std::fs::File::open(path)?;
    let mut text = String::new();
    file.take(MAX_MIRRORS_FILE_BYTES + 1)
        .read_to_string(&mut text)?;
    if text.len() as u64 > MAX_MIRRORS_FILE_BYTES {
        return Err(Unread::TooLarge);
    }
    Ok(parse_file(&text))
}

/// Why a mirrors file was not read.
#[derive(Debug, thiserror::Error)]
pub(crate) enum Unread {
    #[error(transparent)]
    Io(#[from] std::io::Error),
    #[error("it is larger than {MAX_MIRRORS_FILE_BYTES} bytes, the most Chock reads")]
    TooLarge,
}

/// The lines of a mirrors file that name a site: `site=url` or
/// `site='url url'` (the `set` output of write-mirror-list.sh), and
/// `declare -a _mirror_site=(url url)` (arrays, indexed or not). Other
/// lines are ignored.
pub(crate) fn parse_file(text: &str) -> MirrorLists {
    let mut lists = MirrorLists::new();
    for line in text.lines() {
        let line = line.trim();
        let (declared, line) = match line.strip_prefix("declare -a ") {
            Some(rest) => (true, rest.trim_start()),
            None => (false, line),
        };
        let Some((name, value)) = line.split_once('=') else {
            continue;
        };
        let name = if declared {
            name.strip_prefix("_mirror_").unwrap_or(name)
        } else {
            name
        };
        if !is_site(name) {
            continue;
        }
        let urls: Vec<String> = match value.strip_prefix('(') {
            Some(items) => items
                .trim_end()
                .strip_suffix(')')
                .unwrap_or(items)
                .split_whitespace()
                .map(|item| unquote(item.split_once("]=").map_or(item, |(_, v)| v)))
                .collect(),
            None => unquote(value)
                .split_whitespace()
                .map(str::to_owned)
                .collect(),
        };
        let urls: Vec<String> = urls.into_iter().filter(|u| u.contains("://")).collect();
        if !urls.is_empty() {
            lists.insert(name.to_owned(), urls);
        }
    }
    lists
}

/// A site name as nixpkgs writes them: letters only.
fn is_site(name: &str) -> bool {
    !name.is_empty() && name.bytes().all(|b| b.is_ascii_alphabetic())
}

/// One pair of single or double quotes (and `$'...'`) taken off.
fn unquote(text: &str) -> String {
    let text = text.strip_prefix('$').unwrap_or(text);
    for quote in ['\'', '"'] {
        if let Some(inner) = text.strip_prefix(quote).and_then(|t| t.strip_suffix(quote)) {
            return inner.to_owned();
        }
    }
    text.to_owned()
}

/// The SHA-256 (lowercase hex) of one site's list: each mirror followed by
/// a newline, in the list's order.
pub(crate) fn list_sha256(mirrors: &[String]) -> String {
    let mut hasher = Sha256::new();
    for mirror in mirrors {
        hasher.update(mirror.as_bytes());
        hasher.update(b"\n");
    }
    hex::encode(hasher.finalize())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn the_set_output_of_write_mirror_list_is_read() {
        let text = "gnu='https://ftpmirror.gnu.org/ https://ftp.gnu.org/pub/gnu/'\n\
                    hashedMirrors=https://tarballs.nixos.org\n\
                    BASH=/bin/bash\n\
                    PS4='+ '\n\
                    savannah=$'https://a.example/\\n'\n";
        let lists = parse_file(text);
        assert_eq!(
            lists.get("gnu"),
            Some(&vec![
                "https://ftpmirror.gnu.org/".to_owned(),
                "https://ftp.gnu.org/pub/gnu/".to_owned()
            ])
        );
        assert_eq!(
            lists.get(HASHED_MIRRORS),
            Some(&vec!["https://tarballs.nixos.org".to_owned()])
        );
        assert!(!lists.contains_key("BASH") && !lists.contains_key("PS4"));
        assert_eq!(lists.len(), 3, "{lists:?}");
    }

    #[test]
    fn declared_arrays_are_read() {
        let lists = parse_file(
            "declare -a _mirror_gnu=(https://a.example/ \"https://b.example/\")\n\
             declare -a kde=([0]=\"https://k.example/\" [1]=\"https://l.example/\")\n",
        );
        assert_eq!(
            lists["gnu"],
            vec!["https://a.example/", "https://b.example/"]
        );
        assert_eq!(
            lists["kde"],
            vec!["https://k.example/", "https://l.example/"]
        );
    }

    #[test]
    fn the_mirrors_list_derivation_holds_every_site() {
        let mut drv = Derivation::new("mirrors-list");
        for (k, v) in [
            ("gnu", "https://ftpmirror.gnu.org/ https://ftp.gnu.org/"),
            ("builder", "/nix/store/x-bash/bin/bash"),
            ("name", "mirrors-list"),
            ("x86", "https://no.example/"),
        ] {
            drv.env.insert(k.into(), v.into());
        }
        let lists = from_env(&drv).expect("lists");
        assert_eq!(lists.keys().collect::<Vec<_>>(), vec!["gnu"]);
        assert!(from_env(&Derivation::new("other")).is_none());
    }

    #[test]
    fn a_site_is_hashed_alone() {
        let gnu = vec!["https://a/".to_owned(), "https://b/".to_owned()];
        assert_eq!(list_sha256(&gnu).len(), 64);
        assert_ne!(list_sha256(&gnu), list_sha256(&gnu[..1]));
        assert_eq!(
            list_sha256(&["a".to_owned()]),
            hex::encode(Sha256::digest(b"a\n"))
        );
    }

    #[test]
    fn a_large_file_is_refused() {
        let dir = tempfile::tempdir().expect("tempdir");
        let file = dir.path().join("mirrors");
        std::fs::write(&file, "x".repeat(300 * 1024)).expect("write");
        assert!(read_file(&file).is_err());
    }

    proptest! {
        #[test]
        fn any_text_parses_without_panicking(text in ".{0,400}") {
            for urls in parse_file(&text).values() {
                prop_assert!(urls.iter().all(|u| u.contains("://")));
            }
        }
    }
}
