//! `.sinks`: the log engines the decision log is shipped to, named in an
//! organisation bundle (every session on the machine ships to them) or in
//! the operator's `config.zon`.
//!
//! ```zon
//! .sinks = .{
//!     .{ .name = "siem", .to = "syslog+tls://logs.example:6514?ca=/etc/ssl/certs/ca.pem" },
//!     .{ .name = "journal", .to = "journald", .backlog_bytes = "16MiB" },
//! },
//! ```

use chock_zon::Spanned;
use serde::Deserialize;

pub use crate::sink_target::{JOURNALD_SOCKET, Syslog, Target, TargetError};
use crate::{ByteSize, ConfigError, Source};

/// At most this many sinks in one file.
pub const MAX_SINKS: usize = 4;

/// How many bytes of lines a sink may lag behind by default: 64 MiB.
pub const DEFAULT_BACKLOG_BYTES: u64 = 64 << 20;

/// One entry of `.sinks` as written.
#[derive(Debug, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a sink `.{ .name = \"siem\", .to = \"syslog+tcp://logs.example:514\" }`"
)]
pub struct SinkFields {
    name: String,
    to: String,
    backlog_bytes: Option<ByteSize>,
}

/// One sink: its name (which names its cursor), where it sends, and how
/// far behind it may fall.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sink {
    pub id: String,
    pub target: Target,
    pub backlog_bytes: u64,
}

/// A sink's name holds other characters than letters, digits, `.`, `_` and `-`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "`{0}` cannot name a sink: use letters, digits, `.`, `_` and `-` (at most 64), not starting with `.`"
)]
pub struct SinkNameError(pub String);

impl Sink {
    /// A sink named `id` (letters, digits, `.`, `_`, `-`; at most 64).
    pub fn new(id: &str, target: Target) -> Result<Sink, SinkNameError> {
        let fine = !id.is_empty()
            && id.len() <= 64
            && !id.starts_with('.')
            && id
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'));
        if !fine {
            return Err(SinkNameError(id.to_owned()));
        }
        Ok(Sink {
            id: id.to_owned(),
            target,
            backlog_bytes: DEFAULT_BACKLOG_BYTES,
        })
    }

    /// A sink named after its target: `syslog+tcp://h:514` is `syslog_tcp_h_514`.
    pub fn named_by_target(target: Target) -> Sink {
        let mut id: String = target
            .to_string()
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '.' || c == '-' {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        while id.contains("__") {
            id = id.replace("__", "_");
        }
        id.truncate(64);
        Sink {
            id,
            target,
            backlog_bytes: DEFAULT_BACKLOG_BYTES,
        }
    }
}

/// Reads one file's `.sinks`: at most [`MAX_SINKS`], each name a valid
/// one and used once, each `to` a sink description.
pub fn check_sinks(
    source: &Source<'_>,
    list: Spanned<Vec<Spanned<SinkFields>>>,
) -> Result<Vec<Sink>, ConfigError> {
    if list.value.len() > MAX_SINKS {
        return Err(source.error(list.span, format!("a file names at most {MAX_SINKS} sinks")));
    }
    let mut sinks: Vec<Sink> = Vec::new();
    for Spanned { span, value } in list.value {
        let target: Target = value
            .to
            .parse()
            .map_err(|e: TargetError| source.error(span, e.to_string()))?;
        let mut sink =
            Sink::new(&value.name, target).map_err(|e| source.error(span, e.to_string()))?;
        if sinks.iter().any(|s| s.id == sink.id) {
            return Err(source.error(
                span,
                format!(
                    "the sink `{}` is named twice; give each its own name",
                    sink.id
                ),
            ));
        }
        if let Some(ByteSize(bytes)) = value.backlog_bytes {
            if bytes == 0 {
                return Err(source.error(span, "a sink's backlog_bytes must be above 0"));
            }
            sink.backlog_bytes = bytes;
        }
        sinks.push(sink);
    }
    Ok(sinks)
}
