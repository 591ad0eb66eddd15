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

/// A state folder whose config.zon names one sink, a UDP receiver on
/// loopback, and a started shipper's idle time; and the receiver.
fn configured(name: &str, idle_seconds: u32) -> (State, UdpSocket) {
    let state = State::new("log-ship", name);
    let receiver = UdpSocket::bind("127.0.0.1:0").unwrap();
    receiver
        .set_read_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    state.write_config(&format!(
        ".{{ .log = .{{ .ship_idle_seconds = {idle_seconds} }}, .sinks = .{{ .{{ .name = \"auto\", .to = \"syslog+udp://{}\" }} }} }}\n",
        receiver.local_addr().unwrap()
    ));
    std::fs::create_dir_all(state.0.join("project")).unwrap();
    (state, receiver)
}

impl State {
    /// `chock` run in a project folder with no chock.zon.
    fn configured(&self, args: &[&str]) -> std::process::Command {
        let mut command = self.chock(args);
        command.current_dir(self.0.join("project"));
        command
    }

    /// `chock doctor`'s row for the configured sinks.
    fn sinks_row(&self) -> serde_json::Value {
        let out = self.configured(&["doctor", "--json"]).output().unwrap();
        let report: serde_json::Value =
            serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {out:?}"));
        report["rows"]
            .as_array()
            .unwrap()
            .iter()
            .find(|row| row["name"] == "sinks named")
            .unwrap_or_else(|| panic!("no sinks row: {report}"))
            .clone()
    }
}

/// The seqs `receiver` gets until it has `count` or 20 seconds pass.
fn receive(receiver: &UdpSocket, count: usize) -> Vec<u64> {
    receive_within(receiver, count, Duration::from_secs(20))
}

/// No line arrives within a second (what was sent came once).
fn nothing_more(receiver: &UdpSocket) -> bool {
    receive_within(receiver, 1, Duration::from_secs(1)).is_empty()
}

fn receive_within(receiver: &UdpSocket, count: usize, wait: Duration) -> Vec<u64> {
    let until = Instant::now() + wait;
    let mut buf = [0u8; 65536];
    let mut seqs = Vec::new();
    while seqs.len() < count && Instant::now() < until {
        if let Ok(n) = receiver.recv(&mut buf) {
            seqs.push(seq_of(&buf[..n]));
        }
    }
    seqs
}

#[test]
fn a_line_logged_where_sinks_are_named_starts_a_shipper_that_sends_it() {
    let (state, receiver) = configured("wake", 30);
    let append = |count: &str| {
        let out = state
            .configured(&["log", "append", "--count", count])
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
    };
    append("3");
    assert_eq!(receive(&receiver, 3), [1, 2, 3]);
    append("2");
    assert_eq!(receive(&receiver, 2), [4, 5]);
    // The shipper it started is still there, holding the sink.
    let to = format!("auto=syslog+udp://{}", receiver.local_addr().unwrap());
    let second = state.run(&["log", "ship", "--to", &to]);
    assert!(
        stdout(&second).contains("another `chock log ship` is shipping to the sink `auto`"),
        "{second:?}"
    );
    assert!(nothing_more(&receiver), "nothing is sent twice");
    let row = state.sinks_row();
    assert_eq!(row["state"], "ok", "{row}");
    let detail = row["detail"].as_str().unwrap();
    assert!(
        detail.contains("auto (syslog+udp://")
            && detail.contains("at seq 5 of 5, 0 waiting, a shipper running"),
        "{row}"
    );
}

/// A configured sink nobody answers: the lines wait, and `chock doctor`
/// says what the started shipper met.
#[test]
fn doctor_says_what_a_started_shipper_met() {
    let state = State::new("log-ship", "doctor");
    state.write_config(
        ".{ .log = .{ .ship_idle_seconds = 30 }, .sinks = .{ .{ .name = \"gone\", .to = \"syslog+tcp://127.0.0.1:1\" } } }\n",
    );
    std::fs::create_dir_all(state.0.join("project")).unwrap();
    let out = state
        .configured(&["log", "append", "--count", "2"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let until = Instant::now() + Duration::from_secs(20);
    let row = loop {
        let row = state.sinks_row();
        if row["detail"]
            .as_str()
            .unwrap_or_default()
            .contains("not reached")
            || Instant::now() > until
        {
            break row;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(row["state"], "warn", "{row}");
    let detail = row["detail"].as_str().unwrap();
    assert!(
        detail.contains("gone (syslog+tcp://127.0.0.1:1): at seq 0 of 2, 2 waiting")
            && detail.contains("last round not reached: syslog+tcp://127.0.0.1:1"),
        "{row}"
    );
}

#[test]
fn an_idle_shipper_exits_and_lines_logged_at_once_all_arrive_once() {
    let (state, receiver) = configured("idle", 1);
    let appenders: Vec<_> = (0..8)
        .map(|_| {
            state
                .configured(&["log", "append", "--count", "5"])
                .spawn()
                .unwrap()
        })
        .collect();
    for mut appender in appenders {
        assert!(appender.wait().unwrap().success());
    }
    let mut seqs = receive(&receiver, 40);
    seqs.sort_unstable();
    assert_eq!(seqs, (1..=40).collect::<Vec<u64>>());
    assert!(nothing_more(&receiver), "nothing is sent twice");
    // A shipper run by hand takes its turn once the started one is gone,
    // and with --idle-exit ends by itself once every line is out.
    let started = Instant::now();
    let shipped = loop {
        let out = state
            .configured(&[
                "log",
                "ship",
                "--configured",
                "--follow",
                "--idle-exit",
                "1",
            ])
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        if !stdout(&out).contains("another `chock log ship`") {
            break out;
        }
        assert!(started.elapsed() < Duration::from_secs(20), "{out:?}");
        std::thread::sleep(Duration::from_millis(500));
    };
    assert!(nothing_more(&receiver), "{shipped:?}");
}

/// A sink only a bundle given with `--org-bundle` names: the shipper the
/// decision starts is given that bundle too, and sends the line.
#[test]
fn a_sink_of_a_bundle_given_on_the_command_line_is_shipped_to() {
    let state = State::new("log-ship", "bundle");
    let receiver = UdpSocket::bind("127.0.0.1:0").unwrap();
    receiver
        .set_read_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    state.write_config(".{ .log = .{ .ship_idle_seconds = 1 } }\n");
    let bundle = state.0.join("org.zon");
    std::fs::write(
        &bundle,
        format!(
            ".{{ .sinks = .{{ .{{ .name = \"org\", .to = \"syslog+udp://{}\" }} }} }}\n",
            receiver.local_addr().unwrap()
        ),
    )
    .unwrap();
    let project = state.0.join("project");
    std::fs::create_dir_all(&project).unwrap();
    std::fs::write(
        project.join("chock.zon"),
        ".{ .policy = .{ .rules = .{ .{ .action = \"exec.*\", .decision = .allow } } } }\n",
    )
    .unwrap();
    let out = state
        .configured(&[
            "exec",
            "--org-bundle",
            bundle.to_str().unwrap(),
            "--",
            "/bin/true",
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let seqs = receive(&receiver, 1);
    assert_eq!(seqs.first(), Some(&1), "{out:?}");
}
