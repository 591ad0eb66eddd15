//! A Unix socket that lives for one tool call: made in a fresh `0700`
//! folder on the host, bound read-only into that call's sandbox, served on
//! threads of its own, and closed (its folder removed) when dropped, so no
//! later call can reach it. The ssh agent proxy and the git credential
//! socket of an approved `git push` are both one.

use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};

/// One call's socket; dropping it closes the socket.
pub struct CallSocket {
    dir: PathBuf,
    socket: PathBuf,
    closed: Arc<AtomicBool>,
}

impl CallSocket {
    /// Binds `name` in a fresh `0700` folder under `parent` and serves each
    /// connection with `serve` on a thread of its own until dropped.
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
        std::thread::Builder::new()
            .name(format!("chock-{name}"))
            .spawn(move || {
                for inner in listener.incoming() {
                    if stop.load(Ordering::SeqCst) {
                        return;
                    }
                    let Ok(inner) = inner else { continue };
                    let serve = serve.clone();
                    std::thread::spawn(move || serve(inner));
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
