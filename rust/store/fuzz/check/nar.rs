//! The check the `nar` fuzz target runs on each input, shared with the
//! crate's `no_panic` test, which feeds it the corpus kept in the
//! repository: the NAR reader never panics on any bytes, never reads past
//! the archive, and every path it hands out stays beneath the root (no
//! empty, `.` or `..` component, no `/` or NUL inside a name), since
//! `restore` turns those paths into files.

use std::io::{self, Read};

use chock_store::nar::{NarLimits, NarReader, NarVisitor};

struct Paths;

fn check_path(path: &[u8]) -> io::Result<()> {
    if path.is_empty() {
        return Ok(());
    }
    for name in path.split(|b| *b == b'/') {
        assert!(
            !name.is_empty() && name != b"." && name != b".." && !name.contains(&0),
            "the reader handed out a path that leaves the root: {:?}",
            String::from_utf8_lossy(path)
        );
    }
    Ok(())
}

impl NarVisitor for Paths {
    fn directory(&mut self, path: &[u8]) -> io::Result<()> {
        check_path(path)
    }
    fn file(&mut self, path: &[u8], _: bool, size: u64, contents: &mut dyn Read) -> io::Result<()> {
        check_path(path)?;
        let read = io::copy(contents, &mut io::sink())?;
        assert_eq!(
            read, size,
            "a file's contents are not the size the archive gave"
        );
        Ok(())
    }
    fn symlink(&mut self, path: &[u8], _: &[u8]) -> io::Result<()> {
        check_path(path)
    }
}

/// Reads `bytes` as a NAR; panics only when the reader breaks a promise.
pub fn read_nar(bytes: &[u8]) {
    let limits = NarLimits {
        max_depth: 64,
        ..NarLimits::default()
    };
    if let Ok(info) = NarReader::new(bytes).with_limits(limits).parse(&mut Paths) {
        assert!(
            info.nar_size <= bytes.len() as u64,
            "the reader claims {} bytes of a {}-byte input",
            info.nar_size,
            bytes.len()
        );
    }
}
