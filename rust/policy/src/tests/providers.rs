//! The `providers` block read through a whole `Policy::load`.

use crate::test_support::with_operator_config as load;
use chock_config::providers::{KeySource, ProviderKind};

#[test]
fn instances_are_read_with_defaults_and_lines() {
    let policy = load(
        ".{\n .providers = .{\n  .{ .name = \"claude\", .kind = .anthropic },\n  .{ .name = \"work\", .kind = .openai_responses, .key = .{ .secret = \"OAI\" } },\n  .{ .name = \"local\", .kind = .openai_chat, .base_url = \"http://127.0.0.1:8080/v1/\", .key = .none },\n  .{ .name = \"or\", .kind = .openai_chat, .base_url = \"https://openrouter.ai/api/v1\", .key = .{ .env = \"OPENROUTER_API_KEY\" } },\n },\n .secrets = .{ .OAI = .{ .env = \"OPENAI_API_KEY\" } },\n}\n",
    )
    .expect("loads");
    let p = policy.config().providers();
    assert_eq!(p.len(), 4);
    assert_eq!(
        (p[0].kind, p[0].base_url.as_str(), &p[0].key, p[0].line),
        (
            ProviderKind::Anthropic,
            "https://api.anthropic.com",
            &KeySource::Login,
            3
        )
    );
    assert_eq!(p[1].key, KeySource::Secret("OAI".into()));
    assert_eq!(p[1].base_url, "https://api.openai.com/v1");
    assert_eq!(
        (p[2].base_url.as_str(), &p[2].key),
        ("http://127.0.0.1:8080/v1", &KeySource::None)
    );
    assert_eq!(p[3].key, KeySource::Env("OPENROUTER_API_KEY".into()));
    assert_eq!(policy.config().provider("work").map(|i| i.line), Some(4));
    assert!(policy.config().provider("nobody").is_none());
}

#[test]
fn bad_instances_are_refused_at_their_line_saying_what_to_do() {
    for (text, says) in [
        (
            ".{ .providers = .{\n .{ .name = \"a.b\", .kind = .anthropic } } }",
            "one label",
        ),
        (
            ".{ .providers = .{\n .{ .name = \"a\", .kind = .anthropic }, .{ .name = \"a\", .kind = .openai_chat } } }",
            "named twice",
        ),
        (
            ".{ .providers = .{\n .{ .name = \"a\", .kind = .gemini } } }",
            "openai_chat",
        ),
        (
            ".{ .providers = .{\n .{ .name = \"a\", .kind = .anthropic, .base_url = \"ftp://h/\" } } }",
            "not http",
        ),
        (
            ".{ .providers = .{\n .{ .name = \"a\", .kind = .anthropic, .base_url = \"https://me:pw@h/\" } } }",
            "credentials",
        ),
        (
            ".{ .providers = .{\n .{ .name = \"a\", .kind = .anthropic, .base_url = \"https://h/?x=1\" } } }",
            "query",
        ),
        (
            ".{ .providers = .{\n .{ .name = \"a\", .kind = .anthropic, .key = .{ .secret = \"NOPE\" } } } }",
            "add `.secrets = .{ .NOPE",
        ),
        (
            ".{ .providers = .{\n .{ .name = \"a\", .kind = .anthropic, .key = .{ .env = \"1X\" } } } }",
            "environment variable",
        ),
        (
            ".{ .providers = .{\n .{ .name = \"a\", .kind = .anthropic, .key = .keychain } } }",
            "`.login`",
        ),
        (
            ".{ .providers = .{\n .{ .name = \"a\", .kind = .anthropic, .api_key = \"sk\" } } }",
            "api_key",
        ),
    ] {
        let message = load(text).expect_err(text).to_string();
        assert!(message.contains(says), "{text}: {message}");
        assert!(message.contains("config.zon:2:"), "{text}: {message}");
    }
}
