//! The session-start entry `chock sync` writes in each agent's hook file,
//! run as the agent runs it, in a fresh clone of a repository (whose
//! `.git/hooks` no clone carries): it arms the git hooks, which then refuse
//! a commit the policy denies; a second start changes nothing; where
//! `chock` is missing it says so and the session goes on; `sync --remove`
//! takes it back.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::Value;

fn chock_bin() -> &'static str {
    env!("CARGO_BIN_EXE_chock")
}

struct World {
    _root: tempfile::TempDir,
    origin: PathBuf,
    remote: PathBuf,
    clone: PathBuf,
    home: PathBuf,
    state: PathBuf,
}

impl World {
    fn new() -> World {
        let root = tempfile::tempdir().unwrap();
        let at = |name: &str| root.path().join(name);
        let world = World {
            origin: at("origin"),
            remote: at("remote.git"),
            clone: at("clone"),
            home: at("home"),
            state: at("state"),
            _root: root,
        };
        for dir in [&world.origin, &world.home, &world.state] {
            std::fs::create_dir_all(dir).unwrap();
        }
        world
    }

    /// `program` in `dir`, with chock on PATH (`with_chock`) or not.
    fn command(&self, program: &str, dir: &Path, with_chock: bool) -> Command {
        let bin_dir = Path::new(chock_bin()).parent().unwrap();
        let system = std::env::var("PATH").unwrap_or_default();
        let path = if with_chock {
            format!("{}:{system}", bin_dir.display())
        } else {
            system
                .split(':')
                .filter(|d| !Path::new(d).join("chock").exists())
                .collect::<Vec<_>>()
                .join(":")
        };
        chock_testkit::isolated_command(program, dir, &path, &self.home, &self.state)
    }

    /// git in `dir` with no controlling terminal, as in an agent's shell.
    fn git(&self, dir: &Path, args: &[&str]) -> Output {
        self.command("setsid", dir, true)
            .arg("-w")
            .arg("git")
            .args(args)
            .stdin(Stdio::null())
            .output()
            .unwrap()
    }

    /// Runs an agent's hook `command` as the agent does: through `sh -c`,
    /// its payload on standard input.
    fn run_entry(&self, command: &str, payload: &Value, with_chock: bool) -> Output {
        let mut child = self
            .command("sh", &self.clone, with_chock)
            .args(["-c", command])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // An entry that ends before reading its payload closes the pipe,
        // which an agent takes in its stride.
        let _ = child
            .stdin
            .take()
            .unwrap()
            .write_all(payload.to_string().as_bytes());
        child.wait_with_output().unwrap()
    }
}

fn ok(out: &Output) -> String {
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{text}");
    text
}

fn read_json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// Each agent's session-start command, as its file holds it.
fn start_commands(project: &Path) -> Vec<(&'static str, String)> {
    let nested = |file: &str, event: &str| {
        let json = read_json(&project.join(file));
        let groups = json["hooks"][event].as_array().cloned().unwrap_or_default();
        assert_eq!(groups.len(), 1, "{file}: {json}");
        assert!(groups[0].get("matcher").is_none(), "every start: {json}");
        groups[0]["hooks"][0]["command"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    let cursor = read_json(&project.join(".cursor/hooks.json"));
    vec![
        ("claude", nested(".claude/settings.json", "SessionStart")),
        ("codex", nested(".codex/hooks.json", "SessionStart")),
        ("gemini", nested(".gemini/settings.json", "SessionStart")),
        (
            "cursor",
            cursor["hooks"]["sessionStart"][0]["command"]
                .as_str()
                .unwrap()
                .to_owned(),
        ),
    ]
}

fn start_payload(clone: &Path, agent: &str) -> Value {
    match agent {
        "cursor" => serde_json::json!({
            "hook_event_name": "sessionStart",
            "workspace_roots": [clone],
        }),
        _ => serde_json::json!({
            "session_id": "s1",
            "hook_event_name": "SessionStart",
            "source": "startup",
            "cwd": clone,
        }),
    }
}

#[test]
fn a_fresh_clone_s_first_session_arms_the_git_hooks() {
    let world = World::new();
    ok(&world.git(&world.origin, &["init", "-q", "-b", "main"]));
    ok(&world.git(
        &world.origin,
        &[
            "init",
            "-q",
            "-b",
            "main",
            "--bare",
            world.remote.to_str().unwrap(),
        ],
    ));
    std::fs::write(
        world.origin.join("chock.zon"),
        ".{ .policy = .{ .rules = .{ .{ .action = \"git.commit\", .decision = .deny } } } }\n",
    )
    .unwrap();
    ok(&world
        .command(chock_bin(), &world.origin, true)
        .args(["sync", "--agents", "claude,codex,gemini,cursor"])
        .output()
        .unwrap());
    let commands = start_commands(&world.origin);
    ok(&world.git(&world.origin, &["add", "-A"]));
    ok(&world.git(
        &world.origin,
        &["commit", "-q", "--no-verify", "-m", "wired"],
    ));
    ok(&world.git(
        &world.origin,
        &[
            "push",
            "-q",
            "--no-verify",
            world.remote.to_str().unwrap(),
            "main",
        ],
    ));
    ok(&world.git(
        world.origin.parent().unwrap(),
        &[
            "clone",
            "-q",
            world.remote.to_str().unwrap(),
            world.clone.to_str().unwrap(),
        ],
    ));
    let pre_commit = world.clone.join(".git/hooks/pre-commit");
    let armed = |hook: &Path| std::fs::read_to_string(hook).is_ok_and(|t| t.contains("chock hook"));
    assert!(
        world.clone.join("chock.zon").is_file(),
        "the clone has the project"
    );
    assert!(!armed(&pre_commit), "a clone carries no git hooks");

    // Where chock is missing, the start says so and goes on (exit 0): no
    // session start can refuse anything, and the tool entry refuses every
    // call there.
    let (_, claude) = &commands[0];
    let out = world.run_entry(claude, &start_payload(&world.clone, "claude"), false);
    let said = ok(&out);
    assert!(said.contains("not installed"), "{said}");
    assert!(!armed(&pre_commit));

    for (at, (agent, command)) in commands.iter().enumerate() {
        let out = world.run_entry(command, &start_payload(&world.clone, agent), true);
        let said = ok(&out);
        assert!(
            out.stdout.is_empty(),
            "{agent}: nothing for the model: {said}"
        );
        if at == 0 {
            assert!(said.contains("armed"), "{agent}: {said}");
        } else {
            assert!(!said.contains("armed"), "{agent}: armed again: {said}");
        }
        assert!(armed(&pre_commit), "{agent}: {said}");
        assert!(armed(&world.clone.join(".git/hooks/pre-push")), "{agent}");
    }

    // Armed, the clone's hook refuses the commit its policy denies.
    std::fs::write(world.clone.join("a.txt"), "a").unwrap();
    ok(&world.git(&world.clone, &["add", "a.txt"]));
    let out = world.git(&world.clone, &["commit", "-q", "-m", "a"]);
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "the commit went through: {said}");
    assert!(said.contains("git.commit"), "{said}");

    // `sync --remove` takes the start entries back with the rest.
    ok(&world
        .command(chock_bin(), &world.origin, true)
        .args(["sync", "--remove", "--agents", "claude,codex,gemini,cursor"])
        .output()
        .unwrap());
    for file in [
        ".claude/settings.json",
        ".codex/hooks.json",
        ".gemini/settings.json",
        ".cursor/hooks.json",
    ] {
        let text = std::fs::read_to_string(world.origin.join(file)).unwrap_or_default();
        assert!(!text.contains("session-start"), "{file}: {text}");
    }
}

/// The user-level file is read in every project the person opens, so
/// `sync --user` arms nothing there: no session-start entry.
#[test]
fn the_user_level_files_get_no_session_start_entry() {
    let world = World::new();
    ok(&world
        .command(chock_bin(), &world.home, true)
        .args(["sync", "--user", "--agents", "claude,cursor"])
        .output()
        .unwrap());
    for file in [".claude/settings.json", ".cursor/hooks.json"] {
        let text = std::fs::read_to_string(world.home.join(file)).unwrap();
        assert!(text.contains("chock hook"), "{file}: {text}");
        assert!(!text.contains("session-start"), "{file}: {text}");
    }
}
