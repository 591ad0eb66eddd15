//! The per-project writable cache a sandboxed program gets at
//! `/run/chock/cache` (`HOME` and `XDG_CACHE_HOME` point into it).
//!
//! It is kept between runs, because a toolchain that compiles the world
//! again every command is not usable, and bounded at 2 GiB: a cache over
//! the bound is emptied at the next start, which says so (a cache is
//! rebuildable by definition). Everything in it was written by sandboxed
//! programs, so Chock's own walks over it never follow a link: measuring
//! uses `lstat`, and emptying opens each directory with `O_NOFOLLOW` and
//! unlinks by name relative to it, so a link planted inside cannot turn a
//! `chock cache clear` into a delete elsewhere.

use std::os::fd::OwnedFd;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use nix::fcntl::OFlag;
use nix::sys::stat::Mode;

/// The most a project's cache may hold.
pub const CACHE_BOUND: u64 = 2 << 30;

/// What a cache holds.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct CacheUsage {
    /// The host directory.
    pub dir: PathBuf,
    /// Bytes on disk, all of it.
    pub bytes: u64,
    /// The bound.
    pub bound: u64,
    /// Each top-level entry and its bytes, largest first.
    pub entries: Vec<(String, u64)>,
}

/// What starting a run did to the cache.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum CacheStart {
    /// The project had no cache; this run made one.
    Created,
    /// Within the bound, kept as it was.
    Kept,
    /// Over the bound: emptied.
    Emptied {
        /// What it held.
        bytes: u64,
    },
}

/// Bytes under `path` (itself included), never following a link; stops
/// counting once `stop_above` is passed.
fn tree_bytes(path: &Path, stop_above: u64) -> u64 {
    let mut total = 0u64;
    let mut pending = vec![path.to_path_buf()];
    while let Some(next) = pending.pop() {
        let Ok(meta) = std::fs::symlink_metadata(&next) else {
            continue;
        };
        total = total.saturating_add(meta.blocks().saturating_mul(512));
        if total > stop_above {
            break;
        }
        if meta.is_dir()
            && let Ok(entries) = std::fs::read_dir(&next)
        {
            pending.extend(entries.filter_map(|e| e.ok().map(|e| e.path())));
        }
    }
    total
}

/// Measures the cache, entry by entry.
pub fn usage(dir: &Path) -> std::io::Result<CacheUsage> {
    let mut entries = Vec::new();
    match std::fs::read_dir(dir) {
        Ok(read) => {
            for entry in read {
                let entry = entry?;
                let name = entry.file_name().to_string_lossy().into_owned();
                entries.push((name, tree_bytes(&entry.path(), u64::MAX)));
            }
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(e),
    }
    entries.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    let bytes = entries.iter().map(|e| e.1).sum();
    Ok(CacheUsage {
        dir: dir.to_path_buf(),
        bytes,
        bound: CACHE_BOUND,
        entries,
    })
}

/// Makes the cache if it is missing and empties it if it is over `bound`.
pub fn start(dir: &Path, bound: u64) -> std::io::Result<CacheStart> {
    if !dir.exists() {
        std::fs::create_dir_all(dir)?;
        return Ok(CacheStart::Created);
    }
    let bytes = tree_bytes(dir, bound);
    if bytes <= bound {
        return Ok(CacheStart::Kept);
    }
    let bytes = tree_bytes(dir, u64::MAX);
    clear(dir)?;
    Ok(CacheStart::Emptied { bytes })
}

/// Empties the cache (the directory itself stays). Returns the bytes freed.
pub fn clear(dir: &Path) -> std::io::Result<u64> {
    let before = tree_bytes(dir, u64::MAX);
    let fd = match nix::fcntl::open(
        dir,
        OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC,
        Mode::empty(),
    ) {
        Ok(fd) => fd,
        Err(nix::errno::Errno::ENOENT) => return Ok(0),
        Err(e) => return Err(e.into()),
    };
    remove_contents(&fd)?;
    Ok(before.saturating_sub(tree_bytes(dir, u64::MAX)))
}

fn remove_contents(dir: &OwnedFd) -> std::io::Result<()> {
    // Toolchains (Go's module cache) leave read-only directories, which
    // `remove_tree` opens to their owner first.
    for name in chock_image::extract::children(dir)? {
        chock_image::extract::remove_tree(dir, &name)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clearing_never_follows_a_planted_link() {
        let dir = tempfile::tempdir().expect("tempdir");
        let cache = dir.path().join("cache");
        let outside = dir.path().join("outside");
        std::fs::create_dir_all(cache.join("go/pkg")).expect("cache");
        std::fs::create_dir_all(&outside).expect("outside");
        std::fs::write(outside.join("precious"), "keep").expect("precious");
        std::fs::write(cache.join("go/pkg/mod.zip"), vec![0u8; 8192]).expect("file");
        std::os::unix::fs::symlink(&outside, cache.join("escape")).expect("link");
        std::os::unix::fs::symlink(outside.join("precious"), cache.join("go/file-link"))
            .expect("link");
        let mut perms = std::fs::metadata(cache.join("go/pkg"))
            .expect("meta")
            .permissions();
        std::os::unix::fs::PermissionsExt::set_mode(&mut perms, 0o555);
        std::fs::set_permissions(cache.join("go/pkg"), perms).expect("chmod");

        clear(&cache).expect("clear");
        assert_eq!(std::fs::read_dir(&cache).expect("read").count(), 0);
        assert_eq!(
            std::fs::read_to_string(outside.join("precious")).expect("still there"),
            "keep"
        );
    }

    #[test]
    fn a_cache_over_the_bound_is_emptied_and_says_how_much() {
        let dir = tempfile::tempdir().expect("tempdir");
        let cache = dir.path().join("cache");
        assert_eq!(start(&cache, 1 << 20).expect("start"), CacheStart::Created);
        std::fs::write(cache.join("big"), vec![1u8; 64 * 1024]).expect("big");
        assert_eq!(start(&cache, 1 << 20).expect("start"), CacheStart::Kept);
        match start(&cache, 16 * 1024).expect("start") {
            CacheStart::Emptied { bytes } => assert!(bytes >= 64 * 1024),
            other => panic!("expected emptied, got {other:?}"),
        }
        assert_eq!(usage(&cache).expect("usage").bytes, 0);
    }
}
