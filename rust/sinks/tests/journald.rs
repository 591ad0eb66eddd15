//! Shipping to a receiver of journald's native protocol: a Unix datagram
//! socket bound here, its entries parsed as journald parses them.

mod support;

use std::collections::BTreeMap;
use std::io::IoSliceMut;
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixDatagram;
use std::time::Duration;

use chock_policy::Decision;
use chock_sinks::{Sink, Target, ship};
use nix::sys::socket::{ControlMessageOwned, MsgFlags, UnixAddr, recvmsg};

/// One entry as received: its fields, and whether it came in a memfd.
struct Received {
    fields: BTreeMap<String, Vec<u8>>,
    through_memfd: bool,
}

impl Received {
    fn text(&self, key: &str) -> Option<String> {
        self.fields
            .get(key)
            .map(|v| String::from_utf8(v.clone()).unwrap())
    }
}

/// The next entry, or `None` when nothing comes within a moment.
fn receive(socket: &UnixDatagram) -> Option<Received> {
    socket
        .set_read_timeout(Some(Duration::from_millis(300)))
        .unwrap();
    let mut buf = vec![0u8; 1 << 17];
    let mut space = nix::cmsg_space!([std::os::fd::RawFd; 1]);
    let mut iov = [IoSliceMut::new(&mut buf)];
    let message = match recvmsg::<UnixAddr>(
        socket.as_raw_fd(),
        &mut iov,
        Some(&mut space),
        MsgFlags::empty(),
    ) {
        Ok(message) => message,
        Err(nix::errno::Errno::EAGAIN) => return None,
        Err(e) => panic!("{e}"),
    };
    let fds: Vec<_> = message
        .cmsgs()
        .unwrap()
        .filter_map(|c| match c {
            ControlMessageOwned::ScmRights(fds) => Some(fds),
            _ => None,
        })
        .flatten()
        .collect();
    let len = message.bytes;
    if let [fd] = fds[..] {
        assert_eq!(len, 0, "a memfd comes in an empty datagram");
        // Opened again by its /proc name: read from the start.
        let data = std::fs::read(format!("/proc/self/fd/{fd}")).unwrap();
        let _ = nix::unistd::close(fd);
        return Some(Received {
            fields: support::journal_fields(&data),
            through_memfd: true,
        });
    }
    Some(Received {
        fields: support::journal_fields(&buf[..len]),
        through_memfd: false,
    })
}

#[test]
fn entries_arrive_once_with_journald_s_fields_and_a_large_one_through_a_memfd() {
    let dir = tempfile::tempdir().unwrap();
    let socket_path = dir.path().join("journal.socket");
    let journal = UnixDatagram::bind(&socket_path).unwrap();
    let log = support::log(&dir.path().join("log"), 8 << 20, 8);
    let large = "x".repeat(300 << 10);
    for entry in [
        support::entry("/src/two\nlines", "first", Decision::Allow, None),
        support::entry("/src/demo", "second", Decision::Deny, Some("no-net")),
        support::entry("/src/demo", &large, Decision::Ask, None),
    ] {
        log.try_append(&entry).unwrap();
    }
    let target: Target = format!("journald+unix://{}", socket_path.display())
        .parse()
        .unwrap();
    let sink = Sink::new("journal", target).unwrap();
    let report = ship(&sink, &log, support::soon()).unwrap();
    assert_eq!((report.sent, report.left, report.down), (3, 0, None));

    let written = support::lines(&log);
    let received: Vec<Received> = (0..3)
        .map(|_| receive(&journal).expect("an entry"))
        .collect();
    for ((seq, text), entry) in written.iter().zip(&received) {
        assert_eq!(entry.text("MESSAGE").as_deref(), Some(text.as_str()));
        assert_eq!(entry.text("CHOCK_SEQ"), Some(seq.to_string()));
        assert_eq!(entry.text("SYSLOG_IDENTIFIER").as_deref(), Some("chock"));
        assert_eq!(entry.text("CHOCK_ROUTE").as_deref(), Some("mcp"));
        assert_eq!(
            entry.text("CHOCK_ACTION").as_deref(),
            Some("call.write_file")
        );
        assert!(entry.text("CHOCK_HOST").is_some_and(|h| !h.is_empty()));
        assert!(entry.text("CHOCK_USER").is_some_and(|u| !u.is_empty()));
    }
    let [first, second, third] = &received[..] else {
        unreachable!()
    };
    assert_eq!(
        first.text("CHOCK_PROJECT").as_deref(),
        Some("/src/two\nlines")
    );
    assert_eq!(first.text("PRIORITY").as_deref(), Some("6"));
    assert_eq!(first.text("CHOCK_POLICY"), None);
    assert_eq!(second.text("PRIORITY").as_deref(), Some("4"));
    assert_eq!(second.text("CHOCK_DECISION").as_deref(), Some("deny"));
    assert_eq!(second.text("CHOCK_POLICY").as_deref(), Some("no-net"));
    assert!(!first.through_memfd && !second.through_memfd);
    assert!(
        third.through_memfd,
        "a 300 KiB entry is too large for a datagram"
    );
    assert!(third.text("MESSAGE").unwrap().contains(&large));

    // Shipped once: a second round sends nothing.
    let again = ship(&sink, &log, support::soon()).unwrap();
    assert_eq!((again.sent, again.left), (0, 0));
    assert!(receive(&journal).is_none());
}

#[test]
fn a_journal_that_is_not_there_keeps_the_lines_for_later() {
    let dir = tempfile::tempdir().unwrap();
    let socket_path = dir.path().join("journal.socket");
    let log = support::log(&dir.path().join("log"), 8 << 20, 8);
    support::fill(&log, "line ", 4);
    let target: Target = format!("journald+unix://{}", socket_path.display())
        .parse()
        .unwrap();
    let sink = Sink::new("journal", target).unwrap();
    let down = ship(&sink, &log, support::soon()).unwrap();
    assert_eq!((down.sent, down.left, down.cursor), (0, 4, 0));
    assert!(down.down.is_some());

    let journal = UnixDatagram::bind(&socket_path).unwrap();
    let up = ship(&sink, &log, support::soon()).unwrap();
    assert_eq!((up.sent, up.left, up.cursor, up.down), (4, 0, 4, None));
    let seqs: Vec<String> = (0..4)
        .map(|_| receive(&journal).unwrap().text("CHOCK_SEQ").unwrap())
        .collect();
    assert_eq!(seqs, ["1", "2", "3", "4"]);
}
