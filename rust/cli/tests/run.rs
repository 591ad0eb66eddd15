//! `chock run` for real, against a scripted provider on loopback (the
//! provider crate's test server): a model that writes a file and runs a
//! command in the sandbox, then stops, its work applied into a real git
//! project; a model model.select refuses; a call the policy denies,
//! answered to the model as a refusal; and a session stopped at
//! --max-turns, its work kept; an ask with no terminal answered through
//! `chock approve`. Anthropic Messages and OpenAI Chat Completions both.
//! The loop's own tools (plan, guidance, memory, scratchpad, ask_user,
//! promises), the gateway's servers, a project outside git on an overlay.
//! The session log: a session's log verifies and an edited byte is named;
//! export, remove, prune; `chock usage` with a priced, a free and an
//! unknown model; `--continue` sends the earlier turns, reuses the kept
//! workspace, keeps the promises and writes on the same chain.
//! spawn_agent: a child refused what its kind's rule denies and its
//! parent's promise forbids, the spawn bounds, its run in the session log.
//! A promise binding every decision made for the session: the hosts
//! run_command connects to (in network namespaces the test makes, as
//! root), the hosts a build reaches (the Nix daemon), model.select when
//! resumed and for a spawned agent. ask_user asking for words: refused
//! with nobody to ask, answered in `chock approve` and cleaned.
//! Needs user namespaces and Landlock (`scripts/setup`).

mod advice_support;
#[path = "../../provider/tests/loopback/mod.rs"]
mod loopback;
mod net_lab;
mod run_support;
mod sandbox_fixture;

use std::process::Output;

use chock_policy::ProviderKind;
use loopback::Server;
use run_support::{APPLY_ALLOWED, plain_project, project, project_zon, reply};
use sandbox_fixture::{Fixture, describe, git_stdout as git, text};
use serde_json::{Value, json};

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
    let denied = r#".{ .action = "provider.loop.m1", .decision = .deny }"#;
    let fx = project(kind, &server, denied);
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
    // The advice under the refusal, added where it says, lets the model be used.
    let advice = advice_support::advice(&stderr);
    assert_eq!(
        advice.block,
        format!(
            ".policy.rules in {}",
            fx.project.join("chock.zon").display()
        )
    );
    fx.zon(&format!(
        ".{{ .apply = .{{ .mode = .merge }}, .policy = .{{ .rules = .{{ {APPLY_ALLOWED}, {denied}, {} }} }} }}\n",
        advice.rule
    ));
    git(&fx.project, &["commit", "-q", "-am", "the advice"]);
    let out = run(&fx, &[], "anything");
    assert_eq!(server.requests().len(), 1, "{}", describe(&out));
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
    let watching = held_until_approve_watches(&mut first);
    let server = Server::start(vec![first, reply(kind, "Written.", &[])]);
    let fx = project(
        kind,
        &server,
        r#".{ .action = "call.write_file", .decision = .ask }"#,
    );
    let (question, out) = run_answered_in_approve(&fx, "write a note", "y", &watching);
    assert!(question.contains("call.write_file"), "{question}");
    assert!(
        question.contains("question 1 from chock run ") && !question.contains("chock mcp"),
        "the session is named as the command it is: {question}"
    );
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

/// `chock run -- TASK` with nobody at its terminal and a real `chock
/// approve` beside it, whose first question (`[y/N]`) is answered `answer`:
/// the question as shown, and the run's output.
fn run_answered_in_approve(
    fx: &Fixture,
    task: &str,
    answer: &str,
    watching: &loopback::Signal,
) -> (String, Output) {
    run_answered_in_approve_at(fx, task, "[y/N]", answer, watching)
}

/// Holds `first`, the reply whose call asks a person, until `chock approve`
/// watches the session (a question asked before then finds nobody watching
/// and is refused); [`run_answered_in_approve`] raises the signal returned.
fn held_until_approve_watches(first: &mut loopback::Scripted) -> loopback::Signal {
    let watching = loopback::Signal::default();
    first
        .body
        .insert(0, loopback::Piece::Until(watching.clone()));
    watching
}

/// [`run_answered_in_approve`], answering once `chock approve` shows `prompt`.
fn run_answered_in_approve_at(
    fx: &Fixture,
    task: &str,
    prompt: &'static str,
    answer: &str,
    watching: &loopback::Signal,
) -> (String, Output) {
    use std::io::{Read, Write};
    use std::process::Stdio;
    let run = fx
        .chock()
        .args(["run", "--model", "m1", "--", task])
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
    let watching = watching.clone();
    std::thread::spawn(move || {
        let mut seen = String::new();
        let mut buffer = [0u8; 4096];
        while let Ok(n) = shown.read(&mut buffer) {
            if n == 0 {
                break;
            }
            seen.push_str(&String::from_utf8_lossy(&buffer[..n]));
            // Printed once the session says it is watched.
            if seen.contains("watching chock run") {
                watching.raise();
            }
            if seen.contains(prompt) {
                let _ = tell.send(seen.clone());
            }
        }
    });
    let question = heard
        .recv_timeout(std::time::Duration::from_secs(60))
        .expect("chock approve is asked");
    writeln!(answers, "{answer}").expect("answer");
    let out = run.wait_with_output().expect("chock run ends");
    let _ = approver.kill();
    let _ = approver.wait();
    (question, out)
}

/// What `chock workspace` says of the workspaces sessions kept.
fn chock_workspace(fx: &Fixture) -> Output {
    fx.chock()
        .arg("workspace")
        .output()
        .expect("chock workspace")
}

/// Every tool result the request carries, as one text (Anthropic Messages).
fn results_of(request: &loopback::Recorded) -> String {
    request.body["messages"].to_string()
}

#[test]
fn the_loops_own_tools_plan_read_guidance_keep_memory_and_give_a_scratchpad() {
    let kind = ProviderKind::Anthropic;
    let plan = json!({"steps": [
        {"step": "read the guidance", "status": "completed"},
        {"step": "take notes", "status": "in_progress"},
        {"step": "finish", "status": "pending"}
    ]});
    let server = Server::start(vec![
        reply(
            kind,
            "Planning.",
            &[
                ("t1", "update_plan", plan),
                ("t2", "read_guidance", json!({})),
                ("t2b", "read_guidance", json!({"path": "docs"})),
                (
                    "t3",
                    "write_memory",
                    json!({"content": "the tests run with make check\n"}),
                ),
            ],
        ),
        reply(
            kind,
            "Reading back.",
            &[
                ("t4", "read_memory", json!({})),
                (
                    "t5",
                    "run_command",
                    json!({"argv": ["sh", "-c", "echo kept > \"$CHOCK_SCRATCHPAD/n.txt\" && cat \"$CHOCK_SCRATCHPAD/n.txt\" && echo \"at $CHOCK_SCRATCHPAD\""]}),
                ),
                (
                    "t6",
                    "ask_user",
                    json!({"question": "Shall I also update the docs?"}),
                ),
            ],
        ),
        reply(kind, "Done.", &[]),
    ]);
    let fx = project(kind, &server, "");
    std::fs::write(
        fx.project.join("AGENTS.md"),
        "Always run make check before you finish.\n",
    )
    .expect("AGENTS.md");
    std::fs::create_dir(fx.project.join("docs")).expect("docs");
    std::fs::write(
        fx.project.join("docs/CLAUDE.md"),
        "Docs are in British English.\n",
    )
    .expect("docs/CLAUDE.md");
    git(&fx.project, &["add", "AGENTS.md", "docs/CLAUDE.md"]);
    git(&fx.project, &["commit", "-q", "-m", "guidance"]);
    let out = fx
        .chock()
        .args(["run", "--model", "m1", "--", "take notes"])
        .stdin(std::process::Stdio::null())
        .output()
        .expect("chock run");
    assert!(out.status.success(), "{}", describe(&out));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("plan [x] read the guidance")
            && stderr.contains("plan [>] take notes")
            && stderr.contains("plan [ ] finish"),
        "the plan is shown as lines: {stderr}"
    );
    let requests = server.requests();
    assert_eq!(requests.len(), 3, "{}", describe(&out));
    let tools: Vec<&str> = requests[0].body["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    for own in [
        "update_plan",
        "ask_user",
        "read_guidance",
        "read_memory",
        "write_memory",
        "restrict_self",
        "policy_widen",
    ] {
        assert!(tools.contains(&own), "{own} is offered: {tools:?}");
    }
    let first = results_of(&requests[1]);
    assert!(
        first.contains("--- AGENTS.md ---") && first.contains("Always run make check"),
        "the guidance is read: {first}"
    );
    assert!(
        first.contains("--- docs/CLAUDE.md ---") && first.contains("British English"),
        "a folder's guidance is read with the root's: {first}"
    );
    assert!(
        first.contains("plan updated: 1 of 3 steps completed"),
        "{first}"
    );
    let second = results_of(&requests[2]);
    assert!(
        second.contains("the tests run with make check"),
        "the memory written is read back: {second}"
    );
    assert!(
        second.contains("kept") && second.contains("at /run/chock/scratch"),
        "the command has its scratchpad: {second}"
    );
    assert!(
        second.contains("nobody can be asked"),
        "ask_user with nobody to ask answers at once: {second}"
    );
    for action in [
        "call.read_guidance",
        "call.read_memory",
        "call.write_memory",
    ] {
        let logged = fx.last_logged(action);
        assert_eq!(logged["decision"], "allow", "{logged}");
        assert_eq!(logged["agent_kind"], "chock-run", "{logged}");
    }
    let scratch = fx.root().join("state/chock/scratch");
    let left: Vec<_> = std::fs::read_dir(&scratch)
        .map(|d| d.filter_map(Result::ok).map(|e| e.path()).collect())
        .unwrap_or_default();
    assert!(
        left.is_empty(),
        "the scratchpad is removed at the end: {left:?}"
    );
    assert!(
        !fx.project.join("n.txt").exists(),
        "nothing in the scratchpad is applied"
    );

    // chock memory shows the notes; clear asks, and with nobody keeps them.
    let shown = fx.chock().arg("memory").output().expect("chock memory");
    assert!(shown.status.success(), "{}", describe(&shown));
    assert_eq!(text(&shown.stdout), "the tests run with make check\n");
    let kept = fx
        .chock()
        .args(["memory", "clear"])
        .stdin(std::process::Stdio::null())
        .output()
        .expect("chock memory clear");
    assert_eq!(kept.status.code(), Some(3), "{}", describe(&kept));
    assert!(text(&kept.stderr).contains("--yes"), "{}", describe(&kept));
    let cleared = fx
        .chock()
        .args(["memory", "clear", "--yes"])
        .output()
        .expect("chock memory clear --yes");
    assert!(cleared.status.success(), "{}", describe(&cleared));
    let none = fx.chock().arg("memory").output().expect("chock memory");
    assert!(
        text(&none.stdout).contains("no notes are kept"),
        "{}",
        describe(&none)
    );
}

#[test]
fn a_promise_refuses_what_the_policy_allows_and_only_policy_widen_can_lift_it() {
    let kind = ProviderKind::Anthropic;
    let promise = |ceiling: &str| json!({"action": "call.write_file", "ceiling": ceiling, "reason": "this task only reads"});
    let server = Server::start(vec![
        reply(
            kind,
            "Promising.",
            &[("t1", "restrict_self", promise("deny"))],
        ),
        reply(
            kind,
            "Trying.",
            &[
                (
                    "t2",
                    "write_file",
                    json!({"path": "note.txt", "content": "x"}),
                ),
                ("t3", "restrict_self", promise("ask")),
                ("t4", "restrict_self", promise("deny")),
                ("t5", "policy_widen", promise("allow")),
                ("t6", "read_file", json!({"path": "a.txt"})),
            ],
        ),
        reply(kind, "Stopped.", &[]),
    ]);
    let fx = project(kind, &server, "");
    let out = fx
        .chock()
        .args(["run", "--model", "m1", "--", "read only"])
        .stdin(std::process::Stdio::null())
        .output()
        .expect("chock run");
    assert!(out.status.success(), "{}", describe(&out));
    let requests = server.requests();
    assert_eq!(requests.len(), 3, "{}", describe(&out));
    let results: Vec<Value> = requests[2].body["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default())
        .filter(|c| c["type"] == "tool_result")
        .collect();
    let result = |id: &str| {
        let found = results
            .iter()
            .find(|r| r["tool_use_id"] == id)
            .unwrap_or_else(|| panic!("no result for {id}: {results:?}"));
        (found["content"].to_string(), found["is_error"] == true)
    };
    let (written, refused) = result("t2");
    assert!(
        refused
            && written.contains("refused: call.write_file is denied by the session's own promise")
            && written.contains("this task only reads")
            && written.contains("policy.widen"),
        "the call the policy allows is refused, naming the promise: {written}"
    );
    let (wider, refused) = result("t3");
    assert!(
        refused && wider.contains("policy_widen"),
        "a wider restriction is refused, pointing to policy_widen: {wider}"
    );
    let (equal, refused) = result("t4");
    assert!(!refused && equal.contains("no change"), "{equal}");
    let (widen, refused) = result("t5");
    assert!(
        refused && widen.contains("policy.widen needs a person's yes"),
        "policy.widen is asked, and refused with nobody: {widen}"
    );
    let (read, refused) = result("t6");
    assert!(
        !refused && read.contains("one"),
        "other calls go on: {read}"
    );
    assert!(!fx.project.join("note.txt").exists());
    let logged = fx.last_logged("call.write_file");
    assert_eq!(logged["decision"], "deny", "{logged}");
    assert_eq!(logged["decided_by"]["layer"], "promise", "{logged}");
    let widen = fx.last_logged("policy.widen");
    assert_eq!(widen["answered_by"], "nobody", "{widen}");
    assert_eq!(widen["decision"], "ask", "{widen}");
}

#[test]
fn ask_user_with_no_terminal_is_answered_in_chock_approve() {
    let kind = ProviderKind::Anthropic;
    let mut first = reply(
        kind,
        "Asking.",
        &[(
            "t1",
            "ask_user",
            json!({"question": "May I rename the crate?"}),
        )],
    );
    let watching = held_until_approve_watches(&mut first);
    let server = Server::start(vec![first, reply(kind, "Thanks.", &[])]);
    let fx = project(kind, &server, "");
    let (question, out) = run_answered_in_approve(&fx, "ask first", "y", &watching);
    assert!(question.contains("May I rename the crate?"), "{question}");
    assert!(
        !question.contains(".decision = .deny"),
        "no rule answers the agent's own question, so none is offered: {question}"
    );
    assert!(out.status.success(), "{}", describe(&out));
    let requests = server.requests();
    assert!(
        results_of(&requests[1]).contains("the person answered yes"),
        "{}",
        describe(&out)
    );
}

#[test]
fn the_gateways_servers_are_offered_and_their_calls_decided() {
    let program = ["/usr/bin", "/usr/local/bin"]
        .iter()
        .map(|d| std::path::Path::new(d).join("mcp-server-everything"))
        .find(|p| p.exists())
        .expect("mcp-server-everything is installed by scripts/setup");
    let kind = ProviderKind::OpenaiChat;
    let server = Server::start(vec![
        reply(
            kind,
            "Echoing.",
            &[
                (
                    "c1",
                    "everything__echo",
                    json!({"message": "through the gateway"}),
                ),
                ("c2", "everything__get-sum", json!({"a": 1, "b": 2})),
                (
                    "c3",
                    "restrict_self",
                    json!({"action": "mcp.everything.*", "ceiling": "deny", "reason": "enough echoes"}),
                ),
            ],
        ),
        reply(
            kind,
            "Again.",
            &[("c4", "everything__echo", json!({"message": "once more"}))],
        ),
        reply(kind, "Echoed.", &[]),
    ]);
    let fx = project(kind, &server, "");
    fx.zon(&format!(
        ".{{ .apply = .{{ .mode = .merge }}, .mcp = .{{ .{{ .name = \"everything\", .command = .{{ \"{}\", \"stdio\" }} }} }}, .policy = .{{ .rules = .{{ {APPLY_ALLOWED}, .{{ .action = \"sandbox.jit\", .decision = .allow }}, .{{ .action = \"mcp.everything.tool.echo\", .decision = .allow }} }} }} }}\n",
        program.display()
    ));
    git(&fx.project, &["commit", "-q", "-am", "the gateway"]);
    let out = fx
        .chock()
        .args(["run", "--model", "m1", "--", "echo"])
        .stdin(std::process::Stdio::null())
        .output()
        .expect("chock run");
    assert!(out.status.success(), "{}", describe(&out));
    let requests = server.requests();
    assert_eq!(requests.len(), 3, "{}", describe(&out));
    let tools: Vec<&str> = requests[0].body["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|t| t["function"]["name"].as_str())
        .collect();
    assert!(
        tools.contains(&"everything__echo") && tools.contains(&"read_file"),
        "the gateway's tools are offered beside Chock's: {tools:?}"
    );
    let messages = requests[1].body["messages"].to_string();
    assert!(
        messages.contains("Echo: through the gateway"),
        "the server's answer is the call's result: {messages}"
    );
    assert!(
        messages.contains("mcp.everything.tool.get-sum needs a person's yes"),
        "a tool no rule allows is asked about, and refused with nobody: {messages}"
    );
    let again = requests[2].body["messages"].to_string();
    assert!(
        again.contains("refused: mcp.everything.tool.echo is denied by the session's own promise")
            && !again.contains("Echo: once more"),
        "a promise binds the gateway's calls too: {again}"
    );
    let logged = fx.last_logged("mcp.everything.tool.echo");
    assert_eq!(logged["decided_by"]["layer"], "promise", "{logged}");
    assert_eq!(logged["agent_kind"], "chock-run", "{logged}");
    let first = fx
        .log_lines()
        .into_iter()
        .find(|l| l["action"] == "mcp.everything.tool.echo" && l["decision"] == "allow");
    assert!(first.is_some(), "the first call was allowed by the rule");
}

#[test]
fn ask_user_at_a_terminal_is_answered_there_yes_or_no_and_in_words() {
    use std::io::Write;
    let kind = ProviderKind::Anthropic;
    let server = Server::start(vec![
        reply(
            kind,
            "Asking.",
            &[
                (
                    "t1",
                    "ask_user",
                    json!({"question": "Shall I keep the old API?"}),
                ),
                (
                    "t2",
                    "ask_user",
                    json!({"question": "What is its new name?", "text": true}),
                ),
            ],
        ),
        reply(kind, "Kept.", &[]),
    ]);
    let fx = project(kind, &server, "");
    let mut script = fx.chock_on_a_terminal(&["run", "--model", "m1", "--", "ask"]);
    let mut child = script
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run util-linux's script for a pty ({e})"));
    let mut typed = child.stdin.take().expect("stdin");
    writeln!(typed, "y").expect("the answer typed");
    writeln!(typed, "  old_api_v2 ").expect("the answer in words typed");
    let out = child.wait_with_output().expect("script ends");
    drop(typed);
    let screen = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{}", describe(&out));
    assert!(
        screen.contains("the agent asks: Shall I keep the old API?"),
        "the question is shown at the terminal: {screen}"
    );
    assert!(
        screen.contains("What is its new name?") && screen.contains("your answer (one line): "),
        "the question asking for words is shown there too: {screen}"
    );
    let requests = server.requests();
    assert!(
        results_of(&requests[1]).contains("the person answered yes"),
        "{screen}"
    );
    let (named, refused) = result_for(&requests[1], "t2");
    assert!(
        !refused && named.contains("the person answered: old_api_v2"),
        "{named}"
    );
}

#[test]
fn an_authorised_widening_replaces_its_promise_and_the_others_stay() {
    let kind = ProviderKind::OpenaiChat;
    let promise = |action: &str, ceiling: &str| json!({"action": action, "ceiling": ceiling, "reason": "careful"});
    let server = Server::start(vec![
        reply(
            kind,
            "Promising.",
            &[
                ("c1", "restrict_self", promise("call.write_file", "deny")),
                ("c2", "restrict_self", promise("call.edit_file", "deny")),
            ],
        ),
        reply(
            kind,
            "Widening.",
            &[
                ("c3", "policy_widen", promise("call.write_file", "allow")),
                (
                    "c4",
                    "write_file",
                    json!({"path": "note.txt", "content": "widened\n"}),
                ),
                (
                    "c5",
                    "edit_file",
                    json!({"path": "a.txt", "old_string": "one", "new_string": "two"}),
                ),
            ],
        ),
        reply(kind, "Done.", &[]),
    ]);
    let fx = project(
        kind,
        &server,
        r#".{ .action = "policy.widen", .decision = .allow }"#,
    );
    let out = run(&fx, &[], "widen");
    assert!(out.status.success(), "{}", describe(&out));
    let messages = server.requests()[2].body["messages"].to_string();
    assert!(
        messages.contains("widened: the promise on `call.write_file` is replaced"),
        "{messages}"
    );
    assert!(
        messages.contains("refused: call.edit_file is denied by the session's own promise"),
        "the other promise still holds: {messages}"
    );
    assert_eq!(
        std::fs::read_to_string(fx.project.join("note.txt")).expect("note.txt applied"),
        "widened\n"
    );
    assert_eq!(
        std::fs::read_to_string(fx.project.join("a.txt")).expect("a.txt"),
        "one\n"
    );
    let widen = fx.last_logged("policy.widen");
    assert_eq!(widen["decision"], "allow", "{widen}");
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

/// The session logs in the state directory, the oldest first.
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
    // Oldest first: two sessions started in one second have ids in no
    // order, their first lines' times in the right one.
    logs.sort_by_key(|log| events(log).first().map(|e| e["ts"].to_string()));
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
    // The same for a script, and the list as JSON lines.
    let verified = chock_sessions(&fx, &["verify", &id, "--json"]);
    assert_eq!(verified.status.code(), Some(1), "{}", describe(&verified));
    let report: serde_json::Value =
        serde_json::from_slice(&verified.stdout).expect("one JSON line");
    assert_eq!(
        (&report["intact"], &report["broken"]["line"]),
        (&false.into(), &2.into()),
        "{report}"
    );
    let listed = chock_sessions(&fx, &["--json"]);
    let first: serde_json::Value =
        serde_json::from_str(text(&listed.stdout).lines().next().unwrap()).unwrap();
    assert_eq!(first["id"], id.as_str(), "{first}");
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

/// A promise made in one run binds the next call of the session resumed:
/// its `policy.self` event is in the log, folded back before the first
/// request, and the plan comes back with it.
#[test]
fn a_promise_survives_continue_and_binds_the_resumed_session() {
    let kind = ProviderKind::Anthropic;
    let server = Server::start(vec![
        reply(
            kind,
            "Promising.",
            &[
                (
                    "t1",
                    "restrict_self",
                    json!({"action": "call.write_file", "ceiling": "deny", "reason": "this task only reads"}),
                ),
                (
                    "t2",
                    "update_plan",
                    json!({"steps": [{"step": "read only", "status": "in_progress"}]}),
                ),
            ],
        ),
        reply(
            kind,
            "Writing after all.",
            &[(
                "t3",
                "write_file",
                json!({"path": "note.txt", "content": "x"}),
            )],
        ),
        reply(kind, "Stopped.", &[]),
    ]);
    let fx = project(kind, &server, "");
    let first = run(&fx, &["--max-turns", "1"], "read only");
    assert_eq!(first.status.code(), Some(4), "{}", describe(&first));
    let logs = session_logs(&fx);
    assert_eq!(logs.len(), 1);
    let kinds: Vec<String> = events(&logs[0])
        .iter()
        .map(|e| e["type"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert!(
        kinds.contains(&"policy.self".to_owned()) && kinds.contains(&"plan".to_owned()),
        "the promise and the plan are in the log: {kinds:?}"
    );

    let second = run(&fx, &["--continue"], "now write the note");
    assert!(second.status.success(), "{}", describe(&second));
    let requests = server.requests();
    assert_eq!(requests.len(), 3, "{}", describe(&second));
    let results = results_of(&requests[2]);
    assert!(
        results.contains("refused: call.write_file is denied by the session's own promise")
            && results.contains("this task only reads"),
        "the resumed session is bound by the promise: {results}"
    );
    assert!(!fx.project.join("note.txt").exists());
    let verified = chock_sessions(&fx, &["verify"]);
    assert!(verified.status.success(), "{}", describe(&verified));
}

/// The results in an OpenAI Chat request's messages, by call id.
fn chat_results(request: &loopback::Recorded) -> std::collections::HashMap<String, String> {
    request.body["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| {
            (
                m["tool_call_id"].as_str().unwrap_or_default().to_owned(),
                m["content"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect()
}

/// chock.zon declaring `main`, its child `tester` and the tester's child
/// `deep`, writes allowed but a tester's, at most one child per agent.
fn spawning_project(kind: ProviderKind, server: &Server) -> Fixture {
    project_zon(
        kind,
        server,
        &format!(
            r#".{{ .apply = .{{ .mode = .merge }}, .subagents = .{{ .max_width = 1 }}, .policy = .{{
    .agents = .{{ .{{ .kind = "main" }}, .{{ .kind = "tester", .parent = "main" }}, .{{ .kind = "deep", .parent = "tester" }} }},
    .rules = .{{ {APPLY_ALLOWED},
        .{{ .action = "call.write_file", .decision = .allow }},
        .{{ .agent_kind = "tester", .action = "call.write_file", .decision = .deny }} }} }} }}
"#
        ),
    )
}

#[test]
fn a_spawned_agent_never_gets_more_than_its_parent_and_its_bounds_are_held() {
    let kind = ProviderKind::OpenaiChat;
    let spawn = |kind: &str| json!({"kind": kind, "task": "write note.txt"});
    let write = |path: &str| json!({"path": path, "content": "x"});
    let server = Server::start(vec![
        // The main agent spawns a tester, which runs on the same server.
        reply(
            kind,
            "Handing over.",
            &[("p1", "spawn_agent", spawn("tester"))],
        ),
        reply(
            kind,
            "Writing.",
            &[
                ("c1", "write_file", write("note.txt")),
                ("c2", "spawn_agent", spawn("deep")),
                (
                    "c3",
                    "restrict_self",
                    json!({"action": "git.push", "ceiling": "deny", "reason": "r"}),
                ),
                ("c4", "read_file", json!({"path": "a.txt"})),
            ],
        ),
        reply(kind, "The tester was refused the write.", &[]),
        // Back in the main agent.
        reply(
            kind,
            "Writing myself.",
            &[
                ("p2", "write_file", write("parent.txt")),
                ("p3", "spawn_agent", spawn("tester")),
                ("p4", "spawn_agent", spawn("nobody")),
                ("p5", "spawn_agent", spawn("deep")),
            ],
        ),
        reply(kind, "Done.", &[]),
    ]);
    let fx = spawning_project(kind, &server);
    let out = run(&fx, &[], "write a note");
    assert!(out.status.success(), "{}", describe(&out));
    let requests = server.requests();
    assert_eq!(requests.len(), 5, "{}", describe(&out));

    // The child's conversation is its own: its system prompt and its task.
    let child = &requests[1].body["messages"];
    assert!(
        child[0]["content"]
            .as_str()
            .unwrap_or_default()
            .contains("`tester` agent"),
        "{child}"
    );
    assert_eq!(child[1]["content"], "write note.txt", "{child}");
    let tools: Vec<&str> = requests[1].body["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|t| t["function"]["name"].as_str())
        .collect();
    assert!(
        tools.contains(&"write_file") && !tools.contains(&"restrict_self"),
        "{tools:?}"
    );

    let results = chat_results(&requests[2]);
    assert!(
        results["c1"].starts_with("refused: call.write_file is denied"),
        "the tester's rule denies it: {results:?}"
    );
    assert!(
        results["c2"].contains(".subagents.max_depth is 1"),
        "a grandchild is past the default depth: {results:?}"
    );
    assert!(results["c3"].contains("main agent's"), "{results:?}");
    assert!(
        results["c4"].contains("one"),
        "other calls go on: {results:?}"
    );

    let results = chat_results(&requests[4]);
    assert_eq!(
        results["p1"], "The tester was refused the write.",
        "the child's answer is the result"
    );
    assert!(
        !results["p2"].starts_with("refused"),
        "the main agent may write: {results:?}"
    );
    assert!(
        results["p3"].contains(".subagents.max_width is 1"),
        "a second child is past max_width: {results:?}"
    );
    assert!(
        results["p4"].contains("`nobody` is not an agent kind chock.zon declares")
            && results["p4"].contains(".policy.agents"),
        "{results:?}"
    );
    assert!(
        results["p5"].contains("a `main` agent cannot spawn `deep`"),
        "{results:?}"
    );
    assert!(fx.project.join("parent.txt").exists(), "{}", describe(&out));
    assert!(!fx.project.join("note.txt").exists());

    let lines = fx.log_lines();
    let writes: Vec<&Value> = lines
        .iter()
        .filter(|l| l["action"] == "call.write_file")
        .collect();
    assert!(
        writes
            .iter()
            .any(|l| l["agent_kind"] == "tester" && l["decision"] == "deny"),
        "the child's refusal is logged under its kind: {writes:#?}"
    );
    assert!(
        writes
            .iter()
            .any(|l| l["agent_kind"] != "tester" && l["decision"] == "allow"),
        "{writes:#?}"
    );

    let logs = session_logs(&fx);
    let ran = events(&logs[0])
        .into_iter()
        .find(|e| e["type"] == "agent")
        .expect("the child's run is logged");
    assert_eq!(ran["kind"], "tester", "{ran}");
    assert_eq!(ran["chain"], json!(["main", "tester"]), "{ran}");
    assert_eq!(
        ran["answer"]["Ok"], "The tester was refused the write.",
        "{ran}"
    );
    assert_eq!(ran["turns"].as_array().map(Vec::len), Some(6), "{ran}");
    let exported = fx.root().join("exported");
    let out = chock_sessions(
        &fx,
        &[
            "export",
            &id_of(&logs[0]),
            "--to",
            &exported.display().to_string(),
        ],
    );
    assert!(out.status.success(), "{}", describe(&out));
    let transcript: String = std::fs::read_dir(&exported)
        .expect("exported")
        .flatten()
        .map(|e| std::fs::read_to_string(e.path()).unwrap_or_default())
        .collect();
    assert!(
        transcript.contains("## agent") && transcript.contains("write note.txt"),
        "{transcript}"
    );
}

/// A child is refused what its parent is refused. chock.zon cannot say it
/// the other way round (a child's rule allowing what its parent's denies is
/// refused at load), so the parent here is refused by its own promise,
/// which binds every call of the session, a child's too.
#[test]
fn a_parents_promise_binds_the_agents_it_spawns() {
    let kind = ProviderKind::OpenaiChat;
    let server = Server::start(vec![
        reply(
            kind,
            "Promising, then handing over.",
            &[
                (
                    "p1",
                    "restrict_self",
                    json!({"action": "call.write_file", "ceiling": "deny", "reason": "read only"}),
                ),
                (
                    "p2",
                    "spawn_agent",
                    json!({"kind": "writer", "task": "write note.txt"}),
                ),
            ],
        ),
        reply(
            kind,
            "Writing.",
            &[(
                "c1",
                "write_file",
                json!({"path": "note.txt", "content": "x"}),
            )],
        ),
        reply(kind, "Refused.", &[]),
        reply(kind, "Done.", &[]),
    ]);
    let fx = project_zon(
        kind,
        &server,
        &format!(
            r#".{{ .apply = .{{ .mode = .merge }}, .policy = .{{
    .agents = .{{ .{{ .kind = "main" }}, .{{ .kind = "writer", .parent = "main" }} }},
    .rules = .{{ {APPLY_ALLOWED}, .{{ .action = "call.write_file", .decision = .allow }} }} }} }}
"#
        ),
    );
    let out = run(&fx, &[], "read only");
    assert!(out.status.success(), "{}", describe(&out));
    let requests = server.requests();
    assert_eq!(requests.len(), 4, "{}", describe(&out));
    let results = chat_results(&requests[2]);
    assert!(
        results["c1"].contains("denied by the session's own promise")
            && results["c1"].contains("read only"),
        "{results:?}"
    );
    let logged = fx.last_logged("call.write_file");
    assert_eq!(logged["agent_kind"], "writer", "{logged}");
    assert_eq!(logged["decided_by"]["layer"], "promise", "{logged}");
    assert!(!fx.project.join("note.txt").exists());
}

/// The content of the tool result for call `id` (Anthropic Messages), and
/// whether it is an error.
fn result_for(request: &loopback::Recorded, id: &str) -> (String, bool) {
    let results: Vec<Value> = request.body["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default())
        .filter(|c| c["type"] == "tool_result")
        .collect();
    let found = results
        .iter()
        .find(|r| r["tool_use_id"] == id)
        .unwrap_or_else(|| panic!("no result for {id}: {results:?}"));
    (found["content"].to_string(), found["is_error"] == true)
}

/// A promise binds the hosts a sandboxed command connects to: the router
/// decides each connection under the session's promises, and the refusal
/// names the promise in the decision log. Runs in network namespaces the
/// test makes (root).
#[test]
fn a_promise_binds_the_hosts_run_command_connects_to() {
    let lab = net_lab::Lab::new();
    lab.enter();
    let kind = ProviderKind::Anthropic;
    let curl =
        json!({"argv": ["sh", "-c", "curl -sS -m 10 http://allowed.test:8080/; echo curl=$?"]});
    let server = Server::start(vec![
        reply(kind, "Fetching.", &[("t1", "run_command", curl.clone())]),
        reply(
            kind,
            "Promising.",
            &[(
                "t2",
                "restrict_self",
                json!({"action": "net.connect.test.allowed.8080", "ceiling": "deny", "reason": "offline from now on"}),
            )],
        ),
        reply(kind, "Fetching again.", &[("t3", "run_command", curl)]),
        reply(kind, "Done.", &[]),
    ]);
    let fx = project(
        kind,
        &server,
        r#".{ .action = "exec.*", .decision = .allow }, .{ .action = "net.connect.test.allowed.*", .decision = .allow }"#,
    );
    let out = fx
        .chock()
        .args(["run", "--model", "m1", "--", "fetch twice"])
        .env("CHOCK_NET_RESOLVER", lab.resolver())
        .stdin(std::process::Stdio::null())
        .output()
        .expect("chock run");
    assert!(out.status.success(), "{}", describe(&out));
    let requests = server.requests();
    assert_eq!(requests.len(), 4, "{}", describe(&out));
    let (before, _) = result_for(&requests[1], "t1");
    assert!(
        before.contains("hello through the router") && before.contains("curl=0"),
        "the policy allows the host: {before}"
    );
    let (after, _) = result_for(&requests[3], "t3");
    assert!(
        !after.contains("hello through the router") && !after.contains("curl=0"),
        "the promise refuses it in the relay: {after}"
    );
    assert_eq!(lab.log().matches("8080 ").count(), 1, "{}", lab.log());
    let logged = fx.last_logged("net.connect.test.allowed.8080");
    assert_eq!(logged["decision"], "deny", "{logged}");
    assert_eq!(logged["decided_by"]["layer"], "promise", "{logged}");
}

/// A promise binds the hosts a build reaches: nix_build decides each
/// under the session's promises, before anything is fetched. Needs the Nix
/// daemon (NIX_REMOTE=daemon), which the build opens before its hosts.
#[test]
fn a_promise_binds_the_hosts_a_build_reaches() {
    chock_testkit::require_nix_daemon(&chock_store::daemon::socket_path());
    let kind = ProviderKind::Anthropic;
    let attribute = json!({"attribute": ["packages", "x86_64-linux", "default"]});
    let server = Server::start(vec![
        reply(
            kind,
            "Promising.",
            &[(
                "t1",
                "restrict_self",
                json!({"action": "nix.net.*", "ceiling": "deny", "reason": "no downloads"}),
            )],
        ),
        reply(kind, "Building.", &[("t2", "nix_build", attribute)]),
        reply(kind, "Done.", &[]),
    ]);
    let fx = project(
        kind,
        &server,
        r#".{ .action = "nix.build.*", .decision = .allow }, .{ .action = "nix.net.1.0.0.127.*", .decision = .allow }"#,
    );
    // A fixed output fetched from a port nobody listens on, named afresh
    // so the store never holds it already.
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .as_nanos();
    let name = format!("promised-{}-{nanos}.txt", std::process::id());
    std::fs::write(
        fx.project.join("flake.nix"),
        format!(
            r#"{{
  outputs = {{ self }}: {{
    packages.x86_64-linux.default = derivation {{
      name = "{name}";
      url = "http://127.0.0.1:9/{name}";
      urls = "http://127.0.0.1:9/{name}";
      builder = "builtin:fetchurl";
      system = "builtin";
      outputHash = "{nanos:064x}";
      outputHashAlgo = "sha256";
      outputHashMode = "flat";
      executable = "";
      unpack = "";
      preferLocalBuild = true;
    }};
  }};
}}
"#
        ),
    )
    .expect("flake.nix");
    git(&fx.project, &["add", "flake.nix"]);
    git(&fx.project, &["commit", "-q", "-m", "flake"]);
    let out = run(&fx, &[], "build it");
    assert!(out.status.success(), "{}", describe(&out));
    let requests = server.requests();
    assert_eq!(requests.len(), 3, "{}", describe(&out));
    let (built, refused) = result_for(&requests[2], "t2");
    assert!(
        refused && built.contains("nix.net.build.1.0.0.127.9") && built.contains("no downloads"),
        "the build is refused at its host, naming the promise: {built}"
    );
    let build = fx.last_logged("nix.build.packages.x86_64-linux.default");
    assert_eq!(build["decision"], "allow", "{build}");
    let host = fx.last_logged("nix.net.build.1.0.0.127.9");
    assert_eq!(host["decision"], "deny", "{host}");
    assert_eq!(host["decided_by"]["layer"], "promise", "{host}");
}

/// A promise binds model.select: a spawned agent's, decided for its kind
/// when it is spawned, and the resumed session's, decided before anything
/// else with the promises of its log already bound.
#[test]
fn a_promise_binds_model_select_for_a_spawned_agent_and_a_resumed_session() {
    let kind = ProviderKind::OpenaiChat;
    let server = Server::start(vec![
        reply(
            kind,
            "Promising, then handing over.",
            &[
                (
                    "p1",
                    "restrict_self",
                    json!({"action": "provider.*", "ceiling": "deny", "reason": "no more models"}),
                ),
                (
                    "p2",
                    "spawn_agent",
                    json!({"kind": "writer", "task": "write note.txt"}),
                ),
            ],
        ),
        reply(kind, "Done.", &[]),
    ]);
    let fx = project_zon(
        kind,
        &server,
        &format!(
            r#".{{ .apply = .{{ .mode = .merge }}, .policy = .{{
    .agents = .{{ .{{ .kind = "main" }}, .{{ .kind = "writer", .parent = "main" }} }},
    .rules = .{{ {APPLY_ALLOWED} }} }} }}
"#
        ),
    );
    let first = run(&fx, &[], "hand it over");
    assert!(first.status.success(), "{}", describe(&first));
    let requests = server.requests();
    assert_eq!(
        requests.len(),
        2,
        "the child sent nothing: {}",
        describe(&first)
    );
    let results = chat_results(&requests[1]);
    assert!(
        results["p2"].contains("model.select") && results["p2"].contains("no more models"),
        "the spawn is refused at model.select, naming the promise: {results:?}"
    );
    let child = fx.last_logged("provider.loop.m1");
    assert_eq!(child["agent_kind"], "writer", "{child}");
    assert_eq!(child["decision"], "deny", "{child}");
    assert_eq!(child["decided_by"]["layer"], "promise", "{child}");

    let second = run(&fx, &["--continue"], "go on");
    assert_eq!(second.status.code(), Some(3), "{}", describe(&second));
    let stderr = text(&second.stderr);
    assert!(
        stderr.contains("model.select refuses") && stderr.contains("no more models"),
        "{stderr}"
    );
    assert_eq!(server.requests().len(), 2, "no request is sent");
    let resumed = fx.last_logged("provider.loop.m1");
    assert_eq!(resumed["agent_kind"], "main", "{resumed}");
    assert_eq!(resumed["decided_by"]["layer"], "promise", "{resumed}");
}

/// ask_user asking for words: with no terminal and no `chock approve`, it
/// is refused at once; in `chock approve`, the line typed is the answer,
/// its control characters taken out, and the session log keeps it.
#[test]
fn ask_user_for_words_is_refused_with_nobody_and_answered_in_chock_approve() {
    let kind = ProviderKind::Anthropic;
    let ask = json!({"question": "What should the crate be called?", "text": true});
    let server = Server::start(vec![
        reply(kind, "Asking.", &[("t1", "ask_user", ask.clone())]),
        reply(kind, "Nobody there.", &[]),
    ]);
    let fx = project(kind, &server, "");
    let out = run(&fx, &[], "ask first");
    assert!(out.status.success(), "{}", describe(&out));
    let (nobody, refused) = result_for(&server.requests()[1], "t1");
    assert!(
        refused
            && nobody.contains("nobody can be asked for an answer in words")
            && nobody.contains("chock approve"),
        "{nobody}"
    );

    let mut first = reply(kind, "Asking.", &[("t1", "ask_user", ask)]);
    let watching = held_until_approve_watches(&mut first);
    let server = Server::start(vec![first, reply(kind, "Thanks.", &[])]);
    let fx = project(kind, &server, "");
    let (question, out) = run_answered_in_approve_at(
        &fx,
        "ask first",
        "your answer (one line): ",
        "  chock-\u{1b}[1mfast\u{7}\tcrate  ",
        &watching,
    );
    assert!(
        question.contains("What should the crate be called?"),
        "{question}"
    );
    assert!(out.status.success(), "{}", describe(&out));
    let (answer, refused) = result_for(&server.requests()[1], "t1");
    assert!(
        !refused && answer.contains("the person answered: chock-[1mfastcrate"),
        "{answer}"
    );
    let logs = session_logs(&fx);
    let kept = events(&logs[0])
        .into_iter()
        .find(|e| e["type"] == "tool_result" && e["call_id"] == "t1")
        .expect("the answer's result in the session log");
    assert_eq!(
        kept["content"], "the person answered: chock-[1mfastcrate",
        "{kept}"
    );
}

/// A project whose chock.zon names a `reviewer` kind as its reviewer agent,
/// with `rules` after workspace.apply allowed.
fn reviewed_project(kind: ProviderKind, server: &Server, rules: &str) -> Fixture {
    project_zon(
        kind,
        server,
        &format!(
            r#".{{ .apply = .{{ .mode = .merge }}, .review = .{{ .agent_kind = "reviewer" }}, .policy = .{{
    .agents = .{{ .{{ .kind = "main" }}, .{{ .kind = "reviewer" }} }},
    .rules = .{{ {APPLY_ALLOWED}, {rules} }} }} }}
"#
        ),
    )
}

/// The reviewer's scripted answer: a `review_answer` call.
fn review_answer(kind: ProviderKind, decision: &str, reason: &str) -> loopback::Scripted {
    reply(
        kind,
        "",
        &[(
            "r1",
            "review_answer",
            json!({"decision": decision, "reason": reason}),
        )],
    )
}

/// A model that writes `note.txt` (call `id`, `content`) under a rule
/// answering `agent_review`, the reviewer's `answer` (decision, reason),
/// and a last reply; and the project it runs in.
fn a_reviewed_write(
    kind: ProviderKind,
    (id, content): (&str, &str),
    (decision, reason): (&str, &str),
) -> (Server, Fixture) {
    let server = Server::start(vec![
        reply(
            kind,
            "Writing.",
            &[(
                id,
                "write_file",
                json!({"path": "note.txt", "content": content}),
            )],
        ),
        review_answer(kind, decision, reason),
        reply(kind, "Done.", &[]),
    ]);
    let fx = reviewed_project(
        kind,
        &server,
        r#".{ .action = "call.write_file", .decision = .agent_review }"#,
    );
    (server, fx)
}

/// The `review` events of the project's one session log.
fn reviews(fx: &Fixture) -> Vec<Value> {
    let logs = session_logs(fx);
    assert_eq!(logs.len(), 1, "{logs:?}");
    events(&logs[0])
        .into_iter()
        .filter(|e| e["type"] == "review")
        .collect()
}

#[test]
fn a_reviewer_agent_approves_an_agent_review_call_and_it_goes_ahead() {
    let kind = ProviderKind::Anthropic;
    let (server, fx) = a_reviewed_write(
        kind,
        ("toolu_1", "reviewed\n"),
        ("approve", "the task asks for exactly this note"),
    );
    let out = run(&fx, &[], "write a note");
    assert!(out.status.success(), "{}", describe(&out));
    assert_eq!(
        std::fs::read_to_string(fx.project.join("note.txt")).expect("note.txt applied"),
        "reviewed\n",
        "the reviewer's yes let the write through with nobody asked"
    );
    let logged = fx.last_logged("call.write_file");
    assert_eq!(logged["decision"], "allow", "{logged}");
    assert_eq!(logged["answered_by"], "reviewer", "{logged}");
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains(
            "review call.write_file by `reviewer`: yes: the task asks for exactly this note"
        ),
        "the review is shown: {stderr}"
    );
    // The reviewer's request: its own prompt, the act and its arguments,
    // the rule, the task, and no tool but its answer.
    let requests = server.requests();
    assert_eq!(requests.len(), 3, "{}", describe(&out));
    let asked = &requests[1].body;
    let tools: Vec<&str> = asked["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert_eq!(tools, ["review_answer"], "a reviewer runs nothing");
    assert!(
        asked["system"].to_string().contains("`reviewer` agent"),
        "{}",
        asked["system"]
    );
    let shown = asked["messages"].to_string();
    for words in [
        "call.write_file",
        "note.txt",
        "reviewed\\\\n",
        "agent_review by the project's rule",
        "write a note",
    ] {
        assert!(shown.contains(words), "{words} in {shown}");
    }
    let reviews = reviews(&fx);
    assert_eq!(reviews.len(), 1, "{reviews:?}");
    assert_eq!(reviews[0]["answer"], "yes");
    assert_eq!(reviews[0]["action"], "call.write_file");
    assert_eq!(reviews[0]["kind"], "reviewer");
    assert!(
        reviews[0]["turn"]["tool_calls"][0]["name"] == "review_answer",
        "{}",
        reviews[0]
    );
    let verified = chock_sessions(&fx, &["verify"]);
    assert!(verified.status.success(), "{}", describe(&verified));
}

#[test]
fn a_reviewer_agents_no_refuses_the_call_with_its_reason() {
    let kind = ProviderKind::OpenaiChat;
    let (server, fx) = a_reviewed_write(
        kind,
        ("call_1", "x"),
        ("refuse", "the task never asked for a note"),
    );
    let out = run(&fx, &[], "read a.txt");
    assert!(out.status.success(), "{}", describe(&out));
    assert!(!fx.project.join("note.txt").exists(), "nothing was written");
    let requests = server.requests();
    assert_eq!(requests.len(), 3, "{}", describe(&out));
    let result = chat_results(&requests[2]);
    let refusal = &result["call_1"];
    assert!(
        refusal.starts_with("refused by the reviewer agent: call.write_file")
            && refusal.contains("the task never asked for a note")
            && refusal.contains("To allow it, add to"),
        "the agent reads the reason and the rule to write: {refusal}"
    );
    let logged = fx.last_logged("call.write_file");
    assert_eq!(logged["decision"], "deny", "{logged}");
    assert_eq!(logged["answered_by"], "reviewer", "{logged}");
    assert_eq!(reviews(&fx)[0]["answer"], "no");
}

#[test]
fn agent_then_human_needs_the_reviewers_yes_before_a_person_is_asked() {
    let kind = ProviderKind::Anthropic;
    let write = |path: &str| json!({"path": path, "content": "x\n"});
    let mut first = reply(
        kind,
        "First.",
        &[("toolu_1", "write_file", write("first.txt"))],
    );
    let watching = held_until_approve_watches(&mut first);
    let server = Server::start(vec![
        first,
        review_answer(kind, "refuse", "first.txt is not part of the task"),
        reply(
            kind,
            "Second.",
            &[("toolu_2", "write_file", write("second.txt"))],
        ),
        review_answer(kind, "approve", "second.txt is the task"),
        reply(kind, "Done.", &[]),
    ]);
    let fx = reviewed_project(
        kind,
        &server,
        r#".{ .action = "call.write_file", .decision = .agent_then_human }"#,
    );
    let (question, out) = run_answered_in_approve(&fx, "write second.txt", "y", &watching);
    assert!(out.status.success(), "{}", describe(&out));
    // The reviewer's no ended the first call: the person's first question
    // is the second file's, and it shows the reviewer's yes.
    assert!(
        question.contains("second.txt")
            && !question.contains("first.txt")
            && question.contains("the reviewer agent said yes: second.txt is the task"),
        "{question}"
    );
    assert!(!fx.project.join("first.txt").exists());
    assert_eq!(
        std::fs::read_to_string(fx.project.join("second.txt")).expect("second.txt applied"),
        "x\n"
    );
    let lines: Vec<Value> = fx
        .log_lines()
        .into_iter()
        .filter(|l| l["action"] == "call.write_file")
        .collect();
    let ends: Vec<(&str, &str)> = lines
        .iter()
        .map(|l| {
            (
                l["decision"].as_str().unwrap_or_default(),
                l["answered_by"].as_str().unwrap_or_default(),
            )
        })
        .collect();
    assert_eq!(ends, [("deny", "reviewer"), ("allow", "person")]);
    let answers: Vec<Value> = reviews(&fx).iter().map(|r| r["answer"].clone()).collect();
    assert_eq!(answers, ["no", "yes"]);
}

#[test]
fn a_reviewer_that_answers_garbage_fails_closed() {
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
        // No answer tool called: agent_review goes to a person, and there is none.
        reply(kind, "Looks fine to me!", &[]),
        reply(
            kind,
            "Listing.",
            &[("call_2", "list_directory", json!({"path": "."}))],
        ),
        // An answer that is not one: agent_then_human is refused, nobody asked.
        reply(
            kind,
            "",
            &[("r1", "review_answer", json!({"decision": "yes please"}))],
        ),
        reply(kind, "Both refused.", &[]),
    ]);
    let fx = reviewed_project(
        kind,
        &server,
        r#".{ .action = "call.write_file", .decision = .agent_review },
           .{ .action = "call.list_directory", .decision = .agent_then_human }"#,
    );
    let out = run(&fx, &[], "write a note and list");
    assert!(out.status.success(), "{}", describe(&out));
    assert!(!fx.project.join("note.txt").exists());
    let requests = server.requests();
    assert_eq!(requests.len(), 5, "{}", describe(&out));
    let results = chat_results(&requests[4]);
    assert!(
        results["call_1"].starts_with("refused: call.write_file needs a person's yes"),
        "agent_review with no answer from the reviewer goes to a person: {}",
        results["call_1"]
    );
    assert!(
        results["call_2"].contains("the reviewer agent gave no answer")
            && results["call_2"].contains("cannot be read"),
        "{}",
        results["call_2"]
    );
    let write = fx.last_logged("call.write_file");
    assert_eq!(
        (&write["decision"], &write["answered_by"]),
        (&json!("agent_review"), &json!("nobody")),
        "{write}"
    );
    let list = fx.last_logged("call.list_directory");
    assert_eq!(
        (&list["decision"], &list["answered_by"]),
        (&json!("agent_then_human"), &json!("nobody")),
        "{list}"
    );
    let answers: Vec<Value> = reviews(&fx).iter().map(|r| r["answer"].clone()).collect();
    assert_eq!(answers, ["failed", "failed"]);
}

/// Seed 002 for `chock run`: the session reads flake.lock as it starts and
/// fetches what the `nix.net.eval` rules allow, nobody asked (logged under
/// route `inputs`); the dev shell the model's first command needs then
/// finds the input in the store, and nothing is fetched twice.
#[test]
fn chock_run_fetches_the_flake_inputs_the_rules_allow_as_the_session_starts() {
    use chock_inputs::testing::{Reply, Server as InputServer, Tree, nonce};
    let kind = ProviderKind::OpenaiChat;
    let server = Server::start(vec![
        reply(
            kind,
            "Looking.",
            &[("call_1", "run_command", json!({"argv": ["./probe", "env"]}))],
        ),
        reply(kind, "Done.", &[]),
    ]);
    let tag = format!("input-{}", nonce());
    let tree = Tree::new("pkg", &[("hello", format!("{tag}\n").as_bytes(), false)]);
    let fetched = InputServer::http();
    fetched.route("/pkg.tar.gz", Reply::Body(tree.tar_gz()));
    let host = format!("nix.net.eval.localhost.{}", fetched.port());
    let fx = project(
        kind,
        &server,
        &format!(
            "{}, .{{ .action = \"{host}\", .decision = .allow }}",
            sandbox_fixture::DEV_SHELL_RULE
        ),
    );
    std::fs::copy(sandbox_fixture::probe_binary(), fx.project.join("probe")).expect("probe");
    sandbox_fixture::shell_with_tarball_input(
        &fx.project,
        &fetched.url("/pkg.tar.gz"),
        &tree.nar_hash(),
    );
    git(&fx.project, &["add", "probe"]);
    git(
        &fx.project,
        &["commit", "-q", "-m", "a flake with an input"],
    );
    let out = run(&fx, &[], "look at the shell");
    assert!(out.status.success(), "{}", describe(&out));
    assert_eq!(fetched.requests(), vec!["/pkg.tar.gz".to_owned()]);
    let asked: Vec<Value> = fx
        .log_lines()
        .into_iter()
        .filter(|l| l["action"] == host.as_str())
        .collect();
    assert_eq!(asked.len(), 1, "asked once, at start: {asked:#?}");
    assert_eq!(asked[0]["route"], "inputs", "{}", asked[0]);
    assert_eq!(asked[0]["decision"], "allow", "{}", asked[0]);
    let requests = server.requests();
    let results = requests[1].body["messages"].to_string();
    assert!(
        results.contains("PKG=/nix/store/"),
        "the dev shell had its input: {results}"
    );
}

#[test]
fn a_plugin_s_tool_is_offered_and_each_call_decided() {
    let kind = ProviderKind::OpenaiChat;
    let server = Server::start(vec![
        reply(
            kind,
            "Asking the plugin.",
            &[("p1", "plugin__hello__hi", json!({}))],
        ),
        reply(kind, "It answered.", &[]),
    ]);
    let fx = project(
        kind,
        &server,
        r#".{ .action = "plugin.hello.tool.hi", .decision = .allow }"#,
    );
    run_support::install_hello_plugin(&fx);

    let out = run(&fx, &[], "ask the plugin");
    assert!(out.status.success(), "{}", describe(&out));
    let requests = server.requests();
    assert_eq!(requests.len(), 2, "{}", describe(&out));
    let offered = requests[0].body["tools"].to_string();
    assert!(offered.contains("plugin__hello__hi"), "{offered}");
    let result = requests[1].body["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .find(|m| m["role"] == "tool")
        .expect("the call's result")
        .clone();
    assert_eq!(result["content"], "{\"hi\":1}", "{result}");
    let logged = fx.last_logged("plugin.hello.tool.hi");
    assert_eq!(logged["decision"], "allow", "{logged}");
    assert_eq!(logged["agent_kind"], "chock-run", "{logged}");
}
