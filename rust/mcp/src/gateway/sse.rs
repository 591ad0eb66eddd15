//! The older HTTP+SSE transport of MCP (protocol 2024-11-05), for url
//! servers that do not speak Streamable HTTP yet: the client opens an
//! event stream with GET, the server's first event (`endpoint`) names the
//! URL to POST each message to, and every answer comes back on the stream.
//!
//! rmcp dropped its client for this transport, so this is the transport's
//! two halves over the same HTTP client (no redirects, no proxy), with the
//! stream read by `sse-stream`, the parser rmcp's own Streamable HTTP
//! client uses. The endpoint must be on the origin the stream came from:
//! a server cannot send Chock's messages to a host no rule allowed.

use std::time::Duration;

use futures::StreamExt;
use rmcp::RoleClient;
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use tokio::sync::{mpsc, oneshot};

/// How many messages from the server may wait to be read.
const QUEUE: usize = 64;
/// How long the server has to name its endpoint once the stream is open.
const ENDPOINT_TIMEOUT: Duration = Duration::from_secs(30);

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
    /// No event may be longer than `max` bytes: the stream is closed at one
    /// that is, before it is held whole.
    pub async fn open(
        http: reqwest::Client,
        url: &str,
        max: usize,
    ) -> Result<SseTransport, String> {
        let stream_url =
            reqwest::Url::parse(url).map_err(|e| format!("`{url}` is not a URL: {e}"))?;
        let response = http
            .get(stream_url.clone())
            .header(reqwest::header::ACCEPT, "text/event-stream")
            .send()
            .await
            .map_err(|e| format!("GET {url} failed: {e}"))?;
        let status = response.status();
        let is_stream = response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("text/event-stream"));
        if !status.is_success() || !is_stream {
            return Err(format!(
                "GET {url} answered {status}{}, not an event stream",
                if is_stream {
                    ""
                } else {
                    " without text/event-stream"
                }
            ));
        }
        let (endpoint_tell, endpoint) = oneshot::channel();
        let (tell, incoming) = mpsc::channel(QUEUE);
        let reader = tokio::spawn(read_stream(
            sse_stream::SseStream::from_bytes_stream(bounded(response.bytes_stream(), max, url)),
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
                return Err(format!(
                    "{url} closed its event stream before it named an endpoint"
                ));
            }
            Err(_) => {
                reader.abort();
                return Err(format!(
                    "{url} named no endpoint within {} s",
                    ENDPOINT_TIMEOUT.as_secs()
                ));
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

/// The stream's bytes, ended by an error as soon as one event (the bytes
/// since the last blank line) runs past `max`.
fn bounded<S, D>(
    stream: S,
    max: usize,
    url: &str,
) -> impl futures::Stream<Item = Result<D, std::io::Error>> + use<S, D>
where
    S: futures::Stream<Item = Result<D, reqwest::Error>>,
    D: AsRef<[u8]>,
{
    let (mut event, mut line) = (0usize, 0usize);
    let url = url.to_owned();
    stream.map(move |chunk| {
        let chunk = chunk.map_err(std::io::Error::other)?;
        for &byte in chunk.as_ref() {
            match byte {
                b'\n' => {
                    if line == 0 {
                        event = 0;
                    }
                    line = 0;
                }
                b'\r' => {}
                _ => line += 1,
            }
            event += 1;
        }
        if event > max {
            tracing::warn!(
                "chock mcp: {url} sent an event over its bound of {max} bytes (`.max_answer_mib` in chock.zon); its stream is closed"
            );
            return Err(std::io::Error::other(format!(
                "an event over {max} bytes"
            )));
        }
        Ok(chunk)
    })
}

/// The URL the `endpoint` event names, resolved against the stream's URL;
/// refused unless it has the stream's scheme, host and port.
fn endpoint_url(stream: &reqwest::Url, named: &str) -> Result<reqwest::Url, String> {
    let endpoint = stream
        .join(named.trim())
        .map_err(|e| format!("the server named endpoint `{named}`, which is not a URL: {e}"))?;
    if endpoint.origin() != stream.origin() {
        return Err(format!(
            "the server named endpoint `{endpoint}`, on another origin than {stream}; Chock posts only where the stream came from, the host a rule allowed"
        ));
    }
    Ok(endpoint)
}

/// Reads the stream: the first `endpoint` event goes to `endpoint`, each
/// `message` event (the default type) to `tell` as a JSON-RPC message. A
/// message that is not JSON-RPC is dropped with a warning; the stream's end
/// ends the connection.
async fn read_stream<S>(
    mut events: S,
    stream_url: reqwest::Url,
    endpoint: oneshot::Sender<Result<reqwest::Url, String>>,
    tell: mpsc::Sender<RxJsonRpcMessage<RoleClient>>,
) where
    S: futures::Stream<Item = Result<sse_stream::Sse, sse_stream::Error>> + Unpin,
{
    let mut endpoint = Some(endpoint);
    while let Some(event) = events.next().await {
        let Ok(event) = event else { break };
        let data = event.data.unwrap_or_default();
        match event.event.as_deref() {
            Some("endpoint") => {
                if let Some(endpoint) = endpoint.take() {
                    endpoint.send(endpoint_url(&stream_url, &data)).ok();
                }
            }
            None | Some("message") => match serde_json::from_str(&data) {
                Ok(message) => {
                    if tell.send(message).await.is_err() {
                        break;
                    }
                }
                Err(e) => tracing::warn!(
                    "chock mcp: {stream_url} sent a message that is not JSON-RPC ({e}); it is dropped"
                ),
            },
            Some(_) => {}
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
    use super::{bounded, endpoint_url};
    use futures::StreamExt;

    #[tokio::test]
    async fn an_event_over_the_bound_ends_the_stream_before_it_is_whole() {
        let chunks = |parts: &[&str]| {
            futures::stream::iter(
                parts
                    .iter()
                    .map(|p| Ok::<_, reqwest::Error>(p.as_bytes().to_vec()))
                    .collect::<Vec<_>>(),
            )
        };
        // Many events, each within 16 bytes, more than 16 in all.
        let small: Vec<_> = bounded(
            chunks(&["data: aaaa\n\n", "data: bbbb\r\n\r\n", "data: cc", "cc\n\n"]),
            16,
            "http://127.0.0.1/sse",
        )
        .collect()
        .await;
        assert!(small.iter().all(Result::is_ok), "{small:?}");
        let big: Vec<_> = bounded(
            chunks(&["data: aaaa\n\n", "data: bbbbbbbb", "bbbbbbbb", "never read"]),
            16,
            "http://127.0.0.1/sse",
        )
        .collect()
        .await;
        assert!(big[0].is_ok() && big[1].is_ok(), "{big:?}");
        assert!(big[2].is_err(), "the event is over 16 bytes: {big:?}");
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
            assert!(refused.contains("another origin"), "{elsewhere}: {refused}");
        }
    }
}
