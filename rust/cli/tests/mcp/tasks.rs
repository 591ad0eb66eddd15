//! Background commands and published ports for real: a dev server started
//! in the background is reached from the host with curl through a
//! published port; every refusal of a port is made; a background command
//! is never asked; output is read from an offset; tasks die with the
//! session; their records are read-only inside; git's fetching subcommands
//! are asked and not carried out.

use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::json;

use crate::support::{Env, person_says};

/// A port nothing on this machine listens on now.
fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind(("127.0.0.1", 0)).expect("bind");
    listener.local_addr().expect("addr").port()
}

/// `curl` on the host, bounded in time: the body, or `None` when nothing answered.
fn curl(port: u16, path: &str) -> Option<String> {
    let output = std::process::Command::new("curl")
        .args(["-sf", "--max-time", "5"])
        .arg(format!("http://127.0.0.1:{port}{path}"))
        .output()
        .expect("curl");
    output
        .status
        .success()
        .then(|| String::from_utf8_lossy(&output.stdout).into_owned())
}

/// Retries `curl` until the server inside has started (at most 20 s).
fn curl_until_served(port: u16, path: &str) -> String {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if let Some(body) = curl(port, path) {
            return body;
        }
        assert!(
            Instant::now() < deadline,
            "nothing was served on 127.0.0.1:{port}{path} within 20 s"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// The task id in run_command's answer (`started task N in the background`).
pub(crate) fn task_id(text: &str) -> u64 {
    text.split("started task ")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|id| id.parse().ok())
        .unwrap_or_else(|| panic!("no task id in: {text}"))
}

fn http_server(port: u16) -> serde_json::Value {
    json!({
        "argv": ["python3", "-m", "http.server", port.to_string(), "--bind", "127.0.0.1"],
        "background": true
    })
}

#[test]
fn a_background_dev_server_is_reached_from_the_host_through_a_published_port() {
    let env = Env::new();
    env.write("hello.txt", "served from the sandbox\n");
    let port = free_port();
    env.rules(&format!(
        r#".{{ .action = "exec.*", .decision = .allow }}, .{{ .action = "net.serve.{port}", .decision = .allow }}"#
    ));
    let mut client = env.client(false, &[]);
    assert!(client.tool_names().contains(&"serve_port".to_string()));
    let started = client.call("run_command", http_server(port));
    assert!(!started.is_error, "{started:?}");
    assert!(
        started
            .text
            .contains(&format!("published: http://127.0.0.1:{port}")),
        "{started:?}"
    );
    let id = task_id(&started.text);
    assert_eq!(
        curl_until_served(port, "/hello.txt"),
        "served from the sandbox\n"
    );
    // The server's own log (stderr) is the task's output.
    let output = client.call("task_output", json!({"task": id, "wait_seconds": 10}));
    assert!(output.text.contains("GET /hello.txt"), "{output:?}");
    let listed = client.call("list_tasks", json!({}));
    assert!(
        listed
            .text
            .contains(&format!("task {id}: python3 -m http.server"))
            && listed.text.contains("running")
            && listed
                .text
                .contains(&format!("published: 127.0.0.1:{port}")),
        "{listed:?}"
    );
    env.assert_logged(&format!("net.serve.{port}"), "allow", "rule");
    // A connection open when the task stops is ended with it.
    let mut open = std::net::TcpStream::connect(("127.0.0.1", port)).expect("connect");
    open.set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    let stopped = client.call("stop_task", json!({"task": id}));
    assert!(
        stopped.text.contains("stopped, killed by signal 9"),
        "{stopped:?}"
    );
    // Unpublished with the task: nothing answers, and the port is free again.
    assert!(curl(port, "/hello.txt").is_none());
    let mut rest = Vec::new();
    use std::io::Read;
    assert!(
        open.read_to_end(&mut rest).is_ok_and(|n| n == 0),
        "the open connection ended without an answer"
    );
    std::net::TcpListener::bind(("127.0.0.1", port)).expect("the port is free again");
}

#[test]
fn serve_port_is_decided_at_net_serve_and_each_refusal_says_which_port_and_why() {
    let env = Env::new();
    env.write("index.html", "asked and published\n");
    env.rules(
        r#".{ .action = "exec.*", .decision = .allow }, .{ .action = "net.serve.*", .decision = .ask }, .{ .action = "net.serve.1999", .decision = .deny }"#,
    );
    let mut client = env.client(true, &[]);
    let port = free_port();
    let started = client.call("run_command", http_server(port));
    assert!(!started.is_error, "{started:?}");
    // A pattern publishes nothing by itself.
    assert!(!started.text.contains("published"), "{started:?}");
    assert!(curl(port, "/").is_none());

    client.elicit_answers.push(person_says(true));
    let published = client.call("serve_port", json!({"port": port}));
    assert!(!published.is_error, "{published:?}");
    let question = client
        .elicited
        .last()
        .expect("a person was asked")
        .to_string();
    assert!(
        question.contains(&format!("net.serve.{port}")),
        "{question}"
    );
    assert_eq!(
        curl_until_served(port, "/index.html"),
        "asked and published\n"
    );

    let refused = |client: &mut crate::support::Client, port: u16, needle: &str| {
        let called = client.call("serve_port", json!({"port": port}));
        assert!(
            called.is_error && called.text.contains(needle),
            "{port}: {called:?}"
        );
    };
    refused(&mut client, 80, "port 80 is under 1024");
    refused(
        &mut client,
        port,
        &format!("port {port} is already published, for task"),
    );
    let busy = std::net::TcpListener::bind(("127.0.0.1", 0)).expect("bind");
    let busy_port = busy.local_addr().expect("addr").port();
    refused(
        &mut client,
        busy_port,
        &format!("port {busy_port} is already in use on this machine"),
    );
    refused(&mut client, 1999, "net.serve.1999 is denied by");
    client.elicit_answers.push(person_says(false));
    refused(&mut client, free_port(), "refused by a person");
    // Up to the session's bound (4), then one more is refused.
    for _ in 0..3 {
        client.elicit_answers.push(person_says(true));
        let more = client.call("serve_port", json!({"port": free_port()}));
        assert!(!more.is_error, "{more:?}");
    }
    refused(
        &mut client,
        free_port(),
        "one more than a session publishes (at most 4",
    );
    drop(busy);
}

#[test]
fn serve_port_is_not_offered_where_no_rule_could_permit_a_port() {
    let env = Env::new();
    env.rules(r#".{ .action = "exec.*", .decision = .allow }"#);
    let mut client = env.client(false, &[]);
    let names = client.tool_names();
    assert!(!names.contains(&"serve_port".to_string()), "{names:?}");
    for tool in ["task_output", "stop_task", "list_tasks"] {
        assert!(names.contains(&tool.to_string()), "{names:?}");
    }
}

#[test]
fn a_background_command_never_asks_and_what_would_ask_is_refused() {
    let env = Env::new();
    env.rules(
        r#".{ .action = "exec.*", .decision = .allow }, .{ .action = "exec.path.touch", .decision = .ask }"#,
    );
    // The client could be asked; a background command still is not.
    let mut client = env.client(true, &[]);
    let refused = client.call(
        "run_command",
        json!({"argv": ["touch", "made-in-background"], "background": true}),
    );
    assert!(
        refused.is_error
            && refused
                .text
                .contains("exec.path.touch would need a person's yes")
            && refused.text.contains("a background command never asks"),
        "{refused:?}"
    );
    assert!(client.elicited.is_empty(), "{:?}", client.elicited);
    std::thread::sleep(Duration::from_millis(300));
    assert!(env.read("made-in-background").is_none());
    let listed = client.call("list_tasks", json!({}));
    assert!(listed.text.contains("no background commands"), "{listed:?}");
    // And a timeout is not a background command's.
    let both = client.call(
        "run_command",
        json!({"argv": ["true"], "background": true, "timeout_seconds": 5}),
    );
    assert!(
        both.is_error && both.text.contains("does not apply"),
        "{both:?}"
    );
}

#[test]
fn output_is_read_from_an_offset_and_a_cut_is_said() {
    let env = Env::new();
    env.rules(r#".{ .action = "exec.*", .decision = .allow }"#);
    let mut client = env.client(false, &[]);
    let started = client.call(
        "run_command",
        json!({"argv": ["sh", "-c", "echo first; sleep 2; echo second; sleep 1000"], "background": true}),
    );
    let id = task_id(&started.text);
    let first = client.call("task_output", json!({"task": id, "wait_seconds": 10}));
    assert_eq!(output_of(&first.text), "first\n", "{first:?}");
    assert!(first.text.contains("next offset 6"), "{first:?}");
    let second = client.call(
        "task_output",
        json!({"task": id, "offset": 6, "wait_seconds": 20}),
    );
    assert_eq!(output_of(&second.text), "second\n", "{second:?}");
    // Two MiB in, the last one kept: a read from 0 says what was dropped.
    let loud = client.call(
        "run_command",
        json!({"argv": ["sh", "-c", "head -c 2097152 /dev/zero | tr '\\000' a; echo; echo the-end"], "background": true}),
    );
    let loud_id = task_id(&loud.text);
    let deadline = Instant::now() + Duration::from_secs(20);
    let listed = loop {
        let listed = client.call("list_tasks", json!({}));
        if listed.text.contains(&format!("task {loud_id}: sh -c"))
            && listed.text.contains("ended, exit status 0")
        {
            break listed;
        }
        assert!(Instant::now() < deadline, "{listed:?}");
        std::thread::sleep(Duration::from_millis(200));
    };
    let total = 2_097_152 + "\nthe-end\n".len();
    assert!(
        listed.text.contains(&format!("output {total} bytes")),
        "{listed:?}"
    );
    let cut = client.call(
        "task_output",
        json!({"task": loud_id, "offset": 0, "max_bytes": 1048576}),
    );
    assert!(
        cut.text.contains(&format!(
            "output cut: {} bytes from offset 0 were dropped",
            total - 1_048_576
        )) && cut.text.contains("the-end"),
        "{}",
        cut.text.chars().take(400).collect::<String>()
    );
}

/// What task_output read, without its header.
pub(crate) fn output_of(text: &str) -> &str {
    text.split_once("--- output ---\n")
        .map_or("", |(_, output)| output)
}

/// The host pids of processes whose command line is exactly `argv`.
fn pids_running(argv: &[&str]) -> Vec<String> {
    let wanted = argv.join("\0") + "\0";
    std::fs::read_dir("/proc")
        .expect("/proc")
        .filter_map(Result::ok)
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .chars()
                .all(|c| c.is_ascii_digit())
        })
        .filter(|e| std::fs::read(e.path().join("cmdline")).is_ok_and(|c| c == wanted.as_bytes()))
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect()
}

fn wait_until(what: &str, limit: Duration, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + limit;
    while !done() {
        assert!(Instant::now() < deadline, "{what} within {limit:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn tasks_end_with_the_session_whether_stdin_closes_or_the_server_is_killed() {
    for killed in [false, true] {
        let env = Env::new();
        env.rules(r#".{ .action = "exec.*", .decision = .allow }"#);
        let marker = format!("1000.{}{}", std::process::id(), u8::from(killed));
        let mut server = env
            .chock()
            .arg("mcp")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn chock mcp");
        let mut stdin = server.stdin.take().expect("stdin");
        let stdout = server.stdout.take().expect("stdout");
        use std::io::{BufRead, Write};
        let mut lines = std::io::BufReader::new(stdout).lines();
        let mut say = |message: serde_json::Value| {
            writeln!(stdin, "{message}").expect("write");
            stdin.flush().expect("flush");
        };
        say(
            json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "chock-tests", "version": "1"}}}),
        );
        lines.next();
        say(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        for n in 0..2 {
            say(
                json!({"jsonrpc": "2.0", "id": 2 + n, "method": "tools/call", "params": {
                "name": "run_command",
                "arguments": {"argv": ["sh", "-c", format!("sleep {marker} & sleep {marker}")], "background": true}}}),
            );
            let answer = lines.next().expect("an answer").expect("a line");
            assert!(answer.contains("started task"), "{answer}");
        }
        // Two tasks, each a shell with a child in the background and one in front.
        wait_until("four sleeps run", Duration::from_secs(10), || {
            pids_running(&["sleep", &marker]).len() == 4
        });
        if killed {
            server.kill().expect("SIGKILL the server");
        } else {
            drop(stdin);
        }
        server.wait().expect("the server ended");
        wait_until("no sleep is left", Duration::from_secs(10), || {
            pids_running(&["sleep", &marker]).is_empty()
        });
    }
}

#[test]
fn task_records_are_read_only_inside_and_the_network_is_the_policys() {
    let env = Env::new();
    env.write(
        "chock.zon",
        r#".{ .policy = .{ .net = .{ .background = .none }, .rules = .{ .{ .action = "exec.*", .decision = .allow }, .{ .action = "net.connect.*", .decision = .allow } } } }"#,
    );
    // A server on the host's loopback, which no sandbox reaches.
    let host = std::net::TcpListener::bind(("127.0.0.1", 0)).expect("bind");
    let host_port = host.local_addr().expect("addr").port();
    let mut client = env.client(false, &[]);
    let reach = format!(
        "import socket\ntry:\n    socket.create_connection(('127.0.0.1', {host_port}), timeout=3)\n    print('reached')\nexcept OSError as e:\n    print('unreachable', e.errno)\n"
    );
    let started = client.call(
        "run_command",
        json!({"argv": ["python3", "-c", reach], "background": true}),
    );
    assert!(started.text.contains("network: none"), "{started:?}");
    let id = task_id(&started.text);
    let output = client.call("task_output", json!({"task": id, "wait_seconds": 10}));
    assert!(output.text.contains("unreachable"), "{output:?}");
    let record = client.call(
        "run_command",
        json!({"argv": ["cat", format!("/run/chock/tasks/{id}.json")]}),
    );
    assert!(
        !record.is_error
            && record.text.contains("\"command\": \"python3 -c")
            && record.text.contains("\"network\": \"none\""),
        "{record:?}"
    );
    let write = client.call(
        "run_command",
        json!({"argv": ["sh", "-c", format!("echo forged > /run/chock/tasks/{id}.json")]}),
    );
    assert!(
        write.is_error
            && (write.text.contains("Read-only file system")
                || write.text.contains("Permission denied")),
        "{write:?}"
    );
    let listed = client.call("list_tasks", json!({}));
    assert!(listed.text.contains("network none"), "{listed:?}");
    drop(host);
}

#[test]
fn git_clone_fetch_and_pull_are_asked_and_not_carried_out() {
    let env = Env::new();
    env.rules(
        r#".{ .action = "exec.*", .decision = .allow }, .{ .action = "git.fetch", .decision = .allow }"#,
    );
    let mut client = env.client(true, &[]);
    let fetch = client.call("run_command", json!({"argv": ["git", "fetch", "origin"]}));
    assert!(
        fetch.is_error
            && fetch
                .text
                .contains("git.fetch was allowed, and it is still not carried out")
            && fetch.text.contains("no network"),
        "{fetch:?}"
    );
    // Asked, answered yes, and still not run.
    client.elicit_answers.push(person_says(true));
    let clone = client.call(
        "run_command",
        json!({"argv": ["git", "clone", "https://example.invalid/x.git", "cloned"]}),
    );
    assert_eq!(client.elicited.len(), 1, "git.clone was asked");
    assert!(
        clone.is_error && clone.text.contains("git.clone was allowed"),
        "{clone:?}"
    );
    assert!(env.read("cloned/.git/HEAD").is_none());
}

#[test]
fn at_most_eight_background_commands_run_at_once() {
    let env = Env::new();
    env.rules(r#".{ .action = "exec.*", .decision = .allow }"#);
    let mut client = env.client(false, &[]);
    for n in 1..=8 {
        let started = client.call(
            "run_command",
            json!({"argv": ["sleep", "1000"], "background": true}),
        );
        assert_eq!(task_id(&started.text), n, "{started:?}");
    }
    let ninth = client.call(
        "run_command",
        json!({"argv": ["sleep", "1000"], "background": true}),
    );
    assert!(
        ninth.is_error
            && ninth
                .text
                .contains("8 background commands are running (tasks 1, 2, 3, 4, 5, 6, 7, 8)"),
        "{ninth:?}"
    );
    let stopped = client.call("stop_task", json!({"task": 3}));
    assert!(stopped.text.contains("stopped"), "{stopped:?}");
    let again = client.call(
        "run_command",
        json!({"argv": ["sleep", "1000"], "background": true}),
    );
    assert_eq!(task_id(&again.text), 9, "{again:?}");
}

/// An ssh agent of the test's own, holding one key.
pub struct SshAgent {
    dir: tempfile::TempDir,
    agent: std::process::Child,
}

impl SshAgent {
    pub fn start() -> SshAgent {
        let dir = tempfile::tempdir().expect("tempdir");
        let key = dir.path().join("key");
        let made = std::process::Command::new("ssh-keygen")
            .args([
                "-q",
                "-t",
                "ed25519",
                "-N",
                "",
                "-C",
                "chock-test-key",
                "-f",
            ])
            .arg(&key)
            .status()
            .expect("ssh-keygen");
        assert!(made.success());
        let agent = std::process::Command::new("ssh-agent")
            .arg("-D")
            .arg("-a")
            .arg(dir.path().join("agent.sock"))
            .stdout(Stdio::null())
            .spawn()
            .expect("ssh-agent");
        let agent = SshAgent { dir, agent };
        wait_until("the agent listens", Duration::from_secs(10), || {
            agent.socket().exists()
        });
        let added = std::process::Command::new("ssh-add")
            .arg(&key)
            .env("SSH_AUTH_SOCK", agent.socket())
            .stderr(Stdio::null())
            .status()
            .expect("ssh-add");
        assert!(added.success());
        agent
    }

    pub fn socket(&self) -> std::path::PathBuf {
        self.dir.path().join("agent.sock")
    }

    /// The public half of the key the agent holds.
    pub fn public_key(&self) -> std::path::PathBuf {
        self.dir.path().join("key.pub")
    }

    /// What the agent holds, as `ssh-add -l` lists it on the host.
    fn keys(&self) -> String {
        let listed = std::process::Command::new("ssh-add")
            .arg("-l")
            .env("SSH_AUTH_SOCK", self.socket())
            .output()
            .expect("ssh-add -l");
        String::from_utf8_lossy(&listed.stdout).into_owned()
    }
}

impl Drop for SshAgent {
    fn drop(&mut self) {
        self.agent.kill().ok();
        self.agent.wait().ok();
    }
}

#[test]
fn an_allowed_git_push_gets_the_ssh_agent_for_that_call_only_to_list_and_sign() {
    let agent = SshAgent::start();
    let env = Env::new();
    env.rules(
        r#".{ .action = "exec.*", .decision = .allow }, .{ .action = "git.push", .decision = .allow }"#,
    );
    let socket = agent.socket();
    let mut client = env.client_with_env(false, &[], &[("SSH_AUTH_SOCK", &socket)]);
    let armed = client.call(
        "run_command",
        json!({"argv": ["sh", "-c", "git push nowhere 2>/dev/null; echo sock=$SSH_AUTH_SOCK; ssh-add -l; ssh-add -D; ssh-add -l"]}),
    );
    assert!(!armed.is_error, "{armed:?}");
    assert!(
        armed.text.contains("sock=/run/chock/ssh-agent.sock"),
        "{armed:?}"
    );
    // Listed twice: removing every key was refused by the proxy.
    assert_eq!(armed.text.matches("chock-test-key").count(), 2, "{armed:?}");
    assert!(
        agent.keys().contains("chock-test-key"),
        "the agent still holds the key"
    );
    // The next command, with no push, has no agent, and the socket is gone.
    let later = client.call(
        "run_command",
        json!({"argv": ["sh", "-c", "echo sock=${SSH_AUTH_SOCK:-none}; ls /run/chock"]}),
    );
    assert!(
        later.text.contains("sock=none") && !later.text.contains("ssh-agent.sock"),
        "{later:?}"
    );
    let left = std::fs::read_dir(env.approve_dir().with_file_name("agent"))
        .map(|d| d.count())
        .unwrap_or(0);
    assert_eq!(
        left, 0,
        "the armed socket's folder is removed after the call"
    );
}
