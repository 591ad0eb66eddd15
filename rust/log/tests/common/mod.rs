//! Helpers shared by the integration tests.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use chock_log::{AnsweredBy, Break, BreakKind, DecidedBy, Entry, Log, Rotation, Route, Sha256Hash};
use chock_policy::{Decision, Layer};

/// A decision like the ones real callers log; `i` varies the action.
pub fn entry(i: usize) -> Entry {
    Entry {
        route: Route::Cli,
        project: "/src/demo".into(),
        action: format!("call.write_file.n{i}"),
        agent_kind: "coder".into(),
        model: Some("m-1".into()),
        tool: Some("Write".into()),
        decision: if i.is_multiple_of(3) {
            Decision::Deny
        } else {
            Decision::Allow
        },
        decided_by: DecidedBy {
            layer: Layer::Project,
            file: Some("/src/demo/chock.zon".into()),
            line: Some(7),
            policy: None,
            held: None,
            identity: None,
        },
        answered_by: AnsweredBy::Rule,
        subject: Some(format!("file-{i}")),
        scope: None,
    }
}

pub fn big_rotation() -> Rotation {
    Rotation {
        rotate_bytes: 1 << 40,
        keep: 8,
        fsync: false,
    }
}

/// A log in a fresh temporary folder with `n` lines appended.
pub fn log_with(n: usize) -> (tempfile::TempDir, Log) {
    let dir = tempfile::tempdir().unwrap();
    let log = Log::at(dir.path().join("log"), big_rotation());
    for i in 1..=n {
        let appended = log.try_append(&entry(i)).unwrap();
        assert_eq!(appended.head.seq, i as u64);
        assert_eq!(appended.unchained, None);
    }
    (dir, log)
}

pub fn current(log: &Log) -> PathBuf {
    log.dir().join("decisions.jsonl")
}

/// The lines of a file, without newlines (a last line without one included).
pub fn read_lines(path: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(path).unwrap();
    let mut lines: Vec<String> = text.split('\n').map(str::to_owned).collect();
    if lines.last().is_some_and(String::is_empty) {
        lines.pop();
    }
    lines
}

pub fn write_lines(path: &Path, lines: &[String]) {
    let mut text = lines.join("\n");
    text.push('\n');
    std::fs::write(path, text).unwrap();
}

pub fn hash(line: &str) -> Sha256Hash {
    Sha256Hash::of_line(line.as_bytes())
}

/// A fresh log of `n` lines whose file is then rewritten with `change`
/// applied to its lines: the log, the changed lines, and verify's first break.
pub fn after_change(
    n: usize,
    change: impl FnOnce(&mut Vec<String>),
) -> (tempfile::TempDir, Log, Vec<String>, Option<Break>) {
    let (dir, log) = log_with(n);
    let path = current(&log);
    let mut lines = read_lines(&path);
    change(&mut lines);
    write_lines(&path, &lines);
    let broken = log.verify(None).unwrap().broken;
    (dir, log, lines, broken)
}

/// The break verify found, after checking its kind and line.
pub fn expect_break(broken: Option<Break>, kind: BreakKind, line: u64) -> Break {
    let broken = broken.expect("verify found a break");
    assert_eq!((broken.kind, broken.line), (kind, line), "{broken}");
    broken
}
