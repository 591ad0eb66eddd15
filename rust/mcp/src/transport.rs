//! MCP's stdio transport: one JSON-RPC message per line.
//!
//! rmcp's own stdio transport drops a line that is not JSON without a word,
//! and answers a message of the wrong shape with an error that names no
//! request. A client that sent either would wait for ever. This transport
//! answers every line it cannot hand on: `-32700` for text that is not JSON,
//! `-32600` for JSON that is not a JSON-RPC 2.0 message (a batch included),
//! `-32602` for a request whose parameters are malformed, each with the
//! request's id when it has one, and a sentence saying what was wrong. A
//! notification that cannot be read gets no answer, as JSON-RPC says.

use std::sync::Arc;

use rmcp::RoleServer;
use rmcp::model::{CallToolRequestParams, ClientRequest, JsonRpcMessage};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::Mutex;

/// The longest message read: a bigger line is answered with `-32600` and
/// skipped, so a client cannot make the server hold unbounded memory.
pub const MAX_MESSAGE_BYTES: usize = 32 << 20;

const PARSE_ERROR: i64 = -32700;
const INVALID_REQUEST: i64 = -32600;
const INVALID_PARAMS: i64 = -32602;

/// Reads lines from `R`, writes lines to `W`.
///
/// rmcp polls `receive` inside a `select!` and drops it whenever another
/// branch is ready, so reading keeps its partial line in the struct and
/// never awaits between taking bytes from the buffer and keeping them; a
/// reply to a bad line is sent from a task of its own, so it is never cut
/// off half written.
pub struct LineTransport<R, W> {
    reader: BufReader<R>,
    writer: Arc<Mutex<W>>,
    /// The line read so far (kept across cancelled reads).
    line: Vec<u8>,
    /// The line being read is over the bound: its bytes are dropped up to its end.
    oversized: bool,
    /// Whether `initialize` has come: before it, rmcp would end the session
    /// on a notification or a response, so those are dropped here.
    initialized: bool,
}

/// One line read: whole, or over the bound (and skipped).
enum Line {
    Whole(Vec<u8>),
    Oversized,
}

impl<R, W> LineTransport<R, W>
where
    R: AsyncRead + Unpin + Send,
    W: AsyncWrite + Unpin + Send + 'static,
{
    pub fn new(reader: R, writer: W) -> Self {
        LineTransport {
            reader: BufReader::new(reader),
            writer: Arc::new(Mutex::new(writer)),
            line: Vec::new(),
            oversized: false,
            initialized: false,
        }
    }

    /// The next line of at most [`MAX_MESSAGE_BYTES`]; `None` at the end of input.
    async fn read_line(&mut self) -> std::io::Result<Option<Line>> {
        loop {
            let available = self.reader.fill_buf().await?;
            if available.is_empty() {
                // A last line without a newline still counts.
                return Ok(if self.oversized {
                    self.oversized = false;
                    Some(Line::Oversized)
                } else if self.line.is_empty() {
                    None
                } else {
                    Some(Line::Whole(std::mem::take(&mut self.line)))
                });
            }
            let newline = available.iter().position(|b| *b == b'\n');
            let take = newline.map_or(available.len(), |i| i + 1);
            if !self.oversized && self.line.len() + take <= MAX_MESSAGE_BYTES {
                self.line.extend_from_slice(&available[..take]);
            } else {
                self.oversized = true;
                self.line.clear();
            }
            self.reader.consume(take);
            if newline.is_some() {
                if std::mem::take(&mut self.oversized) {
                    return Ok(Some(Line::Oversized));
                }
                return Ok(Some(Line::Whole(std::mem::take(&mut self.line))));
            }
        }
    }

    /// Sends a reply from a task of its own.
    fn reply(&self, reply: Value) {
        let writer = self.writer.clone();
        tokio::spawn(async move {
            write_line(&writer, &reply).await.ok();
        });
    }
}

async fn write_line<W: AsyncWrite + Unpin>(
    writer: &Mutex<W>,
    message: &impl serde::Serialize,
) -> std::io::Result<()> {
    let mut bytes = serde_json::to_vec(message).map_err(std::io::Error::other)?;
    bytes.push(b'\n');
    let mut writer = writer.lock().await;
    writer.write_all(&bytes).await?;
    writer.flush().await
}

/// What to do with one line.
#[derive(Debug)]
enum Read {
    Message(Box<RxJsonRpcMessage<RoleServer>>),
    Skip,
    Reply(Value),
}

fn error_reply(id: Value, code: i64, message: String) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
}

/// Turns one line into a message for rmcp, or the error to answer it with.
fn read_message(line: &[u8]) -> Read {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    if line.iter().all(u8::is_ascii_whitespace) {
        return Read::Skip;
    }
    let value: Value = match serde_json::from_slice(line) {
        Ok(value) => value,
        Err(e) => {
            return Read::Reply(error_reply(
                Value::Null,
                PARSE_ERROR,
                format!(
                    "Parse error: the line is not JSON ({e}); send one JSON-RPC 2.0 message per line"
                ),
            ));
        }
    };
    let Some(object) = value.as_object() else {
        let what = if value.is_array() {
            "a batch (a JSON array), which MCP does not use; send one message per line"
        } else {
            "not a JSON object; send a JSON-RPC 2.0 request object"
        };
        return Read::Reply(error_reply(
            Value::Null,
            INVALID_REQUEST,
            format!("Invalid Request: the message is {what}"),
        ));
    };
    let id = object
        .get("id")
        .filter(|id| id.is_string() || id.is_i64())
        .cloned();
    if object.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return match id {
            Some(id) => Read::Reply(error_reply(
                id,
                INVALID_REQUEST,
                "Invalid Request: `jsonrpc` must be \"2.0\"".into(),
            )),
            None => Read::Reply(error_reply(
                Value::Null,
                INVALID_REQUEST,
                "Invalid Request: `jsonrpc` must be \"2.0\"".into(),
            )),
        };
    }
    if object.contains_key("id") && id.is_none() {
        return Read::Reply(error_reply(
            Value::Null,
            INVALID_REQUEST,
            "Invalid Request: `id` must be a string or an integer".into(),
        ));
    }
    match serde_json::from_value::<RxJsonRpcMessage<RoleServer>>(value.clone()) {
        Ok(message) => match misread_params(&message, object) {
            Some(reply) => Read::Reply(reply),
            None => Read::Message(Box::new(message)),
        },
        Err(e) => match (id, object.get("method").and_then(Value::as_str)) {
            (Some(id), Some(method)) => Read::Reply(error_reply(
                id,
                INVALID_PARAMS,
                format!("Invalid params for `{method}`: {e}"),
            )),
            (Some(id), None) => Read::Reply(error_reply(
                id,
                INVALID_REQUEST,
                format!("Invalid Request: {e}"),
            )),
            // A notification (no id) is never answered, even when it is malformed.
            (None, Some(_)) => Read::Skip,
            (None, None) => Read::Reply(error_reply(
                Value::Null,
                INVALID_REQUEST,
                "Invalid Request: the message has neither `method` nor `id`".into(),
            )),
        },
    }
}

/// rmcp reads a request whose parameters do not fit its method as a
/// custom request, which would be answered "method not found". A standard
/// method with malformed parameters is answered `-32602`, naming what is wrong.
fn misread_params(
    message: &RxJsonRpcMessage<RoleServer>,
    object: &serde_json::Map<String, Value>,
) -> Option<Value> {
    let JsonRpcMessage::Request(request) = message else {
        return None;
    };
    let ClientRequest::CustomRequest(custom) = &request.request else {
        return None;
    };
    if !STANDARD_REQUESTS.contains(&custom.method.as_str()) {
        return None;
    }
    let params = object.get("params").cloned().unwrap_or(Value::Null);
    let why = match custom.method.as_str() {
        "tools/call" => serde_json::from_value::<CallToolRequestParams>(params)
            .err()
            .map(|e| e.to_string()),
        _ => None,
    }
    .unwrap_or_else(|| "they do not have the shape this method takes".into());
    let id = serde_json::to_value(&request.id).unwrap_or(Value::Null);
    Some(error_reply(
        id,
        INVALID_PARAMS,
        format!("Invalid params for `{}`: {why}", custom.method),
    ))
}

/// Before `initialize`, rmcp answers requests itself (a ping, an error
/// naming what is missing) but ends the session on any other message. So a
/// request goes through (`Some(true)` for the initialize request itself),
/// and a notification or response is dropped (`None`).
fn before_initialize(message: &RxJsonRpcMessage<RoleServer>) -> Option<bool> {
    match message {
        JsonRpcMessage::Request(request) => Some(matches!(
            request.request,
            ClientRequest::InitializeRequest(_)
        )),
        _ => None,
    }
}

/// The requests a client may send that rmcp reads with a shape of their own.
const STANDARD_REQUESTS: [&str; 14] = [
    "initialize",
    "ping",
    "tools/call",
    "tools/list",
    "prompts/get",
    "prompts/list",
    "resources/list",
    "resources/read",
    "resources/subscribe",
    "resources/unsubscribe",
    "resources/templates/list",
    "completion/complete",
    "logging/setLevel",
    "server/discover",
];

impl<R, W> Transport<RoleServer> for LineTransport<R, W>
where
    R: AsyncRead + Unpin + Send,
    W: AsyncWrite + Unpin + Send + 'static,
{
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let writer = self.writer.clone();
        async move { write_line(&writer, &item).await }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        loop {
            match self.read_line().await {
                Ok(None) => return None,
                Err(e) => {
                    tracing::warn!("reading stdin failed: {e}");
                    return None;
                }
                Ok(Some(Line::Oversized)) => self.reply(error_reply(
                    Value::Null,
                    INVALID_REQUEST,
                    format!(
                        "Invalid Request: the message is longer than {MAX_MESSAGE_BYTES} bytes and was skipped"
                    ),
                )),
                Ok(Some(Line::Whole(line))) => match read_message(&line) {
                    Read::Message(message) if self.initialized => return Some(*message),
                    Read::Message(message) => {
                        if let Some(initializes) = before_initialize(&message) {
                            self.initialized = initializes;
                            return Some(*message);
                        }
                    }
                    Read::Skip => {}
                    Read::Reply(reply) => self.reply(reply),
                },
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.writer.lock().await.shutdown().await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn code(read: &Read) -> Option<(i64, Value)> {
        match read {
            Read::Reply(v) => Some((v["error"]["code"].as_i64()?, v["id"].clone())),
            _ => None,
        }
    }

    #[test]
    fn text_that_is_not_json_is_a_parse_error_with_a_null_id() {
        assert_eq!(
            code(&read_message(b"{not json\n")),
            Some((PARSE_ERROR, Value::Null))
        );
        assert_eq!(
            code(&read_message(&[0xff, 0xfe, b'\n'])),
            Some((PARSE_ERROR, Value::Null))
        );
    }

    #[test]
    fn shapes_that_are_not_messages_are_invalid_requests() {
        assert_eq!(
            code(&read_message(b"[1,2]")),
            Some((INVALID_REQUEST, Value::Null))
        );
        assert_eq!(
            code(&read_message(b"42")),
            Some((INVALID_REQUEST, Value::Null))
        );
        assert_eq!(
            code(&read_message(br#"{"id":7,"method":"ping"}"#)),
            Some((INVALID_REQUEST, json!(7)))
        );
        assert_eq!(
            code(&read_message(
                br#"{"jsonrpc":"2.0","id":[1],"method":"ping"}"#
            )),
            Some((INVALID_REQUEST, Value::Null))
        );
    }

    #[test]
    fn malformed_params_of_a_request_name_its_id() {
        let read = read_message(
            br#"{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":5}}"#,
        );
        assert_eq!(code(&read), Some((INVALID_PARAMS, json!("a"))));
    }

    #[test]
    fn blank_lines_and_malformed_notifications_get_no_answer() {
        assert!(matches!(read_message(b"  \r\n"), Read::Skip));
        assert!(matches!(
            read_message(br#"{"jsonrpc":"2.0","method":"notifications/progress","params":7}"#),
            Read::Skip
        ));
    }

    #[test]
    fn a_request_passes_through() {
        let read = read_message(br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#);
        assert!(matches!(read, Read::Message(_)));
    }

    proptest::proptest! {
        #[test]
        fn no_line_panics(bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..256)) {
            let _ = read_message(&bytes);
        }
    }
}
