//! `chock ui`: a page on 127.0.0.1 to watch what Chock decides and answer
//! what it asks.
//!
//! The server listens on 127.0.0.1 at a port the kernel picks, and admits a
//! request only with this start's random token in its query, its own
//! address as `Host` and no other site as `Origin` ([`guard`]). The page
//! (HTML, script and style compiled into the binary) reads one stream of
//! server-sent events (`/events`): the decision log's lines and the
//! questions every `chock mcp`, `chock run` and `chock acp` of this user
//! waits on, heard over their approve sockets; it answers them with
//! `/answer`, explains a logged action with `/explain` (the rule, its file
//! and line, the rule to add, as `chock policy explain` says them) and
//! lists the sessions with their usage from `/sessions`.

#![forbid(unsafe_code)]

pub mod guard;

mod feed;

use std::convert::Infallible;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures::StreamExt;
use http_body_util::{BodyExt, Full, Limited, StreamBody, combinators::BoxBody};
use hyper::body::{Frame, Incoming};
use hyper::header::{CACHE_CONTROL, CONTENT_SECURITY_POLICY, CONTENT_TYPE, HeaderValue};
use hyper::{Method, Request, Response, StatusCode};
use serde_json::{Value, json};
use tokio::net::TcpListener;

use chock_mcp::approve::Scope;
use feed::Feed;

const PAGE: &str = include_str!("page/index.html");
const SCRIPT: &str = include_str!("page/app.js");
const STYLE: &str = include_str!("page/style.css");

/// The largest request body read (an answer).
const MAX_BODY: usize = 64 << 10;
/// A comment on an idle event stream this often, so a closed page is noticed.
const KEEPALIVE: Duration = Duration::from_secs(15);

type Body = BoxBody<Bytes, Infallible>;

/// Why the page could not start.
#[derive(Debug, thiserror::Error)]
pub enum UiError {
    #[error("cannot listen on 127.0.0.1: {0}")]
    Listen(std::io::Error),
    #[error("cannot draw a random token from the kernel: {0}")]
    Token(getrandom::Error),
}

/// Where the page reads from.
#[derive(Debug, Clone)]
pub struct Options {
    /// The decision log's folder.
    pub log_dir: PathBuf,
    /// The approve sockets' folder (`chock_mcp::approve::socket_dir`).
    pub approve_dir: PathBuf,
}

struct Shared {
    port: u16,
    token: String,
    feed: Arc<Feed>,
}

/// The page, listening, not yet serving.
pub struct Ui {
    listener: TcpListener,
    shared: Arc<Shared>,
}

impl Ui {
    /// Listens on 127.0.0.1 at a port the kernel picks, with a fresh token,
    /// and starts hearing the servers and the log.
    pub async fn bind(options: Options) -> Result<Ui, UiError> {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
            .await
            .map_err(UiError::Listen)?;
        let port = listener.local_addr().map_err(UiError::Listen)?.port();
        let token = guard::new_token().map_err(UiError::Token)?;
        let feed = Feed::start(options.approve_dir, options.log_dir);
        Ok(Ui {
            listener,
            shared: Arc::new(Shared { port, token, feed }),
        })
    }

    /// The address it listens on.
    pub fn addr(&self) -> SocketAddr {
        SocketAddr::from((Ipv4Addr::LOCALHOST, self.shared.port))
    }

    /// The page's address, token included: the one way in.
    pub fn url(&self) -> String {
        format!(
            "http://127.0.0.1:{}/?token={}",
            self.shared.port, self.shared.token
        )
    }

    /// Serves until the future is dropped.
    pub async fn serve(self) {
        loop {
            let stream = match self.listener.accept().await {
                Ok((stream, _)) => stream,
                Err(e) => {
                    // Out of descriptors, most likely: wait for some to close
                    // rather than spin on the error.
                    tracing::debug!("chock ui: accept failed: {e}");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            };
            let shared = self.shared.clone();
            tokio::spawn(async move {
                let service = hyper::service::service_fn(move |request| {
                    let shared = shared.clone();
                    async move { Ok::<_, Infallible>(respond(&shared, request).await) }
                });
                let io = hyper_util::rt::TokioIo::new(stream);
                if let Err(e) = hyper::server::conn::http1::Builder::new()
                    .serve_connection(io, service)
                    .await
                {
                    tracing::debug!("chock ui: a connection ended: {e}");
                }
            });
        }
    }
}

fn full(status: StatusCode, kind: &'static str, body: impl Into<Bytes>) -> Response<Body> {
    let mut response = Response::new(Full::new(body.into()).boxed());
    *response.status_mut() = status;
    let headers = response.headers_mut();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static(kind));
    headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers.insert("referrer-policy", HeaderValue::from_static("no-referrer"));
    headers.insert("x-frame-options", HeaderValue::from_static("DENY"));
    headers.insert(
        "x-content-type-options",
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(
        CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(
            "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'",
        ),
    );
    response
}

fn json_reply(status: StatusCode, value: &Value) -> Response<Body> {
    full(status, "application/json", value.to_string())
}

/// The query's fields, percent-decoded.
fn query(request: &Request<Incoming>) -> Vec<(String, String)> {
    form_urlencoded::parse(request.uri().query().unwrap_or("").as_bytes())
        .into_owned()
        .collect()
}

fn field<'a>(fields: &'a [(String, String)], name: &str) -> Option<&'a str> {
    fields
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
}

async fn respond(shared: &Shared, request: Request<Incoming>) -> Response<Body> {
    let fields = query(&request);
    if let Err(refusal) = guard::admit(
        request.headers(),
        field(&fields, "token"),
        shared.port,
        &shared.token,
    ) {
        return full(
            StatusCode::FORBIDDEN,
            "text/plain; charset=utf-8",
            refusal.message(),
        );
    }
    match (request.method(), request.uri().path()) {
        (&Method::GET, "/") => full(
            StatusCode::OK,
            "text/html; charset=utf-8",
            PAGE.replace("{{TOKEN}}", &shared.token),
        ),
        (&Method::GET, "/app.js") => full(StatusCode::OK, "text/javascript; charset=utf-8", SCRIPT),
        (&Method::GET, "/style.css") => full(StatusCode::OK, "text/css; charset=utf-8", STYLE),
        (&Method::GET, "/events") => events(&shared.feed),
        (&Method::POST, "/answer") => answer(&shared.feed, request).await,
        (&Method::GET, "/explain") => {
            let fields = fields.clone();
            let explained = tokio::task::spawn_blocking(move || explain(&fields)).await;
            match explained {
                Ok(Ok(value)) => json_reply(StatusCode::OK, &value),
                Ok(Err(why)) => json_reply(
                    StatusCode::UNPROCESSABLE_ENTITY,
                    &json!({ "error": why.to_string() }),
                ),
                Err(e) => json_reply(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    &json!({ "error": e.to_string() }),
                ),
            }
        }
        (&Method::GET, "/sessions") => match tokio::task::spawn_blocking(sessions).await {
            Ok(Ok(value)) => json_reply(StatusCode::OK, &value),
            Ok(Err(why)) => json_reply(
                StatusCode::INTERNAL_SERVER_ERROR,
                &json!({ "error": why.to_string() }),
            ),
            Err(e) => json_reply(
                StatusCode::INTERNAL_SERVER_ERROR,
                &json!({ "error": e.to_string() }),
            ),
        },
        _ => full(
            StatusCode::NOT_FOUND,
            "text/plain; charset=utf-8",
            "no such page",
        ),
    }
}

/// The event stream: the snapshot, then every change; a page that falls
/// too far behind is cut off, and its browser reconnects to a new snapshot.
fn events(feed: &Feed) -> Response<Body> {
    let (now, changes) = feed.subscribe();
    let live = futures::stream::unfold(changes, |mut changes| async move {
        let next = tokio::time::timeout(KEEPALIVE, changes.recv()).await;
        match next {
            Ok(Ok(event)) => Some((event, changes)),
            Ok(Err(_)) => None,
            Err(_) => Some((Bytes::from_static(b": keepalive\n\n"), changes)),
        }
    });
    let stream = futures::stream::iter(now)
        .chain(live)
        .map(|bytes| Ok::<_, Infallible>(Frame::data(bytes)));
    let mut response = full(StatusCode::OK, "text/event-stream", Bytes::new());
    *response.body_mut() = BodyExt::boxed(StreamBody::new(stream));
    response
}

#[derive(serde::Deserialize)]
struct Answered {
    server: PathBuf,
    id: u64,
    allow: bool,
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    scope: Option<Scope>,
}

async fn answer(feed: &Feed, request: Request<Incoming>) -> Response<Body> {
    let body = match Limited::new(request.into_body(), MAX_BODY).collect().await {
        Ok(body) => body.to_bytes(),
        Err(e) => {
            return json_reply(
                StatusCode::BAD_REQUEST,
                &json!({ "error": format!("cannot read the answer: {e}") }),
            );
        }
    };
    let answered: Answered = match serde_json::from_slice(&body) {
        Ok(answered) => answered,
        Err(e) => {
            return json_reply(
                StatusCode::BAD_REQUEST,
                &json!({ "error": format!("the answer is not {{server, id, allow, text, scope}}: {e}") }),
            );
        }
    };
    match feed
        .answer(
            answered.server,
            answered.id,
            answered.allow,
            (answered.text, answered.scope),
        )
        .await
    {
        Ok(()) => json_reply(StatusCode::OK, &json!({ "sent": true })),
        Err(why) => json_reply(StatusCode::CONFLICT, &json!({ "error": why.to_string() })),
    }
}

/// Why `/explain` or `/sessions` has no answer; the words are the reply's
/// `error`.
#[derive(Debug, thiserror::Error)]
enum QueryError {
    #[error("explain needs project= and action=")]
    Unnamed,
    #[error(transparent)]
    Policy(#[from] chock_policy::PolicyError),
    #[error(transparent)]
    Sessions(#[from] chock_sessions::SessionError),
    #[error(transparent)]
    Json(#[from] serde_json::Error),
}

/// `chock policy explain` of one logged action, in the project it was
/// decided in: the decision, the rule that gave it with its file and line,
/// and the rule that would change it.
fn explain(fields: &[(String, String)]) -> Result<Value, QueryError> {
    let (Some(project), Some(action)) = (field(fields, "project"), field(fields, "action")) else {
        return Err(QueryError::Unnamed);
    };
    let key = chock_policy::Key {
        agent_kind: field(fields, "agent")
            .filter(|a| !a.is_empty())
            .unwrap_or("main")
            .to_owned(),
        model: field(fields, "model")
            .filter(|m| !m.is_empty())
            .map(str::to_owned),
        tool: field(fields, "tool")
            .filter(|t| !t.is_empty())
            .map(str::to_owned),
        action: action.to_owned(),
    };
    let options = chock_policy::LoadOptions::from_env(PathBuf::from(project), Vec::new())?;
    let policy = chock_policy::Policy::load(&options)?;
    let verdict = policy.decide(&key, chock_policy::Reading::Act);
    Ok(serde_json::to_value(chock_policy::Explained {
        action: &key.action,
        verdict: &verdict,
    })?)
}

/// The sessions of `chock run`, newest last, with the tokens each used.
fn sessions() -> Result<Value, QueryError> {
    let sessions = chock_sessions::Sessions::from_env()?;
    let all = sessions.list()?;
    Ok(Value::Array(
        all.iter()
            .map(|s| {
                let tokens = s.tokens();
                json!({
                    "id": s.id,
                    "started": s.started,
                    "last": s.last,
                    "project": s.project,
                    "model": s.model.as_ref().map(|m| format!("{}/{}", m.instance, m.model)),
                    "turns": s.turns,
                    "state": s.state(),
                    "tokens": {
                        "input": tokens.input,
                        "output": tokens.output,
                        "cache_read": tokens.cache_read,
                        "cache_write": tokens.cache_write,
                    },
                })
            })
            .collect(),
    ))
}
