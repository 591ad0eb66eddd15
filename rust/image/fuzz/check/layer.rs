//! The check the `layer` fuzz target runs on each input, shared with the
//! crate's `no_panic` test: any bytes written as a layer into a fresh tree
//! never panic, write nothing outside the tree (a sibling directory stays
//! empty), leave no device node and no set-ID bit, stop at the byte bound
//! however far a compressed layer expands, and finish within a time bound.

use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::path::Path;
use std::time::{Duration, Instant};

use chock_image::extract::Writer;
use chock_image::source::Layer;

/// The most one input may take: optimised under the fuzzer, and far more
/// in an unoptimised `cargo test` on a busy machine. The layer may expand
/// to 1 MiB (`with_limit`), so what an input costs is bounded by the
/// writer's own work, not by the disk.
const BOUND: Duration = if cfg!(fuzzing) {
    Duration::from_secs(1)
} else {
    Duration::from_secs(10)
};

fn walk(dir: &Path, seen: &mut usize) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        *seen += 1;
        let meta = entry
            .path()
            .symlink_metadata()
            .expect("an entry just listed");
        let kind = meta.file_type();
        assert!(
            !kind.is_block_device() && !kind.is_char_device(),
            "a device node was made"
        );
        if !kind.is_symlink() {
            assert_eq!(
                meta.permissions().mode() & 0o6000,
                0,
                "a set-ID bit was kept: {}",
                entry.path().display()
            );
        }
        if kind.is_dir() {
            walk(&entry.path(), seen);
        }
    }
}

/// Writes `bytes` as one layer; panics only when the writer breaks a
/// promise. Over the time bound, the input is written twice more and the
/// fastest of the three counts, so a machine busy with something else does
/// not fail it.
pub fn write_layer(bytes: &[u8]) {
    let mut fastest = write_once(bytes);
    for _ in 0..2 {
        if fastest < BOUND {
            break;
        }
        fastest = fastest.min(write_once(bytes));
    }
    assert!(
        fastest < BOUND,
        "one layer of {} bytes took {fastest:?} at best",
        bytes.len()
    );
}

/// Writes `bytes` once into a fresh tree, checks what was written, and
/// says how long the writing took.
fn write_once(bytes: &[u8]) -> Duration {
    let dir = tempfile::tempdir().expect("tempdir");
    let tree = dir.path().join("tree");
    let outside = dir.path().join("outside");
    std::fs::create_dir(&tree).expect("tree");
    std::fs::create_dir(&outside).expect("outside");
    let started = Instant::now();
    let mut writer = Writer::new(&tree).expect("writer").with_limit(1 << 20);
    let layer = Layer {
        blob: "fuzz".into(),
        digest: None,
        diff_id: format!("sha256:{}", "0".repeat(64)),
    };
    let written = writer.layer(Box::new(std::io::Cursor::new(bytes.to_vec())), &layer);
    assert!(
        written.is_err(),
        "a layer whose digest is all zeros was accepted"
    );
    let _ = writer.finish();
    let took = started.elapsed();
    let mut seen = 0;
    walk(&tree, &mut seen);
    assert_eq!(
        std::fs::read_dir(&outside).expect("outside").count(),
        0,
        "something was written outside the tree"
    );
    let parent: Vec<_> = std::fs::read_dir(dir.path())
        .expect("dir")
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert_eq!(
        parent.len(),
        2,
        "something was written beside the tree: {parent:?}"
    );
    took
}
