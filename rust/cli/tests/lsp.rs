//! Language servers for real: `chock mcp` starts pyright (from npm, which
//! `scripts/setup` installs under /usr) in the sandbox a tool call gets,
//! when a tool first needs it, decided at `lsp.pyright-langserver`; its
//! diagnostics after a write, definition, references, hover and symbols;
//! a server killed while calls run fails a call with why, and the next
//! call starts it again; a server that never answers fails within its
//! bound; `lsp.*` denied, and a program whose name is no label, start
//! nothing. Needs user namespaces and Landlock (`scripts/setup`).

mod sandbox_fixture;
#[path = "mcp_support/mod.rs"]
mod support;

use std::time::{Duration, Instant};

use serde_json::json;
use support::Env;

const PYRIGHT: &str = r#".{ .command = .{ "pyright-langserver", "--stdio" }, .language = "python", .extensions = .{ "py" }, .timeout_ms = 60000 }"#;

const PYTHON: &str = "def greet(name: str) -> str:\n    return 'hi ' + name\n\n\nclass Box:\n    def size(self) -> int:\n        return 1\n\n\nprint(greet('a'))\nprint(greet('b'))\n";

fn pyright_installed() -> bool {
    let found = std::path::Path::new("/usr/bin/pyright-langserver").exists();
    if !found {
        eprintln!(
            "SKIPPED: /usr/bin/pyright-langserver is not installed (scripts/setup installs pyright from npm)"
        );
    }
    found
}

/// The five tools' calls allowed (Chock ships no `call.lsp_*` row, so
/// each asks until a rule answers it), and `sandbox.jit`: pyright runs on
/// node, whose JIT maps memory writable and executable, which the sandbox
/// refuses unless `sandbox.jit` allows it.
fn allow_calls() -> String {
    chock_mcp::LSP_TOOLS
        .iter()
        .map(|t| format!(".{{ .action = \"call.{t}\", .decision = .allow }}, "))
        .chain([r#".{ .action = "sandbox.jit", .decision = .allow }, "#.to_owned()])
        .collect()
}

fn env_with(rules: &str, servers: &str) -> Env {
    let env = Env::new();
    let calls = allow_calls();
    env.zon(&format!(
        ".{{ .policy = .{{ .rules = .{{ {calls}{rules} }} }},\n.lsp = .{{ {servers} }} }}\n"
    ));
    env.write("main.py", PYTHON);
    env
}

/// The pids of programs named `name` that descend from this test.
fn descendants_named(name: &str) -> Vec<i32> {
    let me = std::process::id() as i32;
    let parent = |pid: i32| -> Option<i32> {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        let rest = &stat[stat.rfind(')')? + 2..];
        rest.split(' ').nth(1)?.parse().ok()
    };
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").expect("/proc").flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<i32>().ok())
        else {
            continue;
        };
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        if !String::from_utf8_lossy(&cmdline).contains(name) {
            continue;
        }
        let mut at = pid;
        for _ in 0..64 {
            match parent(at) {
                Some(p) if p == me => {
                    found.push(pid);
                    break;
                }
                Some(p) if p > 1 => at = p,
                _ => break,
            }
        }
    }
    found
}

#[test]
fn pyright_diagnoses_a_write_and_answers_definitions_references_hover_and_symbols() {
    if !pyright_installed() {
        return;
    }
    let env = env_with("", PYRIGHT);
    let mut client = env.client(false, &[]);
    let names = client.tool_names();
    for tool in chock_mcp::LSP_TOOLS {
        assert!(names.iter().any(|n| n == tool), "{tool}: {names:?}");
    }

    let clean = client.call("lsp_diagnostics", json!({"path": "main.py"}));
    assert!(!clean.is_error, "{clean:?} {}", client.stderr());
    assert!(clean.text.contains("no diagnostics"), "{}", clean.text);
    let wrote = client.call(
        "write_file",
        json!({"path": "main.py", "content": PYTHON.replace("greet('b')", "greet(3)")}),
    );
    assert!(!wrote.is_error, "{wrote:?}");
    let broken = client.call("lsp_diagnostics", json!({"path": "main.py"}));
    assert!(!broken.is_error, "{broken:?}");
    assert!(
        broken.text.contains("main.py:11:") && broken.text.contains("error"),
        "{}",
        broken.text
    );

    let at_call = json!({"path": "main.py", "line": 10, "column": 8});
    let definition = client.call("lsp_definition", at_call.clone());
    assert_eq!(definition.text.trim(), "main.py:1:5", "{definition:?}");
    let references = client.call("lsp_references", at_call.clone());
    let mut lines: Vec<&str> = references.text.lines().collect();
    lines.sort_unstable();
    assert_eq!(
        lines,
        ["main.py:10:7", "main.py:11:7", "main.py:1:5"],
        "{references:?}"
    );
    let hover = client.call("lsp_hover", at_call);
    assert!(
        hover.text.contains("greet") && hover.text.contains("str"),
        "{hover:?}"
    );
    let symbols = client.call("lsp_symbols", json!({"path": "main.py"}));
    assert!(
        symbols.text.contains("function greet (line 1)")
            && symbols.text.contains("  method size (line 6)"),
        "{}",
        symbols.text
    );

    // A file no server serves says which extensions are served.
    env.write("notes.txt", "x\n");
    let none = client.call("lsp_symbols", json!({"path": "notes.txt"}));
    assert!(none.is_error && none.text.contains("serve .py"), "{none:?}");

    // The start was decided at lsp.<program>, each call at call.<tool>.
    let lines = env.log_lines();
    let actions: Vec<&str> = lines.iter().filter_map(|l| l["action"].as_str()).collect();
    assert_eq!(
        actions
            .iter()
            .filter(|a| **a == "lsp.pyright-langserver")
            .count(),
        1,
        "{actions:?}"
    );
    assert!(actions.contains(&"call.lsp_diagnostics") && actions.contains(&"call.lsp_references"));
    // It ran in the sandbox: a descendant of chock, in a PID namespace of its own.
    let pids = descendants_named("pyright-langserver");
    assert!(!pids.is_empty());
    let ns = |pid: &str| std::fs::read_link(format!("/proc/{pid}/ns/pid")).expect("ns");
    assert_ne!(ns(&pids[0].to_string()), ns("self"));
}

#[test]
fn a_server_killed_while_calls_run_fails_a_call_with_why_and_the_next_call_restarts_it() {
    if !pyright_installed() {
        return;
    }
    let env = env_with("", PYRIGHT);
    let mut client = env.client(false, &[]);
    let at_call = json!({"path": "main.py", "line": 10, "column": 8});
    assert!(!client.call("lsp_references", at_call.clone()).is_error);
    let pids = descendants_named("pyright-langserver");
    assert!(!pids.is_empty(), "the server runs");
    // Killed from another thread while references are asked for again and
    // again, until one call is caught by its end.
    let killer = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(30));
        for pid in pids {
            std::process::Command::new("kill")
                .args(["-9", &pid.to_string()])
                .status()
                .ok();
        }
    });
    let began = Instant::now();
    let failed = loop {
        let called = client.call("lsp_references", at_call.clone());
        if called.is_error {
            break called;
        }
        assert!(
            began.elapsed() < Duration::from_secs(30),
            "the server never ended"
        );
    };
    killer.join().unwrap();
    assert!(
        failed.text.contains("the language server ended")
            && failed.text.contains("the next call starts it again"),
        "{failed:?}"
    );
    let again = client.call("lsp_references", at_call);
    assert!(!again.is_error, "{again:?}");
    assert_eq!(again.text.lines().count(), 3, "{again:?}");
    let starts = env
        .log_lines()
        .iter()
        .filter(|l| l["action"] == "lsp.pyright-langserver")
        .count();
    assert_eq!(starts, 2);
}

#[test]
fn a_server_that_never_answers_fails_within_its_bound_and_is_started_a_bounded_number_of_times() {
    // `sleep` holds its pipes and never says a word.
    let env = env_with(
        "",
        r#".{ .command = .{ "sleep", "600" }, .language = "python", .extensions = .{ "py" }, .timeout_ms = 300 }"#,
    );
    let mut client = env.client(false, &[]);
    for _ in 0..chock_mcp::LSP_MAX_STARTS {
        let began = Instant::now();
        let called = client.call("lsp_symbols", json!({"path": "main.py"}));
        assert!(
            called.is_error
                && called
                    .text
                    .contains("did not answer `initialize` within 0.3 s"),
            "{called:?}"
        );
        assert!(
            began.elapsed() < Duration::from_secs(20),
            "{:?}",
            began.elapsed()
        );
    }
    let refused = client.call("lsp_symbols", json!({"path": "main.py"}));
    assert!(
        refused.is_error && refused.text.contains("is not started again"),
        "{refused:?}"
    );
    // Every server that did not answer was killed.
    std::thread::sleep(Duration::from_millis(200));
    assert!(descendants_named("sleep\u{0}600").is_empty());
}

#[test]
fn a_denied_start_and_a_program_that_is_no_label_start_nothing_and_say_why() {
    let denied = env_with(r#".{ .action = "lsp.*", .decision = .deny }"#, PYRIGHT);
    let mut client = denied.client(false, &[]);
    let refused = client.call("lsp_symbols", json!({"path": "main.py"}));
    assert!(
        refused.is_error && refused.text.contains("lsp.pyright-langserver"),
        "{refused:?}"
    );
    assert!(descendants_named("pyright-langserver").is_empty());

    let unnamed = env_with(
        "",
        r#".{ .command = .{ "/usr/bin/python3.real" }, .language = "python", .extensions = .{ "py" } }"#,
    );
    let mut client = unnamed.client(false, &[]);
    let refused = client.call("lsp_symbols", json!({"path": "main.py"}));
    assert!(
        refused.is_error
            && refused.text.contains("does not start")
            && refused.text.contains("python3.real"),
        "{refused:?}"
    );
}

#[test]
fn a_call_no_rule_answers_asks_and_nobody_here_can_answer() {
    let env = Env::new();
    env.zon(&format!(".{{ .lsp = .{{ {PYRIGHT} }} }}\n"));
    env.write("main.py", PYTHON);
    let mut client = env.client(false, &[]);
    let refused = client.call(
        "lsp_hover",
        json!({"path": "main.py", "line": 1, "column": 5}),
    );
    assert!(
        refused.is_error
            && refused
                .text
                .contains(".{ .action = \"call.lsp_hover\", .decision = .allow }"),
        "{refused:?}"
    );
    assert!(descendants_named("pyright-langserver").is_empty());
}

#[test]
fn without_a_server_the_tools_are_not_offered() {
    let env = Env::new();
    let mut client = env.client(false, &[]);
    let names = client.tool_names();
    for tool in chock_mcp::LSP_TOOLS {
        assert!(!names.iter().any(|n| n == tool), "{tool}: {names:?}");
    }
}
