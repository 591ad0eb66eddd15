//! The command line as its users meet it: output into a closed pipe or a
//! full disk, the exit codes of usage mistakes, and help for every command
//! and flag.

mod sandbox_fixture;

use std::process::{Command, Output, Stdio};

use sandbox_fixture::{Fixture, describe, text};

/// Every command that prints a result, each as a reader would pipe it.
const PRINTING: &[&[&str]] = &[
    &["--help"],
    &["--version"],
    &["doctor"],
    &["status"],
    &["status", "--json"],
    &["sync", "--check", "--agents", "claude"],
    &["sessions", "--json"],
    &["usage", "--json"],
    &["log", "head", "--json"],
    &["log", "show", "-n", "500"],
    &["log", "show"],
    &["log", "show", "--json"],
    &["log", "head"],
    &["log", "verify"],
    &["policy", "check"],
    &["policy", "explain", "fs.read"],
    &["policy", "defaults"],
    &["policy", "defaults", "--json"],
    &["policy", "controls"],
    &["inputs"],
    &["cache"],
    &["memory"],
    &["workspace"],
    &["sessions"],
    &["usage"],
    &["login", "--list"],
    &["skills", "list"],
    &["skills", "list", "--json"],
    &["install-skills", "--agents", "claude"],
    &["witness", "export"],
    &["status", "--verify-log"],
    &[
        "eval",
        "--strict",
        "--expr",
        "builtins.genList (x: x) 20000",
    ],
    &["completions", "bash"],
    &["completions", "fish"],
    &["man"],
    &["migrate", "claude"],
];

/// A fixture whose log is past 64 KiB, so a reader that stops early meets
/// a writer that still has lines to write, as `chock log show | head` does.
fn with_long_log() -> Fixture {
    let fx = Fixture::flake();
    let out = fx
        .chock()
        .args([
            "log",
            "append",
            "--count",
            "600",
            "--subject",
            &"x".repeat(200),
        ])
        .output()
        .expect("chock log append");
    assert!(out.status.success(), "{}", describe(&out));
    fx
}

fn into_closed_pipe(mut command: Command) -> Output {
    let (reader, writer) = std::io::pipe().expect("pipe");
    drop(reader);
    command.stdout(writer).stderr(Stdio::piped());
    command.output().expect("run chock")
}

#[test]
fn every_printing_command_stops_quietly_at_a_closed_pipe() {
    let fx = with_long_log();
    for args in PRINTING {
        let mut command = fx.chock();
        command.args(*args);
        let out = into_closed_pipe(command);
        let stderr = text(&out.stderr);
        assert!(
            !stderr.contains("panicked") && !stderr.contains("Broken pipe"),
            "chock {args:?} into a closed pipe:\n{}",
            describe(&out)
        );
        assert_ne!(out.status.code(), Some(101), "chock {args:?} panicked");
        assert!(
            out.status.code().is_some(),
            "chock {args:?} died of a signal"
        );
    }
}

#[test]
fn a_reader_that_stops_early_ends_the_log_quietly() {
    let fx = with_long_log();
    let mut child = fx
        .chock()
        .args(["log", "show", "--json"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn chock log show");
    let mut first = [0u8; 100];
    std::io::Read::read_exact(child.stdout.as_mut().unwrap(), &mut first).expect("read");
    drop(child.stdout.take());
    let out = child.wait_with_output().expect("wait");
    assert_eq!(out.status.code(), Some(141), "{}", describe(&out));
    assert!(out.stderr.is_empty(), "{}", describe(&out));
}

#[test]
fn a_full_disk_behind_stdout_is_a_named_failure() {
    let fx = with_long_log();
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .expect("/dev/full");
    let out = fx
        .chock()
        .args(["log", "show", "--json"])
        .stdout(full)
        .output()
        .expect("run chock");
    assert_eq!(out.status.code(), Some(1), "{}", describe(&out));
    assert!(
        text(&out.stderr).contains("cannot write to stdout"),
        "{}",
        describe(&out)
    );
}

#[test]
fn a_usage_mistake_exits_2_naming_what_is_accepted() {
    let fx = Fixture::host();
    for (args, named) in [
        (&["log", "show", "--decision", "maybe"][..], "allow"),
        (&["sync", "--agents", "claud"], "claude"),
        (&["policy", "explian"], "explain"),
        (&["--no-such-flag"], "--no-such-flag"),
    ] {
        let out = fx.chock().args(args).output().expect("run chock");
        assert_eq!(
            out.status.code(),
            Some(2),
            "chock {args:?}: {}",
            describe(&out)
        );
        assert!(
            text(&out.stderr).contains(named),
            "chock {args:?} names `{named}`: {}",
            describe(&out)
        );
    }
}

#[test]
fn the_exit_codes_are_in_help_and_the_manual_page() {
    let fx = Fixture::host();
    for args in [&["--help"][..], &["man"]] {
        let out = fx.chock().args(args).output().expect("run chock");
        assert_eq!(out.status.code(), Some(0), "{}", describe(&out));
        let shown = text(&out.stdout);
        for row in [
            "Exit codes",
            "0    done",
            "2    the command line",
            "125 (refused)",
        ] {
            assert!(
                shown.contains(row),
                "chock {args:?} lacks `{row}`:\n{shown}"
            );
        }
    }
}

#[test]
fn exec_tells_the_program_s_own_3_from_a_refusal() {
    let fx = Fixture::host();
    let own = fx.exec(&[], &["sh", "-c", "exit 3"]);
    assert_eq!(own.status.code(), Some(3), "{}", describe(&own));
    fx.rules(r#".{ .action = "exec.path.sh", .decision = .deny }"#);
    let refused = fx.exec(&[], &["sh", "-c", "exit 3"]);
    assert_eq!(refused.status.code(), Some(125), "{}", describe(&refused));
    let json = fx.exec(&["--json"], &["sh", "-c", "exit 3"]);
    assert_eq!(json.status.code(), Some(125), "{}", describe(&json));
    let report: serde_json::Value = serde_json::from_slice(&json.stdout).expect("one JSON object");
    assert_eq!(report["decision"], "deny", "{report}");
}

#[test]
fn bare_status_shows_the_stop_the_log_and_the_wired_agents() {
    let fx = Fixture::flake();
    let status = |fx: &Fixture| {
        let out = fx
            .chock()
            .args(["status", "--json"])
            .output()
            .expect("chock status");
        assert_eq!(out.status.code(), Some(0), "{}", describe(&out));
        serde_json::from_slice::<serde_json::Value>(&out.stdout).expect("one JSON object")
    };
    let out = fx.chock().arg("status").output().expect("chock status");
    assert_eq!(out.status.code(), Some(0), "{}", describe(&out));
    assert!(
        text(&out.stdout).contains("claude   not wired"),
        "{}",
        describe(&out)
    );
    let before = status(&fx);
    assert_eq!(before["stopped"], serde_json::Value::Null, "{before}");
    assert_eq!(before["agents"]["claude"]["wired"], false, "{before}");
    for args in [&["sync", "--agents", "claude"][..], &["stop"]] {
        let out = fx.chock().args(args).output().expect("run chock");
        assert!(out.status.success(), "chock {args:?}: {}", describe(&out));
    }
    let after = status(&fx);
    assert!(after["stopped"].is_string(), "{after}");
    assert_eq!(after["agents"]["claude"]["wired"], true, "{after}");
    assert_eq!(after["agents"]["codex"]["wired"], false, "{after}");
    assert!(
        after["log"]["head"].is_string(),
        "the stop is logged: {after}"
    );
}

#[test]
fn sync_that_wires_no_agent_fails_and_check_writes_nothing() {
    let fx = Fixture::flake();
    let out = fx.chock().arg("sync").output().expect("chock sync");
    assert_eq!(out.status.code(), Some(1), "{}", describe(&out));
    assert!(
        text(&out.stderr).contains("no agent is wired"),
        "{}",
        describe(&out)
    );

    let settings = fx.project.join(".claude/settings.json");
    let check = |fx: &Fixture| {
        fx.chock()
            .args(["sync", "--check", "--agents", "claude"])
            .output()
            .expect("chock sync --check")
    };
    let out = check(&fx);
    assert_eq!(out.status.code(), Some(1), "{}", describe(&out));
    assert!(
        text(&out.stdout).contains("would create .claude/settings.json"),
        "{}",
        describe(&out)
    );
    assert!(
        !fx.project.join(".claude").exists(),
        "--check made the folder"
    );

    let out = fx
        .chock()
        .args(["sync", "--agents", "claude"])
        .output()
        .expect("chock sync");
    assert_eq!(out.status.code(), Some(0), "{}", describe(&out));
    let out = check(&fx);
    assert_eq!(out.status.code(), Some(0), "{}", describe(&out));

    // A person's edit of Chock's entry is a difference; their own key is not.
    let text_of = std::fs::read_to_string(&settings).unwrap();
    let mut json: serde_json::Value = serde_json::from_str(&text_of).unwrap();
    json["model"] = "opus".into();
    std::fs::write(
        &settings,
        serde_json::to_string_pretty(&json).unwrap() + "\n",
    )
    .unwrap();
    let out = check(&fx);
    assert_eq!(out.status.code(), Some(0), "{}", describe(&out));
    json["hooks"]["PreToolUse"][0]["hooks"][0]["command"] = "true".into();
    let edited = serde_json::to_string_pretty(&json).unwrap() + "\n";
    std::fs::write(&settings, &edited).unwrap();
    let out = check(&fx);
    assert_eq!(out.status.code(), Some(1), "{}", describe(&out));
    assert!(
        text(&out.stdout).contains("would update .claude/settings.json"),
        "{}",
        describe(&out)
    );
    assert_eq!(
        std::fs::read_to_string(&settings).unwrap(),
        edited,
        "--check wrote"
    );
}

/// The `chock` lines of the README's quick start, in order, without their comments.
fn quick_start() -> Vec<Vec<String>> {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../README.md"))
        .expect("README.md");
    let section = readme
        .split("\n## ")
        .find(|s| s.starts_with("Quick start"))
        .expect("a Quick start section");
    section
        .split("```")
        .skip(1)
        .step_by(2)
        .flat_map(str::lines)
        .map(|line| line.split(" #").next().unwrap_or("").trim())
        .filter(|line| line.starts_with("chock "))
        .map(|line| line.split_whitespace().skip(1).map(str::to_owned).collect())
        .collect()
}

#[test]
fn the_readme_s_quick_start_runs_as_written() {
    let commands = quick_start();
    let names: Vec<&str> = commands.iter().map(|c| c[0].as_str()).collect();
    assert_eq!(
        names,
        [
            "doctor", "sync", "status", "policy", "stop", "resume", "sync"
        ],
        "the quick start's commands"
    );
    let fx = Fixture::flake();
    let bin = std::path::Path::new(env!("CARGO_BIN_EXE_chock"))
        .parent()
        .unwrap();
    let path = format!("{}:/usr/bin:/bin", bin.display());
    for args in &commands {
        let out = fx
            .chock()
            .args(args)
            .env("PATH", &path)
            .output()
            .expect("run chock");
        assert_eq!(
            out.status.code(),
            Some(0),
            "chock {args:?}: {}",
            describe(&out)
        );
    }
    // The last one takes Chock out again, and `chock status` says so.
    let out = fx
        .chock()
        .args(["status", "--json"])
        .output()
        .expect("chock status");
    let status: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(
        status["agents"]["claude"]["wired"], false,
        "removed: {status}"
    );
    assert_eq!(
        status["stopped"],
        serde_json::Value::Null,
        "resumed: {status}"
    );
}

#[test]
fn exec_names_a_missing_interpreter_and_quiet_leaves_out_the_notes() {
    let fx = Fixture::host();
    let script = fx.project.join("tool.sh");
    std::fs::write(&script, "#!/opt/nowhere/python9 -u\nprint('hi')\n").unwrap();
    let mut perms = std::fs::metadata(&script).unwrap().permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut perms, 0o755);
    std::fs::set_permissions(&script, perms).unwrap();
    fx.rules(r#".{ .action = "exec.*", .decision = .allow }"#);
    let out = fx.exec(&[], &["./tool.sh"]);
    assert_eq!(out.status.code(), Some(127), "{}", describe(&out));
    assert!(
        text(&out.stderr).contains("/opt/nowhere/python9 is not in the sandbox"),
        "{}",
        describe(&out)
    );

    let noisy = fx.exec(&[], &["true"]);
    assert_eq!(noisy.status.code(), Some(0), "{}", describe(&noisy));
    assert!(
        text(&noisy.stderr).contains("chock: "),
        "notes without -q: {}",
        describe(&noisy)
    );
    let quiet = fx.exec(&["-q"], &["true"]);
    assert_eq!(quiet.status.code(), Some(0), "{}", describe(&quiet));
    assert_eq!(text(&quiet.stderr), "", "{}", describe(&quiet));
    let refused = fx.exec(&["-q"], &["/nonexistent/x"]);
    assert!(
        !refused.stderr.is_empty(),
        "a failure is still said: {}",
        describe(&refused)
    );
}

#[test]
fn json_where_a_script_looks_and_errors_as_json_too() {
    let fx = Fixture::host();
    let json = |args: &[&str]| {
        let out = fx.chock().args(args).output().expect("run chock");
        let value = serde_json::from_slice::<serde_json::Value>(&out.stdout)
            .unwrap_or_else(|e| panic!("chock {args:?} printed no JSON ({e}): {}", describe(&out)));
        (out.status.code(), value)
    };
    let (code, error) = json(&["log", "head", "--json"]);
    assert_eq!(code, Some(1));
    assert!(
        error["error"]["message"]
            .as_str()
            .unwrap()
            .contains("no decisions"),
        "{error}"
    );
    let out = fx.chock().args(["log", "append"]).output().unwrap();
    assert!(out.status.success(), "{}", describe(&out));
    let (code, head) = json(&["log", "head", "--json"]);
    assert_eq!((code, head["seq"].as_u64()), (Some(0), Some(1)), "{head}");
    assert_eq!(head["sha256"].as_str().map(str::len), Some(64), "{head}");
    let (code, usage) = json(&["usage", "--json"]);
    assert_eq!(
        (code, usage["sessions"].as_array().map(Vec::len)),
        (Some(0), Some(0)),
        "{usage}"
    );
    let sessions = fx.chock().args(["sessions", "--json"]).output().unwrap();
    assert_eq!(
        (sessions.status.code(), sessions.stdout.len()),
        (Some(0), 0),
        "no session, no line"
    );
    let (code, memory) = json(&["memory", "--json"]);
    assert_eq!(
        (code, &memory["notes"]),
        (Some(0), &serde_json::Value::Null),
        "{memory}"
    );
    let notes = std::path::PathBuf::from(memory["file"].as_str().expect("the notes' file"));
    std::fs::create_dir_all(notes.parent().unwrap()).unwrap();
    std::fs::write(&notes, "make check runs the tests\n").unwrap();
    let (code, memory) = json(&["memory", "--json"]);
    assert_eq!(
        (code, memory["notes"].as_str()),
        (Some(0), Some("make check runs the tests\n")),
        "{memory}"
    );
    let (code, cleared) = json(&["memory", "clear", "--yes", "--json"]);
    assert_eq!(
        (code, &cleared["removed"]),
        (Some(0), &true.into()),
        "{cleared}"
    );
    assert!(!notes.exists());
    let (code, ok) = json(&["policy", "check", "--json"]);
    assert_eq!(
        (code, &ok["ok"]),
        (Some(0), &serde_json::Value::Bool(true)),
        "{ok}"
    );

    fx.zon(".{\n  .policy = broken,\n}\n");
    let zon = fx.project.join("chock.zon");
    for (args, want) in [
        (&["policy", "check", "--json"][..], 1),
        (&["policy", "explain", "fs.read", "--json"], 1),
        (&["exec", "--json", "--", "true"], 124),
    ] {
        let (code, error) = json(args);
        assert_eq!(code, Some(want), "chock {args:?}: {error}");
        assert_eq!(
            error["error"]["file"],
            zon.to_str().unwrap(),
            "chock {args:?}: {error}"
        );
        assert_eq!(error["error"]["line"], 2, "chock {args:?}: {error}");
    }
}

#[test]
fn sync_remove_takes_back_exactly_what_sync_wrote() {
    let fx = Fixture::flake();
    let settings = fx.project.join(".claude/settings.json");
    std::fs::create_dir_all(settings.parent().unwrap()).unwrap();
    let mine = "{\n  \"model\": \"opus\",\n  \"hooks\": {\n    \"PreToolUse\": [\n      {\n        \"matcher\": \"Bash\",\n        \"hooks\": [\n          {\n            \"type\": \"command\",\n            \"command\": \"./lint.sh\"\n          }\n        ]\n      }\n    ]\n  }\n}\n";
    std::fs::write(&settings, mine).unwrap();
    let cursor = fx.project.join(".cursor/hooks.json");
    let pre_commit = fx.project.join(".git/hooks/pre-commit");
    std::fs::create_dir_all(pre_commit.parent().unwrap()).unwrap();
    let own_hook = "#!/bin/sh\necho my own check\n";
    std::fs::write(&pre_commit, own_hook).unwrap();

    let out = fx
        .chock()
        .args(["sync", "--agents", "claude,cursor"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", describe(&out));
    let synced = std::fs::read_to_string(&settings).unwrap();
    assert!(
        synced.contains("chock hook claude") && synced.contains("./lint.sh"),
        "{synced}"
    );
    let out = fx
        .chock()
        .args(["sync", "--check", "--json", "--agents", "claude,cursor"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", describe(&out));
    let checked: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one JSON object");
    assert_eq!(checked["ok"], true, "{checked}");
    assert_eq!(
        checked["agents"],
        serde_json::json!(["claude", "cursor"]),
        "{checked}"
    );
    let files = checked["files"].as_array().expect("files");
    assert!(
        files
            .iter()
            .any(|f| f["path"] == settings.to_str().unwrap() && f["done"] == "unchanged"),
        "{checked}"
    );

    let out = fx
        .chock()
        .args(["sync", "--remove", "--agents", "claude,cursor"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", describe(&out));
    assert!(
        text(&out.stdout).contains("removed Chock's entry from .claude/settings.json"),
        "{}",
        describe(&out)
    );
    assert_eq!(
        std::fs::read_to_string(&settings).unwrap(),
        mine,
        "the person's file, as it was"
    );
    assert_eq!(
        std::fs::read_to_string(&pre_commit).unwrap(),
        own_hook,
        "the person's hook, as it was"
    );
    let left: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&cursor).unwrap()).unwrap();
    assert!(!left.to_string().contains("chock hook"), "{left}");
    for hook in ["pre-commit", "pre-push"] {
        let text = std::fs::read_to_string(fx.project.join(".git/hooks").join(hook)).unwrap();
        assert!(!text.contains("chock"), "{hook}: {text}");
    }
    // Twice is nothing more; an agent never wired is nothing at all.
    let out = fx
        .chock()
        .args(["sync", "--remove", "--agents", "claude,codex"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", describe(&out));
    assert!(!text(&out.stdout).contains("removed"), "{}", describe(&out));
    assert!(
        !fx.project.join(".codex").exists(),
        "--remove made a folder"
    );
}

#[test]
fn sync_user_wires_the_agents_user_level_settings_and_nothing_in_the_project() {
    let fx = Fixture::flake();
    let before = sandbox_fixture::git_stdout(&fx.project, &["status", "--porcelain"]);
    let out = fx
        .chock()
        .args(["sync", "--user", "--agents", "claude"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", describe(&out));
    assert!(
        text(&out.stdout).contains("created   ~/.claude/settings.json"),
        "{}",
        describe(&out)
    );
    let user = std::fs::read_to_string(fx.home.join(".claude/settings.json")).unwrap();
    assert!(user.contains("chock hook claude"), "{user}");
    assert!(
        !fx.project.join(".claude").exists(),
        "nothing in the project"
    );
    assert!(
        !fx.project.join(".git/hooks/pre-commit").exists(),
        "no git hooks"
    );
    assert_eq!(
        sandbox_fixture::git_stdout(&fx.project, &["status", "--porcelain"]),
        before,
        "nothing to commit"
    );
    let out = fx.chock().args(["status", "--json"]).output().unwrap();
    let status: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(status["agents"]["claude"]["wired"], true, "{status}");
    let out = fx
        .chock()
        .args(["sync", "--user", "--remove", "--agents", "claude"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", describe(&out));
    let user = std::fs::read_to_string(fx.home.join(".claude/settings.json")).unwrap();
    assert!(!user.contains("chock hook"), "{user}");
}

#[test]
fn the_cache_lives_under_xdg_cache_home_and_an_old_one_moves_there() {
    let fx = Fixture::host();
    let out = fx.chock().args(["cache", "--json"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", describe(&out));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let dir = std::path::PathBuf::from(report["cache"]["dir"].as_str().unwrap());
    assert!(
        dir.starts_with(fx.root().join("cache")),
        "{}",
        dir.display()
    );
    // A cache kept where Chock kept it first, under XDG_DATA_HOME.
    let old = fx
        .root()
        .join("data/chock/cache")
        .join(dir.file_name().unwrap());
    std::fs::create_dir_all(&old).unwrap();
    std::fs::write(old.join("kept"), "warm\n").unwrap();
    fx.rules(r#".{ .action = "exec.*", .decision = .allow }"#);
    let out = fx.exec(&["-q"], &["cat", "/run/chock/cache/kept"]);
    assert_eq!(out.status.code(), Some(0), "{}", describe(&out));
    assert_eq!(
        text(&out.stdout),
        "warm\n",
        "what the old cache held is kept"
    );
    assert!(!old.exists(), "moved, not copied");
    assert_eq!(std::fs::read_to_string(dir.join("kept")).unwrap(), "warm\n");
}

/// A hook whose answer cannot be written must not exit 0, the agents'
/// "go on": it fails, and the entry sync writes turns that into a refusal.
#[test]
fn a_hook_that_cannot_answer_into_a_closed_pipe_refuses() {
    let fx = Fixture::flake();
    fx.rules(r#".{ .action = "exec.*", .decision = .deny }"#);
    let payload = serde_json::json!({
        "session_id": "s",
        "transcript_path": "/dev/null",
        "cwd": fx.project,
        "hook_event_name": "PreToolUse",
        "tool_name": "Bash",
        "tool_input": { "command": "rm -rf /" },
    });
    let mut command = fx.chock();
    command.args(["hook", "claude"]).stdin(Stdio::piped());
    let (reader, writer) = std::io::pipe().expect("pipe");
    drop(reader);
    let mut child = command
        .stdout(writer)
        .stderr(Stdio::piped())
        .spawn()
        .expect("chock hook");
    std::io::Write::write_all(
        child.stdin.as_mut().unwrap(),
        payload.to_string().as_bytes(),
    )
    .expect("payload");
    drop(child.stdin.take());
    let out = child.wait_with_output().expect("wait");
    assert_ne!(out.status.code(), Some(0), "{}", describe(&out));
}
