//! A policy package's rollout stage through `chock hook claude`, as an
//! agent's call meets it: `observe` lets the call through and logs what
//! the package would have answered, `ask` holds its refusal to an ask,
//! `enforce` refuses; the decision log's line names the stage; a stage no
//! one knows refuses every call, naming the manifest's line; `chock check`
//! runs a staged package's cases in full force.

use std::io::Write as _;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

use serde_json::Value;

fn chock_bin() -> &'static str {
    env!("CARGO_BIN_EXE_chock")
}

struct Project {
    _root: tempfile::TempDir,
    dir: PathBuf,
    home: PathBuf,
    state: PathBuf,
}

impl Project {
    fn new() -> Project {
        let root = tempfile::tempdir().unwrap();
        let (dir, home, state) = (
            root.path().join("p"),
            root.path().join("home"),
            root.path().join("state"),
        );
        for d in [&dir, &home, &state] {
            std::fs::create_dir_all(d).unwrap();
        }
        assert!(
            Command::new("git")
                .args(["init", "-q"])
                .current_dir(&dir)
                .status()
                .unwrap()
                .success()
        );
        // The project lets pushes through; the package is what refuses.
        std::fs::write(
            dir.join("chock.zon"),
            ".{ .policy = .{ .rules = .{ .{ .action = \"git.push\", .decision = .allow } } } }\n",
        )
        .unwrap();
        Project {
            _root: root,
            dir,
            home,
            state,
        }
    }

    fn package(&self, rollout: &str) {
        let pkg = self.dir.join(".agents/policies/no-push");
        std::fs::create_dir_all(&pkg).unwrap();
        std::fs::write(
            pkg.join("manifest.zon"),
            format!(
                ".{{\n    .id = \"no-push\",\n    .version = \"1.0.0\",\n    .summary = \"No pushes.\",\n    .hooks = .{{ \"tool\" }},\n    .rollout = .{rollout},\n    .rules = .{{ .{{ .action = \"git.push\", .decision = .deny }} }},\n}}\n"
            ),
        )
        .unwrap();
    }

    fn push(&self) -> Output {
        let path = chock_testkit::path_with_chock(chock_bin());
        let mut child =
            chock_testkit::isolated_command(chock_bin(), &self.dir, &path, &self.home, &self.state)
                .args(["hook", "claude"])
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap();
        let payload = serde_json::json!({
            "session_id": "s",
            "transcript_path": "/dev/null",
            "cwd": self.dir,
            "permission_mode": "default",
            "hook_event_name": "PreToolUse",
            "tool_name": "Bash",
            "tool_input": {"command": "git push origin main"},
            "tool_use_id": "t"
        });
        child
            .stdin
            .take()
            .unwrap()
            .write_all(payload.to_string().as_bytes())
            .unwrap();
        child.wait_with_output().unwrap()
    }

    fn last_push_line(&self) -> Value {
        let text = std::fs::read_to_string(self.state.join("log/decisions.jsonl")).unwrap();
        text.lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap())
            .rfind(|l| l["action"] == "git.push")
            .expect("a git.push line")
    }
}

/// Claude Code's answer and its reason; `pass` for no decision at all.
fn answer(out: &Output) -> (String, String) {
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    if out.stdout.is_empty() {
        return ("pass".to_owned(), String::new());
    }
    let value: Value = serde_json::from_slice(&out.stdout).unwrap();
    let specific = &value["hookSpecificOutput"];
    (
        specific["permissionDecision"].as_str().unwrap().to_owned(),
        specific["permissionDecisionReason"]
            .as_str()
            .unwrap_or("")
            .to_owned(),
    )
}

#[test]
fn each_rollout_stage_answers_as_far_as_it_goes_and_the_log_names_it() {
    let project = Project::new();
    // Under `observe` the push is let through as without the package: the
    // project allows `git.push`, and `exec.path.git` only a shipped default
    // allows, so Claude Code's own permissions decide (no answer, `pass`).
    for (stage, expect, logged) in [
        ("observe", "pass", "allow"),
        ("ask", "ask", "ask"),
        ("enforce", "deny", "deny"),
    ] {
        project.package(stage);
        let (answer, reason) = answer(&project.push());
        assert_eq!(answer, expect, "{stage}: {reason}");
        let line = project.last_push_line();
        assert_eq!(line["decision"], logged, "{stage}: {line}");
        let held = &line["decided_by"]["held"];
        if stage == "enforce" {
            assert!(held.is_null(), "{line}");
            assert_eq!(line["decided_by"]["policy"], "no-push", "{line}");
        } else {
            assert_eq!(held["policy"], "no-push", "{stage}: {line}");
            assert_eq!(held["stage"], stage, "{line}");
            assert_eq!(held["would"], "deny", "{line}");
            if stage == "ask" {
                assert!(reason.contains("`ask` stage"), "{reason}");
                assert!(reason.contains("would answer deny"), "{reason}");
            }
        }
    }

    // A stage Chock does not know is a manifest that does not read: every
    // call is refused, naming the line.
    project.package("shadow");
    let out = project.push();
    let said = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "Claude Code's refusal: {said}");
    assert!(said.contains("manifest.zon:6:"), "{said}");
    assert!(said.contains("`.shadow`"), "{said}");
}

/// A case says what the package decides: under `observe` a push case
/// expecting `deny` passes (the package in full force decides it), and it
/// is no vacuous case (without the package the project allows it).
#[test]
fn a_staged_package_s_evals_test_it_in_full_force() {
    let project = Project::new();
    project.package("observe");
    let evals = project.dir.join(".agents/policies/no-push/evals");
    std::fs::create_dir_all(&evals).unwrap();
    let case = |expect: &str| {
        serde_json::json!({
            "hook": "tool",
            "agent": "claude",
            "payload": {
                "session_id": "eval",
                "hook_event_name": "PreToolUse",
                "permission_mode": "default",
                "tool_name": "Bash",
                "tool_input": {"command": "git push origin main"}
            },
            "expect": expect
        })
        .to_string()
    };
    let check = || {
        let path = chock_testkit::path_with_chock(chock_bin());
        chock_testkit::isolated_command(
            chock_bin(),
            &project.dir,
            &path,
            &project.home,
            &project.state,
        )
        .args(["check", "--only", "validate,evals"])
        .output()
        .unwrap()
    };
    std::fs::write(evals.join("push.json"), case("deny")).unwrap();
    let out = check();
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{said}");
    // What it answers at its stage is not what its case tests.
    std::fs::write(evals.join("push.json"), case("allow")).unwrap();
    let out = check();
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!out.status.success(), "{said}");
    assert!(said.contains("expected allow, got deny"), "{said}");
}

/// At a person's git hook a warn is told: the commit goes through, and the
/// person reads what the package would have answered in force.
#[test]
fn an_observed_refusal_at_a_git_hook_lets_the_commit_through_and_says_so() {
    let project = Project::new();
    let pkg = project.dir.join(".agents/policies/no-commit");
    std::fs::create_dir_all(&pkg).unwrap();
    std::fs::write(
        pkg.join("manifest.zon"),
        ".{ .id = \"no-commit\", .version = \"1\", .summary = \"No commits.\", .hooks = .{ \"pre-commit\" }, .rollout = .observe, .rules = .{ .{ .action = \"git.commit\", .decision = .deny } } }\n",
    )
    .unwrap();
    let path = chock_testkit::path_with_chock(chock_bin());
    let run = |program: &str, args: &[&str]| {
        chock_testkit::isolated_command(program, &project.dir, &path, &project.home, &project.state)
            .args(args)
            .stdin(Stdio::null())
            .output()
            .unwrap()
    };
    assert!(
        run(chock_bin(), &["sync", "--agents", "claude"])
            .status
            .success()
    );
    std::fs::write(project.dir.join("a.txt"), "a").unwrap();
    assert!(run("git", &["add", "a.txt"]).status.success());
    let out = run("setsid", &["-w", "git", "commit", "-q", "-m", "a"]);
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{said}");
    assert!(
        said.contains("`no-commit` is rolled out at its `observe` stage: in force it would answer deny to `git.commit`"),
        "{said}"
    );
}
