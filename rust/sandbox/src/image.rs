//! A container image as the sandbox's toolchain: the tree chock-image
//! wrote, shown read-only at the top of the sandbox in place of the Nix
//! store, and what `chock doctor` says about the trees on this machine.
//!
//! Every entry at the top of the image is bound at its own name (`/usr`,
//! `/opt`, `/bin` as the link it is), except the directories the sandbox
//! makes itself (`/dev`, `/proc`, `/sys`, `/run`, `/tmp`) and the top of
//! the workspace's own path; every entry of its `/etc` is bound into the
//! sandbox's `/etc` except the files Chock writes there (`passwd`,
//! `group`, `hosts`, `nsswitch.conf`) and the host's `localtime`.

use std::path::{Path, PathBuf};

use chock_image::{Images, Reference, Tree, Want};
use chock_policy::ContainerSettings;

use crate::doctor::{Row, State};
use crate::error::SandboxError;
use crate::mounts::{Entry, EntryKind, ImageEntry};

/// Top-level directories of an image the sandbox makes itself.
pub const MADE_BY_THE_SANDBOX: [&str; 6] = ["dev", "proc", "sys", "run", "tmp", "etc"];
/// Files of the image's `/etc` that Chock writes or binds itself.
pub const ETC_WRITTEN: [&str; 5] = ["passwd", "group", "hosts", "nsswitch.conf", "localtime"];

/// Why the image could not be made the toolchain.
#[derive(Debug, thiserror::Error)]
#[error("{}:{line}: {message}", file.display())]
pub struct ImageLoadError {
    /// `chock.zon`.
    pub file: PathBuf,
    /// The `.container` block's line.
    pub line: u32,
    /// What went wrong and what to do.
    pub message: String,
    /// Another session uses the tree (run again later).
    pub in_use: bool,
}

/// The tree for the image `chock.zon` names, written first when it is
/// missing or was written from other files, and held by this process (the
/// use lock, shared) until it ends.
pub fn tree(container: &ContainerSettings) -> Result<Tree, ImageLoadError> {
    let refuse = |message: String, in_use: bool| ImageLoadError {
        file: container.file.clone(),
        line: container.line,
        message,
        in_use,
    };
    let reference = Reference::parse(&container.image).map_err(|e| refuse(e.to_string(), false))?;
    let defaults = chock_image::Limits::default();
    let images = Images::from_env()
        .map_err(|e| refuse(e.to_string(), false))?
        .with_limits(chock_image::Limits {
            bytes: container.max_bytes.unwrap_or(defaults.bytes),
            entries: container.max_entries.unwrap_or(defaults.entries),
            ratio: container.max_ratio.unwrap_or(defaults.ratio),
        });
    images
        .prepare(&Want {
            reference,
            path: container.path.clone(),
        })
        .map_err(|e| {
            let in_use = matches!(e, chock_image::ImageError::InUse { .. });
            refuse(e.to_string(), in_use)
        })
}

/// The entries of `rootfs` the sandbox shows, sorted, each opened once (no
/// link followed) to record the object it is.
pub(crate) fn entries(rootfs: &Path, workspace: &Path) -> Result<Vec<ImageEntry>, SandboxError> {
    let workspace_top = workspace
        .components()
        .nth(1)
        .map(|c| c.as_os_str().to_owned());
    let mut out = Vec::new();
    for name in names(rootfs)? {
        let host = rootfs.join(&name);
        if name == "etc" && host.symlink_metadata().is_ok_and(|m| m.is_dir()) {
            for inner in names(&host)? {
                if !ETC_WRITTEN.iter().any(|w| inner == *w) {
                    out.push(shown(&host.join(&inner), Path::new("/etc").join(&inner))?);
                }
            }
            continue;
        }
        if MADE_BY_THE_SANDBOX.iter().any(|m| name == *m)
            || workspace_top.as_deref() == Some(name.as_os_str())
        {
            continue;
        }
        out.push(shown(&host, Path::new("/").join(&name))?);
    }
    Ok(out)
}

fn names(dir: &Path) -> Result<Vec<std::ffi::OsString>, SandboxError> {
    let mut names: Vec<_> = std::fs::read_dir(dir)
        .map_err(|e| SandboxError::host("reading the image tree", dir, e))?
        .filter_map(Result::ok)
        .map(|e| e.file_name())
        .collect();
    names.sort();
    Ok(names)
}

fn shown(host: &Path, inside: PathBuf) -> Result<ImageEntry, SandboxError> {
    let kind = crate::layout::entry(host)?.kind;
    let id = match kind {
        EntryKind::Symlink(_) => None,
        EntryKind::Dir | EntryKind::File => {
            let io = |e: nix::errno::Errno| {
                SandboxError::host("opening the image tree's", host, e.into())
            };
            let fd = crate::sys::open_path(libc::AT_FDCWD, &crate::mounts::cstring(host), false)
                .map_err(io)?;
            let fd = crate::sys::owned(fd);
            Some(crate::sys::file_id(std::os::fd::AsRawFd::as_raw_fd(&fd)).map_err(io)?)
        }
    };
    Ok(ImageEntry {
        host: host.to_path_buf(),
        entry: Entry { path: inside, kind },
        id,
    })
}

/// The directories at the top of the sandbox that come from the image,
/// for naming its programs `exec.image.*`.
pub fn shown_dirs(rootfs: &Path, workspace: &Path) -> Vec<PathBuf> {
    entries(rootfs, workspace)
        .unwrap_or_default()
        .into_iter()
        .map(|shown| shown.entry.path)
        .filter(|p| !p.starts_with("/etc"))
        .collect()
}

/// `chock doctor`'s row: the image trees on this machine, their sizes and
/// whether a session holds each.
pub(crate) fn doctor_row() -> Row {
    let name = "image trees";
    let Ok(images) = Images::from_env() else {
        return Row {
            name,
            state: State::Warn,
            blocking: false,
            detail: "neither CHOCK_STATE_DIR, XDG_STATE_HOME nor HOME is set".into(),
        };
    };
    let listed = images.list();
    let detail = if listed.is_empty() {
        format!("none in {}", images.dir().display())
    } else {
        let total: u64 = listed
            .iter()
            .filter_map(|l| l.record.as_ref())
            .map(|r| r.stats.bytes)
            .sum();
        let each: Vec<String> = listed
            .iter()
            .map(|l| {
                let (reference, bytes) = l.shown();
                format!(
                    "{reference} {}{}",
                    mib(bytes),
                    if l.in_use { " (in use)" } else { "" }
                )
            })
            .collect();
        format!(
            "{} in {}, {}: {}; `chock cache clear-images` removes those no session holds",
            listed.len(),
            images.dir().display(),
            mib(total),
            each.join(", ")
        )
    };
    Row {
        name,
        state: State::Ok,
        blocking: false,
        detail,
    }
}

/// Bytes as MiB, one decimal.
pub fn mib(bytes: u64) -> String {
    format!("{:.1} MiB", bytes as f64 / f64::from(1 << 20))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_image_shows_its_top_and_its_etc_but_not_what_the_sandbox_makes() {
        let dir = tempfile::tempdir().expect("tempdir");
        let rootfs = dir.path().join("rootfs");
        for d in [
            "usr/bin", "etc/ssl", "dev", "proc", "tmp", "run", "work", "opt",
        ] {
            std::fs::create_dir_all(rootfs.join(d)).expect("dir");
        }
        for f in ["etc/passwd", "etc/os-release", "etc/hosts", "etc/localtime"] {
            std::fs::write(rootfs.join(f), "x").expect("file");
        }
        std::os::unix::fs::symlink("usr/bin", rootfs.join("bin")).expect("bin");
        let shown = entries(&rootfs, Path::new("/work/project")).expect("entries");
        let inside: Vec<&Path> = shown.iter().map(|e| e.entry.path.as_path()).collect();
        assert_eq!(
            inside,
            [
                Path::new("/bin"),
                Path::new("/etc/os-release"),
                Path::new("/etc/ssl"),
                Path::new("/opt"),
                Path::new("/usr"),
            ]
        );
        assert_eq!(
            shown[0].entry.kind,
            EntryKind::Symlink(PathBuf::from("usr/bin"))
        );
        assert_eq!(shown[4].host, rootfs.join("usr"));
        assert!(shown[0].id.is_none(), "a link is made, never bound");
        assert!(
            shown.iter().skip(1).all(|e| e.id.is_some()),
            "every bound entry was opened once"
        );
        assert_eq!(
            shown_dirs(&rootfs, Path::new("/work/project")),
            [Path::new("/bin"), Path::new("/opt"), Path::new("/usr")]
        );
    }
}
