//! Test support shared by the crates' integration tests and fuzz checks:
//! replaying a fuzz corpus, the time bound of a reading, requiring the Nix
//! daemon, and running a command on a terminal.
//!
//! Every parser of outside input has a cargo-fuzz target whose corpus is
//! kept in the repository; each crate's tests replay it on stable Rust with
//! [`replay_fuzz_corpus`], so `cargo test` keeps every input a fuzzer ever
//! found interesting (docs/fuzzing.md).

#![forbid(unsafe_code)]

use std::path::Path;
use std::time::{Duration, Instant};

/// Runs `check` on every file of `<crate>/fuzz/corpus/<name>`, where
/// `crate_dir` is the calling crate's `env!("CARGO_MANIFEST_DIR")`; a check
/// fails by panicking. Fails when the corpus holds fewer than `min` files, so
/// a corpus lost from the repository cannot pass as an empty one.
pub fn replay_fuzz_corpus(crate_dir: &str, name: &str, min: usize, check: fn(&[u8])) {
    let corpus = Path::new(crate_dir).join("fuzz/corpus").join(name);
    let entries = std::fs::read_dir(&corpus).unwrap_or_else(|e| {
        panic!(
            "the fuzz corpus {} is not readable ({e}); it is kept in the repository",
            corpus.display()
        )
    });
    let mut count = 0;
    for entry in entries {
        let path = entry.expect("a corpus entry").path();
        let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        check(&bytes);
        count += 1;
    }
    assert!(
        count >= min,
        "the corpus at {} has only {count} files, fewer than {min}",
        corpus.display()
    );
}

/// The longest one reading of a fuzz input may take, for a reader whose
/// time must stay linear in its input: 50 ms under the fuzzer (an
/// optimised build); ten times that when `cargo test` replays the corpus
/// unoptimised on a shared machine, which still catches any reading whose
/// time grows faster than its text.
pub const FUZZ_BOUND: Duration = if cfg!(fuzzing) {
    Duration::from_millis(50)
} else {
    Duration::from_millis(500)
};

/// Runs `read` and panics, naming `what`, when it took [`FUZZ_BOUND`] or
/// more every time at the fastest of three tries (a machine busy with
/// something else does not fail it).
pub fn assert_within_bound(what: &dyn Fn() -> String, mut read: impl FnMut()) {
    let mut fastest = Duration::MAX;
    for _ in 0..3 {
        let started = Instant::now();
        read();
        fastest = fastest.min(started.elapsed());
        if fastest < FUZZ_BOUND {
            return;
        }
    }
    panic!(
        "reading {} took {fastest:?} at the fastest of three, over {FUZZ_BOUND:?}",
        what()
    );
}

/// Fails the test, saying what to run, when no Nix daemon answers at
/// `socket` (pass `chock_store::daemon::socket_path()`): tests against the
/// real daemon must not pass by skipping it.
pub fn require_nix_daemon(socket: &Path) {
    if let Err(e) = std::os::unix::net::UnixStream::connect(socket) {
        panic!(
            "this test needs the Nix daemon at {}: run scripts/setup ({e})",
            socket.display()
        );
    }
}

/// A PATH with the folder of `chock` (a test's `CARGO_BIN_EXE_chock`)
/// first, then this process's own: what hooks and git hooks a test runs
/// find `chock` on.
pub fn path_with_chock(chock: &str) -> String {
    let folder = Path::new(chock).parent().unwrap_or(Path::new("/"));
    format!(
        "{}:{}",
        folder.display(),
        std::env::var("PATH").unwrap_or_default()
    )
}

/// `program` run in `dir` with nothing of the machine's environment: PATH
/// is `bin_dir` then `path`, HOME, the XDG folders and Chock's state folder
/// are the test's own, and git reads no system config and signs as "Test".
pub fn isolated_command(
    program: &str,
    dir: &Path,
    path: &str,
    home: &Path,
    state: &Path,
) -> std::process::Command {
    let mut command = std::process::Command::new(program);
    command
        .current_dir(dir)
        .env_clear()
        .env("PATH", path)
        .env("HOME", home)
        .env("XDG_CONFIG_HOME", home.join(".config"))
        .env("XDG_DATA_HOME", home.join(".local/share"))
        .env("CHOCK_STATE_DIR", state)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_AUTHOR_NAME", "Test")
        .env("GIT_AUTHOR_EMAIL", "test@example.com")
        .env("GIT_COMMITTER_NAME", "Test")
        .env("GIT_COMMITTER_EMAIL", "test@example.com");
    command
}

/// What a command run on a terminal came to: its exit code, what it wrote
/// to stdout (a pipe), and what the terminal showed (its stderr).
pub struct OnTerminal {
    pub code: Option<i32>,
    pub stdout: String,
    pub shown: String,
}

/// Runs `command` with a pseudo-terminal as its stdin and stderr (stdout
/// a pipe), typing `answer` at the first `[y/N]` it shows; fails the test
/// when it runs longer than `limit`.
pub fn on_terminal(
    command: &mut std::process::Command,
    answer: &str,
    limit: Duration,
) -> OnTerminal {
    use std::io::{Read, Write};
    use std::process::Stdio;
    let pty = nix::pty::openpty(None, None).expect("openpty");
    let (mut master, slave) = (std::fs::File::from(pty.master), pty.slave);
    let mut child = command
        .stdin(Stdio::from(slave.try_clone().expect("dup")))
        .stderr(Stdio::from(slave.try_clone().expect("dup")))
        .stdout(Stdio::piped())
        .spawn()
        .expect("spawn the command");
    drop(slave);
    let flags = nix::fcntl::fcntl(&master, nix::fcntl::FcntlArg::F_GETFL).expect("F_GETFL");
    let flags = nix::fcntl::OFlag::from_bits_truncate(flags) | nix::fcntl::OFlag::O_NONBLOCK;
    nix::fcntl::fcntl(&master, nix::fcntl::FcntlArg::F_SETFL(flags)).expect("F_SETFL");
    let mut shown = String::new();
    let deadline = Instant::now() + limit;
    let mut answered = false;
    loop {
        let mut buf = [0u8; 4096];
        match master.read(&mut buf) {
            Ok(n) if n > 0 => shown.push_str(&String::from_utf8_lossy(&buf[..n])),
            _ => std::thread::sleep(Duration::from_millis(20)),
        }
        if !answered && shown.contains("[y/N]") {
            master.write_all(answer.as_bytes()).expect("answer");
            answered = true;
        }
        if let Some(status) = child.try_wait().expect("wait") {
            // What the child wrote just before it ended is still in the pty.
            while let Ok(n) = master.read(&mut buf) {
                if n == 0 {
                    break;
                }
                shown.push_str(&String::from_utf8_lossy(&buf[..n]));
            }
            let mut stdout = String::new();
            child
                .stdout
                .take()
                .expect("stdout")
                .read_to_string(&mut stdout)
                .expect("stdout");
            return OnTerminal {
                code: status.code(),
                stdout,
                shown,
            };
        }
        assert!(
            Instant::now() < deadline,
            "the command hung; the terminal showed:\n{shown}"
        );
    }
}
