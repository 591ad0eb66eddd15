//! The `eval` fuzz target's corpus, kept in the repository
//! (`fuzz/corpus/eval`), goes through the same check the target runs
//! (`fuzz/check/eval.rs`): no input makes the parser or the evaluator
//! panic or run past its time limit.

use std::path::Path;

#[path = "../fuzz/check/eval.rs"]
mod check;

#[test]
fn the_eval_corpus_evaluates_without_panicking() {
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus/eval");
    let mut count = 0;
    for entry in std::fs::read_dir(&corpus).expect("the fuzz corpus is in the repository") {
        let path = entry.expect("corpus entry").path();
        let bytes = std::fs::read(&path).expect("corpus file");
        check::evaluate_text(&bytes);
        count += 1;
    }
    assert!(
        count >= 300,
        "the corpus at {} has only {count} files",
        corpus.display()
    );
}
