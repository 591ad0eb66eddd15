//! What the sink tests share: a log to fill, its lines, and the parsers
//! of what the formats write (`formats.rs`, which the `entry` fuzz check
//! reads too).
#![allow(dead_code)]

mod formats;
// Each test uses the parser of its own format.
#[allow(unused_imports)]
pub use formats::{journal_fields, structured_data};

use std::path::Path;
use std::time::{Duration, Instant};

use chock_log::{AnsweredBy, DecidedBy, Entry, Log, Rotation, Route};
use chock_policy::{Decision, Layer};

/// A decision about `subject` in `project`.
pub fn entry(project: &str, subject: &str, decision: Decision, policy: Option<&str>) -> Entry {
    Entry {
        route: Route::Mcp,
        project: project.into(),
        action: "call.write_file".into(),
        agent_kind: "coder".into(),
        model: None,
        tool: None,
        decision,
        decided_by: DecidedBy {
            layer: Layer::Project,
            file: None,
            line: None,
            policy: policy.map(str::to_owned),
            held: None,
            identity: None,
        },
        answered_by: AnsweredBy::Rule,
        subject: Some(subject.into()),
        scope: None,
    }
}

/// The log in `dir`, rotated at `rotate_bytes`, keeping `keep` files.
pub fn log(dir: &Path, rotate_bytes: u64, keep: u32) -> Log {
    Log::at(
        dir,
        Rotation {
            rotate_bytes,
            keep,
            fsync: false,
        },
    )
}

/// Appends `n` plain decisions, subjects `{prefix}{i}`.
pub fn fill(log: &Log, prefix: &str, n: usize) {
    for i in 0..n {
        let entry = entry("/src/demo", &format!("{prefix}{i}"), Decision::Allow, None);
        log.try_append(&entry).unwrap();
    }
}

/// Every whole record's seq and exact text, oldest first.
pub fn lines(log: &Log) -> Vec<(u64, String)> {
    log.records()
        .unwrap()
        .map(Result::unwrap)
        .filter_map(|line| line.record.ok().map(|record| (record.seq, line.text)))
        .collect()
}

/// A round with a generous deadline.
pub fn soon() -> Instant {
    Instant::now() + Duration::from_secs(10)
}

/// Waits until `done` holds, for at most `limit`.
pub fn wait_for(limit: Duration, mut done: impl FnMut() -> bool) -> bool {
    let until = Instant::now() + limit;
    while Instant::now() < until {
        if done() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    done()
}
