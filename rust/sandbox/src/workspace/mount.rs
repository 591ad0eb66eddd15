//! A session workspace in the mount plan: the person's objects read-only,
//! each bind of a path of the person's, each `deny_read` file covered by a
//! notice. Every path is opened once on the host with no link followed and
//! recorded by identity; the sandbox's first process opens it again the
//! same way (the workspace's own paths beneath the workspace as mounted),
//! refuses to go on unless it is the same object, and mounts through the
//! descriptor (`open_tree`, `move_mount`), never by a path walked again.
//!
//! A `deny_read` file is checked against the identity it had when the
//! workspace was made, before any program of the session ran: a program
//! that swaps names (`renameat2(RENAME_EXCHANGE)` on the file or a folder
//! above it) between two sandboxes leaves another object at the name, and
//! the next sandbox refuses to start rather than cover the wrong one.

use std::os::fd::{AsRawFd, OwnedFd};
use std::path::Path;

use super::view::{NOTICE, View};
use crate::anchor::{beneath_error, changed, open_beneath, open_top};
use crate::error::SandboxError;
use crate::mounts::{Op, Planner, READ_ONLY, WRITABLE, cstring, under_old_root};
use crate::sys::{self, FileId};

/// Where the notice a covered file shows is written inside.
const NOTICE_FILE: &str = "/run/chock/deny-read";

/// The identities a session workspace's mounts are checked against.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Anchored {
    objects: Option<FileId>,
    /// One per [`View::binds`], in order.
    binds: Vec<FileId>,
    /// One per [`View::covers`], in order.
    covers: Vec<FileId>,
}

/// Opens what `view` mounts and records each identity; `workspace` is the
/// tree, opened.
pub(crate) fn anchor(
    workspace: &OwnedFd,
    view: &View,
) -> Result<(Option<OwnedFd>, Anchored), SandboxError> {
    let (objects_fd, objects) = match &view.objects {
        Some(path) => {
            let (fd, id) = open_top(path)?;
            (Some(fd), Some(id))
        }
        None => (None, None),
    };
    let mut binds = Vec::new();
    for bind in &view.binds {
        let host = &bind.host;
        let io = |errno| beneath_error("opening the bind", host, errno);
        let fd = sys::owned(sys::open_path(libc::AT_FDCWD, &cstring(host), false).map_err(io)?);
        let id = sys::file_id(fd.as_raw_fd()).map_err(io)?;
        let point = open_beneath(workspace, &bind.rel).map_err(|errno| {
            beneath_error(
                "opening the bind's mount point",
                &view.shown.join(&bind.rel),
                errno,
            )
        })?;
        if id.kind == libc::S_IFLNK || (id.kind == libc::S_IFDIR) != (point.kind == libc::S_IFDIR) {
            return Err(changed(
                host,
                "the bind is a symbolic link, or no longer the kind of file the workspace was made for",
            ));
        }
        binds.push(id);
    }
    let mut covers = Vec::new();
    for cover in &view.covers {
        let shown = view.shown.join(&cover.rel);
        let id = open_beneath(workspace, &cover.rel)
            .map_err(|errno| beneath_error("opening the deny_read file", &shown, errno))?;
        if (id.dev, id.ino, id.kind) != (cover.dev, cover.ino, libc::S_IFREG) {
            return Err(refused_swap(&shown, &cover.named_in));
        }
        covers.push(id);
    }
    Ok((
        objects_fd,
        Anchored {
            objects,
            binds,
            covers,
        },
    ))
}

fn refused_swap(shown: &Path, named_in: &str) -> SandboxError {
    SandboxError::Workspace {
        path: shown.to_path_buf(),
        reason: format!(
            "it is named in deny_read ({named_in}) and is no longer the file the workspace was made with (a program renamed or swapped it), so the sandbox cannot cover it and nothing ran; `chock workspace clear` removes the workspace"
        ),
    }
}

/// The steps that mount `view`, after the workspace is bound and opened.
pub(crate) fn plan_session(p: &mut Planner, view: &View, anchored: &Anchored, shown: &Path) {
    if let (Some(objects), Some(id)) = (&view.objects, anchored.objects) {
        p.mkdir_all(Path::new(super::OBJECTS_MOUNT));
        p.push(Op::BindChecked {
            source: cstring(under_old_root(objects)),
            id,
            target: cstring(super::OBJECTS_MOUNT),
            set: READ_ONLY,
        });
    }
    for (bind, id) in view.binds.iter().zip(&anchored.binds) {
        p.push(Op::BindInto {
            source: cstring(under_old_root(&bind.host)),
            id: *id,
            rel: cstring(&bind.rel),
            set: if bind.writable { WRITABLE } else { READ_ONLY },
            shown: cstring(shown.join(&bind.rel)),
        });
    }
    if view.covers.is_empty() {
        return;
    }
    p.push(Op::WriteFile {
        path: cstring(NOTICE_FILE),
        contents: NOTICE.to_vec(),
    });
    for (cover, id) in view.covers.iter().zip(&anchored.covers) {
        p.push(Op::Cover {
            rel: cstring(&cover.rel),
            id: *id,
            notice: cstring(NOTICE_FILE),
            shown: cstring(shown.join(&cover.rel)),
        });
    }
}
