//! Each kind of change, at every position in a log: verify names the kind
//! and the line, and reads any bytes at all without panicking.

mod common;

use chock_log::{BreakKind, ChainStart, Log};
use common::*;
use proptest::prelude::*;

/// The break's kind and line after `change`, or `None` when verify finds
/// the chain intact.
fn verdict(
    n: usize,
    change: impl FnOnce(&mut Vec<String>),
) -> (tempfile::TempDir, Log, Option<(BreakKind, u64)>) {
    let (dir, log, _lines, broken) = after_change(n, change);
    (dir, log, broken.map(|b| (b.kind, b.line)))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(40))]

    #[test]
    fn a_deleted_line_is_named_where_it_was(n in 3usize..10, at in 0usize..10) {
        let at = at % n;
        let (_dir, log, found) = verdict(n, |lines| { lines.remove(at); });
        if at == 0 {
            // The oldest line gone looks like history rotated away.
            prop_assert_eq!(found, None);
            let start = log.verify(None).unwrap().start;
            prop_assert!(matches!(start, Some(ChainStart::After { seq: 2, .. })), "{:?}", start);
        } else if at == n - 1 {
            prop_assert_eq!(found, None, "the newest line gone leaves no break");
        } else {
            prop_assert_eq!(found, Some((BreakKind::Deleted, at as u64 + 1)));
        }
    }

    #[test]
    fn an_edited_line_is_named_at_its_line(n in 2usize..10, at in 0usize..10) {
        let at = at % n;
        let (_dir, _log, found) = verdict(n, |lines| lines[at] = lines[at].replace("\"coder\"", "\"reviewer\""));
        if at == n - 1 {
            prop_assert_eq!(found, None, "only a kept head shows an edit of the newest line");
        } else {
            prop_assert_eq!(found, Some((BreakKind::Edited, at as u64 + 1)));
        }
    }

    #[test]
    fn swapped_neighbours_are_named_at_the_first(n in 2usize..10, at in 0usize..10) {
        let at = at % (n - 1);
        let (_dir, _log, found) = verdict(n, |lines| lines.swap(at, at + 1));
        prop_assert_eq!(found, Some((BreakKind::Reordered, at as u64 + 1)));
    }

    #[test]
    fn a_copied_line_is_named_where_it_was_put(n in 2usize..10, from in 0usize..10, to in 1usize..10) {
        let from = from % n;
        let to = 1 + to % (n - 1);
        let (_dir, _log, found) = verdict(n, |lines| {
            let copy = lines[from].clone();
            lines.insert(to, copy);
        });
        let named = to as u64 + 1;
        if from == to {
            // A copy put just before its original is the same bytes twice in
            // a row: naming either of the two is right.
            prop_assert!(
                found == Some((BreakKind::Inserted, named)) || found == Some((BreakKind::Inserted, named + 1)),
                "{:?}", found
            );
        } else {
            prop_assert_eq!(found, Some((BreakKind::Inserted, named)));
        }
    }

    #[test]
    fn any_bytes_read_without_panic(
        n in 0usize..6,
        junk in proptest::collection::vec(any::<u8>(), 0..400),
        at in 0usize..3000,
    ) {
        let (_dir, log) = log_with(n);
        let path = current(&log);
        std::fs::create_dir_all(log.dir()).unwrap();
        let mut bytes = std::fs::read(&path).unwrap_or_default();
        let at = at.min(bytes.len());
        bytes.splice(at..at, junk);
        std::fs::write(&path, &bytes).unwrap();
        let report = log.verify(None).unwrap();
        let _ = report.to_json().unwrap();
        let _ = log.head().unwrap();
        prop_assert!(log.records().unwrap().all(|line| line.is_ok()));
        // A writer still appends after any damage, chained or saying why not.
        let appended = log.try_append(&entry(99)).unwrap();
        prop_assert!(appended.head.seq >= 1);
    }
}
