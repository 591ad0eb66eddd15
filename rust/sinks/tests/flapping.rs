//! A receiver that goes down, slows to a stall and comes back while 100
//! writers log and two shippers take turns: every line arrives exactly
//! once, in the log's order.

mod support;

use std::io::Read;
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use chock_sinks::{Sink, Target};

const UP: u8 = 0;
const STALLED: u8 = 1;
const DOWN: u8 = 2;

/// A syslog receiver over TCP (octet-counted frames) whose state the test
/// sets: up, stalled (reading nothing, so the shipper's writes block and
/// time out mid-frame), or down (no listener; open connections are closed
/// from its side and read to their end, as a receiver going away cleanly
/// does). A frame cut off by a closed connection is dropped.
struct Receiver {
    port: u16,
    mode: Arc<AtomicU8>,
    stop: Arc<AtomicBool>,
    got: Arc<Mutex<Vec<(usize, String)>>>,
    server: Option<JoinHandle<()>>,
}

impl Receiver {
    fn start() -> Receiver {
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let mode = Arc::new(AtomicU8::new(UP));
        let stop = Arc::new(AtomicBool::new(false));
        let got = Arc::new(Mutex::new(Vec::new()));
        let server = {
            let (mode, stop, got) = (mode.clone(), stop.clone(), got.clone());
            std::thread::spawn(move || serve(port, &mode, &stop, &got))
        };
        Receiver {
            port,
            mode,
            stop,
            got,
            server: Some(server),
        }
    }

    fn connections(&self) -> usize {
        let got = self.got.lock().unwrap();
        got.iter()
            .map(|(c, _)| c)
            .collect::<std::collections::BTreeSet<_>>()
            .len()
    }

    fn set(&self, mode: u8) {
        self.mode.store(mode, Ordering::SeqCst);
    }

    /// The messages received whole, connection by connection in the
    /// order they were accepted (a receiver may read a closed
    /// connection's last lines after the next connection's first).
    fn messages(&self) -> Vec<String> {
        let mut got = self.got.lock().unwrap().clone();
        got.sort_by_key(|(connection, _)| *connection);
        got.into_iter().map(|(_, message)| message).collect()
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(server) = self.server.take() {
            let _ = server.join();
        }
    }
}

fn serve(
    port: u16,
    mode: &Arc<AtomicU8>,
    stop: &Arc<AtomicBool>,
    got: &Arc<Mutex<Vec<(usize, String)>>>,
) {
    let mut listener: Option<TcpListener> = None;
    let mut connections = Vec::new();
    while !stop.load(Ordering::SeqCst) {
        // Every connection the kernel completed is taken before the
        // listener closes: closing it would reset them, lines and all.
        while let Some((stream, _)) = listener.as_ref().and_then(|l| l.accept().ok()) {
            let (mode, stop, got) = (mode.clone(), stop.clone(), got.clone());
            let number = connections.len();
            connections.push(std::thread::spawn(move || {
                read_frames(stream, &mode, &stop, &mut |message| {
                    got.lock().unwrap().push((number, message));
                })
            }));
        }
        if mode.load(Ordering::SeqCst) == DOWN {
            listener = None;
        } else if listener.is_none() {
            let bound = TcpListener::bind(("127.0.0.1", port)).unwrap();
            bound.set_nonblocking(true).unwrap();
            // A small window, so that a stalled receiver soon stalls its sender.
            nix::sys::socket::setsockopt(&bound, nix::sys::socket::sockopt::RcvBuf, &4096).unwrap();
            listener = Some(bound);
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    for connection in connections {
        connection.join().unwrap();
    }
}

/// Reads frames until the sender closes, closing this side first when
/// the receiver goes down.
fn read_frames(
    mut stream: TcpStream,
    mode: &AtomicU8,
    stop: &AtomicBool,
    got: &mut dyn FnMut(String),
) {
    stream.set_nonblocking(false).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_millis(10)))
        .unwrap();
    let mut pending = Vec::new();
    let mut closing = false;
    let mut buf = [0u8; 4096];
    loop {
        let now = mode.load(Ordering::SeqCst);
        if (now == DOWN || stop.load(Ordering::SeqCst)) && !closing {
            let _ = stream.shutdown(Shutdown::Write);
            closing = true;
        }
        if now == STALLED && !closing {
            std::thread::sleep(Duration::from_millis(5));
            continue;
        }
        match stream.read(&mut buf) {
            Ok(0) => return,
            Ok(n) => pending.extend_from_slice(&buf[..n]),
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) => {}
            Err(_) => return,
        }
        while let Some(message) = take_frame(&mut pending) {
            got(message);
        }
    }
}

/// The first whole `LEN SP MESSAGE` frame, taken off the front.
fn take_frame(pending: &mut Vec<u8>) -> Option<String> {
    let space = pending.iter().position(|&b| b == b' ')?;
    let len: usize = std::str::from_utf8(&pending[..space]).ok()?.parse().ok()?;
    let end = space + 1 + len;
    if pending.len() < end {
        return None;
    }
    let message = String::from_utf8(pending[space + 1..end].to_vec()).unwrap();
    pending.drain(..end);
    Some(message)
}

/// The log line a syslog message carries (after its structured data).
fn line_of(message: &str) -> String {
    let data = message.splitn(7, ' ').nth(6).unwrap();
    let (_, _, rest) = support::structured_data(data).unwrap();
    rest.trim_start().to_owned()
}

#[test]
fn a_flapping_receiver_gets_every_line_once_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let log = support::log(dir.path(), 256 << 10, 1000);
    let receiver = Receiver::start();
    let target: Target = format!("syslog+tcp://127.0.0.1:{}", receiver.port)
        .parse()
        .unwrap();
    let sink = Sink::new("flapping", target).unwrap();
    let finished = Arc::new(AtomicBool::new(false));
    let shippers: Vec<_> = [Duration::from_millis(150), Duration::from_millis(400)]
        .into_iter()
        .map(|round| support::shipper(sink.clone(), log.clone(), round, finished.clone()))
        .collect();
    let writers = support::writers(&log, 100, 20);
    let mut phases = [UP, STALLED, UP, DOWN].into_iter().cycle();
    while writers.iter().any(|w| !w.is_finished()) {
        receiver.set(phases.next().unwrap());
        std::thread::sleep(Duration::from_millis(250));
    }
    for writer in writers {
        writer.join().unwrap();
    }
    receiver.set(UP);
    finished.store(true, Ordering::SeqCst);
    let downs: u64 = shippers.into_iter().map(|s| s.join().unwrap()).sum();
    assert!(downs > 0, "the shippers found the receiver down at times");
    let written: Vec<String> = support::lines(&log)
        .into_iter()
        .map(|(_, text)| text)
        .collect();
    assert_eq!(written.len(), 2000);
    let complete = support::wait_for(Duration::from_secs(20), || {
        receiver.messages().len() >= written.len()
    });
    let received: Vec<String> = receiver.messages().iter().map(|m| line_of(m)).collect();
    assert!(receiver.connections() > 1, "the shippers connected again");
    let missing: Vec<&String> = written
        .iter()
        .filter(|w| !received.contains(w))
        .take(3)
        .collect();
    assert!(
        complete,
        "{} of {} arrived; missing: {missing:#?}",
        received.len(),
        written.len()
    );
    std::thread::sleep(Duration::from_millis(200));
    let received: Vec<String> = receiver.messages().iter().map(|m| line_of(m)).collect();
    let duplicates = received.len()
        - received
            .iter()
            .collect::<std::collections::BTreeSet<_>>()
            .len();
    assert_eq!(duplicates, 0, "lines arrived twice");
    let first_difference = received.iter().zip(&written).position(|(r, w)| r != w);
    assert!(
        received == written,
        "every line once, in the log's order: {} received, {} written, first difference at {first_difference:?}: {:?}",
        received.len(),
        written.len(),
        first_difference.map(|i| (&received[i], &written[i])),
    );
}

/// A receiver that takes a connection and reads nothing: the round ends at
/// its deadline, whether a write is blocked then or not, and once the
/// receiver reads again every line arrives once.
#[test]
fn a_stalled_receiver_costs_a_round_its_deadline_and_no_line() {
    const LINES: u64 = 20_000;
    let dir = tempfile::tempdir().unwrap();
    let log = support::log(dir.path(), 64 << 20, 8);
    // 9 MiB of lines: more than a stalled connection's buffers hold.
    support::fill(&log, "line ", LINES as usize);
    let receiver = Receiver::start();
    receiver.set(STALLED);
    let target: Target = format!("syslog+tcp://127.0.0.1:{}", receiver.port)
        .parse()
        .unwrap();
    let sink = Sink::new("stalled", target).unwrap();
    let deadline = Duration::from_secs(2);
    let mut sent = 0;
    for _ in 0..2 {
        let started = Instant::now();
        let stalled = chock_sinks::ship(&sink, &log, started + deadline).unwrap();
        let took = started.elapsed();
        assert!(
            took < deadline + Duration::from_millis(300),
            "a round took {took:?}"
        );
        assert!(stalled.left > 0, "{stalled:?}");
        sent += stalled.sent;
    }

    receiver.set(UP);
    let rest = chock_sinks::ship(&sink, &log, support::soon()).unwrap();
    assert_eq!((rest.left, rest.down), (0, None));
    assert_eq!(sent + rest.sent, LINES);
    let written: Vec<String> = support::lines(&log)
        .into_iter()
        .map(|(_, text)| text)
        .collect();
    let complete = support::wait_for(Duration::from_secs(30), || {
        receiver.messages().len() >= written.len()
    });
    assert!(
        complete,
        "{} of {} arrived",
        receiver.messages().len(),
        written.len()
    );
    std::thread::sleep(Duration::from_millis(200));
    let received: Vec<String> = receiver.messages().iter().map(|m| line_of(m)).collect();
    assert!(received == written, "every line once, in order");
}
