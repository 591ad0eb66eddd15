//! The resolver inside the namespace: a name is decided before it is looked
//! up, and its addresses enter the allow set before the answer leaves.

use std::net::{IpAddr, UdpSocket};
use std::os::fd::{AsFd, OwnedFd};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use hickory_proto::op::{Message, MessageType, OpCode, ResponseCode};
use hickory_proto::rr::{RData, Record, RecordType};
use hickory_resolver::TokioResolver;
use hickory_resolver::config::{NameServerConfig, ResolverConfig};
use hickory_resolver::net::runtime::TokioRuntimeProvider;

use super::ns::Shared;
use super::{MAX_DATAGRAM, MAX_NAME_BYTES};

/// How long one name may take to resolve on the host.
const LOOKUP_TIMEOUT: Duration = Duration::from_secs(5);
/// The time to live of every answer: short, so a program asks again
/// rather than keeping an address the table forgot.
const ANSWER_TTL: u32 = 30;

/// Starts the resolver on its two sockets (IPv4, IPv6) until `stop` hangs up.
pub(crate) fn start(
    shared: Arc<Shared>,
    sockets: [OwnedFd; 2],
    stop: Arc<OwnedFd>,
) -> std::io::Result<JoinHandle<()>> {
    let sockets = sockets.map(UdpSocket::from);
    for socket in &sockets {
        socket.set_nonblocking(true)?;
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let resolver = runtime.block_on(async { upstream(&shared) })?;
    std::thread::Builder::new()
        .name("chock-net-dns".into())
        .spawn(move || {
            let mut buffer = [0u8; MAX_DATAGRAM];
            while super::ns::wait_readable([sockets[0].as_fd(), sockets[1].as_fd()], &stop) {
                for socket in &sockets {
                    while let Ok((n, from)) = socket.recv_from(&mut buffer) {
                        let query = buffer.get(..n).unwrap_or_default();
                        if let Some(reply) = runtime.block_on(answer(&shared, &resolver, query)) {
                            let _ = socket.send_to(&reply, from);
                        }
                    }
                }
            }
        })
}

/// The host-side resolver: the DNS server the router names, else the host's.
fn upstream(shared: &Shared) -> std::io::Result<TokioResolver> {
    let provider = TokioRuntimeProvider::default();
    let mut builder = match shared.router.upstream {
        Some(addr) => {
            let mut server = NameServerConfig::udp_and_tcp(addr.ip());
            for connection in &mut server.connections {
                connection.port = addr.port();
            }
            let mut config = ResolverConfig::default();
            config.add_name_server(server);
            TokioResolver::builder_with_config(config, provider)
        }
        None => TokioResolver::builder(provider).map_err(std::io::Error::other)?,
    };
    let options = builder.options_mut();
    options.timeout = LOOKUP_TIMEOUT;
    options.attempts = 2;
    builder.build().map_err(std::io::Error::other)
}

/// The reply to one datagram, or `None` for one that is not a query.
async fn answer(shared: &Shared, resolver: &TokioResolver, datagram: &[u8]) -> Option<Vec<u8>> {
    let request = Message::from_vec(datagram).ok()?;
    if request.metadata.message_type != MessageType::Query {
        return None;
    }
    let id = request.metadata.id;
    let refuse = |code: ResponseCode| {
        let mut reply = Message::error_msg(id, request.metadata.op_code, code);
        reply.queries = request.queries.clone();
        reply.metadata.recursion_desired = request.metadata.recursion_desired;
        reply.metadata.recursion_available = true;
        reply.to_vec().ok()
    };
    if request.metadata.op_code != OpCode::Query {
        return refuse(ResponseCode::NotImp);
    }
    let [query] = request.queries.as_slice() else {
        return refuse(ResponseCode::FormErr);
    };
    let record_type = query.query_type();
    let name = query.name().to_ascii().to_ascii_lowercase();
    let host = name.trim_end_matches('.');
    if host.is_empty() || host.len() > MAX_NAME_BYTES {
        return refuse(ResponseCode::Refused);
    }
    let mut reply = Message::response(id, OpCode::Query);
    reply.queries = request.queries.clone();
    reply.metadata.recursion_desired = request.metadata.recursion_desired;
    reply.metadata.recursion_available = true;
    let plain = plain(query.name());
    if let Some(Numeric::Address(literal)) = plain.as_deref().and_then(numeric) {
        // An address is its own answer: never looked up, never remembered.
        let data = match (literal, record_type) {
            (IpAddr::V4(a), RecordType::A) => Some(RData::A(a.into())),
            (IpAddr::V6(a), RecordType::AAAA) => Some(RData::AAAA(a.into())),
            _ => None,
        };
        if let Some(data) = data {
            reply.add_answer(Record::from_rdata(query.name().clone(), ANSWER_TTL, data));
        }
        return reply.to_vec().ok();
    }
    if !shared.router.decide.name(host) {
        return refuse(ResponseCode::Refused);
    }
    if !matches!(record_type, RecordType::A | RecordType::AAAA) {
        // Only addresses are answered: any other type has no data here.
        return reply.to_vec().ok();
    }
    let fqdn = format!("{host}.");
    let looked = tokio::time::timeout(
        LOOKUP_TIMEOUT * 2,
        resolver.lookup(fqdn.as_str(), record_type),
    )
    .await;
    let addrs: Vec<IpAddr> = match looked {
        Ok(Ok(lookup)) => lookup
            .answers()
            .iter()
            .filter_map(|r| match &r.data {
                RData::A(a) => Some(IpAddr::V4(a.0)),
                RData::AAAA(a) => Some(IpAddr::V6(a.0)),
                _ => None,
            })
            .filter(|a| super::addr::refused(*a).is_none())
            .collect(),
        Ok(Err(e)) if e.is_no_records_found() => Vec::new(),
        Ok(Err(e)) if e.is_nx_domain() => return refuse(ResponseCode::NXDomain),
        _ => return refuse(ResponseCode::ServFail),
    };
    if !addrs.is_empty() {
        let change = {
            let mut table = shared
                .table
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            let mut known: Vec<IpAddr> = addrs.clone();
            // A and AAAA arrive separately: keep what the other kind gave.
            for other in table.addresses_of(host) {
                if other.is_ipv4() != addrs[0].is_ipv4() {
                    known.push(other);
                }
            }
            table.remember(host, &known)
        };
        if let Err(e) = shared.apply(&change) {
            tracing::warn!("the allow set could not take {host}'s addresses: {e}");
            return refuse(ResponseCode::ServFail);
        }
    }
    for addr in addrs {
        let data = match addr {
            IpAddr::V4(a) => RData::A(a.into()),
            IpAddr::V6(a) => RData::AAAA(a.into()),
        };
        reply.add_answer(Record::from_rdata(query.name().clone(), ANSWER_TTL, data));
    }
    reply.to_vec().ok()
}

/// `name` as plain text (its labels joined with dots), when every label
/// is printable ASCII with no dot or backslash in it: how an address
/// literal asked as a name reads (`fd00::5` is one label holding colons,
/// which the escaped form spells `fd00\:\:5`).
fn plain(name: &hickory_proto::rr::Name) -> Option<String> {
    let mut labels = Vec::new();
    for label in name.iter() {
        let text = std::str::from_utf8(label).ok()?;
        if !text
            .bytes()
            .all(|b| b.is_ascii_graphic() && b != b'.' && b != b'\\')
        {
            return None;
        }
        labels.push(text.to_ascii_lowercase());
    }
    Some(labels.join("."))
}

/// A name that is no host name, read before any rule.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Numeric {
    /// An address literal (`10.0.0.5`, `fd00::5`): answered as itself.
    Address(IpAddr),
    /// Numeric in another way (`10.1`, `167772161`, `0x0a.0.0.1`, a colon
    /// that makes no IPv6 address): what some address parsers read as an
    /// address and no top-level domain is, so it is refused.
    Other,
}

/// Whether `host` is numeric: an address, or a name whose last label is
/// digits (or `0x` and hex digits), or one holding a colon. `None` for a
/// host name, which the rules decide.
pub(crate) fn numeric(host: &str) -> Option<Numeric> {
    if let Ok(addr) = host.parse::<IpAddr>() {
        return Some(Numeric::Address(addr));
    }
    let last = host.rsplit('.').next().unwrap_or(host);
    let hex = last
        .strip_prefix("0x")
        .is_some_and(|h| h.bytes().all(|b| b.is_ascii_hexdigit()));
    let digits = !last.is_empty() && last.bytes().all(|b| b.is_ascii_digit());
    (hex || digits || host.contains(':')).then_some(Numeric::Other)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_address_asked_as_a_name_reads_as_its_literal() {
        let from = |labels: &[&[u8]]| {
            let name = hickory_proto::rr::Name::from_labels(labels.iter().copied()).unwrap();
            plain(&name)
        };
        assert_eq!(from(&[b"fd00:231::2"]).as_deref(), Some("fd00:231::2"));
        assert_eq!(
            from(&[b"10", b"233", b"1", b"2"]).as_deref(),
            Some("10.233.1.2")
        );
        assert_eq!(
            from(&[b"Allowed", b"TEST"]).as_deref(),
            Some("allowed.test")
        );
        assert_eq!(from(&[b"10.233", b"1", b"2"]), None, "a dot inside a label");
        assert_eq!(from(&[b"a\\b"]), None);
        assert_eq!(from(&[b"a b"]), None);
    }

    #[test]
    fn numeric_names_are_told_from_host_names() {
        let address = |s: &str| Some(Numeric::Address(s.parse().unwrap()));
        assert_eq!(numeric("10.233.1.2"), address("10.233.1.2"));
        assert_eq!(numeric("fd00:231::2"), address("fd00:231::2"));
        assert_eq!(numeric("::ffff:10.0.0.1"), address("::ffff:10.0.0.1"));
        for other in [
            "10.1",
            "167772161",
            "0x0a.0.0.1",
            "1.2.3.0x4",
            "010.233.001.002",
            "fe80::1%eth0",
            "a:b",
        ] {
            assert_eq!(numeric(other), Some(Numeric::Other), "{other}");
        }
        for name in [
            "allowed.test",
            "1.example.org",
            "0xff.test",
            "10.233.1.2.nip.io",
            "x",
        ] {
            assert_eq!(numeric(name), None, "{name}");
        }
    }
}
