//! A dev shell is built through chock-nix before Nix reads it, with the
//! asker and route the caller gives: the tool server's `mcp` lines, a
//! person's yes, a refusal that builds nothing, a cached shell that asks
//! nothing. Needs the Nix daemon (`scripts/setup`).

use std::cell::RefCell;
use std::path::Path;

use chock_log::{Log, Rotation};
use chock_nix::BuildError;
use chock_policy::{Answer, Asker, Policy, Question};
use chock_sandbox::devshell::{self, DevShellError};
use chock_sandbox::exec::devshell_builder;

fn require_daemon() {
    chock_testkit::require_nix_daemon(&chock_store::daemon::socket_path());
}

/// A flake whose dev shell needs a payload that writes `marker` (where a
/// build user may write) when it is built.
fn project(marker: &Path) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    let system = devshell::system();
    let flake = format!(
        r#"{{
  outputs = {{ self }}: let
    system = "{system}";
    payload = derivation {{
      name = "payload"; inherit system; builder = "/bin/sh"; PATH = "/usr/bin:/bin";
      args = [ "-c" "echo built > {marker} && mkdir -p $out/bin" ];
    }};
  in {{
    devShells.${{system}}.default = derivation {{
      name = "shell"; inherit system payload; builder = "/bin/bash";
      outputs = [ "out" ]; args = [ "-c" "echo > $out" ];
      PATH = "${{payload}}/bin";
    }};
  }};
}}
"#,
        marker = marker.display()
    );
    std::fs::write(dir.path().join("flake.nix"), flake).expect("flake.nix");
    dir
}

/// Answers every question with `answer`, keeping the actions asked.
struct Person {
    answer: Answer,
    asked: RefCell<Vec<String>>,
}

impl Asker for Person {
    fn ask(&self, question: &Question) -> Answer {
        self.asked.borrow_mut().push(question.action.clone());
        self.answer
    }
}

fn log_lines(dir: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(dir.join("decisions.jsonl"))
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).expect("a log line is JSON"))
        .collect()
}

#[test]
fn the_shell_is_asked_about_built_and_logged_under_the_callers_route() {
    require_daemon();
    let nonce = format!(
        "{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .expect("clock")
            .as_nanos()
    );
    let marker = std::env::temp_dir().join(format!("chock-devshell-test-{nonce}"));
    let project = project(&marker);
    let state = tempfile::tempdir().expect("tempdir");
    let cache = state.path().join("shells");
    let log = Log::at(state.path().join("log"), Rotation::default());
    let policy = Policy::from_rules(Vec::new(), Vec::new());
    let action = format!("nix.build.devShells.{}.default", devshell::system());

    let no = Person {
        answer: Answer::No,
        asked: RefCell::default(),
    };
    let refused = devshell::load(
        project.path(),
        "default",
        &cache,
        &devshell_builder(&policy, &log, &no, chock_gate::Route::Mcp),
    )
    .expect_err("a person said no");
    assert!(
        matches!(
            refused,
            DevShellError::Build {
                source: BuildError::Refused(_),
                ..
            }
        ),
        "{refused}"
    );
    assert_eq!(
        *no.asked.borrow(),
        std::slice::from_ref(&action),
        "asked once, by name"
    );
    assert!(!marker.exists(), "nothing was built after a no");
    assert!(
        devshell::cached(&cache).is_empty(),
        "nothing was cached after a no"
    );

    let yes = Person {
        answer: Answer::Yes,
        asked: RefCell::default(),
    };
    let shell = devshell::load(
        project.path(),
        "default",
        &cache,
        &devshell_builder(&policy, &log, &yes, chock_gate::Route::Mcp),
    )
    .expect("a person said yes")
    .expect("the flake declares devShells");
    assert_eq!(*yes.asked.borrow(), std::slice::from_ref(&action));
    assert!(marker.exists(), "the shell's payload was built");
    assert!(!shell.cached);
    assert!(
        shell
            .env
            .get("PATH")
            .is_some_and(|p| p.ends_with("-payload/bin")),
        "{:?}",
        shell.env
    );
    std::fs::remove_file(&marker).expect("the marker is removed");

    let again = Person {
        answer: Answer::No,
        asked: RefCell::default(),
    };
    let cached = devshell::load(
        project.path(),
        "default",
        &cache,
        &devshell_builder(&policy, &log, &again, chock_gate::Route::Mcp),
    )
    .expect("served from the cache")
    .expect("the flake declares devShells");
    assert!(cached.cached, "an unchanged flake is served from the cache");
    assert!(
        again.asked.borrow().is_empty(),
        "a cached shell asks nothing"
    );

    let lines: Vec<serde_json::Value> = log_lines(&state.path().join("log"))
        .into_iter()
        .filter(|l| l["action"] == action.as_str())
        .collect();
    assert_eq!(
        lines.len(),
        2,
        "one line per build, none for the cache hit: {lines:?}"
    );
    for line in &lines {
        assert_eq!(line["route"], "mcp", "{line}");
        assert_eq!(line["tool"], "run_command", "{line}");
    }
}
