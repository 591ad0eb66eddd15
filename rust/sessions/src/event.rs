//! What a session's log holds: one event per line, typed, and open to
//! events other parts of Chock add ([`Event::custom`]).

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::error::{BadEvent, BadLine};

/// One event of a session, as it is written after the chain fields:
/// `{"seq":N,"prev":"<sha256>","ts":"...","type":"<kind>",<fields>}`.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// The session began (`start`).
    Start(Start),
    /// The session was taken up again by `--continue` or `--session`
    /// (`resume`), with the model it goes on with.
    Resume(ModelRef),
    /// What the person asked (`user`): the task, and each later task.
    User(User),
    /// One reply of the model (`turn`): its text, the calls it asked for,
    /// the tokens it used.
    Turn(Turn),
    /// A tool call's result, as the model was given it (`tool_result`).
    ToolResult(ToolResult),
    /// How the session ended (`end`).
    End(End),
    /// An event of a kind this crate does not define (`plan`,
    /// `policy.self`, or one written by a newer Chock), kept as written.
    Custom(Custom),
}

/// The kinds this crate defines; [`Event::custom`] takes any other.
pub const KINDS: [&str; 6] = ["start", "resume", "user", "turn", "tool_result", "end"];

/// The model a session talks to: the provider instance of `config.zon`,
/// the API it speaks (`anthropic`, `openai_chat`, `openai_responses`) and
/// the model id.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModelRef {
    pub instance: String,
    pub kind: String,
    pub model: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Start {
    /// The session id (`run-…`), the same as its workspace's.
    pub session: String,
    /// The project directory.
    pub project: String,
    #[serde(flatten)]
    pub model: ModelRef,
    /// The version of Chock that ran it.
    pub chock: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct User {
    pub text: String,
}

/// One call the model asked for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Call {
    pub id: String,
    pub name: String,
    pub arguments: Value,
}

/// Tokens one request used, as the provider counted them. `input` counts
/// every token read, cached or not; `cache_read` and `cache_write` are the
/// part of it read from or written to the provider's prompt cache.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tokens {
    pub input: u64,
    pub output: u64,
    #[serde(default)]
    pub cache_read: u64,
    #[serde(default)]
    pub cache_write: u64,
}

impl Tokens {
    /// `self` plus `other`, saturating.
    pub fn plus(self, other: Tokens) -> Tokens {
        Tokens {
            input: self.input.saturating_add(other.input),
            output: self.output.saturating_add(other.output),
            cache_read: self.cache_read.saturating_add(other.cache_read),
            cache_write: self.cache_write.saturating_add(other.cache_write),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Turn {
    pub text: String,
    pub tool_calls: Vec<Call>,
    pub tokens: Tokens,
    /// Who answered: usage is counted and priced per model.
    #[serde(flatten)]
    pub model: ModelRef,
}

/// How a tool call was answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Answer {
    /// The call was allowed and ran.
    Allowed,
    /// The policy, a person or nobody refused it.
    Refused,
    /// It was allowed and failed, or could not be made.
    Failed,
}

impl Answer {
    /// How an outcome of the tool server reads: `Err` is a refusal when
    /// its sentence says so (every refusal begins `refused`), else a failure.
    pub fn of(outcome: &Result<String, impl std::fmt::Display>) -> Answer {
        match outcome {
            Ok(_) => Answer::Allowed,
            Err(error) if error.to_string().starts_with("refused") => Answer::Refused,
            Err(_) => Answer::Failed,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Answer::Allowed => "allowed",
            Answer::Refused => "refused",
            Answer::Failed => "failed",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolResult {
    pub call_id: String,
    pub tool: String,
    pub answer: Answer,
    /// What the model read (secrets already scrubbed by the tool server).
    pub content: String,
}

/// How a session ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum How {
    /// The model stopped calling tools.
    Done,
    /// It was still calling tools at `--max-turns`.
    MaxTurns,
    /// A request to the model failed.
    Failed,
    /// The model refused to go on (the provider's refusal stop).
    Refusal,
    /// The person cancelled the last prompt (`chock acp`, or a signal to
    /// `chock run`).
    Cancelled,
    /// It reached `--max-budget` or `--max-tokens`.
    Budget,
    /// The model made too many calls in a row that could not be run.
    UnusableCalls,
}

impl How {
    pub fn as_str(self) -> &'static str {
        match self {
            How::Done => "done",
            How::MaxTurns => "max_turns",
            How::Failed => "failed",
            How::Refusal => "refusal",
            How::Cancelled => "cancelled",
            How::Budget => "budget",
            How::UnusableCalls => "unusable_calls",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct End {
    pub how: How,
    /// What became of the workspace's work, or why the session failed.
    pub said: String,
}

/// An event of a kind another part of Chock defines, kept as its fields.
#[derive(Debug, Clone, PartialEq)]
pub struct Custom {
    pub kind: String,
    pub fields: Map<String, Value>,
}

/// Why an event cannot be made or read.
#[derive(Debug, thiserror::Error)]
pub enum EventError {
    #[error(
        "`{0}` cannot be a custom event's kind: it is one of {KINDS:?}, or not 1 to 64 of a-z, 0-9, `.` and `_`"
    )]
    Kind(String),
    #[error("a custom event's fields must be a JSON object without `type`, `seq`, `prev` or `ts`")]
    Fields,
    #[error("{0}")]
    Json(#[from] serde_json::Error),
}

/// Field names the line itself uses.
const RESERVED: [&str; 5] = ["type", "seq", "prev", "ts", "unchained"];

fn custom_kind(kind: &str) -> bool {
    (1..=64).contains(&kind.len())
        && !KINDS.contains(&kind)
        && kind
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'.' || b == b'_')
}

impl Event {
    /// An event of another kind (`plan`, `policy.self`, ...) whose fields
    /// are `value`'s (a struct or map serialising to a JSON object).
    ///
    /// ```
    /// # use chock_sessions::Event;
    /// #[derive(serde::Serialize, serde::Deserialize, PartialEq, Debug)]
    /// struct Plan { steps: Vec<String> }
    /// let event = Event::custom("plan", &Plan { steps: vec!["read".into()] }).unwrap();
    /// assert_eq!(event.decode::<Plan>("plan").unwrap().unwrap().steps, ["read"]);
    /// ```
    pub fn custom(kind: &str, value: &impl Serialize) -> Result<Event, EventError> {
        if !custom_kind(kind) {
            return Err(EventError::Kind(kind.to_owned()));
        }
        match serde_json::to_value(value)? {
            Value::Object(fields) if !RESERVED.iter().any(|r| fields.contains_key(*r)) => {
                Ok(Event::Custom(Custom {
                    kind: kind.to_owned(),
                    fields,
                }))
            }
            _ => Err(EventError::Fields),
        }
    }

    /// A custom event of `kind` read as `T`; `None` for any other event.
    pub fn decode<T: DeserializeOwned>(&self, kind: &str) -> Option<Result<T, serde_json::Error>> {
        match self {
            Event::Custom(custom) if custom.kind == kind => {
                Some(serde_json::from_value(Value::Object(custom.fields.clone())))
            }
            _ => None,
        }
    }

    /// The kind written as the line's `type`.
    pub fn kind(&self) -> &str {
        match self {
            Event::Start(_) => "start",
            Event::Resume(_) => "resume",
            Event::User(_) => "user",
            Event::Turn(_) => "turn",
            Event::ToolResult(_) => "tool_result",
            Event::End(_) => "end",
            Event::Custom(custom) => &custom.kind,
        }
    }

    /// The fields after `ts`: `type` first, then the event's own.
    pub(crate) fn fields(&self) -> Result<Map<String, Value>, serde_json::Error> {
        let own = match self {
            Event::Start(e) => serde_json::to_value(e)?,
            Event::Resume(e) => serde_json::to_value(e)?,
            Event::User(e) => serde_json::to_value(e)?,
            Event::Turn(e) => serde_json::to_value(e)?,
            Event::ToolResult(e) => serde_json::to_value(e)?,
            Event::End(e) => serde_json::to_value(e)?,
            Event::Custom(custom) => Value::Object(custom.fields.clone()),
        };
        let mut fields = Map::new();
        fields.insert("type".into(), Value::String(self.kind().to_owned()));
        if let Value::Object(own) = own {
            fields.extend(own);
        }
        Ok(fields)
    }

    /// Reads an event from a line's fields (the chain fields and `ts`
    /// left out or ignored).
    pub(crate) fn from_fields(mut fields: Map<String, Value>) -> Result<Event, BadLine> {
        for field in ["seq", "prev", "ts", "unchained"] {
            fields.remove(field);
        }
        let kind = match fields.remove("type") {
            Some(Value::String(kind)) => kind,
            _ => return Err(BadLine::NoKind),
        };
        let value = Value::Object(fields);
        let read = |source| BadLine::Unreadable {
            kind: kind.clone(),
            source,
        };
        Ok(match kind.as_str() {
            "start" => Event::Start(serde_json::from_value(value).map_err(read)?),
            "resume" => Event::Resume(serde_json::from_value(value).map_err(read)?),
            "user" => Event::User(serde_json::from_value(value).map_err(read)?),
            "turn" => Event::Turn(serde_json::from_value(value).map_err(read)?),
            "tool_result" => Event::ToolResult(serde_json::from_value(value).map_err(read)?),
            "end" => Event::End(serde_json::from_value(value).map_err(read)?),
            _ => match value {
                Value::Object(fields) => Event::Custom(Custom { kind, fields }),
                _ => return Err(BadLine::NotAnObject(kind)),
            },
        })
    }
}

/// The events of `kind` read as `T`, oldest first: what a fold over the
/// log starts from (the newest `plan` is the task list; every
/// `policy.self` is a promise). An event of that kind that does not read
/// as `T` is an error naming its place among the events.
pub fn custom_events<T: DeserializeOwned>(
    events: &[Event],
    kind: &str,
) -> Result<Vec<T>, BadEvent> {
    events
        .iter()
        .enumerate()
        .filter_map(|(i, e)| e.decode::<T>(kind).map(|r| (i, r)))
        .map(|(i, r)| {
            r.map_err(|source| BadEvent {
                place: i + 1,
                kind: kind.to_owned(),
                source,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn model() -> ModelRef {
        ModelRef {
            instance: "claude".into(),
            kind: "anthropic".into(),
            model: "m".into(),
        }
    }

    #[test]
    fn every_kind_reads_back_what_it_writes() {
        let events = [
            Event::Start(Start {
                session: "run-1".into(),
                project: "/p".into(),
                model: model(),
                chock: "0.1.0".into(),
            }),
            Event::Resume(model()),
            Event::User(User {
                text: "do it".into(),
            }),
            Event::Turn(Turn {
                text: "ok".into(),
                tool_calls: vec![Call {
                    id: "t1".into(),
                    name: "read_file".into(),
                    arguments: serde_json::json!({"path": "a"}),
                }],
                tokens: Tokens {
                    input: 10,
                    output: 2,
                    cache_read: 1,
                    cache_write: 0,
                },
                model: model(),
            }),
            Event::ToolResult(ToolResult {
                call_id: "t1".into(),
                tool: "read_file".into(),
                answer: Answer::Refused,
                content: "refused: no".into(),
            }),
            Event::End(End {
                how: How::MaxTurns,
                said: "kept".into(),
            }),
            Event::custom("policy.self", &serde_json::json!({"action": "git.push"})).unwrap(),
        ];
        for event in events {
            let fields = event.fields().unwrap();
            assert_eq!(fields["type"], event.kind());
            assert_eq!(Event::from_fields(fields).unwrap(), event);
        }
    }

    #[test]
    fn custom_kinds_cannot_take_a_defined_name_or_a_line_field() {
        assert!(matches!(
            Event::custom("turn", &serde_json::json!({})),
            Err(EventError::Kind(_))
        ));
        assert!(matches!(
            Event::custom("Plan", &serde_json::json!({})),
            Err(EventError::Kind(_))
        ));
        assert!(matches!(
            Event::custom("plan", &serde_json::json!({"seq": 1})),
            Err(EventError::Fields)
        ));
        assert!(matches!(
            Event::custom("plan", &serde_json::json!([1])),
            Err(EventError::Fields)
        ));
    }

    #[test]
    fn a_fold_reads_every_event_of_its_kind_and_names_one_that_does_not() {
        let events = vec![
            Event::custom("plan", &serde_json::json!({"steps": ["a"]})).unwrap(),
            Event::User(User { text: "x".into() }),
            Event::custom("plan", &serde_json::json!({"steps": ["a", "b"]})).unwrap(),
        ];
        #[derive(Deserialize)]
        struct Plan {
            steps: Vec<String>,
        }
        let plans: Vec<Plan> = custom_events(&events, "plan").unwrap();
        assert_eq!(plans.last().map(|p| p.steps.len()), Some(2));
        let bad = vec![Event::custom("plan", &serde_json::json!({"steps": 1})).unwrap()];
        let why = custom_events::<Plan>(&bad, "plan").err().unwrap();
        assert_eq!((why.place, why.kind.as_str()), (1, "plan"));
        assert!(why.to_string().contains("event 1"), "{why}");
    }

    #[test]
    fn answers_read_from_the_tool_servers_outcome() {
        assert_eq!(Answer::of(&Ok::<_, &str>("x".into())), Answer::Allowed);
        assert_eq!(
            Answer::of(&Err::<String, _>("refused: call.write_file is denied")),
            Answer::Refused
        );
        assert_eq!(
            Answer::of(&Err::<String, _>("no such file")),
            Answer::Failed
        );
    }
}
