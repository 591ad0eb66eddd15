//! Putting a fetched tree into the store, only once its NAR hash is the
//! lock's `narHash`, and checking what the store then holds.
//!
//! The tree is hashed first, from the private temporary directory; on a
//! mismatch nothing is sent. It is then packed a second time straight into
//! the daemon (AddToStoreNar, through a pipe, so the NAR is never held
//! whole) with the hash and size of the first pass, which the daemon
//! checks. Last, QueryPathInfo must answer for the path Chock computed with
//! the same hash and a content address that makes that same path.

use std::collections::BTreeSet;
use std::io::Write;
use std::path::Path;

use chock_store::daemon::{DaemonConnection, PathInfo};
use chock_store::nar;
use chock_store::{ContentAddress, FileIngestionMethod, FixedOutputHash, StorePath};

use crate::fetch::{FetchError, blocking};
use chock_flakelock::Source;

/// Which of `paths` the store holds already.
pub async fn valid_paths(
    conn: &mut DaemonConnection,
    paths: &BTreeSet<StorePath>,
) -> Result<BTreeSet<StorePath>, chock_store::daemon::DaemonError> {
    if paths.is_empty() {
        return Ok(BTreeSet::new());
    }
    conn.query_valid_paths(paths, false).await
}

/// Adds the tree at `root` as `source`'s store path, or refuses.
pub(crate) async fn add_checked(
    conn: &mut DaemonConnection,
    root: &Path,
    source: &Source,
) -> Result<(), FetchError> {
    let owned = root.to_path_buf();
    let hashed = blocking(move || nar::hash_path(&owned).map_err(FetchError::from)).await?;
    if hashed.nar_hash != source.nar_hash {
        return Err(FetchError::NarHashMismatch {
            expected: source.nar_hash.to_sri(),
            got: hashed.nar_hash.to_sri(),
        });
    }
    let path = source.store_path.clone();
    let ca = ContentAddress::Fixed(FixedOutputHash {
        method: FileIngestionMethod::Recursive,
        hash: hashed.nar_hash,
    });
    let upload = PathInfo::for_upload(
        path.clone(),
        hashed.nar_hash,
        hashed.nar_size,
        BTreeSet::new(),
        Some(ca),
    );
    send_nar(conn, root, &upload).await?;
    let answered = conn.query_path_info(&path).await?;
    let mismatch = |answered: String| FetchError::StoreMismatch {
        path: path.to_string(),
        answered,
        computed: hashed.nar_hash.to_sri(),
    };
    let Some(info) = answered else {
        return Err(mismatch("that the path is not valid".into()));
    };
    if info.nar_hash != hashed.nar_hash {
        return Err(mismatch(format!("the NAR hash {}", info.nar_hash.to_sri())));
    }
    let made = info
        .content_address()
        .and_then(|ca| ca.store_path(&source.store_name, &BTreeSet::new()).ok());
    if made.as_ref() != Some(&path) {
        return Err(mismatch(format!(
            "the content address {}",
            info.ca.as_deref().unwrap_or("(none)")
        )));
    }
    Ok(())
}

/// Streams the NAR of `root` to the daemon through a pipe.
async fn send_nar(
    conn: &mut DaemonConnection,
    root: &Path,
    upload: &PathInfo,
) -> Result<(), FetchError> {
    let (reader, writer) = std::io::pipe().map_err(|e| io(root, e))?;
    let owned = root.to_path_buf();
    let packer = tokio::task::spawn_blocking(move || {
        let mut out = std::io::BufWriter::with_capacity(256 * 1024, writer);
        nar::write_path(&owned, &mut out)?;
        out.flush().map_err(|e| nar::NarError::Io {
            path: owned.display().to_string(),
            source: e,
        })
    });
    let mut receiver =
        tokio::net::unix::pipe::Receiver::from_owned_fd(reader.into()).map_err(|e| io(root, e))?;
    let sent = conn
        .add_to_store_nar(upload, false, false, &mut receiver)
        .await;
    drop(receiver);
    let packed = packer.await.map_err(|e| FetchError::Archive {
        why: format!("packing the NAR stopped: {e}"),
    })?;
    // A packing error explains a short upload better than the daemon can.
    packed?;
    sent?;
    Ok(())
}

fn io(path: &Path, source: std::io::Error) -> FetchError {
    FetchError::Io {
        path: path.to_path_buf(),
        source,
    }
}
