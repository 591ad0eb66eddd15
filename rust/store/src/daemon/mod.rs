//! A client for the Nix daemon's worker protocol over its Unix socket.
//!
//! One [`DaemonConnection`] is one daemon worker process. The handshake
//! settles on the lower of our version (1.38) and the daemon's, and refuses
//! daemons older than 1.34 (Nix 2.8). Every read is bounded in size and in
//! time, so a broken or hostile peer gives a [`DaemonError`], never a panic,
//! a hang or a huge allocation. Log lines the daemon sends go to `tracing`
//! (target `nix_daemon`).

mod ops;
mod stderr;
pub mod types;
mod wire;

use std::path::{Path, PathBuf};
use std::time::Duration;

use thiserror::Error;
use tokio::io::{AsyncWriteExt, BufReader};
use tokio::net::UnixStream;
use tokio::net::unix::OwnedWriteHalf;

pub use types::{
    AddMethod, BuildMode, BuildResult, BuildStatus, ClientOptions, DerivedPath, Missing,
    OutputsSpec, PathInfo, Verbosity,
};
use wire::{Request, WireReader, limits};

/// Where the daemon listens unless `NIX_DAEMON_SOCKET_PATH` says otherwise.
pub const DEFAULT_SOCKET: &str = "/nix/var/nix/daemon-socket/socket";

/// The protocol version we announce: 1.38, the newest Nix's.
pub const CLIENT_VERSION: u64 = 1 << 8 | 38;
/// The oldest daemon we talk to: 1.34, Nix 2.8.
pub const MIN_DAEMON_VERSION: u64 = 1 << 8 | 34;

const WORKER_MAGIC_1: u64 = 0x6e69_7863;
const WORKER_MAGIC_2: u64 = 0x6478_696f;

/// Why talking to the daemon failed. Each names the operation.
#[derive(Debug, Error)]
pub enum DaemonError {
    #[error(
        "cannot connect to the Nix daemon at {path}: {source}; start it (scripts/setup, or nix-daemon) or set NIX_DAEMON_SOCKET_PATH to its socket"
    )]
    Connect {
        path: String,
        source: std::io::Error,
    },
    #[error("{op}: the Nix daemon answered: {message}")]
    Daemon { op: &'static str, message: String },
    #[error("{op}: the connection to the Nix daemon failed: {source}")]
    Io {
        op: &'static str,
        source: std::io::Error,
    },
    #[error("{op}: the Nix daemon closed the connection in the middle of an answer")]
    Closed { op: &'static str },
    #[error(
        "{op}: the Nix daemon sent nothing for {secs} s; it may be stuck (raise DaemonOptions timeouts for slow builds)"
    )]
    Timeout { op: &'static str, secs: f64 },
    #[error("{op}: the Nix daemon sent something malformed: {problem}")]
    Protocol { op: &'static str, problem: String },
    #[error(
        "the Nix daemon speaks protocol {major}.{minor}; Chock needs 1.34 (Nix 2.8) or newer, so upgrade Nix"
    )]
    TooOld { major: u64, minor: u64 },
    #[error("{op}: this connection to the Nix daemon broke earlier ({reason}); open a new one")]
    Broken { op: &'static str, reason: String },
    #[error("{op}: cannot send the data to the Nix daemon: {source}")]
    Upload {
        op: &'static str,
        source: std::io::Error,
    },
}

impl DaemonError {
    /// Whether the stream may be out of step after this error.
    fn breaks_connection(&self) -> bool {
        !matches!(self, DaemonError::Daemon { .. })
    }
}

/// How long to wait, and where.
#[derive(Debug, Clone)]
pub struct DaemonOptions {
    pub socket: PathBuf,
    /// Longest wait for the socket to accept and the handshake to finish.
    pub connect_timeout: Duration,
    /// Longest silence allowed in the middle of an answer.
    pub read_timeout: Duration,
    /// Longest silence allowed while the daemon builds or substitutes
    /// (builds can be quiet for long).
    pub build_timeout: Duration,
}

impl Default for DaemonOptions {
    fn default() -> DaemonOptions {
        DaemonOptions {
            socket: socket_path(),
            connect_timeout: Duration::from_secs(10),
            read_timeout: Duration::from_secs(60),
            build_timeout: Duration::from_secs(6 * 3600),
        }
    }
}

/// `NIX_DAEMON_SOCKET_PATH` or the default socket.
pub fn socket_path() -> PathBuf {
    std::env::var_os("NIX_DAEMON_SOCKET_PATH")
        .filter(|s| !s.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(DEFAULT_SOCKET))
}

/// One open connection to the daemon.
pub struct DaemonConnection {
    reader: WireReader,
    writer: OwnedWriteHalf,
    minor: u64,
    daemon_nix_version: Option<String>,
    trusted: Option<bool>,
    build_timeout: Duration,
    broken: Option<String>,
}

/// Connects with the default options (socket from the environment).
pub async fn connect() -> Result<DaemonConnection, DaemonError> {
    DaemonConnection::connect(&DaemonOptions::default()).await
}

impl DaemonConnection {
    /// Connects and performs the handshake.
    pub async fn connect(options: &DaemonOptions) -> Result<DaemonConnection, DaemonError> {
        let op = "handshake";
        let shown = options.socket.display().to_string();
        let stream = match tokio::time::timeout(
            options.connect_timeout,
            UnixStream::connect(&options.socket),
        )
        .await
        {
            Ok(Ok(s)) => s,
            Ok(Err(source)) => {
                return Err(DaemonError::Connect {
                    path: shown,
                    source,
                });
            }
            Err(_) => {
                return Err(DaemonError::Timeout {
                    op,
                    secs: options.connect_timeout.as_secs_f64(),
                });
            }
        };
        let (read, write) = stream.into_split();
        let mut conn = DaemonConnection {
            reader: WireReader {
                inner: BufReader::with_capacity(64 * 1024, read),
                timeout: options.read_timeout,
            },
            writer: write,
            minor: 0,
            daemon_nix_version: None,
            trusted: None,
            build_timeout: options.build_timeout,
            broken: None,
        };
        let read_timeout = conn.reader.timeout;
        conn.reader.timeout = options.connect_timeout;
        conn.handshake().await?;
        conn.reader.timeout = read_timeout;
        Ok(conn)
    }

    /// Connects to the socket at `path` with default timeouts.
    pub async fn connect_to(path: &Path) -> Result<DaemonConnection, DaemonError> {
        DaemonConnection::connect(&DaemonOptions {
            socket: path.to_owned(),
            ..DaemonOptions::default()
        })
        .await
    }

    async fn handshake(&mut self) -> Result<(), DaemonError> {
        let op = "handshake";
        let mut hello = Request::default();
        hello.u64(WORKER_MAGIC_1);
        self.send(op, &hello).await?;
        let magic = self.reader.u64(op).await?;
        if magic != WORKER_MAGIC_2 {
            return Err(DaemonError::Protocol {
                op,
                problem: format!(
                    "this is not a Nix daemon (magic {magic:#x} instead of {WORKER_MAGIC_2:#x})"
                ),
            });
        }
        let daemon_version = self.reader.u64(op).await?;
        if daemon_version >> 8 != 1 || daemon_version < MIN_DAEMON_VERSION {
            return Err(DaemonError::TooOld {
                major: daemon_version >> 8,
                minor: daemon_version & 0xff,
            });
        }
        let version = daemon_version.min(CLIENT_VERSION);
        self.minor = version & 0xff;
        let mut reply = Request::default();
        reply.u64(CLIENT_VERSION);
        if self.minor >= 38 {
            // We ask for no optional features, so every answer keeps its 1.37 shape.
            reply.strings(std::iter::empty());
        }
        self.send(op, &reply).await?;
        if self.minor >= 38 {
            let _daemon_features: Vec<String> = self.reader.strings(op, limits::SHORT).await?;
        }
        let mut tail = Request::default();
        tail.u64(0).u64(0); // no CPU affinity, no reserveSpace
        self.send(op, &tail).await?;
        self.daemon_nix_version = Some(self.reader.string(op, limits::SHORT).await?);
        if self.minor >= 35 {
            self.trusted = match self.reader.u64(op).await? {
                1 => Some(true),
                2 => Some(false),
                _ => None,
            };
        }
        stderr::drain(&mut self.reader, op, None).await?;
        tracing::debug!(
            target: "nix_daemon",
            "connected: protocol 1.{}, Nix {}",
            self.minor,
            self.daemon_nix_version.as_deref().unwrap_or("?")
        );
        Ok(())
    }

    /// The negotiated protocol minor version (34 with Nix 2.8).
    pub fn protocol_minor(&self) -> u64 {
        self.minor
    }

    /// The daemon's Nix version, e.g. `2.8.0`.
    pub fn daemon_nix_version(&self) -> Option<&str> {
        self.daemon_nix_version.as_deref()
    }

    /// Whether the daemon trusts us (known from protocol 1.35 only).
    pub fn trusted(&self) -> Option<bool> {
        self.trusted
    }

    async fn send(&mut self, op: &'static str, request: &Request) -> Result<(), DaemonError> {
        let write = async {
            self.writer.write_all(&request.bytes).await?;
            self.writer.flush().await
        };
        match tokio::time::timeout(self.reader.timeout, write).await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(source)) => Err(DaemonError::Io { op, source }),
            Err(_) => Err(DaemonError::Timeout {
                op,
                secs: self.reader.timeout.as_secs_f64(),
            }),
        }
    }

    /// Runs one operation, marking the connection broken if the stream may
    /// have lost its place.
    async fn guarded<T>(
        &mut self,
        op: &'static str,
        run: impl AsyncFnOnce(&mut DaemonConnection) -> Result<T, DaemonError>,
    ) -> Result<T, DaemonError> {
        if let Some(reason) = &self.broken {
            return Err(DaemonError::Broken {
                op,
                reason: reason.clone(),
            });
        }
        let result = run(self).await;
        if let Err(e) = &result
            && e.breaks_connection()
        {
            self.broken = Some(e.to_string());
        }
        result
    }
}
