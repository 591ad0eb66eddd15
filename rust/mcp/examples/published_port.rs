//! A published port against a direct loopback connection, in one run on
//! one machine: connection setup, round trip and throughput.
//!
//! ```sh
//! cargo build --release -p chock
//! cargo run --release -p chock-mcp --example published_port -- target/release/chock
//! ```
//!
//! It starts `chock mcp` on a fresh project that allows `exec.*` and
//! `net.serve.<port>`, starts the same small Python server twice: once as
//! a background `run_command` (inside the sandbox, reached through the
//! published port: host listener, dialer, relay) and once directly on the
//! host's loopback. Then, against each: `SETUPS` fresh connections that
//! each send one byte and read it back (setup + first round trip), `PINGS`
//! one-byte round trips over one connection, and connections that each read
//! 1 GiB the server writes as fast as it can (five to each server, taking
//! turns).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::Command;
use std::time::{Duration, Instant};

mod support;

const SETUPS: usize = 300;
const PINGS: usize = 3000;
const BULK: u64 = 1 << 30;

/// Per connection: `e` echoes byte by byte, `b` writes 1 GiB and closes.
const SERVER: &str = r"
import socket, socketserver, sys
class Handler(socketserver.BaseRequestHandler):
    def handle(self):
        s = self.request
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        mode = s.recv(1)
        if mode == b'e':
            while True:
                b = s.recv(1)
                if not b:
                    return
                s.sendall(b)
        elif mode == b'b':
            block = bytes(1 << 20)
            for _ in range(1024):
                s.sendall(block)
class Server(socketserver.ThreadingTCPServer):
    allow_reuse_address = True
    daemon_threads = True
Server(('127.0.0.1', int(sys.argv[1])), Handler).serve_forever()
";

fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind(("127.0.0.1", 0)).expect("bind");
    listener.local_addr().expect("addr").port()
}

fn connect_until_up(port: u16) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Ok(mut stream) = TcpStream::connect(("127.0.0.1", port)) {
            let mut byte = [0u8; 1];
            if stream.write_all(b"ex").is_ok() && stream.read_exact(&mut byte).is_ok() {
                return;
            }
        }
        assert!(Instant::now() < deadline, "nothing served on {port}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort_unstable();
    samples[samples.len() / 2]
}

struct Figures {
    setup: Duration,
    ping: Duration,
}

/// Rounds of the 1 GiB read, alternating between the two servers so that
/// both see the same load.
const BULK_ROUNDS: usize = 5;

fn measure(port: u16) -> Figures {
    let setup = median(
        (0..SETUPS)
            .map(|_| {
                let start = Instant::now();
                let mut stream = TcpStream::connect(("127.0.0.1", port)).expect("connect");
                stream.set_nodelay(true).ok();
                stream.write_all(b"ex").expect("write");
                let mut byte = [0u8; 1];
                stream.read_exact(&mut byte).expect("echo");
                start.elapsed()
            })
            .collect(),
    );
    let mut stream = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    stream.set_nodelay(true).ok();
    stream.write_all(b"e").expect("write");
    let ping = median(
        (0..PINGS)
            .map(|_| {
                let start = Instant::now();
                stream.write_all(b"x").expect("write");
                let mut byte = [0u8; 1];
                stream.read_exact(&mut byte).expect("echo");
                start.elapsed()
            })
            .collect(),
    );
    Figures { setup, ping }
}

/// GiB/s reading 1 GiB the server writes.
fn bulk(port: u16) -> f64 {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    stream.write_all(b"b").expect("write");
    let mut buffer = vec![0u8; 1 << 20];
    let mut read = 0u64;
    let start = Instant::now();
    loop {
        let n = stream.read(&mut buffer).expect("read");
        if n == 0 {
            break;
        }
        read += n as u64;
    }
    let took = start.elapsed();
    assert_eq!(read, BULK, "the whole GiB came through");
    BULK as f64 / took.as_secs_f64() / f64::from(1u32 << 30)
}

fn median_rate(mut rates: Vec<f64>) -> f64 {
    rates.sort_by(f64::total_cmp);
    rates[rates.len() / 2]
}

fn main() {
    let Some(chock) = std::env::args().nth(1) else {
        eprintln!("usage: published_port PATH/TO/chock");
        std::process::exit(1);
    };
    let root = tempfile::tempdir().expect("a temporary folder");
    let project = root.path().join("project");
    std::fs::create_dir_all(&project).expect("project");
    let published = free_port();
    std::fs::write(
        project.join("chock.zon"),
        format!(
            r#".{{ .policy = .{{ .rules = .{{ .{{ .action = "exec.*", .decision = .allow }}, .{{ .action = "net.serve.{published}", .decision = .allow }} }} }} }}"#
        ),
    )
    .expect("chock.zon");
    let mut child = support::start_mcp(&chock, root.path(), &project);
    let mut stdin = child.stdin.take().expect("stdin");
    let mut stdout = BufReader::new(child.stdout.take().expect("stdout"));
    let mut say = |message: String| {
        writeln!(stdin, "{message}").expect("write");
        stdin.flush().expect("flush");
        let mut line = String::new();
        stdout.read_line(&mut line).expect("read");
        line
    };
    say(r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}"#.into());
    say(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}
{"jsonrpc":"2.0","id":-1,"method":"ping"}"#
        .into());
    let call = serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "run_command",
        "arguments": {"argv": ["python3", "-c", SERVER, published.to_string()], "background": true}}});
    let started = say(call.to_string());
    assert!(started.contains("published: http://127.0.0.1"), "{started}");
    let direct = free_port();
    let mut host_server = Command::new("python3")
        .args(["-c", SERVER, &direct.to_string()])
        .spawn()
        .expect("python3 on the host");
    connect_until_up(published);
    connect_until_up(direct);
    let through = measure(published);
    let straight = measure(direct);
    let (mut through_bulk, mut straight_bulk) = (Vec::new(), Vec::new());
    for _ in 0..BULK_ROUNDS {
        through_bulk.push(bulk(published));
        straight_bulk.push(bulk(direct));
    }
    let (through_bulk, straight_bulk) = (median_rate(through_bulk), median_rate(straight_bulk));
    host_server.kill().ok();
    host_server.wait().ok();
    drop(stdin);
    child.wait().ok();
    let us = |d: Duration| d.as_secs_f64() * 1e6;
    println!("| measurement | direct loopback | published port | ratio |");
    println!("|---|---:|---:|---:|");
    println!(
        "| connect + first echo, median of {SETUPS} | {:.0} µs | {:.0} µs | {:.1}x |",
        us(straight.setup),
        us(through.setup),
        us(through.setup) / us(straight.setup)
    );
    println!(
        "| 1-byte round trip on one connection, median of {PINGS} | {:.0} µs | {:.0} µs | {:.1}x |",
        us(straight.ping),
        us(through.ping),
        us(through.ping) / us(straight.ping)
    );
    println!(
        "| 1 GiB from the server, median of {BULK_ROUNDS} alternating rounds | {straight_bulk:.2} GiB/s | {through_bulk:.2} GiB/s | {:.0}% of direct |",
        100.0 * through_bulk / straight_bulk
    );
}
