//! The check the `entry` fuzz target runs on each input, shared with the
//! crate's `no_panic` test, which feeds it the corpus kept in the
//! repository: a log line of any text becomes an RFC 5424 message and a
//! journald entry without a panic, and each receiver's parser reads back
//! the line and every field the sink sends, with the same values. A line
//! that is a record is shipped as it is; any other text fills a record's
//! fields (split at tabs: host, user, project, action, policy, timestamp),
//! so quotes, backslashes, brackets and newlines reach each field.

use std::collections::BTreeMap;

use chock_log::{AnsweredBy, DecidedBy, Entry, Record, Route};
use chock_policy::{Decision, Layer};
use chock_sinks::{Origin, SD_ID, Shipped, journald_entry, syslog_frame, syslog_message};

#[path = "../../tests/support/formats.rs"]
mod formats;

/// Ships `bytes` as one log line in both formats and reads each back.
pub fn ship_line(bytes: &[u8]) {
    let text = String::from_utf8_lossy(bytes);
    let (record, origin, line) = match serde_json::from_str::<Record>(&text) {
        Ok(record) => (record, origin("build box", "ann"), text.into_owned()),
        Err(_) => filled(&text),
    };
    let shipped = Shipped {
        record: &record,
        text: &line,
    };
    let fields: BTreeMap<String, String> = shipped
        .fields(&origin)
        .into_iter()
        .map(|(name, value)| (name.to_owned(), value))
        .collect();
    read_syslog(&shipped, &origin, &fields);
    read_journald(&shipped, &origin, &fields);
}

fn origin(host: &str, user: &str) -> Origin {
    Origin {
        host: host.to_owned(),
        user: user.to_owned(),
    }
}

/// A record whose fields are the tab-separated parts of `text`, and its JSON line.
fn filled(text: &str) -> (Record, Origin, String) {
    let mut parts = text.split('\t');
    let mut next = || parts.next().unwrap_or_default().to_owned();
    let (host, user, project, action) = (next(), next(), next(), next());
    let policy = Some(next()).filter(|p| !p.is_empty());
    let ts = next();
    let decision = if text.len().is_multiple_of(2) {
        Decision::Allow
    } else {
        Decision::Deny
    };
    let record = Record {
        seq: text.len() as u64,
        prev: "0".repeat(64),
        unchained: None,
        ts,
        entry: Entry {
            route: Route::Mcp,
            project,
            action,
            agent_kind: "coder".into(),
            model: None,
            tool: None,
            decision,
            decided_by: DecidedBy {
                layer: Layer::Policy,
                file: None,
                line: None,
                policy,
                held: None,
                identity: None,
            },
            answered_by: AnsweredBy::Rule,
            subject: None,
            scope: None,
        },
    };
    let line = serde_json::to_string(&record).expect("a record writes as JSON");
    (record, origin(&host, &user), line)
}

/// The message's header has six fields, each printable US-ASCII; its
/// structured data escapes every `"`, `\` and `]` in a value and reads
/// back as the fields; the line follows it whole; the frame counts bytes.
fn read_syslog(shipped: &Shipped<'_>, origin: &Origin, fields: &BTreeMap<String, String>) {
    let message = syslog_message(shipped, origin);
    let frame = syslog_frame(&message);
    assert_eq!(
        frame,
        [format!("{} ", message.len()).as_bytes(), &message].concat()
    );
    let message = String::from_utf8(message).expect("a message is UTF-8");
    let mut parts = message.splitn(7, ' ');
    for _ in 0..6 {
        let field = parts.next().expect("a header field");
        assert!(
            !field.is_empty() && field.len() <= 255 && field.bytes().all(|b| b.is_ascii_graphic()),
            "a header field {field:?} in {message:?}"
        );
    }
    let data = parts.next().expect("structured data");
    let (id, params, rest) =
        formats::structured_data(data).unwrap_or_else(|| panic!("no structured data: {message:?}"));
    assert_eq!(id, SD_ID);
    assert_eq!(&params, fields, "{message:?}");
    assert_eq!(rest, format!(" {}", shipped.text), "{message:?}");
    let element = &data[..data.len() - rest.len()];
    assert_eq!(
        unescaped_closers(element),
        1,
        "an unescaped `]` in {element:?}"
    );
}

/// How many `]` in `element` no backslash escapes.
fn unescaped_closers(element: &str) -> usize {
    let mut count = 0;
    let mut chars = element.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                chars.next();
            }
            ']' => count += 1,
            _ => {}
        }
    }
    count
}

/// The entry reads back as journald reads it: the line, its priority, and
/// each field under `CHOCK_` and its name in upper case.
fn read_journald(shipped: &Shipped<'_>, origin: &Origin, fields: &BTreeMap<String, String>) {
    let read = formats::journal_fields(&journald_entry(shipped, origin));
    let text = |key: &str| {
        read.get(key)
            .map(|v| String::from_utf8_lossy(v).into_owned())
    };
    assert_eq!(text("MESSAGE").as_deref(), Some(shipped.text));
    let priority = if shipped.is_refusal() { "4" } else { "6" };
    assert_eq!(text("PRIORITY").as_deref(), Some(priority));
    assert_eq!(text("CHOCK_TS").as_ref(), Some(&shipped.record.ts));
    for (name, value) in fields {
        let key = format!("CHOCK_{}", name.to_ascii_uppercase());
        assert_eq!(text(&key).as_ref(), Some(value), "{key}");
    }
    assert_eq!(read.len(), fields.len() + 5, "{read:?}");
}
