//! The one trait each API kind implements: where a request goes, its
//! headers and body, and how its event stream becomes a [`Reply`]. The
//! client ([`crate::Client`]) is the same for every kind.

use crate::conversation::{Reply, Request, StopReason, ToolCall, Usage, arguments};
use crate::sse::SseEvent;

/// Why a stream could not become a reply.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StreamFault {
    /// The stream broke the API's grammar.
    #[error("malformed: {0}")]
    Malformed(String),
    /// The provider said, inside the stream, that the request failed.
    #[error("the provider reported: {0}")]
    Provider(String),
}

/// A kind of API, as the client drives it.
pub(crate) trait Wire: Send + Sync {
    /// The path after the instance's base URL.
    fn path(&self) -> &'static str;
    /// The headers that carry the key (none without one) and the version.
    fn headers(&self, key: Option<&str>) -> Vec<(&'static str, String)>;
    /// The request body, asking for a stream.
    fn body(&self, request: &Request<'_>) -> serde_json::Value;
    /// A fresh reader of one reply's stream.
    fn reader(&self) -> Box<dyn ReadStream>;
}

/// One reply's stream, read event by event.
pub(crate) trait ReadStream: Send {
    /// Reads one event, giving streamed text to `on_text`; `Ok(true)` once
    /// the stream's last event has come.
    fn event(
        &mut self,
        event: SseEvent,
        on_text: &mut (dyn FnMut(&str) + Send),
    ) -> Result<bool, StreamFault>;
    /// The reply, once the last event has come.
    fn finish(self: Box<Self>) -> Result<Reply, StreamFault>;
}

/// A tool call whose pieces are still arriving.
#[derive(Debug, Default)]
pub(crate) struct PartialCall {
    pub(crate) id: String,
    pub(crate) name: String,
    pub(crate) arguments: String,
}

/// What every kind gathers from its stream.
#[derive(Debug, Default)]
pub(crate) struct Gathered {
    pub(crate) text: String,
    pub(crate) calls: Vec<PartialCall>,
    pub(crate) usage: Usage,
    pub(crate) stop: Option<StopReason>,
}

impl Gathered {
    pub(crate) fn text(&mut self, piece: &str, on_text: &mut (dyn FnMut(&str) + Send)) {
        if !piece.is_empty() {
            self.text.push_str(piece);
            on_text(piece);
        }
    }

    /// The reply: every call complete (an id and a name); a call whose
    /// arguments are no JSON object is kept, marked malformed, for the
    /// loop to answer with an error the model can correct.
    pub(crate) fn reply(self) -> Result<Reply, StreamFault> {
        let mut tool_calls = Vec::with_capacity(self.calls.len());
        for call in self.calls {
            if call.id.is_empty() || call.name.is_empty() {
                return Err(StreamFault::Malformed(
                    "a tool call came without its id or name".into(),
                ));
            }
            let (args, malformed) = match arguments(&call.name, &call.arguments) {
                Ok(args) => (args, None),
                Err(why) => (
                    serde_json::Value::Object(Default::default()),
                    Some(why.to_string()),
                ),
            };
            tool_calls.push(ToolCall {
                id: call.id,
                name: call.name,
                arguments: args,
                malformed,
            });
        }
        let stop = match self.stop {
            Some(StopReason::EndTurn) if !tool_calls.is_empty() => StopReason::ToolUse,
            Some(stop) => stop,
            None => {
                return Err(StreamFault::Malformed(
                    "the stream ended without saying why the model stopped".into(),
                ));
            }
        };
        Ok(Reply {
            text: self.text,
            tool_calls,
            stop,
            usage: self.usage,
            attempts: 1,
        })
    }
}

/// `data` as JSON, or a malformed stream naming what was expected.
pub(crate) fn json<T: serde::de::DeserializeOwned>(
    data: &str,
    what: &str,
) -> Result<T, StreamFault> {
    serde_json::from_str(data)
        .map_err(|e| StreamFault::Malformed(format!("{what} is not what the API sends ({e})")))
}

/// A stop reason as the provider spells it.
pub(crate) fn stop_reason(word: &str) -> StopReason {
    match word {
        "end_turn" | "stop" | "stop_sequence" | "completed" => StopReason::EndTurn,
        "tool_use" | "tool_calls" | "function_call" => StopReason::ToolUse,
        "max_tokens" | "length" | "max_output_tokens" => StopReason::MaxTokens,
        other => StopReason::Other(other.to_owned()),
    }
}
