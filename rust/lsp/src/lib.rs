//! The Language Server Protocol, spoken to one server over a pair of pipes.
//!
//! [`Server::start`] takes the server's stdout (to read) and stdin (to
//! write), says `initialize` for a project root and answers once the
//! server has. Every request is bounded: an answer that does not come
//! within [`Server::timeout`] fails the request, a message over
//! [`MAX_MESSAGE_BYTES`] or a frame that cannot be read ends the server,
//! and a server that ends fails every request still waiting, with why.
//! Where the server runs, and whether it may, is the caller's: this crate
//! knows nothing of a sandbox or a policy.

#![forbid(unsafe_code)]

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

pub use lsp_types::{Diagnostic, DiagnosticSeverity};
use lsp_types::{
    DocumentSymbolResponse, GotoDefinitionResponse, Hover, HoverContents, Location, MarkedString,
    Position, Uri,
};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::{oneshot, watch};

/// The largest message a server may send; a larger one ends it.
pub const MAX_MESSAGE_BYTES: usize = 32 << 20;
/// The longest header line a server may send.
const MAX_HEADER_BYTES: usize = 1024;

#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
pub enum LspError {
    #[error(
        "the language server did not answer `{method}` within {} s",
        .after.as_secs_f64()
    )]
    Timeout { method: String, after: Duration },
    /// The server said it is loading its project and did not say it was
    /// done within the bound: alive, its answers not yet whole.
    #[error(
        "the language server is still loading the project (not ready within {} s)",
        .after.as_secs()
    )]
    Loading { after: Duration },
    #[error("the language server ended ({0})")]
    Ended(String),
    #[error("the language server refused `{method}`: {message}")]
    Refused { method: String, message: String },
    #[error("the language server's answer to `{method}` cannot be read: {why}")]
    Answer { method: String, why: String },
    #[error("`{}` cannot be named as a file URI", .0.display())]
    Path(PathBuf),
}

/// Why the conversation with a server broke: what it sent or failed to
/// take. It ends the server, and [`LspError::Ended`] says it.
#[derive(Debug, thiserror::Error)]
enum WireError {
    #[error("{0}")]
    Encode(serde_json::Error),
    #[error("its input closed: {0}")]
    InputClosed(std::io::Error),
    #[error("its output cannot be read: {0}")]
    Unreadable(std::io::Error),
    #[error("its output ended inside a header")]
    EndedInHeader,
    #[error("it sent a header line over {MAX_HEADER_BYTES} bytes")]
    LongHeader,
    #[error("it sent a Content-Length that is not a number: {0}")]
    BadLength(String),
    #[error("it sent a message without a Content-Length")]
    NoLength,
    #[error("it sent a message of {0} bytes, over the {MAX_MESSAGE_BYTES} a message may hold")]
    TooLong(usize),
    #[error("its output ended inside a message: {0}")]
    EndedInMessage(std::io::Error),
    #[error("it sent a message that is not JSON: {0}")]
    NotJson(serde_json::Error),
}

type Pending = Arc<Mutex<HashMap<i64, oneshot::Sender<Result<Value, LspError>>>>>;

/// The diagnostics a server published for one file, and how many times.
#[derive(Default)]
struct Published {
    generation: u64,
    /// The document version they are for, where the server says.
    version: Option<i32>,
    diagnostics: Vec<Diagnostic>,
}

type Writer = Arc<tokio::sync::Mutex<Box<dyn AsyncWrite + Send + Unpin>>>;

/// One running language server.
pub struct Server {
    writer: Writer,
    pending: Pending,
    next_id: AtomicI64,
    ended: watch::Receiver<Option<String>>,
    published: Arc<Mutex<HashMap<String, Published>>>,
    published_tell: watch::Receiver<u64>,
    /// Whether the server says its answers are whole (rust-analyzer's
    /// `experimental/serverStatus`); `None` until it says anything.
    quiescent: watch::Receiver<Option<bool>>,
    /// Whether `settled` has asked once whether the server reports status.
    pinged: AtomicBool,
    /// What each document was last told, by URI.
    synced: Mutex<HashMap<String, Synced>>,
    /// The key texts are hashed with, this server's own and random, so a
    /// text crafted to collide with another's hash cannot be made.
    text_key: std::hash::RandomState,
    timeout: Duration,
}

/// The version a document was last told as, and a hash of its text.
#[derive(Clone, Copy, PartialEq, Eq)]
struct Synced {
    version: i32,
    text: u64,
}

/// A place in a file: its path, and a zero-based line and character.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Place {
    pub path: PathBuf,
    pub line: u32,
    pub character: u32,
}

/// A symbol of one document, with its depth in the outline.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Symbol {
    pub name: String,
    pub kind: String,
    pub line: u32,
    pub depth: usize,
}

impl Server {
    /// Says `initialize` for `root` to the server behind `reader` (its
    /// stdout) and `writer` (its stdin), then `initialized`; every request
    /// from then on waits at most `timeout` for its answer.
    pub async fn start(
        reader: impl AsyncRead + Send + Unpin + 'static,
        writer: impl AsyncWrite + Send + Unpin + 'static,
        root: &Path,
        timeout: Duration,
    ) -> Result<Server, LspError> {
        let pending: Pending = Arc::default();
        let published: Arc<Mutex<HashMap<String, Published>>> = Arc::default();
        let (ended_tell, ended) = watch::channel(None);
        let (published_send, published_tell) = watch::channel(0);
        let (quiescent_send, quiescent) = watch::channel(None);
        let writer: Writer = Arc::new(tokio::sync::Mutex::new(Box::new(writer)));
        tokio::spawn(read_messages(
            BufReader::new(reader),
            pending.clone(),
            published.clone(),
            published_send,
            quiescent_send,
            writer.clone(),
            ended_tell,
        ));
        let server = Server {
            writer,
            pending,
            next_id: AtomicI64::new(1),
            ended,
            published,
            published_tell,
            quiescent,
            pinged: AtomicBool::new(false),
            synced: Mutex::default(),
            text_key: std::hash::RandomState::new(),
            timeout,
        };
        let root_uri = file_uri(root)?;
        let name = root
            .file_name()
            .map_or_else(|| "project".into(), |n| n.to_string_lossy().into_owned());
        let params = json!({
            // No process id: a server in a PID namespace of its own would
            // find no such process and, as vscode-languageserver does, exit.
            "processId": Value::Null,
            "rootUri": root_uri.as_str(),
            "workspaceFolders": [{"uri": root_uri.as_str(), "name": name}],
            "capabilities": {
                "textDocument": {
                    "synchronization": {"dynamicRegistration": false},
                    "publishDiagnostics": {"relatedInformation": false},
                    "hover": {"contentFormat": ["plaintext", "markdown"]},
                    "definition": {"linkSupport": false},
                    "references": {},
                    "documentSymbol": {"hierarchicalDocumentSymbolSupport": true}
                },
                // Not `workspaceFolders`: a client that offers it is
                // expected to answer for them, and pyright waits for that
                // before it reads a file.
                "workspace": {"configuration": true},
                // Asked for so that `settled` can wait for a server still
                // loading its project, whose answers until then are partial.
                "experimental": {"serverStatusNotification": true}
            },
            "clientInfo": {"name": "chock", "version": env!("CARGO_PKG_VERSION")}
        });
        server.request("initialize", params).await?;
        server.notify("initialized", json!({})).await?;
        Ok(server)
    }

    /// Waits, within the timeout, until a server that reports its status
    /// says it is quiescent: its project loaded, its answers whole. A server
    /// that has reported no status by the answer to a request sent after
    /// `initialized` reports none, and is taken as settled.
    pub async fn settled(&self) -> Result<(), LspError> {
        if self.quiescent.borrow().is_none() && !self.pinged.swap(true, Ordering::Relaxed) {
            // A server answers in order, so a status said on `initialized`
            // comes before this answer; an unknown method is refused at once.
            match self.request("$/chock/ping", Value::Null).await {
                Ok(_) | Err(LspError::Refused { .. }) => {}
                Err(e) => return Err(e),
            }
        }
        let mut quiescent = self.quiescent.clone();
        let mut ended = self.ended.clone();
        let waited = tokio::time::timeout(self.timeout, async {
            loop {
                if let Some(why) = self.ended() {
                    return Err(LspError::Ended(why));
                }
                if *quiescent.borrow_and_update() != Some(false) {
                    return Ok(());
                }
                tokio::select! {
                    changed = quiescent.changed() => if changed.is_err() {
                        return Err(LspError::Ended(self.ended().unwrap_or_else(|| "its output closed".into())));
                    },
                    _ = ended.changed() => {}
                }
            }
        })
        .await;
        waited.unwrap_or(Err(LspError::Loading {
            after: self.timeout,
        }))
    }

    fn text_hash(&self, text: &str) -> u64 {
        use std::hash::BuildHasher;
        self.text_key.hash_one(text)
    }

    /// Why the server ended, once it has.
    pub fn ended(&self) -> Option<String> {
        self.ended.borrow().clone()
    }

    /// Tells the server what `path` holds now (`didOpen` the first time,
    /// `didChange` with the whole text after, nothing when the text is what
    /// it was last told); answers the version it is.
    pub async fn sync(&self, path: &Path, language: &str, text: &str) -> Result<i32, LspError> {
        let uri = file_uri(path)?;
        let text_now = self.text_hash(text);
        let version = {
            let mut synced = self.synced.lock().unwrap_or_else(PoisonError::into_inner);
            let last = synced.get(uri.as_str()).copied();
            if let Some(last) = last.filter(|l| l.text == text_now) {
                return Ok(last.version);
            }
            let next = last.map_or(1, |l| l.version + 1);
            synced.insert(
                uri.as_str().to_owned(),
                Synced {
                    version: next,
                    text: text_now,
                },
            );
            next
        };
        if version == 1 {
            self.notify(
                "textDocument/didOpen",
                json!({"textDocument": {"uri": uri.as_str(), "languageId": language, "version": version, "text": text}}),
            )
            .await?;
        } else {
            self.notify(
                "textDocument/didChange",
                json!({"textDocument": {"uri": uri.as_str(), "version": version}, "contentChanges": [{"text": text}]}),
            )
            .await?;
        }
        Ok(version)
    }

    /// Tells the server what `path` holds and waits, within the timeout,
    /// for the diagnostics it publishes for that text next (a publish for
    /// an older version, which a server may still send, is passed over).
    /// A text the server was last told and has published for is answered
    /// from that publish: told again, it is no change, and a server
    /// publishes nothing new for it.
    pub async fn diagnostics(
        &self,
        path: &Path,
        language: &str,
        text: &str,
    ) -> Result<Vec<Diagnostic>, LspError> {
        let uri = file_uri(path)?;
        let (seen, published) = self.published_for(uri.as_str());
        let last = self
            .synced
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(uri.as_str())
            .copied();
        if let Some(last) = last.filter(|l| l.text == self.text_hash(text))
            && seen > 0
            && published.is_none_or(|v| v >= last.version)
        {
            return Ok(self.diagnostics_published(uri.as_str()));
        }
        let mut tell = self.published_tell.clone();
        let version = self.sync(path, language, text).await?;
        let waited = tokio::time::timeout(self.timeout, async {
            loop {
                let (generation, published) = self.published_for(uri.as_str());
                if generation > seen && published.is_none_or(|v| v >= version) {
                    return Ok(());
                }
                if let Some(why) = self.ended() {
                    return Err(LspError::Ended(why));
                }
                let mut ended = self.ended.clone();
                tokio::select! {
                    changed = tell.changed() => if changed.is_err() {
                        return Err(LspError::Ended(self.ended().unwrap_or_else(|| "its output closed".into())));
                    },
                    _ = ended.changed() => {}
                }
            }
        })
        .await;
        match waited {
            Ok(Ok(())) => {}
            Ok(Err(e)) => return Err(e),
            Err(_) => {
                return Err(LspError::Timeout {
                    method: "textDocument/publishDiagnostics".into(),
                    after: self.timeout,
                });
            }
        }
        Ok(self.diagnostics_published(uri.as_str()))
    }

    /// The diagnostics last published for `uri`.
    fn diagnostics_published(&self, uri: &str) -> Vec<Diagnostic> {
        self.published
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(uri)
            .map(|p| p.diagnostics.clone())
            .unwrap_or_default()
    }

    /// Where the symbol at `place` is defined.
    pub async fn definition(&self, place: &Place) -> Result<Vec<Place>, LspError> {
        let method = "textDocument/definition";
        let answer = self.request(method, position_params(place)?).await?;
        let read: Option<GotoDefinitionResponse> = from_answer(method, answer)?;
        Ok(match read {
            None => Vec::new(),
            Some(GotoDefinitionResponse::Scalar(l)) => places(vec![l]),
            Some(GotoDefinitionResponse::Array(ls)) => places(ls),
            Some(GotoDefinitionResponse::Link(links)) => links
                .into_iter()
                .filter_map(|l| place_of(&l.target_uri, l.target_selection_range.start))
                .collect(),
        })
    }

    /// Every reference to the symbol at `place`, its declaration included.
    pub async fn references(&self, place: &Place) -> Result<Vec<Place>, LspError> {
        let method = "textDocument/references";
        let mut params = position_params(place)?;
        params["context"] = json!({"includeDeclaration": true});
        let answer = self.request(method, params).await?;
        let read: Option<Vec<Location>> = from_answer(method, answer)?;
        Ok(places(read.unwrap_or_default()))
    }

    /// What the server says of the symbol at `place`, as text.
    pub async fn hover(&self, place: &Place) -> Result<Option<String>, LspError> {
        let method = "textDocument/hover";
        let answer = self.request(method, position_params(place)?).await?;
        let read: Option<Hover> = from_answer(method, answer)?;
        Ok(read.map(|h| match h.contents {
            HoverContents::Scalar(m) => marked(m),
            HoverContents::Array(ms) => ms.into_iter().map(marked).collect::<Vec<_>>().join("\n"),
            HoverContents::Markup(m) => m.value,
        }))
    }

    /// The outline of `path`: every symbol, with its depth.
    pub async fn symbols(&self, path: &Path) -> Result<Vec<Symbol>, LspError> {
        let method = "textDocument/documentSymbol";
        let uri = file_uri(path)?;
        let answer = self
            .request(method, json!({"textDocument": {"uri": uri.as_str()}}))
            .await?;
        let read: Option<DocumentSymbolResponse> = from_answer(method, answer)?;
        let mut out = Vec::new();
        match read {
            None => {}
            Some(DocumentSymbolResponse::Flat(flat)) => {
                for s in flat {
                    out.push(Symbol {
                        name: s.name,
                        kind: kind_name(s.kind),
                        line: s.location.range.start.line,
                        depth: 0,
                    });
                }
            }
            Some(DocumentSymbolResponse::Nested(nested)) => {
                let mut stack: Vec<(lsp_types::DocumentSymbol, usize)> =
                    nested.into_iter().rev().map(|s| (s, 0)).collect();
                while let Some((s, depth)) = stack.pop() {
                    out.push(Symbol {
                        name: s.name,
                        kind: kind_name(s.kind),
                        line: s.selection_range.start.line,
                        depth,
                    });
                    for child in s.children.unwrap_or_default().into_iter().rev() {
                        stack.push((child, depth + 1));
                    }
                }
            }
        }
        Ok(out)
    }

    /// How many times diagnostics were published for `uri`, and for which
    /// version the last were.
    fn published_for(&self, uri: &str) -> (u64, Option<i32>) {
        let published = self
            .published
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        published
            .get(uri)
            .map_or((0, None), |p| (p.generation, p.version))
    }

    /// Sends a request and waits, within the timeout, for its answer.
    pub async fn request(&self, method: &str, params: Value) -> Result<Value, LspError> {
        if let Some(why) = self.ended() {
            return Err(LspError::Ended(why));
        }
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (tell, answer) = oneshot::channel();
        self.pending
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(id, tell);
        let message = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        let sent = tokio::time::timeout(self.timeout, write_message(&self.writer, &message)).await;
        let answered = match sent {
            Ok(Ok(())) => tokio::time::timeout(self.timeout, answer).await,
            Ok(Err(why)) => {
                self.forget(id);
                return Err(LspError::Ended(why.to_string()));
            }
            Err(_) => {
                self.forget(id);
                return Err(LspError::Timeout {
                    method: method.into(),
                    after: self.timeout,
                });
            }
        };
        match answered {
            Ok(Ok(Ok(value))) => Ok(value),
            Ok(Ok(Err(LspError::Refused { message, .. }))) => Err(LspError::Refused {
                method: method.into(),
                message,
            }),
            Ok(Ok(Err(e))) => Err(e),
            Ok(Err(_)) => Err(LspError::Ended(
                self.ended().unwrap_or_else(|| "its output closed".into()),
            )),
            Err(_) => {
                self.forget(id);
                // The server may still be working: say so, so it can stop.
                let cancel =
                    json!({"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": id}});
                let _ = tokio::time::timeout(
                    Duration::from_millis(100),
                    write_message(&self.writer, &cancel),
                )
                .await;
                Err(LspError::Timeout {
                    method: method.into(),
                    after: self.timeout,
                })
            }
        }
    }

    fn forget(&self, id: i64) {
        self.pending
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&id);
    }

    async fn notify(&self, method: &str, params: Value) -> Result<(), LspError> {
        let message = json!({"jsonrpc": "2.0", "method": method, "params": params});
        match tokio::time::timeout(self.timeout, write_message(&self.writer, &message)).await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(why)) => Err(LspError::Ended(why.to_string())),
            Err(_) => Err(LspError::Timeout {
                method: method.into(),
                after: self.timeout,
            }),
        }
    }
}

/// `file:///…` for an absolute path, every byte outside the unreserved
/// set and `/` percent-encoded.
pub fn file_uri(path: &Path) -> Result<Uri, LspError> {
    use std::os::unix::ffi::OsStrExt;
    if !path.is_absolute() {
        return Err(LspError::Path(path.to_owned()));
    }
    let mut uri = String::from("file://");
    for &b in path.as_os_str().as_bytes() {
        if b.is_ascii_alphanumeric() || b"/-._~".contains(&b) {
            uri.push(char::from(b));
        } else {
            uri.push_str(&format!("%{b:02X}"));
        }
    }
    Uri::from_str(&uri).map_err(|_| LspError::Path(path.to_owned()))
}

/// The path a `file:` URI names; `None` for another scheme.
pub fn uri_path(uri: &Uri) -> Option<PathBuf> {
    use std::os::unix::ffi::OsStringExt;
    let rest = uri.as_str().strip_prefix("file://")?;
    let bytes = rest.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    Some(PathBuf::from(std::ffi::OsString::from_vec(out)))
}

fn position_params(place: &Place) -> Result<Value, LspError> {
    let uri = file_uri(&place.path)?;
    Ok(json!({
        "textDocument": {"uri": uri.as_str()},
        "position": Position { line: place.line, character: place.character }
    }))
}

fn from_answer<T: serde::de::DeserializeOwned>(method: &str, answer: Value) -> Result<T, LspError> {
    serde_json::from_value(answer).map_err(|e| LspError::Answer {
        method: method.into(),
        why: e.to_string(),
    })
}

fn place_of(uri: &Uri, start: Position) -> Option<Place> {
    Some(Place {
        path: uri_path(uri)?,
        line: start.line,
        character: start.character,
    })
}

fn places(locations: Vec<Location>) -> Vec<Place> {
    locations
        .into_iter()
        .filter_map(|l| place_of(&l.uri, l.range.start))
        .collect()
}

fn marked(m: MarkedString) -> String {
    match m {
        MarkedString::String(s) => s,
        MarkedString::LanguageString(l) => l.value,
    }
}

fn kind_name(kind: lsp_types::SymbolKind) -> String {
    // SymbolKind prints as `SymbolKind(12)`; its constants have names.
    let names = [
        "file",
        "module",
        "namespace",
        "package",
        "class",
        "method",
        "property",
        "field",
        "constructor",
        "enum",
        "interface",
        "function",
        "variable",
        "constant",
        "string",
        "number",
        "boolean",
        "array",
        "object",
        "key",
        "null",
        "enum member",
        "struct",
        "event",
        "operator",
        "type parameter",
    ];
    let index = serde_json::to_value(kind)
        .ok()
        .and_then(|v| v.as_u64())
        .and_then(|n| usize::try_from(n).ok());
    index
        .and_then(|n| n.checked_sub(1))
        .and_then(|n| names.get(n))
        .map_or_else(|| "symbol".into(), |n| (*n).to_owned())
}

async fn write_message(writer: &Writer, message: &Value) -> Result<(), WireError> {
    tracing::trace!(target: "chock_lsp", "to the server: {message}");
    let body = serde_json::to_vec(message).map_err(WireError::Encode)?;
    let mut writer = writer.lock().await;
    let header = format!("Content-Length: {}\r\n\r\n", body.len());
    writer
        .write_all(header.as_bytes())
        .await
        .map_err(WireError::InputClosed)?;
    writer
        .write_all(&body)
        .await
        .map_err(WireError::InputClosed)?;
    writer.flush().await.map_err(WireError::InputClosed)
}

/// Reads one framed message: `Content-Length` headers, a blank line, the body.
async fn read_message(
    reader: &mut BufReader<impl AsyncRead + Unpin>,
) -> Result<Option<Value>, WireError> {
    let mut length = None;
    let mut first = true;
    loop {
        let mut line = Vec::new();
        let read = (&mut *reader)
            .take(MAX_HEADER_BYTES as u64)
            .read_until(b'\n', &mut line)
            .await
            .map_err(WireError::Unreadable)?;
        if read == 0 {
            return if first {
                Ok(None)
            } else {
                Err(WireError::EndedInHeader)
            };
        }
        first = false;
        if !line.ends_with(b"\n") {
            return Err(WireError::LongHeader);
        }
        let line = String::from_utf8_lossy(&line);
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some((name, value)) = line.split_once(':')
            && name.trim().eq_ignore_ascii_case("content-length")
        {
            let parsed = value.trim().parse::<usize>();
            length = Some(parsed.map_err(|_| WireError::BadLength(line.to_owned()))?);
        }
    }
    let length = length.ok_or(WireError::NoLength)?;
    if length > MAX_MESSAGE_BYTES {
        return Err(WireError::TooLong(length));
    }
    let mut body = vec![0; length];
    reader
        .read_exact(&mut body)
        .await
        .map_err(WireError::EndedInMessage)?;
    serde_json::from_slice(&body)
        .map(Some)
        .map_err(WireError::NotJson)
}

/// Reads the server's output to its end: answers go to their requests,
/// published diagnostics are kept, and the server's own questions are
/// answered (a configuration with nothing set; every other one refused).
async fn read_messages(
    mut reader: BufReader<impl AsyncRead + Unpin>,
    pending: Pending,
    published: Arc<Mutex<HashMap<String, Published>>>,
    published_tell: watch::Sender<u64>,
    quiescent: watch::Sender<Option<bool>>,
    writer: Writer,
    ended: watch::Sender<Option<String>>,
) {
    let why = loop {
        let message = match read_message(&mut reader).await {
            Ok(Some(message)) => message,
            Ok(None) => break "its output closed".to_owned(),
            Err(why) => break why.to_string(),
        };
        tracing::trace!(target: "chock_lsp", "from the server: {message}");
        let method = message.get("method").and_then(Value::as_str);
        let id = message.get("id").cloned();
        match (method, id) {
            (Some(method), Some(id)) => {
                let answer = match method {
                    "workspace/configuration" => {
                        let items = message["params"]["items"].as_array().map_or(0, Vec::len);
                        json!({"jsonrpc": "2.0", "id": id, "result": vec![Value::Null; items]})
                    }
                    "client/registerCapability"
                    | "client/unregisterCapability"
                    | "window/workDoneProgress/create"
                    | "workspace/workspaceFolders" => {
                        json!({"jsonrpc": "2.0", "id": id, "result": Value::Null})
                    }
                    // "Ask again for what you showed": this client keeps
                    // nothing to refresh, and a refusal makes some servers
                    // (rust-analyzer) stop publishing diagnostics at all.
                    refresh
                        if refresh.starts_with("workspace/") && refresh.ends_with("/refresh") =>
                    {
                        json!({"jsonrpc": "2.0", "id": id, "result": Value::Null})
                    }
                    _ => {
                        json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": "not offered by this client"}})
                    }
                };
                // Written on a task of its own, so a server that reads
                // nothing never stalls its own output being read.
                let writer = writer.clone();
                tokio::spawn(async move {
                    let _ = tokio::time::timeout(
                        Duration::from_secs(5),
                        write_message(&writer, &answer),
                    )
                    .await;
                });
            }
            (Some("textDocument/publishDiagnostics"), None) => {
                let params = &message["params"];
                let (Some(uri), Ok(diagnostics)) = (
                    params["uri"].as_str(),
                    serde_json::from_value::<Vec<Diagnostic>>(params["diagnostics"].clone()),
                ) else {
                    continue;
                };
                {
                    let mut published = published.lock().unwrap_or_else(PoisonError::into_inner);
                    let entry = published.entry(canonical_uri(uri)).or_default();
                    entry.generation += 1;
                    entry.version = params["version"]
                        .as_i64()
                        .and_then(|v| i32::try_from(v).ok());
                    entry.diagnostics = diagnostics;
                }
                published_tell.send_modify(|n| *n += 1);
            }
            (Some("experimental/serverStatus"), None) => {
                let said = message["params"]["quiescent"].as_bool();
                quiescent.send_replace(said.or(Some(true)));
            }
            (Some(_), None) => {}
            (None, Some(id)) => {
                let Some(id) = id.as_i64() else { continue };
                let tell = pending
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .remove(&id);
                let Some(tell) = tell else { continue };
                let answer = match message.get("error") {
                    Some(error) => Err(LspError::Refused {
                        method: String::new(),
                        message: error["message"].as_str().unwrap_or("no message").to_owned(),
                    }),
                    None => Ok(message.get("result").cloned().unwrap_or(Value::Null)),
                };
                let _ = tell.send(answer);
            }
            (None, None) => {}
        }
    };
    tracing::debug!("a language server ended: {why}");
    ended.send_replace(Some(why.clone()));
    // Every request still waiting fails now, with why.
    let waiting: Vec<_> = pending
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .drain()
        .collect();
    for (_, tell) in waiting {
        let _ = tell.send(Err(LspError::Ended(why.clone())));
    }
    published_tell.send_modify(|n| *n += 1);
}

/// A URI as this client spells it, whichever way the server encoded it.
fn canonical_uri(uri: &str) -> String {
    Uri::from_str(uri)
        .ok()
        .and_then(|u| uri_path(&u))
        .and_then(|p| file_uri(&p).ok())
        .map_or_else(|| uri.to_owned(), |u| u.as_str().to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_path_is_a_file_uri_and_back() {
        let path = Path::new("/tmp/a dir/ü%.py");
        let uri = file_uri(path).unwrap();
        assert_eq!(uri.as_str(), "file:///tmp/a%20dir/%C3%BC%25.py");
        assert_eq!(uri_path(&uri).as_deref(), Some(path));
        assert!(file_uri(Path::new("relative.py")).is_err());
    }

    #[test]
    fn a_server_spelling_its_uris_otherwise_is_read_as_ours() {
        assert_eq!(
            canonical_uri("file:///tmp/a%20b/%c3%bc.py"),
            "file:///tmp/a%20b/%C3%BC.py"
        );
    }

    /// A scripted server over in-memory pipes: it answers `initialize`,
    /// and to every change of a document publishes diagnostics for the
    /// version before it first (late, as a busy server may), then for the
    /// version it was told.
    async fn scripted(reader: tokio::io::DuplexStream, writer: tokio::io::DuplexStream) {
        let mut reader = BufReader::new(reader);
        let writer: Writer = Arc::new(tokio::sync::Mutex::new(Box::new(writer)));
        while let Ok(Some(message)) = read_message(&mut reader).await {
            let params = &message["params"];
            match message["method"].as_str() {
                Some("initialize") => {
                    let answer = json!({"jsonrpc": "2.0", "id": message["id"], "result": {"capabilities": {}}});
                    write_message(&writer, &answer).await.unwrap();
                }
                Some("textDocument/didOpen" | "textDocument/didChange") => {
                    let uri = &params["textDocument"]["uri"];
                    let version = params["textDocument"]["version"].as_i64().unwrap();
                    for (v, said) in [(version - 1, "stale"), (version, "fresh")] {
                        let publish = json!({"jsonrpc": "2.0", "method": "textDocument/publishDiagnostics", "params": {
                            "uri": uri, "version": v,
                            "diagnostics": [{"range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 1}}, "message": said}]
                        }});
                        write_message(&writer, &publish).await.unwrap();
                        // The fresh one comes after the client has seen the stale.
                        tokio::time::sleep(Duration::from_millis(50)).await;
                    }
                }
                _ => {}
            }
        }
    }

    #[tokio::test]
    async fn diagnostics_for_an_older_version_are_passed_over() {
        let (ours, theirs_in) = tokio::io::duplex(1 << 16);
        let (theirs_out, ours_in) = tokio::io::duplex(1 << 16);
        tokio::spawn(scripted(theirs_in, theirs_out));
        let server = Server::start(ours_in, ours, Path::new("/p"), Duration::from_secs(5))
            .await
            .unwrap();
        let file = Path::new("/p/a.py");
        for text in ["a", "b", "c"] {
            let found = server.diagnostics(file, "python", text).await.unwrap();
            assert_eq!(found.len(), 1);
            assert_eq!(found[0].message, "fresh", "{text}");
        }
    }

    /// A scripted server that says it is loading on `initialized`, refuses
    /// every other request as unknown, and says it is quiescent only after
    /// `loading_for` (never, if `None`); or, with `reports` false, says no
    /// status at all.
    async fn loading(
        reader: tokio::io::DuplexStream,
        writer: tokio::io::DuplexStream,
        reports: bool,
        loading_for: Option<Duration>,
    ) {
        let mut reader = BufReader::new(reader);
        let writer: Writer = Arc::new(tokio::sync::Mutex::new(Box::new(writer)));
        let status = |quiescent: bool| json!({"jsonrpc": "2.0", "method": "experimental/serverStatus", "params": {"health": "ok", "quiescent": quiescent}});
        while let Ok(Some(message)) = read_message(&mut reader).await {
            match (message["method"].as_str(), reports) {
                (Some("initialize"), _) => {
                    let answer = json!({"jsonrpc": "2.0", "id": message["id"], "result": {"capabilities": {}}});
                    write_message(&writer, &answer).await.unwrap();
                }
                (Some("initialized"), true) => {
                    write_message(&writer, &status(false)).await.unwrap();
                    if let Some(after) = loading_for {
                        let writer = writer.clone();
                        tokio::spawn(async move {
                            tokio::time::sleep(after).await;
                            write_message(&writer, &status(true)).await.unwrap();
                        });
                    }
                }
                (Some(_), _) if !message["id"].is_null() => {
                    let refusal = json!({"jsonrpc": "2.0", "id": message["id"], "error": {"code": -32601, "message": "unknown"}});
                    write_message(&writer, &refusal).await.unwrap();
                }
                _ => {}
            }
        }
    }

    async fn loading_server(reports: bool, loading_for: Option<Duration>) -> Server {
        let (ours, theirs_in) = tokio::io::duplex(1 << 16);
        let (theirs_out, ours_in) = tokio::io::duplex(1 << 16);
        tokio::spawn(loading(theirs_in, theirs_out, reports, loading_for));
        Server::start(ours_in, ours, Path::new("/p"), Duration::from_millis(800))
            .await
            .unwrap()
    }

    #[tokio::test]
    async fn settled_waits_for_a_loading_server_to_say_it_is_quiescent() {
        let server = loading_server(true, Some(Duration::from_millis(300))).await;
        let began = std::time::Instant::now();
        server.settled().await.unwrap();
        assert!(
            began.elapsed() >= Duration::from_millis(300),
            "{:?}",
            began.elapsed()
        );
        assert_eq!(*server.quiescent.borrow(), Some(true));
    }

    #[tokio::test]
    async fn a_server_that_reports_no_status_is_settled_after_one_answer() {
        let server = loading_server(false, None).await;
        server.settled().await.unwrap();
        assert!(server.pinged.load(Ordering::Relaxed));
        assert_eq!(*server.quiescent.borrow(), None);
        server.settled().await.unwrap();
    }

    #[tokio::test]
    async fn a_server_loading_past_the_bound_is_not_settled() {
        let server = loading_server(true, None).await;
        let refused = server.settled().await.unwrap_err();
        assert!(matches!(&refused, LspError::Loading { .. }), "{refused}");
    }

    /// A server that answers `initialize` and then nothing at all.
    async fn mute(reader: tokio::io::DuplexStream, writer: tokio::io::DuplexStream) {
        let mut reader = BufReader::new(reader);
        let writer: Writer = Arc::new(tokio::sync::Mutex::new(Box::new(writer)));
        while let Ok(Some(message)) = read_message(&mut reader).await {
            if message["method"] == "initialize" {
                let answer =
                    json!({"jsonrpc": "2.0", "id": message["id"], "result": {"capabilities": {}}});
                write_message(&writer, &answer).await.unwrap();
            }
        }
    }

    #[tokio::test]
    async fn a_server_that_never_answers_is_not_taken_as_loading() {
        let (ours, theirs_in) = tokio::io::duplex(1 << 16);
        let (theirs_out, ours_in) = tokio::io::duplex(1 << 16);
        tokio::spawn(mute(theirs_in, theirs_out));
        let server = Server::start(ours_in, ours, Path::new("/p"), Duration::from_millis(300))
            .await
            .unwrap();
        let refused = server.settled().await.unwrap_err();
        assert!(
            matches!(&refused, LspError::Timeout { method, .. } if method == "$/chock/ping"),
            "{refused}"
        );
    }

    #[tokio::test]
    async fn the_same_text_asked_again_is_answered_from_its_publish() {
        let (ours, theirs_in) = tokio::io::duplex(1 << 16);
        let (theirs_out, ours_in) = tokio::io::duplex(1 << 16);
        tokio::spawn(scripted(theirs_in, theirs_out));
        // The scripted server publishes only on a change, as rust-analyzer
        // does: waiting for a publish for the same text would time out.
        let server = Server::start(ours_in, ours, Path::new("/p"), Duration::from_secs(2))
            .await
            .unwrap();
        let file = Path::new("/p/a.py");
        let first = server.diagnostics(file, "python", "a").await.unwrap();
        let began = std::time::Instant::now();
        let again = server.diagnostics(file, "python", "a").await.unwrap();
        assert!(
            began.elapsed() < Duration::from_secs(1),
            "{:?}",
            began.elapsed()
        );
        assert_eq!(first, again);
        assert_eq!(again[0].message, "fresh");
        let changed = server.diagnostics(file, "python", "b").await.unwrap();
        assert_eq!(changed[0].message, "fresh");
    }

    #[tokio::test]
    async fn an_oversized_or_broken_frame_is_refused() {
        async fn refusal(bytes: &[u8]) -> WireError {
            read_message(&mut BufReader::new(bytes)).await.unwrap_err()
        }
        let big = format!("Content-Length: {}\r\n\r\n", MAX_MESSAGE_BYTES + 1);
        let too_long = refusal(big.as_bytes()).await;
        assert!(matches!(too_long, WireError::TooLong(_)), "{too_long}");
        assert!(too_long.to_string().contains("over the"), "{too_long}");
        let no_length = refusal(b"Content-Type: x\r\n\r\n{}").await;
        assert!(matches!(no_length, WireError::NoLength), "{no_length}");
        let long = vec![b'a'; MAX_HEADER_BYTES + 10];
        let long_header = refusal(&long).await;
        assert!(
            matches!(long_header, WireError::LongHeader),
            "{long_header}"
        );
        let cut = refusal(b"Content-Length: 10\r\n\r\n{}").await;
        assert!(matches!(cut, WireError::EndedInMessage(_)), "{cut}");
        assert!(cut.to_string().contains("inside a message"), "{cut}");
    }
}
