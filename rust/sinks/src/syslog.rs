//! One line as an RFC 5424 syslog message, and its octet-counted frame
//! for stream transports (RFC 6587, RFC 5425).
//!
//! `<PRI>1 TIMESTAMP HOSTNAME chock PROCID ROUTE [chock@32473 ...] LINE`:
//! facility `local0`, severity `warning` for a refusal and `info` for
//! anything else; the structured data holds the fields of
//! [`crate::fields::Shipped::fields`]; the message is the log line's JSON.

use crate::fields::{Origin, Shipped};

/// The SD-ID of Chock's structured data: a name at a private enterprise number.
pub const SD_ID: &str = "chock@32473";

/// `local0`, the facility a site routes by.
const FACILITY_LOCAL0: u8 = 16;
const SEVERITY_WARNING: u8 = 4;
const SEVERITY_INFO: u8 = 6;

/// The message for one line, unframed: what a datagram carries.
pub fn message(line: &Shipped<'_>, origin: &Origin) -> Vec<u8> {
    let severity = if line.is_refusal() {
        SEVERITY_WARNING
    } else {
        SEVERITY_INFO
    };
    let pri = FACILITY_LOCAL0 * 8 + severity;
    let mut data = format!("[{SD_ID}");
    for (name, value) in line.fields(origin) {
        data.push_str(&format!(" {name}=\"{}\"", escape(&value)));
    }
    data.push(']');
    format!(
        "<{pri}>1 {ts} {host} chock {pid} {msgid} {data} {text}",
        ts = header_field(&line.record.ts),
        host = header_field(&origin.host),
        pid = std::process::id(),
        msgid = header_field(line.record.entry.route.as_str()),
        text = line.text,
    )
    .into_bytes()
}

/// The octet-counted frame: the message's length in bytes, a space, the message.
pub fn frame(message: &[u8]) -> Vec<u8> {
    let mut frame = format!("{} ", message.len()).into_bytes();
    frame.extend_from_slice(message);
    frame
}

/// A PARAM-VALUE: `"`, `\` and `]` are escaped with a backslash.
fn escape(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for c in value.chars() {
        if matches!(c, '"' | '\\' | ']') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// A header field is printable US-ASCII without spaces, at most 255
/// characters; anything else in it becomes `_`, and an empty one `-`.
fn header_field(value: &str) -> String {
    let field: String = value
        .chars()
        .take(255)
        .map(|c| if c.is_ascii_graphic() { c } else { '_' })
        .collect();
    if field.is_empty() {
        "-".to_owned()
    } else {
        field
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chock_log::{AnsweredBy, DecidedBy, Entry, Record, Route};
    use chock_policy::{Decision, Layer};

    fn record(decision: Decision, policy: Option<&str>) -> Record {
        Record {
            seq: 7,
            prev: "0".repeat(64),
            unchained: None,
            ts: "2026-12-07T14:00:00.123Z".into(),
            entry: Entry {
                route: Route::Mcp,
                project: "/src/a \"b\" [c] \\d".into(),
                action: "call.write_file".into(),
                agent_kind: "coder".into(),
                model: None,
                tool: None,
                decision,
                decided_by: DecidedBy {
                    layer: Layer::Policy,
                    file: None,
                    line: None,
                    policy: policy.map(str::to_owned),
                    held: None,
                    identity: None,
                },
                answered_by: AnsweredBy::Rule,
                subject: None,
                scope: None,
            },
        }
    }

    fn origin() -> Origin {
        Origin {
            host: "build box".into(),
            user: "ann".into(),
        }
    }

    #[test]
    fn a_message_has_the_header_the_structured_data_and_the_line() {
        let record = record(Decision::Deny, Some("no-net"));
        let text = r#"{"seq":7}"#;
        let line = Shipped {
            record: &record,
            text,
        };
        let message = String::from_utf8(message(&line, &origin())).unwrap();
        let pid = std::process::id();
        assert_eq!(
            message,
            format!(
                r#"<132>1 2026-12-07T14:00:00.123Z build_box chock {pid} mcp [chock@32473 host="build box" user="ann" project="/src/a \"b\" [c\] \\d" route="mcp" action="call.write_file" decision="deny" seq="7" policy="no-net"] {{"seq":7}}"#
            )
        );
    }

    #[test]
    fn anything_but_a_refusal_is_info_and_a_missing_policy_is_left_out() {
        let record = record(Decision::Allow, None);
        let line = Shipped {
            record: &record,
            text: "{}",
        };
        let message = String::from_utf8(message(&line, &origin())).unwrap();
        assert!(message.starts_with("<134>1 "), "{message}");
        assert!(!message.contains("policy="), "{message}");
    }

    #[test]
    fn a_frame_counts_bytes_not_characters() {
        assert_eq!(frame("é".as_bytes()), b"2 \xc3\xa9".to_vec());
    }
}
