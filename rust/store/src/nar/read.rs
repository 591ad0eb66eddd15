//! A streaming NAR parser that refuses malformed archives.
//!
//! Strings are read only up to fixed limits; file contents are never
//! buffered whole but handed to the visitor as a bounded reader, so a length
//! field of 2^63 costs nothing but an error when the stream ends early.

use std::fs;
use std::io::{self, Read, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use super::write::{NarInfo, padding};
use super::{MAGIC, NarError};
use crate::hash::{HashAlgo, Hasher};

/// Bounds that keep a hostile archive from costing memory or stack.
#[derive(Debug, Clone, Copy)]
pub struct NarLimits {
    /// Longest entry name (Linux's NAME_MAX).
    pub max_name: u64,
    /// Longest symlink target (PATH_MAX less the NUL).
    pub max_target: u64,
    /// Largest single file.
    pub max_file: u64,
    /// Deepest directory nesting.
    pub max_depth: usize,
}

impl Default for NarLimits {
    fn default() -> NarLimits {
        NarLimits {
            max_name: 255,
            max_target: 4095,
            max_file: u64::MAX,
            max_depth: 2048,
        }
    }
}

/// Receives the nodes of a NAR in order. Paths are relative to the root,
/// `/`-separated, and empty for the root itself.
pub trait NarVisitor {
    fn directory(&mut self, path: &[u8]) -> io::Result<()>;
    /// `contents` yields exactly `size` bytes unless the stream fails; what
    /// the visitor leaves unread is skipped.
    fn file(
        &mut self,
        path: &[u8],
        executable: bool,
        size: u64,
        contents: &mut dyn Read,
    ) -> io::Result<()>;
    fn symlink(&mut self, path: &[u8], target: &[u8]) -> io::Result<()>;
}

/// Reads one NAR from a byte stream, never past its end.
pub struct NarReader<R> {
    input: R,
    offset: u64,
    limits: NarLimits,
    hasher: Option<Hasher>,
}

/// The longest fixed token a NAR holds (`nix-archive-1`), with room to spare.
const MAX_TOKEN: u64 = 16;

struct Frame {
    path: Vec<u8>,
    previous: Option<Vec<u8>>,
    in_entry: bool,
}

impl<R: Read> NarReader<R> {
    pub fn new(input: R) -> NarReader<R> {
        NarReader {
            input,
            offset: 0,
            limits: NarLimits::default(),
            hasher: None,
        }
    }

    pub fn with_limits(mut self, limits: NarLimits) -> NarReader<R> {
        self.limits = limits;
        self
    }

    /// Parses the whole archive, handing each node to `visitor`, and
    /// returns its SHA-256 and size.
    pub fn parse(mut self, visitor: &mut dyn NarVisitor) -> Result<NarInfo, NarError> {
        self.hasher = Some(Hasher::new(HashAlgo::Sha256));
        self.expect(MAGIC)?;
        let mut stack: Vec<Frame> = Vec::new();
        let mut path: Vec<u8> = Vec::new();
        'nodes: loop {
            if self.parse_node(&path, visitor)? {
                if stack.len() >= self.limits.max_depth {
                    return Err(NarError::TooDeep {
                        offset: self.offset,
                        limit: self.limits.max_depth,
                    });
                }
                stack.push(Frame {
                    path: std::mem::take(&mut path),
                    previous: None,
                    in_entry: false,
                });
            }
            loop {
                let Some(frame) = stack.last_mut() else {
                    break 'nodes;
                };
                if frame.in_entry {
                    frame.in_entry = false;
                    self.expect(")")?;
                }
                let token = self.read_token("entry or )")?;
                if token == b")" {
                    stack.pop();
                    continue;
                }
                if token != b"entry" {
                    return Err(self.unexpected("entry or )", &token));
                }
                self.expect("(")?;
                self.expect("name")?;
                let name_at = self.offset;
                let name = self.read_string("entry name", self.limits.max_name)?;
                check_name(&name, name_at)?;
                let Some(frame) = stack.last_mut() else {
                    break 'nodes;
                };
                if let Some(previous) = &frame.previous
                    && name.as_slice() <= previous.as_slice()
                {
                    return Err(NarError::Unsorted {
                        offset: name_at,
                        name: String::from_utf8_lossy(&name).into_owned(),
                        previous: String::from_utf8_lossy(previous).into_owned(),
                    });
                }
                path = frame.path.clone();
                if !path.is_empty() {
                    path.push(b'/');
                }
                path.extend_from_slice(&name);
                frame.previous = Some(name);
                frame.in_entry = true;
                self.expect("node")?;
                continue 'nodes;
            }
        }
        let nar_hash = self.hasher.take().map(Hasher::finish);
        Ok(NarInfo {
            nar_hash: nar_hash.unwrap_or_else(|| crate::hash::Hash::sha256([])),
            nar_size: self.offset,
        })
    }

    /// One node up to its closing `)`, except a directory, whose entries the
    /// caller reads: returns whether it was a directory.
    fn parse_node(&mut self, path: &[u8], visitor: &mut dyn NarVisitor) -> Result<bool, NarError> {
        self.expect("(")?;
        self.expect("type")?;
        let kind = self.read_token("regular, symlink or directory")?;
        match kind.as_slice() {
            b"regular" => {
                let mut token = self.read_token("executable or contents")?;
                let executable = token == b"executable";
                if executable {
                    self.expect("")?;
                    token = self.read_token("contents")?;
                }
                if token != b"contents" {
                    return Err(self.unexpected("contents", &token));
                }
                let size = self.read_u64()?;
                if size > self.limits.max_file {
                    return Err(NarError::TooLong {
                        offset: self.offset,
                        what: "file",
                        len: size,
                        limit: self.limits.max_file,
                    });
                }
                self.stream_contents(path, executable, size, visitor)?;
                self.read_padding(size)?;
                self.expect(")")?;
                Ok(false)
            }
            b"symlink" => {
                self.expect("target")?;
                let target = self.read_string("symlink target", self.limits.max_target)?;
                if target.is_empty() || target.contains(&0) {
                    return Err(self.unexpected("a non-empty symlink target without NUL", &target));
                }
                visitor
                    .symlink(path, &target)
                    .map_err(|source| self.stream_error(source))?;
                self.expect(")")?;
                Ok(false)
            }
            b"directory" => {
                visitor
                    .directory(path)
                    .map_err(|source| self.stream_error(source))?;
                Ok(true)
            }
            _ => Err(self.unexpected("regular, symlink or directory", &kind)),
        }
    }

    fn stream_contents(
        &mut self,
        path: &[u8],
        executable: bool,
        size: u64,
        visitor: &mut dyn NarVisitor,
    ) -> Result<(), NarError> {
        let start = self.offset;
        let mut contents = Contents {
            reader: self,
            remaining: size,
        };
        let result = visitor.file(path, executable, size, &mut contents);
        // Skip whatever the visitor left, so the stream stays in step.
        let drained = io::copy(&mut contents, &mut io::sink());
        let remaining = contents.remaining;
        match (result, drained) {
            (Err(e), _) | (_, Err(e)) if e.kind() == io::ErrorKind::UnexpectedEof => {
                Err(NarError::Truncated {
                    offset: self.offset,
                })
            }
            (Err(source), _) | (_, Err(source)) => Err(NarError::Stream {
                offset: start,
                source,
            }),
            _ if remaining > 0 => Err(NarError::Truncated {
                offset: self.offset,
            }),
            _ => Ok(()),
        }
    }

    fn stream_error(&self, source: io::Error) -> NarError {
        NarError::Stream {
            offset: self.offset,
            source,
        }
    }

    fn unexpected(&self, expected: &'static str, found: &[u8]) -> NarError {
        NarError::Unexpected {
            offset: self.offset,
            expected,
            found: String::from_utf8_lossy(&found[..found.len().min(64)]).into_owned(),
        }
    }

    fn read_exact(&mut self, buf: &mut [u8]) -> Result<(), NarError> {
        self.input.read_exact(buf).map_err(|e| {
            if e.kind() == io::ErrorKind::UnexpectedEof {
                NarError::Truncated {
                    offset: self.offset,
                }
            } else {
                NarError::Stream {
                    offset: self.offset,
                    source: e,
                }
            }
        })?;
        if let Some(h) = &mut self.hasher {
            h.update(buf);
        }
        self.offset += buf.len() as u64;
        Ok(())
    }

    fn read_u64(&mut self) -> Result<u64, NarError> {
        let mut b = [0u8; 8];
        self.read_exact(&mut b)?;
        Ok(u64::from_le_bytes(b))
    }

    fn read_padding(&mut self, len: u64) -> Result<(), NarError> {
        let mut pad = [0u8; 8];
        let n = padding(len);
        self.read_exact(&mut pad[..n])?;
        if pad.iter().any(|&b| b != 0) {
            return Err(NarError::BadPadding {
                offset: self.offset,
            });
        }
        Ok(())
    }

    fn read_string(&mut self, what: &'static str, limit: u64) -> Result<Vec<u8>, NarError> {
        let len = self.read_u64()?;
        if len > limit {
            return Err(NarError::TooLong {
                offset: self.offset,
                what,
                len,
                limit,
            });
        }
        let mut buf = vec![0u8; len as usize];
        self.read_exact(&mut buf)?;
        self.read_padding(len)?;
        Ok(buf)
    }

    fn read_token(&mut self, expected: &'static str) -> Result<Vec<u8>, NarError> {
        let at = self.offset;
        self.read_string(expected, MAX_TOKEN).map_err(|e| match e {
            NarError::TooLong { len, .. } => NarError::Unexpected {
                offset: at,
                expected,
                found: format!("a string of {len} bytes"),
            },
            other => other,
        })
    }

    fn expect(&mut self, token: &'static str) -> Result<(), NarError> {
        let found = self.read_token(token)?;
        if found != token.as_bytes() {
            return Err(self.unexpected(token, &found));
        }
        Ok(())
    }
}

/// The bytes of one file, read straight from the archive.
struct Contents<'a, R> {
    reader: &'a mut NarReader<R>,
    remaining: u64,
}

impl<R: Read> Read for Contents<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.remaining == 0 || buf.is_empty() {
            return Ok(0);
        }
        let want = buf
            .len()
            .min(usize::try_from(self.remaining).unwrap_or(usize::MAX));
        let n = self.reader.input.read(&mut buf[..want])?;
        if n == 0 {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        if let Some(h) = &mut self.reader.hasher {
            h.update(&buf[..n]);
        }
        self.reader.offset += n as u64;
        self.remaining -= n as u64;
        Ok(n)
    }
}

fn check_name(name: &[u8], offset: u64) -> Result<(), NarError> {
    if name.is_empty() || name == b"." || name == b".." || name.contains(&b'/') || name.contains(&0)
    {
        return Err(NarError::BadName {
            offset,
            name: String::from_utf8_lossy(name).into_owned(),
        });
    }
    Ok(())
}

/// Checks that `input` holds one well-formed NAR and returns its hash and size.
pub fn validate(input: impl Read) -> Result<NarInfo, NarError> {
    struct Nothing;
    impl NarVisitor for Nothing {
        fn directory(&mut self, _: &[u8]) -> io::Result<()> {
            Ok(())
        }
        fn file(&mut self, _: &[u8], _: bool, _: u64, _: &mut dyn Read) -> io::Result<()> {
            Ok(())
        }
        fn symlink(&mut self, _: &[u8], _: &[u8]) -> io::Result<()> {
            Ok(())
        }
    }
    NarReader::new(input).parse(&mut Nothing)
}

/// Unpacks a NAR at `destination`, which must not exist yet.
pub fn restore(input: impl Read, destination: &Path) -> Result<NarInfo, NarError> {
    if fs::symlink_metadata(destination).is_ok() {
        return Err(NarError::DestinationExists {
            path: destination.display().to_string(),
        });
    }
    let mut restorer = Restorer {
        root: destination.to_owned(),
    };
    NarReader::new(input).parse(&mut restorer)
}

struct Restorer {
    root: PathBuf,
}

impl Restorer {
    /// Names were checked by the reader (no `/`, `.`, `..`), so joining
    /// cannot leave the destination.
    fn target(&self, path: &[u8]) -> PathBuf {
        if path.is_empty() {
            self.root.clone()
        } else {
            self.root.join(std::ffi::OsStr::from_bytes(path))
        }
    }
}

impl NarVisitor for Restorer {
    fn directory(&mut self, path: &[u8]) -> io::Result<()> {
        fs::create_dir(self.target(path))
    }

    fn file(
        &mut self,
        path: &[u8],
        executable: bool,
        _size: u64,
        contents: &mut dyn Read,
    ) -> io::Result<()> {
        let mut file = fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(if executable { 0o755 } else { 0o644 })
            .open(self.target(path))?;
        io::copy(contents, &mut file)?;
        file.flush()
    }

    fn symlink(&mut self, path: &[u8], target: &[u8]) -> io::Result<()> {
        std::os::unix::fs::symlink(std::ffi::OsStr::from_bytes(target), self.target(path))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nar::write::{hash_path, write_path};
    use proptest::prelude::*;

    fn s(out: &mut Vec<u8>, bytes: &[u8]) {
        out.extend_from_slice(&(bytes.len() as u64).to_le_bytes());
        out.extend_from_slice(bytes);
        out.extend(std::iter::repeat_n(0u8, padding(bytes.len() as u64)));
    }

    fn nar(parts: &[&[u8]]) -> Vec<u8> {
        let mut out = Vec::new();
        for p in parts {
            s(&mut out, p);
        }
        out
    }

    fn dir_with(names: &[&[u8]]) -> Vec<u8> {
        let mut parts: Vec<&[u8]> = vec![b"nix-archive-1", b"(", b"type", b"directory"];
        for n in names {
            parts.extend_from_slice(&[
                b"entry", b"(", b"name", n, b"node", b"(", b"type", b"symlink", b"target", b"x",
                b")", b")",
            ]);
        }
        parts.push(b")");
        nar(&parts)
    }

    #[test]
    fn accepts_what_nix_writes() {
        let good = dir_with(&[b"a", b"b"]);
        let info = validate(good.as_slice()).unwrap();
        assert_eq!(info.nar_size, good.len() as u64);
        assert_eq!(info.nar_hash, crate::hash::Hash::sha256(&good));
    }

    #[test]
    fn refuses_malformed_archives() {
        let cases: Vec<(Vec<u8>, &str)> = vec![
            (dir_with(&[b"b", b"a"]), "sorted"),
            (dir_with(&[b"a", b"a"]), "unique"),
            (dir_with(&[b"a/b"]), "not allowed"),
            (dir_with(&[b".."]), "not allowed"),
            (dir_with(&[b"."]), "not allowed"),
            (dir_with(&[b""]), "not allowed"),
            (dir_with(&[b"a\0"]), "not allowed"),
            (nar(&[b"nix-archive-2"]), "expected nix-archive-1"),
            (
                nar(&[b"nix-archive-1", b"(", b"type", b"fifo"]),
                "regular, symlink or directory",
            ),
            (
                nar(&[
                    b"nix-archive-1",
                    b"(",
                    b"type",
                    b"regular",
                    b"contents",
                    b"abc",
                ]),
                "truncated",
            ),
            (dir_with(&[b"a"])[..60].to_vec(), "truncated"),
        ];
        for (bytes, expected) in cases {
            let err = validate(bytes.as_slice()).unwrap_err().to_string();
            assert!(err.contains(expected), "{expected}: {err}");
        }
    }

    #[test]
    fn refuses_bad_padding() {
        let mut bytes = nar(&[
            b"nix-archive-1",
            b"(",
            b"type",
            b"symlink",
            b"target",
            b"x",
            b")",
        ]);
        // The padding of "x" sits right after its byte.
        let x = bytes.windows(2).position(|w| w == [b'x', 0]).unwrap();
        bytes[x + 1] = 1;
        assert!(matches!(
            validate(bytes.as_slice()),
            Err(NarError::BadPadding { .. })
        ));
    }

    #[test]
    fn absurd_lengths_cost_nothing() {
        let mut bytes = nar(&[b"nix-archive-1", b"(", b"type", b"regular", b"contents"]);
        bytes.extend_from_slice(&(1u64 << 63).to_le_bytes());
        bytes.extend_from_slice(b"short");
        assert!(matches!(
            validate(bytes.as_slice()),
            Err(NarError::Truncated { .. })
        ));
        let mut name = nar(&[
            b"nix-archive-1",
            b"(",
            b"type",
            b"directory",
            b"entry",
            b"(",
            b"name",
        ]);
        name.extend_from_slice(&u64::MAX.to_le_bytes());
        assert!(matches!(
            validate(name.as_slice()),
            Err(NarError::TooLong { .. })
        ));
        let mut token = nar(&[b"nix-archive-1"]);
        token.extend_from_slice(&(1u64 << 62).to_le_bytes());
        assert!(matches!(
            validate(token.as_slice()),
            Err(NarError::Unexpected { .. })
        ));
    }

    #[test]
    fn nesting_is_bounded() {
        let mut bytes = nar(&[b"nix-archive-1", b"(", b"type", b"directory"]);
        for _ in 0..40 {
            for part in [
                &b"entry"[..],
                b"(",
                b"name",
                b"d",
                b"node",
                b"(",
                b"type",
                b"directory",
            ] {
                s(&mut bytes, part);
            }
        }
        let limits = NarLimits {
            max_depth: 10,
            ..NarLimits::default()
        };
        let err = NarReader::new(bytes.as_slice())
            .with_limits(limits)
            .parse(&mut Recorder::default());
        assert!(matches!(err, Err(NarError::TooDeep { .. })));
    }

    #[test]
    fn does_not_read_past_the_archive() {
        let mut bytes = dir_with(&[b"a"]);
        let len = bytes.len();
        bytes.extend_from_slice(b"TRAILING");
        let mut cursor = io::Cursor::new(bytes);
        let info = NarReader::new(&mut cursor)
            .parse(&mut Recorder::default())
            .unwrap();
        assert_eq!(info.nar_size, len as u64);
        assert_eq!(cursor.position(), len as u64);
    }

    #[derive(Default, Debug, PartialEq)]
    struct Recorder {
        events: Vec<(Vec<u8>, String)>,
    }

    impl NarVisitor for Recorder {
        fn directory(&mut self, path: &[u8]) -> io::Result<()> {
            self.events.push((path.to_vec(), "dir".into()));
            Ok(())
        }
        fn file(
            &mut self,
            path: &[u8],
            executable: bool,
            _: u64,
            contents: &mut dyn Read,
        ) -> io::Result<()> {
            let mut text = String::new();
            contents.read_to_string(&mut text)?;
            self.events
                .push((path.to_vec(), format!("file {executable} {text}")));
            Ok(())
        }
        fn symlink(&mut self, path: &[u8], target: &[u8]) -> io::Result<()> {
            self.events.push((
                path.to_vec(),
                format!("link {}", String::from_utf8_lossy(target)),
            ));
            Ok(())
        }
    }

    /// A random tree: files, executables, symlinks and subdirectories.
    #[derive(Debug, Clone)]
    enum Tree {
        File(String, bool),
        Link(String),
        Dir(Vec<(String, Tree)>),
    }

    fn tree() -> impl Strategy<Value = Tree> {
        let leaf = prop_oneof![
            ("[a-z\n]{0,20}", any::<bool>()).prop_map(|(c, x)| Tree::File(c, x)),
            "[a-z/.]{1,10}".prop_map(Tree::Link),
        ];
        leaf.prop_recursive(4, 24, 5, |inner| {
            proptest::collection::btree_map("[a-zA-Z0-9._-]{1,8}", inner, 0..5).prop_map(|m| {
                Tree::Dir(
                    m.into_iter()
                        .filter(|(k, _)| k != "." && k != "..")
                        .collect(),
                )
            })
        })
    }

    fn materialise(tree: &Tree, at: &Path) {
        match tree {
            Tree::File(contents, executable) => {
                fs::write(at, contents).unwrap();
                let mode = if *executable { 0o755 } else { 0o644 };
                fs::set_permissions(at, std::os::unix::fs::PermissionsExt::from_mode(mode))
                    .unwrap();
            }
            Tree::Link(target) => std::os::unix::fs::symlink(target, at).unwrap(),
            Tree::Dir(entries) => {
                fs::create_dir(at).unwrap();
                for (name, child) in entries {
                    materialise(child, &at.join(name));
                }
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        #[test]
        fn pack_restore_pack_is_identical(t in tree()) {
            let scratch = tempfile::tempdir().unwrap();
            let original = scratch.path().join("original");
            materialise(&t, &original);
            let mut packed = Vec::new();
            write_path(&original, &mut packed).unwrap();
            let copy = scratch.path().join("copy");
            let info = restore(packed.as_slice(), &copy).unwrap();
            prop_assert_eq!(info, hash_path(&original).unwrap());
            let mut again = Vec::new();
            write_path(&copy, &mut again).unwrap();
            prop_assert_eq!(packed, again);
        }

        #[test]
        fn damaged_archives_give_errors_not_panics(t in tree(), at in any::<usize>(), byte in any::<u8>(), cut in any::<usize>()) {
            let scratch = tempfile::tempdir().unwrap();
            let original = scratch.path().join("t");
            materialise(&t, &original);
            let mut packed = Vec::new();
            write_path(&original, &mut packed).unwrap();
            let mut flipped = packed.clone();
            let i = at % flipped.len();
            flipped[i] ^= byte.max(1);
            let _ = NarReader::new(flipped.as_slice()).parse(&mut Recorder::default());
            let truncated = &packed[..cut % packed.len()];
            prop_assert!(validate(truncated).is_err());
        }

        #[test]
        fn random_bytes_give_errors(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
            let mut input = nar(&[b"nix-archive-1"]);
            input.extend_from_slice(&bytes);
            let _ = validate(input.as_slice());
            let _ = validate(bytes.as_slice());
        }
    }
}
