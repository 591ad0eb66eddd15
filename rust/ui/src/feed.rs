//! What the page shows live: the questions every running Chock of this
//! user waits on (heard over the approve sockets, as `chock approve` hears
//! them), and the decision log as it grows. Both are kept in one snapshot
//! and each change is sent to every open page as a server-sent event under
//! the snapshot's lock, so a page that connects gets the snapshot and then
//! every change after it, none twice and none missed.

use std::collections::{BTreeMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, Weak, mpsc};
use std::time::{Duration, Instant};

use bytes::Bytes;
use chock_mcp::approve::{Event, Heard, Scope, Watcher};
use serde_json::{Value, json};
use tokio::sync::{broadcast, oneshot};

/// How many of the log's last lines a page gets when it connects.
const KEPT_RECORDS: usize = 500;
/// How often the approve folder is looked at for servers that started.
const REFRESH_EVERY: Duration = Duration::from_millis(200);
/// How long the watcher waits for one event before it looks at answers.
const HEAR_WAIT: Duration = Duration::from_millis(20);
/// How often the log's stamp is read.
const FOLLOW_EVERY: Duration = Duration::from_millis(25);

/// One server-sent event: `event: <kind>` and one line of JSON.
pub fn frame(kind: &str, data: &Value) -> Bytes {
    Bytes::from(format!("event: {kind}\ndata: {data}\n\n"))
}

/// A server heard on its socket.
struct Server {
    pid: u32,
    project: String,
    command: String,
}

#[derive(Default)]
struct Snapshot {
    servers: BTreeMap<PathBuf, Server>,
    questions: BTreeMap<(PathBuf, u64), Value>,
    records: VecDeque<Bytes>,
}

/// An answer typed on the page, on its way to the server that asked.
pub struct Answer {
    pub server: PathBuf,
    pub id: u64,
    pub allow: bool,
    pub text: Option<String>,
    /// A yes's scope beyond once.
    pub scope: Option<Scope>,
    pub done: oneshot::Sender<Result<(), NotSent>>,
}

/// Why an answer typed on the page did not reach the server that asked.
#[derive(Debug, thiserror::Error)]
pub enum NotSent {
    /// The thread that hears the servers has ended.
    #[error("the page no longer hears the servers")]
    NotHeard,
    /// The server could not be reached, or is not the page's user's.
    #[error(transparent)]
    Server(#[from] chock_mcp::McpError),
}

/// The snapshot, the open pages' channel and the way answers leave.
pub struct Feed {
    snapshot: Mutex<Snapshot>,
    tell: broadcast::Sender<Bytes>,
    answers: Mutex<mpsc::Sender<Answer>>,
}

impl Feed {
    /// Starts hearing the approve sockets in `approve_dir` and following the
    /// log in `log_dir`, each on a thread of its own that ends once the feed
    /// is dropped.
    pub fn start(approve_dir: PathBuf, log_dir: PathBuf) -> Arc<Feed> {
        let (answers, typed) = mpsc::channel();
        let feed = Arc::new(Feed {
            snapshot: Mutex::new(Snapshot::default()),
            tell: broadcast::channel(4096).0,
            answers: Mutex::new(answers),
        });
        let weak = Arc::downgrade(&feed);
        std::thread::spawn(move || hear(&weak, Watcher::new(approve_dir, None), &typed));
        let weak = Arc::downgrade(&feed);
        std::thread::spawn(move || follow(&weak, &chock_log::Log::at(log_dir, Default::default())));
        feed
    }

    fn snapshot(&self) -> std::sync::MutexGuard<'_, Snapshot> {
        self.snapshot
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Everything now, as events, and the channel of every change after it.
    pub fn subscribe(&self) -> (Vec<Bytes>, broadcast::Receiver<Bytes>) {
        let snapshot = self.snapshot();
        let mut now = vec![frame("reset", &json!({}))];
        for (path, server) in &snapshot.servers {
            now.push(frame("server", &server_json(path, server, true)));
        }
        now.extend(snapshot.records.iter().cloned());
        for question in snapshot.questions.values() {
            now.push(frame("question", question));
        }
        (now, self.tell.subscribe())
    }

    /// Sends an answer to the server that asked; `Err` says why it did not go.
    pub async fn answer(
        &self,
        server: PathBuf,
        id: u64,
        allow: bool,
        (text, scope): (Option<String>, Option<Scope>),
    ) -> Result<(), NotSent> {
        let (done, result) = oneshot::channel();
        let answer = Answer {
            server,
            id,
            allow,
            text,
            scope,
            done,
        };
        self.answers
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .send(answer)
            .map_err(|_| NotSent::NotHeard)?;
        result.await.map_err(|_| NotSent::NotHeard)?
    }

    fn heard(&self, heard: Heard) {
        tracing::debug!("chock ui heard {heard:?}");
        let mut snapshot = self.snapshot();
        match heard {
            Heard::Connected {
                path,
                pid,
                project,
                command,
            } => {
                let server = Server {
                    pid,
                    project,
                    command,
                };
                self.tell
                    .send(frame("server", &server_json(&path, &server, true)))
                    .ok();
                snapshot.servers.insert(path, server);
            }
            Heard::Unreachable(error) => tracing::debug!("chock ui: {error}"),
            Heard::Event {
                path,
                event: Event::Question { id, question },
                ..
            } => {
                let Some(server) = snapshot.servers.get(&path) else {
                    return;
                };
                let data = json!({
                    "server": path,
                    "pid": server.pid,
                    "command": server.command,
                    "id": id,
                    "question": question,
                });
                self.tell.send(frame("question", &data)).ok();
                snapshot.questions.insert((path, id), data);
            }
            Heard::Event {
                path,
                event: Event::Withdrawn { id, why },
                ..
            } => {
                if snapshot.questions.remove(&(path.clone(), id)).is_some() {
                    let data = json!({ "server": path, "id": id, "why": why });
                    self.tell.send(frame("withdrawn", &data)).ok();
                }
            }
            Heard::Event { .. } => {}
            Heard::Closed { path, .. } => {
                if let Some(server) = snapshot.servers.remove(&path) {
                    snapshot.questions.retain(|(p, _), _| *p != path);
                    self.tell
                        .send(frame("server", &server_json(&path, &server, false)))
                        .ok();
                }
            }
        }
    }

    fn logged(&self, text: &str) {
        let Ok(record) = serde_json::from_str::<Value>(text) else {
            return;
        };
        let event = frame("record", &record);
        let mut snapshot = self.snapshot();
        self.tell.send(event.clone()).ok();
        snapshot.records.push_back(event);
        if snapshot.records.len() > KEPT_RECORDS {
            snapshot.records.pop_front();
        }
    }
}

fn server_json(path: &Path, server: &Server, running: bool) -> Value {
    json!({
        "server": path,
        "pid": server.pid,
        "project": server.project,
        "command": server.command,
        "running": running,
    })
}

/// The watcher's loop: finds servers, relays what they say, sends answers.
fn hear(feed: &Weak<Feed>, mut watcher: Watcher, typed: &mpsc::Receiver<Answer>) {
    let mut refreshed: Option<Instant> = None;
    loop {
        if refreshed.is_none_or(|at| at.elapsed() >= REFRESH_EVERY) {
            watcher.refresh();
            refreshed = Some(Instant::now());
        }
        while let Ok(answer) = typed.try_recv() {
            let sent = watcher
                .answer(
                    &answer.server,
                    answer.id,
                    answer.allow,
                    (None, answer.text, answer.scope),
                )
                .map_err(NotSent::from);
            answer.done.send(sent).ok();
        }
        let heard = watcher.next(HEAR_WAIT);
        let Some(feed) = feed.upgrade() else { return };
        if let Some(heard) = heard {
            feed.heard(heard);
        }
    }
}

/// The log follower's loop: the last lines once, then each line appended,
/// read again only when the log's stamp changes.
fn follow(feed: &Weak<Feed>, log: &chock_log::Log) {
    let mut last: Option<u64> = None;
    let mut seen = None;
    loop {
        let stamp = log.stamp().ok();
        if stamp.is_some() && stamp != seen {
            seen = stamp;
            if let Ok(records) = log.records() {
                let Some(feed) = feed.upgrade() else { return };
                for line in records.flatten() {
                    let Ok(record) = &line.record else { continue };
                    if last.is_some_and(|last| record.seq <= last) {
                        continue;
                    }
                    last = Some(record.seq);
                    feed.logged(&line.text);
                }
            }
        }
        std::thread::sleep(FOLLOW_EVERY);
        if feed.strong_count() == 0 {
            return;
        }
    }
}
