//! An overlay workspace as Chock's own process sees it: the tool server's
//! file tools read and write the very overlay a sandbox shows, not a copy
//! of its rules.
//!
//! Chock's process has other threads, so it cannot enter a user namespace
//! itself. A child made for the purpose does: in a user and mount namespace
//! of its own (overlayfs takes its layers only from the mounter's mount
//! namespace) it opens each layer with no link followed, refuses one that
//! is not the folder Chock opened on the host (device and inode), makes a
//! detached overlayfs (`fsopen`, `fsconfig`, `fsmount`, attached to no
//! mount namespace) naming each layer by that descriptor
//! (`/proc/self/fd/N`), sends the mount's descriptor back and ends. Paths
//! are then opened beneath that descriptor (`openat2` with
//! `RESOLVE_BENEATH`), so overlayfs itself decides what a path means: a
//! whiteout hides the project's file, an opaque folder hides the project's
//! folder, a write copies up into the upper layer.
//!
//! Each mount is made for one tool call and has a work folder of its own
//! (`work/tools-<pid>-<n>`, removed when it is dropped; a sandbox's is
//! `work/sandbox-<pid>-<n>`): overlayfs empties its work folder when it
//! mounts, which breaks every other mount using it, so no two overlays
//! ever share one. A
//! mount made fresh for each call also sees every change a command made
//! since (overlayfs caches what it looked up, and a mount kept open would
//! not see a file another mount of the same layers removed).

use std::ffi::CString;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use super::view::View;
use super::{WorkspaceError, files, io};
use crate::anchor::open_top;
use crate::child::OverlayData;
use crate::mounts::cstring;
use crate::sys::{self, FileId, OverlayStep};
use nix::errno::Errno;

static MOUNTS: AtomicU64 = AtomicU64::new(0);

/// A detached overlay of a workspace, for one tool call.
pub struct Merged {
    /// The mount's root (an `O_RDONLY` folder descriptor) and the mount.
    fds: Option<(OwnedFd, OwnedFd)>,
    /// This mount's own work folder, removed after the mount is dropped
    /// (fields drop in order).
    _work: OwnWork,
}

/// A work folder of one overlay mount (`<work>/<prefix>-<pid>-<n>`),
/// removed when dropped.
#[derive(Debug)]
pub(crate) struct OwnWork {
    pub(crate) path: PathBuf,
    pub(crate) id: FileId,
}

impl OwnWork {
    /// Makes a fresh folder in the work folder `parent` (opened at
    /// `parent_path`), opened beneath it with no link followed.
    pub(crate) fn make(
        parent: &OwnedFd,
        parent_path: &Path,
        prefix: &str,
    ) -> std::io::Result<OwnWork> {
        let name = format!(
            "{prefix}-{}-{}",
            std::process::id(),
            MOUNTS.fetch_add(1, Ordering::Relaxed)
        );
        nix::sys::stat::mkdirat(
            parent,
            name.as_str(),
            nix::sys::stat::Mode::from_bits_truncate(0o700),
        )?;
        let path = parent_path.join(&name);
        let opened = sys::open_path(parent.as_raw_fd(), &cstring(Path::new(&name)), true)
            .map(sys::owned)
            .and_then(|fd| sys::file_id(fd.as_raw_fd()));
        match opened {
            Ok(id) => Ok(OwnWork { path, id }),
            Err(e) => {
                let _ = files::remove_all(&path);
                Err(e.into())
            }
        }
    }
}

impl Drop for OwnWork {
    fn drop(&mut self) {
        let _ = files::remove_all(&self.path);
    }
}

impl Merged {
    /// The overlay's root folder: open paths beneath it.
    pub fn root(&self) -> Option<&OwnedFd> {
        self.fds.as_ref().map(|(root, _)| root)
    }
}

/// Mounts the overlay `view` shows (`None` when the view is a tree of its
/// own, not an overlay).
pub fn mount(view: &View) -> Result<Option<Merged>, WorkspaceError> {
    let Some(layers) = &view.overlay else {
        return Ok(None);
    };
    let opened = |path: &Path| open_top(path).map_err(|e| WorkspaceError::Refused(e.to_string()));
    let (_, lower) = opened(&view.source)?;
    let (_, upper) = opened(&layers.upper)?;
    let (work_parent, _) = opened(&layers.work)?;
    let work = OwnWork::make(&work_parent, &layers.work, "tools")
        .map_err(|e| io("creating a work folder in", &layers.work)(e))?;
    let layers_checked = [
        (cstring(&view.source), lower),
        (cstring(&layers.upper), upper),
        (cstring(&work.path), work.id),
    ];
    let mount = mount_in_child(&layers_checked).map_err(|why| {
        WorkspaceError::Refused(format!(
            "the workspace's overlay of {} (changes in {}) could not be mounted for the file tools: {why}",
            view.source.display(),
            layers.upper.display()
        ))
    })?;
    let root = nix::fcntl::openat(
        &mount,
        ".",
        nix::fcntl::OFlag::O_RDONLY | nix::fcntl::OFlag::O_DIRECTORY | nix::fcntl::OFlag::O_CLOEXEC,
        nix::sys::stat::Mode::empty(),
    )
    .map_err(|e| io("opening the overlay of", &view.source)(e.into()))?;
    Ok(Some(Merged {
        fds: Some((root, mount)),
        _work: work,
    }))
}

/// The child that makes the mount, in its own user namespace (this user's
/// ids mapped to themselves) and mount namespace, where overlayfs takes
/// its layers from: it opens each of `layers` (lower, upper, work) with no
/// link followed, refuses one that is not the object Chock opened on the
/// host, and names each to overlayfs by its descriptor. Every byte it
/// needs is made here, before the clone: the child only makes system calls.
fn mount_in_child(layers: &[(CString, FileId); 3]) -> Result<OwnedFd, MountError> {
    let uid_map = format!("{0} {0} 1\n", nix::unistd::getuid());
    let gid_map = format!("{0} {0} 1\n", nix::unistd::getgid());
    let (ours, theirs) = sys::seqpacket_pair().map_err(MountError::SocketPair)?;
    // The child below only makes system calls on data made before the
    // clone (no allocation, no lock).
    let pid = sys::fork_running(libc::CLONE_NEWUSER | libc::CLONE_NEWNS, || {
        let status = match child(layers, &uid_map, &gid_map) {
            Ok(fd) => sys::send_reply(theirs.as_raw_fd(), 0, Some(fd)),
            Err(status) => sys::send_reply(theirs.as_raw_fd(), status, None),
        };
        i32::from(status.is_err())
    })
    .map_err(MountError::Clone)?;
    drop(theirs);
    let reply = sys::recv_reply(ours.as_raw_fd());
    let _ = nix::sys::wait::waitpid(nix::unistd::Pid::from_raw(pid), None);
    match reply {
        Ok(Some((0, Some(fd)))) => Ok(fd),
        Ok(Some((status, _))) => {
            let errno = nix::errno::Errno::from_raw(status & 0xffff);
            let what = match status >> 16 {
                ID_MAPS => "writing its user namespace's id maps",
                LAYER_CHANGED => {
                    "a layer is no longer the folder Chock opened (it was replaced meanwhile)"
                }
                LAYER_OPEN => "opening a layer",
                s if s == OverlayStep::Open as i32 => "fsopen(overlay)",
                s if s == OverlayStep::Option as i32 => "setting a layer (fsconfig)",
                s if s == OverlayStep::Create as i32 => "creating the overlay (fsconfig)",
                _ => "fsmount",
            };
            Err(MountError::Child { what, errno })
        }
        Ok(None) => Err(MountError::NoAnswer),
        Err(errno) => Err(MountError::Reply(errno)),
    }
}

/// Why [`mount_in_child`] made no mount.
#[derive(Debug, thiserror::Error)]
enum MountError {
    #[error("a socket pair: {0}")]
    SocketPair(Errno),
    #[error("clone refused: {0}")]
    Clone(Errno),
    /// The child's step `what` failed.
    #[error("{what}: {}", errno.desc())]
    Child { what: &'static str, errno: Errno },
    #[error("the mounting child ended without an answer")]
    NoAnswer,
    #[error("reading the mounting child's answer: {}", .0.desc())]
    Reply(Errno),
}

/// The mounting child's work: the mount's descriptor, or `step << 16 | errno`.
fn child(layers: &[(CString, FileId); 3], uid_map: &str, gid_map: &str) -> Result<RawFd, i32> {
    let step = |n: i32| move |e: Errno| (n << 16) | e as i32;
    sys::write_proc_file(c"/proc/self/setgroups", b"deny")
        .and_then(|()| sys::write_proc_file(c"/proc/self/uid_map", uid_map.as_bytes()))
        .and_then(|()| sys::write_proc_file(c"/proc/self/gid_map", gid_map.as_bytes()))
        .map_err(step(ID_MAPS))?;
    let mut fds = [-1; 3];
    for ((path, id), fd) in layers.iter().zip(fds.iter_mut()) {
        *fd = sys::open_path(libc::AT_FDCWD, path, false).map_err(step(LAYER_OPEN))?;
        if sys::file_id(*fd).map_err(step(LAYER_OPEN))? != *id {
            return Err(step(LAYER_CHANGED)(Errno::ESTALE));
        }
    }
    let mut names = [OverlayData::new(), OverlayData::new(), OverlayData::new()];
    for (name, fd) in names.iter_mut().zip(fds) {
        name.fd(fd);
    }
    let [lower, upper, work] = &mut names;
    let options = [
        (c"lowerdir", lower.finish().map_err(step(LAYER_OPEN))?),
        (c"upperdir", upper.finish().map_err(step(LAYER_OPEN))?),
        (c"workdir", work.finish().map_err(step(LAYER_OPEN))?),
    ];
    sys::detached_overlay(&options, &[c"userxattr"], MOUNT_ATTRS)
        .map_err(|(at, e)| step(at as i32)(e))
}

/// Steps of [`child`] besides [`OverlayStep`]'s.
const ID_MAPS: i32 = 9;
const LAYER_OPEN: i32 = 10;
const LAYER_CHANGED: i32 = 11;
/// `nosuid` and `nodev`, as a sandbox's overlay.
const MOUNT_ATTRS: u64 = sys::MOUNT_ATTR_NOSUID | sys::MOUNT_ATTR_NODEV;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workspace::Layers;
    use std::os::unix::fs::FileTypeExt;

    /// A real overlayfs in a user namespace: the project read through, a
    /// write copied up, a removal a whiteout in the upper layer, the
    /// project never written, the work folder gone with the mount.
    #[test]
    fn the_overlay_is_mounted_by_descriptor_and_writes_land_in_the_upper_layer() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path().canonicalize().expect("canonical");
        let (project, upper, work) = (root.join("p"), root.join("upper"), root.join("work"));
        for d in [&project, &upper, &work] {
            std::fs::create_dir_all(d).expect("mkdir");
        }
        std::fs::write(project.join("kept"), "project\n").expect("write");
        std::fs::write(project.join("gone"), "project\n").expect("write");
        let view = View {
            source: project.clone(),
            shown: project.clone(),
            objects: None,
            binds: Vec::new(),
            covers: Vec::new(),
            overlay: Some(Layers {
                upper: upper.clone(),
                work: work.clone(),
            }),
        };
        let merged = mount(&view).expect("mounted").expect("an overlay");
        let fd = merged.root().expect("root");
        let read = |name: &str| {
            let file = nix::fcntl::openat(
                fd,
                name,
                nix::fcntl::OFlag::O_RDONLY,
                nix::sys::stat::Mode::empty(),
            )
            .map(std::fs::File::from);
            file.map(|f| std::io::read_to_string(f).expect("read"))
        };
        assert_eq!(read("kept").as_deref(), Ok("project\n"));
        let new = nix::fcntl::openat(
            fd,
            "new",
            nix::fcntl::OFlag::O_WRONLY | nix::fcntl::OFlag::O_CREAT,
            nix::sys::stat::Mode::from_bits_truncate(0o644),
        )
        .expect("created");
        std::io::Write::write_all(&mut std::fs::File::from(new), b"agent\n").expect("written");
        nix::unistd::unlinkat(fd, "gone", nix::unistd::UnlinkatFlags::NoRemoveDir)
            .expect("removed");
        assert_eq!(read("gone"), Err(nix::errno::Errno::ENOENT));
        assert_eq!(read("new").as_deref(), Ok("agent\n"));
        drop(merged);
        assert_eq!(
            std::fs::read_to_string(upper.join("new")).ok().as_deref(),
            Some("agent\n")
        );
        let whiteout = std::fs::symlink_metadata(upper.join("gone")).expect("whiteout");
        assert!(whiteout.file_type().is_char_device());
        assert!(project.join("gone").exists() && !project.join("new").exists());
        let left: Vec<_> = std::fs::read_dir(&work).expect("work").collect();
        assert!(left.is_empty(), "the mount's work folder is removed");
    }
}
