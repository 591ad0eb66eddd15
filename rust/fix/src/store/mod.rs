//! What an evaluation would put in the store, kept in memory.
//!
//! Nothing is written: `derivationStrict`, `toFile`, `builtins.path` and
//! path interpolation compute the store path of what they would add, as
//! Nix computes it, and record the object in a [`Registry`] for nix_build
//! to write later. Reads of such a path are served from where the object
//! really is (the source tree, the text in memory); a read of a
//! derivation's output that is not built is refused with the derivation's
//! name, because an evaluation never builds (no import from derivation).

pub mod nar;

use crate::error::{Error, ErrorKind, Result};
use crate::source::Pos;
use chock_store::registry::{Source, SourceContents, TextFile};
use chock_store::{DrvHashes, Registry, StorePath};
use rustc_hash::FxHashMap;
use std::path::{Path, PathBuf};

/// The default of `max_object_bytes` (the `nix` block of chock.zon).
pub const DEFAULT_MAX_OBJECT_BYTES: u64 = 16 << 20;

/// The objects an evaluation produced and what it knows about them.
#[derive(Default)]
pub struct Produced {
    pub registry: Registry,
    /// hashDerivationModulo of every derivation produced, so a dependent's
    /// output paths never need a `.drv` file.
    pub hashes: DrvHashes,
    /// Output path (absolute) to the `.drv` that makes it.
    pub outputs: FxHashMap<String, StorePath>,
    /// For each flake lock read, the inputs it names that are not in the
    /// store (`getFlake` fills it; an input is looked for only when used).
    pub flake_missing: Vec<Vec<crate::flake::MissingInput>>,
    /// The absent inputs of the lock whose input stopped the evaluation.
    pub missing_inputs: Vec<crate::flake::MissingInput>,
}

/// Where the bytes of a path really are.
pub enum Located {
    /// A file on this machine (outside the store, in the store already, or
    /// inside a source the evaluation would copy).
    Host(PathBuf),
    /// A text file the evaluation would write (`builtins.toFile`).
    Text(Vec<u8>),
}

impl Produced {
    /// Where to read `path` from; an output not built yet is refused.
    pub fn locate(&self, store_dir: &str, path: &Path, pos: Pos) -> Result<Located> {
        let Some((base, rest)) = split_store_path(store_dir, path) else {
            return Ok(Located::Host(path.to_path_buf()));
        };
        let Ok(store_path) = StorePath::from_base_name(base) else {
            return Ok(Located::Host(path.to_path_buf()));
        };
        if let Some(source) = self.registry.sources.get(&store_path)
            && let SourceContents::Tree { path: tree, kept } = &source.contents
        {
            // A filtered copy holds only what its filter kept.
            let inside = kept
                .as_ref()
                .is_none_or(|kept| rest.as_os_str().is_empty() || kept.contains(rest));
            if inside {
                return Ok(Located::Host(join_rest(tree, rest)));
            }
        }
        if let Some(text) = self.registry.texts.get(&store_path)
            && rest.as_os_str().is_empty()
        {
            return Ok(Located::Text(text.contents.clone()));
        }
        if chock_store::fs::exists_no_follow(path) {
            return Ok(Located::Host(path.to_path_buf()));
        }
        let absolute = store_path.to_absolute();
        if let Some(drv) = self.outputs.get(&absolute) {
            return Err(Error::new(
                ErrorKind::BuildNeeded,
                format!(
                    "cannot read '{}': it is an output of the derivation '{drv}', which is not built, and an evaluation builds nothing (import from derivation is refused); evaluate that derivation on its own, or build it with nix_build first",
                    path.display()
                ),
                pos,
            ));
        }
        Ok(Located::Host(path.to_path_buf()))
    }

    /// Records a text file (`builtins.toFile`).
    pub fn add_text(&mut self, path: StorePath, text: TextFile) {
        self.registry.texts.insert(path, text);
    }

    /// Records a source copied into the store.
    pub fn add_source(&mut self, path: StorePath, name: String, contents: SourceContents) {
        self.registry
            .sources
            .entry(path)
            .or_insert(Source { name, contents });
    }
}

/// `/nix/store/<base>/<rest>` split into its parts.
fn split_store_path<'p>(store_dir: &str, path: &'p Path) -> Option<(&'p str, &'p Path)> {
    let inside = path.strip_prefix(store_dir).ok()?;
    let mut parts = inside.components();
    let base = parts.next()?.as_os_str().to_str()?;
    Some((base, parts.as_path()))
}

fn join_rest(tree: &Path, rest: &Path) -> PathBuf {
    if rest.as_os_str().is_empty() {
        tree.to_path_buf()
    } else {
        tree.join(rest)
    }
}

/// Refuses an object larger than `max_object_bytes`.
pub fn check_size(what: &str, size: u64, max: u64, pos: Pos) -> Result<()> {
    if size > max {
        return Err(Error::new(
            ErrorKind::Refused,
            format!(
                "{what} would be {size} bytes in the store, more than the {max} bytes max_object_bytes allows (the nix block of chock.zon); make it smaller or raise the cap"
            ),
            pos,
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn store_paths_split_into_base_and_rest() {
        let p = Path::new("/nix/store/abc-x/a/b");
        assert_eq!(
            split_store_path("/nix/store", p),
            Some(("abc-x", Path::new("a/b")))
        );
        assert_eq!(split_store_path("/nix/store", Path::new("/tmp/x")), None);
    }

    #[test]
    fn sizes_over_the_cap_are_refused() {
        assert!(check_size("x", 10, 10, Pos::NONE).is_ok());
        let e = check_size("the file", 11, 10, Pos::NONE).expect_err("too big");
        assert_eq!(e.kind(), ErrorKind::Refused);
    }
}
