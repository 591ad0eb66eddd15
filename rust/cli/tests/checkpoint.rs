//! `chock log checkpoint`, `chock log prove` and `chock witness serve`
//! through the real binary: a real witness on loopback cosigning the log's
//! checkpoints, refusing rewritten logs, and cutting off huge and slow
//! requests; and the log's key out of a real sandbox's sight.

mod sandbox_fixture;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::process::{Child, Output, Stdio};
use std::time::{Duration, Instant};

use chock_tlog::{AddCheckpoint, Checkpoint, Note, SignerKey, VerifierKey};

#[path = "log_support/mod.rs"]
mod log_support;
use log_support::State;

/// What these tests read of a state folder beyond its log.
trait Checkpointed {
    /// A rewriter's clean-up: the checkpoint beside the log goes too.
    fn forget_checkpoint(&self);
    fn log_key(&self) -> SignerKey;
}

impl Checkpointed for State {
    fn forget_checkpoint(&self) {
        std::fs::remove_file(self.log().join("checkpoint")).unwrap();
        std::fs::remove_file(self.log().join("checkpoint.tree")).unwrap();
    }

    fn log_key(&self) -> SignerKey {
        let text = std::fs::read_to_string(self.0.join("keys/checkpoint.key")).unwrap();
        SignerKey::parse(&text).unwrap()
    }
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn ok(output: Output) -> String {
    assert!(
        output.status.success(),
        "exit {:?}\nstdout: {}\nstderr: {}",
        output.status.code(),
        text(&output.stdout),
        text(&output.stderr)
    );
    text(&output.stdout)
}

fn failed(output: &Output) -> String {
    assert_eq!(
        output.status.code(),
        Some(1),
        "stdout: {}\nstderr: {}",
        text(&output.stdout),
        text(&output.stderr)
    );
    text(&output.stderr)
}

fn checkpoint_json(state: &State, extra: &[&str]) -> serde_json::Value {
    let mut args = vec!["log", "checkpoint", "--json"];
    args.extend_from_slice(extra);
    serde_json::from_str(&ok(state.run(&args))).unwrap()
}

/// Rewrites line `index` (from 0) of the current log file.
fn edit_line(path: &Path, index: usize) {
    let mut lines: Vec<String> = std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect();
    lines[index] = lines[index].replace("allow", "deny");
    std::fs::write(path, lines.join("\n") + "\n").unwrap();
}

#[test]
fn a_checkpoint_is_signed_kept_and_proved_and_a_rewrite_is_refused() {
    let state = State::new("checkpoint", "prove");
    state.append(10);
    let first = state.run(&["log", "checkpoint", "--json"]);
    let made = text(&first.stderr);
    let first: serde_json::Value = serde_json::from_str(&ok(first)).unwrap();
    let verifier = VerifierKey::parse(first["verifier_key"].as_str().unwrap()).unwrap();
    assert!(made.contains(&verifier.to_string()), "{made}");
    assert!(verifier.name().starts_with("chock.local/") && verifier.name().ends_with("/ada"));
    let key = state.0.join("keys/checkpoint.key");
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(
        std::fs::metadata(&key).unwrap().permissions().mode() & 0o777,
        0o600
    );
    let stored = std::fs::read(state.log().join("checkpoint")).unwrap();
    let note = Note::parse(&stored).unwrap();
    assert!(verifier.verifies(&note));
    assert_eq!(Checkpoint::parse(&note.text).unwrap().size, 10);
    let saved = state.0.join("saved.checkpoint");
    std::fs::write(&saved, &stored).unwrap();
    let saved = saved.to_str().unwrap();

    state.append(7);
    let second = checkpoint_json(&state, &[]);
    assert_eq!(second["size"], 17);
    assert!(
        state.run(&["log", "checkpoint"]).stderr.is_empty(),
        "the key is made once"
    );
    let proof: serde_json::Value = serde_json::from_str(&ok(
        state.run(&["log", "prove", "--from", "10", "--check", saved, "--json"])
    ))
    .unwrap();
    assert_eq!(proof["verified"], true);
    assert_eq!(
        (proof["old"].as_u64(), proof["new"].as_u64()),
        (Some(10), Some(17))
    );
    let inclusion = ok(state.run(&["log", "prove", "--index", "3", "--check", saved]));
    assert!(
        inclusion.starts_with("inclusion proof\nindex 3\nsize 10\n"),
        "{inclusion}"
    );
    assert!(ok(state.run(&["log", "prove", "--index", "16"])).contains("\nsize 17\n"));
    failed(&state.run(&["log", "prove", "--index", "17"]));

    // An earlier line changed: the stored checkpoint no longer matches.
    edit_line(&state.log().join("decisions.jsonl"), 4);
    let refused = failed(&state.run(&["log", "checkpoint"]));
    assert!(refused.contains("rewritten"), "{refused}");
    // With the files beside it gone too, the saved checkpoint still tells.
    state.forget_checkpoint();
    let output = state.run(&["log", "prove", "--from", "10", "--check", saved]);
    assert!(failed(&output).contains("does NOT verify"));
}

#[test]
fn lines_rotation_removed_stay_in_the_tree() {
    let state = State::new("checkpoint", "rotate");
    let append = |n: &str| {
        ok(state.run(&[
            "log",
            "append",
            "--count",
            n,
            "--rotate-bytes",
            "2000",
            "--keep",
            "1",
        ]))
    };
    append("4");
    let first = checkpoint_json(&state, &[]);
    assert_eq!(first["size"], 4);
    for _ in 0..6 {
        append("5");
        checkpoint_json(&state, &[]);
    }
    let kept = checkpoint_json(&state, &[]);
    assert_eq!(
        kept["size"], 34,
        "the removed files' lines are still counted"
    );
    let in_log = std::fs::read_dir(state.log())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .map(|p| std::fs::read_to_string(p).unwrap().lines().count())
        .sum::<usize>();
    assert!(in_log < 34, "rotation removed lines: {in_log} are left");
    let proof: serde_json::Value =
        serde_json::from_str(&ok(state.run(&["log", "prove", "--from", "4", "--json"]))).unwrap();
    assert_eq!(proof["old_root"], first["root"]);
    assert_eq!(proof["new_root"], kept["root"]);
    // Lines rotated away before any checkpoint covered them are not in the
    // tree; the ones covered stay its prefix.
    append("40");
    let gapped = checkpoint_json(&state, &[]);
    let size = gapped["size"].as_u64().unwrap();
    assert!(size > 34 && size < 74, "{size}");
    let proof: serde_json::Value =
        serde_json::from_str(&ok(state.run(&["log", "prove", "--from", "34", "--json"]))).unwrap();
    assert_eq!(proof["old_root"], kept["root"]);
}

/// A `chock witness serve` on loopback, stopped when dropped.
struct Served {
    child: Child,
    addr: SocketAddr,
    url: String,
    key: VerifierKey,
    /// `--witness URL#KEY`.
    flag: String,
}

impl Served {
    fn start(state: &State, log_key: &str) -> Served {
        let key_file = state.0.join("witness.key");
        let made = ok(state.run(&[
            "witness",
            "key",
            "--key",
            key_file.to_str().unwrap(),
            "--name",
            "witness.example",
        ]));
        let key = VerifierKey::parse(made.trim()).unwrap();
        let mut child = state
            .chock(&[
                "witness",
                "serve",
                "--listen",
                "127.0.0.1:0",
                "--key",
                key_file.to_str().unwrap(),
                "--state",
                state.0.join("witness").to_str().unwrap(),
                "--log",
                log_key,
                "--timeout",
                "2s",
            ])
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let mut first = Vec::new();
        let mut out = child.stdout.take().unwrap();
        let mut byte = [0u8];
        while out.read(&mut byte).unwrap() == 1 && byte[0] != b'\n' {
            first.push(byte[0]);
        }
        let line = text(&first);
        let url = line
            .split(" at ")
            .nth(1)
            .and_then(|u| u.strip_suffix("/add-checkpoint"))
            .unwrap_or_else(|| panic!("{line}"))
            .to_owned();
        let addr = url.trim_start_matches("http://").parse().unwrap();
        let flag = format!("{url}#{key}");
        Served {
            child,
            addr,
            url,
            key,
            flag,
        }
    }

    /// What the witness last cosigned, in its state folder.
    fn cosigned_size(&self, state: &State) -> u64 {
        let dir = state.0.join("witness");
        let latest = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .find(|p| p.extension().is_some_and(|e| e == "latest"))
            .unwrap();
        let text = std::fs::read_to_string(latest).unwrap();
        text.lines().next().unwrap().parse().unwrap()
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One raw HTTP/1.1 POST of `body`; the status and the response's text.
fn post(addr: SocketAddr, body: &[u8]) -> (u16, String) {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    let head = format!(
        "POST /add-checkpoint HTTP/1.1\r\nHost: witness\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).unwrap();
    stream.write_all(body).unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    let status = answer
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("{answer}"));
    (status, answer)
}

/// An add-checkpoint body for the log as it is now, from `old`.
fn request(state: &State, old: u64) -> Vec<u8> {
    let log = chock_log::Log::at(state.log(), chock_log::Rotation::default());
    let tree = chock_tlog::log_tree::current(&log).unwrap().tree;
    let key = state.log_key();
    let text = Checkpoint::new(key.name(), tree.size(), tree.root(tree.size()).unwrap()).text();
    let note = Note {
        signatures: vec![key.sign(&text)],
        text,
    };
    AddCheckpoint {
        old,
        proof: tree.consistency_proof(old, tree.size()).unwrap(),
        note: note.to_string().into_bytes(),
    }
    .body()
}

#[test]
fn a_witness_cosigns_consistent_checkpoints_and_refuses_a_rewritten_log() {
    let state = State::new("checkpoint", "witness");
    state.append(5);
    let first = checkpoint_json(&state, &[]);
    let log_key = first["verifier_key"].as_str().unwrap().to_owned();
    let witness = Served::start(&state, &log_key);

    state.append(5);
    let cosigned = checkpoint_json(&state, &["--witness", &witness.flag]);
    assert_eq!(
        cosigned["cosigned_by"],
        serde_json::json!(["witness.example"])
    );
    let note = Note::parse(cosigned["note"].as_str().unwrap().as_bytes()).unwrap();
    assert!(witness.key.cosigned_at(&note).is_some());
    let stored = Note::parse(&std::fs::read(state.log().join("checkpoint")).unwrap()).unwrap();
    assert_eq!(stored.signatures.len(), 2);
    assert_eq!(witness.cosigned_size(&state), 10);

    state.append(6);
    let grown = checkpoint_json(&state, &["--witness", &witness.flag]);
    assert_eq!(grown["size"], 16);
    assert_eq!(witness.cosigned_size(&state), 16);

    // Two checkpoints from the same state at once: one advances it.
    state.append(2);
    let (a, b) = (request(&state, 16), request(&state, 16));
    let statuses = std::thread::scope(|s| {
        let one = s.spawn(|| post(witness.addr, &a).0);
        let two = s.spawn(|| post(witness.addr, &b).0);
        let mut both = [one.join().unwrap(), two.join().unwrap()];
        both.sort_unstable();
        both
    });
    assert_eq!(statuses, [200, 409]);
    assert_eq!(witness.cosigned_size(&state), 18);

    // An earlier line changed, and the checkpoint beside the log removed.
    let current = state.log().join("decisions.jsonl");
    let honest = std::fs::read(&current).unwrap();
    edit_line(&current, 2);
    state.forget_checkpoint();
    state.append(2);
    let refused = failed(&state.run(&["log", "checkpoint", "--witness", &witness.flag]));
    assert!(
        refused.contains("(422)") && refused.contains("rewritten"),
        "{refused}"
    );
    assert_eq!(witness.cosigned_size(&state), 18);

    // The log rewritten to fewer lines.
    let lines: Vec<&[u8]> = honest.split(|&b| b == b'\n').take(12).collect();
    std::fs::write(&current, lines.join(&b'\n')).unwrap();
    std::fs::remove_file(state.log().join("checkpoint")).ok();
    std::fs::remove_file(state.log().join("checkpoint.tree")).ok();
    let refused = failed(&state.run(&["log", "checkpoint", "--witness", &witness.flag]));
    assert!(refused.contains("fewer lines"), "{refused}");
    assert_eq!(witness.cosigned_size(&state), 18);
}

#[test]
fn a_cosignature_counts_only_under_the_witness_key_and_configured_witnesses_are_asked() {
    let state = State::new("checkpoint", "witness-key");
    state.append(3);
    let first = checkpoint_json(&state, &[]);
    let witness = Served::start(&state, first["verifier_key"].as_str().unwrap());
    let impostor = state.0.join("impostor.key");
    let impostor = ok(state.run(&[
        "witness",
        "key",
        "--key",
        impostor.to_str().unwrap(),
        "--name",
        "witness.example",
    ]));
    state.append(2);
    let kept = std::fs::read(state.log().join("checkpoint")).unwrap();
    let wrong_key = format!("{}#{}", witness.url, impostor.trim());
    let refused = failed(&state.run(&["log", "checkpoint", "--witness", &wrong_key]));
    assert!(
        refused.contains("no cosignature its key witness.example verifies"),
        "{refused}"
    );
    assert_eq!(
        std::fs::read(state.log().join("checkpoint")).unwrap(),
        kept,
        "nothing was written"
    );
    let keyless = state.run(&["log", "checkpoint", "--witness", &witness.url]);
    assert_eq!(keyless.status.code(), Some(2), "{keyless:?}");
    assert!(
        text(&keyless.stderr).contains("names no key"),
        "{keyless:?}"
    );

    state.write_config(&format!(
        ".{{ .witnesses = .{{ .{{ .url = \"{}\", .key = \"{}\" }} }} }}\n",
        witness.url, witness.key
    ));
    state.append(1);
    let cosigned = checkpoint_json(&state, &[]);
    assert_eq!(
        cosigned["cosigned_by"],
        serde_json::json!(["witness.example"])
    );
    let note = Note::parse(cosigned["note"].as_str().unwrap().as_bytes()).unwrap();
    assert!(witness.key.cosigned_at(&note).is_some());
    assert_eq!(witness.cosigned_size(&state), 6);
}

#[test]
fn a_huge_or_slow_request_is_cut_off_and_the_witness_serves_on() {
    let state = State::new("checkpoint", "bounds");
    state.append(3);
    let first = checkpoint_json(&state, &[]);
    let witness = Served::start(&state, first["verifier_key"].as_str().unwrap());

    // 100 MB declared: refused before it is read.
    let mut stream = TcpStream::connect(witness.addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let head = "POST /add-checkpoint HTTP/1.1\r\nHost: w\r\nContent-Length: 100000000\r\n\r\n";
    stream.write_all(head.as_bytes()).unwrap();
    let mut answer = String::new();
    let _ = stream.read_to_string(&mut answer);
    assert!(answer.starts_with("HTTP/1.1 413"), "{answer}");

    // 100 MB chunked, no length said: cut off at the bound.
    let mut stream = TcpStream::connect(witness.addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let head = "POST /add-checkpoint HTTP/1.1\r\nHost: w\r\nTransfer-Encoding: chunked\r\n\r\n";
    stream.write_all(head.as_bytes()).unwrap();
    let chunk = format!("{:x}\r\n{}\r\n", 1 << 16, "a".repeat(1 << 16));
    let started = Instant::now();
    // The answer is read as it comes, before the writes after it reset the connection.
    let mut reader = stream.try_clone().unwrap();
    let answer = std::thread::spawn(move || {
        let mut answer = Vec::new();
        let _ = reader.read_to_end(&mut answer);
        text(&answer)
    });
    for _ in 0..(100 << 20) / (1 << 16) {
        if stream.write_all(chunk.as_bytes()).is_err() {
            break;
        }
    }
    let answer = answer.join().unwrap();
    assert!(answer.starts_with("HTTP/1.1 413"), "{answer}");
    assert!(started.elapsed() < Duration::from_secs(10));

    // One byte a second, in the headers and in the body: cut off.
    for head in [
        "POST /add-checkpoint HTTP/1.1\r\nHost: w\r\n",
        "POST /add-checkpoint HTTP/1.1\r\nHost: w\r\nContent-Length: 100\r\n\r\n",
    ] {
        let mut stream = TcpStream::connect(witness.addr).unwrap();
        stream.write_all(head.as_bytes()).unwrap();
        stream.set_nonblocking(true).unwrap();
        let started = Instant::now();
        let mut answer = Vec::new();
        let closed = loop {
            assert!(started.elapsed() < Duration::from_secs(15), "never cut off");
            let _ = stream.write_all(b"x");
            let mut buf = [0u8; 512];
            match stream.read(&mut buf) {
                Ok(0) => break true,
                Ok(n) => answer.extend_from_slice(&buf[..n]),
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                Err(_) => break true,
            }
            std::thread::sleep(Duration::from_secs(1));
        };
        assert!(closed);
        assert!(
            started.elapsed() >= Duration::from_secs(2),
            "cut off only after the timeout"
        );
        let answer = text(&answer);
        assert!(
            answer.is_empty() || answer.starts_with("HTTP/1.1 408"),
            "{answer}"
        );
    }

    // Still serving.
    let (status, answer) = post(witness.addr, &request(&state, 0));
    assert_eq!(status, 200, "{answer}");
    assert_eq!(post(witness.addr, b"old 5\n").0, 400);
}

#[test]
fn a_sandboxed_command_cannot_see_the_log_s_key_or_checkpoint() {
    let fx = sandbox_fixture::Fixture::host();
    let made = fx.chock().args(["log", "checkpoint"]).output().unwrap();
    assert!(
        made.status.success(),
        "{}",
        sandbox_fixture::describe(&made)
    );
    let state = fx.root().join("state/chock");
    let key = state.join("keys/checkpoint.key");
    let checkpoint = state.join("log/checkpoint");
    assert!(key.exists() && checkpoint.exists());
    // A file of the project's, which the sandbox shows: the probe can see.
    let shown = fx.project.join("shown");
    std::fs::write(&shown, "").unwrap();
    let probe = format!(
        "for f in {} {} {}; do if test -e $f; then echo seen; else echo hidden; fi; done",
        shown.display(),
        key.display(),
        checkpoint.display()
    );
    let out = fx.exec(&[], &["sh", "-c", &probe]);
    assert!(out.status.success(), "{}", sandbox_fixture::describe(&out));
    assert_eq!(sandbox_fixture::text(&out.stdout), "seen\nhidden\nhidden\n");
}
