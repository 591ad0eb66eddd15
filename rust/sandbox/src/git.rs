//! The project's git directory, which git runs and reads outside the sandbox.
//!
//! A program in the sandbox has the workspace read-write, and the git
//! directory lies in it. What git finds there decides what it *runs* on the
//! person's next `git commit` or `git status`, outside any sandbox: a hook in
//! `hooks/`, a `core.hooksPath`, `core.fsmonitor`, `core.pager` or filter in
//! `config`, an attribute in `info/attributes` that selects a filter, a
//! `commondir` that sends git to another repository's config and hooks, a
//! `config.worktree`. So those are held the way `chock.zon` is: each one that
//! exists is bound read-only over itself, and is then also a mount point that
//! cannot be renamed or removed; the git directory and every folder between
//! it and the workspace are bound over themselves (writable), so the program
//! cannot move the whole directory aside and put a copy of its own in its
//! place. One that does not exist is made first, with contents that mean
//! what its absence meant (see [`GUARDED`]), and held like the others, so no
//! program ever runs while a guarded name is free to be created.
//!
//! The rest of the git directory (objects, refs, the index) stays writable,
//! so `git commit` works inside. A `.git` file (a linked worktree, a
//! submodule, `--separate-git-dir`) is bound read-only itself, and the git
//! directory it names is held the same way when it lies in the workspace;
//! outside the workspace the sandbox does not show it at all.

use std::io::Read;
use std::path::{Path, PathBuf};

use crate::anchor::Placeholder;
use crate::error::SandboxError;

/// What git runs or reads for commands, in each git directory, and what
/// Chock makes where one is missing: an empty `hooks` and `info` folder (no
/// hook, no attribute, as `git init` makes them), an empty `config` and
/// `config.worktree` (no setting), and a `commondir` naming the git
/// directory itself (`.`: git resolves it to the same directory, so the
/// repository is its own common directory, as it was).
pub const GUARDED: [(&str, Placeholder); 5] = [
    ("hooks", Placeholder::Dir),
    ("config", Placeholder::File(b"")),
    ("info", Placeholder::Dir),
    ("commondir", Placeholder::File(b".\n")),
    ("config.worktree", Placeholder::File(b"")),
];

/// At most this many git directories are held (the project's, its linked
/// worktrees' and its submodules'); more is refused rather than left open.
const MAX_GIT_DIRS: usize = 256;

/// The longest `.git` or `commondir` file read.
const MAX_POINTER_BYTES: u64 = 4096;

/// What the sandbox holds of the project's git directories.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GitGuard {
    /// Folders bound over themselves, writable, so they cannot be renamed
    /// away; shallowest first.
    pub pinned: Vec<PathBuf>,
    /// Files and folders bound read-only over themselves.
    pub read_only: Vec<PathBuf>,
    /// Guarded names that did not exist, and what Chock makes there
    /// before the sandbox starts.
    pub missing: Vec<(PathBuf, Placeholder)>,
}

/// Finds what to hold for `workspace` (canonical).
pub fn guard(workspace: &Path) -> Result<GitGuard, SandboxError> {
    let mut finder = Finder {
        workspace,
        guard: GitGuard::default(),
        seen: Vec::new(),
    };
    let dot_git = workspace.join(".git");
    match std::fs::symlink_metadata(&dot_git) {
        Err(_) => {}
        Ok(meta) if meta.file_type().is_symlink() => return Err(link_error(&dot_git)),
        Ok(meta) if meta.is_dir() => finder.git_dir(&dot_git)?,
        Ok(_) => {
            finder.guard.read_only.push(dot_git.clone());
            if let Some(target) = pointer(&dot_git, workspace, "gitdir:")? {
                finder.git_dir_if_inside(&target)?;
            }
        }
    }
    let mut guard = finder.guard;
    // A folder beneath a read-only mount cannot be moved anyway, and a
    // writable bind there would open what the read-only one closes.
    let read_only = guard.read_only.clone();
    guard
        .pinned
        .retain(|p| !read_only.iter().any(|r| p.starts_with(r)));
    guard.pinned.sort_by_key(|p| p.components().count());
    guard.pinned.dedup();
    Ok(guard)
}

/// The git directories git would use for `workspace`, links followed: the
/// `.git` folder, or the one a `.git` file names, and its common directory.
/// For refusing writes there (the tool server's file tools); never fails,
/// what cannot be read is left out.
pub fn git_dirs(workspace: &Path) -> Vec<PathBuf> {
    let dot_git = workspace.join(".git");
    let dir = if dot_git.is_dir() {
        Some(dot_git)
    } else {
        pointer(&dot_git, workspace, "gitdir:").ok().flatten()
    };
    let Some(dir) = dir.and_then(|d| d.canonicalize().ok()) else {
        return Vec::new();
    };
    let common = pointer(&dir.join("commondir"), &dir, "")
        .ok()
        .flatten()
        .and_then(|c| c.canonicalize().ok());
    std::iter::once(dir).chain(common).collect()
}

fn link_error(path: &Path) -> SandboxError {
    SandboxError::Workspace {
        path: path.to_path_buf(),
        reason: "it is a symbolic link into the project's git directory, which Chock cannot hold read-only (git runs its hooks and config outside the sandbox); make it a real folder or file, or set core.hooksPath outside the project".into(),
    }
}

struct Finder<'a> {
    workspace: &'a Path,
    guard: GitGuard,
    seen: Vec<PathBuf>,
}

impl Finder<'_> {
    /// Holds the git directory `dir` when it lies inside the workspace.
    fn git_dir_if_inside(&mut self, dir: &Path) -> Result<(), SandboxError> {
        let Ok(dir) = dir.canonicalize() else {
            return Ok(());
        };
        if dir.starts_with(self.workspace) && dir != self.workspace {
            self.git_dir(&dir)?;
        }
        Ok(())
    }

    fn git_dir(&mut self, dir: &Path) -> Result<(), SandboxError> {
        if !dir.starts_with(self.workspace)
            || self.seen.iter().any(|s| s == dir)
            || self.guard.read_only.iter().any(|r| dir.starts_with(r))
        {
            // Not the sandbox's to hold, already held, or beneath a
            // read-only mount where nothing can be changed or moved anyway.
            return Ok(());
        }
        if self.seen.len() >= MAX_GIT_DIRS {
            return Err(SandboxError::Workspace {
                path: dir.to_path_buf(),
                reason: format!(
                    "the project has more than {MAX_GIT_DIRS} git directories (worktrees and submodules), more than Chock holds read-only; remove some of them"
                ),
            });
        }
        self.seen.push(dir.to_path_buf());
        for folder in dir.ancestors().take_while(|a| *a != self.workspace) {
            self.guard.pinned.push(folder.to_path_buf());
        }
        for (name, placeholder) in GUARDED {
            let path = dir.join(name);
            match std::fs::symlink_metadata(&path) {
                Ok(meta) if meta.file_type().is_symlink() => return Err(link_error(&path)),
                Ok(_) => self.guard.read_only.push(path),
                Err(_) => self.guard.missing.push((path, placeholder)),
            }
        }
        if let Some(common) = pointer(&dir.join("commondir"), dir, "")? {
            self.git_dir_if_inside(&common)?;
        }
        for nested in ["worktrees", "modules"] {
            self.nested_git_dirs(&dir.join(nested))?;
        }
        Ok(())
    }

    /// Linked worktrees' and submodules' git directories (a submodule's may
    /// sit deeper, `modules/a/b`, and hold submodules of its own).
    fn nested_git_dirs(&mut self, under: &Path) -> Result<(), SandboxError> {
        let Ok(entries) = std::fs::read_dir(under) else {
            return Ok(());
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if !entry.file_type().is_ok_and(|t| t.is_dir()) {
                continue;
            }
            if path.join("HEAD").is_file() {
                self.git_dir(&path)?;
            } else {
                self.nested_git_dirs(&path)?;
            }
        }
        Ok(())
    }
}

/// The path a `.git` file (`gitdir: PATH`) or a `commondir` file (`PATH`)
/// names, relative to `base`; `None` when there is no such file.
fn pointer(file: &Path, base: &Path, prefix: &str) -> Result<Option<PathBuf>, SandboxError> {
    let Ok(opened) = std::fs::File::open(file) else {
        return Ok(None);
    };
    let mut text = String::new();
    opened
        .take(MAX_POINTER_BYTES)
        .read_to_string(&mut text)
        .map_err(|e| SandboxError::host("reading", file, e))?;
    let Some(named) = text.trim_end().strip_prefix(prefix) else {
        return Ok(None);
    };
    let named = named.trim();
    if named.is_empty() {
        return Ok(None);
    }
    Ok(Some(base.join(named)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn git(args: &[&str], dir: &Path) {
        let ok = std::process::Command::new("git")
            .args(args)
            .current_dir(dir)
            .output()
            .expect("git is installed (scripts/setup)")
            .status
            .success();
        assert!(ok, "git {args:?}");
    }

    fn workspace() -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().expect("tempdir");
        let ws = dir.path().join("project");
        std::fs::create_dir(&ws).expect("mkdir");
        let ws = ws.canonicalize().expect("canonical");
        (dir, ws)
    }

    #[test]
    fn a_repository_holds_hooks_config_and_info_and_watches_the_rest() {
        let (_dir, ws) = workspace();
        git(&["init", "-q"], &ws);
        let g = guard(&ws).expect("guard");
        let dot = ws.join(".git");
        assert_eq!(g.pinned, vec![dot.clone()]);
        for name in ["hooks", "config", "info"] {
            assert!(g.read_only.contains(&dot.join(name)), "{name}: {g:?}");
        }
        for name in ["commondir", "config.worktree"] {
            assert!(
                g.missing.iter().any(|(p, _)| *p == dot.join(name)),
                "{name}: {g:?}"
            );
        }
    }

    #[test]
    fn no_repository_holds_nothing() {
        let (_dir, ws) = workspace();
        assert_eq!(guard(&ws).expect("guard"), GitGuard::default());
    }

    #[test]
    fn a_git_file_is_held_and_its_git_directory_inside_the_workspace_too() {
        let (_dir, ws) = workspace();
        std::fs::create_dir(ws.join("meta")).expect("mkdir");
        git(&["init", "-q", "--separate-git-dir", "meta/repo"], &ws);
        let g = guard(&ws).expect("guard");
        let meta = ws.join("meta");
        assert!(g.read_only.contains(&ws.join(".git")), "{g:?}");
        assert!(g.read_only.contains(&meta.join("repo/hooks")), "{g:?}");
        assert!(g.read_only.contains(&meta.join("repo/config")), "{g:?}");
        assert_eq!(g.pinned, vec![meta.clone(), meta.join("repo")]);
    }

    #[test]
    fn a_git_file_naming_a_directory_outside_holds_only_the_file() {
        let (dir, ws) = workspace();
        let main = dir.path().join("main");
        std::fs::create_dir(&main).expect("mkdir");
        git(&["init", "-q"], &main);
        git(
            &[
                "-c",
                "user.name=t",
                "-c",
                "user.email=t@t",
                "commit",
                "-q",
                "--allow-empty",
                "-m",
                "x",
            ],
            &main,
        );
        std::fs::remove_dir(&ws).expect("rmdir");
        git(
            &["worktree", "add", "-q", ws.to_str().expect("utf-8")],
            &main,
        );
        let g = guard(&ws).expect("guard");
        assert_eq!(g.read_only, vec![ws.join(".git")]);
        assert!(g.pinned.is_empty() && g.missing.is_empty(), "{g:?}");
    }

    #[test]
    fn linked_worktrees_and_submodules_inside_are_held() {
        let (_dir, ws) = workspace();
        git(&["init", "-q"], &ws);
        let wt = ws.join(".git/worktrees/wt");
        let module = ws.join(".git/modules/lib/inner");
        for dir in [&wt, &module] {
            std::fs::create_dir_all(dir.join("hooks")).expect("mkdir");
            std::fs::write(dir.join("HEAD"), "ref: refs/heads/main\n").expect("HEAD");
        }
        std::fs::write(wt.join("commondir"), "../..\n").expect("commondir");
        let g = guard(&ws).expect("guard");
        assert!(g.read_only.contains(&wt.join("commondir")), "{g:?}");
        assert!(g.read_only.contains(&module.join("hooks")), "{g:?}");
        assert!(
            g.missing.iter().any(|(p, _)| *p == module.join("config")),
            "{g:?}"
        );
        for pinned in [
            ws.join(".git/worktrees"),
            wt,
            ws.join(".git/modules/lib"),
            module,
        ] {
            assert!(g.pinned.contains(&pinned), "{pinned:?}: {g:?}");
        }
        let depths: Vec<_> = g.pinned.iter().map(|p| p.components().count()).collect();
        assert!(depths.windows(2).all(|w| w[0] <= w[1]), "{depths:?}");
    }

    #[test]
    fn the_git_directories_are_found_through_a_file_and_a_link() {
        let (dir, ws) = workspace();
        git(&["init", "-q", "--separate-git-dir", "meta"], &ws);
        assert_eq!(git_dirs(&ws), vec![ws.join("meta")]);
        std::fs::remove_file(ws.join(".git")).expect("rm");
        let elsewhere = dir.path().join("elsewhere");
        std::fs::create_dir(&elsewhere).expect("mkdir");
        std::fs::write(elsewhere.join("commondir"), "../project/meta\n").expect("commondir");
        std::os::unix::fs::symlink(&elsewhere, ws.join(".git")).expect("link");
        assert_eq!(git_dirs(&ws), vec![elsewhere, ws.join("meta")]);
    }

    #[test]
    fn a_linked_hooks_folder_is_refused_by_name() {
        let (_dir, ws) = workspace();
        git(&["init", "-q"], &ws);
        std::fs::remove_dir_all(ws.join(".git/hooks")).expect("rm");
        std::os::unix::fs::symlink("../githooks", ws.join(".git/hooks")).expect("link");
        let error = guard(&ws).expect_err("refused").to_string();
        assert!(
            error.contains(".git/hooks") && error.contains("symbolic link"),
            "{error}"
        );
    }
}
