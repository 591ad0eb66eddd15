//! The language-server tools: diagnostics, definition, references, hover
//! and document symbols for a file of the workspace, each answered by the
//! server chock.zon's `.lsp` names for the file's extension.
//!
//! A server starts when a tool first needs it, decided at `lsp.<program>`
//! (a program whose name cannot be one label of a rule never starts, and
//! the call says why), inside the same sandbox a run_command gets (the
//! session's toolchain, the workspace, no network), speaking LSP over its
//! stdin and stdout through chock-lsp. Each call is decided at
//! `call.<tool>`. Every request has the server's time bound; a server that
//! ends or does not answer in time is killed and dropped, the call says
//! so, and the next call starts it again, at most [`MAX_STARTS`] times in a
//! session.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use chock_lsp::{DiagnosticSeverity, LspError, Place, Server};
use chock_policy::{LspServer, names};
use serde::Deserialize;

use super::{Call, PipedError, ToolError};
use crate::gate::{Act, Asking};
use crate::session::Session;
use crate::workspace::Workspace;

pub const LSP_DIAGNOSTICS: &str = "lsp_diagnostics";
pub const LSP_DEFINITION: &str = "lsp_definition";
pub const LSP_REFERENCES: &str = "lsp_references";
pub const LSP_HOVER: &str = "lsp_hover";
pub const LSP_SYMBOLS: &str = "lsp_symbols";
/// The language-server tools, offered where chock.zon names a server.
pub const LSP_TOOLS: [&str; 5] = [
    LSP_DIAGNOSTICS,
    LSP_DEFINITION,
    LSP_REFERENCES,
    LSP_HOVER,
    LSP_SYMBOLS,
];

/// How many times one server may be started in a session.
pub const MAX_STARTS: u32 = 4;
/// The largest file sent to a server.
const MAX_FILE_BYTES: u64 = 4 << 20;
/// The most places an answer lists.
const MAX_PLACES: usize = 500;
/// The most bytes of hover text an answer holds.
const MAX_HOVER_BYTES: usize = 16 << 10;
/// How long a server's sandbox may take to start (its dev shell built
/// when it changed), besides the server's own bound for `initialize`.
const START_BOUND: Duration = Duration::from_secs(120);

/// The session's language servers, started as tools need them.
#[derive(Default)]
pub struct LspServers {
    running: tokio::sync::Mutex<HashMap<usize, Running>>,
    starts: std::sync::Mutex<HashMap<usize, (u32, Option<String>)>>,
}

struct Running {
    server: Arc<Server>,
    process: chock_sandbox::SignalHandle,
}

impl Running {
    fn kill(&self) {
        if let Err(e) = self.process.signal(nix::libc::SIGKILL) {
            tracing::warn!("a language server could not be killed: {e}");
        }
    }
}

impl Drop for LspServers {
    fn drop(&mut self) {
        for running in self.running.get_mut().values() {
            running.kill();
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InFile {
    path: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AtPlace {
    path: String,
    line: u32,
    column: u32,
}

/// The file a call is about, the server that serves it, and its text.
struct Target {
    index: usize,
    server: LspServer,
    rel: PathBuf,
    /// The file's path as the server sees it.
    path: PathBuf,
    text: String,
}

/// Decides `call.<tool>` on the file, finds its server and reads it.
async fn target(call: &Call<'_>, tool: &'static str, given: &str) -> Result<Target, ToolError> {
    let session = call.session;
    let rel = session.workspace.relative(given)?;
    let act = Act {
        tool,
        action: names::call(tool)?,
        subject: Some(Workspace::show(&rel)),
        detail: Vec::new(),
    };
    call.gate(&act, Asking::Person).await?;
    let servers = session.policy.config().lsp_servers();
    let Some((index, server)) = servers.iter().enumerate().find(|(_, s)| s.serves(&rel)) else {
        let served: Vec<String> = servers
            .iter()
            .flat_map(|s| s.extensions.iter().map(|e| format!(".{e}")))
            .collect();
        return Err(ToolError::Unavailable(format!(
            "{tool}: no language server in {}'s .lsp serves `{}` (its servers serve {}); add one for its extension, e.g. .{{ .command = .{{ \"pyright-langserver\", \"--stdio\" }}, .language = \"python\", .extensions = .{{ \"py\" }} }}",
            session.policy.project_file().display(),
            Workspace::show(&rel),
            if served.is_empty() {
                "nothing".into()
            } else {
                served.join(", ")
            }
        )));
    };
    let server = server.clone();
    let reading = rel.clone();
    let owned = session.clone();
    let text = tokio::task::spawn_blocking(move || {
        owned
            .workspace
            .opened()
            .and_then(|opened| opened.read_text(&reading, MAX_FILE_BYTES))
    })
    .await
    .map_err(|e| ToolError::stopped(tool, e, session.command))??;
    Ok(Target {
        index,
        path: session.project.dir.join(&rel),
        server,
        rel,
        text,
    })
}

/// The running server of `target`, started (decided at `lsp.<program>`)
/// when none runs, or when the one that ran has ended.
async fn server(call: &Call<'_>, target: &Target) -> Result<Arc<Server>, ToolError> {
    let program = target.server.program().to_owned();
    let action = target.server.action.clone().map_err(|why| {
        ToolError::LanguageServer(format!(
            "the language server at {} does not start: its program `{program}` cannot be one label of a rule ({why}), and a server is decided at lsp.<program>; give its command a program whose name has no `.`, `*` or space",
            target.server.place()
        ))
    })?;
    let lsp = &call.session.lsp;
    let mut running = lsp.running.lock().await;
    if let Some(held) = running.get(&target.index) {
        match held.server.ended() {
            None => return Ok(held.server.clone()),
            Some(_) => {
                held.kill();
                running.remove(&target.index);
            }
        }
    }
    {
        let starts = lsp
            .starts
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some((count, last)) = starts.get(&target.index)
            && *count >= MAX_STARTS
        {
            return Err(ToolError::LanguageServer(format!(
                "the language server `{program}` was started {count} times in this session and stopped each time (last: {}); it is not started again until the session restarts",
                last.as_deref().unwrap_or("unknown")
            )));
        }
    }
    let act = Act {
        tool: "lsp",
        action,
        subject: Some(target.server.command.join(" ")),
        detail: vec![format!(
            "language server named at {}",
            target.server.place()
        )],
    };
    call.gate(&act, Asking::Person).await?;
    lsp.starts
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .entry(target.index)
        .or_default()
        .0 += 1;
    let started = tokio::time::timeout(
        START_BOUND + target.server.timeout,
        start(call.session, &target.server),
    )
    .await
    .unwrap_or_else(|_| {
        Err(StartError::Late {
            seconds: (START_BOUND + target.server.timeout).as_secs(),
        })
    })
    .map_err(|why| {
        remember(call.session, target.index, &why.to_string());
        ToolError::LanguageServer(format!(
            "the language server `{program}` (at {}) did not start: {why}",
            target.server.place()
        ))
    })?;
    let server = started.server.clone();
    running.insert(target.index, started);
    Ok(server)
}

fn remember(session: &Session, index: usize, why: &str) {
    if let Some(entry) = session
        .lsp
        .starts
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .get_mut(&index)
    {
        entry.1 = Some(why.to_owned());
    }
}

/// Starts `config`'s command in the session's sandbox, on a thread of its
/// own that waits for it and lives exactly as long as it does (the
/// sandbox's init ends with the thread that made it), and says
/// `initialize` over its pipes.
async fn start(session: &Arc<Session>, config: &LspServer) -> Result<Running, StartError> {
    let argv = config.command.clone();
    let building = session.clone();
    let (tell, told) = tokio::sync::oneshot::channel();
    let program = config.program().to_owned();
    std::thread::Builder::new()
        .name(format!("chock-lsp-{program}"))
        .spawn(move || {
            let started = (|| {
                let mut prepared = super::prepare_piped(&building, &argv)?;
                super::furnish(
                    &building,
                    &mut prepared,
                    chock_sandbox::netmode::Network::Closed,
                )?;
                let mut started = prepared.start()?;
                let no = |what| PipedError::NoPipe { what, by: "chock" };
                let pipes = started.take_pipes().ok_or(no("pipes"))?;
                let stderr = started.take_stderr().ok_or(no("stderr"))?;
                let handle = started.signal_handle()?;
                Ok::<_, PipedError>((started, pipes, stderr, handle))
            })();
            match started {
                Ok((started, pipes, stderr, handle)) => {
                    if let Err(Ok((_, _, handle))) = tell.send(Ok((pipes, stderr, handle))) {
                        // Nobody waits for it any more (its start timed out).
                        handle.signal(nix::libc::SIGKILL).ok();
                    }
                    match started.wait() {
                        Ok(ran) => tracing::debug!(
                            "language server `{program}` ended: {:?}",
                            ran.finished.exit
                        ),
                        Err(e) => {
                            tracing::warn!("language server `{program}`: its sandbox failed: {e}")
                        }
                    }
                }
                Err(why) => {
                    tell.send(Err(why)).ok();
                }
            }
        })
        .map_err(PipedError::Thread)?;
    let ((stdin, stdout), stderr, process) =
        told.await.map_err(|_| PipedError::Lost("chock"))??;
    let writer =
        tokio::net::unix::pipe::Sender::from_owned_fd(stdin).map_err(PipedError::pipe("stdin"))?;
    let reader = tokio::net::unix::pipe::Receiver::from_owned_fd(stdout)
        .map_err(PipedError::pipe("stdout"))?;
    let stderr = tokio::net::unix::pipe::Receiver::from_owned_fd(stderr)
        .map_err(PipedError::pipe("stderr"))?;
    tokio::spawn(drain(config.program().to_owned(), stderr));
    match Server::start(reader, writer, &session.project.dir, config.timeout).await {
        Ok(server) => Ok(Running {
            server: Arc::new(server),
            process,
        }),
        Err(e) => {
            process.signal(nix::libc::SIGKILL).ok();
            Err(StartError::Initialize(e))
        }
    }
}

/// Why a language server did not start.
#[derive(Debug, thiserror::Error)]
enum StartError {
    #[error(transparent)]
    Piped(#[from] PipedError),
    #[error(transparent)]
    Initialize(LspError),
    #[error("it did not start within {seconds} s")]
    Late { seconds: u64 },
}

/// A server's stderr, read to its end so it never waits on a full pipe;
/// its lines go to Chock's own log at debug level, never to the agent.
async fn drain(program: String, stderr: tokio::net::unix::pipe::Receiver) {
    use tokio::io::AsyncBufReadExt;
    let mut lines = tokio::io::BufReader::new(stderr).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        tracing::debug!(target: "chock_lsp", "{program}: {line}");
    }
}

/// A request's outcome: a server that ended or did not answer in time is
/// killed and dropped, and the call says the next one starts it again.
async fn settle<T>(
    call: &Call<'_>,
    target: &Target,
    outcome: Result<T, LspError>,
) -> Result<T, ToolError> {
    let error = match outcome {
        Ok(value) => return Ok(value),
        Err(error) => error,
    };
    let program = target.server.program();
    if matches!(error, LspError::Ended(_) | LspError::Timeout { .. }) {
        if let Some(held) = call.session.lsp.running.lock().await.remove(&target.index) {
            held.kill();
        }
        remember(call.session, target.index, &error.to_string());
        let used = call
            .session
            .lsp
            .starts
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(&target.index)
            .map_or(0, |(count, _)| *count);
        return Err(ToolError::LanguageServer(format!(
            "`{program}` on {}: {error}; it was stopped, and the next call starts it again ({used} of {MAX_STARTS} starts this session used)",
            Workspace::show(&target.rel)
        )));
    }
    Err(ToolError::LanguageServer(format!(
        "`{program}` on {}: {error}",
        Workspace::show(&target.rel)
    )))
}

/// A place as the agent reads it: `src/a.py:3:5`, relative to the project
/// where it is under it, 1-based.
fn shown(session: &Session, place: &Place) -> String {
    let path = place.path.strip_prefix(&session.project.dir).map_or_else(
        |_| place.path.display().to_string(),
        |p| p.display().to_string(),
    );
    format!("{path}:{}:{}", place.line + 1, place.character + 1)
}

fn list_places(session: &Session, what: &str, places: &[Place]) -> String {
    if places.is_empty() {
        return format!("no {what} found");
    }
    let mut out = String::new();
    for place in places.iter().take(MAX_PLACES) {
        let _ = writeln!(out, "{}", shown(session, place));
    }
    if places.len() > MAX_PLACES {
        let _ = writeln!(out, "({} more not shown)", places.len() - MAX_PLACES);
    }
    out
}

/// The zero-based place of a 1-based line and column of the target.
fn place(target: &Target, tool: &str, line: u32, column: u32) -> Result<Place, ToolError> {
    if line == 0 || column == 0 {
        return Err(ToolError::Argument(format!(
            "{tool}: `line` and `column` count from 1"
        )));
    }
    Ok(Place {
        path: target.path.clone(),
        line: line - 1,
        character: column - 1,
    })
}

/// The running server for `target`, once it says its project is loaded. A
/// server still loading when the bound passes is left running: a restart
/// would only load again from the start.
async fn settled(call: &Call<'_>, target: &Target) -> Result<Arc<Server>, ToolError> {
    let server = server(call, target).await?;
    match server.settled().await {
        Ok(()) => Ok(server),
        Err(LspError::Loading { after }) => Err(ToolError::LanguageServer(format!(
            "`{}` is still loading the project (not ready within {} s); ask again in a moment",
            target.server.program(),
            after.as_secs()
        ))),
        Err(error) => settle(call, target, Err(error)).await,
    }
}

/// The target's server, told the file's text as the workspace holds it.
async fn synced(call: &Call<'_>, target: &Target) -> Result<Arc<Server>, ToolError> {
    let server = settled(call, target).await?;
    let outcome = server
        .sync(&target.path, &target.server.language, &target.text)
        .await;
    settle(call, target, outcome).await?;
    Ok(server)
}

pub async fn diagnostics(call: &Call<'_>, args: InFile) -> Result<String, ToolError> {
    let target = target(call, LSP_DIAGNOSTICS, &args.path).await?;
    let server = settled(call, &target).await?;
    let outcome = server
        .diagnostics(&target.path, &target.server.language, &target.text)
        .await;
    let found = settle(call, &target, outcome).await?;
    let file = Workspace::show(&target.rel);
    if found.is_empty() {
        return Ok(format!(
            "{file}: no diagnostics from `{}`",
            target.server.program()
        ));
    }
    let mut out = String::new();
    for d in found.iter().take(MAX_PLACES) {
        let severity = match d.severity {
            Some(DiagnosticSeverity::ERROR) => "error",
            Some(DiagnosticSeverity::WARNING) => "warning",
            Some(DiagnosticSeverity::INFORMATION) => "info",
            _ => "hint",
        };
        let source = d
            .source
            .as_deref()
            .map(|s| format!(" ({s})"))
            .unwrap_or_default();
        let _ = writeln!(
            out,
            "{file}:{}:{}: {severity}: {}{source}",
            d.range.start.line + 1,
            d.range.start.character + 1,
            d.message.replace('\n', " ")
        );
    }
    if found.len() > MAX_PLACES {
        let _ = writeln!(out, "({} more not shown)", found.len() - MAX_PLACES);
    }
    Ok(out)
}

pub async fn definition(call: &Call<'_>, args: AtPlace) -> Result<String, ToolError> {
    let target = target(call, LSP_DEFINITION, &args.path).await?;
    let at = place(&target, LSP_DEFINITION, args.line, args.column)?;
    let server = synced(call, &target).await?;
    let outcome = server.definition(&at).await;
    let found = settle(call, &target, outcome).await?;
    Ok(list_places(call.session, "definition", &found))
}

pub async fn references(call: &Call<'_>, args: AtPlace) -> Result<String, ToolError> {
    let target = target(call, LSP_REFERENCES, &args.path).await?;
    let at = place(&target, LSP_REFERENCES, args.line, args.column)?;
    let server = synced(call, &target).await?;
    let outcome = server.references(&at).await;
    let found = settle(call, &target, outcome).await?;
    Ok(list_places(call.session, "reference", &found))
}

pub async fn hover(call: &Call<'_>, args: AtPlace) -> Result<String, ToolError> {
    let target = target(call, LSP_HOVER, &args.path).await?;
    let at = place(&target, LSP_HOVER, args.line, args.column)?;
    let server = synced(call, &target).await?;
    let outcome = server.hover(&at).await;
    let mut text = settle(call, &target, outcome)
        .await?
        .unwrap_or_else(|| "nothing to say here".into());
    if text.len() > MAX_HOVER_BYTES {
        let mut cut = MAX_HOVER_BYTES;
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        text.truncate(cut);
        text.push_str("\n(cut)");
    }
    Ok(text)
}

pub async fn symbols(call: &Call<'_>, args: InFile) -> Result<String, ToolError> {
    let target = target(call, LSP_SYMBOLS, &args.path).await?;
    let server = synced(call, &target).await?;
    let outcome = server.symbols(&target.path).await;
    let found = settle(call, &target, outcome).await?;
    if found.is_empty() {
        return Ok(format!("{}: no symbols", Workspace::show(&target.rel)));
    }
    let mut out = String::new();
    for s in found.iter().take(MAX_PLACES) {
        let _ = writeln!(
            out,
            "{}{} {} (line {})",
            "  ".repeat(s.depth.min(16)),
            s.kind,
            s.name,
            s.line + 1
        );
    }
    if found.len() > MAX_PLACES {
        let _ = writeln!(out, "({} more not shown)", found.len() - MAX_PLACES);
    }
    Ok(out)
}

/// Whether the language-server tools are offered: where chock.zon names a server.
pub fn has_servers(session: &Session) -> bool {
    !session.policy.config().lsp_servers().is_empty()
}
