//! `chock inputs` through the real binary: listing, `--json`, `--fetch`
//! against a loopback HTTPS server whose test CA reaches Chock through
//! `SSL_CERT_FILE`, the decision log, and the exit codes. `--fetch` needs
//! the Nix daemon on this machine (`scripts/setup` starts it).

use std::path::Path;
use std::process::{Command, Output};

mod advice_support;

use chock_inputs::testing::{Reply, Server, TestProject, Tree, flake_lock, nonce};
use serde_json::{Value, json};

const CHOCK: &str = env!("CARGO_BIN_EXE_chock");

/// The shared project and state folders, and `chock inputs` run on them.
struct Fixture(TestProject);

impl std::ops::Deref for Fixture {
    type Target = TestProject;
    fn deref(&self) -> &TestProject {
        &self.0
    }
}

impl Fixture {
    fn new() -> Fixture {
        Fixture(TestProject::new())
    }

    /// `chock inputs --project <project> ARGS`, with the log, the operator
    /// config and the bundles in this test's own folders, and no CA.
    fn chock(&self, args: &[&str]) -> Command {
        let mut command = Command::new(CHOCK);
        command
            .arg("inputs")
            .arg("--project")
            .arg(self.project())
            .args(args)
            .env("CHOCK_STATE_DIR", self.state())
            .env("XDG_CONFIG_HOME", self.state().join("config"))
            .env("XDG_DATA_HOME", self.state().join("data"))
            .env("NIX_REMOTE", "daemon")
            .env_remove("SSL_CERT_FILE")
            .env_remove("XDG_STATE_HOME")
            .env_remove("CHOCK_LOG");
        command
    }

    fn run(&self, args: &[&str]) -> Output {
        self.chock(args).output().expect("run chock")
    }

    fn run_with_ca(&self, args: &[&str]) -> Output {
        self.chock(args)
            .env("SSL_CERT_FILE", &self.ca_file)
            .output()
            .expect("run chock")
    }
}

fn describe(out: &Output) -> String {
    format!(
        "exit {:?}\nstdout: {}\nstderr: {}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

fn json_of(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", describe(out)))
}

fn input<'v>(report: &'v Value, name: &str) -> &'v Value {
    report["inputs"]
        .as_array()
        .and_then(|all| all.iter().find(|i| i["input"] == name))
        .unwrap_or_else(|| panic!("no input {name}: {report:#}"))
}

const REV: &str = "0123456789abcdef0123456789abcdef01234567";
const HASH: &str = "sha256-47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=";

/// The listing names each input, its hosts under both names and the answer
/// a session start would give, follows included, and logs nothing.
#[test]
fn the_listing_names_inputs_hosts_and_answers() {
    let fx = Fixture::new();
    let lock = json!({
        "version": 7, "root": "root",
        "nodes": {
            "root": { "inputs": { "nixpkgs": "nixpkgs", "corp": "corp", "registry": "registry" } },
            "nixpkgs": { "locked": { "type": "github", "owner": "NixOS", "repo": "nixpkgs", "rev": REV, "narHash": HASH } },
            "corp": {
                "inputs": { "nixpkgs": ["nixpkgs"] },
                "locked": { "type": "github", "owner": "o", "repo": "r", "rev": REV, "narHash": HASH, "host": "git.corp.example" }
            },
            "registry": { "original": { "type": "indirect", "id": "nixpkgs" } }
        }
    });
    fx.write(
        &lock.to_string(),
        &[
            ("nix.net.com.github.*", "allow"),
            ("nix.net.eval.*", "deny"),
        ],
    );
    let out = fx.run(&["--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", describe(&out));
    let report = json_of(&out);
    assert_eq!(input(&report, "nixpkgs")["type"], "github");
    assert_eq!(
        input(&report, "nixpkgs")["hosts"],
        json!(["api.github.com:443", "codeload.github.com:443"])
    );
    assert_eq!(
        input(&report, "corp")["hosts"],
        json!(["git.corp.example:443"])
    );
    assert_eq!(input(&report, "registry")["state"], "refused");
    assert!(
        input(&report, "registry")["message"]
            .as_str()
            .is_some_and(|m| m.contains("indirect")),
        "{report:#}"
    );
    assert_eq!(
        report["follows"],
        json!([{ "input": "corp/nixpkgs", "follows": "nixpkgs", "node": "nixpkgs" }])
    );
    let hosts = report["hosts"].as_array().expect("hosts");
    let action = |h: &Value| h["action"].as_str().unwrap_or("").to_string();
    assert_eq!(
        hosts.iter().map(action).collect::<Vec<_>>(),
        [
            "nix.net.eval.example.corp.git.443",
            "nix.net.eval.com.github.api.443",
            "nix.net.eval.com.github.codeload.443"
        ],
        "in the order the inputs are met, input names sorted"
    );
    assert_eq!(hosts[1]["either"], "nix.net.com.github.api.443");
    assert_eq!(
        hosts[1]["decision"], "allow",
        "the host rule beats the phase class"
    );
    assert_eq!(hosts[0]["decision"], "deny");
    assert!(
        fx.log_lines().is_empty(),
        "a listing decides nothing and logs nothing"
    );

    let text = fx.run(&[]);
    assert_eq!(text.status.code(), Some(0), "{}", describe(&text));
    let stdout = String::from_utf8_lossy(&text.stdout);
    assert!(stdout.contains("corp/nixpkgs follows nixpkgs"), "{stdout}");
    assert!(
        stdout.contains(".{ .action = \"nix.net.eval.example.corp.git.443\", .decision = .allow }"),
        "the rule that would let it through is named: {stdout}"
    );
}

/// `--fetch` fetches over HTTPS with the CA from `SSL_CERT_FILE`, logs the
/// host's answer, and the next run finds the input in the store.
#[test]
fn fetch_trusts_ssl_cert_file_logs_and_lands_in_the_store() {
    let fx = Fixture::new();
    let server = Server::https(&fx.ca);
    let marker = nonce();
    let tree = Tree::new("pkg", &[("default.nix", marker.as_bytes(), false)]);
    server.route("/pkg.tar.gz", Reply::Body(tree.tar_gz()));
    fx.write(
        &flake_lock(&[(
            "pkg",
            json!({ "type": "tarball", "url": server.url("/pkg.tar.gz"), "narHash": tree.nar_hash() }),
        )]),
        &[("nix.net.eval.localhost.*", "allow")],
    );

    // Without the CA the server is not trusted: a fault, nothing written.
    let untrusted = fx.run(&["--fetch"]);
    assert_eq!(untrusted.status.code(), Some(1), "{}", describe(&untrusted));
    let stdout = String::from_utf8_lossy(&untrusted.stdout);
    assert!(
        stdout.contains("failed: GET https://localhost:"),
        "{stdout}"
    );

    let out = fx.run_with_ca(&["--fetch", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", describe(&out));
    let report = json_of(&out);
    let pkg = input(&report, "pkg");
    assert_eq!(pkg["state"], "fetched", "{report:#}");
    let path = pkg["store_path"].as_str().expect("a store path");
    assert_eq!(
        std::fs::read_to_string(Path::new(path).join("default.nix")).expect("in the store"),
        marker
    );
    let lines = fx.log_lines();
    let fetched: Vec<&Value> = lines
        .iter()
        .filter(|l| l["action"] == format!("nix.net.eval.localhost.{}", server.port()))
        .collect();
    assert_eq!(
        fetched.len(),
        2,
        "one line per run that fetched: {lines:#?}"
    );
    assert!(
        fetched
            .iter()
            .all(|l| l["decision"] == "allow" && l["route"] == "inputs")
    );

    let again = fx.run_with_ca(&["--fetch"]);
    assert_eq!(again.status.code(), Some(0), "{}", describe(&again));
    assert!(
        String::from_utf8_lossy(&again.stdout).contains("in the store"),
        "{}",
        describe(&again)
    );
    assert_eq!(server.requests(), ["/pkg.tar.gz"], "fetched once");
    assert_eq!(
        fx.log_lines().len(),
        2,
        "an input in the store asks nothing"
    );
}

/// With no rule, a session start asks nobody: nothing is fetched, the run
/// is refused (3), and the rule to write is printed.
#[test]
fn fetch_without_a_rule_is_refused_and_names_the_rule() {
    let fx = Fixture::new();
    let server = Server::https(&fx.ca);
    let tree = Tree::new("t", &[("a", nonce().as_bytes(), false)]);
    server.route("/t.tar.gz", Reply::Body(tree.tar_gz()));
    fx.write(
        &flake_lock(&[(
            "t",
            json!({ "type": "tarball", "url": server.url("/t.tar.gz"), "narHash": tree.nar_hash() }),
        )]),
        &[],
    );
    let out = fx.run_with_ca(&["--fetch"]);
    assert_eq!(out.status.code(), Some(3), "{}", describe(&out));
    let action = format!("nix.net.eval.localhost.{}", server.port());
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains(&format!("not fetched: {action} is not allowed")),
        "{stdout}"
    );
    assert!(
        stdout.contains(&format!(
            ".{{ .action = \"{action}\", .decision = .allow }}"
        )),
        "{stdout}"
    );
    assert!(server.requests().is_empty());
    let lines = fx.log_lines();
    assert_eq!(lines.len(), 1, "{lines:#?}");
    assert_eq!(lines[0]["decision"], "ask");
    assert_eq!(lines[0]["answered_by"], "nobody");
    // The advice under the refusal, added where it says, fetches the input.
    let advice = advice_support::advice(&stdout);
    assert_eq!(
        advice.block,
        format!(
            ".policy.rules in {}",
            fx.project().join("chock.zon").display()
        )
    );
    std::fs::write(
        fx.project().join("chock.zon"),
        format!(".{{ .policy = .{{ .rules = .{{ {} }} }} }}\n", advice.rule),
    )
    .expect("chock.zon");
    let out = fx.run_with_ca(&["--fetch"]);
    assert_eq!(out.status.code(), Some(0), "{}", describe(&out));
    assert!(!server.requests().is_empty());
}

#[test]
fn a_project_without_a_lock_has_no_inputs() {
    let fx = Fixture::new();
    let out = fx.run(&["--fetch"]);
    assert_eq!(out.status.code(), Some(0), "{}", describe(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("no flake.lock"));
}

#[test]
fn a_broken_lock_names_the_file_and_line() {
    let fx = Fixture::new();
    std::fs::write(
        fx.project().join("flake.lock"),
        "{\n  \"version\": 7,\n  \"nodes\": {,\n}",
    )
    .expect("write");
    let out = fx.run(&[]);
    assert_eq!(out.status.code(), Some(1), "{}", describe(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("flake.lock:3:"), "{stderr}");
    assert!(
        stderr.contains("nix flake lock"),
        "says what to do: {stderr}"
    );
}
