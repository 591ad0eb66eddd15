//! Published ports, the sandbox's side: a helper inside the sandbox's
//! network namespace that dials loopback there and hands each connected
//! socket out to Chock.
//!
//! A sandbox has a network namespace of its own, so a server a sandboxed
//! program starts on 127.0.0.1:3000 listens on the namespace's loopback,
//! which nothing on the host can reach. A socket belongs to the namespace
//! it was made in, wherever its descriptor goes afterwards, so the way in
//! is a process that was born in the namespace: init forks the dialer
//! before the program, and the dialer waits on one end of a
//! `SOCK_SEQPACKET` pair for a port number, connects a new socket to
//! 127.0.0.1:<port> and sends the connected descriptor back
//! (`SCM_RIGHTS`), or the errno of the failed connect. Chock relays the
//! bytes between that socket and a connection it accepted on the host's
//! 127.0.0.1 (see `chock mcp`'s published ports).
//!
//! The dialer holds one power and nothing else: it runs with no
//! capabilities, `no_new_privs`, and a seccomp allowlist (see
//! [`crate::seccomp::dialer_program`]) under which every call but
//! receiving, making an IPv4 socket, connecting, polling, sending and
//! closing kills it. Its code only ever connects to 127.0.0.1, and the
//! namespace's loopback is all it can reach: no file, no program, no other
//! kind of socket. It ends when Chock closes its end, and with the
//! sandbox.

use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::sync::Mutex;
use std::time::Duration;

use nix::errno::Errno;
use seccompiler::BpfProgram;

use crate::caps;
use crate::error::SandboxError;
use crate::sys;

/// How long the dialer waits for a connect inside the namespace.
const CONNECT_TIMEOUT_MS: libc::c_int = 2000;
/// How long Chock waits for the dialer's reply.
const REPLY_TIMEOUT: Duration = Duration::from_secs(5);

/// What init needs to start the dialer (prepared by Chock).
pub(crate) struct HelperPlan {
    /// The dialer's end of the pair.
    pub(crate) fd: RawFd,
    /// The dialer's seccomp program.
    pub(crate) seccomp: BpfProgram,
}

/// Chock's end of a sandbox's dialer.
#[derive(Debug)]
pub struct Dialer {
    sock: Mutex<OwnedFd>,
}

/// Why a dial found nobody.
#[derive(Debug, thiserror::Error)]
pub enum DialError {
    /// The connect inside the namespace failed (nothing listens there yet:
    /// `ECONNREFUSED`).
    #[error("nothing answered on 127.0.0.1:{port} inside the sandbox ({errno})")]
    Refused {
        /// The port.
        port: u16,
        /// The connect's errno.
        errno: Errno,
    },
    /// The dialer has ended (the sandbox has).
    #[error("the sandbox's port helper has ended (the command has ended)")]
    Gone,
    /// Talking to the dialer failed.
    #[error("talking to the sandbox's port helper failed: {0}")]
    Channel(Errno),
}

impl Dialer {
    /// Connects to 127.0.0.1:`port` inside the sandbox: a connected,
    /// non-blocking stream. One dial at a time; each takes at most a few
    /// seconds.
    pub fn dial(&self, port: u16) -> Result<std::net::TcpStream, DialError> {
        let sock = self
            .sock
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let fd = sock.as_raw_fd();
        sys::send_port(fd, port).map_err(|errno| match errno {
            Errno::EPIPE | Errno::ECONNRESET | Errno::ENOTCONN => DialError::Gone,
            errno => DialError::Channel(errno),
        })?;
        if !sys::readable_within(fd, REPLY_TIMEOUT) {
            return Err(DialError::Channel(Errno::ETIMEDOUT));
        }
        match sys::recv_reply(fd).map_err(DialError::Channel)? {
            None => Err(DialError::Gone),
            Some((0, Some(stream))) => Ok(std::net::TcpStream::from(stream)),
            Some((0, None)) => Err(DialError::Channel(Errno::EBADMSG)),
            Some((errno, _)) => Err(DialError::Refused {
                port,
                errno: Errno::from_raw(errno),
            }),
        }
    }
}

/// A dialer pair: Chock's end and the plan init starts the dialer from.
pub(crate) fn pair() -> Result<(Dialer, OwnedFd, BpfProgram), SandboxError> {
    let (ours, theirs) = sys::seqpacket_pair().map_err(|errno| SandboxError::Sys {
        what: "creating the port helper's socket pair",
        errno,
    })?;
    Ok((
        Dialer {
            sock: Mutex::new(ours),
        },
        theirs,
        crate::seccomp::dialer_program()?,
    ))
}

/// Forks the dialer from init (allocation-free; never returns in the
/// dialer). Init keeps no copy of the dialer's end. A dialer that cannot
/// confine itself ends at once, so every dial then fails; the program runs
/// on regardless, with nothing published.
pub(crate) fn start(plan: &HelperPlan, last_cap: u32) -> Result<(), Errno> {
    // The dialer process only makes system calls.
    sys::fork_running(0, || run(plan, last_cap))?;
    sys::close(plan.fd);
    Ok(())
}

fn run(plan: &HelperPlan, last_cap: u32) -> ! {
    for fd in 0..3 {
        sys::close(fd);
    }
    if sys::close_all_but(&[plan.fd]).is_err()
        || caps::drop_all(last_cap).is_err()
        || seccompiler::apply_filter(&plan.seccomp).is_err()
    {
        sys::exit_now(126);
    }
    while let Some(port) = sys::recv_port(plan.fd) {
        let sent = match sys::dial_loopback(port, CONNECT_TIMEOUT_MS) {
            Ok(stream) => {
                let sent = sys::send_reply(plan.fd, 0, Some(stream));
                sys::close(stream);
                sent
            }
            Err(errno) => sys::send_reply(plan.fd, errno as i32, None),
        };
        if sent.is_err() {
            break;
        }
    }
    sys::exit_now(0)
}
