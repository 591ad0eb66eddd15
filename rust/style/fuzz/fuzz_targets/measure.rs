//! Any content, in any grammar, under any measure and query; the check is
//! `check/measure.rs`, which the crate's `no_panic` test runs on the corpus too.
#![no_main]

#[path = "../check/measure.rs"]
mod check;

libfuzzer_sys::fuzz_target!(|data: &[u8]| check::measure(data));
