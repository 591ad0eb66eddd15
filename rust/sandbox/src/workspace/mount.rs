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

use std::sync::Arc;

use super::merged::OwnWork;
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
    /// An overlay's upper layer, and this sandbox's own work folder (its
    /// path and identity).
    overlay: Option<(FileId, std::path::PathBuf, FileId)>,
}

/// What [`anchor`] opened: the person's objects (for Landlock), the
/// identities, and an overlay's own work folder.
type Opened = (Option<OwnedFd>, Anchored, Option<Arc<OwnWork>>);

/// Opens what `view` mounts and records each identity; `workspace` is the
/// tree, opened. An overlay gets a work folder of its own, removed when the
/// last holder of the returned [`OwnWork`] (the sandbox, each program it
/// runs) is gone.
pub(crate) fn anchor(workspace: &OwnedFd, view: &View) -> Result<Opened, SandboxError> {
    let (objects_fd, objects) = match &view.objects {
        Some(path) => {
            let (fd, id) = open_top(path)?;
            (Some(fd), Some(id))
        }
        None => (None, None),
    };
    let mut binds = Vec::new();
    let mut bind_fds = Vec::new();
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
        bind_fds.push(fd);
    }
    let mut covers = Vec::new();
    for cover in &view.covers {
        let shown = view.shown.join(&cover.rel);
        // A file inside a bind is the person's own, reached through the
        // bind (opened above) as the sandbox will reach it.
        let within = view
            .binds
            .iter()
            .zip(&bind_fds)
            .find_map(|(bind, fd)| Some((cover.rel.strip_prefix(&bind.rel).ok()?, fd)));
        let id = match within {
            Some((rest, fd)) if rest.as_os_str().is_empty() => sys::file_id(fd.as_raw_fd()),
            Some((rest, fd)) => open_beneath(fd, rest),
            None => open_beneath(workspace, &cover.rel),
        }
        .map_err(|errno| beneath_error("opening the deny_read file", &shown, errno))?;
        if (id.dev, id.ino, id.kind) != (cover.dev, cover.ino, libc::S_IFREG) {
            return Err(refused_swap(&shown, &cover.named_in));
        }
        covers.push(id);
    }
    let (overlay, own_work) = match &view.overlay {
        Some(layers) => {
            let upper = open_top(&layers.upper)?.1;
            let parent = open_top(&layers.work)?.0;
            let own = OwnWork::make(&parent, &layers.work, "sandbox")
                .map_err(|e| SandboxError::host("creating a work folder in", &layers.work, e))?;
            (Some((upper, own.path.clone(), own.id)), Some(Arc::new(own)))
        }
        None => (None, None),
    };
    Ok((
        objects_fd,
        Anchored {
            objects,
            binds,
            covers,
            overlay,
        },
        own_work,
    ))
}

/// The overlay an overlay workspace is: mounted at `shown` over the project
/// (`lower`, the host folder the sandbox checked as its workspace), each
/// layer opened with no link followed and checked to be the folder Chock
/// recorded, then handed to overlayfs by descriptor. `None` for a
/// workspace that is a tree of its own.
pub(crate) fn plan_overlay(
    view: &View,
    anchored: &Anchored,
    lower: (&Path, FileId),
    shown: &Path,
) -> Option<Op> {
    let (layers, (upper, work, work_id)) = (view.overlay.as_ref()?, anchored.overlay.as_ref()?);
    Some(Op::Overlay {
        lower: cstring(under_old_root(lower.0)),
        lower_id: lower.1,
        upper: cstring(under_old_root(&layers.upper)),
        upper_id: *upper,
        work: cstring(under_old_root(work)),
        work_id: *work_id,
        target: cstring(shown),
    })
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
        mode: 0o444,
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workspace::{BindMount, Cover};
    use std::path::PathBuf;

    fn id(ino: u64, kind: u32) -> FileId {
        FileId { dev: 7, ino, kind }
    }

    #[test]
    fn an_overlay_is_planned_from_its_checked_layers_and_a_tree_gets_none() {
        let layers = super::super::Layers {
            upper: PathBuf::from("/state/ws/upper"),
            work: PathBuf::from("/state/ws/work"),
        };
        let view = View {
            source: PathBuf::from("/home/ada/p"),
            shown: PathBuf::from("/home/ada/p"),
            objects: None,
            binds: Vec::new(),
            covers: Vec::new(),
            overlay: Some(layers),
        };
        let anchored = Anchored {
            objects: None,
            binds: Vec::new(),
            covers: Vec::new(),
            overlay: Some((
                id(2, libc::S_IFDIR),
                PathBuf::from("/state/ws/work/sandbox-1-0"),
                id(3, libc::S_IFDIR),
            )),
        };
        let lower = id(1, libc::S_IFDIR);
        assert_eq!(
            plan_overlay(&view, &anchored, (&view.source, lower), &view.shown),
            Some(Op::Overlay {
                lower: c"/.chock-host-root/home/ada/p".to_owned(),
                lower_id: lower,
                upper: c"/.chock-host-root/state/ws/upper".to_owned(),
                upper_id: id(2, libc::S_IFDIR),
                work: c"/.chock-host-root/state/ws/work/sandbox-1-0".to_owned(),
                work_id: id(3, libc::S_IFDIR),
                target: c"/home/ada/p".to_owned(),
            })
        );
        let tree = View {
            overlay: None,
            ..view
        };
        assert_eq!(
            plan_overlay(&tree, &anchored, (&tree.source, lower), &tree.shown),
            None
        );
    }

    #[test]
    fn objects_binds_and_covers_are_planned_by_descriptor_after_the_workspace() {
        let view = View {
            source: PathBuf::from("/state/ws/tree"),
            shown: PathBuf::from("/home/ada/p"),
            objects: Some(PathBuf::from("/home/ada/p/.git/objects")),
            binds: vec![BindMount {
                rel: PathBuf::from("scripts/release"),
                host: PathBuf::from("/home/ada/p/scripts/release"),
                writable: false,
            }],
            covers: vec![Cover {
                rel: PathBuf::from("conf/secret"),
                dev: 7,
                ino: 9,
                named_in: "chock.zon:3".into(),
            }],
            overlay: None,
        };
        let anchored = Anchored {
            objects: Some(id(1, libc::S_IFDIR)),
            binds: vec![id(2, libc::S_IFDIR)],
            covers: vec![id(9, libc::S_IFREG)],
            overlay: None,
        };
        let mut planner = Planner::new();
        plan_session(&mut planner, &view, &anchored, &view.shown);
        let ops = planner.into_ops();
        assert!(ops.contains(&Op::BindChecked {
            source: c"/.chock-host-root/home/ada/p/.git/objects".to_owned(),
            id: id(1, libc::S_IFDIR),
            target: c"/run/chock/objects".to_owned(),
            set: READ_ONLY,
        }));
        let bind = ops
            .iter()
            .position(|op| matches!(op, Op::BindInto { rel, set, .. } if rel.as_c_str() == c"scripts/release" && *set == READ_ONLY))
            .expect("the bind, read-only");
        let notice = ops
            .iter()
            .position(|op| matches!(op, Op::WriteFile { path, .. } if path.as_c_str() == c"/run/chock/deny-read"))
            .expect("the notice");
        let cover = ops
            .iter()
            .position(|op| matches!(op, Op::Cover { rel, id: covered, .. } if rel.as_c_str() == c"conf/secret" && covered.ino == 9))
            .expect("the cover");
        assert!(bind < notice && notice < cover, "{ops:?}");
    }
}
