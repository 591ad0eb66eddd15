//! Many writer processes at once, and writers killed in the middle of a run.
//!
//! The writers are this test binary run again: `writer_process` is ignored
//! in a normal run and does the appends when started with `--ignored` and
//! `CHOCK_LOG_TEST_DIR` set.

mod common;

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use chock_log::{BreakKind, Head, Log, Sha256Hash};
use common::*;

const DIR_VAR: &str = "CHOCK_LOG_TEST_DIR";
/// The tests here run one at a time: their writers would otherwise compete
/// for the same two cores, which is not what either test measures.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());
const COUNT_VAR: &str = "CHOCK_LOG_TEST_COUNT";
const ROTATE_VAR: &str = "CHOCK_LOG_TEST_ROTATE_BYTES";

/// A writer process: appends `CHOCK_LOG_TEST_COUNT` lines (0 = until killed)
/// and prints each completed line's `SEQ:SHA256` on stdout right after its
/// append returns.
#[test]
#[ignore = "a writer process started by the other tests in this file"]
fn writer_process() {
    let Some(dir) = std::env::var_os(DIR_VAR) else {
        return;
    };
    let count: usize = std::env::var(COUNT_VAR).unwrap().parse().unwrap();
    let rotation = match std::env::var(ROTATE_VAR) {
        Ok(bytes) => chock_log::Rotation {
            rotate_bytes: bytes.parse().unwrap(),
            keep: 1000,
            fsync: false,
        },
        Err(_) => big_rotation(),
    };
    let log = Log::at(dir, rotation);
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let mut i = 0;
    while count == 0 || i < count {
        i += 1;
        let appended = log.try_append(&entry(i)).unwrap();
        assert_eq!(
            appended.unchained, None,
            "a writer waited past the lock wait"
        );
        writeln!(out, "{}", appended.head).unwrap();
        out.flush().unwrap();
    }
}

fn spawn_writer(dir: &Path, count: usize) -> Child {
    writer_command(dir, count).spawn().unwrap()
}

fn writer_command(dir: &Path, count: usize) -> Command {
    let mut command = Command::new(std::env::current_exe().unwrap());
    command
        .args([
            "writer_process",
            "--exact",
            "--ignored",
            "--nocapture",
            "--quiet",
        ])
        .env(DIR_VAR, dir)
        .env(COUNT_VAR, count.to_string())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    command
}

/// Reads on a thread the `SEQ:SHA256` lines a writer prints (test harness
/// chatter skipped), so that no writer blocks on a full pipe.
fn read_heads(child: &mut Child) -> std::thread::JoinHandle<Vec<Head>> {
    let stdout = child.stdout.take().unwrap();
    std::thread::spawn(move || {
        BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
            .filter_map(|line| line.parse::<Head>().ok())
            .collect()
    })
}

/// `processes` writers at once, `each` appends apiece: every line chained
/// (no writer waited out the lock wait), seq 1 to the total with no gap, one
/// chain verify finds intact, and every line a writer reported is there.
fn many_writers_leave_one_chain(processes: usize, each: usize) {
    let dir = tempfile::tempdir().unwrap();
    let mut children: Vec<Child> = (0..processes)
        .map(|_| spawn_writer(dir.path(), each))
        .collect();
    let readers: Vec<_> = children.iter_mut().map(read_heads).collect();
    for child in &mut children {
        let (status, stderr) = finish(child);
        assert!(status.success(), "a writer failed: {stderr}");
    }
    let printed: Vec<Head> = readers
        .into_iter()
        .flat_map(|r| r.join().unwrap())
        .collect();
    let total = processes * each;
    assert_eq!(printed.len(), total);
    let queue = std::fs::read(dir.path().join("decisions.queue")).unwrap();
    assert_eq!(
        queue[..8],
        (total as u64).to_le_bytes(),
        "one ticket per append, counted in place"
    );

    let log = Log::at(dir.path(), big_rotation());
    let report = log.verify(None).unwrap();
    assert!(report.intact(), "{:?}", report.broken);
    assert_eq!(report.lines, total as u64);
    assert_eq!(report.head.unwrap().seq, total as u64);
    let lines = read_lines(&current(&log));
    let mut by_seq = HashMap::new();
    for (i, line) in lines.iter().enumerate() {
        let record: chock_log::Record = serde_json::from_str(line).unwrap();
        assert_eq!(
            record.seq,
            i as u64 + 1,
            "seq strictly increasing with no gaps"
        );
        assert_eq!(record.unchained, None);
        by_seq.insert(record.seq, hash(line));
    }
    for head in printed {
        assert_eq!(
            by_seq.get(&head.seq),
            Some(&head.hash),
            "what each writer wrote is there"
        );
    }
}

#[test]
fn fifty_processes_times_a_hundred_appends_leave_5000_chained_lines() {
    let _alone = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    many_writers_leave_one_chain(50, 100);
}

/// More writers than this machine has cores by fifty times, three runs in a
/// row: none waits out the lock wait, because writers are served in turn
/// and a waiter gives up only when the log stops moving.
#[test]
fn a_hundred_processes_at_once_are_served_in_turn_run_after_run() {
    let _alone = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    for _ in 0..3 {
        many_writers_leave_one_chain(100, 50);
    }
}

#[test]
fn writers_rotating_the_log_under_each_other_keep_one_chain() {
    let _alone = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let mut children: Vec<Child> = (0..10)
        .map(|_| {
            writer_command(dir.path(), 100)
                .env(ROTATE_VAR, "20000")
                .spawn()
                .unwrap()
        })
        .collect();
    for child in &mut children {
        let (status, stderr) = finish(child);
        assert!(status.success(), "a writer failed: {stderr}");
    }
    let log = Log::at(dir.path(), big_rotation());
    let report = log.verify(None).unwrap();
    assert!(report.intact(), "{:?}", report.broken);
    assert_eq!(report.lines, 1000);
    assert_eq!(report.start, Some(chock_log::ChainStart::Genesis));
    assert!(
        report.files.len() >= 15,
        "rotated many times: {:?}",
        report.files
    );
    let mut seq = 0;
    for line in log.records().unwrap() {
        seq += 1;
        assert_eq!(
            line.unwrap().record.unwrap().seq,
            seq,
            "seq runs on across files"
        );
    }
}

#[test]
fn verify_while_writers_write_and_rotate_finds_no_break() {
    let _alone = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let mut children: Vec<Child> = (0..4)
        .map(|_| {
            writer_command(dir.path(), 300)
                .env(ROTATE_VAR, "8000")
                .spawn()
                .unwrap()
        })
        .collect();
    let log = Log::at(dir.path(), big_rotation());
    let mut walks = 0;
    while children.iter_mut().any(|c| c.try_wait().unwrap().is_none()) {
        let report = log.verify(None).unwrap();
        assert!(
            report.intact(),
            "a walk during writes found {:?}",
            report.broken
        );
        walks += 1;
    }
    for child in &mut children {
        let (status, stderr) = finish(child);
        assert!(status.success(), "a writer failed: {stderr}");
    }
    assert!(
        walks > 3,
        "verify ran while the writers wrote ({walks} walks)"
    );
    assert_eq!(log.verify(None).unwrap().lines, 1200);
}

/// Waits for a writer and returns its status and what it said on stderr.
fn finish(child: &mut Child) -> (std::process::ExitStatus, String) {
    let mut stderr = String::new();
    if let Some(mut pipe) = child.stderr.take() {
        std::io::Read::read_to_string(&mut pipe, &mut stderr).unwrap();
    }
    (child.wait().unwrap(), stderr)
}

#[test]
fn writers_killed_mid_loop_lose_no_completed_line() {
    let _alone = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let log = Log::at(dir.path(), big_rotation());
    for round in 0..4 {
        let mut children: Vec<Child> = (0..3).map(|_| spawn_writer(dir.path(), 0)).collect();
        let readers: Vec<_> = children.iter_mut().map(read_heads).collect();
        std::thread::sleep(Duration::from_millis(300 + 70 * round));
        for child in &mut children {
            child.kill().unwrap(); // SIGKILL
            child.wait().unwrap();
        }
        let completed: Vec<Head> = readers
            .into_iter()
            .flat_map(|r| r.join().unwrap())
            .collect();
        assert!(
            !completed.is_empty(),
            "the writers ran before they were killed"
        );

        let mut in_log: HashMap<u64, Sha256Hash> = HashMap::new();
        for line in log.records().unwrap() {
            let line = line.unwrap();
            if let Ok(record) = &line.record {
                in_log.insert(record.seq, hash(&line.text));
            }
        }
        for head in &completed {
            assert_eq!(
                in_log.get(&head.seq),
                Some(&head.hash),
                "completed line {head} is in the log"
            );
        }

        let report = log.verify(None).unwrap();
        if let Some(broken) = &report.broken {
            let lines = read_lines(&current(&log));
            assert_eq!(
                broken.kind,
                BreakKind::Torn,
                "only a torn tail may show: {broken}"
            );
            assert_eq!(
                broken.line as usize,
                lines.len(),
                "the torn line is the last: {broken}"
            );
            // Later rounds would only find this torn line again, now mid-file.
            return;
        }
        assert!(report.intact());
    }
}
