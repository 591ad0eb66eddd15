//! `chock run` for real, against a scripted provider on loopback (the
//! provider crate's test server): a model that writes a file and runs a
//! command in the sandbox, then stops, its work applied into a real git
//! project; a model model.select refuses; a call the policy denies,
//! answered to the model as a refusal; and a session stopped at
//! --max-turns, its work kept; an ask with no terminal answered through
//! `chock approve`. Anthropic Messages and OpenAI Chat Completions both.
//! The session log: a session's log verifies and an edited byte is named;
//! export, remove, prune; `chock usage` with a priced, a free and an
//! unknown model; `--continue` sends the earlier turns, reuses the kept
//! workspace and writes on the same chain. Needs user namespaces and
//! Landlock (`scripts/setup`).

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

/// The session logs in the state directory, oldest name first.
fn session_logs(fx: &Fixture) -> Vec<std::path::PathBuf> {
    let dir = fx.root().join("state/chock/sessions");
    let mut logs: Vec<_> = std::fs::read_dir(&dir)
        .map(|entries| {
            entries
                .flatten()
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
                .collect()
        })
        .unwrap_or_default();
    logs.sort();
    logs
}

/// The id of a session log.
fn id_of(log: &std::path::Path) -> String {
    log.file_stem()
        .and_then(|s| s.to_str())
        .expect("a session id")
        .to_owned()
}

fn chock_sessions(fx: &Fixture, args: &[&str]) -> Output {
    fx.chock()
        .arg("sessions")
        .args(args)
        .output()
        .expect("chock sessions")
}

/// Each line of a session log as JSON.
fn events(log: &std::path::Path) -> Vec<Value> {
    std::fs::read_to_string(log)
        .expect("session log")
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect()
}

#[test]
fn a_session_log_verifies_and_an_edited_byte_is_named() {
    let kind = ProviderKind::Anthropic;
    let server = Server::start(vec![
        reply(
            kind,
            "Reading.",
            &[("toolu_1", "read_file", json!({"path": "a.txt"}))],
        ),
        reply(kind, "It says one.", &[]),
        reply(kind, "never sent", &[]),
    ]);
    let fx = project(kind, &server, "");
    let out = run(&fx, &[], "what does a.txt say?");
    assert!(out.status.success(), "{}", describe(&out));
    let logs = session_logs(&fx);
    assert_eq!(logs.len(), 1, "one log per session");
    let id = id_of(&logs[0]);
    assert!(id.starts_with("run-"), "{id}");
    assert!(
        text(&out.stderr).contains(&id),
        "the end names the session: {}",
        describe(&out)
    );
    let kinds: Vec<String> = events(&logs[0])
        .iter()
        .map(|e| e["type"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert_eq!(
        kinds,
        ["start", "user", "turn", "tool_result", "turn", "end"],
        "the task, each turn, each result and the end"
    );
    let lines = events(&logs[0]);
    assert_eq!(lines[2]["model"], "m1");
    assert_eq!(lines[2]["instance"], "loop");
    assert_eq!(lines[2]["tokens"]["input"], 10);
    assert_eq!(lines[3]["answer"], "allowed");
    assert!(
        lines[3]["content"]
            .as_str()
            .unwrap_or_default()
            .contains("one"),
        "{}",
        lines[3]
    );
    assert_eq!(lines[5]["how"], "done");
    let listed = chock_sessions(&fx, &[]);
    let listing = text(&listed.stdout);
    assert!(
        listing.contains(&id) && listing.contains("loop/m1  2  done"),
        "{}",
        describe(&listed)
    );
    let verified = chock_sessions(&fx, &["verify"]);
    assert!(verified.status.success(), "{}", describe(&verified));
    assert!(
        text(&verified.stdout).contains("intact, 6 lines"),
        "{}",
        describe(&verified)
    );
    // One byte of the task's line changed: the next line's link names it.
    let original = std::fs::read_to_string(&logs[0]).expect("log");
    let edited = original.replacen("what does a.txt say?", "what does b.txt say?", 1);
    assert_ne!(original, edited);
    std::fs::write(&logs[0], edited).expect("edit the log");
    let verified = chock_sessions(&fx, &["verify", &id]);
    assert_eq!(verified.status.code(), Some(1), "{}", describe(&verified));
    let said = text(&verified.stdout);
    assert!(
        said.contains(&format!("{}:2: line 2 was changed", logs[0].display())),
        "the first broken line is named: {said}"
    );
    // A log that does not verify is not resumed.
    let resumed = run(&fx, &["--continue"], "go on");
    assert_eq!(resumed.status.code(), Some(1), "{}", describe(&resumed));
    assert!(
        text(&resumed.stderr).contains(":2: line 2 was changed"),
        "{}",
        describe(&resumed)
    );
    assert_eq!(server.requests().len(), 2, "nothing was sent to the model");
}

#[test]
fn sessions_are_exported_removed_and_pruned_but_never_while_running() {
    let kind = ProviderKind::OpenaiChat;
    let server = Server::start(vec![
        reply(kind, "First ```fenced``` answer.", &[]),
        reply(kind, "Second.", &[]),
    ]);
    let fx = project(kind, &server, "");
    for task in ["first task", "second task"] {
        let out = run(&fx, &[], task);
        assert!(out.status.success(), "{}", describe(&out));
    }
    let logs = session_logs(&fx);
    assert_eq!(logs.len(), 2);
    let (first, second) = (id_of(&logs[0]), id_of(&logs[1]));

    let to = fx.root().join("export");
    let exported = chock_sessions(
        &fx,
        &["export", &first, "--to", to.to_str().expect("utf-8")],
    );
    assert!(exported.status.success(), "{}", describe(&exported));
    assert_eq!(
        std::fs::read(to.join(format!("{first}.jsonl"))).expect("the log"),
        std::fs::read(&logs[0]).expect("log"),
        "the log is exported byte for byte"
    );
    let transcript =
        std::fs::read_to_string(to.join(format!("{first}.md"))).expect("the transcript");
    assert!(
        transcript.contains("## Task") && transcript.contains("first task"),
        "{transcript}"
    );
    assert!(
        transcript.contains("````\nFirst ```fenced``` answer.\n````"),
        "{transcript}"
    );
    let again = chock_sessions(
        &fx,
        &["export", &first, "--to", to.to_str().expect("utf-8")],
    );
    assert_eq!(again.status.code(), Some(1), "{}", describe(&again));
    assert!(
        text(&again.stderr).contains("already exists"),
        "{}",
        describe(&again)
    );

    // No terminal, no --yes: nobody said yes, so it is kept.
    let asked = chock_sessions(&fx, &["remove", &first]);
    assert_eq!(asked.status.code(), Some(3), "{}", describe(&asked));
    assert!(logs[0].exists());

    // A running session (its lock held) is neither removed nor pruned.
    let lock = std::fs::File::options()
        .create(true)
        .truncate(false)
        .write(true)
        .open(logs[0].with_extension("lock"))
        .expect("lock file");
    rustix::fs::flock(&lock, rustix::fs::FlockOperation::NonBlockingLockExclusive)
        .expect("the test holds the session's lock");
    let refused = chock_sessions(&fx, &["remove", "--yes", &first]);
    assert_eq!(refused.status.code(), Some(3), "{}", describe(&refused));
    assert!(
        text(&refused.stderr).contains("running"),
        "{}",
        describe(&refused)
    );
    assert!(
        text(&chock_sessions(&fx, &[]).stdout).contains("  running"),
        "a held lock shows as running"
    );
    // Both made old; pruning skips the running one.
    for log in &logs {
        let status = std::process::Command::new("touch")
            .args(["-d", "3 days ago"])
            .arg(log)
            .status()
            .expect("touch");
        assert!(status.success());
    }
    let pruned = chock_sessions(&fx, &["prune", "--older-than", "2"]);
    assert!(pruned.status.success(), "{}", describe(&pruned));
    assert!(logs[0].exists(), "a running session is never pruned");
    assert!(!logs[1].exists(), "{}", describe(&pruned));
    assert!(text(&pruned.stdout).contains(&format!("removed {second}")));
    drop(lock);

    let removed = chock_sessions(&fx, &["remove", "--yes", &first]);
    assert!(removed.status.success(), "{}", describe(&removed));
    assert!(!logs[0].exists());
    let gone = chock_sessions(&fx, &["remove", "--yes", "../escape"]);
    assert_eq!(gone.status.code(), Some(1), "{}", describe(&gone));
    assert!(text(&gone.stderr).contains("not a session id"));
}

#[test]
fn usage_prices_sessions_and_keeps_free_and_unknown_apart() {
    let kind = ProviderKind::Anthropic;
    let server = Server::start(vec![
        reply(kind, "priced", &[]),
        reply(kind, "free", &[]),
        reply(kind, "unknown", &[]),
    ]);
    let fx = project(kind, &server, "");
    let config = fx.root().join("config/chock/config.zon");
    let text_of = std::fs::read_to_string(&config).expect("config.zon");
    let with_prices = text_of.replacen(
        ".{ .providers",
        ".{ .prices = .{ .{ .kind = .anthropic, .model = \"local-free\", .input = 0, .output = 0 } }, .providers",
        1,
    );
    std::fs::write(&config, with_prices).expect("config.zon");
    for model in ["claude-sonnet-4-5", "local-free", "mystery-1"] {
        let out = fx
            .chock()
            .args(["run", "--model", model, "--", "say something"])
            .env_remove("CHOCK_PROVIDER")
            .env_remove("CHOCK_MODEL")
            .output()
            .expect("chock run");
        assert!(out.status.success(), "{}", describe(&out));
    }
    let ids: Vec<String> = session_logs(&fx).iter().map(|l| id_of(l)).collect();
    let by_model = |model: &str| {
        ids.iter()
            .find(|id| {
                let log = fx.root().join(format!("state/chock/sessions/{id}.jsonl"));
                events(&log)[0]["model"] == model
            })
            .expect("a session of that model")
            .clone()
    };
    let (priced, free, unknown) = (
        by_model("claude-sonnet-4-5"),
        by_model("local-free"),
        by_model("mystery-1"),
    );
    let out = fx.chock().arg("usage").output().expect("chock usage");
    assert!(out.status.success(), "{}", describe(&out));
    let said = text(&out.stdout);
    let line_of = |id: &str| {
        said.lines()
            .find(|l| l.starts_with(id))
            .unwrap_or_default()
            .to_owned()
    };
    // 10 tokens in at $3 and 5 out at $15 per million: $0.000105.
    assert!(line_of(&priced).ends_with("$0.0001"), "{said}");
    assert!(line_of(&free).ends_with("free"), "{said}");
    assert!(
        line_of(&unknown).contains("unknown: mystery-1 (anthropic)"),
        "{said}"
    );
    let unknown_at = said.find("unknown price").expect("an unknown section");
    assert!(said.find(&unknown).expect("listed") > unknown_at, "{said}");
    assert!(
        said.contains("total: $0.0001 for 1 priced sessions; 1 free; 1 unknown"),
        "{said}"
    );
    let shown = fx
        .chock()
        .args(["usage", "show", &priced])
        .output()
        .expect("chock usage show");
    assert!(shown.status.success(), "{}", describe(&shown));
    assert!(
        text(&shown.stdout).contains("1 turns, 10 tokens in (0 from cache, 0 to cache), 5 out: $0.0001 (at $3/$15 per million in/out)"),
        "{}",
        describe(&shown)
    );
    // A bad price is refused at its line.
    std::fs::write(
        &config,
        ".{\n .prices = .{\n .{ .kind = .anthropic, .model = \"x\", .input = -2, .output = 1 } } }\n",
    )
    .expect("config.zon");
    let refused = fx.chock().arg("usage").output().expect("chock usage");
    assert_eq!(refused.status.code(), Some(1), "{}", describe(&refused));
    assert!(
        text(&refused.stderr).contains("config.zon:3:"),
        "{}",
        describe(&refused)
    );
}

#[test]
fn continue_sends_the_earlier_turns_reuses_the_workspace_and_chains_on() {
    let kind = ProviderKind::Anthropic;
    let server = Server::start(vec![
        reply(
            kind,
            "Writing the note.",
            &[(
                "toolu_1",
                "write_file",
                json!({"path": "note.txt", "content": "hello\n"}),
            )],
        ),
        reply(
            kind,
            "Reading it back.",
            &[(
                "toolu_2",
                "run_command",
                json!({"argv": ["cat", "note.txt"]}),
            )],
        ),
        reply(kind, "Finished both.", &[]),
    ]);
    let fx = project(kind, &server, "");
    // Stopped after one request: its work is kept in its workspace.
    let first = run(&fx, &["--max-turns", "1"], "write a note");
    assert_eq!(first.status.code(), Some(4), "{}", describe(&first));
    let logs = session_logs(&fx);
    assert_eq!(logs.len(), 1);
    let id = id_of(&logs[0]);
    assert!(
        text(&chock_workspace(&fx).stdout).starts_with(&id),
        "the workspace is named as the session"
    );
    let second = run(&fx, &["--continue"], "now read it back");
    assert!(second.status.success(), "{}", describe(&second));
    assert_eq!(session_logs(&fx).len(), 1, "the same session goes on");
    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    let messages = requests[1].body["messages"].to_string();
    for earlier in [
        "write a note",
        "Writing the note.",
        "toolu_1",
        "now read it back",
    ] {
        assert!(
            messages.contains(earlier),
            "the resumed request carries `{earlier}`: {messages}"
        );
    }
    let result = requests[2].body["messages"].to_string();
    assert!(
        result.contains("hello"),
        "the kept workspace holds the first run's note: {result}"
    );
    assert_eq!(
        std::fs::read_to_string(fx.project.join("note.txt")).expect("applied"),
        "hello\n",
        "both runs' work applied at the end"
    );
    let lines = events(&logs[0]);
    let kinds: Vec<&str> = lines
        .iter()
        .map(|e| e["type"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(
        kinds,
        [
            "start",
            "user",
            "turn",
            "tool_result",
            "end",
            "resume",
            "user",
            "turn",
            "tool_result",
            "turn",
            "end"
        ]
    );
    for (i, line) in lines.iter().enumerate() {
        assert_eq!(line["seq"], i as u64 + 1, "one chain: {line}");
    }
    let verified = chock_sessions(&fx, &["verify", &id]);
    assert!(verified.status.success(), "{}", describe(&verified));
    let listing = text(&chock_sessions(&fx, &[]).stdout);
    assert!(listing.contains("loop/m1  3  done"), "{listing}");
    // --session names it; another id is refused, naming what exists.
    let unknown = run(&fx, &["--session", "run-0-none"], "again");
    assert_eq!(unknown.status.code(), Some(1), "{}", describe(&unknown));
    assert!(
        text(&unknown.stderr).contains("no session `run-0-none`"),
        "{}",
        describe(&unknown)
    );
}
