//! No input panics the reader: the fuzz corpus kept in the repository, then
//! proptest-generated text and bytes, each read untyped, as a typed
//! configuration, and (when it reads) written back.

use std::path::Path;

use proptest::prelude::*;

#[path = "../fuzz/check/read.rs"]
mod check;

use check::read_every_way;

#[test]
fn the_fuzz_corpus_reads_without_panicking() {
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus/read");
    let mut count = 0;
    for entry in std::fs::read_dir(&corpus).expect("the fuzz corpus is in the repository") {
        let bytes = std::fs::read(entry.expect("corpus entry").path()).expect("corpus file");
        read_every_way(&bytes);
        count += 1;
    }
    assert!(
        count > 100,
        "the corpus at {} has only {count} files",
        corpus.display()
    );
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
