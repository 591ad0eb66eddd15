//! `chock log verify|head|show` through the real binary, with lines written
//! by the hidden `chock log append` from many processes.

use std::path::Path;
use std::process::{Child, Command, Output, Stdio};

#[path = "log_support/mod.rs"]
mod log_support;
use log_support::State;

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

fn ok(output: Output) -> String {
    assert!(
        output.status.success(),
        "exit {:?}\nstdout: {}\nstderr: {}",
        output.status.code(),
        stdout(&output),
        stderr(&output)
    );
    stdout(&output)
}

fn lines_of(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect()
}

fn write_lines(path: &Path, lines: &[String]) {
    std::fs::write(path, lines.join("\n") + "\n").unwrap();
}

#[test]
fn fifty_processes_append_a_hundred_each_and_the_chain_holds() {
    let state = State::new("log", "fifty");
    let children: Vec<Child> = (0..50)
        .map(|i| {
            state
                .chock(&[
                    "log",
                    "append",
                    "--count",
                    "100",
                    "--action",
                    &format!("exec.workspace.w{i}"),
                ])
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let mut heads = Vec::new();
    for child in children {
        let out = ok(child.wait_with_output().unwrap());
        heads.extend(out.lines().map(str::to_owned));
    }
    assert_eq!(heads.len(), 5000);
    let verify = ok(state.run(&["log", "verify"]));
    assert!(verify.starts_with("intact: 5000 lines in 1 file; chain starts at the first line ever written (seq 1); head 5000:"), "{verify}");
    let mut seqs: Vec<u64> = heads
        .iter()
        .map(|h| h.split(':').next().unwrap().parse().unwrap())
        .collect();
    seqs.sort_unstable();
    assert_eq!(
        seqs,
        (1..=5000).collect::<Vec<_>>(),
        "every seq once, no gaps"
    );
    let newest = ok(state.run(&["log", "head"]));
    assert!(heads.contains(&newest.trim().to_owned()));
    assert!(newest.starts_with("5000:"));
}

#[test]
fn verify_names_the_file_line_and_kind_and_exits_1() {
    let state = State::new("log", "break");
    ok(state.run(&["log", "append", "--count", "6"]));
    let path = state.current();
    let mut lines = lines_of(&path);
    lines.remove(2);
    write_lines(&path, &lines);
    let output = state.run(&["log", "verify"]);
    assert_eq!(output.status.code(), Some(1));
    let text = stdout(&output);
    assert!(
        text.starts_with(&format!(
            "break at {}:3: deleted: 1 line(s) (seq 3) are missing before line 3",
            path.display()
        )),
        "{text}"
    );
    assert!(text.contains("\n  expected seq 3 prev "), "{text}");
    assert!(text.contains("\n  found    seq 4 prev "), "{text}");

    let json = state.run(&["log", "verify", "--json"]);
    assert_eq!(json.status.code(), Some(1));
    let json = stdout(&json);
    assert!(json.contains("\"intact\": false"), "{json}");
    assert!(json.contains("\"kind\": \"deleted\""), "{json}");
    assert!(json.contains("\"line\": 3"), "{json}");
}

#[test]
fn a_kept_head_catches_a_full_rewrite() {
    let state = State::new("log", "head");
    ok(state.run(&["log", "append", "--count", "3"]));
    let kept = ok(state.run(&["log", "head"])).trim().to_owned();
    ok(state.run(&["log", "append", "--count", "2"]));
    let confirmed = ok(state.run(&["log", "verify", "--head", &kept]));
    assert!(
        confirmed.contains(&format!("kept head {kept} is there unchanged")),
        "{confirmed}"
    );

    // Rewrite the whole log from a changed third line on, recomputing every
    // hash the way anyone with write access could: `chock log append` into a
    // fresh folder with the third decision changed, then copy it over.
    let forged = State::new("log", "head-forged");
    ok(forged.run(&["log", "append", "--count", "2"]));
    ok(forged.run(&["log", "append", "--decision", "deny"]));
    ok(forged.run(&["log", "append", "--count", "2"]));
    std::fs::copy(forged.current(), state.current()).unwrap();

    ok(state.run(&["log", "verify"]));
    let output = state.run(&["log", "verify", "--head", &kept]);
    assert_eq!(output.status.code(), Some(1));
    let text = stdout(&output);
    assert!(text.starts_with("intact: 5 lines"), "{text}");
    assert!(
        text.contains(&format!("kept head {kept} has changed: seq 3 at")),
        "{text}"
    );
}

#[test]
fn verify_refuses_a_malformed_head_with_what_to_write() {
    let state = State::new("log", "badhead");
    let output = state.run(&["log", "verify", "--head", "12"]);
    assert_eq!(output.status.code(), Some(2), "clap's usage error");
    assert!(
        stderr(&output).contains("write it as SEQ:SHA256"),
        "{}",
        stderr(&output)
    );
}

#[test]
fn an_empty_log_verifies_and_has_no_head() {
    let state = State::new("log", "empty");
    assert_eq!(
        ok(state.run(&["log", "verify"])),
        "intact: no decisions are logged yet\n"
    );
    let head = state.run(&["log", "head"]);
    assert_eq!(head.status.code(), Some(1));
    assert!(stderr(&head).contains("no decisions are logged yet"));
}

#[test]
fn rotated_history_says_where_the_chain_starts() {
    let state = State::new("log", "rotate");
    ok(state.run(&[
        "log",
        "append",
        "--count",
        "40",
        "--rotate-bytes",
        "1500",
        "--keep",
        "2",
    ]));
    let text = ok(state.run(&["log", "verify"]));
    assert!(text.starts_with("intact: "), "{text}");
    assert!(
        text.contains(" lines in 3 files; chain starts at "),
        "{text}"
    );
    assert!(text.contains(" (seq "), "{text}");
    assert!(text.contains("; head 40:"), "{text}");
}

#[test]
fn show_filters_by_seq_action_and_decision() {
    let state = State::new("log", "show");
    ok(state.run(&[
        "log",
        "append",
        "--action",
        "git.push",
        "--subject",
        "origin",
    ]));
    ok(state.run(&[
        "log",
        "append",
        "--action",
        "git.branch.delete",
        "--decision",
        "deny",
    ]));
    ok(state.run(&["log", "append", "--action", "gitlab.push"]));
    ok(state.run(&[
        "log",
        "append",
        "--action",
        "call.write_file",
        "--decision",
        "ask",
    ]));

    let all = ok(state.run(&["log", "show"]));
    let rows: Vec<&str> = all.lines().collect();
    assert_eq!(rows.len(), 5, "{all}");
    assert!(rows[0].starts_with("SEQ  TIME (UTC)"), "{all}");
    assert!(
        rows[1].contains("git.push") && rows[1].contains("allow") && rows[1].ends_with("origin"),
        "{all}"
    );
    assert!(rows[1].contains("nobody (unanswered)"), "{all}");

    let git = ok(state.run(&["log", "show", "--action", "git.*"]));
    assert_eq!(
        git.lines().count(),
        3,
        "git.push and git.branch.delete, not gitlab.push: {git}"
    );
    let denied = ok(state.run(&["log", "show", "--decision", "deny"]));
    assert_eq!(denied.lines().count(), 2, "{denied}");
    assert!(denied.contains("git.branch.delete"));
    let since = ok(state.run(&["log", "show", "--since", "3"]));
    assert_eq!(since.lines().count(), 3, "{since}");

    let json = ok(state.run(&["log", "show", "--json", "--action", "call.write_file"]));
    let stored = lines_of(&state.current());
    assert_eq!(
        json,
        format!("{}\n", stored[3]),
        "the stored bytes, unchanged"
    );

    let typo = state.run(&["log", "show", "--decision", "alow"]);
    assert_eq!(typo.status.code(), Some(2));
    assert!(
        stderr(&typo).contains("`alow` is not a decision"),
        "{}",
        stderr(&typo)
    );
    let star = state.run(&["log", "show", "--action", "*"]);
    assert!(
        stderr(&star).contains("leave --action out"),
        "{}",
        stderr(&star)
    );
}

#[test]
fn show_leaves_out_a_torn_line_and_says_so() {
    let state = State::new("log", "torn");
    ok(state.run(&["log", "append", "--count", "2"]));
    let mut bytes = std::fs::read(state.current()).unwrap();
    bytes.extend_from_slice(b"{\"seq\":3,\"pr");
    std::fs::write(state.current(), bytes).unwrap();
    let output = state.run(&["log", "show"]);
    assert!(output.status.success());
    assert_eq!(stdout(&output).lines().count(), 3);
    assert!(
        stderr(&output).contains("1 line(s) are not records"),
        "{}",
        stderr(&output)
    );
    let verify = state.run(&["log", "verify"]);
    assert_eq!(verify.status.code(), Some(1));
    assert!(
        stdout(&verify).contains(":3: torn: "),
        "{}",
        stdout(&verify)
    );
}

#[test]
fn policy_explain_is_a_query_and_writes_no_line() {
    let state = State::new("log", "explain");
    let project = state.0.join("project");
    std::fs::create_dir_all(&project).unwrap();
    let project = project.to_str().unwrap();
    ok(state.run(&["policy", "explain", "call.write_file", "--project", project]));
    assert!(
        !state.0.join("log").exists(),
        "explain wrote to the decision log"
    );
    ok(state.run(&["log", "append"]));
    ok(state.run(&["policy", "explain", "exec.path.sh", "--project", project]));
    assert_eq!(lines_of(&state.current()).len(), 1, "explain added a line");
}

/// Runs `command`, failing the test when it does not end within 10 s.
fn within_deadline(mut command: Command) -> Output {
    let mut child = command
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let started = std::time::Instant::now();
    while child.try_wait().unwrap().is_none() {
        if started.elapsed() > std::time::Duration::from_secs(10) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{command:?} hangs");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

#[test]
fn a_fifo_in_place_of_the_log_is_refused_by_name_never_waited_on() {
    let state = State::new("log", "fifo");
    ok(state.run(&["log", "append", "--count", "2"]));
    let current = state.current();
    std::fs::remove_file(&current).unwrap();
    let made = Command::new("mkfifo").arg(&current).status().unwrap();
    assert!(made.success());
    for args in [
        &["log", "verify"][..],
        &["log", "show"],
        &["log", "head"],
        &["log", "append", "--count", "1"],
    ] {
        let out = within_deadline(state.chock(args));
        let text = stderr(&out);
        assert!(!out.status.success(), "{args:?}: {}", stdout(&out));
        assert!(
            text.contains(&current.display().to_string())
                && text.contains("is a FIFO (named pipe), not a regular file")
                && text.contains("remove it"),
            "{args:?}: {text}"
        );
    }
}

/// The rows of `chock log show --json` with these filters, as (seq, decision, route).
fn shown(state: &State, filters: &[&str]) -> Vec<(u64, String, String)> {
    let mut args = vec!["log", "show", "--json"];
    args.extend_from_slice(filters);
    ok(state.run(&args))
        .lines()
        .map(|line| {
            let v: serde_json::Value = serde_json::from_str(line).expect("a JSON line");
            (
                v["seq"].as_u64().unwrap(),
                v["decision"].as_str().unwrap().to_owned(),
                v["route"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

#[test]
fn show_filters_by_time_count_route_project_and_repeated_kinds() {
    let state = State::new("log", "filters");
    let project = state.0.join("proj");
    std::fs::create_dir_all(project.join("sub")).unwrap();
    let project_arg = project.to_str().unwrap();
    for (decision, route) in [
        ("allow", "hook"),
        ("deny", "exec"),
        ("ask", "hook"),
        ("deny", "mcp"),
    ] {
        ok(state.run(&[
            "log",
            "append",
            "--decision",
            decision,
            "--route",
            route,
            "--project",
            project_arg,
        ]));
    }
    ok(state.run(&["log", "append", "--decision", "deny"]));
    let seqs = |rows: Vec<(u64, String, String)>| rows.into_iter().map(|r| r.0).collect::<Vec<_>>();

    assert_eq!(
        seqs(shown(&state, &["--decision", "deny", "--decision", "ask"])),
        [2, 3, 4, 5]
    );
    assert_eq!(
        seqs(shown(
            &state,
            &["--decision", "deny", "--route", "exec", "--route", "mcp"]
        )),
        [2, 4]
    );
    assert_eq!(seqs(shown(&state, &["-n", "2"])), [4, 5]);
    assert_eq!(
        seqs(shown(
            &state,
            &["--decision", "deny", "-n", "1", "--route", "mcp"]
        )),
        [4]
    );
    assert_eq!(
        seqs(shown(&state, &["--project", project_arg])),
        [1, 2, 3, 4]
    );
    let sub = project.join("sub");
    assert!(shown(&state, &["--project", sub.to_str().unwrap()]).is_empty());
    // Everything was logged within the hour, and after 2000; nothing before.
    assert_eq!(seqs(shown(&state, &["--since", "1h"])).len(), 5);
    assert_eq!(seqs(shown(&state, &["--since", "2000-01-01"])).len(), 5);
    assert!(shown(&state, &["--until", "1h"]).is_empty());
    assert!(shown(&state, &["--until", "2000-01-01T00:00:00Z"]).is_empty());
    assert_eq!(
        seqs(shown(&state, &["--until", "2999-01-01T00:00:00Z"])).len(),
        5
    );
    assert_eq!(
        seqs(shown(&state, &["--since", "3"])),
        [3, 4, 5],
        "a number is a seq"
    );

    let bad = state.run(&["log", "show", "--since", "yesterday"]);
    assert_eq!(bad.status.code(), Some(2), "{}", stderr(&bad));
    assert!(stderr(&bad).contains("RFC 3339"), "{}", stderr(&bad));

    // The table has the route, and is cut to the terminal's width.
    let table = state
        .chock(&["log", "show"])
        .env("COLUMNS", "40")
        .output()
        .unwrap();
    let text = stdout(&table);
    assert!(text.lines().next().unwrap().contains("ROUTE"), "{text}");
    assert!(text.lines().all(|l| l.chars().count() <= 40), "{text}");
}

#[test]
fn follow_prints_each_new_line_as_it_is_logged() {
    let state = State::new("log", "follow");
    ok(state.run(&["log", "append"]));
    let mut child = state
        .chock(&["log", "show", "--json", "--follow", "--decision", "deny"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    ok(state.run(&["log", "append", "--decision", "allow"]));
    ok(state.run(&["log", "append", "--decision", "deny"]));
    let mut reader = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    std::io::BufRead::read_line(&mut reader, &mut line).unwrap();
    let _ = child.kill();
    let _ = child.wait();
    let v: serde_json::Value = serde_json::from_str(&line).expect("a JSON line");
    assert_eq!(
        (v["seq"].as_u64(), v["decision"].as_str()),
        (Some(3), Some("deny")),
        "{line}"
    );
}
