//! Arbitrary bytes into the \`.drv\` ATerm reader; the check is `check/aterm.rs`, which the
//! crate's `no_panic` test runs on the corpus too.
#![no_main]

#[path = "../check/aterm.rs"]
mod check;

libfuzzer_sys::fuzz_target!(|data: &[u8]| check::read_drv(data));
