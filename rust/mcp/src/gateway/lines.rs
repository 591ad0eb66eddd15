//! A command server's stdio as an MCP transport: one JSON-RPC message a
//! line, each line bounded. A line longer than the server's bound is never
//! held whole: its first and last bytes are kept, the request it answers
//! is found in them (the `id` comes first from some SDKs, last from
//! others), and that request is answered with an error in the server's
//! place, so the agent's call ends at once instead of waiting for an
//! answer that was dropped.

use std::sync::Arc;

use rmcp::RoleClient;
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::unix::pipe::{Receiver, Sender};

/// How many bytes of an oversized line's start and end are kept to find its `id`.
const KEPT: usize = 4096;

/// The JSON-RPC error code an oversized answer is answered with.
pub const OVERSIZED_CODE: i32 = -32001;

pub struct Lines {
    read: BufReader<Receiver>,
    write: Arc<tokio::sync::Mutex<Option<Sender>>>,
    max: usize,
    line: Vec<u8>,
    /// Set while the rest of an oversized line is skipped.
    oversized: Option<Skipped>,
    dropped: Dropped,
}

impl Lines {
    /// The stdio of the server named `server`.
    pub fn new(server: &str, read: Receiver, write: Sender, max: usize) -> Lines {
        Lines {
            read: BufReader::with_capacity(64 << 10, read),
            write: Arc::new(tokio::sync::Mutex::new(Some(write))),
            max,
            line: Vec::new(),
            oversized: None,
            dropped: Dropped::new(server),
        }
    }

    /// The next message. Each step between awaits is synchronous and its
    /// state is kept here, so a receive dropped half-way (rmcp polls it
    /// in a select) resumes where it stopped.
    async fn next(&mut self) -> Option<RxJsonRpcMessage<RoleClient>> {
        loop {
            let (taken, ended) = {
                let available = self.read.fill_buf().await.ok()?;
                if available.is_empty() {
                    return None;
                }
                let newline = available.iter().position(|b| *b == b'\n');
                let take = newline.map_or(available.len(), |i| i + 1);
                let chunk = &available[..take];
                if self.oversized.is_none() && self.line.len() + take > self.max {
                    let mut skipped = Skipped::default();
                    skipped.push(&std::mem::take(&mut self.line));
                    self.oversized = Some(skipped);
                }
                match &mut self.oversized {
                    Some(skipped) => skipped.push(chunk),
                    None => self.line.extend_from_slice(chunk),
                }
                (take, newline.is_some())
            };
            self.read.consume(taken);
            if !ended {
                continue;
            }
            if let Some(skipped) = self.oversized.take() {
                match skipped.answer(self.max) {
                    Some(answer) => return Some(answer),
                    None => {
                        let (size, max) = (skipped.size, self.max);
                        self.dropped.say(format_args!(
                            "a message of {size} bytes, over its bound of {max} bytes, that answers no request"
                        ));
                        continue;
                    }
                }
            }
            let line = std::mem::take(&mut self.line);
            let text = line.trim_ascii();
            if text.is_empty() {
                continue;
            }
            match serde_json::from_slice(text) {
                Ok(message) => return Some(message),
                Err(e) => self
                    .dropped
                    .say(format_args!("a line that is not JSON-RPC ({e})")),
            }
        }
    }
}

/// Counts the messages of one server that are dropped, said at the 1st,
/// 2nd, 4th, 8th..., so a server that floods bad ones cannot flood Chock's
/// own output.
pub(super) struct Dropped {
    server: String,
    count: u64,
}

impl Dropped {
    pub(super) fn new(server: &str) -> Dropped {
        Dropped {
            server: server.to_owned(),
            count: 0,
        }
    }

    pub(super) fn say(&mut self, what: std::fmt::Arguments<'_>) {
        self.count += 1;
        if self.count.is_power_of_two() {
            tracing::warn!(
                "chock mcp: MCP server `{}` sent {what}; it is dropped ({} dropped so far)",
                self.server,
                self.count
            );
        }
    }
}

/// What is kept of a message too long to hold whole: its size, and its
/// first and last bytes, where the `id` of the request it answers is.
#[derive(Default, Debug, PartialEq)]
pub(super) struct Skipped {
    head: Vec<u8>,
    tail: Vec<u8>,
    pub(super) size: usize,
}

impl Skipped {
    pub(super) fn push(&mut self, bytes: &[u8]) {
        self.size += bytes.len();
        if self.head.len() < KEPT {
            let room = KEPT - self.head.len();
            self.head.extend_from_slice(&bytes[..bytes.len().min(room)]);
        }
        let last = &bytes[bytes.len().saturating_sub(KEPT)..];
        self.tail.extend_from_slice(last);
        if self.tail.len() > KEPT {
            self.tail.drain(..self.tail.len() - KEPT);
        }
    }

    /// The error that answers, in the server's place, the request this
    /// message answered, when its `id` is in the bytes kept.
    pub(super) fn answer(&self, max: usize) -> Option<RxJsonRpcMessage<RoleClient>> {
        let id = id_at_start(&self.head).or_else(|| id_at_end(&self.tail))?;
        oversized(id, self.size, max)
    }
}

/// The error that answers request `id` in place of an answer too long to read.
fn oversized(id: Value, size: usize, max: usize) -> Option<RxJsonRpcMessage<RoleClient>> {
    let message = format!(
        "its answer was {size} bytes or more, over its bound of {} MiB (`.max_answer_mib` in chock.zon), so it was dropped unread",
        max >> 20
    );
    serde_json::from_value(serde_json::json!({
        "jsonrpc": "2.0",
        "id": id,
        "error": { "code": OVERSIZED_CODE, "message": message },
    }))
    .ok()
}

fn is_id(value: &Value) -> bool {
    value.is_string() || value.is_u64() || value.is_i64()
}

/// The top-level `id` of a JSON object whose start is `head`, when it
/// comes before the first member that does not fit (`{"jsonrpc":"2.0","id":3,"result":...`).
fn id_at_start(head: &[u8]) -> Option<Value> {
    let mut rest = head.trim_ascii_start().strip_prefix(b"{")?;
    loop {
        rest = rest.trim_ascii_start();
        let mut keys = serde_json::Deserializer::from_slice(rest).into_iter::<String>();
        let key = keys.next()?.ok()?;
        rest = rest[keys.byte_offset()..]
            .trim_ascii_start()
            .strip_prefix(b":")?
            .trim_ascii_start();
        let mut values = serde_json::Deserializer::from_slice(rest).into_iter::<Value>();
        let value = values.next()?.ok()?;
        if key == "id" {
            return is_id(&value).then_some(value);
        }
        rest = rest[values.byte_offset()..]
            .trim_ascii_start()
            .strip_prefix(b",")?;
    }
}

/// The top-level `id` of a JSON object whose end is `tail`, when it is
/// the last member (`...,"jsonrpc":"2.0","id":3}`, as the TypeScript SDK writes).
fn id_at_end(tail: &[u8]) -> Option<Value> {
    let body = tail.trim_ascii_end().strip_suffix(b"}")?;
    let key = b"\"id\"";
    let mut end = body.len();
    while let Some(at) = body[..end].windows(key.len()).rposition(|w| w == key) {
        end = at;
        let before = body[..at].trim_ascii_end();
        if !before.ends_with(b",") && !before.ends_with(b"{") {
            continue;
        }
        let Some(value) = body[at + key.len()..].trim_ascii_start().strip_prefix(b":") else {
            continue;
        };
        if let Ok(value) = serde_json::from_slice::<Value>(value)
            && is_id(&value)
        {
            return Some(value);
        }
    }
    None
}

impl Transport<RoleClient> for Lines {
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let write = self.write.clone();
        async move {
            let mut line = serde_json::to_vec(&item).map_err(std::io::Error::other)?;
            line.push(b'\n');
            let mut write = write.lock().await;
            let pipe = write
                .as_mut()
                .ok_or_else(|| std::io::Error::from(std::io::ErrorKind::BrokenPipe))?;
            pipe.write_all(&line).await?;
            pipe.flush().await
        }
    }

    fn receive(&mut self) -> impl Future<Output = Option<RxJsonRpcMessage<RoleClient>>> + Send {
        self.next()
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.write.lock().await.take();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::{id_at_end, id_at_start};
    use serde_json::json;

    #[test]
    fn the_id_of_an_oversized_answer_is_found_at_either_end() {
        assert_eq!(
            id_at_start(br#"{"jsonrpc":"2.0","id":7,"result":{"content":[{"text":"aaaa"#),
            Some(json!(7))
        );
        assert_eq!(
            id_at_start(br#" { "id" : "x-1" , "result":"#),
            Some(json!("x-1"))
        );
        assert_eq!(id_at_start(br#"{"result":{"content":"aaaa"#), None);
        assert_eq!(id_at_start(br#"{"jsonrpc":"2.0","id":{"no":1}}"#), None);
        assert_eq!(
            id_at_end(br#"aaaa"}]},"jsonrpc":"2.0","id":12}"#),
            Some(json!(12))
        );
        assert_eq!(id_at_end(b"aa\",\"id\":\"q\"}\n"), Some(json!("q")));
        // An `"id"` inside a string of the result is not the message's.
        assert_eq!(id_at_end(br#"aaaa "id":5 bbbb"}]}}"#), None);
        assert_eq!(id_at_end(br#"aaaa"}]}"#), None);
    }
}
