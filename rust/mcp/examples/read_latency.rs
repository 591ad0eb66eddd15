//! The tool server's added latency per `read_file` call, against reading the
//! same file directly, in one run on one machine.
//!
//! ```sh
//! cargo build --release -p chock
//! cargo run --release -p chock-mcp --example read_latency -- target/release/chock [CALLS]
//! ```
//!
//! It starts `chock mcp` on a fresh project (its own HOME, XDG folders and
//! decision log), sends `CALLS` `tools/call read_file` requests one after
//! another over stdio, each answered before the next is sent, and times each
//! round trip; then it reads the same file `CALLS` times with
//! `std::fs::read_to_string` and times each. The difference of the medians
//! is what the server adds: JSON-RPC both ways, the policy's answer, one
//! decision-log line (hash-chained, under its lock) and the confined open.

use std::io::{BufRead, BufReader, Write};
use std::time::{Duration, Instant};

mod support;

fn main() {
    let mut args = std::env::args().skip(1);
    let Some(chock) = args.next() else {
        eprintln!("usage: read_latency PATH/TO/chock [CALLS]");
        std::process::exit(1);
    };
    let calls: usize = args.next().and_then(|n| n.parse().ok()).unwrap_or(2000);
    let root = tempfile::tempdir().expect("a temporary folder");
    let project = root.path().join("project");
    std::fs::create_dir_all(&project).expect("project");
    let file = project.join("a.txt");
    std::fs::write(&file, "x".repeat(4096)).expect("the file");
    let mut child = support::start_mcp(&chock, root.path(), &project);
    let mut stdin = child.stdin.take().expect("stdin");
    let mut stdout = BufReader::new(child.stdout.take().expect("stdout"));
    let mut line = String::new();
    let mut round_trip = |message: &str| {
        let start = Instant::now();
        writeln!(stdin, "{message}").expect("write");
        stdin.flush().expect("flush");
        line.clear();
        stdout.read_line(&mut line).expect("read");
        assert!(!line.contains("\"isError\":true"), "a call failed: {line}");
        start.elapsed()
    };
    round_trip(
        r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}"#,
    );
    // A notification has no answer; the ping after it has one.
    round_trip(
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}
{"jsonrpc":"2.0","id":-1,"method":"ping"}"#,
    );
    let mut server = Vec::with_capacity(calls);
    for id in 1..=calls + 50 {
        let took = round_trip(&format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"read_file","arguments":{{"path":"a.txt"}}}}}}"#
        ));
        // The first calls warm the caches; they are not counted.
        if id > 50 {
            server.push(took);
        }
    }
    drop(stdin);
    child.wait().ok();
    let mut direct = Vec::with_capacity(calls);
    for _ in 0..calls {
        let start = Instant::now();
        let text = std::fs::read_to_string(&file).expect("read");
        std::hint::black_box(text);
        direct.push(start.elapsed());
    }
    let server = Summary::of(server);
    let direct = Summary::of(direct);
    println!("read_file over chock mcp ({calls} calls): {server}");
    println!("std::fs::read_to_string   ({calls} reads): {direct}");
    println!(
        "added per call: {:.1} µs at the median ({:.0}× the direct read)",
        micros(server.median.saturating_sub(direct.median)),
        server.median.as_secs_f64() / direct.median.as_secs_f64().max(1e-9)
    );
}

fn micros(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

struct Summary {
    median: Duration,
    p90: Duration,
    p99: Duration,
    mean: Duration,
}

impl Summary {
    fn of(mut times: Vec<Duration>) -> Summary {
        times.sort();
        let at = |q: f64| times[((times.len() - 1) as f64 * q) as usize];
        Summary {
            median: at(0.5),
            p90: at(0.9),
            p99: at(0.99),
            mean: times.iter().sum::<Duration>() / times.len() as u32,
        }
    }
}

impl std::fmt::Display for Summary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "median {:.1} µs, p90 {:.1} µs, p99 {:.1} µs, mean {:.1} µs",
            micros(self.median),
            micros(self.p90),
            micros(self.p99),
            micros(self.mean)
        )
    }
}
