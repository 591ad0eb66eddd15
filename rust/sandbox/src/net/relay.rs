//! The relay: accepts, from outside, the connections the ruleset sent to
//! it, decides each, and carries the allowed ones to the address the
//! resolver handed out.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread::JoinHandle;

use super::ns::Shared;
use super::{DIAL_TIMEOUT, MAX_LINKS};

/// The buffer each direction of a link copies through where it cannot splice.
const BUFFER: usize = 64 * 1024;

/// Starts the relay on its two listening sockets (IPv4, IPv6) until `stop` hangs up.
pub(crate) fn start(
    shared: Arc<Shared>,
    listeners: [OwnedFd; 2],
    stop: Arc<OwnedFd>,
) -> std::io::Result<JoinHandle<()>> {
    let listeners = listeners.map(TcpListener::from);
    for listener in &listeners {
        listener.set_nonblocking(true)?;
    }
    let links = Arc::new(AtomicUsize::new(0));
    std::thread::Builder::new()
        .name("chock-net-relay".into())
        .spawn(move || {
            while super::ns::wait_readable([listeners[0].as_fd(), listeners[1].as_fd()], &stop) {
                for (index, listener) in listeners.iter().enumerate() {
                    while let Ok((inner, _)) = listener.accept() {
                        if links.fetch_add(1, Ordering::SeqCst) >= MAX_LINKS {
                            links.fetch_sub(1, Ordering::SeqCst);
                            reset(&inner);
                            continue;
                        }
                        let shared = shared.clone();
                        let count = links.clone();
                        let spawned = std::thread::Builder::new()
                            .name("chock-net-link".into())
                            .spawn(move || {
                                link(&shared, inner, index == 1);
                                count.fetch_sub(1, Ordering::SeqCst);
                            });
                        if spawned.is_err() {
                            links.fetch_sub(1, Ordering::SeqCst);
                        }
                    }
                }
            }
        })
}

/// Ends a connection at once with a reset.
fn reset(stream: &TcpStream) {
    crate::sys::reset_on_close(stream);
    let _ = stream.shutdown(Shutdown::Both);
}

/// One connection: where it was going, whose name that address is,
/// the decision, the dial, then bytes both ways.
fn link(shared: &Shared, inner: TcpStream, v6: bool) {
    let _ = inner.set_nonblocking(false);
    let Ok(target) = crate::sys::original_destination(inner.as_raw_fd(), v6) else {
        return reset(&inner);
    };
    if super::addr::refused(target.ip()).is_some() {
        return reset(&inner);
    }
    let host = shared
        .table
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .host_of(target.ip());
    let Some(host) = host else {
        return reset(&inner);
    };
    if !shared.router.decide.connect(&host, target.port()) {
        return reset(&inner);
    }
    let Ok(outer) = TcpStream::connect_timeout(&target, DIAL_TIMEOUT) else {
        return reset(&inner);
    };
    let _ = outer.set_nodelay(true);
    let _ = inner.set_nodelay(true);
    let (Ok(inner2), Ok(outer2)) = (inner.try_clone(), outer.try_clone()) else {
        return reset(&inner);
    };
    let back = std::thread::Builder::new()
        .name("chock-net-link".into())
        .spawn(move || pump(outer2, inner2));
    pump(inner, outer);
    if let Ok(back) = back {
        let _ = back.join();
    }
}

/// Copies `from` to `to` until `from` ends, then half-closes `to`: in the
/// kernel with `splice`, or through a buffer where it cannot splice.
fn pump(mut from: TcpStream, mut to: TcpStream) {
    match crate::sys::splice_all(from.as_raw_fd(), to.as_raw_fd()) {
        Err(nix::errno::Errno::EINVAL) => copy(&mut from, &mut to),
        Err(_) => {
            let _ = from.shutdown(Shutdown::Read);
        }
        Ok(()) => {}
    }
    let _ = to.shutdown(Shutdown::Write);
}

fn copy(from: &mut TcpStream, to: &mut TcpStream) {
    let mut buffer = vec![0u8; BUFFER];
    loop {
        match from.read(&mut buffer) {
            Ok(0) => break,
            Ok(n) => {
                if to.write_all(buffer.get(..n).unwrap_or_default()).is_err() {
                    let _ = from.shutdown(Shutdown::Read);
                    break;
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => break,
        }
    }
}
