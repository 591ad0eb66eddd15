//! The `eval` fuzz target's corpus, kept in the repository
//! (`fuzz/corpus/eval`), goes through the same check the target runs
//! (`fuzz/check/eval.rs`): no input makes the parser or the evaluator
//! panic or run past its time limit.

use chock_testkit::replay_fuzz_corpus;

#[path = "../fuzz/check/eval.rs"]
mod check;

#[test]
fn the_eval_corpus_evaluates_without_panicking() {
    replay_fuzz_corpus(
        env!("CARGO_MANIFEST_DIR"),
        "eval",
        300,
        check::evaluate_text,
    );
}
