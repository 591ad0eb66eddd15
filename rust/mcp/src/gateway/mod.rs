//! The gateway: every MCP server `chock.zon` names, offered through
//! `chock mcp` beside Chock's own tools, each call decided.
//!
//! A server's tool `t` is offered as `<server>__<t>` with the server's own
//! schema. At start each tool's `mcp.<server>.tool.<t>` is read and only a
//! deny is spent there: the tool is not offered. Every other answer leaves
//! it offered, and each call is decided again under the same key (asking a
//! person by elicitation or `chock approve`, as Chock's own tools do) and
//! logged on route `mcp` (the action names the server and the tool; a
//! person asked reads the call's arguments, which are never logged). A URL server is reached only when
//! `mcp.<server>.host.<reversed host>` answers allow at start; a command
//! server runs in the sandbox, gets a secret only when `secret.use.<name>`
//! answers allow at start, and a network (the sandbox's router, each host
//! decided at `net.connect.*` with nobody to ask) only when
//! `mcp.<server>.network` does. Resources and prompts are passed on,
//! each resource read from the server that listed it; progress and
//! cancellation go both ways; a server that dies is started again once,
//! then reported. Everything a server says is scrubbed of the session's
//! secrets before the agent reads it, its questions are headed by its name,
//! its log messages are passed on under its name (bounded in size and
//! rate), its stderr goes to Chock's own log, not the agent's, and every
//! request to it is bounded in time and size (its `.timeout_s` and
//! `.max_answer_mib`), a crossed bound failing that request alone with an
//! error naming it.

mod lines;
mod sse;
mod streamable;
mod upstream;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use chock_gate::{Outcome, Refused, Settled, Step};
use chock_log::AnsweredBy;
use chock_policy::{Answer, Key, Launch, McpServer, Reading, TOOL_SEPARATOR, Verdict, names};
use chock_sandbox::netmode::Network;
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CallToolResult, CancelledNotificationParam,
    ClientRequest, GetPromptRequestParams, GetPromptResult, Prompt, ReadResourceRequestParams,
    ReadResourceResult, Resource, ServerResult, Tool,
};
use rmcp::service::{PeerRequestOptions, RequestContext, ServiceError};
use rmcp::{ErrorData, Peer, RoleServer};
use serde_json::Value;
use tokio::sync::Mutex;

use crate::gate::{Act, Asking, arguments_line, decided_by_words};
use crate::session::Session;
use crate::{AGENT_KIND, ROUTE};

use upstream::{Client, Connection, Relay};

/// How long a finished call's progress token still stands for the agent's.
const PROGRESS_GRACE: std::time::Duration = std::time::Duration::from_secs(2);

/// How long a connection that failed mid-call may take to be seen gone.
const SETTLE: std::time::Duration = std::time::Duration::from_secs(5);

/// Every configured server, started or not.
pub struct Gateway {
    session: Arc<Session>,
    servers: Vec<Arc<Upstream>>,
    relay: Arc<Relay>,
    /// Which servers listed each resource URI, as last listed.
    listed: std::sync::Mutex<std::collections::HashMap<String, Vec<String>>>,
}

/// Why a relayed request has no answer. All but [`GatewayError::Bound`]
/// are the tool's error, as the agent reads it.
#[derive(Debug, thiserror::Error)]
pub enum GatewayError {
    /// The gate refused the call: its sentence.
    #[error(transparent)]
    Refused(#[from] crate::gate::Refusal),
    /// No server behind the gateway has the tool, prompt or resource named.
    #[error("{0}")]
    NotFound(String),
    /// The server is not running: it did not start, or stopped.
    #[error("MCP server `{server}` is not running{}", .why.as_deref().map(|why| format!(": {why}")).unwrap_or_default())]
    NotRunning { server: String, why: Option<String> },
    /// The server's own error, or an answer that is not what was asked.
    #[error("{0}")]
    Server(String),
    /// The client cancelled the call.
    #[error("the call to MCP server `{server}` was cancelled by the client")]
    Cancelled { server: String },
    /// The answer could not be read back once scrubbed, so it is withheld whole.
    #[error("the answer cannot be checked for secrets ({0}), so it is withheld")]
    Unscrubbable(serde_json::Error),
    /// A bound of the server's was crossed (its time, its size): a
    /// JSON-RPC error naming the server.
    #[error("{}", .0.message)]
    Bound(ErrorData),
}

/// One configured server.
struct Upstream {
    session: Arc<Session>,
    relay: Arc<Relay>,
    config: McpServer,
    /// What it was granted at start (secrets, a network).
    grants: upstream::Grants,
    link: Mutex<Link>,
    /// Whether it was started again after dying (it is, once).
    restarted: AtomicBool,
    tools_changed: Arc<AtomicBool>,
    logs: Arc<std::sync::Mutex<upstream::LogWindow>>,
    /// Its tools as offered (after the start rows), by their tool name.
    tools: std::sync::RwLock<Vec<Offered>>,
    /// Why tools were not offered, for the instructions.
    withheld: std::sync::RwLock<Vec<String>>,
    /// The tools a rule denied at start, logged once each.
    denied: std::sync::Mutex<std::collections::BTreeSet<String>>,
}

enum Link {
    Up(Connection),
    /// Not reachable: why, in a sentence an agent can read. It is kept as
    /// words because it is told again on every later call, whatever made
    /// it (a row read at start, a start that failed, a server that stopped).
    Down(String),
}

/// Why a configured server is not started at all.
#[derive(Debug, thiserror::Error)]
enum Unadmitted {
    #[error(
        "its name is this server's own (`{0}`), whose tools' rows are mcp.{0}.tool.*; rename it in chock.zon"
    )]
    OwnName(String),
    #[error("`{url}` is not a URL: {why}")]
    NotUrl { url: String, why: String },
    #[error(
        "`{url}` names no host a rule can name (an IPv6 address is not read); write a host name"
    )]
    NoHost { url: String },
    #[error("{0}")]
    Unread(String),
    #[error(
        "`{url}` is read as host `{client}` by the HTTP client and `{policy}` by the policy, so it is not reached; write the URL plainly, without `\\` or credentials"
    )]
    TwoHosts {
        url: String,
        client: String,
        policy: String,
    },
    #[error(transparent)]
    Name(#[from] chock_policy::NameError),
    #[error(
        "{action} answered {decision} at start, by {by}; a server is reached only at a host a rule allows, because it starts before anybody can be asked.{advice}"
    )]
    HostNotAllowed {
        action: String,
        decision: chock_policy::Decision,
        by: String,
        /// The gate's advice for this key: the rule that would allow it.
        advice: String,
    },
}

#[derive(Clone)]
struct Offered {
    tool: Tool,
    action: String,
}

impl Gateway {
    /// Starts every server `chock.zon` names, at once, each with
    /// [`upstream::START_TIMEOUT`]; one that cannot start is reported, never fatal.
    pub async fn start(session: &Arc<Session>) -> Gateway {
        let relay = Arc::new(Relay::default());
        let mut starting = tokio::task::JoinSet::new();
        for (index, config) in session
            .policy
            .config()
            .mcp_servers()
            .iter()
            .cloned()
            .enumerate()
        {
            let session = session.clone();
            let relay = relay.clone();
            starting.spawn(async move {
                let upstream = Upstream::start(&session, config, relay).await;
                (index, upstream)
            });
        }
        let mut servers = Vec::new();
        while let Some(joined) = starting.join_next().await {
            if let Ok(started) = joined {
                servers.push(started);
            }
        }
        servers.sort_by_key(|(index, _)| *index);
        Gateway {
            session: session.clone(),
            servers: servers.into_iter().map(|(_, u)| Arc::new(u)).collect(),
            relay,
            listed: Default::default(),
        }
    }

    /// Sentences for the agent at start: servers not reached, tools a rule
    /// withheld (scrubbed: a server's tool names and errors are its words).
    pub fn instructions(&self) -> Vec<String> {
        self.unscrubbed_instructions()
            .iter()
            .map(|sentence| self.session.secrets.scrub(sentence))
            .collect()
    }

    fn unscrubbed_instructions(&self) -> Vec<String> {
        let mut out = Vec::new();
        for server in &self.servers {
            if let Ok(link) = server.link.try_lock()
                && let Link::Down(why) = &*link
            {
                out.push(format!(
                    "MCP server `{}` is not offered: {why}",
                    server.config.name
                ));
            }
            out.extend(
                server
                    .withheld
                    .read()
                    .unwrap_or_else(|e| e.into_inner())
                    .iter()
                    .cloned(),
            );
        }
        out
    }

    /// Every offered tool of every server, named `<server>__<tool>`,
    /// scrubbed (a description is the server's words, and may hold a secret
    /// it was given); a tool that cannot be scrubbed is not listed.
    pub async fn tools(&self, session: &Session) -> Vec<Tool> {
        let mut out = Vec::new();
        for server in &self.servers {
            if server.tools_changed.swap(false, Ordering::SeqCst) {
                server.list_tools(session).await;
            }
            for offered in server
                .tools
                .read()
                .unwrap_or_else(|e| e.into_inner())
                .iter()
            {
                let mut tool = offered.tool.clone();
                tool.name = format!("{}{TOOL_SEPARATOR}{}", server.config.name, tool.name).into();
                match scrub(session, tool) {
                    Ok(tool) => out.push(tool),
                    Err(why) => tracing::warn!(
                        "chock mcp: a tool of MCP server `{}` is not listed: {why}",
                        server.config.name
                    ),
                }
            }
        }
        out
    }

    /// Whether `name` is one of the gateway's tools (`<server>__...` of a configured server).
    pub fn owns(&self, name: &str) -> bool {
        self.split(name).is_some()
    }

    fn split<'n>(&self, name: &'n str) -> Option<(&Arc<Upstream>, &'n str)> {
        let (server, tool) = name.split_once(TOOL_SEPARATOR)?;
        let upstream = self.servers.iter().find(|s| s.config.name == server)?;
        Some((upstream, tool))
    }

    /// One call of `<server>__<tool>` from an MCP client: decided, passed
    /// on, its answer scrubbed. A crossed bound (the server's time or size)
    /// is [`GatewayError::Bound`], a JSON-RPC error naming the server;
    /// anything else that ends the call is the tool's error.
    pub async fn call(
        &self,
        session: &Session,
        request: CallToolRequestParams,
        context: &RequestContext<RoleServer>,
    ) -> Result<CallToolResult, GatewayError> {
        self.relay.meet(&context.peer);
        let client = crate::ask::Client::Mcp(context.peer.clone());
        let progress = context.meta.get_progress_token();
        self.call_as(session, &client, &context.ct, request, progress)
            .await
    }

    /// One call of `<server>__<tool>` from `client` (an MCP client, or a
    /// caller in this process), `cancel` withdrawing it; the server's
    /// progress under `progress` is the client's.
    pub async fn call_as(
        &self,
        session: &Session,
        client: &crate::ask::Client,
        cancel: &tokio_util::sync::CancellationToken,
        request: CallToolRequestParams,
        progress: Option<rmcp::model::ProgressToken>,
    ) -> Result<CallToolResult, GatewayError> {
        let name = request.name.to_string();
        let Some((server, tool)) = self.split(&name) else {
            return Err(GatewayError::NotFound(format!(
                "there is no tool named `{name}`"
            )));
        };
        let offered = server
            .tools
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .find(|o| o.tool.name == tool)
            .cloned();
        let Some(offered) = offered else {
            return Err(GatewayError::NotFound(format!(
                "MCP server `{}` offers no tool `{tool}` (a tool a rule denies at start is not offered)",
                server.config.name
            )));
        };
        let act = Act {
            tool: &name,
            action: offered.action.clone(),
            subject: None,
            detail: vec![
                format!(
                    "a tool of the MCP server `{}` ({}:{})",
                    server.config.name,
                    server.config.file.display(),
                    server.config.line
                ),
                arguments_line(&request.arguments),
            ],
        };
        session.gate(client, cancel, &act, Asking::Person).await?;
        let mut params = request;
        params.name = tool.to_owned().into();
        let result = server.call(params, cancel, progress).await?;
        server.fits(&result)?;
        scrub(session, result)
    }

    /// The peers of the reachable servers that have `capability`, each
    /// with its server's name.
    async fn having(
        &self,
        capability: fn(&rmcp::model::ServerCapabilities) -> bool,
    ) -> Vec<(&Upstream, Peer<rmcp::RoleClient>)> {
        let mut out = Vec::new();
        for server in &self.servers {
            if let Some(peer) = server.peer().await
                && peer
                    .peer_info()
                    .is_some_and(|i| capability(&i.capabilities))
            {
                out.push((server.as_ref(), peer));
            }
        }
        out
    }

    /// Every resource of every reachable server, scrubbed; each URI is
    /// remembered with the servers that listed it, so a read goes to its own.
    pub async fn resources(&self, peer: &Peer<RoleServer>) -> Vec<Resource> {
        self.relay.meet(peer);
        let mut out = Vec::new();
        let mut listed: std::collections::HashMap<String, Vec<String>> = Default::default();
        for (server, peer) in self.having(|c| c.resources.is_some()).await {
            let Ok(Ok(resources)) = server.bounded(peer.list_all_resources()).await else {
                continue;
            };
            for resource in resources {
                let Ok(resource) = scrub(&server.session, resource) else {
                    continue;
                };
                let servers = listed.entry(resource.uri.clone()).or_default();
                if !servers.contains(&server.config.name) {
                    servers.push(server.config.name.clone());
                }
                out.push(resource);
            }
        }
        *self.listed.lock().unwrap_or_else(|e| e.into_inner()) = listed;
        out
    }

    /// Reads `uri` from the one server that listed it, or, for a URI none
    /// listed, the one whose template matches it; a URI two servers could
    /// answer is not read, since which one would be is not the agent's to
    /// tell.
    pub async fn read_resource(
        &self,
        session: &Session,
        request: ReadResourceRequestParams,
    ) -> Result<ReadResourceResult, GatewayError> {
        let uri = request.uri.clone();
        let listed = self
            .listed
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&uri)
            .cloned()
            .unwrap_or_default();
        let holders = if listed.is_empty() {
            let mut matching = Vec::new();
            for (server, peer) in self.having(|c| c.resources.is_some()).await {
                if let Ok(Ok(templates)) = server.bounded(peer.list_all_resource_templates()).await
                    && templates
                        .iter()
                        .any(|t| template_matches(&t.uri_template, &uri))
                {
                    matching.push(server.config.name.clone());
                }
            }
            matching
        } else {
            listed
        };
        let server = match holders.as_slice() {
            [] => {
                return Err(GatewayError::NotFound(format!(
                    "no MCP server behind this gateway lists the resource `{uri}` or has a template for it"
                )));
            }
            [one] => self
                .servers
                .iter()
                .find(|s| &s.config.name == one)
                .ok_or_else(|| {
                    GatewayError::NotFound(format!("no MCP server behind this gateway has `{uri}`"))
                })?,
            many => {
                return Err(GatewayError::NotFound(format!(
                    "the resource `{uri}` could be read from MCP servers {}, so it is read from none; the servers' URIs overlap",
                    many.iter()
                        .map(|n| format!("`{n}`"))
                        .collect::<Vec<_>>()
                        .join(" and ")
                )));
            }
        };
        let peer = server.live().await?;
        let result = server
            .bounded(peer.read_resource(request))
            .await?
            .map_err(|e| GatewayError::Server(session.secrets.scrub(&server.failed(e))))?;
        server.fits(&result)?;
        scrub(session, result)
    }

    /// Every prompt of every reachable server, named `<server>__<prompt>`, scrubbed.
    pub async fn prompts(&self, peer: &Peer<RoleServer>) -> Vec<Prompt> {
        self.relay.meet(peer);
        let mut out = Vec::new();
        for (server, peer) in self.having(|c| c.prompts.is_some()).await {
            if let Ok(Ok(prompts)) = server.bounded(peer.list_all_prompts()).await {
                out.extend(prompts.into_iter().filter_map(|mut p| {
                    p.name = format!("{}{TOOL_SEPARATOR}{}", server.config.name, p.name);
                    scrub(&server.session, p).ok()
                }));
            }
        }
        out
    }

    /// `<server>__<prompt>`, from its server.
    pub async fn prompt(
        &self,
        session: &Session,
        mut request: GetPromptRequestParams,
    ) -> Result<GetPromptResult, GatewayError> {
        let name = request.name.clone();
        let Some((server, prompt)) = self.split(&name) else {
            return Err(GatewayError::NotFound(format!(
                "there is no prompt named `{name}`"
            )));
        };
        let peer = server
            .peer()
            .await
            .ok_or_else(|| GatewayError::NotRunning {
                server: server.config.name.clone(),
                why: None,
            })?;
        request.name = prompt.to_owned();
        let result = server
            .bounded(peer.get_prompt(request))
            .await?
            .map_err(|e| GatewayError::Server(session.secrets.scrub(&server.failed(e))))?;
        server.fits(&result)?;
        scrub(session, result)
    }

    /// The agent's client's `logging/setLevel`, for every server's log.
    #[expect(deprecated, reason = "MCP logging is deprecated by SEP-2577")]
    pub fn set_log_level(&self, level: rmcp::model::LoggingLevel) {
        self.relay.set_log_level(level);
    }

    /// Whether any server was configured (the server then says it has
    /// resources, prompts and logging).
    pub fn is_empty(&self) -> bool {
        self.servers.is_empty()
    }
}

/// Replaces every value given out this session in every string of what the
/// agent reads (text, embedded resources, structured content alike). An
/// answer that cannot be read back after scrubbing is withheld whole.
fn scrub<T: serde::Serialize + serde::de::DeserializeOwned>(
    session: &Session,
    answer: T,
) -> Result<T, GatewayError> {
    if !session.secrets.any() {
        return Ok(answer);
    }
    let mut value = serde_json::to_value(&answer).map_err(GatewayError::Unscrubbable)?;
    scrub_value(session, &mut value);
    serde_json::from_value(value).map_err(GatewayError::Unscrubbable)
}

fn scrub_value(session: &Session, value: &mut Value) {
    match value {
        Value::String(text) => *text = session.secrets.scrub(text),
        Value::Array(items) => items.iter_mut().for_each(|v| scrub_value(session, v)),
        Value::Object(map) => map.values_mut().for_each(|v| scrub_value(session, v)),
        _ => {}
    }
}

/// Whether `uri` is one `template` (RFC 6570) expands to: its literal
/// parts in order, each expression standing for a run of characters
/// without `/`, `?` or `#` (`{+x}` and `{#x}` for any run).
fn template_matches(template: &str, uri: &str) -> bool {
    let mut parts = Vec::new();
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        let Some(close) = rest[open..].find('}') else {
            return false;
        };
        parts.push((&rest[..open], &rest[open + 1..open + close]));
        rest = &rest[open + close + 1..];
    }
    matches_from(&parts, rest, uri)
}

fn matches_from(parts: &[(&str, &str)], last: &str, uri: &str) -> bool {
    let Some(((literal, expression), more)) = parts.split_first() else {
        return uri == last;
    };
    let Some(after) = uri.strip_prefix(literal) else {
        return false;
    };
    let reserved = expression.starts_with(['+', '#']);
    (1..=after.len())
        .filter(|&end| after.is_char_boundary(end))
        .take_while(|&end| reserved || !after[..end].contains(['/', '?', '#']))
        .any(|end| matches_from(more, last, &after[end..]))
}

/// The host the HTTP client will connect to for `url`, read by the parser
/// the client itself uses, so the host decided is the host reached; a URL
/// the policy's reader sees another host in is refused.
fn connected_host(url: &str) -> Result<String, Unadmitted> {
    let parsed = reqwest::Url::parse(url).map_err(|e| Unadmitted::NotUrl {
        url: url.to_owned(),
        why: e.to_string(),
    })?;
    let host = match parsed.host_str() {
        Some(host) if !host.starts_with('[') => host.to_ascii_lowercase(),
        _ => {
            return Err(Unadmitted::NoHost {
                url: url.to_owned(),
            });
        }
    };
    let read = chock_policy::url_endpoint(url).map_err(|e| Unadmitted::Unread(e.to_string()))?;
    if read.host != host || !matches!(parsed.scheme(), "http" | "https") {
        return Err(Unadmitted::TwoHosts {
            url: url.to_owned(),
            client: host,
            policy: read.host,
        });
    }
    Ok(host)
}

/// A row read once at start, logged, granted only by allow (nobody can be
/// asked before the first call).
fn start_allow(
    session: &Session,
    tool: &str,
    action: &str,
    subject: Option<&str>,
) -> (bool, Verdict) {
    let key = Key::new(action).with_tool(tool).with_agent_kind(AGENT_KIND);
    let verdict = session.policy.decide(&key, Reading::Act);
    let settled = match chock_gate::before_asking(ROUTE, &verdict) {
        Step::Settled(settled) => settled,
        Step::Ask => chock_gate::heard(verdict.decision, Answer::Unavailable),
    };
    session.record(AGENT_KIND, tool, action, subject, &verdict, &settled);
    (settled.outcome == Outcome::Go, verdict)
}

impl Upstream {
    async fn start(session: &Arc<Session>, config: McpServer, relay: Arc<Relay>) -> Upstream {
        let mut upstream = Upstream {
            session: session.clone(),
            relay,
            grants: upstream::Grants::default(),
            link: Mutex::new(Link::Down(String::new())),
            restarted: AtomicBool::new(false),
            tools_changed: Arc::new(AtomicBool::new(false)),
            logs: Default::default(),
            tools: Default::default(),
            withheld: Default::default(),
            denied: Default::default(),
            config,
        };
        let admitted = if upstream.config.name == session.name {
            Err(Unadmitted::OwnName(session.name.clone()))
        } else {
            upstream.admit(session)
        };
        let link = match admitted {
            Err(why) => Link::Down(why.to_string()),
            Ok(grants) => {
                upstream.grants = grants;
                match upstream::connect(
                    session,
                    &upstream.config,
                    &upstream.grants,
                    upstream.client(),
                )
                .await
                {
                    Ok(connection) => Link::Up(connection),
                    Err(why) => {
                        tracing::warn!(
                            "chock mcp: MCP server `{}` did not start: {why}",
                            upstream.config.name
                        );
                        Link::Down(format!("it did not start: {why}"))
                    }
                }
            }
        };
        let up = matches!(link, Link::Up(_));
        *upstream.link.get_mut() = link;
        if up {
            upstream.list_tools(session).await;
        }
        upstream
    }

    fn client(&self) -> Client {
        Client {
            server: self.config.name.clone(),
            session: self.session.clone(),
            relay: self.relay.clone(),
            tools_changed: self.tools_changed.clone(),
            logs: self.logs.clone(),
        }
    }

    /// The rows read before a server starts: a URL server's host (only
    /// allow reaches it), a command server's secrets and network (only
    /// allow gives one).
    fn admit(&self, session: &Session) -> Result<upstream::Grants, Unadmitted> {
        let name = &self.config.name;
        match &self.config.launch {
            Launch::Url(url) => {
                let host = connected_host(url)?;
                let action = names::mcp_host(name, &host)?;
                let (granted, verdict) = start_allow(session, name, &action, Some(&host));
                if granted {
                    Ok(upstream::Grants::default())
                } else {
                    Err(Unadmitted::HostNotAllowed {
                        action,
                        decision: verdict.decision,
                        by: decided_by_words(&verdict),
                        advice: chock_gate::Refusal::new(Refused::Denied, &verdict)
                            .advice(chock_gate::Layout::Line),
                    })
                }
            }
            Launch::Command(_) => {
                let mut grants = upstream::Grants::default();
                for binding in &self.config.env {
                    if let Some(value) = self.start_secret(session, &binding.secret, &binding.var) {
                        grants.env.push((binding.var.clone().into(), value.into()));
                    }
                }
                for secret in &self.config.secret_files {
                    let path = format!("{}/{secret}", chock_sandbox::SECRETS_MOUNT);
                    if let Some(value) = self.start_secret(session, secret, &path) {
                        grants.files.push(chock_sandbox::SecretFile {
                            name: secret.clone(),
                            contents: value.into_bytes(),
                        });
                    }
                }
                grants.network = self.start_network(session)?;
                Ok(grants)
            }
        }
    }

    /// `secret.use.<secret>` at start, for the server to be given it as
    /// `given_as` (a variable, or a file's path): only allow reads the
    /// value; anything else starts the server without it, saying so.
    fn start_secret(&self, session: &Session, secret: &str, given_as: &str) -> Option<String> {
        let name = &self.config.name;
        let action = names::secret_use(secret).ok()?;
        let (granted, verdict) = start_allow(session, name, &action, Some(given_as));
        if !granted {
            tracing::warn!(
                "chock mcp: MCP server `{name}` starts without {given_as}: {action} answered {} at start (by {}), and only allow gives a server a secret",
                verdict.decision,
                decided_by_words(&verdict)
            );
            return None;
        }
        match session.policy.config().read_secret(secret) {
            Ok(value) => {
                session.secrets.remember(secret, &value);
                Some(value)
            }
            Err(why) => {
                tracing::warn!("chock mcp: MCP server `{name}` starts without {given_as}: {why}");
                None
            }
        }
    }

    /// `mcp.<server>.network` at start: only allow gives a command server
    /// the sandbox's router (unless `.policy.net.router` is `.none`), which
    /// then reaches each host only where `net.connect.*` allows it
    /// outright, since nobody can be asked for a server. Anything else
    /// leaves it the loopback of its own namespace.
    fn start_network(&self, session: &Session) -> Result<Network, Unadmitted> {
        let name = &self.config.name;
        let action = names::mcp_network(name)?;
        let (granted, verdict) = start_allow(session, name, &action, None);
        if !granted {
            if verdict.decision != chock_policy::Decision::Deny {
                tracing::info!(
                    "chock mcp: MCP server `{name}` has no network: {action} answered {} at start (by {}); to give it one, add .{{ .action = \"{action}\", .decision = .allow }},",
                    verdict.decision,
                    decided_by_words(&verdict)
                );
            }
            return Ok(Network::Closed);
        }
        if session.policy.config().net().router == chock_policy::NetMode::None {
            tracing::warn!(
                "chock mcp: MCP server `{name}` has no network: {action} allows it, but .policy.net.router is .none"
            );
            return Ok(Network::Closed);
        }
        Ok(Network::Filtered)
    }

    /// Lists the server's tools and reads each one's start row: a deny
    /// withholds it, anything else offers it.
    async fn list_tools(&self, session: &Session) {
        let Some(peer) = self.peer().await else {
            return;
        };
        let listed = match self.bounded(peer.list_all_tools()).await {
            Ok(Ok(tools)) => tools,
            Err(bound) => {
                tracing::warn!(
                    "chock mcp: MCP server `{}` did not list its tools: {bound}",
                    self.config.name,
                );
                return;
            }
            Ok(Err(e)) => {
                tracing::warn!(
                    "chock mcp: MCP server `{}` did not list its tools: {e}",
                    self.config.name
                );
                return;
            }
        };
        let mut offered = Vec::new();
        let mut withheld = Vec::new();
        for tool in listed {
            let gateway_name = format!("{}{TOOL_SEPARATOR}{}", self.config.name, tool.name);
            let action = match names::mcp_tool(&self.config.name, &tool.name) {
                Ok(action) => action,
                Err(e) => {
                    withheld.push(format!(
                        "{gateway_name} is not offered: its name cannot be part of an action ({e})"
                    ));
                    continue;
                }
            };
            let answer = chock_gate::start::at_start(
                &session.policy,
                AGENT_KIND,
                &chock_policy::StartQuestion::ThirdPartyTool {
                    action: action.clone(),
                },
            );
            match answer {
                Ok(answer) if answer.granted => offered.push(Offered { tool, action }),
                Ok(answer) => {
                    let first = self
                        .denied
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .insert(gateway_name.clone());
                    if !first {
                        continue;
                    }
                    let settled = Settled {
                        outcome: Outcome::Refused(Refused::Denied),
                        decision: answer.verdict.decision,
                        answered_by: AnsweredBy::of_layer(answer.verdict.decided_by.layer),
                        scope: None,
                    };
                    session.record(
                        AGENT_KIND,
                        &gateway_name,
                        &action,
                        None,
                        &answer.verdict,
                        &settled,
                    );
                }
                Err(e) => withheld.push(format!("{gateway_name} is not offered: {e}")),
            }
        }
        *self.tools.write().unwrap_or_else(|e| e.into_inner()) = offered;
        *self.withheld.write().unwrap_or_else(|e| e.into_inner()) = withheld;
    }

    /// The connection's peer, restarting a server that died (once).
    async fn peer(&self) -> Option<rmcp::Peer<rmcp::RoleClient>> {
        self.live().await.ok()
    }

    /// The live connection's peer; a server found dead is started again
    /// the first time, and reported from then on. `Err` is the reason the
    /// link keeps ([`Link::Down`]), as the server not running.
    async fn live(&self) -> Result<rmcp::Peer<rmcp::RoleClient>, GatewayError> {
        let mut link = self.link.lock().await;
        let gone = match &*link {
            Link::Up(connection) => match connection.gone() {
                None => return Ok(connection.service.peer().clone()),
                Some(gone) => gone,
            },
            Link::Down(why) => return Err(self.not_running(why.clone())),
        };
        let name = &self.config.name;
        // The old sandbox is killed before a new one starts.
        *link = Link::Down(gone.clone());
        if self.restarted.swap(true, Ordering::SeqCst) {
            let why = format!(
                "it stopped ({gone}) after it had been started again once; restart your agent's MCP server (chock mcp) to try again"
            );
            tracing::warn!("chock mcp: MCP server `{name}` {why}");
            *link = Link::Down(why.clone());
            return Err(self.not_running(why));
        }
        tracing::warn!("chock mcp: MCP server `{name}` stopped ({gone}); starting it again, once");
        match upstream::connect(&self.session, &self.config, &self.grants, self.client()).await {
            Ok(connection) => {
                let peer = connection.service.peer().clone();
                *link = Link::Up(connection);
                drop(link);
                self.tools_changed.store(true, Ordering::SeqCst);
                Ok(peer)
            }
            Err(why) => {
                let why = format!("it stopped ({gone}) and did not start again: {why}");
                *link = Link::Down(why.clone());
                Err(self.not_running(why))
            }
        }
    }

    /// A request of the gateway's own to the server, within its time bound.
    async fn bounded<T>(&self, request: impl Future<Output = T>) -> Result<T, GatewayError> {
        tokio::time::timeout(self.config.timeout, request)
            .await
            .map_err(|_| self.late())
    }

    /// The error of a request the server did not answer in time.
    fn late(&self) -> GatewayError {
        let config = &self.config;
        GatewayError::Bound(ErrorData::internal_error(
            format!(
                "MCP server `{}` did not answer within {} s, so the request is cancelled; if it needs longer, raise its .timeout_s in {}:{}",
                config.name,
                config.timeout.as_secs(),
                config.file.display(),
                config.line
            ),
            None,
        ))
    }

    /// Refuses an answer larger than the server's bound (a command
    /// server's lines are bounded as they are read; this bounds what a
    /// url server's transport let through).
    fn fits<T: serde::Serialize>(&self, answer: &T) -> Result<(), GatewayError> {
        struct Counter(usize);
        impl std::io::Write for Counter {
            fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
                self.0 += bytes.len();
                Ok(bytes.len())
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let mut size = Counter(0);
        serde_json::to_writer(&mut size, answer).ok();
        if size.0 <= self.config.max_answer_bytes {
            return Ok(());
        }
        Err(self.oversized(size.0))
    }

    fn oversized(&self, size: usize) -> GatewayError {
        let config = &self.config;
        GatewayError::Bound(ErrorData::internal_error(
            format!(
                "MCP server `{}` answered with {size} bytes or more, over its bound of {} MiB, so the answer is dropped unread; if it needs more, raise its .max_answer_mib in {}:{}",
                config.name,
                config.max_answer_bytes >> 20,
                config.file.display(),
                config.line
            ),
            None,
        ))
    }

    /// Waits until a connection that just failed is known gone, so the
    /// next request starts the server again rather than failing the same way.
    async fn settle(&self) {
        if let Link::Up(connection) = &*self.link.lock().await {
            connection.settle(SETTLE).await;
        }
    }

    /// Passes one call on, with the agent's progress token standing for the
    /// one rmcp sends, and the agent's cancel passed on as a cancel. The
    /// call waits at most the server's `.timeout_s`, then is cancelled.
    async fn call(
        &self,
        params: CallToolRequestParams,
        cancel: &tokio_util::sync::CancellationToken,
        progress: Option<rmcp::model::ProgressToken>,
    ) -> Result<CallToolResult, GatewayError> {
        let name = &self.config.name;
        let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
        let mut retried = false;
        let (peer, handle) = loop {
            let peer = self.live().await?;
            match peer
                .send_request_with_option(request.clone(), PeerRequestOptions::no_options())
                .await
            {
                Ok(handle) => break (peer, handle),
                // Not sent: the server is gone, and is started again once.
                Err(ServiceError::TransportClosed) if !retried => {
                    retried = true;
                    self.settle().await;
                }
                Err(e) => return Err(GatewayError::Server(self.failed(e))),
            }
        };
        let id = handle.id.clone();
        let token = handle.progress_token.clone();
        if let Some(theirs) = progress {
            self.relay.track(token.clone(), theirs);
        }
        let outcome = tokio::select! {
            response = tokio::time::timeout(self.config.timeout, handle.await_response()) => Some(response),
            () = cancel.cancelled() => None,
        };
        if !matches!(outcome, Some(Ok(_))) {
            self.relay.untrack(&token);
        } else {
            // The server's notifications are handled apart from its
            // answers, so progress it sent just before the result may be
            // handled just after: the token stands a moment longer.
            let relay = self.relay.clone();
            tokio::spawn(async move {
                tokio::time::sleep(PROGRESS_GRACE).await;
                relay.untrack(&token);
            });
        }
        let withdraw = |reason: &'static str| async {
            peer.notify_cancelled(CancelledNotificationParam::new(
                Some(id),
                Some(reason.into()),
            ))
            .await
            .ok();
        };
        match outcome {
            None => {
                withdraw("the agent's client cancelled the call").await;
                Err(GatewayError::Cancelled {
                    server: name.clone(),
                })
            }
            Some(Err(_)) => {
                withdraw("the call took longer than Chock's bound for this server").await;
                Err(self.late())
            }
            Some(Ok(Ok(ServerResult::CallToolResult(result)))) => Ok(result),
            Some(Ok(Ok(_))) => Err(GatewayError::Server(format!(
                "MCP server `{name}` answered the call with something that is not a tool result"
            ))),
            // The transport's own answer in place of a line too long to read.
            Some(Ok(Err(ServiceError::McpError(error))))
                if error.code.0 == lines::OVERSIZED_CODE =>
            {
                Err(GatewayError::Bound(ErrorData::internal_error(
                    format!("MCP server `{name}`: {}", error.message),
                    None,
                )))
            }
            Some(Ok(Err(e))) => {
                if matches!(
                    e,
                    ServiceError::TransportClosed | ServiceError::TransportSend(_)
                ) {
                    self.settle().await;
                    // Only this call's answer broke off (a url server's
                    // stream that could not be resumed): the server is kept.
                    if self.is_up().await {
                        return Err(self.broke_off());
                    }
                }
                Err(GatewayError::Server(self.failed(e)))
            }
        }
    }

    /// Whether the server's connection is live.
    async fn is_up(&self) -> bool {
        matches!(&*self.link.lock().await, Link::Up(connection) if connection.gone().is_none())
    }

    /// The error of a call whose answer broke off while the server stayed up.
    fn broke_off(&self) -> GatewayError {
        let config = &self.config;
        GatewayError::Bound(ErrorData::internal_error(
            format!(
                "MCP server `{}` broke off its answer to this call (an answer over its bound of {} MiB is broken off so; if it needs more, raise its .max_answer_mib in {}:{}); its connection is kept for the next call",
                config.name,
                config.max_answer_bytes >> 20,
                config.file.display(),
                config.line
            ),
            None,
        ))
    }

    /// The error of a server found not running, and why.
    fn not_running(&self, why: String) -> GatewayError {
        GatewayError::NotRunning {
            server: self.config.name.clone(),
            why: Some(why),
        }
    }

    fn failed(&self, e: ServiceError) -> String {
        let name = &self.config.name;
        match e {
            ServiceError::McpError(error) => format!("MCP server `{name}`: {}", error.message),
            ServiceError::TransportClosed | ServiceError::TransportSend(_) => format!(
                "MCP server `{name}` stopped during the call; it is started again (once) for the next call, and this call may or may not have taken effect"
            ),
            other => format!("MCP server `{name}`: {other}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{Unadmitted, connected_host, template_matches};

    #[test]
    fn the_host_decided_is_the_host_the_client_connects_to() {
        assert_eq!(
            connected_host("https://Mcp.Notion.com/mcp").ok().as_deref(),
            Some("mcp.notion.com")
        );
        assert_eq!(
            connected_host("http://127.0.0.1:8123/mcp").ok().as_deref(),
            Some("127.0.0.1")
        );
        // A reader that splits at the last `@` sees 127.0.0.1; the client
        // reads the backslash as the end of the host and connects to 127.0.0.2.
        let split = connected_host("http://127.0.0.2:80\\@127.0.0.1/mcp").unwrap_err();
        assert!(
            matches!(&split, Unadmitted::TwoHosts { client, .. } if client == "127.0.0.2"),
            "{split:?}"
        );
        assert!(
            split.to_string().contains("read as host `127.0.0.2`"),
            "{split}"
        );
        assert!(connected_host("http://[::1]:80/mcp").is_err());
        assert!(connected_host("file:///etc/passwd").is_err());
    }

    #[test]
    fn a_template_matches_the_uris_it_expands_to() {
        assert!(template_matches("note://{id}", "note://a"));
        assert!(!template_matches("note://{id}", "note://a/b"));
        assert!(!template_matches("note://{id}", "note://"));
        assert!(template_matches("file:///{+path}", "file:///etc/hosts"));
        assert!(template_matches("x://{a}/y/{b}", "x://1/y/2"));
        assert!(!template_matches("x://{a}/y/{b}", "x://1/z/2"));
        assert!(!template_matches("other://{id}", "note://a"));
        assert!(template_matches("plain://one", "plain://one"));
    }
}
