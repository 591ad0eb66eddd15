//! A Unix socket that lives for one tool call: made in a fresh `0700`
//! folder on the host, bound read-only into that call's sandbox, served on
//! threads of its own, and closed (its folder removed) when dropped, so no
//! later call can reach it. The ssh agent proxy and the git credential
//! socket of an approved `git push` are both one.

use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize, Ordering};

/// The most connections served at once; more are closed unanswered, so a
/// program in the sandbox cannot make the server start threads without end.
pub const MAX_CONNECTIONS: usize = 8;

/// One call's socket; dropping it closes the socket.
pub struct CallSocket {
    dir: PathBuf,
    socket: PathBuf,
    closed: Arc<AtomicBool>,
}

impl CallSocket {
    /// Binds `name` in a fresh `0700` folder under `parent` and serves each
    /// connection with `serve` on a thread of its own until dropped, at
    /// most [`MAX_CONNECTIONS`] at once.
    pub fn bind(
        parent: &Path,
        name: &str,
        serve: impl Fn(UnixStream) + Send + Sync + 'static,
    ) -> std::io::Result<CallSocket> {
        use std::os::unix::fs::DirBuilderExt;
        static NEXT: AtomicU32 = AtomicU32::new(0);
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(parent)?;
        let dir = parent.join(format!(
            "{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::DirBuilder::new().mode(0o700).create(&dir)?;
        let socket = dir.join(name);
        let listener = UnixListener::bind(&socket)?;
        let closed = Arc::new(AtomicBool::new(false));
        let stop = closed.clone();
        let serve = Arc::new(serve);
        let serving = Arc::new(AtomicUsize::new(0));
        std::thread::Builder::new()
            .name(format!("chock-{name}"))
            .spawn(move || {
                for inner in listener.incoming() {
                    if stop.load(Ordering::SeqCst) {
                        return;
                    }
                    let Ok(inner) = inner else { continue };
                    if serving.fetch_add(1, Ordering::SeqCst) >= MAX_CONNECTIONS {
                        serving.fetch_sub(1, Ordering::SeqCst);
                        continue;
                    }
                    let (serve, serving) = (serve.clone(), serving.clone());
                    std::thread::spawn(move || {
                        serve(inner);
                        serving.fetch_sub(1, Ordering::SeqCst);
                    });
                }
            })?;
        Ok(CallSocket {
            dir,
            socket,
            closed,
        })
    }

    /// The socket on the host, to bind into the call's sandbox.
    pub fn path(&self) -> &Path {
        &self.socket
    }
}

impl Drop for CallSocket {
    fn drop(&mut self) {
        self.closed.store(true, Ordering::SeqCst);
        // Wakes the accepting thread, which then sees it is closed.
        let _ = UnixStream::connect(&self.socket);
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};

    #[test]
    fn the_socket_serves_until_dropped_then_is_gone_with_its_folder() {
        let parent = tempfile::tempdir().expect("tempdir");
        let socket = CallSocket::bind(parent.path(), "t.sock", |mut stream| {
            let _ = stream.write_all(b"hi");
        })
        .expect("bind");
        let path = socket.path().to_path_buf();
        let mut said = String::new();
        UnixStream::connect(&path)
            .expect("connect")
            .read_to_string(&mut said)
            .expect("read");
        assert_eq!(said, "hi");
        drop(socket);
        assert!(UnixStream::connect(&path).is_err());
        assert_eq!(std::fs::read_dir(parent.path()).expect("dir").count(), 0);
    }

    #[test]
    fn connections_past_the_bound_are_closed_unanswered() {
        let parent = tempfile::tempdir().expect("tempdir");
        let (hold, held) = std::sync::mpsc::channel::<()>();
        let held = std::sync::Mutex::new(held);
        let socket = CallSocket::bind(parent.path(), "t.sock", move |mut stream| {
            let _ = stream.write_all(b"x");
            // Each served connection waits until the test lets it go.
            let _ = held
                .lock()
                .map(|h| h.recv_timeout(std::time::Duration::from_secs(5)));
        })
        .expect("bind");
        let mut open = Vec::new();
        for _ in 0..MAX_CONNECTIONS {
            let mut stream = UnixStream::connect(socket.path()).expect("connect");
            let mut byte = [0u8; 1];
            stream.read_exact(&mut byte).expect("served");
            open.push(stream);
        }
        let mut extra = UnixStream::connect(socket.path()).expect("connect");
        let mut rest = Vec::new();
        extra.read_to_end(&mut rest).expect("closed");
        assert!(
            rest.is_empty(),
            "the connection past the bound is not served"
        );
        drop(hold);
    }
}
