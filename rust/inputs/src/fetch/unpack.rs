//! Unpacking an input's archive into a tree, told apart by its first bytes
//! (as libarchive does for Nix): gzip, xz and bzip2 around a tar, a plain
//! tar, or a zip.

use std::fs::File;
use std::io::{self, BufReader, Read, Seek};
use std::path::Path;

use super::tree::{TreeWriter, io_error, path_from_bytes};
use super::{FetchError, Limits};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Format {
    Gzip,
    Xz,
    Bzip2,
    Zip,
    Tar,
}

fn format_of(head: &[u8]) -> Result<Format, FetchError> {
    if head.starts_with(&[0x1f, 0x8b]) {
        Ok(Format::Gzip)
    } else if head.starts_with(&[0xfd, b'7', b'z', b'X', b'Z', 0]) {
        Ok(Format::Xz)
    } else if head.starts_with(b"BZh") {
        Ok(Format::Bzip2)
    } else if head.starts_with(b"PK\x03\x04") || head.starts_with(b"PK\x05\x06") {
        Ok(Format::Zip)
    } else if head.get(257..262) == Some(b"ustar") {
        Ok(Format::Tar)
    } else if head.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]) {
        Err(FetchError::Archive {
            why: "it is compressed with zstd, which Chock does not unpack; serve a .tar.gz, .tar.xz, .tar.bz2 or .zip".into(),
        })
    } else {
        Err(FetchError::Archive {
            why: "it is not a tar (plain, gzip, xz or bzip2) or zip archive".into(),
        })
    }
}

/// Unpacks the archive at `archive` into the empty directory `into` and
/// returns the archive's single top-level entry.
pub(crate) fn unpack(
    archive: &Path,
    into: &Path,
    limits: Limits,
) -> Result<std::path::PathBuf, FetchError> {
    let mut file = File::open(archive).map_err(|e| io_error(archive, e))?;
    let mut head = [0u8; 512];
    let read = read_up_to(&mut file, &mut head).map_err(|e| io_error(archive, e))?;
    file.rewind().map_err(|e| io_error(archive, e))?;
    let mut writer = TreeWriter::new(into, limits);
    let input = BufReader::new(file);
    match format_of(head.get(..read).unwrap_or_default())? {
        Format::Gzip => untar(flate2::read::MultiGzDecoder::new(input), &mut writer)?,
        Format::Xz => untar(xz2::read::XzDecoder::new_multi_decoder(input), &mut writer)?,
        Format::Bzip2 => untar(bzip2::read::MultiBzDecoder::new(input), &mut writer)?,
        Format::Tar => untar(input, &mut writer)?,
        Format::Zip => unzip(input, &mut writer)?,
    }
    writer.single_top()
}

fn read_up_to(file: &mut File, buf: &mut [u8]) -> io::Result<usize> {
    let mut filled = 0;
    while filled < buf.len() {
        match file.read(buf.get_mut(filled..).unwrap_or_default())? {
            0 => break,
            n => filled += n,
        }
    }
    Ok(filled)
}

fn archive_error(e: io::Error) -> FetchError {
    FetchError::Archive {
        why: format!("it cannot be read: {e}"),
    }
}

fn untar(input: impl Read, writer: &mut TreeWriter) -> Result<(), FetchError> {
    use tar::EntryType;
    let mut archive = tar::Archive::new(input);
    for entry in archive.entries().map_err(archive_error)? {
        let mut entry = entry.map_err(archive_error)?;
        let path_bytes = entry.path_bytes().into_owned();
        let path = path_from_bytes(&path_bytes);
        let kind = entry.header().entry_type();
        match kind {
            EntryType::Regular | EntryType::Continuous | EntryType::GNUSparse => {
                let executable = entry.header().mode().map_err(archive_error)? & 0o100 != 0;
                writer.file(path, &mut entry, executable)?;
            }
            EntryType::Directory => writer.dir(path)?,
            EntryType::Symlink | EntryType::Link => {
                let target = entry
                    .link_name_bytes()
                    .map(|t| t.into_owned())
                    .ok_or_else(|| FetchError::Archive {
                        why: format!("the link `{}` names no target", path.display()),
                    })?;
                let target = path_from_bytes(&target);
                if kind == EntryType::Symlink {
                    writer.symlink(path, target)?;
                } else {
                    writer.hard_link(path, target)?;
                }
            }
            // Metadata for the entries around them (pax headers such as
            // GitHub's commit comment, GNU long names): the tar crate has
            // read what matters.
            EntryType::XGlobalHeader
            | EntryType::XHeader
            | EntryType::GNULongName
            | EntryType::GNULongLink => {}
            other => {
                return Err(FetchError::Archive {
                    why: format!(
                        "the entry `{}` is a {other:?}, which a NAR cannot hold",
                        path.display()
                    ),
                });
            }
        }
    }
    Ok(())
}

fn unzip(input: impl Read + Seek, writer: &mut TreeWriter) -> Result<(), FetchError> {
    let zip_error = |e: zip::result::ZipError| FetchError::Archive {
        why: format!("it cannot be read as a zip: {e}"),
    };
    let mut archive = zip::ZipArchive::new(input).map_err(zip_error)?;
    for i in 0..archive.len() {
        let mut entry = archive.by_index(i).map_err(zip_error)?;
        let raw = entry.name_raw().to_vec();
        let path = path_from_bytes(&raw);
        let mode = entry.unix_mode().unwrap_or(0);
        if entry.is_dir() {
            writer.dir(path)?;
        } else if mode & 0o170_000 == 0o120_000 {
            let mut target = Vec::new();
            entry.read_to_end(&mut target).map_err(archive_error)?;
            writer.symlink(path, path_from_bytes(&target))?;
        } else {
            writer.file(path, &mut entry, mode & 0o100 != 0)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn tar_of(entries: &[(&str, &[u8], u32)]) -> Vec<u8> {
        let mut builder = tar::Builder::new(Vec::new());
        for (path, data, mode) in entries {
            let mut header = tar::Header::new_gnu();
            header.set_size(data.len() as u64);
            header.set_mode(*mode);
            header.set_entry_type(tar::EntryType::Regular);
            builder
                .append_data(&mut header, path, *data)
                .expect("append");
        }
        builder.into_inner().expect("tar")
    }

    fn unpacked(bytes: &[u8]) -> Result<(tempfile::TempDir, std::path::PathBuf), FetchError> {
        let dir = tempfile::tempdir().expect("tempdir");
        let archive = dir.path().join("archive");
        std::fs::write(&archive, bytes).expect("write");
        let into = dir.path().join("tree");
        std::fs::create_dir(&into).expect("mkdir");
        let top = unpack(&archive, &into, Limits::default())?;
        Ok((dir, top))
    }

    #[test]
    fn each_compression_unpacks_to_the_single_top_directory() {
        let tar = tar_of(&[("top/a", b"A", 0o644), ("top/bin/x", b"X", 0o755)]);
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(&tar).expect("gz");
        let mut xz = xz2::write::XzEncoder::new(Vec::new(), 1);
        xz.write_all(&tar).expect("xz");
        let mut bz = bzip2::write::BzEncoder::new(Vec::new(), bzip2::Compression::fast());
        bz.write_all(&tar).expect("bz");
        let mut zip = zip::ZipWriter::new(io::Cursor::new(Vec::new()));
        let options = zip::write::SimpleFileOptions::default().unix_permissions(0o755);
        zip.start_file("top/bin/x", options).expect("zip");
        zip.write_all(b"X").expect("zip");
        let options = zip::write::SimpleFileOptions::default().unix_permissions(0o644);
        zip.start_file("top/a", options).expect("zip");
        zip.write_all(b"A").expect("zip");
        let zip = zip.finish().expect("zip").into_inner();
        let forms = [
            tar.clone(),
            gz.finish().expect("gz"),
            xz.finish().expect("xz"),
            bz.finish().expect("bz"),
            zip,
        ];
        let mut hashes = Vec::new();
        for bytes in forms {
            let (_dir, top) = unpacked(&bytes).expect("unpacks");
            assert_eq!(top.file_name().and_then(|n| n.to_str()), Some("top"));
            hashes.push(chock_store::nar::hash_path(&top).expect("nar").nar_hash);
        }
        assert!(
            hashes.windows(2).all(|w| w[0] == w[1]),
            "one tree whatever the form"
        );
    }

    #[test]
    fn more_than_one_top_entry_or_an_unknown_form_is_refused() {
        let two = tar_of(&[("a/x", b"", 0o644), ("b/y", b"", 0o644)]);
        assert!(unpacked(&two).is_err());
        assert!(unpacked(b"just some text, no archive at all").is_err());
        assert!(unpacked(&[0x28, 0xb5, 0x2f, 0xfd, 0, 0]).is_err());
    }

    #[test]
    fn a_traversing_entry_is_refused() {
        let mut tar = tar_of(&[("top/a", b"A", 0o644)]);
        // Write the name by hand: the builder refuses `..` itself.
        let mut header = tar::Header::new_old();
        header.as_old_mut().name[..9].copy_from_slice(b"../escape");
        header.set_size(0);
        header.set_entry_type(tar::EntryType::Regular);
        header.set_cksum();
        let end = tar.len() - 1024;
        tar.splice(end..end, header.as_bytes().iter().copied());
        let err = unpacked(&tar).expect_err("refused");
        assert!(err.to_string().contains("../escape"), "{err}");
    }

    proptest::proptest! {
        #[test]
        fn random_bytes_after_a_gzip_magic_never_panic(tail in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..2048)) {
            let mut bytes = vec![0x1f, 0x8b];
            bytes.extend(tail);
            let _ = unpacked(&bytes);
        }

        #[test]
        fn a_truncated_archive_never_panics(cut in 0usize..3072) {
            let tar = tar_of(&[("top/a", &[7u8; 1500], 0o644), ("top/b", b"B", 0o755)]);
            let _ = unpacked(tar.get(..cut).unwrap_or(&tar));
        }
    }
}
