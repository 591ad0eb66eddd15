//! What one evaluation produced, with the store paths it computed for each
//! object, and nothing written yet.
//!
//! The evaluator (fix) fills a [`Registry`] as it goes: every derivation
//! `derivationStrict` made, every `builtins.toFile`, every source a path
//! literal or `builtins.path` copied. nix_build then writes exactly these
//! objects through the daemon, checks that the store put each one at the
//! path recorded here, and builds only derivations found here: a derivation
//! the evaluation did not produce is refused by name.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use crate::derivation::Derivation;
use crate::hash::HashAlgo;
use crate::store_path::StorePath;

/// Every object one evaluation (or one session's evaluations, merged)
/// produced, keyed by the store path the evaluator computed for it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Registry {
    /// `.drv` paths and the derivations they hold.
    pub derivations: BTreeMap<StorePath, Derivation>,
    /// Text objects (`builtins.toFile`).
    pub texts: BTreeMap<StorePath, TextFile>,
    /// Sources copied into the store (path literals, `builtins.path`,
    /// `filterSource`, a flake's own tree) and inputs already there.
    pub sources: BTreeMap<StorePath, Source>,
}

/// A text object: its name, bytes and the store paths its string context named.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TextFile {
    pub name: String,
    pub contents: Vec<u8>,
    pub references: BTreeSet<StorePath>,
}

/// A source object: the name it goes into the store under and where its
/// contents are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Source {
    pub name: String,
    pub contents: SourceContents,
}

/// Where a source's contents come from, and how the store hashes them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SourceContents {
    /// The file, symlink or tree at `path`, added as a NAR hashed with
    /// SHA-256 (a path literal, `builtins.path` with `recursive = true`).
    /// With `kept`, only these entries, relative to `path`, are part of it
    /// (what a `filter` let through); a directory listed there brings none
    /// of its entries along unless they are listed too.
    Tree {
        path: PathBuf,
        kept: Option<BTreeSet<PathBuf>>,
    },
    /// The bytes of the regular file at `path`, hashed with `algo`
    /// (`builtins.path` with `recursive = false`).
    Flat { path: PathBuf, algo: HashAlgo },
    /// Already in the store before the evaluation (a flake input fetched
    /// earlier): nothing is written, the path must be valid.
    InStore,
}

impl Registry {
    pub fn new() -> Registry {
        Registry::default()
    }

    /// Whether the evaluation produced an object at `path`.
    pub fn contains(&self, path: &StorePath) -> bool {
        self.derivations.contains_key(path)
            || self.texts.contains_key(path)
            || self.sources.contains_key(path)
    }

    /// How many objects the registry holds.
    pub fn len(&self) -> usize {
        self.derivations.len() + self.texts.len() + self.sources.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Adds everything `other` holds (a later evaluation of the same session).
    pub fn merge(&mut self, other: Registry) {
        self.derivations.extend(other.derivations);
        self.texts.extend(other.texts);
        self.sources.extend(other.sources);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn path(base: &str) -> StorePath {
        StorePath::from_base_name(base).expect("store path")
    }

    #[test]
    fn contains_looks_in_every_kind_and_merge_adds_them() {
        let drv = path("q4mzjdlh5px6977h7v5fdsk1p33yg583-source.drv");
        let text = path("jwmbpldsdgfjhkxk317jn55jilyfl63f-note");
        let source = path("i00sflxqsj37lfmf95m8mn0grv615hpj-source");
        let mut registry = Registry::new();
        registry
            .derivations
            .insert(drv.clone(), Derivation::new("source"));
        let mut later = Registry::new();
        later.texts.insert(
            text.clone(),
            TextFile {
                name: "note".into(),
                contents: b"hi".to_vec(),
                references: BTreeSet::new(),
            },
        );
        later.sources.insert(
            source.clone(),
            Source {
                name: "source".into(),
                contents: SourceContents::InStore,
            },
        );
        assert!(registry.contains(&drv));
        assert!(!registry.contains(&text));
        registry.merge(later);
        assert!(registry.contains(&text) && registry.contains(&source));
        assert_eq!(registry.len(), 3);
        assert!(!registry.is_empty());
    }
}
