//! No input makes a sink address or a shipped line panic: a `--to`
//! address is a person's text, and a log line's fields hold whatever an
//! agent asked for. The fuzz corpora kept in the repository
//! (`fuzz/corpus/target`, `fuzz/corpus/entry`) go through the checks the
//! fuzz targets run (`fuzz/check/`).

use chock_testkit::replay_fuzz_corpus;

#[path = "../fuzz/check/target.rs"]
mod target;

#[path = "../fuzz/check/entry.rs"]
mod entry;

#[test]
fn the_address_corpus_reads_without_panicking() {
    replay_fuzz_corpus(
        env!("CARGO_MANIFEST_DIR"),
        "target",
        10,
        target::read_target,
    );
}

#[test]
fn the_line_corpus_ships_and_reads_back() {
    replay_fuzz_corpus(env!("CARGO_MANIFEST_DIR"), "entry", 5, entry::ship_line);
}
