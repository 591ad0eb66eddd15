//! `chock.lock`: what each installed policy was installed from (the
//! source, the commit when it is a git repository) and the hash of its
//! content, so an install can be repeated exactly and a changed file found.
//!
//! The content hash is `sha256:` over every file under the package's folder
//! in the order of their paths: the path, whether it is executable, and the
//! bytes, each length-prefixed, so no two trees hash alike. A symbolic link
//! or any other kind of file is refused: a package is plain files.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::{PackageError, io};

/// The lockfile, in the project's root.
pub const LOCK_FILE: &str = chock_policy::control::CHOCK_LOCK;
/// The lockfile's format.
pub const LOCK_VERSION: u32 = 1;
/// The most files a package may hold.
const MAX_FILES: usize = 4096;

/// One installed policy.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Locked {
    /// One label ([`chock_policy::package::valid_id`]): a lock naming
    /// anything else is refused at its line.
    #[serde(deserialize_with = "chock_policy::package::deserialize_id")]
    pub id: String,
    /// The catalog as given to `chock install` (a directory or a git repository).
    pub source: String,
    /// The commit it was installed from; empty for a plain directory.
    #[serde(default)]
    pub commit: String,
    /// The package's content hash, `sha256:<hex>`.
    pub hash: String,
    /// Kept out of force by `chock disable`, in `.agents/policies/.disabled/`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub disabled: bool,
}

/// One installed WebAssembly plugin (chock-plugins installs it).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LockedPlugin {
    /// One label, the plugin's folder in `.agents/plugins/`.
    #[serde(deserialize_with = "chock_policy::package::deserialize_id")]
    pub id: String,
    /// The version its manifest gives.
    pub version: String,
    /// The folder it was installed from.
    pub source: String,
    /// The installed folder's content hash, `sha256:<hex>` ([`content_hash`]).
    pub hash: String,
}

/// The whole lockfile.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Lock {
    pub version: u32,
    #[serde(default)]
    pub policies: Vec<Locked>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub plugins: Vec<LockedPlugin>,
}

impl Default for Lock {
    fn default() -> Lock {
        Lock {
            version: LOCK_VERSION,
            policies: Vec::new(),
            plugins: Vec::new(),
        }
    }
}

impl Lock {
    /// The project's lock; none written yet is an empty one, and so is an
    /// empty folder in its place (what a running sandbox holds the missing
    /// name with, so no program in it can write one).
    pub fn read(project: &Path) -> Result<Lock, PackageError> {
        let path = project.join(LOCK_FILE);
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Lock::default()),
            Err(_) if std::fs::read_dir(&path).is_ok_and(|mut d| d.next().is_none()) => {
                return Ok(Lock::default());
            }
            Err(e) => return Err(io(&path, "reading the lockfile")(e)),
        };
        Lock::parse(&path, &text)
    }

    /// Reads `text` as the lockfile `path`.
    pub fn parse(path: &Path, text: &str) -> Result<Lock, PackageError> {
        let lock: Lock = chock_zon::from_str_in(Some(path), text).map_err(|e| {
            PackageError::Refused(format!(
                "{e}\n(the lockfile is written by `chock install`: restore it from version control)"
            ))
        })?;
        if lock.version != LOCK_VERSION {
            return Err(PackageError::Refused(format!(
                "{}: lockfile version {} is not {LOCK_VERSION}, the one this Chock reads: upgrade Chock",
                path.display(),
                lock.version
            )));
        }
        Ok(lock)
    }

    /// Writes the lock, entries in the order of their ids.
    pub fn write(&mut self, project: &Path) -> Result<(), PackageError> {
        self.policies.sort_by(|a, b| a.id.cmp(&b.id));
        self.plugins.sort_by(|a, b| a.id.cmp(&b.id));
        let text = self.to_text()?;
        write_atomically(&project.join(LOCK_FILE), text.as_bytes())
    }

    /// The lock as the file holds it.
    pub fn to_text(&self) -> Result<String, PackageError> {
        let text = chock_zon::to_string(self)
            .map_err(|e| PackageError::Refused(format!("writing the lockfile: {e}")))?;
        Ok(format!("{text}\n"))
    }

    /// The entry for `id`.
    pub fn get(&self, id: &str) -> Option<&Locked> {
        self.policies.iter().find(|p| p.id == id)
    }

    /// Puts `entry` in place of the one with its id.
    pub fn put(&mut self, entry: Locked) {
        self.policies.retain(|p| p.id != entry.id);
        self.policies.push(entry);
    }
}

/// Writes `path` whole ([`chock_files::replace`]), keeping its mode, so a
/// reader sees the old text or the new, never half.
pub(crate) fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), PackageError> {
    chock_files::replace(path, bytes, chock_files::Access::Kept).map_err(io(path, "writing"))
}

/// Every file under `dir`, relative, in the order of their paths.
pub fn files(dir: &Path) -> Result<Vec<PathBuf>, PackageError> {
    let mut out = Vec::new();
    let mut pending = vec![PathBuf::new()];
    while let Some(rel) = pending.pop() {
        let here = dir.join(&rel);
        for entry in std::fs::read_dir(&here).map_err(io(&here, "reading the folder"))? {
            let entry = entry.map_err(io(&here, "reading the folder"))?;
            let kind = entry.file_type().map_err(io(&entry.path(), "reading"))?;
            let name = rel.join(entry.file_name());
            if kind.is_dir() {
                pending.push(name);
            } else if kind.is_file() {
                out.push(name);
            } else {
                return Err(PackageError::Refused(format!(
                    "{}: a policy package holds only plain files and folders; remove this link or special file",
                    entry.path().display()
                )));
            }
            if out.len() > MAX_FILES {
                return Err(PackageError::Refused(format!(
                    "{}: more than {MAX_FILES} files; a policy package is small",
                    dir.display()
                )));
            }
        }
    }
    out.sort();
    Ok(out)
}

/// The content hash of the package in `dir`: `sha256:<hex>`.
pub fn content_hash(dir: &Path) -> Result<String, PackageError> {
    use std::os::unix::fs::PermissionsExt as _;
    let mut hasher = Sha256::new();
    for rel in files(dir)? {
        let path = dir.join(&rel);
        let bytes = std::fs::read(&path).map_err(io(&path, "reading"))?;
        let mode = std::fs::metadata(&path)
            .map_err(io(&path, "reading"))?
            .permissions()
            .mode();
        let name = rel.to_string_lossy();
        hasher.update((name.len() as u64).to_le_bytes());
        hasher.update(name.as_bytes());
        hasher.update([u8::from(mode & 0o111 != 0)]);
        hasher.update((bytes.len() as u64).to_le_bytes());
        hasher.update(&bytes);
    }
    Ok(format!("sha256:{}", hex::encode(hasher.finalize())))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt as _;

    #[test]
    fn the_hash_sees_every_byte_name_and_executable_bit_and_refuses_links() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path();
        std::fs::create_dir_all(p.join("evals")).unwrap();
        std::fs::write(p.join("manifest.zon"), ".{}").unwrap();
        std::fs::write(p.join("evals/a.json"), "{}").unwrap();
        let first = content_hash(p).unwrap();
        assert!(
            first.starts_with("sha256:") && first.len() == 7 + 64,
            "{first}"
        );
        assert_eq!(content_hash(p).unwrap(), first);
        let changes: [&dyn Fn(); 3] = [
            &|| std::fs::write(p.join("evals/a.json"), "{ }").unwrap(),
            &|| std::fs::rename(p.join("evals/a.json"), p.join("evals/b.json")).unwrap(),
            &|| {
                std::fs::set_permissions(
                    p.join("manifest.zon"),
                    std::fs::Permissions::from_mode(0o755),
                )
                .unwrap()
            },
        ];
        let mut seen = vec![first];
        for change in changes {
            change();
            let now = content_hash(p).unwrap();
            assert!(!seen.contains(&now), "a change left the hash as it was");
            seen.push(now);
        }
        std::os::unix::fs::symlink("/etc/passwd", p.join("evals/link")).unwrap();
        let error = content_hash(p).unwrap_err().to_string();
        assert!(error.contains("only plain files"), "{error}");
    }

    #[test]
    fn the_lock_is_written_sorted_and_read_back() {
        let dir = tempfile::tempdir().unwrap();
        let mut lock = Lock::default();
        for (id, disabled) in [("b", false), ("a", true)] {
            lock.put(Locked {
                id: id.into(),
                source: "../catalog".into(),
                commit: "0".repeat(40),
                hash: format!("sha256:{}", "1".repeat(64)),
                disabled,
            });
        }
        lock.write(dir.path()).unwrap();
        let read = Lock::read(dir.path()).unwrap();
        assert_eq!(read, lock);
        assert_eq!(read.policies[0].id, "a");
        std::fs::write(dir.path().join(LOCK_FILE), ".{ .version = 1, .extra = 1 }").unwrap();
        let error = Lock::read(dir.path()).unwrap_err().to_string();
        assert!(error.contains("chock.lock:1:"), "{error}");
    }
}
