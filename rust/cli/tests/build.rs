//! `chock build` through the binary, with the real Nix daemon and loopback
//! servers that count requests: exit codes, `--plan --json`, the refusal
//! with nobody at a terminal, and a person answering at a real terminal (a
//! pty), and a project read beneath a held descriptor while names are
//! swapped. Fails, saying what to run, without the daemon.

#[path = "../../nix/tests/support/files.rs"]
mod files;
#[path = "../../nix/tests/support/http.rs"]
mod http;
mod sandbox_fixture;

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use http::Server;

fn chock() -> &'static str {
    env!("CARGO_BIN_EXE_chock")
}

fn require_daemon() {
    chock_testkit::require_nix_daemon(&chock_store::daemon::socket_path());
}

fn nonce(tag: &str) -> String {
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .as_nanos();
    format!("{tag}-{}-{t}", std::process::id())
}

/// The fixture flake in a project of its own, fetching from two servers.
struct Fixture {
    project: tempfile::TempDir,
    home: tempfile::TempDir,
    allowed: Server,
    other: Server,
}

impl Fixture {
    fn new(rules: &[(&str, &str)]) -> Fixture {
        require_daemon();
        let project = tempfile::tempdir().expect("tempdir");
        let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("../nix/tests/fixtures/fetch");
        files::copy_dir(&fixture, project.path());
        std::fs::write(project.path().join("sub/nonce"), nonce("sub")).expect("nonce");
        let file = |tag: &str| {
            let name = format!("{}.txt", nonce(tag));
            let content = format!("the file {name}\n");
            let sha = sha256_hex(content.as_bytes());
            (name, content, sha)
        };
        let (a, b) = (file("allowed"), file("other"));
        let allowed = Server::start(&[(&a.0, a.1.as_bytes())]);
        let other = Server::start(&[(&b.0, b.1.as_bytes())]);
        let spec = |f: &(String, String, String)| serde_json::json!({ "name": f.0, "sha256": f.2, "content": f.1.trim_end() });
        let servers = serde_json::json!({
            "allowed": allowed.url(), "other": other.url(),
            "mirrorA": "http://127.0.0.1:9", "mirrorB": "http://127.0.0.1:9", "hashed": "http://127.0.0.1:9",
            "files": { "allowed": spec(&a), "other": spec(&b), "mirrored": spec(&a), "opaque": spec(&b) },
        });
        std::fs::write(project.path().join("servers.json"), servers.to_string()).expect("servers");
        let fixture = Fixture {
            project,
            home: tempfile::tempdir().expect("tempdir"),
            allowed,
            other,
        };
        fixture.rules(rules);
        fixture
    }

    fn rules(&self, rules: &[(&str, &str)]) {
        let rules: String = rules
            .iter()
            .map(|(a, d)| format!(".{{ .action = \"{a}\", .decision = .{d} }},\n"))
            .collect();
        std::fs::write(
            self.project.path().join("chock.zon"),
            format!(".{{ .policy = .{{ .rules = .{{\n{rules}}} }} }}\n"),
        )
        .expect("chock.zon");
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(chock());
        command
            .arg("build")
            .arg("--project")
            .arg(self.project.path())
            .args(args)
            .env("HOME", self.home.path())
            .env("XDG_CONFIG_HOME", self.home.path().join("config"))
            .env("XDG_DATA_HOME", self.home.path().join("data"))
            .env("CHOCK_STATE_DIR", self.home.path().join("state"))
            .env("NIX_REMOTE", "daemon");
        command
    }

    fn run(&self, args: &[&str]) -> Output {
        self.command(args)
            .stdin(Stdio::null())
            .output()
            .expect("run chock")
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.home.path().join("state/log/decisions.jsonl"))
            .unwrap_or_default()
    }
}

/// The SHA-256 of `bytes` in hex, from coreutils.
fn sha256_hex(bytes: &[u8]) -> String {
    let out = Command::new("sha256sum")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .and_then(|mut child| {
            child.stdin.take().expect("stdin").write_all(bytes)?;
            child.wait_with_output()
        })
        .expect("sha256sum");
    let text = String::from_utf8(out.stdout).expect("utf8");
    text.split_whitespace().next().expect("digest").to_owned()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

const PACKAGE: [&str; 3] = ["packages", "x86_64-linux", "two-hosts"];

#[test]
fn a_build_the_rules_allow_prints_what_it_produced() {
    let f = Fixture::new(&[
        ("nix.build.packages.*", "allow"),
        ("nix.net.1.0.0.127.*", "allow"),
    ]);
    let out = f.run(&PACKAGE);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains("-two-hosts.drv was built. It produced /nix/store/"),
        "{stdout}"
    );
    assert_eq!((f.allowed.count(), f.other.count()), (1, 1));
    assert_eq!(f.log().lines().count(), 3, "{}", f.log());

    // For scripts: the output path alone, as `nix build --print-out-paths`.
    let mut args = vec!["--print-out-paths"];
    args.extend(PACKAGE);
    let out = f.run(&args);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let paths = text(&out.stdout);
    assert_eq!(paths.lines().count(), 1, "{paths}");
    assert!(
        paths.starts_with("/nix/store/") && stdout.contains(paths.trim_end()),
        "{paths}"
    );
}

#[test]
fn a_chock_zon_that_does_not_load_is_a_json_error_naming_its_line() {
    let f = Fixture::new(&[]);
    std::fs::write(
        f.project.path().join("chock.zon"),
        ".{\n  .policy = broken,\n}\n",
    )
    .unwrap();
    let mut args = vec!["--plan", "--json"];
    args.extend(PACKAGE);
    let out = f.run(&args);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let error: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one JSON object");
    let zon = f.project.path().join("chock.zon");
    assert_eq!(error["error"]["file"], zon.to_str().unwrap(), "{error}");
    assert_eq!(error["error"]["line"], 2, "{error}");
    assert!(
        error["error"]["message"]
            .as_str()
            .unwrap()
            .contains("broken"),
        "{error}"
    );
}

#[test]
fn plan_json_says_what_would_be_asked_and_touches_nothing() {
    let f = Fixture::new(&[("nix.build.packages.*", "allow")]);
    let out = f.run(&["--plan", "--json", PACKAGE[0], PACKAGE[1], PACKAGE[2]]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let plan: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one JSON object");
    assert_eq!(plan["hosts"].as_array().map(Vec::len), Some(2));
    assert_eq!(plan["questions"][0]["action"], "nix.net.hosts");
    assert_eq!(
        plan["decisions"][0]["action"],
        "nix.build.packages.x86_64-linux.two-hosts"
    );
    assert_eq!(plan["decisions"][0]["decision"], "allow");
    assert!(
        plan["derivation"]
            .as_str()
            .is_some_and(|d| d.ends_with("-two-hosts.drv")),
        "{plan}"
    );
    assert_eq!(f.allowed.count() + f.other.count(), 0);
    assert!(f.log().is_empty(), "a plan logs nothing");
}

#[test]
fn with_no_terminal_an_ask_is_a_refusal_naming_the_rules_to_add() {
    let f = Fixture::new(&[("nix.build.packages.*", "allow")]);
    let out = f.run(&PACKAGE);
    assert_eq!(out.status.code(), Some(3));
    let stderr = text(&out.stderr);
    for server in [&f.allowed, &f.other] {
        let rule = format!(
            ".{{ .action = \"nix.net.build.1.0.0.127.{}\", .decision = .allow }},",
            server.port
        );
        assert!(stderr.contains(&rule), "{stderr}");
    }
    assert_eq!(f.allowed.count() + f.other.count(), 0);
    let json = f.run(&["--json", PACKAGE[0], PACKAGE[1], PACKAGE[2]]);
    assert_eq!(json.status.code(), Some(3));
    let error: serde_json::Value = serde_json::from_slice(&json.stdout).expect("JSON");
    assert_eq!(error["error"]["kind"], "refused");
}

#[test]
fn a_foreign_flake_is_refused_in_one_sentence_and_bad_names_are_usage_errors() {
    let f = Fixture::new(&[("nix.build.*", "allow")]);
    let out = f.run(&["--flake", "github:NixOS/nixpkgs", "hello"]);
    assert_eq!(out.status.code(), Some(3));
    let stderr = text(&out.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("github:NixOS/nixpkgs"), "{stderr}");
    let dotted = f.run(&["packages.x86_64-linux.default"]);
    assert_eq!(dotted.status.code(), Some(1));
    assert!(text(&dotted.stderr).contains("never one dotted string"));
}

/// Runs `chock build` on a terminal, answers `answer` at the prompt, and
/// returns the exit code, stdout and what the terminal showed.
fn on_terminal(f: &Fixture, answer: &str) -> (Option<i32>, String, String) {
    let done =
        chock_testkit::on_terminal(&mut f.command(&PACKAGE), answer, Duration::from_secs(120));
    (done.code, done.stdout, done.shown)
}

#[test]
fn a_person_at_the_terminal_answers_the_one_hosts_question() {
    let f = Fixture::new(&[("nix.build.packages.*", "allow")]);
    let (code, stdout, shown) = on_terminal(&f, "y\n");
    assert_eq!(code, Some(0), "terminal:\n{shown}");
    assert_eq!(shown.matches("[y/N]").count(), 1, "one question: {shown}");
    assert!(shown.contains("chock asks: nix.net.hosts"), "{shown}");
    assert!(shown.contains("2 hosts"), "{shown}");
    assert!(stdout.contains("was built"), "{stdout}");
    assert_eq!((f.allowed.count(), f.other.count()), (1, 1));
    let person = f
        .log()
        .lines()
        .filter(|l| l.contains("\"answered_by\":\"person\""))
        .count();
    assert_eq!(person, 2, "{}", f.log());
}

#[test]
fn a_person_who_says_no_at_the_terminal_refuses_the_build() {
    let f = Fixture::new(&[("nix.build.packages.*", "allow")]);
    let (code, _, shown) = on_terminal(&f, "n\n");
    assert_eq!(code, Some(3), "terminal:\n{shown}");
    assert!(shown.contains("said no"), "{shown}");
    assert_eq!(f.allowed.count() + f.other.count(), 0);
}

#[test]
fn a_missing_flake_input_is_fetched_under_the_rules_and_the_attribute_evaluated_once_more() {
    use chock_inputs::testing::{Reply, Server as InputServer, Tree};
    require_daemon();
    let tag = nonce("input");
    let tree = Tree::new("pkg", &[("hello", format!("{tag}\n").as_bytes(), false)]);
    let server = InputServer::http();
    server.route("/pkg.tar.gz", Reply::Body(tree.tar_gz()));
    let url = server.url("/pkg.tar.gz");
    let project = tempfile::tempdir().expect("tempdir");
    std::fs::write(
        project.path().join("flake.nix"),
        format!(
            r#"{{
  inputs.pkg = {{ url = "{url}"; flake = false; }};
  outputs = {{ self, pkg }}: {{
    packages.x86_64-linux.default = derivation {{
      name = "with-input"; system = "x86_64-linux"; builder = "/bin/sh";
      args = [ "-c" "read x < ${{pkg}}/hello; echo $x > $out" ];
    }};
  }};
}}
"#
        ),
    )
    .expect("flake.nix");
    let lock = serde_json::json!({
        "nodes": {
            "pkg": {
                "flake": false,
                "locked": { "type": "tarball", "url": url, "narHash": tree.nar_hash() },
                "original": { "type": "tarball", "url": url },
            },
            "root": { "inputs": { "pkg": "pkg" } },
        },
        "root": "root",
        "version": 7,
    });
    std::fs::write(project.path().join("flake.lock"), lock.to_string()).expect("flake.lock");
    let home = tempfile::tempdir().expect("tempdir");
    let run = |rules: &str| {
        std::fs::write(project.path().join("chock.zon"), rules).expect("chock.zon");
        Command::new(chock())
            .args(["build", "--project"])
            .arg(project.path())
            .args(["packages", "x86_64-linux", "default"])
            .env("HOME", home.path())
            .env("XDG_CONFIG_HOME", home.path().join("config"))
            .env("XDG_DATA_HOME", home.path().join("data"))
            .env("CHOCK_STATE_DIR", home.path().join("state"))
            .stdin(Stdio::null())
            .output()
            .expect("run chock")
    };
    let build_only = ".{ .policy = .{ .rules = .{ .{ .action = \"nix.build.packages.*\", .decision = .allow } } } }";
    let refused = run(build_only);
    assert_eq!(refused.status.code(), Some(1), "{}", text(&refused.stderr));
    assert!(
        text(&refused.stderr).contains("`pkg`"),
        "the input nobody allowed is named: {}",
        text(&refused.stderr)
    );
    assert!(
        server.requests().is_empty(),
        "nothing fetched without a yes"
    );
    let with_host = ".{ .policy = .{ .rules = .{ .{ .action = \"nix.build.packages.*\", .decision = .allow }, .{ .action = \"nix.net.eval.localhost.*\", .decision = .allow } } } }";
    let out = run(with_host);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(server.requests(), vec!["/pkg.tar.gz".to_owned()]);
    let built = text(&out.stdout);
    let output = built
        .split("It produced ")
        .nth(1)
        .and_then(|o| o.strip_suffix(".\n"))
        .expect("an output");
    assert_eq!(
        std::fs::read_to_string(output).expect("output"),
        format!("{tag}\n")
    );
}

/// `chock build` reads the project beneath one held descriptor, from the
/// evaluation to the sources it writes: a link exchanged (renameat2 in a
/// loop, as an agent's background command could) with one to a file
/// outside, between the evaluator's check of `./x` and its read, never
/// leads a read out of the project.
#[test]
fn a_build_never_reads_through_a_link_exchanged_after_its_check() {
    let f = Fixture::new(&[("nix.build.packages.*", "allow")]);
    let project = f.project.path();
    std::fs::write(
        project.join("flake.nix"),
        r#"{ outputs = { self }: { packages.x86_64-linux.race = derivation {
  name = builtins.readFile ./x; system = "x86_64-linux";
  builder = "/bin/sh"; args = [ "-c" "echo > $out" ];
}; }; }"#,
    )
    .expect("flake.nix");
    sandbox_fixture::race_a_link_out(project, 6, || {
        let out = f.run(&["--plan", "--json", "packages", "x86_64-linux", "race"]);
        let shown = format!("{}{}", text(&out.stdout), text(&out.stderr));
        (
            out.status.success() && shown.contains("-inside-text.drv"),
            shown,
        )
    });
}
