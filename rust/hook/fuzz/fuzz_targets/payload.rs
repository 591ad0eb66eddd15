//! Arbitrary bytes as each agent's hook payload; the check is `check/payload.rs`,
//! which the crate's `no_panic` test runs on the corpus too.
#![no_main]

#[path = "../check/payload.rs"]
mod check;

libfuzzer_sys::fuzz_target!(|data: &[u8]| check::read_payload(data));
