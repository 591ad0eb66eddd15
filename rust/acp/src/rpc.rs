//! JSON-RPC 2.0 as ACP carries it on stdio: one message per line, each
//! way. The client's lines are read by one thread ([`read`]); anything
//! written goes out whole, one line at a time, from whichever thread
//! writes ([`Peer`]); a request to the client (a permission question)
//! waits on its own channel for the answer the reader hands over.

use std::collections::HashMap;
use std::io::{BufRead, Read, Write};
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::mpsc::{Receiver, Sender, channel};
use std::sync::{Mutex, PoisonError};

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::schema::Error;

/// A request's id, as the client wrote it (a number or a string), given
/// back as it came.
pub type RequestId = Value;

/// The longest line read from the client; a longer one is refused whole.
pub const MAX_LINE_BYTES: usize = 64 << 20;

/// One message from the client, as its fields say.
#[derive(Debug)]
pub enum Incoming {
    /// A request: answer it with [`Peer::respond`].
    Request {
        id: RequestId,
        method: String,
        params: Value,
    },
    /// A notification: nothing is answered.
    Notification { method: String, params: Value },
    /// The answer to one of our requests.
    Response {
        id: RequestId,
        result: Result<Value, Error>,
    },
}

/// The fields a JSON-RPC message may carry.
#[derive(Deserialize)]
struct Message {
    jsonrpc: Option<String>,
    id: Option<RequestId>,
    method: Option<String>,
    params: Option<Value>,
    result: Option<Value>,
    error: Option<Error>,
}

/// Reads the client's messages until its input ends, handing each to
/// `handle`; a line that is no JSON-RPC message is answered with the
/// error the specification names and skipped.
pub fn read(input: &mut dyn BufRead, peer: &Peer, handle: &mut dyn FnMut(Incoming)) {
    let mut line = Vec::new();
    loop {
        line.clear();
        match (&mut *input)
            .take(MAX_LINE_BYTES as u64 + 1)
            .read_until(b'\n', &mut line)
        {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
        if line.len() > MAX_LINE_BYTES {
            peer.reply_error(
                Value::Null,
                Error::invalid_request(format!("a message is longer than {MAX_LINE_BYTES} bytes")),
            );
            // Drop the rest of the long line.
            let mut rest = Vec::new();
            if input.read_until(b'\n', &mut rest).is_err() {
                return;
            }
            continue;
        }
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        match parse(&line) {
            Ok(message) => handle(message),
            Err(error) => peer.reply_error(Value::Null, error),
        }
    }
}

fn parse(line: &[u8]) -> Result<Incoming, Error> {
    let message: Message =
        serde_json::from_slice(line).map_err(|e| Error::parse_error(e.to_string()))?;
    if message.jsonrpc.as_deref() != Some("2.0") {
        return Err(Error::invalid_request("`jsonrpc` must be \"2.0\""));
    }
    // A null id reads as none (JSON-RPC 1.0's notifications).
    match (message.method, message.id) {
        (Some(method), Some(id)) => Ok(Incoming::Request {
            id,
            method,
            params: message.params.unwrap_or(Value::Null),
        }),
        (Some(method), None) => Ok(Incoming::Notification {
            method,
            params: message.params.unwrap_or(Value::Null),
        }),
        (None, Some(id)) => {
            let result = match (message.result, message.error) {
                (_, Some(error)) => Err(error),
                (Some(result), None) => Ok(result),
                (None, None) => {
                    return Err(Error::invalid_request(
                        "a response holds `result` or `error`",
                    ));
                }
            };
            Ok(Incoming::Response { id, result })
        }
        (None, None) => Err(Error::invalid_request("no `method` and no `id`")),
    }
}

/// Our side of the connection: what is written to the client, and the
/// requests we sent that wait for its answer.
pub struct Peer {
    out: Mutex<Box<dyn Write + Send>>,
    next_id: AtomicI64,
    waiting: Mutex<HashMap<i64, Sender<Result<Value, Error>>>>,
    /// The client's input ended, or its output failed: nothing more is
    /// asked of it.
    gone: AtomicBool,
}

impl Peer {
    pub fn new(out: Box<dyn Write + Send>) -> Peer {
        Peer {
            out: Mutex::new(out),
            next_id: AtomicI64::new(0),
            waiting: Mutex::new(HashMap::new()),
            gone: AtomicBool::new(false),
        }
    }

    fn write(&self, message: &Value) {
        let mut line = message.to_string();
        line.push('\n');
        let mut out = self.out.lock().unwrap_or_else(PoisonError::into_inner);
        if out
            .write_all(line.as_bytes())
            .and_then(|()| out.flush())
            .is_err()
        {
            drop(out);
            self.close();
        }
    }

    /// Answers request `id` with `result`.
    pub fn respond<T: Serialize>(&self, id: RequestId, result: Result<T, Error>) {
        match result
            .and_then(|value| serde_json::to_value(value).map_err(|e| Error::failed(e.to_string())))
        {
            Ok(result) => self.write(&json!({"jsonrpc": "2.0", "id": id, "result": result})),
            Err(error) => self.reply_error(id, error),
        }
    }

    pub fn reply_error(&self, id: RequestId, error: Error) {
        self.write(&json!({"jsonrpc": "2.0", "id": id, "error": error}));
    }

    /// Sends a notification.
    pub fn notify(&self, method: &str, params: &impl Serialize) {
        self.write(&json!({"jsonrpc": "2.0", "method": method, "params": params}));
    }

    /// Sends a request; its answer comes on the channel, which closes
    /// without one when the client is gone.
    pub fn request(&self, method: &str, params: &impl Serialize) -> Receiver<Result<Value, Error>> {
        let (tell, answer) = channel();
        if self.gone.load(Ordering::SeqCst) {
            return answer;
        }
        let id = self.next_id.fetch_add(1, Ordering::SeqCst);
        self.waiting
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(id, tell);
        self.write(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        answer
    }

    /// Hands the client's answer to the request that waits for it; an
    /// answer to nothing we asked is dropped.
    pub fn answered(&self, id: &RequestId, result: Result<Value, Error>) {
        let Some(id) = id.as_i64() else { return };
        let waiting = self
            .waiting
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&id);
        if let Some(tell) = waiting {
            let _ = tell.send(result);
        }
    }

    /// Forgets every request still waiting (their channels close) and asks
    /// nothing more: the client is gone.
    pub fn close(&self) {
        self.gone.store(true, Ordering::SeqCst);
        self.waiting
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_are_told_apart_by_their_fields() {
        let request = parse(br#"{"jsonrpc":"2.0","id":3,"method":"initialize","params":{}}"#);
        assert!(
            matches!(request, Ok(Incoming::Request { ref id, ref method, .. }) if method == "initialize" && *id == json!(3))
        );
        let note =
            parse(br#"{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s"}}"#);
        assert!(matches!(note, Ok(Incoming::Notification { .. })));
        let answer =
            parse(br#"{"jsonrpc":"2.0","id":"a","result":{"outcome":{"outcome":"cancelled"}}}"#);
        assert!(matches!(
            answer,
            Ok(Incoming::Response { result: Ok(_), .. })
        ));
        let failed = parse(br#"{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"no"}}"#);
        assert!(matches!(
            failed,
            Ok(Incoming::Response { result: Err(_), .. })
        ));
    }

    #[test]
    fn what_is_no_message_is_refused() {
        for bad in [
            &b"{"[..],
            br#"{"id":1,"method":"initialize"}"#,
            br#"{"jsonrpc":"2.0"}"#,
            br#"{"jsonrpc":"2.0","id":1}"#,
            br#"[1,2]"#,
        ] {
            assert!(parse(bad).is_err(), "{}", String::from_utf8_lossy(bad));
        }
    }
}
