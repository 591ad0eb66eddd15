//! What the latency examples share: an MCP server on stdio spoken to one
//! request at a time, and the summary of the times measured.

// Each example that includes this module uses a part of it.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

/// A server started with `command`, initialized, answering one line per request.
pub struct Speaker {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    line: String,
}

impl Speaker {
    pub fn start(mut command: Command) -> Speaker {
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("the server starts");
        let stdin = child.stdin.take().expect("stdin");
        let stdout = BufReader::new(child.stdout.take().expect("stdout"));
        let mut speaker = Speaker {
            child,
            stdin,
            stdout,
            line: String::new(),
        };
        speaker.round_trip(
            r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}"#,
        );
        // A notification has no answer; the ping after it has one.
        speaker.round_trip(
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}
{"jsonrpc":"2.0","id":-1,"method":"ping"}"#,
        );
        speaker
    }

    /// Sends `message` and waits for the response to it (a notification
    /// that comes first is read past); the time it took.
    pub fn round_trip(&mut self, message: &str) -> Duration {
        let start = Instant::now();
        writeln!(self.stdin, "{message}").expect("write");
        self.stdin.flush().expect("flush");
        loop {
            self.line.clear();
            self.stdout.read_line(&mut self.line).expect("read");
            assert!(!self.line.is_empty(), "the server closed its output");
            if self.line.contains("\"id\"") {
                break;
            }
        }
        assert!(
            !self.line.contains("\"isError\":true") && !self.line.contains("\"error\""),
            "a call failed: {}",
            self.line
        );
        start.elapsed()
    }

    /// The answer to the last request.
    pub fn last_answer(&self) -> &str {
        &self.line
    }

    /// `calls` calls of `tool` with `arguments` (JSON), after 50 that warm
    /// the caches and are not counted.
    pub fn calls(&mut self, tool: &str, arguments: &str, calls: usize) -> Vec<Duration> {
        let mut times = Vec::with_capacity(calls);
        for id in 1..=calls + 50 {
            let took = self.round_trip(&format!(
                r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"{tool}","arguments":{arguments}}}}}"#
            ));
            if id > 50 {
                times.push(took);
            }
        }
        times
    }
}

impl Drop for Speaker {
    fn drop(&mut self) {
        self.child.kill().ok();
        self.child.wait().ok();
    }
}

/// A command run with its own HOME, XDG folders and decision log under `root`.
pub fn isolated(program: &str, root: &std::path::Path, cwd: &std::path::Path) -> Command {
    // A relative path names a file here, not in `cwd`.
    let program = std::fs::canonicalize(program).unwrap_or_else(|_| program.into());
    let mut command = Command::new(program);
    command
        .current_dir(cwd)
        .env("HOME", root)
        .env("XDG_STATE_HOME", root.join("state"))
        .env("XDG_CONFIG_HOME", root.join("config"))
        .env("XDG_DATA_HOME", root.join("data"))
        .env_remove("CHOCK_STATE_DIR");
    command
}

pub fn micros(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

pub struct Summary {
    pub median: Duration,
    pub p90: Duration,
    pub p99: Duration,
    pub mean: Duration,
}

impl Summary {
    pub fn of(mut times: Vec<Duration>) -> Summary {
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
