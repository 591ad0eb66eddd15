//! Setting up a sandbox's network namespace from outside, and the state
//! the resolver and the relay share while the command runs.

use std::io::Write;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use super::table::{Change, Table};
use super::{REFUSE_PORT, RELAY_PORT, Router};
use crate::error::SandboxError;
use crate::sys::{self, SocketSpec};

/// The namespace's own source address for IPv4 (link-local, which no
/// connection may reach) and IPv6 (discard-only).
const SOURCE_V4: &str = "169.254.0.1";
const SOURCE_V6: &str = "100::1";

/// The sandbox's namespaces, held open for the run, and the names
/// handed out so far.
pub(crate) struct Shared {
    user: OwnedFd,
    net: OwnedFd,
    pub(crate) table: Mutex<Table>,
    pub(crate) router: Router,
}

impl Shared {
    /// Makes `specs` inside this namespace.
    pub(crate) fn sockets(&self, specs: &[SocketSpec]) -> Result<Vec<OwnedFd>, nix::errno::Errno> {
        sys::sockets_in(self.user.as_raw_fd(), self.net.as_raw_fd(), specs)
    }

    /// Runs `program` (nft or ip) inside the namespace with `script` on
    /// its standard input.
    fn run(&self, program: &'static str, args: &[&str], script: &str) -> Result<(), ToolError> {
        self.start(program, args, script)?.finish()
    }

    /// Starts `program` (nft or ip) inside the namespace with `script` on
    /// its standard input (all of it written, and closed), not waiting
    /// for it to end.
    fn start(
        &self,
        program: &'static str,
        args: &[&str],
        script: &str,
    ) -> Result<Started, ToolError> {
        let path = tool(program).ok_or(ToolError::Missing { program })?;
        let mut command = Command::new(&path);
        command
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .env_clear();
        sys::run_in_namespaces(&mut command, self.user.as_raw_fd(), self.net.as_raw_fd());
        let mut child = match command.spawn() {
            Ok(child) => child,
            Err(source) => return Err(ToolError::Start { path, source }),
        };
        let mut started = Started { path, child: None };
        if let Some(mut stdin) = child.stdin.take()
            && let Err(e) = stdin.write_all(script.as_bytes())
        {
            let _ = child.kill();
            let _ = child.wait();
            return Err(ToolError::Input {
                path: started.path.clone(),
                source: e,
            });
        }
        started.child = Some(child);
        Ok(started)
    }

    /// Puts a change of the name table into the kernel's allow set.
    pub(crate) fn apply(&self, change: &Change) -> Result<(), ToolError> {
        let mut script = String::new();
        for (verb, addrs) in [("delete", &change.remove), ("add", &change.add)] {
            for (set, v6) in [("allow4", false), ("allow6", true)] {
                let list: Vec<String> = addrs
                    .iter()
                    .filter(|a| a.is_ipv6() == v6)
                    .map(IpAddr::to_string)
                    .collect();
                if !list.is_empty() {
                    script.push_str(&format!(
                        "{verb} element inet chock {set} {{ {} }}\n",
                        list.join(", ")
                    ));
                }
            }
        }
        if script.is_empty() {
            return Ok(());
        }
        self.run("nft", &["-f", "-"], &script)
    }
}

/// Why nft or ip did not do its work in the namespace.
#[derive(Debug, thiserror::Error)]
pub enum ToolError {
    /// The tool is not installed where Chock looks.
    #[error(
        "`{program}` was not found in /usr/sbin, /sbin, /usr/bin or /bin; install it (nftables, iproute2) or set `.policy.net.router = .none`"
    )]
    Missing { program: &'static str },
    /// The tool could not be started.
    #[error("{} could not start: {source}", path.display())]
    Start {
        path: PathBuf,
        source: std::io::Error,
    },
    /// Its script could not be written to it.
    #[error("{} did not take its input: {source}", path.display())]
    Input {
        path: PathBuf,
        source: std::io::Error,
    },
    /// It was waited for without having been started.
    #[error("{} was not started", path.display())]
    NotStarted { path: PathBuf },
    /// Waiting for it failed.
    #[error("{} could not be waited for: {source}", path.display())]
    Wait {
        path: PathBuf,
        source: std::io::Error,
    },
    /// The tool ran and refused: its status and what it said.
    #[error("{} failed ({status}): {stderr}", path.display())]
    Failed {
        path: PathBuf,
        status: std::process::ExitStatus,
        stderr: String,
    },
}

/// A tool started by [`Shared::start`]: [`Started::finish`] waits for it
/// and says whether it did its work. Dropped unfinished, it is killed and
/// reaped.
struct Started {
    path: PathBuf,
    child: Option<std::process::Child>,
}

impl Started {
    fn finish(mut self) -> Result<(), ToolError> {
        let path = std::mem::take(&mut self.path);
        let Some(child) = self.child.take() else {
            return Err(ToolError::NotStarted { path });
        };
        let out = match child.wait_with_output() {
            Ok(out) => out,
            Err(source) => return Err(ToolError::Wait { path, source }),
        };
        if out.status.success() {
            Ok(())
        } else {
            Err(ToolError::Failed {
                path,
                status: out.status,
                stderr: String::from_utf8_lossy(&out.stderr).trim().to_owned(),
            })
        }
    }
}

impl Drop for Started {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Waits until `sockets` may be read; false once `stop` hangs up (or
/// waiting fails), when the thread serving them ends.
pub(crate) fn wait_readable(sockets: [std::os::fd::BorrowedFd<'_>; 2], stop: &OwnedFd) -> bool {
    use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
    use std::os::fd::AsFd;
    loop {
        let mut fds = [
            PollFd::new(sockets[0], PollFlags::POLLIN),
            PollFd::new(sockets[1], PollFlags::POLLIN),
            PollFd::new(stop.as_fd(), PollFlags::POLLIN),
        ];
        match poll(&mut fds, PollTimeout::NONE) {
            Ok(_) => return !fds[2].any().unwrap_or(true),
            Err(nix::errno::Errno::EINTR) => continue,
            Err(_) => return false,
        }
    }
}

/// Where a host tool is: the system directories only, never the caller's PATH.
pub(crate) fn tool(name: &str) -> Option<PathBuf> {
    ["/usr/sbin", "/sbin", "/usr/bin", "/bin"]
        .iter()
        .map(|dir| PathBuf::from(dir).join(name))
        .find(|p| p.is_file())
}

/// The ruleset (see the module documentation of `net`), its allow sets
/// holding `literals` from the start.
fn ruleset(literals: &[IpAddr]) -> String {
    let elements = |v6: bool| {
        let list: Vec<String> = literals
            .iter()
            .filter(|a| a.is_ipv6() == v6)
            .map(IpAddr::to_string)
            .collect();
        if list.is_empty() {
            String::new()
        } else {
            format!(" elements = {{ {} }};", list.join(", "))
        }
    };
    let (allow4, allow6) = (elements(false), elements(true));
    format!(
        "table inet chock {{
  set allow4 {{ type ipv4_addr; size 1024;{allow4} }}
  set allow6 {{ type ipv6_addr; size 1024;{allow6} }}
  chain divert {{
    type nat hook output priority -100; policy accept;
    ip daddr 127.0.0.0/8 return
    ip6 daddr ::1 return
    ip daddr @allow4 meta l4proto tcp redirect to :{RELAY_PORT}
    ip6 daddr @allow6 meta l4proto tcp redirect to :{RELAY_PORT}
    meta l4proto tcp redirect to :{REFUSE_PORT}
  }}
  chain fence {{
    type filter hook output priority 0; policy drop;
    ip daddr 127.0.0.0/8 accept
    ip6 daddr ::1 accept
    ct status dnat accept
    reject
  }}
}}
"
    )
}

/// The addresses and routes: loopback up, a source address of the
/// namespace's own, and every destination routed to loopback, where the
/// ruleset decides.
fn links() -> String {
    format!(
        "link set lo up
address add {SOURCE_V4}/32 dev lo
address add {SOURCE_V6}/128 dev lo nodad
route add default dev lo src {SOURCE_V4}
route add ::/0 dev lo src {SOURCE_V6}
"
    )
}

/// The router's threads for one sandbox; dropping this stops them.
pub(crate) struct Attached {
    pub(crate) shared: Arc<Shared>,
    /// Closing it wakes every thread with a hang-up.
    stop: Option<OwnedFd>,
    threads: Vec<JoinHandle<()>>,
}

impl Drop for Attached {
    fn drop(&mut self) {
        self.stop.take();
        for thread in self.threads.drain(..) {
            let _ = thread.join();
        }
    }
}

fn setup_error(what: &str, detail: impl std::fmt::Display) -> SandboxError {
    SandboxError::Unsupported(format!(
        "the network router could not be set up ({what}: {detail}); `chock doctor` checks each piece, and `.policy.net.router = .none` runs without a network"
    ))
}

/// Gives the sandbox whose init is `pid` (not yet reaped, so the pid is
/// still its own) a router: addresses and routes, the ruleset, and the
/// resolver's and relay's sockets made inside it, served from here; with
/// `direct` (Chock's end of the pair the program sends its listener over),
/// the direct path too.
pub(crate) fn attach(
    router: &Router,
    pid: libc::pid_t,
    direct: Option<OwnedFd>,
) -> Result<Attached, SandboxError> {
    let open = |kind: &str| {
        let path = format!("/proc/{pid}/ns/{kind}");
        std::fs::File::open(&path)
            .map(OwnedFd::from)
            .map_err(|e| setup_error(&format!("opening {path}"), e))
    };
    let shared = Arc::new(Shared {
        user: open("user")?,
        net: open("net")?,
        table: Mutex::new(Table::default()),
        router: router.clone(),
    });
    // Address literals a rule allows are reachable without a lookup: each
    // is an entry of its own, decided as itself, in the allow set from the
    // ruleset's first moment.
    let literals: Vec<IpAddr> = router
        .decide
        .literals()
        .into_iter()
        .map(IpAddr::from)
        .filter(|literal| super::addr::refused(*literal).is_none())
        .take(super::MAX_NAMES / 2)
        .collect();
    {
        let mut table = shared
            .table
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        for literal in &literals {
            table.literal(*literal);
        }
    }
    // The ruleset and the addresses are independent: both tools run at
    // once, and both are done before any socket is made (binding needs
    // loopback up) or the program starts.
    let rules = shared
        .start("nft", &["-f", "-"], &ruleset(&literals))
        .map_err(|e| setup_error("the ruleset", e))?;
    shared
        .run("ip", &["-batch", "-"], &links())
        .map_err(|e| setup_error("addresses and routes", e))?;
    rules.finish().map_err(|e| setup_error("the ruleset", e))?;
    let specs = [
        (
            libc::SOCK_STREAM,
            IpAddr::V4(Ipv4Addr::LOCALHOST),
            RELAY_PORT,
        ),
        (
            libc::SOCK_STREAM,
            IpAddr::V6(Ipv6Addr::LOCALHOST),
            RELAY_PORT,
        ),
        (libc::SOCK_DGRAM, IpAddr::V4(Ipv4Addr::LOCALHOST), 53),
        (libc::SOCK_DGRAM, IpAddr::V6(Ipv6Addr::LOCALHOST), 53),
    ]
    .map(|(kind, ip, port)| SocketSpec {
        kind,
        addr: SocketAddr::new(ip, port),
    });
    let mut sockets = sys::sockets_in(shared.user.as_raw_fd(), shared.net.as_raw_fd(), &specs)
        .map_err(|e| setup_error("the relay's and the resolver's sockets", e))?
        .into_iter();
    let mut next = || {
        sockets
            .next()
            .ok_or_else(|| setup_error("the sockets", "one is missing"))
    };
    let (relay4, relay6, dns4, dns6) = (next()?, next()?, next()?, next()?);
    let netns = sys::notify::netns_cookie(relay4.as_raw_fd())
        .map_err(|e| setup_error("the namespace's cookie", e))?;
    let (stop_read, stop_write) =
        nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC).map_err(|e| setup_error("a pipe", e))?;
    let stop_read = Arc::new(stop_read);
    let mut threads = Vec::new();
    if let Some(ours) = direct {
        threads.push(
            super::direct::start(shared.clone(), ours, netns, stop_read.clone())
                .map_err(|e| setup_error("the direct path", e))?,
        );
    }
    let resolver = super::dns::start(shared.clone(), [dns4, dns6], stop_read.clone())
        .map_err(|e| setup_error("the resolver", e))?;
    let relay = super::relay::start(shared.clone(), [relay4, relay6], stop_read)
        .map_err(|e| setup_error("the relay", e))?;
    threads.extend([resolver, relay]);
    Ok(Attached {
        shared,
        stop: Some(stop_write),
        threads,
    })
}
