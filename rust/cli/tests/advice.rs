//! The advice under a refusal is always effective: on every route, the
//! rule printed under a refusal, once added to `chock.zon` where it says,
//! changes that route's answer. Each test drives the real binary: it is
//! refused, takes the rule and block from what it printed, adds the rule,
//! asks again the same way and sees the answer change.

use std::io::Write;
use std::process::{Command, Output, Stdio};

use serde_json::{Value, json};

mod advice_support;
mod sandbox_fixture;
#[path = "mcp_support/mod.rs"]
mod support;

use advice_support::{Advice, advice};
use sandbox_fixture::Fixture;

/// Follows `advice` in `fx`'s project whose rules were `rules`: the rule
/// goes into `.policy.rules` of its `chock.zon`, as the block says.
fn follow(fx: &Fixture, rules: &str, advice: &Advice) {
    let file = fx.project.join("chock.zon");
    assert_eq!(
        advice.block,
        format!(".policy.rules in {}", file.display()),
        "the advice names the project's own rules"
    );
    fx.rules(&format!("{rules}, {}", advice.rule));
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

fn with_stdin(mut command: Command, input: &str) -> Output {
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn chock");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(input.as_bytes())
        .expect("write stdin");
    child.wait_with_output().expect("wait")
}

const DENY_PUSH: &str = r#".{ .action = "git.push", .decision = .deny }"#;

#[test]
fn exec_s_advice_lets_the_program_run() {
    let fx = Fixture::host();
    let rules = r#".{ .action = "exec.path.true", .decision = .deny }"#;
    fx.rules(rules);
    let refused = fx.exec(&[], &["true"]);
    assert_eq!(refused.status.code(), Some(125), "{}", text(&refused));
    follow(&fx, rules, &advice(&text(&refused)));
    let ran = fx.exec(&[], &["true"]);
    assert_eq!(ran.status.code(), Some(0), "{}", text(&ran));
}

/// A Claude Code hook call of `git push` in `fx`'s project: its answer
/// (`pass` when the hook leaves it to the agent) and the reason.
fn hook_push(fx: &Fixture) -> (String, String) {
    let payload = json!({
        "session_id": "s",
        "hook_event_name": "PreToolUse",
        "cwd": fx.project,
        "tool_name": "Bash",
        "tool_input": {"command": "git push"},
    });
    let mut command = fx.chock();
    command.args(["hook", "claude"]);
    let out = with_stdin(command, &payload.to_string());
    assert!(out.status.success(), "{}", text(&out));
    if out.stdout.is_empty() {
        // No objection: the agent's own permissions decide.
        return ("pass".into(), text(&out));
    }
    let reply: Value =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(&out)));
    let said = &reply["hookSpecificOutput"];
    (
        said["permissionDecision"].as_str().unwrap_or("").to_owned(),
        said["permissionDecisionReason"]
            .as_str()
            .unwrap_or("")
            .to_owned(),
    )
}

#[test]
fn a_hook_s_advice_lifts_its_deny() {
    let fx = Fixture::host();
    fx.rules(DENY_PUSH);
    let (answer, reason) = hook_push(&fx);
    assert_eq!(answer, "deny", "{reason}");
    follow(&fx, DENY_PUSH, &advice(&reason));
    let (answer, reason) = hook_push(&fx);
    assert_ne!(answer, "deny", "{reason}");
}

/// The advice `chock policy explain` gives for the hook route is the one
/// the hook itself needs: followed, the hook no longer denies.
#[test]
fn explain_s_advice_for_the_hook_route_lifts_the_hook_s_deny() {
    let fx = Fixture::host();
    fx.rules(DENY_PUSH);
    let explained = fx
        .chock()
        .args(["policy", "explain", "git.push", "--route", "hook"])
        .args(["--agent", "claude", "--tool", "Bash"])
        .output()
        .expect("explain");
    assert!(
        text(&explained).contains("for the hook route"),
        "{}",
        text(&explained)
    );
    follow(&fx, DENY_PUSH, &advice(&text(&explained)));
    let (answer, reason) = hook_push(&fx);
    assert_ne!(answer, "deny", "{reason}");
    // Explain itself now answers allow for that asker.
    let again = fx
        .chock()
        .args([
            "policy", "explain", "git.push", "--route", "hook", "--tool", "Bash",
        ])
        .output()
        .expect("explain");
    assert!(
        text(&again).starts_with("git.push: allow"),
        "{}",
        text(&again)
    );
}

/// Without a route, explain says whom its advice is for, and that an
/// agent's hook asks as another kind.
#[test]
fn explain_without_a_route_says_whom_its_advice_is_for() {
    let fx = Fixture::host();
    fx.rules(DENY_PUSH);
    let explained = fx
        .chock()
        .args(["policy", "explain", "git.push"])
        .output()
        .expect("explain");
    let said = text(&explained);
    assert!(said.contains("agent kind `main`"), "{said}");
    assert!(said.contains("--route hook"), "{said}");
}

fn git_in(fx: &Fixture, args: &[&str]) {
    let out = Command::new("git")
        .arg("-C")
        .arg(&fx.project)
        .args(["-c", "user.name=t", "-c", "user.email=t@t"])
        .args(args)
        .output()
        .expect("git");
    assert!(out.status.success(), "git {args:?}: {out:?}");
}

#[test]
fn a_git_hook_s_advice_lets_the_push_through() {
    let fx = Fixture::host();
    git_in(&fx, &["init", "-q"]);
    fx.rules(DENY_PUSH);
    // Neither answer asks, so no terminal is needed.
    let push = || {
        let mut hook = fx.chock();
        hook.args(["hook", "pre-push", "origin", "/nowhere"]);
        with_stdin(hook, "")
    };
    let refused = push();
    assert_eq!(refused.status.code(), Some(3), "{}", text(&refused));
    follow(&fx, DENY_PUSH, &advice(&text(&refused)));
    let passed = push();
    assert!(passed.status.success(), "{}", text(&passed));
}

#[test]
fn the_ci_gate_s_advice_passes_the_push() {
    let fx = Fixture::host();
    git_in(&fx, &["init", "-q"]);
    git_in(&fx, &["commit", "-q", "--allow-empty", "-m", "base"]);
    fx.rules(DENY_PUSH);
    let gate = || {
        fx.chock()
            .args(["hook", "pre-push", "--ci", "--base", "HEAD"])
            .output()
            .expect("ci gate")
    };
    let refused = gate();
    assert_eq!(refused.status.code(), Some(3), "{}", text(&refused));
    follow(&fx, DENY_PUSH, &advice(&text(&refused)));
    let passed = gate();
    assert!(passed.status.success(), "{}", text(&passed));
}

#[test]
fn the_tool_server_s_advice_lets_the_call_through() {
    let env = support::Env::new();
    let rules = r#".{ .action = "call.write_file", .decision = .deny }"#;
    env.rules(rules);
    let write = || {
        let mut client = env.client(false, &[]);
        client.call("write_file", json!({"path": "a.txt", "content": "a"}))
    };
    let refused = write();
    assert!(refused.is_error, "{refused:?}");
    let advice = advice(&refused.text);
    assert_eq!(
        advice.block,
        format!(
            ".policy.rules in {}",
            env.project.join("chock.zon").display()
        )
    );
    env.rules(&format!("{rules}, {}", advice.rule));
    let written = write();
    assert!(!written.is_error, "{written:?}");
    assert_eq!(env.read("a.txt").as_deref(), Some("a"));
}

#[test]
fn a_build_s_advice_lets_the_build_run() {
    let fx = Fixture::flake();
    let system = chock_sandbox::devshell::system();
    let action = format!("nix.build.devShells.{system}.default");
    let rules = format!(r#".{{ .action = "{action}", .decision = .deny }}"#);
    fx.rules(&rules);
    let build = || {
        fx.chock()
            .args(["build", "devShells", &system, "default"])
            .stdin(Stdio::null())
            .output()
            .expect("chock build")
    };
    let refused = build();
    assert_eq!(refused.status.code(), Some(3), "{}", text(&refused));
    follow(&fx, &rules, &advice(&text(&refused)));
    let built = build();
    assert!(built.status.success(), "{}", text(&built));
}
