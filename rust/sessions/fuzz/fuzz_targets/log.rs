//! Arbitrary bytes as a session log; the check is `check/log.rs`, which
//! the crate's `no_panic` test runs on the corpus too.
#![no_main]

#[path = "../check/log.rs"]
mod check;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    check::read_log(data);
});
