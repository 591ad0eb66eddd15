//! The backlog bound: a sink that fell too far behind, or whose lines were
//! rotated away, skips ahead and counts what it skipped.

mod support;

use std::net::UdpSocket;
use std::time::Duration;

use chock_log::Record;
use chock_sinks::{OVERFLOW_ACTION, Shipper, Sink, Target};

/// A UDP syslog receiver: each datagram one message, read back as the
/// record its message carries.
struct Receiver(UdpSocket);

impl Receiver {
    fn bind() -> Receiver {
        let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
        socket
            .set_read_timeout(Some(Duration::from_millis(300)))
            .unwrap();
        Receiver(socket)
    }

    fn target(&self) -> Target {
        format!("syslog+udp://{}", self.0.local_addr().unwrap())
            .parse()
            .unwrap()
    }

    /// Every record received until a moment passes with none.
    fn records(&self) -> Vec<Record> {
        let mut buf = vec![0u8; 1 << 16];
        let mut records = Vec::new();
        while let Ok(n) = self.0.recv(&mut buf) {
            let message = std::str::from_utf8(&buf[..n]).unwrap();
            let data = message.splitn(7, ' ').nth(6).unwrap();
            let (_, _, line) = support::structured_data(data).unwrap();
            records.push(serde_json::from_str(line.trim_start()).unwrap());
        }
        records
    }
}

fn seqs(records: &[Record]) -> Vec<u64> {
    records.iter().map(|r| r.seq).collect()
}

#[test]
fn a_sink_behind_by_more_than_its_bound_skips_the_oldest_and_logs_the_count() {
    let dir = tempfile::tempdir().unwrap();
    let log = support::log(dir.path(), 8 << 20, 8);
    support::fill(&log, "line ", 100);
    let line_bytes = support::lines(&log)[0].1.len() as u64 + 1;
    let receiver = Receiver::bind();
    let mut sink = Sink::new("bounded", receiver.target()).unwrap();
    // Room for 10 lines and a bit, not 11.
    sink.backlog_bytes = line_bytes * 10 + line_bytes / 2;
    let mut shipper = Shipper::new(sink, log.clone()).unwrap();
    let report = shipper.ship(support::soon()).unwrap();
    assert_eq!((report.skipped, report.sent, report.left), (90, 10, 0));
    assert_eq!(seqs(&receiver.records()), (91..=100).collect::<Vec<_>>());
    let cursor = shipper.cursor().unwrap();
    assert_eq!((cursor.at.seq, cursor.skipped), (100, 90));

    // The count is in the log, and that line is shipped too.
    let lines = support::lines(&log);
    let (seq, text) = lines.last().unwrap();
    let overflow: Record = serde_json::from_str(text).unwrap();
    assert_eq!(
        (*seq, overflow.entry.action.as_str()),
        (101, OVERFLOW_ACTION)
    );
    assert_eq!(
        overflow.entry.subject.as_deref(),
        Some("sink bounded skipped 90 lines, up to seq 90")
    );
    let next = shipper.ship(support::soon()).unwrap();
    assert_eq!((next.skipped, next.sent), (0, 1));
    assert_eq!(receiver.records()[0].entry.action, OVERFLOW_ACTION);
}

#[test]
fn lines_rotated_away_before_they_were_shipped_are_counted_once() {
    let dir = tempfile::tempdir().unwrap();
    // About four lines a file, one rotated file kept.
    let log = support::log(dir.path(), 1500, 1);
    support::fill(&log, "early ", 2);
    let receiver = Receiver::bind();
    let sink = Sink::new("rotated", receiver.target()).unwrap();
    let first = chock_sinks::ship(&sink, &log, support::soon()).unwrap();
    assert_eq!((first.sent, first.cursor), (2, 2));
    assert_eq!(seqs(&receiver.records()), [1, 2]);

    support::fill(&log, "late ", 30);
    let kept = support::lines(&log);
    let oldest_kept = kept[0].0;
    assert!(
        oldest_kept > 3,
        "lines 3 to {} were rotated away",
        oldest_kept - 1
    );
    // Down first: the gap is counted now, and not again when it is back
    // (the overflow line rotates no more lines away: more files are kept).
    let log = support::log(dir.path(), 1500, 100);
    let down: Target = "syslog+tcp://127.0.0.1:1".parse().unwrap();
    let down_sink = Sink {
        target: down,
        ..sink.clone()
    };
    let missed = chock_sinks::ship(&down_sink, &log, support::soon()).unwrap();
    assert_eq!(missed.skipped, oldest_kept - 3);
    assert!(missed.down.is_some());
    let back = chock_sinks::ship(&sink, &log, support::soon()).unwrap();
    assert_eq!(back.skipped, 0);
    let received = seqs(&receiver.records());
    assert_eq!(received.first(), Some(&oldest_kept));
    assert_eq!(
        received.last(),
        support::lines(&log).last().map(|(seq, _)| seq)
    );
}
