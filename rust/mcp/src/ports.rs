//! Published ports, the host's side: a listener on this machine's
//! 127.0.0.1:<port> whose connections are relayed to 127.0.0.1:<port>
//! inside one task's sandbox, through that sandbox's dialer
//! (`chock_sandbox::publish`).
//!
//! The listener is on 127.0.0.1 and nowhere else: a published port is for
//! the person at this machine. A port is published for one task and
//! unpublished when that task ends or the session does; relayed
//! connections end with it.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use chock_sandbox::publish::Dialer;
use tokio::net::{TcpListener, TcpStream};
use tokio_util::sync::CancellationToken;

use crate::tasks::lock;

/// Why a port is not published; each says what to do instead.
#[derive(Debug, thiserror::Error)]
pub enum PortError {
    #[error(
        "port {port} is under 1024, which needs privilege this session does not have; have the server listen on a port from 1024 up (e.g. 8000) and publish that"
    )]
    Privileged { port: u16 },
    #[error(
        "port {port} is already published, for task {task}; stop that task to publish the port for another"
    )]
    Published { port: u16, task: u32 },
    #[error(
        "port {port} would be one more than a session publishes (at most {MAX_PUBLISHED}; published now: {published}); stop a task that holds one first"
    )]
    TooMany { port: u16, published: String },
    #[error(
        "port {port} is already in use on this machine (something else listens on 127.0.0.1:{port}); have the server listen on another port and publish that"
    )]
    InUse { port: u16 },
    #[error("port {port} cannot be opened on 127.0.0.1 ({source})")]
    Unopened {
        port: u16,
        #[source]
        source: std::io::Error,
    },
    #[error("port {port} cannot be served ({source})")]
    Unserved {
        port: u16,
        #[source]
        source: std::io::Error,
    },
    #[error("task {task} has no port helper")]
    NoHelper { task: u32 },
    #[error(
        "port {port} was published meanwhile, or the session's {MAX_PUBLISHED} ports were; call again"
    )]
    Raced { port: u16 },
}

/// The most ports one session publishes at once.
pub const MAX_PUBLISHED: usize = 4;
/// The most bytes one splice(2) moves (a pipe's default capacity).
const RELAY_CHUNK: usize = 64 << 10;
/// The most connections relayed at once through one published port.
const MAX_CONNECTIONS: usize = 64;

struct Published {
    task: u32,
    stop: CancellationToken,
    /// Told when the listener has been closed.
    closed: std::sync::mpsc::Receiver<()>,
}

/// How long unpublishing waits for the listener to be closed.
const CLOSE_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

impl Published {
    /// Stops serving and waits until the port is closed on the host.
    fn close(self) {
        self.stop.cancel();
        let _ = self.closed.recv_timeout(CLOSE_WAIT);
    }
}

/// The session's published ports.
#[derive(Default)]
pub struct Ports {
    table: Mutex<BTreeMap<u16, Published>>,
}

/// A listener bound and not yet serving: held while the act is decided, so
/// the port cannot be taken meanwhile.
pub struct Reserved {
    port: u16,
    listener: std::net::TcpListener,
}

impl Reserved {
    /// The port.
    pub fn port(&self) -> u16 {
        self.port
    }
}

impl Ports {
    /// The ports published for `task`.
    pub fn of_task(&self, task: u32) -> Vec<u16> {
        lock(&self.table)
            .iter()
            .filter(|(_, p)| p.task == task)
            .map(|(port, _)| *port)
            .collect()
    }

    /// Which task holds `port`, if one does.
    pub fn holder(&self, port: u16) -> Option<u32> {
        lock(&self.table).get(&port).map(|p| p.task)
    }

    /// Binds 127.0.0.1:`port` for a publication, or says which rule of
    /// publishing it breaks: a port under 1024, one this session publishes
    /// already, more than [`MAX_PUBLISHED`], or one something on this
    /// machine listens on.
    pub fn reserve(&self, port: u16) -> Result<Reserved, PortError> {
        if port < 1024 {
            return Err(PortError::Privileged { port });
        }
        {
            let table = lock(&self.table);
            if let Some(held) = table.get(&port) {
                return Err(PortError::Published {
                    port,
                    task: held.task,
                });
            }
            if table.len() >= MAX_PUBLISHED {
                return Err(PortError::TooMany {
                    port,
                    published: table
                        .keys()
                        .map(u16::to_string)
                        .collect::<Vec<_>>()
                        .join(", "),
                });
            }
        }
        let listener = std::net::TcpListener::bind((std::net::Ipv4Addr::LOCALHOST, port)).map_err(
            |e| match e.kind() {
                std::io::ErrorKind::AddrInUse => PortError::InUse { port },
                _ => PortError::Unopened { port, source: e },
            },
        )?;
        Ok(Reserved { port, listener })
    }

    /// Serves a reserved port for `task`: each connection accepted on the
    /// host is relayed to the same port inside, through `dialer`.
    pub fn publish(
        &self,
        reserved: Reserved,
        task: u32,
        dialer: Arc<Dialer>,
    ) -> Result<(), PortError> {
        let Reserved { port, listener } = reserved;
        let listener = listener
            .set_nonblocking(true)
            .and_then(|()| TcpListener::from_std(listener))
            .map_err(|e| PortError::Unserved { port, source: e })?;
        let stop = CancellationToken::new();
        let (closed_tell, closed) = std::sync::mpsc::channel();
        {
            let mut table = lock(&self.table);
            if table.contains_key(&port) || table.len() >= MAX_PUBLISHED {
                return Err(PortError::Raced { port });
            }
            table.insert(
                port,
                Published {
                    task,
                    stop: stop.clone(),
                    closed,
                },
            );
        }
        tokio::spawn(async move {
            serve(listener, port, dialer, stop).await;
            let _ = closed_tell.send(());
        });
        Ok(())
    }

    /// Unpublishes every port of `task` (it ended), and returns once they
    /// are closed. Blocking: call it off the runtime's threads.
    pub fn unpublish_task(&self, task: u32) {
        let taken: Vec<Published> = {
            let mut table = lock(&self.table);
            let ports: Vec<u16> = table
                .iter()
                .filter(|(_, p)| p.task == task)
                .map(|(port, _)| *port)
                .collect();
            ports.iter().filter_map(|port| table.remove(port)).collect()
        };
        taken.into_iter().for_each(Published::close);
    }

    /// Unpublishes every port (the session ends), as [`Ports::unpublish_task`].
    pub fn unpublish_all(&self) {
        let taken = std::mem::take(&mut *lock(&self.table));
        taken.into_values().for_each(Published::close);
    }
}

async fn serve(listener: TcpListener, port: u16, dialer: Arc<Dialer>, stop: CancellationToken) {
    let room = Arc::new(tokio::sync::Semaphore::new(MAX_CONNECTIONS));
    loop {
        let accepted = tokio::select! {
            () = stop.cancelled() => return,
            accepted = listener.accept() => accepted,
        };
        let Ok((outer, _)) = accepted else { continue };
        // Over the bound, a connection is closed at once rather than queued.
        let Ok(permit) = room.clone().try_acquire_owned() else {
            continue;
        };
        let dialer = dialer.clone();
        let stop = stop.clone();
        tokio::spawn(async move {
            let _permit = permit;
            relay(outer, port, dialer, stop).await;
        });
    }
}

/// Relays one accepted connection to the same port inside, until either
/// side ends or the port is unpublished.
async fn relay(outer: TcpStream, port: u16, dialer: Arc<Dialer>, stop: CancellationToken) {
    let inner = tokio::task::spawn_blocking(move || dialer.dial(port)).await;
    let inner = match inner {
        Ok(Ok(inner)) => inner,
        // Nothing listens inside (yet), or the task ended: the
        // connection is closed, as a refused one would be.
        Ok(Err(e)) => {
            tracing::debug!("published port {port}: {e}");
            return;
        }
        Err(_) => return,
    };
    let Ok(outer) = outer.into_std() else { return };
    let streams = [outer, inner];
    let mut ends = Vec::new();
    for stream in &streams {
        if stream.set_nonblocking(false).is_err() || stream.set_nodelay(true).is_err() {
            return;
        }
        match stream.try_clone() {
            Ok(end) => ends.push(end),
            Err(_) => return,
        }
    }
    let (done_tell, done) = tokio::sync::oneshot::channel();
    let spawned = std::thread::Builder::new()
        .name(format!("chock-port-{port}"))
        .spawn(move || {
            let [outer, inner] = streams;
            let inward = std::thread::scope(|scope| {
                let inward = scope.spawn(|| pump(&outer, &inner));
                let _ = pump(&inner, &outer);
                inward.join()
            });
            drop(inward);
            let _ = done_tell.send(());
        });
    if spawned.is_err() {
        return;
    }
    tokio::select! {
        _ = done => {}
        () = stop.cancelled() => {
            for end in ends {
                let _ = end.shutdown(std::net::Shutdown::Both);
            }
        }
    }
}

/// Moves bytes from `from` to `to` through a pipe with splice(2) (the
/// kernel moves pages; nothing is copied through this process), then
/// ends `to`'s writing half.
fn pump(from: &std::net::TcpStream, to: &std::net::TcpStream) -> std::io::Result<()> {
    use rustix::pipe::{PipeFlags, SpliceFlags, pipe_with, splice};
    let (pipe_out, pipe_in) = pipe_with(PipeFlags::CLOEXEC)?;
    loop {
        let moved = splice(from, None, &pipe_in, None, RELAY_CHUNK, SpliceFlags::MOVE)?;
        if moved == 0 {
            break;
        }
        let mut left = moved;
        while left > 0 {
            left -= splice(&pipe_out, None, to, None, left, SpliceFlags::MOVE)?;
        }
    }
    to.shutdown(std::net::Shutdown::Write)
}
