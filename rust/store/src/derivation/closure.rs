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

/// The most Chock reads of one `.drv`, whatever its size: a file is read
/// up to its own size, and this only keeps one file from taking the
/// machine's memory. The largest `.drv` in nixpkgs hold a few hundred
/// kilobytes (long `env` values); Nix itself sets no bound.
pub const MAX_DRV_BYTES: u64 = 1 << 30;

/// Reads the file at `path`, opened once, without following a link and
/// without waiting on a FIFO: a regular file, as the open descriptor says,
/// read up to the size the descriptor reports, refused when that is over
/// `limit`; anything else (a device, a pipe, a link) is refused unread.
fn read_bounded(path: &Path, limit: u64) -> Result<Vec<u8>, DerivationError> {
    use std::io::Read;
    use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
    let shown = || path.display().to_string();
    let io = |source| DerivationError::Io {
        path: shown(),
        source,
    };
    let flags = rustix::fs::OFlags::NONBLOCK | rustix::fs::OFlags::NOFOLLOW;
    let not_regular = |what| DerivationError::NotRegular {
        path: shown(),
        what,
    };
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(flags.bits().cast_signed())
        .open(path)
        .map_err(|e| match rustix::io::Errno::from_io_error(&e) {
            Some(rustix::io::Errno::LOOP) => not_regular("a symbolic link"),
            _ => io(e),
        })?;
    let meta = file.metadata().map_err(io)?;
    let kind = meta.file_type();
    if !kind.is_file() {
        return Err(not_regular(if kind.is_fifo() {
            "a FIFO (named pipe)"
        } else if kind.is_char_device() || kind.is_block_device() {
            "a device"
        } else if kind.is_socket() {
            "a socket"
        } else if kind.is_dir() {
            "a folder"
        } else {
            "not a regular file"
        }));
    }
    let size = meta.len();
    if size > limit {
        return Err(DerivationError::TooLarge {
            path: shown(),
            size,
            limit,
        });
    }
    let mut bytes = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
    // One byte past the size tells a file that grew while it was read.
    file.take(size + 1).read_to_end(&mut bytes).map_err(io)?;
    if bytes.len() as u64 != size {
        return Err(DerivationError::Changed {
            path: shown(),
            size,
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
    fn a_device_a_fifo_and_a_link_are_refused_unread_and_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("x.drv");
        let made = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(made.success());
        let link = dir.path().join("link.drv");
        std::os::unix::fs::symlink("/dev/zero", &link).unwrap();
        let started = std::time::Instant::now();
        for (path, what) in [
            (Path::new("/dev/zero"), "a device"),
            (fifo.as_path(), "a FIFO (named pipe)"),
            (link.as_path(), "a symbolic link"),
            (dir.path(), "a folder"),
        ] {
            let error = read_bounded(path, MAX_DRV_BYTES).unwrap_err();
            assert!(
                matches!(&error, DerivationError::NotRegular { what: w, .. } if *w == what),
                "{path:?}: {error}"
            );
            let text = error.to_string();
            assert!(
                text.contains("not a regular file") && text.contains(&path.display().to_string()),
                "{text}"
            );
        }
        assert!(started.elapsed() < std::time::Duration::from_secs(2));
    }

    #[test]
    fn a_regular_file_is_read_whole_by_its_own_size_and_refused_past_the_cap() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.drv");
        std::fs::write(&path, b"Derive([])").unwrap();
        assert_eq!(read_bounded(&path, MAX_DRV_BYTES).unwrap(), b"Derive([])");
        // Past 64 MiB, which was once the bound, is read whole.
        let big = dir.path().join("big.drv");
        let file = std::fs::File::create(&big).unwrap();
        file.set_len(65 << 20).unwrap();
        assert_eq!(read_bounded(&big, MAX_DRV_BYTES).unwrap().len(), 65 << 20);
        // Over the cap is refused by its size, before a byte is read.
        file.set_len(MAX_DRV_BYTES + 1).unwrap();
        let started = std::time::Instant::now();
        let error = read_bounded(&big, MAX_DRV_BYTES).unwrap_err();
        assert!(started.elapsed() < std::time::Duration::from_secs(1));
        assert!(
            matches!(error, DerivationError::TooLarge { size, limit: MAX_DRV_BYTES, .. } if size == MAX_DRV_BYTES + 1),
            "{error}"
        );
        let text = error.to_string();
        assert!(
            text.contains(&format!("is {} bytes", MAX_DRV_BYTES + 1))
                && !text.contains("not one Nix wrote"),
            "{text}"
        );
        // A file whose size says less than it holds (as /proc's do) is
        // refused, not cut at that size.
        let error = read_bounded(Path::new("/proc/self/status"), MAX_DRV_BYTES).unwrap_err();
        assert!(
            matches!(error, DerivationError::Changed { size: 0, .. }),
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
