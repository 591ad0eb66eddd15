//! A full disk: a write cut short must not leave a fragment behind, and the
//! chain goes on once there is room again.
//!
//! The check runs in a private mount namespace (`unshare --user
//! --map-root-user --mount`), where this test binary mounts a small real
//! tmpfs and fills it: `in_a_full_tmpfs` is ignored in a normal run and
//! does the work when started with `--ignored` and `CHOCK_LOG_FULL_DISK` set.

mod common;

use std::io::ErrorKind;
use std::process::Command;

use chock_log::{Log, LogError};
use common::*;

const MOUNT_VAR: &str = "CHOCK_LOG_FULL_DISK";

#[test]
fn a_full_disk_leaves_no_fragment_and_the_chain_goes_on_when_room_returns() {
    let mount = tempfile::tempdir().unwrap();
    let out = Command::new("unshare")
        .args(["--user", "--map-root-user", "--mount", "--"])
        .arg(std::env::current_exe().unwrap())
        .args(["in_a_full_tmpfs", "--exact", "--ignored", "--nocapture"])
        .env(MOUNT_VAR, mount.path())
        .output()
        .expect("unshare (util-linux) runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("1 passed"),
        "the check ran inside the namespace: {stdout}"
    );
}

#[test]
#[ignore = "run by the test above inside a private mount namespace"]
fn in_a_full_tmpfs() {
    let Some(mount) = std::env::var_os(MOUNT_VAR) else {
        return;
    };
    let status = Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=32k", "tmpfs"])
        .arg(&mount)
        .status()
        .unwrap();
    assert!(status.success(), "mount a 32 KiB tmpfs");
    let dir = std::path::Path::new(&mount).join("log");
    let log = Log::at(&dir, big_rotation());
    // Lines of about 1.2 KB, so that one of them straddles the last free page.
    let long = |i: usize| {
        let mut entry = entry(i);
        entry.subject = Some(format!("{i}-{}", "s".repeat(1200)));
        entry
    };
    // Take most of the room with a file that can be removed later.
    std::fs::write(dir.parent().unwrap().join("filler"), vec![7u8; 12 << 10]).unwrap();
    let mut written = 0;
    let error = loop {
        match log.try_append(&long(written + 1)) {
            Ok(appended) => {
                written += 1;
                assert_eq!(appended.head.seq, written as u64);
                assert_eq!(appended.unchained, None);
            }
            Err(error) => break error,
        }
        assert!(written < 100, "the 32 KiB disk never filled");
    };
    match &error {
        LogError::Write { source, cut, .. } => {
            assert_eq!(source.kind(), ErrorKind::StorageFull, "{error}");
            assert!(cut.is_none(), "the part written was cut off: {error}");
        }
        other => panic!("expected a write error, got {other}"),
    }
    assert!(written > 2, "some lines fitted before the disk filled");
    let text = std::fs::read(current(&log)).unwrap();
    assert_eq!(text.last(), Some(&b'\n'), "no fragment left at the end");
    assert_eq!(read_lines(&current(&log)).len(), written);
    let report = log.verify(None).unwrap();
    assert!(report.intact(), "{:?}", report.broken);

    // Room again: the chain goes on from the last whole line.
    std::fs::remove_file(dir.parent().unwrap().join("filler")).unwrap();
    let appended = log.try_append(&long(written + 1)).unwrap();
    assert_eq!(appended.head.seq, written as u64 + 1);
    assert_eq!(appended.unchained, None);
    let report = log.verify(None).unwrap();
    assert!(report.intact(), "{:?}", report.broken);
    assert_eq!(report.lines, written as u64 + 1);
    println!("{written} lines fitted before the disk was full");
}
