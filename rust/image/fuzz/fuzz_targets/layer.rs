//! Arbitrary bytes as one layer (tar, gzip or zstd) written into a fresh
//! tree; the check is `check/layer.rs`, which the crate's `no_panic` test
//! runs on the corpus too.
#![no_main]

#[path = "../check/layer.rs"]
mod check;

libfuzzer_sys::fuzz_target!(|data: &[u8]| check::write_layer(data));
