//! The client: one per provider instance, the same for every API kind. A
//! request is sent, retried with backoff on 429 and 5xx (a `retry-after`
//! honoured) and on a connection that failed before any answer, a bounded
//! number of times; its stream is read with a bound on silence, assembled
//! into a [`Reply`], and its tokens counted.

use std::sync::Mutex;
use std::time::{Duration, SystemTime};

use chock_policy::{ProviderInstance, ProviderKind};

use crate::conversation::{Reply, Request, Usage};
use crate::error::ProviderError;
use crate::wire::{StreamFault, Wire};

/// The most bytes one reply's stream may hold.
pub const MAX_REPLY_BYTES: usize = 64 << 20;
/// The most bytes of an error's body read to find its message.
const MAX_ERROR_BYTES: usize = 64 << 10;

/// How hard the client tries and how long it waits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Settings {
    /// Attempts per request in all (the first and every retry).
    pub attempts: u32,
    /// The wait before the first retry; each later one doubles it.
    pub backoff: Duration,
    /// The longest wait between attempts that Chock chooses itself.
    pub backoff_max: Duration,
    /// The longest `retry-after` honoured; a longer one ends the request.
    pub retry_after_max: Duration,
    /// The longest silence: before the answer's status, and between two
    /// pieces of a stream. A provider silent for longer is abandoned.
    pub stall: Duration,
    /// The longest a connection may take to open.
    pub connect: Duration,
}

impl Default for Settings {
    fn default() -> Settings {
        Settings {
            attempts: 5,
            backoff: Duration::from_millis(500),
            backoff_max: Duration::from_secs(30),
            retry_after_max: Duration::from_secs(120),
            stall: Duration::from_secs(120),
            connect: Duration::from_secs(15),
        }
    }
}

/// Sends requests to one provider instance.
pub struct Client {
    instance: String,
    kind: ProviderKind,
    url: String,
    key: Option<String>,
    wire: Box<dyn Wire>,
    http: reqwest::Client,
    settings: Settings,
    used: Mutex<Usage>,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("instance", &self.instance)
            .field("url", &self.url)
            .field("key", &self.key.as_ref().map(|_| "[key]"))
            .finish_non_exhaustive()
    }
}

/// A model a session talks to: the client, or a stand-in in a test.
pub trait Model {
    /// Sends one request and reads its reply, giving streamed text to
    /// `on_text` as it arrives.
    fn send(
        &self,
        request: &Request<'_>,
        on_text: &mut (dyn FnMut(&str) + Send),
    ) -> impl std::future::Future<Output = Result<Reply, ProviderError>> + Send;
}

enum Attempt {
    /// Try again after this wait; the words say what the last answer was.
    Again(Duration, String),
    Done(Result<Reply, ProviderError>),
}

impl Client {
    /// A client for `instance`, sending `key` (none for a server that asks
    /// for none).
    pub fn new(
        instance: &ProviderInstance,
        key: Option<String>,
        settings: Settings,
    ) -> Result<Client, ProviderError> {
        let http = crate::http::client_builder(settings.connect)
            .build()
            .map_err(|e| ProviderError::Unreachable {
                instance: instance.name.clone(),
                url: instance.base_url.clone(),
                why: format!("the HTTP client cannot start: {e}"),
            })?;
        let wire = crate::stream::wire(instance.kind);
        Ok(Client {
            instance: instance.name.clone(),
            kind: instance.kind,
            url: format!("{}{}", instance.base_url, wire.path()),
            key,
            wire,
            http,
            settings,
            used: Mutex::new(Usage::default()),
        })
    }

    /// The URL every request of this client goes to.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The tokens every reply of this client has used so far.
    pub fn used(&self) -> Usage {
        *self.used.lock().unwrap_or_else(|e| e.into_inner())
    }

    async fn attempt(
        &self,
        body: &[u8],
        number: u32,
        on_text: &mut (dyn FnMut(&str) + Send),
    ) -> Attempt {
        let mut post = self
            .http
            .post(&self.url)
            .header("content-type", "application/json")
            .header("accept", "text/event-stream");
        for (name, value) in self.wire.headers(self.key.as_deref()) {
            post = post.header(name, value);
        }
        let sent = tokio::time::timeout(self.settings.stall, post.body(body.to_vec()).send()).await;
        let response = match sent {
            Err(_) => {
                return Attempt::Again(
                    self.backoff(number),
                    format!("no answer within {} s", self.settings.stall.as_secs()),
                );
            }
            Ok(Err(e)) if e.is_connect() || e.is_timeout() => {
                let why = describe(&e);
                if number >= self.settings.attempts {
                    return Attempt::Done(Err(ProviderError::Unreachable {
                        instance: self.instance.clone(),
                        url: self.url.clone(),
                        why,
                    }));
                }
                return Attempt::Again(self.backoff(number), why);
            }
            Ok(Err(e)) => {
                return Attempt::Done(Err(ProviderError::Unreachable {
                    instance: self.instance.clone(),
                    url: self.url.clone(),
                    why: describe(&e),
                }));
            }
            Ok(Ok(response)) => response,
        };
        let status = response.status().as_u16();
        match status {
            200..=299 => Attempt::Done(self.read_stream(response, on_text).await),
            429 | 500..=599 => {
                let asked = retry_after(response.headers());
                let message = self.error_message(response).await;
                let last = format!("{status} ({message})");
                match asked {
                    Some(wait) if wait > self.settings.retry_after_max => {
                        Attempt::Done(Err(ProviderError::WaitTooLong {
                            instance: self.instance.clone(),
                            status,
                            seconds: wait.as_secs(),
                            limit: self.settings.retry_after_max.as_secs(),
                        }))
                    }
                    Some(wait) => Attempt::Again(wait, last),
                    None => Attempt::Again(self.backoff(number), last),
                }
            }
            _ => {
                let message = self.error_message(response).await;
                Attempt::Done(Err(ProviderError::Http {
                    instance: self.instance.clone(),
                    status,
                    message,
                    hint: hint(status, &self.instance),
                }))
            }
        }
    }

    /// The wait before retry `number + 1`: the backoff doubled per attempt,
    /// at most `backoff_max`, less up to a quarter so clients spread out.
    fn backoff(&self, number: u32) -> Duration {
        let doubled = self
            .settings
            .backoff
            .saturating_mul(1u32 << number.saturating_sub(1).min(20));
        let wait = doubled.min(self.settings.backoff_max);
        let nanos = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        wait.saturating_sub(wait / 4 * (nanos % 1000) / 1000)
    }

    /// An error body's message (`{"error": {"message": ...}}` in every
    /// kind), read within the stall bound and a size bound.
    async fn error_message(&self, mut response: reqwest::Response) -> String {
        let mut body = Vec::new();
        while body.len() < MAX_ERROR_BYTES {
            match tokio::time::timeout(self.settings.stall, response.chunk()).await {
                Ok(Ok(Some(piece))) => body.extend_from_slice(&piece),
                _ => break,
            }
        }
        let text = String::from_utf8_lossy(&body);
        let parsed: Option<serde_json::Value> = serde_json::from_str(&text).ok();
        let message = parsed
            .as_ref()
            .and_then(|v| v.get("error"))
            .map(|e| match e.as_str() {
                Some(s) => s.to_owned(),
                None => crate::openai_chat::error_words(e),
            });
        let message = message.unwrap_or_else(|| text.chars().take(300).collect());
        if message.trim().is_empty() {
            "no message".into()
        } else {
            message
        }
    }

    async fn read_stream(
        &self,
        mut response: reqwest::Response,
        on_text: &mut (dyn FnMut(&str) + Send),
    ) -> Result<Reply, ProviderError> {
        let malformed = |why: String| ProviderError::Malformed {
            instance: self.instance.clone(),
            why,
        };
        let fault = |fault: StreamFault| match fault {
            StreamFault::Malformed(why) => malformed(why),
            StreamFault::Provider(message) => ProviderError::InReply {
                instance: self.instance.clone(),
                message,
            },
        };
        let content_type = response
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_owned();
        if !content_type.starts_with("text/event-stream") {
            return Err(malformed(format!(
                "it answered with content type `{content_type}`, not an event stream"
            )));
        }
        let mut stream = crate::stream::ReplyStream::new(self.kind);
        loop {
            let piece = tokio::time::timeout(self.settings.stall, response.chunk())
                .await
                .map_err(|_| ProviderError::Stalled {
                    instance: self.instance.clone(),
                    seconds: self.settings.stall.as_secs(),
                })?
                .map_err(|e| malformed(format!("the stream broke: {}", describe(&e))))?;
            let Some(piece) = piece else {
                return Err(fault(stream.ended()));
            };
            if let Some(reply) = stream.feed(&piece, on_text).map_err(fault)? {
                let mut used = self.used.lock().unwrap_or_else(|e| e.into_inner());
                *used = used.plus(reply.usage);
                return Ok(reply);
            }
        }
    }
}

impl Model for Client {
    async fn send(
        &self,
        request: &Request<'_>,
        on_text: &mut (dyn FnMut(&str) + Send),
    ) -> Result<Reply, ProviderError> {
        let body =
            serde_json::to_vec(&self.wire.body(request)).map_err(|e| ProviderError::Malformed {
                instance: self.instance.clone(),
                why: format!("the request cannot be written as JSON: {e}"),
            })?;
        let mut number = 1;
        loop {
            match self.attempt(&body, number, on_text).await {
                Attempt::Done(result) => {
                    return result.map(|mut reply| {
                        reply.attempts = number;
                        reply
                    });
                }
                Attempt::Again(_, last) if number >= self.settings.attempts => {
                    return Err(ProviderError::GaveUp {
                        instance: self.instance.clone(),
                        attempts: number,
                        last,
                    });
                }
                Attempt::Again(wait, _) => {
                    tokio::time::sleep(wait).await;
                    number += 1;
                }
            }
        }
    }
}

/// The wait a 429 or 5xx asks for: `retry-after-ms`, else `retry-after`
/// in seconds (a date there is not read: the backoff applies).
fn retry_after(headers: &reqwest::header::HeaderMap) -> Option<Duration> {
    let number = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<f64>().ok())
            .filter(|n| n.is_finite() && *n >= 0.0)
    };
    if let Some(ms) = number("retry-after-ms") {
        return Some(Duration::from_secs_f64((ms / 1000.0).min(1e9)));
    }
    number("retry-after").map(|s| Duration::from_secs_f64(s.min(1e9)))
}

/// What to do about a 4xx.
fn hint(status: u16, instance: &str) -> String {
    match status {
        401 | 403 => format!(
            "; the key was refused: run `chock login {instance}`, or check where `.key` of `{instance}` in config.zon says it is kept"
        ),
        404 => format!(
            "; check `.base_url` of `{instance}` in config.zon (an OpenAI-compatible server's usually ends in /v1) and the model id"
        ),
        400 | 422 => "; the request was refused as written (a model id, a bound or a tool's schema the provider does not accept)".into(),
        413 => "; the conversation is too long for this provider".into(),
        _ => String::new(),
    }
}

/// An HTTP failure with its causes (a key is sent in a header, never in
/// the URL, so none is in these words).
fn describe(error: &reqwest::Error) -> String {
    let mut words = error.to_string();
    let mut source = std::error::Error::source(error);
    while let Some(cause) = source {
        words.push_str(&format!(": {cause}"));
        source = cause.source();
    }
    words
}
