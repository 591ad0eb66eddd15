//! One server behind the gateway: how it is started (a command in the
//! sandbox, or a URL at an allowed host), the client side that speaks to it
//! (rmcp's), and what it sends back that the agent's client should see
//! (progress, questions, its log, changed lists).

use std::collections::HashMap;
use std::ffi::OsString;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use chock_policy::{Launch, McpServer};
use rmcp::model::{
    ClientCapabilities, ClientConfig, ElicitRequestParams, ElicitResult, ElicitationAction,
    Implementation, ProgressNotificationParam, ProgressToken,
};
#[expect(
    deprecated,
    reason = "MCP logging, which servers still send, is deprecated by SEP-2577"
)]
use rmcp::model::{LoggingLevel, LoggingMessageNotificationParam};
use rmcp::service::{NotificationContext, RequestContext, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ClientHandler, ErrorData, Peer, RoleClient, RoleServer, ServiceExt};

use crate::session::Session;
use crate::tools::PipedError;

/// How long a server has to start and answer `initialize`.
pub const START_TIMEOUT: Duration = Duration::from_secs(60);

/// How many log messages a server may have passed on within a second.
pub const LOG_RATE: u32 = 20;
/// How long a log message's data may be, as JSON, before it is cut.
pub const LOG_MAX: usize = 8 << 10;
/// How many lines of a command server's stderr Chock's own log takes a
/// second, and how long each may be before it is cut.
const STDERR_RATE: u32 = 50;
const STDERR_LINE: usize = 4 << 10;

/// What every server's client shares: the agent's client to pass things on
/// to, which progress token of a server stands for which of the agent's,
/// and the least severe log message the agent's client asked for.
#[derive(Default)]
pub struct Relay {
    downstream: RwLock<Option<Peer<RoleServer>>>,
    progress: Mutex<HashMap<ProgressToken, ProgressToken>>,
    /// The rank of the client's `logging/setLevel`; every message before it asks.
    log_level: std::sync::atomic::AtomicU8,
}

impl Relay {
    /// The agent's client, once it has made a request through the gateway.
    pub fn meet(&self, peer: &Peer<RoleServer>) {
        let mut downstream = self.downstream.write().unwrap_or_else(|e| e.into_inner());
        if downstream.is_none() {
            *downstream = Some(peer.clone());
        }
    }

    fn downstream(&self) -> Option<Peer<RoleServer>> {
        self.downstream
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// While a call runs, the server's progress under `upstream` is the
    /// agent's under `downstream`.
    pub fn track(&self, upstream: ProgressToken, downstream: ProgressToken) {
        self.progress
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(upstream, downstream);
    }

    pub fn untrack(&self, upstream: &ProgressToken) {
        self.progress
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(upstream);
    }

    /// The agent's client's `logging/setLevel`: less severe messages of
    /// the servers are no longer passed on.
    #[expect(deprecated, reason = "MCP logging is deprecated by SEP-2577")]
    pub fn set_log_level(&self, level: LoggingLevel) {
        self.log_level.store(rank(level), Ordering::SeqCst);
    }
}

#[expect(deprecated, reason = "MCP logging is deprecated by SEP-2577")]
fn rank(level: LoggingLevel) -> u8 {
    match level {
        LoggingLevel::Debug => 0,
        LoggingLevel::Info => 1,
        LoggingLevel::Notice => 2,
        LoggingLevel::Warning => 3,
        LoggingLevel::Error => 4,
        LoggingLevel::Critical => 5,
        LoggingLevel::Alert => 6,
        LoggingLevel::Emergency => 7,
    }
}

/// How many log messages a server had passed on in the current second.
pub struct LogWindow {
    began: Instant,
    passed: u32,
}

impl Default for LogWindow {
    fn default() -> LogWindow {
        LogWindow {
            began: Instant::now(),
            passed: 0,
        }
    }
}

impl LogWindow {
    /// Whether one more message passes, `rate` passing a second;
    /// `Err(true)` for the first one dropped in this second, which is said of.
    fn admit(&mut self, rate: u32) -> Result<(), bool> {
        if self.began.elapsed() >= Duration::from_secs(1) {
            *self = LogWindow::default();
        }
        self.passed = self.passed.saturating_add(1);
        match self.passed {
            n if n <= rate => Ok(()),
            n => Err(n == rate + 1),
        }
    }
}

/// The client side of one server's connection.
#[derive(Clone)]
pub struct Client {
    /// The server's name, as chock.zon gives it.
    pub server: String,
    pub session: Arc<Session>,
    pub relay: Arc<Relay>,
    /// Set when the server says its tools changed: the gateway lists them again.
    pub tools_changed: Arc<AtomicBool>,
    /// Its log messages passed on in the current second.
    pub logs: Arc<Mutex<LogWindow>>,
}

impl ClientHandler for Client {
    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::builder().enable_elicitation().build(),
            Implementation::new("chock-gateway", env!("CARGO_PKG_VERSION")),
        )
    }

    /// A server's own question goes to the person through the agent's
    /// client when it can ask, headed by the server's name so it never
    /// reads as Chock's own (those begin `Chock:`); otherwise it is
    /// declined. The answer is this server's request's alone.
    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        let Some(peer) = self.relay.downstream() else {
            return Ok(ElicitResult::new(ElicitationAction::Decline));
        };
        if peer.supported_elicitation_modes().is_empty() {
            return Ok(ElicitResult::new(ElicitationAction::Decline));
        }
        let mut request = super::scrub(&self.session, request)
            .map_err(|why| ErrorData::internal_error(why.to_string(), None))?;
        match &mut request {
            ElicitRequestParams::FormElicitationParams { message, .. }
            | ElicitRequestParams::UrlElicitationParams { message, .. } => {
                *message = headed(&self.server, message);
            }
            // A kind of question this gateway cannot head with the
            // server's name is not shown at all.
            _ => return Ok(ElicitResult::new(ElicitationAction::Decline)),
        }
        // The server may withdraw its question (a cancel): then the
        // client's is dropped, and rmcp tells the client so.
        tokio::select! {
            answer = peer.create_elicitation(request) => answer
                .map_err(|e| ErrorData::internal_error(format!("the agent's client: {e}"), None)),
            () = context.ct.cancelled() => Err(ErrorData::internal_error(
                "the server withdrew its question",
                None,
            )),
        }
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let Ok(mut params) = super::scrub(&self.session, params) else {
            return;
        };
        let downstream = self
            .relay
            .progress
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&params.progress_token)
            .cloned();
        if let (Some(token), Some(peer)) = (downstream, self.relay.downstream()) {
            params.progress_token = token;
            peer.notify_progress(params).await.ok();
        }
    }

    /// A server's log message is passed on as that server's: its logger
    /// is `mcp:<server>` (then `/` and the server's own logger name, shown
    /// plainly), its data scrubbed and cut at [`LOG_MAX`] bytes of JSON, at
    /// most [`LOG_RATE`] a second (the first one dropped is said of, as
    /// Chock's own message), and none less severe than the client asked for.
    #[expect(deprecated, reason = "MCP logging is deprecated by SEP-2577")]
    async fn on_logging_message(
        &self,
        params: LoggingMessageNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let Some(peer) = self.relay.downstream() else {
            return;
        };
        if rank(params.level) < self.relay.log_level.load(Ordering::SeqCst) {
            return;
        }
        let admitted = self
            .logs
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .admit(LOG_RATE);
        let server = &self.server;
        let message = match admitted {
            Ok(()) => self.labelled(params),
            Err(false) => return,
            Err(true) => LoggingMessageNotificationParam::new(
                LoggingLevel::Warning,
                serde_json::Value::String(format!(
                    "MCP server `{server}` sent more than {LOG_RATE} log messages within a second; the rest of that second's are dropped"
                )),
            )
            .with_logger("chock"),
        };
        peer.notify_logging_message(message).await.ok();
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.tools_changed.store(true, Ordering::SeqCst);
        if let Some(peer) = self.relay.downstream() {
            peer.notify_tool_list_changed().await.ok();
        }
    }
}

impl Client {
    /// A server's log message as the agent's client is given it.
    #[expect(deprecated, reason = "MCP logging is deprecated by SEP-2577")]
    fn labelled(&self, params: LoggingMessageNotificationParam) -> LoggingMessageNotificationParam {
        let server = &self.server;
        let logger = match &params.logger {
            None => format!("mcp:{server}"),
            Some(theirs) => {
                let scrubbed = self.session.secrets.scrub(theirs);
                let shown: String = chock_policy::visible(&scrubbed).chars().take(80).collect();
                format!("mcp:{server}/{shown}")
            }
        };
        // Scrubbed whole, then cut: a secret across the cut is never half left.
        let data = super::scrub(&self.session, params.data)
            .unwrap_or_else(|why| serde_json::Value::String(why.to_string()));
        let text = match &data {
            serde_json::Value::String(text) => text.clone(),
            other => other.to_string(),
        };
        let data = if text.len() <= LOG_MAX {
            data
        } else {
            let mut end = LOG_MAX;
            while !text.is_char_boundary(end) {
                end -= 1;
            }
            serde_json::Value::String(format!(
                "{}... (cut: {} bytes, over Chock's bound of {} KiB for a server's log message)",
                &text[..end],
                text.len(),
                LOG_MAX >> 10
            ))
        };
        LoggingMessageNotificationParam::new(params.level, data).with_logger(logger)
    }
}

/// A server's question as the person is shown it: one line, the server
/// named first and its words after, every control character shown as an
/// escape, so no part of it can pass as a line of Chock's.
pub(super) fn headed(server: &str, message: &str) -> String {
    format!(
        "MCP server `{server}` asks (this question is the server's, not Chock's; your answer goes to `{server}` only): {}",
        chock_policy::visible(message)
    )
}

/// What a command server was granted at start.
#[derive(Default)]
pub struct Grants {
    /// Secrets as environment variables.
    pub env: Vec<(OsString, OsString)>,
    /// Secrets as files under `/run/chock/secrets`.
    pub files: Vec<chock_sandbox::SecretFile>,
    /// Loopback only, or the router.
    pub network: chock_sandbox::netmode::Network,
}

/// A live connection, and the sandboxed process behind it when there is one.
pub struct Connection {
    pub service: RunningService<RoleClient, Client>,
    /// Kills the sandbox when the connection is dropped.
    process: Option<Process>,
}

impl Connection {
    /// Why the server is gone, once it is.
    pub fn gone(&self) -> Option<String> {
        if let Some(process) = &self.process
            && let Some(exit) = process.exit.borrow().clone()
        {
            return Some(exit);
        }
        self.closed().then(|| "its connection closed".to_owned())
    }

    /// Whether the connection is over: closed by Chock, or its service
    /// loop ended (the transport closed, so nothing more can be sent).
    fn closed(&self) -> bool {
        self.service.is_closed() || self.service.peer().is_transport_closed()
    }

    /// Waits (at most `bound`) until a connection that failed is known
    /// gone: its process's exit seen, or its connection closed, so the
    /// next call starts the server again instead of failing the same way.
    pub async fn settle(&self, bound: Duration) {
        let deadline = tokio::time::Instant::now() + bound;
        match &self.process {
            Some(process) => {
                let mut exit = process.exit.clone();
                tokio::time::timeout_at(deadline, exit.wait_for(Option::is_some))
                    .await
                    .ok();
            }
            None => {
                while !self.closed() && tokio::time::Instant::now() < deadline {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
            }
        }
    }
}

struct Process {
    handle: chock_sandbox::SignalHandle,
    exit: tokio::sync::watch::Receiver<Option<String>>,
}

impl Drop for Process {
    fn drop(&mut self) {
        self.handle.signal(nix::libc::SIGKILL).ok();
    }
}

/// Why a server did not start, or did not answer `initialize`.
#[derive(Debug, thiserror::Error)]
pub enum ConnectError {
    #[error(transparent)]
    Piped(#[from] crate::tools::PipedError),
    #[error("it did not start within {} s", START_TIMEOUT.as_secs())]
    Late,
    #[error("the HTTP client cannot be made: {0}")]
    Client(reqwest::Error),
    #[error(
        "{url} did not answer as an MCP server over Streamable HTTP ({streamable}), nor over the older HTTP+SSE transport ({sse})"
    )]
    NoTransport {
        url: String,
        streamable: String,
        sse: super::sse::SseError,
    },
    #[error("{url} opened an HTTP+SSE stream but did not answer `initialize`: {why}")]
    SseUnanswered { url: String, why: String },
    /// The server ended before it answered: how it ended.
    #[error("{0} before it answered `initialize`")]
    Ended(String),
    #[error("it did not answer `initialize`: {0}")]
    Unanswered(String),
}

/// Starts `server` and speaks `initialize` to it. A command server runs in
/// the sandbox, with the project's toolchain and what it was granted (its
/// secrets, its network); a URL server is reached only after its host was
/// allowed.
pub async fn connect(
    session: &Arc<Session>,
    server: &McpServer,
    grants: &Grants,
    client: Client,
) -> Result<Connection, ConnectError> {
    let started = async {
        match &server.launch {
            Launch::Command(argv) => spawn(session, server, argv, grants, client).await,
            Launch::Url(url) => {
                let service = reach(url, server.max_answer_bytes, client).await?;
                Ok(Connection {
                    service,
                    process: None,
                })
            }
        }
    };
    tokio::time::timeout(START_TIMEOUT, started)
        .await
        .map_err(|_| ConnectError::Late)?
}

/// Speaks Streamable HTTP to `url`; when that is refused, falls back to
/// the older HTTP+SSE transport at the same URL, as the MCP specification
/// tells a client to (a server that still speaks only SSE answers the
/// POST with an error, and the GET with its event stream).
async fn reach(
    url: &str,
    max: usize,
    client: Client,
) -> Result<RunningService<RoleClient, Client>, ConnectError> {
    let http = http_client()?;
    // No message longer than the server's bound is read, on either transport.
    let mut config = StreamableHttpClientTransportConfig::with_uri(url).max_sse_event_size(max);
    config.max_json_response_size = max;
    let transport = StreamableHttpClientTransport::with_client(
        super::streamable::Answered(http.clone()),
        config,
    );
    let streamable = match client.clone().serve(transport).await {
        Ok(service) => return Ok(service),
        Err(e) => e,
    };
    let sse = match super::sse::SseTransport::open(http, &client.server, url, max).await {
        Ok(sse) => sse,
        Err(sse) => {
            return Err(ConnectError::NoTransport {
                url: url.to_owned(),
                streamable: streamable.to_string(),
                sse,
            });
        }
    };
    tracing::warn!(
        "chock mcp: {url} speaks the older HTTP+SSE transport, which MCP replaced by Streamable HTTP; it is used"
    );
    client
        .serve(sse)
        .await
        .map_err(|e| ConnectError::SseUnanswered {
            url: url.to_owned(),
            why: e.to_string(),
        })
}

/// Starts a command server in the sandbox, on a thread of its own that
/// waits for it and lives exactly as long as it does. The sandbox's init
/// ends with the thread that made it (`PR_SET_PDEATHSIG` is a thread's, not
/// a process's), so a server started from one of the runtime's pooled
/// threads would be killed when that thread retires; this one is killed
/// only when the gateway drops it, or when Chock itself ends however it
/// ends (every thread goes with the process, and the kernel kills init
/// and, with it, everything in its PID namespace).
async fn spawn(
    session: &Arc<Session>,
    server: &McpServer,
    argv: &[String],
    grants: &Grants,
    client: Client,
) -> Result<Connection, ConnectError> {
    let name = server.name.clone();
    // A server is never asked about: its router reaches what the rules
    // allow outright and refuses the rest, as a background command's does.
    let router = chock_sandbox::exec::router(
        grants.network,
        crate::tools::SessionPolicy(session.clone()),
        &session.log,
        Arc::new(chock_policy::Nobody),
        (crate::ROUTE, &format!("mcp:{name}")),
        &session.project,
    )
    .map_err(PipedError::from)?;
    let (env, files, network) = (grants.env.clone(), grants.files.clone(), grants.network);
    let argv = argv.to_vec();
    let building = session.clone();
    let (tell, told) = tokio::sync::oneshot::channel();
    let (ended, exit) = tokio::sync::watch::channel(None);
    let server_name = name.clone();
    std::thread::Builder::new()
        .name(format!("chock-mcp-{name}"))
        .spawn(move || {
            let started = (|| {
                let mut prepared = crate::tools::prepare_piped(&building, &argv)?
                    .with_env(env)
                    .with_secret_files(files)?;
                prepared.sandbox_mut().set_network(network);
                if let Some(router) = router {
                    prepared = prepared.with_router(router);
                }
                let mut started = prepared.start()?;
                let no = |what| PipedError::NoPipe {
                    what,
                    by: "chock mcp",
                };
                let pipes = started.take_pipes().ok_or(no("pipes"))?;
                let stderr = started.take_stderr().ok_or(no("stderr"))?;
                let handle = started.signal_handle()?;
                Ok::<_, PipedError>((started, (pipes, stderr), handle))
            })();
            let started = match started {
                Ok((started, pipes, handle)) => {
                    if let Err(Ok((_, handle))) = tell.send(Ok((pipes, handle))) {
                        // Nobody waits for it any more (its start timed out).
                        handle.signal(nix::libc::SIGKILL).ok();
                    }
                    started
                }
                Err(why) => {
                    tell.send(Err(why)).ok();
                    return;
                }
            };
            let why = match started.wait() {
                Ok(ran) => match ran.finished.exit {
                    chock_sandbox::Exit::Code(code) => format!("it exited with status {code}"),
                    chock_sandbox::Exit::Signal(signal) => {
                        format!("it was killed by signal {signal}")
                    }
                },
                Err(e) => format!("its sandbox failed: {e}"),
            };
            tracing::warn!("chock mcp: MCP server `{server_name}` stopped: {why}");
            ended.send_replace(Some(why));
        })
        .map_err(PipedError::Thread)?;
    let (((stdin, stdout), stderr), handle) =
        told.await.map_err(|_| PipedError::Lost("chock mcp"))??;
    let stderr = tokio::net::unix::pipe::Receiver::from_owned_fd(stderr)
        .map_err(PipedError::pipe("stderr"))?;
    tokio::spawn(log_stderr(name.clone(), session.clone(), stderr));
    let process = Process { handle, exit };
    let writer =
        tokio::net::unix::pipe::Sender::from_owned_fd(stdin).map_err(PipedError::pipe("stdin"))?;
    let reader = tokio::net::unix::pipe::Receiver::from_owned_fd(stdout)
        .map_err(PipedError::pipe("stdout"))?;
    let transport = super::lines::Lines::new(&name, reader, writer, server.max_answer_bytes);
    let service =
        client
            .serve(transport)
            .await
            .map_err(|e| match process.exit.borrow().clone() {
                Some(exit) => ConnectError::Ended(exit),
                None => ConnectError::Unanswered(e.to_string()),
            })?;
    Ok(Connection {
        service,
        process: Some(process),
    })
}

/// A command server's stderr, into Chock's own log (its stderr, which an
/// agent's client keeps with its MCP servers' logs), not to the agent: a
/// line at a time, named as the server's, scrubbed, shown plainly, each cut
/// at [`STDERR_LINE`] bytes and at most [`STDERR_RATE`] a second. It is
/// read to its end (the server's), so the server never waits on a full pipe.
async fn log_stderr(
    server: String,
    session: Arc<Session>,
    stderr: tokio::net::unix::pipe::Receiver,
) {
    use tokio::io::AsyncBufReadExt;
    let mut read = tokio::io::BufReader::with_capacity(16 << 10, stderr);
    let mut window = LogWindow::default();
    let mut line = Vec::new();
    let mut cut = false;
    loop {
        let (taken, ended) = {
            let available = match read.fill_buf().await {
                Ok(available) if !available.is_empty() => available,
                // Its end: a last line without a newline is said too.
                _ => break,
            };
            let newline = available.iter().position(|b| *b == b'\n');
            let take = newline.map_or(available.len(), |i| i + 1);
            let room = STDERR_LINE.saturating_sub(line.len());
            line.extend_from_slice(&available[..take.min(room)]);
            // Cut when bytes of the line itself (not its newline) were left out.
            cut |= take.min(room) < newline.unwrap_or(take);
            (take, newline.is_some())
        };
        read.consume(taken);
        if ended {
            say_stderr(&server, &session, &mut window, &line, cut);
            line.clear();
            cut = false;
        }
    }
    if !line.is_empty() {
        say_stderr(&server, &session, &mut window, &line, cut);
    }
}

fn say_stderr(server: &str, session: &Session, window: &mut LogWindow, line: &[u8], cut: bool) {
    match window.admit(STDERR_RATE) {
        Ok(()) => {
            let scrubbed = session
                .secrets
                .scrub(String::from_utf8_lossy(line).trim_end());
            let text = chock_policy::visible(&scrubbed);
            tracing::warn!(
                "chock mcp: MCP server `{server}` on stderr: {text}{}",
                if cut { " (cut)" } else { "" }
            );
        }
        Err(true) => tracing::warn!(
            "chock mcp: MCP server `{server}` wrote more than {STDERR_RATE} lines on stderr within a second; the rest of that second's are not shown"
        ),
        Err(false) => {}
    }
}

/// The HTTP client URL servers are reached with: no redirects (a redirect
/// would reach a host nobody allowed), no proxy, rustls.
fn http_client() -> Result<reqwest::Client, ConnectError> {
    crate::fetch::builder()
        .user_agent(concat!("chock-gateway/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(ConnectError::Client)
}
