//! `chock mcp` for real: a scripted MCP client drives the server over stdio
//! through every tool on allow, deny and ask (the client's elicitation and
//! `chock approve` both) and reads the decision log; the workspace attacks
//! are made for real; fetch_url reads loopback HTTP servers. run_command
//! needs user namespaces and Landlock (`scripts/setup`, `chock doctor`).

use std::io::{BufReader, Read, Write};
use std::process::Stdio;
use std::time::Duration;

use serde_json::{Value, json};
use support::{Approver, Env, Page, Site, answered_in_chock_approve, person_says};

mod net_lab;
#[path = "mcp/notify.rs"]
mod notify;
#[path = "mcp/push.rs"]
mod push;
mod sandbox_fixture;
#[path = "mcp/tasks.rs"]
mod tasks;

/// One call per tool: the tool, its arguments, and the action it is decided under.
fn every_tool(site: &Site) -> Vec<(&'static str, Value, String)> {
    vec![
        (
            "read_file",
            json!({"path": "a.txt"}),
            "call.read_file".into(),
        ),
        (
            "list_directory",
            json!({"path": "."}),
            "call.list_directory".into(),
        ),
        ("glob", json!({"pattern": "**/*.rs"}), "call.glob".into()),
        ("grep", json!({"pattern": "hello"}), "call.grep".into()),
        (
            "write_file",
            json!({"path": "out/new.txt", "content": "written\n"}),
            "call.write_file".into(),
        ),
        (
            "edit_file",
            json!({"path": "a.txt", "old_string": "hello", "new_string": "hello there"}),
            "call.edit_file".into(),
        ),
        (
            "run_command",
            json!({"argv": ["echo", "ran-in-sandbox"]}),
            "exec.path.echo".into(),
        ),
        (
            "nix_eval",
            json!({"expression": "1 + 1"}),
            "call.nix_eval".into(),
        ),
        (
            "fetch_url",
            json!({"url": site.url("/page")}),
            "net.fetch.1.0.0.127".into(),
        ),
    ]
}

fn project_with_files() -> Env {
    let env = Env::new();
    env.write("a.txt", "hello\n");
    env.write("src/lib.rs", "// hello from rust\n");
    env
}

fn page_site() -> Site {
    Site::start("127.0.0.1", vec![("/page", Page::ok("a page"))])
}

/// What each tool's allowed call must have done.
fn check_done(env: &Env, tool: &str, text: &str) {
    match tool {
        "read_file" => assert_eq!(text, "hello\n"),
        "list_directory" => assert!(text.contains("a.txt") && text.contains("src/"), "{text}"),
        "glob" => assert_eq!(text.trim(), "src/lib.rs"),
        "grep" => assert!(text.contains("src/lib.rs:1: // hello from rust"), "{text}"),
        "write_file" => assert_eq!(env.read("out/new.txt").as_deref(), Some("written\n")),
        "edit_file" => assert_eq!(env.read("a.txt").as_deref(), Some("hello there\n")),
        "run_command" => assert!(
            text.contains("exit status 0") && text.contains("ran-in-sandbox"),
            "{text}"
        ),
        "nix_eval" => assert_eq!(text.trim(), "2"),
        "fetch_url" => assert!(text.contains("a page") && text.contains("200"), "{text}"),
        other => panic!("no check for {other}"),
    }
}

/// What each refused call must have left alone.
fn check_not_done(env: &Env, tool: &str) {
    match tool {
        "write_file" => assert_eq!(env.read("out/new.txt"), None),
        "edit_file" => assert_eq!(env.read("a.txt").as_deref(), Some("hello\n")),
        _ => {}
    }
}

#[test]
fn every_tool_on_allow_runs_and_is_logged() {
    let env = project_with_files();
    // nix.build allowed at start offers provide_tool, and a port rule
    // serve_port: every tool is listed.
    env.rules(
        r#".{ .action = "net.fetch.1.0.0.127", .decision = .allow }, .{ .action = "nix.build", .decision = .allow }, .{ .action = "net.serve.3000", .decision = .ask }"#,
    );
    let site = page_site();
    let mut client = env.client(false, &[]);
    let names = client.tool_names();
    // request_apply is offered only to a server with a session workspace,
    // read_skill where a layer holds a skill, web_search where config.zon
    // names an engine (tests/skills.rs and tests/search.rs offer them).
    let offered: Vec<&str> = chock_mcp::TOOL_NAMES
        .into_iter()
        .filter(|t| !["request_apply", "read_skill", "web_search"].contains(t))
        // The language-server tools, where chock.zon names a server (tests/lsp.rs).
        .filter(|t| !chock_mcp::LSP_TOOLS.contains(t))
        .collect();
    assert_eq!(names.len(), offered.len(), "{names:?}");
    for tool in offered {
        assert!(
            names.iter().any(|n| n == tool),
            "{tool} is listed: {names:?}"
        );
    }
    for (tool, args, action) in every_tool(&site) {
        let called = client.call(tool, args);
        assert!(!called.is_error, "{tool}: {called:?}");
        check_done(&env, tool, &called.text);
        let by = if action.starts_with("net.fetch") {
            "rule"
        } else {
            "default"
        };
        env.assert_logged(&action, "allow", by);
        let line = env.logged(&action).pop().expect("line");
        assert_eq!(line["tool"], tool);
    }
    let write = env.logged("call.write_file").pop().expect("line");
    assert_eq!(
        write["subject"], "out/new.txt",
        "the subject is the path, by name"
    );
    assert_eq!(
        env.logged("exec.path.echo").pop().expect("line")["subject"],
        "echo"
    );
    assert!(
        !env.logged("sandbox.jit").is_empty(),
        "sandbox.jit is read and logged under mcp"
    );
    assert_eq!(
        env.logged("net.fetch.1.0.0.127").pop().expect("line")["subject"],
        "127.0.0.1"
    );
    let text = serde_json::to_string(&env.log_lines()).expect("json");
    assert!(
        !text.contains("written\\n") && !text.contains("ran-in-sandbox"),
        "no content is logged"
    );
}

#[test]
fn every_tool_on_deny_is_refused_with_the_rule_and_logged() {
    let env = project_with_files();
    env.rules(
        r#".{ .action = "call.*", .decision = .deny }, .{ .action = "exec.*", .decision = .deny }, .{ .action = "net.fetch.*", .decision = .deny }"#,
    );
    let site = page_site();
    let mut client = env.client(true, &[]);
    for (tool, args, action) in every_tool(&site) {
        let called = client.call(tool, args);
        assert!(called.is_error, "{tool}: {called:?}");
        assert!(
            called.text.contains(&format!(
                "refused: {action} is denied by the project's rule"
            )),
            "{tool}: {}",
            called.text
        );
        assert!(
            called.text.contains("chock.zon:1"),
            "names the file and line: {}",
            called.text
        );
        check_not_done(&env, tool);
        env.assert_logged(&action, "deny", "rule");
        let line = env.logged(&action).pop().expect("line");
        assert!(
            line["decided_by"]["file"]
                .as_str()
                .is_some_and(|f| f.ends_with("chock.zon"))
        );
        assert_eq!(line["decided_by"]["line"], 1);
    }
    assert!(client.elicited.is_empty(), "a deny asks nobody");
    assert!(
        site.hits("/page").is_empty(),
        "a denied host is never contacted"
    );
}

fn ask_rules(env: &Env) {
    env.rules(
        r#".{ .action = "call.*", .decision = .ask }, .{ .action = "exec.*", .decision = .ask }, .{ .action = "net.fetch.*", .decision = .ask }"#,
    );
}

#[test]
fn every_tool_on_ask_asks_through_the_clients_elicitation() {
    let env = project_with_files();
    ask_rules(&env);
    let site = page_site();
    let mut client = env.client(true, &[]);
    for (tool, args, action) in every_tool(&site) {
        client.elicit_answers.push(person_says(true));
        let called = client.call(tool, args);
        assert!(!called.is_error, "{tool}: {called:?}");
        check_done(&env, tool, &called.text);
        env.assert_logged(&action, "allow", "person");
        let asked = client.elicited.last().expect("an elicitation");
        let message = asked["params"]["message"].as_str().unwrap_or_default();
        assert!(
            message.contains(&action),
            "the question names {action}: {message}"
        );
        assert!(message.contains("to stop being asked, add to"), "{message}");
        assert!(
            message.contains(&format!(
                r#".{{ .action = "{action}", .decision = .deny }}"#
            )),
            "{message}"
        );
        assert_eq!(asked["params"]["mode"], "form");
    }
    assert_eq!(client.elicited.len(), 9);
}

/// The network router on the tool server: a host no rule answers is asked
/// through the client as the command connects, and reached only on yes.
/// Runs in network namespaces the test makes (root).
#[test]
fn run_command_asks_the_client_about_each_host_it_connects_to() {
    let lab = net_lab::Lab::new();
    lab.enter();
    let env = project_with_files();
    env.rules(
        r#".{ .action = "exec.*", .decision = .allow }, .{ .action = "net.connect.*", .decision = .ask }"#,
    );
    let resolver = lab.resolver();
    let ca = lab.ca();
    let mut client = env.client_with_env(
        true,
        &[],
        &[
            ("CHOCK_NET_RESOLVER", std::path::Path::new(&resolver)),
            ("SSL_CERT_FILE", &ca),
        ],
    );
    let curl =
        |host: &str| json!({"argv": ["curl", "-sS", "-m", "10", format!("https://{host}:8443/")]});
    client.elicit_answers.push(person_says(true));
    let called = client.call("run_command", curl("allowed.test"));
    assert!(
        called.text.contains("hello through the router"),
        "{called:?}"
    );
    let asked = client.elicited.last().expect("an elicitation");
    let message = asked["params"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("net.connect.test.allowed.8443"),
        "{message}"
    );
    env.assert_logged("net.connect.test.allowed.8443", "allow", "person");
    client.elicit_answers.push(person_says(false));
    let called = client.call("run_command", curl("asked.test"));
    assert!(
        !called.text.contains("hello through the router"),
        "{called:?}"
    );
    env.assert_logged("net.connect.test.asked.8443", "deny", "person");
    assert_eq!(lab.log().matches("8443 ").count(), 1, "{}", lab.log());
}

/// A background command's router never asks: what the rules allow outright
/// is reached, and a host that would have asked is refused with nobody
/// asked. Runs in network namespaces the test makes (root).
#[test]
fn a_background_command_reaches_only_what_is_allowed_outright() {
    let lab = net_lab::Lab::new();
    lab.enter();
    let env = project_with_files();
    env.rules(
        r#".{ .action = "exec.*", .decision = .allow }, .{ .action = "net.connect.test.allowed.*", .decision = .allow }"#,
    );
    let resolver = lab.resolver();
    let mut client = env.client_with_env(
        true,
        &[],
        &[("CHOCK_NET_RESOLVER", std::path::Path::new(&resolver))],
    );
    let script = "curl -sS -m 10 http://allowed.test:8080/; curl -sS -m 10 http://asked.test:8080/; echo asked=$?";
    let started = client.call(
        "run_command",
        json!({"argv": ["sh", "-c", script], "background": true}),
    );
    assert!(started.text.contains("network: filtered"), "{started:?}");
    let id = tasks::task_id(&started.text);
    let mut output = String::new();
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    // What the task printed (task_output's header shows the command too).
    while std::time::Instant::now() < deadline && !output.contains("asked=") {
        let text = client
            .call("task_output", json!({"task": id, "wait_seconds": 3}))
            .text;
        output = tasks::output_of(&text).to_owned();
        std::thread::sleep(Duration::from_millis(200));
    }
    assert!(output.contains("hello through the router"), "{output}");
    assert!(
        output.contains("asked=") && !output.contains("asked=0"),
        "{output}"
    );
    assert!(
        client.elicited.is_empty(),
        "a background command never asks"
    );
    // Nobody can be asked, so the name is not even looked up.
    env.assert_logged("net.connect.test.asked.*", "ask", "nobody");
    assert!(!lab.log().contains("dns asked.test"), "{}", lab.log());
    assert_eq!(lab.log().matches("8080 ").count(), 1, "{}", lab.log());
}

#[test]
fn a_person_who_says_no_refuses_the_act() {
    let env = project_with_files();
    ask_rules(&env);
    let site = page_site();
    let mut client = env.client(true, &[]);
    for (i, (tool, args, action)) in every_tool(&site).into_iter().enumerate() {
        // A decline and an accepted "no" are both a person's no (a cancel is not).
        client.elicit_answers.push(match i % 2 {
            0 => json!({"action": "decline"}),
            _ => person_says(false),
        });
        let called = client.call(tool, args);
        assert!(called.is_error, "{tool}: {called:?}");
        assert!(
            called.text.contains("refused by a person"),
            "{}",
            called.text
        );
        check_not_done(&env, tool);
        env.assert_logged(&action, "deny", "person");
    }
    assert!(
        site.hits("/page").is_empty(),
        "a refused fetch contacts nobody"
    );
}

#[test]
fn with_nobody_to_ask_an_ask_is_a_refusal_naming_the_rule_to_add() {
    let env = project_with_files();
    ask_rules(&env);
    let site = page_site();
    let mut client = env.client(false, &["--no-approve"]);
    for (tool, args, action) in every_tool(&site) {
        let called = client.call(tool, args);
        assert!(called.is_error, "{tool}: {called:?}");
        assert!(
            called.text.contains("nobody can be asked"),
            "{}",
            called.text
        );
        assert!(
            called.text.contains(&format!(
                r#".{{ .action = "{action}", .decision = .allow }}"#
            )),
            "the refusal names the rule to add: {}",
            called.text
        );
        check_not_done(&env, tool);
        env.assert_logged(&action, "ask", "nobody");
    }
}

#[test]
fn every_tool_on_ask_asks_through_chock_approve() {
    let env = project_with_files();
    ask_rules(&env);
    let site = page_site();
    let client = env.client(false, &[]);
    let mut approver = Approver::start(&env);
    approver.wait_for("watching chock mcp");
    let calls = every_tool(&site);
    let count = calls.len();
    let env_ref = &env;
    std::thread::scope(|scope| {
        let driver = scope.spawn(move || {
            let mut client = client;
            let mut results = Vec::new();
            for (tool, args, _) in calls.clone() {
                results.push((tool, client.call(tool, args)));
            }
            results
        });
        for (i, (tool, _, action)) in every_tool(&site).into_iter().enumerate() {
            let question = approver.wait_for("allow it once? [y/N]");
            assert!(
                question.contains(&format!("{tool} wants {action}")),
                "{question}"
            );
            assert!(
                question.contains("to stop being asked, add to"),
                "{question}"
            );
            if i == 0 {
                // While the question waits, --list shows it.
                let listed = env_ref
                    .chock()
                    .args(["approve", "--list", "--json"])
                    .output()
                    .expect("list");
                let listed: Value = serde_json::from_slice(&listed.stdout).expect("json");
                assert_eq!(
                    listed[0]["questions"][0]["question"]["action"],
                    action.as_str(),
                    "{listed}"
                );
            }
            // The last one is refused, the rest allowed.
            approver.answer(if i + 1 == count { "n" } else { "y" });
        }
        let results = driver.join().expect("the client thread");
        for (i, (tool, called)) in results.iter().enumerate() {
            if i + 1 == count {
                assert!(
                    called.is_error && called.text.contains("refused by a person"),
                    "{tool}: {called:?}"
                );
            } else {
                assert!(!called.is_error, "{tool}: {called:?}");
                check_done(env_ref, tool, &called.text);
            }
        }
    });
    for (i, (_, _, action)) in every_tool(&site).into_iter().enumerate() {
        if i + 1 == count {
            env.assert_logged(&action, "deny", "person");
        } else {
            env.assert_logged(&action, "allow", "person");
        }
    }
}

#[test]
fn a_no_with_a_reason_in_the_clients_prompt_reaches_the_agent() {
    let env = project_with_files();
    ask_rules(&env);
    let mut client = env.client(true, &[]);
    client.elicit_answers = vec![
        json!({"action": "accept", "content": {"allow": false, "reason": "  read src/lib.rs instead  "}}),
        json!({"action": "accept", "content": {"allow": false, "reason": ""}}),
    ];
    let called = client.call("read_file", json!({"path": "a.txt"}));
    assert!(
        called.is_error
            && called
                .text
                .contains("the answer was no, because: read src/lib.rs instead."),
        "{called:?}"
    );
    let schema = &client.elicited[0]["params"]["requestedSchema"]["properties"];
    assert_eq!(schema["reason"]["type"], "string", "{schema}");
    assert_eq!(schema["reason"]["maxLength"], 2000, "{schema}");
    // An empty reason is a plain no.
    let called = client.call("read_file", json!({"path": "a.txt"}));
    assert!(
        called.is_error && !called.text.contains("because"),
        "{called:?}"
    );
    env.assert_logged("call.read_file", "deny", "person");
}

/// The client's form answered yes with `scope` for two reads of the same file.
fn two_reads_elicited(env: &Env, scope: &str) -> (Value, support::Called, support::Called) {
    let mut client = env.client(true, &[]);
    client.elicit_answers =
        vec![json!({"action": "accept", "content": {"allow": true, "scope": scope}})];
    let first = client.call("read_file", json!({"path": "a.txt"}));
    let second = client.call("read_file", json!({"path": "a.txt"}));
    assert_eq!(
        client.elicited.len(),
        1,
        "asked once: {:#?}",
        client.elicited
    );
    let schema = client.elicited[0]["params"]["requestedSchema"]["properties"].clone();
    (schema, first, second)
}

#[test]
fn the_clients_form_offers_the_scopes_and_a_session_yes_is_not_asked_again() {
    let env = project_with_files();
    ask_rules(&env);
    let before = env.read("chock.zon");
    let (schema, first, second) = two_reads_elicited(&env, "session");
    assert_eq!(
        schema["scope"]["enum"],
        json!(["once", "session", "always"]),
        "{schema}"
    );
    assert!(!first.is_error && !second.is_error, "{first:?} {second:?}");
    let scopes: Vec<Value> = env
        .logged("call.read_file")
        .iter()
        .map(|l| l["scope"].clone())
        .collect();
    assert_eq!(scopes, [json!("session"), json!("session")]);
    assert_eq!(
        env.read("chock.zon"),
        before,
        "a session's yes is written nowhere"
    );
}

#[test]
fn always_in_the_clients_form_writes_the_rule_and_a_new_session_is_not_asked() {
    let env = project_with_files();
    ask_rules(&env);
    let (_, first, second) = two_reads_elicited(&env, "always");
    assert!(!first.is_error && !second.is_error, "{first:?} {second:?}");
    let edits = env.logged("policy.edit");
    assert_eq!(edits.len(), 1, "{:#?}", env.log_lines());
    let rule = edits[0]["subject"].as_str().expect("the rule").to_owned();
    assert!(
        env.read("chock.zon").expect("chock.zon").contains(&rule),
        "{rule}"
    );
    let called = env
        .client(false, &["--no-approve"])
        .call("read_file", json!({"path": "a.txt"}));
    assert!(!called.is_error, "{called:?}");
    env.assert_logged("call.read_file", "allow", "rule");
}

#[test]
fn a_no_with_a_reason_in_chock_approve_reaches_the_agent() {
    let env = project_with_files();
    ask_rules(&env);
    let client = env.client(false, &[]);
    let mut approver = Approver::start(&env);
    approver.wait_for("watching chock mcp");
    std::thread::scope(|scope| {
        let driver = scope.spawn(move || {
            let mut client = client;
            client.call("read_file", json!({"path": "a.txt"}))
        });
        approver.wait_for("`n REASON`");
        approver.answer("n read src/lib.rs instead");
        let called = driver.join().expect("the client");
        assert!(
            called.is_error
                && called.text.contains("refused by a person")
                && called.text.contains("because: read src/lib.rs instead"),
            "{called:?}"
        );
    });
    env.assert_logged("call.read_file", "deny", "person");
}

/// Calls read_file twice with `chock approve` watching, answers the one
/// question `answer`; the question as shown and the two calls' answers.
fn two_reads_answered(env: &Env, answer: &str) -> (String, support::Called, support::Called) {
    let client = env.client(false, &["--ask-timeout", "5"]);
    let mut approver = Approver::start(env);
    approver.wait_for("watching chock mcp");
    std::thread::scope(|scope| {
        let driver = scope.spawn(move || {
            let mut client = client;
            let first = client.call("read_file", json!({"path": "a.txt"}));
            let second = client.call("read_file", json!({"path": "a.txt"}));
            (first, second)
        });
        let question = approver.wait_for("`n REASON`");
        approver.answer(answer);
        let (first, second) = driver.join().expect("the client");
        (question, first, second)
    })
}

#[test]
fn a_yes_for_the_session_answers_the_same_call_again_unasked_and_writes_nothing() {
    let env = project_with_files();
    ask_rules(&env);
    let before = env.read("chock.zon");
    let (question, first, second) = two_reads_answered(&env, "s");
    assert!(question.contains("`s`: yes for this session"), "{question}");
    // The second call was not asked: with nobody answering it, it would be refused.
    assert!(!first.is_error && !second.is_error, "{first:?} {second:?}");
    let lines = env.logged("call.read_file");
    assert_eq!(lines.len(), 2, "{lines:#?}");
    env.assert_logged("call.read_file", "allow", "person");
    // Both are logged as the person's yes for this session: the one asked and the one it answered.
    let scopes: Vec<&Value> = lines.iter().map(|l| &l["scope"]).collect();
    assert_eq!(scopes, [&json!("session"), &json!("session")], "{lines:#?}");
    let table = env
        .chock()
        .args(["log", "show"])
        .output()
        .expect("chock log show");
    let table = String::from_utf8_lossy(&table.stdout);
    assert!(
        table.contains("a person (session)"),
        "the table shows the scope: {table}"
    );
    let json = env
        .chock()
        .args(["log", "show", "--json"])
        .output()
        .expect("chock log show --json");
    assert!(
        String::from_utf8_lossy(&json.stdout).contains(r#""scope":"session""#),
        "{json:?}"
    );
    assert_eq!(
        env.read("chock.zon"),
        before,
        "a session's yes is written nowhere"
    );
    // A new session asks again: with nobody to ask, it is refused.
    let called = env
        .client(false, &["--no-approve"])
        .call("read_file", json!({"path": "a.txt"}));
    assert!(called.is_error, "{called:?}");
}

#[test]
fn a_yes_always_writes_the_rule_into_chock_zon_and_a_new_session_is_not_asked() {
    let env = project_with_files();
    ask_rules(&env);
    let before = env.read("chock.zon").expect("chock.zon");
    let (question, first, second) = two_reads_answered(&env, "a");
    assert!(question.contains("`a`: yes always"), "{question}");
    assert!(!first.is_error && !second.is_error, "{first:?} {second:?}");
    let rule = question
        .lines()
        .skip_while(|l| !l.contains("to stop being asked, add to"))
        .nth(1)
        .expect("the rule shown")
        .trim()
        .trim_end_matches(',')
        .to_owned();
    let after = env.read("chock.zon").expect("chock.zon");
    let added = support::lines_added(&before, &after);
    assert_eq!(added.len(), 1, "{before}\n---\n{after}");
    assert!(added[0].contains(&rule), "{rule} in {after}");
    let edits = env.logged("policy.edit");
    assert_eq!(edits.len(), 1, "{:#?}", env.log_lines());
    assert_eq!(edits[0]["subject"], rule.as_str(), "{}", edits[0]);
    assert_eq!(edits[0]["scope"], "always", "{}", edits[0]);
    let asked = &env.logged("call.read_file")[0];
    assert_eq!(
        (&asked["answered_by"], &asked["scope"]),
        (&json!("person"), &json!("always")),
        "{asked}"
    );
    // A new process allows it with nobody asked, by the written rule.
    let called = env
        .client(false, &["--no-approve"])
        .call("read_file", json!({"path": "a.txt"}));
    assert!(!called.is_error, "{called:?}");
    env.assert_logged("call.read_file", "allow", "rule");
    let by_rule = env.last_logged("call.read_file");
    assert!(
        by_rule.get("scope").is_none(),
        "a rule's answer has no scope: {by_rule}"
    );
}

#[test]
fn the_approve_socket_answers_nobody_but_its_own_user() {
    let env = project_with_files();
    let mut client = env.client(false, &[]);
    client.call("read_file", json!({"path": "a.txt"}));
    let sockets: Vec<_> = std::fs::read_dir(env.approve_dir())
        .expect("the approve folder beside the log")
        .filter_map(Result::ok)
        .map(|e| e.path())
        .collect();
    assert_eq!(sockets.len(), 1, "{sockets:?}");
    let socket = &sockets[0];
    use std::os::unix::fs::PermissionsExt;
    let dir_mode = std::fs::metadata(env.approve_dir())
        .expect("dir")
        .permissions()
        .mode();
    assert_eq!(dir_mode & 0o777, 0o700);
    assert_eq!(
        std::fs::metadata(socket)
            .expect("socket")
            .permissions()
            .mode()
            & 0o777,
        0o600
    );
    // Open the way for another user, as a careless chmod would, and try.
    let mut open = env.approve_dir();
    while open != std::path::Path::new("/") {
        let mode = std::fs::metadata(&open).expect("meta").permissions().mode();
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(mode | 0o711))
            .expect("chmod");
        open.pop();
    }
    std::fs::set_permissions(socket, std::fs::Permissions::from_mode(0o666)).expect("chmod");
    let script = format!(
        "import socket,sys\ns=socket.socket(socket.AF_UNIX)\ns.connect({:?})\nsys.stdout.write(repr(s.recv(65536)))",
        socket.display().to_string()
    );
    let out = std::process::Command::new("/usr/bin/setpriv")
        .args([
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            "/usr/bin/python3",
            "-c",
            &script,
        ])
        .output()
        .expect("setpriv (util-linux) and python3");
    assert!(
        out.status.success(),
        "the connection itself was made: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "b''",
        "another user is answered nothing"
    );
    // The same request from this user is answered.
    let listed = env
        .chock()
        .args(["approve", "--list", "--json"])
        .output()
        .expect("list");
    assert!(
        listed.status.success(),
        "{}",
        String::from_utf8_lossy(&listed.stderr)
    );
}

#[test]
fn a_tool_denied_at_start_is_not_offered() {
    let env = project_with_files();
    env.rules(r#".{ .action = "mcp.chock.tool.fetch_url", .decision = .deny }, .{ .action = "mcp.chock.tool.grep", .decision = .ask }"#);
    let mut client = env.client(false, &[]);
    let names = client.tool_names();
    assert!(!names.iter().any(|n| n == "fetch_url"), "{names:?}");
    assert!(
        names.iter().any(|n| n == "grep"),
        "only a deny is spent at start: {names:?}"
    );
    let called = client.call("fetch_url", json!({"url": "http://127.0.0.1:9/"}));
    assert!(
        called.is_error
            && called.text.contains(
                "fetch_url is not offered: mcp.chock.tool.fetch_url answered deny at start"
            ),
        "{called:?}"
    );
    let line = env
        .logged("mcp.chock.tool.fetch_url")
        .pop()
        .expect("the start row is logged");
    assert_eq!(line["decision"], "deny");
    // Another name in the agent's configuration is another row.
    let mut other = env.client(false, &["--name", "tools"]);
    assert!(other.tool_names().iter().any(|n| n == "fetch_url"));
}

#[test]
fn a_policy_edited_later_changes_nothing_until_restart_and_the_server_says_so() {
    let env = project_with_files();
    env.rules(r#".{ .action = "call.lsp", .decision = .deny }"#);
    let mut client = env.client(false, &[]);
    assert!(!client.call("read_file", json!({"path": "a.txt"})).is_error);
    env.rules(r#".{ .action = "call.read_file", .decision = .deny }"#);
    let after = client.call("read_file", json!({"path": "a.txt"}));
    assert!(
        !after.is_error,
        "the rules read at start still answer: {after:?}"
    );
    assert!(
        after.text.contains("changed after this server read it"),
        "{}",
        after.text
    );
    assert!(
        after.text.contains("until the server is restarted"),
        "{}",
        after.text
    );
    let again = client.call("read_file", json!({"path": "a.txt"}));
    assert!(
        !again.text.contains("changed after"),
        "said once: {}",
        again.text
    );
    assert!(client.stderr_says("changed after this server read it"));
    let mut restarted = env.client(false, &[]);
    assert!(
        restarted
            .call("read_file", json!({"path": "a.txt"}))
            .is_error
    );
}

#[test]
fn malformed_json_rpc_gets_json_rpc_errors_and_the_server_goes_on() {
    let env = project_with_files();
    let mut client = env.client(false, &[]);
    client.send_raw("{this is not json");
    let reply = client.next_message();
    assert_eq!(reply["error"]["code"], -32700, "{reply}");
    assert_eq!(reply["id"], Value::Null);
    client.send_raw("[1, 2]");
    assert_eq!(client.next_message()["error"]["code"], -32600);
    client.send_raw(r#"{"id": 5, "method": "ping"}"#);
    let reply = client.next_message();
    assert_eq!(
        (reply["error"]["code"].clone(), reply["id"].clone()),
        (json!(-32600), json!(5)),
        "{reply}"
    );
    client.send_raw(r#"{"jsonrpc":"2.0","id":"x","method":"tools/call","params":{"name":7}}"#);
    let reply = client.response(&json!("x"));
    assert_eq!(reply["error"]["code"], -32602, "{reply}");
    let unknown = client.request("no/such/method", json!({}));
    assert_eq!(unknown["error"]["code"], -32601, "{unknown}");
    client.send_raw(&"x".repeat(100));
    assert_eq!(client.next_message()["error"]["code"], -32700);
    assert!(
        !client.call("read_file", json!({"path": "a.txt"})).is_error,
        "still serving"
    );
}

#[test]
fn bad_arguments_are_tool_errors_with_a_sentence() {
    let env = project_with_files();
    let mut client = env.client(false, &[]);
    let cases = [
        ("read_file", json!({}), "missing field `path`"),
        (
            "read_file",
            json!({"path": "a.txt", "mode": "raw"}),
            "unknown field `mode`",
        ),
        ("read_file", json!({"path": 7}), "invalid type"),
        (
            "write_file",
            json!({"path": "x"}),
            "missing field `content`",
        ),
        (
            "grep",
            json!({"pattern": "("}),
            "is not a regular expression",
        ),
        ("glob", json!({"pattern": "a[" }), "is not a glob"),
        (
            "run_command",
            json!({"argv": []}),
            "`argv` has 0 items, outside its bounds (at least 1)",
        ),
        (
            "edit_file",
            json!({"path": "a.txt", "old_string": "", "new_string": "x"}),
            "`old_string` is empty",
        ),
        (
            "edit_file",
            json!({"path": "a.txt", "old_string": "absent", "new_string": "x"}),
            "does not contain",
        ),
        ("fetch_url", json!({"url": "not a url"}), "is not a URL"),
        (
            "fetch_url",
            json!({"url": "file:///etc/passwd"}),
            "http and https only",
        ),
        (
            "nix_build",
            json!({"attribute": ["packages.x86_64-linux.default"]}),
            "one name per level",
        ),
        ("nix_build", json!({"attribute": []}), "nix_build"),
    ];
    for (tool, args, expected) in cases {
        let called = client.call(tool, args.clone());
        assert!(called.is_error, "{tool} {args}: {called:?}");
        assert!(
            called.text.contains(expected),
            "{tool} {args}: {}",
            called.text
        );
    }
    let takes = client.call("read_file", json!({"file": "a.txt"}));
    assert!(takes.text.contains("it takes"), "{}", takes.text);
}

/// What an agent or editor on the person's machine runs from the
/// project's top (Claude Code's hooks, Gemini CLI's settings, VS Code's
/// settings, a project's MCP servers) is never written by the file tools
/// in the person's project, whatever the rules say; a name that only
/// begins the same way is the agent's.
#[test]
fn the_file_tools_never_write_what_an_agent_or_editor_runs() {
    let env = project_with_files();
    env.write(".vscode/settings.json", "{}\n");
    let mut client = env.client(false, &[]);
    for (tool, args) in [
        (
            "write_file",
            json!({"path": ".claude/settings.json", "content": "{\"hooks\":{}}"}),
        ),
        (
            "write_file",
            json!({"path": "src/../.gemini/settings.json", "content": "{}"}),
        ),
        ("write_file", json!({"path": ".mcp.json", "content": "{}"})),
        (
            "edit_file",
            json!({"path": ".vscode/settings.json", "old_string": "{}", "new_string": "{\"x\": 1}"}),
        ),
    ] {
        let called = client.call(tool, args.clone());
        assert!(
            called.is_error && called.text.contains("outside any sandbox"),
            "{tool} {args}: {called:?}"
        );
    }
    for name in [".claude", ".gemini", ".mcp.json"] {
        assert!(!env.project.join(name).exists(), "{name} was made");
    }
    assert_eq!(env.read(".vscode/settings.json").as_deref(), Some("{}\n"));
    let called = client.call(
        "write_file",
        json!({"path": ".claude-notes.md", "content": "notes"}),
    );
    assert!(!called.is_error, "{called:?}");
}

#[test]
fn the_workspace_cannot_be_left() {
    let env = project_with_files();
    let outside = env.outside();
    std::fs::write(outside.join("secret"), "secret\n").expect("secret");
    let link = |target: &std::path::Path, name: &str| {
        std::os::unix::fs::symlink(target, env.project.join(name)).expect("symlink");
    };
    link(&outside, "out-dir");
    link(&outside.join("secret"), "out-file");
    link(&outside.join("new-file"), "out-new");
    link(std::path::Path::new("a.txt"), "in-link");
    std::fs::create_dir(env.project.join("sub")).expect("mkdir");
    std::os::unix::fs::symlink("../../outside", env.project.join("sub/up")).expect("symlink");
    let mut client = env.client(false, &[]);
    let escapes = [
        ("read_file", json!({"path": "out-dir/secret"})),
        ("read_file", json!({"path": "out-file"})),
        ("read_file", json!({"path": "sub/up/secret"})),
        ("read_file", json!({"path": "../outside/secret"})),
        ("read_file", json!({"path": outside.join("secret")})),
        ("read_file", json!({"path": "/etc/passwd"})),
        ("list_directory", json!({"path": "out-dir"})),
        ("glob", json!({"pattern": "**", "path": "out-dir"})),
        ("grep", json!({"pattern": "secret", "path": "out-dir"})),
        (
            "write_file",
            json!({"path": "out-dir/planted", "content": "x"}),
        ),
        (
            "write_file",
            json!({"path": "out-file", "content": "overwritten"}),
        ),
        (
            "write_file",
            json!({"path": "out-new", "content": "created"}),
        ),
        (
            "write_file",
            json!({"path": "sub/up/planted", "content": "x"}),
        ),
        (
            "write_file",
            json!({"path": "../outside/planted", "content": "x"}),
        ),
        (
            "edit_file",
            json!({"path": "out-file", "old_string": "secret", "new_string": "gone"}),
        ),
        (
            "run_command",
            json!({"argv": ["true"], "cwd": "../outside"}),
        ),
    ];
    for (tool, args) in escapes {
        let called = client.call(tool, args.clone());
        assert!(called.is_error, "{tool} {args} was not refused: {called:?}");
        assert!(
            called.text.contains("outside the workspace")
                || called.text.contains("leads outside the workspace"),
            "{tool} {args}: {}",
            called.text
        );
    }
    assert_eq!(
        std::fs::read_to_string(outside.join("secret"))
            .ok()
            .as_deref(),
        Some("secret\n")
    );
    let left: Vec<_> = std::fs::read_dir(&outside)
        .expect("outside")
        .filter_map(Result::ok)
        .map(|e| e.file_name())
        .collect();
    assert_eq!(left.len(), 1, "nothing was written outside: {left:?}");
    // grep over the whole workspace does not follow the link out.
    let grep = client.call("grep", json!({"pattern": "secret"}));
    assert!(!grep.text.contains("out-dir"), "{}", grep.text);
    // A link that stays inside is read through; a write never goes through
    // a link, and one given by its own path is made.
    assert_eq!(
        client.call("read_file", json!({"path": "in-link"})).text,
        "hello\n"
    );
    let through = client.call(
        "write_file",
        json!({"path": "in-link", "content": "via link\n"}),
    );
    assert!(
        through.is_error && through.text.contains("symbolic link"),
        "{through:?}"
    );
    assert!(
        !client
            .call(
                "write_file",
                json!({"path": "a.txt", "content": "via link\n"})
            )
            .is_error
    );
    assert_eq!(env.read("a.txt").as_deref(), Some("via link\n"));
    // The policy file is the person's.
    env.rules(r#".{ .action = "call.lsp", .decision = .deny }"#);
    let policy = std::fs::read_to_string(env.project.join("chock.zon")).expect("zon");
    for path in ["chock.zon", "./chock.zon", "sub/../chock.zon"] {
        let called = client.call("write_file", json!({"path": path, "content": ".{}"}));
        assert!(
            called.is_error && called.text.contains("only a person edits it"),
            "{path}: {called:?}"
        );
    }
    let called = client.call(
        "edit_file",
        json!({"path": "chock.zon", "old_string": "deny", "new_string": "allow"}),
    );
    assert!(called.is_error, "{called:?}");
    assert_eq!(
        std::fs::read_to_string(env.project.join("chock.zon")).expect("zon"),
        policy
    );
    // An oversized write is refused before anything is written.
    let big = "x".repeat(4 * 1024 * 1024 + 1);
    let called = client.call("write_file", json!({"path": "big.txt", "content": big}));
    assert!(
        called.is_error && called.text.contains("nothing was written"),
        "{}",
        &called.text[..called.text.len().min(300)]
    );
    assert_eq!(env.read("big.txt"), None);
    let called = client.call(
        "edit_file",
        json!({"path": "a.txt", "old_string": "via link", "new_string": big}),
    );
    assert!(called.is_error && called.text.contains("nothing was written"));
    assert_eq!(env.read("a.txt").as_deref(), Some("via link\n"));
}

#[test]
fn what_git_runs_outside_the_sandbox_cannot_be_planted() {
    let env = project_with_files();
    assert!(sandbox_fixture::git(&env.project, &["init", "-q"]));
    env.write("sub/.git", "gitdir: ../meta\n");
    env.rules(
        r#".{ .action = "call.*", .decision = .allow },
           .{ .action = "exec.path.sh", .decision = .allow }"#,
    );
    let config = env.read(".git/config").expect("config");
    let mut client = env.client(false, &[]);
    let marker = env.project.join("hook-ran");
    let hook = format!("#!/bin/sh\necho ran > {}\n", marker.display());
    for (tool, args) in [
        (
            "write_file",
            json!({"path": ".git/hooks/pre-commit", "content": hook}),
        ),
        (
            "write_file",
            json!({"path": ".git/config", "content": "[core]\n\thooksPath = planted\n"}),
        ),
        (
            "write_file",
            json!({"path": "./src/../.git/info/attributes", "content": "* filter=x\n"}),
        ),
        (
            "write_file",
            json!({"path": ".git/commondir", "content": "../planted\n"}),
        ),
        (
            "edit_file",
            json!({"path": ".git/config", "old_string": "[core]", "new_string": "[core]\n\tfsmonitor = planted"}),
        ),
        (
            "write_file",
            json!({"path": "sub/.git", "content": "gitdir: ../planted\n"}),
        ),
        (
            "write_file",
            json!({"path": "vendor/lib/.git/config", "content": "[core]\n"}),
        ),
    ] {
        let called = client.call(tool, args.clone());
        assert!(
            called.is_error && called.text.contains("git runs outside any sandbox"),
            "{tool} {args}: {called:?}"
        );
    }
    assert_eq!(env.read(".git/config").as_deref(), Some(config.as_str()));
    for planted in [
        ".git/hooks/pre-commit",
        ".git/info/attributes",
        ".git/commondir",
        "vendor",
    ] {
        assert!(!env.project.join(planted).exists(), "{planted} was written");
    }
    assert_eq!(env.read("sub/.git").as_deref(), Some("gitdir: ../meta\n"));

    // The same through run_command: refused by the sandbox's read-only
    // mounts; the missing .git/commondir is made (naming the git directory
    // itself) before the command starts, and held read-only like the rest.
    let called = client.call(
        "run_command",
        json!({"argv": ["sh", "-c", format!(
            "printf '%s' '{hook}' > .git/hooks/pre-commit; echo '[core]' >> .git/config; \
             mkdir -p own/hooks; cp .git/hooks/pre-commit own/hooks/ 2>/dev/null; \
             echo \"$PWD/own\" > .git/commondir; echo done"
        )]}),
    );
    assert!(called.text.contains("done"), "{called:?}");
    assert!(
        called.text.contains("Read-only file system")
            && called.text.contains(".git/commondir")
            && called.text.contains("before the program started"),
        "{}",
        called.text
    );
    assert_eq!(env.read(".git/config").as_deref(), Some(config.as_str()));
    assert_eq!(env.read(".git/commondir").as_deref(), Some(".\n"));
    assert!(sandbox_fixture::git(
        &env.project,
        &["commit", "-q", "--allow-empty", "-m", "after the agent"]
    ));
    assert!(
        !marker.exists(),
        "a planted hook ran on the person's commit"
    );
}

#[test]
fn a_folder_swapped_for_a_link_mid_write_never_lets_a_write_out() {
    let env = project_with_files();
    let outside = env.outside();
    let mut client = env.client(false, &[]);
    let project = env.project.clone();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let flipping = stop.clone();
    let flipper = std::thread::spawn(move || {
        let dir = project.join("d");
        let parked = project.join("d-real");
        std::fs::create_dir_all(&dir).ok();
        while !flipping.load(std::sync::atomic::Ordering::Relaxed) {
            // A real folder, then a link to the outside in its place.
            std::fs::rename(&dir, &parked).ok();
            std::os::unix::fs::symlink(&outside, &dir).ok();
            std::thread::yield_now();
            std::fs::remove_file(&dir).ok();
            std::fs::rename(&parked, &dir).ok();
        }
    });
    for i in 0..200 {
        client.call(
            "write_file",
            json!({"path": format!("d/f{i}"), "content": "x"}),
        );
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    flipper.join().expect("flipper");
    let leaked: Vec<_> = std::fs::read_dir(env.outside())
        .expect("outside")
        .filter_map(Result::ok)
        .map(|e| e.file_name())
        .collect();
    assert!(
        leaked.is_empty(),
        "a write went through the swapped link: {leaked:?}"
    );
}

#[test]
fn nix_eval_is_pure_bounded_and_cut() {
    let env = project_with_files();
    env.write("data.nix", "{ answer = 42; }");
    std::fs::write(env.outside().join("x.nix"), "1").expect("x.nix");
    std::os::unix::fs::symlink(env.outside().join("x.nix"), env.project.join("link.nix"))
        .expect("symlink");
    let mut client = env.client(false, &[]);
    let value = client.call(
        "nix_eval",
        json!({"expression": "(import ./data.nix).answer"}),
    );
    assert_eq!(value.text.trim(), "42", "{value:?}");
    let json_value = client.call(
        "nix_eval",
        json!({"expression": "{ a = [ 1 \"b\" ]; }", "json": true}),
    );
    assert_eq!(json_value.text.trim(), r#"{"a":[1,"b"]}"#);
    let long = client.call(
        "nix_eval",
        json!({"expression": "builtins.concatStringsSep \"\" (builtins.genList (x: \"a\") 20000)"}),
    );
    assert!(!long.is_error);
    assert!(
        long.text.contains("output cut at 16384 bytes"),
        "{}",
        &long.text[long.text.len() - 100..]
    );
    assert!(long.text.len() < 16384 + 100);
    for escape in [
        "builtins.readFile /etc/passwd",
        "import ../outside/x.nix",
        "import ./link.nix",
    ] {
        let called = client.call("nix_eval", json!({"expression": escape}));
        assert!(called.is_error, "{escape} was read: {called:?}");
    }
    let home = client.call(
        "nix_eval",
        json!({"expression": "builtins.getEnv \"HOME\""}),
    );
    assert_eq!(
        home.text.trim(),
        "\"\"",
        "the environment is empty: {home:?}"
    );
    let traced = client.call("nix_eval", json!({"expression": "builtins.trace \"hi\" 1"}));
    assert!(traced.text.contains("trace: hi"), "{traced:?}");
    let broken = client.call("nix_eval", json!({"expression": "1 +"}));
    assert!(broken.is_error, "{broken:?}");
    // A derivation answers its paths, and the evaluation writes nothing.
    let name = format!("mcp-eval-{}", std::process::id());
    let expression = format!(
        r#"derivation {{ name = "{name}"; system = "x86_64-linux"; builder = "/bin/sh"; args = [ "-c" "echo > $out" ]; src = builtins.toFile "{name}-src" "text"; }}"#
    );
    let summary = client.call("nix_eval", json!({"expression": expression}));
    assert!(!summary.is_error, "{summary:?}");
    let path_of = |field: &str| -> String {
        let text = &summary.text;
        let at = text
            .find(field)
            .unwrap_or_else(|| panic!("no {field} in {text}"));
        let rest = &text[at..];
        let start = rest.find("/nix/store/").expect("a store path");
        rest[start..].split('"').next().expect("a path").to_string()
    };
    let (drv, out) = (path_of("drvPath"), path_of("outPath"));
    assert!(drv.ends_with(&format!("-{name}.drv")), "{}", summary.text);
    assert!(out.ends_with(&format!("-{name}")), "{}", summary.text);
    assert!(
        !summary.text.contains("builder"),
        "only the two paths: {}",
        summary.text
    );
    // As JSON too, both paths (builtins.toJSON alone would give the outPath).
    let as_json = client.call("nix_eval", json!({"expression": expression, "json": true}));
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(as_json.text.trim()).expect("JSON"),
        json!({"drvPath": drv, "outPath": out}),
        "{as_json:?}"
    );
    for path in [&drv, &out] {
        assert!(
            !std::path::Path::new(path).exists(),
            "nix_eval wrote {path} to the store"
        );
    }
    assert!(
        !in_store_named(&format!("{name}-src")),
        "nix_eval wrote the toFile text to the store"
    );
}

#[test]
fn fetch_url_follows_redirects_only_through_allowed_hosts_and_never_asks_a_hop() {
    let env = Env::new();
    let other = Site::start(
        "127.0.0.2",
        vec![("/there", Page::ok("from the other host"))],
    );
    let denied = Site::start("127.0.0.3", vec![("/no", Page::ok("never"))]);
    let site = Site::start(
        "127.0.0.1",
        vec![
            ("/hop", Page::redirect(&other.url("/there"))),
            ("/same", Page::redirect("/page")),
            ("/page", Page::ok("same host")),
            (
                "/to-unnamed",
                Page::redirect(&format!("http://127.0.0.4:{}/x", other.addr.port())),
            ),
            ("/to-denied", Page::redirect(&denied.url("/no"))),
            ("/loop", Page::redirect("/loop")),
            (
                "/creds",
                Page::redirect(&format!("http://user:pw@{}/there", other.addr)),
            ),
        ],
    );
    env.rules(
        r#".{ .action = "net.fetch.1.0.0.127", .decision = .allow }, .{ .action = "net.fetch.2.0.0.127", .decision = .allow }, .{ .action = "net.fetch.3.0.0.127", .decision = .deny }"#,
    );
    let mut client = env.client(true, &[]);
    let hop = client.call("fetch_url", json!({"url": site.url("/hop")}));
    assert!(
        !hop.is_error && hop.text.contains("from the other host"),
        "{hop:?}"
    );
    assert!(
        hop.text
            .contains(&format!("redirected from {}", site.url("/hop"))),
        "{}",
        hop.text
    );
    env.assert_logged("net.fetch.2.0.0.127", "allow", "rule");
    let same = client.call("fetch_url", json!({"url": site.url("/same")}));
    assert!(same.text.contains("same host"), "{same:?}");
    // A hop no rule names is refused, not asked, even though this client can ask.
    let unnamed = client.call("fetch_url", json!({"url": site.url("/to-unnamed")}));
    assert!(
        unnamed.is_error && unnamed.text.contains("a redirect hop is never asked"),
        "{unnamed:?}"
    );
    assert!(
        client.elicited.is_empty(),
        "nobody was asked: {:?}",
        client.elicited
    );
    env.assert_logged("net.fetch.4.0.0.127", "ask", "nobody");
    let to_denied = client.call("fetch_url", json!({"url": site.url("/to-denied")}));
    assert!(
        to_denied.is_error && to_denied.text.contains("net.fetch.3.0.0.127 is denied"),
        "{to_denied:?}"
    );
    assert!(
        denied.hits("/no").is_empty(),
        "the denied host was never contacted"
    );
    let looped = client.call("fetch_url", json!({"url": site.url("/loop")}));
    assert!(
        looped.is_error && looped.text.contains("redirected more than"),
        "{looped:?}"
    );
    let creds = client.call("fetch_url", json!({"url": site.url("/creds")}));
    assert!(
        creds.is_error && creds.text.contains("sends no credential"),
        "{creds:?}"
    );
}

#[test]
fn fetch_url_sends_nothing_but_a_get_and_honours_robots_txt() {
    let env = Env::new();
    let robots = "User-agent: *\nDisallow: /private\n\nUser-agent: chock\nDisallow: /not-for-chock\nAllow: /not-for-chock/ok\n";
    let site = Site::start(
        "127.0.0.1",
        vec![
            ("/robots.txt", Page::ok(robots)),
            ("/open", Page::ok("open page")),
            ("/not-for-chock", Page::ok("x")),
            ("/not-for-chock/ok", Page::ok("allowed again")),
            ("/private", Page::ok("x")),
        ],
    );
    let broken = Site::start(
        "127.0.0.2",
        vec![("/robots.txt", Page::status(503)), ("/p", Page::ok("x"))],
    );
    let no_robots = Site::start("127.0.0.3", vec![("/p", Page::ok("no robots.txt here"))]);
    env.rules(r#".{ .action = "net.fetch.*", .decision = .allow }"#);
    let mut client = env.client(false, &[]);
    let open = client.call("fetch_url", json!({"url": site.url("/open")}));
    assert!(
        !open.is_error && open.text.contains("open page"),
        "{open:?}"
    );
    let head = site.hits("/open").pop().expect("the request");
    assert!(head.starts_with("GET /open HTTP/1.1\r\n"), "{head}");
    let lower = head.to_ascii_lowercase();
    for header in [
        "authorization",
        "cookie",
        "content-length",
        "proxy-authorization",
    ] {
        assert!(
            !lower.contains(&format!("\r\n{header}:")),
            "{header} was sent: {head}"
        );
    }
    assert!(lower.contains("user-agent: chock/"), "{head}");
    // The agent's group wins over `*`: /private is not in it, /not-for-chock is.
    assert!(
        !client
            .call("fetch_url", json!({"url": site.url("/private")}))
            .is_error
    );
    let refused = client.call("fetch_url", json!({"url": site.url("/not-for-chock")}));
    assert!(
        refused.is_error && refused.text.contains("robots.txt"),
        "{refused:?}"
    );
    assert!(
        site.hits("/not-for-chock").is_empty(),
        "a page robots.txt disallows is not requested"
    );
    assert!(
        !client
            .call("fetch_url", json!({"url": site.url("/not-for-chock/ok")}))
            .is_error
    );
    assert_eq!(
        site.hits("/robots.txt").len(),
        1,
        "robots.txt is read once per site"
    );
    let failing = client.call("fetch_url", json!({"url": broken.url("/p")}));
    assert!(
        failing.is_error && failing.text.contains("503"),
        "{failing:?}"
    );
    assert!(broken.hits("/p").is_empty());
    assert!(
        !client
            .call("fetch_url", json!({"url": no_robots.url("/p")}))
            .is_error
    );
}

#[test]
fn fetch_url_reads_at_most_its_bound() {
    let env = Env::new();
    let big = "y".repeat(3 << 20);
    let site = Site::start(
        "127.0.0.1",
        vec![("/big", Page::ok(&big)), ("/missing-ok", Page::ok("z"))],
    );
    env.rules(r#".{ .action = "net.fetch.*", .decision = .allow }"#);
    let mut client = env.client(false, &[]);
    let whole = client.call("fetch_url", json!({"url": site.url("/big")}));
    assert!(!whole.is_error);
    assert!(
        whole.text.contains("1048576 bytes, cut at 1048576"),
        "{}",
        &whole.text[..200]
    );
    assert!(whole.text.len() < (1 << 20) + 1000);
    let small = client.call(
        "fetch_url",
        json!({"url": site.url("/big"), "max_bytes": 10}),
    );
    assert!(
        small.text.contains("10 bytes, cut at 10") && small.text.ends_with(&"y".repeat(10)),
        "{small:?}"
    );
    let missing = client.call("fetch_url", json!({"url": site.url("/nothing")}));
    assert!(
        missing.is_error && missing.text.contains("404"),
        "{missing:?}"
    );
    // A name is never followed to this machine's own addresses.
    let local = client.call(
        "fetch_url",
        json!({"url": format!("http://localhost:{}/big", site.addr.port())}),
    );
    assert!(
        local.is_error
            && local
                .text
                .contains("resolves to no address outside this machine"),
        "{local:?}"
    );
}

#[test]
fn the_added_latency_of_a_read_file_call_is_small() {
    // Not a benchmark (docs/benchmarks.md has the measured figure and the
    // command): a guard that one call stays well under a tenth of a second.
    let env = project_with_files();
    let mut client = env.client(false, &[]);
    client.call("read_file", json!({"path": "a.txt"}));
    let start = std::time::Instant::now();
    for _ in 0..50 {
        assert!(!client.call("read_file", json!({"path": "a.txt"})).is_error);
    }
    let each = start.elapsed() / 50;
    assert!(
        each < Duration::from_millis(100),
        "one read_file call took {each:?}"
    );
}

#[test]
fn the_server_ends_when_the_client_closes_stdin() {
    let env = project_with_files();
    let mut child = env
        .chock()
        .arg("mcp")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("spawn");
    drop(child.stdin.take());
    let status = child.wait().expect("wait");
    let mut out = String::new();
    BufReader::new(child.stdout.take().expect("stdout"))
        .read_to_string(&mut out)
        .ok();
    assert!(
        status.success() || status.code() == Some(1),
        "{status:?} {out}"
    );
    let sockets = std::fs::read_dir(env.approve_dir())
        .map(|d| d.count())
        .unwrap_or(0);
    assert_eq!(
        sockets, 0,
        "the approve socket is removed when the server ends"
    );
}

/// `chock approve` at a terminal reads an apply's diff through `$PAGER`
/// first, then asks with the question's lines above the diff.
#[test]
fn chock_approve_at_a_terminal_pages_the_apply_s_diff_then_asks() {
    use sandbox_fixture::git_stdout as git;
    let env = Env::new();
    env.write("a.txt", "hello\n");
    env.zon(
        ".{ .policy = .{ .rules = .{ .{ .action = \"workspace.apply\", .decision = .ask } } } }\n",
    );
    git(&env.project, &["init", "-q", "-b", "main"]);
    git(&env.project, &["add", "."]);
    git(&env.project, &["commit", "-q", "-m", "init"]);
    let mut client = env.client(false, &["--workspace", "--ask-timeout", "20"]);
    let wrote = client.call(
        "write_file",
        json!({"path": "new.txt", "content": "from the agent\n"}),
    );
    assert!(!wrote.is_error, "{wrote:?}");
    let mut approver = Approver::on_terminal(&env);
    approver.wait_for("watching chock mcp");
    std::thread::scope(|scope| {
        let driver = scope.spawn(move || client.call("request_apply", json!({})));
        let shown = approver.wait_for("`n REASON`");
        let paged = shown
            .find("+from the agent")
            .unwrap_or_else(|| panic!("the diff was paged: {shown}"));
        let asked = shown.rfind("question ").expect("the question");
        assert!(
            paged < asked,
            "the pager shows the diff before the prompt: {shown}"
        );
        assert!(
            shown[asked..].contains("(the diff was shown in your pager)"),
            "{shown}"
        );
        assert!(!shown[asked..].contains("+from the agent"), "{shown}");
        approver.answer("y");
        let applied = driver.join().expect("the client");
        assert!(!applied.is_error, "{applied:?}");
    });
    assert_eq!(env.read("new.txt").as_deref(), Some("from the agent\n"));
    env.assert_logged("workspace.apply", "allow", "person");
}

#[test]
fn a_workspace_server_works_on_its_copy_until_request_apply_lands_it() {
    use sandbox_fixture::git_stdout as git;
    let env = Env::new();
    env.write("a.txt", "hello\n");
    env.write("secret.env", "TOPSECRET\n");
    env.zon(
        ".{ .deny_read = .{ \"secret.env\" }, .policy = .{ .rules = .{ .{ .action = \"workspace.apply\", .decision = .allow } } } }\n",
    );
    git(&env.project, &["init", "-q", "-b", "main"]);
    git(&env.project, &["add", "."]);
    git(&env.project, &["commit", "-q", "-m", "init"]);
    let mut client = env.client(false, &["--workspace"]);
    assert!(client.tool_names().iter().any(|n| n == "request_apply"));
    let wrote = client.call(
        "write_file",
        json!({"path": "new.txt", "content": "agent\n"}),
    );
    assert!(!wrote.is_error, "{wrote:?}");
    let ran = client.call(
        "run_command",
        json!({"argv": ["sh", "-c", "cat new.txt; cat secret.env; echo more >> a.txt"]}),
    );
    assert!(
        ran.text.contains("agent") && !ran.text.contains("TOPSECRET"),
        "{ran:?}"
    );
    let read = client.call("read_file", json!({"path": "secret.env"}));
    assert!(read.is_error && read.text.contains("deny_read"), "{read:?}");
    assert_eq!(
        env.read("new.txt"),
        None,
        "the project is untouched before the apply"
    );
    assert_eq!(env.read("a.txt").as_deref(), Some("hello\n"));
    let applied = client.call("request_apply", json!({}));
    assert!(!applied.is_error, "{applied:?}");
    assert!(applied.text.contains("applied: main"), "{applied:?}");
    assert_eq!(env.read("new.txt").as_deref(), Some("agent\n"));
    assert_eq!(env.read("a.txt").as_deref(), Some("hello\nmore\n"));
    assert_eq!(env.read("secret.env").as_deref(), Some("TOPSECRET\n"));
    env.assert_logged("workspace.apply", "allow", "rule");
    // Work after the apply, then the session is killed: the work is kept.
    let wrote = client.call(
        "write_file",
        json!({"path": "later.txt", "content": "later\n"}),
    );
    assert!(!wrote.is_error, "{wrote:?}");
    drop(client);
    let listed = env
        .chock()
        .arg("workspace")
        .output()
        .expect("chock workspace");
    let listed = String::from_utf8_lossy(&listed.stdout).into_owned();
    assert!(
        listed.contains("mcp-") && listed.contains("1 file changed and not committed"),
        "{listed}"
    );
}

#[path = "mcp_support/mod.rs"]
mod support;

/// Whether the store holds a path whose name (after the hash) is `name`.
fn in_store_named(name: &str) -> bool {
    let suffix = format!("-{name}");
    std::fs::read_dir("/nix/store")
        .expect("the store")
        .filter_map(Result::ok)
        .any(|e| e.file_name().to_string_lossy().ends_with(&suffix))
}

fn require_daemon() {
    chock_testkit::require_nix_daemon(&chock_store::daemon::socket_path());
}

/// A project whose flake builds one package with /bin/sh (no nixpkgs).
fn flake_project(rules: &str) -> (Env, Vec<String>) {
    require_daemon();
    let env = Env::new();
    let system = chock_sandbox::devshell::system();
    let nonce = format!(
        "{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos())
    );
    env.write(
        "flake.nix",
        &format!(
            r#"{{
  outputs = {{ self }}: {{
    packages.{system}.default = derivation {{
      name = "mcp-built-{nonce}";
      system = "{system}";
      builder = "/bin/sh";
      args = [ "-c" "echo built > $out" ];
    }};
  }};
}}
"#
        ),
    );
    env.rules(rules);
    let attribute = vec!["packages".to_string(), system, "default".to_string()];
    (env, attribute)
}

/// The `out` path a nix_build answer names.
fn out_path(answer: &str) -> String {
    answer
        .split("out: ")
        .nth(1)
        .and_then(|o| o.split_whitespace().next())
        .map(|o| o.trim_end_matches('.').to_string())
        .unwrap_or_else(|| panic!("no out path in {answer}"))
}

fn build_action(attribute: &[String]) -> String {
    format!("nix.build.{}", attribute.join("."))
}

#[test]
fn nix_build_on_allow_builds_through_the_daemon() {
    let (env, attribute) = flake_project(r#".{ .action = "nix.build.*", .decision = .allow }"#);
    let mut client = env.client(false, &[]);
    let built = client.call("nix_build", json!({"attribute": attribute}));
    assert!(!built.is_error, "{built:?}");
    assert!(
        built
            .text
            .contains("was built. It produced out: /nix/store/"),
        "{}",
        built.text
    );
    let line = env.last_logged(&build_action(&attribute));
    assert_eq!(line["decision"], "allow");
    assert_eq!(line["tool"], "nix_build");
    assert_eq!(line["route"], "mcp", "the tool server's builds log as mcp");
}

#[test]
fn nix_build_on_deny_builds_nothing() {
    let (env, attribute) = flake_project(r#".{ .action = "nix.build.*", .decision = .deny }"#);
    let mut client = env.client(true, &[]);
    let refused = client.call("nix_build", json!({"attribute": attribute}));
    assert!(refused.is_error, "{refused:?}");
    assert!(
        refused.text.contains(&build_action(&attribute)),
        "{}",
        refused.text
    );
    assert!(client.elicited.is_empty(), "a deny asks nobody");
    assert_eq!(
        env.last_logged(&build_action(&attribute))["decision"],
        "deny"
    );
}

#[test]
fn nix_build_on_ask_asks_through_elicitation_and_chock_approve() {
    let (env, attribute) = flake_project(r#".{ .action = "nix.build.*", .decision = .ask }"#);
    let action = build_action(&attribute);
    let mut client = env.client(true, &[]);
    client.elicit_answers.push(person_says(false));
    let refused = client.call("nix_build", json!({"attribute": attribute}));
    assert!(
        refused.is_error && refused.text.contains("said no"),
        "{refused:?}"
    );
    let message = client.elicited[0]["params"]["message"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(message.contains(&action), "{message}");
    assert_eq!(env.last_logged(&action)["answered_by"], "person");
    client.elicit_answers.push(person_says(true));
    let built = client.call("nix_build", json!({"attribute": attribute}));
    assert!(
        !built.is_error && built.text.contains("was built"),
        "{built:?}"
    );
    drop(client);
    // The same question through chock approve, for a client that cannot elicit.
    let (question, built) =
        answered_in_chock_approve(&env, "nix_build", json!({"attribute": attribute}));
    assert!(question.contains(&action), "{question}");
    assert!(
        !built.is_error && built.text.contains("was built"),
        "{built:?}"
    );
    let line = env.last_logged(&action);
    assert_eq!(
        (line["decision"].clone(), line["answered_by"].clone()),
        (json!("allow"), json!("person")),
        "{line}"
    );
}

#[test]
fn a_run_command_the_client_cancels_is_killed() {
    let env = project_with_files();
    let mut client = env.client(false, &[]);
    let script = "echo started > started.txt; sleep 3; echo survived > survived.txt";
    client.send(&json!({"jsonrpc": "2.0", "id": 900, "method": "tools/call",
        "params": {"name": "run_command", "arguments": {"argv": ["sh", "-c", script]}}}));
    let deadline = std::time::Instant::now() + support::WAIT;
    while env.read("started.txt").is_none() {
        assert!(
            std::time::Instant::now() < deadline,
            "the command never started: {}",
            client.stderr()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    client.send(
        &json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": 900, "reason": "the person pressed Escape"}}),
    );
    std::thread::sleep(Duration::from_secs(5));
    assert_eq!(
        env.read("survived.txt"),
        None,
        "the command ran on after its call was cancelled"
    );
    assert!(
        !client.call("read_file", json!({"path": "a.txt"})).is_error,
        "still serving"
    );
}

#[test]
fn a_server_that_cannot_start_says_why_and_exits_1() {
    let env = project_with_files();
    let bad_name = env
        .chock()
        .args(["mcp", "--name", "my.server"])
        .stdin(Stdio::null())
        .output()
        .expect("run");
    assert_eq!(bad_name.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&bad_name.stderr);
    assert!(
        stderr.contains("the server name `my.server` cannot name"),
        "{stderr}"
    );
    std::fs::write(
        env.project.join("chock.zon"),
        ".{ .policy = .{ .rules = .{ .{ .actoin = \"x\" } } } }\n",
    )
    .expect("zon");
    let bad_policy = env
        .chock()
        .arg("mcp")
        .stdin(Stdio::null())
        .output()
        .expect("run");
    assert_eq!(bad_policy.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&bad_policy.stderr);
    assert!(
        stderr.contains("chock.zon:1:") && stderr.contains("actoin"),
        "the fault names the file and line: {stderr}"
    );
    assert!(
        bad_policy.stdout.is_empty(),
        "nothing is served with half a policy"
    );
}

#[test]
fn agent_review_is_asked_of_a_person_and_agent_then_human_is_refused() {
    let env = project_with_files();
    env.rules(
        r#".{ .action = "call.read_file", .decision = .agent_review }, .{ .action = "call.write_file", .decision = .agent_then_human }"#,
    );
    let mut client = env.client(true, &[]);
    client.elicit_answers.push(person_says(true));
    let read = client.call("read_file", json!({"path": "a.txt"}));
    assert!(!read.is_error, "{read:?}");
    assert_eq!(client.elicited.len(), 1);
    env.assert_logged("call.read_file", "allow", "person");
    let write = client.call("write_file", json!({"path": "x.txt", "content": "x"}));
    assert!(
        write.is_error
            && write
                .text
                .contains("needs a reviewer agent and then a person"),
        "{write:?}"
    );
    assert_eq!(env.read("x.txt"), None);
    env.assert_logged("call.write_file", "agent_then_human", "nobody");
}

/// A file name an agent chose with a terminal escape (erase the line) and
/// a carriage return in it reaches the person in `chock approve` written
/// as those escapes: it can neither hide nor forge part of the question.
#[test]
fn chock_approve_shows_control_characters_an_agent_chose_as_their_escapes() {
    let env = project_with_files();
    ask_rules(&env);
    let name = "a\u{1b}[2K\rallowed.txt";
    let (question, written) =
        answered_in_chock_approve(&env, "write_file", json!({"path": name, "content": "x"}));
    assert!(!written.is_error, "{written:?}");
    assert!(
        !question.contains('\u{1b}') && !question.contains('\r'),
        "{question:?}"
    );
    assert!(question.contains(r"a\u{1b}[2K\rallowed.txt"), "{question}");
    assert_eq!(env.read(name).as_deref(), Some("x"));
}

#[test]
fn chock_approve_with_no_server_says_so() {
    let env = Env::new();
    let listed = env
        .chock()
        .args(["approve", "--list"])
        .output()
        .expect("run");
    assert_eq!(listed.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&listed.stderr);
    assert!(
        stderr.contains("no chock mcp server of yours is running"),
        "{stderr}"
    );
}

#[test]
fn ctrl_c_ends_chock_approve_with_the_terminals_echo_back_on() {
    let env = Env::new();
    // chock approve on a pseudo-terminal whose echo is off (as while a
    // password is typed); after Ctrl-C, `stty -a` shows the mode it left.
    let template = env.chock();
    let command = format!(
        "stty -echo; {} approve; echo \"exit $?\"; stty -a",
        template.get_program().to_string_lossy()
    );
    let mut script = std::process::Command::new("script");
    script.args(["-qec", &command, "/dev/null"]);
    for (key, value) in template.get_envs() {
        match value {
            Some(value) => script.env(key, value),
            None => script.env_remove(key),
        };
    }
    if let Some(dir) = template.get_current_dir() {
        script.current_dir(dir);
    }
    // `script` runs the line with $SHELL. Ctrl-C signals the terminal's
    // whole process group: a non-interactive dash dies of it at once,
    // where bash waits for chock as a person's shell would.
    script.env("SHELL", "/bin/bash");
    let mut child = script
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("script (util-linux) runs");
    let mut stdin = child.stdin.take().expect("stdin");
    std::thread::sleep(Duration::from_millis(1500));
    stdin.write_all(b"\x03").expect("type Ctrl-C");
    std::thread::sleep(Duration::from_millis(1000));
    drop(stdin);
    let out = child.wait_with_output().expect("wait");
    let shown = String::from_utf8_lossy(&out.stdout);
    assert!(shown.contains("waiting for questions"), "{shown}");
    assert!(shown.contains("exit 130"), "{shown}");
    assert!(
        shown.split_whitespace().any(|word| word == "echo"),
        "the terminal was left without its echo: {shown}"
    );
}

#[test]
fn before_initialize_a_request_is_answered_and_a_notification_ends_nothing() {
    let env = project_with_files();
    let mut child = env
        .chock()
        .arg("mcp")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("spawn");
    let mut stdin = child.stdin.take().expect("stdin");
    let mut stdout = std::io::BufReader::new(child.stdout.take().expect("stdout"));
    writeln!(
        stdin,
        r#"{{"jsonrpc":"2.0","method":"notifications/initialized"}}"#
    )
    .expect("write");
    let mut exchange = |line: &str| -> Value {
        writeln!(stdin, "{line}").expect("write");
        stdin.flush().expect("flush");
        let mut reply = String::new();
        std::io::BufRead::read_line(&mut stdout, &mut reply).expect("read");
        serde_json::from_str(&reply).unwrap_or_else(|e| panic!("{e}: {reply:?}"))
    };
    let ping = exchange(r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#);
    assert_eq!(ping["result"], json!({}), "{ping}");
    let early = exchange(r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#);
    assert!(
        early["error"]["code"].is_i64(),
        "a request before initialize is answered with an error: {early}"
    );
    let init = exchange(
        r#"{"jsonrpc":"2.0","id":3,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#,
    );
    assert_eq!(init["result"]["protocolVersion"], "2025-11-25", "{init}");
    child.kill().ok();
    child.wait().ok();
}

#[test]
fn calls_sent_together_are_all_answered_and_the_log_stays_one_chain() {
    let env = project_with_files();
    let mut client = env.client(false, &[]);
    let ids: Vec<i64> = (1000..1040).collect();
    for id in &ids {
        let (name, arguments) = if id % 2 == 0 {
            ("read_file", json!({"path": "a.txt"}))
        } else {
            (
                "write_file",
                json!({"path": format!("many/{id}.txt"), "content": id.to_string()}),
            )
        };
        client.send(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": name, "arguments": arguments}}));
    }
    for id in &ids {
        let reply = client.response(&json!(id));
        assert_eq!(reply["result"]["isError"], false, "{reply}");
    }
    for id in ids.iter().filter(|id| *id % 2 == 1) {
        assert_eq!(env.read(&format!("many/{id}.txt")), Some(id.to_string()));
    }
    assert_eq!(
        env.logged("call.read_file").len() + env.logged("call.write_file").len(),
        ids.len()
    );
    let verify = env
        .chock()
        .args(["log", "verify"])
        .output()
        .expect("verify");
    assert!(
        verify.status.success(),
        "{}",
        String::from_utf8_lossy(&verify.stdout)
    );
}

#[test]
fn fetch_url_reads_https_with_the_trust_store_and_refuses_a_certificate_it_cannot_trust() {
    use chock_inputs::testing::{Reply, Server, TestCa};
    let ca = TestCa::new();
    let server = Server::https(&ca);
    server.route("/secure", Reply::Body(b"over tls".to_vec()));
    let env = Env::new();
    let pem = env.outside().join("ca.pem");
    ca.write_pem(&pem);
    env.rules(r#".{ .action = "net.fetch.1.0.0.127", .decision = .allow }"#);
    let url = format!("https://127.0.0.1:{}/secure", server.port());
    let mut trusting = env.client_with_env(false, &[], &[("SSL_CERT_FILE", &pem)]);
    let read = trusting.call("fetch_url", json!({"url": url}));
    assert!(!read.is_error && read.text.contains("over tls"), "{read:?}");
    let mut other = env.client_with_env(
        false,
        &[],
        &[("SSL_CERT_FILE", std::path::Path::new("/dev/null"))],
    );
    let refused = other.call("fetch_url", json!({"url": url}));
    assert!(
        refused.is_error && refused.text.to_lowercase().contains("certificate"),
        "{refused:?}"
    );
}

/// A project in git whose flake has a dev shell built with no nixpkgs (the
/// sandbox fixture's kind), a package whose `bin/` holds the static escape
/// probe (so it runs in any sandbox) under a fresh name, one with no
/// programs, and a locked input `tools` (a flake of its own) with the same
/// probe package. Returns the environment and the system.
fn provide_project(rules: &str) -> (Env, String) {
    require_daemon();
    let env = Env::with_flake();
    let system = chock_sandbox::devshell::system();
    let nonce = chock_inputs::testing::nonce();
    let probe_package = |name: &str| {
        format!(
            r#"derivation {{
        name = "{name}-{nonce}"; system = "{system}"; builder = "/bin/sh";
        PATH = "/usr/bin:/bin"; probe = ./probe;
        args = [ "-c" "mkdir -p $out/bin && cp $probe $out/bin/probe && chmod 755 $out/bin/probe" ];
      }}"#
        )
    };
    // The fixture's flake (its dev shell) stays whole, as base.nix.
    std::fs::rename(env.project.join("flake.nix"), env.project.join("base.nix"))
        .expect("move the fixture's flake");
    let tools = env.project.join("tools");
    env.write(
        "flake.nix",
        &format!(
            r#"{{
  inputs.tools.url = "path:{tools}";
  outputs = {{ self, tools }}: let
    base = (import ./base.nix).outputs {{ inherit self; }};
    system = "{system}";
  in base // {{
    packages.${{system}} = base.packages.${{system}} // {{
      probe = {probe};
      data = derivation {{
        name = "provided-data-{nonce}"; inherit system; builder = "/bin/sh";
        args = [ "-c" "echo data > $out" ];
      }};
    }};
  }};
}}
"#,
            tools = tools.display(),
            probe = probe_package("provided-probe"),
        ),
    );
    env.write(
        "tools/flake.nix",
        &format!(
            "{{\n  outputs = {{ self }}: {{\n    packages.{system}.probe = {};\n  }};\n}}\n",
            probe_package("input-probe")
        ),
    );
    for place in [env.project.join("probe"), tools.join("probe")] {
        std::fs::copy(sandbox_fixture::probe_binary(), place).expect("copy the probe");
    }
    env.rules(rules);
    assert!(sandbox_fixture::git(
        &env.project,
        &["add", "flake.nix", "base.nix", "probe", "tools"]
    ));
    let lock = std::process::Command::new("nix")
        .args([
            "--extra-experimental-features",
            "nix-command flakes",
            "flake",
            "lock",
        ])
        .current_dir(&env.project)
        .env("NIX_REMOTE", "daemon")
        .output()
        .expect("nix flake lock: run scripts/setup");
    assert!(
        lock.status.success(),
        "nix flake lock: {}",
        String::from_utf8_lossy(&lock.stderr)
    );
    assert!(sandbox_fixture::git(&env.project, &["add", "flake.lock"]));
    (env, system)
}

#[test]
fn provide_tool_is_offered_only_when_nix_build_answers_allow_at_start() {
    for (rules, decision, logged) in [
        ("", "ask", false),
        (
            r#".{ .action = "nix.build", .decision = .ask }"#,
            "ask",
            true,
        ),
        (
            r#".{ .action = "nix.build", .decision = .deny }"#,
            "deny",
            true,
        ),
    ] {
        let (env, _) = provide_project(rules);
        let (mut client, init) = env.client_speaking("2025-06-18", true, &[], &[]);
        // Said at start only when a rule said it: nothing named costs no context.
        let instructions = init["result"]["instructions"].as_str().unwrap_or_default();
        assert_eq!(
            instructions.contains("provide_tool is not offered"),
            logged,
            "{rules}: {instructions}"
        );
        let names = client.tool_names();
        assert!(
            !names.iter().any(|n| n == "provide_tool"),
            "{rules}: {names:?}"
        );
        assert!(names.iter().any(|n| n == "nix_build"), "{names:?}");
        let called = client.call(
            "provide_tool",
            json!({"attribute": ["packages", "x86_64-linux", "probe"]}),
        );
        assert!(
            called.is_error
                && called.text.contains(&format!(
                    "provide_tool is not offered: nix.build answered {decision} at start"
                ))
                && called.text.contains("only allow offers it"),
            "{rules}: {called:?}"
        );
        assert!(client.elicited.is_empty(), "a start row asks nobody");
        let lines = env.logged("nix.build");
        assert_eq!(lines.len(), usize::from(logged), "{rules}: {lines:?}");
        if logged {
            assert_eq!(lines[0]["decision"], decision);
        }
    }
    let (env, _) = provide_project(r#".{ .action = "nix.build", .decision = .allow }"#);
    let mut client = env.client(false, &[]);
    assert!(client.tool_names().iter().any(|n| n == "provide_tool"));
    // Read at start, before a client has said its name: agent `main`.
    let start = env.last_logged("nix.build");
    assert_eq!(
        (
            start["decision"].as_str(),
            start["answered_by"].as_str(),
            start["agent_kind"].as_str()
        ),
        (Some("allow"), Some("rule"), Some("main")),
        "{start}"
    );
    // The tool's own start row takes it away as it takes any tool away.
    env.rules(
        r#".{ .action = "nix.build", .decision = .allow }, .{ .action = "mcp.chock.tool.provide_tool", .decision = .deny }"#,
    );
    let mut client = env.client(false, &[]);
    assert!(!client.tool_names().iter().any(|n| n == "provide_tool"));
}

#[test]
fn provide_tool_builds_through_the_daemon_and_its_program_runs_under_exec_nix_store() {
    let (env, system) = provide_project(
        r#".{ .action = "nix.build", .decision = .allow }, .{ .action = "nix.build.*", .decision = .allow }"#,
    );
    let attribute = json!(["packages", system, "probe"]);
    let mut client = env.client(true, &[]);
    let provided = client.call("provide_tool", json!({"attribute": attribute}));
    assert!(!provided.is_error, "{provided:?}");
    let program = provided
        .text
        .lines()
        .map(str::trim)
        .find(|l| l.starts_with("/nix/store/") && l.ends_with("/bin/probe"))
        .unwrap_or_else(|| panic!("no program path in {}", provided.text))
        .to_string();
    assert!(
        std::path::Path::new(&program).is_file(),
        "{program} is not in the store"
    );
    assert!(
        provided.text.contains("exec.nix.store"),
        "{}",
        provided.text
    );
    env.assert_logged("call.provide_tool", "allow", "default");
    let build_action = format!("nix.build.packages.{system}.probe");
    let line = env.last_logged(&build_action);
    assert_eq!(
        (&line["route"], &line["tool"], &line["decision"]),
        (&json!("mcp"), &json!("provide_tool"), &json!("allow")),
        "{line}"
    );
    // The program runs in the sandbox, asked under exec.nix.store.* (never
    // exec.devshell.*): the probe with no attack prints its usage, exit 2.
    client.elicit_answers.push(person_says(true));
    let ran = client.call("run_command", json!({"argv": [program]}));
    assert!(
        ran.text.contains("exit status 2") && ran.text.contains("usage: escape_probe"),
        "{ran:?}"
    );
    let asked = client.elicited[0]["params"]["message"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(asked.contains("wants exec.nix.store."), "{asked}");
    let exec_line = env
        .log_lines()
        .into_iter()
        .rfind(|l| {
            l["route"] == "mcp"
                && l["action"]
                    .as_str()
                    .is_some_and(|a| a.starts_with("exec.nix.store.") && a.ends_with(".bin.probe"))
        })
        .unwrap_or_else(|| panic!("no exec.nix.store line: {:#?}", env.log_lines()));
    assert_eq!(
        (&exec_line["decision"], &exec_line["answered_by"]),
        (&json!("allow"), &json!("person"))
    );
    drop(client);
    // A session that did not provide it is not shown it: the path is not
    // in its sandbox, so the same command cannot run there.
    let mut fresh = env.client(true, &[]);
    fresh.elicit_answers.push(person_says(true));
    let not_there = fresh.call("run_command", json!({"argv": [program]}));
    assert!(
        not_there.is_error && !not_there.text.contains("usage: escape_probe"),
        "{not_there:?}"
    );
}

#[test]
fn provide_tool_refuses_what_is_not_a_program_and_obeys_its_call_row() {
    let (env, system) = provide_project(
        r#".{ .action = "nix.build", .decision = .allow }, .{ .action = "nix.build.*", .decision = .allow }, .{ .action = "call.provide_tool", .decision = .ask }"#,
    );
    let mut client = env.client(true, &[]);
    // Asked under call.provide_tool first; a no builds nothing.
    client.elicit_answers.push(person_says(false));
    let refused = client.call(
        "provide_tool",
        json!({"attribute": ["packages", system, "probe"]}),
    );
    assert!(
        refused.is_error
            && refused
                .text
                .contains("refused by a person: call.provide_tool"),
        "{refused:?}"
    );
    assert!(
        !env.log_lines()
            .iter()
            .any(|l| l["action"] == format!("nix.build.packages.{system}.probe")),
        "a refused call reached the build"
    );
    client.elicit_answers.push(person_says(true));
    let no_programs = client.call(
        "provide_tool",
        json!({"attribute": ["packages", system, "data"]}),
    );
    assert!(
        no_programs.is_error && no_programs.text.contains("has no programs"),
        "{no_programs:?}"
    );
    for (arguments, says) in [
        (
            json!({"attribute": ["packages.x86_64-linux.probe"]}),
            "one name holding dots",
        ),
        (
            json!({"attribute": ["probe"], "input": "nixpkgs"}),
            "has no input `nixpkgs`; its inputs are tools",
        ),
        (json!({"attribute": ["probe"], "input": "a.b"}), "`input`"),
        (
            json!({"installable": "nixpkgs#ripgrep"}),
            "it takes attribute, input",
        ),
    ] {
        let called = client.call("provide_tool", arguments.clone());
        assert!(
            called.is_error && called.text.contains(says),
            "{arguments}: {called:?}"
        );
    }
    assert_eq!(client.elicited.len(), 2, "bad arguments ask nobody");
}

#[test]
fn provide_tool_builds_from_an_input_of_the_lock_under_its_own_action() {
    let (env, system) = provide_project(
        r#".{ .action = "nix.build", .decision = .allow }, .{ .action = "nix.build.inputs.tools.*", .decision = .allow }, .{ .action = "nix.build.packages.*", .decision = .deny }"#,
    );
    let mut client = env.client(false, &[]);
    let provided = client.call(
        "provide_tool",
        json!({"attribute": ["packages", system, "probe"], "input": "tools"}),
    );
    assert!(
        !provided.is_error
            && provided.text.contains("-input-probe-")
            && provided.text.contains("/bin/probe"),
        "{provided:?}"
    );
    assert!(
        provided
            .text
            .starts_with(&format!("tools#packages.{system}.probe")),
        "{}",
        provided.text
    );
    let line = env.last_logged(&format!("nix.build.inputs.tools.packages.{system}.probe"));
    assert_eq!(
        (&line["route"], &line["decision"]),
        (&json!("mcp"), &json!("allow")),
        "{line}"
    );
    // The project's own package is another action, which a rule denies.
    let refused = client.call(
        "provide_tool",
        json!({"attribute": ["packages", system, "probe"]}),
    );
    assert!(
        refused.is_error
            && refused
                .text
                .contains(&format!("nix.build.packages.{system}.probe")),
        "{refused:?}"
    );
}

#[test]
fn nix_build_fetches_a_missing_input_after_one_question_and_evaluates_once_more() {
    use chock_inputs::testing::{Reply, Server as InputServer, Tree};
    require_daemon();
    let env = Env::new();
    let tag = format!("mcp-input-{}", chock_inputs::testing::nonce());
    let tree = Tree::new("pkg", &[("hello", format!("{tag}\n").as_bytes(), false)]);
    let server = InputServer::http();
    server.route("/pkg.tar.gz", Reply::Body(tree.tar_gz()));
    let url = server.url("/pkg.tar.gz");
    env.write(
        "flake.nix",
        &format!(
            r#"{{
  inputs.pkg = {{ url = "{url}"; flake = false; }};
  outputs = {{ self, pkg }}: {{
    packages.x86_64-linux.default = derivation {{
      name = "mcp-with-input"; system = "x86_64-linux"; builder = "/bin/sh";
      args = [ "-c" "read x < ${{pkg}}/hello; echo $x > $out" ];
    }};
  }};
}}
"#
        ),
    );
    let locked = json!({ "type": "tarball", "url": url, "narHash": tree.nar_hash() });
    let mut lock: Value =
        serde_json::from_str(&chock_inputs::testing::flake_lock(&[("pkg", locked)]))
            .expect("a lock");
    lock["nodes"]["pkg"]["flake"] = json!(false);
    env.write("flake.lock", &lock.to_string());
    env.rules(r#".{ .action = "nix.build.packages.*", .decision = .allow }"#);
    let attribute = json!(["packages", "x86_64-linux", "default"]);
    let mut client = env.client(true, &[]);
    // No: nothing is fetched; the input, the answer and the rule are named.
    client.elicit_answers.push(person_says(false));
    let refused = client.call("nix_build", json!({"attribute": attribute}));
    let port = url
        .split(':')
        .nth(2)
        .and_then(|p| p.split('/').next())
        .expect("a port");
    let host_rule =
        format!(r#".{{ .action = "nix.net.eval.localhost.{port}", .decision = .allow }}"#);
    assert!(
        refused.is_error
            && refused.text.contains("(for pkg)")
            && refused.text.contains("answered deny by a person")
            && refused.text.contains(&host_rule),
        "{refused:?}"
    );
    assert!(server.requests().is_empty(), "fetched without a yes");
    let asked = client.elicited[0]["params"]["message"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(
        asked.contains("nix.net"),
        "the hosts' one question: {asked}"
    );
    drop(client);
    // Yes (in a new session: a host refused is not asked again in one).
    let mut client = env.client(true, &[]);
    client.elicit_answers.push(person_says(true));
    let built = client.call("nix_build", json!({"attribute": attribute}));
    assert!(!built.is_error, "{built:?}");
    assert_eq!(
        client.elicited.len(),
        1,
        "one question for the input's host"
    );
    assert_eq!(server.requests(), vec!["/pkg.tar.gz".to_owned()]);
    assert_eq!(
        std::fs::read_to_string(out_path(&built.text)).expect("the output"),
        format!("{tag}\n")
    );
    let host_lines: Vec<Value> = env
        .log_lines()
        .into_iter()
        .filter(|l| {
            l["action"]
                .as_str()
                .is_some_and(|a| a.starts_with("nix.net"))
        })
        .collect();
    // Each session start put the host to the rules with nobody asked
    // (route `inputs`): no rule answers it, so nothing was fetched then.
    assert!(
        host_lines
            .iter()
            .all(|l| (l["route"] == "mcp" && l["tool"] == "nix_build")
                || (l["route"] == "inputs" && l["decision"] != "allow")),
        "{host_lines:#?}"
    );
    assert!(
        host_lines
            .iter()
            .any(|l| l["decision"] == "allow" && l["answered_by"] == "person"),
        "{host_lines:#?}"
    );
}

#[test]
fn provide_tool_on_deny_builds_nothing_and_on_ask_reaches_chock_approve() {
    let (env, system) = provide_project(
        r#".{ .action = "nix.build", .decision = .allow }, .{ .action = "nix.build.*", .decision = .allow }, .{ .action = "call.provide_tool", .decision = .deny }"#,
    );
    let attribute = json!(["packages", system, "probe"]);
    let build_action = format!("nix.build.packages.{system}.probe");
    let mut client = env.client(true, &[]);
    let denied = client.call("provide_tool", json!({"attribute": attribute}));
    assert!(
        denied.is_error
            && denied
                .text
                .contains("refused: call.provide_tool is denied by"),
        "{denied:?}"
    );
    assert!(client.elicited.is_empty(), "a deny asks nobody");
    env.assert_logged("call.provide_tool", "deny", "rule");
    assert!(
        !env.log_lines().iter().any(|l| l["action"] == build_action),
        "a denied call reached the build"
    );
    drop(client);
    // Ask, for a client that cannot elicit: the question goes to chock approve.
    env.rules(
        r#".{ .action = "nix.build", .decision = .allow }, .{ .action = "nix.build.*", .decision = .allow }, .{ .action = "call.provide_tool", .decision = .ask }"#,
    );
    let (question, provided) =
        answered_in_chock_approve(&env, "provide_tool", json!({"attribute": attribute}));
    assert!(
        question.contains("provide_tool wants call.provide_tool")
            && question.contains(&format!(".#packages.{system}.probe")),
        "{question}"
    );
    assert!(
        !provided.is_error && provided.text.contains("/bin/probe"),
        "{provided:?}"
    );
    env.assert_logged("call.provide_tool", "allow", "person");
    assert_eq!(env.last_logged(&build_action)["decision"], "allow");
}

#[test]
fn a_nix_build_the_client_cancels_withdraws_its_question_and_builds_nothing() {
    let (env, attribute) = flake_project(r#".{ .action = "nix.build.*", .decision = .ask }"#);
    let action = build_action(&attribute);
    let mut client = env.client(false, &[]);
    let mut approver = Approver::start(&env);
    approver.wait_for("watching chock mcp");
    client.send(&json!({"jsonrpc": "2.0", "id": 901, "method": "tools/call",
        "params": {"name": "nix_build", "arguments": {"attribute": attribute}}}));
    let question = approver.wait_for("allow it once? [y/N]");
    assert!(question.contains(&action), "{question}");
    client.send(
        &json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": 901, "reason": "the person pressed Escape"}}),
    );
    approver.wait_for("withdrawn");
    // The build asked nothing more and built nothing: its one line says
    // nobody answered (chock-nix logs it with the rules' ask).
    let deadline = std::time::Instant::now() + support::WAIT;
    let line = loop {
        if let Some(line) = env.log_lines().into_iter().rfind(|l| l["action"] == action) {
            break line;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the cancelled build never logged its answer"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(
        (&line["decision"], &line["answered_by"], &line["route"]),
        (&json!("ask"), &json!("nobody"), &json!("mcp")),
        "{line}"
    );
    // A yes typed now answers nothing: the prompt left with the question.
    approver.answer("y");
    assert!(
        !client
            .call("read_file", json!({"path": "flake.nix"}))
            .is_error,
        "still serving"
    );
    let flake = env.read("flake.nix").unwrap_or_default();
    let name = flake
        .split('"')
        .find(|part| part.starts_with("mcp-built-"))
        .expect("the derivation's name")
        .to_string();
    assert!(!in_store_named(&name), "a cancelled build built its output");
}

#[test]
fn elicitation_is_spoken_in_each_revision_that_has_it_and_a_newer_client_is_answered_2025_11_25() {
    let env = project_with_files();
    env.rules(r#".{ .action = "call.read_file", .decision = .ask }"#);
    for version in ["2025-06-18", "2025-11-25"] {
        let (mut client, init) = env.client_speaking(version, true, &[], &[]);
        assert_eq!(init["result"]["protocolVersion"], version, "{init}");
        client.elicit_answers.push(person_says(true));
        let read = client.call("read_file", json!({"path": "a.txt"}));
        assert!(
            !read.is_error && read.text == "hello\n",
            "{version}: {read:?}"
        );
        assert_eq!(client.elicited.len(), 1, "{version}: asked in the client");
    }
    // 2026-07-28 has no initialize and no requests from server to client
    // during a call: the server answers with the newest revision it speaks.
    let (mut client, init) = env.client_speaking("2026-07-28", true, &[], &[]);
    assert_eq!(init["result"]["protocolVersion"], "2025-11-25", "{init}");
    client.elicit_answers.push(person_says(true));
    let read = client.call("read_file", json!({"path": "a.txt"}));
    assert!(!read.is_error, "{read:?}");
    assert_eq!(client.elicited.len(), 1);
}

#[test]
fn what_nix_build_produced_is_shown_to_later_commands_under_exec_nix_store() {
    let (env, system) = provide_project(r#".{ .action = "nix.build.*", .decision = .allow }"#);
    let mut client = env.client(true, &[]);
    let built = client.call(
        "nix_build",
        json!({"attribute": ["packages", system, "probe"]}),
    );
    assert!(
        !built.is_error && built.text.contains("run_command is shown these outputs"),
        "{built:?}"
    );
    let out = out_path(&built.text);
    client.elicit_answers.push(person_says(true));
    let ran = client.call("run_command", json!({"argv": [format!("{out}/bin/probe")]}));
    assert!(
        ran.text.contains("usage: escape_probe"),
        "the built program runs: {ran:?}"
    );
    let asked = client.elicited[0]["params"]["message"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(asked.contains("wants exec.nix.store."), "{asked}");
}

/// run_command in a project whose dev shell needs a locked input the store
/// lacks: the input is fetched as nix_build fetches it, after one question
/// for its host. A person's no refuses the command naming the rule, with
/// nothing fetched or run; a yes (in a new session) fetches it once, and
/// the command runs in the shell built with it.
#[test]
fn run_command_fetches_a_dev_shell_input_missing_from_the_store_after_one_question() {
    use chock_inputs::testing::{Reply, Server as InputServer, Tree, nonce};
    require_daemon();
    let env = Env::with_flake();
    std::fs::copy(sandbox_fixture::probe_binary(), env.project.join("probe"))
        .expect("copy the probe");
    // A new tree each run, so the store never holds it already.
    let tag = format!("mcp-shell-input-{}", nonce());
    let tree = Tree::new("pkg", &[("hello", format!("{tag}\n").as_bytes(), false)]);
    let server = InputServer::http();
    server.route("/pkg.tar.gz", Reply::Body(tree.tar_gz()));
    let url = server.url("/pkg.tar.gz");
    sandbox_fixture::shell_with_tarball_input(&env.project, &url, &tree.nar_hash());
    let host = format!("nix.net.eval.localhost.{}", server.port());
    let rule = format!(r#".{{ .action = "{host}", .decision = .allow }}"#);
    let command = json!({"argv": ["./probe", "env"]});

    let mut client = env.client(true, &[]);
    client.elicit_answers.push(person_says(false));
    let refused = client.call("run_command", command.clone());
    assert!(
        refused.is_error && refused.text.contains(&rule) && refused.text.contains("pkg"),
        "the refusal names the input and the rule for its host: {refused:?}"
    );
    assert!(!refused.text.contains("PKG="), "nothing ran: {refused:?}");
    assert!(server.requests().is_empty(), "fetched without a yes");
    let asked = client.elicited[0]["params"]["message"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(asked.contains(&host), "the host's one question: {asked}");
    let logged = env.last_logged(&host);
    assert_eq!(logged["route"], "mcp", "{logged}");
    assert_eq!(logged["decision"], "deny", "{logged}");
    assert_eq!(logged["answered_by"], "person", "{logged}");
    drop(client);

    let mut client = env.client(true, &[]);
    client.elicit_answers.push(person_says(true));
    let ran = client.call("run_command", command);
    assert!(
        !ran.is_error && ran.text.contains("exit status 0"),
        "{ran:?}"
    );
    assert_eq!(
        client.elicited.len(),
        1,
        "one question for the input's host"
    );
    assert_eq!(server.requests(), vec!["/pkg.tar.gz".to_owned()]);
    let pkg = ran
        .text
        .lines()
        .find_map(|l| l.split("PKG=").nth(1).map(str::to_owned))
        .unwrap_or_else(|| panic!("the shell's PKG: {ran:?}"));
    assert!(pkg.starts_with("/nix/store/"), "{pkg}");
    let read = client.call(
        "run_command",
        json!({"argv": ["./probe", "read", format!("{pkg}/hello")]}),
    );
    assert!(
        read.text.contains(&format!("read {} bytes", tag.len() + 1)),
        "the fetched input is the shell's, inside the sandbox: {read:?}"
    );
    assert_eq!(
        server.requests().len(),
        1,
        "the built shell fetches nothing more"
    );
}

/// Claude Code in print mode answers every elicitation `cancel` at once: no
/// person said no. The act is refused naming the rule, logged as answered
/// by the client, and with `chock approve` watching the question goes there.
#[test]
fn a_cancelled_question_is_not_a_persons_no_and_falls_back_to_chock_approve() {
    let env = project_with_files();
    ask_rules(&env);
    let mut client = env.client(true, &[]);
    client.elicit_answers.push(json!({"action": "cancel"}));
    let called = client.call("write_file", json!({"path": "out/new.txt", "content": "x"}));
    assert!(called.is_error, "{called:?}");
    assert!(
        !called.text.contains("refused by a person")
            && called.text.contains("dismissed the question")
            && called
                .text
                .contains(r#".{ .action = "call.write_file", .decision = .allow }"#),
        "{}",
        called.text
    );
    assert_eq!(env.read("out/new.txt"), None);
    env.assert_logged("call.write_file", "ask", "client");
    drop(client);

    let client = {
        let mut client = env.client(true, &[]);
        client.elicit_answers.push(json!({"action": "cancel"}));
        client
    };
    let mut approver = Approver::start(&env);
    approver.wait_for("watching chock mcp");
    let called = std::thread::scope(|scope| {
        let driver = scope.spawn(move || {
            let mut client = client;
            client.call(
                "write_file",
                json!({"path": "out/new.txt", "content": "approved\n"}),
            )
        });
        approver.wait_for("allow it once? [y/N]");
        approver.answer("y");
        driver.join().expect("client")
    });
    assert!(!called.is_error, "{called:?}");
    assert_eq!(env.read("out/new.txt").as_deref(), Some("approved\n"));
    env.assert_logged("call.write_file", "allow", "person");
}

/// agent_then_human is never lifted by a person's yes alone, on any call
/// of the tool server: not on a file tool, and not on a build it makes.
#[test]
fn agent_then_human_is_refused_on_every_tool_with_nobody_asked() {
    let env = project_with_files();
    env.rules(
        r#".{ .action = "call.*", .decision = .agent_then_human },
           .{ .action = "exec.*", .decision = .agent_then_human },
           .{ .action = "net.*", .decision = .agent_then_human }"#,
    );
    let site = page_site();
    let mut client = env.client(true, &[]);
    for (tool, args, action) in every_tool(&site) {
        client.elicit_answers.push(person_says(true));
        let called = client.call(tool, args);
        assert!(
            called.is_error && called.text.contains("reviewer agent"),
            "{tool}: {called:?}"
        );
        check_not_done(&env, tool);
        env.assert_logged(&action, "agent_then_human", "nobody");
    }
    assert!(
        client.elicited.is_empty(),
        "nobody is asked: {:?}",
        client.elicited
    );
    assert!(site.hits("/page").is_empty());
}

/// A person's yes does not lift agent_then_human on nix.build.* either:
/// the build is refused by its rule with nobody asked, and nothing is built.
#[test]
fn nix_build_on_agent_then_human_asks_nobody_and_builds_nothing() {
    let (env, attribute) =
        flake_project(r#".{ .action = "nix.build.*", .decision = .agent_then_human }"#);
    let mut client = env.client(true, &[]);
    client.elicit_answers.push(person_says(true));
    let refused = client.call("nix_build", json!({"attribute": attribute}));
    assert!(
        refused.is_error && refused.text.contains("reviewer agent"),
        "{refused:?}"
    );
    assert!(client.elicited.is_empty(), "{:?}", client.elicited);
    let line = env.last_logged(&build_action(&attribute));
    assert_eq!(
        (line["decision"].as_str(), line["answered_by"].as_str()),
        (Some("agent_then_human"), Some("nobody"))
    );
}

/// Links the agent can make itself (with run_command) to reach what only a
/// person edits: `selflink -> .`, `notes/up -> ..`, and a hard link to
/// chock.zon. Every write and edit through them is refused, and chock.zon
/// is left as it was.
#[test]
fn a_link_to_the_workspace_root_never_reaches_chock_zon() {
    let env = project_with_files();
    env.rules(r#".{ .action = "call.*", .decision = .allow }, .{ .action = "exec.*", .decision = .allow }"#);
    let policy = env.read("chock.zon").expect("chock.zon");
    let mut client = env.client(false, &[]);
    // The agent makes the links itself.
    let made = client.call(
        "run_command",
        json!({"argv": ["sh", "-c", "ln -s . selflink && mkdir -p notes && ln -s .. notes/up && echo made"]}),
    );
    assert!(made.text.contains("made"), "{made:?}");
    // A hard link the sandbox would not let the agent make (chock.zon is
    // its own read-only mount there), made here to show the file is known
    // by what it is, not by its name.
    std::fs::hard_link(
        env.project.join("chock.zon"),
        env.project.join("notes/hard"),
    )
    .expect("hard link");
    for path in [
        "selflink/chock.zon",
        "notes/up/chock.zon",
        "selflink/selflink/chock.zon",
        "notes/hard",
    ] {
        let written = client.call("write_file", json!({"path": path, "content": ".{}"}));
        assert!(written.is_error, "{path}: {written:?}");
        assert!(
            written.text.contains("symbolic link")
                || written.text.contains("only a person edits it"),
            "{path}: {}",
            written.text
        );
        let edited = client.call(
            "edit_file",
            json!({"path": path, "old_string": "call.*", "new_string": "net.*"}),
        );
        assert!(edited.is_error, "{path}: {edited:?}");
    }
    assert_eq!(env.read("chock.zon").as_deref(), Some(policy.as_str()));
}

/// nix_eval reads the project beneath its root: a link exchanged, between
/// the evaluator's check of a path and its read, with one to a file outside
/// the project never leads the read out of it.
#[test]
fn nix_eval_never_reads_through_a_link_exchanged_after_its_check() {
    let env = project_with_files();
    let mut client = env.client(false, &[]);
    sandbox_fixture::race_a_link_out(&env.project, 8, || {
        let called = client.call("nix_eval", json!({"expression": "builtins.readFile ./x"}));
        (!called.is_error, called.text)
    });
}

/// A folder swapped with a link to .git by renameat2(RENAME_EXCHANGE) in a
/// loop while write_file writes `sub/config` hundreds of times: the write
/// lands in the real folder or is refused, and .git/config never changes.
#[test]
fn a_folder_exchanged_with_a_link_to_git_never_lets_a_write_into_git() {
    let env = project_with_files();
    assert!(sandbox_fixture::git(&env.project, &["init", "-q"]));
    let config = env.read(".git/config").expect("config");
    std::fs::create_dir(env.project.join("sub")).expect("sub");
    std::os::unix::fs::symlink(".git", env.project.join("swap")).expect("link");
    let mut client = env.client(false, &[]);
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let swapper = sandbox_fixture::exchanging(
        vec![(env.project.join("sub"), env.project.join("swap"))],
        &stop,
    );
    let mut written = 0;
    for i in 0..300 {
        let called = client.call(
            "write_file",
            json!({"path": "sub/config", "content": format!("[core]\n\tfsmonitor = planted-{i}\n")}),
        );
        if !called.is_error {
            written += 1;
        }
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let swaps = swapper.join().expect("swapper");
    assert!(swaps > 100, "the race ran ({swaps} exchanges)");
    assert!(written > 0, "some writes landed in the real folder");
    assert_eq!(
        env.read(".git/config").as_deref(),
        Some(config.as_str()),
        "a write reached .git/config"
    );
}

/// edit_file while another process appends to the same file: every
/// appended line is still there, and every edit that answered done is in.
#[test]
fn edit_file_keeps_what_a_concurrent_appender_wrote() {
    let env = project_with_files();
    env.write("log.txt", "head-0\n");
    let mut client = env.client(false, &[]);
    let file = env.project.join("log.txt");
    const LINES: usize = 2000;
    let appender = std::thread::spawn(move || {
        for i in 0..LINES {
            let mut f = std::fs::OpenOptions::new()
                .append(true)
                .open(&file)
                .expect("open for append");
            // One write per line, as `echo line >> file` makes.
            f.write_all(format!("line-{i}\n").as_bytes())
                .expect("append");
        }
    });
    let mut head = 0;
    for next in 1..=60 {
        let called = client.call(
            "edit_file",
            json!({"path": "log.txt", "old_string": format!("head-{head}\n"), "new_string": format!("head-{next}\n")}),
        );
        if !called.is_error {
            head = next;
        } else {
            assert!(called.text.contains("kept changing"), "{called:?}");
        }
    }
    appender.join().expect("appender");
    let text = env.read("log.txt").expect("log.txt");
    assert!(
        text.starts_with(&format!("head-{head}\n")),
        "{}",
        &text[..40]
    );
    let lost: Vec<usize> = (0..LINES)
        .filter(|i| !text.contains(&format!("line-{i}\n")))
        .collect();
    assert!(
        lost.is_empty(),
        "{} appended lines were lost: {:?}",
        lost.len(),
        &lost[..lost.len().min(10)]
    );
    assert!(head > 40, "most edits went through ({head})");
}

/// run_command kills a program still running at its time limit and says
/// so; an argument outside its advertised bounds is refused, naming the
/// bound; an unknown tool is a JSON-RPC error (-32602), not a tool result.
#[test]
fn run_command_has_a_time_limit_bounds_are_kept_and_an_unknown_tool_is_a_protocol_error() {
    let env = project_with_files();
    env.rules(r#".{ .action = "exec.*", .decision = .allow }"#);
    let mut client = env.client(false, &[]);
    let started = std::time::Instant::now();
    let slow = client.call(
        "run_command",
        json!({"argv": ["sh", "-c", "echo begun; sleep 1005"], "timeout_seconds": 2}),
    );
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "{:?}",
        started.elapsed()
    );
    assert!(
        slow.is_error && slow.text.contains("killed after 2 s") && slow.text.contains("begun"),
        "{slow:?}"
    );
    let tools = client.request("tools/list", json!({}));
    let schema = tools["result"]["tools"]
        .as_array()
        .and_then(|t| t.iter().find(|t| t["name"] == "run_command"))
        .map(|t| t["inputSchema"]["properties"]["timeout_seconds"].clone())
        .expect("run_command");
    assert_eq!(schema["maximum"], 3600, "{schema}");
    for (tool, args, expected) in [
        (
            "run_command",
            json!({"argv": ["true"], "timeout_seconds": 0}),
            "`timeout_seconds` is 0, outside its bounds (from 1 to 3600)",
        ),
        (
            "run_command",
            json!({"argv": ["true"], "timeout_seconds": 3601}),
            "outside its bounds",
        ),
        (
            "grep",
            json!({"pattern": "x", "max_results": 100000}),
            "`max_results` is 100000, outside its bounds",
        ),
        (
            "read_file",
            json!({"path": "a.txt", "offset": 0}),
            "`offset` is 0, outside its bounds",
        ),
        (
            "fetch_url",
            json!({"url": "http://127.0.0.1/", "max_bytes": 0}),
            "outside its bounds",
        ),
    ] {
        let called = client.call(tool, args.clone());
        assert!(
            called.is_error && called.text.contains(expected),
            "{tool} {args}: {called:?}"
        );
    }
    let unknown = client.request(
        "tools/call",
        json!({"name": "no_such_tool", "arguments": {}}),
    );
    assert_eq!(unknown["error"]["code"], -32602, "{unknown}");
    assert!(
        unknown["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("no_such_tool")),
        "{unknown}"
    );
}

#[test]
fn run_command_reads_a_shell_script_per_segment_and_git_as_the_git_reading() {
    let env = project_with_files();
    env.write("important/keep.txt", "keep\n");
    env.write("sub/x.txt", "x\n");
    env.rules(r#".{ .action = "exec.path.rm", .decision = .deny }"#);
    let mut client = env.client(false, &[]);
    let called = client.call(
        "run_command",
        json!({"argv": ["sh", "-c", "cd sub && rm -rf ../important"]}),
    );
    assert!(called.is_error, "{called:?}");
    assert!(
        called.text.contains("exec.path.rm") && called.text.contains("chock.zon:1"),
        "{}",
        called.text
    );
    assert_eq!(env.read("important/keep.txt").as_deref(), Some("keep\n"));
    env.assert_logged("exec.path.sh", "allow", "default");
    env.assert_logged("exec.path.cd", "allow", "default");
    env.assert_logged("exec.path.rm", "deny", "rule");
    // git push is git.push, which no default allows: nobody to ask, refused.
    let called = client.call(
        "run_command",
        json!({"argv": ["git", "push", "origin", "main"]}),
    );
    assert!(called.is_error, "{called:?}");
    assert!(called.text.contains("git.push"), "{}", called.text);
    let line = env.logged("git.push").pop().expect("git.push is logged");
    assert_eq!(line["subject"], "git push");
}

/// A policy package the project's policy loads.
const PACKAGE: &str = ".{ .id = \"p\", .version = \"1.0.0\", .summary = \"s\", .hooks = .{ \"tool\" }, .rules = .{ .{ .action = \"call.lsp\", .decision = .deny } } }\n";

/// Every control input of a project (what configures Chock, what an agent
/// or editor runs, what runs on the host), as a path the file tools are
/// given, and what the test writes there first (so edit_file has a file).
const CONTROL_INPUTS: [(&str, Option<&str>); 16] = [
    ("chock.lock", Some("as the person wrote it\n")),
    (".agents/policies/p/manifest.zon", Some(PACKAGE)),
    (".chock/settings.zon", Some("as the person wrote it\n")),
    (".claude/settings.json", None),
    (".codex/hooks.json", None),
    (".gemini/settings.json", None),
    (".cursor/hooks.json", None),
    (".vscode/tasks.json", Some("as the person wrote it\n")),
    (".idea/workspace.xml", None),
    (".mcp.json", None),
    (".envrc", Some("as the person wrote it\n")),
    (".husky/pre-commit", Some("as the person wrote it\n")),
    (".pre-commit-config.yaml", None),
    ("lefthook.yml", None),
    (".lefthook.yaml", None),
    (".agents/policies/evil/manifest.zon", None),
];

/// The file tools write no control input of the person's project, by any
/// path to it: as named, through `..`, through a folder link the agent
/// made; each refusal says what the file is, and nothing is made or
/// changed.
#[test]
fn the_file_tools_never_write_a_control_input_of_the_person_s_project() {
    let env = project_with_files();
    env.rules(r#".{ .action = "call.*", .decision = .allow }"#);
    for (path, made) in CONTROL_INPUTS {
        if let Some(text) = made {
            env.write(path, text);
        }
    }
    std::os::unix::fs::symlink(".agents/policies", env.project.join("pol")).expect("link");
    std::os::unix::fs::symlink("../.husky", env.project.join("src/hooks")).expect("link");
    let before = tree_of(&env.project);
    let mut client = env.client(false, &[]);
    for (path, made) in CONTROL_INPUTS {
        for given in [
            path.to_owned(),
            format!("src/../{path}"),
            format!("./src/./../{path}"),
            env.project.join(path).display().to_string(),
        ] {
            let written = client.call(
                "write_file",
                json!({"path": given, "content": "{\"hooks\": \"planted\"}\n"}),
            );
            assert!(
                written.is_error && written.text.contains("control input"),
                "write_file {given}: {written:?}"
            );
            if let Some(text) = made {
                let edited = client.call(
                    "edit_file",
                    json!({"path": given, "old_string": &text[..4], "new_string": "planted"}),
                );
                assert!(
                    edited.is_error && edited.text.contains("control input"),
                    "edit_file {given}: {edited:?}"
                );
            }
        }
    }
    for (given, through) in [
        ("pol/evil/manifest.zon", "a link to .agents/policies"),
        ("pol/p/manifest.zon", "a link to .agents/policies"),
        ("src/hooks/pre-commit", "a link to .husky"),
    ] {
        let written = client.call("write_file", json!({"path": given, "content": "x"}));
        assert!(
            written.is_error && written.text.contains("symbolic link"),
            "{given} ({through}): {written:?}"
        );
        let edited = client.call(
            "edit_file",
            json!({"path": given, "old_string": ".{", "new_string": "x"}),
        );
        assert!(edited.is_error, "{given} ({through}): {edited:?}");
    }
    assert_eq!(
        tree_of(&env.project),
        before,
        "a control input was made or changed"
    );
    // A name that only begins like one is the agent's.
    for path in [
        ".envrc.example",
        ".agents/notes/x.md",
        "docs/.claude/x",
        "lefthook.yml.bak",
    ] {
        let written = client.call("write_file", json!({"path": path, "content": "x"}));
        assert!(!written.is_error, "{path}: {written:?}");
    }
}

/// Every file and folder under `dir`, with a regular file's bytes and a
/// link's target, sorted.
fn tree_of(dir: &std::path::Path) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(at) = stack.pop() {
        for entry in std::fs::read_dir(&at).expect("list").flatten() {
            let path = entry.path();
            let rel = path
                .strip_prefix(dir)
                .expect("beneath")
                .display()
                .to_string();
            let kind = entry.file_type().expect("type");
            let what = if kind.is_symlink() {
                format!("-> {}", std::fs::read_link(&path).expect("link").display())
            } else if kind.is_dir() {
                stack.push(path);
                "/".to_owned()
            } else {
                String::from_utf8_lossy(&std::fs::read(&path).expect("read")).into_owned()
            };
            out.push((rel, what));
        }
    }
    out.sort();
    out
}

/// Folders exchanged with links to control inputs by
/// renameat2(RENAME_EXCHANGE) in a loop, and a file exchanged with a link
/// to `.envrc`, while write_file and edit_file go at them hundreds of
/// times: each write lands in the real folder or file or is refused, and
/// no control input gains or changes a thing.
#[test]
fn folders_exchanged_with_links_to_control_inputs_never_let_a_write_in() {
    let env = project_with_files();
    env.write(".agents/policies/p/manifest.zon", PACKAGE);
    env.write(".claude/settings.json", "{}\n");
    env.write(".envrc", "use flake\n");
    env.write("note", "note\n");
    for dir in ["sub", "sub2"] {
        std::fs::create_dir(env.project.join(dir)).expect("mkdir");
    }
    let link = |target: &str, name: &str| {
        std::os::unix::fs::symlink(target, env.project.join(name)).expect("link");
    };
    link(".agents/policies", "swap");
    link(".claude", "swap2");
    link(".envrc", "envlink");
    let controls = |env: &Env| {
        let mut tree = tree_of(&env.project.join(".agents"));
        tree.extend(tree_of(&env.project.join(".claude")));
        tree.push((".envrc".into(), env.read(".envrc").unwrap_or_default()));
        tree
    };
    let before = controls(&env);
    let mut client = env.client(false, &[]);
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let swapper = sandbox_fixture::exchanging(
        vec![
            (env.project.join("sub"), env.project.join("swap")),
            (env.project.join("sub2"), env.project.join("swap2")),
            (env.project.join("note"), env.project.join("envlink")),
        ],
        &stop,
    );
    let mut landed = 0;
    for i in 0..200 {
        for (tool, args) in [
            (
                "write_file",
                json!({"path": format!("sub/evil{i}/manifest.zon"), "content": "planted"}),
            ),
            (
                "write_file",
                json!({"path": "sub2/settings.local.json", "content": "planted"}),
            ),
            (
                "write_file",
                json!({"path": "note", "content": "planted\n"}),
            ),
            (
                "edit_file",
                json!({"path": "note", "old_string": "\n", "new_string": "\nplanted\n"}),
            ),
        ] {
            if !client.call(tool, args).is_error {
                landed += 1;
            }
        }
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let swaps = swapper.join().expect("swapper");
    assert!(swaps > 100, "the race ran ({swaps} exchanges)");
    assert!(
        landed > 0,
        "some writes landed in the real folders and file"
    );
    assert_eq!(controls(&env), before, "a write reached a control input");
}

/// Five edit_file calls of one file in flight together, round after round,
/// from two tool servers at once (three and two), while another process
/// appends 5,000 lines to it: every appended line is there exactly once,
/// and every edit that answered done is in.
#[test]
fn five_edits_in_flight_and_an_appender_lose_no_line() {
    const EDITORS: usize = 5;
    const LINES: usize = 5000;
    let env = project_with_files();
    let counters: String = (0..EDITORS).map(|e| format!("counter-{e}=0\n")).collect();
    env.write("log.txt", &counters);
    let mut clients = [env.client(false, &[]), env.client(false, &[])];
    let file = env.project.join("log.txt");
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let appending = done.clone();
    let appender = std::thread::spawn(move || {
        for i in 0..LINES {
            let mut f = std::fs::OpenOptions::new()
                .append(true)
                .open(&file)
                .expect("open for append");
            // One write per line, as `echo line >> file` makes.
            f.write_all(format!("line-{i}\n").as_bytes())
                .expect("append");
            if !appending.load(std::sync::atomic::Ordering::Relaxed) {
                std::thread::sleep(Duration::from_micros(1500));
            }
        }
    });
    let mut values = [0usize; EDITORS];
    let mut next_id = 50_000;
    let mut rounds = 0;
    while !appender.is_finished() && rounds < 40 {
        rounds += 1;
        let ids: Vec<(usize, i64)> = (0..EDITORS)
            .map(|e| {
                next_id += 1;
                clients[e % 2].send(
                    &json!({"jsonrpc": "2.0", "id": next_id, "method": "tools/call",
                    "params": {"name": "edit_file", "arguments": {
                        "path": "log.txt",
                        "old_string": format!("counter-{e}={}\n", values[e]),
                        "new_string": format!("counter-{e}={}\n", values[e] + 1)}}}),
                );
                (e, next_id)
            })
            .collect();
        for (e, id) in ids {
            let reply = clients[e % 2].response(&json!(id));
            if reply["result"]["isError"] == false {
                values[e] += 1;
            } else {
                let text = reply["result"]["content"][0]["text"].as_str().unwrap_or("");
                assert!(text.contains("kept changing"), "{reply}");
            }
        }
    }
    done.store(true, std::sync::atomic::Ordering::Relaxed);
    appender.join().expect("appender");
    let text = env.read("log.txt").expect("log.txt");
    let mut seen = vec![0usize; LINES];
    for line in text.lines() {
        if let Some(n) = line.strip_prefix("line-") {
            seen[n.parse::<usize>().expect("a line number")] += 1;
        }
    }
    let lost: Vec<usize> = (0..LINES).filter(|i| seen[*i] == 0).collect();
    let twice: Vec<usize> = (0..LINES).filter(|i| seen[*i] > 1).collect();
    assert!(
        lost.is_empty() && twice.is_empty(),
        "{} appended lines lost ({:?}), {} written twice ({:?})",
        lost.len(),
        &lost[..lost.len().min(10)],
        twice.len(),
        &twice[..twice.len().min(10)]
    );
    for (e, value) in values.iter().enumerate() {
        assert_eq!(
            text.matches(&format!("counter-{e}=")).count(),
            1,
            "counter {e}: {text:.200}"
        );
        assert!(
            text.contains(&format!("counter-{e}={value}\n")),
            "edit {e} answered done {value} times"
        );
    }
    let edits: usize = values.iter().sum();
    assert!(
        rounds >= 5 && edits > rounds * EDITORS / 2,
        "edits were in flight together while lines were appended ({edits} of {} in {rounds} rounds)",
        rounds * EDITORS
    );
}

/// A server with no MCP server behind it declares only tools, and answers
/// every resources, prompts and logging method -32601, as for any method it does
/// not have: raw JSON-RPC, and through the MCP Python SDK's client where
/// it is installed.
#[test]
fn a_server_that_declares_only_tools_answers_nothing_else() {
    let env = project_with_files();
    let (mut client, init) = env.client_speaking("2025-06-18", false, &[], &[]);
    let declared = init["result"]["capabilities"]
        .as_object()
        .expect("capabilities");
    assert!(declared.contains_key("tools"), "{init}");
    for other in ["resources", "prompts", "completions", "logging"] {
        assert!(!declared.contains_key(other), "{other} declared: {init}");
    }
    for (method, params) in [
        ("logging/setLevel", json!({"level": "debug"})),
        ("resources/list", json!({})),
        ("resources/read", json!({"uri": "file:///etc/passwd"})),
        ("resources/templates/list", json!({})),
        ("prompts/list", json!({})),
        ("prompts/get", json!({"name": "x"})),
    ] {
        let reply = client.request(method, params);
        assert_eq!(reply["error"]["code"], -32601, "{method}: {reply}");
        assert!(reply.get("result").is_none(), "{method}: {reply}");
    }
    // The server goes on.
    assert_eq!(
        client.call("read_file", json!({"path": "a.txt"})).text,
        "hello\n"
    );
    drop(client);

    let sdk = std::process::Command::new("python3")
        .args(["-c", "import mcp"])
        .output();
    if !sdk.is_ok_and(|o| o.status.success()) {
        eprintln!("the MCP Python SDK is not installed: checked with raw JSON-RPC only");
        return;
    }
    let chock = env.chock();
    let vars: serde_json::Map<String, Value> = chock
        .get_envs()
        .filter_map(|(k, v)| Some((k.to_str()?.to_owned(), json!(v?.to_str()?))))
        .chain([(
            "PATH".to_owned(),
            json!(std::env::var("PATH").unwrap_or_default()),
        )])
        .collect();
    let script = r#"
import asyncio, json, sys
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.shared.exceptions import McpError

async def main():
    spec = json.loads(sys.argv[1])
    server = StdioServerParameters(command=spec["program"], args=["mcp"], env=spec["env"], cwd=spec["cwd"])
    async with stdio_client(server) as (read, write):
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            caps = init.capabilities
            print("declared", caps.tools is not None, caps.resources is not None, caps.prompts is not None)
            for name, call in [("resources/list", session.list_resources()),
                               ("prompts/list", session.list_prompts()),
                               ("prompts/get", session.get_prompt("x")),
                               ("resources/templates/list", session.list_resource_templates())]:
                try:
                    await call
                    print(name, "answered")
                except McpError as e:
                    print(name, e.error.code)
            tools = await session.list_tools()
            print("tools", len(tools.tools) > 0)

asyncio.run(main())
"#;
    let spec = json!({
        "program": chock.get_program().to_str().expect("program"),
        "env": vars,
        "cwd": env.project,
    });
    let out = std::process::Command::new("python3")
        .args(["-c", script, &spec.to_string()])
        .output()
        .expect("python3");
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{said}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        said.lines().collect::<Vec<_>>(),
        vec![
            "declared True False False",
            "resources/list -32601",
            "prompts/list -32601",
            "prompts/get -32601",
            "resources/templates/list -32601",
            "tools True",
        ],
        "{said}"
    );
}

/// A program that holds a lock on a file cannot hang edit_file: the edit
/// waits its bound for its turn, then refuses with nothing written; once
/// the lock is let go the edit goes through.
#[test]
fn an_edit_of_a_file_held_locked_refuses_after_its_bound() {
    let env = project_with_files();
    let mut client = env.client(false, &[]);
    let held = std::fs::File::open(env.project.join("a.txt")).expect("open");
    rustix::fs::flock(&held, rustix::fs::FlockOperation::LockExclusive).expect("flock");
    let started = std::time::Instant::now();
    let edit = json!({"path": "a.txt", "old_string": "hello", "new_string": "edited"});
    let called = client.call("edit_file", edit.clone());
    let took = started.elapsed();
    assert!(
        called.is_error && called.text.contains("stayed locked"),
        "{called:?}"
    );
    assert!(
        took >= Duration::from_secs(9) && took < Duration::from_secs(20),
        "{took:?}"
    );
    assert_eq!(env.read("a.txt").as_deref(), Some("hello\n"));
    drop(held);
    let called = client.call("edit_file", edit);
    assert!(!called.is_error, "{called:?}");
    assert_eq!(env.read("a.txt").as_deref(), Some("edited\n"));
}

/// The tool server holds the placeholders of the project's missing control
/// inputs for its whole session: its commands find them made (none is made
/// and removed per command, and none can be planted between two), and
/// once the server is gone the next sandbox's end removes them.
#[test]
fn the_tool_server_holds_the_placeholders_for_its_session() {
    let env = Env::new();
    env.rules(r#".{ .action = "exec.*", .decision = .allow }"#);
    let mut client = env.client(false, &[]);
    for _ in 0..3 {
        let called = client.call(
            "run_command",
            json!({"argv": ["sh", "-c", "mkdir .vscode/x 2>/dev/null && echo planted || echo held"]}),
        );
        assert!(called.text.contains("held"), "{called:?}");
        assert!(
            env.project.join(".vscode").is_dir(),
            "kept between the session's commands"
        );
    }
    drop(client);
    let out = env
        .chock()
        .args(["exec", "--", "/bin/true"])
        .output()
        .expect("chock exec");
    assert!(out.status.success(), "{out:?}");
    assert!(!env.project.join(".vscode").exists(), "{out:?}");
}

/// run_command's result names the sandbox's paths: the project's own path
/// for the session workspace, `/run/chock/cache` for the cache. The host
/// folders Chock keeps them in (under its state and cache folders) are
/// never shown to the model: not in the first run's notice, not in what
/// the program printed (its mount table names the workspace's source and
/// the task records' folder), in the foreground or in the background.
#[test]
fn run_command_results_name_the_sandboxs_paths_never_the_host_folders_behind_them() {
    use sandbox_fixture::git_stdout as git;
    let env = Env::new();
    env.write("a.txt", "hello\n");
    env.zon(".{}\n");
    git(&env.project, &["init", "-q", "-b", "main"]);
    git(&env.project, &["add", "."]);
    git(&env.project, &["commit", "-q", "-m", "init"]);
    let root = env
        .outside()
        .parent()
        .expect("the fixture's root")
        .to_path_buf();
    let mut client = env.client(false, &["--workspace"]);
    let ran = client.call(
        "run_command",
        json!({"argv": ["sh", "-c", "pwd; cat a.txt; cat /proc/self/mountinfo"]}),
    );
    assert!(!ran.is_error, "{ran:?}");
    let project = env.project.display().to_string();
    assert!(
        ran.text.contains(&format!("{project}\nhello\n")),
        "the workspace is at the project's path: {}",
        ran.text
    );
    assert!(
        ran.text.contains("cache is new: /run/chock/cache"),
        "{}",
        ran.text
    );
    let started = client.call(
        "run_command",
        json!({"argv": ["sh", "-c", "cat /proc/self/mountinfo"], "background": true}),
    );
    assert!(!started.is_error, "{started:?}");
    let output = client.call("task_output", json!({"task": 1, "wait_seconds": 10}));
    assert!(
        output.text.contains("/run/chock/tasks"),
        "the task's own mount table: {output:?}"
    );
    for text in [&ran.text, &started.text, &output.text] {
        for host in ["state", "cache"] {
            let folder = root.join(host).display().to_string();
            assert!(
                !text.contains(&folder),
                "{folder} was shown to the model: {text}"
            );
        }
    }
}

/// Seed 002's session start: `chock mcp` reads flake.lock as it starts,
/// puts the input's host to the `nix.net.eval` rules with nobody asked
/// (logged under route `inputs`), and fetches what they allow before any
/// build wants it: the dev shell's build then fetches nothing. Without a
/// rule nothing is fetched at start and the session still starts; the
/// build that needs the input is the one that asks (here nobody can
/// answer, so it is refused naming the rule), and nothing is fetched.
#[test]
fn flake_inputs_are_fetched_at_session_start_under_the_rules_alone() {
    use chock_inputs::testing::{Reply, Server as InputServer, Tree, nonce};
    let wait_for = |what: &str, done: &dyn Fn() -> bool| {
        let started = std::time::Instant::now();
        while !done() {
            assert!(started.elapsed() < Duration::from_secs(60), "{what}");
            std::thread::sleep(Duration::from_millis(50));
        }
    };
    for allowed in [false, true] {
        let env = Env::with_flake();
        std::fs::copy(sandbox_fixture::probe_binary(), env.project.join("probe")).expect("probe");
        let tag = format!("input-{}", nonce());
        let tree = Tree::new("pkg", &[("hello", format!("{tag}\n").as_bytes(), false)]);
        let server = InputServer::http();
        server.route("/pkg.tar.gz", Reply::Body(tree.tar_gz()));
        sandbox_fixture::shell_with_tarball_input(
            &env.project,
            &server.url("/pkg.tar.gz"),
            &tree.nar_hash(),
        );
        let host = format!("nix.net.eval.localhost.{}", server.port());
        let rule = format!(r#".{{ .action = "{host}", .decision = .allow }}"#);
        env.rules(if allowed { &rule } else { "" });
        let mut client = env.client(false, &["--no-approve"]);
        wait_for("the start's answer is logged", &|| {
            env.log_lines()
                .iter()
                .any(|l| l["action"] == host.as_str() && l["route"] == "inputs")
        });
        let at_start = env
            .log_lines()
            .into_iter()
            .find(|l| l["action"] == host.as_str() && l["route"] == "inputs")
            .expect("logged");
        let ran = client.call("run_command", json!({"argv": ["./probe", "env"]}));
        if allowed {
            assert_eq!(at_start["decision"], "allow", "{at_start}");
            assert_eq!(server.requests(), vec!["/pkg.tar.gz".to_owned()]);
            assert!(!ran.is_error, "{ran:?}");
            assert!(ran.text.contains("PKG=/nix/store/"), "{ran:?}");
            assert_eq!(
                server.requests().len(),
                1,
                "the build found the input in the store"
            );
            assert!(
                !env.log_lines()
                    .iter()
                    .any(|l| l["action"] == host.as_str() && l["route"] != "inputs"),
                "the build asked nothing about the host: {:#?}",
                env.log_lines()
            );
        } else {
            assert_ne!(at_start["decision"], "allow", "{at_start}");
            assert!(ran.is_error, "{ran:?}");
            assert!(ran.text.contains(&rule), "{ran:?}");
            assert!(server.requests().is_empty(), "nothing was fetched");
        }
    }
}
