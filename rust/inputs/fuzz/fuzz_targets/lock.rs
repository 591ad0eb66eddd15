//! Arbitrary bytes as a `flake.lock`; the check is `check/lock.rs`, which
//! the crate's `no_panic` test runs on the corpus too.
#![no_main]

#[path = "../check/lock.rs"]
mod check;

libfuzzer_sys::fuzz_target!(|data: &[u8]| check::read_lock(data));
