//! No content, grammar, measure or query makes a check panic, answer past
//! its time, or disagree with itself: what an agent writes is untrusted
//! text, and so is a project's query. The fuzz corpus kept in the
//! repository (`fuzz/corpus/measure`) goes through the same check the fuzz
//! target runs (`fuzz/check/measure.rs`), then proptest's inputs.

use chock_testkit::replay_fuzz_corpus;
use proptest::prelude::*;

#[path = "../fuzz/check/measure.rs"]
mod measure_check;

#[test]
fn the_measure_corpus_reads_without_panicking() {
    replay_fuzz_corpus(
        env!("CARGO_MANIFEST_DIR"),
        "measure",
        100,
        measure_check::measure,
    );
}

/// Pieces of the grammars' syntax, so generated content nests and breaks.
fn codeish() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        Just("fn f() {".to_owned()),
        Just("def f():\n    ".to_owned()),
        Just("function f() {".to_owned()),
        Just("func f() {".to_owned()),
        Just("x: ".to_owned()),
        Just("{ a = ".to_owned()),
        Just("let ".to_owned()),
        Just(" in ".to_owned()),
        Just("[".to_owned()),
        Just("]".to_owned()),
        Just("{".to_owned()),
        Just("}".to_owned()),
        Just("(".to_owned()),
        Just(")".to_owned()),
        Just(";\n".to_owned()),
        Just("\n".to_owned()),
        Just("\"".to_owned()),
        Just("<div>".to_owned()),
        Just("if (a) ".to_owned()),
        Just("\0".to_owned()),
        "[a-z0-9 ]{0,6}",
    ];
    prop::collection::vec(piece, 0..40).prop_map(|pieces| pieces.concat())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn any_code_is_measured_without_panicking(pick in any::<u8>(), text in codeish()) {
        let mut bytes = vec![pick];
        bytes.extend_from_slice(text.as_bytes());
        measure_check::measure(&bytes);
    }

    #[test]
    fn any_query_is_read_or_refused(pick in 0u8..7, query in "[()@a-z_ \\[\\]#?!\"]{0,40}") {
        // 3 * 8 puts the measure at query_matches.
        let mut bytes = vec![24 + pick];
        bytes.extend_from_slice(query.as_bytes());
        bytes.extend_from_slice(b"\0fn f() { g(1); }\n");
        measure_check::measure(&bytes);
    }
}
