//! Arbitrary bytes as a provider's reply stream of each API kind; the check
//! is `check/stream.rs`, which the crate's `no_panic` test runs on the
//! corpus too.
#![no_main]

#[path = "../check/stream.rs"]
mod check;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    check::read_stream(data);
});
