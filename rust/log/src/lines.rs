//! Reading the log's lines: forward across every file (verify, show) and
//! backward from the end (what a writer chains to, the head).

use std::fs::File;
use std::io::{self, Read};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use crate::LogError;
use crate::location::{files_oldest_first, rotated_files};

/// One line as read: its bytes without the newline, and whether it had one.
#[derive(Debug, Clone, Copy)]
pub struct Line<'a> {
    /// Index into the walk's file list.
    pub file: usize,
    /// 1-based line number within that file.
    pub number: u64,
    /// The exact bytes, without the newline.
    pub bytes: &'a [u8],
    /// False for a last line with no newline: a torn write.
    pub complete: bool,
}

/// Reads lines forward across files, oldest file first, through one large
/// buffer: no allocation per line, so verify runs near the speed of hashing.
pub struct Walk {
    files: Vec<PathBuf>,
    /// The open files, each taken when the walk reaches it.
    handles: Vec<Option<File>>,
    next_file: usize,
    reader: Option<(File, usize)>,
    number: u64,
    buf: Vec<u8>,
    start: usize,
    end: usize,
    eof: bool,
}

const WALK_BUFFER: usize = 1 << 20;

impl Walk {
    /// A walk over `files` in the order given. Every file is opened now, so
    /// that a rotation while the walk goes on renames nothing under it; a
    /// file already gone (rotated away since it was listed) is left out.
    pub fn open(files: Vec<PathBuf>) -> Result<Walk, LogError> {
        let mut kept = Vec::new();
        let mut handles = Vec::new();
        for path in files {
            if let Some(file) = crate::open::read(&path)? {
                kept.push(path);
                handles.push(Some(file));
            }
        }
        Ok(Walk {
            files: kept,
            handles,
            next_file: 0,
            reader: None,
            number: 0,
            buf: vec![0; WALK_BUFFER],
            start: 0,
            end: 0,
            eof: true,
        })
    }

    /// Every log file in `dir`, oldest first, opened as of one moment. A
    /// rotation while the folder is listed or the files opened could
    /// otherwise leave a file out, which would look like deleted lines; so
    /// the folder is listed again after the opening, and it is all retried
    /// unless both lists agree and every name still names the file opened
    /// for it.
    pub fn snapshot(dir: &Path) -> Result<Walk, LogError> {
        for _ in 0..8 {
            let walk = Walk::open(files_oldest_first(dir)?)?;
            if walk.files == files_oldest_first(dir)? && walk.still_named() {
                return Ok(walk);
            }
        }
        Walk::open(files_oldest_first(dir)?)
    }

    /// Whether every path still names the file opened for it: false when a
    /// rotation renamed files while they were being opened, which would
    /// leave a gap in the walk that is not in the log.
    fn still_named(&self) -> bool {
        use std::os::unix::fs::MetadataExt;
        self.files.iter().zip(&self.handles).all(|(path, handle)| {
            let (Some(file), Ok(named)) = (handle, std::fs::metadata(path)) else {
                return false;
            };
            file.metadata()
                .is_ok_and(|opened| (opened.dev(), opened.ino()) == (named.dev(), named.ino()))
        })
    }

    /// The files walked, in order.
    pub fn files(&self) -> &[PathBuf] {
        &self.files
    }

    /// The next line, or `None` after the last line of the last file.
    pub fn next_line(&mut self) -> Result<Option<Line<'_>>, LogError> {
        loop {
            let Some((_, file_index)) = self.reader else {
                if !self.open_next()? {
                    return Ok(None);
                }
                continue;
            };
            let pending = self.buf.get(self.start..self.end).unwrap_or_default();
            if let Some(newline) = memchr::memchr(b'\n', pending) {
                let from = self.start;
                self.start += newline + 1;
                self.number += 1;
                return Ok(self.buf.get(from..from + newline).map(|bytes| Line {
                    file: file_index,
                    number: self.number,
                    bytes,
                    complete: true,
                }));
            }
            if self.eof {
                let from = self.start;
                let to = self.end;
                self.reader = None;
                if from == to {
                    continue;
                }
                self.start = to;
                self.number += 1;
                return Ok(self.buf.get(from..to).map(|bytes| Line {
                    file: file_index,
                    number: self.number,
                    bytes,
                    complete: false,
                }));
            }
            self.fill()?;
        }
    }

    /// Moves the unread bytes to the front, grows the buffer for a line longer
    /// than it, and reads more.
    fn fill(&mut self) -> Result<(), LogError> {
        self.buf.copy_within(self.start..self.end, 0);
        self.end -= self.start;
        self.start = 0;
        if self.end == self.buf.len() {
            self.buf.resize(self.buf.len() * 2, 0);
        }
        let Some((file, index)) = self.reader.as_mut() else {
            return Ok(());
        };
        let space = self.buf.get_mut(self.end..).unwrap_or_default();
        let read = read_retrying(file, space).map_err(|source| LogError::Read {
            path: self.files.get(*index).cloned().unwrap_or_default(),
            source,
        })?;
        if read == 0 {
            self.eof = true;
        }
        self.end += read;
        Ok(())
    }

    fn open_next(&mut self) -> Result<bool, LogError> {
        let Some(file) = self.handles.get_mut(self.next_file).and_then(Option::take) else {
            return Ok(false);
        };
        self.reader = Some((file, self.next_file));
        self.next_file += 1;
        self.number = 0;
        self.start = 0;
        self.end = 0;
        self.eof = false;
        Ok(true)
    }
}

fn read_retrying(file: &mut File, buf: &mut [u8]) -> io::Result<usize> {
    loop {
        match file.read(buf) {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            other => return other,
        }
    }
}

/// Whole lines of one file read backward from a given size, newest first.
/// A torn fragment after the last newline is split off first and never
/// yielded as a line.
pub struct RevLines {
    file: File,
    /// File offset of `pending[0]`.
    pos: u64,
    /// Unyielded bytes: whole lines each ending in a newline, the first one
    /// possibly still missing its start.
    pending: Vec<u8>,
    chunk: usize,
}

/// Lines in a log are small; the first read from the end is this big and
/// doubles while a line is longer.
const FIRST_CHUNK: usize = 4096;

/// Where the last newline in `bytes` is. Every append reads the log's tail
/// backward, a few lines long, so this is a plain loop rather than
/// `memchr`: `memchr`'s first call in a process asks the CPU which vector
/// instructions it has (`cpuid`), which a virtual machine traps, and that
/// cost more than the search itself on every `chock exec`.
fn last_newline(bytes: &[u8]) -> Option<usize> {
    bytes.iter().rposition(|&b| b == b'\n')
}

impl RevLines {
    /// Reads the end of the first `size` bytes of `file`; returns the reader
    /// and the torn fragment after the last newline, if the file has one.
    pub fn new(file: File, size: u64) -> io::Result<(RevLines, Option<Vec<u8>>)> {
        let mut lines = RevLines {
            file,
            pos: size,
            pending: Vec::new(),
            chunk: FIRST_CHUNK,
        };
        while !lines.pending.contains(&b'\n') && lines.pos > 0 {
            lines.read_before()?;
        }
        let whole = last_newline(&lines.pending).map_or(0, |i| i + 1);
        let fragment = lines.pending.split_off(whole);
        Ok((lines, (!fragment.is_empty()).then_some(fragment)))
    }

    /// The previous whole line, without its newline.
    pub fn next_line(&mut self) -> io::Result<Option<Vec<u8>>> {
        loop {
            let Some(body_len) = self.pending.len().checked_sub(1) else {
                return Ok(None);
            };
            let body = self.pending.get(..body_len).unwrap_or_default();
            if let Some(newline) = last_newline(body) {
                let line = body.get(newline + 1..).unwrap_or_default().to_vec();
                self.pending.truncate(newline + 1);
                return Ok(Some(line));
            }
            if self.pos == 0 {
                let line = body.to_vec();
                self.pending.clear();
                return Ok(Some(line));
            }
            self.read_before()?;
        }
    }

    fn read_before(&mut self) -> io::Result<()> {
        let take = self.pos.min(self.chunk as u64);
        let from = self.pos - take;
        let mut chunk = vec![0; take as usize];
        self.file.read_exact_at(&mut chunk, from)?;
        chunk.extend_from_slice(&self.pending);
        self.pending = chunk;
        self.pos = from;
        self.chunk = (self.chunk * 2).min(1 << 20);
        Ok(())
    }
}

/// Whole lines of the whole log backward: the current file from a given
/// size, then each rotated file, newest first.
pub struct Backward {
    dir: PathBuf,
    lines: Option<RevLines>,
    rotated: Vec<PathBuf>,
    /// Whether the current file ends in a torn fragment.
    pub torn: bool,
}

impl Backward {
    /// Starts at byte `size` of the open current file in `dir`, or with the
    /// newest rotated file when there is no current file.
    pub fn new(dir: &Path, current: Option<(File, u64)>) -> Result<Backward, LogError> {
        let (lines, torn) = match current {
            Some((file, size)) => {
                let (lines, fragment) =
                    RevLines::new(file, size).map_err(|source| LogError::Read {
                        path: dir.join(crate::location::CURRENT),
                        source,
                    })?;
                (Some(lines), fragment.is_some())
            }
            None => (None, false),
        };
        let mut rotated: Vec<PathBuf> = rotated_files(dir)?.into_iter().map(|(_, p)| p).collect();
        rotated.reverse();
        Ok(Backward {
            dir: dir.to_owned(),
            lines,
            rotated,
            torn,
        })
    }

    /// The previous whole line, stepping into older files as each runs out.
    pub fn next_line(&mut self) -> Result<Option<Vec<u8>>, LogError> {
        loop {
            if let Some(lines) = self.lines.as_mut() {
                let line = lines.next_line().map_err(|source| LogError::Read {
                    path: self.dir.clone(),
                    source,
                })?;
                if line.is_some() {
                    return Ok(line);
                }
                self.lines = None;
            }
            let Some(path) = self.rotated.pop() else {
                return Ok(None);
            };
            // None: rotated away meanwhile by a writer, nothing older to read.
            let Some(file) = crate::open::read(&path)? else {
                return Ok(None);
            };
            let (lines, _fragment) = file
                .metadata()
                .and_then(|meta| RevLines::new(file, meta.len()))
                .map_err(|source| LogError::Read { path, source })?;
            self.lines = Some(lines);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn walk_all(files: Vec<PathBuf>) -> Vec<(usize, u64, Vec<u8>, bool)> {
        let mut walk = Walk::open(files).unwrap();
        let mut out = Vec::new();
        while let Some(line) = walk.next_line().unwrap() {
            out.push((line.file, line.number, line.bytes.to_vec(), line.complete));
        }
        out
    }

    fn rev_all(bytes: &[u8]) -> (Vec<Vec<u8>>, Option<Vec<u8>>) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, bytes).unwrap();
        let (mut lines, fragment) =
            RevLines::new(File::open(&path).unwrap(), bytes.len() as u64).unwrap();
        let mut out = Vec::new();
        while let Some(line) = lines.next_line().unwrap() {
            out.push(line);
        }
        (out, fragment)
    }

    #[test]
    fn walk_numbers_lines_per_file_and_marks_a_torn_end() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("a");
        let b = dir.path().join("b");
        std::fs::write(&a, "one\ntwo\nfrag").unwrap();
        std::fs::write(&b, "\nthree\n").unwrap();
        let lines = walk_all(vec![a, b]);
        let expected: Vec<(usize, u64, Vec<u8>, bool)> = vec![
            (0, 1, b"one".to_vec(), true),
            (0, 2, b"two".to_vec(), true),
            (0, 3, b"frag".to_vec(), false),
            (1, 1, b"".to_vec(), true),
            (1, 2, b"three".to_vec(), true),
        ];
        assert_eq!(lines, expected);
    }

    #[test]
    fn walk_handles_lines_longer_than_its_buffer() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("a");
        let long = "x".repeat(WALK_BUFFER * 2 + 17);
        std::fs::write(&a, format!("s\n{long}\nt")).unwrap();
        let lines = walk_all(vec![a]);
        assert_eq!(lines.len(), 3);
        assert_eq!(lines[1].2.len(), long.len());
        assert_eq!(lines[2].2, b"t");
    }

    #[test]
    fn rev_lines_split_off_the_fragment() {
        let (lines, fragment) = rev_all(b"a\nbb\nccc");
        assert_eq!(lines, vec![b"bb".to_vec(), b"a".to_vec()]);
        assert_eq!(fragment, Some(b"ccc".to_vec()));
        let (lines, fragment) = rev_all(b"only fragment");
        assert!(lines.is_empty());
        assert_eq!(fragment, Some(b"only fragment".to_vec()));
        let (lines, fragment) = rev_all(b"");
        assert!(lines.is_empty() && fragment.is_none());
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]

        #[test]
        fn backward_reading_mirrors_forward_reading(
            lines in proptest::collection::vec("[a-z\\[\\]{}\"]{0,5000}", 0..5),
            tail in "[a-z]{0,20}",
        ) {
            let mut bytes = Vec::new();
            for line in &lines {
                bytes.extend_from_slice(line.as_bytes());
                bytes.push(b'\n');
            }
            bytes.extend_from_slice(tail.as_bytes());
            let (mut back, fragment) = rev_all(&bytes);
            back.reverse();
            let expected: Vec<Vec<u8>> = lines.iter().map(|l| l.as_bytes().to_vec()).collect();
            prop_assert_eq!(back, expected);
            prop_assert_eq!(fragment, (!tail.is_empty()).then(|| tail.as_bytes().to_vec()));
        }
    }
}
