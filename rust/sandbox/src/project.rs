//! Where a project's things live on the host: its identity, its writable
//! cache (`$XDG_DATA_HOME/chock/cache/<project>/`, never inside the project)
//! and its cached dev shell (`$XDG_CACHE_HOME/chock/devshell/<project>/`).

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

/// A project directory could not be placed.
#[derive(Debug, thiserror::Error)]
pub enum ProjectError {
    /// Neither the XDG variable nor HOME says where per-user data lives.
    #[error(
        "neither {xdg} nor HOME is set, so Chock cannot tell where to keep per-project data; set HOME"
    )]
    NoHome {
        /// The XDG variable that was looked at first.
        xdg: &'static str,
    },
    /// The project directory does not exist or cannot be read.
    #[error(
        "the project directory {path} cannot be read: {source}; pass --project with an existing directory"
    )]
    Unreadable {
        /// The directory.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
}

/// One project: its directory and the name its per-user data goes under.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Project {
    /// The project directory, canonical.
    pub dir: PathBuf,
    /// `<basename>-<16 hex digits of the path's SHA-256>`: readable, and two
    /// projects with one basename never share.
    pub id: String,
    /// The `chock.zon` files between the working directory and the project
    /// that are not policy (see [`chock_policy::root`]), nearest first.
    pub ignored: Vec<PathBuf>,
    /// The session workspace commands run on instead of `dir`, shown at
    /// `dir` (`--workspace`); `None` runs them on the project itself.
    pub workspace: Option<crate::workspace::View>,
}

impl Project {
    /// Places the project at `dir`.
    pub fn at(dir: &Path) -> Result<Project, ProjectError> {
        let dir = dir
            .canonicalize()
            .map_err(|source| ProjectError::Unreadable {
                path: dir.to_path_buf(),
                source,
            })?;
        let digest = Sha256::digest(dir.as_os_str().as_encoded_bytes());
        let base = dir
            .file_name()
            .map_or_else(|| "root".into(), |n| n.to_string_lossy().into_owned());
        let base: String = base
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || "-_.".contains(c) {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        let id = format!(
            "{base}-{}",
            hex::encode(digest.get(..8).unwrap_or_default())
        );
        Ok(Project {
            dir,
            id,
            ignored: Vec::new(),
            workspace: None,
        })
    }

    /// Finds the project for a working directory ([`chock_policy::root`]):
    /// the nearest ancestor with a `chock.zon`, a `flake.nix` or a `.git`,
    /// or higher, the outermost with a `chock.zon`, else the directory
    /// itself. A `chock.zon` on the way is not policy: it is in `ignored`.
    pub fn discover(cwd: &Path) -> Result<Project, ProjectError> {
        let cwd = cwd
            .canonicalize()
            .map_err(|source| ProjectError::Unreadable {
                path: cwd.to_path_buf(),
                source,
            })?;
        let found = chock_policy::root::governing(&cwd);
        Ok(Project {
            ignored: found.ignored,
            ..Project::at(&found.dir)?
        })
    }

    /// One line per ignored `chock.zon`, for the person to read.
    pub fn ignored_notices(&self) -> Vec<String> {
        self.ignored
            .iter()
            .map(|file| {
                format!(
                    "{} is ignored: a chock.zon below the project's top is never policy; {} governs",
                    file.display(),
                    self.dir.join(chock_policy::root::POLICY_FILE).display()
                )
            })
            .collect()
    }

    /// The project a command means: the directory given with `--project`,
    /// else the one [`Project::discover`] finds from the working directory.
    pub fn for_command(flag: Option<&Path>) -> Result<Project, ProjectError> {
        match flag {
            Some(dir) => Project::at(dir),
            None => {
                let cwd = std::env::current_dir().map_err(|source| ProjectError::Unreadable {
                    path: PathBuf::from("."),
                    source,
                })?;
                Project::discover(&cwd)
            }
        }
    }

    /// The writable cache shown at `/run/chock/cache`:
    /// `$XDG_CACHE_HOME/chock/cache/<project>/`, what may be thrown away.
    /// A cache kept under `$XDG_DATA_HOME` (where Chock kept it first) is
    /// moved here on its first use, so what it held is not lost; where the
    /// move cannot be made (another file system) the old one goes on
    /// serving.
    pub fn cache_dir(&self) -> Result<PathBuf, ProjectError> {
        let dir = cache_home()?.join("chock").join("cache").join(&self.id);
        let old = data_home()?.join("chock").join("cache").join(&self.id);
        let is_real_dir =
            |path: &Path| std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_dir());
        if old == dir || std::fs::symlink_metadata(&dir).is_ok() || !is_real_dir(&old) {
            return Ok(dir);
        }
        if let Some(parent) = dir.parent() {
            let _ = std::fs::create_dir_all(parent);
        }
        match std::fs::rename(&old, &dir) {
            Ok(()) => Ok(dir),
            Err(_) if is_real_dir(&old) => Ok(old),
            Err(_) => Ok(dir),
        }
    }

    /// The record of the placeholders this project's sandboxes hold (a
    /// file no sandbox shows; see the sandbox's `lease`).
    pub fn lease_record(&self) -> Result<PathBuf, ProjectError> {
        Ok(data_home()?.join("chock").join("held").join(&self.id))
    }

    /// Where the notes agents keep about the project are (`chock run`'s
    /// read_memory and write_memory, `chock memory`).
    pub fn memory_dir(&self) -> Result<PathBuf, ProjectError> {
        Ok(data_home()?.join("chock").join("memory").join(&self.id))
    }

    /// Where the dev shell's environment, closure and GC root are kept.
    pub fn dev_shell_dir(&self) -> Result<PathBuf, ProjectError> {
        Ok(cache_home()?.join("chock").join("devshell").join(&self.id))
    }
}

fn xdg(var: &'static str, fallback: &str) -> Result<PathBuf, ProjectError> {
    if let Some(dir) = std::env::var_os(var)
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
    {
        return Ok(dir);
    }
    std::env::var_os("HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .map(|home| home.join(fallback))
        .ok_or(ProjectError::NoHome { xdg: var })
}

/// `$XDG_DATA_HOME`, or `~/.local/share`.
pub fn data_home() -> Result<PathBuf, ProjectError> {
    xdg("XDG_DATA_HOME", ".local/share")
}

/// `$XDG_CACHE_HOME`, or `~/.cache`.
pub fn cache_home() -> Result<PathBuf, ProjectError> {
    xdg("XDG_CACHE_HOME", ".cache")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_projects_with_one_name_get_two_ids() {
        let dir = tempfile::tempdir().expect("tempdir");
        let a = dir.path().join("a/app");
        let b = dir.path().join("b/app");
        std::fs::create_dir_all(&a).expect("a");
        std::fs::create_dir_all(&b).expect("b");
        let (a, b) = (Project::at(&a).expect("a"), Project::at(&b).expect("b"));
        assert!(a.id.starts_with("app-") && b.id.starts_with("app-"));
        assert_ne!(a.id, b.id);
    }

    #[test]
    fn the_nearest_marked_ancestor_is_the_project() {
        let dir = tempfile::tempdir().expect("tempdir");
        let sub = dir.path().join("src/deep");
        std::fs::create_dir_all(&sub).expect("sub");
        std::fs::write(dir.path().join("flake.nix"), "{}").expect("flake");
        let project = Project::discover(&sub).expect("project");
        assert_eq!(project.dir, dir.path().canonicalize().expect("canonical"));
    }
}
