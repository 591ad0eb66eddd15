//! Arbitrary bytes as an `add-checkpoint` body, read and answered by a
//! witness; the check is `check/witness.rs`, which the crate's `no_panic`
//! test runs on the corpus too.
#![no_main]

#[path = "../check/witness.rs"]
mod check;

#[path = "../check/keys.rs"]
mod keys;

libfuzzer_sys::fuzz_target!(|data: &[u8]| check::read_request(data));
