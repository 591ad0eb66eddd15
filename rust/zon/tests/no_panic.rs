//! No input panics the reader: the fuzz corpus kept in the repository, then
//! proptest-generated text and bytes, each read untyped, as a typed
//! configuration, and (when it reads) written back.

use chock_testkit::replay_fuzz_corpus;
use proptest::prelude::*;

#[path = "../fuzz/check/read.rs"]
mod check;

use check::read_every_way;

#[test]
fn the_fuzz_corpus_reads_without_panicking() {
    replay_fuzz_corpus(env!("CARGO_MANIFEST_DIR"), "read", 100, read_every_way);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..256)) {
        read_every_way(&bytes);
    }

    #[test]
    fn zon_shaped_text_never_panics(text in r#"[.{}=,"'\\@a-z0-9_ \n\t\r/xu+-]{0,80}"#) {
        read_every_way(text.as_bytes());
    }

    #[test]
    fn rule_shaped_text_never_panics(
        pieces in prop::collection::vec(prop::sample::select(vec![
            ".{", "}", ",", " = ", ".rules", ".names", ".action", ".decision", ".deny", ".allow",
            "\"x\"", "1", "-1", "0x7fffffffffffffff", "99999999999999999999", "null", ".{}", "//c\n",
        ]), 0..24)
    ) {
        read_every_way(pieces.concat().as_bytes());
    }
}
