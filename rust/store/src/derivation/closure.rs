//! Reading `.drv` files from the store, one or a whole closure.

use std::collections::{BTreeMap, VecDeque};
use std::path::Path;

use super::{Derivation, DerivationError};
use crate::store_path::StorePath;

/// Reads and parses the `.drv` file at `drv_path` from the local store.
pub fn read_derivation(drv_path: &StorePath) -> Result<Derivation, DerivationError> {
    let shown = drv_path.to_string();
    let Some(name) = drv_path.name().strip_suffix(".drv") else {
        return Err(DerivationError::NotADerivation { path: shown });
    };
    let bytes = read_bounded(Path::new(&shown), MAX_DRV_BYTES)?;
    let text = String::from_utf8(bytes).map_err(|_| DerivationError::NotUtf8 {
        path: shown.clone(),
    })?;
    Derivation::parse(&text, name).map_err(|e| DerivationError::InFile {
        path: shown,
        inner: Box::new(e),
    })
}

/// The most a `.drv` may hold. The largest in nixpkgs are a few hundred
/// kilobytes (long `env` values); a store path linked to a device or a
/// pipe must not be read without end.
pub const MAX_DRV_BYTES: u64 = 64 << 20;

/// Reads the file at `path`, opened once: a regular file up to its own size
/// as the open file reports it (and never past `limit`), anything else
/// (a device, a pipe) up to `limit` bytes; more than that is an error.
fn read_bounded(path: &Path, limit: u64) -> Result<Vec<u8>, DerivationError> {
    use std::io::Read;
    let io = |source| DerivationError::Io {
        path: path.display().to_string(),
        source,
    };
    let file = std::fs::File::open(path).map_err(io)?;
    let meta = file.metadata().map_err(io)?;
    let regular = meta.is_file();
    let bound = if regular {
        meta.len().min(limit)
    } else {
        limit
    };
    let mut bytes = Vec::with_capacity(usize::try_from(bound.min(1 << 20)).unwrap_or(0));
    // One byte past the bound tells a file that grew, or never ends.
    file.take(bound + 1).read_to_end(&mut bytes).map_err(io)?;
    if bytes.len() as u64 > bound {
        return Err(DerivationError::TooLarge {
            path: path.display().to_string(),
            limit: bound,
            regular,
        });
    }
    Ok(bytes)
}

/// Reads `roots` and, when `recursive`, every derivation they depend on:
/// input derivations and input sources that are `.drv` files (what
/// `nix show-derivation -r` lists). A store path's references are its
/// inputs, and the sources an evaluation can produce (`builtins.toFile`,
/// added paths) cannot refer to a `.drv`, so walking the files finds the
/// same set as walking the store's reference graph.
pub fn read_closure(
    roots: &[StorePath],
    recursive: bool,
) -> Result<BTreeMap<StorePath, Derivation>, DerivationError> {
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(8);
    let mut found: BTreeMap<StorePath, Derivation> = BTreeMap::new();
    let mut frontier: Vec<StorePath> = roots.to_vec();
    frontier.sort();
    frontier.dedup();
    while !frontier.is_empty() {
        let batch = read_many(&frontier, threads);
        let mut next: Vec<StorePath> = Vec::new();
        for (path, drv) in frontier.drain(..).zip(batch) {
            let drv = drv?;
            if recursive {
                next.extend(inputs_to_follow(&drv).cloned());
            }
            found.insert(path, drv);
        }
        next.retain(|p| !found.contains_key(p));
        next.sort();
        next.dedup();
        frontier = next;
    }
    Ok(found)
}

/// Input derivations and `.drv` input sources: what `-r` follows.
fn inputs_to_follow(drv: &Derivation) -> impl Iterator<Item = &StorePath> {
    drv.input_drvs
        .keys()
        .chain(drv.input_srcs.iter().filter(|s| s.is_derivation()))
}

/// Reads `paths` on up to `threads` threads; results in the same order.
fn read_many(paths: &[StorePath], threads: usize) -> Vec<Result<Derivation, DerivationError>> {
    if threads < 2 || paths.len() < 64 {
        return paths.iter().map(read_derivation).collect();
    }
    std::thread::scope(|scope| {
        let workers: Vec<_> = paths
            .chunks(paths.len().div_ceil(threads))
            .map(|chunk| scope.spawn(move || chunk.iter().map(read_derivation).collect::<Vec<_>>()))
            .collect();
        workers
            .into_iter()
            .flat_map(|w| {
                w.join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
            })
            .collect()
    })
}

/// [`read_closure`] with a custom reader (a cache, an in-memory store).
pub fn read_closure_with(
    roots: &[StorePath],
    recursive: bool,
    read: &mut dyn FnMut(&StorePath) -> Result<Derivation, DerivationError>,
) -> Result<BTreeMap<StorePath, Derivation>, DerivationError> {
    let mut found: BTreeMap<StorePath, Derivation> = BTreeMap::new();
    let mut queue: VecDeque<StorePath> = roots.iter().cloned().collect();
    while let Some(path) = queue.pop_front() {
        if found.contains_key(&path) {
            continue;
        }
        let drv = read(&path)?;
        if recursive {
            queue.extend(
                inputs_to_follow(&drv)
                    .filter(|p| !found.contains_key(*p))
                    .cloned(),
            );
        }
        found.insert(path, drv);
    }
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_device_that_never_ends_is_read_only_to_the_limit() {
        let error = read_bounded(Path::new("/dev/zero"), 4096).unwrap_err();
        assert!(
            matches!(
                error,
                DerivationError::TooLarge {
                    limit: 4096,
                    regular: false,
                    ..
                }
            ),
            "{error}"
        );
        assert!(error.to_string().contains("not a regular file"), "{error}");
    }

    #[test]
    fn a_regular_file_is_read_whole_up_to_its_size_and_refused_past_the_limit() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.drv");
        std::fs::write(&path, b"Derive([])").unwrap();
        assert_eq!(read_bounded(&path, 1 << 20).unwrap(), b"Derive([])");
        let error = read_bounded(&path, 4).unwrap_err();
        assert!(
            matches!(error, DerivationError::TooLarge { regular: true, .. }),
            "{error}"
        );
    }

    #[test]
    fn an_error_in_a_file_says_its_text_once() {
        let inner = Derivation::parse("Derive([(", "x").unwrap_err();
        let error = DerivationError::InFile {
            path: "/nix/store/x.drv".into(),
            inner: Box::new(inner),
        };
        let text = error.to_string();
        assert_eq!(text.matches("malformed at byte").count(), 1, "{text}");
        assert!(
            std::error::Error::source(&error).is_none(),
            "no cause that a chain would print again"
        );
    }
}
