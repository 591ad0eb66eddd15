//! `chock doctor`: each layer probed for real, in a child, never inferred
//! from a kernel version.
//!
//! A blocking row is one without which no command can run (namespaces,
//! mounts, Landlock, seccomp, the tmpfs cap, the Nix daemon for a project
//! with a flake); the others say what is weaker on this machine (no cgroup
//! delegation, the daemon's own build sandbox off, little free space).

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::Duration;

use nix::errno::Errno;

use crate::exec::{FREE_SPACE_FLOOR, TMP_BYTES, free_space};
use crate::layout::{self, Toolchain};
use crate::limits::{Delegation, Limits, delegation};
use crate::seccomp::WriteExecute;
use crate::spawn::{ProbeOutcome, Sandbox};
use crate::sys;
use crate::walls;

/// How a row came out.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum State {
    /// Works.
    Ok,
    /// Works, with a weakness worth knowing.
    Warn,
    /// Does not work.
    Fail,
}

/// One line of the report.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Row {
    /// What was probed.
    pub name: &'static str,
    /// How it came out.
    pub state: State,
    /// Whether commands cannot run while this row fails.
    pub blocking: bool,
    /// What was seen, and what to do.
    pub detail: String,
}

/// The whole report.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Report {
    /// Every row, in the order probed.
    pub rows: Vec<Row>,
    /// True when no blocking row failed.
    pub can_run: bool,
}

/// Why a probe found a layer missing or not holding: what the report's row
/// says, and what to do.
#[derive(Debug, thiserror::Error)]
pub enum ProbeError {
    /// A system call the probe makes failed.
    #[error("{what}: {}", errno.desc())]
    Sys {
        /// What the call was for.
        what: &'static str,
        /// Its errno.
        errno: Errno,
    },
    /// The kernel refused a user namespace.
    #[error(
        "clone refused: {} (on Ubuntu, AppArmor may restrict unprivileged user namespaces: sysctl kernel.apparmor_restrict_unprivileged_userns=0)",
        .0.desc()
    )]
    UserNamespace(Errno),
    /// The kernel refused the probe's child.
    #[error("{}", .0.desc())]
    Fork(Errno),
    /// The layer could not be set up as a sandbox sets it up.
    #[error(transparent)]
    Sandbox(#[from] crate::SandboxError),
    /// The Landlock ruleset could not be made.
    #[error(transparent)]
    Landlock(#[from] landlock::RulesetError),
    /// A DNS message could not be written.
    #[error(transparent)]
    Dns(#[from] hickory_proto::ProtoError),
    /// A DNS message could not be read.
    #[error(transparent)]
    DnsReply(#[from] hickory_proto::serialize::binary::DecodeError),
    /// nft or ip did not do its work.
    #[error(transparent)]
    Tool(#[from] crate::net::ToolError),
    /// An operation on a socket failed.
    #[error(transparent)]
    Io(#[from] std::io::Error),
    /// An exchange the probe makes failed.
    #[error("{what}: {source}")]
    Exchange {
        /// The exchange.
        what: &'static str,
        /// How it failed.
        source: std::io::Error,
    },
    /// The Nix daemon's socket did not answer.
    #[error("{what} {}: {source}; run scripts/setup (or start nix-daemon)", socket.display())]
    Daemon {
        /// What failed.
        what: &'static str,
        /// The socket.
        socket: std::path::PathBuf,
        /// How.
        source: std::io::Error,
    },
    /// A connection from inside did not reach the relay.
    #[error("dialling {target} inside did not reach the relay: {}", errno.desc())]
    Dial {
        /// Where it went.
        target: std::net::SocketAddr,
        /// Its errno.
        errno: Errno,
    },
    /// The probe ran and saw the layer not hold: what it saw.
    #[error("{0}")]
    Seen(String),
}

fn row(name: &'static str, blocking: bool, result: Result<String, ProbeError>) -> Row {
    match result {
        Ok(detail) => Row {
            name,
            state: State::Ok,
            blocking,
            detail,
        },
        Err(error) => Row {
            name,
            state: State::Fail,
            blocking,
            detail: error.to_string(),
        },
    }
}

/// What a probe saw that says its layer does not hold.
fn seen(what: &str) -> ProbeError {
    ProbeError::Seen(what.to_owned())
}

fn warn(name: &'static str, detail: String) -> Row {
    Row {
        name,
        state: State::Warn,
        blocking: false,
        detail,
    }
}

/// What the doctor is asked about.
pub struct Options<'a> {
    /// The project, for its flake and free space.
    pub project: &'a Path,
    /// What `sandbox.jit` answered (the write-and-execute rule's state).
    pub write_execute: WriteExecute,
}

/// Probes every layer and reports.
pub fn run(options: &Options<'_>) -> Report {
    let mut rows = vec![
        row(
            "user namespace",
            true,
            probe_clone(
                libc::CLONE_NEWUSER,
                "a user namespace with the caller's uid mapped to itself",
            ),
        ),
        row(
            "pid, ipc, mount, network namespaces",
            true,
            probe_clone(
                libc::CLONE_NEWUSER
                    | libc::CLONE_NEWPID
                    | libc::CLONE_NEWIPC
                    | libc::CLONE_NEWNS
                    | libc::CLONE_NEWNET,
                "all four in one clone",
            ),
        ),
        landlock_row(),
        row("landlock enforced", true, probe_landlock()),
    ];
    rows.extend(sandbox_rows(options.write_execute));
    rows.push(match options.write_execute {
        WriteExecute::Refused => row("write^execute", false, Ok("ON: no page may be writable and executable at once".into())),
        WriteExecute::Allowed => warn(
            "write^execute",
            "OFF: sandbox.jit answered allow, so JIT runtimes may map writable and executable pages".into(),
        ),
    });
    rows.push(cgroup_row());
    let has_flake = options.project.join("flake.nix").is_file();
    rows.push(row("nix daemon", has_flake, probe_daemon()).or_warn_unless(has_flake));
    rows.push(daemon_sandbox_row());
    rows.push(space_row(options.project));
    rows.push(crate::image::doctor_row());
    // The router is needed only by projects that permit something under
    // net, so its rows warn rather than block.
    for (name, result) in crate::net::probe::rows() {
        rows.push(row(name, false, result).or_warn_unless(false));
    }
    let can_run = !rows.iter().any(|r| r.blocking && r.state == State::Fail);
    Report { rows, can_run }
}

trait OrWarn {
    fn or_warn_unless(self, blocking: bool) -> Row;
}

impl OrWarn for Row {
    /// A failing row that blocks nothing here reads as a warning.
    fn or_warn_unless(self, blocking: bool) -> Row {
        if !blocking && self.state == State::Fail {
            Row {
                state: State::Warn,
                ..self
            }
        } else {
            self
        }
    }
}

/// Clones a child with `flags`, which maps its ids (for a user namespace) and exits.
fn probe_clone(flags: libc::c_int, what: &str) -> Result<String, ProbeError> {
    let uid_map = format!("{0} {0} 1\n", nix::unistd::getuid());
    let gid_map = format!("{0} {0} 1\n", nix::unistd::getgid());
    // The child only makes system calls and exits.
    let pid = sys::fork_running(flags, || {
        let write = |path: &std::ffi::CStr, text: &[u8]| sys::write_proc_file(path, text).is_ok();
        let ok = write(c"/proc/self/setgroups", b"deny")
            && write(c"/proc/self/uid_map", uid_map.as_bytes())
            && write(c"/proc/self/gid_map", gid_map.as_bytes());
        if ok { 0 } else { 1 }
    })
    .map_err(ProbeError::UserNamespace)?;
    match nix::sys::wait::waitpid(nix::unistd::Pid::from_raw(pid), None) {
        Ok(nix::sys::wait::WaitStatus::Exited(_, 0)) => Ok(what.to_owned()),
        Ok(_) => Err(seen(
            "the namespace was made but the id maps could not be written",
        )),
        Err(errno) => Err(ProbeError::Sys {
            what: "waiting for the probe",
            errno,
        }),
    }
}

fn landlock_row() -> Row {
    match walls::support() {
        Ok(support) if support.missing.is_empty() => row(
            "landlock",
            true,
            Ok(format!(
                "ABI {}: every filesystem right handled",
                support.abi
            )),
        ),
        Ok(support) => {
            let missing: Vec<String> = support
                .missing
                .iter()
                .map(|(r, abi)| format!("{r} (ABI {abi})"))
                .collect();
            row(
                "landlock",
                true,
                Ok(format!(
                    "ABI {}: all {} of its filesystem rights handled; a newer kernel would add {}",
                    support.abi,
                    support.handled.len(),
                    missing.join(", ")
                )),
            )
        }
        Err(e) => row("landlock", true, Err(e.into())),
    }
}

/// A child restricts itself with a ruleset that handles reading files and
/// grants nothing, then tries to read one.
fn probe_landlock() -> Result<String, ProbeError> {
    // With no Landlock at all there is nothing to enforce; the row above says why.
    walls::support()?;
    let ruleset = landlock::Ruleset::default();
    let ruleset = landlock::RulesetAttr::handle_access(ruleset, landlock::AccessFs::ReadFile)
        .and_then(landlock::Ruleset::create)?;
    let fd: Option<std::os::fd::OwnedFd> = ruleset.into();
    let fd = fd.ok_or_else(|| seen("no ruleset was created"))?;
    let raw = std::os::fd::AsRawFd::as_raw_fd(&fd);
    // The child only makes system calls and exits.
    let pid = sys::fork_running(0, || {
        let _ = nix::sys::prctl::set_no_new_privs();
        if sys::landlock_restrict_self(raw).is_err() {
            return 2;
        }
        let opened = nix::fcntl::open(
            c"/proc/self/status",
            nix::fcntl::OFlag::O_RDONLY | nix::fcntl::OFlag::O_CLOEXEC,
            nix::sys::stat::Mode::empty(),
        );
        if matches!(opened, Err(Errno::EACCES)) {
            0
        } else {
            1
        }
    })
    .map_err(ProbeError::Fork)?;
    match nix::sys::wait::waitpid(nix::unistd::Pid::from_raw(pid), None) {
        Ok(nix::sys::wait::WaitStatus::Exited(_, 0)) => {
            Ok("a restricted child was refused a file it had no right to".into())
        }
        Ok(nix::sys::wait::WaitStatus::Exited(_, 2)) => Err(seen("landlock_restrict_self failed")),
        _ => Err(seen(
            "a restricted child could still read a file it had no right to",
        )),
    }
}

/// Bits a sandbox probe sets for each check that failed.
const CAPS_LEFT: i64 = 1 << 40;
const NO_NNP: i64 = 1 << 41;
const IO_URING_OPEN: i64 = 1 << 42;
const WX_MAPPED: i64 = 1 << 43;
const TMP_SIZE_MASK: i64 = (1 << 40) - 1;

/// Runs inside a full sandbox: the tmpfs size, and a bit for each layer
/// found missing.
fn inside_probe() -> i64 {
    let mut result = 0i64;
    if let Ok(fs) = nix::sys::statfs::statfs(c"/run/chock/tmp") {
        result |= (fs.blocks() as i64).saturating_mul(fs.block_size()) & TMP_SIZE_MASK;
    }
    if crate::caps::current().map_or(true, |(e, p, i)| e | p | i != 0) {
        result |= CAPS_LEFT;
    }
    if nix::sys::prctl::get_no_new_privs() != Ok(true) {
        result |= NO_NNP;
    }
    if !sys::io_uring_refused() {
        result |= IO_URING_OPEN;
    }
    if sys::can_map_write_execute() {
        result |= WX_MAPPED;
    }
    result
}

/// Runs inside a full sandbox and calls a killed syscall: it must not return.
fn killed_probe() -> i64 {
    sys::keyctl_session_keyring();
    0
}

fn sandbox_rows(write_execute: WriteExecute) -> Vec<Row> {
    let names = [
        "mounts and pivot_root",
        "seccomp",
        "tmpfs cap",
        "capabilities and no_new_privs",
    ];
    let base = std::env::temp_dir().join(format!("chock-doctor-{}", std::process::id()));
    let workspace = base.join("workspace");
    let built = std::fs::create_dir_all(&workspace)
        .map_err(|e| format!("cannot make {}: {e}", workspace.display()))
        .and_then(|()| {
            let toolchain = Toolchain::DevShell {
                store_paths: Vec::new(),
                links: Vec::new(),
            };
            let layout = layout::resolve(&workspace, &base.join("cache"), &toolchain, TMP_BYTES)
                .map_err(|e| e.to_string())?;
            Sandbox::new(layout, Limits::for_this_machine(), write_execute)
                .map_err(|e| e.to_string())
        });
    let rows = match built {
        Ok(sandbox) => probe_rows(&sandbox, write_execute),
        Err(e) => names.iter().map(|n| row(n, true, Err(seen(&e)))).collect(),
    };
    let _ = std::fs::remove_dir_all(&base);
    rows
}

fn probe_rows(sandbox: &Sandbox, write_execute: WriteExecute) -> Vec<Row> {
    let value = match sandbox.probe(inside_probe) {
        Ok(ProbeOutcome::Returned(value)) => value,
        Ok(ProbeOutcome::Killed(signal)) => {
            let e = format!("the probe was killed by signal {signal}");
            return vec![row("mounts and pivot_root", true, Err(seen(&e)))];
        }
        Err(e) => return vec![row("mounts and pivot_root", true, Err(e.into()))],
    };
    let mounts = Ok(
        "a tmpfs root, binds, a fresh procfs, devpts and pivot_root, with the host's root detached"
            .into(),
    );
    let killed = match sandbox.probe(killed_probe) {
        Ok(ProbeOutcome::Killed(libc::SIGSYS)) => Ok(()),
        Ok(other) => Err(seen(&format!("keyctl was not killed ({other:?})"))),
        Err(e) => Err(ProbeError::Sandbox(e)),
    };
    let wx_expected = write_execute == WriteExecute::Refused;
    let seccomp = match killed {
        Ok(()) if value & IO_URING_OPEN != 0 => Err(seen("io_uring_setup did not fail with EPERM")),
        Ok(()) if wx_expected && value & WX_MAPPED != 0 => {
            Err(seen("a writable and executable page was mapped"))
        }
        Ok(()) => Ok(format!(
            "{} calls kill the process (keyctl tried: SIGSYS); io_uring fails with EPERM",
            crate::seccomp::KILLED_CALLS.len()
        )),
        Err(e) => Err(e),
    };
    let tmp_bytes = (value & TMP_SIZE_MASK) as u64;
    let tmpfs = if tmp_bytes == TMP_BYTES {
        Ok(format!(
            "/run/chock/tmp holds at most {} MiB",
            tmp_bytes >> 20
        ))
    } else {
        Err(seen(&format!(
            "/run/chock/tmp reports {tmp_bytes} bytes, not {TMP_BYTES}"
        )))
    };
    let caps = if value & (CAPS_LEFT | NO_NNP) == 0 {
        let who = if nix::unistd::getuid().is_root() {
            "the caller is root, mapped to itself; "
        } else {
            ""
        };
        Ok(format!(
            "{who}the program holds no capability in any set, securebits locked, no_new_privs on"
        ))
    } else {
        Err(seen("the program kept a capability or lacks no_new_privs"))
    };
    vec![
        row("mounts and pivot_root", true, mounts),
        row("seccomp", true, seccomp),
        row("tmpfs cap", true, tmpfs),
        row("capabilities and no_new_privs", true, caps),
    ]
}

fn cgroup_row() -> Row {
    const NAME: &str = "cgroup memory and pids";
    match delegation() {
        Delegation::Delegated { dir } => row(
            NAME,
            false,
            Ok(format!(
                "cgroup v2, delegated at {}: memory.max and pids.max are set per command",
                dir.display()
            )),
        ),
        Delegation::Legacy { memory, pids } => row(
            NAME,
            false,
            Ok(format!(
                "cgroup v1, as root: a group per command under {} (memory.limit_in_bytes) and {} (pids.max)",
                memory.display(),
                pids.display()
            )),
        ),
        // The kernel exempts uid 0 from RLIMIT_NPROC and no rlimit bounds
        // the memory of many processes together: for root, no cgroup means
        // no bound at all, so commands do not run.
        Delegation::NotDelegated { reason } if nix::unistd::geteuid().is_root() => row(
            NAME,
            true,
            Err(ProbeError::Seen(format!(
                "none usable: {reason}; as root nothing else bounds the number of processes (the kernel exempts uid 0 from RLIMIT_NPROC) or their memory together. Run Chock as a normal user, or give root the memory and pids controllers (cgroup v1 hierarchies, or cgroup v2 delegated to Chock's group)"
            ))),
        ),
        Delegation::NotDelegated { reason } => warn(
            NAME,
            format!(
                "not used: {reason}; the processes are bounded by RLIMIT_NPROC, and each process's memory by RLIMIT_DATA, but not their memory together"
            ),
        ),
    }
}

/// Connects to the daemon and exchanges the worker protocol's magic numbers.
fn probe_daemon() -> Result<String, ProbeError> {
    const WORKER_MAGIC_1: u64 = 0x6e69_7863;
    const WORKER_MAGIC_2: u64 = 0x6478_696f;
    let socket = chock_store::daemon::socket_path();
    let fail = |what: &'static str, source: std::io::Error| ProbeError::Daemon {
        what,
        socket: socket.clone(),
        source,
    };
    let mut stream = UnixStream::connect(&socket).map_err(|e| fail("cannot connect to", e))?;
    stream
        .set_read_timeout(Some(Duration::from_secs(3)))
        .map_err(|e| fail("cannot use", e))?;
    stream
        .write_all(&WORKER_MAGIC_1.to_le_bytes())
        .map_err(|e| fail("cannot write to", e))?;
    let mut reply = [0u8; 16];
    stream
        .read_exact(&mut reply)
        .map_err(|e| fail("no answer from", e))?;
    let magic = u64::from_le_bytes(reply[..8].try_into().unwrap_or_default());
    let version = u64::from_le_bytes(reply[8..].try_into().unwrap_or_default());
    if magic != WORKER_MAGIC_2 {
        return Err(ProbeError::Seen(format!(
            "{} answered, but not as a Nix daemon",
            socket.display()
        )));
    }
    Ok(format!(
        "{} answers, protocol 1.{}",
        socket.display(),
        version & 0xff
    ))
}

fn daemon_sandbox_row() -> Row {
    let output = std::process::Command::new("nix")
        .args([
            "--extra-experimental-features",
            "nix-command",
            "show-config",
            "--json",
        ])
        .stderr(std::process::Stdio::null())
        .output();
    let setting = output.ok().filter(|o| o.status.success()).and_then(|o| {
        let json: serde_json::Value = serde_json::from_slice(&o.stdout).ok()?;
        json.get("sandbox")?.get("value").cloned()
    });
    match setting {
        Some(serde_json::Value::Bool(true)) => row(
            "nix build sandbox",
            false,
            Ok(
                "on: builders see only their inputs and, except fixed-output ones, no network"
                    .into(),
            ),
        ),
        Some(value) => warn(
            "nix build sandbox",
            format!(
                "`sandbox = {value}` in the daemon's nix.conf: a builder runs unconfined and can reach the network, so nix.net.* answers bind only what Chock itself fetches"
            ),
        ),
        None => warn(
            "nix build sandbox",
            "`nix show-config` did not say; cannot tell whether builders are confined".into(),
        ),
    }
}

fn space_row(project: &Path) -> Row {
    match free_space(project) {
        Some(free) => {
            let detail = format!(
                "{} MiB free on the workspace's file system (floor {} MiB)",
                free >> 20,
                FREE_SPACE_FLOOR >> 20
            );
            // A command does not start below the floor (and is killed when
            // it passes it), so this row blocks like the layers do.
            if free >= FREE_SPACE_FLOOR {
                row("workspace space", true, Ok(detail))
            } else {
                row(
                    "workspace space",
                    true,
                    Err(ProbeError::Seen(format!(
                        "{detail}: commands do not start below the floor; free some space"
                    ))),
                )
            }
        }
        None => warn(
            "workspace space",
            format!("cannot read the file system of {}", project.display()),
        ),
    }
}
