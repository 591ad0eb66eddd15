//! `chock approve`: a person answers the questions a running `chock mcp`
//! server waits on, from another terminal.
//!
//! Each server listens on a Unix socket of its own in the `approve` folder
//! beside the decision log (`<log dir>/approve/<pid>.sock`, folder `0700`,
//! socket `0600`). Both ends check the other's user with `SO_PEERCRED`: a
//! connection from another user is closed unanswered, and `chock approve`
//! refuses a socket that another user's process listens on.
//!
//! The protocol is one JSON object per line. The approver sends
//! `{"op":"watch"}` (then every question waiting and each new one comes as
//! `{"event":"question",...}`), `{"op":"list"}`, or
//! `{"op":"answer","id":N,"allow":true}`. A question with a `credential`
//! (a `git push` that needs a password) is answered with
//! `"credential":{"username":...,"password":...}` beside `"allow":true`;
//! the password is never sent back on any connection. A question with
//! `wants_text` (the agent's own question asking for words) is answered
//! with `"text":"..."` beside `"allow":true`. Any other question answered
//! `"allow":false` with `"text"` is refused with that text as the reason
//! the agent is told. A question that offers `scopes` (`session`,
//! `always`) takes one of them as `"scope"` beside `"allow":true`; a
//! scope it did not offer is a yes for this once. A question answered by one
//! approver, timed out, or cancelled by the client is `withdrawn` from the
//! others. A server asks through this socket only while an approver
//! watches; otherwise nobody is there and the ask is a refusal.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::os::unix::net::UnixStream as StdUnixStream;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt};
use tokio::net::{UnixListener, UnixStream};
use tokio::sync::{mpsc, oneshot};

pub use chock_gate::Scope;

use crate::ask::{Asked, Reply, Unanswered};
use crate::credential::Credential;
use crate::error::McpError;

/// What an answer carries besides yes or no: the credential a credential
/// question takes, the text of a question for text (or a no's reason),
/// and a yes's scope.
pub type Carrying = (Option<Credential>, Option<String>, Option<Scope>);

/// The desktop notification of `question` waiting (sent in the
/// background, silent where no notification service is).
fn notice(question: &Asked) -> chock_notify::Pending {
    chock_notify::Pending {
        action: question.action.clone(),
        summary: question.summary.clone(),
        answer_at: "answer it in `chock approve` or on the page `chock ui` opens".into(),
    }
}

/// The longest line either end reads.
const MAX_LINE: usize = 1 << 20;
/// How long an approver waits for a server's hello (and a `list`'s
/// answer): a socket that accepts and then says nothing (a stopped or
/// stuck process) is skipped, never waited on.
const HELLO_WAIT: Duration = Duration::from_secs(3);

/// What an approver sends.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum Request {
    /// Every waiting question now, and each new one as it comes.
    Watch,
    /// The questions waiting now, then the connection closes.
    List,
    /// The person's answer to one question (with the credential a
    /// credential question asks for).
    Answer {
        id: u64,
        allow: bool,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        credential: Option<Credential>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        text: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        scope: Option<Scope>,
    },
}

/// What a server sends.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum Event {
    /// The first line on every connection: which server this is, and the
    /// command it is (`chock mcp`, `chock run`, `chock acp`; a server that
    /// does not say is `chock mcp`).
    Hello {
        pid: u32,
        project: String,
        #[serde(default = "mcp_command")]
        command: String,
    },
    /// The answer to `watch`: from now on every question comes here.
    Watching,
    /// A question waiting for an answer.
    Question { id: u64, question: Box<Asked> },
    /// The answer sent on this connection was taken (with the scope of a
    /// yes beyond once).
    Answered {
        id: u64,
        allow: bool,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        scope: Option<Scope>,
    },
    /// A question no longer waits (answered elsewhere, timed out, cancelled).
    Withdrawn { id: u64, why: String },
    /// The answer to `list`.
    Questions { questions: Vec<Waiting> },
    /// A request that could not be read.
    Error { message: String },
}

/// One waiting question, as `list` shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Waiting {
    pub id: u64,
    pub question: Asked,
}

/// The folder every server's socket is in: `approve` beside the decision log.
pub fn socket_dir() -> Result<PathBuf, McpError> {
    Ok(chock_log::dir_from_env()?.join("approve"))
}

fn my_uid() -> u32 {
    nix::unistd::geteuid().as_raw()
}

/// Makes the folder `0700` and checks it is this user's and nobody else's.
fn prepare_dir(dir: &Path) -> Result<(), McpError> {
    let fail = |source| McpError::ApproveDir {
        path: dir.to_path_buf(),
        source,
    };
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(fail)?;
    let meta = std::fs::symlink_metadata(dir).map_err(fail)?;
    if !meta.is_dir() || meta.uid() != my_uid() {
        return Err(fail(std::io::Error::other(
            "it is not a folder owned by you",
        )));
    }
    if meta.mode() & 0o077 != 0 {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700)).map_err(fail)?;
    }
    Ok(())
}

// ---------------------------------------------------------------- server side

/// What an answer carries beside yes or no: what its question asked for.
enum Carried {
    Nothing,
    Credential(Credential),
    Text(String),
}

struct Pending {
    question: Asked,
    reply: oneshot::Sender<(Reply, Carried)>,
}

#[derive(Default)]
struct State {
    next_id: u64,
    pending: BTreeMap<u64, Pending>,
    watchers: Vec<mpsc::UnboundedSender<Event>>,
}

impl State {
    fn broadcast(&mut self, event: &Event) {
        self.watchers.retain(|w| w.send(event.clone()).is_ok());
    }
}

struct HubInner {
    path: PathBuf,
    project: String,
    command: String,
    state: Mutex<State>,
}

/// The command a server that says none in its hello is.
fn mcp_command() -> String {
    "chock mcp".into()
}

impl Drop for HubInner {
    fn drop(&mut self) {
        std::fs::remove_file(&self.path).ok();
    }
}

/// The server's end: the socket, the questions waiting, the approvers watching.
#[derive(Clone)]
pub struct ApproveHub {
    inner: Arc<HubInner>,
}

impl ApproveHub {
    /// Listens on `<dir>/<pid>.sock` (removed again when the last handle goes).
    pub fn start(dir: &Path, project: &str, command: &str) -> Result<ApproveHub, McpError> {
        prepare_dir(dir)?;
        let path = dir.join(format!("{}.sock", std::process::id()));
        std::fs::remove_file(&path).ok();
        let listener = UnixListener::bind(&path).map_err(|source| McpError::ApproveDir {
            path: path.clone(),
            source,
        })?;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).map_err(
            |source| McpError::ApproveDir {
                path: path.clone(),
                source,
            },
        )?;
        let hub = ApproveHub {
            inner: Arc::new(HubInner {
                path,
                project: project.to_string(),
                command: command.to_string(),
                state: Mutex::new(State::default()),
            }),
        };
        let weak = Arc::downgrade(&hub.inner);
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let Some(inner) = weak.upgrade() else { break };
                tokio::spawn(serve_connection(ApproveHub { inner }, stream));
            }
        });
        Ok(hub)
    }

    /// The socket's path.
    pub fn path(&self) -> &Path {
        &self.inner.path
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.inner
            .state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Whether an approver is watching right now.
    pub fn watched(&self) -> bool {
        let mut state = self.state();
        state.watchers.retain(|w| !w.is_closed());
        !state.watchers.is_empty()
    }

    /// Puts `question` to every approver watching and waits for the first answer.
    pub async fn ask(&self, question: Asked, timeout: Duration) -> Reply {
        self.asked(question, timeout).await.0
    }

    /// Puts a credential question ([`Asked::credential`]) to every approver
    /// watching and waits for the first answer; `Err` says why none came.
    pub async fn ask_credential(
        &self,
        question: Asked,
        timeout: Duration,
    ) -> Result<Credential, Unanswered> {
        match self.asked(question, timeout).await {
            (Reply::Yes, Carried::Credential(credential)) => credential
                .checked()
                .ok_or(Unanswered::NoneGiven(crate::credential::UNUSABLE)),
            (Reply::Unanswered(why), _) => Err(Unanswered::Failed(why)),
            _ => Err(Unanswered::NoneGiven(
                "the person gave none in `chock approve`",
            )),
        }
    }

    /// Puts a question asking for text ([`Asked::wanting_text`]) to every
    /// approver watching and waits for the first answer, raw as typed;
    /// `Err` says why none came.
    pub async fn ask_text(&self, question: Asked, timeout: Duration) -> Result<String, Unanswered> {
        match self.asked(question, timeout).await {
            (Reply::Yes, Carried::Text(text)) => Ok(text),
            (Reply::Unanswered(why), _) => Err(Unanswered::Failed(why)),
            _ => Err(Unanswered::NoneGiven(
                "the person gave no answer in `chock approve`",
            )),
        }
    }

    async fn asked(&self, question: Asked, timeout: Duration) -> (Reply, Carried) {
        let (reply, answer) = oneshot::channel();
        let id = {
            let mut state = self.state();
            state.next_id += 1;
            let id = state.next_id;
            state.broadcast(&Event::Question {
                id,
                question: Box::new(question.clone()),
            });
            chock_notify::spawn(notice(&question));
            state.pending.insert(id, Pending { question, reply });
            id
        };
        // Withdraws the question however this ends: answered, timed out, or
        // the call cancelled (the future dropped).
        let _withdraw = Withdraw { hub: self, id };
        match tokio::time::timeout(timeout, answer).await {
            Ok(Ok(answer)) => answer,
            Ok(Err(_)) => (
                Reply::Unanswered("the question was dropped".into()),
                Carried::Nothing,
            ),
            Err(_) => (
                Reply::Unanswered(format!(
                    "nobody answered in `chock approve` within {} s",
                    timeout.as_secs()
                )),
                Carried::Nothing,
            ),
        }
    }

    /// Hands the answer to the question `id` waits on; the reply it was
    /// read as, `None` when nothing waits on it.
    fn answer(&self, id: u64, allow: bool, (credential, text, scope): Carrying) -> Option<Reply> {
        let mut state = self.state();
        let pending = state.pending.remove(&id)?;
        state.broadcast(&Event::Withdrawn {
            id,
            why: "answered".into(),
        });
        // Only a credential question takes one, and only a question asking
        // for text takes text; a yes to either without it is no answer.
        let answer = if pending.question.credential.is_some() {
            match credential {
                Some(credential) if allow => (Reply::Yes, Carried::Credential(credential)),
                _ => (Reply::No, Carried::Nothing),
            }
        } else if pending.question.wants_text {
            match text {
                Some(text) if allow => (Reply::Yes, Carried::Text(text)),
                _ => (Reply::No, Carried::Nothing),
            }
        } else if allow {
            (pending.question.yes_for(scope), Carried::Nothing)
        } else {
            (Reply::no_because(text.as_deref()), Carried::Nothing)
        };
        let reply = answer.0.clone();
        pending.reply.send(answer).ok().map(|()| reply)
    }

    fn waiting(&self) -> Vec<Waiting> {
        self.state()
            .pending
            .iter()
            .map(|(id, p)| Waiting {
                id: *id,
                question: p.question.clone(),
            })
            .collect()
    }
}

struct Withdraw<'a> {
    hub: &'a ApproveHub,
    id: u64,
}

impl Drop for Withdraw<'_> {
    fn drop(&mut self) {
        let mut state = self.hub.state();
        if state.pending.remove(&self.id).is_some() {
            state.broadcast(&Event::Withdrawn {
                id: self.id,
                why: "no longer waiting: it timed out or the agent cancelled the call".into(),
            });
        }
    }
}

async fn send(writer: &mut tokio::net::unix::OwnedWriteHalf, event: &Event) -> bool {
    let Ok(mut line) = serde_json::to_vec(event) else {
        return false;
    };
    line.push(b'\n');
    writer.write_all(&line).await.is_ok()
}

async fn serve_connection(hub: ApproveHub, stream: UnixStream) {
    let same_user = stream.peer_cred().is_ok_and(|cred| cred.uid() == my_uid());
    if !same_user {
        tracing::warn!("refused a chock approve connection from another user");
        return;
    }
    let (reader, mut writer) = stream.into_split();
    let hello = Event::Hello {
        pid: std::process::id(),
        project: hub.inner.project.clone(),
        command: hub.inner.command.clone(),
    };
    if !send(&mut writer, &hello).await {
        return;
    }
    let (events, mut outgoing) = mpsc::unbounded_channel::<Event>();
    let forward = tokio::spawn(async move {
        while let Some(event) = outgoing.recv().await {
            if !send(&mut writer, &event).await {
                break;
            }
        }
    });
    let mut lines = tokio::io::BufReader::new(reader);
    let mut line = String::new();
    loop {
        line.clear();
        let read = (&mut lines)
            .take(MAX_LINE as u64)
            .read_line(&mut line)
            .await;
        match read {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
        let reply = match serde_json::from_str::<Request>(line.trim()) {
            Ok(Request::Watch) => {
                let mut state = hub.state();
                // Under the lock, so no question falls between the answer
                // and the questions already waiting.
                events.send(Event::Watching).ok();
                for (id, pending) in &state.pending {
                    events
                        .send(Event::Question {
                            id: *id,
                            question: Box::new(pending.question.clone()),
                        })
                        .ok();
                }
                state.watchers.push(events.clone());
                None
            }
            Ok(Request::List) => Some(Event::Questions {
                questions: hub.waiting(),
            }),
            Ok(Request::Answer {
                id,
                allow,
                credential,
                text,
                scope,
            }) => Some(match hub.answer(id, allow, (credential, text, scope)) {
                Some(reply) => Event::Answered {
                    id,
                    allow,
                    scope: match reply {
                        Reply::YesFor(scope) => Some(scope),
                        _ => None,
                    },
                },
                None => Event::Withdrawn {
                    id,
                    why: "no longer waiting: answered elsewhere, timed out or cancelled".into(),
                },
            }),
            Err(e) => Some(Event::Error {
                message: format!("cannot read that request: {e}"),
            }),
        };
        if let Some(reply) = reply
            && events.send(reply).is_err()
        {
            break;
        }
    }
    drop(events);
    forward.await.ok();
}

// ---------------------------------------------------------------- approver side

/// The sockets of the servers running now, oldest first by name.
pub fn server_sockets(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut found: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "sock"))
        .collect();
    found.sort();
    found
}

/// One server, connected and checked to be this user's.
pub struct Connection {
    pub path: PathBuf,
    pub pid: u32,
    pub project: String,
    /// The command the server is (`chock mcp`, `chock run`, `chock acp`).
    pub command: String,
    stream: StdUnixStream,
    reader: BufReader<StdUnixStream>,
}

impl Connection {
    /// Connects to `path`, checks the listener is this user's process and
    /// reads its hello. A socket nobody listens on any more (its server
    /// died) is removed.
    pub fn open(path: &Path) -> Result<Connection, McpError> {
        let unreachable = |source| McpError::Unreachable {
            path: path.to_path_buf(),
            source,
        };
        let stream = match StdUnixStream::connect(path) {
            Ok(stream) => stream,
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => {
                std::fs::remove_file(path).ok();
                return Err(unreachable(e));
            }
            Err(e) => return Err(unreachable(e)),
        };
        let cred =
            nix::sys::socket::getsockopt(&stream, nix::sys::socket::sockopt::PeerCredentials)
                .map_err(|e| unreachable(std::io::Error::from(e)))?;
        if cred.uid() != my_uid() {
            return Err(McpError::OtherUser {
                path: path.to_path_buf(),
                uid: cred.uid(),
            });
        }
        stream
            .set_read_timeout(Some(HELLO_WAIT))
            .map_err(unreachable)?;
        let reader = BufReader::new(stream.try_clone().map_err(unreachable)?);
        let mut connection = Connection {
            path: path.to_path_buf(),
            pid: 0,
            project: String::new(),
            command: String::new(),
            stream,
            reader,
        };
        match connection.read_event()? {
            Some(Event::Hello {
                pid,
                project,
                command,
            }) => {
                connection.pid = pid;
                connection.project = project;
                connection.command = command;
                Ok(connection)
            }
            _ => Err(unreachable(std::io::Error::other(
                "it did not say hello as a chock mcp server does",
            ))),
        }
    }

    /// Sends one request.
    pub fn send(&mut self, request: &Request) -> Result<(), McpError> {
        let mut line = serde_json::to_vec(request).map_err(|e| McpError::Unreachable {
            path: self.path.clone(),
            source: std::io::Error::other(e),
        })?;
        line.push(b'\n');
        self.stream
            .write_all(&line)
            .map_err(|source| McpError::Unreachable {
                path: self.path.clone(),
                source,
            })
    }

    /// Reads the next event; `None` when the server closed the connection.
    pub fn read_event(&mut self) -> Result<Option<Event>, McpError> {
        let mut line = String::new();
        let read = (&mut self.reader)
            .take(MAX_LINE as u64)
            .read_line(&mut line)
            .map_err(|source| McpError::Unreachable {
                path: self.path.clone(),
                source,
            })?;
        if read == 0 {
            return Ok(None);
        }
        serde_json::from_str(line.trim())
            .map(Some)
            .map_err(|e| McpError::Unreachable {
                path: self.path.clone(),
                source: std::io::Error::other(format!("it sent a line that is not an event: {e}")),
            })
    }
}

/// What a watcher hears, from which server.
#[derive(Debug)]
pub enum Heard {
    /// A server was found and connected to.
    Connected {
        path: PathBuf,
        pid: u32,
        project: String,
        /// The command the server is (`chock mcp`, `chock run`, `chock acp`).
        command: String,
    },
    /// A server could not be reached (it is skipped until it changes).
    Unreachable(McpError),
    /// An event from a server.
    Event {
        path: PathBuf,
        pid: u32,
        event: Event,
    },
    /// A server closed its end: it stopped.
    Closed { path: PathBuf, pid: u32 },
}

/// Watches every server of this user (or one, by pid), finding new ones as
/// they start. A server counts as watched from its `watching` answer on.
pub struct Watcher {
    dir: PathBuf,
    only: Option<u32>,
    writers: BTreeMap<PathBuf, StdUnixStream>,
    tried: std::collections::BTreeSet<PathBuf>,
    heard: std::sync::mpsc::Receiver<Heard>,
    tell: std::sync::mpsc::Sender<Heard>,
}

impl Watcher {
    /// A watcher over the sockets in `dir`; `only` keeps the server with that pid.
    pub fn new(dir: PathBuf, only: Option<u32>) -> Watcher {
        let (tell, heard) = std::sync::mpsc::channel();
        Watcher {
            dir,
            only,
            writers: BTreeMap::new(),
            tried: Default::default(),
            heard,
            tell,
        }
    }

    /// How many servers are connected.
    pub fn connected(&self) -> usize {
        self.writers.len()
    }

    /// Connects to every server that started since the last look.
    pub fn refresh(&mut self) {
        for path in server_sockets(&self.dir) {
            if self.writers.contains_key(&path) || self.tried.contains(&path) {
                continue;
            }
            let pid_of_name = path
                .file_stem()
                .and_then(|s| s.to_str())
                .and_then(|s| s.parse::<u32>().ok());
            if self.only.is_some() && pid_of_name != self.only {
                continue;
            }
            self.tried.insert(path.clone());
            match self.watch(&path) {
                Ok(heard) => {
                    self.tell.send(heard).ok();
                }
                Err(e) => {
                    self.tell.send(Heard::Unreachable(e)).ok();
                }
            }
        }
    }

    fn watch(&mut self, path: &Path) -> Result<Heard, McpError> {
        let mut connection = Connection::open(path)?;
        connection.send(&Request::Watch)?;
        // Watched only once the server says so: a question asked before
        // then would find nobody watching.
        loop {
            match connection.read_event()? {
                Some(Event::Watching) => break,
                Some(_) => continue,
                None => {
                    return Err(McpError::Unreachable {
                        path: path.to_path_buf(),
                        source: std::io::Error::other("it closed the connection"),
                    });
                }
            }
        }
        // Watched from now on: events come when questions do, however long
        // that takes.
        connection
            .stream
            .set_read_timeout(None)
            .map_err(|source| McpError::Unreachable {
                path: path.to_path_buf(),
                source,
            })?;
        let writer = connection
            .stream
            .try_clone()
            .map_err(|source| McpError::Unreachable {
                path: path.to_path_buf(),
                source,
            })?;
        self.writers.insert(path.to_path_buf(), writer);
        let heard = Heard::Connected {
            path: path.to_path_buf(),
            pid: connection.pid,
            project: connection.project.clone(),
            command: connection.command.clone(),
        };
        let tell = self.tell.clone();
        std::thread::spawn(move || {
            let (path, pid) = (connection.path.clone(), connection.pid);
            while let Ok(Some(event)) = connection.read_event() {
                let heard = Heard::Event {
                    path: path.clone(),
                    pid,
                    event,
                };
                if tell.send(heard).is_err() {
                    return;
                }
            }
            tell.send(Heard::Closed { path, pid }).ok();
        });
        Ok(heard)
    }

    /// The next thing heard, waiting at most `wait`.
    pub fn next(&mut self, wait: Duration) -> Option<Heard> {
        let heard = self.heard.recv_timeout(wait).ok()?;
        if let Heard::Closed { path, .. } = &heard {
            self.writers.remove(path);
            self.tried.remove(path);
        }
        Some(heard)
    }

    /// Sends the person's answer to the server that asked (with the
    /// credential a credential question asks for).
    pub fn answer(
        &mut self,
        server: &Path,
        id: u64,
        allow: bool,
        (credential, text, scope): Carrying,
    ) -> Result<(), McpError> {
        let unreachable = |source| McpError::Unreachable {
            path: server.to_path_buf(),
            source,
        };
        let stream = self
            .writers
            .get_mut(server)
            .ok_or_else(|| unreachable(std::io::Error::other("it has stopped")))?;
        let mut line = serde_json::to_vec(&Request::Answer {
            id,
            allow,
            credential,
            text,
            scope,
        })
        .map_err(|e| unreachable(std::io::Error::other(e)))?;
        line.push(b'\n');
        stream.write_all(&line).map_err(unreachable)
    }
}

/// The questions one server is waiting on now.
pub fn list(path: &Path) -> Result<(Connection, Vec<Waiting>), McpError> {
    let mut connection = Connection::open(path)?;
    connection.send(&Request::List)?;
    loop {
        match connection.read_event()? {
            Some(Event::Questions { questions }) => return Ok((connection, questions)),
            Some(_) => continue,
            None => {
                return Err(McpError::Unreachable {
                    path: path.to_path_buf(),
                    source: std::io::Error::other("it closed the connection before answering"),
                });
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A socket that accepts and says nothing is skipped within
    /// [`HELLO_WAIT`], so one stuck process cannot keep an approver from
    /// the others.
    #[test]
    fn a_server_that_never_says_hello_is_skipped_in_time() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("1.sock");
        let listener = std::os::unix::net::UnixListener::bind(&path).expect("bind");
        let held = std::thread::spawn(move || listener.accept().map(|(stream, _)| stream));
        let started = std::time::Instant::now();
        let opened = Connection::open(&path);
        assert!(
            matches!(opened, Err(McpError::Unreachable { .. })),
            "a silent socket is unreachable"
        );
        assert!(started.elapsed() < HELLO_WAIT + Duration::from_secs(2));
        drop(held.join());
    }
}
