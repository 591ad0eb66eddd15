//! Capabilities: a tool reads and writes beneath the workspace through
//! the file tools' descriptors, fetches a loopback host through fetch_url's
//! client, and a capability not granted is never linked.

mod common;

use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::Arc;

use chock_mcp::workspace::Workspace;
use chock_plugins::{Bounds, Capability, Grants, Host, PluginError, Reach};
use serde_json::json;

fn workspace() -> (tempfile::TempDir, Arc<Workspace>) {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let root = dir.path().canonicalize().expect("it has a path");
    let workspace = Workspace::open(&root).expect("the workspace opens");
    (dir, Arc::new(workspace))
}

fn granted(capabilities: &[&str]) -> Grants {
    Grants::new(
        capabilities
            .iter()
            .map(|c| Capability::parse(c).expect("a capability")),
    )
}

#[test]
fn a_tool_reads_and_writes_beneath_the_workspace() {
    let (dir, workspace) = workspace();
    std::fs::write(dir.path().join("in.txt"), "hello from the workspace").expect("written");
    let reach = Reach {
        workspace: Some(workspace),
        runtime: None,
    };
    let loaded = Host::new(Bounds::default())
        .and_then(|h| h.load(&common::copier(), granted(&["fs.read", "fs.write"]), reach))
        .expect("the plugin loads with both granted");
    assert_eq!(
        loaded
            .call("copy", &json!({"path": "in.txt"}))
            .expect("answers"),
        json!("copied")
    );
    let copied = std::fs::read_to_string(dir.path().join("out.txt")).expect("out.txt was written");
    assert_eq!(copied, "hello from the workspace");

    // Outside the workspace, by `..` or by a link, nothing is read.
    let outside = tempfile::tempdir().expect("another folder");
    std::fs::write(outside.path().join("secret"), "not yours").expect("written");
    std::os::unix::fs::symlink(outside.path().join("secret"), dir.path().join("link"))
        .expect("linked");
    for path in ["../secret", "link"] {
        match loaded.call("copy", &json!({ "path": path })) {
            Err(PluginError::Tool(why)) => assert!(why.contains("outside the workspace"), "{why}"),
            other => panic!("{path}: expected a refusal, got {other:?}"),
        }
    }
    let copied = std::fs::read_to_string(dir.path().join("out.txt")).expect("still there");
    assert_eq!(copied, "hello from the workspace");
}

#[test]
fn a_capability_not_granted_is_never_linked() {
    let (_dir, workspace) = workspace();
    let reach = Reach {
        workspace: Some(workspace),
        runtime: None,
    };
    let host = Host::new(Bounds::default()).expect("the engine starts");
    // fs.write refused: the plugin imports it, so it cannot be built at all.
    match host.load(&common::copier(), granted(&["fs.read"]), reach) {
        Err(PluginError::Link(why)) => assert!(why.contains("fs-write"), "{why}"),
        Err(other) => panic!("expected a link failure, got {other}"),
        Ok(_) => panic!("a plugin importing a capability not granted was built"),
    }
}

/// A loopback server answering every request with `body`, once.
fn serve_once(body: &'static str) -> (u16, std::thread::JoinHandle<String>) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("a loopback port");
    let port = listener.local_addr().expect("its address").port();
    let served = std::thread::spawn(move || {
        let (mut stream, _) = listener.accept().expect("a connection");
        let mut request = [0u8; 4096];
        let n = stream.read(&mut request).expect("a request");
        let answer = format!(
            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
            body.len()
        );
        stream.write_all(answer.as_bytes()).expect("answered");
        String::from_utf8_lossy(&request[..n]).into_owned()
    });
    (port, served)
}

/// Fetches the URL its input is (a JSON string) and answers the body.
fn fetcher() -> Vec<u8> {
    let body = format!(
        "(call $fetch (i32.add (local.get 2) (i32.const 1)) (i32.sub (local.get 3) (i32.const 2)) (i32.const 256))
         {failed}
         (call $answer (i32.const 0) (i32.load (i32.const 260)) (i32.load (i32.const 264)))",
        failed = common::on_error(256),
    );
    common::plugin(
        r#"(import "chock:plugin/net-fetch@0.1.0" "fetch" (func $fetch (param i32 i32 i32)))"#,
        "",
        &body,
    )
}

#[test]
fn a_tool_fetches_a_loopback_host_it_was_granted_and_no_other() {
    let runtime = tokio::runtime::Runtime::new().expect("a runtime");
    let reach = Reach {
        workspace: None,
        runtime: Some(runtime.handle().clone()),
    };
    let loaded = Host::new(Bounds::default())
        .and_then(|h| h.load(&fetcher(), granted(&["net.fetch:127.0.0.1"]), reach))
        .expect("the plugin loads");
    let (port, served) = serve_once(r#"{"hello":"plugin"}"#);
    let answer = loaded
        .call("get", &json!(format!("http://127.0.0.1:{port}/data")))
        .expect("the fetch answers");
    assert_eq!(answer, json!({"hello": "plugin"}));
    let request = served.join().expect("the server ran");
    assert!(request.starts_with("GET /data HTTP/1.1"), "{request}");

    // 127.0.0.2 is loopback too, but was not granted.
    match loaded.call("get", &json!("http://127.0.0.2:9/")) {
        Err(PluginError::Tool(why)) => assert!(why.contains("not granted"), "{why}"),
        other => panic!("expected a refusal, got {other:?}"),
    }
}

/// A host that takes the connection and never answers: the fetch is
/// stopped at the call's wall bound, and the call refuses saying so.
#[test]
fn a_fetch_that_never_answers_is_stopped_at_the_call_s_wall_bound() {
    let runtime = tokio::runtime::Runtime::new().expect("a runtime");
    let reach = Reach {
        workspace: None,
        runtime: Some(runtime.handle().clone()),
    };
    let bounds = Bounds {
        wall: std::time::Duration::from_secs(1),
        ..Bounds::default()
    };
    let loaded = Host::new(bounds)
        .and_then(|h| h.load(&fetcher(), granted(&["net.fetch:127.0.0.1"]), reach))
        .expect("the plugin loads");
    let listener = TcpListener::bind("127.0.0.1:0").expect("a loopback port");
    let port = listener.local_addr().expect("its address").port();
    let silent = std::thread::spawn(move || listener.accept().map(|(stream, _)| stream));
    let started = std::time::Instant::now();
    match loaded.call("get", &json!(format!("http://127.0.0.1:{port}/slow"))) {
        Err(PluginError::Tool(why)) => assert!(why.contains("1 s bound is spent"), "{why}"),
        other => panic!("expected the wall bound, got {other:?}"),
    }
    let took = started.elapsed();
    assert!(
        took >= std::time::Duration::from_secs(1) && took < std::time::Duration::from_secs(5),
        "{took:?}"
    );
    drop(silent.join());
}
