//! The connection to one sink's receiver. Every operation that could wait
//! (a name looked up, a connect, a TLS handshake, a write, an answer)
//! waits no later than the deadline it is given.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs, UdpSocket};
use std::os::unix::net::UnixDatagram;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};
use rustls::{ClientConfig, ClientConnection, RootCertStore, StreamOwned};

use crate::fields::{Origin, Shipped};
use crate::otlp::{self, Acked, Exporter};
use crate::{Syslog, Target};
use crate::{journald, syslog};

/// A syslog datagram the kernel refuses as too large is cut to this,
/// the size rsyslog takes by default.
const DATAGRAM_CUT: usize = 8192;

/// An open way to a receiver.
pub enum Link {
    Journald(UnixDatagram),
    Datagram(UnixDatagram),
    Udp(UdpSocket),
    Tcp(TcpStream),
    Tls(Box<StreamOwned<ClientConnection, TcpStream>>),
    Otlp(Box<Exporter>),
}

/// How many lines, and how many bytes of them, one [`Link::send`] takes.
#[derive(Debug, Clone, Copy)]
pub struct Batch {
    pub lines: usize,
    pub bytes: usize,
}

impl Batch {
    /// A receiver that acknowledges (OTLP) takes many lines a request;
    /// syslog and journald take one line at a time, each delivered once
    /// written.
    pub fn for_target(target: &Target) -> Batch {
        match target {
            Target::Otlp(_) => Batch {
                lines: otlp::BATCH_LINES,
                bytes: otlp::BATCH_BYTES,
            },
            Target::Journald { .. } | Target::Syslog(_) => Batch {
                lines: 1,
                bytes: usize::MAX,
            },
        }
    }
}

impl Link {
    /// Connects to `target`, giving up at `deadline`.
    pub fn open(target: &Target, deadline: Instant) -> io::Result<Link> {
        match target {
            Target::Journald { socket } => Ok(Link::Journald(unix_datagram(socket)?)),
            Target::Syslog(Syslog::Unix { path }) => Ok(Link::Datagram(unix_datagram(path)?)),
            Target::Syslog(Syslog::Udp { host, port }) => {
                let addr = resolve(host, *port, deadline)?;
                let any: SocketAddr = if addr.is_ipv4() {
                    ([0, 0, 0, 0], 0).into()
                } else {
                    ([0u16; 8], 0).into()
                };
                let socket = UdpSocket::bind(any)?;
                socket.connect(addr)?;
                Ok(Link::Udp(socket))
            }
            Target::Syslog(Syslog::Tcp { host, port }) => {
                Ok(Link::Tcp(tcp(host, *port, deadline)?))
            }
            Target::Syslog(Syslog::Tls {
                host,
                port,
                ca,
                name,
            }) => {
                let config = tls_config(ca)?;
                let name = ServerName::try_from(name.clone())
                    .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
                let connection = ClientConnection::new(config, name).map_err(io::Error::other)?;
                let mut stream = StreamOwned::new(connection, tcp(host, *port, deadline)?);
                while stream.conn.is_handshaking() {
                    bound(&stream.sock, deadline)?;
                    stream.conn.complete_io(&mut stream.sock)?;
                }
                Ok(Link::Tls(Box::new(stream)))
            }
            Target::Otlp(target) => Ok(Link::Otlp(Box::new(Exporter::open(target)?))),
        }
    }

    /// Sends a batch of lines (as many as [`Batch::for_target`] allows),
    /// returning once the receiver has them all: the datagrams sent, the
    /// frames written and flushed, or the collector's success received.
    /// An error means none of the batch is known to have arrived.
    pub fn send(
        &mut self,
        lines: &[Shipped<'_>],
        origin: &Origin,
        deadline: Instant,
    ) -> io::Result<Acked> {
        match self {
            Link::Otlp(exporter) => exporter.export(lines, origin, deadline),
            Link::Journald(socket) => each(lines, |line| {
                socket.set_write_timeout(Some(remaining(deadline)?))?;
                journald::send(socket, &journald::entry(line, origin))
            }),
            Link::Datagram(socket) => each(lines, |line| {
                socket.set_write_timeout(Some(remaining(deadline)?))?;
                send_cut(|bytes| socket.send(bytes), &syslog::message(line, origin))
            }),
            Link::Udp(socket) => each(lines, |line| {
                socket.set_write_timeout(Some(remaining(deadline)?))?;
                send_cut(|bytes| socket.send(bytes), &syslog::message(line, origin))
            }),
            Link::Tcp(stream) => each(lines, |line| {
                let frame = syslog::frame(&syslog::message(line, origin));
                let mut rest = &frame[..];
                while !rest.is_empty() {
                    let written = write_by(stream, deadline, |s| s.write(rest))?;
                    rest = rest.get(written..).unwrap_or_default();
                }
                Ok(())
            }),
            Link::Tls(stream) => each(lines, |line| {
                let frame = syslog::frame(&syslog::message(line, origin));
                let StreamOwned { conn, sock } = &mut **stream;
                let mut rest = &frame[..];
                while !rest.is_empty() || conn.wants_write() {
                    // What rustls takes now (it holds a bounded amount),
                    // then its records out to the socket.
                    let taken = conn.writer().write(rest)?;
                    rest = rest.get(taken..).unwrap_or_default();
                    while conn.wants_write() {
                        write_by(sock, deadline, |s| conn.write_tls(s))?;
                    }
                }
                Ok(())
            }),
        }
    }

    /// Whether a stream is still worth writing to: false once the receiver
    /// has closed its side (it is going away, and reads what was sent
    /// before it sees this side close). Datagrams have no connection; an
    /// OTLP client connects again by itself.
    pub fn still_open(&mut self) -> bool {
        match self {
            Link::Journald(_) | Link::Datagram(_) | Link::Udp(_) | Link::Otlp(_) => true,
            Link::Tcp(stream) => {
                let mut byte = [0u8; 1];
                read_now(stream, |s| s.peek(&mut byte)).is_none_or(|read| read > 0)
            }
            Link::Tls(stream) => {
                let StreamOwned { conn, sock } = &mut **stream;
                match read_now(sock, |s| conn.read_tls(s)) {
                    None => true,
                    Some(0) => false,
                    Some(_) => conn
                        .process_new_packets()
                        .is_ok_and(|state| !state.peer_has_closed()),
                }
            }
        }
    }
}

impl Drop for Link {
    /// A stream is closed with nothing left unread (a socket closed with
    /// unread bytes is reset, and a reset can cost the receiver lines it
    /// has not read yet); a TLS receiver is first told the session ends
    /// (`close_notify`), waiting at most a moment for that to go out.
    fn drop(&mut self) {
        match self {
            Link::Tcp(stream) => {
                let mut buf = [0u8; 4096];
                while read_now(stream, |s| s.read(&mut buf)).is_some_and(|n| n > 0) {}
            }
            Link::Tls(stream) => {
                let StreamOwned { conn, sock } = &mut **stream;
                conn.send_close_notify();
                if sock.set_write_timeout(Some(CLOSE_WAIT)).is_ok() {
                    let _ = conn.write_tls(sock);
                }
                let mut buf = [0u8; 4096];
                while read_now(sock, |s| s.read(&mut buf)).is_some_and(|n| n > 0) {}
            }
            Link::Journald(_) | Link::Datagram(_) | Link::Udp(_) | Link::Otlp(_) => {}
        }
    }
}

/// Sends each line with `send`, a receiver that does not answer having
/// each once it is sent.
fn each(
    lines: &[Shipped<'_>],
    mut send: impl FnMut(&Shipped<'_>) -> io::Result<()>,
) -> io::Result<Acked> {
    for line in lines {
        send(line)?;
    }
    Ok(Acked::default())
}

/// How long a closing TLS session's last record may take to go out.
const CLOSE_WAIT: Duration = Duration::from_millis(100);

/// Runs one read on `stream` without waiting: `None` when nothing is there
/// to read (the receiver is quiet, as it should be), else how much it
/// read; an error counts as a close (`Some(0)`).
fn read_now(
    stream: &mut TcpStream,
    read: impl FnOnce(&mut TcpStream) -> io::Result<usize>,
) -> Option<usize> {
    if stream.set_nonblocking(true).is_err() {
        return Some(0);
    }
    let outcome = read(stream);
    if stream.set_nonblocking(false).is_err() {
        return Some(0);
    }
    match outcome {
        Err(e) if e.kind() == io::ErrorKind::WouldBlock => None,
        Err(_) => Some(0),
        Ok(read) => Some(read),
    }
}

/// Sends a datagram; one the kernel refuses as too large goes cut, as a
/// receiver would cut it.
fn send_cut(send: impl Fn(&[u8]) -> io::Result<usize>, message: &[u8]) -> io::Result<()> {
    match send(message) {
        Err(e) if e.raw_os_error() == Some(nix::errno::Errno::EMSGSIZE as i32) => {
            send(message.get(..DATAGRAM_CUT).unwrap_or(message)).map(drop)
        }
        other => other.map(drop),
    }
}

fn unix_datagram(path: &Path) -> io::Result<UnixDatagram> {
    let socket = UnixDatagram::unbound()?;
    socket.connect(path)?;
    Ok(socket)
}

fn tcp(host: &str, port: u16, deadline: Instant) -> io::Result<TcpStream> {
    let addr = resolve(host, port, deadline)?;
    let stream = TcpStream::connect_timeout(&addr, remaining(deadline)?)?;
    stream.set_nodelay(true)?;
    Ok(stream)
}

/// One write to `stream` that waits no later than `deadline`; a write the
/// socket took none of is an error.
fn write_by(
    stream: &mut TcpStream,
    deadline: Instant,
    write: impl FnOnce(&mut TcpStream) -> io::Result<usize>,
) -> io::Result<usize> {
    stream.set_write_timeout(Some(remaining(deadline)?))?;
    match write(stream) {
        Ok(0) => Err(io::ErrorKind::WriteZero.into()),
        other => other,
    }
}

/// Reads and writes on `stream` wait no later than `deadline`.
fn bound(stream: &TcpStream, deadline: Instant) -> io::Result<()> {
    let left = remaining(deadline)?;
    stream.set_write_timeout(Some(left))?;
    stream.set_read_timeout(Some(left))
}

/// The time left before `deadline`; an error once it has passed.
pub fn remaining(deadline: Instant) -> io::Result<Duration> {
    let left = deadline.saturating_duration_since(Instant::now());
    if left.is_zero() {
        Err(io::Error::new(
            io::ErrorKind::TimedOut,
            "the deadline passed",
        ))
    } else {
        Ok(left)
    }
}

/// The first address `host` names. An address is read as it is; a name is
/// looked up by the system on a thread of its own, so a resolver that does
/// not answer costs no more than the time left.
fn resolve(host: &str, port: u16, deadline: Instant) -> io::Result<SocketAddr> {
    if let Ok(ip) = host.parse::<std::net::IpAddr>() {
        return Ok(SocketAddr::new(ip, port));
    }
    let (send, receive) = std::sync::mpsc::sync_channel(1);
    let name = (host.to_owned(), port);
    std::thread::Builder::new()
        .name("chock-sink-resolve".into())
        .spawn(move || {
            let _ = send.send(name.to_socket_addrs().map(|mut addrs| addrs.next()));
        })?;
    match receive.recv_timeout(remaining(deadline)?) {
        Ok(Ok(Some(addr))) => Ok(addr),
        Ok(Ok(None)) => Err(io::Error::new(
            io::ErrorKind::NotFound,
            format!("{host} has no address"),
        )),
        Ok(Err(e)) => Err(e),
        Err(_) => Err(io::Error::new(
            io::ErrorKind::TimedOut,
            format!("looking up {host} took past the deadline"),
        )),
    }
}

/// A TLS client trusting the certificates in the PEM file `ca` alone.
pub fn tls_config(ca: &Path) -> io::Result<Arc<ClientConfig>> {
    let invalid = |e: &dyn std::fmt::Display| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("the CA file {}: {e}", ca.display()),
        )
    };
    let mut roots = RootCertStore::empty();
    for cert in CertificateDer::pem_file_iter(ca).map_err(|e| invalid(&e))? {
        roots
            .add(cert.map_err(|e| invalid(&e))?)
            .map_err(|e| invalid(&e))?;
    }
    if roots.is_empty() {
        return Err(invalid(&"it holds no certificate"));
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(io::Error::other)?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(Arc::new(config))
}
