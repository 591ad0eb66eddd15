//! The credential store: one file per provider instance under
//! `$XDG_DATA_HOME/chock/credentials/` (else `~/.local/share/...`), the
//! folder mode 0700 and each file 0600, written whole or not at all (a
//! temporary file in the same folder, synced, then renamed over the old).
//! A file that others may read is refused rather than used. And where a
//! provider's key comes from: the store, a secret, or a variable.

use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use chock_policy::{KeySource, Policy, ProviderInstance};

use crate::error::ProviderError;

/// The longest key stored or read.
pub const MAX_KEY_BYTES: usize = 16 << 10;

/// The credential store in one folder.
#[derive(Debug, Clone)]
pub struct Credentials {
    dir: PathBuf,
}

impl Credentials {
    /// The store in `dir` (which need not exist yet).
    pub fn at(dir: impl Into<PathBuf>) -> Credentials {
        Credentials { dir: dir.into() }
    }

    /// The store where the environment says: `$XDG_DATA_HOME/chock/credentials`,
    /// else `$HOME/.local/share/chock/credentials`.
    pub fn from_env() -> Result<Credentials, ProviderError> {
        let var = |name: &str| {
            std::env::var_os(name)
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
        };
        let data = var("XDG_DATA_HOME")
            .or_else(|| var("HOME").map(|h| h.join(".local/share")))
            .ok_or(ProviderError::NoDataDir)?;
        Ok(Credentials::at(data.join("chock/credentials")))
    }

    /// The folder.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn file(&self, instance: &str) -> Result<PathBuf, ProviderError> {
        chock_policy::names::provider(instance)
            .map_err(|e| ProviderError::Name(instance.to_owned(), e))?;
        Ok(self.dir.join(instance))
    }

    fn error(&self, path: &Path, why: impl std::fmt::Display) -> ProviderError {
        ProviderError::Store {
            path: path.to_path_buf(),
            why: why.to_string(),
        }
    }

    /// Stores `key` for `instance`, replacing any stored before; the file written.
    pub fn store(&self, instance: &str, key: &str) -> Result<PathBuf, ProviderError> {
        let path = self.file(instance)?;
        let key = check_key(key).map_err(|why| ProviderError::Key {
            instance: instance.to_owned(),
            why: why.to_string(),
        })?;
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&self.dir)
            .map_err(|e| self.error(&self.dir, format!("cannot be made: {e}")))?;
        let meta = std::fs::symlink_metadata(&self.dir)
            .map_err(|e| self.error(&self.dir, format!("cannot be read: {e}")))?;
        if !meta.is_dir() || meta.mode() & 0o077 != 0 {
            return Err(self.error(
                &self.dir,
                "is not a folder only its owner can open; run `chmod 700` on it (or remove it to have it made again)",
            ));
        }
        // A temporary file is made with mode 0600.
        let mut file = tempfile::NamedTempFile::new_in(&self.dir)
            .map_err(|e| self.error(&self.dir, format!("cannot be written: {e}")))?;
        file.write_all(key.as_bytes())
            .and_then(|()| file.write_all(b"\n"))
            .and_then(|()| file.as_file().sync_all())
            .map_err(|e| self.error(&path, format!("cannot be written: {e}")))?;
        file.as_file()
            .set_permissions(std::fs::Permissions::from_mode(0o600))
            .map_err(|e| self.error(&path, format!("cannot be made private: {e}")))?;
        file.persist(&path)
            .map_err(|e| self.error(&path, format!("cannot be written: {}", e.error)))?;
        if let Ok(dir) = std::fs::File::open(&self.dir) {
            dir.sync_all().ok();
        }
        Ok(path)
    }

    /// The key stored for `instance`, if one is.
    pub fn read(&self, instance: &str) -> Result<Option<String>, ProviderError> {
        let path = self.file(instance)?;
        let meta = match std::fs::symlink_metadata(&path) {
            Ok(meta) => meta,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(self.error(&path, format!("cannot be read: {e}"))),
        };
        if !meta.is_file() {
            return Err(self.error(
                &path,
                "is not a plain file; remove it and run `chock login` again",
            ));
        }
        if meta.mode() & 0o077 != 0 {
            return Err(self.error(
                &path,
                format!(
                    "may be read by others (mode {:o}); run `chmod 600` on it, or `chock login {instance}` again",
                    meta.mode() & 0o777
                ),
            ));
        }
        if meta.len() > MAX_KEY_BYTES as u64 + 2 {
            return Err(self.error(&path, format!("is longer than {MAX_KEY_BYTES} bytes")));
        }
        let text = std::fs::read_to_string(&path)
            .map_err(|e| self.error(&path, format!("cannot be read as text: {e}")))?;
        let key = check_key(&text).map_err(|why| self.error(&path, why))?;
        Ok(Some(key.to_owned()))
    }

    /// Removes the key stored for `instance`; whether there was one.
    pub fn remove(&self, instance: &str) -> Result<bool, ProviderError> {
        let path = self.file(instance)?;
        match std::fs::remove_file(&path) {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(self.error(&path, format!("cannot be removed: {e}"))),
        }
    }

    /// The instances a key is stored for, sorted.
    pub fn list(&self) -> Result<Vec<String>, ProviderError> {
        let entries = match std::fs::read_dir(&self.dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(self.error(&self.dir, format!("cannot be read: {e}"))),
        };
        let mut names: Vec<String> = entries
            .filter_map(Result::ok)
            .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
            .filter_map(|e| e.file_name().into_string().ok())
            .filter(|n| chock_policy::names::provider(n).is_ok() && !n.starts_with('.'))
            .collect();
        names.sort();
        Ok(names)
    }
}

/// Why a text is not a key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
enum BadKey {
    #[error("the key is empty")]
    Empty,
    #[error("the key is longer than {MAX_KEY_BYTES} bytes")]
    TooLong,
    #[error("the key holds a control character or more than one line; paste the key alone")]
    Control,
}

/// A key as typed or stored: one line, trimmed; not empty, no control
/// characters, not too long.
fn check_key(text: &str) -> Result<&str, BadKey> {
    let key = text.trim();
    if key.is_empty() {
        return Err(BadKey::Empty);
    }
    if key.len() > MAX_KEY_BYTES {
        return Err(BadKey::TooLong);
    }
    if key.chars().any(char::is_control) {
        return Err(BadKey::Control);
    }
    Ok(key)
}

/// The key `instance` is sent with, from where `config.zon` says it is kept;
/// `None` for `.key = .none`. A key that should be there and is not is an
/// error saying where to put it.
pub fn key_for(
    policy: &Policy,
    instance: &ProviderInstance,
    credentials: &Credentials,
) -> Result<Option<String>, ProviderError> {
    let name = &instance.name;
    let bad = |why: String| ProviderError::Key {
        instance: name.clone(),
        why,
    };
    let key = match &instance.key {
        KeySource::None => return Ok(None),
        KeySource::Login => credentials.read(name)?.ok_or_else(|| {
            bad(format!(
                "no key is stored for it in {}: run `chock login {name}`",
                credentials.dir().display()
            ))
        })?,
        KeySource::Env(var) => std::env::var(var).map_err(|_| {
            bad(format!(
                "its key is kept in the environment variable {var}, which is not set (or not UTF-8) where Chock was started"
            ))
        })?,
        KeySource::Secret(secret) => policy
            .config().read_secret(secret)
            .map_err(|why| bad(why.to_string()))?,
    };
    check_key(&key)
        .map(|k| Some(k.to_owned()))
        .map_err(|why| bad(why.to_string()))
}
