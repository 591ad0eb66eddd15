//! The notes agents keep about a project between sessions: one text file
//! per project in Chock's data directory (never in the project, so it is
//! neither committed nor seen by the sandbox), at most [`MEMORY_BYTES`],
//! replaced atomically. `read_memory` and `write_memory` are decided at
//! `call.read_memory` and `call.write_memory`; `chock memory` shows or
//! clears it.

use std::io::Read;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use chock_sandbox::project::{Project, ProjectError};

/// The most bytes the notes hold.
pub const MEMORY_BYTES: usize = 64 << 10;
/// The notes' file name in the project's memory directory.
const NOTES: &str = "notes.md";

/// Why the notes cannot be read, written or cleared.
#[derive(Debug, thiserror::Error)]
pub enum MemoryError {
    /// There is no data directory to keep them in.
    #[error(transparent)]
    NoPlace(#[from] ProjectError),
    /// The file or its folder could not be read or written.
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    /// The file holds more than the notes may.
    #[error(
        "{} is over the {MEMORY_BYTES}-byte bound of the notes; clear it with `chock memory clear`",
        .0.display()
    )]
    Over(PathBuf),
    /// The file is not text.
    #[error("{} is not UTF-8 text; clear it with `chock memory clear`", .0.display())]
    NotText(PathBuf),
    /// What an agent would write is more than the notes may hold.
    #[error(
        "the notes would be {0} bytes, over their {MEMORY_BYTES}-byte bound; keep what matters"
    )]
    WouldBeOver(usize),
}

impl MemoryError {
    fn io(path: &Path) -> impl FnOnce(std::io::Error) -> MemoryError + '_ {
        move |source| MemoryError::Io {
            path: path.to_path_buf(),
            source,
        }
    }
}

/// One project's notes.
pub struct Memory {
    dir: PathBuf,
}

impl Memory {
    /// The notes of `project`.
    pub fn of(project: &Project) -> Result<Memory, MemoryError> {
        let dir = project.memory_dir()?;
        Ok(Memory { dir })
    }

    /// The file that holds them.
    pub fn file(&self) -> PathBuf {
        self.dir.join(NOTES)
    }

    /// The notes; `None` when there are none. A file over the bound, or a
    /// link, is refused rather than read.
    pub fn read(&self) -> Result<Option<String>, MemoryError> {
        let file = self.file();
        let opened = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(nix::libc::O_NOFOLLOW)
            .open(&file);
        let mut opened = match opened {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(MemoryError::io(&file)(e)),
        };
        let mut bytes = Vec::new();
        (&mut opened)
            .take(MEMORY_BYTES as u64 + 1)
            .read_to_end(&mut bytes)
            .map_err(MemoryError::io(&file))?;
        if bytes.len() > MEMORY_BYTES {
            return Err(MemoryError::Over(file));
        }
        String::from_utf8(bytes)
            .map(Some)
            .map_err(|_| MemoryError::NotText(file))
    }

    /// Replaces the notes with `text`, atomically: a new file beside the
    /// old, synced, then renamed over it, so a reader sees the old notes
    /// or the new, never part of either.
    pub fn write(&self, text: &str) -> Result<(), MemoryError> {
        if text.len() > MEMORY_BYTES {
            return Err(MemoryError::WouldBeOver(text.len()));
        }
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&self.dir)
            .map_err(MemoryError::io(&self.dir))?;
        chock_files::replace(&self.file(), text.as_bytes(), chock_files::Access::Private)
            .map_err(MemoryError::io(&self.file()))
    }

    /// Removes the notes; whether there were any.
    pub fn clear(&self) -> Result<bool, MemoryError> {
        let file = self.file();
        match std::fs::remove_file(&file) {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(MemoryError::io(&file)(e)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notes_are_written_whole_read_back_bounded_and_cleared() {
        let dir = tempfile::tempdir().expect("tempdir");
        let memory = Memory {
            dir: dir.path().join("memory/p-1"),
        };
        assert_eq!(memory.read().ok(), Some(None));
        memory.write("one\n").expect("write");
        memory.write("two\n").expect("write again");
        assert_eq!(memory.read().ok(), Some(Some("two\n".into())));
        let over = "x".repeat(MEMORY_BYTES + 1);
        let refused = memory.write(&over).unwrap_err();
        assert!(matches!(refused, MemoryError::WouldBeOver(_)), "{refused}");
        assert!(refused.to_string().contains("bound"), "{refused}");
        assert_eq!(
            memory.read().ok(),
            Some(Some("two\n".into())),
            "a refused write leaves the notes"
        );
        let names: Vec<_> = std::fs::read_dir(&memory.dir)
            .expect("dir")
            .map(|e| e.expect("entry").file_name())
            .collect();
        assert_eq!(names, ["notes.md"], "no temporary file is left");
        assert_eq!(memory.clear().ok(), Some(true));
        assert_eq!(memory.clear().ok(), Some(false));
    }
}
