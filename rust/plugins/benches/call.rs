//! A trivial tool (no input, a constant JSON answer) called as a
//! WebAssembly plugin and as the tool of an MCP stdio server written with
//! the official Python SDK (FastMCP): each loaded or started once and called,
//! and each loaded or started for every call.
//!
//! Needs `python3` with the `mcp` package on the path.

use std::hint::black_box;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::Duration;

use chock_plugins::{Bounds, Grants, Host, Reach};
use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::{Value, json};

/// What both tools answer.
fn answer() -> Value {
    json!({"ok": true})
}

/// A plugin whose tool `t` answers `{"ok":true}`.
fn trivial_plugin() -> Vec<u8> {
    chock_plugins::fixtures::plugin(
        "",
        r#"(data (i32.const 16) "{\"ok\":true}")"#,
        "(call $answer (i32.const 0) (i32.const 16) (i32.const 11))",
    )
}

/// An MCP stdio server whose tool `t` answers `{"ok": true}`.
const SERVER: &str = r#"from mcp.server.fastmcp import FastMCP

server = FastMCP("bench")


@server.tool()
def t() -> dict:
    """Answers a constant."""
    return {"ok": True}


server.run()
"#;

/// The interpreter itself, not a launcher in front of it (a pyenv shim is
/// a shell script that would add its own start to every spawn).
fn python() -> PathBuf {
    let out = Command::new("python3")
        .args(["-c", "import sys, mcp; print(sys.executable)"])
        .output()
        .expect("python3 runs");
    assert!(
        out.status.success(),
        "python3 with the `mcp` package is needed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    PathBuf::from(String::from_utf8_lossy(&out.stdout).trim())
}

/// One MCP server on stdio, killed when dropped.
struct McpServer {
    child: Child,
    input: ChildStdin,
    output: BufReader<ChildStdout>,
    next_id: u64,
}

impl McpServer {
    /// Spawns the server and does the handshake: `initialize`, then
    /// `notifications/initialized`.
    fn start(python: &Path, script: &Path) -> McpServer {
        let mut child = Command::new(python)
            .arg(script)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("the server starts");
        let input = child.stdin.take().expect("its stdin is piped");
        let output = BufReader::new(child.stdout.take().expect("its stdout is piped"));
        let mut server = McpServer {
            child,
            input,
            output,
            next_id: 0,
        };
        let params = json!({
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "chock-bench", "version": "0"},
        });
        server.request("initialize", params);
        server.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        server
    }

    /// One `tools/call` of `t`, its answer: the JSON its text holds, as a
    /// plugin's answer is.
    fn call(&mut self) -> Value {
        let result = self.request("tools/call", json!({"name": "t", "arguments": {}}));
        assert_eq!(result["isError"], json!(false), "the tool fails: {result}");
        let text = result["content"][0]["text"]
            .as_str()
            .expect("the answer is text");
        serde_json::from_str(text).expect("the text is JSON")
    }

    /// Sends a request and reads lines until its response, passing over
    /// the server's notifications.
    fn request(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = json!(self.next_id);
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        loop {
            let mut line = String::new();
            let read = self.output.read_line(&mut line).expect("stdout reads");
            assert!(read > 0, "the server closed its stdout before answering");
            let mut message: Value = serde_json::from_str(&line).expect("a JSON-RPC line");
            if message["id"] == id {
                assert!(message["error"].is_null(), "{method} fails: {message}");
                return message["result"].take();
            }
        }
    }

    fn send(&mut self, message: &Value) {
        writeln!(self.input, "{message}").expect("stdin writes");
        self.input.flush().expect("stdin flushes");
    }
}

impl Drop for McpServer {
    fn drop(&mut self) {
        // Already gone is fine: the wait reaps it either way.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn plugin(c: &mut Criterion) {
    let host = Host::new(Bounds::default()).expect("the engine starts");
    let wasm = trivial_plugin();
    let load_and_call = || {
        let loaded = host
            .load(black_box(&wasm), Grants::default(), Reach::default())
            .expect("the plugin loads");
        loaded.call("t", &json!({})).expect("the tool answers")
    };
    assert_eq!(load_and_call(), answer());
    c.bench_function("plugin/load+call", |b| b.iter(&load_and_call));
    let loaded = host
        .load(&wasm, Grants::default(), Reach::default())
        .expect("the plugin loads");
    c.bench_function("plugin/call", |b| {
        b.iter(|| loaded.call("t", &json!({})).expect("the tool answers"))
    });
}

fn mcp_stdio(c: &mut Criterion) {
    let python = python();
    let dir = tempfile::tempdir().expect("a temporary folder");
    let script = dir.path().join("server.py");
    std::fs::write(&script, SERVER).expect("the server script writes");
    let spawn_and_call = || McpServer::start(&python, &script).call();
    assert_eq!(spawn_and_call(), answer());
    let mut group = c.benchmark_group("mcp-stdio");
    // Each start takes about half a second: ten of them, not a hundred.
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(10));
    group.bench_function("spawn+initialize+call", |b| b.iter(&spawn_and_call));
    group.finish();
    let mut server = McpServer::start(&python, &script);
    assert_eq!(server.call(), answer());
    c.bench_function("mcp-stdio/call", |b| b.iter(|| server.call()));
}

criterion_group!(benches, plugin, mcp_stdio);
criterion_main!(benches);
