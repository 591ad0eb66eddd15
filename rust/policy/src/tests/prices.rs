//! The `prices` block read through a whole `Policy::load`.

use crate::ProviderKind;
use crate::test_support::with_operator_config as load;

#[test]
fn prices_are_read_with_their_lines() {
    let policy = load(
        ".{\n .prices = .{\n  .{ .kind = .anthropic, .model = \"claude-x\", .input = 3, .output = 15, .cache_read = 0.3 },\n  .{ .kind = .openai_chat, .model = \"local\", .input = 0, .output = 0 },\n },\n}\n",
    )
    .expect("loads");
    let prices = policy.config().prices();
    assert_eq!(prices.len(), 2);
    assert_eq!(
        (
            prices[0].kind,
            prices[0].model.as_str(),
            prices[0].input,
            prices[0].output,
            prices[0].cache_read,
            prices[0].cache_write,
            prices[0].line
        ),
        (
            ProviderKind::Anthropic,
            "claude-x",
            3.0,
            15.0,
            Some(0.3),
            None,
            3
        )
    );
    assert_eq!((prices[1].input, prices[1].line), (0.0, 4));
}

#[test]
fn bad_prices_are_refused_at_their_line_saying_what_to_do() {
    for (text, says) in [
        (
            ".{ .prices = .{\n .{ .kind = .anthropic, .model = \"m\", .input = -1, .output = 1 } } }",
            ".input = -1 is not an amount",
        ),
        (
            ".{ .prices = .{\n .{ .kind = .anthropic, .model = \"\", .input = 1, .output = 1 } } }",
            "1 to 256 bytes",
        ),
        (
            ".{ .prices = .{\n .{ .kind = .anthropic, .model = \"m\", .input = 1, .output = 1 }, .{ .kind = .anthropic, .model = \"m\", .input = 2, .output = 2 } } }",
            "priced twice",
        ),
        (
            ".{ .prices = .{\n .{ .kind = .gemini, .model = \"m\", .input = 1, .output = 1 } } }",
            "openai_chat",
        ),
        (
            ".{ .prices = .{\n .{ .kind = .anthropic, .model = \"m\", .input = 1 } } }",
            "output",
        ),
        (
            ".{ .prices = .{\n .{ .kind = .anthropic, .model = \"m\", .input = 1, .output = 1, .currency = \"EUR\" } } }",
            "currency",
        ),
    ] {
        let message = load(text).expect_err(text).to_string();
        assert!(message.contains(says), "{text}: {message}");
        assert!(message.contains("config.zon:2:"), "{text}: {message}");
    }
}
