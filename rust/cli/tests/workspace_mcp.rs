//! `chock mcp --workspace` answers `initialize` at once, whatever the size
//! of the repository: the workspace's files are written while it answers,
//! and the first tool call waits for them.
//! Needs user namespaces and Landlock (`scripts/setup`).

mod sandbox_fixture;

use std::io::{BufRead, BufReader, Write};
use std::time::{Duration, Instant};

use sandbox_fixture::{Fixture, git_stdout as git};

const FILES: usize = 3000;

#[test]
fn initialize_is_answered_before_the_workspace_is_written() {
    let fx = Fixture::host();
    git(&fx.project, &["init", "-q", "-b", "main"]);
    let body = "x".repeat(30 * 1024);
    for i in 0..FILES {
        let dir = fx.project.join(format!("d{}", i / 100));
        std::fs::create_dir_all(&dir).expect("dir");
        std::fs::write(dir.join(format!("f{i}")), format!("{i}\n{body}")).expect("file");
    }
    fx.zon(".{}\n");
    git(&fx.project, &["add", "."]);
    git(&fx.project, &["commit", "-q", "-m", "files"]);
    let mut child = fx
        .chock()
        .args(["mcp", "--workspace", "--no-approve"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("chock mcp");
    let mut stdin = child.stdin.take().expect("stdin");
    let mut stdout = BufReader::new(child.stdout.take().expect("stdout"));
    let mut send = |line: &str| {
        stdin.write_all(line.as_bytes()).expect("send");
        stdin.write_all(b"\n").expect("send");
        stdin.flush().expect("send");
    };
    let mut answer = || {
        let mut line = String::new();
        stdout.read_line(&mut line).expect("answer");
        line
    };
    let started = Instant::now();
    send(
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"test","version":"1"}}}"#,
    );
    let initialized = answer();
    let to_initialize = started.elapsed();
    assert!(
        initialized.contains("\"id\":1") && initialized.contains("chock"),
        "{initialized}"
    );
    let meta = std::fs::read_dir(fx.root().join("state/chock/workspaces"))
        .expect("workspaces")
        .flatten()
        .flat_map(|p| std::fs::read_dir(p.path()).into_iter().flatten().flatten())
        .map(|w| w.path().join("meta.json"))
        .find(|m| m.exists())
        .expect("the workspace is made at start");
    let unfilled_then = std::fs::read_to_string(&meta)
        .expect("meta")
        .contains("\"unfilled\"");
    send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
    let last = FILES - 1;
    send(&format!(
        r#"{{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{{"name":"read_file","arguments":{{"path":"d{}/f{last}"}}}}}}"#,
        last / 100
    ));
    let read = answer();
    let to_first_call = started.elapsed();
    assert!(
        read.contains("\"id\":2") && read.contains(&format!("{last}\\n")),
        "{read}"
    );
    assert!(!read.contains("\"isError\":true"), "{read}");
    let _ = child.kill();
    let _ = child.wait();
    eprintln!(
        "initialize answered in {to_initialize:?} (the tree {} then), the first read_file in {to_first_call:?}",
        if unfilled_then {
            "not yet written"
        } else {
            "already written"
        }
    );
    assert!(
        to_initialize < to_first_call && to_initialize < Duration::from_secs(5),
        "initialize {to_initialize:?}, first call {to_first_call:?}"
    );
    assert!(
        !std::fs::read_to_string(&meta)
            .expect("meta")
            .contains("\"unfilled\""),
        "the tree is written whole by the first call"
    );
}
