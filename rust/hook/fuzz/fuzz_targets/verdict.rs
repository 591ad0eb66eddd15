//! Arbitrary bytes as what a policy guard prints as its answer; the check
//! is `check/verdict.rs`, which the crate's `no_panic` test runs on the
//! corpus too.
#![no_main]

#[path = "../check/verdict.rs"]
mod check;

libfuzzer_sys::fuzz_target!(|data: &[u8]| check::read_verdict(data));
