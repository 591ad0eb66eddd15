//! Policy packages through the binary, in real git repositories: a policy
//! written with `chock new` and its evals passing, `chock sync` writing
//! INDEX.md and the AGENTS.md pointer, a guard refusing a file over 5 MB
//! in a real `git commit`, guards that hang or answer garbage refused at
//! their bound, a catalog in a local git repository installed and pinned,
//! a tampered file caught by verify, an upstream change shown as a diff, a
//! conflict and a baseline diff reported.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

fn chock_bin() -> &'static str {
    env!("CARGO_BIN_EXE_chock")
}

/// A project in a real repository, with its own home and state folders.
struct Repo {
    _root: tempfile::TempDir,
    root: PathBuf,
    project: PathBuf,
    home: PathBuf,
    state: PathBuf,
}

impl Repo {
    fn new() -> Repo {
        let root = tempfile::tempdir().unwrap();
        let base = root.path().to_path_buf();
        let project = base.join("project");
        let home = base.join("home");
        let state = base.join("state");
        for dir in [&project, &home, &state, &project.join(".claude")] {
            std::fs::create_dir_all(dir).unwrap();
        }
        // A project whose Claude Code folder holds its settings: chock sync
        // wires an agent whose folder is not empty.
        std::fs::write(project.join(".claude/settings.json"), "{}\n").unwrap();
        let repo = Repo {
            _root: root,
            root: base,
            project,
            home,
            state,
        };
        repo.git(&repo.project, &["init", "-q", "-b", "main"]);
        repo
    }

    fn command(&self, program: &str, dir: &Path) -> Command {
        let bin_dir = Path::new(chock_bin()).parent().unwrap();
        let path = format!("{}:/usr/bin:/bin", bin_dir.display());
        chock_testkit::isolated_command(program, dir, &path, &self.home, &self.state)
    }

    fn git(&self, dir: &Path, args: &[&str]) -> Output {
        let out = self.command("git", dir).args(args).output().unwrap();
        assert!(out.status.success(), "git {args:?}: {out:?}");
        out
    }

    fn chock(&self, args: &[&str]) -> Output {
        self.command(chock_bin(), &self.project)
            .args(args)
            .stdin(Stdio::null())
            .output()
            .unwrap()
    }

    fn hook(&self, agent: &str, payload: &str) -> Output {
        let mut child = self
            .command(chock_bin(), &self.project)
            .args(["hook", agent])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(payload.as_bytes())
            .unwrap();
        child.wait_with_output().unwrap()
    }

    /// A recorded payload of the hook tests, placed in this project.
    fn payload(&self, fixture: &str) -> String {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../hook/tests/fixtures")
            .join(fixture);
        std::fs::read_to_string(path)
            .unwrap()
            .replace("@PROJECT@", self.project.to_str().unwrap())
            .replace("@HOME@", self.home.to_str().unwrap())
    }

    fn package(&self, id: &str) -> PathBuf {
        self.project.join(".agents/policies").join(id)
    }

    fn log_lines(&self) -> Vec<Value> {
        std::fs::read_to_string(self.state.join("log/decisions.jsonl"))
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

fn write_exec(path: &Path, text: &str) {
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// A package with `rules` (ZON rule literals), at `hooks`, and a guard when given.
fn write_package(dir: &Path, hooks: &str, rules: &str, guard: Option<(&str, u64)>) {
    let id = dir.file_name().unwrap().to_str().unwrap();
    let guard_line = guard
        .map(|(_, ms)| format!(".guard = .{{ .program = \"guard.sh\", .timeout_ms = {ms} }},"))
        .unwrap_or_default();
    std::fs::create_dir_all(dir.join("evals")).unwrap();
    std::fs::write(
        dir.join("manifest.zon"),
        format!(
            ".{{\n    .id = \"{id}\",\n    .version = \"1.0.0\",\n    .summary = \"test policy {id}\",\n    .hooks = .{{ {hooks} }},\n    .rules = .{{ {rules} }},\n    {guard_line}\n    .guidance = \"Follow {id}.\",\n}}\n"
        ),
    )
    .unwrap();
    if let Some((script, _)) = guard {
        write_exec(&dir.join("guard.sh"), script);
    }
}

/// Denies any staged file over 5 MB, reading the call's `staged` list.
const MAX_5MB_GUARD: &str = r#"#!/bin/sh
call=$(cat)
for size in $(printf '%s' "$call" | grep -o '"bytes":[0-9]*' | cut -d: -f2); do
  if [ "$size" -gt 5242880 ]; then
    echo '{"decision": "deny", "reason": "a staged file is over 5 MB"}'
    exit 0
  fi
done
echo '{"decision": "allow"}'
"#;

#[test]
fn a_policy_written_with_new_passes_its_checks_and_sync_writes_the_index_once() {
    let repo = Repo::new();
    let out = repo.chock(&["new", "policy", "ask-clean"]);
    assert!(out.status.success(), "{}", text(&out));
    let out = repo.chock(&["check", "--only", "validate,evals,conflicts,verify"]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        text(&out).contains("ask-clean: 2/2 cases passed"),
        "{}",
        text(&out)
    );

    // Before sync the hooks and the index are missing, and check says how to fix it.
    let out = repo.chock(&["check", "--json"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let stage = |name: &str| {
        report["stages"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["stage"] == name)
            .unwrap()
            .clone()
    };
    assert_eq!(stage("index")["status"], "failed");
    assert!(
        stage("index")["problems"][0]["fix"]
            .as_str()
            .unwrap()
            .contains("chock sync")
    );

    std::fs::write(repo.project.join("AGENTS.md"), "# Agents\n\nBe careful.\n").unwrap();
    let out = repo.chock(&["sync"]);
    assert!(out.status.success(), "{}", text(&out));
    let out = repo.chock(&["check", "--json"]);
    assert!(out.status.success(), "{}", text(&out));
    let agents = std::fs::read_to_string(repo.project.join("AGENTS.md")).unwrap();
    assert!(agents.starts_with("# Agents\n\nBe careful.\n"), "{agents}");
    assert_eq!(
        agents.matches("kept by `chock sync`").count(),
        1,
        "{agents}"
    );
    let index = std::fs::read_to_string(repo.project.join(".agents/policies/INDEX.md")).unwrap();
    assert!(index.contains("## ask-clean 0.1.0"), "{index}");
    assert!(
        index.contains(r#".action = "git.clean", .decision = .ask"#),
        "{index}"
    );

    // A rule change rewrites the index; the pointer stays as it was.
    let manifest = repo.package("ask-clean").join("manifest.zon");
    let changed = std::fs::read_to_string(&manifest)
        .unwrap()
        .replace(".decision = .ask", ".decision = .deny")
        .replace("\"expect\": \"ask\"", "\"expect\": \"deny\"");
    std::fs::write(&manifest, changed).unwrap();
    let out = repo.chock(&["sync"]);
    assert!(
        text(&out).contains("updated   .agents/policies/INDEX.md"),
        "{}",
        text(&out)
    );
    assert!(text(&out).contains("unchanged AGENTS.md"), "{}", text(&out));
    assert_eq!(
        std::fs::read_to_string(repo.project.join("AGENTS.md")).unwrap(),
        agents
    );

    // The package's rule is its own layer, and explain names it.
    let out = repo.chock(&[
        "policy",
        "explain",
        "git.clean",
        "--agent-kind",
        "claude",
        "--tool",
        "Bash",
    ]);
    let shown = text(&out);
    assert!(shown.contains("git.clean: deny"), "{shown}");
    assert!(
        shown.contains("an installed policy's rule `ask-clean`"),
        "{shown}"
    );
}

#[test]
fn checks_that_could_pass_vacuously_fail() {
    let repo = Repo::new();
    let dir = repo.package("ask-push");
    write_package(
        &dir,
        "\"tool\"",
        ".{ .action = \"git.push\", .decision = .ask }",
        None,
    );
    std::fs::write(
        dir.join("evals/push.json"),
        r#"{"hook": "pre-push", "args": ["origin"], "expect": "ask"}"#,
    )
    .unwrap();
    // A case at a hook point the package does not name.
    let out = repo.chock(&["check", "--only", "evals"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(
        text(&out).contains("a hook point `ask-push` does not name"),
        "{}",
        text(&out)
    );
    // Named, it still asks without the package (git.push has no default).
    write_package(
        &dir,
        "\"tool\", \"pre-push\"",
        ".{ .action = \"git.push\", .decision = .ask }",
        None,
    );
    let out = repo.chock(&["check", "--only", "evals"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(
        text(&out).contains("gets ask without `ask-push` too, so it tests nothing of it"),
        "{}",
        text(&out)
    );
    // A deny the package itself decides passes.
    write_package(
        &dir,
        "\"tool\", \"pre-push\"",
        ".{ .action = \"git.push\", .agent_kind = \"git\", .decision = .deny }",
        None,
    );
    std::fs::write(
        dir.join("evals/push.json"),
        r#"{"hook": "pre-push", "args": ["origin"], "expect": "deny"}"#,
    )
    .unwrap();
    let out = repo.chock(&["check", "--only", "evals"]);
    assert!(out.status.success(), "{}", text(&out));

    // The baseline samples the agent kind the rule names: the rule turned
    // to allow is a diff, though `main` still gets the same answer.
    let out = repo.chock(&["check", "--record-baseline"]);
    assert!(out.status.success(), "{}", text(&out));
    let recorded = std::fs::read_to_string(dir.parent().unwrap().join("baseline.json")).unwrap();
    assert!(recorded.contains(r#""agent_kind": "git""#), "{recorded}");
    write_package(
        &dir,
        "\"tool\", \"pre-push\"",
        ".{ .action = \"git.push\", .agent_kind = \"git\", .decision = .allow }",
        None,
    );
    let out = repo.chock(&["check", "--only", "baseline"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(
        text(&out)
            .contains("git.push (git)\n  - deny by policy ask-push\n  + allow by policy ask-push"),
        "{}",
        text(&out)
    );
    // Only allow cases, each true without the package: none tests it.
    std::fs::write(
        dir.join("evals/push.json"),
        r#"{"hook": "tool", "agent": "claude", "payload": {"session_id": "e", "hook_event_name": "PreToolUse", "permission_mode": "default", "tool_name": "Bash", "tool_input": {"command": "cargo test"}}, "expect": "allow"}"#,
    )
    .unwrap();
    let out = repo.chock(&["check", "--only", "evals"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(text(&out).contains("so none tests it"), "{}", text(&out));

    // An unreadable manifest fails `--only evals`: every hook refuses meanwhile.
    std::fs::write(dir.join("manifest.zon"), ".{ .id = \"ask-push\",\n").unwrap();
    let out = repo.chock(&["check", "--only", "evals"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(text(&out).contains("manifest.zon"), "{}", text(&out));
}

#[test]
fn a_guard_refuses_a_file_over_5_mb_in_a_real_pre_commit_and_logs_its_id() {
    let repo = Repo::new();
    let dir = repo.package("max-5mb");
    write_package(&dir, "\"pre-commit\"", "", Some((MAX_5MB_GUARD, 5000)));
    std::fs::write(
        dir.join("evals/big.json"),
        r#"{"hook": "pre-commit", "staged": [{"path": "big.bin", "bytes": 6000000}], "expect": "deny"}"#,
    )
    .unwrap();
    std::fs::write(
        dir.join("evals/small.json"),
        r#"{"hook": "pre-commit", "staged": [{"path": "a.txt", "bytes": 3}], "expect": "allow"}"#,
    )
    .unwrap();
    let out = repo.chock(&["sync"]);
    assert!(out.status.success(), "{}", text(&out));
    let out = repo.chock(&["check"]);
    assert!(out.status.success(), "{}", text(&out));

    std::fs::write(repo.project.join("a.txt"), "hi\n").unwrap();
    repo.git(&repo.project, &["add", "a.txt"]);
    let out = repo
        .command("git", &repo.project)
        .args(["commit", "-qm", "small"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "a small file is committed: {}",
        text(&out)
    );

    std::fs::write(repo.project.join("big.bin"), vec![0u8; 6 << 20]).unwrap();
    repo.git(&repo.project, &["add", "big.bin"]);
    let out = repo
        .command("git", &repo.project)
        .args(["commit", "-qm", "big"])
        .output()
        .unwrap();
    assert!(!out.status.success(), "a 6 MiB file is refused");
    assert!(
        text(&out).contains("a staged file is over 5 MB"),
        "{}",
        text(&out)
    );
    assert!(text(&out).contains("`max-5mb`"), "{}", text(&out));
    let log = repo.out_of_log("guard.max-5mb");
    assert_eq!(log.len(), 2, "{log:?}");
    let refused = &log[1];
    assert_eq!(refused["route"], "git");
    assert_eq!(refused["tool"], "pre-commit");
    assert_eq!(refused["decision"], "deny");
    assert_eq!(refused["decided_by"]["layer"], "policy");
    assert_eq!(refused["decided_by"]["policy"], "max-5mb");
    // The guard's reason is told, never logged: a line holds no contents.
    assert_eq!(refused["subject"], Value::Null, "{refused}");
    // The rules' own act is a line too.
    assert!(
        repo.out_of_log("git.commit").len() >= 2,
        "{:?}",
        repo.log_lines()
    );
}

impl Repo {
    fn out_of_log(&self, action: &str) -> Vec<Value> {
        self.log_lines()
            .into_iter()
            .filter(|l| l["action"] == action)
            .collect()
    }
}

#[test]
fn a_guard_that_hangs_fails_overreaches_or_answers_garbage_is_a_deny() {
    let repo = Repo::new();
    // A guard that reached a server on the host's loopback would answer
    // allow; in its own network namespace it cannot.
    let server = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    server.set_nonblocking(true).unwrap();
    let port = server.local_addr().unwrap().port();
    let reach = format!(
        "#!/usr/bin/python3\nimport json, socket\ntry:\n    socket.create_connection(('127.0.0.1', {port}), timeout=0.3)\n    print(json.dumps({{'decision': 'allow'}}))\nexcept OSError as e:\n    print(json.dumps({{'decision': 'deny', 'reason': 'no network here: ' + str(e)}}))\n"
    );
    let cases = [
        (
            "hangs",
            "#!/bin/sh\nexec sleep 60\n",
            "no answer within its bound of 700 ms",
        ),
        (
            "fails",
            "#!/bin/sh\necho broken >&2\nexit 3\n",
            "failed (exit 3): broken",
        ),
        (
            "garbage",
            "#!/bin/sh\necho 'yes please'\n",
            "did not answer",
        ),
        ("network", reach.as_str(), "no network here"),
        (
            "greedy",
            "#!/usr/bin/python3\nb = bytearray(1 << 30)\nprint('{\"decision\": \"allow\"}')\n",
            "passed its memory bound of 268435456 bytes",
        ),
    ];
    for (id, script, _) in cases {
        write_package(&repo.package(id), "\"tool\"", "", Some((script, 700)));
    }
    let started = Instant::now();
    let out = repo.hook("claude", &repo.payload("claude/bash-cargo-test.json"));
    let took = started.elapsed();
    assert!(
        took < Duration::from_secs(20),
        "the hung guard was bounded: {took:?}"
    );
    let reply: Value =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|_| panic!("{}", text(&out)));
    assert_eq!(
        reply["hookSpecificOutput"]["permissionDecision"], "deny",
        "{reply}"
    );
    for (id, _, why) in cases {
        let lines = repo.out_of_log(&format!("guard.{id}"));
        assert_eq!(lines.len(), 1, "{id}: {lines:?}");
        assert_eq!(lines[0]["decision"], "deny", "{id}");
        assert_eq!(lines[0]["decided_by"]["policy"], id);
        // Chock's account of a failed guard is logged; a guard's own
        // reason (the network case's answer) is not.
        match id {
            "network" => assert_eq!(lines[0]["subject"], Value::Null, "{id}"),
            _ => {
                let subject = lines[0]["subject"].as_str().unwrap();
                assert!(subject.contains(why), "{id}: {subject}");
            }
        }
    }
    assert!(
        server.accept().is_err(),
        "no guard reached the host's loopback"
    );
}

#[test]
fn a_catalog_in_git_is_installed_pinned_verified_and_a_change_is_a_diff_first() {
    let repo = Repo::new();
    let catalog = repo.root.join("catalog");
    std::fs::create_dir_all(&catalog).unwrap();
    repo.git(&catalog, &["init", "-q", "-b", "main"]);
    let upstream = catalog.join("policies/no-force");
    write_package(
        &upstream,
        "\"pre-push\"",
        ".{ .action = \"git.push\", .agent_kind = \"git\", .decision = .deny }",
        None,
    );
    std::fs::write(
        upstream.join("evals/push.json"),
        r#"{"hook": "pre-push", "args": ["origin"], "expect": "deny"}"#,
    )
    .unwrap();
    repo.git(&catalog, &["add", "."]);
    repo.git(&catalog, &["commit", "-qm", "no-force 1"]);
    let first = String::from_utf8(repo.git(&catalog, &["rev-parse", "HEAD"]).stdout).unwrap();
    // Relative to the project, as a lock committed with it means it.
    let spec = "../catalog#no-force".to_owned();

    let out = repo.chock(&["install", &spec]);
    assert!(out.status.success(), "{}", text(&out));
    let lock = std::fs::read_to_string(repo.project.join("chock.lock")).unwrap();
    assert!(lock.contains(first.trim()), "the commit is pinned: {lock}");
    assert!(lock.contains("sha256:"), "{lock}");
    let out = repo.chock(&["check", "--only", "verify,evals"]);
    assert!(out.status.success(), "{}", text(&out));

    // A file changed after the install is caught, and `chock install` puts it back.
    let manifest = repo.package("no-force").join("manifest.zon");
    let original = std::fs::read_to_string(&manifest).unwrap();
    std::fs::write(
        &manifest,
        original.replace(".decision = .deny", ".decision = .allow"),
    )
    .unwrap();
    let out = repo.chock(&["check", "--only", "verify"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(
        text(&out).contains("a file was changed after the install"),
        "{}",
        text(&out)
    );
    let out = repo.chock(&["install"]);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(std::fs::read_to_string(&manifest).unwrap(), original);
    assert!(repo.chock(&["check", "--only", "verify"]).status.success());

    // An upstream change is shown as a diff and replaces nothing unasked.
    let up = upstream.join("manifest.zon");
    std::fs::write(
        &up,
        std::fs::read_to_string(&up)
            .unwrap()
            .replace("1.0.0", "1.1.0"),
    )
    .unwrap();
    repo.git(&catalog, &["commit", "-qam", "no-force 1.1"]);
    let out = repo.chock(&["install", &spec]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(
        text(&out).contains("--- installed/manifest.zon\n+++ upstream/manifest.zon\n")
            && text(&out).contains("-    .version = \"1.0.0\","),
        "{}",
        text(&out)
    );
    assert!(
        text(&out).contains("+    .version = \"1.1.0\","),
        "{}",
        text(&out)
    );
    assert_eq!(std::fs::read_to_string(&manifest).unwrap(), original);
    assert_eq!(
        std::fs::read_to_string(repo.project.join("chock.lock")).unwrap(),
        lock
    );
    let out = repo.chock(&["install", &spec, "--yes"]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        std::fs::read_to_string(&manifest)
            .unwrap()
            .contains("1.1.0")
    );
    assert!(
        !std::fs::read_to_string(repo.project.join("chock.lock"))
            .unwrap()
            .contains(first.trim())
    );

    // The witness carries the log head, the verify result and the lock's hashes.
    let out = repo.chock(&["witness", "export"]);
    assert!(out.status.success(), "{}", text(&out));
    let witness: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(witness["verify"]["status"], "passed");
    assert_eq!(witness["lock"][0]["id"], "no-force");
    assert!(
        witness["lock"][0]["hash"]
            .as_str()
            .unwrap()
            .starts_with("sha256:")
    );
}

#[test]
fn the_kept_head_is_confirmed_and_an_edited_line_breaks_it() {
    let repo = Repo::new();
    write_package(
        &repo.package("ask-push"),
        "\"tool\"",
        ".{ .action = \"git.push\", .decision = .ask }",
        None,
    );
    for _ in 0..3 {
        repo.hook("claude", &repo.payload("claude/bash-cargo-test.json"));
    }
    let out = repo.chock(&["witness", "export"]);
    let witness: Value =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|_| panic!("{}", text(&out)));
    let head = witness["log"]["head"].as_str().unwrap().to_owned();
    assert_eq!(witness["log"]["intact"], true);
    let out = repo.chock(&["status", "--verify-log", "--head", &head]);
    assert!(out.status.success(), "{}", text(&out));
    let log = repo.state.join("log/decisions.jsonl");
    let edited = std::fs::read_to_string(&log)
        .unwrap()
        .replacen("\"allow\"", "\"deny\"", 1);
    std::fs::write(&log, edited).unwrap();
    let out = repo.chock(&["status", "--verify-log", "--head", &head]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
}

#[test]
fn a_conflict_between_two_policies_is_reported_with_both_places() {
    let repo = Repo::new();
    write_package(
        &repo.package("a-allows"),
        "\"tool\"",
        ".{ .action = \"git.push\", .decision = .allow }",
        None,
    );
    write_package(
        &repo.package("b-denies"),
        "\"tool\"",
        ".{ .action = \"git.push\", .decision = .deny }",
        None,
    );
    let out = repo.chock(&["check", "--only", "conflicts"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let shown = text(&out);
    assert!(shown.contains("policy `a-allows`"), "{shown}");
    assert!(shown.contains("policy `b-denies`"), "{shown}");
    assert!(shown.contains("a-allows/manifest.zon:6"), "{shown}");
    assert!(shown.contains("b-denies/manifest.zon:6"), "{shown}");
    assert!(shown.contains("fix: keep one answer"), "{shown}");
}

#[test]
fn a_rule_change_shows_as_a_baseline_diff() {
    let repo = Repo::new();
    let dir = repo.package("careful");
    write_package(
        &dir,
        "\"tool\"",
        ".{ .action = \"git.push\", .decision = .ask }",
        None,
    );
    // The decision log's calls join the sample.
    let out = repo.hook("claude", &repo.payload("claude/bash-cargo-test.json"));
    assert!(out.status.success());
    let out = repo.chock(&["check", "--record-baseline"]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        repo.chock(&["check", "--only", "baseline"])
            .status
            .success()
    );
    let manifest = dir.join("manifest.zon");
    std::fs::write(
        &manifest,
        std::fs::read_to_string(&manifest)
            .unwrap()
            .replace(".ask", ".deny"),
    )
    .unwrap();
    let out = repo.chock(&["check", "--only", "baseline"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let shown = text(&out);
    assert!(shown.contains("git.push (main)"), "{shown}");
    assert!(shown.contains("- ask by policy careful"), "{shown}");
    assert!(shown.contains("+ deny by policy careful"), "{shown}");
}

#[test]
fn a_bad_manifest_names_its_line_and_the_later_stages_wait() {
    let repo = Repo::new();
    let dir = repo.package("typo");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("manifest.zon"),
        ".{\n    .id = \"typo\",\n    .version = \"1\",\n    .summary = \"s\",\n    .hooks = .{ \"pre-comit\" },\n}\n",
    )
    .unwrap();
    let out = repo.chock(&["check", "--only", "validate,evals"]);
    assert_eq!(out.status.code(), Some(1));
    let shown = text(&out);
    assert!(shown.contains("typo/manifest.zon:5:"), "{shown}");
    assert!(shown.contains("is no hook point"), "{shown}");
    assert!(shown.contains("evals      skipped"), "{shown}");
    // The hook refuses rather than run without the policy.
    let out = repo.hook("claude", &repo.payload("claude/bash-cargo-test.json"));
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains("typo/manifest.zon:5:"),
        "{}",
        text(&out)
    );
}

#[test]
fn matrix_mechanisms_and_index_say_what_is_not_enforced_and_ci_logs_as_ci() {
    let repo = Repo::new();
    write_package(
        &repo.package("ask-push"),
        "\"tool\", \"ci\"",
        ".{ .action = \"git.push\", .decision = .ask }",
        None,
    );
    let guarded = repo.package("no-commit");
    write_package(
        &guarded,
        "\"pre-commit\", \"ci\"",
        "",
        Some((
            "#!/bin/sh\necho '{\"decision\": \"deny\", \"reason\": \"frozen\"}'\n",
            5000,
        )),
    );
    let out = repo.chock(&["sync", "--agents", "claude,codex"]);
    assert!(out.status.success(), "{}", text(&out));
    let out = repo.chock(&["check", "--json", "--only", "matrix,mechanisms"]);
    let report: Value =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|_| panic!("{}", text(&out)));
    let stage = |name: &str| {
        report["stages"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["stage"] == name)
            .unwrap()
            .clone()
    };
    let matrix = stage("matrix").to_string();
    assert!(
        matrix.contains("ask-push at tool: claude enforced")
            && matrix.contains("codex enforced; cannot ask, so an ask is a deny")
            && matrix.contains("cursor not wired")
            && matrix.contains("ask-push at ci: not wired"),
        "{matrix}"
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let mechanisms = stage("mechanisms").to_string();
    assert!(
        mechanisms.contains("no CI workflow runs Chock") && mechanisms.contains("chock sync --ci"),
        "{mechanisms}"
    );

    let out = repo.chock(&["sync", "--ci", "--agents", "claude,codex"]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        repo.chock(&["check", "--only", "mechanisms"])
            .status
            .success()
    );
    std::fs::set_permissions(
        guarded.join("guard.sh"),
        std::os::unix::fs::PermissionsExt::from_mode(0o644),
    )
    .unwrap();
    let out = repo.chock(&["check", "--only", "mechanisms"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(
        text(&out).contains("is not an executable file") && text(&out).contains("chmod +x"),
        "{}",
        text(&out)
    );
    std::fs::set_permissions(
        guarded.join("guard.sh"),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();

    // The CI gate's run of pre-commit over a commit made past the hook:
    // the guard's deny is a line of route ci.
    repo.git(&repo.project, &["add", "."]);
    repo.git(
        &repo.project,
        &["commit", "-q", "--no-verify", "-m", "start"],
    );
    std::fs::write(repo.project.join("a.txt"), "a\n").unwrap();
    repo.git(&repo.project, &["add", "a.txt"]);
    repo.git(&repo.project, &["commit", "-q", "--no-verify", "-m", "a"]);
    let out = repo.chock(&["hook", "pre-commit", "--ci", "--base", "HEAD~1"]);
    assert!(!out.status.success(), "{}", text(&out));
    let lines = repo.out_of_log("guard.no-commit");
    let last = lines.last().expect("a guard line");
    assert_eq!(
        (
            &last["route"],
            &last["decision"],
            &last["decided_by"]["policy"]
        ),
        (
            &Value::from("ci"),
            &Value::from("deny"),
            &Value::from("no-commit")
        ),
        "{last}"
    );

    // An index over its budget is a failed stage naming the setting.
    std::fs::write(
        repo.project.join("chock.zon"),
        ".{ .index = .{ .max_tokens = 5 } }\n",
    )
    .unwrap();
    let out = repo.chock(&["check", "--only", "index"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(text(&out).contains("max_tokens"), "{}", text(&out));
}

#[test]
fn a_catalog_that_is_a_plain_folder_is_installed_with_no_commit_and_reinstalled_from_the_lock() {
    let repo = Repo::new();
    let catalog = repo.root.join("folder-catalog");
    write_package(
        &catalog.join("ask-push"),
        "\"tool\"",
        ".{ .action = \"git.push\", .decision = .ask }",
        None,
    );
    let out = repo.chock(&["install", "../folder-catalog#ask-push"]);
    assert!(out.status.success(), "{}", text(&out));
    let lock = std::fs::read_to_string(repo.project.join("chock.lock")).unwrap();
    assert!(
        lock.contains("../folder-catalog")
            && lock.contains("sha256:")
            && lock.contains(".commit = \"\""),
        "{lock}"
    );
    std::fs::remove_dir_all(repo.package("ask-push")).unwrap();
    let out = repo.chock(&["install"]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(repo.package("ask-push").join("manifest.zon").is_file());
    assert!(repo.chock(&["check", "--only", "verify"]).status.success());
}

/// `chock install ../catalog#./../../src --yes` once replaced the project's
/// `src/`; a `chock.lock` naming such an id did the same on a plain
/// `chock install`, and a link planted at `.agents/policies/<id>` was
/// written through. Each is refused now, and `src/` and the folder the
/// link points at are left as they were.
#[test]
fn an_id_that_climbs_out_or_a_planted_link_is_refused_and_src_survives() {
    let repo = Repo::new();
    let src = repo.project.join("src");
    std::fs::create_dir_all(&src).unwrap();
    std::fs::write(src.join("main.rs"), "fn main() {}\n").unwrap();
    let outside = repo.root.join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    for id in ["src", "x"] {
        write_package(
            &repo.root.join("catalog").join(id),
            "\"tool\"",
            ".{ .action = \"git.push\", .decision = .ask }",
            None,
        );
    }
    let intact = || {
        assert_eq!(
            std::fs::read_to_string(src.join("main.rs")).ok().as_deref(),
            Some("fn main() {}\n"),
            "src/ was replaced"
        );
        assert_eq!(
            std::fs::read_dir(&outside).unwrap().count(),
            0,
            "written outside"
        );
    };
    for spec in [
        "../catalog#./../../src",
        "../catalog#../src",
        "../catalog#a/b",
        "../catalog#..",
    ] {
        let out = repo.chock(&["install", spec, "--yes"]);
        assert_eq!(out.status.code(), Some(1), "{spec}: {}", text(&out));
        assert!(text(&out).contains("is not a policy id"), "{}", text(&out));
        intact();
    }
    let out = repo.chock(&["new", "policy", "../../src"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    intact();
    std::fs::write(
        repo.project.join("chock.lock"),
        ".{\n    .version = 1,\n    .policies = .{\n        .{ .id = \"./../../src\", .source = \"../catalog\", .hash = \"sha256:0\" },\n    },\n}\n",
    )
    .unwrap();
    let out = repo.chock(&["install", "--yes"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(text(&out).contains("chock.lock:4:18:"), "{}", text(&out));
    intact();
    std::fs::remove_file(repo.project.join("chock.lock")).unwrap();
    std::fs::create_dir_all(repo.project.join(".agents/policies")).unwrap();
    std::os::unix::fs::symlink(&outside, repo.package("x")).unwrap();
    let out = repo.chock(&["install", "../catalog#x", "--yes"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(
        text(&out).contains("is a symbolic link or not a folder"),
        "{}",
        text(&out)
    );
    intact();
    std::fs::remove_file(repo.package("x")).unwrap();
    let out = repo.chock(&["install", "../catalog#x", "--yes"]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(repo.package("x").join("manifest.zon").is_file());
    intact();
}

/// Denies a change whose files hold `SECRET`, reading each file's content
/// by its blob; a blob git cannot show is a deny.
const NO_SECRET_GUARD: &str = r#"#!/bin/sh
call=$(cat)
for blob in $(printf '%s' "$call" | grep -o '"blob":"[0-9a-f]*"' | cut -d'"' -f4); do
  content=$(git cat-file -p "$blob") || { echo '{"decision": "deny", "reason": "unreadable"}'; exit 0; }
  case $content in *SECRET*) echo '{"decision": "deny", "reason": "a file holds a secret"}'; exit 0;; esac
done
echo '{"decision": "allow"}'
"#;

/// A fresh clone of `remote` at `branch` in `dir`, as CI checks one out.
fn clone_at(repo: &Repo, remote: &Path, dir: &str, branch: &str, depth: Option<&str>) -> PathBuf {
    let to = repo.root.join(dir);
    let url = format!("file://{}", remote.display());
    let mut args = vec!["clone", "-q", "--branch", branch];
    if let Some(depth) = depth {
        args.extend(["--depth", depth]);
    }
    args.extend([url.as_str(), to.to_str().unwrap()]);
    repo.git(&repo.root, &args);
    to
}

#[test]
fn the_ci_gate_judges_every_commit_of_the_pull_request_in_a_fresh_clone() {
    let repo = Repo::new();
    let dir = repo.package("max-5mb");
    write_package(
        &dir,
        "\"pre-commit\", \"ci\"",
        "",
        Some((MAX_5MB_GUARD, 5000)),
    );
    // Its case at `ci` reads staged files as the CI gate's run of a commit does.
    std::fs::write(
        dir.join("evals/ci-big.json"),
        r#"{"hook": "ci", "staged": [{"path": "big.bin", "bytes": 6000000}], "expect": "deny"}"#,
    )
    .unwrap();
    let out = repo.chock(&["check", "--only", "evals"]);
    assert!(out.status.success(), "{}", text(&out));
    write_package(
        &repo.package("no-secret"),
        "\"ci\"",
        "",
        Some((NO_SECRET_GUARD, 5000)),
    );
    let out = repo.chock(&["sync", "--ci"]);
    assert!(out.status.success(), "{}", text(&out));
    let workflow =
        std::fs::read_to_string(repo.project.join(".github/workflows/chock.yml")).unwrap();
    assert!(workflow.contains("run: chock check --ci\n"), "{workflow}");
    std::fs::write(repo.project.join("a.txt"), "a\n").unwrap();
    repo.git(&repo.project, &["add", "."]);
    repo.git(&repo.project, &["commit", "-qm", "start"]);
    let remote = repo.root.join("remote.git");
    repo.git(
        &repo.root,
        &[
            "init",
            "-q",
            "--bare",
            "-b",
            "main",
            remote.to_str().unwrap(),
        ],
    );
    repo.git(
        &repo.project,
        &["remote", "add", "origin", remote.to_str().unwrap()],
    );
    repo.git(
        &repo.project,
        &["push", "-q", "--no-verify", "origin", "main"],
    );

    // An agent's clone: a 6 MiB file committed past the hook, then taken
    // out again, so the pull request's head holds no large file.
    let work = clone_at(&repo, &remote, "work", "main", None);
    repo.git(&work, &["checkout", "-q", "-b", "big"]);
    std::fs::write(work.join("big.bin"), vec![1u8; 6 << 20]).unwrap();
    std::fs::write(work.join("key.txt"), "SECRET\n").unwrap();
    repo.git(&work, &["add", "big.bin", "key.txt"]);
    repo.git(&work, &["commit", "-q", "--no-verify", "-m", "big"]);
    let big = String::from_utf8(repo.git(&work, &["rev-parse", "HEAD"]).stdout).unwrap();
    let big = big.trim();
    repo.git(&work, &["rm", "-q", "big.bin"]);
    std::fs::write(work.join("key.txt"), "none\n").unwrap();
    repo.git(&work, &["add", "key.txt"]);
    repo.git(&work, &["commit", "-q", "--no-verify", "-m", "gone again"]);
    repo.git(&work, &["push", "-q", "--no-verify", "origin", "big"]);
    repo.git(&work, &["checkout", "-q", "-b", "small", "main"]);
    std::fs::write(work.join("b.txt"), "b\n").unwrap();
    repo.git(&work, &["add", "b.txt"]);
    repo.git(&work, &["commit", "-q", "--no-verify", "-m", "small"]);
    repo.git(&work, &["push", "-q", "--no-verify", "origin", "small"]);

    let gate = |clone: &Path, args: &[&str], vars: &[(&str, &str)]| {
        let mut command = repo.command(chock_bin(), clone);
        command.args(["hook", "pre-commit", "--ci"]).args(args);
        for (name, value) in vars {
            command.env(name, value);
        }
        command.stdin(Stdio::null()).output().unwrap()
    };

    // CI's fresh clone of the pull request: nothing is staged there, and
    // the gate still reads the commit the hook was skipped for.
    let ci = clone_at(&repo, &remote, "ci-big", "big", None);
    assert!(!ci.join("big.bin").exists());
    // A fresh clone has no git hooks: the workflow's `chock check --ci`
    // does not ask for them, a plain `chock check` does.
    let mechanisms = |extra: &[&str]| {
        repo.command(chock_bin(), &ci)
            .args(["check", "--only", "mechanisms"])
            .args(extra)
            .stdin(Stdio::null())
            .output()
            .unwrap()
    };
    let out = mechanisms(&[]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(
        text(&out).contains("the git pre-commit hook does not run Chock"),
        "{}",
        text(&out)
    );
    let out = mechanisms(&["--ci"]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        text(&out).contains("git hooks are not checked in CI"),
        "{}",
        text(&out)
    );
    let out = gate(&ci, &["--base", "origin/main"], &[]);
    assert_eq!(out.status.code(), Some(3), "refused: {}", text(&out));
    assert!(
        text(&out).contains("a staged file is over 5 MB"),
        "{}",
        text(&out)
    );
    assert!(text(&out).contains(big), "names the commit: {}", text(&out));
    let line = repo
        .out_of_log("guard.max-5mb")
        .into_iter()
        .find(|l| l["decision"] == "deny")
        .expect("the guard's deny is logged");
    assert_eq!(line["route"], "ci", "{line}");
    assert_eq!(line["tool"], "pre-commit", "{line}");
    assert_eq!(line["subject"].as_str(), Some(big), "{line}");
    // The content of that commit is what a guard reads, by its blob.
    let secret: Vec<Value> = repo
        .out_of_log("guard.no-secret")
        .into_iter()
        .filter(|l| l["decision"] == "deny")
        .collect();
    assert_eq!(
        secret.len(),
        1,
        "only the first commit holds it: {secret:?}"
    );
    assert!(
        secret[0]["subject"].as_str().unwrap().contains(big),
        "{secret:?}"
    );
    // The rules' own act is logged beside the guard that decided.
    assert!(
        repo.out_of_log("git.commit")
            .iter()
            .any(|l| l["route"] == "ci"),
        "{:?}",
        repo.log_lines()
    );

    // GitHub's variables name the base: its event file first, then the ref.
    let main = String::from_utf8(repo.git(&ci, &["rev-parse", "origin/main"]).stdout).unwrap();
    let event = repo.root.join("event.json");
    std::fs::write(
        &event,
        format!(
            r#"{{"pull_request": {{"base": {{"sha": "{}"}}}}}}"#,
            main.trim()
        ),
    )
    .unwrap();
    let out = gate(&ci, &[], &[("GITHUB_EVENT_PATH", event.to_str().unwrap())]);
    assert_eq!(out.status.code(), Some(3), "refused: {}", text(&out));
    assert!(text(&out).contains("over 5 MB"), "{}", text(&out));
    let out = gate(&ci, &[], &[("GITHUB_BASE_REF", "main")]);
    assert_eq!(out.status.code(), Some(3), "refused: {}", text(&out));
    assert!(text(&out).contains("over 5 MB"), "{}", text(&out));
    std::fs::write(&event, "{not json").unwrap();
    let out = gate(&ci, &[], &[("GITHUB_EVENT_PATH", event.to_str().unwrap())]);
    assert_eq!(out.status.code(), Some(3), "refused: {}", text(&out));
    assert!(
        text(&out).contains("event.json (GITHUB_EVENT_PATH)"),
        "{}",
        text(&out)
    );

    // No base named, or a base the clone does not have: refused, saying what to do.
    let out = gate(&ci, &[], &[]);
    assert_eq!(out.status.code(), Some(3), "refused: {}", text(&out));
    assert!(text(&out).contains("--base REF"), "{}", text(&out));
    let shallow = clone_at(&repo, &remote, "ci-shallow", "big", Some("1"));
    let out = gate(&shallow, &["--base", "origin/main"], &[]);
    assert_eq!(out.status.code(), Some(3), "refused: {}", text(&out));
    assert!(text(&out).contains("fetch-depth: 0"), "{}", text(&out));

    // A pull request of small commits passes the same gate, and the push's.
    let ci = clone_at(&repo, &remote, "ci-small", "small", None);
    let out = gate(&ci, &["--base", "origin/main"], &[]);
    assert!(out.status.success(), "{}", text(&out));
    let out = repo
        .command(chock_bin(), &ci)
        .args(["hook", "pre-push", "--ci", "--base", "origin/main"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
}

#[test]
fn explain_advises_a_rule_that_raises_a_package_deny_or_says_it_is_a_ceiling() {
    let repo = Repo::new();
    let dir = repo.package("no-push");
    write_package(
        &dir,
        "\"pre-push\"",
        ".{ .action = \"git.push\", .decision = .deny }",
        None,
    );
    let explain = |repo: &Repo| {
        text(&repo.chock(&[
            "policy",
            "explain",
            "git.push",
            "--agent-kind",
            "git",
            "--tool",
            "pre-push",
        ]))
    };
    let shown = explain(&repo);
    assert!(shown.contains("git.push: deny"), "{shown}");
    let advised = shown
        .lines()
        .skip_while(|l| !l.contains("to allow it, add to"))
        .nth(1)
        .unwrap_or_else(|| panic!("no advice: {shown}"))
        .trim()
        .trim_end_matches(',')
        .to_owned();
    // Written where it says, the advice changes the answer.
    std::fs::write(
        repo.project.join("chock.zon"),
        format!(".{{ .policy = .{{ .rules = .{{ {advised} }} }} }}\n"),
    )
    .unwrap();
    let shown = explain(&repo);
    assert!(shown.contains("git.push: allow"), "{advised}: {shown}");

    // A package rule as specific as the call: no rule raises it, and
    // explain says so and how to remove the package.
    write_package(
        &dir,
        "\"pre-push\"",
        ".{ .action = \"git.push\", .tool = \"pre-push\", .agent_kind = \"git\", .decision = .deny }",
        None,
    );
    std::fs::write(
        repo.project.join("chock.zon"),
        ".{ .policy = .{ .rules = .{ .{ .action = \"git.push\", .tool = \"pre-push\", .agent_kind = \"git\", .decision = .allow } } } }\n",
    )
    .unwrap();
    let shown = explain(&repo);
    assert!(shown.contains("git.push: deny"), "{shown}");
    assert!(!shown.contains("to allow it, add to"), "{shown}");
    assert!(
        shown.contains("`no-push` is a ceiling here") && shown.contains("`chock remove no-push`"),
        "{shown}"
    );
}

#[test]
fn remove_disable_and_enable_keep_the_lock_true_and_a_mandatory_policy_stays() {
    let repo = Repo::new();
    let catalog = repo.root.join("catalog");
    std::fs::create_dir_all(&catalog).unwrap();
    repo.git(&catalog, &["init", "-q", "-b", "main"]);
    write_package(
        &catalog.join("policies/no-force"),
        "\"pre-push\"",
        ".{ .action = \"git.push\", .agent_kind = \"git\", .decision = .deny }",
        None,
    );
    repo.git(&catalog, &["add", "."]);
    repo.git(&catalog, &["commit", "-qm", "no-force"]);
    let out = repo.chock(&["install", "../catalog#no-force"]);
    assert!(out.status.success(), "{}", text(&out));
    let decided = |repo: &Repo| {
        text(&repo.chock(&[
            "policy",
            "explain",
            "git.push",
            "--agent-kind",
            "git",
            "--tool",
            "pre-push",
        ]))
    };
    let lock = || std::fs::read_to_string(repo.project.join("chock.lock")).unwrap();
    let verified = |repo: &Repo| {
        let out = repo.chock(&["check", "--only", "verify"]);
        assert!(out.status.success(), "{}", text(&out));
        text(&out)
    };
    assert!(decided(&repo).contains("git.push: deny"));

    // Disabled: out of force, kept, the lock saying so; verify and a
    // reinstall from the lock keep it where it waits.
    let out = repo.chock(&["disable", "no-force"]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(!repo.package("no-force").exists());
    let waiting = repo.project.join(".agents/policies/.disabled/no-force");
    assert!(waiting.join("manifest.zon").is_file());
    assert!(lock().contains(".disabled = true"), "{}", lock());
    assert!(
        decided(&repo).contains("git.push: ask"),
        "{}",
        decided(&repo)
    );
    assert!(verified(&repo).contains("no-force: sha256:"));
    let out = repo.chock(&["install"]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(!repo.package("no-force").exists());
    let out = repo.chock(&["install", "../catalog#no-force"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(
        text(&out).contains("chock enable no-force"),
        "{}",
        text(&out)
    );
    let out = repo.chock(&["disable", "no-force"]);
    assert!(text(&out).contains("unchanged no-force"), "{}", text(&out));

    let out = repo.chock(&["enable", "no-force"]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(repo.package("no-force").join("manifest.zon").is_file());
    assert!(!lock().contains("disabled"), "{}", lock());
    assert!(decided(&repo).contains("git.push: deny"));
    verified(&repo);

    // Mandatory under the organisation's bundle: a project cannot take it
    // out, and one taken out by hand stops the policy loading.
    let bundle = repo.home.join(".local/share/chock/org-policy.zon");
    std::fs::create_dir_all(bundle.parent().unwrap()).unwrap();
    std::fs::write(&bundle, ".{ .mandatory_policies = .{ \"no-force\" } }\n").unwrap();
    for verb in ["disable", "remove"] {
        let out = repo.chock(&[verb, "no-force"]);
        assert_eq!(out.status.code(), Some(1), "{verb}: {}", text(&out));
        assert!(
            text(&out).contains("is mandatory under the organisation's bundle")
                && text(&out).contains("org-policy.zon"),
            "{verb}: {}",
            text(&out)
        );
        assert!(repo.package("no-force").join("manifest.zon").is_file());
    }
    let aside = repo.root.join("no-force-aside");
    std::fs::rename(repo.package("no-force"), &aside).unwrap();
    let out = repo
        .command(chock_bin(), &repo.project)
        .args(["hook", "pre-commit"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    assert!(
        text(&out).contains("makes the policy `no-force` mandatory"),
        "{}",
        text(&out)
    );
    std::fs::rename(&aside, repo.package("no-force")).unwrap();
    std::fs::remove_file(&bundle).unwrap();

    // Removed: its folder and its lock entry.
    let out = repo.chock(&["remove", "no-force"]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(!repo.package("no-force").exists());
    assert!(!lock().contains("no-force"), "{}", lock());
    verified(&repo);
    let out = repo.chock(&["remove", "no-force"]);
    assert!(text(&out).contains("unchanged no-force"), "{}", text(&out));
}

#[test]
fn search_and_info_read_a_catalog_and_info_shows_what_install_pins() {
    let repo = Repo::new();
    let catalog = repo.root.join("catalog");
    std::fs::create_dir_all(&catalog).unwrap();
    repo.git(&catalog, &["init", "-q", "-b", "main"]);
    write_package(
        &catalog.join("policies/no-force"),
        "\"pre-push\"",
        ".{ .action = \"git.push\", .agent_kind = \"git\", .decision = .deny }",
        None,
    );
    write_package(
        &catalog.join(".agents/policies/max-5mb"),
        "\"pre-commit\", \"ci\"",
        "",
        Some((MAX_5MB_GUARD, 5000)),
    );
    std::fs::write(
        catalog.join(".agents/policies/max-5mb/evals/big.json"),
        r#"{"hook": "pre-commit", "staged": [{"path": "big.bin", "bytes": 6000000}], "expect": "deny"}"#,
    )
    .unwrap();
    repo.git(&catalog, &["add", "."]);
    repo.git(&catalog, &["commit", "-qm", "two policies"]);

    let out = repo.chock(&["search", "--catalog", "../catalog"]);
    assert!(out.status.success(), "{}", text(&out));
    let listed = text(&out);
    assert!(
        listed.contains("max-5mb 1.0.0  test policy max-5mb  (pre-commit, ci)")
            && listed.contains("no-force 1.0.0  test policy no-force  (pre-push)"),
        "{listed}"
    );
    let out = repo.chock(&["search", "NO-FORCE", "--catalog", "../catalog"]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        text(&out).contains("no-force") && !text(&out).contains("max-5mb 1.0.0"),
        "{}",
        text(&out)
    );
    let out = repo.chock(&["search", "kubernetes", "--catalog", "../catalog"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));

    let out = repo.chock(&["info", "../catalog#max-5mb"]);
    assert!(out.status.success(), "{}", text(&out));
    let shown = text(&out);
    assert!(
        shown.contains("hooks:    pre-commit, ci")
            && shown.contains("guard:    guard.sh (at most 5000 ms")
            && shown.contains("evals:    1 cases"),
        "{shown}"
    );
    let out = repo.chock(&["info", "../catalog#no-force"]);
    let shown = text(&out);
    assert!(
        shown.contains(
            r#"rule:     .{ .agent_kind = "git", .action = "git.push", .decision = .deny }"#
        ),
        "{shown}"
    );
    let hash = shown
        .lines()
        .find_map(|l| l.trim().strip_prefix("content:  "))
        .unwrap()
        .to_owned();
    let json = |args: &[&str]| {
        let out = repo.chock(args);
        let value: serde_json::Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("chock {args:?} printed no JSON ({e}): {}", text(&out)));
        (out.status.code(), value)
    };
    let (code, found) = json(&["search", "no-force", "--catalog", "../catalog", "--json"]);
    assert_eq!(code, Some(0), "{found}");
    assert_eq!(found["found"][0]["id"], "no-force", "{found}");
    assert_eq!(
        found["found"][0]["hooks"],
        serde_json::json!(["pre-push"]),
        "{found}"
    );
    let (code, found) = json(&["search", "kubernetes", "--catalog", "../catalog", "--json"]);
    assert_eq!(
        (code, &found["found"]),
        (Some(1), &serde_json::json!([])),
        "{found}"
    );
    let (code, info) = json(&["info", "../catalog#no-force", "--json"]);
    assert_eq!(
        (code, info["content"].as_str()),
        (Some(0), Some(hash.as_str())),
        "{info}"
    );
    assert_eq!(
        info["rules"][0], r#".{ .agent_kind = "git", .action = "git.push", .decision = .deny }"#,
        "{info}"
    );
    let (code, installed) = json(&["install", "../catalog#no-force", "--json"]);
    assert_eq!(code, Some(0), "{installed}");
    assert_eq!(
        (
            &installed["installed"][0]["id"],
            &installed["installed"][0]["done"]
        ),
        (&"no-force".into(), &"installed".into()),
        "{installed}"
    );
    assert_eq!(
        installed["installed"][0]["hash"].as_str(),
        Some(hash.as_str())
    );
    let lock = std::fs::read_to_string(repo.project.join("chock.lock")).unwrap();
    assert!(lock.contains(&hash), "{hash}: {lock}");
    for (verb, done, changed) in [
        ("disable", "disabled", true),
        ("disable", "disabled", false),
        ("enable", "enabled", true),
    ] {
        let (code, managed) = json(&[verb, "no-force", "--json"]);
        assert_eq!(
            (code, &managed["done"], &managed["changed"]),
            (Some(0), &done.into(), &changed.into()),
            "{verb}: {managed}"
        );
    }
    let out = repo.chock(&["info", "../catalog#nope"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(
        text(&out).contains("holds no policy `nope`"),
        "{}",
        text(&out)
    );
}

/// Swaps two names in one folder back and forth with
/// renameat2(RENAME_EXCHANGE) until it is killed or has swapped `count`
/// times.
const SWAPPER: &str = r#"
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
AT_FDCWD, RENAME_EXCHANGE = -100, 2
os.chdir(sys.argv[1])
a, b = sys.argv[2].encode(), sys.argv[3].encode()
print("ready", flush=True)
for _ in range(int(sys.argv[4])):
    libc.renameat2(AT_FDCWD, a, AT_FDCWD, b, RENAME_EXCHANGE)
"#;

#[test]
fn remove_and_disable_raced_by_a_link_swapped_in_never_touch_what_it_points_to() {
    use std::io::BufRead as _;
    let repo = Repo::new();
    let victim = repo.root.join("victim");
    let policies = repo.project.join(".agents/policies");
    for round in 0..12 {
        std::fs::create_dir_all(victim.join("sub")).unwrap();
        std::fs::write(victim.join("keep"), "keep\n").unwrap();
        std::fs::write(victim.join("sub/keep"), "keep\n").unwrap();
        std::fs::write(victim.join("manifest.zon"), "not a package\n").unwrap();
        let _ = std::fs::remove_dir_all(&policies);
        write_package(
            &policies.join("p"),
            "\"tool\"",
            ".{ .action = \"git.push\", .decision = .ask }",
            None,
        );
        std::os::unix::fs::symlink(&victim, policies.join(".swap")).unwrap();
        let mut swapper = Command::new("python3")
            .args(["-c", SWAPPER])
            .arg(&policies)
            .args(["p", ".swap", "200000"])
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut ready = String::new();
        std::io::BufReader::new(swapper.stdout.as_mut().unwrap())
            .read_line(&mut ready)
            .unwrap();
        let verb = if round % 2 == 0 { "remove" } else { "disable" };
        let out = repo.chock(&[verb, "p"]);
        let _ = swapper.kill();
        let _ = swapper.wait();
        for kept in ["keep", "sub/keep", "manifest.zon"] {
            assert!(
                victim.join(kept).is_file(),
                "round {round}: `chock {verb}` reached {kept} through the link: {}",
                text(&out)
            );
        }
        assert!(
            !repo
                .project
                .join(".agents/policies/.disabled/p")
                .is_symlink(),
            "round {round}: a link was moved into .disabled"
        );
    }
}
