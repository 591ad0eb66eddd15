//! `chock policy check|explain|defaults` through the built binary: output,
//! JSON, exit codes, and refusals that name FILE:LINE:COL.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("cli-policy")
        .join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch dir");
    dir
}

/// Runs `chock` in `dir` with a private HOME, so the machine's own operator
/// config and bundle never leak into a test.
fn chock(dir: &Path, args: &[&str]) -> Output {
    let home = dir.join("home");
    std::fs::create_dir_all(&home).expect("home");
    Command::new(env!("CARGO_BIN_EXE_chock"))
        .args(args)
        .current_dir(dir)
        .env("HOME", &home)
        .env_remove("XDG_CONFIG_HOME")
        .env_remove("XDG_DATA_HOME")
        .env_remove("CHOCK_LOG")
        .output()
        .expect("run chock")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn json(o: &Output) -> serde_json::Value {
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", stdout(o)))
}

#[test]
fn the_main_job_works_in_a_directory_without_chock_zon() {
    let dir = scratch("main-job");
    let out = chock(&dir, &["policy", "explain", "call.write_file"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.starts_with("call.write_file: allow\n"), "{text}");
    assert!(text.contains("a shipped default"), "{text}");
    assert!(
        text.contains(".{ .action = \"call.write_file\", .decision = .allow }"),
        "{text}"
    );
}

#[test]
fn explain_json_has_the_documented_shape() {
    let dir = scratch("json");
    let out = chock(
        &dir,
        &["policy", "explain", "net.fetch.org.ziglang.docs", "--json"],
    );
    assert_eq!(out.status.code(), Some(0));
    let text = stdout(&out);
    let keys: Vec<&str> = [
        "\"action\"",
        "\"decision\"",
        "\"decided_by\"",
        "\"suggestion\"",
    ]
    .into_iter()
    .filter(|k| text.contains(k))
    .collect();
    assert_eq!(keys.len(), 4, "{text}");
    assert!(
        text.find("\"action\"") < text.find("\"decision\""),
        "{text}"
    );
    let v = json(&out);
    assert_eq!(v["action"], "net.fetch.org.ziglang.docs");
    assert_eq!(v["decision"], "ask");
    assert_eq!(v["decided_by"]["layer"], "nothing");
    assert!(
        v["decided_by"]["file"].is_null()
            && v["decided_by"]["line"].is_null()
            && v["decided_by"]["rule"].is_null()
    );
    assert_eq!(
        v["suggestion"]["rule"],
        ".{ .action = \"net.fetch.org.ziglang.docs\", .decision = .allow }"
    );
    let block = v["suggestion"]["block"].as_str().expect("block");
    assert!(
        block.starts_with(".policy.rules in ") && block.ends_with("chock.zon"),
        "{block}"
    );
    let allowed = json(&chock(&dir, &["policy", "explain", "git.commit", "--json"]));
    assert_eq!(allowed["decision"], "allow");
    assert_eq!(allowed["decided_by"]["layer"], "default");
    assert!(allowed["suggestion"].is_null());
}

#[test]
fn explain_names_the_project_rule_and_takes_tool_model_kind_and_reading() {
    let dir = scratch("project");
    std::fs::write(
        dir.join("chock.zon"),
        ".{\n    .policy = .{\n        .rules = .{\n            .{ .tool = \"fetch_url\", .action = \"net.fetch.*\", .decision = .deny },\n            .{ .agent_kind = \"reviewer\", .decision = .agent_review },\n            .{ .model = \"m1\", .action = \"provider.*\", .decision = .deny },\n        },\n    },\n}\n",
    )
    .expect("write");
    let v = json(&chock(
        &dir,
        &[
            "policy",
            "explain",
            "net.fetch.org.x",
            "--tool",
            "fetch_url",
            "--json",
        ],
    ));
    assert_eq!(v["decision"], "deny");
    assert_eq!(v["decided_by"]["layer"], "project");
    assert_eq!(v["decided_by"]["line"], 4);
    assert!(
        v["decided_by"]["file"]
            .as_str()
            .is_some_and(|f| f.ends_with("chock.zon"))
    );
    assert_eq!(
        v["decided_by"]["rule"],
        ".{ .tool = \"fetch_url\", .action = \"net.fetch.*\", .decision = .deny }"
    );
    assert_eq!(
        v["suggestion"]["rule"], ".{ .action = \"net.fetch.org.x\", .decision = .allow }",
        "an exact action already beats the class"
    );
    let v = json(&chock(
        &dir,
        &["policy", "explain", "net.fetch.org.x", "--json"],
    ));
    assert_eq!(
        v["decision"], "ask",
        "without --tool the tool rule does not match"
    );
    let v = json(&chock(
        &dir,
        &[
            "policy",
            "explain",
            "git.push",
            "--agent-kind",
            "reviewer",
            "--json",
        ],
    ));
    assert_eq!(v["decision"], "agent_review");
    let v = json(&chock(
        &dir,
        &[
            "policy",
            "explain",
            "provider.home",
            "--reading",
            "ceiling",
            "--json",
        ],
    ));
    assert_eq!(v["decision"], "allow");
    let v = json(&chock(
        &dir,
        &[
            "policy",
            "explain",
            "provider.home",
            "--model",
            "m1",
            "--reading",
            "ceiling",
            "--json",
        ],
    ));
    assert_eq!(v["decision"], "deny");
    let text = stdout(&chock(
        &dir,
        &[
            "policy",
            "explain",
            "net.fetch.org.x",
            "--tool",
            "fetch_url",
        ],
    ));
    assert!(
        text.contains("decided by: the project's rule at "),
        "{text}"
    );
    assert!(
        text.contains("to allow it, add to .policy.rules in "),
        "{text}"
    );
}

#[test]
fn an_org_bundle_lowers_and_is_named() {
    let dir = scratch("org");
    std::fs::write(
        dir.join("chock.zon"),
        ".{ .policy = .{ .rules = .{ .{ .action = \"git.*\", .decision = .allow } } } }",
    )
    .expect("write");
    let bundle = dir.join("org.zon");
    std::fs::write(
        &bundle,
        ".{ .version = 1, .rules = .{ .{ .action = \"git.push\", .decision = .deny } } }",
    )
    .expect("write");
    let b = bundle.to_str().expect("utf-8 path");
    let v = json(&chock(
        &dir,
        &["policy", "explain", "git.push", "--org-bundle", b, "--json"],
    ));
    assert_eq!(v["decision"], "deny");
    assert_eq!(v["decided_by"]["layer"], "org");
    assert_eq!(v["decided_by"]["file"], b);
    let v = json(&chock(
        &dir,
        &[
            "policy",
            "explain",
            "git.fetch",
            "--org-bundle",
            b,
            "--json",
        ],
    ));
    assert_eq!(v["decision"], "allow");
    let out = chock(&dir, &["policy", "check", "--org-bundle", b]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("org bundle") && stdout(&out).contains("1 rule"),
        "{}",
        stdout(&out)
    );
    let home_bundle = dir.join("home/.local/share/chock/org-policy.zon");
    std::fs::create_dir_all(home_bundle.parent().expect("parent")).expect("mkdir");
    std::fs::write(
        &home_bundle,
        ".{ .rules = .{ .{ .action = \"git.commit\", .decision = .ask } } }",
    )
    .expect("write");
    let v = json(&chock(&dir, &["policy", "explain", "git.commit", "--json"]));
    assert_eq!(
        v["decision"], "ask",
        "the bundle in the data directory binds without a flag"
    );
}

#[test]
fn check_reports_a_summary_or_the_first_fault() {
    let dir = scratch("check");
    let out = chock(&dir, &["policy", "check"]);
    assert_eq!(out.status.code(), Some(0));
    assert!(stdout(&out).starts_with("policy ok: "), "{}", stdout(&out));
    let lines: Vec<String> = stdout(&out).lines().map(str::to_owned).collect();
    assert_eq!(lines.len(), 2, "{lines:?}");
    let identity = lines[1]
        .strip_prefix("identity: sha256:")
        .unwrap_or_default();
    assert!(
        identity.len() == 64 && identity.bytes().all(|b| b.is_ascii_hexdigit()),
        "{lines:?}"
    );

    std::fs::write(dir.join("chock.zon"), ".{\n    .policy = .{\n        .rules = .{\n            .{ .actoin = \"x\", .decision = .allow },\n        },\n    },\n}\n").expect("write");
    let out = chock(&dir, &["policy", "check"]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    let first = err.lines().next().unwrap_or("");
    assert!(
        first.starts_with(&format!(
            "{}:4:17: unknown field `.actoin`: did you mean `.action`?",
            dir.join("chock.zon").display()
        )),
        "{err}"
    );
    assert!(
        err.contains(".{ .actoin = \"x\", .decision = .allow },"),
        "the offending line is shown: {err}"
    );
    let out = chock(&dir, &["policy", "explain", "call.glob"]);
    assert_eq!(
        out.status.code(),
        Some(1),
        "explain cannot answer from a file that does not load"
    );
    let other = scratch("check-elsewhere");
    let out = chock(
        &other,
        &["policy", "check", "--project", dir.to_str().expect("path")],
    );
    assert_eq!(out.status.code(), Some(1));
}

/// docs/run.md: a `chock.zon` whose rule gives a child agent kind more
/// than its parent does not load: `chock policy check` says where and why
/// instead of `policy ok`.
#[test]
fn check_refuses_a_child_kind_given_more_than_its_parent() {
    let dir = scratch("child-kind");
    std::fs::write(
        dir.join("chock.zon"),
        ".{ .policy = .{\n    .agents = .{ .{ .kind = \"main\" }, .{ .kind = \"tester\", .parent = \"main\" } },\n    .rules = .{\n        .{ .action = \"call.write_file\", .decision = .deny },\n        .{ .agent_kind = \"tester\", .action = \"call.write_file\", .decision = .allow },\n    },\n} }\n",
    )
    .expect("write");
    let out = chock(&dir, &["policy", "check"]);
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    let err = stderr(&out);
    assert!(
        err.starts_with(&format!(
            "{}:5:9: agent kind `tester` is answered allow for `call.write_file` where its parent `main` is answered deny",
            dir.join("chock.zon").display()
        )),
        "{err}"
    );
    assert!(!stdout(&out).contains("policy ok"), "{}", stdout(&out));
}

#[test]
fn a_missing_org_bundle_or_project_is_a_failure() {
    let dir = scratch("missing");
    let out = chock(
        &dir,
        &["policy", "check", "--org-bundle", "/nonexistent/org.zon"],
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("/nonexistent/org.zon"),
        "{}",
        stderr(&out)
    );
    let out = chock(
        &dir,
        &[
            "policy",
            "explain",
            "x",
            "--project",
            "/nonexistent/project",
        ],
    );
    assert_eq!(out.status.code(), Some(1));
}

#[test]
fn defaults_print_as_zon_and_json() {
    let dir = scratch("defaults");
    let out = chock(&dir, &["policy", "defaults"]);
    assert_eq!(out.status.code(), Some(0));
    let text = stdout(&out);
    assert!(
        text.contains(".{ .action = \"exec.nix.store.*\", .decision = .ask },"),
        "{text}"
    );
    let v = json(&chock(&dir, &["policy", "defaults", "--json"]));
    let rows = v.as_array().expect("array");
    assert!(
        rows.iter()
            .any(|r| r["action"] == "call.write_file" && r["decision"] == "allow")
    );
    assert!(!rows.iter().any(|r| r["action"] == "git.push"));
    assert_eq!(text.matches(".action").count(), rows.len());
}

#[test]
fn version_and_help() {
    let dir = scratch("version");
    let out = chock(&dir, &["--version"]);
    assert_eq!(out.status.code(), Some(0));
    assert!(stdout(&out).starts_with("chock "), "{}", stdout(&out));
    let out = chock(&dir, &["help", "policy"]);
    assert_eq!(out.status.code(), Some(0));
    assert!(stdout(&out).contains("explain"));
    let out = chock(&dir, &["policy", "explain"]);
    assert_eq!(
        out.status.code(),
        Some(2),
        "clap refuses a missing argument"
    );
}

#[test]
fn check_warns_when_a_wide_allow_also_answers_exec_unparsed() {
    let dir = scratch("check-unparsed");
    let rules = |rules: &str| {
        std::fs::write(
            dir.join("chock.zon"),
            format!(
                ".{{\n    .policy = .{{\n        .rules = .{{\n{rules}        }},\n    }},\n}}\n"
            ),
        )
        .expect("write");
    };
    rules("            .{ .action = \"exec.*\", .decision = .allow },\n");
    let out = chock(&dir, &["policy", "check"]);
    assert_eq!(out.status.code(), Some(0), "a warning, not a fault");
    let err = stderr(&out);
    assert!(
        err.contains(&format!("{}:4: ", dir.join("chock.zon").display()))
            && err.contains("exec.unparsed")
            && err.contains("eval")
            && err.contains(r#".{ .action = "exec.unparsed", .decision = .ask }"#),
        "names the rule, what it lets through and the rule to add: {err}"
    );
    // With exec.unparsed asked for on its own, nothing to warn about.
    rules(
        "            .{ .action = \"exec.*\", .decision = .allow },\n            .{ .action = \"exec.unparsed\", .decision = .ask },\n",
    );
    let out = chock(&dir, &["policy", "check"]);
    assert_eq!(out.status.code(), Some(0));
    assert!(!stderr(&out).contains("exec.unparsed"), "{}", stderr(&out));
}

/// Every kind of policy file with a fault that would once have loaded as
/// "policy ok (0 rules)": `chock policy check` prints `FILE:LINE:COL:
/// message` and exits 1, and `chock exec` and a hook refuse to go on.
#[test]
fn a_policy_that_does_not_load_is_refused_by_check_exec_and_hooks() {
    let dir = scratch("fails-closed");
    let bundle = dir.join("org.zon");
    let config_dir = dir.join("home/.config/chock");
    std::fs::create_dir_all(&config_dir).expect("config dir");
    let config = config_dir.join("config.zon");
    let chock_zon = dir.join("chock.zon");
    let rule = ".{ .action = \"git.push\", .decision = .deny }";
    // One file with a fault at a time; the others are empty or absent.
    struct Case<'a> {
        project: String,
        org: Option<String>,
        operator: Option<&'a str>,
        file: &'a Path,
        at: &'a str,
        message: &'a str,
    }
    let case = |project: String, file, at, message| Case {
        project,
        org: None,
        operator: None,
        file,
        at,
        message,
    };
    let cases = [
        case(
            format!(".{{\n    .polciy = .{{ .rules = .{{ {rule} }} }},\n}}\n"),
            &chock_zon,
            "2:6",
            "unknown field `.polciy`: did you mean `.policy`?",
        ),
        case(
            ".{ .policy = .{ .rules = .{ .{ .action = \"exce.path.rm\", .decision = .deny } } } }"
                .into(),
            &chock_zon,
            "1:42",
            "`exce.path.rm` is in no action namespace Chock names (did you mean `exec`?): its first label `exce`",
        ),
        case(
            ".{ .limits = .{ .processes = 4 }, .sandbox = .{} }".into(),
            &chock_zon,
            "1:36",
            "`.sandbox` is not implemented yet in this Chock",
        ),
        case(
            ".{ .limits = .{ .processes = 4 }, .plugins = .{} }".into(),
            &chock_zon,
            "1:36",
            "no file holds a `.plugins` block: a plugin is installed with `chock plugins install DIR`",
        ),
        Case {
            org: Some(format!(
                ".{{\n    .policy = .{{ .rules = .{{ {rule} }} }},\n}}\n"
            )),
            ..case(
                ".{}".into(),
                &bundle,
                "2:6",
                "this is chock.zon's shape, and an organisation bundle holds its rules at the top",
            )
        },
        Case {
            operator: Some(".{ .limts = .{ .processes = 4 } }"),
            ..case(
                ".{}".into(),
                &config,
                "1:5",
                "unknown field `.limts`: did you mean `.limits`?",
            )
        },
    ];
    for Case {
        project,
        org,
        operator,
        file,
        at,
        message,
    } in cases
    {
        std::fs::write(&chock_zon, &project).expect("chock.zon");
        let _ = std::fs::remove_file(&config);
        if let Some(text) = operator {
            std::fs::write(&config, text).expect("config.zon");
        }
        let mut check = vec!["policy", "check", "--project", "."];
        if let Some(text) = &org {
            std::fs::write(&bundle, text).expect("bundle");
            check.extend(["--org-bundle", "org.zon"]);
        }
        let out = chock(&dir, &check);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(1), "{project}: {err}");
        assert!(!stdout(&out).contains("policy ok"), "{}", stdout(&out));
        let first = err.lines().next().unwrap_or("");
        let shown = file.display().to_string();
        let shown = shown
            .strip_prefix(&format!("{}/", dir.display()))
            .unwrap_or(&shown);
        assert!(
            first.ends_with(&format!("{shown}:{at}: {message}")[..])
                || first.contains(&format!("{shown}:{at}: {message}")),
            "{project}: {first}"
        );
        if org.is_some() {
            continue; // `chock exec` and hooks bind the bundles found on the machine
        }
        let _ = std::fs::remove_file(dir.join("ran"));
        let out = chock(&dir, &["exec", "--", "/bin/sh", "-c", "touch ran"]);
        assert_ne!(out.status.code(), Some(0), "exec went on: {}", stderr(&out));
        assert!(stderr(&out).contains(message), "{}", stderr(&out));
        assert!(
            !dir.join("ran").exists(),
            "the command ran under a policy that did not load"
        );
        let payload = std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../hook/tests/fixtures/claude/bash-cargo-test.json"),
        )
        .expect("payload")
        .replace("@PROJECT@", dir.to_str().expect("utf-8"))
        .replace("@HOME@", dir.join("home").to_str().expect("utf-8"));
        let mut child = Command::new(env!("CARGO_BIN_EXE_chock"))
            .args(["hook", "claude"])
            .current_dir(&dir)
            .env("HOME", dir.join("home"))
            .env_remove("XDG_CONFIG_HOME")
            .env_remove("XDG_DATA_HOME")
            .env_remove("CHOCK_LOG")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("hook");
        use std::io::Write as _;
        child
            .stdin
            .take()
            .expect("stdin")
            .write_all(payload.as_bytes())
            .expect("payload");
        let out = child.wait_with_output().expect("hook ends");
        assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
        assert!(
            stderr(&out).contains("the policy could not be loaded, so every call is refused")
                && stderr(&out).contains(message),
            "{}",
            stderr(&out)
        );
    }
}

/// `.unknown_actions = .warn`: a chock.zon written for a newer Chock loads,
/// and every load says which rule names what on stderr.
#[test]
fn unknown_actions_warn_loads_and_warns_with_the_place() {
    let dir = scratch("unknown-actions-warn");
    std::fs::write(
        dir.join("chock.zon"),
        ".{\n    .unknown_actions = .warn,\n    .policy = .{ .rules = .{\n        .{ .action = \"style.future.thing\", .decision = .deny },\n        .{ .action = \"hologram.project\", .decision = .deny },\n    } },\n}\n",
    )
    .expect("chock.zon");
    let out = chock(&dir, &["policy", "check", "--project", "."]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stdout(&out).contains("(2 rules)"), "{}", stdout(&out));
    let err = stderr(&out);
    assert!(
        err.contains("warning: ./chock.zon:5:22: `hologram.project` is in no action namespace"),
        "{err}"
    );
    assert!(
        !err.contains("style.future.thing"),
        "a known namespace is not warned about: {err}"
    );
}

/// `chock policy controls` prints the one list every route holds, with
/// the action an agent's write of each is asked under.
#[test]
fn controls_lists_every_control_input_with_its_action() {
    let dir = scratch("controls");
    let out = chock(&dir, &["policy", "controls", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let listed = json(&out);
    let entries = listed.as_array().expect("a list");
    let (project, person): (Vec<_>, Vec<_>) = entries.iter().partition(|e| e["in"] == "project");
    assert_eq!(project.len(), chock_policy::control::CONTROL_INPUTS.len());
    for (entry, input) in project.iter().zip(chock_policy::control::CONTROL_INPUTS) {
        assert_eq!(entry["path"], input.path);
        assert_eq!(
            entry["action"],
            chock_policy::control::control_write(input.kind)
        );
    }
    // The person's own, under the home the command was given.
    let home = dir.join("home");
    let own: Vec<&str> = person.iter().filter_map(|e| e["path"].as_str()).collect();
    for path in [
        home.join(".claude").display().to_string(),
        home.join(".config/chock").display().to_string(),
        "/etc/chock".to_owned(),
    ] {
        assert!(own.contains(&path.as_str()), "{path}: {own:?}");
    }
    let text = stdout(&chock(&dir, &["policy", "controls"]));
    for needle in [
        ".agents/policies/",
        "chock.lock",
        ".envrc",
        "control.write.host",
    ] {
        assert!(text.contains(needle), "{needle}: {text}");
    }
}
