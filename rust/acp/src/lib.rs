//! `chock acp`: Chock's own agent session ([`chock_agent::Session`]) served
//! to an editor over the Agent Client Protocol (<https://agentclientprotocol.com>,
//! version 1) on stdio. The editor is the client: it starts a session in
//! a project (`session/new`: the model decided by `model.select`, the
//! session workspace made), sends prompts (`session/prompt`: the loop
//! runs, its text, tool calls and their answers streamed back as
//! `session/update`), cancels a turn (`session/cancel`), and answers the
//! gate's questions (`session/request_permission`). When its input ends,
//! each session's work goes through the one `workspace.apply` question, as
//! at the end of `chock run`. See `docs/acp.md`.
//!
//! The messages are typed in [`schema`] as the protocol's schema spells
//! them; the JSON-RPC lines around them are [`rpc`]'s, one blocking reader
//! and a thread per running request, since the session and the gate's
//! asker are blocking.

#![forbid(unsafe_code)]

mod permission;
mod rpc;
mod schema;
mod show;

use std::collections::HashMap;
use std::io::{BufRead, Write};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::thread::JoinHandle;

use chock_agent::{CancellationToken, Closed, How, Resume, RunOptions, Session};
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::rpc::RequestId;
use crate::schema::{
    AgentCapabilities, CancelNotification, ContentBlock, Error, Implementation, InitializeRequest,
    InitializeResponse, LoadSessionRequest, LoadSessionResponse, NewSessionRequest,
    NewSessionResponse, PROTOCOL_VERSION, PromptCapabilities, PromptRequest, PromptResponse,
    StopReason,
};

pub use rpc::MAX_LINE_BYTES;

/// How one session ended when the client went away.
#[derive(Debug)]
pub struct SessionEnd {
    /// The id the client knew it by.
    pub id: String,
    /// Its project.
    pub project: PathBuf,
    /// What became of its workspace's work, and of its scratchpad.
    pub closed: Closed,
}

/// Serves ACP on `input` and `output` until the input ends; then every
/// session's work goes through `workspace.apply` (its client gone, only a
/// rule or `chock approve` can answer), and how each ended is returned.
/// `template` is every session's options; its project is the one the
/// client names in `session/new`.
pub fn serve(
    template: RunOptions,
    input: &mut dyn BufRead,
    output: Box<dyn Write + Send>,
) -> Vec<SessionEnd> {
    let server = Arc::new(Server {
        peer: Arc::new(rpc::Peer::new(output)),
        template,
        sessions: Mutex::new(HashMap::new()),
        made: Mutex::new(Vec::new()),
        workers: Mutex::new(Vec::new()),
    });
    rpc::read(input, &server.peer, &mut |message| server.handle(message));
    server.peer.close();
    server.end()
}

/// What every request handler shares.
struct Server {
    peer: Arc<rpc::Peer>,
    template: RunOptions,
    sessions: Mutex<HashMap<String, Arc<Entry>>>,
    /// The sessions in the order they were made, to end them in it.
    made: Mutex<Vec<Arc<Entry>>>,
    workers: Mutex<Vec<JoinHandle<()>>>,
}

/// One session the client made.
struct Entry {
    id: String,
    project: PathBuf,
    /// `None` once it ended.
    session: Mutex<Option<Session>>,
    turn: Arc<Turn>,
}

/// The prompt running in a session, as the asker and the updates see it.
pub(crate) struct Turn {
    /// Set while a prompt runs: a second one is refused.
    busy: AtomicBool,
    /// The running prompt's token (`session/cancel` cancels it).
    cancel: Mutex<CancellationToken>,
    /// The tool call going through the gate: its id and title, which a
    /// permission question names.
    call: Mutex<Option<(String, String)>>,
}

impl Turn {
    fn new() -> Turn {
        Turn {
            busy: AtomicBool::new(false),
            cancel: Mutex::new(CancellationToken::new()),
            call: Mutex::new(None),
        }
    }

    pub(crate) fn cancelled(&self) -> bool {
        lock(&self.cancel).is_cancelled()
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The params of `method` as its type, or the error that says why not.
fn params<T: DeserializeOwned>(method: &str, params: Value) -> Result<T, Error> {
    serde_json::from_value(params)
        .map_err(|e| Error::invalid_params(format!("the params of {method} are not ACP's: {e}")))
}

impl Server {
    fn handle(self: &Arc<Self>, message: rpc::Incoming) {
        match message {
            rpc::Incoming::Request { id, method, params } => self.request(id, &method, params),
            rpc::Incoming::Notification { method, params } => {
                // Other notifications (extensions among them) ask nothing.
                if method == "session/cancel"
                    && let Ok(cancel) = self::params::<CancelNotification>(&method, params)
                    && let Some(entry) = lock(&self.sessions).get(&cancel.session_id)
                {
                    lock(&entry.turn.cancel).cancel();
                }
            }
            rpc::Incoming::Response { id, result } => self.peer.answered(&id, result),
        }
    }

    fn request(self: &Arc<Self>, id: RequestId, method: &str, value: Value) {
        match method {
            "initialize" => {
                let answer = params::<InitializeRequest>(method, value).map(|_| initialized());
                self.peer.respond(id, answer);
            }
            "authenticate" => self.peer.reply_error(
                id,
                Error::invalid_params(
                    "chock acp offers no authentication methods: a provider's key is configured in config.zon or stored by `chock login <instance>`",
                ),
            ),
            "session/new" => match params::<NewSessionRequest>(method, value) {
                Ok(request) => self.work(move |server| {
                    let answer = server.new_session(request);
                    server.peer.respond(id, answer);
                }),
                Err(error) => self.peer.reply_error(id, error),
            },
            "session/load" => match params::<LoadSessionRequest>(method, value) {
                Ok(request) => self.work(move |server| {
                    let answer = server.load_session(request);
                    server.peer.respond(id, answer);
                }),
                Err(error) => self.peer.reply_error(id, error),
            },
            "session/prompt" => match params::<PromptRequest>(method, value) {
                Ok(request) => self.prompt(id, request),
                Err(error) => self.peer.reply_error(id, error),
            },
            _ => self.peer.reply_error(
                id,
                Error::method_not_found(format!(
                    "chock acp does not answer {method}: it answers initialize, session/new, session/load, session/prompt and session/cancel"
                )),
            ),
        }
    }

    /// Runs `job` on a thread of its own, joined before the sessions end.
    fn work(self: &Arc<Self>, job: impl FnOnce(&Server) + Send + 'static) {
        let server = self.clone();
        let worker = std::thread::spawn(move || job(&server));
        let mut workers = lock(&self.workers);
        workers.retain(|w| !w.is_finished());
        workers.push(worker);
    }

    fn new_session(&self, request: NewSessionRequest) -> Result<NewSessionResponse, Error> {
        let entry = self.start(request.cwd, None)?;
        Ok(NewSessionResponse {
            session_id: entry.id.clone(),
        })
    }

    /// Takes up a session `chock run` or `chock acp` wrote, as `chock run
    /// --session` does (its log verified, its promises folded back), and
    /// replays its conversation to the client before answering.
    fn load_session(&self, request: LoadSessionRequest) -> Result<LoadSessionResponse, Error> {
        let entry = self.start(request.cwd, Some(Resume::Id(request.session_id)))?;
        let held = lock(&entry.session);
        if let Some(session) = held.as_ref() {
            let mut updates = self.updates(&entry);
            show::replay(session.conversation(), &mut updates);
        }
        Ok(LoadSessionResponse {})
    }

    /// Starts a session in `cwd`, new or resumed; its id is its log's.
    fn start(&self, cwd: PathBuf, resume: Option<Resume>) -> Result<Arc<Entry>, Error> {
        if !cwd.is_absolute() {
            return Err(Error::invalid_params(format!(
                "cwd {} is not an absolute path",
                cwd.display()
            )));
        }
        let turn = Arc::new(Turn::new());
        let id = Arc::new(OnceLock::new());
        let asker = permission::Permission {
            peer: self.peer.clone(),
            session: id.clone(),
            turn: turn.clone(),
        };
        let options = RunOptions {
            project: Some(cwd.clone()),
            resume,
            ..self.template.clone()
        };
        let session = Session::start(options, Arc::new(asker))
            .map_err(|e| Error::failed(format!("the session could not start: {e}")))?;
        let id = id.get_or_init(|| session.id().to_owned()).clone();
        let entry = Arc::new(Entry {
            id: id.clone(),
            project: cwd,
            session: Mutex::new(Some(session)),
            turn,
        });
        lock(&self.sessions).insert(id, entry.clone());
        lock(&self.made).push(entry.clone());
        Ok(entry)
    }

    /// What the client is shown of `entry`'s session.
    fn updates(&self, entry: &Entry) -> show::Updates {
        show::Updates {
            peer: self.peer.clone(),
            session: entry.id.clone(),
            project: entry.project.clone(),
            turn: entry.turn.clone(),
        }
    }

    fn prompt(self: &Arc<Self>, id: RequestId, request: PromptRequest) {
        let entry = lock(&self.sessions).get(&request.session_id).cloned();
        let Some(entry) = entry else {
            return self
                .peer
                .reply_error(id, Error::session_not_found(&request.session_id));
        };
        let text = match prompt_text(&request.prompt) {
            Ok(text) => text,
            Err(error) => return self.peer.reply_error(id, error),
        };
        if entry.turn.busy.swap(true, Ordering::SeqCst) {
            return self.peer.reply_error(
                id,
                Error::invalid_request(format!(
                    "session {} is still answering a prompt: cancel it (session/cancel) or wait for its end",
                    entry.id
                )),
            );
        }
        // The token is the prompt's from now on, so a cancel read after
        // this request reaches it even before its thread starts.
        let cancel = CancellationToken::new();
        *lock(&entry.turn.cancel) = cancel.clone();
        self.work(move |server| {
            let answer = server.run_prompt(&entry, &text, &cancel);
            entry.turn.busy.store(false, Ordering::SeqCst);
            server.peer.respond(id, answer);
        });
    }

    fn run_prompt(
        &self,
        entry: &Entry,
        text: &str,
        cancel: &CancellationToken,
    ) -> Result<PromptResponse, Error> {
        let mut held = lock(&entry.session);
        let Some(session) = held.as_mut() else {
            return Err(Error::session_not_found(&entry.id));
        };
        let mut updates = self.updates(entry);
        let how = session
            .prompt(text, &mut updates, cancel)
            .map_err(|e| Error::failed(e.to_string()))?;
        Ok(PromptResponse {
            stop_reason: match how {
                How::Done => StopReason::EndTurn,
                How::MaxTurns | How::Budget | How::UnusableCalls => StopReason::MaxTurnRequests,
                How::Refusal => StopReason::Refusal,
                How::Cancelled => StopReason::Cancelled,
            },
        })
    }

    /// The client is gone: every prompt is cancelled and waited for, then
    /// each session's work is offered to `workspace.apply`.
    fn end(&self) -> Vec<SessionEnd> {
        for entry in lock(&self.made).iter() {
            lock(&entry.turn.cancel).cancel();
        }
        // Nothing reads the client any more, so no worker starts after
        // these; a session still starting finishes its start, and is
        // ended below with the others.
        let workers = std::mem::take(&mut *lock(&self.workers));
        for worker in workers {
            let _ = worker.join();
        }
        let made = std::mem::take(&mut *lock(&self.made));
        made.iter()
            .filter_map(|entry| {
                let session = lock(&entry.session).take()?;
                Some(SessionEnd {
                    id: entry.id.clone(),
                    project: entry.project.clone(),
                    closed: session.finish(true),
                })
            })
            .collect()
    }
}

/// What `initialize` answers: protocol version 1 (the one Chock speaks,
/// whatever the client asked for: a client that cannot speak it closes),
/// prompts of text, links and embedded text, and no authentication (a
/// provider's key is the operator's, `chock login`).
fn initialized() -> InitializeResponse {
    InitializeResponse {
        protocol_version: PROTOCOL_VERSION,
        agent_capabilities: AgentCapabilities {
            load_session: true,
            prompt_capabilities: PromptCapabilities {
                image: false,
                audio: false,
                embedded_context: true,
            },
        },
        auth_methods: Vec::new(),
        agent_info: Implementation {
            name: "chock".into(),
            title: "Chock".into(),
            version: env!("CARGO_PKG_VERSION").into(),
        },
    }
}

/// The prompt as the text the model reads: text as it is, a link as its
/// name and address, an embedded text resource with its address; an image,
/// audio or binary resource is refused (the capabilities offer none).
fn prompt_text(blocks: &[ContentBlock]) -> Result<String, Error> {
    let mut parts = Vec::new();
    for block in blocks {
        parts.push(match block {
            ContentBlock::Text { text } => text.clone(),
            ContentBlock::ResourceLink { name, uri } => format!("[{name}]({uri})"),
            ContentBlock::Resource { resource } => match &resource.text {
                Some(text) => format!("<resource uri=\"{}\">\n{text}\n</resource>", resource.uri),
                None => return Err(unread("a binary resource")),
            },
            ContentBlock::Image {} => return Err(unread("an image")),
            ContentBlock::Audio {} => return Err(unread("audio")),
            ContentBlock::Unknown => {
                return Err(unread("a kind of content ACP version 1 does not name"));
            }
        });
    }
    if parts.iter().all(|p| p.trim().is_empty()) {
        return Err(Error::invalid_params("the prompt holds no text"));
    }
    Ok(parts.join("\n\n"))
}

fn unread(what: &str) -> Error {
    Error::invalid_params(format!(
        "chock acp reads text, links and embedded text; the prompt holds {what}"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn blocks(value: Value) -> Vec<ContentBlock> {
        serde_json::from_value(value).expect("blocks")
    }

    #[test]
    fn a_prompt_is_its_text_links_and_embedded_text() {
        let text = prompt_text(&blocks(json!([
            {"type": "text", "text": "fix this"},
            {"type": "resource_link", "name": "a.rs", "uri": "file:///p/a.rs"},
            {"type": "resource", "resource": {"uri": "file:///p/b.rs", "text": "fn main() {}"}},
        ])))
        .expect("read");
        assert_eq!(
            text,
            "fix this\n\n[a.rs](file:///p/a.rs)\n\n<resource uri=\"file:///p/b.rs\">\nfn main() {}\n</resource>"
        );
        for refused in [
            json!([{"type": "image", "data": "AA==", "mimeType": "image/png"}]),
            json!([{"type": "resource", "resource": {"uri": "file:///x", "blob": "AA=="}}]),
            json!([{"type": "hologram"}]),
            json!([{"type": "text", "text": "  "}]),
        ] {
            assert!(prompt_text(&blocks(refused.clone())).is_err(), "{refused}");
        }
    }

    #[test]
    fn initialize_answers_version_1_and_no_authentication() {
        let answer = serde_json::to_value(initialized()).expect("json");
        assert_eq!(answer["protocolVersion"], 1);
        assert_eq!(answer["authMethods"], json!([]));
        assert_eq!(answer["agentCapabilities"]["loadSession"], true);
        assert_eq!(
            answer["agentCapabilities"]["promptCapabilities"]["embeddedContext"],
            true
        );
        assert_eq!(answer["agentInfo"]["name"], "chock");
    }
}
