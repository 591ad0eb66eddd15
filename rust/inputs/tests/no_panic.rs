//! No input panics the `flake.lock` reader: the fuzz corpus
//! kept in the repository (`fuzz/corpus/lock`), each
//! file through the same check the fuzz target runs (`fuzz/check/`).

use std::path::Path;

#[path = "../fuzz/check/lock.rs"]
mod lock;

/// Runs `check` on every file of the corpus `name`; there must be at least `min`.
fn feed_corpus(name: &str, min: usize, check: fn(&[u8])) {
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fuzz/corpus")
        .join(name);
    let mut count = 0;
    for entry in std::fs::read_dir(&corpus).expect("the fuzz corpus is in the repository") {
        let bytes = std::fs::read(entry.expect("corpus entry").path()).expect("corpus file");
        check(&bytes);
        count += 1;
    }
    assert!(
        count >= min,
        "the corpus at {} has only {count} files",
        corpus.display()
    );
}

#[test]
fn the_lock_corpus_reads_without_panicking() {
    feed_corpus("lock", 20, lock::read_lock);
}
