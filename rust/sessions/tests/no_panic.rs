//! No session log makes the readers panic, hang or disagree with
//! themselves: the file is outside input (anyone who can write the state
//! directory may have changed it). The fuzz corpus kept in the repository
//! (`fuzz/corpus/log`) goes through the check the fuzz target runs
//! (`fuzz/check/`), then proptest's inputs: any bytes, and real logs with
//! one byte changed, cut, or lines swapped.

use chock_sessions::{Event, Sessions, User, verify_bytes};
use chock_testkit::replay_fuzz_corpus;
use proptest::prelude::*;

#[path = "../fuzz/check/log.rs"]
mod log;

#[test]
fn the_log_corpus_reads_without_panicking() {
    replay_fuzz_corpus(env!("CARGO_MANIFEST_DIR"), "log", 4, |bytes| {
        log::read_log(bytes);
    });
}

#[test]
fn the_corpus_holds_a_whole_log_with_custom_events() {
    let whole = std::fs::read(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus/log/whole"),
    )
    .expect("the whole log");
    let checked = verify_bytes(&whole);
    assert_eq!((checked.lines, checked.broken), (8, None));
    let stored = chock_sessions::parse_bytes(&whole).expect("reads");
    assert!(stored.iter().any(|s| s.event.kind() == "policy.self"));
}

/// A real log of `n` events.
fn written(n: usize) -> Vec<u8> {
    let dir = tempfile::tempdir().expect("tempdir");
    let sessions = Sessions::at(dir.path());
    let mut session = sessions.create("run-1-abcd").expect("create");
    for i in 0..n {
        session
            .append(&Event::User(User {
                text: format!("task {i} \"quoted\" ü"),
            }))
            .expect("append");
    }
    std::fs::read(sessions.path("run-1-abcd").expect("path")).expect("read")
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn any_bytes_read_without_panicking(bytes in proptest::collection::vec(any::<u8>(), 0..600)) {
        log::read_log(&bytes);
    }

    #[test]
    fn a_changed_byte_before_the_last_line_is_a_break(at in any::<prop::sample::Index>(), to in any::<u8>()) {
        let bytes = written(4);
        let last_start = bytes[..bytes.len() - 1].iter().rposition(|b| *b == b'\n').expect("lines") + 1;
        let at = at.index(last_start);
        prop_assume!(bytes[at] != to);
        let mut changed = bytes;
        changed[at] = to;
        log::read_log(&changed);
        prop_assert!(verify_bytes(&changed).broken.is_some(), "byte {} changed and not seen", at);
    }

    #[test]
    fn cut_and_swapped_logs_read_without_panicking(cut in 0usize..2000, swap in 0usize..4) {
        let bytes = written(5);
        log::read_log(&bytes[..cut.min(bytes.len())]);
        let text = String::from_utf8(bytes).expect("utf-8");
        let mut lines: Vec<&str> = text.lines().collect();
        lines.swap(swap, swap + 1);
        let swapped = lines.join("\n") + "\n";
        log::read_log(swapped.as_bytes());
        prop_assert!(verify_bytes(swapped.as_bytes()).broken.is_some());
    }
}
