//! No input panics the `.drv` reader or the NAR reader: the fuzz corpora
//! kept in the repository (`fuzz/corpus/aterm`, `fuzz/corpus/nar`), each
//! file through the same check the fuzz targets run (`fuzz/check/`).

use chock_testkit::replay_fuzz_corpus;

#[path = "../fuzz/check/aterm.rs"]
mod aterm;
#[path = "../fuzz/check/nar.rs"]
mod nar;

#[test]
fn the_aterm_corpus_reads_without_panicking() {
    replay_fuzz_corpus(env!("CARGO_MANIFEST_DIR"), "aterm", 40, aterm::read_drv);
}

#[test]
fn the_nar_corpus_reads_without_panicking() {
    replay_fuzz_corpus(env!("CARGO_MANIFEST_DIR"), "nar", 15, nar::read_nar);
}
