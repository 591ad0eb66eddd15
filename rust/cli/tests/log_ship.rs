//! `chock log ship` through the real binary: once to a UDP receiver, to a
//! sink that is down, and `--follow` to a TCP receiver while a second
//! shipper of the same sink is turned away.

use std::io::Read;
use std::net::{TcpListener, UdpSocket};
use std::process::{Output, Stdio};
use std::time::{Duration, Instant};

#[path = "log_support/mod.rs"]
mod log_support;
use log_support::State;

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// The `seq="N"` of a syslog message's structured data.
fn seq_of(message: &[u8]) -> u64 {
    let text = String::from_utf8_lossy(message);
    let from = text.find(" seq=\"").expect("a seq") + 6;
    let to = text[from..].find('"').unwrap() + from;
    text[from..to].parse().unwrap()
}

#[test]
fn once_sends_what_the_sink_has_not_had_and_exits_1_when_it_is_down() {
    let state = State::new("log-ship", "once");
    state.append(3);
    let receiver = UdpSocket::bind("127.0.0.1:0").unwrap();
    receiver
        .set_read_timeout(Some(Duration::from_millis(300)))
        .unwrap();
    let to = format!("r=syslog+udp://{}", receiver.local_addr().unwrap());
    let first = state.run(&["log", "ship", "--to", &to]);
    assert!(first.status.success(), "{first:?}");
    assert!(
        stdout(&first).contains("3 sent, 0 skipped, 0 waiting, at seq 3"),
        "{first:?}"
    );
    let mut buf = [0u8; 65536];
    let seqs: Vec<u64> = (0..3)
        .map(|_| {
            let n = receiver.recv(&mut buf).unwrap();
            seq_of(&buf[..n])
        })
        .collect();
    assert_eq!(seqs, [1, 2, 3]);
    let again = state.run(&["log", "ship", "--once", "--to", &to]);
    assert!(stdout(&again).contains("0 sent"), "{again:?}");
    assert!(receiver.recv(&mut buf).is_err(), "nothing is sent twice");

    let down = state.run(&["log", "ship", "--to", "d=syslog+tcp://127.0.0.1:1"]);
    assert_eq!(down.status.code(), Some(1), "{down:?}");
    assert!(
        stdout(&down).contains("3 waiting, at seq 0; not reached"),
        "{down:?}"
    );
}

#[test]
fn follow_ships_each_new_line_and_holds_the_sink_for_itself() {
    let state = State::new("log-ship", "follow");
    state.append(2);
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let to = format!("t=syslog+tcp://{}", listener.local_addr().unwrap());
    let mut follower = state
        .chock(&["log", "ship", "--follow", "--to", &to])
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let (mut stream, _) = listener.accept().unwrap();
    stream
        .set_read_timeout(Some(Duration::from_millis(100)))
        .unwrap();
    let mut received = Vec::new();
    let mut read_until = |count: usize, received: &mut Vec<u8>| {
        let until = Instant::now() + Duration::from_secs(20);
        let mut buf = [0u8; 65536];
        while received.windows(6).filter(|w| w == b" seq=\"").count() < count
            && Instant::now() < until
        {
            if let Ok(n) = stream.read(&mut buf) {
                received.extend_from_slice(&buf[..n]);
            }
        }
    };
    read_until(2, &mut received);
    state.append(3);
    read_until(5, &mut received);

    let second = state.run(&["log", "ship", "--to", &to]);
    let _ = follower.kill();
    let _ = follower.wait();
    let text = String::from_utf8_lossy(&received).into_owned();
    let seqs: Vec<u64> = text
        .match_indices(" seq=\"")
        .map(|(at, _)| seq_of(&received[at..]))
        .collect();
    assert_eq!(seqs, [1, 2, 3, 4, 5], "{text}");
    assert!(second.status.success(), "{second:?}");
    assert!(
        stdout(&second).contains("another `chock log ship` is shipping to the sink `t`"),
        "{second:?}"
    );
}
