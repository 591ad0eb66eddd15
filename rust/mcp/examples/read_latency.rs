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

mod latency;

use std::time::Instant;

use latency::{Speaker, Summary, isolated, micros};

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
    let mut command = isolated(&chock, root.path(), &project);
    command.args(["mcp", "--no-approve"]);
    let server = Speaker::start(command).calls("read_file", r#"{"path":"a.txt"}"#, calls);
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
