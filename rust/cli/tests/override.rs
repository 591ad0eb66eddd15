//! A person's one-time override of a policy's refusal, for real: armed only
//! at a terminal (a pseudo-terminal made the command's controlling one),
//! never from a process without one; unused by an agent's tool call
//! through the hook route and by the tool server (`chock mcp`), both of
//! which still refuse while it is armed; used once by the person's own
//! `git commit` at the terminal, logged, and gone after.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use serde_json::{Value, json};
use support::Env;

mod sandbox_fixture;
#[path = "mcp_support/mod.rs"]
mod support;

const MANIFEST: &str = ".{
    .id = \"guarded\",
    .version = \"1.0.0\",
    .summary = \"No commits, no file writes.\",
    .hooks = .{ \"tool\", \"pre-commit\" },
    .rules = .{
        .{ .action = \"git.commit\", .decision = .deny },
        .{ .action = \"call.write_file\", .decision = .deny },
    },
}
";

/// `program` with the environment `chock` gets in `env` (its HOME, XDG
/// folders, state), and chock on PATH for the git hooks.
fn command(env: &Env, program: &str) -> Command {
    let template = env.chock();
    let mut command = Command::new(program);
    command.current_dir(&env.project);
    for (name, value) in template.get_envs() {
        match value {
            Some(value) => command.env(name, value),
            None => command.env_remove(name),
        };
    }
    let bin = Path::new(env!("CARGO_BIN_EXE_chock")).parent().unwrap();
    command.env(
        "PATH",
        format!(
            "{}:{}",
            bin.display(),
            std::env::var("PATH").unwrap_or_default()
        ),
    );
    command
        .env("GIT_AUTHOR_NAME", "T")
        .env("GIT_AUTHOR_EMAIL", "t@t")
        .env("GIT_COMMITTER_NAME", "T")
        .env("GIT_COMMITTER_EMAIL", "t@t");
    command
}

/// `args` run with no controlling terminal, as in an agent's shell.
fn without_terminal(env: &Env, args: &[&str]) -> Output {
    command(env, "setsid")
        .arg("-w")
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

/// `args` run with a pseudo-terminal as their controlling terminal,
/// `answer` typed at the first `[y/N]`.
fn at_terminal(env: &Env, args: &[&str], answer: &str) -> chock_testkit::OnTerminal {
    let mut command = command(env, "setsid");
    command.args(["-c", "-w"]).args(args);
    chock_testkit::on_terminal(&mut command, answer, Duration::from_secs(60))
}

fn overrides_dir(env: &Env) -> PathBuf {
    env.project.parent().unwrap().join("state/chock/overrides")
}

fn armed(env: &Env) -> usize {
    walk(&overrides_dir(env))
}

fn walk(dir: &Path) -> usize {
    std::fs::read_dir(dir).map_or(0, |entries| {
        entries
            .map(|e| e.unwrap().path())
            .map(|p| if p.is_dir() { walk(&p) } else { 1 })
            .sum()
    })
}

fn commit(env: &Env, name: &str) -> chock_testkit::OnTerminal {
    std::fs::write(env.project.join(name), name).unwrap();
    assert!(sandbox_fixture::git(&env.project, &["add", name]));
    at_terminal(env, &["git", "commit", "-q", "-m", name], "y\n")
}

fn claude_write(env: &Env) -> Value {
    let payload = json!({
        "session_id": "s",
        "transcript_path": "/dev/null",
        "cwd": env.project,
        "permission_mode": "default",
        "hook_event_name": "PreToolUse",
        "tool_name": "Write",
        "tool_input": {"file_path": env.project.join("w.txt"), "content": "x"},
        "tool_use_id": "t"
    });
    let mut child = command(env, env!("CARGO_BIN_EXE_chock"))
        .args(["hook", "claude"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write as _;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(payload.to_string().as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn an_override_is_a_person_s_once_at_the_terminal_and_never_an_agent_s() {
    let env = Env::new();
    assert!(sandbox_fixture::git(&env.project, &["init", "-q"]));
    env.write(".agents/policies/guarded/manifest.zon", MANIFEST);
    env.rules("");
    let synced = command(&env, env!("CARGO_BIN_EXE_chock"))
        .args(["sync", "--agents", "claude"])
        .output()
        .unwrap();
    assert!(synced.status.success(), "{synced:?}");

    // Refused, and nothing to override yet.
    let refused = commit(&env, "a.txt");
    assert_ne!(refused.code, Some(0), "{}", refused.shown);
    assert!(refused.shown.contains("git.commit"), "{}", refused.shown);

    // From a process with no terminal (an agent's shell), nothing is armed.
    let out = without_terminal(&env, &[env!("CARGO_BIN_EXE_chock"), "override", "guarded"]);
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("no terminal"),
        "{out:?}"
    );
    assert_eq!(armed(&env), 0);

    // Nor from a program that has the terminal but pipes its own `y` in.
    let piped = at_terminal(
        &env,
        &[
            "sh",
            "-c",
            &format!("echo y | {} override guarded", env!("CARGO_BIN_EXE_chock")),
        ],
        "y\n",
    );
    assert_ne!(piped.code, Some(0), "{}", piped.shown);
    assert!(piped.shown.contains("no terminal"), "{}", piped.shown);
    assert_eq!(armed(&env), 0);

    // At the terminal a no arms nothing; a yes arms it, and says so in the log.
    let no = at_terminal(
        &env,
        &[env!("CARGO_BIN_EXE_chock"), "override", "guarded"],
        "n\n",
    );
    assert_ne!(no.code, Some(0), "{}", no.shown);
    assert_eq!(armed(&env), 0);
    let yes = at_terminal(
        &env,
        &[env!("CARGO_BIN_EXE_chock"), "override", "guarded"],
        "y\n",
    );
    assert_eq!(yes.code, Some(0), "{}", yes.shown);
    assert!(yes.stdout.contains("armed"), "{}", yes.stdout);
    assert_eq!(armed(&env), 1);

    // An agent's call through the hook route is still refused, and the
    // override is left for the person.
    let answer = claude_write(&env);
    assert_eq!(
        answer["hookSpecificOutput"]["permissionDecision"], "deny",
        "{answer}"
    );
    assert_eq!(armed(&env), 1);
    // So is the tool server's.
    let mut client = env.client(true, &[]);
    let called = client.call("write_file", json!({"path": "m.txt", "content": "x"}));
    assert!(called.is_error, "{called:?}");
    assert!(called.text.contains("guarded"), "{}", called.text);
    assert!(!env.project.join("m.txt").exists());
    drop(client);
    assert_eq!(armed(&env), 1);
    // And a git commit with no terminal (an agent's own `git commit`).
    std::fs::write(env.project.join("b.txt"), "b").unwrap();
    assert!(sandbox_fixture::git(&env.project, &["add", "b.txt"]));
    let agent_commit = without_terminal(&env, &["git", "commit", "-q", "-m", "b"]);
    assert!(!agent_commit.status.success(), "{agent_commit:?}");
    assert_eq!(armed(&env), 1);

    // The person's own commit at the terminal is asked and goes through, once.
    let used = at_terminal(&env, &["git", "commit", "-q", "-m", "b"], "y\n");
    assert_eq!(used.code, Some(0), "{}", used.shown);
    assert!(used.shown.contains("one-time override"), "{}", used.shown);
    assert_eq!(armed(&env), 0);
    let again = commit(&env, "c.txt");
    assert_ne!(again.code, Some(0), "used up: {}", again.shown);

    let lines = env.log_lines();
    let overrides: Vec<&Value> = lines
        .iter()
        .filter(|l| l["action"] == "policy.override.guarded")
        .collect();
    assert_eq!(overrides.len(), 2, "armed and used: {lines:#?}");
    for line in &overrides {
        assert_eq!(line["answered_by"], "person", "{line}");
    }
    let commits: Vec<(&str, &str)> = lines
        .iter()
        .filter(|l| l["action"] == "git.commit")
        .map(|l| {
            (
                l["decision"].as_str().unwrap(),
                l["answered_by"].as_str().unwrap(),
            )
        })
        .collect();
    assert!(commits.contains(&("allow", "person")), "{commits:?}");
}
