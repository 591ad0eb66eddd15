//! `.sinks` of an organisation bundle: where the decision log must be
//! copied.

use chock_zon::Spanned;
use serde::Deserialize;

use crate::{ConfigError, Source};

/// At most this many sinks in a bundle.
pub const MAX_SINKS: usize = 4;

#[derive(Debug, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a sink `.{ .kind = .directory, .path = \"/var/log/chock\" }`"
)]
pub struct SinkFields {
    kind: SinkKind,
    path: String,
}

/// Where a bundle requires the decision log to be copied.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SinkKind {
    Directory,
    Syslog,
}

/// A required audit sink.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sink {
    pub kind: SinkKind,
    pub path: std::path::PathBuf,
}

pub fn check_sinks(
    source: &Source<'_>,
    list: Spanned<Vec<Spanned<SinkFields>>>,
) -> Result<Vec<Sink>, ConfigError> {
    if list.value.len() > MAX_SINKS {
        return Err(source.error(
            list.span,
            format!("a bundle names at most {MAX_SINKS} sinks"),
        ));
    }
    let mut sinks = Vec::new();
    for (i, Spanned { span, value }) in list.value.into_iter().enumerate() {
        let n = i + 1;
        if value.path.is_empty() || !value.path.starts_with('/') || value.path.len() > 4096 {
            return Err(source.error(
                span,
                format!("sink {n}: the path must be absolute, not empty, and at most 4096 bytes"),
            ));
        }
        sinks.push(Sink {
            kind: value.kind,
            path: value.path.into(),
        });
    }
    Ok(sinks)
}
