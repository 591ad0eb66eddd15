//! `chock acp` driven by a real ACP client: the reference client library
//! (`@agentclientprotocol/sdk` from npm, installed by `scripts/setup`)
//! starts the real binary in a real git project, against the provider
//! crate's scripted loopback server (`tests/acp/client.mjs`). A prompt
//! whose tool call asks, answered allow (the file written and applied
//! when the client leaves), reject (refused, naming the rule), or not at
//! all (the client fails the request: refused, naming the rule to add); the
//! model's text and each tool call streamed as session/update; a turn
//! cancelled while its command runs, and one while the model's reply
//! streams; a second prompt continuing the same conversation. Needs node, user namespaces and Landlock.

#[path = "../../provider/tests/loopback/mod.rs"]
mod loopback;
mod run_support;
mod sandbox_fixture;

use std::process::Command;

use chock_policy::ProviderKind;
use loopback::{Piece, Server};
use run_support::{APPLY_ALLOWED, project, project_zon, reply};
use sandbox_fixture::{Fixture, describe};
use serde_json::{Value, json};

const ASK_WRITE: &str = r#".{ .action = "call.write_file", .decision = .ask }"#;

/// Runs the client on `prompts`, answering questions with `permission`;
/// what it saw.
fn drive(fx: &Fixture, permission: &str, prompts: Value) -> Value {
    drive_session(fx, permission, prompts, None)
}

/// [`drive`], taking up the session `load` with session/load when given.
fn drive_session(fx: &Fixture, permission: &str, prompts: Value, load: Option<&str>) -> Value {
    let sdk = "/usr/lib/node_modules/@agentclientprotocol/sdk/package.json";
    assert!(
        std::path::Path::new(sdk).exists(),
        "{sdk} is missing: run scripts/setup, which installs @agentclientprotocol/sdk"
    );
    let plan = json!({
        "command": [env!("CARGO_BIN_EXE_chock"), "acp", "--model", "m1"],
        "cwd": fx.project,
        "permission": permission,
        "prompts": prompts,
        "load": load,
    });
    // The fixture's HOME and XDG directories, for the agent the client starts.
    let chock = fx.chock();
    let mut node = Command::new("node");
    for (name, value) in chock.get_envs() {
        match value {
            Some(value) => node.env(name, value),
            None => node.env_remove(name),
        };
    }
    let out = node
        .env_remove("CHOCK_PROVIDER")
        .env_remove("CHOCK_MODEL")
        .current_dir(&fx.project)
        .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/acp/client.mjs"))
        .arg(plan.to_string())
        .output()
        .expect("run node");
    assert!(out.status.success(), "{}", describe(&out));
    let report: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("the client's report ({e}): {}", describe(&out)));
    assert!(report.get("error").is_none(), "{report:#}");
    assert_eq!(report["code"], 0, "chock acp exits 0: {report:#}");
    report
}

/// The session/update notifications of `kind`, in order.
fn updates<'a>(report: &'a Value, kind: &str) -> Vec<&'a Value> {
    report["events"]
        .as_array()
        .expect("events")
        .iter()
        .filter_map(|e| e.get("update"))
        .filter(|u| u["sessionUpdate"] == kind)
        .collect()
}

/// The model's text as the client put it together.
fn said(report: &Value) -> String {
    updates(report, "agent_message_chunk")
        .iter()
        .filter_map(|u| u["content"]["text"].as_str())
        .collect()
}

fn permissions(report: &Value) -> Vec<&Value> {
    report["events"]
        .as_array()
        .expect("events")
        .iter()
        .filter_map(|e| e.get("permission"))
        .collect()
}

fn stop_reasons(report: &Value) -> Vec<&str> {
    report["stops"]
        .as_array()
        .expect("stops")
        .iter()
        .map(|s| s["stopReason"].as_str().expect("stopReason"))
        .collect()
}

/// A model that writes note.txt (which asks), then says `after`, and
/// answers a second prompt.
fn writer(kind: ProviderKind, after: &str) -> Server {
    Server::start(vec![
        reply(
            kind,
            "I will write the note.",
            &[(
                "toolu_1",
                "write_file",
                json!({"path": "note.txt", "content": "hello\n"}),
            )],
        ),
        reply(kind, after, &[]),
        reply(kind, "Still here.", &[]),
    ])
}

#[test]
fn an_allowed_ask_writes_the_file_and_the_next_prompt_continues() {
    let kind = ProviderKind::Anthropic;
    let server = writer(kind, "Written.");
    let fx = project(kind, &server, ASK_WRITE);
    let report = drive(
        &fx,
        "allow",
        json!([{"text": "write a note"}, {"text": "anything else?"}]),
    );
    assert_eq!(report["initialize"]["protocolVersion"], 1, "{report:#}");
    assert_eq!(report["initialize"]["agentInfo"]["name"], "chock");
    assert_eq!(stop_reasons(&report), ["end_turn", "end_turn"]);
    let text = said(&report);
    assert!(
        text.contains("I will write the note.")
            && text.contains("Written.")
            && text.contains("Still here."),
        "the model's text streams as agent_message_chunk: {text}"
    );

    let calls = updates(&report, "tool_call");
    assert_eq!(calls.len(), 1, "{report:#}");
    assert_eq!(calls[0]["toolCallId"], "toolu_1");
    assert_eq!(calls[0]["status"], "in_progress");
    assert_eq!(calls[0]["kind"], "edit");
    assert_eq!(calls[0]["title"], "write_file note.txt");
    assert_eq!(calls[0]["rawInput"]["path"], "note.txt");
    let ended = updates(&report, "tool_call_update");
    assert_eq!(ended.len(), 1, "{report:#}");
    assert_eq!(ended[0]["toolCallId"], "toolu_1");
    assert_eq!(ended[0]["status"], "completed", "{report:#}");

    let asked = permissions(&report);
    assert_eq!(asked.len(), 1, "asked once: {report:#}");
    assert_eq!(asked[0]["toolCall"]["toolCallId"], "toolu_1");
    let question = asked[0]["toolCall"]["content"].to_string();
    assert!(
        question.contains("call.write_file") && question.contains(".decision = .allow"),
        "the question names the action and the rule that would answer it: {question}"
    );
    let kinds: Vec<&str> = asked[0]["options"]
        .as_array()
        .expect("options")
        .iter()
        .filter_map(|o| o["kind"].as_str())
        .collect();
    // A session, and the rule is the project's: once, for the session, always, reject.
    assert_eq!(
        kinds,
        ["allow_once", "allow_always", "allow_always", "reject_once"]
    );

    let logged = fx.last_logged("call.write_file");
    assert_eq!(logged["decision"], "allow", "{logged}");
    assert_eq!(logged["answered_by"], "person", "{logged}");

    // The second prompt continued the conversation: the first prompt, the
    // call and its result went with it.
    let requests = server.requests();
    assert_eq!(requests.len(), 3, "{report:#}");
    let third = requests[2].body["messages"].to_string();
    assert!(
        third.contains("write a note")
            && third.contains("toolu_1")
            && third.contains("anything else?"),
        "{third}"
    );

    // The client left: the work went through workspace.apply.
    assert_eq!(
        std::fs::read_to_string(fx.project.join("note.txt")).expect("note.txt applied"),
        "hello\n"
    );
    let stderr = report["stderr"].as_str().unwrap_or_default();
    assert!(stderr.contains("applied"), "{stderr}");
    assert_eq!(fx.last_logged("workspace.apply")["decision"], "allow");
}

#[test]
fn the_agents_plan_reaches_the_editor_as_plan_updates() {
    let kind = ProviderKind::Anthropic;
    let server = Server::start(vec![
        reply(
            kind,
            "Planning.",
            &[(
                "toolu_1",
                "update_plan",
                json!({"steps": [
                    {"step": "read the parser", "status": "completed"},
                    {"step": "fix the bug", "status": "in_progress"},
                    {"step": "run the tests", "status": "pending"}
                ]}),
            )],
        ),
        reply(kind, "Planned.", &[]),
    ]);
    let fx = project(kind, &server, "");
    let report = drive(&fx, "allow", json!([{"text": "make a plan"}]));
    assert_eq!(stop_reasons(&report), ["end_turn"], "{report:#}");
    let plans = updates(&report, "plan");
    assert_eq!(plans.len(), 1, "{report:#}");
    assert_eq!(
        plans[0]["entries"],
        json!([
            {"content": "read the parser", "priority": "medium", "status": "completed"},
            {"content": "fix the bug", "priority": "medium", "status": "in_progress"},
            {"content": "run the tests", "priority": "medium", "status": "pending"}
        ])
    );
}

/// A session written by one editor connection is taken up by the next with
/// session/load: its conversation replayed to the client (the person's
/// words, the model's, the call and its result), then a prompt that goes
/// on with it, on the same chain of the session's log.
#[test]
fn session_load_replays_the_session_and_goes_on_with_it() {
    let kind = ProviderKind::Anthropic;
    let server = writer(kind, "Written.");
    let fx = project(kind, &server, ASK_WRITE);
    let first = drive(&fx, "allow", json!([{"text": "write a note"}]));
    let id = first["sessionId"]
        .as_str()
        .expect("a session id")
        .to_owned();
    assert!(id.starts_with("run-"), "the id is the session log's: {id}");

    let second = drive_session(&fx, "allow", json!([{"text": "anything else?"}]), Some(&id));
    assert_eq!(second["sessionId"], id.as_str());
    let users: Vec<String> = updates(&second, "user_message_chunk")
        .iter()
        .map(|u| u["content"]["text"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert_eq!(users, ["write a note"], "{second:#}");
    let text = said(&second);
    assert!(
        text.contains("I will write the note.") && text.contains("Still here."),
        "the earlier reply is replayed, then the new one streams: {text}"
    );
    let replayed = updates(&second, "tool_call_update");
    assert_eq!(replayed.len(), 1, "{second:#}");
    assert_eq!(replayed[0]["toolCallId"], "toolu_1");
    assert_eq!(replayed[0]["status"], "completed");
    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    let third = requests[2].body["messages"].to_string();
    assert!(
        third.contains("write a note")
            && third.contains("toolu_1")
            && third.contains("anything else?"),
        "{third}"
    );
    let verified = fx
        .chock()
        .args(["sessions", "verify", &id])
        .output()
        .expect("chock sessions verify");
    assert!(verified.status.success(), "{}", describe(&verified));
}

#[test]
fn always_allow_in_the_editor_writes_the_rule_into_chock_zon() {
    let kind = ProviderKind::Anthropic;
    let server = writer(kind, "Written.");
    let fx = project(kind, &server, ASK_WRITE);
    let before = std::fs::read_to_string(fx.project.join("chock.zon")).expect("chock.zon");
    let report = drive(&fx, "allow_always", json!([{"text": "write a note"}]));
    assert_eq!(stop_reasons(&report), ["end_turn"], "{report:#}");
    assert!(fx.project.join("note.txt").exists(), "{report:#}");
    let logged = fx.last_logged("call.write_file");
    assert_eq!(
        (&logged["answered_by"], &logged["scope"]),
        (&json!("person"), &json!("always")),
        "{logged}"
    );
    let edit = fx.last_logged("policy.edit");
    let rule = edit["subject"].as_str().expect("the rule written");
    let after = std::fs::read_to_string(fx.project.join("chock.zon")).expect("chock.zon");
    assert!(
        after.contains(rule) && !before.contains(rule),
        "{rule} in {after}"
    );
}

#[test]
fn a_rejected_ask_is_refused_and_the_model_told() {
    let kind = ProviderKind::OpenaiChat;
    let server = writer(kind, "I was refused.");
    let fx = project(kind, &server, ASK_WRITE);
    let report = drive(&fx, "reject", json!([{"text": "write a note"}]));
    assert_eq!(stop_reasons(&report), ["end_turn"]);
    assert_eq!(permissions(&report).len(), 1, "{report:#}");
    let ended = updates(&report, "tool_call_update");
    assert_eq!(ended.len(), 1, "{report:#}");
    assert_eq!(ended[0]["status"], "failed", "{report:#}");
    let refusal = ended[0]["content"].to_string();
    assert!(refusal.contains("refused"), "{refusal}");
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let messages = requests[1].body["messages"].as_array().expect("messages");
    let result = messages
        .iter()
        .find(|m| m["role"] == "tool")
        .expect("the call's result is sent back");
    assert!(
        result["content"]
            .as_str()
            .is_some_and(|c| c.starts_with("refused")),
        "{result}"
    );
    assert!(!fx.project.join("note.txt").exists());
    let logged = fx.last_logged("call.write_file");
    assert_eq!(logged["decision"], "deny", "{logged}");
    assert_eq!(logged["answered_by"], "person", "{logged}");
}

#[test]
fn a_question_the_client_cannot_answer_is_refused_naming_the_rule() {
    let kind = ProviderKind::Anthropic;
    let server = writer(kind, "Nobody answered.");
    let fx = project(kind, &server, ASK_WRITE);
    let report = drive(&fx, "error", json!([{"text": "write a note"}]));
    assert_eq!(stop_reasons(&report), ["end_turn"]);
    assert_eq!(permissions(&report).len(), 1, "{report:#}");
    let ended = updates(&report, "tool_call_update");
    assert_eq!(ended[0]["status"], "failed", "{report:#}");
    let refusal = ended[0]["content"].to_string();
    assert!(
        refusal.contains("call.write_file") && refusal.contains(".decision = .allow"),
        "the refusal names the rule that would allow it: {refusal}"
    );
    assert!(!fx.project.join("note.txt").exists());
    let logged = fx.last_logged("call.write_file");
    assert_eq!(logged["answered_by"], "nobody", "{logged}");
}

#[test]
fn a_write_over_a_style_rules_limit_is_refused_in_the_editor_too() {
    let kind = ProviderKind::Anthropic;
    let server = writer(kind, "The rule refused it.");
    let fx = project_zon(
        kind,
        &server,
        &format!(
            ".{{ .apply = .{{ .mode = .merge }}, .policy = .{{ .rules = .{{ {APPLY_ALLOWED}, .{{ .action = \"style.parse\", .decision = .allow }} }} }},\n .style = .{{ .rules = .{{ .{{ .name = \"tiny\", .files = \"*.txt\", .measure = .line_length, .limit = 3 }} }} }} }}\n"
        ),
    );
    let report = drive(&fx, "allow", json!([{"text": "write a note"}]));
    assert_eq!(stop_reasons(&report), ["end_turn"]);
    let ended = updates(&report, "tool_call_update");
    assert_eq!(ended.len(), 1, "{report:#}");
    assert_eq!(ended[0]["status"], "failed", "{report:#}");
    let refusal = ended[0]["content"].to_string();
    assert!(
        refusal.contains("style rule `tiny`")
            && refusal.contains("a line of 5 characters at line 1, over the limit of 3"),
        "which rule, where and the number: {refusal}"
    );
    assert!(!fx.project.join("note.txt").exists());
}

#[test]
fn a_cancelled_turn_stops_its_command_and_the_conversation_goes_on() {
    let kind = ProviderKind::Anthropic;
    let server = Server::start(vec![
        reply(
            kind,
            "Sleeping.",
            &[(
                "toolu_1",
                "run_command",
                json!({"argv": ["sleep", "60"], "timeout_seconds": 120}),
            )],
        ),
        reply(kind, "Awake again.", &[]),
    ]);
    let fx = project(kind, &server, "");
    let report = drive(
        &fx,
        "allow",
        json!([{"text": "sleep", "cancelOn": "tool_call"}, {"text": "and now?"}]),
    );
    assert_eq!(stop_reasons(&report), ["cancelled", "end_turn"]);
    let after = report["stops"][0]["afterCancelMs"]
        .as_u64()
        .expect("the time from cancel to the answer");
    assert!(
        after < 30_000,
        "the command was stopped, not waited for: {after} ms"
    );
    let ended = updates(&report, "tool_call_update");
    assert_eq!(ended.len(), 1, "{report:#}");
    assert_eq!(ended[0]["status"], "failed", "{report:#}");
    assert!(said(&report).contains("Awake again."));
    // The second request carries the cancelled call's result and the new
    // prompt after the first.
    let requests = server.requests();
    assert_eq!(requests.len(), 2, "{report:#}");
    let second = requests[1].body["messages"].to_string();
    assert!(
        second.contains("toolu_1") && second.contains("cancelled") && second.contains("and now?"),
        "{second}"
    );
    let stderr = report["stderr"].as_str().unwrap_or_default();
    assert!(stderr.contains("held no work"), "{stderr}");
}

#[test]
fn a_reply_cancelled_while_it_streams_is_dropped() {
    let kind = ProviderKind::Anthropic;
    // The reply's text arrives, then the stream stalls before its end.
    let whole: Vec<u8> = reply(kind, "Thinking about it.", &[])
        .body
        .into_iter()
        .flat_map(|piece| match piece {
            Piece::Bytes(bytes) => bytes,
            Piece::Pause(_) | Piece::Hang(_) | Piece::Until(_) => Vec::new(),
        })
        .collect();
    let stall = whole
        .windows(b"event: content_block_stop".len())
        .position(|w| w == b"event: content_block_stop")
        .expect("the text block ends");
    let mut slow = reply(kind, "", &[]);
    slow.body = vec![
        Piece::Bytes(whole[..stall].to_vec()),
        Piece::Pause(std::time::Duration::from_secs(60)),
        Piece::Bytes(whole[stall..].to_vec()),
    ];
    let server = Server::start(vec![slow, reply(kind, "Here again.", &[])]);
    let fx = project(kind, &server, "");
    let report = drive(
        &fx,
        "allow",
        json!([
            {"text": "think hard", "cancelOn": "agent_message_chunk"},
            {"text": "never mind"}
        ]),
    );
    assert_eq!(stop_reasons(&report), ["cancelled", "end_turn"]);
    let after = report["stops"][0]["afterCancelMs"]
        .as_u64()
        .expect("the time from cancel to the answer");
    assert!(
        after < 30_000,
        "the stream was dropped, not waited for: {after} ms"
    );
    let requests = server.requests();
    assert_eq!(requests.len(), 2, "{report:#}");
    let second = requests[1].body["messages"].to_string();
    assert!(
        second.contains("think hard")
            && second.contains("never mind")
            && !second.contains("Thinking about it."),
        "the prompts go on, the reply cut short does not: {second}"
    );
}

#[test]
fn what_chock_acp_cannot_do_is_answered_with_the_error_that_says_why() {
    use std::io::Write;
    use std::process::Stdio;
    let kind = ProviderKind::Anthropic;
    let server = Server::start(vec![]);
    let fx = project(kind, &server, "");
    // No such folder: no session can be made there.
    let elsewhere = fx.home.join("missing").display().to_string();
    let lines = [
        "this is not json".to_owned(),
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}).to_string(),
        json!({"jsonrpc": "2.0", "id": 2, "method": "session/set_mode", "params": {}}).to_string(),
        json!({"jsonrpc": "2.0", "id": 3, "method": "session/new", "params": {"cwd": "relative", "mcpServers": []}}).to_string(),
        json!({"jsonrpc": "2.0", "id": 4, "method": "session/new", "params": {"cwd": elsewhere, "mcpServers": []}}).to_string(),
        json!({"jsonrpc": "2.0", "id": 5, "method": "session/prompt", "params": {"sessionId": "nope", "prompt": [{"type": "text", "text": "hi"}]}}).to_string(),
        json!({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": "nope"}}).to_string(),
        json!({"jsonrpc": "2.0", "id": 6, "method": "session/load", "params": {"sessionId": "run-1-none", "cwd": fx.project, "mcpServers": []}}).to_string(),
    ];
    let mut agent = fx
        .chock()
        .args(["acp", "--model", "m1"])
        .env_remove("CHOCK_PROVIDER")
        .env_remove("CHOCK_MODEL")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn chock acp");
    let mut input = agent.stdin.take().expect("stdin");
    for line in &lines {
        writeln!(input, "{line}").expect("write");
    }
    drop(input);
    let out = agent.wait_with_output().expect("chock acp ends");
    assert!(out.status.success(), "{}", describe(&out));
    let answers: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("each line of stdout is JSON"))
        .collect();
    let by_id = |id: Value| {
        answers
            .iter()
            .find(|a| a["id"] == id)
            .unwrap_or_else(|| panic!("no answer to {id}: {answers:#?}"))
    };
    assert_eq!(by_id(Value::Null)["error"]["code"], -32700);
    assert_eq!(
        by_id(json!(1))["error"]["code"],
        -32602,
        "initialize without protocolVersion"
    );
    assert_eq!(by_id(json!(2))["error"]["code"], -32601);
    assert_eq!(by_id(json!(3))["error"]["code"], -32602);
    let missing = by_id(json!(4))["error"]["message"].to_string();
    assert!(
        missing.contains("could not start") && missing.contains("missing"),
        "{missing}"
    );
    assert_eq!(by_id(json!(5))["error"]["code"], -32002);
    let unknown = by_id(json!(6))["error"]["message"].to_string();
    assert!(
        unknown.contains("could not start") && unknown.contains("run-1-none"),
        "{unknown}"
    );
    assert_eq!(
        answers.len(),
        7,
        "the notification is not answered: {answers:#?}"
    );
}

/// `chock acp` offers read_skill like `chock run`: a project's skill is
/// asked of the person in the editor (skill.read.project ships ask), and
/// the instructions reach the model after the answer.
#[test]
fn a_projects_skill_is_asked_in_the_editor_and_read() {
    let kind = ProviderKind::Anthropic;
    let server = Server::start(vec![
        reply(
            kind,
            "",
            &[("toolu_s", "read_skill", json!({"name": "deploy"}))],
        ),
        reply(kind, "Read it.", &[]),
    ]);
    let fx = project(kind, &server, ASK_WRITE);
    let skill = fx.project.join(".agents/skills/deploy");
    std::fs::create_dir_all(&skill).expect("skill dir");
    std::fs::write(
        skill.join("SKILL.md"),
        "---\nname: deploy\ndescription: Deploy the staging stack.\n---\nThe deploy steps for the editor.\n",
    )
    .expect("SKILL.md");
    let report = drive(&fx, "allow", json!([{"text": "deploy it"}]));
    let requests = server.requests();
    let offered = requests[0].body["tools"].to_string();
    assert!(
        offered.contains("- deploy [project]: Deploy the staging stack."),
        "{offered}"
    );
    let asked = permissions(&report);
    assert_eq!(asked.len(), 1, "{report:#}");
    assert!(
        asked[0]["toolCall"]["content"]
            .to_string()
            .contains("skill.read.project"),
        "{report:#}"
    );
    assert!(
        requests[1]
            .body
            .to_string()
            .contains("The deploy steps for the editor."),
        "{}",
        requests[1].body
    );
    assert_eq!(
        fx.last_logged("skill.read.project")["answered_by"],
        "person"
    );
}

#[test]
fn a_plugin_s_tool_is_offered_in_the_editor_and_its_call_decided() {
    let kind = ProviderKind::Anthropic;
    let server = Server::start(vec![
        reply(
            kind,
            "Asking the plugin.",
            &[("toolu_1", "plugin__hello__hi", json!({}))],
        ),
        reply(kind, "It answered.", &[]),
    ]);
    let fx = project(
        kind,
        &server,
        r#".{ .action = "plugin.hello.tool.hi", .decision = .allow }"#,
    );
    run_support::install_hello_plugin(&fx);
    let report = drive(&fx, "allow", json!([{"text": "ask the plugin"}]));
    assert_eq!(stop_reasons(&report), ["end_turn"]);
    let ended = updates(&report, "tool_call_update");
    assert_eq!(ended.len(), 1, "{report:#}");
    assert_eq!(ended[0]["status"], "completed", "{report:#}");
    assert_eq!(
        ended[0]["content"][0]["content"]["text"], "{\"hi\":1}",
        "the plugin's answer is the call's: {report:#}"
    );
    let tools = server.requests()[0].body["tools"].to_string();
    assert!(tools.contains("plugin__hello__hi"), "{tools}");
    let logged = fx.last_logged("plugin.hello.tool.hi");
    assert_eq!(logged["decision"], "allow", "{logged}");
}
