//! Arbitrary bytes into the NAR reader; the check is `check/nar.rs`, which the
//! crate's `no_panic` test runs on the corpus too.
#![no_main]

#[path = "../check/nar.rs"]
mod check;

libfuzzer_sys::fuzz_target!(|data: &[u8]| check::read_nar(data));
