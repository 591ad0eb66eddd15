//! The `search` block read through a whole `Policy::load`.

use crate::test_support::with_operator_config as load;
use chock_config::KeySource;
use chock_config::search::*;

#[test]
fn an_engine_is_read_with_its_defaults() {
    let policy = load(
        ".{\n .search = .{ .kind = .brave, .key = .{ .secret = \"BRAVE\" }, .max_results = 5 },\n .secrets = .{ .BRAVE = .{ .env = \"BRAVE_API_KEY\" } },\n}\n",
    )
    .expect("loads");
    let engine = policy.config().search().expect("an engine");
    assert_eq!(
        (
            engine.kind,
            engine.url.as_str(),
            &engine.key,
            engine.max_results,
            engine.line
        ),
        (
            SearchKind::Brave,
            "https://api.search.brave.com",
            &KeySource::Secret("BRAVE".into()),
            5,
            2
        )
    );
    assert_eq!(engine.timeout, DEFAULT_SEARCH_TIMEOUT);
    let own = load(".{ .search = .{ .kind = .searxng, .url = \"http://127.0.0.1:8888/\" } }")
        .expect("loads");
    let engine = own.config().search().expect("an engine");
    assert_eq!(
        (engine.url.as_str(), &engine.key),
        ("http://127.0.0.1:8888", &KeySource::None)
    );
    assert!(load(".{}").expect("loads").config().search().is_none());
    let login = load(".{ .search = .{ .kind = .tavily, .key = .login } }").expect("loads");
    assert_eq!(
        login.config().search().map(|e| &e.key),
        Some(&KeySource::Login)
    );
}

#[test]
fn a_bad_engine_is_refused_at_its_line_saying_what_to_do() {
    for (text, says) in [
        (".{\n .search = .{ .kind = .google } }", "`.searxng`"),
        (".{\n .search = .{ .kind = .searxng } }", "needs `.url`"),
        (".{\n .search = .{ .kind = .brave } }", "needs `.key`"),
        (
            ".{\n .search = .{ .kind = .tavily, .key = .login },\n .providers = .{ .{ .name = \"search\", .kind = .anthropic } } }",
            "rename that instance",
        ),
        (
            ".{\n .search = .{ .kind = .brave, .key = .{ .secret = \"NOPE\" } } }",
            "add `.secrets",
        ),
        (
            ".{\n .search = .{ .kind = .searxng, .url = \"https://u:p@h\" } }",
            "credentials",
        ),
        (
            ".{\n .search = .{ .kind = .searxng, .url = \"ftp://h/\" } }",
            "not http",
        ),
        (
            ".{\n .search = .{ .kind = .searxng, .url = \"http://h\", .max_results = 0 } }",
            "from 1 to 20",
        ),
        (
            ".{\n .search = .{ .kind = .searxng, .url = \"http://h\", .timeout_seconds = 999 } }",
            "from 1 to 120",
        ),
        (
            ".{\n .search = .{ .kind = .searxng, .url = \"http://h\", .api_key = \"x\" } }",
            "api_key",
        ),
    ] {
        let message = load(text).expect_err(text).to_string();
        assert!(message.contains(says), "{text}: {message}");
        assert!(message.contains("config.zon:2:"), "{text}: {message}");
    }
}

#[test]
fn a_project_cannot_name_the_engine() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(
        dir.path().join(crate::control::CHOCK_ZON),
        ".{\n .search = .{ .kind = .searxng, .url = \"http://evil\" } }",
    )
    .expect("write");
    let message = crate::Policy::load(&crate::LoadOptions {
        project_dir: dir.path().to_path_buf(),
        operator_config: None,
        discovered_bundles: vec![],
        org_bundles: vec![],
    })
    .expect_err("refused")
    .to_string();
    assert!(message.contains("config.zon"), "{message}");
    assert!(message.contains(":2:"), "{message}");
}
