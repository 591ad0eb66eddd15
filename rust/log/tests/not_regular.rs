//! A log file that is not a regular file (a FIFO, a device, a link to one)
//! in place of `decisions.jsonl` or a rotated file: append, verify and
//! show each answer at once with an error naming it, never wait on it and
//! never lose a line into it. Each call runs in a thread with a deadline,
//! so a call that hangs fails the test instead of stalling it.

mod common;

use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Duration;

use chock_log::{Log, LogError};
use common::*;

const DEADLINE: Duration = Duration::from_secs(10);

fn mkfifo(path: &Path) {
    let status = std::process::Command::new("mkfifo")
        .arg(path)
        .status()
        .unwrap();
    assert!(status.success());
}

/// What `f` returns, or a failure when it does not return by the deadline.
fn within_deadline<T: Send + 'static>(what: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(DEADLINE)
        .unwrap_or_else(|_| panic!("{what} did not return within {DEADLINE:?}: it hangs"))
}

/// The error names `path` and says it is not a regular file.
fn refused(what: &str, error: LogError, path: &Path) {
    let text = error.to_string();
    assert!(
        matches!(error, LogError::NotRegular { .. }),
        "{what}: {text}"
    );
    assert!(text.contains(&path.display().to_string()), "{what}: {text}");
    assert!(
        text.contains("not a regular file") && text.contains("remove it"),
        "{what}: {text}"
    );
}

/// Append, verify, head and show of `log`, each refused naming `path`.
fn all_refused(log: &Log, path: &Path) {
    let (l, p) = (log.clone(), path.to_owned());
    let e = within_deadline("append", move || l.try_append(&entry(9)).unwrap_err());
    refused("append", e, &p);
    let l = log.clone();
    let e = within_deadline("verify", move || l.verify(None).unwrap_err());
    refused("verify", e, path);
    let l = log.clone();
    let e = within_deadline("head", move || l.head().unwrap_err());
    refused("head", e, path);
    let l = log.clone();
    let e = within_deadline("show", move || match l.records() {
        Err(e) => e,
        Ok(records) => records
            .filter_map(Result::err)
            .next()
            .expect("show read every line of a log holding a FIFO"),
    });
    refused("show", e, path);
}

/// Nothing was written into the FIFO: a reader opened now finds it empty.
fn nothing_in(fifo: &Path) {
    let mut reader = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(fifo)
        .unwrap();
    let mut buf = [0u8; 64];
    match reader.read(&mut buf) {
        Ok(n) => assert_eq!(n, 0, "a line went into the FIFO"),
        Err(e) => assert_eq!(e.kind(), std::io::ErrorKind::WouldBlock),
    }
}

#[test]
fn a_fifo_as_the_current_file_is_refused_by_every_reader_and_the_writer() {
    let (_dir, log) = log_with(3);
    let path = current(&log);
    std::fs::remove_file(&path).unwrap();
    mkfifo(&path);
    all_refused(&log, &path);
    nothing_in(&path);
    // The appending that never fails a decision still reports it.
    let l = log;
    assert!(within_deadline("append", move || l.append(&entry(10))).is_none());
    nothing_in(&path);
}

#[test]
fn a_fifo_as_a_rotated_file_is_refused() {
    let (_dir, log) = log_with(3);
    let rotated: PathBuf = log.dir().join("decisions.1.jsonl");
    mkfifo(&rotated);
    let l = log.clone();
    let e = within_deadline("verify", move || l.verify(None).unwrap_err());
    refused("verify", e, &rotated);
    let l = log.clone();
    let e = within_deadline("show", move || l.records().err().unwrap());
    refused("show", e, &rotated);
    // A writer chains to the current file's last line and reads no further.
    let l = log;
    assert!(within_deadline("append", move || l.try_append(&entry(4))).is_ok());
}

#[test]
fn a_link_to_a_fifo_or_a_device_is_refused_not_followed() {
    for target in ["fifo", "/dev/zero"] {
        let (dir, log) = log_with(2);
        let path = current(&log);
        std::fs::remove_file(&path).unwrap();
        let target = if target == "fifo" {
            let fifo = dir.path().join("elsewhere");
            mkfifo(&fifo);
            fifo
        } else {
            PathBuf::from(target)
        };
        std::os::unix::fs::symlink(&target, &path).unwrap();
        all_refused(&log, &path);
    }
}

#[test]
fn a_device_as_the_current_file_is_refused() {
    let (_dir, log) = log_with(2);
    let path = current(&log);
    std::fs::remove_file(&path).unwrap();
    // A character device node of its own, the same device as /dev/null
    // (making one needs root, as the tests run).
    let status = std::process::Command::new("mknod")
        .arg(&path)
        .args(["c", "1", "3"])
        .status()
        .unwrap();
    assert!(status.success(), "mknod needs root");
    all_refused(&log, &path);
}
