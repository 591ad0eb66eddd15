//! Progress while `chock build` works, with the real Nix daemon: on a
//! terminal (a pty from util-linux's `script`) the steps and the build's
//! own log lines are drawn on one line that is cleared at the end; on a pipe
//! nothing is printed but the result. Fails, saying what to run, without the
//! daemon.

mod sandbox_fixture;

use std::path::Path;
use std::process::Command;

use sandbox_fixture::describe;

fn chock() -> &'static str {
    env!("CARGO_BIN_EXE_chock")
}

/// A project whose package prints two log lines while it builds, named with
/// a nonce so the daemon really builds it.
fn project(tag: &str) -> tempfile::TempDir {
    chock_testkit::require_nix_daemon(&chock_store::daemon::socket_path());
    let dir = tempfile::tempdir().expect("tempdir");
    let nonce = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .as_nanos();
    let flake = format!(
        r#"{{
  outputs = {{ self }}: {{
    packages.x86_64-linux.default = derivation {{
      name = "progress-{tag}-{}-{nonce}";
      system = "x86_64-linux";
      builder = "/bin/sh";
      args = [ "-c" "echo 'the build log says one'; echo 'the build log says two'; echo built > $out" ];
    }};
  }};
}}
"#,
        std::process::id()
    );
    std::fs::write(dir.path().join("flake.nix"), flake).expect("flake.nix");
    std::fs::write(
        dir.path().join("chock.zon"),
        ".{ .policy = .{ .rules = .{ .{ .action = \"nix.build.packages.*\", .decision = .allow } } } }\n",
    )
    .expect("chock.zon");
    dir
}

fn build(project: &Path, state: &Path) -> Command {
    let mut command = Command::new(chock());
    command
        .args(["build", "--project"])
        .arg(project)
        .args(["packages", "x86_64-linux", "default"])
        .env("CHOCK_STATE_DIR", state)
        .env_remove("CHOCK_LOG");
    command
}

#[test]
fn on_a_pipe_nothing_but_the_result() {
    let project = project("pipe");
    let state = tempfile::tempdir().expect("tempdir");
    let out = build(project.path(), state.path())
        .output()
        .expect("run chock build");
    assert_eq!(out.status.code(), Some(0), "{}", describe(&out));
    assert!(
        out.stderr.is_empty(),
        "progress on a pipe:\n{}",
        describe(&out)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("was built") && !stdout.contains('\u{1b}') && !stdout.contains('\r'),
        "{}",
        describe(&out)
    );
}

#[test]
fn on_a_terminal_the_steps_and_the_build_log_are_drawn_then_cleared() {
    let project = project("tty");
    let state = tempfile::tempdir().expect("tempdir");
    let inner = build(project.path(), state.path());
    let line = std::iter::once(inner.get_program())
        .chain(inner.get_args())
        .map(|a| format!("'{}'", a.to_string_lossy()))
        .collect::<Vec<_>>()
        .join(" ");
    // `script` runs the line on a pty and copies what it printed to stdout.
    let out = match Command::new("script")
        .args(["--quiet", "--return", "--command", &line, "/dev/null"])
        .env("CHOCK_STATE_DIR", state.path())
        .env("TERM", "xterm")
        .output()
    {
        Ok(out) => out,
        Err(e) => panic!("cannot run util-linux's script for a pty ({e}); install util-linux"),
    };
    let screen = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{}", describe(&out));
    for step in [
        "evaluating ",
        "writing 1/1 to the store: ",
        "building /nix/store/",
        "the build log says one",
        "the build log says two",
    ] {
        assert!(
            screen.contains(step),
            "no `{step}` drawn on the terminal:\n{screen:?}"
        );
    }
    // The line is cleared (erase line, carriage return) before the result.
    let result = screen.find("was built").expect("the result");
    let cleared = screen[..result]
        .rfind("\r\u{1b}[2K")
        .expect("the line cleared");
    assert!(
        !screen[cleared..result].contains("the build log"),
        "the progress line was left on the screen: {screen:?}"
    );
}
