//! Starting a program in a sandbox and waiting for it, from Chock's side.
//!
//! One `clone` makes the user, PID, IPC, mount and network namespaces at once
//! and hands back a pidfd; the child waits for one byte on a pipe, builds
//! the sandbox (see `child`) while Chock moves it into its cgroup, waits for
//! a second byte (the cgroup holds it) before it starts the program, and
//! reports on a second pipe. Moving a process into a cgroup waits for an RCU
//! grace period (milliseconds on a busy machine, no CPU), so it overlaps
//! the mount tree rather than delaying it; the program still never runs
//! outside the cgroup. Signals meant for the program (Ctrl-C, a
//! terminal hang-up, a cancel) go through the pidfd to init, which passes
//! them on to the program's process group: a pid recycled after the sandbox
//! ended can never receive one.

use std::ffi::{CString, OsStr, OsString};
use std::io::Read;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicI32, Ordering};

use nix::errno::Errno;

use crate::child::{self, Channel, ChildPlan, ExecArgs, Kind, Payload, Record, Step};
use crate::error::SandboxError;
use crate::limits::{Cgroup, CgroupEvents, Delegation, Limits};
use crate::mounts::{self, Layout, Op};
use crate::seccomp::{self, WriteExecute};
use crate::walls;

/// Everything that decides what a sandbox is, prepared once and usable for
/// several programs.
pub struct Sandbox {
    layout: Layout,
    anchors: crate::anchor::Anchors,
    ops: Vec<Op>,
    seccomp: seccompiler::BpfProgram,
    limits: Limits,
    delegation: Delegation,
    last_cap: u32,
    uid_map: Vec<u8>,
    gid_map: Vec<u8>,
    write_execute: WriteExecute,
    router: Option<crate::net::Router>,
    network: crate::netmode::Network,
    dialer: bool,
}

/// Where the program's standard streams go.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stdio {
    /// Chock's own stdin, stdout and stderr.
    Inherit,
    /// stdin from `/dev/null`; stdout and stderr captured (up to a bound each).
    Capture {
        /// The most bytes kept of each stream; the rest is read and dropped.
        limit: usize,
    },
    /// stdin from `/dev/null`; stdout and stderr both into one pipe, whose
    /// read end the caller takes ([`Running::take_stream`]) and reads while
    /// the program runs.
    Stream,
    /// stdin and stdout are pipes to Chock ([`Running::take_pipes`]), for
    /// a program Chock speaks to (an MCP server); stderr a third pipe
    /// ([`Running::take_stderr`]), which the caller must read.
    Pipe,
}

/// One program to run.
#[derive(Clone, Debug)]
pub struct Command {
    /// The program as it is seen inside the sandbox (an absolute path).
    pub program: PathBuf,
    /// The whole argument vector, `argv[0]` included.
    pub args: Vec<OsString>,
    /// The whole environment; nothing of Chock's own is added.
    pub env: Vec<(OsString, OsString)>,
    /// The working directory inside.
    pub cwd: PathBuf,
    /// Where the streams go.
    pub stdio: Stdio,
}

/// How a program ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Exit {
    /// It exited with this code.
    Code(i32),
    /// A signal ended it.
    Signal(i32),
}

impl Exit {
    /// Ends Chock the way the program ended: its exit code, or death by the
    /// same signal (with core dumps off, so Chock leaves no core of its
    /// own), so a shell sees `$?` as it would without Chock. Returns the
    /// code to exit with when the signal did not end the process.
    pub fn pass_through(self) -> u8 {
        match self {
            Exit::Code(code) => u8::try_from(code).unwrap_or(1),
            Exit::Signal(signal) => {
                crate::sys::die_of_signal(signal);
                u8::try_from(128 + signal).unwrap_or(255)
            }
        }
    }

    fn from_wait_status(status: i32) -> Exit {
        if libc::WIFSIGNALED(status) {
            Exit::Signal(libc::WTERMSIG(status))
        } else {
            Exit::Code(libc::WEXITSTATUS(status))
        }
    }
}

/// What became of a probe.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProbeOutcome {
    /// It returned this value.
    Returned(i64),
    /// A signal ended it (or, negated, it exited with a code before returning).
    Killed(i32),
}

/// What a finished program left behind.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Finished {
    /// How it ended.
    pub exit: Exit,
    /// Captured stdout (empty when inherited).
    pub stdout: Vec<u8>,
    /// Captured stderr (empty when inherited).
    pub stderr: Vec<u8>,
    /// Whether either stream was cut at its bound.
    pub truncated: bool,
    /// What the cgroup recorded, when one was used.
    pub cgroup: Option<CgroupEvents>,
    /// The sandbox was killed because free space on the workspace's or the
    /// cache's file system fell below [`FREE_SPACE_FLOOR`].
    pub space_floor: bool,
}

/// Free space the sandbox leaves on the host file systems it writes (the
/// workspace's, the cache's): a command does not start below it, and is
/// killed as soon as it is passed (init looks every 5 ms while the program
/// runs; see `child`).
pub const FREE_SPACE_FLOOR: u64 = 1 << 30;

impl Sandbox {
    /// Prepares a sandbox from a resolved layout.
    pub fn new(
        layout: Layout,
        limits: Limits,
        write_execute: WriteExecute,
    ) -> Result<Self, SandboxError> {
        validate(&layout)?;
        let anchors = crate::anchor::anchor(&layout)?;
        let uid = nix::unistd::getuid().as_raw();
        let gid = nix::unistd::getgid().as_raw();
        Ok(Sandbox {
            ops: mounts::plan(&layout, &anchors.anchored),
            anchors,
            seccomp: seccomp::program(write_execute)?,
            layout,
            limits,
            delegation: crate::limits::delegation(),
            last_cap: crate::caps::last_cap(),
            uid_map: format!("{uid} {uid} 1\n").into_bytes(),
            gid_map: format!("{gid} {gid} 1\n").into_bytes(),
            write_execute,
            router: None,
            network: crate::netmode::Network::default(),
            dialer: false,
        })
    }

    /// Gives every program this sandbox starts a network through `router`,
    /// with the files it needs inside (`crate::net::files`).
    pub(crate) fn with_router(
        mut self,
        router: crate::net::Router,
        files: &crate::net::Files,
    ) -> Sandbox {
        self.layout.etc_files.extend(files.etc.iter().cloned());
        self.layout.links.extend(files.links.iter().cloned());
        self.ops = mounts::plan(&self.layout, &self.anchors.anchored);
        self.router = Some(router);
        self
    }

    /// Whether programs started here have a network router.
    pub fn routed(&self) -> bool {
        self.router.is_some()
    }

    /// The layout this sandbox was made from.
    pub fn layout(&self) -> &Layout {
        &self.layout
    }

    /// Guarded names that were missing and that Chock made before this
    /// sandbox could start (`chock.zon`, `.git/hooks`...), so that no
    /// program can create them.
    pub fn placeholders(&self) -> &[PathBuf] {
        &self.anchors.created
    }

    /// Shows the host folder or file `host` read-only at `inside` (an
    /// absolute path the sandbox does not otherwise use).
    pub fn show_read_only(&mut self, host: PathBuf, inside: PathBuf) {
        self.layout.file_binds.push((host, inside));
        self.ops = mounts::plan(&self.layout, &self.anchors.anchored);
    }

    /// Binds each of `devices` (opened and checked by
    /// [`crate::devices::open_checked`]) alone into `/dev`; the bind is
    /// made only if the node is still that object when the sandbox starts.
    pub fn give_devices(&mut self, devices: Vec<crate::devices::Granted>) {
        self.layout.devices.extend(devices);
        self.ops = mounts::plan(&self.layout, &self.anchors.anchored);
    }

    /// Shows the host folder `host` read-write at [`mounts::SCRATCH_MOUNT`]
    /// (a session's scratchpad), opened now and bound only if it is still
    /// that folder when the sandbox starts.
    pub fn give_scratchpad(&mut self, host: &Path) -> Result<(), SandboxError> {
        let (fd, id) = crate::anchor::open_top(host)?;
        self.anchors.scratch = Some(fd);
        self.anchors.anchored.scratch = Some(id);
        self.layout.scratch_dir = Some(host.to_path_buf());
        self.ops = mounts::plan(&self.layout, &self.anchors.anchored);
        Ok(())
    }

    /// Gives every program this sandbox starts `files` under
    /// [`mounts::SECRETS_MOUNT`], each readable by the sandbox's user
    /// alone, on a tmpfs that ends with the run. A name that is not a plain
    /// file name, a name given twice, or more than
    /// [`mounts::MAX_SECRET_FILE_BYTES`] in all is refused.
    pub fn give_secret_files(
        &mut self,
        files: Vec<mounts::SecretFile>,
    ) -> Result<(), SandboxError> {
        let mut total = 0usize;
        for file in self.layout.secret_files.iter().chain(&files) {
            total = total.saturating_add(file.contents.len());
        }
        for (i, file) in files.iter().enumerate() {
            if !mounts::SecretFile::is_plain_name(&file.name) {
                return Err(SandboxError::Unsupported(format!(
                    "a secret file's name must be a plain file name, not `{}`",
                    file.name.escape_debug()
                )));
            }
            if self
                .layout
                .secret_files
                .iter()
                .chain(&files[..i])
                .any(|f| f.name == file.name)
            {
                return Err(SandboxError::Unsupported(format!(
                    "secret file `{}` is given twice",
                    file.name
                )));
            }
        }
        if total > mounts::MAX_SECRET_FILE_BYTES {
            return Err(SandboxError::Unsupported(format!(
                "the secret files hold {total} bytes, more than the {} a run is given",
                mounts::MAX_SECRET_FILE_BYTES
            )));
        }
        self.layout.secret_files.extend(files);
        self.ops = mounts::plan(&self.layout, &self.anchors.anchored);
        Ok(())
    }

    /// Gives the sandbox `network` (see [`crate::netmode`]).
    pub fn set_network(&mut self, network: crate::netmode::Network) {
        self.network = network;
    }

    /// The network the sandbox is given.
    pub fn network(&self) -> crate::netmode::Network {
        self.network
    }

    /// Starts a port dialer beside each program (see [`crate::publish`]),
    /// which [`Running::take_dialer`] hands out.
    pub fn with_dialer(&mut self) {
        self.dialer = true;
    }

    /// Whether the write-and-execute rule is on.
    pub fn write_execute(&self) -> WriteExecute {
        self.write_execute
    }

    /// Starts `command` in a fresh sandbox.
    pub fn spawn(&self, command: &Command) -> Result<Running, SandboxError> {
        if let Delegation::NotDelegated { reason } = &self.delegation
            && nix::unistd::geteuid().is_root()
        {
            return Err(SandboxError::Unsupported(format!(
                "Chock runs as root here and has no cgroup for the command ({reason}), and nothing else bounds root's processes or their memory; run Chock as a normal user, or see `chock doctor`"
            )));
        }
        let payload = Payload::Exec(ExecArgs::new(
            c_string(command.program.as_os_str()),
            command.args.iter().map(|a| c_string(a)).collect(),
            command
                .env
                .iter()
                .map(|(k, v)| {
                    let mut pair = k.clone();
                    pair.push("=");
                    pair.push(v);
                    c_string(&pair)
                })
                .collect(),
        ));
        self.start(
            payload,
            &command.cwd,
            command.stdio,
            Some(command.program.clone()),
        )
    }

    /// Runs `probe` as the sandboxed program (for `chock doctor`): every
    /// layer is in place, but instead of `execve` the function runs and its
    /// value comes back, or the signal that killed it.
    pub fn probe(&self, probe: fn() -> i64) -> Result<ProbeOutcome, SandboxError> {
        let running = self.start(
            Payload::Probe(probe),
            &self.layout.workspace,
            Stdio::Inherit,
            None,
        )?;
        let (records, finished) = running.collect()?;
        if let Some(record) = records.iter().find(|r| r.kind == Kind::Probe) {
            return Ok(ProbeOutcome::Returned(record.value));
        }
        Ok(match finished.exit {
            Exit::Signal(signal) => ProbeOutcome::Killed(signal),
            Exit::Code(code) => ProbeOutcome::Killed(-code),
        })
    }

    fn start(
        &self,
        payload: Payload,
        cwd: &Path,
        stdio: Stdio,
        program: Option<PathBuf>,
    ) -> Result<Running, SandboxError> {
        for (fd, what) in [
            (&self.anchors.workspace, &self.layout.workspace),
            (&self.anchors.cache, &self.layout.cache_dir),
        ] {
            if let Some(free) =
                crate::sys::free_bytes(fd.as_raw_fd()).filter(|free| *free < FREE_SPACE_FLOOR)
            {
                return Err(SandboxError::Unsupported(format!(
                    "only {} MiB are free on the file system of {}, below the floor of {} MiB a command leaves to the host; free some space first",
                    free >> 20,
                    what.display(),
                    FREE_SPACE_FLOOR >> 20
                )));
            }
        }
        // The direct path, where a router is and the kernel has what it needs.
        let direct = match &self.router {
            Some(_) if crate::net::direct_supported() => Some(crate::net::direct_pair()?),
            _ => None,
        };
        let walls = walls::build(&self.layout, &self.anchors, direct.is_some())?;
        let cgroup = Cgroup::create(&self.delegation, &self.limits)
            .map_err(|(dir, e)| SandboxError::host("creating a cgroup under", dir, e))?;
        let (go_read, go_write) = pipe()?;
        let (report_read, report_write) = pipe()?;
        let capture = match stdio {
            Stdio::Capture { limit } => Some((limit, pipe()?, pipe()?, dev_null()?)),
            Stdio::Inherit | Stdio::Stream | Stdio::Pipe => None,
        };
        let stream = match stdio {
            Stdio::Stream => Some((pipe()?, dev_null()?)),
            Stdio::Inherit | Stdio::Capture { .. } | Stdio::Pipe => None,
        };
        let piped = match stdio {
            Stdio::Pipe => Some((pipe()?, pipe()?, pipe()?)),
            Stdio::Inherit | Stdio::Capture { .. } | Stdio::Stream => None,
        };
        let stdio_fds = match (&capture, &stream, &piped) {
            (Some((_, (_, out_w), (_, err_w), null)), _, _) => [
                Some(null.as_raw_fd()),
                Some(out_w.as_raw_fd()),
                Some(err_w.as_raw_fd()),
            ],
            (None, Some(((_, w), null)), _) => [
                Some(null.as_raw_fd()),
                Some(w.as_raw_fd()),
                Some(w.as_raw_fd()),
            ],
            (None, None, Some(((in_r, _), (_, out_w), (_, err_w)))) => [
                Some(in_r.as_raw_fd()),
                Some(out_w.as_raw_fd()),
                Some(err_w.as_raw_fd()),
            ],
            (None, None, None) => [None, None, None],
        };
        let tasks = match &cgroup {
            Some(cgroup) => cgroup
                .open_tasks()
                .map_err(|(dir, e)| SandboxError::host("opening the tasks file of", dir, e))?,
            None => Vec::new(),
        };
        let dialer = if self.dialer {
            Some(crate::publish::pair()?)
        } else {
            None
        };
        let plan = ChildPlan {
            ops: self.ops.clone(),
            uid_map: self.uid_map.clone(),
            gid_map: self.gid_map.clone(),
            ruleset: walls.ruleset.as_raw_fd(),
            child_rules: walls.child_rules,
            last_cap: self.last_cap,
            rlimits: self.limits.rlimits(),
            seccomp: self.seccomp.clone(),
            cwd: c_string(cwd.as_os_str()),
            payload,
            stdio: stdio_fds,
            dialer: dialer
                .as_ref()
                .map(|(_, theirs, seccomp)| crate::publish::HelperPlan {
                    fd: theirs.as_raw_fd(),
                    seccomp: seccomp.clone(),
                }),
            watched: [
                self.anchors.workspace.as_raw_fd(),
                self.anchors.cache.as_raw_fd(),
            ],
            cgroup_tasks: [0, 1].map(|i| tasks.get(i).map_or(-1, AsRawFd::as_raw_fd)),
            direct: direct.as_ref().map(|(_, theirs)| crate::net::DirectPlan {
                sock: theirs.as_raw_fd(),
                filter: seccomp::connect_notify_program(),
            }),
        };
        let channel = Channel {
            go: go_read.as_raw_fd(),
            go_parent: go_write.as_raw_fd(),
            report: report_write.as_raw_fd(),
            report_parent: report_read.as_raw_fd(),
        };
        let flags = libc::CLONE_NEWUSER
            | libc::CLONE_NEWPID
            | libc::CLONE_NEWIPC
            | libc::CLONE_NEWNS
            | libc::CLONE_NEWNET;
        // A v2 group is joined by init's clone, v1 groups by init itself
        // (child::join_cgroups); a v2 group on a kernel older than 5.7 by a
        // move below.
        let into = cgroup.as_ref().and_then(Cgroup::open_for_clone);
        // The child runs only allocation-free code (child::run_init).
        let init = || child::run_init(&plan, channel);
        let cloned_into = into.as_ref().and_then(|dir| {
            match crate::sys::fork_with_pidfd(flags, Some(dir.as_raw_fd()), &init) {
                Err(Errno::ENOSYS | Errno::E2BIG | Errno::EINVAL) => None,
                cloned => Some(cloned),
            }
        });
        let joined = cloned_into.is_some() || !tasks.is_empty();
        let (pid, pidfd) = match cloned_into {
            Some(cloned) => cloned,
            None => crate::sys::fork_with_pidfd(flags, None, &init),
        }
        .map_err(|errno| SandboxError::Sys {
            what: "creating the namespaces (clone)",
            errno,
        })?;
        drop((into, tasks));
        // The network is set up before init may start (and before it makes
        // itself undumpable, which would close its namespaces to Chock).
        let (direct_ours, direct_theirs) = direct.unzip();
        drop(direct_theirs);
        let network = match self
            .router
            .as_ref()
            .map(|router| crate::net::attach(router, pid, direct_ours))
        {
            Some(Err(error)) => {
                // Init reads the hang-up, ends, and is reaped here.
                drop(go_write);
                let _ = nix::sys::wait::waitpid(nix::unistd::Pid::from_raw(pid), None);
                return Err(error);
            }
            Some(Ok(attached)) => Some(attached),
            None => None,
        };
        let go = |what| {
            crate::sys::write_all(go_write.as_raw_fd(), b"g")
                .map_err(|errno| SandboxError::Sys { what, errno })
        };
        // First byte: build the mount tree (the cgroup is joined meanwhile).
        go("starting the sandbox")?;
        drop(go_read);
        drop(report_write);
        drop(walls.ruleset);
        let outputs = capture.map(|(limit, (out_r, out_w), (err_r, err_w), null)| {
            drop((out_w, err_w, null));
            (reader(out_r, limit), reader(err_r, limit))
        });
        let stream = stream.map(|((read, write), null)| {
            drop((write, null));
            read
        });
        let dialer = dialer.map(|(ours, theirs, _)| {
            drop(theirs);
            ours
        });
        let (pipes, pipe_err) = match piped {
            Some(((in_r, in_w), (out_r, out_w), (err_r, err_w))) => {
                drop((in_r, out_w, err_w));
                (Some((in_w, out_r)), Some(err_r))
            }
            None => (None, None),
        };
        let running = Running {
            pid,
            pidfd,
            go: Some(go_write),
            report: report_read,
            outputs,
            stream,
            dialer,
            pipes,
            pipe_err,
            // Described only if init reports a step that failed.
            ops: plan.ops,
            cgroup,
            program,
            _own_work: self.anchors.own_work.clone(),
            _lease: self.anchors.lease.clone(),
            _network: network,
        };
        // Init may already have ended, refusing to build the sandbox (a
        // swapped mount source): then there is nothing to bound, the move
        // finds no process and the second byte no reader, and `wait` reports
        // init's own reason.
        if let Some(cgroup) = running.cgroup.as_ref().filter(|_| !joined) {
            match cgroup.attach(pid) {
                Err(e) if e.raw_os_error() != Some(libc::ESRCH) => {
                    return Err(SandboxError::host(
                        "moving the sandbox into",
                        PathBuf::from("its cgroup"),
                        e,
                    ));
                }
                _ => {}
            }
        }
        // Second byte: init is in the cgroup, so the program may start. A
        // failure above drops `running`, and with it this pipe: init reads
        // the hang-up and ends before any program ran.
        match crate::sys::write_all(running.go.as_ref().map_or(-1, AsRawFd::as_raw_fd), b"g") {
            Ok(()) | Err(Errno::EPIPE) => Ok(running),
            Err(errno) => Err(SandboxError::Sys {
                what: "starting the program",
                errno,
            }),
        }
    }
}

fn validate(layout: &Layout) -> Result<(), SandboxError> {
    let ws = &layout.workspace;
    let refuse = |reason: &str| {
        Err(SandboxError::Workspace {
            path: ws.clone(),
            reason: reason.into(),
        })
    };
    if !ws.is_absolute()
        || ws
            .components()
            .any(|c| matches!(c, std::path::Component::ParentDir))
    {
        return refuse(
            "it must be an absolute path with no `..`; pass --project with the project's directory",
        );
    }
    if ws == Path::new("/") {
        return refuse(
            "the whole file system cannot be a workspace; run Chock from the project's directory",
        );
    }
    for reserved in [
        "/proc",
        "/dev",
        "/etc",
        "/nix",
        "/run/chock",
        mounts::OLD_ROOT,
    ] {
        if ws.starts_with(reserved) {
            return refuse(&format!(
                "{reserved} is built by the sandbox itself; move the project elsewhere"
            ));
        }
    }
    if let Some(home) = std::env::var_os("HOME").map(PathBuf::from)
        && home.is_absolute()
        && home.starts_with(ws)
    {
        return refuse(
            "it contains your home directory, which never reaches a sandbox; use the project's own directory",
        );
    }
    if layout.cache_dir.starts_with(ws) {
        return refuse("the cache directory lies inside it; set XDG_DATA_HOME outside the project");
    }
    Ok(())
}

fn c_string(s: &OsStr) -> CString {
    CString::new(s.as_bytes()).unwrap_or_else(|_| c"".to_owned())
}

fn pipe() -> Result<(OwnedFd, OwnedFd), SandboxError> {
    nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC).map_err(|errno| SandboxError::Sys {
        what: "creating a pipe",
        errno,
    })
}

fn dev_null() -> Result<OwnedFd, SandboxError> {
    std::fs::File::open("/dev/null")
        .map(OwnedFd::from)
        .map_err(|e| SandboxError::host("opening", "/dev/null", e))
}

type Output = std::thread::JoinHandle<(Vec<u8>, bool)>;

/// Reads a stream to its end on a thread, keeping at most `limit` bytes.
fn reader(fd: OwnedFd, limit: usize) -> Output {
    std::thread::spawn(move || {
        let mut file = std::fs::File::from(fd);
        let mut kept = Vec::new();
        let mut truncated = false;
        let mut buffer = [0u8; 16 * 1024];
        loop {
            match file.read(&mut buffer) {
                Ok(0) => break,
                Ok(n) => {
                    let room = limit.saturating_sub(kept.len());
                    let chunk = buffer.get(..n).unwrap_or_default();
                    kept.extend_from_slice(chunk.get(..room.min(n)).unwrap_or_default());
                    truncated |= n > room;
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => break,
            }
        }
        (kept, truncated)
    })
}

/// A sandbox whose program is running.
pub struct Running {
    pid: libc::pid_t,
    pidfd: OwnedFd,
    /// Held open while Chock lives: the child reads a hang-up as Chock's death.
    go: Option<OwnedFd>,
    report: OwnedFd,
    outputs: Option<(Output, Output)>,
    /// The read end of [`Stdio::Stream`], until taken.
    stream: Option<OwnedFd>,
    /// The port dialer, until taken.
    dialer: Option<crate::publish::Dialer>,
    /// With [`Stdio::Pipe`]: the program's stdin (to write) and stdout (to read).
    pipes: Option<(OwnedFd, OwnedFd)>,
    /// With [`Stdio::Pipe`]: the program's stderr (to read).
    pipe_err: Option<OwnedFd>,
    ops: Vec<Op>,
    cgroup: Option<Cgroup>,
    program: Option<PathBuf>,
    /// An overlay workspace's work folder, kept while the program runs.
    _own_work: Option<std::sync::Arc<crate::workspace::OwnWork>>,
    /// The hold on the project's passing placeholders, kept while the
    /// program runs.
    _lease: Option<std::sync::Arc<crate::lease::Lease>>,
    /// The router's threads, stopped when the run is collected.
    _network: Option<crate::net::Attached>,
}

/// Signals one sandbox's init, from any thread. Init is named by a pidfd,
/// so a signal sent after it ended reaches nobody (never a reused pid).
#[derive(Debug)]
pub struct SignalHandle {
    pidfd: OwnedFd,
}

impl SignalHandle {
    /// Sends `signal` to the program's process group (through init).
    pub fn signal(&self, signal: i32) -> Result<(), SandboxError> {
        send_signal(&self.pidfd, signal)
    }
}

fn send_signal(pidfd: &OwnedFd, signal: i32) -> Result<(), SandboxError> {
    crate::sys::pidfd_send_signal(pidfd.as_raw_fd(), signal).map_err(|errno| SandboxError::Sys {
        what: "signalling the sandbox",
        errno,
    })
}

impl Running {
    /// The host pid of the sandbox's init.
    pub fn pid(&self) -> libc::pid_t {
        self.pid
    }

    /// Sends `signal` to the program's process group (through init).
    pub fn signal(&self, signal: i32) -> Result<(), SandboxError> {
        send_signal(&self.pidfd, signal)
    }

    /// With [`Stdio::Pipe`], once: the write end of the program's stdin and
    /// the read end of its stdout.
    pub fn take_pipes(&mut self) -> Option<(OwnedFd, OwnedFd)> {
        self.pipes.take()
    }

    /// With [`Stdio::Pipe`], once: the read end of the program's stderr.
    pub fn take_stderr(&mut self) -> Option<OwnedFd> {
        self.pipe_err.take()
    }

    /// A second handle on init, to signal the program from another thread
    /// while [`Running::wait`] runs (a caller that cancels, such as the
    /// tool server when its client cancels a call).
    pub fn signal_handle(&self) -> Result<SignalHandle, SandboxError> {
        let pidfd = self
            .pidfd
            .try_clone()
            .map_err(|e| SandboxError::host("duplicating", "the sandbox's pidfd", e))?;
        Ok(SignalHandle { pidfd })
    }

    /// The read end of the program's output with [`Stdio::Stream`] (once).
    pub fn take_stream(&mut self) -> Option<OwnedFd> {
        self.stream.take()
    }

    /// The port dialer, when the sandbox was made [`Sandbox::with_dialer`] (once).
    pub fn take_dialer(&mut self) -> Option<crate::publish::Dialer> {
        self.dialer.take()
    }

    /// Passes Ctrl-C, Ctrl-\, a hang-up and SIGTERM aimed at Chock on to
    /// the program until the returned guard is dropped.
    pub fn forward_signals(&self) -> SignalForwarding {
        SignalForwarding::install(self.pidfd.as_raw_fd())
    }

    /// Waits for the program to end and says how it did.
    pub fn wait(self) -> Result<Finished, SandboxError> {
        self.collect().map(|(_, finished)| finished)
    }

    fn collect(mut self) -> Result<(Vec<Record>, Finished), SandboxError> {
        let mut bytes = Vec::new();
        let mut report = std::fs::File::from(
            self.report
                .try_clone()
                .map_err(|e| SandboxError::host("reading", "the report pipe", e))?,
        );
        loop {
            match report.read_to_end(&mut bytes) {
                Ok(_) => break,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(SandboxError::host("reading", "the report pipe", e)),
            }
        }
        let (stdout, stderr, truncated) = match self.outputs.take() {
            Some((out, err)) => {
                let (stdout, t1) = out.join().unwrap_or_default();
                let (stderr, t2) = err.join().unwrap_or_default();
                (stdout, stderr, t1 || t2)
            }
            None => (Vec::new(), Vec::new(), false),
        };
        let init_status = loop {
            match nix::sys::wait::waitpid(nix::unistd::Pid::from_raw(self.pid), None) {
                Ok(status) => break status,
                Err(Errno::EINTR) => continue,
                Err(errno) => {
                    return Err(SandboxError::Sys {
                        what: "waiting for the sandbox",
                        errno,
                    });
                }
            }
        };
        self.go.take();
        let records = Record::decode_all(&bytes);
        let space_floor = records.iter().any(|r| r.kind == Kind::SpaceFloor);
        if let Some(error) = self.setup_error(&records) {
            return Err(error);
        }
        let exit = match records.iter().find(|r| r.kind == Kind::Status) {
            Some(record) => Exit::from_wait_status(i32::try_from(record.value).unwrap_or(1)),
            None => match init_status {
                nix::sys::wait::WaitStatus::Signaled(_, signal, _) => Exit::Signal(signal as i32),
                nix::sys::wait::WaitStatus::Exited(_, code) => Exit::Code(code),
                _ => Exit::Code(1),
            },
        };
        let cgroup = self.cgroup.as_ref().map(Cgroup::events);
        Ok((
            records,
            Finished {
                exit,
                stdout,
                stderr,
                truncated,
                cgroup,
                space_floor,
            },
        ))
    }

    fn setup_error(&self, records: &[Record]) -> Option<SandboxError> {
        records.iter().find_map(|r| {
            let errno = Errno::from_raw(i32::try_from(r.value).unwrap_or(libc::EIO));
            match r.kind {
                Kind::Op => {
                    let step = self
                        .ops
                        .get(r.index as usize)
                        .map_or_else(|| "a mount step".into(), Op::describe);
                    Some(if errno == Errno::ESTALE {
                        SandboxError::Changed { step }
                    } else {
                        SandboxError::Setup { step, errno }
                    })
                }
                Kind::Step => {
                    let step = Step::from_code(r.index).map_or("a setup step", Step::describe);
                    Some(SandboxError::Setup {
                        step: step.into(),
                        errno,
                    })
                }
                Kind::Exec => Some(SandboxError::Exec {
                    program: self.program.clone().unwrap_or_default(),
                    errno,
                }),
                Kind::Status | Kind::Probe | Kind::SpaceFloor => None,
            }
        })
    }
}

static FORWARD_TO: AtomicI32 = AtomicI32::new(-1);
const FORWARDED: [libc::c_int; 4] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGQUIT];

extern "C" fn forward(signal: libc::c_int) {
    let fd = FORWARD_TO.load(Ordering::SeqCst);
    if fd >= 0 {
        let _ = crate::sys::pidfd_send_signal(fd, signal);
    }
}

/// While alive, the terminal's signals to Chock go to the sandboxed program.
pub struct SignalForwarding {
    previous: Vec<(libc::c_int, libc::sigaction)>,
}

impl SignalForwarding {
    fn install(pidfd: RawFd) -> Self {
        FORWARD_TO.store(pidfd, Ordering::SeqCst);
        let mut previous = Vec::new();
        for signal in FORWARDED {
            // `forward` only makes an async-signal-safe system call.
            if let Some(old) = crate::sys::install_handler(signal, forward) {
                previous.push((signal, old));
            }
        }
        SignalForwarding { previous }
    }
}

impl Drop for SignalForwarding {
    fn drop(&mut self) {
        for (signal, old) in &self.previous {
            crate::sys::restore_action(*signal, old);
        }
        FORWARD_TO.store(-1, Ordering::SeqCst);
    }
}
