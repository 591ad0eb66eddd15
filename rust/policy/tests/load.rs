//! Loading real files: the project's chock.zon, the operator's config.zon and
//! organisation bundles, every refusal with its position, and how the layers
//! fold into one answer.

use std::path::{Path, PathBuf};

use chock_config::{Machine, human_bytes};
use chock_policy::{
    DEFAULT_MAX_DEPTH, DEFAULT_MAX_WIDTH, Decision, Key, Layer, LoadOptions, NoReviewer, Policy,
    PolicyError, Reading, StartQuestion, SubagentCaps,
};

fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("load")
        .join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch dir");
    dir
}

/// A project directory holding `chock_zon` (when given), isolated from the
/// machine's own operator config and bundles.
fn project(name: &str, chock_zon: Option<&str>) -> (PathBuf, LoadOptions) {
    let dir = scratch(name);
    if let Some(text) = chock_zon {
        std::fs::write(dir.join("chock.zon"), text).expect("write chock.zon");
    }
    let options = LoadOptions {
        project_dir: dir.clone(),
        ..LoadOptions::default()
    };
    (dir, options)
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).expect("write file");
    path
}

fn load_err(options: &LoadOptions) -> String {
    match Policy::load(options) {
        Ok(_) => panic!("expected a refusal"),
        Err(e) => e.to_string(),
    }
}

fn decide(policy: &Policy, action: &str) -> Decision {
    policy.decide(&Key::new(action), Reading::Act).decision
}

#[test]
fn no_chock_zon_means_shipped_defaults_then_ask() {
    let (_, options) = project("none", None);
    let policy = Policy::load(&options).expect("loads");
    assert!(!policy.has_project_file());
    let v = policy.decide(&Key::new("call.write_file"), Reading::Act);
    assert_eq!(v.decision, Decision::Allow);
    assert_eq!(v.decided_by.layer, Layer::Default);
    assert_eq!(
        v.decided_by.rule.as_deref(),
        Some(".{ .action = \"call.write_file\", .decision = .allow }")
    );
    assert!(v.suggestion.is_none());
    let v = policy.decide(&Key::new("net.fetch.org.ziglang.docs"), Reading::Act);
    assert_eq!(
        (v.decision, v.decided_by.layer),
        (Decision::Ask, Layer::Nothing)
    );
    let s = v.suggestion.expect("a suggestion short of allow");
    assert_eq!(
        s.rule,
        ".{ .action = \"net.fetch.org.ziglang.docs\", .decision = .allow }"
    );
    assert!(
        s.block.starts_with(".policy.rules in ") && s.block.ends_with("chock.zon"),
        "{}",
        s.block
    );
}

#[test]
fn an_empty_literal_and_a_file_without_policy_mean_no_rules() {
    for (name, text) in [
        ("empty", ".{}"),
        ("settings-only", ".{ .limits = .{ .processes = 300 } }"),
    ] {
        let (_, options) = project(name, Some(text));
        let policy = Policy::load(&options).expect(text);
        assert!(policy.rules().is_empty());
        assert_eq!(decide(&policy, "call.glob"), Decision::Allow);
    }
}

#[test]
fn a_project_rule_is_found_with_its_file_line_and_text() {
    let text = ".{\n    .policy = .{\n        .rules = .{\n            .{ .action = \"net.fetch.org.ziglang.*\", .decision = .allow },\n            .{\n                .action = \"net.fetch.*\",\n                .decision = .deny,\n            },\n        },\n    },\n}\n";
    let (dir, options) = project("rules", Some(text));
    let policy = Policy::load(&options).expect("loads");
    let v = policy.decide(&Key::new("net.fetch.org.ziglang.docs"), Reading::Act);
    assert_eq!(v.decision, Decision::Allow);
    assert_eq!(v.decided_by.layer, Layer::Project);
    assert_eq!(
        v.decided_by.file.as_deref(),
        Some(dir.join("chock.zon").as_path())
    );
    assert_eq!(v.decided_by.line, Some(4));
    assert_eq!(
        v.decided_by.rule.as_deref(),
        Some(".{ .action = \"net.fetch.org.ziglang.*\", .decision = .allow }")
    );
    let v = policy.decide(&Key::new("net.fetch.com.evil"), Reading::Act);
    assert_eq!((v.decision, v.decided_by.line), (Decision::Deny, Some(5)));
    assert!(
        v.decided_by
            .rule
            .as_deref()
            .is_some_and(|r| r.contains(".decision = .deny,\n"))
    );
}

#[test]
fn a_matching_project_rule_beats_the_shipped_default_however_broad() {
    let (_, options) = project(
        "broad",
        Some(
            ".{ .policy = .{ .rules = .{ .{ .agent_kind = \"reviewer\", .decision = .deny } } } }",
        ),
    );
    let policy = Policy::load(&options).expect("loads");
    let reviewer = Key::new("call.write_file").with_agent_kind("reviewer");
    let v = policy.decide(&reviewer, Reading::Act);
    assert_eq!(
        (v.decision, v.decided_by.layer),
        (Decision::Deny, Layer::Project)
    );
    assert_eq!(
        decide(&policy, "call.write_file"),
        Decision::Allow,
        "main still gets the default"
    );
    let (_, options) = project(
        "putback",
        Some(
            ".{ .policy = .{ .rules = .{ .{ .action = \"call.write_file\", .decision = .ask } } } }",
        ),
    );
    assert_eq!(
        decide(&Policy::load(&options).expect("loads"), "call.write_file"),
        Decision::Ask
    );
}

#[test]
fn tool_and_model_rules_need_the_key_to_name_them() {
    let (_, options) = project(
        "tool",
        Some(
            ".{ .policy = .{ .rules = .{ .{ .tool = \"fetch_url\", .action = \"net.fetch.*\", .decision = .allow }, .{ .model = \"m1\", .decision = .deny } } } }",
        ),
    );
    let policy = Policy::load(&options).expect("loads");
    assert_eq!(decide(&policy, "net.fetch.org.x"), Decision::Ask);
    let key = Key::new("net.fetch.org.x").with_tool("fetch_url");
    assert_eq!(policy.decide(&key, Reading::Act).decision, Decision::Allow);
    let key = Key::new("git.push").with_model("m1");
    assert_eq!(policy.decide(&key, Reading::Act).decision, Decision::Deny);
}

#[test]
fn the_suggestion_is_specific_enough_to_win() {
    let (_, options) = project(
        "suggest",
        Some(
            ".{ .policy = .{ .rules = .{ .{ .tool = \"run_command\", .action = \"git.push\", .decision = .deny } } } }",
        ),
    );
    let policy = Policy::load(&options).expect("loads");
    let key = Key::new("git.push").with_tool("run_command");
    let s = policy
        .decide(&key, Reading::Act)
        .suggestion
        .expect("suggestion");
    assert_eq!(
        s.rule,
        ".{ .agent_kind = \"main\", .tool = \"run_command\", .action = \"git.push\", .decision = .allow }"
    );
    // Applying the suggestion really changes the answer.
    let text = format!(
        ".{{ .policy = .{{ .rules = .{{ .{{ .tool = \"run_command\", .action = \"git.push\", .decision = .deny }}, {} }} }} }}",
        s.rule
    );
    let (_, options) = project("suggest-applied", Some(&text));
    assert_eq!(
        Policy::load(&options)
            .expect("loads")
            .decide(&key, Reading::Act)
            .decision,
        Decision::Allow
    );
}

#[test]
fn a_suggestion_that_can_only_tie_says_to_edit_the_rule() {
    let (dir, options) = project(
        "tie",
        Some(
            ".{ .policy = .{ .rules = .{\n.{ .agent_kind = \"main\", .tool = \"t\", .model = \"m\", .action = \"git.b\", .decision = .deny },\n} } }",
        ),
    );
    let policy = Policy::load(&options).expect("loads");
    let key = Key::new("git.b").with_tool("t").with_model("m");
    let s = policy
        .decide(&key, Reading::Act)
        .suggestion
        .expect("suggestion");
    assert!(
        s.block
            .starts_with(&format!("{}:2", dir.join("chock.zon").display())),
        "{}",
        s.block
    );
    assert!(
        s.block.contains("in place of the rule there"),
        "{}",
        s.block
    );
}

#[test]
fn refusals_inside_policy_name_file_line_column_and_what_to_write() {
    // (text, the text the error must point at, words in the message)
    let cases = [
        (
            ".{ .policy = .{ .rules = .{ .{ .actoin = \"x\", .decision = .allow } } } }",
            "actoin",
            "unknown field `.actoin`: did you mean `.action`?",
        ),
        (
            ".{ .policy = .{ .rules = .{ .{ .action = \"x\", .decision = .agent_reveiw } } } }",
            ".agent_reveiw",
            "unknown variant `.agent_reveiw`: did you mean `.agent_review`?",
        ),
        (
            ".{ .policy = .{ .rules = .{ .{ .action = \"*\", .decision = .allow } } } }",
            "\"*\"",
            "leave the field out to match every value",
        ),
        (
            ".{ .policy = .{ .rules = .{ .{ .action = \"a.*.b\", .decision = .allow } } } }",
            "\"a.*.b\"",
            "write `a.*`",
        ),
        (
            ".{ .policy = .{ .rules = .{ .{ .action = \"\", .decision = .allow } } } }",
            "\"\"",
            "empty pattern",
        ),
        (
            ".{ .policy = .{ .rules = .{ .{ .action = \".*\", .decision = .allow } } } }",
            "\".*\"",
            "`.*` has no name",
        ),
        (
            ".{ .policy = .{ .rules = .{ .{ .action = \"a\\x00\", .decision = .allow } } } }",
            "\"a\\x00\"",
            "NUL",
        ),
        (
            ".{ .policy = .{ .rules = .{ .{ .action = \"x\" } } } }",
            ".{ .action",
            "missing field `decision`",
        ),
        (
            ".{ .policy = .{ .rules = .{ .{ .action = \"x\", .decision = \"allow\" } } } }",
            "\"allow\"",
            "write .allow without quotes",
        ),
        (
            ".{ .policy = .{ .rule = .{} } }",
            "rule =",
            "unknown field `.rule`: did you mean `.rules`?",
        ),
        (
            ".{ .policy = .{ .{ .action = \"x\", .decision = .allow } } }",
            ".{ .{",
            "the `.policy` block",
        ),
        (
            ".{ .policy = .{}, .policy = .{} }",
            "policy = .{} }",
            "duplicate field `policy`",
        ),
        (
            "1",
            "1",
            "a struct literal `.{ ... }` at the top of chock.zon",
        ),
        (
            ".{ .nix = .{ .max_object_bytes = \"10%\" } }",
            "\"10%\"",
            "percentage",
        ),
        (
            ".{ .nix = .{ .max_objcet_bytes = 1 } }",
            "max_objcet_bytes",
            "unknown field `.max_objcet_bytes`: did you mean `.max_object_bytes`?",
        ),
        (
            ".{ .policy = .{ .net = .{ .router = .open } } }",
            ".open",
            "unknown variant `.open`",
        ),
    ];
    for (i, (text, at, words)) in cases.iter().enumerate() {
        let (line, column) = (1, text.find(at).expect("marker") + 1);
        let (dir, options) = project(&format!("bad{i}"), Some(text));
        let shown = load_err(&options);
        let want = format!("{}:{line}:{column}: ", dir.join("chock.zon").display());
        assert!(shown.starts_with(&want), "{text}\nwant {want}\ngot {shown}");
        assert!(shown.contains(words), "{text}: {shown}");
        assert!(
            shown
                .lines()
                .nth(1)
                .is_some_and(|l| l.contains(text.lines().next().unwrap_or(""))),
            "{shown}"
        );
    }
}

#[test]
fn bounds_are_enforced() {
    let rule = ".{ .action = \"git.a\", .decision = .ask },";
    let (_, options) = project(
        "512",
        Some(&format!(
            ".{{ .policy = .{{ .rules = .{{ {} }} }} }}",
            rule.repeat(512)
        )),
    );
    assert_eq!(
        Policy::load(&options)
            .expect("512 rules load")
            .rules()
            .len(),
        512
    );
    let (_, options) = project(
        "513",
        Some(&format!(
            ".{{ .policy = .{{ .rules = .{{ {} }} }} }}",
            rule.repeat(513)
        )),
    );
    let shown = load_err(&options);
    assert!(
        shown.contains("513 rules, and a file holds at most 512"),
        "{shown}"
    );
    let (_, options) = project(
        "big",
        Some(&format!(".{{ .x = \"{}\" }}", "a".repeat(1 << 20))),
    );
    assert!(load_err(&options).contains("1 MiB"));
}

#[test]
fn agents_are_checked() {
    let ok = ".{ .policy = .{ .agents = .{ .{ .kind = \"main\" }, .{ .kind = \"reviewer\", .parent = \"main\" } } } }";
    let (_, options) = project("agents", Some(ok));
    assert_eq!(
        Policy::load(&options)
            .expect("loads")
            .config()
            .agents()
            .len(),
        2
    );
    for (name, text, words) in [
        (
            "dup",
            ".{ .policy = .{ .agents = .{ .{ .kind = \"a\" }, .{ .kind = \"a\" } } } }",
            "declared twice",
        ),
        (
            "orphan",
            ".{ .policy = .{ .agents = .{ .{ .kind = \"a\", .parent = \"b\" } } } }",
            "not declared",
        ),
        (
            "loop",
            ".{ .policy = .{ .agents = .{ .{ .kind = \"a\", .parent = \"b\" }, .{ .kind = \"b\", .parent = \"a\" } } } }",
            "loop",
        ),
        (
            "self",
            ".{ .policy = .{ .agents = .{ .{ .kind = \"a\", .parent = \"a\" } } } }",
            "loop",
        ),
        (
            "star",
            ".{ .policy = .{ .agents = .{ .{ .kind = \"a*\" } } } }",
            "no `*`",
        ),
    ] {
        let (_, options) = project(name, Some(text));
        let shown = load_err(&options);
        assert!(shown.contains(words), "{name}: {shown}");
    }
}

/// A rule for a child kind that answers it above its parent is refused at
/// load, at the rule's line, naming the kind, its parent, the act and the
/// parent's rule; rules lowering the child, or lowering only the parent,
/// load.
#[test]
fn a_child_kind_given_more_than_its_parent_is_refused_at_load() {
    let agents =
        ".agents = .{ .{ .kind = \"main\" }, .{ .kind = \"tester\", .parent = \"main\" } }";
    let zon = |rules: &[&str]| {
        format!(
            ".{{ .policy = .{{\n    {agents},\n    .rules = .{{\n{}    }},\n}} }}\n",
            rules
                .iter()
                .map(|r| format!("        {r},\n"))
                .collect::<String>()
        )
    };
    for (name, rules, line, act, parents) in [
        (
            "child-allowed-denied",
            &[
                ".{ .action = \"call.write_file\", .decision = .deny }",
                ".{ .agent_kind = \"tester\", .action = \"call.write_file\", .decision = .allow }",
            ][..],
            5,
            "`call.write_file`",
            "answered deny (by the rule at line 4",
        ),
        (
            "child-everything",
            &[".{ .agent_kind = \"tester\", .decision = .allow }"][..],
            4,
            "`load-check.any`",
            "answered ask (by no rule)",
        ),
        (
            "child-class",
            &[
                ".{ .agent_kind = \"main\", .action = \"exec.*\", .decision = .ask }",
                ".{ .agent_kind = \"tester\", .action = \"exec.*\", .decision = .allow }",
            ][..],
            5,
            "`exec.load-check`",
            "answered ask (by the rule at line 4",
        ),
    ] {
        let (dir, options) = project(name, Some(&zon(rules)));
        let shown = load_err(&options);
        let file = dir.join("chock.zon");
        assert!(
            shown.starts_with(&format!("{}:{line}:", file.display())),
            "{name}: {shown}"
        );
        for words in [
            "agent kind `tester` is answered allow for ",
            act,
            "where its parent `main` is",
            parents,
            "lower this rule for `tester`",
        ] {
            assert!(shown.contains(words), "{name}: {words}: {shown}");
        }
    }
    for (name, rules) in [
        (
            "child-lowered",
            &[
                ".{ .action = \"call.write_file\", .decision = .allow }",
                ".{ .agent_kind = \"tester\", .action = \"call.write_file\", .decision = .deny }",
            ][..],
        ),
        (
            "same-for-both",
            &[".{ .action = \"exec.*\", .decision = .allow }"][..],
        ),
        // The parent lowered by its own rule: the child holds more only
        // through the rule for every kind, and the spawn chain gives it
        // its parent's answer.
        (
            "parent-lowered",
            &[
                ".{ .agent_kind = \"main\", .action = \"exec.*\", .decision = .ask }",
                ".{ .action = \"exec.*\", .decision = .allow }",
            ][..],
        ),
        // A rule for the child that gives it what its parent holds.
        (
            "child-equal",
            &[
                ".{ .action = \"call.write_file\", .decision = .allow }",
                ".{ .agent_kind = \"tester\", .action = \"call.write_file\", .decision = .allow }",
            ][..],
        ),
    ] {
        let (_, options) = project(name, Some(&zon(rules)));
        Policy::load(&options).unwrap_or_else(|e| panic!("{name}: {e}"));
    }
}

#[test]
fn an_org_bundle_is_a_ceiling_that_binds_unnamed_acts() {
    let (dir, mut options) = project(
        "org",
        Some(
            ".{ .policy = .{ .rules = .{ .{ .action = \"git.*\", .decision = .allow }, .{ .action = \"sandbox.jit\", .decision = .allow } } } }",
        ),
    );
    let bundle = write(
        &dir,
        "org.zon",
        ".{\n    .version = 1,\n    .subject = \"acme\",\n    .rules = .{\n        .{ .action = \"git.push\", .decision = .ask },\n        .{ .action = \"sandbox.jit\", .decision = .deny },\n    },\n}\n",
    );
    options.org_bundles.push(bundle.clone());
    let policy = Policy::load(&options).expect("loads");
    assert_eq!(policy.org_bundles().len(), 1);
    assert_eq!(policy.org_bundles()[0].subject.as_deref(), Some("acme"));
    let v = policy.decide(&Key::new("git.push"), Reading::Act);
    assert_eq!(
        (v.decision, v.decided_by.layer),
        (Decision::Ask, Layer::Org)
    );
    assert_eq!(v.decided_by.file.as_deref(), Some(bundle.as_path()));
    assert_eq!(v.decided_by.line, Some(5));
    let s = v.suggestion.expect("suggestion");
    assert!(
        s.block.contains("organisation's bundle") && s.block.contains("org.zon"),
        "{}",
        s.block
    );
    assert_eq!(
        decide(&policy, "git.commit"),
        Decision::Allow,
        "unnamed in the bundle = allow there"
    );
    let jit = policy
        .start_verdict("main", &StartQuestion::SandboxJit)
        .expect("answer");
    assert_eq!(jit.decision, Decision::Deny);
}

#[test]
fn subagent_caps_come_from_chock_zon_held_to_the_lowest_bundle() {
    let (_, options) = project("caps-default", None);
    assert_eq!(
        Policy::load(&options).expect("loads").config().subagents(),
        SubagentCaps {
            max_depth: DEFAULT_MAX_DEPTH,
            max_width: DEFAULT_MAX_WIDTH
        }
    );
    let (dir, mut options) = project(
        "caps",
        Some(".{ .subagents = .{ .max_depth = 3, .max_width = 2 } }"),
    );
    let policy = Policy::load(&options).expect("loads");
    assert_eq!(
        policy.config().subagents(),
        SubagentCaps {
            max_depth: 3,
            max_width: 2
        }
    );
    let bundle = write(
        &dir,
        "org.zon",
        ".{ .version = 1, .subagents = .{ .max_depth = 1 } }\n",
    );
    options.org_bundles.push(bundle);
    assert_eq!(
        Policy::load(&options).expect("loads").config().subagents(),
        SubagentCaps {
            max_depth: 1,
            max_width: 2
        },
        "the bundle's depth is a ceiling, its unset width none"
    );
    let (_, options) = project("caps-empty", Some(".{ .subagents = .{} }"));
    assert!(load_err(&options).contains("subagents needs .max_depth, .max_width or both"));
}

#[test]
fn the_reviewer_is_a_declared_kind_and_a_bundle_may_forbid_reviewer_agents() {
    let (_, options) = project("review-none", None);
    let none = Policy::load(&options).expect("loads");
    assert!(
        matches!(none.config().reviewer(), Err(NoReviewer::NotNamed(_))),
        "{:?}",
        none.config().reviewer()
    );
    let zon = ".{\n  .policy = .{ .agents = .{ .{ .kind = \"main\" }, .{ .kind = \"reviewer\" } } },\n  .review = .{ .agent_kind = \"reviewer\" },\n}\n";
    let (dir, mut options) = project("review", Some(zon));
    let policy = Policy::load(&options).expect("loads");
    let review = policy.config().reviewer().expect("a reviewer");
    assert_eq!(review.agent_kind, "reviewer");
    assert_eq!(
        (review.file.clone(), review.line),
        (dir.join("chock.zon"), 3)
    );
    // A bundle that does not mention review leaves it; one that forbids
    // reviewer agents takes it away, whatever chock.zon says.
    options.org_bundles = vec![write(&dir, "quiet.zon", ".{ .version = 1 }\n")];
    assert!(
        Policy::load(&options)
            .expect("loads")
            .config()
            .reviewer()
            .is_ok()
    );
    let forbids = write(
        &dir,
        "forbids.zon",
        ".{ .review = .{ .by_agent = false } }\n",
    );
    options.org_bundles.push(forbids.clone());
    let held = Policy::load(&options).expect("loads");
    assert_eq!(
        held.config().reviewer(),
        Err(NoReviewer::Forbidden(forbids))
    );
    assert!(
        held.config()
            .reviewer()
            .unwrap_err()
            .to_string()
            .contains("by_agent = false")
    );
    // A misspelt field in the bundle refuses it rather than letting agents approve.
    options.org_bundles = vec![write(
        &dir,
        "typo.zon",
        ".{\n .review = .{ .by_agnet = false },\n}\n",
    )];
    let shown = load_err(&options);
    assert!(
        shown.contains("typo.zon:2") && shown.contains("by_agnet"),
        "{shown}"
    );

    for (name, text, words) in [
        (
            "review-undeclared",
            ".{\n .review = .{ .agent_kind = \"checker\" },\n}\n",
            "chock.zon:2:12: review: agent kind `checker` is not declared: add .{ .kind = \"checker\" } to .policy.agents",
        ),
        (
            "review-unknown-field",
            ".{ .policy = .{ .agents = .{ .{ .kind = \"r\" } } }, .review = .{ .agent_kind = \"r\", .model = \"m\" } }",
            "model",
        ),
        ("review-empty", ".{ .review = .{} }", "agent_kind"),
    ] {
        let (_, options) = project(name, Some(text));
        let shown = load_err(&options);
        assert!(shown.contains(words), "{name}: {shown}");
    }
}

#[test]
fn every_bundle_found_binds_and_discovered_ones_may_be_missing() {
    let (dir, mut options) = project("two-orgs", None);
    let a = write(
        &dir,
        "a.zon",
        ".{ .rules = .{ .{ .action = \"call.glob\", .decision = .agent_review } } }",
    );
    let b = write(
        &dir,
        "b.zon",
        ".{ .rules = .{ .{ .action = \"call.*\", .decision = .agent_then_human } } }",
    );
    options.discovered_bundles = vec![dir.join("missing.zon"), a];
    options.org_bundles = vec![b];
    let policy = Policy::load(&options).expect("loads");
    assert_eq!(policy.org_bundles().len(), 2);
    assert_eq!(decide(&policy, "call.glob"), Decision::AgentThenHuman);
    options.org_bundles = vec![dir.join("nope.zon")];
    let shown = load_err(&options);
    assert!(
        shown.contains("nope.zon") && shown.contains("does not exist"),
        "{shown}"
    );
}

#[test]
fn bundle_refusals() {
    let (dir, mut options) = project("org-bad", None);
    for (name, text, words) in [
        (
            "v2",
            ".{ .version = 2, .rules = .{ .{ .new_shape = 1 } } }",
            "update Chock",
        ),
        (
            "nodecision",
            ".{ .rules = .{ .{ .action = \"x\" } } }",
            "missing field `decision`",
        ),
        (
            "mandatory-climbs",
            ".{\n .mandatory_policies = .{ \"../escape\" },\n}",
            "mandatory-climbs.zon:2:",
        ),
        (
            "mandatory-missing",
            ".{ .mandatory_policies = .{ \"no-force\" } }",
            "makes the policy `no-force` mandatory",
        ),
        (
            "star",
            ".{ .rules = .{ .{ .action = \"*\", .decision = .deny } } }",
            "leave the field out",
        ),
        (
            "sink",
            ".{ .sinks = .{ .{ .name = \"a\", .to = \"journald\" }, .{ .name = \"b\", .to = \"syslog+udp://h\" } } }",
            "names no HOST:PORT",
        ),
        ("budget", ".{ .budget = .{ .max_cost = 0.0 } }", "above 0"),
        ("subagents", ".{ .subagents = .{} }", "max_depth"),
        (
            "subject",
            &format!(".{{ .subject = \"{}\" }}", "s".repeat(257)),
            "256 bytes",
        ),
    ] {
        options.org_bundles = vec![write(&dir, &format!("{name}.zon"), text)];
        let shown = load_err(&options);
        assert!(
            shown.starts_with(&dir.join(format!("{name}.zon")).display().to_string()),
            "{shown}"
        );
        assert!(shown.contains(words), "{name}: {shown}");
    }
}

#[test]
fn an_expired_bundle_still_binds_with_a_warning() {
    let (dir, mut options) = project("expired", None);
    options.org_bundles = vec![write(
        &dir,
        "old.zon",
        ".{ .expires_ms = 1000, .rules = .{ .{ .action = \"call.glob\", .decision = .deny } } }",
    )];
    let policy = Policy::load(&options).expect("loads");
    assert_eq!(decide(&policy, "call.glob"), Decision::Deny);
    assert!(
        policy
            .warnings()
            .iter()
            .any(|w| w.contains("expired") && w.contains("still binds")),
        "{:?}",
        policy.warnings()
    );
    assert!(policy.org_bundles()[0].is_expired(1001));
    assert!(
        !policy.org_bundles()[0].is_expired(1000),
        "equal is still current"
    );
}

#[test]
fn settings_fold_project_over_operator_over_builtin_under_the_org_ceiling() {
    let (dir, mut options) = project(
        "settings",
        Some(
            ".{ .nix = .{ .dev_shell = \"ci\", .max_object_bytes = \"1GiB\" }, .limits = .{ .processes = \"50%\" } }",
        ),
    );
    let operator = write(
        &dir,
        "config.zon",
        ".{ .providers = .{ .{ .name = \"x\", .kind = .anthropic } }, .nix = .{ .max_object_bytes = 1, .max_session_bytes = \"512MiB\" }, .log = .{ .rotate_bytes = \"1MiB\", .keep = 3, .fsync = true }, .limits = .{ .memory = \"4GiB\" } }",
    );
    options.operator_config = Some(operator);
    let policy = Policy::load(&options).expect("loads");
    let nix = policy.config().nix_settings();
    assert_eq!(nix.dev_shell.as_deref(), Some("ci"));
    assert_eq!(
        nix.max_object_bytes,
        1 << 30,
        "the project wins over the operator"
    );
    assert_eq!(
        nix.max_session_bytes,
        512 << 20,
        "the operator wins over the built-in"
    );
    let log = policy.config().log_settings();
    assert_eq!((log.rotate_bytes, log.keep, log.fsync), (1 << 20, 3, true));
    let machine = Machine {
        cpus: 8,
        memory_bytes: 64 << 30,
    };
    let limits = policy.config().limits_on(&machine);
    assert_eq!((limits.processes, limits.memory_bytes), (4, 4 << 30));

    options.org_bundles = vec![write(
        &dir,
        "org.zon",
        ".{ .nix = .{ .max_object_bytes = \"64MiB\" }, .limits = .{ .processes = \"2\", .memory = \"1GiB\" } }",
    )];
    let policy = Policy::load(&options).expect("loads");
    assert_eq!(policy.config().nix_settings().max_object_bytes, 64 << 20);
    assert_eq!(policy.config().nix_settings().max_session_bytes, 512 << 20);
    let limits = policy.config().limits_on(&machine);
    assert_eq!((limits.processes, limits.memory_bytes), (2, 1 << 30));
    let warning = policy
        .warnings()
        .iter()
        .find(|w| w.contains("nix.max_object_bytes"))
        .expect("held warning");
    assert!(
        warning.contains(&human_bytes(1 << 30))
            && warning.contains("64 MiB")
            && warning.contains("org.zon"),
        "{warning}"
    );
}

#[test]
fn settings_without_any_file_are_the_built_in_ones() {
    let (_, options) = project("builtin", None);
    let policy = Policy::load(&options).expect("loads");
    let nix = policy.config().nix_settings();
    assert_eq!(
        (nix.dev_shell, nix.max_object_bytes, nix.max_session_bytes),
        (None, 16 << 20, 256 << 20)
    );
    let log = policy.config().log_settings();
    assert_eq!((log.rotate_bytes, log.keep, log.fsync), (8 << 20, 8, false));
    let machine = Machine {
        cpus: 2,
        memory_bytes: 8 << 30,
    };
    assert_eq!(
        policy.config().limits_on(&machine),
        machine.default_limits()
    );
}

#[test]
fn readings_and_start_questions() {
    let (_, options) = project(
        "start",
        Some(
            ".{ .policy = .{ .rules = .{ .{ .action = \"provider.work.*\", .decision = .deny }, .{ .action = \"provider.work.m-1\", .decision = .allow }, .{ .action = \"nix.build\", .decision = .ask }, .{ .action = \"workspace.*\", .decision = .ask } } } }",
        ),
    );
    let policy = Policy::load(&options).expect("loads");
    let at = |q: StartQuestion| policy.start_verdict("main", &q).expect("answer").decision;
    assert_eq!(at(StartQuestion::NixBuild), Decision::Ask);
    assert_eq!(
        at(StartQuestion::WorkspaceIntegrate),
        Decision::Ask,
        "the ceiling reading: the rule's ask"
    );
    let model = |instance: &str, model: &str| StartQuestion::ModelSelect {
        instance: instance.into(),
        model: model.into(),
    };
    assert_eq!(at(model("home", "x")), Decision::Allow, "unnamed = allow");
    assert_eq!(at(model("work", "m-1")), Decision::Allow);
    assert_eq!(at(model("work", "m-2")), Decision::Deny);
    assert_eq!(
        at(StartQuestion::ThirdPartyTool {
            action: "mcp.time.tool.now".into()
        }),
        Decision::Ask,
        "an act no rule names"
    );
    assert_eq!(
        at(StartQuestion::Host {
            action: "mcp.notion.host.com.notion".into()
        }),
        Decision::Ask
    );
    assert_eq!(
        policy
            .decide(&Key::new("provider.home"), Reading::Ceiling)
            .decision,
        Decision::Allow
    );
    assert_eq!(
        policy
            .decide(&Key::new("provider.home"), Reading::Act)
            .decision,
        Decision::Ask
    );
}

#[test]
fn load_errors_that_are_not_in_a_file() {
    let options = LoadOptions {
        project_dir: PathBuf::from("/nonexistent/chock-project"),
        ..LoadOptions::default()
    };
    assert!(matches!(
        Policy::load(&options),
        Err(PolicyError::NoProjectDir { .. })
    ));
    let (dir, options) = project("not-utf8", None);
    std::fs::write(dir.join("chock.zon"), b".{ .x = \"\xff\" }").expect("write");
    let shown = load_err(&options);
    assert!(
        shown.contains("chock.zon:1:") && shown.contains("UTF-8"),
        "{shown}"
    );
}

#[test]
fn rules_written_in_config_zon_are_named_with_the_file_to_move_them_to() {
    let (dir, mut options) = project("misplaced-rules", None);
    let operator = write(
        &dir,
        "config.zon",
        ".{\n    .log = .{ .keep = 2 },\n    .policy = .{ .rules = .{ .{ .action = \"git.push\", .decision = .deny } } },\n}",
    );
    options.operator_config = Some(operator.clone());
    // Rules there would bind nothing: the file is refused, not half read.
    let shown = load_err(&options);
    assert!(
        shown.starts_with(&format!(
            "{}:3:6: config.zon holds no rules",
            operator.display()
        )),
        "{shown}"
    );
    assert!(
        shown.contains("move `.policy` to the project's chock.zon"),
        "{shown}"
    );
    write(
        &dir,
        "config.zon",
        ".{ .rules = .{ .{ .action = \"git.push\", .decision = .deny } } }",
    );
    let shown = load_err(&options);
    assert!(
        shown.contains("config.zon:1:5: config.zon holds no rules"),
        "{shown}"
    );

    // Settings alone: nothing to say.
    write(&dir, "config.zon", ".{ .log = .{ .keep = 2 } }");
    let policy = Policy::load(&options).expect("loads");
    assert!(policy.warnings().is_empty(), "{:?}", policy.warnings());
}

#[test]
fn a_container_block_names_the_image_and_refuses_a_dev_shell_beside_it() {
    let (dir, options) = project(
        "container",
        Some(".{\n    .container = .{ .image = \"debian:12\", .path = \"images/debian\" },\n}\n"),
    );
    let policy = Policy::load(&options).expect("loads");
    let container = policy.config().container().expect("container");
    assert_eq!(container.image, "debian:12");
    assert_eq!(
        container.path.as_deref(),
        Some(dir.join("images/debian").as_path())
    );
    assert_eq!(container.line, 2);

    let (_, both) = project(
        "container-and-shell",
        Some(
            ".{\n    .nix = .{ .dev_shell = \"ci\" },\n    .container = .{ .image = \"debian:12\" },\n}\n",
        ),
    );
    let error = load_err(&both);
    assert!(error.contains("chock.zon:3:"), "{error}");
    assert!(
        error.contains("both a dev shell") && error.contains("remove one"),
        "{error}"
    );

    let (_, typo) = project(
        "container-typo",
        Some(".{ .container = .{ .image = \"debian:12\", .tag = \"x\" } }"),
    );
    assert!(
        load_err(&typo).contains("tag"),
        "an unknown field in the block is refused"
    );
    let (_, blank) = project(
        "container-blank",
        Some(".{ .container = .{ .image = \"a b\" } }"),
    );
    assert!(load_err(&blank).contains("image reference"));
}

/// Each policy file with a typo at the top: refused at the name, with the
/// nearest block named, never read as a file without rules.
#[test]
fn a_misspelt_block_refuses_every_kind_of_file_naming_the_nearest_one() {
    let (dir, mut options) = project(
        "typo-project",
        Some(
            ".{\n    .polciy = .{ .rules = .{ .{ .action = \"git.push\", .decision = .deny } } },\n}\n",
        ),
    );
    let shown = load_err(&options);
    assert!(
        shown.starts_with(&format!(
            "{}:2:6: unknown field `.polciy`: did you mean `.policy`?",
            dir.join("chock.zon").display()
        )),
        "{shown}"
    );
    write(&dir, "chock.zon", ".{}");
    let operator = write(&dir, "config.zon", ".{ .limts = .{ .processes = 2 } }");
    options.operator_config = Some(operator.clone());
    let shown = load_err(&options);
    assert!(
        shown.starts_with(&format!(
            "{}:1:5: unknown field `.limts`: did you mean `.limits`?",
            operator.display()
        )),
        "{shown}"
    );
    write(&dir, "config.zon", ".{}");
    for (text, at, words) in [
        (
            ".{ .rulse = .{ .{ .action = \"git.push\", .decision = .deny } } }",
            ":1:5:",
            "unknown field `.rulse`: did you mean `.rules`?",
        ),
        (
            ".{ .rules = .{ .{ .action = \"git.push\", .decision = .deny, .note = \"x\" } } }",
            ":1:61:",
            "unknown field `.note`",
        ),
        (
            ".{ .review = .{ .by_agnet = false } }",
            ":1:18:",
            "unknown field `.by_agnet`: did you mean `.by_agent`?",
        ),
        (
            ".{ .nix = .{ .max_object_bytes = \"64MiB\", .unknown = 1 } }",
            ":1:44:",
            "unknown field `.unknown`",
        ),
        (
            ".{ .sinks = .{ .{ .name = \"x\", .to = \"journald\", .mode = 1 } } }",
            ":1:51:",
            "unknown field `.mode`",
        ),
    ] {
        let bundle = write(&dir, "org.zon", text);
        options.org_bundles = vec![bundle];
        let shown = load_err(&options);
        assert!(
            shown.contains(&format!("org.zon{at} {words}")),
            "{text}: {shown}"
        );
    }
}

/// A bundle written in chock.zon's shape binds nothing, so it is refused
/// saying the shape it must have; chock.zon in a bundle's shape likewise.
#[test]
fn a_file_in_another_files_shape_is_refused_with_the_shape_it_must_have() {
    let (dir, mut options) = project("shapes", Some(".{}"));
    let bundle = write(
        &dir,
        "org.zon",
        ".{\n    .policy = .{ .rules = .{ .{ .action = \"sandbox.jit\", .decision = .deny } } },\n}\n",
    );
    options.org_bundles = vec![bundle.clone()];
    let shown = load_err(&options);
    assert!(
        shown.starts_with(&format!(
            "{}:2:6: this is chock.zon's shape",
            bundle.display()
        )),
        "{shown}"
    );
    assert!(shown.contains("`.{ .version = 1, .rules = .{"), "{shown}");
    options.org_bundles.clear();
    write(
        &dir,
        "chock.zon",
        ".{ .rules = .{ .{ .action = \"git.push\", .decision = .deny } } }",
    );
    let shown = load_err(&options);
    assert!(
        shown.contains("chock.zon:1:5: the rules of chock.zon go in `.policy.rules`"),
        "{shown}"
    );
    write(
        &dir,
        "chock.zon",
        ".{ .policy = .{ .rules = .{ \"git.push\" } } }",
    );
    let shown = load_err(&options);
    assert!(shown.contains("chock.zon:1:29: expected a rule"), "{shown}");
}

/// A block this Chock does not implement is refused by name in every file,
/// never ignored.
#[test]
fn a_block_chock_does_not_implement_is_refused_by_name() {
    let (dir, mut options) = project("not-yet", None);
    for block in chock_policy::NOT_IMPLEMENTED {
        let text =
            format!(".{{\n    .limits = .{{ .processes = 2 }},\n    .{block} = .{{}},\n}}\n");
        write(&dir, "chock.zon", &text);
        let shown = load_err(&options);
        let col = 6; // at the block's name
        assert!(
            shown.contains(&format!(
                "chock.zon:3:{col}: `.{block}` is not implemented yet in this Chock"
            )),
            "{shown}"
        );
        write(&dir, "chock.zon", ".{}");
        options.operator_config = Some(write(&dir, "config.zon", &text));
        let shown = load_err(&options);
        assert!(
            shown.contains(&format!(
                "config.zon:3:{col}: `.{block}` is not implemented"
            )),
            "{shown}"
        );
        options.operator_config = None;
        options.org_bundles = vec![write(&dir, "org.zon", &text)];
        let shown = load_err(&options);
        assert!(
            shown.contains(&format!("org.zon:3:{col}: `.{block}` is not implemented")),
            "{shown}"
        );
        options.org_bundles.clear();
    }
}

/// `exce.path.rm` can never match: refused in chock.zon, bundles and
/// packages, unless chock.zon says `.unknown_actions = .warn`.
#[test]
fn an_unknown_action_namespace_is_refused_unless_chock_zon_says_warn() {
    let rules =
        ".policy = .{ .rules = .{\n    .{ .action = \"exce.path.rm\", .decision = .deny },\n} }";
    let (dir, mut options) = project("namespace", Some(&format!(".{{ {rules} }}")));
    let shown = load_err(&options);
    assert!(
        shown.contains("chock.zon:2:18: `exce.path.rm` is in no action namespace Chock names (did you mean `exec`?): its first label `exce`"),
        "{shown}"
    );
    write(
        &dir,
        "chock.zon",
        &format!(".{{ .unknown_actions = .warn, {rules} }}"),
    );
    let policy = Policy::load(&options).expect("warn loads");
    assert_eq!(policy.rules().len(), 1);
    let warning = policy
        .warnings()
        .iter()
        .find(|w| w.contains("exce.path.rm"))
        .unwrap_or_else(|| panic!("no warning in {:?}", policy.warnings()));
    assert!(warning.contains("chock.zon:2:18:"), "{warning}");
    write(&dir, "chock.zon", ".{ .unknown_actions = .ignore }");
    assert!(load_err(&options).contains("unknown variant `.ignore`"));
    // A bundle's and a package's rules are always held to the namespaces.
    write(&dir, "chock.zon", ".{ .unknown_actions = .warn }");
    options.org_bundles = vec![write(
        &dir,
        "org.zon",
        ".{ .rules = .{ .{ .action = \"sandbx.jit\", .decision = .deny } } }",
    )];
    let shown = load_err(&options);
    assert!(
        shown.contains("org.zon:1:29: `sandbx.jit` is in no action namespace"),
        "{shown}"
    );
    options.org_bundles.clear();
    let package = dir.join(".agents/policies/p");
    std::fs::create_dir_all(&package).expect("mkdir");
    write(
        &package,
        "manifest.zon",
        ".{ .id = \"p\", .version = \"1\", .summary = \"s\", .hooks = .{ \"tool\" }, .rules = .{ .{ .action = \"gti.push\", .decision = .deny } } }",
    );
    let shown = load_err(&options);
    assert!(shown.contains("manifest.zon:1:94: `gti.push` is in no action namespace Chock names (did you mean `git`?): its first label `gti`"), "{shown}");
}

/// A package whose rules vanished must not load as a project without them:
/// its folder swapped for a link, its manifest removed or made a link.
#[test]
fn a_package_folder_that_lost_its_manifest_or_is_a_link_refuses_the_load() {
    let (dir, options) = project("package-links", Some(".{}"));
    let policies = dir.join(".agents/policies");
    let package = policies.join("p");
    std::fs::create_dir_all(&package).expect("mkdir");
    let manifest = ".{ .id = \"p\", .version = \"1\", .summary = \"s\", .hooks = .{ \"tool\" }, .rules = .{ .{ .action = \"git.push\", .decision = .deny } } }";
    write(&package, "manifest.zon", manifest);
    write(&policies, "INDEX.md", "# index\n");
    std::fs::create_dir_all(policies.join(".p.new-1-0")).expect("staging");
    let policy = Policy::load(&options).expect("a package, a file and a staging folder");
    assert_eq!(decide(&policy, "git.push"), Decision::Deny);
    std::fs::remove_file(package.join("manifest.zon")).expect("rm");
    let shown = load_err(&options);
    assert!(shown.contains("p/manifest.zon:1:1: is missing"), "{shown}");
    let elsewhere = dir.join("elsewhere.zon");
    std::fs::write(&elsewhere, manifest).expect("write");
    std::os::unix::fs::symlink(&elsewhere, package.join("manifest.zon")).expect("link");
    let shown = load_err(&options);
    assert!(
        shown.contains("p/manifest.zon:1:1: is a symbolic link"),
        "{shown}"
    );
    std::fs::remove_dir_all(&package).expect("rm");
    std::os::unix::fs::symlink(dir.join("elsewhere"), &package).expect("link");
    let shown = load_err(&options);
    assert!(
        shown.contains("policies/p:1:1: is a symbolic link"),
        "{shown}"
    );
}

/// `.devices` names each device by its action; naming one does not allow it
/// (no shipped default for device.*), a rule beside it does.
#[test]
fn devices_are_named_in_the_block_and_allowed_by_a_rule() {
    let text = ".{\n    .devices = .{\n        .{ .action = \"device.usb.1d50.6018\" },\n        .{ .action = \"device.tty.serial.A10K\" },\n    },\n    .policy = .{ .rules = .{ .{ .action = \"device.usb.1d50.6018\", .decision = .allow } } },\n}\n";
    let (_, options) = project("devices", Some(text));
    let policy = Policy::load(&options).expect("loads");
    let named: Vec<(&str, u32)> = policy
        .config()
        .devices()
        .iter()
        .map(|d| (d.action.as_str(), d.line))
        .collect();
    assert_eq!(
        named,
        [("device.usb.1d50.6018", 3), ("device.tty.serial.A10K", 4)]
    );
    assert_eq!(decide(&policy, "device.usb.1d50.6018"), Decision::Allow);
    assert_eq!(decide(&policy, "device.tty.serial.A10K"), Decision::Ask);
}

/// A device name the namers would not make, a device named twice and a
/// `.devices` outside chock.zon are refused at their place.
#[test]
fn a_bad_devices_block_is_refused_at_its_place() {
    let (dir, mut options) = project("devices-bad", None);
    for (text, expected) in [
        (
            ".{ .devices = .{ .{ .action = \"device.usb.1D50.6018\" } } }",
            "chock.zon:1:31: `1D50` is not a vendor or product id",
        ),
        (
            ".{ .devices = .{ .{ .action = \"/dev/ttyUSB0\" } } }",
            "chock.zon:1:31: `/dev/ttyUSB0` names no device",
        ),
        (
            ".{ .devices = .{ .{ .action = \"device.tty.0403.6001\" }, .{ .action = \"device.tty.0403.6001\" } } }",
            "chock.zon:1:70: `device.tty.0403.6001` is named already (line 1)",
        ),
        (
            ".{ .devices = .{ .{ .path = \"/dev/ttyUSB0\" } } }",
            "chock.zon:1:22: unknown field `.path`",
        ),
    ] {
        write(&dir, "chock.zon", text);
        let shown = load_err(&options);
        assert!(shown.contains(expected), "{shown}");
    }
    write(&dir, "chock.zon", ".{}");
    options.operator_config = Some(write(
        &dir,
        "config.zon",
        ".{ .devices = .{ .{ .action = \"device.usb.1d50.6018\" } } }",
    ));
    let shown = load_err(&options);
    assert!(
        shown.contains("config.zon:1:5: devices are the project's"),
        "{shown}"
    );
}

/// The policy's identity names the rules, not their files: the same rules
/// laid out differently in another project have one identity; a changed
/// rule, an added bundle or a package's stage changes it; every answer
/// carries it.
#[test]
fn the_identity_hashes_every_layers_rules_and_every_answer_carries_it() {
    let rules = ".{ .policy = .{ .rules = .{ .{ .action = \"git.push\", .decision = .deny } } } }";
    let spread = ".{\n    .policy = .{\n        .rules = .{\n            .{\n                .decision = .deny,\n                .action = \"git.push\",\n            },\n        },\n    },\n}\n";
    let identity = |name: &str, text: &str, bundle: Option<&str>| {
        let (dir, mut options) = project(name, Some(text));
        if let Some(bundle) = bundle {
            options.org_bundles = vec![write(&dir, "org.zon", bundle)];
        }
        let policy = Policy::load(&options).expect("loads");
        let verdict = policy.decide(&Key::new("git.push"), Reading::Act);
        assert_eq!(
            verdict.decided_by.identity.as_deref(),
            Some(policy.identity())
        );
        let unnamed = policy.decide(&Key::new("some.act.no.rule.names"), Reading::Act);
        assert_eq!(
            unnamed.decided_by.identity.as_deref(),
            Some(policy.identity())
        );
        policy.identity().to_owned()
    };
    let first = identity("identity-a", rules, None);
    assert!(
        first.starts_with("sha256:") && first.len() == 7 + 64,
        "{first}"
    );
    assert_eq!(identity("identity-b", spread, None), first);
    let allowed = rules.replace(".deny", ".allow");
    assert_ne!(identity("identity-c", &allowed, None), first);
    let bundle = ".{ .rules = .{ .{ .action = \"sandbox.jit\", .decision = .deny } } }";
    let with_bundle = identity("identity-d", rules, Some(bundle));
    assert_ne!(with_bundle, first);
    assert_eq!(identity("identity-e", spread, Some(bundle)), with_bundle);
}

#[test]
fn sinks_are_read_from_bundles_and_config_and_a_clash_is_refused() {
    let (dir, mut options) = project("sinks", None);
    options.org_bundles = vec![write(
        &dir,
        "org.zon",
        ".{ .sinks = .{ .{ .name = \"siem\", .to = \"syslog+tcp://logs.example:514\" } } }",
    )];
    options.operator_config = Some(write(
        &dir,
        "config.zon",
        ".{ .sinks = .{ .{ .name = \"mine\", .to = \"journald\", .backlog_bytes = \"1MiB\" }, .{ .name = \"siem\", .to = \"syslog+tcp://logs.example:514\" } } }",
    ));
    let policy = Policy::load(&options).expect("loads");
    let sinks = policy.config().sinks();
    let names: Vec<_> = sinks.iter().map(|s| s.id.as_str()).collect();
    assert_eq!(names, ["siem", "mine"]);
    assert_eq!(sinks[1].backlog_bytes, 1 << 20);
    assert_eq!(sinks[0].target.to_string(), "syslog+tcp://logs.example:514");

    options.operator_config = Some(write(
        &dir,
        "config.zon",
        ".{ .sinks = .{ .{ .name = \"siem\", .to = \"syslog+udp://elsewhere:514\" } } }",
    ));
    let shown = load_err(&options);
    assert!(
        shown.contains("config.zon") && shown.contains("`siem`") && shown.contains("org.zon"),
        "{shown}"
    );
    for (text, says) in [
        (
            ".{ .sinks = .{ .{ .name = \".x\", .to = \"journald\" } } }",
            "cannot name a sink",
        ),
        (
            ".{ .sinks = .{ .{ .name = \"a\", .to = \"journald\" }, .{ .name = \"a\", .to = \"journald\" } } }",
            "named twice",
        ),
        (
            ".{ .sinks = .{ .{ .kind = .directory, .path = \"/var/log/chock\" } } }",
            "unknown field `.kind`",
        ),
        (
            ".{ .sinks = .{ .{ .name = \"a\", .to = \"journald\", .backlog_bytes = \"0\" } } }",
            "above 0",
        ),
    ] {
        options.operator_config = Some(write(&dir, "config.zon", text));
        let shown = load_err(&options);
        assert!(
            shown.contains("config.zon:1:") && shown.contains(says),
            "{text}: {shown}"
        );
    }
}

#[test]
fn witnesses_are_read_from_bundles_and_config_with_their_keys() {
    let (dir, mut options) = project("witnesses", None);
    let key = "w.example+0a1b2c3d+AbCd+ef=";
    options.org_bundles = vec![write(
        &dir,
        "org.zon",
        &format!(
            ".{{ .witnesses = .{{ .{{ .url = \"https://w.example\", .key = \"{key}\" }} }} }}"
        ),
    )];
    options.operator_config = Some(write(
        &dir,
        "config.zon",
        &format!(
            ".{{ .witnesses = .{{ .{{ .url = \"https://w.example\", .key = \"{key}\" }}, .{{ .url = \"http://127.0.0.1:8440\", .key = \"{key}\" }} }} }}"
        ),
    ));
    let policy = Policy::load(&options).expect("loads");
    let urls: Vec<_> = policy
        .config()
        .witnesses()
        .into_iter()
        .map(|w| w.url)
        .collect();
    assert_eq!(urls, ["https://w.example", "http://127.0.0.1:8440"]);
    for (text, says) in [
        (
            ".{ .witnesses = .{ .{ .url = \"ftp://w\", .key = \"w+0a1b2c3d+AQ\" } } }",
            "not a witness's address",
        ),
        (
            ".{ .witnesses = .{ .{ .url = \"https://w\", .key = \"w+0a1b+AQ\" } } }",
            "not a verifier key",
        ),
        (
            ".{ .witnesses = .{ .{ .url = \"https://w\" } } }",
            "missing field `key`",
        ),
    ] {
        options.operator_config = Some(write(&dir, "config.zon", text));
        let shown = load_err(&options);
        assert!(
            shown.contains("config.zon:1:") && shown.contains(says),
            "{text}: {shown}"
        );
    }
}
