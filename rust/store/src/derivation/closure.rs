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
    let bytes = std::fs::read(Path::new(&shown)).map_err(|source| DerivationError::Io {
        path: shown.clone(),
        source,
    })?;
    let text = String::from_utf8(bytes).map_err(|_| DerivationError::NotUtf8 {
        path: shown.clone(),
    })?;
    Derivation::parse(&text, name).map_err(|e| DerivationError::InFile {
        path: shown,
        source: Box::new(e),
    })
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
