//! Feeds arbitrary bytes to the reader, untyped and as a typed configuration,
//! and writes back what it read: no input may panic, and what was read must
//! survive a round trip through the writer (`check/read.rs`, which the
//! crate's `no_panic` test runs on the corpus too).
#![no_main]

#[path = "../check/read.rs"]
mod check;

libfuzzer_sys::fuzz_target!(|data: &[u8]| check::read_every_way(data));
