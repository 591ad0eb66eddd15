//! Which directory is the project, and so which `chock.zon` is policy, for
//! a working directory.
//!
//! A program Chock runs may write anywhere in its workspace, so a
//! `chock.zon` (or a `flake.nix`, or a `.git`) in a subdirectory may be the
//! agent's own. The nearest marker up from the working directory therefore
//! cannot decide the policy: a `cd sub` would hand the agent its rules.
//! Below a directory that holds a `chock.zon`, the outermost one governs,
//! in one git work tree or across several; a nested one is never read, and
//! is reported as ignored. Every project a sandboxed program ever ran in
//! has one at its top (`chock exec` makes it before the program starts), so
//! whatever the program writes below it is never policy.
//!
//! The climb stops at a directory another user may write into (`/tmp`, a
//! shared folder: owned by neither the caller nor root, or writable by
//! others), so a file anyone could plant there never governs the projects
//! below it.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// The policy file's name.
pub const POLICY_FILE: &str = crate::control::CHOCK_ZON;

/// What a working directory's project is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Governing {
    /// The project directory: the higher of the nearest directory holding
    /// `chock.zon`, `flake.nix` or `.git` and the outermost one holding a
    /// `chock.zon`; `start` itself when there is neither.
    pub dir: PathBuf,
    /// Every `chock.zon` between `start` and `dir` (not `dir`'s own),
    /// nearest first: present, and not policy.
    pub ignored: Vec<PathBuf>,
}

/// The project for `start` (absolute and canonical: no `..`, no link).
pub fn governing(start: &Path) -> Governing {
    let has = |dir: &Path, name: &str| dir.join(name).symlink_metadata().is_ok();
    let caller = caller_uid();
    let mut dir: Option<&Path> = None;
    for folder in start.ancestors() {
        if !private(folder, caller) {
            break;
        }
        if has(folder, POLICY_FILE)
            || (dir.is_none() && (has(folder, "flake.nix") || has(folder, ".git")))
        {
            dir = Some(folder);
        }
    }
    let dir = dir.unwrap_or(start).to_path_buf();
    let ignored = start
        .ancestors()
        .take_while(|folder| *folder != dir)
        .map(|folder| folder.join(POLICY_FILE))
        .filter(|file| file.symlink_metadata().is_ok())
        .collect();
    Governing { dir, ignored }
}

/// The caller's uid, as the kernel shows it on `/proc/self`.
fn caller_uid() -> u32 {
    std::fs::metadata("/proc/self").map_or(0, |m| m.uid())
}

/// Whether no one but the caller (or root) may add a name to `folder`.
fn private(folder: &Path, caller: u32) -> bool {
    std::fs::symlink_metadata(folder)
        .is_ok_and(|m| (m.uid() == caller || m.uid() == 0) && m.mode() & 0o002 == 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree() -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().expect("tempdir");
        let top = dir.path().canonicalize().expect("canonical").join("top");
        std::fs::create_dir_all(top.join("sub/deep")).expect("tree");
        (dir, top)
    }

    #[test]
    fn the_nearest_marked_folder_is_the_project_when_nothing_is_above() {
        let (_dir, top) = tree();
        std::fs::write(top.join("flake.nix"), "{}").expect("flake");
        let found = governing(&top.join("sub/deep"));
        assert_eq!(found.dir, top);
        assert!(found.ignored.is_empty());
    }

    #[test]
    fn a_nested_chock_zon_is_ignored_and_named() {
        let (_dir, top) = tree();
        std::fs::write(top.join(POLICY_FILE), ".{}").expect("outer");
        std::fs::write(top.join("sub").join(POLICY_FILE), ".{}").expect("nested");
        // Also a nested repository: the agent may make one.
        std::fs::create_dir(top.join("sub/.git")).expect("nested git");
        let found = governing(&top.join("sub/deep"));
        assert_eq!(found.dir, top);
        assert_eq!(found.ignored, vec![top.join("sub").join(POLICY_FILE)]);
    }

    #[test]
    fn a_nested_flake_or_repository_does_not_leave_the_outer_policy() {
        let (_dir, top) = tree();
        std::fs::write(top.join(POLICY_FILE), ".{}").expect("outer");
        std::fs::write(top.join("sub/flake.nix"), "{}").expect("nested flake");
        std::fs::create_dir(top.join("sub/deep/.git")).expect("nested git");
        let found = governing(&top.join("sub/deep"));
        assert_eq!(found.dir, top);
        assert!(found.ignored.is_empty());
    }

    #[test]
    fn a_chock_zon_in_a_folder_others_may_write_does_not_reach_below() {
        // The temporary directory's parent is /tmp (or TMPDIR): world
        // writable, so a chock.zon planted beside `top` would be anyone's.
        let (_dir, top) = tree();
        let shared = top.parent().expect("parent").to_path_buf();
        let mode = std::fs::metadata(&shared).expect("meta").mode();
        std::fs::set_permissions(
            &shared,
            std::os::unix::fs::PermissionsExt::from_mode(mode | 0o002),
        )
        .expect("chmod");
        std::fs::write(shared.join(POLICY_FILE), ".{}").expect("planted");
        std::fs::write(top.join(POLICY_FILE), ".{}").expect("own");
        let found = governing(&top.join("sub"));
        assert_eq!(found.dir, top);
    }
}
