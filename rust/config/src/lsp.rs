//! `.lsp` of `chock.zon`: the project's language servers, each a command
//! the dev shell provides, the language it speaks and the files it serves.
//! A server is started when a tool first needs it, decided at
//! `lsp.<program>` (the last part of its program path, [`chock_names::lsp`]);
//! a program whose name cannot be one label of a rule is kept with why, so
//! the tool that would start it says so instead of starting it.
//!
//! ```zon
//! .lsp = .{
//!     .{ .command = .{ "pyright-langserver", "--stdio" }, .language = "python", .extensions = .{ "py", "pyi" } },
//!     .{ .command = .{ "rust-analyzer" }, .language = "rust", .extensions = .{ "rs" }, .timeout_ms = 20000 },
//! },
//! ```

use std::path::PathBuf;
use std::time::Duration;

use chock_zon::Spanned;
use serde::Deserialize;

use crate::{ConfigError, Source};

/// At most this many language servers.
pub const MAX_LSP_SERVERS: usize = 16;
/// How long one request to a server waits when `.timeout_ms` says nothing.
pub const DEFAULT_LSP_TIMEOUT: Duration = Duration::from_secs(15);
/// The most time `.timeout_ms` may give one request.
pub const MAX_LSP_TIMEOUT: Duration = Duration::from_secs(120);

#[derive(Debug, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a language server `.{ .command = .{ \"pyright-langserver\", \"--stdio\" }, .language = \"python\", .extensions = .{ \"py\" } }`"
)]
pub struct ServerFields {
    command: Spanned<Vec<String>>,
    language: String,
    extensions: Spanned<Vec<String>>,
    timeout_ms: Option<u64>,
}

/// One language server as `chock.zon` writes it, and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LspServer {
    /// The program and its arguments, as the dev shell runs them.
    pub command: Vec<String>,
    /// `lsp.<program>`, or why the program's name cannot be one label of a
    /// rule (such a server never starts).
    pub action: Result<String, chock_names::NameError>,
    /// The language id the server is told a file is in (`python`).
    pub language: String,
    /// The file extensions it serves, without the dot.
    pub extensions: Vec<String>,
    /// How long one request waits for its answer.
    pub timeout: Duration,
    /// `chock.zon`, and the line and column the server starts at.
    pub file: PathBuf,
    pub line: u32,
    pub column: u32,
}

impl LspServer {
    /// `chock.zon:14:9`, where a sentence about the server points.
    pub fn place(&self) -> String {
        format!("{}:{}:{}", self.file.display(), self.line, self.column)
    }

    /// The server's name: the last part of its program path.
    pub fn program(&self) -> &str {
        let program = self.command.first().map_or("", String::as_str);
        program.rsplit('/').next().unwrap_or(program)
    }

    /// Whether it serves `path`, by its extension.
    pub fn serves(&self, path: &std::path::Path) -> bool {
        path.extension()
            .and_then(|e| e.to_str())
            .is_some_and(|e| self.extensions.iter().any(|x| x == e))
    }
}

pub fn read_lsp(
    source: &Source<'_>,
    block: Option<Spanned<Vec<Spanned<ServerFields>>>>,
) -> Result<Vec<LspServer>, ConfigError> {
    let Some(Spanned { span, value }) = block else {
        return Ok(Vec::new());
    };
    if value.len() > MAX_LSP_SERVERS {
        return Err(source.error(
            span,
            format!(
                "`.lsp` names {} language servers, over the {MAX_LSP_SERVERS} a project may name",
                value.len()
            ),
        ));
    }
    let mut servers: Vec<LspServer> = Vec::with_capacity(value.len());
    for Spanned {
        span,
        value: server,
    } in value
    {
        let Some(program) = server.command.value.first() else {
            return Err(source.error(
                server.command.span,
                "a language server's `.command` is its program and arguments: `.command = .{ \"pyright-langserver\", \"--stdio\" }`",
            ));
        };
        if program.is_empty() || server.command.value.iter().any(|a| a.contains('\0')) {
            return Err(source.error(
                server.command.span,
                "a language server's `.command` starts with a program name and holds no NUL byte",
            ));
        }
        if server.language.is_empty() || server.language.chars().any(char::is_whitespace) {
            return Err(source.error(
                span,
                "a language server's `.language` is the language id it is told a file is in (`python`, `rust`, `typescript`)",
            ));
        }
        if server.extensions.value.is_empty() {
            return Err(source.error(
                server.extensions.span,
                "a language server's `.extensions` names the files it serves: `.extensions = .{ \"py\" }`",
            ));
        }
        for extension in &server.extensions.value {
            if extension.is_empty() || extension.contains(['.', '/']) {
                return Err(source.error(
                    server.extensions.span,
                    format!(
                        "`{extension}` is not a file extension: write it without the dot, `.extensions = .{{ \"py\" }}`"
                    ),
                ));
            }
            if let Some(other) = servers
                .iter()
                .find(|s| s.extensions.iter().any(|x| x == extension))
            {
                return Err(source.error(
                    server.extensions.span,
                    format!(
                        "`.{extension}` files are served by `{}` already (line {}): one server serves each extension",
                        other.program(),
                        other.line
                    ),
                ));
            }
        }
        let timeout = match server.timeout_ms.map(Duration::from_millis) {
            None => DEFAULT_LSP_TIMEOUT,
            Some(t) if t.is_zero() || t > MAX_LSP_TIMEOUT => {
                return Err(source.error(
                    span,
                    format!(
                        "a language server's `.timeout_ms` is from 1 to {} milliseconds",
                        MAX_LSP_TIMEOUT.as_millis()
                    ),
                ));
            }
            Some(t) => t,
        };
        let (line, column) = chock_zon::line_col(source.text, span.start);
        servers.push(LspServer {
            action: chock_names::lsp(program),
            command: server.command.value,
            language: server.language,
            extensions: server.extensions.value,
            timeout,
            file: source.file.to_path_buf(),
            line,
            column,
        });
    }
    Ok(servers)
}
