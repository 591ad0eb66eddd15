//! Test support shared by the crates' integration tests: replaying a fuzz
//! corpus, and requiring the Nix daemon.
//!
//! Every parser of outside input has a cargo-fuzz target whose corpus is
//! kept in the repository; each crate's tests replay it on stable Rust with
//! [`replay_fuzz_corpus`], so `cargo test` keeps every input a fuzzer ever
//! found interesting (docs/fuzzing.md).

use std::path::Path;

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
