//! Arbitrary bytes as a policy package's eval case (JSON); the check is
//! `check/packages.rs`, which the crate's `no_panic` test runs on the
//! corpus too.
#![no_main]

#[path = "../check/packages.rs"]
#[allow(dead_code)] // each target runs one of the checks
mod check;

libfuzzer_sys::fuzz_target!(|data: &[u8]| check::read_eval_case(data));
