//! Arbitrary bytes as every JSON document an image is described by; the
//! check is `check/manifest.rs`, which the crate's `no_panic` test runs on
//! the corpus too.
#![no_main]

#[path = "../check/manifest.rs"]
mod check;

libfuzzer_sys::fuzz_target!(|data: &[u8]| check::read_documents(data));
