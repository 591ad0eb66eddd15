//! Arbitrary bytes as a plugin's `plugin.zon`; the check is
//! `check/plugins.rs`, which the crate's `no_panic` test runs on the corpus
//! too.
#![no_main]

#[path = "../check/plugins.rs"]
mod check;

libfuzzer_sys::fuzz_target!(|data: &[u8]| check::read_manifest(data));
