//! The chain in one process: what appends write, and what verify says about
//! each kind of change made to the files afterwards.

mod common;

use std::os::fd::AsRawFd;
use std::time::Duration;

use chock_log::{BreakKind, ChainStart, Head, KeptHead, Log, Record, Rotation, Sha256Hash};
use common::*;

#[test]
fn appends_chain_from_64_zeros_and_verify_finds_them_intact() {
    let (_dir, log) = log_with(5);
    let lines = read_lines(&current(&log));
    assert_eq!(lines.len(), 5);
    let mut prev = Sha256Hash::ZERO;
    for (i, line) in lines.iter().enumerate() {
        let record: Record = serde_json::from_str(line).unwrap();
        assert_eq!(record.seq, i as u64 + 1);
        assert_eq!(record.prev, prev.to_string());
        assert_eq!(record.entry, entry(i + 1));
        assert_eq!(
            record.ts.len(),
            "2025-01-02T03:04:05.678Z".len(),
            "{}",
            record.ts
        );
        assert!(record.ts.ends_with('Z'));
        prev = hash(line);
    }
    let report = log.verify(None).unwrap();
    assert!(report.intact(), "{report:?}");
    assert_eq!(report.start, Some(ChainStart::Genesis));
    assert_eq!(report.lines, 5);
    let head = Head { seq: 5, hash: prev };
    assert_eq!(report.head, Some(head));
    assert_eq!(log.head().unwrap(), Some(head));
}

#[test]
fn an_empty_log_verifies_and_has_no_head() {
    let dir = tempfile::tempdir().unwrap();
    let log = Log::at(dir.path().join("never-written"), Rotation::default());
    let report = log.verify(None).unwrap();
    assert!(report.intact());
    assert_eq!((report.lines, report.start, report.head), (0, None, None));
    assert_eq!(log.head().unwrap(), None);
}

fn break_of(log: &Log, kind: BreakKind, line: u64) -> chock_log::Break {
    let report = log.verify(None).unwrap();
    assert!(!report.intact());
    expect_break(report.broken, kind, line)
}

#[test]
fn an_edited_line_is_named_at_its_own_line() {
    let (_dir, log, lines, broken) = after_change(10, |lines| {
        let before = lines[3].clone();
        lines[3] = lines[3].replace("\"file-4\"", "\"file-9\"");
        assert_ne!(lines[3], before, "line 4 names file-4");
    });
    let broken = expect_break(broken, BreakKind::Edited, 4);
    assert_eq!(broken.file, current(&log));
    // The link that failed is line 5's: it still names line 4's old hash.
    assert_eq!(broken.expected.unwrap().prev, hash(&lines[3]));
    assert_eq!(broken.found.unwrap().seq, 5);
}

#[test]
fn an_edited_seq_is_named_at_its_own_line() {
    let (_dir, _log, _lines, broken) = after_change(10, |lines| {
        lines[6] = lines[6].replacen("\"seq\":7", "\"seq\":70", 1);
    });
    expect_break(broken, BreakKind::Edited, 7);
}

#[test]
fn an_edited_prev_is_named_at_its_own_line() {
    let (_dir, _log, _lines, broken) = after_change(10, |lines| {
        let old = hash(&lines[4]).to_string();
        lines[5] = lines[5].replace(&old, &"e".repeat(64));
    });
    expect_break(broken, BreakKind::Edited, 6);
}

#[test]
fn a_deleted_line_is_named_where_it_was() {
    let (_dir, _log, _lines, broken) = after_change(10, |lines| {
        lines.remove(3);
    });
    let broken = expect_break(broken, BreakKind::Deleted, 4);
    assert!(broken.why.contains("seq 4"), "{}", broken.why);
    assert_eq!(broken.expected.unwrap().seq, 4);
    assert_eq!(broken.found.unwrap().seq, 5);
}

#[test]
fn a_copied_line_inserted_is_named_at_its_line() {
    let (_dir, _log, _lines, broken) = after_change(10, |lines| {
        let copy = lines[1].clone();
        lines.insert(4, copy);
    });
    expect_break(broken, BreakKind::Inserted, 5);
}

#[test]
fn a_forged_line_that_chains_is_named_as_inserted() {
    let (_dir, _log, _lines, broken) = after_change(10, |lines| {
        let mut forged: Record = serde_json::from_str(&lines[4]).unwrap();
        forged.prev = hash(&lines[3]).to_string();
        forged.entry.action = "secret.use.deploy".into();
        lines.insert(4, serde_json::to_string(&forged).unwrap());
    });
    expect_break(broken, BreakKind::Inserted, 5);
}

#[test]
fn swapped_lines_are_named_as_reordered_at_the_first() {
    let (_dir, _log, _lines, broken) = after_change(10, |lines| {
        lines.swap(3, 4);
    });
    expect_break(broken, BreakKind::Reordered, 4);
}

#[test]
fn a_line_moved_later_is_named_as_reordered_where_it_was_taken() {
    let (_dir, _log, _lines, broken) = after_change(12, |lines| {
        let moved = lines.remove(2);
        lines.insert(8, moved);
    });
    expect_break(broken, BreakKind::Reordered, 3);
}

#[test]
fn deleting_newest_lines_leaves_no_break_but_a_kept_head_shows_it() {
    let (_dir, log) = log_with(10);
    let kept = log.head().unwrap().unwrap();
    let path = current(&log);
    let mut lines = read_lines(&path);
    lines.truncate(7);
    write_lines(&path, &lines);
    assert!(log.verify(None).unwrap().intact());
    let report = log.verify(Some(kept)).unwrap();
    assert!(!report.intact());
    assert!(
        matches!(
            report.kept_head,
            Some(KeptHead::Missing {
                last_seq: Some(7),
                ..
            })
        ),
        "{:?}",
        report.kept_head
    );
}

#[test]
fn a_rewrite_with_every_hash_recomputed_passes_plain_verify_and_fails_the_kept_head() {
    let (_dir, log) = log_with(20);
    let path = current(&log);
    let lines = read_lines(&path);
    let kept = Head {
        seq: 10,
        hash: hash(&lines[9]),
    };
    assert!(
        log.verify(Some(kept)).unwrap().intact(),
        "the kept head is there before the rewrite"
    );

    let mut prev = Sha256Hash::ZERO;
    let mut rewritten = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let mut record: Record = serde_json::from_str(line).unwrap();
        if i == 4 {
            record.entry.decision = chock_policy::Decision::Allow;
            record.entry.action = "secret.use.prod".into();
        }
        record.prev = prev.to_string();
        let text = serde_json::to_string(&record).unwrap();
        prev = hash(&text);
        rewritten.push(text);
    }
    write_lines(&path, &rewritten);

    let plain = log.verify(None).unwrap();
    assert!(
        plain.intact(),
        "a full rewrite is not visible without a kept head: {plain:?}"
    );
    let checked = log.verify(Some(kept)).unwrap();
    assert!(!checked.intact());
    match checked.kept_head {
        Some(KeptHead::Changed { found, line, .. }) => {
            assert_eq!(found, hash(&rewritten[9]));
            assert_eq!(line, 10);
        }
        other => panic!("expected the kept head to have changed, got {other:?}"),
    }
}

#[test]
fn rotation_in_the_middle_of_a_run_keeps_the_chain_across_files() {
    let dir = tempfile::tempdir().unwrap();
    let rotation = Rotation {
        rotate_bytes: 2000,
        keep: 3,
        fsync: false,
    };
    let log = Log::at(dir.path(), rotation);
    for i in 1..=20 {
        log.try_append(&entry(i)).unwrap();
    }
    let report = log.verify(None).unwrap();
    assert!(report.intact(), "{report:?}");
    assert_eq!(
        report.start,
        Some(ChainStart::Genesis),
        "nothing rotated away yet"
    );
    // Rotation goes on while the same log keeps being written.
    for i in 21..=60 {
        log.try_append(&entry(i)).unwrap();
    }
    let report = log.verify(None).unwrap();
    assert!(report.intact(), "{report:?}");
    assert_eq!(
        report.files.len(),
        4,
        "the current file and 3 kept: {:?}",
        report.files
    );
    for file in &report.files {
        let size = std::fs::metadata(file).unwrap().len();
        assert!(size <= 2000, "{} is {size} bytes", file.display());
    }
    assert_eq!(report.head.unwrap().seq, 60);
    let Some(ChainStart::After { seq, prev }) = report.start else {
        panic!("older files were rotated away: {:?}", report.start)
    };
    assert!(seq > 1);
    assert_eq!(
        report.start.unwrap().to_string(),
        format!("chain starts at {prev} (seq {seq})")
    );
    // Each file's first line names the previous file's last line.
    for pair in report.files.windows(2) {
        let older = read_lines(&pair[0]);
        let newer = read_lines(&pair[1]);
        let first: Record = serde_json::from_str(&newer[0]).unwrap();
        assert_eq!(first.prev, hash(older.last().unwrap()).to_string());
    }
    assert!(!dir.path().join("decisions.4.jsonl").exists());
}

#[test]
fn a_missing_rotated_file_is_a_deletion_at_the_next_files_first_line() {
    let dir = tempfile::tempdir().unwrap();
    let log = Log::at(
        dir.path(),
        Rotation {
            rotate_bytes: 1500,
            keep: 8,
            fsync: false,
        },
    );
    for i in 1..=30 {
        log.try_append(&entry(i)).unwrap();
    }
    std::fs::remove_file(dir.path().join("decisions.2.jsonl")).unwrap();
    let broken = break_of(&log, BreakKind::Deleted, 1);
    assert_eq!(broken.file, dir.path().join("decisions.1.jsonl"));
}

#[test]
fn lowering_keep_removes_older_files_at_the_next_rotation() {
    let dir = tempfile::tempdir().unwrap();
    let wide = Rotation {
        rotate_bytes: 1500,
        keep: 8,
        fsync: false,
    };
    let log = Log::at(dir.path(), wide);
    for i in 1..=30 {
        log.try_append(&entry(i)).unwrap();
    }
    assert!(dir.path().join("decisions.5.jsonl").exists());
    let narrow = Log::at(dir.path(), Rotation { keep: 2, ..wide });
    for i in 31..=40 {
        narrow.try_append(&entry(i)).unwrap();
    }
    assert!(dir.path().join("decisions.2.jsonl").exists());
    assert!(!dir.path().join("decisions.3.jsonl").exists());
    assert!(narrow.verify(None).unwrap().intact());
}

#[test]
fn keep_zero_keeps_no_history_and_the_chain_says_where_it_starts() {
    let dir = tempfile::tempdir().unwrap();
    let log = Log::at(
        dir.path(),
        Rotation {
            rotate_bytes: 1000,
            keep: 0,
            fsync: false,
        },
    );
    for i in 1..=10 {
        log.try_append(&entry(i)).unwrap();
    }
    let report = log.verify(None).unwrap();
    assert!(report.intact(), "{report:?}");
    assert_eq!(report.files.len(), 1);
    assert!(matches!(report.start, Some(ChainStart::After { .. })));
}

#[test]
fn a_torn_tail_is_reported_and_the_next_writer_chains_past_it() {
    let (_dir, log) = log_with(5);
    let path = current(&log);
    let before = read_lines(&path);
    let fragment = &before[4][..40];
    let mut bytes = std::fs::read(&path).unwrap();
    bytes.extend_from_slice(fragment.as_bytes());
    std::fs::write(&path, &bytes).unwrap();

    let broken = break_of(&log, BreakKind::Torn, 6);
    assert!(broken.why.contains("torn tail"), "{}", broken.why);
    assert_eq!(
        log.head().unwrap().unwrap().seq,
        5,
        "the head is the last whole line"
    );

    let appended = log.try_append(&entry(6)).unwrap();
    assert_eq!(appended.head.seq, 6);
    assert_eq!(appended.unchained, None);
    let after = read_lines(&path);
    assert_eq!(
        after.len(),
        7,
        "the fragment ended, the new line on its own line"
    );
    assert_eq!(after[5], fragment);
    let new: Record = serde_json::from_str(&after[6]).unwrap();
    assert_eq!(new.prev, hash(&before[4]).to_string());
    break_of(&log, BreakKind::Torn, 6);
}

/// Holds the writers' lock the way another writer would.
fn hold_lock(log: &Log) -> std::fs::File {
    std::fs::create_dir_all(log.dir()).unwrap();
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(log.dir().join("decisions.lock"))
        .unwrap();
    // SAFETY: flock on a descriptor `file` keeps open.
    let rc = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) };
    assert_eq!(rc, 0);
    file
}

#[test]
fn a_writer_that_cannot_get_the_lock_still_writes_its_line_unchained() {
    let (_dir, log) = log_with(3);
    let log = log.with_lock_wait(Duration::from_millis(100));
    let held = hold_lock(&log);
    let started = std::time::Instant::now();
    let appended = log.try_append(&entry(4)).unwrap();
    assert!(started.elapsed() >= Duration::from_millis(100));
    let why = appended.unchained.expect("written unchained");
    assert!(why.contains("lock stayed held"), "{why}");
    assert_eq!(appended.head.seq, 4, "the best guess of its place");
    drop(held);

    let next = log.try_append(&entry(5)).unwrap();
    assert_eq!(next.unchained, None);
    assert_eq!(next.head.seq, 5);
    let lines = read_lines(&current(&log));
    assert_eq!(lines.len(), 5);
    let broken = break_of(&log, BreakKind::Unchained, 4);
    assert!(broken.why.contains("lock stayed held"), "{}", broken.why);
}

#[test]
fn an_unreadable_last_line_makes_the_next_line_unchained() {
    let (_dir, log) = log_with(3);
    let path = current(&log);
    let mut lines = read_lines(&path);
    lines.push("not json at all".into());
    write_lines(&path, &lines);
    let appended = log.try_append(&entry(4)).unwrap();
    let why = appended.unchained.expect("unchained");
    assert!(why.contains("last line could not be read"), "{why}");
    assert_eq!(appended.head.seq, 4);
    let broken = break_of(&log, BreakKind::Edited, 4);
    assert!(broken.why.contains("not a record"), "{}", broken.why);
}

#[test]
fn a_log_that_cannot_be_written_does_not_stop_the_caller() {
    let dir = tempfile::tempdir().unwrap();
    let blocker = dir.path().join("file-not-dir");
    std::fs::write(&blocker, "x").unwrap();
    let log = Log::at(blocker.join("log"), Rotation::default());
    assert!(log.try_append(&entry(1)).is_err());
    assert_eq!(
        log.append(&entry(1)),
        None,
        "the infallible append reports and goes on"
    );
    assert_eq!(log.append(&entry(2)), None);
}

#[test]
fn the_files_are_private_to_their_owner() {
    use std::os::unix::fs::PermissionsExt;
    let (_dir, log) = log_with(1);
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(log.dir()), 0o700);
    assert_eq!(mode(&current(&log)), 0o600);
}

#[test]
fn records_reads_every_line_in_order_and_marks_what_is_not_a_record() {
    let (_dir, log) = log_with(3);
    let path = current(&log);
    let mut bytes = std::fs::read(&path).unwrap();
    bytes.extend_from_slice(b"{\"seq\":4,");
    std::fs::write(&path, bytes).unwrap();
    let lines: Vec<_> = log.records().unwrap().map(Result::unwrap).collect();
    assert_eq!(lines.len(), 4);
    assert_eq!(lines[2].record.as_ref().unwrap().entry, entry(3));
    assert_eq!(lines[2].line, 3);
    assert!(lines[3].record.is_err());
}

#[test]
fn several_lines_in_one_append_chain_one_to_the_next_past_a_torn_tail() {
    let (_dir, log) = log_with(2);
    let path = current(&log);
    let before = read_lines(&path);
    let mut bytes = std::fs::read(&path).unwrap();
    bytes.extend_from_slice(&before[1].as_bytes()[..30]);
    std::fs::write(&path, &bytes).unwrap();

    let appended = log.try_append_all(&[entry(3), entry(4), entry(5)]).unwrap();
    assert_eq!(
        appended.iter().map(|a| a.head.seq).collect::<Vec<_>>(),
        [3, 4, 5]
    );
    assert!(appended.iter().all(|a| a.unchained.is_none()));
    let after = read_lines(&path);
    assert_eq!(after.len(), 6, "the fragment ended, then one line each");
    let mut prev = hash(&before[1]);
    for (i, line) in after[3..].iter().enumerate() {
        let record: Record = serde_json::from_str(line).unwrap();
        assert_eq!(record.entry, entry(i + 3));
        assert_eq!(record.prev, prev.to_string());
        prev = hash(line);
        assert_eq!(appended[i].head.hash, prev);
    }
    assert_eq!(log.head().unwrap().unwrap().hash, prev);
    assert_eq!(log.try_append_all(&[]).unwrap(), []);
    assert_eq!(read_lines(&path).len(), 6, "no entries, no write");
}

#[test]
fn several_lines_without_the_lock_are_each_written_unchained() {
    let (_dir, log) = log_with(1);
    let log = log.with_lock_wait(Duration::from_millis(50));
    let held = hold_lock(&log);
    let appended = log.try_append_all(&[entry(2), entry(3)]).unwrap();
    drop(held);
    assert_eq!(appended.len(), 2);
    for (a, seq) in appended.iter().zip([2, 3]) {
        assert_eq!(a.head.seq, seq);
        let why = a.unchained.as_deref().expect("unchained");
        assert!(why.contains("lock stayed held"), "{why}");
    }
    assert_eq!(read_lines(&current(&log)).len(), 3);
}

#[test]
fn several_lines_that_pass_the_rotation_size_start_the_next_file_together() {
    let dir = tempfile::tempdir().unwrap();
    let rotation = Rotation {
        rotate_bytes: 1000,
        keep: 3,
        fsync: false,
    };
    let log = Log::at(dir.path(), rotation);
    log.try_append_all(&[entry(1), entry(2)]).unwrap();
    log.try_append_all(&[entry(3), entry(4)]).unwrap();
    let report = log.verify(None).unwrap();
    assert!(report.intact(), "{report:?}");
    assert_eq!(report.files.len(), 2, "{:?}", report.files);
    assert_eq!(read_lines(&current(&log)).len(), 2, "both in the new file");
    assert_eq!(report.head.unwrap().seq, 4);
}

#[test]
fn a_stamp_changes_with_each_append_and_rotation_and_only_then() {
    let dir = tempfile::tempdir().unwrap();
    let log = Log::at(
        dir.path().join("log"),
        Rotation {
            rotate_bytes: 600,
            ..Rotation::default()
        },
    );
    let empty = log.stamp().unwrap();
    assert_eq!(
        log.stamp().unwrap(),
        empty,
        "nothing written, nothing changed"
    );
    let mut last = empty;
    for i in 1..=8 {
        log.try_append(&entry(i)).unwrap();
        let now = log.stamp().unwrap();
        assert_ne!(now, last, "append {i} is seen");
        assert_eq!(log.stamp().unwrap(), now);
        last = now;
    }
    let rotated = std::fs::read_dir(log.dir()).unwrap().count();
    assert!(rotated > 2, "the small rotation rotated: {rotated} files");
}
