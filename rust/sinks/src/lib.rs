//! Ships the decision log to the log engines an organisation runs:
//! journald (its native protocol), syslog (RFC 5424 over a Unix socket,
//! UDP, TCP or TLS) and OpenTelemetry collectors (OTLP logs over HTTP or
//! gRPC, with or without TLS).
//!
//! The log is the spool. Each sink keeps a cursor beside the log (the last
//! line it delivered, by seq and hash) and a lock, so one shipper per sink
//! sends each line once; a receiver that is down, slow or flapping leaves
//! the lines in the log until it is back. A sink never falls further
//! behind than its backlog bound: past it, and for lines rotated away
//! before they were sent, the shipper skips ahead and counts what it
//! skipped in the cursor and in a `log.sink.overflow` line.
//!
//! Shipping never runs on a decision's path: a decision only appends to
//! the log, and [`ship`] (or `chock log ship`) does bounded work, every
//! connect and write waiting no later than its deadline.
//!
//! ```no_run
//! use std::time::{Duration, Instant};
//! use chock_sinks::{Sink, Target};
//! let target: Target = "syslog+tcp://127.0.0.1:5514".parse().unwrap();
//! let log = chock_log::Log::from_env(chock_log::Rotation::default()).unwrap();
//! let report = chock_sinks::ship(&Sink::named_by_target(target), &log, Instant::now() + Duration::from_secs(2));
//! ```

#![forbid(unsafe_code)]

mod cursor;
mod error;
mod fields;
mod journald;
mod otlp;
mod pending;
mod ship;
mod syslog;
mod transport;
mod wake;

pub use chock_config::sinks::{
    DEFAULT_BACKLOG_BYTES, JOURNALD_SOCKET, Sink, SinkNameError, Syslog, Target, TargetError,
};
pub use chock_config::{OTLP_HTTP_PATH, Otlp, OtlpProtocol, OtlpTls};
pub use cursor::{Cursor, LastRound, Point};
pub use error::SinkError;
pub use fields::{Origin, Shipped};
/// The entry one line becomes in journald's native protocol.
pub use journald::entry as journald_entry;
pub use ship::{DEFAULT_ROUND, OVERFLOW_ACTION, Report, Shipper, SinkState, ship, state};
pub use syslog::{SD_ID, frame as syslog_frame, message as syslog_message};
pub use wake::wake;
