//! `chock doctor`'s rows for the router: each piece set up in a namespace
//! of its own and used for real, with a decider that refuses everything.

use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpStream, UdpSocket};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use hickory_proto::op::{Message, MessageType, Query, ResponseCode};
use hickory_proto::rr::{Name, RecordType};

use super::ns::Shared;
use super::{Decide, Router};
use crate::doctor::ProbeError;
use crate::sys::{self, SocketSpec};

/// The name the resolver probe asks about.
const PROBE_NAME: &str = "chock-doctor.invalid";
/// The address the relay probe dials (TEST-NET-1: no host answers there).
const PROBE_TARGET: Ipv4Addr = Ipv4Addr::new(192, 0, 2, 1);
const PROBE_PORT: u16 = 9;

/// Refuses every name and connection, remembering the connections it saw.
#[derive(Default)]
struct Refuser {
    seen: Mutex<Vec<(String, u16)>>,
}

impl Decide for Refuser {
    fn name(&self, _host: &str) -> bool {
        false
    }

    fn connect(&self, host: &str, port: u16) -> bool {
        if let Ok(mut seen) = self.seen.lock() {
            seen.push((host.to_owned(), port));
        }
        false
    }
}

/// One row per piece: namespace, ruleset, resolver, relay.
pub fn rows() -> Vec<(&'static str, Result<String, ProbeError>)> {
    let mut rows = Vec::new();
    let (holder, release) = match hold_namespace() {
        Ok(held) => held,
        Err(e) => {
            rows.push(("network namespace", Err(e)));
            return rows;
        }
    };
    rows.push((
        "network namespace",
        Ok("a user and network namespace Chock sets up from outside".into()),
    ));
    let refuser = Arc::new(Refuser::default());
    let router = Router {
        decide: refuser.clone(),
        upstream: Some(SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), 53)),
    };
    match super::attach(&router, holder, None) {
        Err(e) => rows.push(("network ruleset", Err(e.into()))),
        Ok(attached) => {
            rows.push((
                "network ruleset",
                Ok("nftables table inet chock loaded: allow set, redirect to the relay, everything else refused".into()),
            ));
            rows.push(("network resolver", probe_resolver(&attached)));
            rows.push(("network relay", probe_relay(&attached, &refuser)));
        }
    }
    rows.push(("network direct path", direct_row()));
    drop(release);
    let _ = nix::sys::wait::waitpid(nix::unistd::Pid::from_raw(holder), None);
    rows
}

/// Whether allowed connections are handed to the program directly (see
/// `net::direct`), or all carried by the relay, and why.
fn direct_row() -> Result<String, ProbeError> {
    let abi = sys::landlock_abi().unwrap_or(0);
    if super::direct::supported() {
        Ok(format!(
            "allowed connections are handed to the program as host sockets (seccomp notifications, a pidfd per thread, Landlock ABI {abi} network rights)"
        ))
    } else {
        Err(ProbeError::Seen(format!(
            "the relay carries every connection, at about half a direct connection's throughput: the direct path needs seccomp notifications, a pidfd per thread (Linux 6.9) and Landlock's network rights (ABI 4; this kernel has {abi})"
        )))
    }
}

/// A child in a fresh user and network namespace that waits until the
/// returned descriptor is closed.
fn hold_namespace() -> Result<(libc::pid_t, std::os::fd::OwnedFd), ProbeError> {
    let (read, write) =
        nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC).map_err(|errno| ProbeError::Sys {
            what: "a pipe",
            errno,
        })?;
    // The child only reads one byte and exits.
    let pid = sys::fork_running(libc::CLONE_NEWUSER | libc::CLONE_NEWNET, || {
        sys::close(std::os::fd::AsRawFd::as_raw_fd(&write));
        let mut byte = [0u8; 1];
        let _ = nix::unistd::read(&read, &mut byte);
        0
    })
    .map_err(|errno| ProbeError::Sys {
        what: "clone refused",
        errno,
    })?;
    drop(read);
    Ok((pid, write))
}

/// An unbound socket of `kind` made inside the probe's namespace.
fn inside(shared: &Shared, kind: libc::c_int) -> Result<std::os::fd::OwnedFd, ProbeError> {
    let spec = SocketSpec {
        kind,
        addr: SocketAddr::new(IpAddr::V4(Ipv4Addr::UNSPECIFIED), 0),
    };
    shared
        .sockets(&[spec])
        .map_err(|errno| ProbeError::Sys {
            what: "a socket inside",
            errno,
        })?
        .pop()
        .ok_or_else(|| ProbeError::Seen("a socket inside: none came".to_owned()))
}

fn probe_resolver(attached: &super::Attached) -> Result<String, ProbeError> {
    let socket = UdpSocket::from(inside(&attached.shared, libc::SOCK_DGRAM)?);
    let mut query = Message::query();
    let name = Name::from_ascii(format!("{PROBE_NAME}."))?;
    query.add_query(Query::query(name, RecordType::A));
    let bytes = query.to_vec()?;
    socket.set_read_timeout(Some(Duration::from_secs(3)))?;
    socket
        .send_to(&bytes, (Ipv4Addr::LOCALHOST, 53))
        .map_err(|source| ProbeError::Exchange {
            what: "sending a question to 127.0.0.1:53 inside",
            source,
        })?;
    let mut reply = [0u8; super::MAX_DATAGRAM];
    let n = socket
        .recv(&mut reply)
        .map_err(|source| ProbeError::Exchange {
            what: "no answer from the resolver",
            source,
        })?;
    let reply = Message::from_vec(reply.get(..n).unwrap_or_default())?;
    if reply.metadata.message_type == MessageType::Response
        && reply.metadata.response_code == ResponseCode::Refused
    {
        Ok(format!(
            "answers on 127.0.0.1:53 inside; a refused name ({PROBE_NAME}) is REFUSED, not looked up"
        ))
    } else {
        Err(ProbeError::Seen(format!(
            "the resolver answered {} for a refused name",
            reply.metadata.response_code
        )))
    }
}

fn probe_relay(attached: &super::Attached, refuser: &Refuser) -> Result<String, ProbeError> {
    let change = attached
        .shared
        .table
        .lock()
        .map_err(|_| ProbeError::Seen("the name table is poisoned".to_owned()))?
        .remember(PROBE_NAME, &[IpAddr::V4(PROBE_TARGET)]);
    attached.shared.apply(&change)?;
    let socket = inside(&attached.shared, libc::SOCK_STREAM)?;
    // Dialled from inside the namespace: the ruleset sends it to the relay,
    // which recovers the destination, asks the (refusing) decider, and resets.
    let target = SocketAddr::new(IpAddr::V4(PROBE_TARGET), PROBE_PORT);
    sys::connect_timeout(&socket, target, Duration::from_secs(3))
        .map_err(|errno| ProbeError::Dial { target, errno })?;
    let stream = TcpStream::from(socket);
    let _ = stream.set_read_timeout(Some(Duration::from_secs(3)));
    let mut byte = [0u8; 1];
    let _ = std::io::Read::read(&mut &stream, &mut byte);
    let seen = refuser.seen.lock().map(|s| s.clone()).unwrap_or_default();
    if seen.contains(&(PROBE_NAME.to_owned(), PROBE_PORT)) {
        Ok(format!(
            "a connection to {target} inside reached the relay, which recovered its destination and decided it (refused)"
        ))
    } else {
        Err(ProbeError::Seen(format!(
            "the relay did not decide the connection to {target} (saw {seen:?})"
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// With the relay gone, a connection the ruleset sends to it is refused
    /// by the kernel at once, and an address never handed out is refused
    /// as well: neither hangs. Needs user namespaces, iproute2 and nftables.
    #[test]
    fn a_dead_relay_and_an_address_never_handed_out_are_refused_at_once() {
        let (holder, release) = hold_namespace().expect("a namespace");
        let router = Router {
            decide: Arc::new(Refuser::default()),
            upstream: None,
        };
        let attached = super::super::attach(&router, holder, None).expect("the router");
        let shared = attached.shared.clone();
        let change = shared
            .table
            .lock()
            .expect("table")
            .remember(PROBE_NAME, &[IpAddr::V4(PROBE_TARGET)]);
        shared.apply(&change).expect("the allow set");
        let dial = |target: Ipv4Addr| {
            let socket = inside(&shared, libc::SOCK_STREAM).expect("a socket inside");
            let began = std::time::Instant::now();
            let result = sys::connect_timeout(
                &socket,
                SocketAddr::new(IpAddr::V4(target), PROBE_PORT),
                Duration::from_secs(5),
            );
            (result, began.elapsed())
        };
        let (never, took) = dial(Ipv4Addr::new(192, 0, 2, 2));
        assert_eq!(never, Err(nix::errno::Errno::ECONNREFUSED));
        assert!(took < Duration::from_secs(1), "{took:?}");
        drop(attached);
        let (dead, took) = dial(PROBE_TARGET);
        assert_eq!(dead, Err(nix::errno::Errno::ECONNREFUSED));
        assert!(took < Duration::from_secs(1), "{took:?}");
        drop(release);
        let _ = nix::sys::wait::waitpid(nix::unistd::Pid::from_raw(holder), None);
    }
}
