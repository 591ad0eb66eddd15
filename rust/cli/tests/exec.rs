//! `chock exec` for real: the decision, the log line, the dev shell as the
//! toolchain, the exit status and signals passed through, the cache.
//! Needs user namespaces, Landlock and the Nix daemon (`scripts/setup`).

#[allow(dead_code)]
#[path = "../../nix/tests/support/http.rs"]
mod http;
mod sandbox_fixture;

use std::os::unix::process::ExitStatusExt;
use std::time::Duration;

use sandbox_fixture::{DEV_SHELL_RULE, Fixture, describe, text};

#[test]
fn the_exit_code_passes_through_and_the_decision_is_logged() {
    let fx = Fixture::host();
    let out = fx.exec(&[], &["sh", "-c", "echo out; echo err >&2; exit 7"]);
    assert_eq!(out.status.code(), Some(7), "{}", describe(&out));
    assert_eq!(text(&out.stdout), "out\n");
    assert!(text(&out.stderr).contains("err\n"));
    assert!(
        text(&out.stderr).contains("no flake.nix here"),
        "the command says it runs on the whole store: {}",
        describe(&out)
    );
    let lines = fx.log_lines();
    let exec = lines
        .iter()
        .find(|l| l["action"] == "exec.path.sh")
        .expect("a log line for exec.path.sh");
    assert_eq!(exec["decision"], "allow");
    assert_eq!(exec["route"], "exec");
    assert_eq!(exec["subject"], "sh");
    // The command's lines (the program, then each part of `sh -c`) and
    // sandbox.jit's last, written together in one run of sequence numbers.
    assert_eq!(lines.first(), Some(exec));
    assert_eq!(
        lines.last().map(|l| &l["action"]),
        Some(&serde_json::json!("sandbox.jit")),
        "sandbox.jit is read and logged after the command's lines"
    );
    let seqs: Vec<_> = lines.iter().map(|l| l["seq"].as_u64()).collect();
    let expected: Vec<_> = (1..=lines.len() as u64).map(Some).collect();
    assert_eq!(seqs, expected);
}

#[test]
fn death_by_signal_passes_through() {
    let fx = Fixture::host();
    let out = fx.exec(&[], &["sh", "-c", "kill -TERM $$"]);
    assert_eq!(
        out.status.signal(),
        Some(libc::SIGTERM),
        "{}",
        describe(&out)
    );
}

#[test]
fn ctrl_c_reaches_the_program() {
    let fx = Fixture::host();
    let mut child = fx
        .chock()
        .args([
            "exec",
            "--",
            "sh",
            "-c",
            "trap 'echo got-int; exit 42' INT; echo ready; while :; do sleep 0.1; done",
        ])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("spawn");
    let mut stdout = child.stdout.take().expect("stdout");
    let mut first = [0u8; 6];
    std::io::Read::read_exact(&mut stdout, &mut first).expect("the program started");
    assert_eq!(&first, b"ready\n");
    // SAFETY: signalling our own child, as a terminal's Ctrl-C would.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let status = child.wait().expect("wait");
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut stdout, &mut rest).expect("read");
    assert_eq!(rest, "got-int\n");
    assert_eq!(status.code(), Some(42));
}

#[test]
fn a_refusal_names_the_rule_to_write_and_exits_125() {
    let fx = Fixture::host();
    fx.rules(r#".{ .action = "exec.path.sh", .decision = .deny }"#);
    let out = fx.exec(&[], &["sh", "-c", "echo ran"]);
    assert_eq!(out.status.code(), Some(125), "{}", describe(&out));
    assert!(!text(&out.stdout).contains("ran"));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("exec.path.sh") && stderr.contains("deny"),
        "{stderr}"
    );
    let lines = fx.log_lines();
    assert!(lines.iter().any(|l| l["action"] == "exec.path.sh"
        && l["decision"] == "deny"
        && l["answered_by"] == "rule"));
}

#[test]
fn with_no_terminal_an_ask_is_a_refusal_with_the_rule_that_would_allow_it() {
    let fx = Fixture::host();
    let out = fx.exec(&[], &["./a/../b"]);
    assert_eq!(out.status.code(), Some(125), "{}", describe(&out));
    let stderr = text(&out.stderr);
    assert!(stderr.contains("exec.unparsed"), "{stderr}");
    assert!(stderr.contains("it has none"), "{stderr}");
    assert!(
        stderr.contains(r#".{ .action = "exec.unparsed", .decision = .allow }"#),
        "{stderr}"
    );
    let line = fx
        .log_lines()
        .into_iter()
        .find(|l| l["action"] == "exec.unparsed")
        .expect("logged");
    assert_eq!(line["answered_by"], "nobody");
}

/// `chock exec -- echo asked` at a real terminal (a pty) under an `ask`
/// rule, answered `answer`.
fn asked_at_a_terminal(answer: &str) -> (Fixture, chock_testkit::OnTerminal) {
    let fx = Fixture::host();
    fx.rules(r#".{ .action = "exec.path.echo", .decision = .ask }"#);
    let done = chock_testkit::on_terminal(
        &mut fx.exec_command(&[], &["echo", "asked"]),
        answer,
        Duration::from_secs(120),
    );
    (fx, done)
}

#[test]
fn at_a_terminal_an_ask_is_put_to_the_person_and_a_yes_runs_it() {
    let (fx, done) = asked_at_a_terminal("y\n");
    assert_eq!(done.code, Some(0), "terminal:\n{}", done.shown);
    assert_eq!(
        done.shown.matches("[y/N]").count(),
        1,
        "one question: {}",
        done.shown
    );
    assert!(
        done.shown.contains("chock exec wants exec.path.echo"),
        "{}",
        done.shown
    );
    assert!(done.shown.contains("command: echo asked"), "{}", done.shown);
    assert_eq!(done.stdout, "asked\n");
    echo_answered_by_the_person(&fx, "allow");
    assert_eq!(echo_line(&fx)["scope"], "once");
}

/// The log's first line for `exec.path.echo`.
fn echo_line(fx: &Fixture) -> serde_json::Value {
    fx.log_lines()
        .into_iter()
        .find(|l| l["action"] == "exec.path.echo")
        .expect("logged")
}

/// The log's line for `exec.path.echo` says `decision`, answered by the
/// person.
fn echo_answered_by_the_person(fx: &Fixture, decision: &str) {
    let line = echo_line(fx);
    assert_eq!(
        (line["decision"].as_str(), line["answered_by"].as_str()),
        (Some(decision), Some("person")),
        "{line}"
    );
}

#[test]
fn at_a_terminal_a_no_refuses_it_and_says_so() {
    let (fx, done) = asked_at_a_terminal("n\n");
    assert_eq!(done.code, Some(125), "terminal:\n{}", done.shown);
    assert!(done.shown.contains("you answered no"), "{}", done.shown);
    assert!(!done.stdout.contains("asked"), "{}", done.stdout);
    echo_answered_by_the_person(&fx, "deny");
}

#[test]
fn at_a_terminal_always_writes_the_rule_and_the_next_run_is_allowed_by_it() {
    let (fx, done) = asked_at_a_terminal("a\n");
    assert_eq!(done.code, Some(0), "terminal:\n{}", done.shown);
    assert!(done.shown.contains("`a`: yes always"), "{}", done.shown);
    assert!(!done.shown.contains("`s`"), "no session: {}", done.shown);
    assert_eq!(done.stdout, "asked\n");
    let rule = r#".{ .tool = "run_command", .action = "exec.path.echo", .decision = .allow }"#;
    let zon = std::fs::read_to_string(fx.project.join("chock.zon")).expect("chock.zon");
    assert!(zon.contains(rule), "{zon}");
    assert!(
        done.shown.contains("wrote to") && done.shown.contains(rule),
        "the diff: {}",
        done.shown
    );
    let edit = fx
        .log_lines()
        .into_iter()
        .find(|l| l["action"] == "policy.edit")
        .expect("the edit logged");
    assert_eq!(
        (edit["subject"].as_str(), edit["scope"].as_str()),
        (Some(rule), Some("always")),
        "{edit}"
    );
    // The act the yes let go says how far the yes reached.
    let asked = echo_line(&fx);
    assert_eq!(
        (asked["answered_by"].as_str(), asked["scope"].as_str()),
        (Some("person"), Some("always")),
        "{asked}"
    );
    // No terminal now: only the rule can allow it.
    let again = fx.exec(&[], &["echo", "asked"]);
    assert_eq!(again.status.code(), Some(0), "{}", describe(&again));
    let last = fx
        .log_lines()
        .into_iter()
        .rfind(|l| l["action"] == "exec.path.echo")
        .expect("logged");
    assert_eq!(last["answered_by"], "rule", "{last}");
}

#[test]
fn at_a_terminal_a_no_with_a_reason_refuses_it_saying_why() {
    let (fx, done) = asked_at_a_terminal("n use the scratch folder\n");
    assert_eq!(done.code, Some(125), "terminal:\n{}", done.shown);
    assert!(
        done.shown
            .contains("you answered no, because: use the scratch folder"),
        "{}",
        done.shown
    );
    assert!(!done.stdout.contains("asked"), "{}", done.stdout);
    echo_answered_by_the_person(&fx, "deny");
    let zon = std::fs::read_to_string(fx.project.join("chock.zon")).expect("chock.zon");
    assert!(!zon.contains(".allow"), "nothing written: {zon}");
}

#[test]
fn nobody_is_asked_about_a_command_a_rule_refuses_anyway() {
    let fx = Fixture::host();
    fx.rules(
        r#".{ .action = "exec.path.echo", .decision = .ask }, .{ .action = "exec.path.sh", .decision = .deny }"#,
    );
    let done = chock_testkit::on_terminal(
        &mut fx.exec_command(&[], &["sh", "-c", "echo asked"]),
        "y\n",
        Duration::from_secs(120),
    );
    assert_eq!(done.code, Some(125), "terminal:\n{}", done.shown);
    assert!(
        !done.shown.contains("[y/N]"),
        "nobody asked: {}",
        done.shown
    );
    assert!(
        done.shown.contains("exec.path.sh") && done.shown.contains("deny"),
        "{}",
        done.shown
    );
}

#[test]
fn the_caller_environment_and_home_stay_outside() {
    let fx = Fixture::host();
    std::fs::write(fx.home.join("token"), "secret").expect("token");
    let out = fx
        .chock()
        .env("API_KEY", "sk-do-not-leak")
        .args(["exec", "--", "sh", "-c", "env; echo HOME=$HOME; ls $HOME"])
        .output()
        .expect("run");
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{}", describe(&out));
    assert!(!stdout.contains("sk-do-not-leak"), "{stdout}");
    assert!(stdout.contains("HOME=/run/chock/cache"), "{stdout}");
    assert!(stdout.contains("TMPDIR=/run/chock/tmp"), "{stdout}");
    assert!(!stdout.contains("token"), "{stdout}");
}

#[test]
fn json_captures_the_output_and_the_decision() {
    let fx = Fixture::host();
    let out = fx.exec(&["--json"], &["sh", "-c", "echo hello; exit 4"]);
    assert_eq!(out.status.code(), Some(4), "{}", describe(&out));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one JSON object");
    assert_eq!(report["action"], "exec.path.sh");
    assert_eq!(report["decision"], "allow");
    assert_eq!(report["stdout"], "hello\n");
    assert_eq!(report["exit"]["code"], 4);
}

#[test]
fn a_missing_chock_zon_is_made_first_and_is_read_only_inside() {
    let fx = Fixture::host();
    let out = fx.exec(&[], &["sh", "-c", "printf '.{}' > chock.zon"]);
    assert!(!out.status.success(), "{}", describe(&out));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("Read-only file system") && stderr.contains("before the program started"),
        "{}",
        describe(&out)
    );
    let made = std::fs::read_to_string(fx.project.join("chock.zon")).expect("chock.zon");
    assert!(
        made.starts_with("// This project's rules for Chock"),
        "{made}"
    );
    // What Chock made is a policy with no rule: it loads, and the next
    // command runs under the shipped rules without a word about it.
    let check = fx
        .chock()
        .args(["policy", "check"])
        .output()
        .expect("check");
    assert!(check.status.success(), "{}", describe(&check));
    let next = fx.exec(&[], &["sh", "-c", "true"]);
    assert!(next.status.success(), "{}", describe(&next));
    assert!(!text(&next.stderr).contains("before the program started"));
}

#[test]
fn the_dev_shell_is_the_toolchain_and_nothing_else_of_the_store() {
    let fx = Fixture::flake();
    fx.probe();
    let outside = fx.outside_store_path();
    let out = fx.exec(&[], &["./probe", "read", outside.to_str().expect("utf-8")]);
    assert!(out.status.success(), "{}", describe(&out));
    assert!(
        text(&out.stdout).starts_with("blocked:"),
        "{}",
        describe(&out)
    );
    assert!(
        text(&out.stderr).contains("devShells."),
        "the first run says it read the dev shell: {}",
        describe(&out)
    );

    let out = fx
        .chock()
        .env("API_KEY", "sk-do-not-leak")
        .args(["exec", "--", "./probe", "env"])
        .output()
        .expect("run");
    let env = text(&out.stdout);
    assert!(
        env.contains("MYVAR=from the dev shell"),
        "{}",
        describe(&out)
    );
    assert!(
        env.lines()
            .any(|l| l.starts_with("PATH=/nix/store/") && l.ends_with("-tool/bin")),
        "{env}"
    );
    assert!(env.lines().any(|l| l == "HOME=/run/chock/cache"), "{env}");
    assert!(
        !env.contains("sk-do-not-leak") && !env.contains("NIX_BUILD_TOP"),
        "{env}"
    );
    assert!(
        !text(&out.stderr).contains("print-dev-env"),
        "a second run is served from the cache: {}",
        describe(&out)
    );
}

#[test]
fn a_dev_shell_the_flake_lacks_stops_with_the_names_it_has() {
    let fx = Fixture::flake();
    let out = fx.exec(&["--dev-shell", "nope"], &["true"]);
    assert_eq!(out.status.code(), Some(124), "{}", describe(&out));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("no attribute 'devShells.") && stderr.contains(".nope'"),
        "fix's own message: {stderr}"
    );
    assert!(stderr.contains("ci, default"), "{stderr}");
}

#[test]
fn chock_zon_names_the_dev_shell_and_the_flag_wins() {
    let fx = Fixture::flake();
    fx.probe();
    fx.zon(&format!(
        ".{{ .nix = .{{ .dev_shell = \"ci\" }}, .policy = .{{ .rules = .{{ {DEV_SHELL_RULE} }} }} }}\n"
    ));
    let env = |flags: &[&str]| {
        let out = fx.exec(flags, &["./probe", "env"]);
        assert!(out.status.success(), "{}", describe(&out));
        text(&out.stdout)
    };
    let ci = env(&[]);
    assert!(
        ci.contains("CI_ONLY=yes") && !ci.contains("MYVAR="),
        "chock.zon's shell: {ci}"
    );
    let default = env(&["--dev-shell", "default"]);
    assert!(
        default.contains("MYVAR=") && !default.contains("CI_ONLY="),
        "the flag wins: {default}"
    );
}

#[test]
fn the_cache_is_kept_shown_and_cleared() {
    let fx = Fixture::host();
    let out = fx.exec(
        &[],
        &[
            "sh",
            "-c",
            "mkdir -p $HOME/tool && head -c 100000 /dev/zero > $HOME/tool/blob",
        ],
    );
    assert!(out.status.success(), "{}", describe(&out));
    assert!(
        text(&out.stderr).contains("cache is new"),
        "first use is announced: {}",
        describe(&out)
    );
    let again = fx.exec(&[], &["sh", "-c", "test -f $HOME/tool/blob"]);
    assert!(
        again.status.success(),
        "the cache is kept between runs: {}",
        describe(&again)
    );
    let shown = fx.chock().args(["cache"]).output().expect("cache");
    assert!(text(&shown.stdout).contains("tool"), "{}", describe(&shown));
    assert!(
        text(&shown.stdout).contains("2048.0 MiB"),
        "the bound is shown: {}",
        describe(&shown)
    );
    let cleared = fx.chock().args(["cache", "clear"]).output().expect("clear");
    assert!(cleared.status.success(), "{}", describe(&cleared));
    let gone = fx.exec(&[], &["sh", "-c", "test ! -e $HOME/tool"]);
    assert!(gone.status.success(), "{}", describe(&gone));
}

#[test]
fn background_processes_end_with_the_command() {
    let fx = Fixture::host();
    let marker = fx.project.join("late");
    let out = fx.exec(&[], &["sh", "-c", "(sleep 1; touch late) & exit 0"]);
    assert!(out.status.success(), "{}", describe(&out));
    std::thread::sleep(Duration::from_millis(1500));
    assert!(
        !marker.exists(),
        "a background process outlived the command"
    );
}

#[test]
fn store_programs_are_named_by_whether_the_closure_holds_them() {
    let fx = Fixture::flake();
    fx.probe();
    let env = text(&fx.exec(&[], &["./probe", "env"]).stdout);
    let tool_bin = env
        .lines()
        .find_map(|l| l.strip_prefix("PATH="))
        .expect("the dev shell's PATH")
        .to_owned();
    let tool_name = tool_bin
        .trim_end_matches("/bin")
        .trim_start_matches("/nix/store/")
        .to_owned();

    // In the closure: exec.devshell.*, shipped allow (the file is not
    // executable, so it is decided and allowed, then fails as 126).
    let inside = fx.exec(&[], &[&format!("{tool_bin}/greeting")]);
    assert_eq!(inside.status.code(), Some(126), "{}", describe(&inside));
    let action = format!(
        "exec.devshell.{}.bin.greeting",
        tool_name.replace('.', "%2E")
    );
    let logged = fx
        .log_lines()
        .into_iter()
        .find(|l| l["action"] == action.as_str());
    assert_eq!(
        logged.expect("the devshell action is logged")["decision"],
        "allow"
    );

    // Any other store path: exec.nix.store.*, shipped ask, so refused here.
    let outside = fx.outside_store_path();
    let refused = fx.exec(&[], &[outside.to_str().expect("utf-8")]);
    assert_eq!(refused.status.code(), Some(125), "{}", describe(&refused));
    assert!(
        text(&refused.stderr).contains("exec.nix.store."),
        "{}",
        describe(&refused)
    );
}

#[test]
fn the_resource_floor_holds_and_a_project_can_only_lower_it() {
    let fx = Fixture::host();
    // Soft limits as the kernel reports them for the program itself.
    let limits = |fx: &Fixture| {
        let out = fx.exec(&[], &["cat", "/proc/self/limits"]);
        assert!(out.status.success(), "{}", describe(&out));
        let table = text(&out.stdout);
        let soft = |name: &str| {
            let line = table
                .lines()
                .find(|l| l.starts_with(name))
                .unwrap_or_else(|| panic!("no {name} in {table}"));
            line[name.len()..]
                .split_whitespace()
                .next()
                .expect("a soft limit")
                .to_owned()
        };
        [
            "Max core file size",
            "Max open files",
            "Max processes",
            "Max file size",
            "Max cpu time",
        ]
        .map(soft)
    };
    let floor = limits(&fx);
    assert_eq!(floor[0], "0", "no core files");
    assert_eq!(floor[1], "1024", "open files");
    let processes: u64 = floor[2].parse().expect("a number of processes");
    assert!(processes >= 256, "{floor:?}");
    assert_eq!(floor[3], (1u64 << 30).to_string(), "1 GiB files");
    assert_eq!(floor[4], "3600", "CPU seconds");

    fx.zon(".{ .limits = .{ .processes = 100 } }\n");
    assert_eq!(limits(&fx)[2], "100", "a project lowers the process limit");
    fx.zon(".{ .limits = .{ .processes = 1000000 } }\n");
    assert_eq!(limits(&fx)[2], floor[2], "and cannot raise it");
}

/// The flake an agent writes to have something built on the host: a dev
/// shell needing a derivation that writes `marker` outside the store and a
/// fixed-output derivation fetching `file` from the loopback `server`.
fn attacking_flake(
    marker: &std::path::Path,
    server: &http::Server,
    file: &str,
    sha256: &str,
) -> String {
    let system = chock_sandbox::devshell::system();
    let port = server.port;
    let marker = marker.display();
    format!(
        r#"{{
  outputs = {{ self }}: let
    system = "{system}";
    blob = derivation {{
      name = "{file}"; url = "http://127.0.0.1:{port}/{file}"; urls = "http://127.0.0.1:{port}/{file}";
      builder = "builtin:fetchurl"; system = "builtin";
      outputHash = "{sha256}"; outputHashAlgo = "sha256"; outputHashMode = "flat";
      executable = ""; unpack = ""; preferLocalBuild = true;
    }};
    payload = derivation {{
      name = "payload"; inherit system blob; builder = "/bin/sh"; PATH = "/usr/bin:/bin";
      args = [ "-c" "echo built on the host > {marker} && cp $blob $out" ];
    }};
  in {{
    devShells.${{system}}.default = derivation {{
      name = "shell"; inherit system payload; builder = "/bin/bash";
      outputs = [ "out" ]; args = [ "-c" "echo shell > $out" ];
      MYVAR = "from the changed shell";
    }};
  }};
}}
"#
    )
}

/// The attack: an agent rewrites flake.nix (call.write_file ships allow) so
/// the next command's dev shell builds a derivation that writes outside the
/// store and fetches from a host. Without rules, chock exec refuses with the
/// rule to add, nothing is built or fetched, the old shell is not used, and
/// the log has the decision; with the shell and its host allowed, it builds
/// and runs.
#[test]
fn a_changed_dev_shell_is_built_only_as_chock_build_would() {
    let fx = Fixture::flake();
    fx.probe();
    let first = fx.exec(&[], &["./probe", "env"]);
    assert!(
        text(&first.stdout).contains("MYVAR=from the dev shell"),
        "the old shell, cached: {}",
        describe(&first)
    );

    let nonce = format!("blob-{}", chock_inputs::testing::nonce());
    // Where a build user may write (the daemon builds as nixbld*).
    let marker = std::env::temp_dir().join(format!("chock-built-on-the-host-{nonce}"));
    let content = format!("fetched {nonce}\n");
    let sha256 = {
        use std::io::Write;
        let mut child = std::process::Command::new("sha256sum")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("sha256sum");
        child
            .stdin
            .take()
            .expect("stdin")
            .write_all(content.as_bytes())
            .expect("write");
        let out = child.wait_with_output().expect("sha256sum");
        text(&out.stdout)
            .split_whitespace()
            .next()
            .expect("digest")
            .to_owned()
    };
    let server = http::Server::start(&[(&nonce, content.as_bytes())]);
    std::fs::write(
        fx.project.join("flake.nix"),
        attacking_flake(&marker, &server, &nonce, &sha256),
    )
    .expect("the agent writes flake.nix");
    std::fs::remove_file(fx.project.join("chock.zon")).expect("no rules");
    let system = chock_sandbox::devshell::system();
    let action = format!("nix.build.devShells.{system}.default");

    let refused = fx.exec(&[], &["./probe", "env"]);
    assert_eq!(refused.status.code(), Some(125), "{}", describe(&refused));
    let stderr = text(&refused.stderr);
    assert!(
        stderr.contains(&action) && stderr.contains("chock.zon"),
        "the refusal names the rule to add: {stderr}"
    );
    assert!(
        !text(&refused.stdout).contains("MYVAR="),
        "neither the old shell nor the new one ran: {}",
        describe(&refused)
    );
    assert!(!marker.exists(), "the payload was built unchecked");
    assert_eq!(server.count(), 0, "the fetch happened unchecked");
    let logged = fx.last_logged(&action);
    assert_eq!(logged["route"], "exec", "{logged}");
    assert_ne!(logged["decision"], "allow", "{logged}");

    // The shell allowed, its host not: the host is the question now.
    let host = format!("nix.net.build.1.0.0.127.{}", server.port);
    fx.rules(&format!(
        r#".{{ .action = "{action}", .decision = .allow }}"#
    ));
    let refused = fx.exec(&[], &["./probe", "env"]);
    assert_eq!(refused.status.code(), Some(125), "{}", describe(&refused));
    assert!(
        text(&refused.stderr).contains(&host),
        "{}",
        describe(&refused)
    );
    assert!(
        !marker.exists(),
        "the payload was built before its host was answered"
    );
    assert_eq!(
        server.count(),
        0,
        "the host was reached before it was answered"
    );

    fx.rules(&format!(
        r#".{{ .action = "{action}", .decision = .allow }}, .{{ .action = "{host}", .decision = .allow }}"#
    ));
    let ran = fx.exec(&[], &["./probe", "env"]);
    assert!(ran.status.success(), "{}", describe(&ran));
    assert!(
        text(&ran.stdout).contains("MYVAR=from the changed shell"),
        "{}",
        describe(&ran)
    );
    assert!(marker.exists(), "allowed, the payload was built");
    std::fs::remove_file(&marker).expect("the marker is removed");
    assert!(server.count() >= 1, "allowed, the host was reached");
}

/// A dev shell whose locked input is not in the store: chock exec fetches
/// it as chock build would. With no rule for the input's host and nobody
/// at a terminal, the command is refused naming the rule, and nothing is
/// fetched or run; with the host allowed, the input is fetched once, the
/// shell built and the program run with it.
#[test]
fn a_dev_shell_input_missing_from_the_store_is_fetched_under_the_rules() {
    use chock_inputs::testing::{Reply, Server as InputServer, Tree, nonce};
    let fx = Fixture::flake();
    fx.probe();
    // A new tree each run, so the store never holds it already.
    let tag = format!("input-{}", nonce());
    let tree = Tree::new("pkg", &[("hello", format!("{tag}\n").as_bytes(), false)]);
    let server = InputServer::http();
    server.route("/pkg.tar.gz", Reply::Body(tree.tar_gz()));
    let url = server.url("/pkg.tar.gz");
    sandbox_fixture::shell_with_tarball_input(&fx.project, &url, &tree.nar_hash());
    let host = format!("nix.net.eval.localhost.{}", server.port());

    let refused = fx.exec(&[], &["./probe", "env"]);
    let stderr = text(&refused.stderr);
    assert!(!refused.status.success(), "{}", describe(&refused));
    let rule = format!(r#".{{ .action = "{host}", .decision = .allow }}"#);
    assert!(
        stderr.contains(&rule) && stderr.contains("`pkg`"),
        "the refusal names the input and the rule for its host: {}",
        describe(&refused)
    );
    assert_eq!(
        refused.status.code(),
        Some(124),
        "Chock failed before the program ran: {}",
        describe(&refused)
    );
    assert!(
        !text(&refused.stdout).contains("PKG="),
        "nothing ran: {}",
        describe(&refused)
    );
    assert!(
        server.requests().is_empty(),
        "nothing fetched without a rule"
    );
    let asked = fx.last_logged(&host);
    assert_eq!(asked["route"], "exec", "{asked}");
    assert_eq!(asked["tool"], "run_command", "{asked}");
    assert_ne!(asked["decision"], "allow", "{asked}");

    fx.rules(&rule);
    let ran = fx.exec(&[], &["./probe", "env"]);
    assert!(ran.status.success(), "{}", describe(&ran));
    assert_eq!(server.requests(), vec!["/pkg.tar.gz".to_owned()]);
    let pkg = text(&ran.stdout)
        .lines()
        .find_map(|l| l.strip_prefix("PKG=").map(str::to_owned))
        .unwrap_or_else(|| panic!("the shell's PKG: {}", describe(&ran)));
    assert!(pkg.starts_with("/nix/store/"), "{pkg}");
    let read = fx.exec(&[], &["./probe", "read", &format!("{pkg}/hello")]);
    assert!(
        text(&read.stdout).contains(&format!("read {} bytes", tag.len() + 1)),
        "the fetched input is the shell's, inside the sandbox: {}",
        describe(&read)
    );
    assert_eq!(
        server.requests().len(),
        1,
        "the cached shell fetches nothing more"
    );
}

#[test]
fn a_shell_script_is_decided_per_segment_and_git_as_the_git_reading() {
    let fx = Fixture::host();
    std::fs::create_dir_all(fx.project.join("important")).expect("mkdir");
    std::fs::create_dir_all(fx.project.join("sub")).expect("mkdir");
    std::fs::write(fx.project.join("important/keep.txt"), "keep").expect("write");
    fx.rules(r#".{ .action = "exec.path.rm", .decision = .deny }"#);
    let out = fx.exec(&[], &["sh", "-c", "cd sub && rm -rf ../important"]);
    assert_eq!(out.status.code(), Some(125), "{}", describe(&out));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("exec.path.rm") && stderr.contains("deny"),
        "the act that decided is named: {stderr}"
    );
    assert!(
        fx.project.join("important/keep.txt").exists(),
        "rm never ran"
    );
    let lines = fx.log_lines();
    for (action, decision) in [
        ("exec.path.sh", "allow"),
        ("exec.path.cd", "allow"),
        ("exec.path.rm", "deny"),
    ] {
        assert!(
            lines.iter().any(|l| l["action"] == action
                && l["decision"] == decision
                && l["route"] == "exec"),
            "{action} {decision} is logged: {lines:?}"
        );
    }
    // Wrappers are looked through, and git is read as the git shim reads it.
    let out = fx.exec(
        &[],
        &["env", "FOO=1", "timeout", "5", "rm", "-rf", "important"],
    );
    assert_eq!(out.status.code(), Some(125), "{}", describe(&out));
    assert!(fx.project.join("important/keep.txt").exists());
    let out = fx.exec(&["--json"], &["git", "push", "origin", "main"]);
    assert_eq!(out.status.code(), Some(125), "{}", describe(&out));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one JSON object");
    assert_eq!(report["action"], "git.push");
    assert_eq!(fx.last_logged("git.push")["subject"], "git push");
}

/// A dev shell that names its own trust store keeps it, with a router as
/// without one; a shell that names none is given the host's bundle where
/// a router is, and nothing where none is.
#[test]
fn a_dev_shells_own_ssl_cert_file_is_kept() {
    let fx = Fixture::flake();
    fx.probe();
    let system = chock_sandbox::devshell::system();
    let flake = format!(
        r#"{{
  outputs = {{ self }}: let
    system = "{system}";
    certs = derivation {{
      name = "project-certs"; inherit system; builder = "/bin/sh";
      args = [ "-c" "echo the projects own bundle > $out" ];
    }};
    shell = extra: derivation ({{
      name = "shell"; inherit system certs; builder = "/bin/bash";
      outputs = [ "out" ]; args = [ "-c" "echo shell > $out" ];
    }} // extra);
  in {{
    devShells.${{system}} = {{
      default = shell {{ SSL_CERT_FILE = "${{certs}}"; }};
      plain = shell {{ }};
    }};
  }};
}}
"#
    );
    std::fs::write(fx.project.join("flake.nix"), flake).expect("flake.nix");
    assert!(sandbox_fixture::git(&fx.project, &["add", "flake.nix"]));
    let run = |router: &str, shell: &str, probe: &[&str]| {
        fx.zon(&format!(
            ".{{ .policy = .{{ .net = .{{ .router = .{router} }}, .rules = .{{ {DEV_SHELL_RULE} }} }} }}\n"
        ));
        let out = fx.exec(&["--dev-shell", shell], probe);
        assert!(out.status.success(), "{}", describe(&out));
        text(&out.stdout)
    };
    let env = run("filtered", "default", &["./probe", "env"]);
    let own = env
        .lines()
        .find_map(|l| l.strip_prefix("SSL_CERT_FILE="))
        .unwrap_or_else(|| panic!("no SSL_CERT_FILE: {env}"))
        .to_owned();
    assert!(
        own.starts_with("/nix/store/") && own.ends_with("-project-certs"),
        "the shell's own, not the host's: {env}"
    );
    // The probe calls any read a breach; here it is the point: the file
    // is in the shell's closure, so the sandbox shows it.
    let read = fx.exec(&["--dev-shell", "default"], &["./probe", "read", &own]);
    let bytes = "the projects own bundle\n".len();
    assert!(
        text(&read.stdout).contains(&format!("read {bytes} bytes of {own}")),
        "{}",
        describe(&read)
    );
    let env = run("none", "default", &["./probe", "env"]);
    assert!(env.contains(&format!("SSL_CERT_FILE={own}")), "{env}");
    let env = run("filtered", "plain", &["./probe", "env"]);
    assert!(
        env.lines()
            .any(|l| l == "SSL_CERT_FILE=/etc/chock-ca-certificates.crt"),
        "{env}"
    );
    let env = run("none", "plain", &["./probe", "env"]);
    assert!(!env.contains("SSL_CERT_FILE="), "{env}");
}

/// An agent's `git commit` in the sandbox is made as the person: their
/// `user.name` and `user.email` are read on the host (here from a scratch
/// HOME's .gitconfig) and given as git's author and committer variables.
/// Nothing else of that file reaches the sandbox: not an alias, not a
/// credential helper, not a hooks path that would run the person's hooks.
/// docs/workspace.md's first example, run as written, commits.
#[test]
fn git_in_the_sandbox_commits_as_the_person_and_sees_nothing_else_of_their_config() {
    let fx = Fixture::host();
    let hooks = fx.root().join("persons-hooks");
    std::fs::create_dir_all(&hooks).expect("hooks dir");
    let ran = fx.root().join("a-hook-ran");
    let hook = hooks.join("pre-commit");
    std::fs::write(&hook, format!("#!/bin/sh\ntouch {}\n", ran.display())).expect("hook");
    std::fs::set_permissions(&hook, std::os::unix::fs::PermissionsExt::from_mode(0o755))
        .expect("chmod");
    std::fs::write(
        fx.home.join(".gitconfig"),
        format!(
            "[user]\n\tname = Pat Person\n\temail = pat@example.org\n[alias]\n\tsneaky = status\n[credential]\n\thelper = store --file {}/creds\n[core]\n\thooksPath = {}\n",
            fx.root().display(),
            hooks.display()
        ),
    )
    .expect(".gitconfig");
    std::fs::create_dir_all(fx.project.join("src")).expect("src");
    std::fs::write(fx.project.join("src/x.c"), "int old;\n").expect("x.c");
    for args in [
        &["init", "-q"][..],
        &["add", "src/x.c"],
        &["commit", "-qm", "start", "--no-verify"],
    ] {
        assert!(sandbox_fixture::git(&fx.project, args), "git {args:?}");
    }
    let out = fx
        .chock()
        .args(["exec", "--workspace", "--", "sh", "-c"])
        .arg("sed -i s/old/new/ src/x.c && git commit -qam \"agent: rename\"")
        .output()
        .expect("run");
    assert!(out.status.success(), "{}", describe(&out));
    // An unknown git subcommand is an act of its own; allowed here, so the
    // alias's absence is what stops it.
    fx.rules(r#".{ .action = "git.sneaky", .decision = .allow }"#);
    let out = fx.exec(
        &["--workspace"],
        &[
            "sh",
            "-c",
            "git log -1 --format='%s|%an <%ae>|%cn <%ce>'; git config --list --show-origin; git sneaky; echo sneaky=$?",
        ],
    );
    let shown = text(&out.stdout);
    assert!(
        shown.contains("agent: rename|Pat Person <pat@example.org>|Pat Person <pat@example.org>"),
        "{}",
        describe(&out)
    );
    let lower = shown.to_lowercase();
    for leak in [
        "sneaky = ",
        "alias.",
        "credential.",
        "hookspath",
        "persons-hooks",
        ".gitconfig",
    ] {
        assert!(
            !lower.contains(leak),
            "{leak} reached the sandbox: {}",
            describe(&out)
        );
    }
    assert!(
        shown.contains("sneaky=1"),
        "the alias is unknown inside: {shown}"
    );
    assert!(!ran.exists(), "the person's hook ran in the sandbox");
}

/// A flake that declares no `devShells` runs on the host's toolchain as a
/// project without a flake does, and says so; nothing is built or asked.
/// A dev shell named other than `default` is refused there, naming it.
/// A flake fix cannot read is not taken for one without a shell: the
/// command stops with the evaluation's own error.
#[test]
fn a_flake_without_dev_shells_runs_on_the_host_toolchain_saying_so() {
    let fx = Fixture::flake();
    let system = chock_sandbox::devshell::system();
    let write = |text: String| {
        std::fs::write(fx.project.join("flake.nix"), text).expect("flake.nix");
        assert!(sandbox_fixture::git(&fx.project, &["add", "flake.nix"]));
    };
    write(format!(
        r#"{{
  outputs = {{ self }}: {{
    packages.{system}.hello = derivation {{
      name = "hello"; system = "{system}"; builder = "/bin/sh"; args = [ "-c" "echo > $out" ];
    }};
  }};
}}
"#
    ));
    let out = fx.exec(
        &[],
        &["sh", "-c", "echo ran; test -d /usr/bin && echo host"],
    );
    assert!(out.status.success(), "{}", describe(&out));
    assert_eq!(text(&out.stdout), "ran\nhost\n", "{}", describe(&out));
    let stderr = text(&out.stderr);
    assert_eq!(
        stderr.matches("flake.nix declares no devShells").count(),
        1,
        "{stderr}"
    );
    assert!(
        !fx.log_lines().iter().any(|l| l["action"]
            .as_str()
            .is_some_and(|a| a.starts_with("nix.build."))),
        "nothing was built: {:#?}",
        fx.log_lines()
    );
    // A shell named that the flake cannot have is never another toolchain.
    let named = fx.exec(&["--dev-shell", "ci"], &["sh", "-c", "echo ran"]);
    assert_eq!(named.status.code(), Some(124), "{}", describe(&named));
    assert!(
        text(&named.stderr).contains("the dev shell `ci` was named")
            && text(&named.stdout).is_empty(),
        "{}",
        describe(&named)
    );
    write(
        r#"{
  outputs = { self }: throw "this flake is broken";
}
"#
        .to_owned(),
    );
    let out = fx.exec(&[], &["sh", "-c", "echo ran"]);
    assert!(!out.status.success(), "{}", describe(&out));
    assert!(
        text(&out.stderr).contains("this flake is broken") && text(&out.stdout).is_empty(),
        "{}",
        describe(&out)
    );
}
