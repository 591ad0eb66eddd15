//! `chock run` for real, against a scripted provider on loopback (the
//! provider crate's test server): a model that writes a file and runs a
//! command in the sandbox, then stops, its work applied into a real git
//! project; a model model.select refuses; a call the policy denies,
//! answered to the model as a refusal; and a session stopped at
//! --max-turns, its work kept; an ask with no terminal answered through
//! `chock approve`. Anthropic Messages and OpenAI Chat Completions both. Needs user namespaces and Landlock (`scripts/setup`).

#[path = "../../provider/tests/loopback/mod.rs"]
mod loopback;
mod sandbox_fixture;

use std::process::Output;

use chock_policy::ProviderKind;
use loopback::{Scripted, Server, event};
use sandbox_fixture::{Fixture, describe, git_stdout as git, text};
use serde_json::{Value, json};

const APPLY_ALLOWED: &str = r#".{ .action = "workspace.apply", .decision = .allow }"#;

/// A git project on `main` with `a.txt`, chock.zon's rules `rules` after
/// workspace.apply allowed (merge mode), and config.zon naming one
/// instance, `loop`, of `kind` at `server`.
fn project(kind: ProviderKind, server: &Server, rules: &str) -> Fixture {
    let fx = Fixture::host();
    git(&fx.project, &["init", "-q", "-b", "main"]);
    std::fs::write(fx.project.join("a.txt"), "one\n").expect("a.txt");
    fx.zon(&format!(
        ".{{ .apply = .{{ .mode = .merge }}, .policy = .{{ .rules = .{{ {APPLY_ALLOWED}, {rules} }} }} }}\n"
    ));
    git(&fx.project, &["add", "."]);
    git(&fx.project, &["commit", "-q", "-m", "init"]);
    with_provider(fx, kind, server)
}

/// [`project`] with no git: `a.txt` and `gone.txt`, workspace.apply allowed.
fn plain_project(kind: ProviderKind, server: &Server) -> Fixture {
    let fx = Fixture::host();
    std::fs::write(fx.project.join("a.txt"), "one\n").expect("a.txt");
    std::fs::write(fx.project.join("gone.txt"), "bye\n").expect("gone.txt");
    fx.zon(&format!(
        ".{{ .policy = .{{ .rules = .{{ {APPLY_ALLOWED} }} }} }}\n"
    ));
    with_provider(fx, kind, server)
}

/// `fx` with config.zon naming one instance, `loop`, of `kind` at `server`.
fn with_provider(fx: Fixture, kind: ProviderKind, server: &Server) -> Fixture {
    let (kind_name, base) = match kind {
        ProviderKind::Anthropic => ("anthropic", format!("http://127.0.0.1:{}", server.port)),
        ProviderKind::OpenaiChat => (
            "openai_chat",
            format!("http://127.0.0.1:{}/v1", server.port),
        ),
        ProviderKind::OpenaiResponses => (
            "openai_responses",
            format!("http://127.0.0.1:{}/v1", server.port),
        ),
    };
    let config = fx.root().join("config/chock");
    std::fs::create_dir_all(&config).expect("config dir");
    std::fs::write(
        config.join("config.zon"),
        format!(
            ".{{ .providers = .{{ .{{ .name = \"loop\", .kind = .{kind_name}, .base_url = \"{base}\", .key = .none }} }} }}\n"
        ),
    )
    .expect("config.zon");
    fx
}

/// One scripted reply of `kind`: `text`, then `calls` (id, tool,
/// arguments); it stops for tool use when there are calls.
fn reply(kind: ProviderKind, said: &str, calls: &[(&str, &str, Value)]) -> Scripted {
    let body = match kind {
        ProviderKind::Anthropic => {
            let mut events = vec![
                event(
                    Some("message_start"),
                    &json!({"type": "message_start", "message": {"id": "msg", "type": "message", "role": "assistant", "content": [], "model": "m", "usage": {"input_tokens": 10, "output_tokens": 1}}}),
                ),
                event(
                    Some("content_block_start"),
                    &json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
                ),
                event(
                    Some("content_block_delta"),
                    &json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": said}}),
                ),
                event(
                    Some("content_block_stop"),
                    &json!({"type": "content_block_stop", "index": 0}),
                ),
            ];
            for (i, (id, name, arguments)) in calls.iter().enumerate() {
                let index = i + 1;
                events.push(event(
                    Some("content_block_start"),
                    &json!({"type": "content_block_start", "index": index, "content_block": {"type": "tool_use", "id": id, "name": name, "input": {}}}),
                ));
                events.push(event(
                    Some("content_block_delta"),
                    &json!({"type": "content_block_delta", "index": index, "delta": {"type": "input_json_delta", "partial_json": arguments.to_string()}}),
                ));
                events.push(event(
                    Some("content_block_stop"),
                    &json!({"type": "content_block_stop", "index": index}),
                ));
            }
            let stop = if calls.is_empty() {
                "end_turn"
            } else {
                "tool_use"
            };
            events.push(event(
                Some("message_delta"),
                &json!({"type": "message_delta", "delta": {"stop_reason": stop}, "usage": {"output_tokens": 5}}),
            ));
            events.push(event(
                Some("message_stop"),
                &json!({"type": "message_stop"}),
            ));
            events.concat()
        }
        ProviderKind::OpenaiChat => {
            let mut events = vec![event(
                None,
                &json!({"choices": [{"index": 0, "delta": {"role": "assistant", "content": said}, "finish_reason": null}]}),
            )];
            for (i, (id, name, arguments)) in calls.iter().enumerate() {
                events.push(event(
                    None,
                    &json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": i, "id": id, "type": "function", "function": {"name": name, "arguments": arguments.to_string()}}]}}]}),
                ));
            }
            let stop = if calls.is_empty() {
                "stop"
            } else {
                "tool_calls"
            };
            events.push(event(
                None,
                &json!({"choices": [{"index": 0, "delta": {}, "finish_reason": stop}]}),
            ));
            events.push(event(
                None,
                &json!({"choices": [], "usage": {"prompt_tokens": 10, "completion_tokens": 5}}),
            ));
            events.push("data: [DONE]\n\n".to_owned());
            events.concat()
        }
        ProviderKind::OpenaiResponses => unreachable!("not scripted here"),
    };
    Scripted::stream(&body, 64)
}

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

#[test]
fn the_model_writes_runs_and_stops_and_the_work_is_applied() {
    let kind = ProviderKind::Anthropic;
    let server = Server::start(vec![
        reply(
            kind,
            "I will write the note.",
            &[(
                "toolu_1",
                "write_file",
                json!({"path": "note.txt", "content": "hello\n"}),
            )],
        ),
        reply(
            kind,
            "Now I copy it.",
            &[(
                "toolu_2",
                "run_command",
                json!({"argv": ["sh", "-c", "cat note.txt a.txt > copy.txt"]}),
            )],
        ),
        reply(kind, "Done: note.txt and copy.txt.", &[]),
    ]);
    let fx = project(kind, &server, "");
    let out = run(&fx, &[], "write a note and copy it");
    assert!(out.status.success(), "{}", describe(&out));
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains("I will write the note.")
            && stdout.contains("Done: note.txt and copy.txt."),
        "the model's text is streamed to stdout: {stdout}"
    );
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("tool write_file") && stderr.contains("tool run_command"),
        "each call is one line on stderr: {stderr}"
    );
    assert_eq!(
        std::fs::read_to_string(fx.project.join("note.txt")).expect("note.txt applied"),
        "hello\n"
    );
    assert_eq!(
        std::fs::read_to_string(fx.project.join("copy.txt")).expect("copy.txt applied"),
        "hello\none\n",
        "the command ran in the sandbox on the workspace"
    );
    let requests = server.requests();
    assert_eq!(requests.len(), 3, "three requests");
    assert_eq!(requests[0].path, "/v1/messages");
    let tools: Vec<&str> = requests[0].body["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert!(
        tools.contains(&"write_file") && tools.contains(&"run_command"),
        "the tool server's definitions are given to the model: {tools:?}"
    );
    assert!(
        !tools.contains(&"request_apply"),
        "the apply is the loop's, at the end"
    );
    let results = requests[2].body["messages"].to_string();
    assert!(
        results.contains("toolu_2") && results.contains("exit"),
        "the command's result is sent back: {results}"
    );
    let logged = fx.last_logged("workspace.apply");
    assert_eq!(logged["decision"], "allow", "{logged}");
}

#[test]
fn a_refused_model_stops_the_run_naming_the_rule() {
    let kind = ProviderKind::OpenaiChat;
    let server = Server::start(vec![reply(kind, "never sent", &[])]);
    let fx = project(
        kind,
        &server,
        r#".{ .action = "provider.loop.m1", .decision = .deny }"#,
    );
    let out = run(&fx, &[], "anything");
    assert_eq!(out.status.code(), Some(3), "{}", describe(&out));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("provider.loop.m1") && stderr.contains("chock.zon"),
        "the refusal names the rule: {stderr}"
    );
    assert!(
        server.requests().is_empty(),
        "nothing was sent to the model"
    );
    let list = chock_workspace(&fx);
    assert!(
        text(&list.stdout).contains("no workspace is kept"),
        "no workspace was made: {}",
        describe(&list)
    );
}

#[test]
fn a_denied_call_is_answered_to_the_model_as_a_refusal() {
    let kind = ProviderKind::OpenaiChat;
    let server = Server::start(vec![
        reply(
            kind,
            "Writing.",
            &[(
                "call_1",
                "write_file",
                json!({"path": "note.txt", "content": "x"}),
            )],
        ),
        reply(kind, "I was refused.", &[]),
    ]);
    let fx = project(
        kind,
        &server,
        r#".{ .action = "call.write_file", .decision = .deny }"#,
    );
    let out = run(&fx, &[], "write a note");
    assert!(out.status.success(), "{}", describe(&out));
    assert!(
        text(&out.stderr).contains("tool write_file {\"content\":\"x\",\"path\":\"note.txt\"}: refused: call.write_file is denied"),
        "the decision is on the call's line: {}",
        describe(&out)
    );
    let requests = server.requests();
    assert_eq!(requests.len(), 2, "{}", describe(&out));
    assert_eq!(requests[1].path, "/v1/chat/completions");
    let messages = requests[1].body["messages"].as_array().expect("messages");
    let result = messages
        .iter()
        .find(|m| m["role"] == "tool")
        .expect("the next request carries the call's result");
    assert_eq!(result["tool_call_id"], "call_1");
    let content = result["content"].as_str().expect("content");
    assert!(
        content.starts_with("refused: call.write_file is denied"),
        "{content}"
    );
    assert!(!fx.project.join("note.txt").exists());
}

#[test]
fn max_turns_stops_the_session_and_keeps_its_work() {
    let kind = ProviderKind::Anthropic;
    let again = |id: &str| {
        reply(
            kind,
            "More.",
            &[(
                id,
                "run_command",
                json!({"argv": ["sh", "-c", "echo x >> log.txt"]}),
            )],
        )
    };
    let server = Server::start(vec![again("t1"), again("t2"), again("t3")]);
    let fx = project(kind, &server, "");
    let out = run(&fx, &["--max-turns", "2"], "loop forever");
    assert_eq!(out.status.code(), Some(4), "{}", describe(&out));
    assert_eq!(server.requests().len(), 2, "no request past --max-turns");
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("--max-turns") && stderr.contains("chock apply"),
        "the end and where the work is kept are said: {stderr}"
    );
    assert!(
        !fx.project.join("log.txt").exists(),
        "unfinished work is not applied"
    );
    let list = chock_workspace(&fx);
    assert!(
        text(&list.stdout).starts_with("run-"),
        "the work is kept in the session workspace: {}",
        describe(&list)
    );
}

#[test]
fn an_ask_with_no_terminal_reaches_chock_approve() {
    use std::io::{Read, Write};
    use std::process::Stdio;
    let kind = ProviderKind::Anthropic;
    let mut first = reply(
        kind,
        "Writing.",
        &[(
            "toolu_1",
            "write_file",
            json!({"path": "note.txt", "content": "asked\n"}),
        )],
    );
    // The reply waits until `chock approve` watches the session.
    first
        .body
        .insert(0, loopback::Piece::Pause(std::time::Duration::from_secs(3)));
    let server = Server::start(vec![first, reply(kind, "Written.", &[])]);
    let fx = project(
        kind,
        &server,
        r#".{ .action = "call.write_file", .decision = .ask }"#,
    );
    let run = fx
        .chock()
        .args(["run", "--model", "m1", "--", "write a note"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn chock run");
    let mut approver = fx
        .chock()
        .arg("approve")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn chock approve");
    let mut answers = approver.stdin.take().expect("stdin");
    let mut shown = approver.stdout.take().expect("stdout");
    let (tell, heard) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut seen = String::new();
        let mut buffer = [0u8; 4096];
        while let Ok(n) = shown.read(&mut buffer) {
            if n == 0 {
                break;
            }
            seen.push_str(&String::from_utf8_lossy(&buffer[..n]));
            if seen.contains("allow it once? [y/N]") {
                let _ = tell.send(seen.clone());
            }
        }
    });
    let question = heard
        .recv_timeout(std::time::Duration::from_secs(60))
        .expect("chock approve is asked");
    assert!(question.contains("call.write_file"), "{question}");
    writeln!(answers, "y").expect("answer");
    let out = run.wait_with_output().expect("chock run ends");
    let _ = approver.kill();
    let _ = approver.wait();
    assert!(out.status.success(), "{}", describe(&out));
    assert_eq!(
        std::fs::read_to_string(fx.project.join("note.txt")).expect("note.txt applied"),
        "asked\n"
    );
    let logged = fx.last_logged("call.write_file");
    assert_eq!(logged["decision"], "allow", "{logged}");
    assert_eq!(logged["answered_by"], "person", "{logged}");
    assert_eq!(logged["agent_kind"], "chock-run", "{logged}");
}

/// What `chock workspace` says of the workspaces sessions kept.
fn chock_workspace(fx: &Fixture) -> Output {
    fx.chock()
        .arg("workspace")
        .output()
        .expect("chock workspace")
}

/// A project that is not a git repository: the session works on an
/// overlay (its write and its command's removal seen by each other, the
/// project untouched until the end), the apply writes the work into the
/// tree, and work kept is said as `chock run`'s.
#[test]
fn a_project_with_no_git_runs_on_an_overlay() {
    let kind = ProviderKind::Anthropic;
    let server = Server::start(vec![
        reply(
            kind,
            "Writing.",
            &[(
                "t1",
                "write_file",
                json!({"path": "note.txt", "content": "hello\n"}),
            )],
        ),
        reply(
            kind,
            "Tidying.",
            &[(
                "t2",
                "run_command",
                json!({"argv": ["sh", "-c", "rm gone.txt && cat note.txt a.txt > copy.txt"]}),
            )],
        ),
        reply(
            kind,
            "Checking.",
            &[("t3", "read_file", json!({"path": "gone.txt"}))],
        ),
        reply(kind, "Done.", &[]),
    ]);
    let fx = plain_project(kind, &server);
    let out = run(&fx, &[], "write a note");
    assert!(out.status.success(), "{}", describe(&out));
    let read = fx.project.join("copy.txt");
    assert_eq!(
        std::fs::read_to_string(&read).expect("copy.txt applied"),
        "hello\none\n"
    );
    assert!(
        !fx.project.join("gone.txt").exists(),
        "the removal is applied"
    );
    let results = server.requests()[3].body["messages"].to_string();
    assert!(
        results.contains("t3") && results.contains("does not exist"),
        "read_file honours the command's removal: {results}"
    );

    let again = |id: &str| {
        reply(
            kind,
            "More.",
            &[(
                id,
                "write_file",
                json!({"path": "later.txt", "content": "later\n"}),
            )],
        )
    };
    let server = Server::start(vec![again("t1"), again("t2")]);
    let fx = plain_project(kind, &server);
    let out = run(&fx, &["--max-turns", "1"], "loop");
    assert_eq!(out.status.code(), Some(4), "{}", describe(&out));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("chock run: the workspace run-") && !stderr.contains("chock mcp"),
        "the kept work is said as chock run's: {stderr}"
    );
    assert!(!fx.project.join("later.txt").exists());
}
