//! The direct path: a TCP connection the policy allows is dialled from the
//! host and put in the program's place, so its bytes never cross the relay.
//!
//! The program runs under one more seccomp filter, whose answer for
//! `connect` is a notification to Chock (`SECCOMP_RET_USER_NOTIF`), and a
//! Landlock domain that refuses every TCP connect the kernel would carry
//! out for it (`LANDLOCK_ACCESS_NET_CONNECT_TCP` handled, no port granted).
//! For each `connect` Chock takes a copy of the very socket the call named
//! (`pidfd_getfd`) and reads the address once from the caller's memory, then
//! acts on those copies only:
//!
//! - a TCP socket of the sandbox's own namespace, going to an address the
//!   resolver handed out for a name, from an unbound socket: the connection
//!   is decided as the relay decides it (`net.connect.<reversed host>.<port>`,
//!   the same remembered answers and log lines), dialled from the host to
//!   that very address, and the host's socket is put at the caller's
//!   descriptor number (`SECCOMP_IOCTL_NOTIF_ADDFD`). A refused one fails
//!   with `ECONNREFUSED`.
//! - any other TCP socket of the sandbox's namespace (loopback, an address
//!   nobody handed out, a bound socket): Chock connects the copy itself. The
//!   socket still belongs to the sandbox's namespace, so its ruleset, the
//!   relay and the refusals apply exactly as before.
//! - any other socket of the sandbox's namespace (Unix, UDP): the kernel
//!   carries the call out as the program made it.
//! - a socket of another namespace (a host socket handed over earlier, or
//!   one the program inherited): refused.
//!
//! Why a swap cannot turn this into a way out: the only host sockets inside
//! are connected ones this path placed. The program can change its memory
//! or its descriptor table while a call waits, but Chock never reads either
//! twice; a call the kernel carries out on a host socket is a TCP connect
//! Landlock refuses (a disconnect, `AF_UNSPEC`, is allowed and leaves a
//! socket nothing can connect again), and TCP Fast Open, which connects
//! inside `sendto`, is refused by the program's own filter. The host
//! sockets reach only the address that was decided.
//!
//! Without Landlock's network rights (ABI 4, Linux 6.7), a pidfd per thread
//! (Linux 6.9) or seccomp notifications, the relay carries every connection.

use std::net::{IpAddr, SocketAddr};
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread::JoinHandle;

use nix::errno::Errno;
use nix::poll::{PollFd, PollFlags, PollTimeout, poll};

use super::ns::Shared;
use super::{DIAL_TIMEOUT, MAX_LINKS};
use crate::sys::notify::{self, MAX_ADDRESS, Notice, Reply};

/// Whether this kernel has what the direct path needs (asked once).
pub(crate) fn supported() -> bool {
    static SUPPORTED: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *SUPPORTED
        .get_or_init(|| crate::sys::landlock_abi().is_ok_and(|abi| abi >= 4) && notify::available())
}

/// What the program process needs to hand its listener to Chock.
pub(crate) struct Plan {
    /// The program's end of the pair the listener is sent over.
    pub(crate) sock: std::os::fd::RawFd,
    /// The filter whose notifications the listener receives.
    pub(crate) filter: seccompiler::BpfProgram,
}

/// The pair the listener travels over: Chock's end, the program's end.
pub(crate) fn pair() -> Result<(OwnedFd, OwnedFd), crate::error::SandboxError> {
    crate::sys::seqpacket_pair().map_err(|errno| crate::error::SandboxError::Sys {
        what: "creating the direct path's socket pair",
        errno,
    })
}

/// Serves the direct path of one sandbox: waits for the program's listener
/// on `ours`, then answers its `connect` calls until the program and every
/// process it started have ended, or `stop` hangs up. `netns` is the
/// sandbox's network namespace cookie.
pub(crate) fn start(
    shared: Arc<Shared>,
    ours: OwnedFd,
    netns: u64,
    stop: Arc<OwnedFd>,
) -> std::io::Result<JoinHandle<()>> {
    std::thread::Builder::new()
        .name("chock-net-direct".into())
        .spawn(move || {
            if !ready(&ours, &stop) {
                return;
            }
            let Ok(listener) = crate::sys::receive_fd(ours.as_raw_fd()) else {
                return;
            };
            drop(ours);
            let listener = Arc::new(listener);
            let busy = Arc::new(AtomicUsize::new(0));
            while ready(&listener, &stop) {
                match notify::receive(listener.as_raw_fd()) {
                    Ok(notice) => answer(&shared, netns, &listener, &busy, notice),
                    // The caller went away before its call was read.
                    Err(Errno::ENOENT) => {}
                    Err(_) => return,
                }
            }
        })
}

/// Waits until `fd` may be read: false once it hangs up (no process is
/// left to notify) or `stop` does.
fn ready(fd: &OwnedFd, stop: &OwnedFd) -> bool {
    loop {
        let mut fds = [
            PollFd::new(fd.as_fd(), PollFlags::POLLIN),
            PollFd::new(stop.as_fd(), PollFlags::POLLIN),
        ];
        match poll(&mut fds, PollTimeout::NONE) {
            Ok(_) => {}
            Err(Errno::EINTR) => continue,
            Err(_) => return false,
        }
        if fds[1].any().unwrap_or(true) {
            return false;
        }
        let events = fds[0].revents().unwrap_or(PollFlags::POLLHUP);
        if events.contains(PollFlags::POLLIN) {
            return true;
        }
        if events.intersects(PollFlags::POLLHUP | PollFlags::POLLERR | PollFlags::POLLNVAL) {
            return false;
        }
    }
}

/// The socket a `connect` named and what it is.
struct Call {
    notice: Notice,
    socket: OwnedFd,
    domain: libc::c_int,
    tcp: bool,
    netns: u64,
}

/// Answers one notification: at once where the kernel may carry the call
/// out or it must be refused, on a thread of its own where it is dialled.
fn answer(
    shared: &Arc<Shared>,
    netns: u64,
    listener: &Arc<OwnedFd>,
    busy: &Arc<AtomicUsize>,
    notice: Notice,
) {
    let call = match look(listener, notice) {
        Ok(call) => call,
        Err(errno) => return send(listener, notice.id, Reply::Fail(errno)),
    };
    if call.netns != netns {
        // Not the sandbox's own: a host socket this path placed, or one the
        // program inherited. Neither is connected anywhere from here; a
        // placed one whose dial failed says why.
        let errno = match notify::int_option(&call.socket, libc::SOL_SOCKET, libc::SO_ERROR) {
            Ok(errno) if errno != 0 => Errno::from_raw(errno),
            _ => Errno::EISCONN,
        };
        return send(listener, notice.id, Reply::Fail(errno));
    }
    if !call.tcp {
        return send(listener, notice.id, Reply::Continue);
    }
    let address = match address_of(&call) {
        Ok(address) => address,
        Err(errno) => return send(listener, notice.id, Reply::Fail(errno)),
    };
    let route = route(shared, &call, &address);
    // A call that cannot wait (a non-blocking socket, an answer already
    // known) is carried out here; one that may wait for a dial or a person
    // gets a thread of its own, so the calls behind it are not held up.
    let waits = !nonblocking(&call.socket)
        || matches!(&route, Route::Direct(host, target)
            if shared.router.decide.settled(host, target.port()).is_none());
    if !waits {
        if let Some(reply) = carry(shared, listener, &call, &address, route) {
            send(listener, notice.id, reply);
        }
        return;
    }
    if busy.fetch_add(1, Ordering::SeqCst) >= MAX_LINKS {
        busy.fetch_sub(1, Ordering::SeqCst);
        return send(listener, notice.id, Reply::Fail(Errno::ECONNREFUSED));
    }
    let (own_shared, own_listener, count) = (shared.clone(), listener.clone(), busy.clone());
    let spawned = std::thread::Builder::new()
        .name("chock-net-direct".into())
        .spawn(move || {
            if let Some(reply) = carry(&own_shared, &own_listener, &call, &address, route) {
                send(&own_listener, call.notice.id, reply);
            }
            count.fetch_sub(1, Ordering::SeqCst);
        });
    if spawned.is_err() {
        busy.fetch_sub(1, Ordering::SeqCst);
        send(listener, notice.id, Reply::Fail(Errno::EAGAIN));
    }
}

/// Whether the program's socket is non-blocking (its own connect would
/// return at once).
fn nonblocking(socket: &OwnedFd) -> bool {
    nix::fcntl::fcntl(socket, nix::fcntl::FcntlArg::F_GETFL)
        .is_ok_and(|flags| flags & libc::O_NONBLOCK != 0)
}

fn send(listener: &OwnedFd, id: u64, reply: Reply) {
    // A call whose thread has gone (killed, or interrupted by a signal and
    // restarted as a new call) takes no answer.
    let _ = notify::reply(listener.as_raw_fd(), id, reply);
}

/// The socket the call names, taken from the caller's table once.
fn look(listener: &OwnedFd, notice: Notice) -> Result<Call, Errno> {
    let pidfd = notify::thread_pidfd(notice.tid)?;
    // The thread id named the caller when the pidfd was made.
    if !notify::waiting(listener.as_raw_fd(), notice.id) {
        return Err(Errno::ENOENT);
    }
    if notice.call != libc::SYS_connect as i32 {
        return Err(Errno::ENOSYS);
    }
    // `connect` takes an int descriptor: the upper half is ignored.
    let socket = notify::take(&pidfd, notice.args[0] as i32)?;
    let option = |level, name| notify::int_option(&socket, level, name);
    let domain = option(libc::SOL_SOCKET, libc::SO_DOMAIN)?;
    let tcp = matches!(domain, libc::AF_INET | libc::AF_INET6)
        && option(libc::SOL_SOCKET, libc::SO_TYPE)? == libc::SOCK_STREAM
        && option(libc::SOL_SOCKET, libc::SO_PROTOCOL)? == libc::IPPROTO_TCP;
    let netns = notify::netns_cookie(socket.as_raw_fd())?;
    Ok(Call {
        notice,
        socket,
        domain,
        tcp,
        netns,
    })
}

/// The address the call passed, read once from the caller's memory.
fn address_of(call: &Call) -> Result<Vec<u8>, Errno> {
    let len = call.notice.args[2] as u32 as usize;
    if len > MAX_ADDRESS {
        return Err(Errno::EINVAL);
    }
    let mut address = vec![0u8; len];
    notify::read_memory(call.notice.tid, call.notice.args[1], &mut address)?;
    Ok(address)
}

/// Where a TCP connect goes.
enum Route {
    /// The sandbox's namespace decides: its ruleset, the relay.
    Namespace,
    /// Decided as this host, and dialled from the host to this address.
    Direct(String, SocketAddr),
}

/// The route of a TCP connect: direct for an unbound socket going to an
/// address the resolver handed out for a name.
fn route(shared: &Shared, call: &Call, address: &[u8]) -> Route {
    let direct = || {
        let target = socket_address(address, call.domain)?;
        let ip = match target.ip() {
            IpAddr::V6(v6) if v6.to_ipv4_mapped().is_some() => return None,
            ip => ip,
        };
        if ip.is_loopback() || super::addr::refused(ip).is_some() {
            return None;
        }
        if notify::bound_port(&call.socket).ok()? != 0 {
            return None;
        }
        let host = shared
            .table
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .host_of(ip)?;
        Some(Route::Direct(host, target))
    };
    direct().unwrap_or(Route::Namespace)
}

/// Decides and carries out one TCP connect. `None` when the call went away
/// while it was dialled.
fn carry(
    shared: &Shared,
    listener: &OwnedFd,
    call: &Call,
    address: &[u8],
    route: Route,
) -> Option<Reply> {
    let Route::Direct(host, target) = route else {
        return Some(match notify::connect_bytes(&call.socket, address) {
            Ok(()) => Reply::Return(0),
            Err(errno) => Reply::Fail(errno),
        });
    };
    if !shared.router.decide.connect(&host, target.port()) {
        return Some(Reply::Fail(Errno::ECONNREFUSED));
    }
    let (outer, done) = match dial(call, target, !nonblocking(&call.socket)) {
        Ok(dialled) => dialled,
        Err(errno) => return Some(Reply::Fail(errno)),
    };
    let fd = call.notice.args[0] as i32;
    let cloexec = close_on_exec(call.notice.tid, fd);
    if !notify::waiting(listener.as_raw_fd(), call.notice.id) {
        return None;
    }
    notify::place(listener.as_raw_fd(), call.notice.id, &outer, fd, cloexec).ok()?;
    Some(if done {
        Reply::Return(0)
    } else {
        Reply::Fail(Errno::EINPROGRESS)
    })
}

/// The socket address in `bytes`, when it is one of `domain`'s.
fn socket_address(bytes: &[u8], domain: libc::c_int) -> Option<SocketAddr> {
    let family = i32::from(u16::from_ne_bytes([*bytes.first()?, *bytes.get(1)?]));
    let port = u16::from_be_bytes([*bytes.get(2)?, *bytes.get(3)?]);
    match (family, domain) {
        (libc::AF_INET, libc::AF_INET) => {
            let octets: [u8; 4] = bytes.get(4..8)?.try_into().ok()?;
            Some(SocketAddr::new(IpAddr::from(octets), port))
        }
        (libc::AF_INET6, libc::AF_INET6) if bytes.len() >= 24 => {
            let octets: [u8; 16] = bytes.get(8..24)?.try_into().ok()?;
            Some(SocketAddr::new(IpAddr::from(octets), port))
        }
        _ => None,
    }
}

/// A host socket connecting to `target` with the program's options: done
/// (`true`) or, for a program that does not wait, in progress.
fn dial(call: &Call, target: SocketAddr, blocking: bool) -> Result<(OwnedFd, bool), Errno> {
    let outer = notify::tcp_socket(call.domain)?;
    notify::lock_to_peer(&outer, target)?;
    copy_options(&call.socket, &outer, call.domain);
    let mut done = notify::start_connect(&outer, target)?;
    if blocking && !done {
        let mut fds = [PollFd::new(outer.as_fd(), PollFlags::POLLOUT)];
        let millis =
            PollTimeout::try_from(DIAL_TIMEOUT.as_millis() as i32).unwrap_or(PollTimeout::NONE);
        loop {
            match poll(&mut fds, millis) {
                Ok(0) => return Err(Errno::ETIMEDOUT),
                Ok(_) => break,
                Err(Errno::EINTR) => continue,
                Err(errno) => return Err(errno),
            }
        }
        match notify::int_option(&outer, libc::SOL_SOCKET, libc::SO_ERROR)? {
            0 => done = true,
            errno => return Err(Errno::from_raw(errno)),
        }
    }
    if blocking {
        nix::fcntl::fcntl(
            &outer,
            nix::fcntl::FcntlArg::F_SETFL(nix::fcntl::OFlag::O_RDWR),
        )?;
    }
    Ok((outer, done))
}

/// The options a program sets before it connects that still matter after.
fn copy_options(from: &OwnedFd, to: &OwnedFd, domain: libc::c_int) {
    let mut options = vec![
        (libc::IPPROTO_TCP, libc::TCP_NODELAY),
        (libc::SOL_SOCKET, libc::SO_KEEPALIVE),
        (libc::IPPROTO_TCP, libc::TCP_KEEPIDLE),
        (libc::IPPROTO_TCP, libc::TCP_KEEPINTVL),
        (libc::IPPROTO_TCP, libc::TCP_KEEPCNT),
        (libc::IPPROTO_TCP, libc::TCP_USER_TIMEOUT),
    ];
    if domain == libc::AF_INET6 {
        options.push((libc::IPPROTO_IPV6, libc::IPV6_V6ONLY));
    }
    for (level, name) in options {
        if let Ok(value) = notify::int_option(from, level, name) {
            let _ = notify::set_int_option(to, level, name, value);
        }
    }
}

/// Whether descriptor `fd` of thread `tid` is close-on-exec (as its
/// `fdinfo` says; not, when that cannot be read).
fn close_on_exec(tid: u32, fd: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{tid}/fdinfo/{fd}"))
        .ok()
        .and_then(|info| {
            let flags = info.lines().find_map(|l| l.strip_prefix("flags:"))?;
            i64::from_str_radix(flags.trim(), 8).ok()
        })
        .is_some_and(|flags| flags & i64::from(libc::O_CLOEXEC) != 0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn v4(ip: [u8; 4], port: u16) -> Vec<u8> {
        let mut bytes = (libc::AF_INET as u16).to_ne_bytes().to_vec();
        bytes.extend(port.to_be_bytes());
        bytes.extend(ip);
        bytes.extend([0u8; 8]);
        bytes
    }

    #[test]
    fn socket_addresses_are_read_only_for_their_own_family() {
        let bytes = v4([192, 0, 2, 7], 443);
        assert_eq!(
            socket_address(&bytes, libc::AF_INET),
            Some("192.0.2.7:443".parse().unwrap())
        );
        assert_eq!(socket_address(&bytes, libc::AF_INET6), None);
        assert_eq!(socket_address(&bytes[..6], libc::AF_INET), None);
        assert_eq!(socket_address(&[], libc::AF_INET), None);
        let mut six = (libc::AF_INET6 as u16).to_ne_bytes().to_vec();
        six.extend(8080u16.to_be_bytes());
        six.extend([0u8; 4]);
        six.extend(
            "2001:db8::5"
                .parse::<std::net::Ipv6Addr>()
                .unwrap()
                .octets(),
        );
        assert_eq!(
            socket_address(&six, libc::AF_INET6),
            Some("[2001:db8::5]:8080".parse().unwrap())
        );
        assert_eq!(socket_address(&six[..20], libc::AF_INET6), None);
        let unspec = 0u16.to_ne_bytes();
        assert_eq!(socket_address(&unspec, libc::AF_INET), None);
    }

    /// A handed-over socket the program disconnected and made listen on
    /// the host hears nobody but the peer it was dialled to.
    #[test]
    fn a_socket_locked_to_its_peer_hears_nobody_else() {
        let peer = std::net::TcpListener::bind("127.0.0.1:0").expect("peer");
        let peer_address = peer.local_addr().expect("address");
        let reachable = |locked: bool| {
            let socket = notify::tcp_socket(libc::AF_INET).expect("socket");
            if locked {
                notify::lock_to_peer(&socket, peer_address).expect("lock");
                assert_eq!(
                    notify::set_int_option(&socket, libc::SOL_SOCKET, libc::SO_LOCK_FILTER, 0),
                    Err(Errno::EPERM),
                    "the lock cannot be lifted"
                );
            }
            notify::listen(&socket).expect("listen");
            let port = notify::bound_port(&socket).expect("port");
            std::net::TcpStream::connect_timeout(
                &SocketAddr::from(([127, 0, 0, 1], port)),
                Duration::from_millis(700),
            )
            .is_ok()
        };
        assert!(reachable(false), "without the lock a stranger gets in");
        assert!(!reachable(true), "with the lock no stranger does");
    }

    proptest::proptest! {
        #[test]
        fn any_bytes_parse_without_panic(bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..130)) {
            let _ = socket_address(&bytes, libc::AF_INET);
            let _ = socket_address(&bytes, libc::AF_INET6);
        }
    }
}
