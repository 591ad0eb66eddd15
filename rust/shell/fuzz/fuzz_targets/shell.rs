//! Arbitrary bytes as a shell command line; the check is `check/shell.rs`,
//! which the crate's `no_panic` test runs on the corpus too.
#![no_main]

#[path = "../check/shell.rs"]
mod check;

libfuzzer_sys::fuzz_target!(|data: &[u8]| check::read_shell(data));
