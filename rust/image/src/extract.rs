//! Writing an image's layers into a directory, lowest first, as a
//! container runtime applies them: a `.wh.NAME` entry removes NAME from
//! the layers below, a `.wh..wh..opq` entry empties its directory of what
//! the layers below put there, and a later entry replaces an earlier one.
//!
//! Every entry is placed by descriptor: its parent directory is opened with
//! `openat2(RESOLVE_IN_ROOT)` on the tree's own descriptor, so a `..`, an
//! absolute name or a symbolic link among the parents resolves inside the
//! tree as it would inside the image, never outside it; an entry whose own
//! name holds `..` is refused outright, and the entry itself is made with
//! `O_EXCL | O_NOFOLLOW` (or `mkdirat`, `symlinkat`, `linkat` with no link
//! followed) relative to that descriptor. Device nodes are not made,
//! set-user-ID and set-group-ID bits are dropped, and owners and extended
//! attributes (file capabilities among them) are not kept: every file
//! belongs to the person running Chock, and is bound read-only into the
//! sandbox.
//!
//! Each layer's bytes are hashed as they are read, compressed and not: a
//! layer whose digest is not the one the manifest and the configuration
//! name fails the whole tree, which is then never used.

use std::collections::{BTreeMap, HashSet};
use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};

use nix::errno::Errno;
use nix::fcntl::{AtFlags, OFlag, OpenHow, ResolveFlag, openat, openat2};
use nix::sys::stat::{FileStat, Mode, SFlag, fchmod, fstatat, futimens, mkdirat, mknodat};
use nix::sys::time::TimeSpec;
use nix::unistd::{UnlinkatFlags, linkat, symlinkat, unlinkat};
use sha2::{Digest, Sha256};

use crate::source::Layer;

/// The name that makes its directory opaque.
const OPAQUE: &[u8] = b".wh..wh..opq";
/// The prefix of a whiteout.
const WHITEOUT: &[u8] = b".wh.";

/// What the layers held, counted as they were written.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Stats {
    /// Regular files written.
    pub files: u64,
    /// Their bytes.
    pub bytes: u64,
    /// Device nodes left out.
    pub devices_dropped: u64,
    /// Set-user-ID or set-group-ID bits dropped.
    pub setid_dropped: u64,
    /// Whiteouts and opaque markers applied.
    pub whiteouts: u64,
}

type Parts = Vec<OsString>;

/// How far one image's layers may expand, all layers together: a small
/// compressed layer (or a GNU sparse entry, which a tar stores as its data
/// alone) can otherwise stand for any amount of data to write.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Bytes of regular files written, a sparse entry counted at its
    /// expanded size; the tar streams read may hold twice this (headers).
    pub bytes: u64,
    /// Tar entries (files, directories, links, whiteouts) read.
    pub entries: u64,
    /// Bytes of files written per byte of the layers as stored, read so
    /// far (beyond the first [`RATIO_FLOOR`] bytes): what a layer may
    /// expand by.
    pub ratio: u64,
}

/// What the layers may write whatever the ratio.
pub const RATIO_FLOOR: u64 = 1 << 30;

impl Default for Limits {
    /// 64 GiB and 4 million entries: several times the largest images in
    /// common use (a CUDA toolchain image is about 20 GiB and 300,000
    /// files unpacked); and 2048 bytes written per byte stored, twice what
    /// gzip can reach at best (about 1030 to 1, for zeros), so that no
    /// gzip or plain layer is refused by it while a GNU sparse entry or a
    /// zstd stream of zeros, which stand for far more, are.
    fn default() -> Limits {
        Limits {
            bytes: 64 << 30,
            entries: 4_000_000,
            ratio: 2048,
        }
    }
}

/// Counts the bytes read through it into a total shared with the writer.
struct Counting {
    inner: Box<dyn Read + Send>,
    total: std::sync::Arc<std::sync::atomic::AtomicU64>,
}

impl Read for Counting {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.total
            .fetch_add(n as u64, std::sync::atomic::Ordering::Relaxed);
        Ok(n)
    }
}

/// Writes layers into one directory.
pub struct Writer {
    root: OwnedFd,
    /// Each directory an entry named, with its mode and time, set at the end
    /// (until then every directory stays writable to its owner).
    dirs: BTreeMap<Parts, (u32, u64)>,
    /// What the current layer has written, and every ancestor of it: an
    /// opaque marker keeps these.
    touched: HashSet<Parts>,
    /// Device nodes left out, so a hard link to one is left out too.
    dropped: HashSet<Parts>,
    /// How far the layers may expand.
    limits: Limits,
    /// Bytes of tar read so far.
    read: u64,
    /// Bytes of regular files written so far.
    written: u64,
    /// Tar entries read so far.
    entries: u64,
    /// Bytes of the layers as stored read so far.
    stored: std::sync::Arc<std::sync::atomic::AtomicU64>,
    /// What was written.
    pub stats: Stats,
}

fn how(flags: OFlag, resolve: ResolveFlag) -> OpenHow {
    OpenHow::new()
        .flags(flags | OFlag::O_CLOEXEC)
        .resolve(resolve)
}

fn in_root() -> ResolveFlag {
    ResolveFlag::RESOLVE_IN_ROOT | ResolveFlag::RESOLVE_NO_MAGICLINKS
}

/// The normal parts of an entry's name. A leading `/` or `./` is dropped
/// (the name is then relative to the tree); a `..` refuses the entry.
pub fn parts_of(path: &Path) -> Result<Parts, LayerError> {
    let mut parts = Vec::new();
    for component in path.components() {
        match component {
            Component::Normal(part) => parts.push(part.to_os_string()),
            Component::RootDir | Component::CurDir => {}
            Component::ParentDir | Component::Prefix(_) => {
                return Err(LayerError::Escapes(path.to_path_buf()));
            }
        }
    }
    Ok(parts)
}

fn joined(parts: &[OsString]) -> PathBuf {
    if parts.is_empty() {
        PathBuf::from(".")
    } else {
        parts.iter().collect()
    }
}

fn is_dir(stat: &FileStat) -> bool {
    SFlag::from_bits_truncate(stat.st_mode) & SFlag::S_IFMT == SFlag::S_IFDIR
}

fn fault(what: &'static str, path: &Path, e: impl std::fmt::Display) -> LayerError {
    LayerError::Fault {
        what,
        path: path.to_path_buf(),
        cause: e.to_string(),
    }
}

/// Why a layer was not written: each sentence says what of the layer was
/// refused or failed, and nothing of a refused image is used.
#[derive(Debug, thiserror::Error)]
pub enum LayerError {
    #[error("{what} {} failed ({cause})", path.display())]
    Fault {
        what: &'static str,
        path: PathBuf,
        cause: String,
    },
    #[error("it holds the entry `{}`, whose `..` would reach outside the image's tree", .0.display())]
    Escapes(PathBuf),
    #[error("it cannot be read ({0})")]
    Unreadable(std::io::Error),
    #[error("it cannot be read to its end ({0})")]
    Truncated(std::io::Error),
    #[error("it is not a tar ({0})")]
    NotTar(std::io::Error),
    #[error("its bytes have digest {found}, and the manifest says {expected}: the copy is damaged")]
    StoredDamaged { found: String, expected: String },
    #[error(
        "its tar has digest {found}, and the configuration says {expected}: the copy is damaged"
    )]
    TarDamaged { found: String, expected: String },
    #[error(
        "the image's layers hold more than {0} entries, the bound Chock unpacks; nothing of it is used"
    )]
    TooManyEntries(u64),
    #[error("an entry's name cannot be read ({0})")]
    UnreadableName(std::io::Error),
    #[error("the link {} cannot be read ({cause})", path.display())]
    UnreadableLink {
        path: PathBuf,
        cause: std::io::Error,
    },
    #[error("the link {} has no target", .0.display())]
    NoLinkTarget(PathBuf),
    #[error("the hard link {} names the tree itself", .0.display())]
    HardLinkToTree(PathBuf),
    #[error("the hard link {} names {}, which is not in the image", path.display(), target.display())]
    HardLinkMissing { path: PathBuf, target: PathBuf },
    #[error("its entry `{}` expands to {size} bytes, past {bound} ({before} written before it); nothing of it is used: the image is larger than that, or the layer expands without end (a GNU sparse or highly compressed entry)", path.display())]
    TooLarge {
        path: PathBuf,
        size: u64,
        bound: String,
        before: u64,
    },
    #[error("the tree's own directory is gone")]
    RootGone,
}

/// Removes `name` in `dir` and, for a directory, everything in it, opening
/// each directory with no link followed and unlinking by name beneath it,
/// so a link planted inside cannot turn the removal into one elsewhere;
/// read-only directories are opened to their owner first.
pub fn remove_tree(dir: &OwnedFd, name: &OsStr) -> Result<(), Errno> {
    let stat = match fstatat(dir.as_fd(), name, AtFlags::AT_SYMLINK_NOFOLLOW) {
        Ok(stat) => stat,
        Err(Errno::ENOENT) => return Ok(()),
        Err(e) => return Err(e),
    };
    if !is_dir(&stat) {
        return unlinkat(dir.as_fd(), name, UnlinkatFlags::NoRemoveDir);
    }
    let child = openat(
        dir.as_fd(),
        name,
        OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC,
        Mode::empty(),
    )?;
    // A directory of the image may be read-only to its owner.
    fchmod(child.as_fd(), Mode::S_IRWXU)?;
    for entry in children(&child)? {
        remove_tree(&child, &entry)?;
    }
    unlinkat(dir.as_fd(), name, UnlinkatFlags::RemoveDir)
}

/// The names in `dir`, less `.` and `..`.
pub fn children(dir: &OwnedFd) -> Result<Vec<OsString>, Errno> {
    let mut names = Vec::new();
    for entry in nix::dir::Dir::from_fd(dir.try_clone().map_err(|_| Errno::EMFILE)?)?.iter() {
        let name = entry?.file_name().to_bytes().to_vec();
        if name != b"." && name != b".." {
            names.push(OsString::from(std::ffi::OsStr::from_bytes(&name)));
        }
    }
    Ok(names)
}

/// Reads through, hashing what it reads.
struct Hashing<R> {
    inner: R,
    hasher: Sha256,
}

impl<R: Read> Read for Hashing<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.hasher.update(buf.get(..n).unwrap_or_default());
        Ok(n)
    }
}

impl<R> Hashing<R> {
    fn new(inner: R) -> Self {
        Hashing {
            inner,
            hasher: Sha256::new(),
        }
    }

    fn digest(self) -> String {
        format!("sha256:{}", hex::encode(self.hasher.finalize()))
    }
}

/// Fails a read past the bound instead of going on.
struct Bounded<R> {
    inner: R,
    left: u64,
}

impl<R: Read> Read for Bounded<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.left = self.left.checked_sub(n as u64).ok_or_else(|| {
            std::io::Error::other("the layers hold more bytes than the bound Chock writes")
        })?;
        Ok(n)
    }
}

type Stored = Hashing<BufReader<Box<dyn Read + Send>>>;

/// A zstd stream of one frame or several, one after the other, as `zstd`
/// writes a large input.
enum Zstd<'a> {
    /// Between frames (or before the first).
    Between(Option<&'a mut Stored>),
    /// Inside one.
    Frame(Box<ruzstd::decoding::StreamingDecoder<&'a mut Stored, ruzstd::decoding::FrameDecoder>>),
}

impl Read for Zstd<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        loop {
            match self {
                Zstd::Frame(decoder) => {
                    let n = decoder.read(buf)?;
                    if n > 0 || buf.is_empty() {
                        return Ok(n);
                    }
                    // This frame is done: the next may follow.
                    if let Zstd::Frame(done) = std::mem::replace(self, Zstd::Between(None)) {
                        *self = Zstd::Between(Some((*done).into_inner()));
                    }
                }
                Zstd::Between(input) => {
                    let Some(input) = input.take() else {
                        return Ok(0);
                    };
                    if input.inner.fill_buf()?.is_empty() {
                        *self = Zstd::Between(None);
                        return Ok(0);
                    }
                    let decoder = ruzstd::decoding::StreamingDecoder::new(input).map_err(|e| {
                        std::io::Error::other(format!("its zstd stream cannot be read ({e})"))
                    })?;
                    *self = Zstd::Frame(Box::new(decoder));
                }
            }
        }
    }
}

/// What a layer's first bytes say it is.
fn decompress<'a>(input: &'a mut Stored) -> Result<Box<dyn Read + 'a>, LayerError> {
    let head = input.inner.fill_buf().map_err(LayerError::Unreadable)?;
    if head.starts_with(&[0x1f, 0x8b]) {
        Ok(Box::new(flate2::read::GzDecoder::new(input)))
    } else if head.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]) {
        Ok(Box::new(Zstd::Between(Some(input))))
    } else {
        Ok(Box::new(input))
    }
}

impl Writer {
    /// A writer into the directory `root` (empty, made by the caller).
    pub fn new(root: &Path) -> Result<Writer, LayerError> {
        let root = nix::fcntl::open(
            root,
            OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC,
            Mode::empty(),
        )
        .map_err(|e| fault("opening", root, e))?;
        Ok(Writer {
            root,
            dirs: BTreeMap::new(),
            touched: HashSet::new(),
            dropped: HashSet::new(),
            limits: Limits::default(),
            read: 0,
            written: 0,
            entries: 0,
            stored: std::sync::Arc::default(),
            stats: Stats::default(),
        })
    }

    /// This writer, refusing layers that expand past `limits`.
    pub fn with_limits(self, limits: Limits) -> Writer {
        Writer { limits, ..self }
    }

    /// This writer, refusing layers whose files hold more than `bytes` in
    /// all, with the default bound on entries.
    pub fn with_limit(self, bytes: u64) -> Writer {
        self.with_limits(Limits {
            bytes,
            ..Limits::default()
        })
    }

    /// Writes one layer from its stored bytes (a tar, gzip or zstd
    /// compressed or not) and checks both its digests.
    pub fn layer(&mut self, stored: Box<dyn Read + Send>, layer: &Layer) -> Result<(), LayerError> {
        self.touched.clear();
        let stored: Box<dyn Read + Send> = Box::new(Counting {
            inner: stored,
            total: self.stored.clone(),
        });
        let mut raw = Hashing::new(BufReader::with_capacity(1 << 20, stored));
        let diff_id = {
            let decoded = decompress(&mut raw)?;
            // A tar holds its files' bytes and a header or more for each.
            let left = self
                .limits
                .bytes
                .saturating_mul(2)
                .saturating_sub(self.read);
            let mut plain = Hashing::new(Bounded {
                inner: decoded,
                left,
            });
            let applied = self.apply(&mut plain);
            let rest = std::io::copy(&mut plain, &mut std::io::sink());
            self.read += left - plain.inner.left;
            applied?;
            rest.map_err(LayerError::Truncated)?;
            plain.digest()
        };
        std::io::copy(&mut raw, &mut std::io::sink()).map_err(LayerError::Truncated)?;
        let digest = raw.digest();
        if let Some(expected) = &layer.digest
            && &digest != expected
        {
            return Err(LayerError::StoredDamaged {
                found: digest,
                expected: expected.clone(),
            });
        }
        if diff_id != layer.diff_id {
            return Err(LayerError::TarDamaged {
                found: diff_id,
                expected: layer.diff_id.clone(),
            });
        }
        Ok(())
    }

    /// Applies one layer's tar stream.
    pub fn apply(&mut self, tar_stream: &mut dyn Read) -> Result<(), LayerError> {
        let mut archive = tar::Archive::new(tar_stream);
        let entries = archive.entries().map_err(LayerError::NotTar)?;
        for entry in entries {
            let mut entry = entry.map_err(LayerError::NotTar)?;
            self.entry(&mut entry)?;
        }
        Ok(())
    }

    fn open_dir(
        &mut self,
        parts: &[OsString],
        create: bool,
    ) -> Result<Option<OwnedFd>, LayerError> {
        let path = joined(parts);
        match openat2(
            self.root.as_fd(),
            &path,
            how(OFlag::O_DIRECTORY | OFlag::O_RDONLY, in_root()),
        ) {
            Ok(fd) => Ok(Some(fd)),
            Err(Errno::ENOENT) if create => {
                let Some((last, above)) = parts.split_last() else {
                    return Err(LayerError::RootGone);
                };
                let Some(parent) = self.open_dir(above, true)? else {
                    return Err(fault("making", &path, Errno::ENOENT));
                };
                match mkdirat(parent.as_fd(), last.as_os_str(), Mode::S_IRWXU) {
                    Ok(()) | Err(Errno::EEXIST) => {}
                    Err(e) => return Err(fault("making", &path, e)),
                }
                self.dirs.entry(parts.to_vec()).or_insert((0o755, 0));
                openat2(
                    self.root.as_fd(),
                    &path,
                    how(OFlag::O_DIRECTORY | OFlag::O_RDONLY, in_root()),
                )
                .map(Some)
                .map_err(|e| fault("opening", &path, e))
            }
            Err(Errno::ENOENT) => Ok(None),
            Err(e) => Err(fault("opening the directory", &path, e)),
        }
    }

    /// Empties `parts` of what the layers below put there.
    fn opaque(&mut self, parts: &[OsString]) -> Result<(), LayerError> {
        self.stats.whiteouts += 1;
        let Some(dir) = self.open_dir(parts, false)? else {
            return Ok(());
        };
        self.prune(&dir, parts)
    }

    fn prune(&self, dir: &OwnedFd, parts: &[OsString]) -> Result<(), LayerError> {
        let shown = joined(parts);
        for name in children(dir).map_err(|e| fault("listing", &shown, e))? {
            let mut child = parts.to_vec();
            child.push(name.clone());
            if !self.touched.contains(&child) {
                remove_tree(dir, &name).map_err(|e| fault("removing", &joined(&child), e))?;
            } else if fstatat(dir.as_fd(), name.as_os_str(), AtFlags::AT_SYMLINK_NOFOLLOW)
                .is_ok_and(|s| is_dir(&s))
            {
                let fd = openat(
                    dir.as_fd(),
                    name.as_os_str(),
                    OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC,
                    Mode::empty(),
                )
                .map_err(|e| fault("opening", &joined(&child), e))?;
                self.prune(&fd, &child)?;
            }
        }
        Ok(())
    }

    fn entry<R: Read>(&mut self, entry: &mut tar::Entry<'_, R>) -> Result<(), LayerError> {
        self.entries += 1;
        if self.entries > self.limits.entries {
            return Err(LayerError::TooManyEntries(self.limits.entries));
        }
        let path = entry
            .path()
            .map_err(LayerError::UnreadableName)?
            .into_owned();
        let parts = parts_of(&path)?;
        let Some((name, above)) = parts.split_last() else {
            return Ok(());
        };
        let name = name.clone();
        let above = above.to_vec();
        let header = entry.header();
        let kind = header.entry_type();
        let mode = header.mode().unwrap_or(0o644);
        let mtime = header.mtime().unwrap_or(0);
        if name.as_bytes() == OPAQUE {
            return self.opaque(&above);
        }
        if let Some(hidden) = name.as_bytes().strip_prefix(WHITEOUT) {
            self.stats.whiteouts += 1;
            if let Some(dir) = self.open_dir(&above, false)? {
                let hidden = OsStr::from_bytes(hidden);
                remove_tree(&dir, hidden).map_err(|e| fault("removing", &path, e))?;
            }
            return Ok(());
        }
        for i in 1..=parts.len() {
            self.touched.insert(parts[..i].to_vec());
        }
        if kind.is_character_special() || kind.is_block_special() {
            self.stats.devices_dropped += 1;
            self.dropped.insert(parts);
            return Ok(());
        }
        let known = kind.is_file()
            || kind.is_dir()
            || kind.is_symlink()
            || kind.is_hard_link()
            || kind.is_fifo()
            || kind.is_contiguous()
            || kind.is_gnu_sparse();
        if !known {
            return Ok(());
        }
        let Some(parent) = self.open_dir(&above, true)? else {
            return Err(fault("making the directory of", &path, Errno::ENOENT));
        };
        let existing = match fstatat(
            parent.as_fd(),
            name.as_os_str(),
            AtFlags::AT_SYMLINK_NOFOLLOW,
        ) {
            Ok(stat) => Some(stat),
            Err(Errno::ENOENT) => None,
            Err(e) => return Err(fault("reading", &path, e)),
        };
        if let Some(stat) = existing
            && !(kind.is_dir() && is_dir(&stat))
        {
            remove_tree(&parent, &name).map_err(|e| fault("replacing", &path, e))?;
        }
        self.dropped.remove(&parts);
        if mode & 0o6000 != 0 {
            self.stats.setid_dropped += 1;
        }
        if kind.is_dir() {
            if existing.is_none_or(|s| !is_dir(&s)) {
                mkdirat(parent.as_fd(), name.as_os_str(), Mode::S_IRWXU)
                    .map_err(|e| fault("making", &path, e))?;
            }
            self.dirs.insert(parts, (mode, mtime));
        } else if kind.is_symlink() {
            let target = entry
                .link_name()
                .map_err(|cause| LayerError::UnreadableLink {
                    path: path.clone(),
                    cause,
                })?
                .ok_or_else(|| LayerError::NoLinkTarget(path.clone()))?;
            symlinkat(target.as_ref(), parent.as_fd(), name.as_os_str())
                .map_err(|e| fault("linking", &path, e))?;
        } else if kind.is_hard_link() {
            let target = entry
                .link_name()
                .map_err(|cause| LayerError::UnreadableLink {
                    path: path.clone(),
                    cause,
                })?
                .ok_or_else(|| LayerError::NoLinkTarget(path.clone()))?;
            let target = parts_of(&target)?;
            if self.dropped.contains(&target) {
                self.dropped.insert(parts);
                return Ok(());
            }
            let Some((target_name, target_above)) = target.split_last() else {
                return Err(LayerError::HardLinkToTree(path));
            };
            let Some(source) = self.open_dir(target_above, false)? else {
                return Err(LayerError::HardLinkMissing {
                    path,
                    target: joined(&target),
                });
            };
            linkat(
                source.as_fd(),
                target_name.as_os_str(),
                parent.as_fd(),
                name.as_os_str(),
                AtFlags::empty(),
            )
            .map_err(|e| fault("linking", &path, e))?;
        } else if kind.is_fifo() {
            mknodat(
                parent.as_fd(),
                name.as_os_str(),
                SFlag::S_IFIFO,
                Mode::from_bits_truncate(mode & 0o777),
                0,
            )
            .map_err(|e| fault("making", &path, e))?;
        } else {
            let fd = openat(
                parent.as_fd(),
                name.as_os_str(),
                OFlag::O_CREAT
                    | OFlag::O_EXCL
                    | OFlag::O_WRONLY
                    | OFlag::O_NOFOLLOW
                    | OFlag::O_CLOEXEC,
                Mode::S_IRUSR | Mode::S_IWUSR,
            )
            .map_err(|e| fault("writing", &path, e))?;
            let mut file = File::from(fd);
            let size = entry.size();
            let bytes = self.copy_bounded(entry, &mut file, &path, size)?;
            fchmod(file.as_fd(), Mode::from_bits_truncate(mode & 0o777))
                .map_err(|e| fault("writing", &path, e))?;
            let time = TimeSpec::new(i64::try_from(mtime).unwrap_or(0), 0);
            futimens(file.as_fd(), &time, &time).map_err(|e| fault("writing", &path, e))?;
            self.stats.files += 1;
            self.stats.bytes += bytes;
        }
        Ok(())
    }

    /// Copies a file's data (a sparse entry's holes come as zeros) into
    /// `file`, never writing past the bytes the limits leave: an entry
    /// whose size (a sparse entry's expanded size, which the tar reader
    /// checks against its map) is over them is refused before a byte is
    /// written, and the copy itself stops at them.
    fn copy_bounded(
        &mut self,
        entry: &mut dyn Read,
        file: &mut File,
        path: &Path,
        size: u64,
    ) -> Result<u64, LayerError> {
        let stored = self.stored.load(std::sync::atomic::Ordering::Relaxed);
        let by_ratio = stored.saturating_mul(self.limits.ratio).max(RATIO_FLOOR);
        let (limit, before) = (self.limits.bytes.min(by_ratio), self.written);
        let left = limit.saturating_sub(before);
        if size > left {
            let bound = if limit < self.limits.bytes {
                format!(
                    "the {limit} bytes of files Chock writes for {stored} bytes of layers as stored ({} to 1, at least {RATIO_FLOOR})",
                    self.limits.ratio
                )
            } else {
                format!("the {limit} bytes of files Chock writes for one image")
            };
            return Err(LayerError::TooLarge {
                path: path.to_path_buf(),
                size,
                bound,
                before,
            });
        }
        let bytes = std::io::copy(&mut (&mut *entry).take(left), file)
            .map_err(|e| fault("writing", path, e))?;
        self.written += bytes;
        Ok(bytes)
    }

    /// Sets every directory's mode (less set-ID bits, and always open to
    /// its owner, so the tree can be removed) and time, deepest first.
    pub fn finish(self) -> Result<Stats, LayerError> {
        for (parts, (mode, mtime)) in self.dirs.iter().rev() {
            let path = joined(parts);
            let Ok(fd) = openat2(
                self.root.as_fd(),
                &path,
                how(
                    OFlag::O_DIRECTORY | OFlag::O_RDONLY | OFlag::O_NOFOLLOW,
                    ResolveFlag::RESOLVE_IN_ROOT | ResolveFlag::RESOLVE_NO_SYMLINKS,
                ),
            ) else {
                // Removed or replaced by a later layer.
                continue;
            };
            fchmod(
                fd.as_fd(),
                Mode::from_bits_truncate((mode & 0o1777) | 0o700),
            )
            .map_err(|e| fault("setting the mode of", &path, e))?;
            let time = TimeSpec::new(i64::try_from(*mtime).unwrap_or(0), 0);
            futimens(fd.as_fd(), &time, &time)
                .map_err(|e| fault("setting the time of", &path, e))?;
        }
        Ok(self.stats)
    }
}
