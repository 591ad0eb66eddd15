//! The `style` block read through a whole `Policy::load`.

use crate::Decision;
use crate::test_support::with_project as load;

#[test]
fn a_block_reads_with_each_rule_placed() {
    let policy = load(
        ".{ .style = .{\n .rules = .{\n  .{ .name = \"short\", .files = \"src/**\", .measure = .line_length, .limit = 100 },\n  .{ .name = \"no-unsafe\", .language = \"rust\", .measure = .query_matches, .query = \"(unsafe_block) @u\", .limit = 0 },\n },\n .max_bytes = \"1MiB\",\n .timeout_ms = 500,\n} }",
    )
    .expect("loads");
    let style = policy.config().style().expect("a style block");
    assert_eq!(style.rules.len(), 2);
    assert_eq!(style.max_bytes, Some(1 << 20));
    assert_eq!(style.timeout, Some(std::time::Duration::from_millis(500)));
    let rule = &style.rules[1];
    assert_eq!(
        rule.measure,
        chock_config::style::StyleMeasure::QueryMatches
    );
    assert_eq!(rule.query.as_deref(), Some("(unsafe_block) @u"));
    assert!(rule.place().ends_with("chock.zon:4:3"), "{}", rule.place());
    assert!(load(".{}").expect("loads").config().style().is_none());
}

#[test]
fn a_bad_block_is_refused_at_its_place_with_the_nearest_name() {
    let rule =
        |fields: &str| format!(".{{\n .style = .{{ .rules = .{{\n  .{{ {fields} }} }} }} }}");
    for (text, says) in [
        (
            rule(".name = \"a\", .language = \"rust\", .mesure = .line_length, .limit = 1"),
            "chock.zon:3:",
        ),
        (
            rule(".name = \"a\", .language = \"rust\", .mesure = .line_length, .limit = 1"),
            "did you mean `.measure`?",
        ),
        (
            rule(".name = \"a\", .language = \"rust\", .measure = .line_lenght, .limit = 1"),
            "did you mean `.line_length`?",
        ),
        (
            rule(".name = \"a\", .measure = .line_length, .limit = 1"),
            "names no files",
        ),
        (
            rule(".name = \"\", .language = \"rust\", .measure = .line_length, .limit = 1"),
            "`.name` is a few words",
        ),
        (
            rule(".name = \"a\", .language = \"rust\", .measure = .line_length"),
            "limit",
        ),
        (".{\n .style = .{ .rules = .{} } }".into(), "is empty"),
        (
            ".{\n .style = .{ .rulez = .{} } }".into(),
            "did you mean `.rules`?",
        ),
        (
            ".{\n .style = .{ .timeout_ms = 0, .rules = .{ .{ .name = \"a\", .language = \"go\", .measure = .line_length, .limit = 1 } } } }".into(),
            "timeout_ms",
        ),
    ] {
        let message = load(&text).expect_err(&text).to_string();
        assert!(message.contains(says), "{text}: {message}");
        assert!(message.contains("chock.zon:"), "{text}: {message}");
    }
    let twice = load(
        ".{ .style = .{ .rules = .{\n .{ .name = \"a\", .language = \"go\", .measure = .line_length, .limit = 1 },\n .{ .name = \"a\", .language = \"go\", .measure = .line_length, .limit = 2 } } } }",
    )
    .expect_err("twice")
    .to_string();
    assert!(
        twice.contains("chock.zon:3:") && twice.contains("first at line 2"),
        "{twice}"
    );
}

#[test]
fn style_parse_is_read_at_start_as_an_act() {
    let answer = |rules: &str| {
        load(&format!(".{{ .policy = .{{ .rules = .{{ {rules} }} }} }}"))
            .expect("loads")
            .start_verdict("main", &crate::StartQuestion::StyleParse)
            .expect("named")
            .decision
    };
    // Chock ships no rule: nothing said is an ask (and chock-gate
    // grants it at start only on allow).
    assert_eq!(answer(""), Decision::Ask);
    assert_eq!(
        answer(".{ .action = \"style.*\", .decision = .deny }"),
        Decision::Deny
    );
    assert_eq!(
        answer(".{ .action = \"style.parse\", .decision = .allow }"),
        Decision::Allow
    );
    assert!(crate::read_once_note("style.parse").is_some());
}

#[test]
fn style_is_the_projects_and_no_other_files() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = dir.path().join("config.zon");
    std::fs::write(&config, ".{\n .style = .{} }").expect("write");
    let message = crate::Policy::load(&crate::LoadOptions {
        project_dir: dir.path().to_path_buf(),
        operator_config: Some(config),
        discovered_bundles: vec![],
        org_bundles: vec![],
    })
    .expect_err("config.zon")
    .to_string();
    assert!(
        message.contains("config.zon:2:") && message.contains("chock.zon"),
        "{message}"
    );
}
