//! The older HTTP+SSE transport of MCP (protocol 2024-11-05), for url
//! servers that do not speak Streamable HTTP yet: the client opens an
//! event stream with GET, the server's first event (`endpoint`) names the
//! URL to POST each message to, and every answer comes back on the stream.
//!
//! rmcp dropped its client for this transport, so this is the transport's
//! two halves over the same HTTP client (no redirects, no proxy), with the
//! stream read here as the event-stream format says, so that no event is
//! held past the server's bound: an answer over it is skipped as it
//! arrives, its first and last bytes kept to find the request it answers,
//! and that request answered with an error in the server's place, as a
//! command server's oversized line is; the stream and the server are kept.
//! The endpoint must be on the origin the stream came from: a server cannot
//! send Chock's messages to a host no rule allowed.

use std::time::Duration;

use futures::StreamExt;
use rmcp::RoleClient;
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use tokio::sync::{mpsc, oneshot};

use super::lines::{Dropped, Skipped};

/// How many messages from the server may wait to be read.
const QUEUE: usize = 64;
/// How long the server has to name its endpoint once the stream is open.
const ENDPOINT_TIMEOUT: Duration = Duration::from_secs(30);

/// Why a URL did not open as an HTTP+SSE server.
#[derive(Debug, thiserror::Error)]
pub enum SseError {
    #[error("`{url}` is not a URL: {why}")]
    NotUrl { url: String, why: String },
    #[error("GET {url} failed: {source}")]
    Get {
        url: String,
        #[source]
        source: reqwest::Error,
    },
    #[error("GET {url} answered {status}{}, not an event stream", if *.is_stream { "" } else { " without text/event-stream" })]
    NotStream {
        url: String,
        status: reqwest::StatusCode,
        is_stream: bool,
    },
    #[error("the server named endpoint `{named}`, which is not a URL: {why}")]
    EndpointNotUrl { named: String, why: String },
    #[error(
        "the server named endpoint `{endpoint}`, on another origin than {stream}; Chock posts only where the stream came from, the host a rule allowed"
    )]
    OtherOrigin { endpoint: String, stream: String },
    #[error("the server named an endpoint of {size} bytes, over its bound of {max}")]
    EndpointTooLong { size: usize, max: usize },
    #[error("{url} closed its event stream before it named an endpoint")]
    Closed { url: String },
    #[error("{url} named no endpoint within {} s", ENDPOINT_TIMEOUT.as_secs())]
    NoEndpoint { url: String },
}

/// One open stream and the endpoint messages are posted to.
pub struct SseTransport {
    http: reqwest::Client,
    endpoint: reqwest::Url,
    incoming: mpsc::Receiver<RxJsonRpcMessage<RoleClient>>,
    reader: tokio::task::JoinHandle<()>,
}

impl Drop for SseTransport {
    fn drop(&mut self) {
        self.reader.abort();
    }
}

fn failure(message: String) -> std::io::Error {
    std::io::Error::other(message)
}

impl SseTransport {
    /// Opens the event stream at `url` and waits for the server's
    /// endpoint. The error is a sentence; it says whether the URL answered
    /// as an SSE server at all.
    /// No event's data is held past `max` bytes; `server` names the
    /// server in what Chock says of the messages it drops.
    pub async fn open(
        http: reqwest::Client,
        server: &str,
        url: &str,
        max: usize,
    ) -> Result<SseTransport, SseError> {
        let stream_url = reqwest::Url::parse(url).map_err(|e| SseError::NotUrl {
            url: url.to_owned(),
            why: e.to_string(),
        })?;
        let response = http
            .get(stream_url.clone())
            .header(reqwest::header::ACCEPT, "text/event-stream")
            .send()
            .await
            .map_err(|source| SseError::Get {
                url: url.to_owned(),
                source,
            })?;
        let status = response.status();
        let is_stream = response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("text/event-stream"));
        if !status.is_success() || !is_stream {
            return Err(SseError::NotStream {
                url: url.to_owned(),
                status,
                is_stream,
            });
        }
        let (endpoint_tell, endpoint) = oneshot::channel();
        let (tell, incoming) = mpsc::channel(QUEUE);
        let reader = tokio::spawn(read_stream(
            response.bytes_stream(),
            Events::new(max),
            Dropped::new(server),
            stream_url.clone(),
            endpoint_tell,
            tell,
        ));
        let endpoint = match tokio::time::timeout(ENDPOINT_TIMEOUT, endpoint).await {
            Ok(Ok(Ok(endpoint))) => endpoint,
            Ok(Ok(Err(why))) => {
                reader.abort();
                return Err(why);
            }
            Ok(Err(_)) => {
                return Err(SseError::Closed {
                    url: url.to_owned(),
                });
            }
            Err(_) => {
                reader.abort();
                return Err(SseError::NoEndpoint {
                    url: url.to_owned(),
                });
            }
        };
        Ok(SseTransport {
            http,
            endpoint,
            incoming,
            reader,
        })
    }
}

/// The field of an event a line's value goes to.
#[derive(Clone, Copy, PartialEq)]
enum Field {
    Data,
    Event,
    /// `id`, `retry`, a comment (no name), or one this client does not read.
    Other,
}

/// The longest field name and event type kept; a longer one is none read here.
const NAME: usize = 16;

/// One event, as dispatched at the blank line that ends it.
#[derive(Debug, PartialEq)]
enum Event {
    /// Its type (empty for the default, `message`) and its data.
    Whole { kind: Vec<u8>, data: Vec<u8> },
    /// An event whose data ran past the bound, of which only the ends were kept.
    Oversized { kind: Vec<u8>, skipped: Skipped },
}

/// An event stream read as it arrives, as the WHATWG's rules say (a line
/// ends at CR, LF or CRLF, a blank line ends an event, a line beginning
/// with `:` is a comment, one space after a field's colon is not its
/// value's), no event's data held past `max` bytes.
struct Events {
    max: usize,
    /// The line's field name so far, until its colon.
    name: Vec<u8>,
    /// The line's field, once its colon was read.
    field: Option<Field>,
    /// The one space after the colon that is not the value's may come yet.
    space: bool,
    /// Nothing has been read of this line yet.
    blank: bool,
    /// The last byte was a CR, so an LF now ends no other line.
    after_cr: bool,
    /// At the stream's start, where a byte order mark is skipped.
    start: bool,
    kind: Vec<u8>,
    data: Vec<u8>,
    skipped: Option<Skipped>,
}

impl Events {
    fn new(max: usize) -> Events {
        Events {
            max,
            name: Vec::new(),
            field: None,
            space: false,
            blank: true,
            after_cr: false,
            start: true,
            kind: Vec::new(),
            data: Vec::new(),
            skipped: None,
        }
    }

    /// Reads `bytes`, the stream's next; returns the events they ended.
    fn feed(&mut self, mut bytes: &[u8]) -> Vec<Event> {
        if self.start && !bytes.is_empty() {
            self.start = false;
            bytes = bytes.strip_prefix("\u{feff}".as_bytes()).unwrap_or(bytes);
        }
        let mut ended = Vec::new();
        while !bytes.is_empty() {
            if std::mem::take(&mut self.after_cr) && bytes[0] == b'\n' {
                bytes = &bytes[1..];
                continue;
            }
            let end = bytes.iter().position(|b| matches!(b, b'\r' | b'\n'));
            let (run, rest) = bytes.split_at(end.unwrap_or(bytes.len()));
            self.part(run);
            let Some((&newline, rest)) = rest.split_first() else {
                break;
            };
            self.after_cr = newline == b'\r';
            ended.extend(self.end_line());
            bytes = rest;
        }
        ended
    }

    /// A run of one line's bytes, without its end.
    fn part(&mut self, mut run: &[u8]) {
        if run.is_empty() {
            return;
        }
        self.blank = false;
        if self.field.is_none() {
            let Some(colon) = run.iter().position(|b| *b == b':') else {
                self.name_part(run);
                return;
            };
            self.name_part(&run[..colon]);
            self.field = Some(self.named());
            self.space = true;
            run = &run[colon + 1..];
        }
        if self.space && !run.is_empty() {
            self.space = false;
            run = run.strip_prefix(b" ").unwrap_or(run);
        }
        match self.field {
            Some(Field::Data) => self.data(run),
            Some(Field::Event) => {
                let room = (NAME + 1).saturating_sub(self.kind.len());
                self.kind.extend_from_slice(&run[..run.len().min(room)]);
            }
            _ => {}
        }
    }

    fn name_part(&mut self, run: &[u8]) {
        let room = (NAME + 1).saturating_sub(self.name.len());
        self.name.extend_from_slice(&run[..run.len().min(room)]);
    }

    fn named(&self) -> Field {
        match self.name.as_slice() {
            b"data" => Field::Data,
            b"event" => Field::Event,
            _ => Field::Other,
        }
    }

    fn data(&mut self, bytes: &[u8]) {
        if let Some(skipped) = &mut self.skipped {
            skipped.push(bytes);
        } else if self.data.len() + bytes.len() > self.max {
            let mut skipped = Skipped::default();
            skipped.push(&std::mem::take(&mut self.data));
            skipped.push(bytes);
            self.skipped = Some(skipped);
        } else {
            self.data.extend_from_slice(bytes);
        }
    }

    /// A line's end: a blank line ends the event; a data line's value is
    /// followed by a line feed in the event's data.
    fn end_line(&mut self) -> Option<Event> {
        if std::mem::replace(&mut self.blank, true) {
            return self.dispatch();
        }
        // A line without a colon is a field name with an empty value.
        let field = self.field.take().unwrap_or_else(|| self.named());
        self.name.clear();
        if field == Field::Data {
            self.data(b"\n");
        }
        None
    }

    fn dispatch(&mut self) -> Option<Event> {
        let kind = std::mem::take(&mut self.kind);
        let mut data = std::mem::take(&mut self.data);
        if let Some(skipped) = self.skipped.take() {
            return Some(Event::Oversized { kind, skipped });
        }
        // An event with no data line is not dispatched.
        data.pop()?;
        Some(Event::Whole { kind, data })
    }
}

/// The URL the `endpoint` event names, resolved against the stream's URL;
/// refused unless it has the stream's scheme, host and port.
fn endpoint_url(stream: &reqwest::Url, named: &str) -> Result<reqwest::Url, SseError> {
    let endpoint = stream
        .join(named.trim())
        .map_err(|e| SseError::EndpointNotUrl {
            named: named.to_owned(),
            why: e.to_string(),
        })?;
    if endpoint.origin() != stream.origin() {
        return Err(SseError::OtherOrigin {
            endpoint: endpoint.to_string(),
            stream: stream.to_string(),
        });
    }
    Ok(endpoint)
}

/// Reads the stream: the first `endpoint` event goes to `endpoint`, each
/// `message` event (the default type) to `tell` as a JSON-RPC message. A
/// message over the bound that answers a request is that request's error;
/// any other message that cannot be read is dropped, and said of in
/// `dropped`. The stream's end ends the connection.
async fn read_stream<S, D>(
    mut bytes: S,
    mut events: Events,
    mut dropped: Dropped,
    stream_url: reqwest::Url,
    endpoint: oneshot::Sender<Result<reqwest::Url, SseError>>,
    tell: mpsc::Sender<RxJsonRpcMessage<RoleClient>>,
) where
    S: futures::Stream<Item = Result<D, reqwest::Error>> + Unpin,
    D: AsRef<[u8]>,
{
    let mut endpoint = Some(endpoint);
    let max = events.max;
    while let Some(Ok(chunk)) = bytes.next().await {
        for event in events.feed(chunk.as_ref()) {
            let message = match event {
                Event::Whole { kind, data } if kind == b"endpoint" => {
                    if let Some(endpoint) = endpoint.take() {
                        let named = String::from_utf8_lossy(&data);
                        endpoint.send(endpoint_url(&stream_url, &named)).ok();
                    }
                    continue;
                }
                Event::Oversized { kind, skipped } if kind == b"endpoint" => {
                    if let Some(endpoint) = endpoint.take() {
                        endpoint
                            .send(Err(SseError::EndpointTooLong {
                                size: skipped.size,
                                max,
                            }))
                            .ok();
                    }
                    continue;
                }
                Event::Whole { kind, data } if kind.is_empty() || kind == b"message" => {
                    match serde_json::from_slice(&data) {
                        Ok(message) => message,
                        Err(e) => {
                            dropped.say(format_args!("a message that is not JSON-RPC ({e})"));
                            continue;
                        }
                    }
                }
                Event::Oversized { kind, skipped } if kind.is_empty() || kind == b"message" => {
                    match skipped.answer(max) {
                        Some(answer) => answer,
                        None => {
                            dropped.say(format_args!(
                                "a message of {} bytes, over its bound of {max} bytes, that answers no request",
                                skipped.size
                            ));
                            continue;
                        }
                    }
                }
                Event::Whole { .. } | Event::Oversized { .. } => continue,
            };
            if tell.send(message).await.is_err() {
                return;
            }
        }
    }
}

impl Transport<RoleClient> for SseTransport {
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let http = self.http.clone();
        let endpoint = self.endpoint.clone();
        async move {
            let body = serde_json::to_vec(&item)
                .map_err(|e| failure(format!("a message could not be written: {e}")))?;
            let response = http
                .post(endpoint.clone())
                .header(reqwest::header::CONTENT_TYPE, "application/json")
                .body(body)
                .send()
                .await
                .map_err(|e| failure(format!("POST {endpoint} failed: {e}")))?;
            if response.status().is_success() {
                Ok(())
            } else {
                Err(failure(format!(
                    "POST {endpoint} answered {}",
                    response.status()
                )))
            }
        }
    }

    fn receive(&mut self) -> impl Future<Output = Option<RxJsonRpcMessage<RoleClient>>> + Send {
        self.incoming.recv()
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.reader.abort();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::{Event, Events, SseError, endpoint_url};

    fn whole(kind: &str, data: &str) -> Event {
        Event::Whole {
            kind: kind.into(),
            data: data.into(),
        }
    }

    #[test]
    fn events_are_read_across_chunks_and_line_ends_as_the_format_says() {
        let mut events = Events::new(64);
        let mut read = Vec::new();
        for chunk in [
            "\u{feff}: a comment\r\nevent: endpoint\r\ndata: /messages/?s=1\r",
            "\n\r\ndata:{\"a\":",
            "1}\ndata\ndata:  two spaces\nid: 7\nretry: 10\n\n",
            "event:message\rdata: x\r\rdata: held until its blank line",
        ] {
            read.extend(events.feed(chunk.as_bytes()));
        }
        assert_eq!(
            read,
            [
                whole("endpoint", "/messages/?s=1"),
                whole("", "{\"a\":1}\n\n two spaces"),
                whole("message", "x"),
            ]
        );
        // The last event ends at its blank line; one with no data line is none.
        assert_eq!(
            events.feed(b"\n\nevent: x\n\n"),
            [whole("", "held until its blank line")]
        );
    }

    #[test]
    fn an_event_over_the_bound_is_skipped_as_it_comes_and_answered_by_its_id() {
        let mut events = Events::new(64);
        let long = format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":9,\"result\":\"{}\"}}",
            "x".repeat(10_000)
        );
        let mut read = events.feed(b"event: message\ndata: ");
        for piece in long.as_bytes().chunks(100) {
            read.extend(events.feed(piece));
            assert!(events.data.len() <= 64, "never held past the bound");
        }
        read.extend(events.feed(b"\n\ndata: {\"after\":1}\n\n"));
        let [Event::Oversized { kind, skipped }, after] = read.as_slice() else {
            panic!("{read:?}");
        };
        assert_eq!(kind, b"message");
        assert_eq!(skipped.size, long.len() + 1, "its data and its line feed");
        let answer =
            serde_json::to_value(skipped.answer(64).expect("its id is read")).expect("json");
        assert_eq!(answer["id"], 9, "{answer}");
        assert!(
            answer["error"]["message"]
                .as_str()
                .is_some_and(|m| m.contains("over its bound")),
            "{answer}"
        );
        assert_eq!(after, &whole("", "{\"after\":1}"), "the stream goes on");
    }

    #[test]
    fn the_endpoint_is_on_the_streams_origin() {
        let stream = reqwest::Url::parse("http://127.0.0.1:8123/sse").expect("url");
        assert_eq!(
            endpoint_url(&stream, "/messages/?session_id=ab12\n")
                .expect("same origin")
                .as_str(),
            "http://127.0.0.1:8123/messages/?session_id=ab12"
        );
        for elsewhere in [
            "http://127.0.0.2:8123/messages/",
            "http://127.0.0.1:9999/messages/",
            "https://127.0.0.1:8123/messages/",
            "//evil.test/messages/",
        ] {
            let refused = endpoint_url(&stream, elsewhere).unwrap_err();
            assert!(
                matches!(refused, SseError::OtherOrigin { .. }),
                "{elsewhere}: {refused:?}"
            );
            assert!(
                refused.to_string().contains("another origin"),
                "{elsewhere}: {refused}"
            );
        }
    }
}
