//! Each engine against a local server speaking its real JSON answers on
//! loopback: results read as title, URL and snippet within the count;
//! the key sent in the engine's own header and never in a sentence; 429,
//! 401/403 and 5xx refused saying what to do; a slow answer refused at
//! the bound; a huge answer refused, with a length and without; a body
//! that is not JSON refused.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use chock_policy::{KeySource, SearchEngine, SearchKind};
use chock_search::SearchError;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

const KEY: &str = "sk-search-SECRET-0123456789";

/// What the server answers: status, extra headers, body, a delay first,
/// and whether to send a Content-Length.
#[derive(Clone)]
struct Answer {
    status: u16,
    headers: Vec<(&'static str, String)>,
    body: Vec<u8>,
    delay: Duration,
    length: bool,
}

fn json(status: u16, body: serde_json::Value) -> Answer {
    Answer {
        status,
        headers: vec![("content-type", "application/json".into())],
        body: body.to_string().into_bytes(),
        delay: Duration::ZERO,
        length: true,
    }
}

/// One request as the server read it: its head and its body.
#[derive(Clone, Debug)]
struct Seen {
    head: String,
    body: String,
}

struct Server {
    url: String,
    seen: Arc<Mutex<Vec<Seen>>>,
}

async fn serve(answer: Answer) -> Server {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("addr"));
    let seen = Arc::new(Mutex::new(Vec::new()));
    let record = Arc::clone(&seen);
    tokio::spawn(async move {
        loop {
            let Ok((mut stream, _)) = listener.accept().await else {
                return;
            };
            let answer = answer.clone();
            let record = Arc::clone(&record);
            tokio::spawn(async move {
                let mut bytes = Vec::new();
                let mut buf = [0u8; 4096];
                let head_end = loop {
                    let n = stream.read(&mut buf).await.unwrap_or(0);
                    if n == 0 {
                        return;
                    }
                    bytes.extend_from_slice(&buf[..n]);
                    if let Some(at) = bytes.windows(4).position(|w| w == b"\r\n\r\n") {
                        break at + 4;
                    }
                };
                let head = String::from_utf8_lossy(&bytes[..head_end]).to_string();
                let length = head
                    .lines()
                    .find_map(|l| {
                        l.to_ascii_lowercase()
                            .strip_prefix("content-length:")
                            .map(|v| v.trim().parse::<usize>().unwrap_or(0))
                    })
                    .unwrap_or(0);
                while bytes.len() < head_end + length {
                    let n = stream.read(&mut buf).await.unwrap_or(0);
                    if n == 0 {
                        break;
                    }
                    bytes.extend_from_slice(&buf[..n]);
                }
                let body = String::from_utf8_lossy(&bytes[head_end..]).to_string();
                record.lock().expect("lock").push(Seen { head, body });
                tokio::time::sleep(answer.delay).await;
                let mut out = format!("HTTP/1.1 {} X\r\nconnection: close\r\n", answer.status);
                for (name, value) in &answer.headers {
                    out.push_str(&format!("{name}: {value}\r\n"));
                }
                if answer.length {
                    out.push_str(&format!("content-length: {}\r\n\r\n", answer.body.len()));
                    let _ = stream.write_all(out.as_bytes()).await;
                    let _ = stream.write_all(&answer.body).await;
                } else {
                    out.push_str("transfer-encoding: chunked\r\n\r\n");
                    let _ = stream.write_all(out.as_bytes()).await;
                    for piece in answer.body.chunks(16 << 10) {
                        let chunk = format!("{:x}\r\n", piece.len());
                        if stream.write_all(chunk.as_bytes()).await.is_err()
                            || stream.write_all(piece).await.is_err()
                            || stream.write_all(b"\r\n").await.is_err()
                        {
                            return;
                        }
                    }
                    let _ = stream.write_all(b"0\r\n\r\n").await;
                }
            });
        }
    });
    Server { url, seen }
}

fn engine(kind: SearchKind, url: &str) -> SearchEngine {
    SearchEngine {
        kind,
        url: url.to_owned(),
        key: if kind == SearchKind::Searxng {
            KeySource::None
        } else {
            KeySource::Env("SEARCH_KEY".into())
        },
        max_results: 3,
        timeout: Duration::from_secs(2),
        max_bytes: 64 << 10,
        file: PathBuf::from("/home/me/.config/chock/config.zon"),
        line: 4,
    }
}

fn key_of(kind: SearchKind) -> Option<&'static str> {
    (kind != SearchKind::Searxng).then_some(KEY)
}

/// Each engine's answer, in the shape its API documents.
fn answer_of(kind: SearchKind) -> serde_json::Value {
    let results = |snippet: &str| {
        serde_json::json!([
            {"title": "Nix <strong>flakes</strong>", "url": "https://nixos.wiki/wiki/Flakes", snippet: "Flakes are <strong>the</strong> unit\n of Nix.", "engine": "ddg", "score": 0.9},
            {"title": "not web", "url": "javascript:alert(1)", snippet: "dropped"},
            {"title": "Two", "url": "https://two.example/", snippet: format!("an echo of {KEY}")},
            {"title": "Three", "url": "https://three.example/", snippet: "third"},
            {"title": "Four", "url": "https://four.example/", snippet: "fourth"},
        ])
    };
    match kind {
        SearchKind::Searxng => serde_json::json!({
            "query": "nix flakes", "number_of_results": 0, "results": results("content"),
            "answers": [], "corrections": [], "infoboxes": [], "suggestions": [], "unresponsive_engines": []
        }),
        SearchKind::Brave => serde_json::json!({
            "type": "search",
            "query": {"original": "nix flakes", "more_results_available": true},
            "mixed": {"type": "mixed", "main": []},
            "web": {"type": "search", "results": results("description"), "family_friendly": true}
        }),
        SearchKind::Tavily => serde_json::json!({
            "query": "nix flakes", "answer": null, "images": [], "follow_up_questions": null,
            "results": results("content"), "response_time": "1.07", "request_id": "r-1"
        }),
    }
}

const KINDS: [SearchKind; 3] = [SearchKind::Searxng, SearchKind::Brave, SearchKind::Tavily];

#[tokio::test]
async fn each_engine_is_read_as_it_answers() {
    for kind in KINDS {
        let server = serve(json(200, answer_of(kind))).await;
        let hits = chock_search::search(&engine(kind, &server.url), key_of(kind), "nix flakes", 10)
            .await
            .expect("results");
        let urls: Vec<&str> = hits.iter().map(|h| h.url.as_str()).collect();
        assert_eq!(
            urls,
            [
                "https://nixos.wiki/wiki/Flakes",
                "https://two.example/",
                "https://three.example/"
            ],
            "{kind:?}: at most .max_results, only http(s)"
        );
        assert_eq!(hits[0].title, "Nix flakes");
        assert_eq!(hits[0].snippet, "Flakes are the unit of Nix.");
        assert_eq!(
            hits[1].snippet,
            if kind == SearchKind::Searxng {
                format!("an echo of {KEY}")
            } else {
                "an echo of [key]".to_owned()
            },
            "{kind:?}: the key an engine echoes is never shown"
        );
        let seen = server.seen.lock().expect("lock").clone();
        assert_eq!(seen.len(), 1);
        let head = seen[0].head.to_ascii_lowercase();
        match kind {
            SearchKind::Searxng => {
                assert!(
                    head.starts_with("get /search?q=nix+flakes&format=json"),
                    "{head}"
                );
                assert!(!head.contains("authorization"), "{head}");
            }
            SearchKind::Brave => {
                assert!(
                    head.starts_with("get /res/v1/web/search?q=nix+flakes&count=3 "),
                    "{head}"
                );
                assert!(
                    head.contains(&format!(
                        "x-subscription-token: {}",
                        KEY.to_ascii_lowercase()
                    )),
                    "{head}"
                );
            }
            SearchKind::Tavily => {
                assert!(head.starts_with("post /search "), "{head}");
                assert!(
                    head.contains(&format!(
                        "authorization: bearer {}",
                        KEY.to_ascii_lowercase()
                    )),
                    "{head}"
                );
                let body: serde_json::Value =
                    serde_json::from_str(&seen[0].body).expect("json body");
                assert_eq!(
                    (body["query"].as_str(), body["max_results"].as_u64()),
                    (Some("nix flakes"), Some(3))
                );
            }
        }
        let shown = chock_search::shown(kind, "nix flakes", &hits);
        assert!(
            shown.contains(
                "1. Nix flakes\n   https://nixos.wiki/wiki/Flakes\n   Flakes are the unit of Nix."
            ),
            "{shown}"
        );
        assert_eq!(shown.contains(KEY), kind == SearchKind::Searxng, "{shown}");
    }
}

#[tokio::test]
async fn errors_are_refused_saying_what_to_do_and_never_with_the_key() {
    let rate_limited = |kind: SearchKind| match kind {
        SearchKind::Brave => {
            serde_json::json!({"type": "ErrorResponse", "error": {"id": "e1", "status": 429, "code": "RATE_LIMITED", "detail": format!("Request rate limit exceeded for plan (token {KEY})."), "meta": {"plan": "Free", "rate_limit": 1}}, "time": 1})
        }
        SearchKind::Tavily => {
            serde_json::json!({"detail": {"error": format!("Rate limit exceeded for key {KEY}")}})
        }
        SearchKind::Searxng => serde_json::json!({"error": "Too Many Requests"}),
    };
    for kind in KINDS {
        let mut answer = json(429, rate_limited(kind));
        answer.headers.push(("retry-after", "30".into()));
        let server = serve(answer).await;
        let refused = chock_search::search(&engine(kind, &server.url), key_of(kind), "q", 3)
            .await
            .expect_err("refused");
        assert!(
            matches!(refused, SearchError::Refused(_)),
            "{kind:?}: {refused:?}"
        );
        let refused = refused.to_string();
        assert!(
            refused.contains("429")
                && refused.contains("rate or plan limit")
                && refused.contains("retry after 30"),
            "{kind:?}: {refused}"
        );
        assert!(!refused.contains(KEY), "{kind:?}: the key is in {refused}");
        let server = serve(json(
            401,
            serde_json::json!({"detail": {"error": "Unauthorized: missing or invalid API key."}}),
        ))
        .await;
        let refused = chock_search::search(&engine(kind, &server.url), key_of(kind), "q", 3)
            .await
            .expect_err("refused")
            .to_string();
        let says = if kind == SearchKind::Searxng {
            "settings.yml"
        } else {
            "check the key"
        };
        assert!(
            refused.contains("401") && refused.contains(says),
            "{kind:?}: {refused}"
        );
        let server = serve(json(502, serde_json::json!({}))).await;
        let refused = chock_search::search(&engine(kind, &server.url), key_of(kind), "q", 3)
            .await
            .expect_err("refused")
            .to_string();
        assert!(refused.contains("again later"), "{kind:?}: {refused}");
        let mut html = json(200, serde_json::json!({}));
        html.body = b"<html>a login page</html>".to_vec();
        let server = serve(html).await;
        let refused = chock_search::search(&engine(kind, &server.url), key_of(kind), "q", 3)
            .await
            .expect_err("refused")
            .to_string();
        assert!(refused.contains("not JSON"), "{kind:?}: {refused}");
    }
}

#[tokio::test]
async fn a_slow_answer_is_refused_at_the_bound() {
    for kind in KINDS {
        let mut slow = json(200, answer_of(kind));
        slow.delay = Duration::from_secs(30);
        let server = serve(slow).await;
        let mut engine = engine(kind, &server.url);
        engine.timeout = Duration::from_secs(1);
        let started = Instant::now();
        let refused = chock_search::search(&engine, key_of(kind), "q", 3)
            .await
            .expect_err("refused");
        let took = started.elapsed();
        assert!(
            matches!(refused, SearchError::Late { seconds: 1, .. }),
            "{refused:?}"
        );
        let refused = refused.to_string();
        assert!(refused.contains("within 1 seconds"), "{refused}");
        assert!(
            took < Duration::from_millis(1500),
            "{kind:?}: took {took:?}"
        );
    }
}

#[tokio::test]
async fn a_huge_answer_is_refused_with_a_length_and_without() {
    for kind in KINDS {
        for length in [true, false] {
            let mut huge = json(200, serde_json::json!({}));
            huge.body = format!(
                "{{\"results\": [{{\"url\": \"https://a.example/\", \"content\": \"{}\"}}]}}",
                "x".repeat(8 << 20)
            )
            .into_bytes();
            huge.length = length;
            let server = serve(huge).await;
            let started = Instant::now();
            let refused = chock_search::search(&engine(kind, &server.url), key_of(kind), "q", 3)
                .await
                .expect_err("refused")
                .to_string();
            assert!(
                refused.contains("longer than 65536 bytes"),
                "{kind:?} {length}: {refused}"
            );
            assert!(
                started.elapsed() < Duration::from_secs(2),
                "{kind:?} {length}"
            );
        }
    }
}

#[tokio::test]
async fn a_query_out_of_bounds_and_an_engine_not_there_are_refused() {
    let engine = engine(SearchKind::Searxng, "http://127.0.0.1:9");
    for (query, says) in [("  ", "empty"), (&*"q".repeat(401), "longer than 400")] {
        let refused = chock_search::search(&engine, None, query, 3)
            .await
            .expect_err("refused");
        assert!(matches!(refused, SearchError::Query(_)), "{refused:?}");
        let refused = refused.to_string();
        assert!(refused.contains(says), "{refused}");
    }
    let refused = chock_search::search(&engine, None, "q", 3)
        .await
        .expect_err("refused")
        .to_string();
    assert!(refused.contains("cannot be reached"), "{refused}");
    let brave = self::engine(SearchKind::Brave, "http://127.0.0.1:9");
    let refused = chock_search::search(&brave, None, "q", 3)
        .await
        .expect_err("refused")
        .to_string();
    assert!(refused.contains("needs an API key"), "{refused}");
}
