//! `chock eval --flake REF ATTR...`: one attribute of a flake's outputs,
//! given one name per argument; a derivation answers its drvPath and
//! outPath (as nix_eval does), the same paths Nix 2.8 gives. A pure
//! evaluation never reads outside its roots, even while names are swapped.

mod sandbox_fixture;

use std::path::Path;
use std::process::{Command, Output};

fn chock() -> &'static str {
    env!("CARGO_BIN_EXE_chock")
}

fn eval(dir: &Path, args: &[&str]) -> Output {
    Command::new(chock())
        .arg("eval")
        .args(args)
        .current_dir(dir)
        .output()
        .expect("chock runs")
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

const FLAKE: &str = r#"{
  outputs = { self }: {
    packages.x86_64-linux.default = derivation {
      name = "eval-flake";
      builder = "/bin/sh";
      system = "x86_64-linux";
      args = [ "-c" "echo ${self.narHash} > $out" ];
    };
    answer = { a = 1; b = [ "two" ]; };
  };
}
"#;

fn project() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("flake.nix"), FLAKE).expect("flake.nix");
    dir
}

#[test]
fn a_flake_attribute_is_evaluated_one_name_per_argument() {
    let dir = project();
    let out = eval(dir.path(), &["--flake", ".", "--strict", "answer"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), r#"{ a = 1; b = [ "two" ]; }"#);
    let out = eval(dir.path(), &["--flake", "path:.", "--json", "answer", "b"]);
    assert_eq!(stdout(&out), r#"["two"]"#, "{}", stderr(&out));
    let elsewhere = tempfile::tempdir().expect("tempdir");
    let absolute = dir.path().display().to_string();
    let out = eval(elsewhere.path(), &["--flake", &absolute, "answer", "a"]);
    assert_eq!(
        stdout(&out),
        "1",
        "the flake named is readable: {}",
        stderr(&out)
    );
}

#[test]
fn a_dotted_attribute_is_refused_with_the_split_it_meant() {
    let dir = project();
    let out = eval(
        dir.path(),
        &["--flake", ".", "packages.x86_64-linux.default"],
    );
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("--flake . packages x86_64-linux default"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_derivation_answers_the_paths_nix_gives_it() {
    let dir = project();
    let out = eval(
        dir.path(),
        &["--flake", ".", "packages", "x86_64-linux", "default"],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let ours = stdout(&out);
    assert!(ours.starts_with("{ drvPath = \"/nix/store/"), "{ours}");
    let nix = Command::new("nix")
        .args([
            "--extra-experimental-features",
            "nix-command flakes",
            "eval",
            "--impure",
            "--raw",
            "--expr",
        ])
        .arg(format!(
            "let d = (builtins.getFlake \"path:{}\").packages.x86_64-linux.default; in \"{{ drvPath = \\\"${{d.drvPath}}\\\"; outPath = \\\"${{d.outPath}}\\\"; }}\"",
            dir.path().display()
        ))
        .env("NIX_REMOTE", "daemon")
        .output()
        .unwrap_or_else(|e| panic!("cannot run nix ({e}); run scripts/setup"));
    assert!(
        nix.status.success(),
        "nix eval failed (is the daemon up? run scripts/setup): {}",
        stderr(&nix)
    );
    assert_eq!(ours, stdout(&nix));
}

#[test]
fn a_missing_attribute_names_what_the_flake_has() {
    let dir = project();
    let out = eval(dir.path(), &["--flake", ".", "nope"]);
    assert!(!out.status.success());
    let text = stderr(&out);
    assert!(
        text.contains("no attribute 'nope'") && text.contains("answer"),
        "{text}"
    );
}

/// `--timeout` stops an evaluation that would run for minutes (a billion
/// additions in shallow calls, little memory) soon after the bound, with a
/// message that says why; `tryEval` cannot catch it.
#[test]
fn an_evaluation_stops_at_its_time_bound() {
    let dir = tempfile::tempdir().expect("tempdir");
    let endless = "builtins.tryEval (builtins.foldl' (a: i: a + builtins.foldl' (x: y: x + y) 0 (builtins.genList (x: x) 10000)) 0 (builtins.genList (x: x) 100000))";
    let started = std::time::Instant::now();
    let out = eval(dir.path(), &["--timeout", "1", "--expr", endless]);
    let took = started.elapsed();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains("time bound"), "{}", stderr(&out));
    assert!(
        took < std::time::Duration::from_secs(20),
        "stopped only after {took:?}"
    );
}

/// Ctrl-C stops a builtin that allocates in a long loop (`genList` of 5 x 10^7)
/// soon, as an error; a second Ctrl-C ends a process that reaches no check
/// (here blocked reading a pipe nobody writes) at once.
#[test]
fn ctrl_c_stops_a_long_builtin_and_a_second_one_ends_the_process() {
    use std::os::unix::process::ExitStatusExt;
    use std::process::Stdio;
    use std::time::{Duration, Instant};
    let dir = tempfile::tempdir().expect("tempdir");
    let start = |args: &[&str]| {
        Command::new(chock())
            .arg("eval")
            .args(args)
            .current_dir(dir.path())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("chock runs")
    };
    let interrupt = |child: &std::process::Child| {
        // SAFETY: kill takes plain integers; the child has not been reaped.
        let sent = unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) };
        assert_eq!(sent, 0, "SIGINT not sent");
    };

    let child = start(&[
        "--expr",
        "builtins.length (builtins.genList (x: x) 50000000)",
    ]);
    std::thread::sleep(Duration::from_millis(500));
    let sent = Instant::now();
    interrupt(&child);
    let out = child.wait_with_output().expect("chock ends");
    let took = sent.elapsed();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains("interrupted"), "{}", stderr(&out));
    assert!(
        took < Duration::from_secs(5),
        "stopped {took:?} after Ctrl-C"
    );
    println!("genList of 5 x 10^7 stopped {took:?} after Ctrl-C");

    let child = start(&["--impure", "--expr", "builtins.readFile /dev/stdin"]);
    std::thread::sleep(Duration::from_millis(500));
    interrupt(&child);
    std::thread::sleep(Duration::from_millis(300));
    interrupt(&child);
    let out = child.wait_with_output().expect("chock ends");
    assert_eq!(
        out.status.signal(),
        Some(libc::SIGINT),
        "{:?}: {}",
        out.status,
        stderr(&out)
    );
}

/// A link in the project that leads out of it is not followed by a pure
/// evaluation, whether read by `--expr` or through a flake's own source
/// (whose links Nix keeps as links): the error says so.
#[test]
fn a_link_leading_out_of_the_project_is_not_followed() {
    let dir = project();
    let outside = tempfile::tempdir().expect("tempdir");
    std::fs::write(outside.path().join("secret"), "outside-secret").expect("secret");
    std::fs::write(
        dir.path().join("flake.nix"),
        "{ outputs = { self }: { read = builtins.readFile ./x; }; }",
    )
    .expect("flake.nix");
    let relative = format!(
        "../{}/secret",
        outside.path().file_name().expect("name").to_string_lossy()
    );
    for target in [
        outside.path().join("secret").display().to_string(),
        relative,
    ] {
        let _ = std::fs::remove_file(dir.path().join("x"));
        std::os::unix::fs::symlink(&target, dir.path().join("x")).expect("link");
        for args in [
            &["--expr", "builtins.readFile ./x"][..],
            &["--flake", ".", "read"],
        ] {
            let out = eval(dir.path(), args);
            assert!(
                !out.status.success(),
                "{args:?} through {target}: {}",
                stdout(&out)
            );
            assert!(
                !stdout(&out).contains("outside-secret"),
                "{args:?} through {target}"
            );
            assert!(
                stderr(&out).contains("leads out of the project")
                    || stderr(&out).contains("forbidden in pure evaluation mode"),
                "{args:?} through {target}: {}",
                stderr(&out)
            );
        }
    }
}

/// A pure `chock eval` reads its roots beneath a held descriptor: a link
/// exchanged (renameat2 in a loop, as an agent's background command could)
/// with one to a file outside, between the evaluator's check of `./x` and
/// its read, never leads the read out of the project.
#[test]
fn a_pure_eval_never_reads_through_a_link_exchanged_after_its_check() {
    let dir = project();
    sandbox_fixture::race_a_link_out(dir.path(), 6, || {
        let out = eval(dir.path(), &["--expr", "builtins.readFile ./x"]);
        (
            out.status.success(),
            format!("{}{}", stdout(&out), stderr(&out)),
        )
    });
}
