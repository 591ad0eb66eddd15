//! Opening the log's own files (the current and rotated logs, the lock and
//! the queue): regular files only. A FIFO in place of `decisions.jsonl`
//! would make a reader wait for a writer that never comes and swallow an
//! appended line; a device or a socket is no better. Every file is opened
//! with `O_NONBLOCK` (opening a FIFO does not wait), `O_NOFOLLOW` (a link
//! is not followed to one) and `O_NOCTTY`, and its type is checked on the
//! descriptor opened, so nothing is decided on a path looked up twice.

use std::fs::{File, FileType, OpenOptions};
use std::io;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use crate::LogError;

/// Why one of the log's files could not be opened.
#[derive(Debug)]
pub(crate) enum OpenError {
    /// The open itself failed.
    Io(io::Error),
    /// The name is something other than a regular file: what it is.
    NotRegular(&'static str),
}

impl OpenError {
    /// Whether nothing is there by that name.
    pub(crate) fn is_missing(&self) -> bool {
        matches!(self, OpenError::Io(e) if e.kind() == io::ErrorKind::NotFound)
    }

    /// The error to report for `path`; `io` makes the one for a failed open.
    pub(crate) fn at(
        self,
        path: &Path,
        io: impl FnOnce(PathBuf, io::Error) -> LogError,
    ) -> LogError {
        match self {
            OpenError::Io(source) => io(path.to_owned(), source),
            OpenError::NotRegular(what) => LogError::NotRegular {
                path: path.to_owned(),
                what,
            },
        }
    }
}

/// Opens `path` through `options` with the flags above and returns it only
/// when the descriptor is a regular file.
pub(crate) fn regular(path: &Path, options: &mut OpenOptions) -> Result<File, OpenError> {
    let file = options
        .custom_flags(libc::O_NONBLOCK | libc::O_NOFOLLOW | libc::O_NOCTTY)
        .open(path)
        .map_err(|e| match e.raw_os_error() {
            // O_NOFOLLOW on a link, a folder opened for writing, a socket or
            // a FIFO with no reader opened for writing alone.
            Some(libc::ELOOP) => OpenError::NotRegular("a symbolic link"),
            Some(libc::EISDIR) => OpenError::NotRegular("a folder"),
            Some(libc::ENXIO) => OpenError::NotRegular(
                std::fs::symlink_metadata(path)
                    .map_or("not a regular file", |m| what(m.file_type())),
            ),
            _ => OpenError::Io(e),
        })?;
    let kind = file.metadata().map_err(OpenError::Io)?.file_type();
    if !kind.is_file() {
        return Err(OpenError::NotRegular(what(kind)));
    }
    // O_NONBLOCK changes nothing for a regular file: reads and writes of
    // one never wait for a peer.
    Ok(file)
}

/// Opens `path` for reading; `Ok(None)` when nothing is there.
pub(crate) fn read(path: &Path) -> Result<Option<File>, LogError> {
    match regular(path, OpenOptions::new().read(true)) {
        Ok(file) => Ok(Some(file)),
        Err(e) if e.is_missing() => Ok(None),
        Err(e) => Err(e.at(path, |path, source| LogError::Read { path, source })),
    }
}

/// What a file type is, in words.
fn what(kind: FileType) -> &'static str {
    if kind.is_fifo() {
        "a FIFO (named pipe)"
    } else if kind.is_char_device() {
        "a character device"
    } else if kind.is_block_device() {
        "a block device"
    } else if kind.is_socket() {
        "a socket"
    } else if kind.is_dir() {
        "a folder"
    } else if kind.is_symlink() {
        "a symbolic link"
    } else {
        "not a regular file"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mkfifo(path: &Path) {
        let status = std::process::Command::new("mkfifo")
            .arg(path)
            .status()
            .unwrap();
        assert!(status.success());
    }

    #[test]
    fn a_fifo_a_device_a_link_and_a_folder_are_refused_without_waiting() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        mkfifo(&fifo);
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&fifo, &link).unwrap();
        let started = std::time::Instant::now();
        for (path, expected) in [
            (fifo.as_path(), "a FIFO (named pipe)"),
            (Path::new("/dev/null"), "a character device"),
            (link.as_path(), "a symbolic link"),
            (dir.path(), "a folder"),
        ] {
            for options in [
                OpenOptions::new().read(true),
                OpenOptions::new().read(true).append(true),
                OpenOptions::new().append(true),
            ] {
                match regular(path, options) {
                    Err(OpenError::NotRegular(what)) => assert_eq!(what, expected, "{path:?}"),
                    other => panic!("{path:?}: {other:?}"),
                }
            }
        }
        assert!(started.elapsed() < std::time::Duration::from_secs(2));
        let plain = dir.path().join("plain");
        std::fs::write(&plain, "x").unwrap();
        assert!(regular(&plain, OpenOptions::new().read(true)).is_ok());
        assert!(read(&dir.path().join("absent")).unwrap().is_none());
    }
}
