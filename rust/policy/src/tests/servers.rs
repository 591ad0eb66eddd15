//! The `servers` block read through a whole `Policy::load`.

use crate::{LoadOptions, Policy, PolicyError};

fn policy_with(config: &str) -> (tempfile::TempDir, Policy) {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("chock.zon"), ".{ .secrets = .{ \"A\" } }").expect("write");
    let path = dir.path().join("config.zon");
    std::fs::write(&path, config).expect("write");
    let policy = Policy::load(&crate::LoadOptions {
        project_dir: dir.path().to_path_buf(),
        operator_config: Some(path),
        discovered_bundles: vec![],
        org_bundles: vec![],
    })
    .expect("policy");
    (dir, policy)
}

#[test]
fn a_secret_is_read_from_a_file_a_command_or_nowhere() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("key");
    std::fs::write(&file, "s3cr3t-file\n").expect("write");
    let (_d, policy) = policy_with(&format!(
        ".{{ .secrets = .{{ .A = .{{ .file = \"{}\" }} }} }}",
        file.display()
    ));
    assert_eq!(
        policy.config().read_secret("A").expect("a file secret"),
        "s3cr3t-file"
    );
    let (_d, policy) = policy_with(
        ".{ .secrets = .{ .A = .{ .command = .{ \"printf\", \"from-command\\n\" } } } }",
    );
    assert_eq!(
        policy.config().read_secret("A").expect("a command secret"),
        "from-command"
    );
    let (_d, policy) = policy_with(".{ .secrets = .{ .A = .{ .command = .{ \"false\" } } } }");
    assert!(
        policy
            .config()
            .read_secret("A")
            .unwrap_err()
            .to_string()
            .contains("failed")
    );
    let (_d, policy) = policy_with(".{}");
    assert!(
        policy
            .config()
            .read_secret("A")
            .unwrap_err()
            .to_string()
            .contains("has no store")
    );
    let (_d, policy) =
        policy_with(".{ .secrets = .{ .A = .{ .env = \"CHOCK_TEST_SURELY_UNSET\" } } }");
    assert!(
        policy
            .config()
            .read_secret("A")
            .unwrap_err()
            .to_string()
            .contains("not set")
    );
}

fn load(project: &str, operator: Option<&str>) -> Result<Policy, PolicyError> {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("chock.zon"), project).expect("write");
    let operator_config = operator.map(|text| {
        let path = dir.path().join("config.zon");
        std::fs::write(&path, text).expect("write");
        path
    });
    Policy::load(&LoadOptions {
        project_dir: dir.path().to_path_buf(),
        operator_config,
        discovered_bundles: vec![],
        org_bundles: vec![],
    })
}

#[test]
fn a_servers_bounds_are_read_and_out_of_range_ones_refused() {
    let policy = load(
        ".{ .mcp = .{ .{ .name = \"a\", .command = .{ \"x\" }, .timeout_s = 5, .max_answer_mib = 2 } } }",
        None,
    )
    .expect("loads");
    assert_eq!(
        policy.config().mcp_servers()[0].timeout,
        std::time::Duration::from_secs(5)
    );
    assert_eq!(policy.config().mcp_servers()[0].max_answer_bytes, 2 << 20);
    for (field, said) in [
        (".timeout_s = 0", "`.timeout_s = 0` is out of range"),
        (".timeout_s = 90000", "`.timeout_s = 90000` is out of range"),
        (
            ".max_answer_mib = 0",
            "`.max_answer_mib = 0` is out of range",
        ),
        (
            ".max_answer_mib = 2048",
            "`.max_answer_mib = 2048` is out of range",
        ),
    ] {
        let refused = refusal(&format!(
            ".{{ .mcp = .{{\n .{{ .name = \"a\", .command = .{{ \"x\" }}, {field} }} }} }}"
        ));
        assert!(refused.contains(said), "{field}: {refused}");
        assert!(refused.contains(":2"), "names the line: {refused}");
    }
}

fn refusal(project: &str) -> String {
    load(project, None).expect_err("refused").to_string()
}

#[test]
fn servers_and_secrets_are_read_with_their_lines() {
    let policy = load(
        ".{\n .mcp = .{\n  .{ .name = \"gh\", .command = .{ \"gh-mcp\", \"stdio\" }, .env = .{ .TOKEN = \"GH\" }, .secret_files = .{ \"GH\" } },\n  .{ .name = \"notion\", .url = \"https://mcp.notion.com/mcp\" },\n },\n .secrets = .{ \"GH\" },\n}\n",
        Some(".{ .secrets = .{ .GH = .{ .command = .{ \"pass\", \"show\", \"gh\" } } } }"),
    )
    .expect("loads");
    let servers = policy.config().mcp_servers();
    assert_eq!(servers.len(), 2);
    assert_eq!(servers[0].name, "gh");
    assert_eq!(servers[0].line, 3);
    assert_eq!(
        servers[0].launch,
        chock_config::servers::Launch::Command(vec!["gh-mcp".into(), "stdio".into()])
    );
    assert_eq!(servers[0].env[0].var, "TOKEN");
    assert_eq!(servers[0].secret_files, ["GH".to_string()]);
    assert_eq!(
        servers[0].timeout,
        chock_config::servers::DEFAULT_SERVER_TIMEOUT
    );
    assert_eq!(servers[0].max_answer_bytes, 16 << 20);
    assert_eq!(
        servers[1].launch,
        chock_config::servers::Launch::Url("https://mcp.notion.com/mcp".into())
    );
    assert_eq!(policy.config().secrets(), ["GH".to_string()]);
    assert_eq!(
        policy.config().secret_store("GH"),
        Some(&chock_config::servers::SecretStore::Command(vec![
            "pass".into(),
            "show".into(),
            "gh".into()
        ]))
    );
    assert_eq!(policy.config().secret_store("OTHER"), None);
}

#[test]
fn bad_servers_are_refused_at_their_line_saying_what_to_do() {
    for (text, says) in [
        (
            ".{ .mcp = .{\n .{ .name = \"a.b\", .command = .{ \"x\" } } } }",
            "one label",
        ),
        (
            ".{ .mcp = .{\n .{ .name = \"a__b\", .command = .{ \"x\" } } } }",
            "without `__`",
        ),
        (
            ".{ .mcp = .{\n .{ .name = \"plugin\", .command = .{ \"x\" } } } }",
            "not `plugin` (the plugins' tools",
        ),
        (
            ".{ .mcp = .{\n .{ .name = \"a\", .command = .{ \"x\" } }, .{ .name = \"a\", .url = \"https://h/\" } } }",
            "named twice",
        ),
        (
            ".{ .mcp = .{\n .{ .name = \"a\" } } }",
            "neither `.command` nor `.url`",
        ),
        (
            ".{ .mcp = .{\n .{ .name = \"a\", .command = .{ \"x\" }, .url = \"https://h/\" } } }",
            "both",
        ),
        (
            ".{ .mcp = .{\n .{ .name = \"a\", .command = .{} } } }",
            "program first",
        ),
        (
            ".{ .mcp = .{\n .{ .name = \"a\", .url = \"ftp://h/x\" } } }",
            "not http",
        ),
        (
            ".{ .mcp = .{\n .{ .name = \"a\", .url = \"https://me:pw@h/x\" } } }",
            "credentials",
        ),
        (
            ".{ .mcp = .{\n .{ .name = \"a\", .command = .{ \"x\" }, .env = .{ .T = \"NOPE\" } } } }",
            "add \"NOPE\" to .secrets",
        ),
        (
            ".{ .mcp = .{\n .{ .name = \"a\", .command = .{ \"x\" }, .secret_files = .{ \"NOPE\" } } } }",
            "add \"NOPE\" to .secrets",
        ),
        (
            ".{ .mcp = .{\n .{ .name = \"a\", .url = \"https://h/\", .secret_files = .{ \"A\" } } }, .secrets = .{ \"A\" } }",
            "url server is run by somebody else",
        ),
        (
            ".{ .mcp = .{\n .{ .name = \"a\", .command = .{ \"x\" }, .cwd = \"/\" } } }",
            "cwd",
        ),
        (".{ .secrets = .{\n \"a.b\" } }", "only letters"),
        (".{ .secrets = .{\n \"A\", \"A\" } }", "named twice"),
    ] {
        let message = refusal(text);
        assert!(message.contains(says), "{text}: {message}");
        assert!(message.contains("chock.zon:2:"), "{text}: {message}");
    }
}

#[test]
fn explain_says_which_server_rows_are_read_at_start() {
    let note = |action: &str| crate::read_once_note(action).unwrap_or_default();
    assert!(note("mcp.notion.host.com.notion.mcp").contains("only allow reaches it"));
    assert!(note("mcp.gh.tool.network").contains("only deny is spent"));
    assert!(note("secret.use.GH").contains("once at start"));
    assert!(note("mcp.gh.network").contains("only allow gives it a network"));
    assert_eq!(crate::read_once_note("mcp.gh.other"), None);
}

#[test]
fn a_project_cannot_say_where_a_secret_is_kept() {
    let message = refusal(".{ .secrets = .{ .A = .{ .env = \"HOME\" } } }");
    assert!(message.contains("chock.zon:1:"), "{message}");
}

#[test]
fn an_operator_store_is_exactly_one_of_three() {
    for (text, says) in [
        (
            ".{ .secrets = .{\n .A = .{ .env = \"X\", .file = \"/f\" } } }",
            "exactly one",
        ),
        (
            ".{ .secrets = .{\n .A = .{ .file = \"rel\" } } }",
            "absolute",
        ),
        (".{ .secrets = .{\n .A = .{ .env = \"1X\" } } }", "variable"),
        (
            ".{ .secrets = .{\n .A = .{ .command = .{} } } }",
            "program first",
        ),
    ] {
        let message = load(".{}", Some(text)).expect_err(text).to_string();
        assert!(message.contains(says), "{text}: {message}");
        assert!(message.contains("config.zon:2:"), "{text}: {message}");
    }
}
