//! The sandbox started for real: namespaces, mounts, Landlock, seccomp.

use std::ffi::OsString;
use std::path::Path;

use chock_sandbox::{
    Command, Exit, Limits, Sandbox, Stdio, Toolchain, WriteExecute, resolve_layout,
};

fn sandbox(workspace: &Path, cache: &Path) -> Sandbox {
    let layout = resolve_layout(workspace, cache, &Toolchain::Host, 256 << 20).expect("layout");
    Sandbox::new(layout, Limits::for_this_machine(), WriteExecute::Refused).expect("sandbox")
}

fn run(sandbox: &Sandbox, cwd: &Path, args: &[&str]) -> chock_sandbox::Finished {
    let command = Command {
        program: args[0].into(),
        args: args.iter().map(OsString::from).collect(),
        env: vec![("PATH".into(), "/usr/bin:/bin".into())],
        cwd: cwd.to_path_buf(),
        stdio: Stdio::Capture { limit: 1 << 20 },
    };
    sandbox
        .spawn(&command)
        .expect("spawn")
        .wait()
        .expect("wait")
}

#[test]
fn a_program_runs_and_its_exit_code_comes_back() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ws = dir.path().join("ws");
    std::fs::create_dir(&ws).expect("ws");
    let sb = sandbox(&ws, &dir.path().join("cache"));
    let done = run(
        &sb,
        &ws,
        &["/bin/sh", "-c", "echo hello; echo oops >&2; exit 7"],
    );
    assert_eq!(
        done.exit,
        Exit::Code(7),
        "{}",
        String::from_utf8_lossy(&done.stderr)
    );
    assert_eq!(done.stdout, b"hello\n");
    assert_eq!(done.stderr, b"oops\n");
}

#[test]
fn doctor_finds_every_blocking_layer_on_this_machine() {
    let dir = tempfile::tempdir().expect("tempdir");
    let report = chock_sandbox::doctor::run(&chock_sandbox::doctor::Options {
        project: dir.path(),
        write_execute: WriteExecute::Refused,
    });
    for row in &report.rows {
        eprintln!(
            "{:?} {} {}: {}",
            row.state, row.blocking, row.name, row.detail
        );
    }
    assert!(
        report.can_run,
        "a blocking row failed: run scripts/setup and see the rows above"
    );
    let names: Vec<&str> = report.rows.iter().map(|r| r.name).collect();
    for wanted in [
        "user namespace",
        "landlock",
        "landlock enforced",
        "seccomp",
        "tmpfs cap",
        "cgroup memory and pids",
        "nix daemon",
        "nix build sandbox",
        "workspace space",
    ] {
        assert!(names.contains(&wanted), "no {wanted} row in {names:?}");
    }
}

#[test]
fn a_started_command_can_be_cancelled() {
    use chock_sandbox::exec::{self, ExecRequest};
    let dir = tempfile::tempdir().expect("tempdir");
    let project = chock_sandbox::project::Project::at(dir.path()).expect("project");
    let request = ExecRequest {
        project: project.clone(),
        dev_shell: "default".into(),
        argv: vec!["sleep".into(), "30".into()],
        cwd: project.dir.clone(),
        capture: Some(1024),
    };
    let policy = chock_policy::Policy::from_rules(Vec::new(), Vec::new());
    let log = chock_log::Log::at(dir.path().join("log"), chock_log::Rotation::default());
    let builder = exec::devshell_builder(
        &policy,
        &log,
        &chock_policy::Nobody,
        chock_gate::Route::Exec,
    );
    let toolchain =
        exec::toolchain(&project, "default", &builder).expect("no flake: the host's toolchain");
    let prepared = exec::prepare(
        &request,
        toolchain,
        Limits::for_this_machine(),
        WriteExecute::Refused,
    )
    .expect("prepared");
    let began = std::time::Instant::now();
    let started = prepared.start().expect("started");
    std::thread::sleep(std::time::Duration::from_millis(100));
    started.signal(libc::SIGTERM).expect("signalled");
    let ran = started.wait().expect("collected");
    assert_eq!(ran.finished.exit, Exit::Signal(libc::SIGTERM));
    // The cache was made under this user's data directory; leave nothing behind.
    if let Ok(cache) = project.cache_dir() {
        let _ = std::fs::remove_dir_all(cache);
    }
    assert!(
        began.elapsed() < std::time::Duration::from_secs(10),
        "the cancel reached the program"
    );
}

#[test]
fn the_sandbox_keeps_none_of_the_callers_descriptors_open() {
    use std::io::Read;
    let dir = tempfile::tempdir().expect("tempdir");
    let ws = dir.path().join("ws");
    std::fs::create_dir(&ws).expect("ws");
    let sb = sandbox(&ws, &dir.path().join("cache"));
    // A pipe of the caller's (say, another command's output) that is open
    // when the sandbox is made: once the caller closes its end, the reader
    // must see the end at once, not when the sandbox ends.
    let (mut reader, writer) = std::io::pipe().expect("pipe");
    let command = Command {
        program: "/bin/sh".into(),
        args: vec!["sh".into(), "-c".into(), "sleep 3".into()],
        env: vec![("PATH".into(), "/usr/bin:/bin".into())],
        cwd: ws,
        stdio: Stdio::Capture { limit: 1024 },
    };
    let running = sb.spawn(&command).expect("spawn");
    drop(writer);
    let began = std::time::Instant::now();
    let mut rest = Vec::new();
    reader.read_to_end(&mut rest).expect("read");
    assert!(
        began.elapsed() < std::time::Duration::from_secs(2),
        "the sandbox held the caller's pipe open for {:?}",
        began.elapsed()
    );
    running.signal(libc::SIGKILL).expect("end it");
    let _ = running.wait();
}

#[test]
fn a_piped_program_is_spoken_to_through_its_stdin_and_stdout() {
    use std::io::{BufRead, Write};
    let dir = tempfile::tempdir().expect("tempdir");
    let ws = dir.path().join("ws");
    std::fs::create_dir(&ws).expect("ws");
    let sb = sandbox(&ws, &dir.path().join("cache"));
    let command = Command {
        program: "/bin/sh".into(),
        args: [
            "/bin/sh",
            "-c",
            "echo ready >&2; while read line; do echo \"got $line\"; done",
        ]
        .iter()
        .map(OsString::from)
        .collect(),
        env: vec![("PATH".into(), "/usr/bin:/bin".into())],
        cwd: ws,
        stdio: Stdio::Pipe,
    };
    let mut running = sb.spawn(&command).expect("spawn");
    let (stdin, stdout) = running.take_pipes().expect("pipes");
    assert!(running.take_pipes().is_none(), "the pipes are given once");
    // Its stderr is a pipe of its own, apart from the protocol's stdout.
    let mut stderr =
        std::io::BufReader::new(std::fs::File::from(running.take_stderr().expect("stderr")));
    let mut said = String::new();
    stderr.read_line(&mut said).expect("read stderr");
    assert_eq!(said, "ready\n");
    let mut stdin = std::fs::File::from(stdin);
    let mut stdout = std::io::BufReader::new(std::fs::File::from(stdout));
    for word in ["one", "two"] {
        writeln!(stdin, "{word}").expect("write");
        let mut line = String::new();
        stdout.read_line(&mut line).expect("read");
        assert_eq!(line, format!("got {word}\n"));
    }
    // Closing its stdin ends the program, as it would outside.
    drop(stdin);
    assert_eq!(running.wait().expect("wait").exit, Exit::Code(0));
}

/// The host-describing directories of `/proc` (`PROC_MASKED_DIRS`) are
/// covered, each that exists, by an empty tmpfs that is read-only, nosuid,
/// nodev and noexec, whether it got the file system or a bind of it.
#[test]
fn the_hosts_proc_directories_are_masked_empty_and_read_only() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ws = dir.path().join("ws");
    std::fs::create_dir(&ws).expect("ws");
    let sb = sandbox(&ws, &dir.path().join("cache"));
    let masked: Vec<&str> = chock_sandbox::PROC_MASKED_DIRS
        .into_iter()
        .filter(|name| Path::new("/proc").join(name).is_dir())
        .collect();
    assert!(masked.len() >= 2, "this kernel shows {masked:?}");
    let script = "for d in \"$@\"; do \
        echo \"$d entries=$(ls -A /proc/$d | wc -l)\"; \
        touch /proc/$d/x 2>/dev/null && echo \"$d written\"; \
        awk -v d=\"/proc/$d\" '$5 == d { print \"'$d' \" $6 \" \" $(NF-2) }' /proc/self/mountinfo; \
        done";
    let mut args = vec!["/bin/sh", "-c", script, "sh"];
    args.extend(&masked);
    let done = run(&sb, &ws, &args);
    let out = String::from_utf8_lossy(&done.stdout);
    assert_eq!(
        done.exit,
        Exit::Code(0),
        "{out}{}",
        String::from_utf8_lossy(&done.stderr)
    );
    for name in &masked {
        assert!(out.contains(&format!("{name} entries=0\n")), "{out}");
        assert!(!out.contains(&format!("{name} written")), "{out}");
        let mount = out
            .lines()
            .find(|l| l.starts_with(&format!("{name} ")) && !l.contains('='))
            .unwrap_or_else(|| panic!("no mount over /proc/{name}: {out}"));
        let mut fields = mount.split(' ').skip(1);
        let (options, fstype) = (fields.next().unwrap_or(""), fields.next());
        assert_eq!(fstype, Some("tmpfs"), "{out}");
        for option in ["ro", "nosuid", "nodev", "noexec"] {
            assert!(options.split(',').any(|o| o == option), "{mount}");
        }
    }
}
