//! The workspace, and nothing outside it.
//!
//! Every file tool goes through a [`Workspace`]: a directory handle from
//! cap-std, which opens each path beneath it with `openat2(RESOLVE_BENEATH)`
//! where the kernel has it and a component-by-component `O_NOFOLLOW` walk
//! where it does not. So `..` that climbs out, an absolute path elsewhere and
//! a symbolic link that leads out are all refused by the kernel at the moment
//! of opening, not by a check that a concurrent rename could slip past. A
//! link that stays inside is followed.
//!
//! Writes go to a fresh file beside the target and are renamed over it, so a
//! refused or failed write leaves the old file as it was, and `renameat`
//! replaces a name without following it.

use std::io::{Read, Write};
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use cap_std::ambient_authority;
use cap_std::fs::{Dir, OpenOptions, Permissions};

use chock_policy::PROJECT_FILE;

/// Why a file tool refused or failed; each message says what to do.
#[derive(Debug, thiserror::Error)]
pub enum FileError {
    #[error(
        "`{path}` is outside the workspace {root}; give a path inside it (relative paths start at the workspace)"
    )]
    Outside { path: String, root: String },
    #[error(
        "`{path}` leads outside the workspace through a symbolic link; the link is not followed"
    )]
    Escapes { path: String },
    #[error("`{path}` does not exist in the workspace")]
    NotFound { path: String },
    #[error("`{path}` is a folder, not a file")]
    IsFolder { path: String },
    #[error("`{path}` is not a folder")]
    NotFolder { path: String },
    #[error("`{path}` is {size} bytes, over the {limit}-byte bound; {what}")]
    TooLarge {
        path: String,
        size: u64,
        limit: u64,
        what: &'static str,
    },
    #[error("`{path}` is not UTF-8 text ({size} bytes); this tool reads text only")]
    NotText { path: String, size: u64 },
    #[error("{PROJECT_FILE} holds the rules this server obeys; only a person edits it, by hand")]
    PolicyFile,
    #[error(
        "`{path}` is in the project's git directory, whose hooks and config git runs outside any sandbox on the person's next commit; the file tools never write there (git itself works through run_command, with hooks, config and info read-only)"
    )]
    GitDirectory { path: String },
    #[error("`{path}`: the path holds a NUL byte or is empty")]
    BadPath { path: String },
    #[error("`{path}`: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
}

/// One entry of a listing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listed {
    pub name: String,
    pub kind: Kind,
    pub size: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Kind {
    File,
    Folder,
    Link,
    Other,
}

/// The project directory as a capability: paths resolve beneath it only.
pub struct Workspace {
    root: Dir,
    root_path: PathBuf,
}

static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

impl Workspace {
    /// Opens `root` (an absolute, canonical directory).
    pub fn open(root: &Path) -> std::io::Result<Workspace> {
        Ok(Workspace {
            root: Dir::open_ambient_dir(root, ambient_authority())?,
            root_path: root.to_path_buf(),
        })
    }

    /// `given` as a path relative to the workspace: a relative path as it
    /// is, an absolute one only when it is under the workspace. `..` is
    /// resolved lexically and may not climb above the workspace. The empty
    /// path and `.` are the workspace itself.
    pub fn relative(&self, given: &str) -> Result<PathBuf, FileError> {
        if given.contains('\0') {
            return Err(FileError::BadPath { path: given.into() });
        }
        let path = Path::new(given);
        let rest = if path.is_absolute() {
            path.strip_prefix(&self.root_path)
                .map_err(|_| self.outside(given))?
        } else {
            path
        };
        let mut parts: Vec<&std::ffi::OsStr> = Vec::new();
        for component in rest.components() {
            match component {
                Component::Normal(part) => parts.push(part),
                Component::CurDir => {}
                Component::ParentDir => {
                    if parts.pop().is_none() {
                        return Err(self.outside(given));
                    }
                }
                Component::RootDir | Component::Prefix(_) => return Err(self.outside(given)),
            }
        }
        Ok(parts.iter().collect())
    }

    fn outside(&self, given: &str) -> FileError {
        FileError::Outside {
            path: given.into(),
            root: self.root_path.display().to_string(),
        }
    }

    /// A path for messages: relative to the workspace, `.` for the root.
    pub fn show(rel: &Path) -> String {
        if rel.as_os_str().is_empty() {
            ".".into()
        } else {
            rel.display().to_string()
        }
    }

    /// Reads a file of at most `limit` bytes.
    pub fn read(&self, rel: &Path, limit: u64) -> Result<Vec<u8>, FileError> {
        let file = self.root.open(at(rel)).map_err(|e| io_error(rel, e))?;
        let meta = file.metadata().map_err(|e| io_error(rel, e))?;
        if meta.is_dir() {
            return Err(FileError::IsFolder {
                path: Self::show(rel),
            });
        }
        if meta.len() > limit {
            return Err(FileError::TooLarge {
                path: Self::show(rel),
                size: meta.len(),
                limit,
                what: "read a part of it with `offset` and `limit`",
            });
        }
        let mut bytes = Vec::with_capacity(meta.len() as usize);
        file.take(limit + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| io_error(rel, e))?;
        if bytes.len() as u64 > limit {
            return Err(FileError::TooLarge {
                path: Self::show(rel),
                size: bytes.len() as u64,
                limit,
                what: "it grew while being read",
            });
        }
        Ok(bytes)
    }

    /// A file's text: [`Workspace::read`], refusing what is not UTF-8.
    pub fn read_text(&self, rel: &Path, limit: u64) -> Result<String, FileError> {
        let bytes = self.read(rel, limit)?;
        let size = bytes.len() as u64;
        String::from_utf8(bytes).map_err(|_| FileError::NotText {
            path: Self::show(rel),
            size,
        })
    }

    /// The entries of a folder, sorted by name.
    pub fn list(&self, rel: &Path) -> Result<Vec<Listed>, FileError> {
        let dir = self.open_dir(rel)?;
        let mut listed = Vec::new();
        for entry in dir.entries().map_err(|e| io_error(rel, e))? {
            let entry = entry.map_err(|e| io_error(rel, e))?;
            let name = entry.file_name().to_string_lossy().into_owned();
            let meta = entry.metadata().map_err(|e| io_error(rel, e))?;
            let file_type = meta.file_type();
            let kind = if file_type.is_symlink() {
                Kind::Link
            } else if file_type.is_dir() {
                Kind::Folder
            } else if file_type.is_file() {
                Kind::File
            } else {
                Kind::Other
            };
            listed.push(Listed {
                name,
                kind,
                size: meta.len(),
            });
        }
        listed.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(listed)
    }

    fn open_dir(&self, rel: &Path) -> Result<Dir, FileError> {
        if rel.as_os_str().is_empty() {
            return self.root.try_clone().map_err(|e| io_error(rel, e));
        }
        self.root.open_dir(rel).map_err(|e| match io_error(rel, e) {
            FileError::Io { source, .. } if source.raw_os_error() == Some(nix::libc::ENOTDIR) => {
                FileError::NotFolder {
                    path: Self::show(rel),
                }
            }
            other => other,
        })
    }

    /// Every entry under `rel`, depth first, names relative to the
    /// workspace. Folders are entered, symbolic links never (a link is
    /// reported as an entry of its own); `.git` is skipped. Stops after
    /// `limit` entries and says so.
    pub fn walk(&self, rel: &Path, limit: usize) -> Result<Walked, FileError> {
        let mut walked = Walked::default();
        let start = self.open_dir(rel)?;
        let mut stack = vec![(start, rel.to_path_buf())];
        while let Some((dir, path)) = stack.pop() {
            let Ok(entries) = dir.entries() else { continue };
            let mut children: Vec<(String, cap_std::fs::Metadata)> = entries
                .filter_map(Result::ok)
                .filter_map(|e| {
                    let meta = e.metadata().ok()?;
                    Some((e.file_name().to_string_lossy().into_owned(), meta))
                })
                .collect();
            children.sort_by(|a, b| b.0.cmp(&a.0));
            for (name, meta) in children {
                if walked.entries.len() >= limit {
                    walked.cut = true;
                    return Ok(walked);
                }
                let child = path.join(&name);
                let file_type = meta.file_type();
                if file_type.is_dir() && !file_type.is_symlink() {
                    if name == ".git" {
                        continue;
                    }
                    if let Ok(sub) = dir.open_dir(&name) {
                        stack.push((sub, child.clone()));
                    }
                    walked.entries.push((child, Kind::Folder));
                } else if file_type.is_symlink() {
                    walked.entries.push((child, Kind::Link));
                } else if file_type.is_file() {
                    walked.entries.push((child, Kind::File));
                }
            }
        }
        walked.entries.sort();
        Ok(walked)
    }

    /// Writes `bytes` to `rel` whole: a fresh file beside it, renamed over
    /// it. Folders on the way are made. `chock.zon` at the root and a link
    /// that leads out are refused before anything is written.
    pub fn write(&self, rel: &Path, bytes: &[u8]) -> Result<(), FileError> {
        let rel = self.write_target(rel)?;
        let (parent, name) = split(&rel)?;
        let dir = match self.open_dir(parent) {
            Err(FileError::NotFound { .. }) => {
                self.root
                    .create_dir_all(parent)
                    .map_err(|e| io_error(parent, e))?;
                self.open_dir(parent)?
            }
            opened => opened?,
        };
        let mode = match dir.symlink_metadata(name) {
            Ok(meta) if meta.is_dir() => {
                return Err(FileError::IsFolder {
                    path: Self::show(&rel),
                });
            }
            Ok(meta) => Some(meta.permissions()),
            Err(_) => None,
        };
        let temp = format!(
            ".{}.chock-{}-{}",
            name.to_string_lossy(),
            std::process::id(),
            TEMP_COUNTER.fetch_add(1, Ordering::Relaxed)
        );
        let result =
            write_new(&dir, &temp, bytes, mode).and_then(|()| dir.rename(&temp, &dir, name));
        if let Err(e) = result {
            dir.remove_file(&temp).ok();
            return Err(io_error(&rel, e));
        }
        Ok(())
    }

    /// The file a write of `rel` changes: `rel` itself, or where a link
    /// at `rel` points when that stays inside.
    fn write_target(&self, rel: &Path) -> Result<PathBuf, FileError> {
        let (parent, name) = split(rel)?;
        let is_link = self
            .root
            .symlink_metadata(rel)
            .is_ok_and(|m| m.file_type().is_symlink());
        let target = if is_link {
            // Where the link leads, resolved beneath the root: a link out
            // fails here with the kernel's refusal.
            self.root.canonicalize(rel).map_err(|e| io_error(rel, e))?
        } else {
            // The parent resolved beneath the root keeps `chock.zon` from
            // being reached through a folder link.
            let parent = if parent.as_os_str().is_empty() || !self.root.exists(parent) {
                parent.to_path_buf()
            } else {
                self.root
                    .canonicalize(parent)
                    .map_err(|e| io_error(parent, e))?
            };
            parent.join(name)
        };
        if target == Path::new(PROJECT_FILE) {
            return Err(FileError::PolicyFile);
        }
        if self.in_git_directory(rel) || self.in_git_directory(&target) {
            return Err(FileError::GitDirectory {
                path: Self::show(rel),
            });
        }
        Ok(target)
    }

    /// Whether `rel` is a `.git` (folder or file) or lies in one, at any
    /// depth, or in the git directory a `.git` file or link names.
    fn in_git_directory(&self, rel: &Path) -> bool {
        if rel.components().any(|c| c.as_os_str() == ".git") {
            return true;
        }
        let path = self.root_path.join(rel);
        chock_sandbox::git::git_dirs(&self.root_path)
            .iter()
            .any(|dir| path.starts_with(dir))
    }
}

fn write_new(
    dir: &Dir,
    temp: &str,
    bytes: &[u8],
    mode: Option<Permissions>,
) -> std::io::Result<()> {
    let mut file = dir.open_with(temp, OpenOptions::new().write(true).create_new(true))?;
    file.write_all(bytes)?;
    if let Some(mode) = mode {
        file.set_permissions(mode)?;
    }
    file.sync_all()
}

fn split(rel: &Path) -> Result<(&Path, &std::ffi::OsStr), FileError> {
    match (rel.parent(), rel.file_name()) {
        (Some(parent), Some(name)) => Ok((parent, name)),
        _ => Err(FileError::IsFolder {
            path: Workspace::show(rel),
        }),
    }
}

/// cap-std takes `.` for the root.
fn at(rel: &Path) -> &Path {
    if rel.as_os_str().is_empty() {
        Path::new(".")
    } else {
        rel
    }
}

/// What a walk found.
#[derive(Debug, Default)]
pub struct Walked {
    pub entries: Vec<(PathBuf, Kind)>,
    /// The walk stopped at its bound.
    pub cut: bool,
}

/// Names the refusal the kernel (or cap-std's walk) gave: an escape is
/// reported as one, not as a plain permission error.
fn io_error(rel: &Path, source: std::io::Error) -> FileError {
    let path = Workspace::show(rel);
    let escaped = source.raw_os_error() == Some(nix::libc::EXDEV)
        || (source.kind() == std::io::ErrorKind::PermissionDenied
            && source.raw_os_error().is_none());
    if escaped {
        return FileError::Escapes { path };
    }
    match source.kind() {
        std::io::ErrorKind::NotFound => FileError::NotFound { path },
        _ if source.raw_os_error() == Some(nix::libc::EISDIR) => FileError::IsFolder { path },
        _ => FileError::Io { path, source },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn workspace() -> (tempfile::TempDir, Workspace) {
        let dir = tempfile::tempdir().expect("tempdir");
        let canonical = dir.path().canonicalize().expect("canonical");
        let workspace = Workspace::open(&canonical).expect("open");
        (dir, workspace)
    }

    #[test]
    fn paths_are_made_relative_or_refused() {
        let (_dir, ws) = workspace();
        let root = ws.root_path.display().to_string();
        assert_eq!(ws.relative("a/./b/../c").ok(), Some(PathBuf::from("a/c")));
        assert_eq!(ws.relative("").ok(), Some(PathBuf::new()));
        assert_eq!(
            ws.relative(&format!("{root}/x")).ok(),
            Some(PathBuf::from("x"))
        );
        for outside in ["..", "a/../../b", "/etc/passwd", &format!("{root}/../x")] {
            assert!(
                matches!(ws.relative(outside), Err(FileError::Outside { .. })),
                "{outside}"
            );
        }
        assert!(matches!(
            ws.relative("a\0b"),
            Err(FileError::BadPath { .. })
        ));
    }

    #[test]
    fn a_write_replaces_the_file_whole_and_keeps_its_mode() {
        use std::os::unix::fs::PermissionsExt;
        let (dir, ws) = workspace();
        let file = dir.path().join("run.sh");
        std::fs::write(&file, "old").expect("write");
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o750)).expect("chmod");
        ws.write(Path::new("run.sh"), b"new").expect("write");
        assert_eq!(std::fs::read_to_string(&file).ok().as_deref(), Some("new"));
        let mode = std::fs::metadata(&file).expect("meta").permissions().mode();
        assert_eq!(mode & 0o777, 0o750);
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .expect("list")
            .filter_map(Result::ok)
            .map(|e| e.file_name())
            .collect();
        assert_eq!(names.len(), 1, "no temporary file is left: {names:?}");
    }

    #[test]
    fn nothing_is_written_in_a_git_directory() {
        let (dir, ws) = workspace();
        std::fs::create_dir_all(dir.path().join(".git/hooks")).expect("mkdir");
        std::fs::create_dir_all(dir.path().join("meta")).expect("mkdir");
        std::fs::write(dir.path().join("sub.git"), "").expect("file");
        for path in [
            ".git/hooks/pre-commit",
            ".git/config",
            "vendor/x/.git/config",
            ".git",
        ] {
            assert!(
                matches!(
                    ws.write(Path::new(path), b"x"),
                    Err(FileError::GitDirectory { .. })
                ),
                "{path}"
            );
        }
        std::fs::remove_dir_all(dir.path().join(".git")).expect("rm");
        std::fs::write(dir.path().join(".git"), "gitdir: meta\n").expect(".git file");
        assert!(matches!(
            ws.write(Path::new("meta/hooks/pre-commit"), b"x"),
            Err(FileError::GitDirectory { .. })
        ));
        assert!(!dir.path().join("meta/hooks").exists());
        ws.write(Path::new("sub.git"), b"a name that only looks like it")
            .expect("written");
    }

    proptest::proptest! {
        #[test]
        fn a_relative_path_never_climbs_out(given in "[a-z./\\\\]{0,24}") {
            let (_dir, ws) = workspace();
            if let Ok(rel) = ws.relative(&given) {
                proptest::prop_assert!(rel.components().all(|c| matches!(c, Component::Normal(_))));
            }
        }
    }
}
