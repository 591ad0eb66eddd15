//! The stderr loop: what the daemon sends while it works, up to
//! `STDERR_LAST` (the answer follows) or `STDERR_ERROR` (it failed).

use std::time::Duration;

use super::DaemonError;
use super::wire::{WireReader, limits};

const STDERR_NEXT: u64 = 0x6f6c_6d67;
const STDERR_READ: u64 = 0x6461_7461;
const STDERR_WRITE: u64 = 0x6461_7416;
const STDERR_LAST: u64 = 0x616c_7473;
const STDERR_ERROR: u64 = 0x6378_7470;
const STDERR_START_ACTIVITY: u64 = 0x5354_5254;
const STDERR_STOP_ACTIVITY: u64 = 0x5354_4f50;
const STDERR_RESULT: u64 = 0x5253_4c54;

/// `ResultType::BuildLogLine`.
const RESULT_BUILD_LOG_LINE: u64 = 101;

/// Reads messages until `STDERR_LAST`; a `STDERR_ERROR` becomes
/// [`DaemonError::Daemon`] with the daemon's own message. `wait` is the
/// silence allowed between messages (long for builds), the reader's
/// timeout when `None`.
pub(crate) async fn drain(
    reader: &mut WireReader,
    op: &'static str,
    wait: Option<Duration>,
) -> Result<(), DaemonError> {
    loop {
        let tag = reader
            .u64_within(op, wait.unwrap_or(reader.timeout))
            .await?;
        match tag {
            STDERR_LAST => return Ok(()),
            STDERR_NEXT => {
                let line = reader.bytes(op, limits::MESSAGE).await?;
                tracing::info!(target: "nix_daemon", "{}", strip_ansi(&String::from_utf8_lossy(&line)).trim_end());
            }
            STDERR_ERROR => return Err(read_error(reader, op).await),
            STDERR_START_ACTIVITY => {
                let id = reader.u64(op).await?;
                let _level = reader.u64(op).await?;
                let kind = reader.u64(op).await?;
                let text = reader.bytes(op, limits::MESSAGE).await?;
                skip_fields(reader, op).await?;
                let _parent = reader.u64(op).await?;
                let text = String::from_utf8_lossy(&text);
                if !text.is_empty() {
                    tracing::debug!(target: "nix_daemon", activity = id, kind, "{}", strip_ansi(&text));
                }
            }
            STDERR_STOP_ACTIVITY => {
                let _id = reader.u64(op).await?;
            }
            STDERR_RESULT => {
                let id = reader.u64(op).await?;
                let kind = reader.u64(op).await?;
                let fields = read_fields(reader, op).await?;
                if kind == RESULT_BUILD_LOG_LINE
                    && let Some(Field::Text(line)) = fields.first()
                {
                    tracing::info!(target: "nix_daemon", activity = id, "{}", strip_ansi(line).trim_end());
                }
            }
            STDERR_READ | STDERR_WRITE => {
                return Err(DaemonError::Protocol {
                    op,
                    problem: format!(
                        "the daemon asked for a data exchange ({tag:#x}) this operation never uses"
                    ),
                });
            }
            other => {
                return Err(DaemonError::Protocol {
                    op,
                    problem: format!("unknown message type {other:#x}"),
                });
            }
        }
    }
}

/// `STDERR_ERROR`'s payload, structured as in every protocol from 1.26 on.
async fn read_error(reader: &mut WireReader, op: &'static str) -> DaemonError {
    let result: Result<String, DaemonError> = async {
        let _kind = reader.bytes(op, limits::SHORT).await?;
        let _level = reader.u64(op).await?;
        let _name = reader.bytes(op, limits::SHORT).await?;
        let message = reader.bytes(op, limits::MESSAGE).await?;
        let mut message = strip_ansi(&String::from_utf8_lossy(&message))
            .trim()
            .to_owned();
        if reader.u64(op).await? != 0 {
            return Err(DaemonError::Protocol {
                op,
                problem: "an error with a position, which the protocol does not send".to_owned(),
            });
        }
        let traces = reader.count(op, limits::FIELDS).await?;
        for _ in 0..traces {
            if reader.u64(op).await? != 0 {
                return Err(DaemonError::Protocol {
                    op,
                    problem: "a trace with a position, which the protocol does not send".to_owned(),
                });
            }
            let hint = reader.bytes(op, limits::MESSAGE).await?;
            message.push_str("\n  … ");
            message.push_str(strip_ansi(&String::from_utf8_lossy(&hint)).trim());
        }
        Ok(message)
    }
    .await;
    match result {
        Ok(message) => DaemonError::Daemon { op, message },
        Err(e) => e,
    }
}

enum Field {
    Int,
    Text(String),
}

async fn read_fields(reader: &mut WireReader, op: &'static str) -> Result<Vec<Field>, DaemonError> {
    let n = reader.count(op, limits::FIELDS).await?;
    let mut fields = Vec::new();
    for _ in 0..n {
        match reader.u64(op).await? {
            0 => {
                reader.u64(op).await?;
                fields.push(Field::Int);
            }
            1 => fields.push(Field::Text(
                String::from_utf8_lossy(&reader.bytes(op, limits::MESSAGE).await?).into_owned(),
            )),
            other => {
                return Err(DaemonError::Protocol {
                    op,
                    problem: format!("unknown activity field type {other}"),
                });
            }
        }
    }
    Ok(fields)
}

async fn skip_fields(reader: &mut WireReader, op: &'static str) -> Result<(), DaemonError> {
    read_fields(reader, op).await.map(drop)
}

/// Removes terminal colour codes (`ESC [ ... letter`) that Nix puts in messages.
pub(crate) fn strip_ansi(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' && chars.peek() == Some(&'[') {
            chars.next();
            for d in chars.by_ref() {
                if d.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::strip_ansi;

    #[test]
    fn strips_colours() {
        assert_eq!(
            strip_ansi("path '\u{1b}[35;1m/nix/store/x\u{1b}[0m' is not valid"),
            "path '/nix/store/x' is not valid"
        );
    }
}
