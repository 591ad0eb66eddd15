//! `NIX_DAEMON_SOCKET_PATH` picks the socket. Alone in its test binary,
//! because it sets an environment variable.

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::UnixListener;

#[tokio::test]
async fn the_environment_names_the_socket() {
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("elsewhere");
    let listener = UnixListener::bind(&socket).unwrap();
    let peer = tokio::spawn(async move {
        let (mut stream, _) = listener.accept().await.unwrap();
        // A Nix 2.8 daemon's handshake answer, then an empty stderr loop.
        let mut hello = Vec::new();
        for word in [0x6478_696f_u64, 1 << 8 | 34, 5] {
            hello.extend_from_slice(&word.to_le_bytes());
        }
        hello.extend_from_slice(b"2.8.0\0\0\0");
        hello.extend_from_slice(&0x616c_7473_u64.to_le_bytes());
        stream.write_all(&hello).await.unwrap();
        let mut sink = Vec::new();
        let _ = stream.read_to_end(&mut sink).await;
    });
    // SAFETY: this test binary has a single test, so no other thread reads
    // the environment while it is changed.
    unsafe { std::env::set_var("NIX_DAEMON_SOCKET_PATH", &socket) };
    assert_eq!(chock_store::daemon::socket_path(), socket);
    let conn = chock_store::daemon::connect().await.unwrap();
    assert_eq!(conn.daemon_nix_version(), Some("2.8.0"));
    drop(conn);
    peer.await.unwrap();
}
