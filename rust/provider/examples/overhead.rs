//! What the provider client adds to one request, against the same request
//! made by hand, in one run: a loopback server (the tests' own) answers
//! every request with the same streamed Messages reply (50 text deltas
//! and a tool call whose arguments come in two pieces), and the example
//! sends N requests three ways, one after another, each on a fresh
//! connection (the server closes each):
//!
//! 1. raw: a hand-written HTTP/1.1 POST on a std `TcpStream`, the reply
//!    read to its end and not parsed;
//! 2. reqwest: the same POST through reqwest, the body read in pieces;
//! 3. client: `Client::send`, the reply's stream read and assembled.
//!
//! ```sh
//! cargo run --release -p chock-provider --example overhead -- 2000
//! ```

#[path = "../tests/loopback/mod.rs"]
mod loopback;

use std::io::{Read, Write};
use std::time::{Duration, Instant};

use chock_policy::ProviderKind;
use chock_provider::{Client, Conversation, Model, Request, Settings, Turn};
use loopback::{Piece, Scripted, Server, event};
use serde_json::json;

fn reply() -> String {
    let mut out = event(
        Some("message_start"),
        &json!({"type": "message_start", "message": {"usage": {"input_tokens": 12, "output_tokens": 1}}}),
    );
    out += &event(
        Some("content_block_start"),
        &json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
    );
    for i in 0..50 {
        out += &event(
            Some("content_block_delta"),
            &json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": format!("word{i} ")}}),
        );
    }
    out += &event(
        Some("content_block_start"),
        &json!({"type": "content_block_start", "index": 1, "content_block": {"type": "tool_use", "id": "t1", "name": "read_file"}}),
    );
    for piece in ["{\"path\": \"sr", "c/main.rs\"}"] {
        out += &event(
            Some("content_block_delta"),
            &json!({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": piece}}),
        );
    }
    out += &event(
        Some("message_delta"),
        &json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 80}}),
    );
    out + &event(Some("message_stop"), &json!({"type": "message_stop"}))
}

fn median_p90(mut times: Vec<Duration>) -> (f64, f64) {
    times.sort();
    let at = |q: f64| {
        times
            .get(((times.len() as f64 - 1.0) * q) as usize)
            .map_or(0.0, |d| d.as_secs_f64() * 1e6)
    };
    (at(0.5), at(0.9))
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let n: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(1000);
    let warm = 50;
    let body = reply();
    let scripted = Scripted {
        status: 200,
        headers: vec![("content-type".into(), "text/event-stream".into())],
        body: vec![Piece::Bytes(body.clone().into_bytes())],
    };
    let server = Server::start(vec![scripted; 3 * (n + warm)]);
    let instance = server.instance(ProviderKind::Anthropic);
    let client =
        Client::new(&instance, Some("sk-bench".into()), Settings::default()).expect("client");
    let conversation = Conversation {
        system: Some("be brief".into()),
        turns: vec![Turn::User("read src/main.rs".into())],
        tools: vec![],
    };
    let request = Request {
        model: "m",
        max_tokens: 1024,
        conversation: &conversation,
    };
    let payload = serde_json::to_vec(&json!({"model": "m", "max_tokens": 1024, "stream": true, "system": "be brief", "messages": [{"role": "user", "content": [{"type": "text", "text": "read src/main.rs"}]}]})).expect("json");
    let url = format!("{}/v1/messages", instance.base_url);
    let http = reqwest::Client::builder()
        .no_proxy()
        .build()
        .expect("reqwest");

    let mut raw = Vec::new();
    for i in 0..n + warm {
        let started = Instant::now();
        let mut stream = std::net::TcpStream::connect(("127.0.0.1", server.port)).expect("connect");
        let head = format!(
            "POST /v1/messages HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\nx-api-key: sk-bench\r\ncontent-length: {}\r\n\r\n",
            payload.len()
        );
        stream.write_all(head.as_bytes()).expect("write");
        stream.write_all(&payload).expect("write");
        let mut got = Vec::new();
        stream.read_to_end(&mut got).expect("read");
        assert!(got.len() > body.len());
        if i >= warm {
            raw.push(started.elapsed());
        }
    }

    let mut plain = Vec::new();
    for i in 0..n + warm {
        let started = Instant::now();
        let mut response = http
            .post(&url)
            .header("content-type", "application/json")
            .header("x-api-key", "sk-bench")
            .body(payload.clone())
            .send()
            .await
            .expect("send");
        let mut got = 0;
        while let Some(piece) = response.chunk().await.expect("chunk") {
            got += piece.len();
        }
        assert_eq!(got, body.len());
        if i >= warm {
            plain.push(started.elapsed());
        }
    }

    let mut assembled = Vec::new();
    for i in 0..n + warm {
        let started = Instant::now();
        let reply = client.send(&request, &mut |_| {}).await.expect("reply");
        assert_eq!(reply.tool_calls.len(), 1);
        if i >= warm {
            assembled.push(started.elapsed());
        }
    }

    let (raw_m, raw_p) = median_p90(raw);
    let (plain_m, plain_p) = median_p90(plain);
    let (client_m, client_p) = median_p90(assembled);
    println!(
        "{n} requests each, a {} byte stream of 57 events",
        body.len()
    );
    println!("raw TCP:  median {raw_m:.1} µs, p90 {raw_p:.1} µs");
    println!(
        "reqwest:  median {plain_m:.1} µs, p90 {plain_p:.1} µs ({:.2}x raw)",
        plain_m / raw_m
    );
    println!(
        "client:   median {client_m:.1} µs, p90 {client_p:.1} µs ({:.2}x raw, {:.2}x reqwest; adds {:.1} µs to reqwest)",
        client_m / raw_m,
        client_m / plain_m,
        client_m - plain_m
    );
}
