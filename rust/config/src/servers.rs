//! The MCP servers a project names (`.mcp` in `chock.zon`), the secrets it
//! names (`.secrets`), and where the operator keeps each secret (`.secrets`
//! in `config.zon`). The project says which servers and which secrets; only
//! the operator's file says where a secret's value is, so a project a
//! person clones can never point Chock at their keys.
//!
//! ```zon
//! // chock.zon
//! .mcp = .{
//!     .{ .name = "github", .command = .{ "github-mcp-server", "stdio" },
//!        .env = .{ .GITHUB_PERSONAL_ACCESS_TOKEN = "GITHUB_TOKEN" },
//!        .secret_files = .{ "DEPLOY_KEY" } },
//!     .{ .name = "notion", .url = "https://mcp.notion.com/mcp",
//!        .timeout_s = 120, .max_answer_mib = 4 },
//! },
//! .secrets = .{ "GITHUB_TOKEN", "DEPLOY_KEY" },
//!
//! // config.zon
//! .secrets = .{
//!     .GITHUB_TOKEN = .{ .command = .{ "pass", "show", "github/token" } },
//! },
//! ```

use std::collections::{BTreeMap, HashSet};
use std::io::Read;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use chock_zon::Spanned;
use serde::Deserialize;

use crate::{ConfigError, Source};
use chock_names as names;

/// At most this many servers in `.mcp`.
pub const MAX_SERVERS: usize = 64;
/// At most this many secrets in `.secrets`.
pub const MAX_SECRETS: usize = 64;
/// The longest secret read: more is refused, so a wrong file cannot fill memory.
pub const MAX_SECRET_BYTES: u64 = 64 << 10;
/// How long a store's command (`pass show x`) may take.
pub const COMMAND_TIMEOUT: Duration = Duration::from_secs(30);
/// What separates a server's name from its tool's in the gateway's tool
/// names (`github__create_issue`), so a server's name never holds it.
pub const TOOL_SEPARATOR: &str = "__";
/// What the project's plugins' tools are named after in a tool list
/// (`plugin__<id>__<tool>`), so no MCP server may take it as its name.
pub const PLUGIN_TOOLS: &str = "plugin";

/// One server as `chock.zon` writes it.
#[derive(Debug, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a server `.{ .name = \"...\", .command = .{ \"program\", \"arg\" } }` or `.{ .name = \"...\", .url = \"https://...\" }`"
)]
pub struct ServerFields {
    name: String,
    command: Option<Vec<String>>,
    url: Option<String>,
    #[serde(default)]
    env: BTreeMap<String, String>,
    #[serde(default)]
    secret_files: Vec<String>,
    timeout_s: Option<u64>,
    max_answer_mib: Option<u64>,
}

/// How the gateway reaches a server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Launch {
    /// A program Chock starts in its sandbox and speaks to over stdio:
    /// the program and its arguments.
    Command(Vec<String>),
    /// A server somebody else runs, spoken to over Streamable HTTP.
    Url(String),
}

/// An environment variable a command server is given, bound to a secret.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SecretEnv {
    /// The variable's name in the server's environment.
    pub var: String,
    /// The secret it holds, as `.secrets` names it.
    pub secret: String,
}

/// One MCP server of the project.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpServer {
    /// One label: letters, digits, `_` and `-`, never `__`.
    pub name: String,
    pub launch: Launch,
    /// The secrets it asks for, as environment variables.
    pub env: Vec<SecretEnv>,
    /// The secrets it asks for as files, `/run/chock/secrets/<name>`.
    pub secret_files: Vec<String>,
    /// The longest any request to it may wait for its answer (`.timeout_s`).
    pub timeout: Duration,
    /// The largest message it may send, in bytes (`.max_answer_mib`).
    pub max_answer_bytes: usize,
    /// Where it is written, for sentences that name it.
    pub file: PathBuf,
    pub line: u32,
}

/// How long a request to a server waits for its answer unless `.timeout_s` says.
pub const DEFAULT_SERVER_TIMEOUT: Duration = Duration::from_secs(600);
/// The largest message a server may send unless `.max_answer_mib` says (MiB).
pub const DEFAULT_MAX_ANSWER_MIB: u64 = 16;
/// The most `.timeout_s` may be: a day.
pub const MAX_SERVER_TIMEOUT_S: u64 = 86_400;
/// The most `.max_answer_mib` may be.
pub const MAX_ANSWER_MIB: u64 = 1024;

/// Where the operator keeps one secret (`config.zon`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SecretStore {
    /// An environment variable of the shell Chock was started from.
    Env(String),
    /// A file (its whole text, less one trailing newline).
    File(PathBuf),
    /// A program whose output is the secret (`pass show x`), run on the host.
    Command(Vec<String>),
}

#[derive(Debug, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "where a secret is kept: `.{ .env = \"VAR\" }`, `.{ .file = \"/path\" }` or `.{ .command = .{ \"pass\", \"show\", \"x\" } }`"
)]
pub struct StoreFields {
    env: Option<String>,
    file: Option<String>,
    command: Option<Vec<String>>,
}

/// `.mcp` and `.secrets` of `chock.zon`, checked.
#[derive(Debug, Clone, Default)]
pub struct ProjectServers {
    pub servers: Vec<McpServer>,
    pub secrets: Vec<String>,
}

/// `.secrets` of `config.zon`, checked.
pub type OperatorSecrets = BTreeMap<String, SecretStore>;

/// The raw blocks as serde reads them.
pub type ServersBlock = Spanned<Vec<Spanned<ServerFields>>>;
pub type SecretsBlock = Spanned<Vec<Spanned<String>>>;
pub type StoresBlock = BTreeMap<String, Spanned<StoreFields>>;

pub(crate) fn is_env_name(name: &str) -> bool {
    let mut bytes = name.bytes();
    bytes
        .next()
        .is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')
        && bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

fn is_server_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
        && !name.contains(TOOL_SEPARATOR)
        && name != PLUGIN_TOOLS
}

pub fn read_project_servers(
    source: &Source<'_>,
    servers: Option<ServersBlock>,
    secrets: Option<SecretsBlock>,
) -> Result<ProjectServers, ConfigError> {
    let mut declared = Vec::new();
    if let Some(list) = secrets {
        if list.value.len() > MAX_SECRETS {
            return Err(source.error(
                list.span,
                format!("a project names at most {MAX_SECRETS} secrets"),
            ));
        }
        for Spanned { span, value } in list.value {
            if names::secret_use(&value).is_err() {
                return Err(source.error(
                    span,
                    format!(
                        "secret `{value}`: a secret's name holds only letters, digits and `_` (it becomes the action secret.use.<name>)"
                    ),
                ));
            }
            if declared.contains(&value) {
                return Err(source.error(
                    span,
                    format!("secret `{value}` is named twice in .secrets: keep one"),
                ));
            }
            declared.push(value);
        }
    }
    let mut out = Vec::new();
    if let Some(list) = servers {
        if list.value.len() > MAX_SERVERS {
            return Err(source.error(
                list.span,
                format!("a project names at most {MAX_SERVERS} MCP servers"),
            ));
        }
        let mut seen = HashSet::new();
        for Spanned { span, value } in list.value {
            let fields = value;
            let name = fields.name;
            if !is_server_name(&name) {
                return Err(source.error(
                    span,
                    format!(
                        "MCP server `{name}`: a server's name is one label of letters, digits, `_` and `-`, without `__` (the gateway names its tools `<server>__<tool>`), and not `{PLUGIN_TOOLS}` (the plugins' tools are `{PLUGIN_TOOLS}__<id>__<tool>`); rename it"
                    ),
                ));
            }
            if !seen.insert(name.clone()) {
                return Err(source.error(
                    span,
                    format!("MCP server `{name}` is named twice in .mcp: keep one"),
                ));
            }
            let launch = match (fields.command, fields.url) {
                (Some(argv), None) => {
                    if argv.first().is_none_or(String::is_empty) {
                        return Err(source.error(
                            span,
                            format!("MCP server `{name}`: `.command` needs the program first, e.g. .{{ \"npx\", \"-y\", \"some-server\" }}"),
                        ));
                    }
                    if argv.iter().any(|a| a.contains('\0')) {
                        return Err(source.error(
                            span,
                            format!("MCP server `{name}`: an argument holds a NUL byte, which no program can receive"),
                        ));
                    }
                    Launch::Command(argv)
                }
                (None, Some(url)) => {
                    let authority = url.split_once("://").map_or("", |(_, rest)| {
                        rest.split(['/', '?', '#']).next().unwrap_or("")
                    });
                    if url.contains('\\') || authority.contains('@') {
                        return Err(source.error(
                            span,
                            format!("MCP server `{name}`: `{url}` holds a `\\` or credentials (`user@`), which HTTP clients and readers disagree on; write the URL plainly (credentials never go in chock.zon)"),
                        ));
                    }
                    let endpoint = chock_flakelock::url_endpoint(&url).map_err(|e| {
                        source.error(
                            span,
                            format!("MCP server `{name}`: {e}; write an http:// or https:// URL"),
                        )
                    })?;
                    if !matches!(endpoint.scheme.as_str(), "http" | "https") {
                        return Err(source.error(
                            span,
                            format!("MCP server `{name}`: `{url}` is not http or https; a url server speaks Streamable HTTP"),
                        ));
                    }
                    names::mcp_host(&name, &endpoint.host)
                        .map_err(|e| source.error(span, format!("MCP server `{name}`: {e}")))?;
                    if !fields.env.is_empty() || !fields.secret_files.is_empty() {
                        return Err(source.error(
                            span,
                            format!("MCP server `{name}`: `.env` and `.secret_files` give secrets to a program Chock starts, and a url server is run by somebody else; remove them"),
                        ));
                    }
                    Launch::Url(url)
                }
                (Some(_), Some(_)) => {
                    return Err(source.error(
                        span,
                        format!("MCP server `{name}` has both `.command` and `.url`: keep the one it is reached by"),
                    ));
                }
                (None, None) => {
                    return Err(source.error(
                        span,
                        format!("MCP server `{name}` has neither `.command` nor `.url`: add the program to start, or the URL it answers at"),
                    ));
                }
            };
            let mut env = Vec::new();
            for (var, secret) in fields.env {
                if !is_env_name(&var) {
                    return Err(source.error(
                        span,
                        format!("MCP server `{name}`: `{var}` is not an environment variable's name (letters, digits and `_`, not starting with a digit)"),
                    ));
                }
                if !declared.contains(&secret) {
                    return Err(source.error(
                        span,
                        format!("MCP server `{name}`: `.env.{var}` names secret `{secret}`, which .secrets does not name; add \"{secret}\" to .secrets (a value is never written in chock.zon: the operator's config.zon says where it is kept)"),
                    ));
                }
                env.push(SecretEnv { var, secret });
            }
            let mut secret_files: Vec<String> = Vec::new();
            for secret in fields.secret_files {
                if !declared.contains(&secret) {
                    return Err(source.error(
                        span,
                        format!("MCP server `{name}`: `.secret_files` names secret `{secret}`, which .secrets does not name; add \"{secret}\" to .secrets"),
                    ));
                }
                if secret_files.contains(&secret) {
                    return Err(source.error(
                        span,
                        format!(
                            "MCP server `{name}`: `.secret_files` names `{secret}` twice; keep one"
                        ),
                    ));
                }
                secret_files.push(secret);
            }
            let timeout_s = fields.timeout_s.unwrap_or(DEFAULT_SERVER_TIMEOUT.as_secs());
            if !(1..=MAX_SERVER_TIMEOUT_S).contains(&timeout_s) {
                return Err(source.error(
                    span,
                    format!("MCP server `{name}`: `.timeout_s = {timeout_s}` is out of range; write whole seconds from 1 to {MAX_SERVER_TIMEOUT_S}"),
                ));
            }
            let max_answer_mib = fields.max_answer_mib.unwrap_or(DEFAULT_MAX_ANSWER_MIB);
            if !(1..=MAX_ANSWER_MIB).contains(&max_answer_mib) {
                return Err(source.error(
                    span,
                    format!("MCP server `{name}`: `.max_answer_mib = {max_answer_mib}` is out of range; write whole MiB from 1 to {MAX_ANSWER_MIB}"),
                ));
            }
            out.push(McpServer {
                name,
                launch,
                env,
                secret_files,
                timeout: Duration::from_secs(timeout_s),
                max_answer_bytes: (max_answer_mib << 20) as usize,
                file: source.file.to_path_buf(),
                line: chock_zon::line_col(source.text, span.start).0,
            });
        }
    }
    Ok(ProjectServers {
        servers: out,
        secrets: declared,
    })
}

pub fn read_operator_secrets(
    source: &Source<'_>,
    stores: StoresBlock,
) -> Result<OperatorSecrets, ConfigError> {
    let mut out = BTreeMap::new();
    for (name, Spanned { span, value }) in stores {
        if names::secret_use(&name).is_err() {
            return Err(source.error(
                span,
                format!("secret `{name}`: a secret's name holds only letters, digits and `_`"),
            ));
        }
        let fields = value;
        let store = match (fields.env, fields.file, fields.command) {
            (Some(var), None, None) if is_env_name(&var) => SecretStore::Env(var),
            (Some(var), None, None) => {
                return Err(source.error(
                    span,
                    format!("secret `{name}`: `{var}` is not an environment variable's name"),
                ));
            }
            (None, Some(file), None) if file.starts_with('/') => {
                SecretStore::File(PathBuf::from(file))
            }
            (None, Some(file), None) => {
                return Err(source.error(
                    span,
                    format!("secret `{name}`: `{file}` is not an absolute path; write the file's full path"),
                ));
            }
            (None, None, Some(argv))
                if argv.first().is_some_and(|p| !p.is_empty())
                    && !argv.iter().any(|a| a.contains('\0')) =>
            {
                SecretStore::Command(argv)
            }
            (None, None, Some(_)) => {
                return Err(source.error(
                    span,
                    format!("secret `{name}`: `.command` needs the program first, e.g. .{{ \"pass\", \"show\", \"{name}\" }}"),
                ));
            }
            _ => {
                return Err(source.error(
                    span,
                    format!("secret `{name}`: say where it is kept with exactly one of `.env`, `.file` or `.command`"),
                ));
            }
        };
        out.insert(name, store);
    }
    Ok(out)
}

/// Why a secret could not be read; the words never hold its value.
#[derive(Debug, thiserror::Error)]
pub enum SecretError {
    #[error(
        "secret {name} has no store: add `.secrets = .{{ .{name} = .{{ .env = \"VAR\" }} }}` (or `.file`, or `.command`) to {config}"
    )]
    NoStore { name: String, config: String },
    #[error(
        "secret {name} is kept in the environment variable {var}, which is not set (or not UTF-8) where Chock was started"
    )]
    EnvUnset { name: String, var: String },
    #[error("secret {name}: {} cannot be read: {source}", path.display())]
    Unreadable {
        name: String,
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("secret {name}: {} cannot be read as text: {source}", path.display())]
    NotText {
        name: String,
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("secret {name}: {} is longer than {MAX_SECRET_BYTES} bytes; a secret is a key, not a document", path.display())]
    TooLong { name: String, path: PathBuf },
    #[error("secret {name}: {failure}")]
    Command {
        name: String,
        failure: StoreCommandError,
    },
    #[error("secret {name} is empty where it is kept")]
    Empty { name: String },
    #[error("secret {name} holds a NUL byte, which no environment variable can carry")]
    Nul { name: String },
}

/// How a store's command (`.command`) failed to give a secret.
#[derive(Debug, thiserror::Error)]
pub enum StoreCommandError {
    #[error("the store's command is empty")]
    Empty,
    #[error("`{shown}` cannot be started: {source}")]
    Start {
        shown: String,
        source: std::io::Error,
    },
    #[error("`{shown}` has no output")]
    NoOutput { shown: String },
    #[error("`{shown}` did not finish within {} s (does it wait for a passphrase? unlock the store first)", COMMAND_TIMEOUT.as_secs())]
    Timeout { shown: String },
    #[error("waiting for `{shown}` failed: {source}")]
    Wait {
        shown: String,
        source: std::io::Error,
    },
    #[error("reading `{shown}` failed")]
    ReaderLost { shown: String },
    #[error("reading `{shown}` failed: {source}")]
    Read {
        shown: String,
        source: std::io::Error,
    },
    #[error("`{shown}` failed ({status})")]
    Failed {
        shown: String,
        status: std::process::ExitStatus,
    },
    #[error("`{shown}` printed more than {MAX_SECRET_BYTES} bytes")]
    TooLong { shown: String },
    #[error("`{shown}` printed bytes that are not UTF-8")]
    NotText { shown: String },
}

impl SecretStore {
    /// Reads secret `name` from this store. The error is a sentence for a
    /// person; it never holds the value.
    pub fn read(&self, name: &str) -> Result<String, SecretError> {
        let value = match self {
            SecretStore::Env(var) => std::env::var(var).map_err(|_| SecretError::EnvUnset {
                name: name.to_string(),
                var: var.clone(),
            })?,
            SecretStore::File(path) => read_secret_file(name, path)?,
            SecretStore::Command(argv) => {
                run_store_command(argv).map_err(|failure| SecretError::Command {
                    name: name.to_string(),
                    failure,
                })?
            }
        };
        let value = value
            .strip_suffix('\n')
            .map(|v| v.strip_suffix('\r').unwrap_or(v))
            .unwrap_or(&value)
            .to_owned();
        if value.is_empty() {
            return Err(SecretError::Empty {
                name: name.to_string(),
            });
        }
        if value.contains('\0') {
            return Err(SecretError::Nul {
                name: name.to_string(),
            });
        }
        Ok(value)
    }
}

/// A secret kept in a file (`.file`), at most [`MAX_SECRET_BYTES`] of text.
fn read_secret_file(name: &str, path: &std::path::Path) -> Result<String, SecretError> {
    let file = std::fs::File::open(path).map_err(|source| SecretError::Unreadable {
        name: name.to_string(),
        path: path.to_path_buf(),
        source,
    })?;
    let mut text = String::new();
    file.take(MAX_SECRET_BYTES + 1)
        .read_to_string(&mut text)
        .map_err(|source| SecretError::NotText {
            name: name.to_string(),
            path: path.to_path_buf(),
            source,
        })?;
    if text.len() as u64 > MAX_SECRET_BYTES {
        return Err(SecretError::TooLong {
            name: name.to_string(),
            path: path.to_path_buf(),
        });
    }
    Ok(text)
}

/// Runs a store's command on the host (it is the operator's own, like
/// `pass show x`), with nothing on stdin, and takes its output.
fn run_store_command(argv: &[String]) -> Result<String, StoreCommandError> {
    let shown = argv.join(" ");
    let (program, args) = argv.split_first().ok_or(StoreCommandError::Empty)?;
    let mut child = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|source| StoreCommandError::Start {
            shown: shown.clone(),
            source,
        })?;
    let Some(mut stdout) = child.stdout.take() else {
        return Err(StoreCommandError::NoOutput { shown });
    };
    let reading = std::thread::spawn(move || {
        let mut bytes = Vec::new();
        let read = (&mut stdout)
            .take(MAX_SECRET_BYTES + 1)
            .read_to_end(&mut bytes);
        // Whatever is left is drained, so the command never blocks on a full pipe.
        std::io::copy(&mut stdout, &mut std::io::sink()).ok();
        read.map(|_| bytes)
    });
    let started = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if started.elapsed() > COMMAND_TIMEOUT => {
                child.kill().ok();
                child.wait().ok();
                return Err(StoreCommandError::Timeout { shown });
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(10)),
            Err(source) => return Err(StoreCommandError::Wait { shown, source }),
        }
    };
    let bytes = match reading.join() {
        Err(_) => return Err(StoreCommandError::ReaderLost { shown }),
        Ok(Err(source)) => return Err(StoreCommandError::Read { shown, source }),
        Ok(Ok(bytes)) => bytes,
    };
    if !status.success() {
        return Err(StoreCommandError::Failed { shown, status });
    }
    if bytes.len() as u64 > MAX_SECRET_BYTES {
        return Err(StoreCommandError::TooLong { shown });
    }
    String::from_utf8(bytes).map_err(|_| StoreCommandError::NotText { shown })
}
