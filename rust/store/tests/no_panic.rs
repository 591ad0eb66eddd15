//! No input panics the `.drv` reader or the NAR reader: the fuzz corpora
//! kept in the repository (`fuzz/corpus/aterm`, `fuzz/corpus/nar`), each
//! file through the same check the fuzz targets run (`fuzz/check/`).

use std::path::Path;

#[path = "../fuzz/check/aterm.rs"]
mod aterm;
#[path = "../fuzz/check/nar.rs"]
mod nar;

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
fn the_aterm_corpus_reads_without_panicking() {
    feed_corpus("aterm", 40, aterm::read_drv);
}

#[test]
fn the_nar_corpus_reads_without_panicking() {
    feed_corpus("nar", 15, nar::read_nar);
}
