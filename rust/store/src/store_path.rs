//! Store paths: parsing, name rules, and how Nix computes them.

use std::borrow::Borrow;
use std::collections::BTreeSet;
use std::fmt;

use thiserror::Error;

use crate::hash::{self, Encoding, Hash};
use crate::nix32;

/// The only store directory this crate computes paths for; every path the
/// daemon on this machine accepts lives under it.
pub const STORE_DIR: &str = "/nix/store";

/// Characters in the hash part of a store path.
pub const HASH_PART_LEN: usize = 32;

/// Longest name Nix 2.8 accepts (`StorePath::MaxPathLen`).
pub const MAX_NAME_LEN: usize = 211;

/// Why a string is not a store path or a store-path name.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum StorePathError {
    #[error("{0:?} is not in the Nix store: store paths start with {STORE_DIR}/")]
    NotInStore(String),
    #[error("store path {0:?} has no hash part: expected {STORE_DIR}/<32 nix32 characters>-<name>")]
    BadHashPart(String),
    #[error("store path {0:?} has an empty name")]
    EmptyName(String),
    #[error("store path {path:?} has a name longer than {MAX_NAME_LEN} characters ({len})")]
    NameTooLong { path: String, len: usize },
    #[error(
        "store path {path:?} contains the illegal character {character:?}: names use only 0-9 A-Z a-z and + - . _ ? ="
    )]
    IllegalCharacter { path: String, character: char },
}

/// A path in the Nix store, `/nix/store/<hash part>-<name>`.
///
/// Kept as its base name: that orders paths exactly as their full strings
/// order (the prefix is shared and the hash part has a fixed width), which is
/// the order Nix writes them in `.drv` files.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct StorePath {
    base: Box<str>,
}

impl StorePath {
    /// Parses `/nix/store/<hash>-<name>` (nothing after the name).
    pub fn from_absolute_path(path: &str) -> Result<StorePath, StorePathError> {
        let base = path
            .strip_prefix(STORE_DIR)
            .and_then(|rest| rest.strip_prefix('/'))
            .ok_or_else(|| StorePathError::NotInStore(path.to_owned()))?;
        StorePath::from_base_name_for(base, path)
    }

    /// Parses `<hash>-<name>`, the file name of a store path.
    pub fn from_base_name(base: &str) -> Result<StorePath, StorePathError> {
        StorePath::from_base_name_for(base, base)
    }

    fn from_base_name_for(base: &str, shown: &str) -> Result<StorePath, StorePathError> {
        let bytes = base.as_bytes();
        let hash_ok = bytes.len() > HASH_PART_LEN
            && bytes[..HASH_PART_LEN]
                .iter()
                .all(|&c| nix32::is_nix32_char(c))
            && bytes[HASH_PART_LEN] == b'-';
        if !hash_ok {
            return Err(
                if bytes.len() == HASH_PART_LEN + 1 && bytes[HASH_PART_LEN] == b'-' {
                    StorePathError::EmptyName(shown.to_owned())
                } else {
                    StorePathError::BadHashPart(shown.to_owned())
                },
            );
        }
        check_name_for(&base[HASH_PART_LEN + 1..], shown)?;
        Ok(StorePath { base: base.into() })
    }

    /// Builds a store path from a 20-byte digest and a name.
    pub fn from_digest(digest: &[u8; 20], name: &str) -> Result<StorePath, StorePathError> {
        let hash_part = nix32::encode(digest);
        check_name_for(name, &format!("{STORE_DIR}/{hash_part}-{name}"))?;
        Ok(StorePath {
            base: format!("{hash_part}-{name}").into(),
        })
    }

    /// The 32 nix32 characters before the first `-`.
    pub fn hash_part(&self) -> &str {
        &self.base[..HASH_PART_LEN]
    }

    pub fn name(&self) -> &str {
        &self.base[HASH_PART_LEN + 1..]
    }

    /// `<hash>-<name>`.
    pub fn base_name(&self) -> &str {
        &self.base
    }

    /// `/nix/store/<hash>-<name>`.
    pub fn to_absolute(&self) -> String {
        format!("{STORE_DIR}/{}", self.base)
    }

    /// Whether the name ends in `.drv`, the test Nix uses.
    pub fn is_derivation(&self) -> bool {
        self.name().ends_with(".drv")
    }
}

impl fmt::Display for StorePath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{STORE_DIR}/{}", self.base)
    }
}

impl fmt::Debug for StorePath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{self}")
    }
}

impl std::str::FromStr for StorePath {
    type Err = StorePathError;
    fn from_str(s: &str) -> Result<StorePath, StorePathError> {
        StorePath::from_absolute_path(s)
    }
}

/// Checks a store-path name against Nix 2.8's rules.
pub fn check_name(name: &str) -> Result<(), StorePathError> {
    check_name_for(name, name)
}

fn check_name_for(name: &str, shown: &str) -> Result<(), StorePathError> {
    if name.is_empty() {
        return Err(StorePathError::EmptyName(shown.to_owned()));
    }
    if name.len() > MAX_NAME_LEN {
        return Err(StorePathError::NameTooLong {
            path: shown.to_owned(),
            len: name.len(),
        });
    }
    if let Some(bad) = name
        .chars()
        .find(|&c| !(c.is_ascii_alphanumeric() || "+-._?=".contains(c)))
    {
        return Err(StorePathError::IllegalCharacter {
            path: shown.to_owned(),
            character: bad,
        });
    }
    Ok(())
}

/// How a fixed-output or content-addressed object is hashed: its bytes
/// (`flat`) or the NAR of the tree (`recursive`, written `r:`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum FileIngestionMethod {
    Flat,
    Recursive,
}

impl FileIngestionMethod {
    /// `""` or `"r:"`, the prefix Nix puts before an algorithm name.
    pub fn prefix(self) -> &'static str {
        match self {
            FileIngestionMethod::Flat => "",
            FileIngestionMethod::Recursive => "r:",
        }
    }
}

/// The hash a fixed-output derivation or a fixed content address promises.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct FixedOutputHash {
    pub method: FileIngestionMethod,
    pub hash: Hash,
}

impl FixedOutputHash {
    /// `r:sha256`, `sha1`, ...: the `hashAlgo` field of a `.drv` output.
    pub fn method_algo(&self) -> String {
        format!("{}{}", self.method.prefix(), self.hash.algo())
    }

    /// The store path of an object with this hash, as `makeFixedOutputPath`.
    pub fn store_path(&self, name: &str) -> Result<StorePath, StorePathError> {
        make_fixed_output_path(self.method, &self.hash, name, &BTreeSet::new(), false)
    }
}

/// A content address, as the daemon reports it in `ca` (`text:sha256:<nix32>`,
/// `fixed:r:sha256:<nix32>`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ContentAddress {
    Text(Hash),
    Fixed(FixedOutputHash),
}

/// Why a content-address string was refused.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ContentAddressError {
    #[error("content address {0:?} is neither text:<hash> nor fixed:[r:]<hash>")]
    BadForm(String),
    #[error("content address {0:?}: text content addresses use sha256 only")]
    TextNotSha256(String),
    #[error("content address {text:?}: {source}")]
    BadHash {
        text: String,
        source: hash::HashError,
    },
}

impl ContentAddress {
    pub fn parse(text: &str) -> Result<ContentAddress, ContentAddressError> {
        let bad_hash = |source| ContentAddressError::BadHash {
            text: text.to_owned(),
            source,
        };
        if let Some(rest) = text.strip_prefix("text:") {
            let hash = Hash::parse(rest, None).map_err(bad_hash)?;
            if hash.algo() != hash::HashAlgo::Sha256 {
                return Err(ContentAddressError::TextNotSha256(text.to_owned()));
            }
            return Ok(ContentAddress::Text(hash));
        }
        let rest = text
            .strip_prefix("fixed:")
            .ok_or_else(|| ContentAddressError::BadForm(text.to_owned()))?;
        let (method, rest) = match rest.strip_prefix("r:") {
            Some(r) => (FileIngestionMethod::Recursive, r),
            None => (FileIngestionMethod::Flat, rest),
        };
        let hash = Hash::parse(rest, None).map_err(bad_hash)?;
        Ok(ContentAddress::Fixed(FixedOutputHash { method, hash }))
    }

    /// The path this content would have in the store under `name`.
    pub fn store_path(
        &self,
        name: &str,
        references: &BTreeSet<StorePath>,
    ) -> Result<StorePath, StorePathError> {
        match self {
            ContentAddress::Text(hash) => make_text_path(name, hash, references),
            ContentAddress::Fixed(f) => {
                make_fixed_output_path(f.method, &f.hash, name, references, false)
            }
        }
    }
}

impl fmt::Display for ContentAddress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ContentAddress::Text(h) => write!(f, "text:{}", h.to_typed(Encoding::Nix32)),
            ContentAddress::Fixed(x) => write!(
                f,
                "fixed:{}{}",
                x.method.prefix(),
                x.hash.to_typed(Encoding::Nix32)
            ),
        }
    }
}

/// `makeStorePath`: the path whose fingerprint is
/// `<type>:<algo>:<hex inner>:/nix/store:<name>`, its SHA-256 folded to 20 bytes.
pub fn make_store_path(
    path_type: &str,
    inner: &Hash,
    name: &str,
) -> Result<StorePath, StorePathError> {
    let fingerprint = format!(
        "{path_type}:{}:{STORE_DIR}:{name}",
        inner.to_typed(Encoding::Base16)
    );
    let folded = hash::compress(Hash::sha256(fingerprint).as_bytes(), 20);
    let mut digest = [0u8; 20];
    digest.copy_from_slice(&folded);
    StorePath::from_digest(&digest, name)
}

/// `type` followed by `:<path>` for each reference and `:self` if asked.
fn make_type(base: &str, references: &BTreeSet<StorePath>, self_reference: bool) -> String {
    let mut t = base.to_owned();
    for r in references {
        t.push(':');
        t.push_str(&r.to_absolute());
    }
    if self_reference {
        t.push_str(":self");
    }
    t
}

/// The path of a text object (`builtins.toFile`, a `.drv` file): `contents_hash`
/// is the SHA-256 of the bytes.
pub fn make_text_path(
    name: &str,
    contents_hash: &Hash,
    references: &BTreeSet<StorePath>,
) -> Result<StorePath, StorePathError> {
    make_store_path(&make_type("text", references, false), contents_hash, name)
}

/// The path of a text object whose contents are given.
pub fn text_path(
    name: &str,
    contents: impl AsRef<[u8]>,
    references: &BTreeSet<StorePath>,
) -> Result<StorePath, StorePathError> {
    make_text_path(name, &Hash::sha256(contents), references)
}

/// The path of a source tree added by NAR hash (`nix-store --add`, a path
/// literal, a flake input): `nar_hash` is the SHA-256 of its NAR.
pub fn make_source_path(
    name: &str,
    nar_hash: &Hash,
    references: &BTreeSet<StorePath>,
) -> Result<StorePath, StorePathError> {
    make_fixed_output_path(
        FileIngestionMethod::Recursive,
        nar_hash,
        name,
        references,
        false,
    )
}

/// `makeFixedOutputPath`: recursive SHA-256 objects use the `source` type
/// (with references); every other fixed object is `output:out` over
/// `fixed:out:[r:]<algo>:<hex>:` and cannot have references, so any given are ignored.
pub fn make_fixed_output_path(
    method: FileIngestionMethod,
    hash: &Hash,
    name: &str,
    references: &BTreeSet<StorePath>,
    self_reference: bool,
) -> Result<StorePath, StorePathError> {
    if method == FileIngestionMethod::Recursive && hash.algo() == hash::HashAlgo::Sha256 {
        return make_store_path(&make_type("source", references, self_reference), hash, name);
    }
    let inner = Hash::sha256(format!(
        "fixed:out:{}{}:",
        method.prefix(),
        hash.to_typed(Encoding::Base16)
    ));
    make_store_path("output:out", &inner, name)
}

/// The name of output `output` of a derivation called `drv_name`.
pub fn output_path_name(drv_name: &str, output: &str) -> String {
    if output == "out" {
        drv_name.to_owned()
    } else {
        format!("{drv_name}-{output}")
    }
}

/// The path of an input-addressed output from the derivation's hash modulo.
pub fn make_output_path(
    output: &str,
    drv_hash: &Hash,
    drv_name: &str,
) -> Result<StorePath, StorePathError> {
    make_store_path(
        &format!("output:{output}"),
        drv_hash,
        &output_path_name(drv_name, output),
    )
}

impl Borrow<str> for StorePath {
    fn borrow(&self) -> &str {
        &self.base
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hash::HashAlgo;
    use proptest::prelude::*;

    fn hex(algo: HashAlgo, s: &str) -> Hash {
        Hash::decode(algo, s).unwrap()
    }

    #[test]
    fn v1_recursive_sha256_fod_and_flake_input() {
        let nar = hex(
            HashAlgo::Sha256,
            "894517c9163c896ec31a2adbd33c0681fd5f45b2c0ef08a64c92a03fb97f390f",
        );
        assert_eq!(
            Hash::parse("sha256-iUUXyRY8iW7DGirb0zwGgf1fRbLA7wimTJKgP7l/OQ8=", None),
            Ok(nar)
        );
        let p = make_source_path("source", &nar, &BTreeSet::new()).unwrap();
        assert_eq!(
            p.to_string(),
            "/nix/store/i00sflxqsj37lfmf95m8mn0grv615hpj-source"
        );
    }

    #[test]
    fn v7_flat_fixed_output() {
        let h = hex(
            HashAlgo::Sha256,
            "f3f3c4763037e059b4d834eaf68595bbc02ba19f6d2a500dce06d124e2cd99bb",
        );
        assert_eq!(h, Hash::sha256("mycontent\n"));
        let inner = Hash::sha256(format!("fixed:out:{}:", h.to_typed(Encoding::Base16)));
        assert_eq!(
            inner.to_base16(),
            "423e6fdef56d53251c5939359c375bf21ea07aaa8d89ca5798fb374dbcfd7639"
        );
        let f = FixedOutputHash {
            method: FileIngestionMethod::Flat,
            hash: h,
        };
        assert_eq!(
            f.store_path("bar").unwrap().to_string(),
            "/nix/store/a00d5f71k0vp5a6klkls0mvr1f7sx6ch-bar"
        );
    }

    #[test]
    fn parse_and_print() {
        let s = "/nix/store/i00sflxqsj37lfmf95m8mn0grv615hpj-source";
        let p = StorePath::from_absolute_path(s).unwrap();
        assert_eq!(p.hash_part(), "i00sflxqsj37lfmf95m8mn0grv615hpj");
        assert_eq!(p.name(), "source");
        assert_eq!(p.to_string(), s);
        assert!(!p.is_derivation());
        assert!(matches!(
            StorePath::from_absolute_path("/tmp/x"),
            Err(StorePathError::NotInStore(_))
        ));
        assert!(matches!(
            StorePath::from_absolute_path("/nix/store/i00sflxqsj37lfmf95m8mn0grv615hpe-source"),
            Err(StorePathError::BadHashPart(_))
        ));
        assert!(matches!(
            StorePath::from_absolute_path("/nix/store/i00sflxqsj37lfmf95m8mn0grv615hpj-"),
            Err(StorePathError::EmptyName(_))
        ));
        assert!(matches!(
            StorePath::from_absolute_path("/nix/store/i00sflxqsj37lfmf95m8mn0grv615hpj-a/b"),
            Err(StorePathError::IllegalCharacter { character: '/', .. })
        ));
        assert!(check_name(&"a".repeat(211)).is_ok());
        assert!(matches!(
            check_name(&"a".repeat(212)),
            Err(StorePathError::NameTooLong { .. })
        ));
        assert!(check_name("foo-1.2_3+x?y=z").is_ok());
    }

    #[test]
    fn content_address_forms() {
        let h = Hash::sha256("x");
        let text = ContentAddress::Text(h);
        assert_eq!(text.to_string(), format!("text:sha256:{}", h.to_nix32()));
        assert_eq!(ContentAddress::parse(&text.to_string()), Ok(text));
        let fixed = ContentAddress::Fixed(FixedOutputHash {
            method: FileIngestionMethod::Recursive,
            hash: Hash::digest(HashAlgo::Sha1, "x"),
        });
        assert!(fixed.to_string().starts_with("fixed:r:sha1:"));
        assert_eq!(ContentAddress::parse(&fixed.to_string()), Ok(fixed));
        assert!(ContentAddress::parse("nope").is_err());
        assert!(matches!(
            ContentAddress::parse(&format!(
                "text:{}",
                Hash::digest(HashAlgo::Md5, "").to_typed(Encoding::Base16)
            )),
            Err(ContentAddressError::TextNotSha256(_))
        ));
    }

    #[test]
    fn output_names() {
        assert_eq!(output_path_name("hello", "out"), "hello");
        assert_eq!(output_path_name("hello", "dev"), "hello-dev");
    }

    proptest! {
        #[test]
        fn parse_never_panics(s in "\\PC{0,80}") {
            let _ = StorePath::from_absolute_path(&s);
            let _ = StorePath::from_absolute_path(&format!("/nix/store/{s}"));
            let _ = ContentAddress::parse(&s);
        }
    }
}
