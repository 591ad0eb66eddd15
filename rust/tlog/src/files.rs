//! Files Chock's heads are kept in: written whole or not at all, never
//! through a symbolic link, private keys readable by their owner alone.

use std::fs::{File, OpenOptions};
use std::io::{self, Read, Write};
use std::os::fd::AsFd as _;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::Path;

/// Options that open no symbolic link and never wait on a FIFO or a device.
fn no_follow() -> OpenOptions {
    let mut options = OpenOptions::new();
    options.custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_NOCTTY | libc::O_CLOEXEC);
    options
}

/// `file`, if what was opened at `path` is a regular file.
fn regular(file: File) -> io::Result<File> {
    if file.metadata()?.is_file() {
        Ok(file)
    } else {
        Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "not a regular file",
        ))
    }
}

/// Makes `dir` and its parents, new ones 0700.
pub fn make_private_dir(dir: &Path) -> io::Result<()> {
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
}

/// Writes a new private file: O_EXCL (an existing one is never replaced),
/// O_NOFOLLOW, 0600, in a folder made 0700.
pub fn create_private(path: &Path, bytes: &[u8]) -> io::Result<()> {
    if let Some(dir) = path.parent() {
        make_private_dir(dir)?;
    }
    let mut file = no_follow()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)?;
    file.write_all(bytes)?;
    file.sync_all()
}

/// Takes the exclusive lock of the file `path` (made 0600 if missing),
/// waiting for it; held until the returned file is dropped.
pub fn lock(path: &Path) -> io::Result<File> {
    let file = no_follow()
        .create(true)
        .truncate(false)
        .write(true)
        .mode(0o600)
        .open(path)
        .and_then(regular)?;
    rustix::fs::flock(file.as_fd(), rustix::fs::FlockOperation::LockExclusive)?;
    Ok(file)
}

/// The file's bytes, `None` when there is no file; over `max` bytes is an error.
pub fn read_bounded(path: &Path, max: usize) -> io::Result<Option<Vec<u8>>> {
    let file = match no_follow().read(true).open(path).and_then(regular) {
        Ok(file) => file,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    let mut bytes = Vec::new();
    file.take(max as u64 + 1).read_to_end(&mut bytes)?;
    if bytes.len() > max {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("over {max} bytes"),
        ));
    }
    Ok(Some(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn a_private_file_is_new_0600_and_never_through_a_link() {
        let dir = tempfile::tempdir().unwrap();
        let key = dir.path().join("keys/k");
        create_private(&key, b"secret").unwrap();
        let mode = std::fs::metadata(&key).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        assert!(create_private(&key, b"again").is_err());
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&key, &link).unwrap();
        assert!(read_bounded(&link, 100).is_err());
        assert_eq!(read_bounded(&key, 100).unwrap().unwrap(), b"secret");
        assert!(read_bounded(&key, 3).is_err());
        assert!(read_bounded(&dir.path().join("none"), 3).unwrap().is_none());
        let fifo = dir.path().join("fifo");
        assert!(
            std::process::Command::new("mkfifo")
                .arg(&fifo)
                .status()
                .unwrap()
                .success()
        );
        assert!(
            read_bounded(&fifo, 3).is_err(),
            "a FIFO is refused, never waited on"
        );
        assert!(lock(&fifo).is_err());
        assert!(read_bounded(dir.path(), 3).is_err(), "a folder is refused");
    }
}
