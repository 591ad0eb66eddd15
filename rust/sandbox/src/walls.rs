//! Landlock: the second wall behind the mounts.
//!
//! The mounts decide what exists inside; Landlock decides what may be done
//! with it, by inode, so a mount made by mistake still grants nothing. Every
//! filesystem right of the newest ABI the kernel has is *handled* (a right
//! left unhandled would stay allowed everywhere), rights are granted beneath
//! a few trees only, and the rights a newer kernel would add are reported.
//!
//! Rules for host inodes (the workspace, the cache, each store path, the
//! device nodes) are built in the parent with the `landlock` crate. Rules for
//! inodes that only exist inside (the tmpfs root, the capped tmpfs, the fresh
//! procfs, devpts) are added by the child to the same ruleset descriptor
//! after its mounts, with raw calls, and the program's process restricts
//! itself with it just before `execve`.
//!
//! No Landlock at all is a refusal to run, never a quiet downgrade.

use std::ffi::CString;
use std::os::fd::{AsFd, OwnedFd};
use std::path::Path;

use landlock::{
    ABI, Access, AccessFs, AccessNet, BitFlags, CompatLevel, Compatible, PathBeneath, PathFd,
    Ruleset, RulesetAttr, RulesetCreatedAttr, Scope, make_bitflags,
};

use crate::anchor::Anchors;
use crate::error::SandboxError;
use crate::mounts::{
    DEVICE_NODES, EntryKind, Layout, SECRETS_MOUNT, StoreView, TMP_MOUNT, cstring,
};
use crate::sys;

/// The newest ABI this build knows; the kernel's own may be older.
const NEWEST: ABI = ABI::V10;

/// Which ABI each filesystem right arrived with, to name what a kernel lacks.
const RIGHTS: [(AccessFs, &str, i32); 17] = [
    (AccessFs::Execute, "execute", 1),
    (AccessFs::WriteFile, "write_file", 1),
    (AccessFs::ReadFile, "read_file", 1),
    (AccessFs::ReadDir, "read_dir", 1),
    (AccessFs::RemoveDir, "remove_dir", 1),
    (AccessFs::RemoveFile, "remove_file", 1),
    (AccessFs::MakeChar, "make_char", 1),
    (AccessFs::MakeDir, "make_dir", 1),
    (AccessFs::MakeReg, "make_reg", 1),
    (AccessFs::MakeSock, "make_sock", 1),
    (AccessFs::MakeFifo, "make_fifo", 1),
    (AccessFs::MakeBlock, "make_block", 1),
    (AccessFs::MakeSym, "make_sym", 1),
    (AccessFs::Refer, "refer", 2),
    (AccessFs::Truncate, "truncate", 3),
    (AccessFs::IoctlDev, "ioctl_dev", 5),
    (AccessFs::ResolveUnix, "resolve_unix", 9),
];

/// What the kernel offers and what of it the sandbox uses.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct LandlockSupport {
    /// The kernel's ABI version.
    pub abi: i32,
    /// Every filesystem right handled (all that this ABI has).
    pub handled: Vec<&'static str>,
    /// Rights a newer kernel would add, with the ABI that brings each.
    pub missing: Vec<(&'static str, i32)>,
}

/// Asks the kernel which Landlock ABI it has; an error names why there is none.
pub fn support() -> Result<LandlockSupport, SandboxError> {
    let abi = sys::landlock_abi().map_err(|errno| SandboxError::NoLandlock {
        reason: match errno {
            nix::errno::Errno::ENOSYS => "the kernel was built without it".into(),
            nix::errno::Errno::EOPNOTSUPP => "it is built in but not enabled at boot".into(),
            other => format!("the kernel answered {}", other.desc()),
        },
    })?;
    Ok(LandlockSupport {
        abi,
        handled: RIGHTS.iter().filter(|r| r.2 <= abi).map(|r| r.1).collect(),
        missing: RIGHTS
            .iter()
            .filter(|r| r.2 > abi)
            .map(|r| (r.1, r.2))
            .collect(),
    })
}

fn read_exec() -> BitFlags<AccessFs> {
    make_bitflags!(AccessFs::{Execute | ReadFile | ReadDir})
}

fn read_only() -> BitFlags<AccessFs> {
    make_bitflags!(AccessFs::{ReadFile | ReadDir})
}

fn device() -> BitFlags<AccessFs> {
    make_bitflags!(AccessFs::{ReadFile | WriteFile | Truncate | IoctlDev})
}

fn read_write() -> BitFlags<AccessFs> {
    AccessFs::from_all(NEWEST)
}

/// The ruleset, with the rules for host inodes already in it, and the rules
/// the child adds for the inodes it creates.
pub(crate) struct Walls {
    pub(crate) ruleset: OwnedFd,
    pub(crate) child_rules: Vec<(CString, u64)>,
}

fn landlock_error(error: impl std::fmt::Display) -> SandboxError {
    SandboxError::Landlock(error.to_string())
}

/// Builds the ruleset for one sandbox. With `refuse_tcp_connect` (the
/// router's direct path), no TCP connect the kernel would carry out for the
/// program is allowed: Chock makes each one (see `net::direct`), and a
/// kernel without Landlock's network rights is an error, never a quiet
/// downgrade.
pub(crate) fn build(
    layout: &Layout,
    anchors: &Anchors,
    refuse_tcp_connect: bool,
) -> Result<Walls, SandboxError> {
    let support = support()?;
    let handled = AccessFs::from_all(ABI::from(support.abi)).bits();

    let mut ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::BestEffort)
        .handle_access(read_write())
        .map_err(landlock_error)?;
    if refuse_tcp_connect {
        ruleset = ruleset
            .set_compatibility(CompatLevel::HardRequirement)
            .handle_access(AccessNet::ConnectTcp)
            .map_err(landlock_error)?
            .set_compatibility(CompatLevel::BestEffort);
    }
    let mut ruleset = ruleset
        .scope(Scope::AbstractUnixSocket | Scope::Signal)
        .map_err(landlock_error)?
        .create()
        .map_err(landlock_error)?;

    // The workspace and the cache by the descriptors the mounts were
    // checked against, never by their paths again.
    for fd in [&anchors.workspace, &anchors.cache]
        .into_iter()
        .chain(anchors.scratch.as_ref())
    {
        ruleset
            .as_mut()
            .add_rule(PathBeneath::new(fd.as_fd(), read_write()))
            .map_err(landlock_error)?;
    }
    // A session workspace's view of the person's objects, read-only.
    if let Some(fd) = &anchors.objects {
        ruleset
            .as_mut()
            .add_rule(PathBeneath::new(fd.as_fd(), read_only()))
            .map_err(landlock_error)?;
    }
    let mut add = |path: &Path, access: BitFlags<AccessFs>| -> Result<(), SandboxError> {
        let fd = PathFd::new(path)
            .map_err(|e| SandboxError::Landlock(format!("{}: {e}", path.display())))?;
        let access = if path.is_dir() {
            access
        } else {
            access & AccessFs::from_file(NEWEST)
        };
        ruleset
            .as_mut()
            .add_rule(PathBeneath::new(fd, access))
            .map_err(landlock_error)?;
        Ok(())
    };
    match &layout.store {
        StoreView::Closure { entries, .. } => {
            for entry in entries
                .iter()
                .filter(|e| !matches!(e.kind, EntryKind::Symlink(_)))
            {
                add(&entry.path, read_exec())?;
            }
        }
        StoreView::Image { entries, .. } => {
            for shown in entries
                .iter()
                .filter(|e| !matches!(e.entry.kind, EntryKind::Symlink(_)))
            {
                add(&shown.host, read_exec())?;
            }
        }
        StoreView::Host { store_dir, system } => {
            if let Some(dir) = store_dir {
                add(dir, read_exec())?;
            }
            for entry in system
                .iter()
                .filter(|e| !matches!(e.kind, EntryKind::Symlink(_)))
            {
                add(&entry.path, read_exec())?;
            }
        }
    }
    for (host, _) in &layout.file_binds {
        // A bound socket (the ssh agent an allowed push is given) is there
        // to be connected to, which Landlock ABI 9 governs.
        let socket = std::fs::symlink_metadata(host)
            .is_ok_and(|m| std::os::unix::fs::FileTypeExt::is_socket(&m.file_type()));
        add(
            host,
            if socket {
                read_only() | AccessFs::ResolveUnix
            } else {
                read_only()
            },
        )?;
    }
    for node in DEVICE_NODES {
        add(&Path::new("/dev").join(node), device())?;
    }
    for granted in &layout.devices {
        add(&granted.node, device())?;
    }

    let mut child_rules = vec![
        (c"/".to_owned(), AccessFs::ReadDir.into()),
        (c"/etc".to_owned(), read_only()),
        (c"/proc".to_owned(), read_only()),
        (c"/dev/pts".to_owned(), device() | AccessFs::ReadDir),
        (c"/dev/shm".to_owned(), read_write()),
        (cstring(TMP_MOUNT), read_write()),
    ];
    if !layout.secret_files.is_empty() {
        child_rules.push((cstring(SECRETS_MOUNT), read_only()));
    }
    // An overlay workspace's inodes are overlayfs's, made by the child's
    // mount: a rule on the project's own folder does not reach them.
    if layout.session.as_ref().is_some_and(|s| s.overlay.is_some()) {
        child_rules.push((cstring(&layout.workspace), read_write()));
    }
    if let StoreView::Closure { store_dir, .. } = &layout.store {
        // Listing the store shows the closure's names; reading inside a
        // store path needs that path's own rule.
        child_rules.push((cstring(store_dir), AccessFs::ReadDir.into()));
    }

    let fd: Option<OwnedFd> = ruleset.into();
    let ruleset = fd.ok_or_else(|| SandboxError::NoLandlock {
        reason: "the kernel created no ruleset for the rights asked".into(),
    })?;
    let child_rules = child_rules
        .into_iter()
        .map(|(path, access)| (path, access.bits() & handled))
        .collect();
    Ok(Walls {
        ruleset,
        child_rules,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rights_table_matches_the_crate() {
        for abi in 1..=9 {
            let from_table: u64 = RIGHTS
                .iter()
                .filter(|r| r.2 <= abi)
                .fold(0, |acc, r| acc | BitFlags::from(r.0).bits());
            assert_eq!(
                from_table,
                AccessFs::from_all(ABI::from(abi)).bits(),
                "ABI {abi}"
            );
        }
    }

    #[test]
    fn this_kernel_has_landlock_and_the_report_adds_up() {
        let support = support()
            .expect("Landlock is required on the machines Chock is tested on; see `chock doctor`");
        assert_eq!(support.handled.len() + support.missing.len(), RIGHTS.len());
        assert!(support.missing.iter().all(|(_, abi)| *abi > support.abi));
    }
}
