//! WebAssembly plugins for real: `chock plugins install` pins a plugin
//! built from WAT, `chock plugins list` says which tools a session is
//! offered and why not, and `chock mcp` lists and calls the offered tool,
//! each call decided at `plugin.<p>.tool.<t>` and logged.

use serde_json::json;
use support::{Env, answered_in_chock_approve};

mod net_lab;
mod sandbox_fixture;
#[path = "mcp_support/mod.rs"]
mod support;

use chock_plugins::fixtures::{COPIER_MANIFEST, copier};

/// Installs the copier plugin (`notes`, its tool `copy`) with
/// `chock plugins install`, and `flags` (`--operator`).
fn installed_with(env: &Env, flags: &[&str]) {
    let source = env.outside().join("notes-plugin");
    std::fs::create_dir_all(&source).expect("mkdir");
    std::fs::write(source.join("plugin.zon"), COPIER_MANIFEST).expect("written");
    std::fs::write(source.join("plugin.wasm"), copier()).expect("written");
    succeeds(
        env.chock()
            .args(["plugins", "install"])
            .args(flags)
            .arg(&source),
    );
}

/// Runs `command` and fails the test unless it succeeds.
fn succeeds(command: &mut std::process::Command) -> std::process::Output {
    let out = command.output().expect("chock runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn offers_no_plugin_tool(client: &mut support::Client) {
    let names = client.tool_names();
    assert!(
        !names.iter().any(|n| n.starts_with("plugin__")),
        "{names:?}"
    );
}

fn installed(env: &Env) {
    installed_with(env, &[]);
    let lock = std::fs::read_to_string(env.project.join("chock.lock")).expect("the lock");
    assert!(
        lock.contains(".plugins") && lock.contains("\"notes\""),
        "{lock}"
    );
}

fn listed(env: &Env) -> String {
    let out = succeeds(env.chock().args(["plugins", "list"]));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn a_plugin_tool_is_offered_in_chock_mcp_and_each_call_decided_and_logged() {
    let env = Env::new();
    env.rules(
        r#".{ .action = "file.read", .decision = .allow }, .{ .action = "file.write", .decision = .allow }, .{ .action = "plugin.notes.tool.copy", .decision = .allow }"#,
    );
    installed(&env);
    let list = listed(&env);
    assert!(list.contains("copy") && list.contains("offered"), "{list}");
    env.write("in.txt", "from the plugin");

    let mut client = env.client(false, &[]);
    let names = client.tool_names();
    assert!(
        names.contains(&"plugin__notes__copy".to_string()),
        "{names:?}"
    );
    let called = client.call("plugin__notes__copy", json!({"path": "in.txt"}));
    assert!(!called.is_error, "{}", called.text);
    assert_eq!(called.text, "\"copied\"");
    assert_eq!(env.read("out.txt").as_deref(), Some("from the plugin"));
    env.assert_logged("plugin.notes.tool.copy", "allow", "rule");
}

#[test]
fn an_asked_plugin_call_shows_the_person_its_input() {
    let env = Env::new();
    env.rules(
        r#".{ .action = "file.*", .decision = .allow }, .{ .action = "plugin.notes.tool.copy", .decision = .ask }"#,
    );
    installed(&env);
    env.write("in.txt", "asked first");
    let (question, called) =
        answered_in_chock_approve(&env, "plugin__notes__copy", json!({"path": "in.txt"}));
    assert!(
        question.contains("plugin__notes__copy wants plugin.notes.tool.copy"),
        "{question}"
    );
    assert!(
        question.contains(r#"arguments: {"path":"in.txt"}"#),
        "{question}"
    );
    assert_eq!(called.text, "\"copied\"", "{called:?}");
    env.assert_logged("plugin.notes.tool.copy", "allow", "person");
}

#[test]
fn a_plugin_tool_whose_call_is_denied_or_capability_not_allowed_is_not_run() {
    let env = Env::new();
    // The capability is only asked about: the tool is not offered at all.
    env.rules(
        r#".{ .action = "file.read", .decision = .allow }, .{ .action = "file.write", .decision = .ask }"#,
    );
    installed(&env);
    let list = listed(&env);
    assert!(
        list.contains("not offered: its capability fs.write"),
        "{list}"
    );
    offers_no_plugin_tool(&mut env.client(false, &[]));

    // The tool's own action denied: not offered either.
    env.rules(
        r#".{ .action = "file.*", .decision = .allow }, .{ .action = "plugin.notes.tool.copy", .decision = .deny }"#,
    );
    let list = listed(&env);
    assert!(list.contains("plugin.notes.tool.copy is denied"), "{list}");
    let mut client = env.client(false, &[]);
    offers_no_plugin_tool(&mut client);
    let called = client.request(
        "tools/call",
        json!({"name": "plugin__notes__copy", "arguments": {"path": "in.txt"}}),
    );
    assert_eq!(called["error"]["code"], -32602, "{called}");
    assert!(env.read("out.txt").is_none());
}

/// `chock new plugin` writes a Rust plugin that builds as written for
/// wasm32-wasip2, installs, and answers through `chock mcp` as its
/// manifest says.
#[test]
fn the_plugin_chock_new_writes_builds_installs_and_answers() {
    let env = Env::new();
    env.rules(r#".{ .action = "plugin.greeter.tool.greet", .decision = .allow }"#);
    let dir = env.outside().join("greeter");
    let out = succeeds(
        env.chock()
            .args(["new", "plugin", "greeter", "--dir"])
            .arg(&dir),
    );
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        said.contains("cargo build --release --target wasm32-wasip2"),
        "{said}"
    );
    let again = env
        .chock()
        .args(["new", "plugin", "greeter", "--dir"])
        .arg(&dir)
        .output()
        .expect("chock runs");
    assert!(
        !again.status.success(),
        "an existing folder is never written into"
    );
    assert!(String::from_utf8_lossy(&again.stderr).contains("already exists"));

    // Built where every run of this test builds it, so the second is quick.
    let target = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("plugin-scaffold");
    let built = std::process::Command::new(env!("CARGO"))
        .args(["build", "--release", "--target", "wasm32-wasip2"])
        .env("CARGO_TARGET_DIR", &target)
        .current_dir(&dir)
        .output()
        .expect("cargo runs");
    assert!(
        built.status.success(),
        "{}",
        String::from_utf8_lossy(&built.stderr)
    );
    std::fs::copy(
        target.join("wasm32-wasip2/release/greeter.wasm"),
        dir.join("plugin.wasm"),
    )
    .expect("the component is there");
    succeeds(env.chock().args(["plugins", "install"]).arg(&dir));

    let mut client = env.client(false, &[]);
    let called = client.call("plugin__greeter__greet", json!({"name": "Ada"}));
    assert!(!called.is_error, "{}", called.text);
    let answer: serde_json::Value = serde_json::from_str(&called.text).expect("JSON");
    assert_eq!(answer["greeting"], "Hello, Ada!");
    let refused = client.call("plugin__greeter__greet", json!({"name": 7}));
    assert!(
        refused.is_error && refused.text.contains("`name` is a string"),
        "{}",
        refused.text
    );
    env.assert_logged("plugin.greeter.tool.greet", "allow", "rule");
}

/// `--operator` installs a plugin of the person's own, offered in every
/// project and never written into one; `remove --operator` takes it back.
#[test]
fn the_person_s_own_plugin_is_offered_in_a_project_that_pins_none() {
    let env = Env::new();
    env.rules(
        r#".{ .action = "file.*", .decision = .allow }, .{ .action = "plugin.notes.tool.copy", .decision = .allow }"#,
    );
    installed_with(&env, &["--operator"]);
    assert!(
        !env.project.join("chock.lock").exists(),
        "the project is not written"
    );
    let list = listed(&env);
    assert!(
        list.contains("notes 0.1.0  (yours,") && list.contains("offered"),
        "{list}"
    );

    env.write("in.txt", "mine");
    let mut client = env.client(false, &[]);
    let called = client.call("plugin__notes__copy", json!({"path": "in.txt"}));
    assert!(!called.is_error, "{}", called.text);
    assert_eq!(env.read("out.txt").as_deref(), Some("mine"));
    drop(client);

    let out = env
        .chock()
        .args(["plugins", "remove", "--operator", "notes"])
        .output()
        .expect("chock runs");
    assert!(String::from_utf8_lossy(&out.stdout).contains("removed   notes"));
    assert!(listed(&env).contains("no plugin is installed"));
}
