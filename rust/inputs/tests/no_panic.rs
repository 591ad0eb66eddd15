//! No input panics the `flake.lock` reader: the fuzz corpus
//! kept in the repository (`fuzz/corpus/lock`), each
//! file through the same check the fuzz target runs (`fuzz/check/`).

use chock_testkit::replay_fuzz_corpus;

#[path = "../fuzz/check/lock.rs"]
mod lock;

#[test]
fn the_lock_corpus_reads_without_panicking() {
    replay_fuzz_corpus(env!("CARGO_MANIFEST_DIR"), "lock", 20, lock::read_lock);
}
