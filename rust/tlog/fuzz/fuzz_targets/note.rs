//! Arbitrary bytes as a signed note, a checkpoint and keys; the check is
//! `check/note.rs`, which the crate's `no_panic` test runs on the corpus too.
#![no_main]

#[path = "../check/note.rs"]
mod check;

#[path = "../check/keys.rs"]
mod keys;

libfuzzer_sys::fuzz_target!(|data: &[u8]| check::read_note(data));
