//! `chock mcp --workspace` over a project that is not a git repository:
//! the file tools and run_command on one overlay (overlayfs in a user
//! namespace, for real), the person's tree untouched until request_apply,
//! removals honoured, the person's own removals a conflict, and a link the
//! person swaps in never followed.
//! Needs user namespaces and Landlock (`scripts/setup`).

mod sandbox_fixture;
#[path = "mcp_support/mod.rs"]
mod support;

use std::path::Path;

use serde_json::json;
use support::Env;

const APPLY_ALLOWED: &str =
    ".{ .policy = .{ .rules = .{ .{ .action = \"workspace.apply\", .decision = .allow } } } }\n";

/// A project with no git: `a.txt`, `gone.txt`, `keep/x.txt`.
fn plain() -> Env {
    let env = Env::new();
    env.write("a.txt", "one\ntwo\n");
    env.write("gone.txt", "bye\n");
    env.write("keep/x.txt", "x\n");
    env.zon(APPLY_ALLOWED);
    assert!(!env.project.join(".git").exists());
    env
}

/// Every file under `dir` with its contents, sorted.
fn snapshot(dir: &Path) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(at) = stack.pop() {
        for entry in std::fs::read_dir(&at).expect("read_dir").flatten() {
            let path = entry.path();
            let rel = path.strip_prefix(dir).expect("under").display().to_string();
            let meta = std::fs::symlink_metadata(&path).expect("meta");
            if meta.is_dir() {
                out.push((format!("{rel}/"), String::new()));
                stack.push(path);
            } else if meta.file_type().is_symlink() {
                let to = std::fs::read_link(&path).expect("link");
                out.push((format!("{rel}@"), to.display().to_string()));
            } else {
                out.push((rel, std::fs::read_to_string(&path).unwrap_or_default()));
            }
        }
    }
    out.sort();
    out
}

#[test]
fn every_tool_works_on_the_overlay_until_request_apply_writes_it() {
    let env = plain();
    let before = snapshot(&env.project);
    let mut client = env.client(false, &["--workspace"]);
    assert!(client.tool_names().iter().any(|n| n == "request_apply"));
    assert!(
        client.stderr_says("is an overlay over it"),
        "{}",
        client.stderr()
    );
    let wrote = client.call(
        "write_file",
        json!({"path": "new/deep.txt", "content": "agent\n"}),
    );
    assert!(!wrote.is_error, "{wrote:?}");
    let edited = client.call(
        "edit_file",
        json!({"path": "a.txt", "old_string": "two", "new_string": "TWO"}),
    );
    assert!(!edited.is_error, "{edited:?}");
    // run_command sees the file tools' writes, and its removal is a
    // whiteout the file tools honour.
    let ran = client.call(
        "run_command",
        json!({"argv": ["sh", "-c", "cat new/deep.txt a.txt; rm gone.txt; echo y > keep/y.txt"]}),
    );
    assert!(
        !ran.is_error && ran.text.contains("agent\none\nTWO\n"),
        "{ran:?}"
    );
    let read = client.call("read_file", json!({"path": "gone.txt"}));
    assert!(
        read.is_error && read.text.contains("does not exist"),
        "{read:?}"
    );
    let listed = client.call("list_directory", json!({"path": "."}));
    assert!(
        !listed.is_error && !listed.text.contains("gone.txt") && listed.text.contains("new/"),
        "{listed:?}"
    );
    let globbed = client.call("glob", json!({"pattern": "**/*.txt"}));
    assert_eq!(
        globbed.text.lines().collect::<Vec<_>>(),
        ["a.txt", "keep/x.txt", "keep/y.txt", "new/deep.txt"],
        "{globbed:?}"
    );
    let grepped = client.call("grep", json!({"pattern": "bye|^y$"}));
    assert_eq!(grepped.text.trim(), "keep/y.txt:1: y", "{grepped:?}");
    let read = client.call("read_file", json!({"path": "keep/y.txt"}));
    assert_eq!(read.text, "y\n", "{read:?}");
    assert_eq!(
        snapshot(&env.project),
        before,
        "the person's tree is untouched before the apply"
    );

    let applied = client.call("request_apply", json!({}));
    assert!(!applied.is_error, "{applied:?}");
    assert!(
        applied.text.contains("4 files") && applied.text.contains("written into your tree"),
        "{applied:?}"
    );
    assert_eq!(env.read("new/deep.txt").as_deref(), Some("agent\n"));
    assert_eq!(env.read("a.txt").as_deref(), Some("one\nTWO\n"));
    assert_eq!(env.read("keep/y.txt").as_deref(), Some("y\n"));
    assert_eq!(
        env.read("gone.txt"),
        None,
        "the session's removal is carried"
    );
    env.assert_logged("workspace.apply", "allow", "rule");
    // The session goes on over the project as it now is, and the next
    // apply carries only what came after (no conflict with the apply's own
    // writes).
    let read = client.call("read_file", json!({"path": "a.txt"}));
    assert_eq!(read.text, "one\nTWO\n", "{read:?}");
    let edited = client.call(
        "edit_file",
        json!({"path": "a.txt", "old_string": "one", "new_string": "ONE"}),
    );
    assert!(!edited.is_error, "{edited:?}");
    let ran = client.call("run_command", json!({"argv": ["rm", "keep/x.txt"]}));
    assert!(!ran.is_error, "{ran:?}");
    let applied = client.call("request_apply", json!({}));
    assert!(
        !applied.is_error && applied.text.contains("2 files written into your tree"),
        "{applied:?}"
    );
    assert_eq!(env.read("a.txt").as_deref(), Some("ONE\nTWO\n"));
    assert_eq!(env.read("keep/x.txt"), None);
    assert_eq!(env.read("new/deep.txt").as_deref(), Some("agent\n"));
}

#[test]
fn a_file_the_person_removed_after_the_session_changed_it_is_a_conflict() {
    let env = plain();
    let mut client = env.client(false, &["--workspace"]);
    for (path, content) in [("keep/x.txt", "agent\n"), ("b.txt", "new\n")] {
        let wrote = client.call("write_file", json!({"path": path, "content": content}));
        assert!(!wrote.is_error, "{wrote:?}");
    }
    std::thread::sleep(std::time::Duration::from_millis(20));
    std::fs::remove_file(env.project.join("keep/x.txt")).expect("the person removes it");
    let before = snapshot(&env.project);
    let applied = client.call("request_apply", json!({}));
    assert!(
        applied.text.contains("kept in the workspace") && applied.text.contains("keep/x.txt"),
        "{applied:?}"
    );
    assert_eq!(
        snapshot(&env.project),
        before,
        "nothing is written, not even the new file"
    );
    let read = client.call("read_file", json!({"path": "keep/x.txt"}));
    assert_eq!(read.text, "agent\n", "the work is kept: {read:?}");
    drop(client);
    let listed = env
        .chock()
        .arg("workspace")
        .output()
        .expect("chock workspace");
    assert!(
        String::from_utf8_lossy(&listed.stdout).contains("2 files changed"),
        "{listed:?}"
    );
}

#[test]
fn a_link_the_person_swaps_in_is_never_followed() {
    let env = plain();
    std::fs::write(env.outside().join("x.txt"), "OUTSIDE\n").expect("outside");
    let mut client = env.client(false, &["--workspace"]);
    let read = client.call("read_file", json!({"path": "keep/x.txt"}));
    assert_eq!(read.text, "x\n", "{read:?}");
    // The person swaps the folder for a link out of the project.
    std::fs::rename(env.project.join("keep"), env.project.join("kept")).expect("mv");
    std::os::unix::fs::symlink(env.outside(), env.project.join("keep")).expect("ln");
    let read = client.call("read_file", json!({"path": "keep/x.txt"}));
    assert!(
        read.is_error && !read.text.contains("OUTSIDE"),
        "the link is not followed out: {read:?}"
    );
    let wrote = client.call(
        "write_file",
        json!({"path": "keep/planted.txt", "content": "agent\n"}),
    );
    assert!(
        wrote.is_error && wrote.text.contains("symbolic link"),
        "{wrote:?}"
    );
    let grepped = client.call("grep", json!({"pattern": "OUTSIDE"}));
    assert!(!grepped.text.contains("keep/"), "{grepped:?}");
    assert!(!env.outside().join("planted.txt").exists());
    assert_eq!(
        std::fs::read_to_string(env.outside().join("x.txt"))
            .ok()
            .as_deref(),
        Some("OUTSIDE\n")
    );
}

/// A background command and another command at once: each sandbox mounts
/// the overlay with a work folder of its own (overlayfs clears its work
/// folder when it mounts, so a shared one would break the first mount's
/// next copy-up), and the first still writes after the second started.
#[test]
fn a_background_command_still_writes_after_another_command_ran() {
    let env = plain();
    env.zon(
        ".{ .policy = .{ .rules = .{ .{ .action = \"workspace.apply\", .decision = .allow }, .{ .action = \"exec.*\", .decision = .allow } } } }\n",
    );
    let mut client = env.client(false, &["--workspace"]);
    let started = client.call(
        "run_command",
        json!({"argv": ["sh", "-c", "echo started; sleep 3; echo bg >> a.txt && echo copied\"\"-up"], "background": true}),
    );
    assert!(
        !started.is_error && started.text.contains("started task"),
        "{started:?}"
    );
    let id: u64 = started
        .text
        .split("started task ")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|id| id.parse().ok())
        .expect("a task id");
    let ran = client.call(
        "run_command",
        json!({"argv": ["sh", "-c", "echo fg >> keep/x.txt && echo done"]}),
    );
    assert!(!ran.is_error && ran.text.contains("done"), "{ran:?}");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let output = client.call("task_output", json!({"task": id, "wait_seconds": 5}));
        if output.text.contains("copied-up") {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline && !output.text.contains("ended"),
            "the background command's write failed: {output:?}"
        );
    }
    let read = client.call("read_file", json!({"path": "a.txt"}));
    assert_eq!(read.text, "one\ntwo\nbg\n", "{read:?}");
    let read = client.call("read_file", json!({"path": "keep/x.txt"}));
    assert_eq!(read.text, "x\nfg\n", "{read:?}");
    assert_eq!(env.read("a.txt").as_deref(), Some("one\ntwo\n"));
}

/// A `read_only` bind of the person's own path is a plain path of the
/// overlay for the file tools: read through, never written (the write
/// would stay in the overlay, and no apply carries a bind). The work left
/// when the server ends is carried by `chock apply`.
#[test]
fn the_file_tools_read_a_bind_but_never_write_under_it() {
    let env = plain();
    env.write("scripts/release.sh", "echo release\n");
    env.zon(
        ".{ .workspace = .{ .{ .name = \"scripts\", .mode = .read_only } }, .policy = .{ .rules = .{ .{ .action = \"workspace.apply\", .decision = .allow }, .{ .action = \"workspace.bind.*\", .decision = .allow } } } }\n",
    );
    let mut client = env.client(false, &["--workspace"]);
    let read = client.call("read_file", json!({"path": "scripts/release.sh"}));
    assert_eq!(read.text, "echo release\n", "{read:?}");
    let wrote = client.call(
        "write_file",
        json!({"path": "scripts/release.sh", "content": "agent\n"}),
    );
    assert!(wrote.is_error && wrote.text.contains("bind"), "{wrote:?}");
    let edited = client.call(
        "edit_file",
        json!({"path": "scripts/release.sh", "old_string": "release", "new_string": "x"}),
    );
    assert!(
        edited.is_error && edited.text.contains("bind"),
        "{edited:?}"
    );
    assert_eq!(
        env.read("scripts/release.sh").as_deref(),
        Some("echo release\n")
    );
    // Work left when the server ends is kept; `chock apply` writes it.
    let wrote = client.call(
        "write_file",
        json!({"path": "notes.txt", "content": "kept\n"}),
    );
    assert!(!wrote.is_error, "{wrote:?}");
    drop(client);
    assert_eq!(env.read("notes.txt"), None);
    let out = env.chock().arg("apply").output().expect("chock apply");
    let said = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success() && said.contains("1 file written into your tree"),
        "{said} {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(env.read("notes.txt").as_deref(), Some("kept\n"));
}

const NIX_ALLOWED: &str = ".{ .policy = .{ .rules = .{ \
    .{ .action = \"workspace.apply\", .decision = .allow }, \
    .{ .action = \"call.nix_eval\", .decision = .allow }, \
    .{ .action = \"nix.build.*\", .decision = .allow } } } }\n";

/// nix_eval evaluates the overlay, not the person's tree: a `default.nix`
/// the agent rewrote is what `import ./.` reads, a file a command removed
/// is absent (`pathExists`, `readDir`, and the source copied into the
/// store, whose path is the one the person's tree gets once it has the
/// same files), and the person's tree is untouched.
#[test]
fn nix_eval_evaluates_the_overlay_with_its_removals() {
    let env = Env::new();
    env.write("default.nix", "{ who = \"person\"; }\n");
    env.write("lib/kept.nix", "1\n");
    env.write("lib/gone.nix", "2\n");
    env.zon(NIX_ALLOWED);
    let before = snapshot(&env.project);
    let mut client = env.client(false, &["--workspace"]);
    let eval = |client: &mut support::Client, expression: &str| {
        let called = client.call("nix_eval", json!({"expression": expression}));
        assert!(!called.is_error, "{expression}: {called:?}");
        called.text.trim().to_string()
    };
    assert_eq!(eval(&mut client, "(import ./.).who"), "\"person\"");
    let wrote = client.call(
        "write_file",
        json!({"path": "default.nix", "content": "{ who = \"agent\"; }\n"}),
    );
    assert!(!wrote.is_error, "{wrote:?}");
    let ran = client.call("run_command", json!({"argv": ["rm", "lib/gone.nix"]}));
    assert!(!ran.is_error, "{ran:?}");
    assert_eq!(eval(&mut client, "(import ./.).who"), "\"agent\"");
    assert_eq!(
        eval(&mut client, "builtins.pathExists ./lib/gone.nix"),
        "false"
    );
    assert_eq!(
        eval(&mut client, "builtins.attrNames (builtins.readDir ./lib)"),
        "[ \"kept.nix\" ]"
    );
    let imported = client.call("nix_eval", json!({"expression": "import ./lib/gone.nix"}));
    assert!(imported.is_error, "{imported:?}");
    let copied = eval(&mut client, "\"${./lib}\"");
    assert_eq!(
        eval(
            &mut client,
            "builtins.attrNames (builtins.readDir \"${./lib}\")"
        ),
        "[ \"kept.nix\" ]"
    );
    assert_eq!(
        snapshot(&env.project),
        before,
        "the person's tree is untouched"
    );
    drop(client);

    // The person's tree, once it holds what the overlay held, copies to
    // the same store path: the removed file was never in the source.
    std::fs::remove_file(env.project.join("lib/gone.nix")).expect("rm");
    let mut plain = env.client(false, &[]);
    assert_eq!(eval(&mut plain, "\"${./lib}\""), copied);
    assert_eq!(eval(&mut plain, "(import ./.).who"), "\"person\"");
}

/// nix_build builds the flake the agent wrote in the overlay: the person's
/// project has none.
#[test]
fn nix_build_builds_the_flake_the_agent_wrote_in_the_overlay() {
    chock_testkit::require_nix_daemon(&chock_store::daemon::socket_path());
    let env = Env::new();
    env.write("words.txt", "from the person\n");
    env.zon(NIX_ALLOWED);
    let system = chock_sandbox::devshell::system();
    let nonce = format!(
        "{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos())
    );
    let mut client = env.client(false, &["--workspace"]);
    let flake = format!(
        r#"{{
  outputs = {{ self }}: {{
    packages.{system}.default = derivation {{
      name = "overlay-built-{nonce}";
      system = "{system}";
      builder = "/bin/sh";
      src = ./.;
      args = [ "-c" "read line < $src/words.txt; echo $line > $out" ];
    }};
  }};
}}
"#
    );
    for (path, content) in [
        ("flake.nix", flake.as_str()),
        ("words.txt", "from the agent\n"),
    ] {
        let wrote = client.call("write_file", json!({"path": path, "content": content}));
        assert!(!wrote.is_error, "{wrote:?}");
    }
    let attribute = json!(["packages", system, "default"]);
    let built = client.call("nix_build", json!({"attribute": attribute}));
    assert!(!built.is_error, "{built:?}");
    let out = built
        .text
        .split("out: ")
        .nth(1)
        .and_then(|o| o.split_whitespace().next())
        .map(|o| o.trim_end_matches(['.', ',']).to_string())
        .unwrap_or_else(|| panic!("no out path in {}", built.text));
    assert_eq!(
        std::fs::read_to_string(&out).expect("the output"),
        "from the agent\n"
    );
    assert!(!env.project.join("flake.nix").exists());
    assert_eq!(env.read("words.txt").as_deref(), Some("from the person\n"));
}
