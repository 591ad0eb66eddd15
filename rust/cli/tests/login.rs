//! `chock login` through the real binary: a key piped on stdin, a key
//! typed at a real terminal (a pseudo-terminal made by `script`) without
//! echo, `--list`, `--remove`, and an instance config.zon does not name.

use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Output, Stdio};

const CHOCK: &str = env!("CARGO_BIN_EXE_chock");

const CONFIG: &str = ".{ .providers = .{\n  .{ .name = \"work\", .kind = .anthropic, .key = .login },\n  .{ .name = \"local\", .kind = .openai_chat, .base_url = \"http://127.0.0.1:8080/v1\", .key = .none },\n} }\n";

fn home() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir_all(dir.path().join("config/chock")).expect("mkdir");
    std::fs::write(dir.path().join("config/chock/config.zon"), CONFIG).expect("write");
    dir
}

fn chock(home: &Path, args: &[&str]) -> Command {
    let mut command = Command::new(CHOCK);
    command
        .args(args)
        .current_dir(home)
        .env("HOME", home)
        .env("XDG_CONFIG_HOME", home.join("config"))
        .env("XDG_DATA_HOME", home.join("data"))
        .env_remove("CHOCK_LOG");
    command
}

fn with_stdin(home: &Path, args: &[&str], input: &str) -> Output {
    let mut child = chock(home, args)
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
        .expect("write");
    child.wait_with_output().expect("wait")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn a_key_on_a_pipe_is_stored_private_listed_and_removed() {
    let home = home();
    let out = with_stdin(home.path(), &["login", "work"], "sk-piped-123\n");
    assert!(out.status.success(), "{}", text(&out.stderr));
    let file = home.path().join("data/chock/credentials/work");
    assert_eq!(
        std::fs::read_to_string(&file).expect("stored"),
        "sk-piped-123\n"
    );
    let mode = std::fs::metadata(&file).expect("meta").permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    assert!(
        !text(&out.stdout).contains("sk-piped"),
        "the key is never printed"
    );

    let out = chock(home.path(), &["login", "--list"])
        .output()
        .expect("run");
    let listed = text(&out.stdout);
    assert!(
        listed.contains("work  anthropic  https://api.anthropic.com  key stored"),
        "{listed}"
    );
    assert!(listed.contains("local  openai_chat"), "{listed}");
    assert!(listed.contains("no key is sent"), "{listed}");
    assert!(!listed.contains("sk-piped"), "{listed}");

    let out = chock(home.path(), &["login", "--list", "--json"])
        .output()
        .expect("run");
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        !text(&out.stdout).contains("sk-piped"),
        "the key is never printed"
    );
    let listed: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one JSON object");
    let instances = listed["instances"].as_array().expect("instances");
    assert_eq!(instances.len(), 2, "{listed}");
    assert_eq!(
        (
            &instances[0]["name"],
            &instances[0]["key"]["kept"],
            &instances[0]["key"]["stored"]
        ),
        (&"work".into(), &"login".into(), &true.into()),
        "{listed}"
    );
    assert_eq!(
        (
            &instances[1]["kind"],
            &instances[1]["base_url"],
            &instances[1]["key"]["kept"]
        ),
        (
            &"openai_chat".into(),
            &"http://127.0.0.1:8080/v1".into(),
            &"none".into()
        ),
        "{listed}"
    );
    assert_eq!(
        listed["stored_unconfigured"],
        serde_json::json!([]),
        "{listed}"
    );

    let out = chock(home.path(), &["login", "--remove", "work"])
        .output()
        .expect("run");
    assert!(out.status.success());
    assert!(!file.exists());
    let out = chock(home.path(), &["login", "--list"])
        .output()
        .expect("run");
    assert!(text(&out.stdout).contains("run `chock login work`"));
}

#[test]
fn an_instance_config_zon_does_not_name_or_an_empty_key_is_refused() {
    let home = home();
    let out = with_stdin(home.path(), &["login", "other"], "sk\n");
    assert!(!out.status.success());
    let err = text(&out.stderr);
    assert!(err.contains("no provider instance `other`"), "{err}");
    assert!(err.contains("config.zon"), "{err}");

    let out = with_stdin(home.path(), &["login", "work"], "\n");
    assert!(!out.status.success());
    assert!(text(&out.stderr).contains("empty"), "{}", text(&out.stderr));
    assert!(!home.path().join("data/chock/credentials/work").exists());

    let out = with_stdin(home.path(), &["login", "local"], "sk-unused\n");
    assert!(out.status.success());
    assert!(
        text(&out.stderr).contains("not used until"),
        "{}",
        text(&out.stderr)
    );
}

/// Runs `command` on a pseudo-terminal (`script`, util-linux) and types
/// `keys` a second and a half later, once the prompt's mode is set: what
/// the terminal showed.
fn typed_at_a_terminal(home: &tempfile::TempDir, command: &str, keys: &[u8]) -> String {
    let mut child = Command::new("script")
        .args(["-qec", command, "/dev/null"])
        .current_dir(home.path())
        .env("HOME", home.path())
        .env("XDG_CONFIG_HOME", home.path().join("config"))
        .env("XDG_DATA_HOME", home.path().join("data"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("script (util-linux) runs");
    let mut stdin = child.stdin.take().expect("stdin");
    std::thread::sleep(std::time::Duration::from_millis(1500));
    stdin.write_all(keys).expect("type");
    std::thread::sleep(std::time::Duration::from_millis(1000));
    drop(stdin);
    text(&child.wait_with_output().expect("wait").stdout)
}

#[test]
fn a_key_typed_at_a_terminal_is_not_echoed() {
    let home = home();
    // `script` runs chock on a pseudo-terminal and copies what it shows;
    // the key is typed a second after the prompt, once echo is off.
    let shown = typed_at_a_terminal(&home, &format!("{CHOCK} login work"), b"sk-typed-456\n");
    assert!(shown.contains("not shown as you type"), "{shown}");
    assert!(shown.contains("stored the key for work"), "{shown}");
    assert!(!shown.contains("sk-typed"), "the key was echoed: {shown}");
    assert_eq!(
        std::fs::read_to_string(home.path().join("data/chock/credentials/work")).expect("stored"),
        "sk-typed-456\n"
    );
}

#[test]
fn ctrl_c_at_the_hidden_prompt_stores_nothing_and_puts_the_echo_back() {
    let home = home();
    // After chock ends, `stty -a` on the same pseudo-terminal shows its
    // mode: echo must be on again.
    let shown = typed_at_a_terminal(
        &home,
        &format!("{CHOCK} login work; echo \"exit $?\"; stty -a"),
        b"sk-half\x03",
    );
    assert!(
        shown.contains("stopped with Ctrl-C; nothing stored"),
        "{shown}"
    );
    assert!(shown.contains("exit 130"), "{shown}");
    assert!(!shown.contains("sk-half"), "the key was echoed: {shown}");
    let words: Vec<&str> = shown.split_whitespace().collect();
    assert!(
        words.contains(&"echo") && words.contains(&"icanon") && words.contains(&"isig"),
        "the terminal was left without its echo or line editing: {shown}"
    );
    assert!(!home.path().join("data/chock/credentials/work").exists());
}

/// The search engine's key (`.search`, `.key = .login`) is listed under
/// `search` like an instance's, never as a stored key config.zon lacks.
#[test]
fn the_search_engine_s_key_is_listed_as_its_own() {
    let home = home();
    let config = CONFIG.trim_end().trim_end_matches('}').to_owned()
        + ", .search = .{ .kind = .searxng, .url = \"http://127.0.0.1:8888\", .key = .login } }\n";
    std::fs::write(home.path().join("config/chock/config.zon"), &config).expect("write");
    let listed = |args: &[&str]| {
        let out = chock(home.path(), args).output().expect("run");
        assert!(out.status.success(), "{}", text(&out.stderr));
        text(&out.stdout)
    };
    assert!(
        listed(&["login", "--list"]).contains(
            "search  searxng  http://127.0.0.1:8888  no key stored yet: run `chock login search`"
        ),
        "{}",
        listed(&["login", "--list"])
    );
    let out = with_stdin(home.path(), &["login", "search"], "sx-key\n");
    assert!(out.status.success(), "{}", text(&out.stderr));
    let shown = listed(&["login", "--list"]);
    assert!(
        shown.contains("search  searxng  http://127.0.0.1:8888  key stored"),
        "{shown}"
    );
    assert!(!shown.contains("not in config.zon"), "{shown}");
    let json: serde_json::Value =
        serde_json::from_str(&listed(&["login", "--list", "--json"])).expect("JSON");
    assert_eq!(json["instances"][2]["name"], "search", "{json}");
    assert_eq!(json["instances"][2]["key"]["stored"], true, "{json}");
    assert_eq!(json["stored_unconfigured"], serde_json::json!([]), "{json}");
}
