//! Arbitrary bytes as a Nix expression into fix's parser and evaluator;
//! the check is `check/eval.rs`, which chock-fix's `fuzz_corpus` test runs
//! on the corpus too.
#![no_main]

#[path = "../check/eval.rs"]
mod check;

libfuzzer_sys::fuzz_target!(|data: &[u8]| check::evaluate_text(data));
