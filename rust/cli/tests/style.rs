//! Style rules for real: `chock mcp`'s write_file and edit_file checked on
//! what they would leave, refused over a rule's limit with the file left
//! as it was; `style.parse` read once at start, where anything but allow
//! leaves every write unchecked and says so; a rule chock-style cannot read
//! refuses the start at its place; `chock run` calls the same tools
//! in-process and is refused the same way. Needs user namespaces and
//! Landlock (`scripts/setup`).

#[path = "../../provider/tests/loopback/mod.rs"]
mod loopback;
#[allow(
    dead_code,
    reason = "this binary writes its whole chock.zon, with project_zon"
)]
mod run_support;
mod sandbox_fixture;
#[path = "mcp_support/mod.rs"]
mod support;

use chock_policy::ProviderKind;
use loopback::Server;
use serde_json::json;
use support::Env;

const ALLOW_PARSE: &str = r#".{ .action = "style.parse", .decision = .allow }"#;

/// Two rules: Rust nested at most two blocks deep, Python lines of at most 20.
const RULES: &str = r#".style = .{ .rules = .{
    .{ .name = "shallow", .language = "rust", .measure = .nesting_depth, .limit = 2 },
    .{ .name = "short-lines", .files = "**/*.py", .measure = .line_length, .limit = 20 },
} }"#;

const DEEP_RUST: &str = "fn f() {\n    if a {\n        loop {}\n    }\n}\n";
const SHALLOW_RUST: &str = "fn f() {\n    if a {}\n}\n";

fn env_with(rules: &str) -> Env {
    let env = Env::new();
    env.zon(&format!(
        ".{{ .policy = .{{ .rules = .{{ {rules} }} }},\n{RULES} }}\n"
    ));
    env.write("src/lib.rs", SHALLOW_RUST);
    env.write("tool.py", "x = 1\n");
    env
}

#[test]
fn a_write_over_a_rules_limit_is_refused_and_the_file_left_unchanged() {
    let env = env_with(ALLOW_PARSE);
    let mut client = env.client(false, &[]);

    let refused = client.call(
        "write_file",
        json!({"path": "src/lib.rs", "content": DEEP_RUST}),
    );
    assert!(refused.is_error, "{refused:?}");
    assert!(
        refused.text.contains("style rule `shallow` (")
            && refused.text.contains("chock.zon:3:")
            && refused
                .text
                .contains("blocks nested 3 deep at line 3, over the limit of 2")
            && refused.text.contains("nothing was written"),
        "which rule, where and the number: {}",
        refused.text
    );
    assert_eq!(env.read("src/lib.rs").as_deref(), Some(SHALLOW_RUST));
    // A new file over the limit is not made either.
    let new = client.call(
        "write_file",
        json!({"path": "src/new.rs", "content": DEEP_RUST}),
    );
    assert!(new.is_error, "{new:?}");
    assert_eq!(env.read("src/new.rs"), None);

    // edit_file is checked on the whole file the edit would leave.
    let edit = client.call(
        "edit_file",
        json!({"path": "tool.py", "old_string": "x = 1", "new_string": "x = 'a line far longer than twenty'"}),
    );
    assert!(edit.is_error, "{edit:?}");
    assert!(
        edit.text.contains("style rule `short-lines`")
            && edit
                .text
                .contains("a line of 35 characters at line 1, over the limit of 20"),
        "{}",
        edit.text
    );
    assert_eq!(env.read("tool.py").as_deref(), Some("x = 1\n"));

    // Within the limits, the same tools write.
    let fine = client.call(
        "write_file",
        json!({"path": "src/lib.rs", "content": "fn g() {\n    loop {}\n}\n"}),
    );
    assert!(!fine.is_error, "{fine:?}");
    assert_eq!(
        env.read("src/lib.rs").as_deref(),
        Some("fn g() {\n    loop {}\n}\n")
    );
    let fine = client.call(
        "edit_file",
        json!({"path": "tool.py", "old_string": "x = 1", "new_string": "x = 2"}),
    );
    assert!(!fine.is_error, "{fine:?}");
    // A file no rule names is not parsed.
    let other = client.call(
        "write_file",
        json!({"path": "notes.txt", "content": "a line far longer than twenty characters\n"}),
    );
    assert!(!other.is_error, "{other:?}");

    // Read once, at start, and logged.
    let parse = env.logged("style.parse");
    assert_eq!(parse.len(), 1, "{parse:?}");
    assert_eq!(parse[0]["decision"], "allow", "{}", parse[0]);
    assert_eq!(parse[0]["answered_by"], "rule", "{}", parse[0]);
}

#[test]
fn without_allow_on_style_parse_every_write_is_unchecked_and_start_says_so() {
    for (rules, decision) in [
        ("", "ask"),
        (r#".{ .action = "style.parse", .decision = .deny }"#, "deny"),
    ] {
        let env = env_with(rules);
        let mut client = env.client(false, &[]);
        let written = client.call(
            "write_file",
            json!({"path": "src/lib.rs", "content": DEEP_RUST}),
        );
        assert!(!written.is_error, "{decision}: {written:?}");
        assert_eq!(env.read("src/lib.rs").as_deref(), Some(DEEP_RUST));
        assert!(
            client.stderr_says(&format!("style.parse answered {decision} at start")),
            "{decision}: {}",
            client.stderr()
        );
        let stderr = client.stderr();
        let notice: Vec<&str> = stderr
            .lines()
            .filter(|l| l.contains("style.parse"))
            .collect();
        assert_eq!(notice.len(), 1, "one line: {stderr}");
        assert!(
            notice[0].contains("the 2 style rules of")
                && notice[0].contains("every write is unchecked")
                && notice[0].contains(ALLOW_PARSE),
            "{}",
            notice[0]
        );
    }
}

#[test]
fn a_rule_chock_cannot_read_refuses_the_start_at_its_place() {
    let env = Env::new();
    env.zon(
        ".{ .policy = .{ .rules = .{ .{ .action = \"style.parse\", .decision = .allow } } },\n .style = .{ .rules = .{\n  .{ .name = \"r\", .language = \"pyton\", .measure = .line_length, .limit = 1 } } } }\n",
    );
    let out = env
        .chock()
        .arg("mcp")
        .stdin(std::process::Stdio::null())
        .output()
        .expect("chock mcp");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(
        stderr.contains("chock.zon:3:3") && stderr.contains("did you mean `python`?"),
        "{stderr}"
    );
    // A misspelt field is refused when chock.zon is read, naming the field.
    env.zon(
        ".{ .style = .{ .rules = .{\n .{ .name = \"r\", .langauge = \"rust\", .measure = .line_length, .limit = 1 } } } }\n",
    );
    let out = env
        .chock()
        .arg("mcp")
        .stdin(std::process::Stdio::null())
        .output()
        .expect("chock mcp");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(
        stderr.contains("chock.zon:2:") && stderr.contains("did you mean `.language`?"),
        "{stderr}"
    );
}

#[test]
fn chock_run_calls_the_same_tools_and_is_refused_the_same_way() {
    let kind = ProviderKind::Anthropic;
    let server = Server::start(vec![
        run_support::reply(
            kind,
            "Writing.",
            &[(
                "toolu_1",
                "write_file",
                json!({"path": "deep.rs", "content": DEEP_RUST}),
            )],
        ),
        run_support::reply(kind, "Refused, so I stop.", &[]),
    ]);
    let fx = run_support::project_zon(
        kind,
        &server,
        &format!(
            ".{{ .apply = .{{ .mode = .merge }}, .policy = .{{ .rules = .{{ {}, {ALLOW_PARSE} }} }},\n{RULES} }}\n",
            run_support::APPLY_ALLOWED
        ),
    );
    let out = fx
        .chock()
        .args(["run", "--model", "m1", "--", "write deep.rs"])
        .env_remove("CHOCK_PROVIDER")
        .env_remove("CHOCK_MODEL")
        .output()
        .expect("chock run");
    assert!(out.status.success(), "{}", sandbox_fixture::describe(&out));
    let requests = server.requests();
    assert_eq!(requests.len(), 2, "{}", sandbox_fixture::describe(&out));
    let result = requests[1].body["messages"].to_string();
    assert!(
        result.contains("style rule `shallow`")
            && result.contains("blocks nested 3 deep at line 3, over the limit of 2"),
        "the model is told which rule, where and the number: {result}"
    );
    assert!(!fx.project.join("deep.rs").exists());
}

#[test]
fn content_that_cannot_be_checked_in_its_bounds_is_refused_and_not_written() {
    let env = Env::new();
    env.zon(&format!(
        ".{{ .policy = .{{ .rules = .{{ {ALLOW_PARSE} }} }},\n .style = .{{ .timeout_ms = 1, .max_bytes = \"1MiB\", .rules = .{{\n  .{{ .name = \"shallow\", .language = \"rust\", .measure = .nesting_depth, .limit = 8 }} }} }} }}\n"
    ));
    env.write("src/lib.rs", SHALLOW_RUST);
    let mut client = env.client(false, &[]);
    // Over the bound of size: refused unparsed.
    let large = "// a comment line\n".repeat(70_000);
    let refused = client.call(
        "write_file",
        json!({"path": "src/lib.rs", "content": large}),
    );
    assert!(refused.is_error, "{refused:?}");
    assert!(
        refused.text.contains("style rules parse at most 1048576")
            && refused.text.contains("nothing was written"),
        "{}",
        refused.text
    );
    // Within it, but a parse tree-sitter's error recovery works hard on:
    // cancelled at the deadline, and refused saying so.
    let slow = "f(".repeat(400_000);
    let started = std::time::Instant::now();
    let refused = client.call("write_file", json!({"path": "src/lib.rs", "content": slow}));
    assert!(started.elapsed() < std::time::Duration::from_secs(5));
    assert!(refused.is_error, "{refused:?}");
    assert!(
        refused.text.contains("could not be checked")
            && refused.text.contains("longer than 1 ms")
            && refused.text.contains("nothing was written"),
        "{}",
        refused.text
    );
    assert_eq!(env.read("src/lib.rs").as_deref(), Some(SHALLOW_RUST));
}
