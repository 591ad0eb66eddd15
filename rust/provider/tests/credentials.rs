//! The credential store on a real file system, where each kind of `.key`
//! finds its key, `model.select` decided and logged, and the three put
//! together in front of a provider on loopback.

mod loopback;

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use chock_log::{Log, Rotation};
use chock_policy::{LoadOptions, Policy};
use chock_provider::{
    Client, Conversation, Credentials, Model, ProviderError, Request, Settings, Turn, key_for,
    select_model,
};

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path)
        .expect("metadata")
        .permissions()
        .mode()
        & 0o777
}

#[test]
fn a_key_is_stored_private_and_whole_replaced_listed_and_removed() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Credentials::at(dir.path().join("chock/credentials"));
    assert_eq!(store.read("work").expect("read"), None);
    assert!(store.list().expect("list").is_empty());

    let file = store.store("work", "  sk-one\n").expect("store");
    assert_eq!(mode(&file), 0o600);
    assert_eq!(mode(store.dir()), 0o700);
    assert_eq!(std::fs::read_to_string(&file).expect("read"), "sk-one\n");
    assert_eq!(store.read("work").expect("read").as_deref(), Some("sk-one"));

    store.store("work", "sk-two").expect("replace");
    store.store("home", "sk-three").expect("store");
    assert_eq!(store.read("work").expect("read").as_deref(), Some("sk-two"));
    assert_eq!(store.list().expect("list"), ["home", "work"]);
    let left: Vec<_> = std::fs::read_dir(store.dir())
        .expect("dir")
        .filter_map(Result::ok)
        .map(|e| e.file_name())
        .collect();
    assert_eq!(left.len(), 2, "no temporary file is left behind: {left:?}");

    assert!(store.remove("work").expect("remove"));
    assert!(!store.remove("work").expect("remove again"));
    assert_eq!(store.list().expect("list"), ["home"]);
}

#[test]
fn a_bad_key_name_or_a_file_others_may_read_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let err = Credentials::at(dir.path())
        .store("work", "sk")
        .expect_err("a folder others may open");
    assert!(err.to_string().contains("chmod 700"), "{err}");
    let store = Credentials::at(dir.path().join("credentials"));
    for key in ["", "  \n", "two\nlines", "bell\u{7}"] {
        assert!(store.store("work", key).is_err(), "{key:?}");
    }
    assert!(store.store("../escape", "sk").is_err());
    assert!(store.store("a.b", "sk").is_err());
    let file = store.store("work", "sk-one").expect("store");
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).expect("chmod");
    let err = store.read("work").expect_err("readable by others");
    assert!(err.to_string().contains("chmod 600"), "{err}");
}

fn policy(dir: &Path, project: &str, config: &str) -> Policy {
    std::fs::write(dir.join("chock.zon"), project).expect("write");
    let operator = dir.join("config.zon");
    std::fs::write(&operator, config).expect("write");
    Policy::load(&LoadOptions {
        project_dir: dir.to_path_buf(),
        operator_config: Some(operator),
        discovered_bundles: vec![],
        org_bundles: vec![],
    })
    .expect("policy")
}

#[test]
fn each_key_source_gives_its_key_or_says_where_to_put_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let keyfile = dir.path().join("key");
    std::fs::write(&keyfile, "sk-from-file\n").expect("write");
    let policy = policy(
        dir.path(),
        ".{}",
        &format!(
            ".{{ .providers = .{{ .{{ .name = \"a\", .kind = .anthropic }}, .{{ .name = \"s\", .kind = .openai_chat, .key = .{{ .secret = \"K\" }} }}, .{{ .name = \"e\", .kind = .openai_responses, .key = .{{ .env = \"CHOCK_TEST_SURELY_UNSET_KEY\" }} }}, .{{ .name = \"n\", .kind = .openai_chat, .key = .none }} }}, .secrets = .{{ .K = .{{ .file = \"{}\" }} }} }}",
            keyfile.display()
        ),
    );
    let store = Credentials::at(dir.path().join("credentials"));
    let instance = |name: &str| policy.config().provider(name).expect("configured").clone();

    let err = key_for(&policy, &instance("a"), &store).expect_err("not logged in");
    assert!(err.to_string().contains("chock login a"), "{err}");
    store.store("a", "sk-login").expect("store");
    assert_eq!(
        key_for(&policy, &instance("a"), &store)
            .expect("key")
            .as_deref(),
        Some("sk-login")
    );
    assert_eq!(
        key_for(&policy, &instance("s"), &store)
            .expect("key")
            .as_deref(),
        Some("sk-from-file")
    );
    let err = key_for(&policy, &instance("e"), &store).expect_err("unset");
    assert!(
        err.to_string().contains("CHOCK_TEST_SURELY_UNSET_KEY"),
        "{err}"
    );
    assert_eq!(
        key_for(&policy, &instance("n"), &store).expect("none"),
        None
    );
}

#[test]
fn model_select_refuses_all_but_allow_and_logs_each_decision() {
    let dir = tempfile::tempdir().expect("tempdir");
    let policy = policy(
        dir.path(),
        ".{ .policy = .{ .rules = .{ .{ .action = \"provider.work\", .decision = .deny }, .{ .action = \"provider.work.m-1\", .decision = .allow }, .{ .action = \"provider.home.big\", .decision = .ask } } } }",
        ".{ .providers = .{ .{ .name = \"work\", .kind = .anthropic }, .{ .name = \"home\", .kind = .openai_chat, .base_url = \"http://127.0.0.1:1/v1\", .key = .none } } }",
    );
    let log = Log::at(dir.path().join("log"), Rotation::default());
    let project = dir.path().to_string_lossy();
    let select = |instance: &str, model: &str| {
        select_model(&policy, &log, &project, "main", instance, model)
    };

    let (instance, verdict) = select("work", "m-1").expect("the narrower row allows");
    assert_eq!(instance.name, "work");
    assert_eq!(verdict.decided_by.line, Some(1));
    let err = select("work", "m-2").expect_err("the instance denies");
    assert!(matches!(err, ProviderError::Refused { .. }), "{err}");
    assert!(err.to_string().contains("provider.work"), "{err}");
    let err = select("home", "big").expect_err("ask is a refusal before the first turn");
    assert!(err.to_string().contains("only allow"), "{err}");
    select("home", "small").expect("unnamed = allow");
    let err = select("nowhere", "m").expect_err("not configured");
    assert!(matches!(err, ProviderError::NoInstance { .. }), "{err}");

    let text = std::fs::read_to_string(dir.path().join("log/decisions.jsonl")).expect("log");
    let lines: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).expect("json line"))
        .collect();
    let seen: Vec<(&str, &str, &str)> = lines
        .iter()
        .map(|l| {
            (
                l["route"].as_str().unwrap_or(""),
                l["action"].as_str().unwrap_or(""),
                l["decision"].as_str().unwrap_or(""),
            )
        })
        .collect();
    assert_eq!(
        seen,
        [
            ("run", "provider.work.m-1", "allow"),
            ("run", "provider.work.m-2", "deny"),
            ("run", "provider.home.big", "ask"),
            ("run", "provider.home.small", "allow"),
        ]
    );
    assert_eq!(lines[0]["model"], "m-1");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_s_start_selects_the_model_reads_the_stored_key_and_sends_it() {
    let body = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hi\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n";
    let server = loopback::Server::start(vec![loopback::Scripted::stream(body, 4096)]);
    let dir = tempfile::tempdir().expect("tempdir");
    let policy = policy(
        dir.path(),
        ".{}",
        &format!(
            ".{{ .providers = .{{ .{{ .name = \"local\", .kind = .openai_chat, .base_url = \"http://127.0.0.1:{}/v1\" }} }} }}",
            server.port
        ),
    );
    let store = Credentials::at(dir.path().join("credentials"));
    store.store("local", "sk-stored").expect("login");
    let log = Log::at(dir.path().join("log"), Rotation::default());
    let (instance, _) =
        select_model(&policy, &log, "/p", "main", "local", "qwen3").expect("selected");
    let key = key_for(&policy, instance, &store).expect("key");
    let client = Client::new(instance, key, Settings::default()).expect("client");
    let conversation = Conversation {
        system: None,
        turns: vec![Turn::User("hello".into())],
        tools: vec![],
    };
    let request = Request {
        model: "qwen3",
        max_tokens: 64,
        conversation: &conversation,
    };
    let reply = client.send(&request, &mut |_| {}).await.expect("reply");
    assert_eq!(reply.text, "hi");
    let sent = &server.requests()[0];
    assert_eq!(sent.header("authorization"), Some("Bearer sk-stored"));
    assert_eq!(sent.body["model"], "qwen3");
    let logged = std::fs::read_to_string(dir.path().join("log/decisions.jsonl")).expect("log");
    assert!(!logged.contains("sk-stored"), "a key never reaches the log");
    assert!(!logged.contains("hello"), "nor a word of the conversation");
}
