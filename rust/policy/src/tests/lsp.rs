//! The `lsp` block read through a whole `Policy::load`.

use crate::test_support::with_project as load;

#[test]
fn a_block_reads_each_server_named_after_its_program() {
    let policy = load(
        ".{ .lsp = .{\n .{ .command = .{ \"/nix/store/aaa/bin/pyright-langserver\", \"--stdio\" }, .language = \"python\", .extensions = .{ \"py\", \"pyi\" } },\n .{ .command = .{ \"rust-analyzer\" }, .language = \"rust\", .extensions = .{ \"rs\" }, .timeout_ms = 500 },\n} }",
    )
    .expect("loads");
    let servers = policy.config().lsp_servers();
    assert_eq!(servers.len(), 2);
    assert_eq!(servers[0].action.as_deref(), Ok("lsp.pyright-langserver"));
    assert_eq!(servers[0].program(), "pyright-langserver");
    assert_eq!(servers[0].timeout, chock_config::lsp::DEFAULT_LSP_TIMEOUT);
    assert!(servers[0].serves(std::path::Path::new("src/a.pyi")));
    assert!(!servers[0].serves(std::path::Path::new("src/a.rs")));
    assert_eq!(servers[1].timeout, std::time::Duration::from_millis(500));
    assert!(
        servers[1].place().ends_with("chock.zon:3:2"),
        "{}",
        servers[1].place()
    );
    assert!(
        load(".{}")
            .expect("loads")
            .config()
            .lsp_servers()
            .is_empty()
    );
}

#[test]
fn a_program_that_cannot_be_one_label_is_kept_with_why_and_never_named() {
    let policy = load(
        ".{ .lsp = .{ .{ .command = .{ \"bin/zls.real\" }, .language = \"zig\", .extensions = .{ \"zig\" } } } }",
    )
    .expect("loads");
    let why = policy.config().lsp_servers()[0]
        .action
        .clone()
        .expect_err("no label")
        .to_string();
    assert!(why.contains("zls.real") && why.contains('.'), "{why}");
}

#[test]
fn a_bad_block_is_refused_at_its_place_with_the_nearest_name() {
    let server = |fields: &str| format!(".{{\n .lsp = .{{\n  .{{ {fields} }} }} }}");
    for (text, says) in [
        (
            server(".command = .{ \"zls\" }, .language = \"zig\", .extension = .{ \"zig\" }"),
            "did you mean `.extensions`?",
        ),
        (
            server(".command = .{}, .language = \"zig\", .extensions = .{ \"zig\" }"),
            "its program and arguments",
        ),
        (
            server(".command = .{ \"zls\" }, .language = \"\", .extensions = .{ \"zig\" }"),
            "language id",
        ),
        (
            server(".command = .{ \"zls\" }, .language = \"zig\", .extensions = .{}"),
            "names the files it serves",
        ),
        (
            server(".command = .{ \"zls\" }, .language = \"zig\", .extensions = .{ \".zig\" }"),
            "without the dot",
        ),
        (
            server(
                ".command = .{ \"zls\" }, .language = \"zig\", .extensions = .{ \"zig\" }, .timeout_ms = 0",
            ),
            "timeout_ms",
        ),
        (
            server(".command = .{ \"zls\" }, .language = \"zig\""),
            "extensions",
        ),
    ] {
        let message = load(&text).expect_err(&text).to_string();
        assert!(message.contains(says), "{text}: {message}");
        assert!(message.contains("chock.zon:3:"), "{text}: {message}");
    }
    let twice = load(
        ".{ .lsp = .{\n .{ .command = .{ \"a\" }, .language = \"x\", .extensions = .{ \"x\" } },\n .{ .command = .{ \"b\" }, .language = \"x\", .extensions = .{ \"y\", \"x\" } } } }",
    )
    .expect_err("twice")
    .to_string();
    assert!(
        twice.contains("chock.zon:3:") && twice.contains("line 2") && twice.contains("`a`"),
        "{twice}"
    );
}

#[test]
fn language_servers_are_the_projects_and_no_operators() {
    let message = crate::test_support::with_operator_config(
        ".{\n .lsp = .{ .{ .command = .{ \"zls\" }, .language = \"zig\", .extensions = .{ \"zig\" } } } }",
    )
    .expect_err("config.zon")
    .to_string();
    assert!(
        message.contains("config.zon:2:") && message.contains("project's chock.zon"),
        "{message}"
    );
}

#[test]
fn starting_a_server_is_allowed_by_what_chock_ships_and_refused_by_one_rule() {
    let decide = |rules: &str| {
        load(&format!(".{{ .policy = .{{ .rules = .{{ {rules} }} }} }}"))
            .expect("loads")
            .decide(
                &crate::Key::new("lsp.pyright-langserver"),
                crate::Reading::Act,
            )
            .decision
    };
    assert_eq!(decide(""), crate::Decision::Allow);
    assert_eq!(
        decide(".{ .action = \"lsp.*\", .decision = .deny }"),
        crate::Decision::Deny
    );
}
