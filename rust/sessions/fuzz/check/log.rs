//! The check the `log` fuzz target runs on each input, shared with the
//! crate's `no_panic` test, which feeds it the corpus kept in the
//! repository: a session log of any bytes (a file anyone who can write
//! the state directory may have changed) is read, verified, folded and
//! written out as a transcript without a panic and within the time bound
//! (`chock_testkit::FUZZ_BOUND`); verify and the reader agree: a log that
//! verifies reads whole, one event per line, and a break names a line
//! that is in the file.

use chock_sessions::{Summary, parse_bytes, transcript, verify_bytes};
use chock_testkit::assert_within_bound;

/// Reads `bytes` as a session log every way Chock reads one.
pub fn read_log(bytes: &[u8]) {
    let mut outcome = None;
    assert_within_bound(
        &|| format!("a session log of {} bytes", bytes.len()),
        || {
            let checked = verify_bytes(bytes);
            let parsed = parse_bytes(bytes);
            let summary = Summary::of("run-fuzz", false, Ok(bytes.to_vec()));
            let text = parsed
                .as_ref()
                .ok()
                .map(|stored| transcript("run-fuzz", stored));
            outcome = Some((checked, parsed, summary, text));
        },
    );
    let Some((checked, parsed, summary, text)) = outcome else {
        unreachable!("the reading ran")
    };
    let lines = bytes.split(|b| *b == b'\n').count() as u64;
    match &checked.broken {
        None => {
            let stored = parsed.expect("a log that verifies reads whole");
            assert_eq!(stored.len() as u64, checked.lines);
            assert!(summary.unreadable.is_none());
            assert!(text.is_some());
            for (i, s) in stored.iter().enumerate() {
                assert_eq!(s.seq, i as u64 + 1, "verified seqs count up from 1");
            }
        }
        Some(broken) => assert!(
            (1..=lines).contains(&broken.line),
            "break at line {} of {lines}",
            broken.line
        ),
    }
}
