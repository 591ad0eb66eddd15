//! `chock run`'s loop against what a model gets wrong, for real, against a
//! scripted provider on loopback speaking each API's stream: a call of a
//! tool nobody offered and a call whose arguments are no JSON object are
//! each answered to the model as an error (the unknown one naming every
//! tool offered, the loop's own among them) and the session goes on; a
//! model that keeps making such calls is stopped, its work kept, its log
//! ending `unusable_calls`.
//! Needs user namespaces and Landlock (`scripts/setup`).

#[path = "../../provider/tests/loopback/mod.rs"]
mod loopback;
mod run_support;
mod sandbox_fixture;

use std::process::Output;

use chock_policy::ProviderKind;
use loopback::{Recorded, Server};
use run_support::{project, reply, reply_raw};
use sandbox_fixture::{Fixture, describe, text};
use serde_json::{Value, json};

const KINDS: [ProviderKind; 2] = [ProviderKind::Anthropic, ProviderKind::OpenaiChat];

fn run(fx: &Fixture, flags: &[&str], task: &str) -> Output {
    fx.chock()
        .arg("run")
        .args(["--model", "m1"])
        .args(flags)
        .arg("--")
        .arg(task)
        .env_remove("CHOCK_PROVIDER")
        .env_remove("CHOCK_MODEL")
        .output()
        .expect("run chock run")
}

/// The result a request sends back for the call `id`: its text and
/// whether it is marked an error (OpenAI Chat marks none).
fn result_for(kind: ProviderKind, request: &Recorded, id: &str) -> (String, bool) {
    let messages = request.body["messages"].as_array().expect("messages");
    match kind {
        ProviderKind::Anthropic => {
            let found = messages
                .iter()
                .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default())
                .find(|c| c["type"] == "tool_result" && c["tool_use_id"] == id)
                .unwrap_or_else(|| panic!("no result for {id}: {messages:?}"));
            (
                found["content"].as_str().unwrap_or_default().to_owned(),
                found["is_error"] == true,
            )
        }
        _ => {
            let found = messages
                .iter()
                .find(|m| m["role"] == "tool" && m["tool_call_id"] == id)
                .unwrap_or_else(|| panic!("no result for {id}: {messages:?}"));
            (
                found["content"].as_str().unwrap_or_default().to_owned(),
                true,
            )
        }
    }
}

/// The arguments the assistant's call `id` is sent back with, as JSON.
fn sent_arguments(kind: ProviderKind, request: &Recorded, id: &str) -> Value {
    let messages = request.body["messages"].as_array().expect("messages");
    match kind {
        ProviderKind::Anthropic => messages
            .iter()
            .filter(|m| m["role"] == "assistant")
            .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default())
            .find(|c| c["type"] == "tool_use" && c["id"] == id)
            .map(|c| c["input"].clone())
            .unwrap_or_else(|| panic!("no call {id}: {messages:?}")),
        _ => messages
            .iter()
            .filter(|m| m["role"] == "assistant")
            .flat_map(|m| m["tool_calls"].as_array().cloned().unwrap_or_default())
            .find(|c| c["id"] == id)
            .map(|c| {
                serde_json::from_str(c["function"]["arguments"].as_str().expect("a string"))
                    .expect("the arguments sent back are JSON")
            })
            .unwrap_or_else(|| panic!("no call {id}: {messages:?}")),
    }
}

/// Each line of the one session log as JSON.
fn session_events(fx: &Fixture) -> Vec<Value> {
    let dir = fx.root().join("state/chock/sessions");
    let logs: Vec<_> = std::fs::read_dir(&dir)
        .expect("the sessions folder")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .collect();
    let [log] = &logs[..] else {
        panic!("one session log: {logs:?}")
    };
    std::fs::read_to_string(log)
        .expect("session log")
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect()
}

#[test]
fn an_unknown_tool_and_arguments_that_are_no_json_are_answered_and_the_session_goes_on() {
    for kind in KINDS {
        let server = Server::start(vec![
            reply(kind, "Let me try.", &[("c1", "edit_everything", json!({}))]),
            reply_raw(
                kind,
                "",
                &[(
                    "c2",
                    "write_file",
                    r#"{"path": "note.txt", "content": "hel"#.into(),
                )],
            ),
            reply(
                kind,
                "",
                &[(
                    "c3",
                    "write_file",
                    json!({"path": "note.txt", "content": "hello\n"}),
                )],
            ),
            reply(kind, "Done.", &[]),
        ]);
        let fx = project(kind, &server, "");
        let out = run(&fx, &[], "write a note");
        assert!(out.status.success(), "{kind:?}: {}", describe(&out));
        assert_eq!(
            std::fs::read_to_string(fx.project.join("note.txt")).expect("note.txt applied"),
            "hello\n",
            "{kind:?}: the session went on to the good call"
        );
        let requests = server.requests();
        assert_eq!(requests.len(), 4, "{kind:?}");
        let (unknown, is_error) = result_for(kind, &requests[1], "c1");
        assert!(is_error, "{kind:?}: {unknown}");
        for tool in [
            "update_plan",
            "spawn_agent",
            "read_memory",
            "write_file",
            "run_command",
        ] {
            assert!(
                unknown.contains("`edit_everything`") && unknown.contains(tool),
                "{kind:?}: every offered tool is named, {tool} too: {unknown}"
            );
        }
        assert!(!unknown.contains("request_apply"), "{kind:?}: {unknown}");
        let (malformed, is_error) = result_for(kind, &requests[2], "c2");
        assert!(
            is_error && malformed.contains("not JSON") && malformed.contains("`write_file`"),
            "{kind:?}: {malformed}"
        );
        assert_eq!(
            sent_arguments(kind, &requests[2], "c2"),
            json!({}),
            "{kind:?}: the malformed call goes back as a JSON object the API accepts"
        );
        let stderr = text(&out.stderr);
        assert!(
            stderr.contains("tool edit_everything {}: there is no tool named"),
            "{kind:?}: {stderr}"
        );
        let events = session_events(&fx);
        let answers: Vec<&str> = events
            .iter()
            .filter(|e| e["type"] == "tool_result")
            .map(|e| e["answer"].as_str().unwrap_or_default())
            .collect();
        assert_eq!(answers, ["failed", "failed", "allowed"], "{kind:?}");
    }
}

#[test]
fn a_model_that_keeps_making_unusable_calls_is_stopped_and_its_work_kept() {
    let kind = ProviderKind::Anthropic;
    let mut replies = vec![reply(
        kind,
        "",
        &[(
            "w",
            "write_file",
            json!({"path": "kept.txt", "content": "kept\n"}),
        )],
    )];
    // Five bad calls in a row, over two replies; a sixth reply is never asked for.
    replies.push(reply(
        kind,
        "",
        &[
            ("b1", "nope", json!({})),
            ("b2", "nope", json!({})),
            ("b3", "nope", json!({})),
        ],
    ));
    replies.push(reply_raw(
        kind,
        "",
        &[
            ("b4", "read_file", "{".into()),
            ("b5", "read_file", "[1]".into()),
        ],
    ));
    replies.push(reply(kind, "never read", &[]));
    let server = Server::start(replies);
    let fx = project(kind, &server, "");
    let out = run(&fx, &[], "write and then flail");
    assert_eq!(out.status.code(), Some(4), "{}", describe(&out));
    assert_eq!(server.requests().len(), 3, "no request after the bound");
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("5 calls in a row that could not be run") && stderr.contains("not applied"),
        "{stderr}"
    );
    assert!(!fx.project.join("kept.txt").exists(), "nothing applied");
    let events = session_events(&fx);
    let end = events.iter().rfind(|e| e["type"] == "end").expect("end");
    assert_eq!(end["how"], "unusable_calls", "{end}");
    let said = end["said"].as_str().unwrap_or_default();
    assert!(said.contains("kept"), "the work is kept: {said}");
}

/// `chock usage` counts every agent of a session: the main one, an agent
/// it spawned and the reviewer, each apart in `usage show` and `--json`,
/// all in the total (each scripted reply is 10 tokens in, 5 out).
#[test]
fn usage_counts_the_spawned_agents_and_the_reviewers_tokens_per_agent() {
    let kind = ProviderKind::OpenaiChat;
    let server = Server::start(vec![
        reply(
            kind,
            "",
            &[(
                "p1",
                "spawn_agent",
                json!({"kind": "tester", "task": "look around"}),
            )],
        ),
        reply(kind, "Nothing to do.", &[]),
        reply(
            kind,
            "",
            &[(
                "p2",
                "write_file",
                json!({"path": "note.txt", "content": "x\n"}),
            )],
        ),
        reply(
            kind,
            "",
            &[(
                "r1",
                "review_answer",
                json!({"decision": "approve", "reason": "asked for"}),
            )],
        ),
        reply(kind, "Done.", &[]),
    ]);
    let fx = run_support::project_zon(
        kind,
        &server,
        &format!(
            r#".{{ .apply = .{{ .mode = .merge }}, .review = .{{ .agent_kind = "reviewer" }}, .policy = .{{
    .agents = .{{ .{{ .kind = "main" }}, .{{ .kind = "tester", .parent = "main" }}, .{{ .kind = "reviewer" }} }},
    .rules = .{{ {}, .{{ .action = "call.write_file", .decision = .agent_review }} }} }} }}
"#,
            run_support::APPLY_ALLOWED
        ),
    );
    let out = run(&fx, &[], "write a note");
    assert!(out.status.success(), "{}", describe(&out));
    assert_eq!(server.requests().len(), 5, "{}", describe(&out));
    assert!(
        text(&out.stderr).contains("(50 tokens in, 25 out, "),
        "{}",
        describe(&out)
    );
    let json = fx
        .chock()
        .args(["usage", "--json"])
        .output()
        .expect("usage");
    assert!(json.status.success(), "{}", describe(&json));
    let said: Value = serde_json::from_slice(&json.stdout).expect("one JSON object");
    let session = &said["sessions"][0];
    assert_eq!(session["tokens_in"], 50, "what the run said: {said}");
    assert_eq!(session["tokens_out"], 25, "{said}");
    let agents: Vec<(String, String, u64, u64)> = session["agents"]
        .as_array()
        .expect("agents")
        .iter()
        .map(|a| {
            (
                a["agent"].as_str().unwrap_or_default().to_owned(),
                a["role"].as_str().unwrap_or_default().to_owned(),
                a["turns"].as_u64().unwrap_or_default(),
                a["tokens_in"].as_u64().unwrap_or_default(),
            )
        })
        .collect();
    assert_eq!(
        agents,
        [
            ("main".to_owned(), "main".to_owned(), 3, 30),
            ("tester".to_owned(), "spawned".to_owned(), 1, 10),
            ("reviewer".to_owned(), "reviewer".to_owned(), 1, 10),
        ],
        "{said}"
    );
    let id = session["id"].as_str().expect("id");
    let shown = fx
        .chock()
        .args(["usage", "show", id])
        .output()
        .expect("show");
    let shown = text(&shown.stdout);
    for line in [
        "main on loop/m1 (openai_chat): 3 turns, 30 tokens in",
        "tester on loop/m1 (openai_chat): 1 turns, 10 tokens in",
        "reviewer (reviewer) on loop/m1 (openai_chat): 1 turns, 10 tokens in",
    ] {
        assert!(shown.contains(line), "{line} in {shown}");
    }
}

/// Two calls that write, then a third reply never asked for.
fn writes_twice(kind: ProviderKind) -> Server {
    let write = |id: &str, path: &str| {
        reply(
            kind,
            "",
            &[(id, "write_file", json!({"path": path, "content": "x\n"}))],
        )
    };
    Server::start(vec![
        write("w1", "one.txt"),
        write("w2", "two.txt"),
        reply(kind, "never read", &[]),
    ])
}

/// The `end` event of the project's one session log.
fn end_of(fx: &Fixture) -> Value {
    session_events(fx)
        .into_iter()
        .rfind(|e| e["type"] == "end")
        .expect("an end event")
}

/// `--max-tokens` and `--max-budget` stop the session before the request
/// that would go past them, the work so far kept, the log ending `budget`;
/// `--print-cost` shows each reply's tokens and cost and the session's.
#[test]
fn the_token_and_dollar_budgets_stop_the_session_and_keep_its_work() {
    for kind in KINDS {
        // Each reply is 15 tokens: 30 reach 25 after two.
        let server = writes_twice(kind);
        let fx = project(kind, &server, "");
        let out = run(&fx, &["--max-tokens", "25"], "write two files");
        assert_eq!(out.status.code(), Some(4), "{kind:?}: {}", describe(&out));
        assert_eq!(
            server.requests().len(),
            2,
            "{kind:?}: no request past the budget"
        );
        let stderr = text(&out.stderr);
        assert!(
            stderr.contains("stopped: 30 tokens used, and --max-tokens is 25")
                && stderr.contains("not applied"),
            "{kind:?}: {stderr}"
        );
        assert!(
            !fx.project.join("one.txt").exists(),
            "{kind:?}: kept, not applied"
        );
        assert_eq!(end_of(&fx)["how"], "budget", "{kind:?}");
    }
    // claude-sonnet-4-5 at $3 in and $15 out per million: each reply of
    // 10 in and 5 out costs $0.000105.
    let kind = ProviderKind::Anthropic;
    let server = writes_twice(kind);
    let fx = project(kind, &server, "");
    let out = fx
        .chock()
        .args([
            "run",
            "--model",
            "claude-sonnet-4-5",
            "--max-budget",
            "0.0002",
            "--print-cost",
        ])
        .args(["--", "write two files"])
        .env_remove("CHOCK_PROVIDER")
        .env_remove("CHOCK_MODEL")
        .output()
        .expect("chock run");
    assert_eq!(out.status.code(), Some(4), "{}", describe(&out));
    assert_eq!(server.requests().len(), 2, "{}", describe(&out));
    let stderr = text(&out.stderr);
    for said in [
        "turn: 10 tokens in, 5 out, $0.0001; session: 10 tokens in, 5 out, $0.0001",
        "turn: 10 tokens in, 5 out, $0.0001; session: 20 tokens in, 10 out, $0.0002",
        "stopped: $0.0002 spent, and --max-budget is $0.0002",
        "(20 tokens in, 10 out, $0.0002)",
    ] {
        assert!(stderr.contains(said), "{said} in {stderr}");
    }
    assert_eq!(end_of(&fx)["how"], "budget");
    // Without --print-cost and no terminal, no per-turn line; the end
    // still says what the session cost (here: no price, so unknown).
    let server = Server::start(vec![reply(kind, "Done.", &[])]);
    let fx = project(kind, &server, "");
    let out = run(&fx, &[], "say done");
    assert!(out.status.success(), "{}", describe(&out));
    let stderr = text(&out.stderr);
    assert!(!stderr.contains("turn: "), "{stderr}");
    assert!(
        stderr.contains("(10 tokens in, 5 out, cost unknown (no price for the model))"),
        "{stderr}"
    );
    // A dollar budget needs a price: refused before any request or workspace.
    let out = run(&fx, &["--max-budget", "1"], "say done");
    assert_eq!(out.status.code(), Some(1), "{}", describe(&out));
    assert!(
        text(&out.stderr).contains("--max-budget needs the price of `m1` (anthropic)"),
        "{}",
        describe(&out)
    );
    assert_eq!(server.requests().len(), 1, "no request for the refused run");
}

/// Each line of `stdout` checked against docs/run-events.schema.json by
/// python's `jsonschema` (Draft 2020-12), and read.
fn validated_events(stdout: &[u8]) -> Vec<Value> {
    let schema = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../docs/run-events.schema.json"
    );
    let lines = tempfile::NamedTempFile::new().expect("a temp file");
    std::fs::write(lines.path(), stdout).expect("the events");
    let checked = std::process::Command::new("python3")
        .args([
            "-c",
            "import json, sys, jsonschema
schema = json.load(open(sys.argv[1]))
jsonschema.Draft202012Validator.check_schema(schema)
v = jsonschema.Draft202012Validator(schema)
bad = 0
for n, line in enumerate(open(sys.argv[2]), 1):
    for e in v.iter_errors(json.loads(line)):
        bad += 1
        print(f'line {n}: {e.message} at {list(e.absolute_path)}: {line.strip()}')
sys.exit(1 if bad else 0)",
            schema,
        ])
        .arg(lines.path())
        .output()
        .expect("python3 with jsonschema");
    assert!(checked.status.success(), "{}", describe(&checked));
    text(stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("every line of stdout is JSON"))
        .collect()
}

/// `chock run --json`: one JSON object a line for every event, each valid
/// under the schema shipped in docs/: the start, the text as it streams,
/// each tool call with the gate's decision (the action, who answered) and
/// its result, the plan, what each reply spent, and the end with where the
/// work went and the command that goes on.
#[test]
fn json_writes_every_event_as_a_line_the_shipped_schema_validates() {
    // Each reply is 10 tokens in and 5 out: two are 20 in and 10 out, at
    // $3 and $15 per million for claude-sonnet-4-5, $2 and $8 for gpt-4.1.
    for (kind, model, dollars) in [
        (ProviderKind::Anthropic, "claude-sonnet-4-5", 0.00021),
        (ProviderKind::OpenaiChat, "gpt-4.1", 0.00012),
    ] {
        let server = Server::start(vec![
            reply(
                kind,
                "Planning.",
                &[
                    (
                        "c1",
                        "update_plan",
                        json!({"steps": [{"step": "write the note", "status": "in_progress"}]}),
                    ),
                    (
                        "c2",
                        "write_file",
                        json!({"path": "note.txt", "content": "hello\n"}),
                    ),
                    ("c3", "run_command", json!({"argv": ["true"]})),
                ],
            ),
            reply(kind, "Done.", &[]),
        ]);
        let fx = project(
            kind,
            &server,
            r#".{ .action = "call.write_file", .decision = .allow }, .{ .action = "exec.path.true", .decision = .deny }"#,
        );
        let out = fx
            .chock()
            .args(["run", "--model", model, "--json", "--", "write a note"])
            .env_remove("CHOCK_PROVIDER")
            .env_remove("CHOCK_MODEL")
            .output()
            .expect("chock run --json");
        assert!(out.status.success(), "{kind:?}: {}", describe(&out));
        let events = validated_events(&out.stdout);
        let types: Vec<&str> = events
            .iter()
            .map(|e| e["type"].as_str().unwrap_or_default())
            .collect();
        assert_eq!(types.first(), Some(&"start"), "{kind:?}: {types:?}");
        assert_eq!(types.last(), Some(&"end"), "{kind:?}: {types:?}");
        assert!(events.iter().all(|e| e["v"] == 1), "{kind:?}");
        let said: String = events
            .iter()
            .filter(|e| e["type"] == "text")
            .filter_map(|e| e["text"].as_str())
            .collect();
        assert!(
            said.contains("Planning.") && said.contains("Done."),
            "{kind:?}: {said}"
        );
        // A call's events in order: asked for, decided, answered.
        let of = |id: &str| -> Vec<&Value> {
            let at = events
                .iter()
                .position(|e| e["type"] == "tool_call" && e["id"] == id)
                .unwrap_or_else(|| panic!("{kind:?}: no tool_call {id}: {types:?}"));
            let end = at
                + events[at..]
                    .iter()
                    .position(|e| e["type"] == "tool_result")
                    .expect("its result");
            events[at..=end].iter().collect()
        };
        let write = of("c2");
        assert_eq!(write.len(), 3, "{kind:?}: {write:?}");
        assert_eq!(
            (
                &write[1]["action"],
                &write[1]["decision"],
                &write[1]["answered_by"]
            ),
            (&json!("call.write_file"), &json!("allow"), &json!("rule")),
            "{kind:?}: {write:?}"
        );
        assert_eq!(write[2]["answer"], "allowed", "{kind:?}");
        let command = of("c3");
        assert_eq!(
            (
                &command[1]["action"],
                &command[1]["decision"],
                &command[1]["answered_by"]
            ),
            (&json!("exec.path.true"), &json!("deny"), &json!("rule")),
            "{kind:?}: {command:?}"
        );
        assert_eq!(command[2]["answer"], "refused", "{kind:?}");
        assert!(
            events.iter().any(|e| e["type"] == "plan"
                && e["steps"][0] == json!({"step": "write the note", "status": "in_progress"})),
            "{kind:?}: {types:?}"
        );
        let usage: Vec<&Value> = events.iter().filter(|e| e["type"] == "usage").collect();
        assert_eq!(usage.len(), 2, "{kind:?}: one per reply");
        assert_eq!(usage[1]["session"]["input"], 20, "{kind:?}: {:?}", usage[1]);
        let cost = usage[1]["session_cost"].as_f64().expect("priced");
        assert!((cost - dollars).abs() < 1e-12, "{kind:?}: {cost}");
        let end = events.last().expect("end");
        assert_eq!(end["how"], "done", "{kind:?}: {end}");
        assert_eq!(end["workspace"]["state"], "applied", "{kind:?}: {end}");
        assert_eq!(end["requests"], 2, "{kind:?}: {end}");
        let session = events[0]["session"].as_str().expect("the id");
        assert_eq!(
            end["continue"],
            format!("chock run --session {session}"),
            "{kind:?}"
        );
        assert_eq!(
            std::fs::read_to_string(fx.project.join("note.txt")).expect("applied"),
            "hello\n"
        );
    }
    // A run that cannot start ends with a `failed` event the schema holds too.
    let server = Server::start(vec![]);
    let fx = project(ProviderKind::Anthropic, &server, "");
    let out = run(&fx, &["--json", "--provider", "nowhere"], "anything");
    assert_eq!(out.status.code(), Some(1), "{}", describe(&out));
    let events = validated_events(&out.stdout);
    let [end] = &events[..] else {
        panic!("only the end: {events:?}")
    };
    assert_eq!(end["how"], "failed", "{end}");
    assert!(
        end["error"]
            .as_str()
            .unwrap_or_default()
            .contains("nowhere"),
        "{end}"
    );
}

/// Whether a process whose command line holds `marker` is alive.
fn alive(marker: &str) -> bool {
    std::fs::read_dir("/proc")
        .expect("/proc")
        .flatten()
        .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
        .any(|cmdline| {
            let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
            cmdline.contains(marker)
        })
}

/// Waits until `done` holds, at most `limit`.
fn wait_for(limit: std::time::Duration, mut done: impl FnMut() -> bool) -> bool {
    let until = std::time::Instant::now() + limit;
    while std::time::Instant::now() < until {
        if done() {
            return true;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    done()
}

/// `chock run` started with piped output, its stdout read on a thread.
fn spawned(fx: &Fixture, flags: &[&str], task: &str) -> std::process::Child {
    fx.chock()
        .arg("run")
        .args(["--model", "m1"])
        .args(flags)
        .arg("--")
        .arg(task)
        .env_remove("CHOCK_PROVIDER")
        .env_remove("CHOCK_MODEL")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("chock run")
}

/// Sends `signal` (`INT`, `TERM`) to `child`, as kill(1) does.
fn kill(child: &std::process::Child, signal: &str) {
    let sent = std::process::Command::new("kill")
        .arg(format!("-{signal}"))
        .arg(child.id().to_string())
        .status()
        .expect("kill");
    assert!(sent.success(), "the signal was sent");
}

/// SIGINT while the sandbox runs a command: the command dies with its
/// sandbox (no process of it is left), the session ends `cancelled` in
/// its log and as the `--json` end, the work so far is kept and where it
/// is and how to go on are said; exit 130.
#[test]
fn ctrl_c_mid_command_kills_the_sandbox_keeps_the_work_and_says_how_to_go_on() {
    let kind = ProviderKind::Anthropic;
    let marker = format!("sleep 97.{}", std::process::id());
    let server = Server::start(vec![
        reply(
            kind,
            "",
            &[(
                "w",
                "write_file",
                json!({"path": "kept.txt", "content": "kept\n"}),
            )],
        ),
        reply(
            kind,
            "",
            &[(
                "c",
                "run_command",
                json!({"argv": ["sh", "-c", format!("{marker}; echo never")]}),
            )],
        ),
        reply(kind, "never read", &[]),
    ]);
    let fx = project(kind, &server, "");
    let started = std::time::Instant::now();
    let child = spawned(&fx, &["--json"], "write, then wait");
    assert!(
        wait_for(std::time::Duration::from_secs(60), || alive(&marker)),
        "the command started in the sandbox"
    );
    kill(&child, "INT");
    let out = child.wait_with_output().expect("chock run ends");
    assert!(
        started.elapsed() < std::time::Duration::from_secs(60),
        "it did not wait for the command"
    );
    assert_eq!(out.status.code(), Some(130), "{}", describe(&out));
    assert!(
        wait_for(std::time::Duration::from_secs(5), || !alive(&marker)),
        "no process of the sandbox is left"
    );
    assert_eq!(server.requests().len(), 2, "no request after the signal");
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("cancelling: the turn stops and the work is kept")
            && stderr.contains("cancelled")
            && stderr.contains("chock run --session run-")
            && stderr.contains("not applied"),
        "{stderr}"
    );
    let events = validated_events(&out.stdout);
    let end = events.last().expect("an end event");
    assert_eq!(end["how"], "cancelled", "{end}");
    assert_eq!(end["workspace"]["state"], "kept", "{end}");
    assert_eq!(end_of(&fx)["how"], "cancelled", "the log's end");
    assert!(!fx.project.join("kept.txt").exists(), "kept, not applied");
}

/// SIGTERM while the model's reply streams: the stream is dropped and
/// the session ends `cancelled`, its log's end written.
#[test]
fn sigterm_mid_stream_ends_the_session_cancelled() {
    let kind = ProviderKind::OpenaiChat;
    // One whole event of text, then nothing more for a minute.
    let mut hanging = loopback::Scripted::stream(
        &loopback::event(
            None,
            &json!({"choices": [{"index": 0, "delta": {"role": "assistant", "content": "Thinking"}, "finish_reason": null}]}),
        ),
        4096,
    );
    hanging
        .body
        .push(loopback::Piece::Hang(std::time::Duration::from_secs(60)));
    let server = Server::start(vec![hanging]);
    let fx = project(kind, &server, "");
    let mut child = spawned(&fx, &["--json"], "think");
    let mut stdout = std::io::BufReader::new(child.stdout.take().expect("stdout"));
    let mut seen = String::new();
    while !seen.contains("\"type\":\"text\"") {
        use std::io::BufRead;
        let mut line = String::new();
        assert!(
            stdout.read_line(&mut line).expect("stdout") > 0,
            "ended before streaming: {seen}"
        );
        seen.push_str(&line);
    }
    kill(&child, "TERM");
    let mut rest = Vec::new();
    std::io::Read::read_to_end(&mut stdout, &mut rest).expect("the rest");
    let out = child.wait_with_output().expect("chock run ends");
    assert_eq!(out.status.code(), Some(130), "{}", describe(&out));
    let mut all = seen.into_bytes();
    all.extend(rest);
    let events = validated_events(&all);
    assert_eq!(
        events.last().expect("end")["how"],
        "cancelled",
        "{events:?}"
    );
    assert_eq!(end_of(&fx)["how"], "cancelled");
}

/// An act that needs a person's yes, with no terminal and no `chock
/// approve`: the refusal the model reads says why in chock run's words,
/// never an MCP client's.
#[test]
fn a_refusal_for_want_of_a_person_says_so_in_chock_runs_words() {
    let kind = ProviderKind::Anthropic;
    let server = Server::start(vec![
        reply(
            kind,
            "",
            &[("w", "write_file", json!({"path": "n.txt", "content": "x"}))],
        ),
        reply(kind, "Could not.", &[]),
    ]);
    let fx = project(
        kind,
        &server,
        r#".{ .action = "call.write_file", .decision = .ask }"#,
    );
    let out = run(&fx, &[], "write");
    assert!(out.status.success(), "{}", describe(&out));
    let (refusal, is_error) = result_for(kind, &server.requests()[1], "w");
    assert!(is_error, "{refusal}");
    assert!(
        refusal.contains("chock run has no terminal to ask at")
            && refusal.contains("no `chock approve` is running")
            && !refusal.contains("elicitation"),
        "{refusal}"
    );
}

/// A whole 1x1 PNG.
const PNG: &[u8] = &[
    0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48, 0x44, 0x52,
    0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x06, 0x00, 0x00, 0x00, 0x1f, 0x15, 0xc4,
    0x89, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x44, 0x41, 0x54, 0x78, 0x9c, 0x63, 0xf8, 0xff, 0xff, 0x3f,
    0x00, 0x05, 0xfe, 0x02, 0xfe, 0xa7, 0x35, 0x81, 0x84, 0x00, 0x00, 0x00, 0x00, 0x49, 0x45, 0x4e,
    0x44, 0xae, 0x42, 0x60, 0x82,
];

/// read_image sends a workspace image in each API's image block after
/// the call's result; a file that is no image (whatever its name), one
/// past the bound, a link out of the workspace, and a `deny_read` file are
/// each refused to the model, and nothing of them is sent. set_title
/// and request_action are shown and logged.
#[test]
fn read_image_sends_the_image_and_refuses_what_is_none_set_title_and_request_action_are_shown_and_logged()
 {
    for kind in KINDS {
        let server = Server::start(vec![
            reply(
                kind,
                "",
                &[
                    ("t", "set_title", json!({"title": "Look at\nthe shot"})),
                    ("i1", "read_image", json!({"path": "shot.png"})),
                    ("i2", "read_image", json!({"path": "fake.png"})),
                    ("i3", "read_image", json!({"path": "big.png"})),
                    ("i4", "read_image", json!({"path": "out.png"})),
                    ("i5", "read_image", json!({"path": "secret/s.png"})),
                    (
                        "r",
                        "request_action",
                        json!({"action": "log in to the dashboard", "why": "the token expired"}),
                    ),
                ],
            ),
            reply(kind, "A red dot.", &[]),
        ]);
        let fx = run_support::project_zon(
            kind,
            &server,
            &format!(
                ".{{ .apply = .{{ .mode = .merge }}, .deny_read = .{{ \"secret/s.png\" }}, .policy = .{{ .rules = .{{ {} }} }} }}\n",
                run_support::APPLY_ALLOWED
            ),
        );
        std::fs::write(fx.project.join("shot.png"), PNG).expect("shot.png");
        std::fs::write(fx.project.join("fake.png"), "not an image").expect("fake.png");
        let mut big = PNG.to_vec();
        big.resize(5_000_001, 0);
        std::fs::write(fx.project.join("big.png"), big).expect("big.png");
        std::os::unix::fs::symlink("/etc/hostname", fx.project.join("out.png")).expect("link");
        std::fs::create_dir(fx.project.join("secret")).expect("secret");
        std::fs::write(fx.project.join("secret/s.png"), PNG).expect("s.png");
        sandbox_fixture::git_stdout(&fx.project, &["add", "."]);
        sandbox_fixture::git_stdout(&fx.project, &["commit", "-q", "-m", "images"]);
        let out = run(&fx, &[], "look at the shot");
        assert!(out.status.success(), "{kind:?}: {}", describe(&out));
        let requests = server.requests();
        let (said, _) = result_for(kind, &requests[1], "i1");
        assert!(
            said.contains(&format!("image/png, {} bytes", PNG.len())),
            "{kind:?}: {said}"
        );
        for (id, why) in [
            ("i2", "is not a PNG, JPEG, GIF or WebP image"),
            ("i3", "5000001"),
            ("i4", "out.png"),
            ("i5", "deny_read"),
        ] {
            let (refused, is_error) = result_for(kind, &requests[1], id);
            assert!(
                is_error && refused.contains(why),
                "{kind:?} {id}: {refused}"
            );
        }
        let encoded = text(
            &std::process::Command::new("base64")
                .args(["-w0"])
                .arg(fx.project.join("shot.png"))
                .output()
                .expect("base64")
                .stdout,
        );
        let messages = requests[1].body["messages"].as_array().expect("messages");
        let images: Vec<&Value> = match kind {
            ProviderKind::Anthropic => messages
                .iter()
                .flat_map(|m| m["content"].as_array().into_iter().flatten())
                .filter(|c| c["type"] == "image")
                .collect(),
            _ => messages
                .iter()
                .filter(|m| m["role"] == "user")
                .flat_map(|m| m["content"].as_array().into_iter().flatten())
                .filter(|c| c["type"] == "image_url")
                .collect(),
        };
        let [image] = &images[..] else {
            panic!("{kind:?}: one image is sent: {images:?}")
        };
        match kind {
            ProviderKind::Anthropic => {
                assert_eq!(image["source"]["media_type"], "image/png");
                assert_eq!(image["source"]["data"], encoded.as_str());
                // In the user message holding the results, after them.
                let last = messages.last().expect("a message");
                assert_eq!(last["role"], "user");
                assert_eq!(
                    last["content"].as_array().and_then(|c| c.last()),
                    Some(*image)
                );
            }
            _ => {
                assert_eq!(
                    image["image_url"]["url"],
                    format!("data:image/png;base64,{encoded}")
                );
                assert_eq!(
                    messages.last().expect("a message")["role"],
                    "user",
                    "after every tool result"
                );
            }
        }
        let stderr = text(&out.stderr);
        assert!(
            stderr.contains("chock run: title: Look at the shot"),
            "{kind:?}: {stderr}"
        );
        assert!(
            stderr.contains(
                "chock run: the `main` agent asks you to: log in to the dashboard (why: the token expired)"
            ),
            "{kind:?}: {stderr}"
        );
        let events = session_events(&fx);
        let title = events
            .iter()
            .find(|e| e["type"] == "title")
            .expect("a title event");
        assert_eq!(title["title"], "Look at the shot");
        let listed = fx
            .chock()
            .args(["sessions", "--json"])
            .output()
            .expect("sessions");
        let listed: Value = serde_json::from_slice(&listed.stdout).expect("one session");
        assert_eq!(
            listed["title"], "Look at the shot",
            "chock sessions shows it: {listed}"
        );
        let asked = events
            .iter()
            .find(|e| e["type"] == "request_action")
            .expect("a request_action event");
        assert_eq!(asked["action"], "log in to the dashboard", "{asked}");
        assert_eq!(asked["agent"], "main", "{asked}");
        let logged = fx.last_logged("call.read_image");
        assert_eq!(
            logged["decision"], "allow",
            "decided, allowed by the shipped row: {logged}"
        );
    }
}

/// Ctrl-C typed at the terminal while the person is asked there (the
/// terminal's own SIGINT to the foreground process group): the first says
/// at once that the turn stops, and the question still waits for its
/// answer; a second ends the process at once, the workspace kept, with
/// no `end` written (the log shows it stopped).
#[test]
fn a_second_ctrl_c_at_the_terminal_ends_the_run_at_once() {
    use std::io::{Read, Write};
    let kind = ProviderKind::Anthropic;
    let server = Server::start(vec![
        reply(
            kind,
            "",
            &[("w", "write_file", json!({"path": "n.txt", "content": "x"}))],
        ),
        reply(kind, "never read", &[]),
    ]);
    let fx = project(
        kind,
        &server,
        r#".{ .action = "call.write_file", .decision = .ask }"#,
    );
    let mut script = fx.chock_on_a_terminal(&["run", "--model", "m1", "--", "write"]);
    let mut child = script.spawn().expect("util-linux's script for a pty");
    let mut typed = child.stdin.take().expect("stdin");
    let mut screen_out = child.stdout.take().expect("stdout");
    let (tell, heard) = std::sync::mpsc::channel::<String>();
    std::thread::spawn(move || {
        let mut buffer = [0u8; 4096];
        while let Ok(n) = screen_out.read(&mut buffer) {
            if n == 0 {
                break;
            }
            let _ = tell.send(String::from_utf8_lossy(&buffer[..n]).into_owned());
        }
    });
    let mut screen = String::new();
    let wait_for_screen = |screen: &mut String, words: &str| {
        let until = std::time::Instant::now() + std::time::Duration::from_secs(60);
        while !screen.contains(words) {
            let left = until.saturating_duration_since(std::time::Instant::now());
            match heard.recv_timeout(left) {
                Ok(piece) => screen.push_str(&piece),
                Err(_) => panic!("`{words}` never shown: {screen}"),
            }
        }
    };
    wait_for_screen(&mut screen, "[y/N]");
    typed.write_all(b"\x03").expect("^C typed");
    typed.flush().expect("typed");
    wait_for_screen(
        &mut screen,
        "cancelling: the turn stops and the work is kept (Ctrl-C again stops at once)",
    );
    std::thread::sleep(std::time::Duration::from_millis(300));
    assert!(
        child.try_wait().expect("script").is_none(),
        "the question still waits after one Ctrl-C: {screen}"
    );
    typed.write_all(b"\x03").expect("^C typed again");
    typed.flush().expect("typed");
    wait_for_screen(&mut screen, "stopped at once");
    let status = child.wait().expect("script ends");
    assert_eq!(status.code(), Some(130), "{screen}");
    assert_eq!(server.requests().len(), 1, "{screen}");
    assert!(
        session_events(&fx).iter().all(|e| e["type"] != "end"),
        "ended at once: no end written"
    );
    let list = fx
        .chock()
        .args(["workspace"])
        .output()
        .expect("chock workspace");
    assert!(
        text(&list.stdout).starts_with("run-"),
        "kept: {}",
        describe(&list)
    );
}

/// A spawned agent spends the session's budget too: its loop stops at
/// the bound, its parent reads why, and the session stops there.
#[test]
fn a_spawned_agent_is_stopped_at_the_sessions_budget() {
    let kind = ProviderKind::OpenaiChat;
    let server = Server::start(vec![
        reply(
            kind,
            "",
            &[(
                "p1",
                "spawn_agent",
                json!({"kind": "tester", "task": "read a.txt, twice"}),
            )],
        ),
        reply(kind, "", &[("c1", "read_file", json!({"path": "a.txt"}))]),
        reply(kind, "never read", &[]),
    ]);
    let fx = run_support::project_zon(
        kind,
        &server,
        &format!(
            r#".{{ .apply = .{{ .mode = .merge }}, .policy = .{{
    .agents = .{{ .{{ .kind = "main" }}, .{{ .kind = "tester", .parent = "main" }} }},
    .rules = .{{ {} }} }} }}
"#,
            run_support::APPLY_ALLOWED
        ),
    );
    // 15 tokens a reply: the main agent's first, then the tester's, reach 25.
    let out = run(&fx, &["--max-tokens", "25"], "hand it over");
    assert_eq!(out.status.code(), Some(4), "{}", describe(&out));
    assert_eq!(server.requests().len(), 2, "{}", describe(&out));
    let events = session_events(&fx);
    let result = events
        .iter()
        .find(|e| e["type"] == "tool_result" && e["call_id"] == "p1")
        .expect("the spawn's result");
    assert!(
        result["content"]
            .as_str()
            .unwrap_or_default()
            .contains("the `tester` agent was stopped: 30 tokens used, and --max-tokens is 25"),
        "{result}"
    );
    assert_eq!(end_of(&fx)["how"], "budget");
}
