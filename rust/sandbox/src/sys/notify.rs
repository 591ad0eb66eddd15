//! The system calls of the router's direct path: a seccomp filter whose
//! answer for `connect` is a notification to Chock, what Chock does with the
//! notification (read the caller's socket and address, put a socket of its
//! own in the caller's descriptor table, answer), and the socket options it
//! reads and copies.
//!
//! [`install_listener`] runs in the program process between `clone` and
//! `execve`, so it allocates nothing; the rest runs in Chock's own threads.

use std::os::fd::{AsRawFd, OwnedFd, RawFd};

use nix::errno::Errno;

use super::{owned, result};

/// `SO_NETNS_COOKIE` (Linux 5.14, the same number on every architecture
/// Chock builds for): which network namespace a socket belongs to.
const SO_NETNS_COOKIE: libc::c_int = 71;
/// `pidfd_open` and `pidfd_getfd` (the same numbers on every architecture).
const SYS_PIDFD_OPEN: libc::c_long = 434;
const SYS_PIDFD_GETFD: libc::c_long = 438;
/// `PIDFD_THREAD` (Linux 6.9): a pidfd for one thread, not only a leader.
const PIDFD_THREAD: libc::c_uint = libc::O_EXCL as libc::c_uint;
/// `seccomp(2)` operation: is this return action available?
const SECCOMP_GET_ACTION_AVAIL: libc::c_uint = 2;
/// The largest socket address `connect` takes (`sockaddr_storage`).
pub(crate) const MAX_ADDRESS: usize = 128;

/// In the program process: installs `filter`, whose notifications go to the
/// descriptor returned. Needs `no_new_privs`. Allocation-free. Once Chock
/// has read a call, only a fatal signal interrupts it, so a runtime that
/// signals its threads all the time (Go's preemption) does not restart a
/// connect Chock is already dialling.
pub(crate) fn install_listener(filter: &[seccompiler::sock_filter]) -> Result<RawFd, Errno> {
    let program = libc::sock_fprog {
        len: u16::try_from(filter.len()).map_err(|_| Errno::E2BIG)?,
        // The kernel only reads the instructions; both types are the
        // classic BPF instruction of linux/filter.h.
        filter: filter.as_ptr().cast::<libc::sock_filter>().cast_mut(),
    };
    // SAFETY: `program` points at `filter`, which lives across the call.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_seccomp,
            libc::SECCOMP_SET_MODE_FILTER,
            libc::SECCOMP_FILTER_FLAG_NEW_LISTENER | libc::SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV,
            &program as *const libc::sock_fprog,
        )
    };
    result(fd).map(|fd| fd as RawFd)
}

/// Whether this kernel has everything the direct path needs: notification
/// as a seccomp answer, a pidfd for one thread, and network namespace
/// cookies on sockets.
pub(crate) fn available() -> bool {
    let action: u32 = libc::SECCOMP_RET_USER_NOTIF;
    // SAFETY: the call reads the one u32 it is given.
    let notify = unsafe {
        libc::syscall(
            libc::SYS_seccomp,
            SECCOMP_GET_ACTION_AVAIL,
            0,
            &action as *const u32,
        )
    } == 0;
    // SAFETY: gettid has no arguments.
    let me = unsafe { libc::syscall(libc::SYS_gettid) } as u32;
    let thread = thread_pidfd(me).is_ok();
    let cookie = std::net::UdpSocket::bind("127.0.0.1:0")
        .ok()
        .is_some_and(|s| netns_cookie(s.as_raw_fd()).is_ok());
    notify && thread && cookie
}

/// One notification: which call, from which thread, with which arguments.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Notice {
    pub(crate) id: u64,
    /// The calling thread, in Chock's PID namespace.
    pub(crate) tid: u32,
    pub(crate) call: i32,
    pub(crate) args: [u64; 6],
}

/// Waits for the next notification on `listener` (`ENOENT`: its caller went
/// away before it was read).
pub(crate) fn receive(listener: RawFd) -> Result<Notice, Errno> {
    loop {
        // SAFETY: the kernel wants a zeroed struct, and fills it.
        let mut raw: libc::seccomp_notif = unsafe { std::mem::zeroed() };
        // SAFETY: `raw` is a live seccomp_notif, the ioctl's argument.
        let ret = unsafe { libc::ioctl(listener, libc::SECCOMP_IOCTL_NOTIF_RECV, &mut raw) };
        if ret == 0 {
            return Ok(Notice {
                id: raw.id,
                tid: raw.pid,
                call: raw.data.nr,
                args: raw.data.args,
            });
        }
        if Errno::last() != Errno::EINTR {
            return Err(Errno::last());
        }
    }
}

/// Whether the call `id` still waits for its answer: its thread is alive
/// and inside the call, so the thread id still names it.
pub(crate) fn waiting(listener: RawFd, id: u64) -> bool {
    // SAFETY: the ioctl reads the one u64 it is given.
    unsafe { libc::ioctl(listener, libc::SECCOMP_IOCTL_NOTIF_ID_VALID, &id) == 0 }
}

/// How a notified call ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Reply {
    /// The kernel carries the call out itself, as the caller made it.
    Continue,
    /// The call returns this value.
    Return(i64),
    /// The call fails with this errno.
    Fail(Errno),
}

/// Ends the call `id` with `reply`.
pub(crate) fn reply(listener: RawFd, id: u64, reply: Reply) -> Result<(), Errno> {
    // SAFETY: plain data, zeroed.
    let mut raw: libc::seccomp_notif_resp = unsafe { std::mem::zeroed() };
    raw.id = id;
    match reply {
        Reply::Continue => raw.flags = libc::SECCOMP_USER_NOTIF_FLAG_CONTINUE as u32,
        Reply::Return(value) => raw.val = value,
        Reply::Fail(errno) => raw.error = -(errno as i32),
    }
    // SAFETY: `raw` is a live seccomp_notif_resp, the ioctl's argument.
    let ret = unsafe { libc::ioctl(listener, libc::SECCOMP_IOCTL_NOTIF_SEND, &raw) };
    result(libc::c_long::from(ret)).map(drop)
}

/// Puts `fd` in the descriptor table of call `id`'s process at number
/// `at`, replacing what is there (as `dup2` would).
pub(crate) fn place(
    listener: RawFd,
    id: u64,
    fd: &OwnedFd,
    at: i32,
    cloexec: bool,
) -> Result<(), Errno> {
    let raw = libc::seccomp_notif_addfd {
        id,
        flags: libc::SECCOMP_ADDFD_FLAG_SETFD as u32,
        srcfd: fd.as_raw_fd() as u32,
        newfd: at as u32,
        newfd_flags: if cloexec { libc::O_CLOEXEC as u32 } else { 0 },
    };
    // SAFETY: `raw` is a live seccomp_notif_addfd, the ioctl's argument.
    let ret = unsafe { libc::ioctl(listener, libc::SECCOMP_IOCTL_NOTIF_ADDFD, &raw) };
    result(libc::c_long::from(ret)).map(drop)
}

/// A pidfd for the thread `tid`.
pub(crate) fn thread_pidfd(tid: u32) -> Result<OwnedFd, Errno> {
    // SAFETY: plain syscall; the descriptor returned is new.
    let fd = unsafe { libc::syscall(SYS_PIDFD_OPEN, tid, PIDFD_THREAD) };
    result(fd).map(|fd| owned(fd as RawFd))
}

/// A copy of descriptor `target` of the process `pidfd` names (the same
/// open file, close-on-exec here).
pub(crate) fn take(pidfd: &OwnedFd, target: i32) -> Result<OwnedFd, Errno> {
    // SAFETY: plain syscall; the descriptor returned is new.
    let fd = unsafe { libc::syscall(SYS_PIDFD_GETFD, pidfd.as_raw_fd(), target, 0) };
    result(fd).map(|fd| owned(fd as RawFd))
}

/// Reads `into.len()` bytes at `address` of thread `tid`'s memory, all of
/// them or `EFAULT`.
pub(crate) fn read_memory(tid: u32, address: u64, into: &mut [u8]) -> Result<(), Errno> {
    let local = libc::iovec {
        iov_base: into.as_mut_ptr().cast(),
        iov_len: into.len(),
    };
    let remote = libc::iovec {
        iov_base: address as *mut libc::c_void,
        iov_len: into.len(),
    };
    // SAFETY: `local` describes `into`; the kernel checks `remote` against
    // the other process's memory and writes only into `local`.
    let n = unsafe { libc::process_vm_readv(tid as libc::pid_t, &local, 1, &remote, 1, 0) };
    match result(n as libc::c_long)? {
        n if n as usize == into.len() => Ok(()),
        _ => Err(Errno::EFAULT),
    }
}

/// An integer socket option, read.
pub(crate) fn int_option(
    fd: &OwnedFd,
    level: libc::c_int,
    name: libc::c_int,
) -> Result<i32, Errno> {
    let mut value: libc::c_int = 0;
    let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: the kernel writes at most `len` bytes into `value`.
    let ret = unsafe {
        libc::getsockopt(
            fd.as_raw_fd(),
            level,
            name,
            (&mut value as *mut libc::c_int).cast(),
            &mut len,
        )
    };
    result(libc::c_long::from(ret)).map(|_| value)
}

/// An integer socket option, set.
pub(crate) fn set_int_option(
    fd: &OwnedFd,
    level: libc::c_int,
    name: libc::c_int,
    value: i32,
) -> Result<(), Errno> {
    // SAFETY: the option value is a live c_int.
    let ret = unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            level,
            name,
            (&value as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    result(libc::c_long::from(ret)).map(drop)
}

/// Which network namespace the socket `fd` belongs to.
pub(crate) fn netns_cookie(fd: RawFd) -> Result<u64, Errno> {
    let mut value: u64 = 0;
    let mut len = std::mem::size_of::<u64>() as libc::socklen_t;
    // SAFETY: the kernel writes at most `len` bytes into `value`.
    let ret = unsafe {
        libc::getsockopt(
            fd,
            libc::SOL_SOCKET,
            SO_NETNS_COOKIE,
            (&mut value as *mut u64).cast(),
            &mut len,
        )
    };
    result(libc::c_long::from(ret)).map(|_| value)
}

/// The port the socket `fd` is bound to (0: not bound).
pub(crate) fn bound_port(fd: &OwnedFd) -> Result<u16, Errno> {
    // SAFETY: plain data; the kernel fills at most `len` bytes.
    let mut storage: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
    let mut len = std::mem::size_of::<libc::sockaddr_storage>() as libc::socklen_t;
    // SAFETY: as above.
    let ret = unsafe {
        libc::getsockname(
            fd.as_raw_fd(),
            (&mut storage as *mut libc::sockaddr_storage).cast(),
            &mut len,
        )
    };
    result(libc::c_long::from(ret))?;
    // SAFETY: sin_port and sin6_port sit at the same offset, right after the
    // family, and the storage is larger than a sockaddr_in.
    let port = unsafe {
        (*(&storage as *const libc::sockaddr_storage).cast::<libc::sockaddr_in>()).sin_port
    };
    Ok(u16::from_be(port))
}

/// Connects `fd` to the socket address `address`, given as the bytes a
/// caller passed to `connect` (never retried: `EINPROGRESS` and `EINTR`
/// are answers too).
pub(crate) fn connect_bytes(fd: &OwnedFd, address: &[u8]) -> Result<(), Errno> {
    if address.len() > MAX_ADDRESS {
        return Err(Errno::EINVAL);
    }
    // A buffer aligned for any socket address.
    // SAFETY: plain data, zeroed.
    let mut storage: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
    // SAFETY: `address` fits in `storage` (checked above); the regions are distinct.
    unsafe {
        std::ptr::copy_nonoverlapping(
            address.as_ptr(),
            (&mut storage as *mut libc::sockaddr_storage).cast::<u8>(),
            address.len(),
        );
    }
    // SAFETY: the pointer and length describe the live buffer.
    let ret = unsafe {
        libc::connect(
            fd.as_raw_fd(),
            (&storage as *const libc::sockaddr_storage).cast(),
            address.len() as libc::socklen_t,
        )
    };
    result(libc::c_long::from(ret)).map(drop)
}

/// Starts connecting the non-blocking socket `fd` to `address`: `Ok(true)`
/// when it is connected at once, `Ok(false)` while it is in progress.
pub(crate) fn start_connect(fd: &OwnedFd, address: std::net::SocketAddr) -> Result<bool, Errno> {
    let target = super::RawAddr::of(address);
    let (pointer, len) = target.raw();
    // SAFETY: the pointer and length describe `target`, which is live.
    let ret = unsafe { libc::connect(fd.as_raw_fd(), pointer, len) };
    match result(libc::c_long::from(ret)) {
        Ok(_) => Ok(true),
        Err(Errno::EINPROGRESS) => Ok(false),
        Err(errno) => Err(errno),
    }
}

/// A new TCP socket of `domain` in Chock's own network namespace,
/// non-blocking and close-on-exec.
pub(crate) fn tcp_socket(domain: libc::c_int) -> Result<OwnedFd, Errno> {
    use nix::sys::socket::{AddressFamily, SockFlag, SockProtocol, SockType, socket};
    let family = AddressFamily::from_i32(domain).ok_or(Errno::EAFNOSUPPORT)?;
    socket(
        family,
        SockType::Stream,
        SockFlag::SOCK_CLOEXEC | SockFlag::SOCK_NONBLOCK,
        SockProtocol::Tcp,
    )
}

/// Locks the TCP socket `fd` to `peer`: a classic BPF socket filter drops
/// every packet that does not come from `peer`'s address and port, and
/// `SO_LOCK_FILTER` keeps the program it is handed to from removing it. A
/// handed-over socket then talks to the decided peer only, whatever state
/// the program drives it into (disconnected and listening included).
pub(crate) fn lock_to_peer(fd: &OwnedFd, peer: std::net::SocketAddr) -> Result<(), Errno> {
    const LD_W_ABS: u16 = 0x20;
    const LD_H_ABS: u16 = 0x28;
    const JEQ_K: u16 = 0x15;
    const RET_K: u16 = 0x06;
    /// Loads relative to the network header (`SKF_NET_OFF`); plain offsets
    /// are the TCP header's.
    const NET: u32 = (-0x10_0000i32) as u32;
    let insn = |code, jt, jf, k| libc::sock_filter { code, jt, jf, k };
    let words: Vec<(u32, u32)> = match peer.ip() {
        std::net::IpAddr::V4(ip) => vec![(NET + 12, u32::from(ip))],
        std::net::IpAddr::V6(ip) => ip
            .octets()
            .chunks(4)
            .zip(0u32..)
            .map(|(chunk, i)| {
                let word = u32::from_be_bytes([chunk[0], chunk[1], chunk[2], chunk[3]]);
                (NET + 8 + 4 * i, word)
            })
            .collect(),
    };
    // Every check jumps to the drop at the end when it fails.
    let checks = 1 + words.len();
    let mut filter = Vec::with_capacity(2 * checks + 2);
    let mut left = checks;
    filter.push(insn(LD_H_ABS, 0, 0, 0));
    filter.push(insn(JEQ_K, 0, (2 * left - 1) as u8, u32::from(peer.port())));
    for (offset, word) in words {
        left -= 1;
        filter.push(insn(LD_W_ABS, 0, 0, offset));
        filter.push(insn(JEQ_K, 0, (2 * left - 1) as u8, word));
    }
    filter.push(insn(RET_K, 0, 0, u32::MAX));
    filter.push(insn(RET_K, 0, 0, 0));
    let program = libc::sock_fprog {
        len: filter.len() as u16,
        filter: filter.as_mut_ptr(),
    };
    // SAFETY: `program` points at `filter`, which lives across the call.
    let ret = unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_ATTACH_FILTER,
            (&program as *const libc::sock_fprog).cast(),
            std::mem::size_of::<libc::sock_fprog>() as libc::socklen_t,
        )
    };
    result(libc::c_long::from(ret))?;
    set_int_option(fd, libc::SOL_SOCKET, libc::SO_LOCK_FILTER, 1)
}

/// Makes `fd` listen, as a program could with a socket it was handed.
#[cfg(test)]
pub(crate) fn listen(fd: &OwnedFd) -> Result<(), Errno> {
    nix::sys::socket::listen(fd, nix::sys::socket::Backlog::new(4)?)
}
