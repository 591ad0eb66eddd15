//! Reading and writing the files `chock sync` owns, beneath the folder they
//! belong to, through descriptors, no link followed.
//!
//! What sync writes are control inputs (an agent's hook settings, git's
//! hooks) and a CI workflow. A project cloned from someone else can hold a
//! link where one of them goes (`.claude` naming a folder of the person's
//! own, `.claude/settings.json` naming `~/.bashrc`), and a path written by
//! name would write through it. So the folder a file belongs to (the
//! project, or the hooks folder git names) is opened once, every folder
//! beneath it is opened from the last with `RESOLVE_BENEATH` and
//! `RESOLVE_NO_SYMLINKS` (made when missing), the file is read with
//! `O_NOFOLLOW` and must be a regular file, and the new text is written to
//! a fresh temporary file in the same folder and renamed over it, all
//! relative to the folder's descriptor. A link anywhere on the way is
//! refused, naming it.

use std::ffi::OsString;
use std::io::Read;
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use rustix::fs::{Mode, OFlags, ResolveFlags};

use crate::error::HookError;

/// The longest file sync reads back: settings and hooks are small.
const MAX_BYTES: u64 = 16 << 20;

/// A file's folder, opened beneath the root it belongs to.
pub(crate) struct Placed {
    folder: OwnedFd,
    name: OsString,
    /// The file's path, for messages.
    path: PathBuf,
}

fn io<'a>(path: &'a Path, action: &'static str) -> impl Fn(rustix::io::Errno) -> HookError + 'a {
    move |errno| HookError::Io {
        path: path.to_owned(),
        action,
        source: if errno == rustix::io::Errno::LOOP || errno == rustix::io::Errno::XDEV {
            std::io::Error::other(
                "a symbolic link is on its way, which sync never writes through; remove the link or make it a real folder or file",
            )
        } else {
            errno.into()
        },
    }
}

impl Placed {
    /// Opens the folder of `path` beneath `root` (which `path` must lie
    /// in), making missing folders when `create` is set.
    pub(crate) fn open(root: &Path, path: &Path, create: bool) -> Result<Placed, HookError> {
        let refuse = |why: &str| HookError::Io {
            path: path.to_owned(),
            action: "placing",
            source: std::io::Error::other(why.to_owned()),
        };
        let rel = path
            .strip_prefix(root)
            .map_err(|_| refuse("it is not beneath the folder it belongs to"))?;
        let name = rel
            .file_name()
            .ok_or_else(|| refuse("it names no file"))?
            .to_owned();
        let mut folder = rustix::fs::open(
            root,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(io(root, "opening"))?;
        for part in rel.parent().into_iter().flat_map(Path::components) {
            let part = part.as_os_str();
            if part.as_bytes() == b".." {
                return Err(refuse("it climbs out of its folder"));
            }
            let open = |from: &OwnedFd| {
                rustix::fs::openat2(
                    from,
                    part,
                    OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC | OFlags::NOFOLLOW,
                    Mode::empty(),
                    ResolveFlags::BENEATH | ResolveFlags::NO_SYMLINKS | ResolveFlags::NO_MAGICLINKS,
                )
                .map_err(|errno| match errno {
                    // A link as the last part: O_NOFOLLOW with O_DIRECTORY.
                    rustix::io::Errno::NOTDIR if is_link(from, part) => rustix::io::Errno::LOOP,
                    other => other,
                })
            };
            folder = match open(&folder) {
                Err(rustix::io::Errno::NOENT) if create => {
                    match rustix::fs::mkdirat(&folder, part, Mode::from_raw_mode(0o755)) {
                        Ok(()) | Err(rustix::io::Errno::EXIST) => {}
                        Err(errno) => return Err(io(path, "creating its folder")(errno)),
                    }
                    open(&folder).map_err(io(path, "opening its folder"))?
                }
                other => other.map_err(io(path, "opening its folder"))?,
            };
        }
        Ok(Placed {
            folder,
            name,
            path: path.to_owned(),
        })
    }

    /// The file's text, `None` when there is none.
    pub(crate) fn read(&self) -> Result<Option<(Vec<u8>, u32)>, HookError> {
        let file = match rustix::fs::openat(
            &self.folder,
            &self.name,
            OFlags::RDONLY | OFlags::CLOEXEC | OFlags::NOFOLLOW | OFlags::NONBLOCK,
            Mode::empty(),
        ) {
            Ok(fd) => fd,
            Err(rustix::io::Errno::NOENT) if is_link(&self.folder, &self.name) => {
                return Err(io(&self.path, "reading")(rustix::io::Errno::LOOP));
            }
            Err(rustix::io::Errno::NOENT) => return Ok(None),
            Err(errno) => return Err(io(&self.path, "reading")(errno)),
        };
        let stat = rustix::fs::fstat(&file).map_err(io(&self.path, "reading"))?;
        if rustix::fs::FileType::from_raw_mode(stat.st_mode) != rustix::fs::FileType::RegularFile {
            return Err(HookError::Io {
                path: self.path.clone(),
                action: "reading",
                source: std::io::Error::other(
                    "it is not a regular file, so sync leaves it alone; put a plain file there",
                ),
            });
        }
        let mut bytes = Vec::new();
        std::fs::File::from(file)
            .take(MAX_BYTES)
            .read_to_end(&mut bytes)
            .map_err(|source| HookError::Io {
                path: self.path.clone(),
                action: "reading",
                source,
            })?;
        Ok(Some((bytes, stat.st_mode & 0o7777)))
    }

    /// Replaces the file with `bytes` and `mode`, whole or not at all.
    pub(crate) fn replace(&self, bytes: &[u8], mode: u32) -> Result<(), HookError> {
        use std::io::Write;
        let fail = |action: &'static str| {
            move |source: std::io::Error| HookError::Io {
                path: self.path.clone(),
                action,
                source,
            }
        };
        let (temp, temp_name) = self.temporary()?;
        let mut file = std::fs::File::from(temp);
        let written = file
            .write_all(bytes)
            .and_then(|()| rustix::fs::fchmod(&file, Mode::from_raw_mode(mode)).map_err(Into::into))
            .and_then(|()| file.sync_all())
            .map_err(fail("writing"))
            .and_then(|()| {
                rustix::fs::renameat(&self.folder, &temp_name, &self.folder, &self.name)
                    .map_err(|e| fail("replacing")(e.into()))
            });
        if written.is_err() {
            let _ = rustix::fs::unlinkat(&self.folder, &temp_name, rustix::fs::AtFlags::empty());
        }
        written
    }

    /// Gives the file these mode bits, never through a link.
    pub(crate) fn set_mode(&self, mode: u32) -> Result<(), HookError> {
        let file = rustix::fs::openat(
            &self.folder,
            &self.name,
            OFlags::RDONLY | OFlags::CLOEXEC | OFlags::NOFOLLOW | OFlags::NONBLOCK,
            Mode::empty(),
        )
        .map_err(io(&self.path, "making it executable"))?;
        rustix::fs::fchmod(&file, Mode::from_raw_mode(mode))
            .map_err(io(&self.path, "making it executable"))
    }

    /// A new file beside the one replaced, made exclusively.
    fn temporary(&self) -> Result<(OwnedFd, OsString), HookError> {
        let mut name = OsString::from(".");
        name.push(&self.name);
        name.push(format!(".chock-sync-{}", std::process::id()));
        for attempt in 0..16u32 {
            let mut candidate = name.clone();
            candidate.push(format!("-{attempt}"));
            match rustix::fs::openat(
                &self.folder,
                &candidate,
                OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                Mode::from_raw_mode(0o600),
            ) {
                Ok(fd) => return Ok((fd, candidate)),
                Err(rustix::io::Errno::EXIST) => continue,
                Err(errno) => return Err(io(&self.path, "writing")(errno)),
            }
        }
        Err(io(&self.path, "writing")(rustix::io::Errno::EXIST))
    }
}

/// Whether `name` in the folder `dir` is a symbolic link.
fn is_link(dir: &OwnedFd, name: &std::ffi::OsStr) -> bool {
    rustix::fs::statat(dir, name, rustix::fs::AtFlags::SYMLINK_NOFOLLOW).is_ok_and(|st| {
        rustix::fs::FileType::from_raw_mode(st.st_mode) == rustix::fs::FileType::Symlink
    })
}
