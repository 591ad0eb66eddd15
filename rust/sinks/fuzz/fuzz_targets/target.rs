//! Arbitrary text as a `--to` sink address; the check is `check/target.rs`,
//! which the crate's `no_panic` test runs on the corpus too.
#![no_main]

#[path = "../check/target.rs"]
mod check;

libfuzzer_sys::fuzz_target!(|data: &[u8]| check::read_target(data));
