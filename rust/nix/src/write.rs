//! Writing what the evaluation produced through the daemon: each object
//! weighed against the store caps before it is sent, and the path the store
//! answers compared with the path the evaluation computed. A mismatch
//! refuses the build there and then.

use std::collections::BTreeSet;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use chock_store::daemon::AddMethod;
use chock_store::registry::{Source, SourceContents, TextFile};
use chock_store::{Derivation, HashAlgo, StorePath, nar};
use serde::Serialize;

use crate::closure::Object;
use crate::daemon::Store;
use crate::error::{BuildError, Fault, Refusal};

/// What every build of one session has written, against `max_session_bytes`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Session {
    pub written_bytes: u64,
}

/// The store caps of the `nix` block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Caps {
    pub object: u64,
    pub session: u64,
}

impl Caps {
    /// Refuses an object over `max_object_bytes`, or one that would take
    /// the session past `max_session_bytes`; otherwise counts it.
    pub(crate) fn charge(
        &self,
        session: &mut Session,
        path: &StorePath,
        bytes: u64,
    ) -> Result<(), Refusal> {
        if bytes > self.object {
            return Err(Refusal::ObjectTooLarge {
                path: path.to_string(),
                bytes,
                cap: self.object,
            });
        }
        let total = session.written_bytes.checked_add(bytes);
        match total {
            Some(total) if total <= self.session => {
                session.written_bytes = total;
                Ok(())
            }
            _ => Err(Refusal::SessionFull {
                path: path.to_string(),
                bytes,
                total: total.unwrap_or(u64::MAX),
                cap: self.session,
            }),
        }
    }
}

/// Writes one object and checks where the store put it.
pub(crate) fn write_object(
    store: &mut Store,
    caps: &Caps,
    session: &mut Session,
    path: &StorePath,
    object: Object<'_>,
) -> Result<(), BuildError> {
    let (name, stored) = match object {
        Object::Derivation(drv) => (
            drv.name.clone(),
            write_derivation(store, caps, session, path, drv)?,
        ),
        Object::Text(text) => (
            text.name.clone(),
            write_text(store, caps, session, path, text)?,
        ),
        Object::Source(source) => (
            source.name.clone(),
            write_source(store, caps, session, path, source)?,
        ),
    };
    check(object.kind(), &name, path, stored)
}

/// Writes a derivation (its ATerm as a text object) and checks its path.
pub(crate) fn write_derivation(
    store: &mut Store,
    caps: &Caps,
    session: &mut Session,
    path: &StorePath,
    drv: &Derivation,
) -> Result<StorePath, BuildError> {
    let aterm = drv.to_aterm();
    caps.charge(session, path, aterm.len() as u64)?;
    Ok(store.add_text(
        &format!("{}.drv", drv.name),
        aterm.as_bytes(),
        &drv.references(),
    )?)
}

fn write_text(
    store: &mut Store,
    caps: &Caps,
    session: &mut Session,
    path: &StorePath,
    text: &TextFile,
) -> Result<StorePath, BuildError> {
    caps.charge(session, path, text.contents.len() as u64)?;
    Ok(store.add_text(&text.name, &text.contents, &text.references)?)
}

/// A source as a NAR (a tree) or its bytes (a flat file), held in memory
/// only up to `max_object_bytes`.
fn write_source(
    store: &mut Store,
    caps: &Caps,
    session: &mut Session,
    path: &StorePath,
    source: &Source,
) -> Result<StorePath, BuildError> {
    let (method, data) = match &source.contents {
        SourceContents::InStore => {
            return Err(Refusal::MissingPath {
                path: path.clone(),
                needed_by: path.clone(),
            }
            .into());
        }
        SourceContents::Tree { path: tree, kept } => {
            let nar = tree_nar(tree, kept.as_ref(), caps.object, path)?;
            (AddMethod::Recursive(HashAlgo::Sha256), nar)
        }
        SourceContents::Flat { path: file, algo } => (
            AddMethod::Flat(*algo),
            read_bounded(file, caps.object, path)?,
        ),
    };
    caps.charge(session, path, data.len() as u64)?;
    Ok(store.add(&source.name, method, &data)?)
}

/// The store answered `stored` for an object the evaluation put at `computed`.
pub(crate) fn check(
    kind: &'static str,
    name: &str,
    computed: &StorePath,
    stored: StorePath,
) -> Result<(), BuildError> {
    if stored == *computed {
        return Ok(());
    }
    Err(Refusal::PathMismatch {
        kind,
        name: name.to_owned(),
        computed: computed.clone(),
        stored,
    }
    .into())
}

/// The NAR of `tree`, or of the entries `kept` lists, refused past `cap` bytes.
fn tree_nar(
    tree: &Path,
    kept: Option<&BTreeSet<PathBuf>>,
    cap: u64,
    object: &StorePath,
) -> Result<Vec<u8>, BuildError> {
    let staged;
    let root: PathBuf = match kept {
        Some(kept) if chock_store::fs::is_dir(tree) => {
            staged = stage(tree, kept)?;
            staged.path().join("tree")
        }
        _ => tree.to_path_buf(),
    };
    let mut out = Bounded {
        bytes: Vec::new(),
        cap,
    };
    match nar::write_path(&root, &mut out) {
        Ok(()) => Ok(out.bytes),
        Err(_) if out.bytes.len() as u64 > cap => Err(Refusal::ObjectTooLarge {
            path: object.to_string(),
            bytes: out.bytes.len() as u64,
            cap,
        }
        .into()),
        Err(e) => Err(Fault::Nar(e).into()),
    }
}

/// A copy of the entries of `tree` a filter kept: an entry is there only
/// when every directory above it was kept too, as a filter walks a tree.
fn stage(tree: &Path, kept: &BTreeSet<PathBuf>) -> Result<tempfile::TempDir, BuildError> {
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| BuildError::Fault(Fault::Io { path, source })
    };
    let staging = tempfile::tempdir().map_err(io(Path::new("/tmp")))?;
    let root = staging.path().join("tree");
    std::fs::create_dir(&root).map_err(io(&root))?;
    for entry in kept {
        let ancestors_kept = entry
            .ancestors()
            .skip(1)
            .filter(|a| !a.as_os_str().is_empty())
            .all(|a| kept.contains(a));
        if !ancestors_kept || entry.is_absolute() {
            continue;
        }
        let from = tree.join(entry);
        let to = root.join(entry);
        let meta = chock_store::fs::symlink_metadata(&from).map_err(io(&from))?;
        if meta.is_dir() {
            std::fs::create_dir_all(&to).map_err(io(&to))?;
        } else if meta.file_type().is_symlink() {
            let target = chock_store::fs::read_link(&from).map_err(io(&from))?;
            std::os::unix::fs::symlink(target, &to).map_err(io(&to))?;
        } else {
            let mut source = chock_store::fs::open_nofollow(&from).map_err(io(&from))?;
            let mut copy = std::fs::File::create(&to).map_err(io(&to))?;
            io::copy(&mut source, &mut copy).map_err(io(&from))?;
            copy.set_permissions(meta.permissions()).map_err(io(&to))?;
        }
    }
    Ok(staging)
}

fn read_bounded(file: &Path, cap: u64, object: &StorePath) -> Result<Vec<u8>, BuildError> {
    use std::io::Read;
    let mut bytes = Vec::new();
    chock_store::fs::open(file)
        .and_then(|f| f.take(cap.saturating_add(1)).read_to_end(&mut bytes))
        .map_err(|source| Fault::Io {
            path: file.to_path_buf(),
            source,
        })?;
    if bytes.len() as u64 > cap {
        return Err(Refusal::ObjectTooLarge {
            path: object.to_string(),
            bytes: chock_store::fs::metadata(file).map_or(bytes.len() as u64, |m| m.len()),
            cap,
        }
        .into());
    }
    Ok(bytes)
}

/// A buffer that refuses to grow past `cap` bytes (plus one, to tell).
struct Bounded {
    bytes: Vec<u8>,
    cap: u64,
}

impl Write for Bounded {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let room = (self.cap + 1).saturating_sub(self.bytes.len() as u64);
        if room == 0 {
            return Err(io::Error::other("past max_object_bytes"));
        }
        let take = buf.len().min(usize::try_from(room).unwrap_or(usize::MAX));
        self.bytes.extend_from_slice(&buf[..take]);
        Ok(take)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn path() -> StorePath {
        StorePath::from_base_name("i00sflxqsj37lfmf95m8mn0grv615hpj-source").expect("path")
    }

    #[test]
    fn caps_refuse_a_large_object_and_a_full_session() {
        let caps = Caps {
            object: 100,
            session: 150,
        };
        let mut session = Session::default();
        assert!(matches!(
            caps.charge(&mut session, &path(), 101),
            Err(Refusal::ObjectTooLarge {
                bytes: 101,
                cap: 100,
                ..
            })
        ));
        caps.charge(&mut session, &path(), 100).expect("fits");
        assert!(matches!(
            caps.charge(&mut session, &path(), 51),
            Err(Refusal::SessionFull {
                total: 151,
                cap: 150,
                ..
            })
        ));
        caps.charge(&mut session, &path(), 50)
            .expect("exactly full");
        assert_eq!(session.written_bytes, 150);
        let mut huge = Session {
            written_bytes: u64::MAX,
        };
        let all = Caps {
            object: u64::MAX,
            session: u64::MAX,
        };
        assert!(all.charge(&mut huge, &path(), 1).is_err(), "no overflow");
    }

    #[test]
    fn a_filtered_tree_packs_only_what_was_kept_and_equals_the_same_tree_on_disk() {
        let src = tempfile::tempdir().expect("tempdir");
        let s = src.path();
        std::fs::create_dir_all(s.join("keep/deep")).expect("mkdir");
        std::fs::create_dir_all(s.join(".git")).expect("mkdir");
        std::fs::write(s.join("keep/a"), "a").expect("write");
        std::fs::write(s.join("keep/deep/b"), "b").expect("write");
        std::fs::write(s.join(".git/HEAD"), "ref").expect("write");
        std::fs::write(s.join("top"), "t").expect("write");
        let kept: BTreeSet<PathBuf> = ["keep", "keep/a", "top", "keep/deep/b"]
            .iter()
            .map(PathBuf::from)
            .collect();
        let filtered = tree_nar(s, Some(&kept), 1 << 20, &path()).expect("nar");
        let want = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir_all(want.path().join("keep")).expect("mkdir");
        std::fs::write(want.path().join("keep/a"), "a").expect("write");
        std::fs::write(want.path().join("top"), "t").expect("write");
        let mut expected = Vec::new();
        nar::write_path(want.path(), &mut expected).expect("nar");
        assert_eq!(
            filtered, expected,
            "keep/deep was not kept, so keep/deep/b is not either"
        );
    }

    #[test]
    fn a_tree_over_the_cap_is_refused_without_holding_it_whole() {
        let src = tempfile::tempdir().expect("tempdir");
        std::fs::write(src.path().join("big"), vec![0u8; 10_000]).expect("write");
        match tree_nar(src.path(), None, 1000, &path()) {
            Err(BuildError::Refused(Refusal::ObjectTooLarge {
                cap: 1000, bytes, ..
            })) => {
                assert_eq!(bytes, 1001);
            }
            other => panic!("{other:?}"),
        }
        let file = src.path().join("big");
        assert!(matches!(
            read_bounded(&file, 1000, &path()),
            Err(BuildError::Refused(Refusal::ObjectTooLarge {
                bytes: 10_000,
                ..
            }))
        ));
    }
}
