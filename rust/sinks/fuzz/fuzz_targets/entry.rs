//! Arbitrary text as a log line shipped as an RFC 5424 message and a
//! journald entry; the check is `check/entry.rs`, which the crate's
//! `no_panic` test runs on the corpus too.
#![no_main]

#[path = "../check/entry.rs"]
mod check;

libfuzzer_sys::fuzz_target!(|data: &[u8]| check::ship_line(data));
