//! The per-project writable cache a sandboxed program gets at
//! `/run/chock/cache` (`HOME` and `XDG_CACHE_HOME` point into it).
//!
//! It is kept between runs, because a toolchain that compiles the world
//! again every command is not usable, and bounded at 2 GiB: a cache over
//! the bound is emptied at the next start, which says so (a cache is
//! rebuildable by definition). Everything in it was written by sandboxed
//! programs, so Chock's own walks over it never follow a link: measuring
//! opens each directory beneath the cache with no link on the way and
//! looks at each name relative to it (`fstatat` without following), and
//! emptying opens each directory with `O_NOFOLLOW` and unlinks by name
//! relative to it, so a link planted inside cannot turn a `chock cache
//! clear` into a delete elsewhere.

use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use nix::dir::Dir;
use nix::fcntl::{AtFlags, OFlag, OpenHow, ResolveFlag, openat2};
use nix::sys::stat::{Mode, SFlag, fstatat};

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
/// counting once `stop_above` is passed. Every start measures the cache,
/// so the walk goes by descriptor: each folder is opened beneath `path`
/// with no link on the way (`openat2`, `RESOLVE_BENEATH |
/// RESOLVE_NO_SYMLINKS`) and its entries are looked at relative to it, one
/// name each rather than a whole path from `/`; a folder swapped for a link
/// while the walk runs is not entered. One folder is open at a time, so no
/// depth of folders runs out of descriptors or stack.
fn tree_bytes(path: &Path, stop_above: u64) -> u64 {
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return 0;
    };
    let mut total = meta.blocks().saturating_mul(512);
    if !meta.is_dir() {
        return total;
    }
    let Ok(top) = nix::fcntl::open(
        path,
        OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC,
        Mode::empty(),
    ) else {
        return total;
    };
    let how = || {
        OpenHow::new()
            .flags(OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC)
            .resolve(ResolveFlag::RESOLVE_BENEATH | ResolveFlag::RESOLVE_NO_SYMLINKS)
    };
    // Folders still to read, relative to the top.
    let mut pending = vec![PathBuf::from(".")];
    while let Some(rel) = pending.pop() {
        if total > stop_above {
            break;
        }
        let Ok(dir) = openat2(top.as_fd(), rel.as_path(), how()) else {
            continue;
        };
        let Ok(mut entries) = dir
            .try_clone()
            .map_err(drop)
            .and_then(|fd| Dir::from_fd(fd).map_err(drop))
        else {
            continue;
        };
        for entry in entries.iter().filter_map(Result::ok) {
            let name = entry.file_name();
            if name.to_bytes() == b"." || name.to_bytes() == b".." {
                continue;
            }
            let Ok(stat) = fstatat(dir.as_fd(), name, AtFlags::AT_SYMLINK_NOFOLLOW) else {
                continue;
            };
            total = total.saturating_add(
                u64::try_from(stat.st_blocks)
                    .unwrap_or(0)
                    .saturating_mul(512),
            );
            if total > stop_above {
                break;
            }
            if SFlag::from_bits_truncate(stat.st_mode) & SFlag::S_IFMT == SFlag::S_IFDIR {
                pending.push(rel.join(std::ffi::OsStr::from_bytes(name.to_bytes())));
            }
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
    use nix::fcntl::openat;

    use super::*;

    /// A cache holding 64 KiB, with links planted to a folder outside
    /// (holding 4 MiB and a precious file) and to that file.
    fn planted() -> (tempfile::TempDir, PathBuf, PathBuf) {
        let dir = tempfile::tempdir().expect("tempdir");
        let cache = dir.path().join("cache");
        let outside = dir.path().join("outside");
        std::fs::create_dir_all(cache.join("go/pkg")).expect("cache");
        std::fs::create_dir_all(&outside).expect("outside");
        std::fs::write(outside.join("precious"), "keep").expect("precious");
        std::fs::write(outside.join("big"), vec![1u8; 4 << 20]).expect("big");
        std::fs::write(cache.join("go/pkg/mod.zip"), vec![0u8; 64 * 1024]).expect("file");
        std::os::unix::fs::symlink(&outside, cache.join("escape")).expect("link");
        std::os::unix::fs::symlink(outside.join("precious"), cache.join("go/file-link"))
            .expect("link");
        (dir, cache, outside)
    }

    #[test]
    fn clearing_never_follows_a_planted_link() {
        let (_dir, cache, outside) = planted();
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
    fn measuring_never_follows_a_planted_link() {
        let (_dir, cache, _outside) = planted();
        let bytes = tree_bytes(&cache, u64::MAX);
        assert!(bytes >= 64 * 1024, "the nested file is counted: {bytes}");
        assert!(bytes < 1 << 20, "nothing behind a link is counted: {bytes}");
        let stopped = tree_bytes(&cache, 1);
        assert!(
            stopped > 1 && stopped < bytes,
            "counting stops once past the bound: {stopped} of {bytes}"
        );
    }

    #[test]
    fn a_tree_deeper_than_the_descriptors_allow_is_counted_to_its_bottom() {
        let dir = tempfile::tempdir().expect("tempdir");
        let cache = dir.path().join("cache");
        std::fs::create_dir_all(&cache).expect("cache");
        // 1,100 levels: more than the 1,024 descriptors a process usually
        // may hold, fewer than PATH_MAX allows beneath the top. Made one
        // level at a time from the last, since the whole path is too long
        // to name from `/`.
        let mut here: OwnedFd = std::fs::File::open(&cache).expect("top").into();
        for _ in 0..1100 {
            nix::sys::stat::mkdirat(here.as_fd(), "d", Mode::S_IRWXU).expect("mkdir");
            here = openat(
                here.as_fd(),
                "d",
                OFlag::O_DIRECTORY | OFlag::O_CLOEXEC,
                Mode::empty(),
            )
            .expect("open");
        }
        let file = openat(
            here.as_fd(),
            "big",
            OFlag::O_WRONLY | OFlag::O_CREAT | OFlag::O_CLOEXEC,
            Mode::S_IRUSR | Mode::S_IWUSR,
        )
        .expect("file");
        nix::unistd::write(&file, &vec![1u8; 1 << 20]).expect("write");
        assert!(
            tree_bytes(&cache, u64::MAX) >= 1 << 20,
            "the bottom file is counted"
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
