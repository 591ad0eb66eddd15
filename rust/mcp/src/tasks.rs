//! Background commands: a `run_command` with `background: true` runs on
//! after its call returns, as a task of the session.
//!
//! Each task is one sandbox, started and waited for on a thread of its own
//! (the sandbox's init ends with the thread that made it, through
//! `PR_SET_PDEATHSIG`, and with it everything inside), whose output goes
//! into one pipe read into a bounded buffer: the last [`OUTPUT_BYTES`] are
//! kept, and a read from an offset before them says how much was dropped.
//! A task ends by itself, by `stop_task`, or with the session: the server
//! kills every task when its client goes away, and a server that dies
//! takes its tasks with it (the kernel ends each init, and a PID
//! namespace's other processes die with its init), so none is left behind.
//!
//! Every sandbox of the session shows the task records read-only at
//! [`TASKS_MOUNT`]: one JSON file per task (`<id>.json`: the command, its
//! state, how it ended, its network and its published ports), so a command
//! can read how a server it started is doing.

use std::collections::{BTreeMap, VecDeque};
use std::io::Read;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::SystemTime;

use chock_sandbox::netmode::Network;
use chock_sandbox::publish::Dialer;
use chock_sandbox::{Exit, SignalHandle};
use serde::Serialize;
use tokio::sync::Notify;

use crate::tools::ToolError;

/// Where the task records are inside every sandbox of the session.
pub const TASKS_MOUNT: &str = "/run/chock/tasks";
/// The most tasks that may run at once in one session.
pub const MAX_RUNNING: usize = 8;
/// The most ended tasks whose record and output are kept; the oldest goes first.
pub const MAX_ENDED: usize = 32;
/// The most output kept per task (the newest bytes).
pub const OUTPUT_BYTES: usize = 1 << 20;

pub(crate) fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// How a task stands.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum State {
    Running,
    /// It ended by itself.
    Exited {
        exit: Exit,
    },
    /// `stop_task`, or the session ending, killed it.
    Stopped {
        exit: Exit,
    },
    /// Its sandbox failed after it started.
    Failed {
        error: String,
    },
}

impl State {
    /// The state in words, for the agent.
    pub fn words(&self) -> String {
        let exit = |exit: &Exit| match exit {
            Exit::Code(code) => format!("exit status {code}"),
            Exit::Signal(signal) => format!("killed by signal {signal}"),
        };
        match self {
            State::Running => "running".into(),
            State::Exited { exit: e } => format!("ended, {}", exit(e)),
            State::Stopped { exit: e } => format!("stopped, {}", exit(e)),
            State::Failed { error } => format!("failed: {error}"),
        }
    }
}

/// A task's output: the newest [`OUTPUT_BYTES`], and how many came before.
#[derive(Default)]
struct Output {
    kept: VecDeque<u8>,
    dropped: u64,
}

/// What a read of a task's output gives.
pub struct Chunk {
    pub text: String,
    /// The offset of its first byte.
    pub from: u64,
    /// The offset to read from next.
    pub next: u64,
    /// Bytes between the offset asked and the oldest kept, which were dropped.
    pub skipped: u64,
}

/// One background command.
pub struct Task {
    pub id: u32,
    /// The command line as a person reads it.
    pub command: String,
    pub network: Network,
    started: SystemTime,
    state: Mutex<State>,
    output: Mutex<Output>,
    /// Woken at each new output and at the end.
    changed: Notify,
    signal: SignalHandle,
    stop_asked: AtomicBool,
    dialer: Option<Arc<Dialer>>,
}

impl Task {
    pub fn state(&self) -> State {
        lock(&self.state).clone()
    }

    pub fn running(&self) -> bool {
        self.state() == State::Running
    }

    /// The dialer into the task's sandbox (published ports).
    pub fn dialer(&self) -> Option<Arc<Dialer>> {
        self.dialer.clone()
    }

    /// Bytes of output so far (kept or not).
    pub fn output_len(&self) -> u64 {
        let output = lock(&self.output);
        output.dropped + output.kept.len() as u64
    }

    /// Reads at most `max` bytes of output from `offset`.
    pub fn read(&self, offset: u64, max: usize) -> Chunk {
        let output = lock(&self.output);
        let start = offset.max(output.dropped);
        let skipped = start - offset.min(start);
        let at = usize::try_from(start - output.dropped).unwrap_or(usize::MAX);
        let bytes: Vec<u8> = output.kept.iter().skip(at).take(max).copied().collect();
        Chunk {
            text: String::from_utf8_lossy(&bytes).into_owned(),
            from: start,
            next: start + bytes.len() as u64,
            skipped,
        }
    }

    /// Waits until there is output past `offset`, or the task is not
    /// running, or `limit` passes.
    pub async fn wait_past(&self, offset: u64, limit: std::time::Duration) {
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            let notified = self.changed.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.output_len() > offset || !self.running() {
                return;
            }
            if tokio::time::timeout_at(deadline, notified).await.is_err() {
                return;
            }
        }
    }

    /// Kills the task's whole sandbox; the record says it was stopped.
    pub fn stop(&self) {
        self.stop_asked.store(true, Ordering::SeqCst);
        if let Err(e) = self.signal.signal(nix::libc::SIGKILL) {
            tracing::warn!("task {} could not be stopped: {e}", self.id);
        }
    }

    fn append(&self, bytes: &[u8]) {
        let mut output = lock(&self.output);
        output.kept.extend(bytes);
        let over = output.kept.len().saturating_sub(OUTPUT_BYTES);
        if over > 0 {
            output.kept.drain(..over);
            output.dropped += over as u64;
        }
        drop(output);
        self.changed.notify_waiters();
    }

    fn end(&self, state: State) {
        *lock(&self.state) = state;
        self.changed.notify_waiters();
    }
}

/// A task's record, as written to its file.
#[derive(Serialize)]
struct Record<'a> {
    id: u32,
    command: &'a str,
    #[serde(flatten)]
    state: State,
    network: Network,
    started_unix: u64,
    output_bytes: u64,
    published_ports: Vec<u16>,
}

/// The session's tasks.
pub struct Tasks {
    /// The host folder of the records, shown at [`TASKS_MOUNT`].
    dir: PathBuf,
    table: Mutex<Table>,
    /// Held while a task starts, so the bound on running tasks holds.
    starting: Mutex<()>,
    pub ports: crate::ports::Ports,
}

#[derive(Default)]
struct Table {
    next: u32,
    tasks: BTreeMap<u32, Arc<Task>>,
}

impl Tasks {
    /// Makes the session's record folder (`0700`, fresh) under `parent`.
    pub fn new(parent: &Path) -> std::io::Result<Tasks> {
        use std::os::unix::fs::DirBuilderExt;
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(parent)?;
        let nanos = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let dir = parent.join(format!("{}-{nanos}", std::process::id()));
        std::fs::DirBuilder::new().mode(0o700).create(&dir)?;
        Ok(Tasks {
            dir,
            table: Mutex::default(),
            starting: Mutex::default(),
            ports: crate::ports::Ports::default(),
        })
    }

    /// The host folder of the records.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// A task by its id.
    pub fn get(&self, id: u32) -> Option<Arc<Task>> {
        lock(&self.table).tasks.get(&id).cloned()
    }

    /// Every task, oldest first.
    pub fn all(&self) -> Vec<Arc<Task>> {
        lock(&self.table).tasks.values().cloned().collect()
    }

    /// The running tasks.
    pub fn running(&self) -> Vec<Arc<Task>> {
        self.all().into_iter().filter(|t| t.running()).collect()
    }

    /// Refuses a new task when [`MAX_RUNNING`] run already.
    pub fn room(&self) -> Result<(), ToolError> {
        let running = self.running();
        if running.len() >= MAX_RUNNING {
            return Err(ToolError::Unavailable(format!(
                "run_command: {} background commands are running (tasks {}), the most one session runs at once; stop one with stop_task first",
                running.len(),
                ids(&running)
            )));
        }
        Ok(())
    }

    /// Starts `prepared` as a task and returns it once it runs. The
    /// program is started, read and waited for on a thread of the task's
    /// own, which lives as long as the program does (the sandbox's init
    /// ends with the thread that made it). Blocks until the start is known.
    pub fn start(
        self: &Arc<Self>,
        prepared: chock_sandbox::exec::Prepared,
        command: String,
        network: Network,
    ) -> Result<Arc<Task>, ToolError> {
        let _one_at_a_time = lock(&self.starting);
        self.room()?;
        let (tell, told) = std::sync::mpsc::channel();
        let tasks = self.clone();
        std::thread::Builder::new()
            .name("chock-task".into())
            .spawn(move || tasks.run(prepared, command, network, &tell))
            .map_err(|e| {
                ToolError::Sandbox(format!(
                    "run_command: the task's thread could not start ({e})"
                ))
            })?;
        told.recv().unwrap_or_else(|_| {
            Err(ToolError::Sandbox("run_command: the task's thread ended before the program started; this is a bug in Chock".into()))
        })
    }

    fn run(
        &self,
        prepared: chock_sandbox::exec::Prepared,
        command: String,
        network: Network,
        tell: &std::sync::mpsc::Sender<Result<Arc<Task>, ToolError>>,
    ) {
        let started = prepared.start().and_then(|mut started| {
            let signal = started.signal_handle()?;
            let stream = started.take_stream();
            let dialer = started.take_dialer().map(Arc::new);
            Ok((started, signal, stream, dialer))
        });
        let (started, signal, stream, dialer) = match started {
            Ok(parts) => parts,
            Err(e) => {
                let _ = tell.send(Err(ToolError::Sandbox(format!("run_command: {e}"))));
                return;
            }
        };
        let task = {
            let mut table = lock(&self.table);
            table.next += 1;
            let task = Arc::new(Task {
                id: table.next,
                command,
                network,
                started: SystemTime::now(),
                state: Mutex::new(State::Running),
                output: Mutex::default(),
                changed: Notify::new(),
                signal,
                stop_asked: AtomicBool::new(false),
                dialer,
            });
            table.tasks.insert(task.id, task.clone());
            forget_oldest_ended(&mut table, &self.dir);
            task
        };
        self.write_record(&task);
        let reading = stream.map(|stream| spawn_reader(task.clone(), stream));
        let _ = tell.send(Ok(task.clone()));
        let ran = started.wait();
        if let Some(reading) = reading {
            let _ = reading.join();
        }
        let stopped = task.stop_asked.load(Ordering::SeqCst);
        // Unpublished before the end is told, so whoever waits for the end
        // finds the ports closed.
        self.ports.unpublish_task(task.id);
        task.end(match ran {
            Ok(ran) if stopped => State::Stopped {
                exit: ran.finished.exit,
            },
            Ok(ran) => State::Exited {
                exit: ran.finished.exit,
            },
            Err(e) => State::Failed {
                error: e.to_string(),
            },
        });
        self.write_record(&task);
    }

    /// Writes `task`'s record (atomically: a reader inside sees the old
    /// one or the new one).
    pub fn write_record(&self, task: &Task) {
        let record = Record {
            id: task.id,
            command: &task.command,
            state: task.state(),
            network: task.network,
            started_unix: task
                .started
                .duration_since(SystemTime::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs()),
            output_bytes: task.output_len(),
            published_ports: self.ports.of_task(task.id),
        };
        let path = self.dir.join(format!("{}.json", task.id));
        let temporary = self.dir.join(format!(".{}.json.new", task.id));
        let written = serde_json::to_vec_pretty(&record)
            .map_err(std::io::Error::other)
            .and_then(|bytes| std::fs::write(&temporary, bytes))
            .and_then(|()| std::fs::rename(&temporary, &path));
        // After the session ended the folder is gone, and so is the need.
        if let Err(e) = written
            && e.kind() != std::io::ErrorKind::NotFound
        {
            tracing::warn!("the record of task {} could not be written: {e}", task.id);
        }
    }

    /// The session is ending: unpublishes every port, kills every running
    /// task, waits a little for them to be reaped, and removes the records.
    pub fn shutdown(&self) {
        self.ports.unpublish_all();
        let running = self.running();
        for task in &running {
            task.stop();
        }
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while running.iter().any(|t| t.running()) && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The ids of `tasks`, comma-separated.
pub fn ids(tasks: &[Arc<Task>]) -> String {
    tasks
        .iter()
        .map(|t| t.id.to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

fn forget_oldest_ended(table: &mut Table, dir: &Path) {
    let ended: Vec<u32> = table
        .tasks
        .values()
        .filter(|t| !t.running())
        .map(|t| t.id)
        .collect();
    for id in ended.iter().take(ended.len().saturating_sub(MAX_ENDED)) {
        table.tasks.remove(id);
        let _ = std::fs::remove_file(dir.join(format!("{id}.json")));
    }
}

fn spawn_reader(task: Arc<Task>, stream: OwnedFd) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        let mut file = std::fs::File::from(stream);
        let mut buffer = [0u8; 16 * 1024];
        loop {
            match file.read(&mut buffer) {
                Ok(0) => break,
                Ok(n) => task.append(buffer.get(..n).unwrap_or_default()),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => break,
            }
        }
    })
}
