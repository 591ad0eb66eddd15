//! web_search for real in `chock mcp`: the engine config.zon names (a
//! Brave Search API and a SearXNG on loopback, in their own JSON), asked
//! at the call under web.search, the engine's host never decided under
//! net.fetch, the key sent to the engine and never in the log, the
//! question, the answer or the server's stderr; a result's URL fetched
//! only after net.fetch for its host answers; a denied search sending
//! nothing; no engine, no tool. Needs user namespaces (`scripts/setup`).

mod sandbox_fixture;
#[path = "mcp_support/mod.rs"]
mod support;

use std::path::Path;

use serde_json::json;
use support::{Env, Page, Site, person_says};

const KEY: &str = "BSAkey-never-shown-0123456789";

fn brave_results(page: &Site) -> Page {
    let body = json!({
        "type": "search",
        "query": {"original": "chock sandbox"},
        "web": {"type": "search", "results": [
            {"title": "The <strong>page</strong>", "url": page.url("/page"), "description": "Where the answer is."},
            {"title": "Other", "url": "https://other.example/", "description": "Elsewhere."}
        ]}
    });
    Page {
        status: 200,
        headers: vec![("Content-Type".into(), "application/json".into())],
        body: body.to_string().into_bytes(),
    }
}

fn engine(env: &Env, block: &str) {
    std::fs::create_dir_all(env.config_dir()).expect("config dir");
    std::fs::write(
        env.config_dir().join("config.zon"),
        format!(".{{ .search = {block} }}\n"),
    )
    .expect("config.zon");
}

#[test]
fn a_search_is_asked_at_the_call_and_a_result_is_fetched_only_after_net_fetch_answers() {
    let env = Env::new();
    let page = Site::start("127.0.0.2", vec![("/page", Page::ok("the answer page"))]);
    let brave = Site::start(
        "127.0.0.1",
        vec![(
            "/res/v1/web/search?q=chock+sandbox&count=2",
            brave_results(&page),
        )],
    );
    engine(
        &env,
        &format!(
            ".{{ .kind = .brave, .url = \"{}\", .key = .{{ .env = \"BRAVE_TEST_KEY\" }}, .max_results = 2 }}",
            brave.url("")
        ),
    );
    let mut client = env.client_with_env(true, &[], &[("BRAVE_TEST_KEY", Path::new(KEY))]);
    assert!(client.tool_names().iter().any(|n| n == "web_search"));
    // Refused: nothing is sent to the engine.
    client.elicit_answers.push(person_says(false));
    let refused = client.call("web_search", json!({"query": "chock sandbox"}));
    assert!(refused.is_error, "{refused:?}");
    assert!(brave.requests.lock().expect("lock").is_empty());
    env.assert_logged("web.search", "deny", "person");
    // Allowed: asked once, at the call, naming the query.
    client.elicit_answers.push(person_says(true));
    let found = client.call("web_search", json!({"query": "chock sandbox"}));
    assert!(
        !found.is_error
            && found.text.contains("1. The page")
            && found.text.contains(&page.url("/page"))
            && found.text.contains("Where the answer is."),
        "{found:?}"
    );
    let asked = client.elicited.last().expect("asked").to_string();
    assert!(
        asked.contains("web.search") && asked.contains("chock sandbox"),
        "{asked}"
    );
    env.assert_logged("web.search", "allow", "person");
    let heads = brave.requests.lock().expect("lock").clone();
    assert_eq!(heads.len(), 1, "{heads:?}");
    assert!(
        heads[0].to_ascii_lowercase().contains(&format!(
            "x-subscription-token: {}",
            KEY.to_ascii_lowercase()
        )),
        "{heads:?}"
    );
    // The engine's host was never a net.fetch question.
    assert!(env.logged("net.fetch.1.0.0.127").is_empty());
    // A result the agent opens is fetch_url's: net.fetch for its host,
    // asked because the agent named it; nothing is read before the answer.
    client.elicit_answers.push(person_says(false));
    let refused = client.call("fetch_url", json!({"url": page.url("/page")}));
    assert!(refused.is_error, "{refused:?}");
    assert!(
        page.hits("/page").is_empty(),
        "read before net.fetch answered"
    );
    env.assert_logged("net.fetch.2.0.0.127", "deny", "person");
    client.elicit_answers.push(person_says(true));
    let read = client.call("fetch_url", json!({"url": page.url("/page")}));
    assert!(
        !read.is_error && read.text.contains("the answer page"),
        "{read:?}"
    );
    assert_eq!(page.hits("/page").len(), 1);
    // The key is in none of what the person, the log or the agent sees.
    let log: String = env.log_lines().iter().map(|l| l.to_string()).collect();
    for (what, text) in [
        ("the log", log),
        ("the question", asked),
        ("the answer", found.text),
        ("the server's stderr", client.stderr()),
    ] {
        assert!(!text.contains(KEY), "the key is in {what}: {text}");
    }
}

#[test]
fn a_searxng_instance_answers_and_its_failure_refuses_the_search() {
    let env = Env::new();
    env.rules(r#".{ .action = "web.search", .decision = .allow }"#);
    let body = json!({"query": "nix", "number_of_results": 0, "results": [
        {"url": "https://nixos.org/", "title": "Nix", "content": "Reproducible builds.", "engine": "duckduckgo", "score": 1.0}
    ], "answers": [], "suggestions": [], "unresponsive_engines": []});
    let searx = Site::start(
        "127.0.0.1",
        vec![
            (
                "/search?q=nix&format=json&pageno=1",
                Page {
                    status: 200,
                    headers: vec![("Content-Type".into(), "application/json".into())],
                    body: body.to_string().into_bytes(),
                },
            ),
            ("/search?q=off&format=json&pageno=1", Page::status(403)),
        ],
    );
    engine(
        &env,
        &format!(".{{ .kind = .searxng, .url = \"{}\" }}", searx.url("")),
    );
    let mut client = env.client(false, &[]);
    let found = client.call("web_search", json!({"query": "nix"}));
    assert!(
        !found.is_error
            && found
                .text
                .contains("1. Nix\n   https://nixos.org/\n   Reproducible builds."),
        "{found:?}"
    );
    env.assert_logged("web.search", "allow", "rule");
    let refused = client.call("web_search", json!({"query": "off"}));
    assert!(
        refused.is_error && refused.text.contains("403") && refused.text.contains("settings.yml"),
        "{refused:?}"
    );
    let bounds = client.call("web_search", json!({"query": "nix", "count": 99}));
    assert!(
        bounds.is_error && bounds.text.contains("outside its bounds"),
        "{bounds:?}"
    );
}

#[test]
fn no_engine_no_tool() {
    let env = Env::new();
    let mut client = env.client(false, &[]);
    assert!(!client.tool_names().iter().any(|n| n == "web_search"));
    let refused = client.call("web_search", json!({"query": "x"}));
    assert!(
        refused.is_error && refused.text.contains("names no search engine"),
        "{refused:?}"
    );
}

/// `.key = .login`: `chock login search` keeps the key in the credential
/// store, and the engine is sent it; a missing one refuses the search
/// saying what to run.
#[test]
fn a_key_kept_by_chock_login_is_sent_to_the_engine() {
    let env = Env::new();
    env.rules(r#".{ .action = "web.search", .decision = .allow }"#);
    let tavily = Site::start("127.0.0.1", vec![("/search", Page::status(200))]);
    engine(
        &env,
        &format!(
            ".{{ .kind = .tavily, .url = \"{}\", .key = .login }}",
            tavily.url("")
        ),
    );
    let mut client = env.client(false, &[]);
    let missing = client.call("web_search", json!({"query": "x"}));
    assert!(
        missing.is_error && missing.text.contains("run `chock login search`"),
        "{missing:?}"
    );
    assert!(tavily.requests.lock().expect("lock").is_empty());
    let mut login = env
        .chock()
        .args(["login", "search"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("chock login");
    use std::io::Write as _;
    login
        .stdin
        .take()
        .expect("stdin")
        .write_all(format!("{KEY}\n").as_bytes())
        .expect("key");
    let out = login.wait_with_output().expect("login");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let sent = client.call("web_search", json!({"query": "x"}));
    // The page answers no JSON: refused, after the key was sent.
    assert!(sent.is_error && sent.text.contains("not JSON"), "{sent:?}");
    let heads = tavily.requests.lock().expect("lock").clone();
    assert!(
        heads.len() == 1
            && heads[0].to_ascii_lowercase().contains(&format!(
                "authorization: bearer {}",
                KEY.to_ascii_lowercase()
            )),
        "{heads:?}"
    );
    assert!(!sent.text.contains(KEY));
}
