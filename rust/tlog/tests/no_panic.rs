//! No input makes the readers of a signed note, a checkpoint, a key or an
//! `add-checkpoint` body panic: a witness reads them from the network and
//! `chock log prove --check` from a person's files. The fuzz corpora kept
//! in the repository (`fuzz/corpus/note`, `fuzz/corpus/witness`) go
//! through the checks the fuzz targets run (`fuzz/check/`).

use chock_testkit::replay_fuzz_corpus;

#[path = "../fuzz/check/keys.rs"]
mod keys;

#[path = "../fuzz/check/note.rs"]
mod note;

#[path = "../fuzz/check/witness.rs"]
mod witness;

#[test]
fn the_note_corpus_reads_without_panicking() {
    replay_fuzz_corpus(env!("CARGO_MANIFEST_DIR"), "note", 5, note::read_note);
}

#[test]
fn the_witness_corpus_reads_and_is_answered_without_panicking() {
    replay_fuzz_corpus(
        env!("CARGO_MANIFEST_DIR"),
        "witness",
        9,
        witness::read_request,
    );
}
