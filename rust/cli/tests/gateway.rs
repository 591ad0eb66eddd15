//! The MCP gateway for real: `chock mcp` in front of servers from the
//! ecosystem, installed by `scripts/setup` (npm's
//! `@modelcontextprotocol/server-everything` and `server-filesystem`,
//! started in the sandbox; PyPI's `mcp`, whose FastMCP serves Streamable
//! HTTP and the older HTTP+SSE on loopback, and runs as a command server in
//! the sandbox), driven by the scripted client of the `mcp` tests. The
//! command server's network is tested against a lab of network namespaces
//! the test makes (`net_lab`).

use std::net::TcpListener;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::{Env, Site, answered_in_chock_approve, person_says};

mod net_lab;
mod sandbox_fixture;
#[path = "mcp_support/mod.rs"]
mod support;

/// Node's JIT needs pages that are written and then run, which the
/// sandbox refuses unless `sandbox.jit` allows it.
const JIT: &str = r#".{ .action = "sandbox.jit", .decision = .allow }"#;

/// The everything server, with `marker` on its command line so this test
/// can find its process among others'.
fn everything(marker: &str, env: &str) -> String {
    let program = installed("mcp-server-everything");
    format!(
        r#".{{ .name = "everything", .command = .{{ "{program}", "stdio", "{marker}" }}{env} }}"#
    )
}

/// Where an npm server's program is; the test fails saying how to install it.
fn installed(program: &str) -> String {
    for dir in ["/usr/bin", "/usr/local/bin"] {
        let path = Path::new(dir).join(program);
        if path.exists() {
            return path.display().to_string();
        }
    }
    panic!(
        "{program} is not installed: run scripts/setup (it installs the MCP servers these tests use from npm)"
    )
}

/// chock.zon with these servers, secrets and rules.
fn project(env: &Env, servers: &[String], secrets: &str, rules: &[&str]) {
    env.zon(&format!(
        ".{{\n    .mcp = .{{ {} }},\n    .secrets = .{{ {secrets} }},\n    .policy = .{{ .rules = .{{ {} }} }},\n}}\n",
        servers.join(", "),
        rules.join(", ")
    ));
}

/// chock.zon with the everything server alone, JIT allowed, and `rule`.
fn everything_project(env: &Env, marker: &str, rule: &str) {
    project(env, &[everything(marker, "")], "", &[JIT, rule]);
}

/// The decision log as it is on disk, every line.
fn log_text(env: &Env) -> String {
    let log = env
        .approve_dir()
        .parent()
        .expect("log dir")
        .join("decisions.jsonl");
    std::fs::read_to_string(log).expect("the decision log")
}

fn tools(client: &mut support::Client) -> Vec<Value> {
    let listed = client.request("tools/list", json!({}));
    listed["result"]["tools"].as_array().expect("tools").clone()
}

#[test]
fn a_servers_tools_are_listed_with_their_schemas_and_a_denied_tool_is_absent() {
    let env = Env::new();
    env.write("notes/hello.txt", "hello from the workspace\n");
    let filesystem = format!(
        r#".{{ .name = "files", .command = .{{ "{}", "{}" }} }}"#,
        installed("mcp-server-filesystem"),
        env.project.display()
    );
    project(
        &env,
        &[everything("listing", ""), filesystem],
        "",
        &[
            JIT,
            r#".{ .action = "mcp.everything.tool.get-env", .decision = .deny }"#,
            r#".{ .action = "mcp.everything.tool.echo", .decision = .allow }"#,
            r#".{ .action = "mcp.files.tool.*", .decision = .allow }"#,
        ],
    );
    let mut client = env.client(false, &[]);
    let listed = tools(&mut client);
    let names: Vec<&str> = listed.iter().filter_map(|t| t["name"].as_str()).collect();
    // provide_tool, serve_port, request_apply, read_skill and web_search
    // are offered only where the session could use them (a provide rule,
    // a port rule, a workspace, a skill, a search engine).
    let conditional = [
        "provide_tool",
        "serve_port",
        "request_apply",
        "read_skill",
        "web_search",
    ];
    for own in chock_mcp::TOOL_NAMES
        .iter()
        .filter(|t| !conditional.contains(*t) && !chock_mcp::LSP_TOOLS.contains(*t))
    {
        assert!(
            names.contains(own),
            "Chock's own {own} is not offered beside the servers' tools: {names:?}"
        );
    }
    assert!(names.contains(&"everything__echo"), "{names:?}");
    assert!(names.contains(&"files__read_text_file"), "{names:?}");
    assert!(
        !names.contains(&"everything__get-env"),
        "a tool denied at start is not offered: {names:?}"
    );
    // The server's own schema, passed through.
    let echo = listed
        .iter()
        .find(|t| t["name"] == "everything__echo")
        .expect("echo");
    assert_eq!(
        echo["inputSchema"]["properties"]["message"]["type"], "string",
        "{echo}"
    );
    assert_eq!(
        echo["inputSchema"]["required"],
        json!(["message"]),
        "{echo}"
    );

    let called = client.call("everything__echo", json!({"message": "a-private-argument"}));
    assert!(!called.is_error, "{called:?}");
    assert_eq!(called.text, "Echo: a-private-argument");
    let read = client.call(
        "files__read_text_file",
        json!({"path": env.project.join("notes/hello.txt")}),
    );
    assert!(read.text.contains("hello from the workspace"), "{read:?}");
    // A denied tool called anyway is refused, and nothing reaches the server.
    let denied = client.call("everything__get-env", json!({}));
    assert!(
        denied.is_error && denied.text.contains("not offered"),
        "{denied:?}"
    );

    let echo_lines = env.logged("mcp.everything.tool.echo");
    assert_eq!(echo_lines.len(), 1, "{echo_lines:?}");
    assert_eq!(echo_lines[0]["tool"], "everything__echo");
    assert_eq!(echo_lines[0]["decision"], "allow");
    let denied_lines = env.logged("mcp.everything.tool.get-env");
    assert_eq!(
        denied_lines.len(),
        1,
        "the start row is logged once: {denied_lines:?}"
    );
    assert_eq!(denied_lines[0]["decision"], "deny");
    let log = log_text(&env);
    assert!(
        !log.contains("a-private-argument"),
        "arguments are never logged"
    );
}

#[test]
fn an_asked_call_is_answered_by_elicitation_and_by_chock_approve() {
    let env = Env::new();
    everything_project(
        &env,
        "asking",
        r#".{ .action = "mcp.everything.tool.echo", .decision = .ask }"#,
    );
    let mut client = env.client(true, &[]);
    client.elicit_answers.push(person_says(true));
    let called = client.call("everything__echo", json!({"message": "yes please"}));
    assert_eq!(called.text, "Echo: yes please", "{called:?}");
    assert!(
        client.elicited[0]["params"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("everything__echo wants mcp.everything.tool.echo")),
        "{:?}",
        client.elicited
    );
    client.elicit_answers.push(person_says(false));
    let refused = client.call("everything__echo", json!({"message": "no"}));
    assert!(
        refused.is_error && refused.text.contains("refused by a person"),
        "{refused:?}"
    );
    env.assert_logged("mcp.everything.tool.echo", "deny", "person");
    drop(client);

    let (question, called) =
        answered_in_chock_approve(&env, "everything__echo", json!({"message": "approved"}));
    assert!(question.contains("mcp.everything.tool.echo"), "{question}");
    assert!(
        question.contains(r#"arguments: {"message":"approved"}"#),
        "the person reads what the call will be given: {question}"
    );
    assert_eq!(called.text, "Echo: approved", "{called:?}");
    env.assert_logged("mcp.everything.tool.echo", "allow", "person");
}

/// A FastMCP server on loopback, from PyPI's `mcp`, over Streamable HTTP
/// (`streamable-http`, at /mcp) or the older HTTP+SSE (`sse`, at /sse).
struct FastMcp {
    child: Child,
    port: u16,
    path: &'static str,
}

impl FastMcp {
    fn start(transport: &'static str) -> FastMcp {
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let script = r#"
import sys
from mcp.server.fastmcp import FastMCP
server = FastMCP("notes", host="127.0.0.1", port=int(sys.argv[1]))

@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b

server.run(transport=sys.argv[2])
"#;
        let child = Command::new("python3")
            .args(["-c", script, &port.to_string(), transport])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("python3 (run scripts/setup)");
        let deadline = Instant::now() + Duration::from_secs(30);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                Instant::now() < deadline,
                "the FastMCP server did not listen within 30 s: is PyPI's `mcp` installed? (scripts/setup)"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        let path = if transport == "sse" { "/sse" } else { "/mcp" };
        FastMcp { child, port, path }
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}{}", self.port, self.path)
    }
}

impl Drop for FastMcp {
    fn drop(&mut self) {
        self.child.kill().ok();
        self.child.wait().ok();
    }
}

#[test]
fn a_url_server_is_reached_only_at_a_host_a_rule_allows() {
    let (_fast, env, _, client) = notes_added_through_the_gateway("streamable-http");
    let line = env
        .logged("mcp.notes.host.1.0.0.127")
        .pop()
        .expect("logged");
    assert_eq!(
        (&line["decision"], &line["subject"]),
        (&json!("allow"), &json!("127.0.0.1"))
    );
    drop(client);

    // With no rule for the host, nothing connects: a site that records
    // every request stands where the server was.
    let site = Site::start("127.0.0.1", vec![]);
    let server = format!(r#".{{ .name = "notes", .url = "{}" }}"#, site.url("/mcp"));
    notes_not_offered_without_a_rule(&env, server);
    assert!(
        site.hits("/mcp").is_empty(),
        "nothing reached a host no rule allows"
    );

    // A URL two parsers read differently: a reader would see 127.0.0.1
    // (allowed), the HTTP client would connect to 127.0.0.2. chock.zon is
    // refused at its line, and the decoy listening at 127.0.0.2 hears nothing.
    let decoy = Site::start("127.0.0.2", vec![]);
    let server = format!(
        r#".{{ .name = "notes", .url = "http://127.0.0.2:{}\\@127.0.0.1/mcp" }}"#,
        decoy.addr.port()
    );
    project(
        &env,
        &[server],
        "",
        &[r#".{ .action = "mcp.notes.host.1.0.0.127", .decision = .allow }"#],
    );
    let refused = env
        .chock()
        .arg("mcp")
        .stdin(Stdio::null())
        .output()
        .expect("chock mcp");
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("chock.zon:2:") && stderr.contains("write the URL plainly"),
        "{stderr}"
    );
    assert!(
        decoy.requests.lock().expect("requests").is_empty(),
        "nothing reached the decoy"
    );
}

/// The operator's config.zon keeps secret `API_KEY` in the variable
/// `CHOCK_TEST_API_KEY` of the shell `chock mcp` is started from.
fn operator_keeps_api_key(env: &Env) {
    std::fs::create_dir_all(env.config_dir()).expect("mkdir");
    std::fs::write(
        env.config_dir().join("config.zon"),
        r#".{ .secrets = .{ .API_KEY = .{ .env = "CHOCK_TEST_API_KEY" } } }"#,
    )
    .expect("config.zon");
}

const SECRET: &str = "sk-test-7f3a9c1e5d";

#[test]
fn a_secret_is_given_to_one_call_absent_from_the_next_scrubbed_and_never_logged() {
    let env = Env::new();
    operator_keeps_api_key(&env);
    project(
        &env,
        &[],
        r#""API_KEY""#,
        &[
            r#".{ .action = "exec.*", .decision = .allow }"#,
            r#".{ .action = "secret.use.API_KEY", .decision = .ask }"#,
        ],
    );
    let mut client = env.client_with_env(true, &[], &[("CHOCK_TEST_API_KEY", Path::new(SECRET))]);
    client.elicit_answers.push(person_says(true));
    let given = client.call(
        "run_command",
        json!({"argv": ["sh", "-c", "echo key=$API_KEY; echo ${#API_KEY} chars"], "secrets": ["API_KEY"]}),
    );
    assert!(!given.is_error, "{given:?}");
    assert!(
        given.text.contains("key=[secret API_KEY]"),
        "scrubbed: {given:?}"
    );
    assert!(
        given.text.contains(&format!("{} chars", SECRET.len())),
        "given: {given:?}"
    );
    assert!(!given.text.contains(SECRET));
    let next = client.call(
        "run_command",
        json!({"argv": ["sh", "-c", "echo key=${API_KEY:-none}"]}),
    );
    assert!(
        next.text.contains("key=none"),
        "absent from the next call: {next:?}"
    );
    client.elicit_answers.push(person_says(false));
    let refused = client.call(
        "run_command",
        json!({"argv": ["sh", "-c", "echo ran"], "secrets": ["API_KEY"]}),
    );
    assert!(
        refused.is_error && !refused.text.contains("ran\n"),
        "a refused secret refuses the call: {refused:?}"
    );
    let unnamed = client.call(
        "run_command",
        json!({"argv": ["true"], "secrets": ["OTHER"]}),
    );
    assert!(
        unnamed.is_error && unnamed.text.contains("not named in .secrets"),
        "{unnamed:?}"
    );
    let lines = env.logged("secret.use.API_KEY");
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert_eq!(lines[0]["subject"], "API_KEY", "the name is logged");
    let log = log_text(&env);
    assert!(!log.contains(SECRET), "the value is never logged");
}

#[test]
fn a_server_is_given_a_secret_only_when_allowed_at_start_and_its_output_is_scrubbed() {
    let env = Env::new();
    operator_keeps_api_key(&env);
    let server = everything("secret", r#", .env = .{ .API_KEY = "API_KEY" }"#);
    let rules = |decision: &str| {
        vec![
            JIT.to_owned(),
            r#".{ .action = "mcp.everything.tool.*", .decision = .allow }"#.to_owned(),
            format!(r#".{{ .action = "secret.use.API_KEY", .decision = .{decision} }}"#),
        ]
    };
    let vars = [("CHOCK_TEST_API_KEY", Path::new(SECRET))];
    let allowed = rules("allow");
    project(
        &env,
        std::slice::from_ref(&server),
        r#""API_KEY""#,
        &allowed.iter().map(String::as_str).collect::<Vec<_>>(),
    );
    let mut client = env.client_with_env(false, &[], &vars);
    let shown = client.call("everything__get-env", json!({}));
    assert!(shown.text.contains("[secret API_KEY]"), "{shown:?}");
    assert!(!shown.text.contains(SECRET), "{shown:?}");
    assert!(
        !shown.text.contains("CHOCK_TEST_API_KEY"),
        "the shell's variables stay out of the sandbox"
    );
    drop(client);
    let line = env
        .logged("secret.use.API_KEY")
        .pop()
        .expect("logged at start");
    assert_eq!(
        (&line["decision"], &line["subject"]),
        (&json!("allow"), &json!("API_KEY"))
    );

    // Ask, at start, where nobody can answer: the server starts without it.
    let asked = rules("ask");
    project(
        &env,
        &[server],
        r#""API_KEY""#,
        &asked.iter().map(String::as_str).collect::<Vec<_>>(),
    );
    let mut client = env.client_with_env(false, &[], &vars);
    let shown = client.call("everything__get-env", json!({}));
    assert!(!shown.is_error, "{shown:?}");
    assert!(!shown.text.contains("API_KEY"), "not given: {shown:?}");
    let log = log_text(&env);
    assert!(!log.contains(SECRET), "the value is never logged");
}

/// The host pids of this test's everything server (found by its marker).
fn server_pids(marker: &str) -> Vec<i32> {
    std::fs::read_dir("/proc")
        .expect("/proc")
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|c| {
                let text = String::from_utf8_lossy(&c);
                text.contains("mcp-server-everything") && text.contains(marker)
            })
        })
        .collect()
}

fn kill_server(marker: &str) {
    let pids = server_pids(marker);
    assert!(!pids.is_empty(), "the server with marker {marker} runs");
    for pid in pids {
        Command::new("kill")
            .args(["-9", &pid.to_string()])
            .status()
            .expect("kill");
    }
    let deadline = Instant::now() + Duration::from_secs(10);
    while !server_pids(marker).is_empty() {
        assert!(Instant::now() < deadline, "the server did not die");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_server_that_dies_is_started_again_once_then_reported() {
    let env = Env::new();
    let marker = format!("dies-{}", std::process::id());
    everything_project(
        &env,
        &marker,
        r#".{ .action = "mcp.everything.tool.*", .decision = .allow }"#,
    );
    let mut client = env.client(false, &[]);
    assert_eq!(
        client
            .call("everything__echo", json!({"message": "1"}))
            .text,
        "Echo: 1"
    );
    kill_server(&marker);
    assert!(
        client.stderr_says("MCP server `everything` stopped: "),
        "{}",
        client.stderr()
    );
    let again = client.call("everything__echo", json!({"message": "2"}));
    assert_eq!(again.text, "Echo: 2", "started again: {again:?}");
    assert!(
        client.stderr_says("starting it again, once"),
        "{}",
        client.stderr()
    );
    kill_server(&marker);
    let deadline = Instant::now() + Duration::from_secs(30);
    while client
        .stderr()
        .matches("MCP server `everything` stopped: ")
        .count()
        < 2
    {
        assert!(Instant::now() < deadline, "{}", client.stderr());
        std::thread::sleep(Duration::from_millis(20));
    }
    let reported = client.call("everything__echo", json!({"message": "3"}));
    assert!(
        reported.is_error
            && reported
                .text
                .contains("after it had been started again once"),
        "{reported:?}"
    );
}

#[test]
fn progress_and_cancellation_pass_through() {
    let env = Env::new();
    everything_project(
        &env,
        "progress",
        r#".{ .action = "mcp.everything.tool.*", .decision = .allow }"#,
    );
    let mut client = env.client(false, &[]);
    let done = client.request(
        "tools/call",
        json!({"name": "everything__trigger-long-running-operation",
               "arguments": {"duration": 1, "steps": 2},
               "_meta": {"progressToken": "mine-7"}}),
    );
    assert!(
        done["result"]["content"][0]["text"]
            .as_str()
            .is_some_and(|t| t.contains("completed")),
        "{done}"
    );
    // A progress notification sent just before the result may be passed
    // on just after it: one more call gives it time to arrive.
    client.call("everything__echo", json!({"message": "after"}));
    let progress = |client: &support::Client, token: &str| {
        client
            .notifications
            .iter()
            .filter(|n| {
                n["method"] == "notifications/progress" && n["params"]["progressToken"] == token
            })
            .count()
    };
    assert_eq!(progress(&client, "mine-7"), 2, "{:?}", client.notifications);

    // A call the client cancels: the gateway stops waiting, tells the
    // server, and passes on no more of its progress.
    client.send(&json!({"jsonrpc": "2.0", "id": 900, "method": "tools/call",
        "params": {"name": "everything__trigger-long-running-operation",
                   "arguments": {"duration": 20, "steps": 40}, "_meta": {"progressToken": "p"}}}));
    let deadline = Instant::now() + Duration::from_secs(20);
    while progress(&client, "p") == 0 {
        assert!(
            Instant::now() < deadline,
            "no progress came: {:?}",
            client.notifications
        );
        client.call("everything__echo", json!({"message": "wait"}));
    }
    client.send(
        &json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": 900, "reason": "test"}}),
    );
    std::thread::sleep(Duration::from_secs(2));
    let before = progress(&client, "p");
    std::thread::sleep(Duration::from_secs(2));
    assert_eq!(
        client
            .call("everything__echo", json!({"message": "still serving"}))
            .text,
        "Echo: still serving"
    );
    assert_eq!(
        progress(&client, "p"),
        before,
        "no progress after the cancel"
    );
}

#[test]
fn resources_and_prompts_are_passed_on() {
    let env = Env::new();
    project(&env, &[everything("resources", "")], "", &[JIT]);
    let mut client = env.client(false, &[]);
    let resources = client.request("resources/list", json!({}));
    let first = resources["result"]["resources"][0].clone();
    let uri = first["uri"]
        .as_str()
        .unwrap_or_else(|| panic!("{resources}"));
    let read = client.request("resources/read", json!({"uri": uri}));
    assert_eq!(read["result"]["contents"][0]["uri"], uri, "{read}");
    let prompts = client.request("prompts/list", json!({}));
    let names: Vec<&str> = prompts["result"]["prompts"]
        .as_array()
        .expect("prompts")
        .iter()
        .filter_map(|p| p["name"].as_str())
        .collect();
    assert!(
        names.iter().all(|n| n.starts_with("everything__")),
        "{names:?}"
    );
    let simple = names
        .iter()
        .find(|n| n.contains("simple"))
        .expect("a simple prompt");
    let got = client.request("prompts/get", json!({"name": simple}));
    assert!(got["result"]["messages"].is_array(), "{got}");
}

#[test]
fn migrate_shows_then_writes_an_agents_servers_and_permissions() {
    let env = Env::new();
    env.write(
        ".mcp.json",
        r#"{ "mcpServers": {
            "github": { "command": "npx", "args": ["-y", "@modelcontextprotocol/server-github"],
                        "env": { "GITHUB_PERSONAL_ACCESS_TOKEN": "ghp_not_to_be_copied" } },
            "notion": { "type": "http", "url": "https://mcp.notion.com/mcp" }
        } }"#,
    );
    env.write(
        ".claude/settings.json",
        r#"{ "permissions": { "allow": ["mcp__github__get_issue"], "deny": ["mcp__notion__delete_page"] } }"#,
    );
    env.rules(r#".{ .action = "git.*", .decision = .allow }"#);
    let before = env.read("chock.zon");
    let shown = env
        .chock()
        .args(["migrate", "claude"])
        .output()
        .expect("migrate");
    let text = String::from_utf8_lossy(&shown.stdout);
    assert!(shown.status.success(), "{text}");
    assert!(
        text.contains(r#".name = "github""#) && text.contains("--write"),
        "{text}"
    );
    assert!(
        text.contains(
            ".GITHUB_PERSONAL_ACCESS_TOKEN = .{ .env = \"GITHUB_PERSONAL_ACCESS_TOKEN\" }"
        ),
        "{text}"
    );
    assert!(!text.contains("ghp_not_to_be_copied"), "{text}");
    assert_eq!(
        env.read("chock.zon"),
        before,
        "nothing written without --write"
    );

    let written = env
        .chock()
        .args(["migrate", "claude", "--write"])
        .output()
        .expect("migrate");
    assert!(
        written.status.success(),
        "{}",
        String::from_utf8_lossy(&written.stderr)
    );
    let zon = env.read("chock.zon").expect("chock.zon");
    assert!(!zon.contains("ghp_not_to_be_copied"), "{zon}");
    let explain = |action: &str| {
        let out = env
            .chock()
            .args(["policy", "explain", action, "--json"])
            .output()
            .expect("explain");
        let value: Value =
            serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {zon}"));
        value["decision"].as_str().unwrap_or_default().to_owned()
    };
    assert_eq!(explain("git.push"), "allow", "the project's own rules stay");
    assert_eq!(explain("mcp.github.tool.get_issue"), "allow");
    assert_eq!(explain("mcp.notion.tool.delete_page"), "deny");
    assert_eq!(explain("mcp.notion.host.com.notion.mcp"), "allow");
    let again = env
        .chock()
        .args(["migrate", "claude", "--write"])
        .output()
        .expect("migrate");
    assert!(
        !again.status.success(),
        "a second write would merge servers by guesswork"
    );
    assert!(String::from_utf8_lossy(&again.stderr).contains("by hand"));
}

#[test]
fn a_server_named_as_chock_itself_is_not_started() {
    let env = Env::new();
    let server = format!(
        r#".{{ .name = "chock", .command = .{{ "{}", "stdio" }} }}"#,
        installed("mcp-server-everything")
    );
    project(&env, &[server], "", &[]);
    let (mut client, init) = env.client_speaking("2025-06-18", false, &[], &[]);
    let instructions = init["result"]["instructions"].as_str().unwrap_or_default();
    assert!(
        instructions.contains("MCP server `chock` is not offered: its name is this server's own"),
        "{instructions}"
    );
    assert!(
        !tools(&mut client)
            .iter()
            .any(|t| t["name"].as_str().is_some_and(|n| n.starts_with("chock__"))),
        "none of its tools is offered"
    );
}

#[test]
fn a_servers_own_question_reaches_the_client() {
    let env = Env::new();
    everything_project(
        &env,
        "elicits",
        r#".{ .action = "mcp.everything.tool.*", .decision = .allow }"#,
    );
    let mut client = env.client(true, &[]);
    client.elicit_answers.push(json!({"action": "decline"}));
    let called = client.call("everything__trigger-elicitation-request", json!({}));
    assert!(called.text.contains("declined"), "{called:?}");
    assert_eq!(client.elicited.len(), 1, "{:?}", client.elicited);
    assert!(
        client.elicited[0]["params"]["requestedSchema"].is_object(),
        "the server's own form: {:?}",
        client.elicited
    );
}

#[test]
fn a_url_server_speaking_only_the_older_sse_transport_is_reached_at_an_allowed_host() {
    let (_fast, env, server, client) = notes_added_through_the_gateway("sse");
    assert!(
        client.stderr_says("speaks the older HTTP+SSE transport"),
        "{}",
        client.stderr()
    );
    drop(client);
    // The same host decision as Streamable HTTP: no rule, no connection.
    notes_not_offered_without_a_rule(&env, server);
}

/// A FastMCP `notes` server over `transport`, its host and its `add` tool
/// allowed: listed through the gateway with its schema and answering 42.
/// The server, the project, its block in chock.zon and the open client.
fn notes_added_through_the_gateway(
    transport: &'static str,
) -> (FastMcp, Env, String, support::Client) {
    let fast = FastMcp::start(transport);
    let env = Env::new();
    let server = format!(r#".{{ .name = "notes", .url = "{}" }}"#, fast.url());
    project(
        &env,
        std::slice::from_ref(&server),
        "",
        &[
            r#".{ .action = "mcp.notes.host.1.0.0.127", .decision = .allow }"#,
            r#".{ .action = "mcp.notes.tool.add", .decision = .allow }"#,
        ],
    );
    let mut client = env.client(false, &[]);
    let listed = tools(&mut client);
    let add = listed
        .iter()
        .find(|t| t["name"] == "notes__add")
        .unwrap_or_else(|| panic!("notes__add is listed: {listed:?} {}", client.stderr()));
    for argument in ["a", "b"] {
        assert_eq!(
            add["inputSchema"]["properties"][argument]["type"], "integer",
            "{add}"
        );
    }
    let called = client.call("notes__add", json!({"a": 2, "b": 40}));
    assert!(called.text.contains("42"), "{called:?}");
    (fast, env, server, client)
}

/// With no rule for its host, the url server `server` (named `notes`) is
/// not offered, the instructions name the rule that would offer it, and
/// its host was asked with nobody there.
fn notes_not_offered_without_a_rule(env: &Env, server: String) {
    project(env, &[server], "", &[]);
    let (mut client, init) = env.client_speaking("2025-06-18", false, &[], &[]);
    let instructions = init["result"]["instructions"].as_str().unwrap_or_default();
    assert!(
        instructions.contains("MCP server `notes` is not offered")
            && instructions
                .contains(r#".{ .action = "mcp.notes.host.1.0.0.127", .decision = .allow }"#),
        "{instructions}"
    );
    assert!(
        !tools(&mut client)
            .iter()
            .any(|t| t["name"].as_str().is_some_and(|n| n.starts_with("notes__")))
    );
    let line = env
        .logged("mcp.notes.host.1.0.0.127")
        .pop()
        .expect("logged");
    assert_eq!(
        (&line["decision"], &line["answered_by"]),
        (&json!("ask"), &json!("nobody"))
    );
}

#[test]
fn a_secret_given_as_a_file_is_there_for_one_call_only_scrubbed_and_never_logged() {
    let env = Env::new();
    operator_keeps_api_key(&env);
    project(
        &env,
        &[],
        r#""API_KEY""#,
        &[
            r#".{ .action = "exec.*", .decision = .allow }"#,
            r#".{ .action = "secret.use.API_KEY", .decision = .allow }"#,
        ],
    );
    let mut client = env.client_with_env(false, &[], &[("CHOCK_TEST_API_KEY", Path::new(SECRET))]);
    let file = "/run/chock/secrets/API_KEY";
    let given = client.call(
        "run_command",
        json!({"argv": ["sh", "-c", format!(
            "echo key=$(cat {file}); echo bytes=$(wc -c < {file}); \
             echo mode=$(stat -c '%a %u' {file}) dir=$(stat -c %a /run/chock/secrets) me=$(id -u); \
             echo env=${{API_KEY:-none}}; \
             (echo x > {file}) 2>/dev/null && echo written || echo read-only; \
             grep ' /run/chock/secrets ' /proc/self/mounts | cut -d' ' -f3,4")],
         "secret_files": ["API_KEY"]}),
    );
    assert!(!given.is_error, "{given:?}");
    assert!(
        given.text.contains("key=[secret API_KEY]"),
        "read, and scrubbed from the answer: {given:?}"
    );
    assert!(!given.text.contains(SECRET), "{given:?}");
    assert!(
        given.text.contains(&format!("bytes={}", SECRET.len())),
        "{given:?}"
    );
    let me = given
        .text
        .split("me=")
        .nth(1)
        .and_then(|rest| rest.lines().next())
        .expect("the sandbox user's id");
    assert!(
        given.text.contains(&format!("mode=400 {me} dir=500")),
        "0400, owned by the sandbox's user, in a 0500 folder: {given:?}"
    );
    assert!(given.text.contains("env=none"), "a file only: {given:?}");
    assert!(given.text.contains("read-only"), "{given:?}");
    assert!(
        given.text.contains("tmpfs ro,"),
        "a read-only tmpfs of its own: {given:?}"
    );

    let next = client.call(
        "run_command",
        json!({"argv": ["sh", "-c", format!("test -e {file} && echo present || echo absent")]}),
    );
    assert!(
        next.text.contains("absent"),
        "gone with the call that was given it: {next:?}"
    );
    let lines = env.logged("secret.use.API_KEY");
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert_eq!(
        (&lines[0]["decision"], &lines[0]["subject"]),
        (&json!("allow"), &json!("API_KEY"))
    );
    assert!(
        !log_text(&env).contains(SECRET),
        "the value is never logged"
    );
}

/// A command server written with PyPI's `mcp` (FastMCP over stdio), run
/// in the sandbox on the host's /usr/bin/python3: `fetch` reads a URL,
/// `secret` the file it may have been given.
const FETCHER: &str = r#"
import urllib.request
from mcp.server.fastmcp import FastMCP
server = FastMCP("fetcher")

@server.tool()
def fetch(url: str) -> str:
    """Fetch a URL."""
    try:
        with urllib.request.urlopen(url, timeout=10) as answer:
            return "fetched: " + answer.read().decode()
    except Exception as e:
        return f"failed: {e}"

@server.tool()
def secret() -> str:
    """Read the secret file."""
    try:
        return "secret: " + open("/run/chock/secrets/API_KEY").read()
    except OSError as e:
        return f"no secret: {e}"

server.run()
"#;

#[test]
fn a_command_servers_network_is_its_own_rule_then_each_host() {
    let lab = net_lab::Lab::new();
    // This thread, and the chock mcp it starts, live in the lab's client namespace.
    lab.enter();
    let env = Env::new();
    operator_keeps_api_key(&env);
    env.write("fetcher.py", FETCHER);
    let server = format!(
        r#".{{ .name = "fetcher", .command = .{{ "/usr/bin/python3", "{}" }}, .secret_files = .{{ "API_KEY" }} }}"#,
        env.project.join("fetcher.py").display()
    );
    let host_rules = [
        r#".{ .action = "mcp.fetcher.tool.*", .decision = .allow }"#,
        r#".{ .action = "secret.use.API_KEY", .decision = .allow }"#,
        r#".{ .action = "net.connect.test.allowed.*", .decision = .allow }"#,
        r#".{ .action = "net.connect.test.asked.*", .decision = .ask }"#,
    ];
    let resolver = lab.resolver();
    let vars = [
        ("CHOCK_TEST_API_KEY", Path::new(SECRET)),
        ("CHOCK_NET_RESOLVER", Path::new(&resolver)),
    ];
    let mut rules = host_rules.to_vec();
    rules.push(r#".{ .action = "mcp.fetcher.network", .decision = .allow }"#);
    project(&env, std::slice::from_ref(&server), r#""API_KEY""#, &rules);
    let mut client = env.client_with_env(false, &[], &vars);
    let reached = client.call(
        "fetcher__fetch",
        json!({"url": "http://allowed.test:8080/"}),
    );
    assert!(
        reached.text.contains("fetched: hello through the router"),
        "{reached:?} {}",
        client.stderr()
    );
    // A host the rules only ask about: nobody can be asked for a server.
    let asked = client.call("fetcher__fetch", json!({"url": "http://asked.test:8080/"}));
    assert!(asked.text.contains("failed"), "{asked:?}");
    assert_eq!(
        lab.log().matches("8080 ").count(),
        1,
        "only the allowed host was connected to: {}",
        lab.log()
    );
    let connect = env.logged("net.connect.test.allowed.8080");
    assert_eq!(connect[0]["decision"], "allow", "{connect:?}");
    assert_eq!(env.logged("mcp.fetcher.network")[0]["decision"], "allow");
    // The server's secret file, read by its tool, scrubbed from the answer.
    let secret = client.call("fetcher__secret", json!({}));
    assert!(
        secret.text.contains("secret: [secret API_KEY]") && !secret.text.contains(SECRET),
        "{secret:?}"
    );
    drop(client);

    // Without mcp.fetcher.network the server has loopback only: the host
    // is never looked up and never connected to, whatever net.connect says.
    project(&env, &[server], r#""API_KEY""#, &host_rules);
    let before = lab.log();
    let mut client = env.client_with_env(false, &[], &vars);
    let refused = client.call(
        "fetcher__fetch",
        json!({"url": "http://allowed.test:8080/"}),
    );
    assert!(refused.text.contains("failed"), "{refused:?}");
    assert_eq!(
        lab.log(),
        before,
        "no lookup and no connection reached the lab"
    );
    let line = env.logged("mcp.fetcher.network").pop().expect("logged");
    assert_eq!(
        (&line["decision"], &line["answered_by"]),
        (&json!("ask"), &json!("nobody"))
    );
    assert!(
        !log_text(&env).contains(SECRET),
        "the value is never logged"
    );
}

/// The project's own hostile server ([`hostile_mcp/server.py`], the
/// official MCP Python SDK over stdio), copied into the project so the
/// sandbox shows it, run as `name` with `fields` added to its block.
fn hostile(env: &Env, name: &str, fields: &str) -> String {
    env.write("hostile.py", include_str!("hostile_mcp/server.py"));
    format!(
        r#".{{ .name = "{name}", .command = .{{ "/usr/bin/python3", "{}", "{name}" }}{fields} }}"#,
        env.project.join("hostile.py").display()
    )
}

/// The host pids of the hostile server named `name` of the project at `dir`.
fn hostile_pids(dir: &Path, name: &str) -> Vec<i32> {
    let script = dir.join("hostile.py").display().to_string();
    std::fs::read_dir("/proc")
        .expect("/proc")
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|c| {
                let args: Vec<&[u8]> = c.split(|b| *b == 0).collect();
                args.windows(2)
                    .any(|w| w[0] == script.as_bytes() && w[1] == name.as_bytes())
            })
        })
        .collect()
}

fn allow_tools(server: &str) -> String {
    format!(r#".{{ .action = "mcp.{server}.tool.*", .decision = .allow }}"#)
}

#[test]
fn a_restarted_server_is_kept_while_idle_the_call_after_a_crash_waits_for_it_and_none_outlives_chock()
 {
    let env = Env::new();
    project(&env, &[hostile(&env, "h", "")], "", &[&allow_tools("h")]);
    let mut client = env.client(false, &[]);
    let first = client.call("h__started", json!({}));
    assert!(!first.is_error, "{first:?}");
    let crashed = client.call("h__crash", json!({}));
    assert!(
        crashed.is_error
            && crashed
                .text
                .contains("MCP server `h` stopped during the call"),
        "{crashed:?}"
    );
    // The very next call waits for the server started again.
    let second = client.call("h__started", json!({}));
    assert!(
        !second.is_error,
        "the call after a crash is answered: {second:?}"
    );
    assert_ne!(second.text, first.text, "by a new start");
    // Idle longer than the runtime keeps a spare thread (10 s): a server
    // tied to such a thread would be killed, and its restart spent.
    std::thread::sleep(Duration::from_secs(14));
    let third = client.call("h__started", json!({}));
    assert_eq!(
        (third.is_error, &third.text),
        (false, &second.text),
        "the same server, still running: {}",
        client.stderr()
    );
    assert_eq!(
        client.stderr().matches("MCP server `h` stopped: ").count(),
        1,
        "it stopped once, when it crashed: {}",
        client.stderr()
    );
    // Chock killed outright: its servers go with it.
    let pids = hostile_pids(&env.project, "h");
    assert!(!pids.is_empty(), "the server runs");
    Command::new("kill")
        .args(["-9", &client.pid().to_string()])
        .status()
        .expect("kill");
    let deadline = Instant::now() + Duration::from_secs(10);
    while !hostile_pids(&env.project, "h").is_empty() {
        assert!(
            Instant::now() < deadline,
            "the server outlived chock: {:?}",
            hostile_pids(&env.project, "h")
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The JSON-RPC error a tools/call answered (it fails when it answered a result).
fn rpc_error(client: &mut support::Client, tool: &str, arguments: Value) -> (Value, Duration) {
    let began = Instant::now();
    let answered = client.request("tools/call", json!({"name": tool, "arguments": arguments}));
    let took = began.elapsed();
    assert!(
        answered["error"]["message"].is_string(),
        "{tool}: a JSON-RPC error, not {}",
        answered.to_string().chars().take(400).collect::<String>()
    );
    (answered["error"].clone(), took)
}

#[test]
fn an_answer_over_its_bound_and_a_call_never_answered_fail_naming_the_server() {
    let env = Env::new();
    project(
        &env,
        &[
            hostile(&env, "small", ", .timeout_s = 3, .max_answer_mib = 2"),
            hostile(&env, "big", ""),
        ],
        "",
        &[&allow_tools("small"), &allow_tools("big")],
    );
    let mut client = env.client(false, &[]);
    let fits = client.call("small__huge", json!({"mib": 1}));
    assert_eq!(fits.text.len(), 1 << 20, "1 MiB is within 2");
    let (error, took) = rpc_error(&mut client, "small__huge", json!({"mib": 3}));
    let message = error["message"].as_str().expect("message");
    assert!(
        message.contains("MCP server `small`") && message.contains("2 MiB"),
        "{error}"
    );
    assert!(
        took < Duration::from_secs(3),
        "at once, not at the time bound: {took:?}"
    );
    // The default bound: 16 MiB.
    let (error, _) = rpc_error(&mut client, "big__huge", json!({"mib": 17}));
    let message = error["message"].as_str().expect("message");
    assert!(
        message.contains("MCP server `big`") && message.contains("16 MiB"),
        "{error}"
    );
    let (error, took) = rpc_error(&mut client, "small__hang", json!({}));
    let message = error["message"].as_str().expect("message");
    assert!(
        message.contains("MCP server `small` did not answer within 3 s")
            && message.contains(".timeout_s"),
        "{error}"
    );
    assert!(
        took >= Duration::from_secs(3) && took < Duration::from_secs(10),
        "{took:?}"
    );
    // A flood of lines that are not JSON-RPC is dropped, said of in a
    // few lines of Chock's own output, not one each.
    let flooded = client.call("small__garbage", json!({"lines": 5000}));
    assert_eq!(flooded.text, "written", "{flooded:?}");
    let said = client.stderr().matches("that is not JSON-RPC").count();
    assert!((1..=13).contains(&said), "{said}: {}", client.stderr());
    // Both servers are kept, and answer.
    for server in ["small", "big"] {
        let echoed = client.call(&format!("{server}__echo"), json!({"text": "still here"}));
        assert_eq!(echoed.text, "still here", "{server}: {echoed:?}");
    }
    assert!(
        !client.stderr().contains("stopped: "),
        "no server stopped: {}",
        client.stderr()
    );
}

#[test]
fn what_a_server_says_anywhere_is_scrubbed_of_the_secret_it_was_given() {
    let env = Env::new();
    operator_keeps_api_key(&env);
    project(
        &env,
        &[hostile(&env, "h", r#", .env = .{ .API_KEY = "API_KEY" }"#)],
        r#""API_KEY""#,
        &[
            &allow_tools("h"),
            r#".{ .action = "secret.use.API_KEY", .decision = .allow }"#,
        ],
    );
    let mut client = env.client_with_env(false, &[], &[("CHOCK_TEST_API_KEY", Path::new(SECRET))]);
    let mut read = Vec::new();
    let listed = client.request("tools/list", json!({}));
    let echo = listed["result"]["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .find(|t| t["name"] == "h__echo")
        .cloned()
        .unwrap_or_else(|| panic!("{listed}"));
    assert_eq!(
        echo["description"], "Echo a text. Key: [secret API_KEY]",
        "{echo}"
    );
    read.push(listed);
    let progressed = client.request(
        "tools/call",
        json!({"name": "h__progress", "arguments": {}, "_meta": {"progressToken": "t1"}}),
    );
    assert_eq!(
        progressed["result"]["content"][0]["text"], "progressed",
        "{progressed}"
    );
    read.push(progressed);
    client.call("h__echo", json!({"text": "after"}));
    let halfway = client
        .notifications
        .iter()
        .find(|n| {
            n["method"] == "notifications/progress" && n["params"]["progress"].as_f64() == Some(1.0)
        })
        .cloned()
        .unwrap_or_else(|| panic!("the progress: {:?}", client.notifications));
    assert_eq!(
        halfway["params"]["message"], "halfway, key [secret API_KEY]",
        "{halfway}"
    );
    let resource = client.request("resources/read", json!({"uri": "note://h-own"}));
    assert_eq!(
        resource["result"]["contents"][0]["text"], "from h, key [secret API_KEY]",
        "{resource}"
    );
    read.push(resource);
    let prompts = client.request("prompts/list", json!({}));
    assert_eq!(
        prompts["result"]["prompts"][0]["description"], "Greet. Key: [secret API_KEY]",
        "{prompts}"
    );
    read.push(prompts);
    let prompt = client.request("prompts/get", json!({"name": "h__greet"}));
    assert!(
        prompt["result"]["messages"][0]["content"]["text"]
            .as_str()
            .is_some_and(|t| t.ends_with("key [secret API_KEY]")),
        "{prompt}"
    );
    read.push(prompt);
    let logged = client
        .notifications
        .iter()
        .find(|n| n["method"] == "notifications/message")
        .unwrap_or_else(|| panic!("the server's log: {:?}", client.notifications));
    assert_eq!(
        (&logged["params"]["logger"], &logged["params"]["data"]),
        (&json!("mcp:h"), &json!("log: the key is [secret API_KEY]")),
        "{logged}"
    );
    read.extend(client.notifications.iter().cloned());
    for message in &read {
        assert!(!message.to_string().contains(SECRET), "{message}");
    }
}

/// The log messages the client was given, by logger.
fn logged(client: &support::Client) -> Vec<(String, Value)> {
    client
        .notifications
        .iter()
        .filter(|n| n["method"] == "notifications/message")
        .map(|n| {
            let logger = n["params"]["logger"].as_str().unwrap_or_default();
            (logger.to_owned(), n["params"]["data"].clone())
        })
        .collect()
}

#[test]
fn a_servers_log_is_passed_on_as_its_own_scrubbed_cut_and_at_a_bounded_rate() {
    let env = Env::new();
    operator_keeps_api_key(&env);
    project(
        &env,
        &[hostile(&env, "h", r#", .env = .{ .API_KEY = "API_KEY" }"#)],
        r#""API_KEY""#,
        &[
            &allow_tools("h"),
            r#".{ .action = "secret.use.API_KEY", .decision = .allow }"#,
        ],
    );
    let (mut client, init) = env.client_speaking(
        "2025-06-18",
        false,
        &[],
        &[("CHOCK_TEST_API_KEY", Path::new(SECRET))],
    );
    let capabilities = &init["result"]["capabilities"];
    assert!(capabilities["logging"].is_object(), "{capabilities}");
    let called = client.call("h__logs", json!({"count": 200}));
    assert_eq!(called.text, "logged", "{called:?}");
    client.call("h__echo", json!({"text": "after"}));
    let logs = logged(&client);
    // The server's own logger name comes after its label, on one line.
    let (first, data) = logs
        .iter()
        .find(|(logger, _)| logger.starts_with("mcp:h/Chock: policy"))
        .unwrap_or_else(|| panic!("the server's warning is passed on: {logs:?}"));
    assert!(!first.contains('\n'), "{first:?}");
    assert_eq!(data, &json!("the key is [secret API_KEY]"));
    let cut = logs
        .iter()
        .filter_map(|(_, data)| data.as_str())
        .find(|text| text.contains("(cut: "))
        .unwrap_or_else(|| panic!("the long message is passed on, cut: {logs:?}"));
    assert!(
        cut.starts_with("[secret API_KEY]yyy") && cut.contains("(cut: ") && cut.len() < 9 << 10,
        "scrubbed, then cut at 8 KiB: {}",
        &cut[..cut.len().min(200)]
    );
    let from_h = logs.iter().filter(|(l, _)| l.starts_with("mcp:h")).count();
    let said: Vec<_> = logs.iter().filter(|(l, _)| l == "chock").collect();
    // 202 sent within a second or two: 20 a second pass.
    assert!((20..=60).contains(&from_h), "{from_h}: {logs:?}");
    assert!(
        !said.is_empty()
            && said[0].1.as_str().is_some_and(
                |t| t.contains("MCP server `h` sent more than 20 log messages within a second")
            ),
        "{said:?}"
    );
    for (_, data) in &logs {
        assert!(!data.to_string().contains(SECRET), "{data}");
    }
    // The client asks for errors only: no warning or info is passed on.
    let set = client.request("logging/setLevel", json!({"level": "error"}));
    assert!(set["result"].is_object(), "{set}");
    std::thread::sleep(Duration::from_secs(1));
    let before = logged(&client).len();
    client.call("h__logs", json!({"count": 3}));
    client.call("h__echo", json!({"text": "after"}));
    assert_eq!(logged(&client).len(), before, "{:?}", logged(&client));
}

#[test]
fn a_servers_stderr_is_chocks_own_log_named_scrubbed_and_bounded_never_the_agents() {
    let env = Env::new();
    operator_keeps_api_key(&env);
    project(
        &env,
        &[hostile(&env, "h", r#", .env = .{ .API_KEY = "API_KEY" }"#)],
        r#""API_KEY""#,
        &[
            &allow_tools("h"),
            r#".{ .action = "secret.use.API_KEY", .decision = .allow }"#,
        ],
    );
    let mut client = env.client_with_env(false, &[], &[("CHOCK_TEST_API_KEY", Path::new(SECRET))]);
    let written = client.call("h__stderr", json!({"lines": 500}));
    assert_eq!(written.text, "written", "{written:?}");
    let deadline = Instant::now() + Duration::from_secs(10);
    while !client.stderr_says("on stderr within a second") {
        assert!(Instant::now() < deadline, "{}", client.stderr());
        std::thread::sleep(Duration::from_millis(50));
    }
    let stderr = client.stderr();
    assert!(!stderr.contains(SECRET), "scrubbed: {stderr}");
    let first = stderr
        .lines()
        .find(|l| l.contains("MCP server `h` on stderr: the key is"))
        .unwrap_or_else(|| panic!("{stderr}"));
    assert!(
        first.contains("the key is [secret API_KEY]") && !first.contains('\x1b'),
        "named, scrubbed, the escape shown plainly: {first:?}"
    );
    let long = stderr
        .lines()
        .find(|l| l.contains("on stderr: zzz"))
        .unwrap_or_else(|| panic!("{stderr}"));
    assert!(
        long.ends_with("(cut)") && long.len() < 5 << 10,
        "{}",
        long.len()
    );
    let shown = stderr.matches("MCP server `h` on stderr: line ").count();
    assert!((10..=100).contains(&shown), "{shown}");
    client.call("h__echo", json!({"text": "after"}));
    assert!(
        logged(&client).is_empty(),
        "the agent is given none of it: {:?}",
        logged(&client)
    );
}

#[test]
fn a_servers_own_question_is_shown_as_its_own_and_answered_to_it() {
    let env = Env::new();
    project(&env, &[hostile(&env, "h", "")], "", &[&allow_tools("h")]);
    let mut client = env.client(true, &[]);
    client
        .elicit_answers
        .push(json!({"action": "accept", "content": {"allow": true}}));
    let heard = client.call("h__ask", json!({}));
    assert_eq!(heard.text, "h heard accept allow=True", "{heard:?}");
    assert_eq!(client.elicited.len(), 1);
    let message = client.elicited[0]["params"]["message"]
        .as_str()
        .expect("a message");
    assert!(
        message.starts_with("MCP server `h` asks (this question is the server's, not Chock's"),
        "{message}"
    );
    assert!(
        !message.lines().any(|l| l.starts_with("Chock:")),
        "no line of it reads as Chock's: {message}"
    );
}

#[test]
fn a_resource_is_read_from_the_server_that_listed_it_and_an_ambiguous_one_from_none() {
    let env = Env::new();
    project(
        &env,
        &[hostile(&env, "a", ""), hostile(&env, "b", "")],
        "",
        &[],
    );
    let mut client = env.client(false, &[]);
    let listed = client.request("resources/list", json!({}));
    let uris: Vec<&str> = listed["result"]["resources"]
        .as_array()
        .expect("resources")
        .iter()
        .filter_map(|r| r["uri"].as_str())
        .collect();
    assert!(uris.contains(&"note://b-own"), "{listed}");
    // a's template `note://{path}` matches b's URI too: b listed it, b answers.
    let own = client.request("resources/read", json!({"uri": "note://b-own"}));
    assert_eq!(
        own["result"]["contents"][0]["text"], "from b, key none",
        "{own}"
    );
    for ambiguous in ["note://shared", "note://unlisted"] {
        let refused = client.request("resources/read", json!({"uri": ambiguous}));
        let message = refused["error"]["message"].as_str().unwrap_or_default();
        assert!(
            message.contains("MCP servers `a` and `b`"),
            "{ambiguous}: {refused}"
        );
    }
}

#[test]
fn a_real_servers_answer_over_the_bound_with_its_id_last_fails_at_once_naming_it() {
    // The TypeScript SDK writes a response's `id` after its result: the
    // gateway finds it in the last bytes of a line it never held whole.
    let env = Env::new();
    // (A small bound: Node in the sandbox takes a while over tens of MiB.)
    env.write("big.txt", &"y".repeat(2 << 20));
    env.write("small.txt", "yy\n");
    let filesystem = format!(
        r#".{{ .name = "files", .command = .{{ "{}", "{}" }}, .max_answer_mib = 1 }}"#,
        installed("mcp-server-filesystem"),
        env.project.display()
    );
    project(&env, &[filesystem], "", &[JIT, &allow_tools("files")]);
    let mut client = env.client(false, &[]);
    let path = env.project.join("big.txt").display().to_string();
    let (error, took) = rpc_error(&mut client, "files__read_text_file", json!({"path": path}));
    let message = error["message"].as_str().expect("message");
    assert!(
        message.contains("MCP server `files`") && message.contains("1 MiB"),
        "{error}"
    );
    assert!(took < Duration::from_secs(60), "{took:?}");
    let small = client.call(
        "files__read_text_file",
        json!({"path": env.project.join("small.txt")}),
    );
    assert!(
        !small.is_error && small.text.starts_with("yy"),
        "the server is kept: {small:?}"
    );
}

#[test]
fn a_url_servers_answer_over_its_bound_fails_that_call_alone_naming_it_on_every_transport() {
    for (transport, path) in [
        ("streamable-http", "/mcp"),
        ("json", "/mcp"),
        ("resumable", "/mcp"),
        ("sse", "/sse"),
    ] {
        let env = Env::new();
        hostile(&env, "h", "");
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let script = env.project.join("hostile.py");
        let mut child = Command::new("/usr/bin/python3")
            .arg(&script)
            .args(["h", transport, &port.to_string()])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("python3 (run scripts/setup)");
        let deadline = Instant::now() + Duration::from_secs(30);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < deadline, "{transport}: not listening");
            std::thread::sleep(Duration::from_millis(50));
        }
        project(
            &env,
            &[format!(
                r#".{{ .name = "h", .url = "http://127.0.0.1:{port}{path}", .max_answer_mib = 1 }}"#
            )],
            "",
            &[
                r#".{ .action = "mcp.h.host.1.0.0.127", .decision = .allow }"#,
                &allow_tools("h"),
            ],
        );
        let mut client = env.client(false, &[]);
        let fits = client.call("h__huge", json!({"mib": 0}));
        assert!(!fits.is_error, "{transport}: {fits:?} {}", client.stderr());
        let began = Instant::now();
        let answered = client.request(
            "tools/call",
            json!({"name": "h__huge", "arguments": {"mib": 2}}),
        );
        let text = answered.to_string();
        let message = answered["error"]["message"].as_str().unwrap_or_default();
        assert!(
            text.len() < 64 << 10
                && message.contains("MCP server `h`")
                && message.contains("1 MiB"),
            "{transport}: a JSON-RPC error naming the server and its bound, not {}",
            text.chars().take(600).collect::<String>()
        );
        assert!(
            began.elapsed() < Duration::from_secs(60),
            "{transport}: at once"
        );
        // That call failed alone: the connection is kept, and the
        // server's one restart is not spent on it.
        let echoed = client.call("h__echo", json!({"text": "after"}));
        assert_eq!(echoed.text, "after", "{transport}: {echoed:?}");
        assert!(
            !client.stderr().contains("starting it again"),
            "{transport}: {}",
            client.stderr()
        );
        child.kill().ok();
        child.wait().ok();
    }
}
