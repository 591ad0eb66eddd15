//! Packing a tree or a byte string into a NAR, exactly as Nix's `dumpPath`.

use std::io::{self, Read, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use super::{MAGIC, NarError};
use crate::hash::{Hash, HashAlgo, Hasher};

/// The hash and size of a NAR, as the store records them (`narHash`, `narSize`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NarInfo {
    pub nar_hash: Hash,
    pub nar_size: u64,
}

fn io_error(path: &Path) -> impl FnOnce(io::Error) -> NarError + '_ {
    move |source| NarError::Io {
        path: path.display().to_string(),
        source,
    }
}

fn out_error(source: io::Error) -> NarError {
    NarError::Io {
        path: "(NAR output)".to_owned(),
        source,
    }
}

fn put_str(out: &mut dyn Write, s: &[u8]) -> io::Result<()> {
    out.write_all(&(s.len() as u64).to_le_bytes())?;
    out.write_all(s)?;
    out.write_all(&[0u8; 8][..padding(s.len() as u64)])
}

/// Zero bytes after a string of `len` bytes.
pub(crate) fn padding(len: u64) -> usize {
    ((8 - len % 8) % 8) as usize
}

/// Writes the NAR of the file, symlink or directory at `path` to `out`.
pub fn write_path(path: &Path, out: &mut dyn Write) -> Result<(), NarError> {
    put_str(out, MAGIC.as_bytes()).map_err(out_error)?;
    write_node(path, out)
}

/// Writes the NAR of one regular file holding `contents` (`dumpString`),
/// the NAR Nix hashes for a text object such as a `.drv`.
pub fn write_bytes(contents: &[u8], executable: bool, out: &mut dyn Write) -> io::Result<()> {
    put_str(out, MAGIC.as_bytes())?;
    for token in ["(", "type", "regular"] {
        put_str(out, token.as_bytes())?;
    }
    if executable {
        put_str(out, b"executable")?;
        put_str(out, b"")?;
    }
    put_str(out, b"contents")?;
    put_str(out, contents)?;
    put_str(out, b")")
}

fn write_node(path: &Path, out: &mut dyn Write) -> Result<(), NarError> {
    let meta = crate::fs::symlink_metadata(path).map_err(io_error(path))?;
    let tokens = |out: &mut dyn Write, list: &[&str]| {
        list.iter()
            .try_for_each(|t| put_str(out, t.as_bytes()))
            .map_err(out_error)
    };
    let file_type = meta.file_type();
    if file_type.is_symlink() {
        let target = crate::fs::read_link(path).map_err(io_error(path))?;
        tokens(out, &["(", "type", "symlink", "target"])?;
        put_str(out, target.as_os_str().as_bytes()).map_err(out_error)?;
    } else if file_type.is_file() {
        tokens(out, &["(", "type", "regular"])?;
        if meta.permissions().mode() & 0o100 != 0 {
            tokens(out, &["executable", ""])?;
        }
        tokens(out, &["contents"])?;
        write_file_contents(path, meta.len(), out)?;
    } else if file_type.is_dir() {
        tokens(out, &["(", "type", "directory"])?;
        let mut names: Vec<_> = crate::fs::read_dir(path)
            .map_err(io_error(path))?
            .into_iter()
            .map(|(name, _)| name)
            .collect();
        names.sort_by(|a, b| a.as_bytes().cmp(b.as_bytes()));
        for name in names {
            tokens(out, &["entry", "(", "name"])?;
            put_str(out, name.as_bytes()).map_err(out_error)?;
            tokens(out, &["node"])?;
            write_node(&path.join(&name), out)?;
            tokens(out, &[")"])?;
        }
    } else {
        return Err(NarError::UnsupportedFileType {
            path: path.display().to_string(),
        });
    }
    tokens(out, &[")"])
}

/// Streams a file's bytes, refusing a file that grows or shrinks meanwhile.
fn write_file_contents(path: &Path, len: u64, out: &mut dyn Write) -> Result<(), NarError> {
    let changed = || NarError::FileChanged {
        path: path.display().to_string(),
    };
    out.write_all(&len.to_le_bytes()).map_err(out_error)?;
    let file = crate::fs::open_nofollow(path).map_err(io_error(path))?;
    let mut limited = file.take(len);
    let copied = io::copy(&mut limited, out).map_err(io_error(path))?;
    let mut file = limited.into_inner();
    if copied != len || file.read(&mut [0u8; 1]).map_err(io_error(path))? != 0 {
        return Err(changed());
    }
    out.write_all(&[0u8; 8][..padding(len)]).map_err(out_error)
}

/// Counts and hashes what is written through it.
struct HashingWriter {
    hasher: Hasher,
    size: u64,
}

impl Write for HashingWriter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.hasher.update(buf);
        self.size += buf.len() as u64;
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// The NAR SHA-256 and size of the tree at `path`, without keeping the NAR
/// (what `nix hash path` and `nix-store --add` compute).
pub fn hash_path(path: &Path) -> Result<NarInfo, NarError> {
    let mut w = HashingWriter {
        hasher: Hasher::new(HashAlgo::Sha256),
        size: 0,
    };
    write_path(path, &mut io::BufWriter::with_capacity(64 * 1024, &mut w))?;
    Ok(NarInfo {
        nar_hash: w.hasher.finish(),
        nar_size: w.size,
    })
}

/// The NAR hash of `path` with another algorithm (`nix hash path --type md5`).
pub fn hash_path_with(path: &Path, algo: HashAlgo) -> Result<Hash, NarError> {
    let mut w = HashingWriter {
        hasher: Hasher::new(algo),
        size: 0,
    };
    write_path(path, &mut io::BufWriter::with_capacity(64 * 1024, &mut w))?;
    Ok(w.hasher.finish())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;
    use std::os::unix::fs::symlink;

    fn hello_dir() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("hello"), "Hello World\n").unwrap();
        dir
    }

    fn md5_of_nar(path: &Path) -> String {
        hash_path_with(path, HashAlgo::Md5).unwrap().to_base16()
    }

    #[test]
    fn nix_vectors() {
        let dir = hello_dir();
        assert_eq!(md5_of_nar(dir.path()), "ea9b55537dd4c7e104515b2ccfaf4100");
        let hello = dir.path().join("hello");
        fs::set_permissions(&hello, fs::Permissions::from_mode(0o755)).unwrap();
        assert_eq!(md5_of_nar(dir.path()), "20f3ffe011d4cfa7d72bfabef7882836");
        fs::remove_file(&hello).unwrap();
        symlink("x", &hello).unwrap();
        assert_eq!(md5_of_nar(dir.path()), "f78b733a68f5edbdf9413899339eaa4a");

        let file = dir.path().join("hi");
        fs::write(&file, "hi\n").unwrap();
        assert_eq!(
            hash_path(&file).unwrap().nar_hash.to_nix32(),
            "1xmr8jicvzszfzpz46g37mlpvbzjl2wpwvl2b05psipssyp1sm8h"
        );
        let mut nar = Vec::new();
        write_bytes(b"hi\n", false, &mut nar).unwrap();
        assert_eq!(
            Hash::sha256(&nar).to_nix32(),
            "1xmr8jicvzszfzpz46g37mlpvbzjl2wpwvl2b05psipssyp1sm8h"
        );
        assert_eq!(hash_path(&file).unwrap().nar_size, nar.len() as u64);

        let link = dir.path().join("link");
        symlink("/non-existent-48cujwe8ndf4as0bne", &link).unwrap();
        assert_eq!(
            hash_path(&link).unwrap().nar_hash.to_nix32(),
            "1bl5ry3x1fcbwgr5c2x50bn572iixh4j1p6ax5isxly2ddgn8pbp"
        );
    }

    #[test]
    fn refuses_sockets_and_fifos() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        let status = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(status.success());
        assert!(matches!(
            hash_path(dir.path()),
            Err(NarError::UnsupportedFileType { .. })
        ));
    }
}
