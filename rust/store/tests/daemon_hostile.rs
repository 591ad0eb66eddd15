//! The client against a hostile peer on a Unix socket: garbage, truncated
//! frames, absurd lengths and silence must give errors, never a panic, a
//! hang or a huge allocation. This is not a stand-in for the real daemon
//! (daemon_real.rs tests that); it is the attacker.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use chock_store::daemon::{DaemonConnection, DaemonError, DaemonOptions};
use proptest::prelude::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::UnixListener;

const MAGIC_2: u64 = 0x6478_696f;
const STDERR_LAST: u64 = 0x616c_7473;
const STDERR_ERROR: u64 = 0x6378_7470;
const STDERR_NEXT: u64 = 0x6f6c_6d67;

fn u(v: u64) -> Vec<u8> {
    v.to_le_bytes().to_vec()
}

fn s(text: &[u8]) -> Vec<u8> {
    let mut out = u(text.len() as u64);
    out.extend_from_slice(text);
    out.resize(out.len() + (8 - text.len() % 8) % 8, 0);
    out
}

/// A daemon's handshake answer at protocol `minor`.
fn hello(minor: u64) -> Vec<u8> {
    let mut out = [u(MAGIC_2), u(1 << 8 | minor)].concat();
    if minor >= 38 {
        out.extend(u(1));
        out.extend(s(b"some-feature"));
    }
    out.extend(s(b"2.99.0"));
    if minor >= 35 {
        out.extend(u(1));
    }
    out.extend(u(STDERR_LAST));
    out
}

/// Serves one connection: sends `script`, reads whatever the client sends,
/// then keeps the socket open (silent) until the client goes.
async fn peer(script: Vec<u8>) -> (tempfile::TempDir, PathBuf, tokio::task::JoinHandle<Vec<u8>>) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("socket");
    let listener = UnixListener::bind(&path).unwrap();
    let task = tokio::spawn(async move {
        let (mut stream, _) = listener.accept().await.unwrap();
        let _ = stream.write_all(&script).await;
        let mut seen = Vec::new();
        let mut buf = [0u8; 4096];
        while let Ok(Ok(n)) =
            tokio::time::timeout(Duration::from_secs(5), stream.read(&mut buf)).await
        {
            if n == 0 {
                break;
            }
            seen.extend_from_slice(&buf[..n]);
        }
        seen
    });
    (dir, path, task)
}

fn options(path: PathBuf) -> DaemonOptions {
    DaemonOptions {
        socket: path,
        connect_timeout: Duration::from_millis(500),
        read_timeout: Duration::from_millis(500),
        build_timeout: Duration::from_millis(500),
    }
}

async fn connect(script: Vec<u8>) -> Result<DaemonConnection, DaemonError> {
    let (_dir, path, _task) = peer(script).await;
    DaemonConnection::connect(&options(path)).await
}

/// The error a QueryValidPaths answered by `script` ends in.
async fn query_refused(script: Vec<u8>) -> DaemonError {
    let (_dir, path, _task) = peer(script).await;
    let mut c = DaemonConnection::connect(&options(path)).await.unwrap();
    c.query_valid_paths(&[some_path()].into(), false)
        .await
        .unwrap_err()
}

fn some_path() -> chock_store::StorePath {
    chock_store::StorePath::from_absolute_path("/nix/store/i00sflxqsj37lfmf95m8mn0grv615hpj-source")
        .unwrap()
}

#[tokio::test]
async fn garbage_is_not_a_daemon() {
    let err = connect(b"HTTP/1.1 400 Bad Request\r\n\r\n".to_vec())
        .await
        .err()
        .unwrap();
    assert!(
        matches!(
            err,
            DaemonError::Protocol {
                op: "handshake",
                ..
            }
        ),
        "{err}"
    );
    assert!(err.to_string().contains("not a Nix daemon"), "{err}");
}

#[tokio::test]
async fn truncated_handshake_is_an_error() {
    let err = connect([u(MAGIC_2), vec![0x22, 0x01]].concat())
        .await
        .err()
        .unwrap();
    assert!(
        matches!(
            err,
            DaemonError::Timeout { .. } | DaemonError::Closed { .. }
        ),
        "{err}"
    );
}

#[tokio::test]
async fn silence_times_out() {
    let started = Instant::now();
    let err = connect(Vec::new()).await.err().unwrap();
    assert!(
        matches!(
            err,
            DaemonError::Timeout {
                op: "handshake",
                ..
            }
        ),
        "{err}"
    );
    assert!(started.elapsed() < Duration::from_secs(3));
}

#[tokio::test]
async fn old_daemons_are_refused() {
    let err = connect([u(MAGIC_2), u(1 << 8 | 21)].concat())
        .await
        .err()
        .unwrap();
    assert!(
        matches!(
            err,
            DaemonError::TooOld {
                major: 1,
                minor: 21
            }
        ),
        "{err}"
    );
}

#[tokio::test]
async fn a_length_of_two_to_the_63_is_refused_without_allocating() {
    let script = [u(MAGIC_2), u(1 << 8 | 34), u(1 << 63)].concat();
    let err = connect(script).await.err().unwrap();
    assert!(err.to_string().contains("exceeds the limit"), "{err}");
}

#[tokio::test]
async fn lengths_that_promise_more_than_is_sent_time_out() {
    // A message of 4 MiB announced, 3 bytes sent: the buffer grows only as bytes arrive.
    let script = [
        hello(34),
        u(STDERR_NEXT),
        u(4 * 1024 * 1024),
        b"abc".to_vec(),
    ]
    .concat();
    let (_dir, path, _task) = peer(script).await;
    let mut c = DaemonConnection::connect(&options(path)).await.unwrap();
    let err = c.is_valid_path(&some_path()).await.unwrap_err();
    assert!(
        matches!(
            err,
            DaemonError::Timeout {
                op: "IsValidPath",
                ..
            }
        ),
        "{err}"
    );
    // The stream lost its place: later calls say so instead of misreading.
    let again = c.is_valid_path(&some_path()).await.unwrap_err();
    assert!(matches!(again, DaemonError::Broken { .. }), "{again}");
}

#[tokio::test]
async fn huge_list_counts_are_refused() {
    let script = [hello(34), u(STDERR_LAST), u(u64::MAX)].concat();
    let err = query_refused(script).await;
    assert!(err.to_string().starts_with("QueryValidPaths: "), "{err}");
    assert!(err.to_string().contains("exceeds the limit"), "{err}");
}

#[tokio::test]
async fn daemon_errors_carry_the_message() {
    let error = [
        u(STDERR_ERROR),
        s(b"Error"),
        u(0),
        s(b"Error"),
        s(b"path '\x1b[35;1m/nix/store/x\x1b[0m' is not valid"),
        u(0),
        u(1),
        u(0),
        s(b"while adding"),
    ]
    .concat();
    let (_dir, path, _task) = peer([hello(34), error].concat()).await;
    let mut c = DaemonConnection::connect(&options(path)).await.unwrap();
    let err = c.add_temp_root(&some_path()).await.unwrap_err();
    assert_eq!(
        err.to_string(),
        "AddTempRoot: the Nix daemon answered: path '/nix/store/x' is not valid\n  … while adding"
    );
}

#[tokio::test]
async fn bad_padding_and_bad_paths_are_refused() {
    let mut padded = s(b"/nix/store/i00sflxqsj37lfmf95m8mn0grv615hpj-source");
    let last = padded.len() - 1;
    padded[last] = 7;
    let script = [hello(34), u(STDERR_LAST), u(1), padded].concat();
    let err = query_refused(script).await;
    assert!(err.to_string().contains("padding"), "{err}");

    let script = [hello(34), u(STDERR_LAST), u(1), s(b"/etc/passwd")].concat();
    let err = query_refused(script).await;
    assert!(err.to_string().contains("not in the Nix store"), "{err}");
}

/// A peer that takes the request but never reads the upload nor answers:
/// the upload stalls, and the operation still ends with an error in time.
#[tokio::test]
async fn a_peer_that_stops_reading_does_not_hang_uploads() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("socket");
    let listener = UnixListener::bind(&path).unwrap();
    let _deaf = tokio::spawn(async move {
        let (mut stream, _) = listener.accept().await.unwrap();
        stream.write_all(&hello(34)).await.unwrap();
        tokio::time::sleep(Duration::from_secs(10)).await;
        drop(stream);
    });
    let mut c = DaemonConnection::connect(&options(path)).await.unwrap();
    let nar = vec![0u8; 8 * 1024 * 1024];
    let info = chock_store::daemon::PathInfo::for_upload(
        some_path(),
        chock_store::Hash::sha256(&nar),
        nar.len() as u64,
        Default::default(),
        None,
    );
    let started = Instant::now();
    let err = c
        .add_to_store_nar(&info, false, false, &mut nar.as_slice())
        .await
        .unwrap_err();
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    assert!(err.to_string().starts_with("AddToStoreNar: "), "{err}");
}

/// Log lines (STDERR_NEXT) and build log lines (STDERR_RESULT 101) reach `tracing`.
#[tokio::test]
async fn daemon_log_lines_go_to_tracing() {
    use std::sync::{Arc, Mutex};
    #[derive(Clone, Default)]
    struct Captured(Arc<Mutex<Vec<u8>>>);
    impl std::io::Write for Captured {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let captured = Captured::default();
    let writer = captured.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(move || writer.clone())
        .with_ansi(false)
        .finish();
    let _guard = tracing::subscriber::set_default(subscriber);

    let result_line = [
        u(0x5253_4c54),
        u(7),
        u(101),
        u(1),
        u(1),
        s(b"compiling things"),
    ]
    .concat();
    let script = [
        hello(34),
        u(STDERR_NEXT),
        s(b"hello from the daemon\n"),
        result_line,
        u(STDERR_LAST),
        u(1),
    ]
    .concat();
    let (_dir, path, _task) = peer(script).await;
    let mut c = DaemonConnection::connect(&options(path)).await.unwrap();
    assert!(c.is_valid_path(&some_path()).await.unwrap());
    let logged = String::from_utf8(captured.0.lock().unwrap().clone()).unwrap();
    assert!(logged.contains("hello from the daemon"), "{logged}");
    assert!(logged.contains("compiling things"), "{logged}");
}

/// Protocol 1.38 (current Nix): we send an empty feature list, read the
/// daemon's, then its version string and trust flag.
#[tokio::test]
async fn handshake_at_1_38_and_beyond() {
    for (daemon_minor, expected) in [(38, 38), (39, 38), (35, 35)] {
        let (_dir, path, task) = peer(hello(daemon_minor)).await;
        let c = DaemonConnection::connect(&options(path)).await.unwrap();
        assert_eq!(c.protocol_minor(), expected);
        assert_eq!(c.trusted(), Some(true));
        assert_eq!(c.daemon_nix_version(), Some("2.99.0"));
        drop(c);
        let sent = task.await.unwrap();
        let mut expected_bytes = [u(0x6e69_7863), u(1 << 8 | 38)].concat();
        if expected >= 38 {
            expected_bytes.extend(u(0));
        }
        expected_bytes.extend([u(0), u(0)].concat());
        assert_eq!(
            sent, expected_bytes,
            "client handshake bytes at 1.{daemon_minor}"
        );
    }
}

#[tokio::test]
async fn missing_socket_says_what_to_run() {
    let err = DaemonConnection::connect(&options(PathBuf::from("/nonexistent/chock/socket")))
        .await
        .err()
        .unwrap();
    assert!(err.to_string().contains("scripts/setup"), "{err}");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// Whatever a peer sends after a valid handshake, every operation ends
    /// in a result or an error, quickly.
    #[test]
    fn random_answers_never_panic_or_hang(answer in proptest::collection::vec(any::<u8>(), 0..300), tagged in any::<bool>()) {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(async {
            let mut script = hello(34);
            if tagged {
                script.extend(u(STDERR_LAST));
            }
            script.extend(&answer);
            let (_dir, path, _task) = peer(script).await;
            let mut c = DaemonConnection::connect(&options(path)).await.unwrap();
            let started = Instant::now();
            let _ = c.query_path_info(&some_path()).await;
            let _ = c.build_paths_with_results(&[chock_store::daemon::DerivedPath::Opaque(some_path())], Default::default()).await;
            let _ = c.query_missing(&[]).await;
            assert!(started.elapsed() < Duration::from_secs(3));
        });
    }
}

/// Callers run operations on a multi-threaded runtime (`tokio::spawn`),
/// so the connection and every operation's future must be `Send`.
#[test]
fn operations_are_send() {
    fn assert_send<T: Send>(_: &T) {}
    async fn ops(mut c: DaemonConnection) {
        let p = some_path();
        let f = c.build_paths(&[], Default::default());
        assert_send(&f);
        drop(f);
        let info = chock_store::daemon::PathInfo::for_upload(
            p.clone(),
            chock_store::Hash::sha256(""),
            0,
            Default::default(),
            None,
        );
        let mut nar: &[u8] = b"";
        let f = c.add_to_store_nar(&info, false, false, &mut nar);
        assert_send(&f);
        drop(f);
        let f = c.query_path_info(&p);
        assert_send(&f);
    }
    let opts = options(PathBuf::from("/nonexistent"));
    let connect = DaemonConnection::connect(&opts);
    assert_send(&connect);
    let _ = ops;
}
