//! Where a sink sends its lines, as written on the command line and in `.sinks`:
//! `journald`, `journald+unix:///path`, `syslog+udp://HOST:PORT`,
//! `syslog+tcp://HOST:PORT`, `syslog+tls://HOST:PORT?ca=FILE[&name=NAME]`,
//! `syslog+unix:///dev/log`, `otlp+http://HOST:PORT[/PATH]`,
//! `otlp+https://HOST:PORT[/PATH]?ca=FILE[&name=NAME]`, `otlp+grpc://HOST:PORT`,
//! `otlp+grpcs://HOST:PORT?ca=FILE[&name=NAME]`.

use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;

/// journald's socket for its native protocol.
pub const JOURNALD_SOCKET: &str = "/run/systemd/journal/socket";

/// One sink's receiver.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// journald's native protocol: one datagram per line to its socket.
    Journald { socket: PathBuf },
    /// RFC 5424 syslog over one of its transports.
    Syslog(Syslog),
    /// OpenTelemetry's protocol (OTLP) for logs, to a collector.
    Otlp(Otlp),
}

/// An OTLP receiver: where it listens, how requests reach it, and the
/// certificates it is checked against when the connection is TLS.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Otlp {
    pub host: String,
    pub port: u16,
    pub protocol: OtlpProtocol,
    pub tls: Option<OtlpTls>,
}

/// How an OTLP request is sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OtlpProtocol {
    /// OTLP/HTTP: binary protobuf POSTed to `path`.
    Http { path: String },
    /// OTLP/gRPC: `LogsService/Export`.
    Grpc,
}

/// The path OTLP/HTTP posts logs to when the address names none.
pub const OTLP_HTTP_PATH: &str = "/v1/logs";

/// A TLS server checked against the certificates in `ca` under the name `name`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OtlpTls {
    pub ca: PathBuf,
    pub name: String,
}

/// The transports syslog lines go over.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Syslog {
    /// One datagram per line.
    Udp { host: String, port: u16 },
    /// Octet-counted frames (RFC 6587) on one connection.
    Tcp { host: String, port: u16 },
    /// Octet-counted frames (RFC 5425) inside TLS, the server checked
    /// against the certificates in `ca` under the name `name`.
    Tls {
        host: String,
        port: u16,
        ca: PathBuf,
        name: String,
    },
    /// One datagram per line to a local socket (`/dev/log`).
    Unix { path: PathBuf },
}

/// Why a description names no sink.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "`{text}` is not a sink: {why}; write journald, journald+unix:///PATH, syslog+udp://HOST:PORT, syslog+tcp://HOST:PORT, syslog+tls://HOST:PORT?ca=FILE, syslog+unix:///PATH, otlp+http://HOST:PORT[/PATH], otlp+https://HOST:PORT[/PATH]?ca=FILE, otlp+grpc://HOST:PORT or otlp+grpcs://HOST:PORT?ca=FILE"
)]
pub struct TargetError {
    text: String,
    why: &'static str,
}

impl FromStr for Target {
    type Err = TargetError;

    fn from_str(text: &str) -> Result<Target, TargetError> {
        let fail = |why| TargetError {
            text: text.to_owned(),
            why,
        };
        if text == "journald" {
            return Ok(Target::Journald {
                socket: JOURNALD_SOCKET.into(),
            });
        }
        let (scheme, rest) = text.split_once("://").ok_or(fail("it has no `://`"))?;
        let (place, query) = rest.split_once('?').unwrap_or((rest, ""));
        let params = Params::parse(query).ok_or(fail("its query is not NAME=VALUE&..."))?;
        let only = |allowed: &[&str]| params.only(allowed).map_err(fail);
        let path = || {
            (place.starts_with('/') && place.len() > 1)
                .then(|| PathBuf::from(place))
                .ok_or(fail("a unix socket is named by an absolute path"))
        };
        match scheme {
            "journald+unix" => {
                only(&[])?;
                Ok(Target::Journald { socket: path()? })
            }
            "syslog+unix" => {
                only(&[])?;
                Ok(Target::Syslog(Syslog::Unix { path: path()? }))
            }
            "syslog+udp" | "syslog+tcp" => {
                only(&[])?;
                let (host, port) = host_port(place).ok_or(fail("it names no HOST:PORT"))?;
                Ok(Target::Syslog(if scheme == "syslog+udp" {
                    Syslog::Udp { host, port }
                } else {
                    Syslog::Tcp { host, port }
                }))
            }
            "syslog+tls" => {
                only(&["ca", "name"])?;
                let (host, port) = host_port(place).ok_or(fail("it names no HOST:PORT"))?;
                let OtlpTls { ca, name } = params.tls(&host).ok_or(fail(NEEDS_CA))?;
                Ok(Target::Syslog(Syslog::Tls {
                    host,
                    port,
                    ca,
                    name,
                }))
            }
            "otlp+http" | "otlp+https" => {
                let (place, path) = match place.find('/') {
                    Some(slash) => place.split_at(slash),
                    None => (place, OTLP_HTTP_PATH),
                };
                (path.len() > 1 && path.chars().all(path_char))
                    .then_some(())
                    .ok_or(fail(
                        "its PATH is not /SEGMENT/... of letters, digits and -._~",
                    ))?;
                let protocol = OtlpProtocol::Http { path: path.into() };
                otlp(place, protocol, scheme == "otlp+https", &params).map_err(fail)
            }
            "otlp+grpc" | "otlp+grpcs" => {
                otlp(place, OtlpProtocol::Grpc, scheme == "otlp+grpcs", &params).map_err(fail)
            }
            _ => Err(fail("its scheme is none a sink speaks")),
        }
    }
}

const NEEDS_CA: &str = "TLS needs ?ca=FILE, the certificates to trust";

/// An OTLP target at `place` (`HOST:PORT`), over TLS when `secure`.
fn otlp(
    place: &str,
    protocol: OtlpProtocol,
    secure: bool,
    params: &Params,
) -> Result<Target, &'static str> {
    params.only(if secure { &["ca", "name"] } else { &[] })?;
    let (host, port) = host_port(place).ok_or("it names no HOST:PORT")?;
    let tls = if secure {
        Some(params.tls(&host).ok_or(NEEDS_CA)?)
    } else {
        None
    };
    Ok(Target::Otlp(Otlp {
        host,
        port,
        protocol,
        tls,
    }))
}

/// A character of an OTLP/HTTP path: unreserved (RFC 3986) or `/`.
fn path_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || "-._~/".contains(c)
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Target::Journald { socket } => write!(f, "journald+unix://{}", socket.display()),
            Target::Syslog(Syslog::Udp { host, port }) => {
                write!(f, "syslog+udp://{}", Place(host, *port))
            }
            Target::Syslog(Syslog::Tcp { host, port }) => {
                write!(f, "syslog+tcp://{}", Place(host, *port))
            }
            Target::Syslog(Syslog::Tls {
                host,
                port,
                ca,
                name,
            }) => write!(
                f,
                "syslog+tls://{}?ca={}&name={name}",
                Place(host, *port),
                ca.display()
            ),
            Target::Syslog(Syslog::Unix { path }) => {
                write!(f, "syslog+unix://{}", path.display())
            }
            Target::Otlp(otlp) => otlp.fmt(f),
        }
    }
}

impl fmt::Display for Otlp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let secure = if self.tls.is_some() { "s" } else { "" };
        let place = Place(&self.host, self.port);
        match &self.protocol {
            OtlpProtocol::Http { path } => write!(f, "otlp+http{secure}://{place}{path}")?,
            OtlpProtocol::Grpc => write!(f, "otlp+grpc{secure}://{place}")?,
        }
        match &self.tls {
            Some(OtlpTls { ca, name }) => write!(f, "?ca={}&name={name}", ca.display()),
            None => Ok(()),
        }
    }
}

/// `HOST:PORT` as written, an IPv6 address in brackets.
struct Place<'a>(&'a str, u16);

impl fmt::Display for Place<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.contains(':') {
            write!(f, "[{}]:{}", self.0, self.1)
        } else {
            write!(f, "{}:{}", self.0, self.1)
        }
    }
}

/// Reads `HOST:PORT`, the host a name or an address (letters, digits and
/// `-._`), bracketed when it is an IPv6 address (`[::1]:514`, `[fe80::1%eth0]:514`).
fn host_port(place: &str) -> Option<(String, u16)> {
    let (host, port) = place.rsplit_once(':')?;
    let host = match host.strip_prefix('[') {
        Some(v6) => v6.strip_suffix(']')?,
        None if host.contains(':') => return None,
        None => host,
    };
    let port = port.parse::<u16>().ok().filter(|p| *p > 0)?;
    let host_char = |c: char| c.is_ascii_alphanumeric() || "-._:%".contains(c);
    (!host.is_empty() && host.chars().all(host_char)).then(|| (host.to_owned(), port))
}

struct Params(Vec<(String, String)>);

impl Params {
    fn parse(query: &str) -> Option<Params> {
        let pairs = query
            .split('&')
            .filter(|pair| !pair.is_empty())
            .map(|pair| {
                let (k, v) = pair.split_once('=')?;
                (!v.is_empty()).then(|| (k.to_owned(), v.to_owned()))
            })
            .collect::<Option<Vec<_>>>()?;
        Some(Params(pairs))
    }

    fn get(&self, key: &str) -> Option<&String> {
        self.0.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }

    /// Fails unless every parameter is one of `allowed`.
    fn only(&self, allowed: &[&str]) -> Result<(), &'static str> {
        self.0
            .iter()
            .all(|(k, _)| allowed.contains(&k.as_str()))
            .then_some(())
            .ok_or("it has a query parameter that sink does not take")
    }

    /// The TLS parameters: `ca`, and `name`, which is `host` unless given.
    fn tls(&self, host: &str) -> Option<OtlpTls> {
        let ca = self.get("ca")?;
        let name = self.get("name").map_or(host, String::as_str);
        Some(OtlpTls {
            ca: ca.into(),
            name: name.to_owned(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_form_reads_and_prints_back() {
        for text in [
            "journald+unix:///run/systemd/journal/socket",
            "syslog+udp://127.0.0.1:5514",
            "syslog+tcp://[::1]:514",
            "syslog+udp://[fe80::1%eth0]:514",
            "syslog+tcp://log-1.example_x:514",
            "syslog+tls://logs.example:6514?ca=/etc/ca.pem&name=logs.example",
            "syslog+unix:///dev/log",
            "otlp+http://collector:4318/v1/logs",
            "otlp+http://[::1]:4318/otel/v1/logs",
            "otlp+https://collector.example:4318/v1/logs?ca=/etc/ca.pem&name=otel.example",
            "otlp+grpc://127.0.0.1:4317",
            "otlp+grpcs://collector:4317?ca=/etc/ca.pem&name=collector",
        ] {
            let target: Target = text.parse().unwrap();
            assert_eq!(target.to_string(), text);
        }
        assert_eq!(
            "journald".parse::<Target>().unwrap().to_string(),
            format!("journald+unix://{JOURNALD_SOCKET}")
        );
        let tls: Target = "syslog+tls://h:1?ca=/c".parse().unwrap();
        assert!(matches!(tls, Target::Syslog(Syslog::Tls { name, .. }) if name == "h"));
    }

    #[test]
    fn an_otlp_address_without_a_path_posts_to_v1_logs_and_tls_names_its_host() {
        let http: Target = "otlp+http://h:4318".parse().unwrap();
        assert_eq!(http.to_string(), "otlp+http://h:4318/v1/logs");
        let grpcs: Target = "otlp+grpcs://h:4317?ca=/c".parse().unwrap();
        assert_eq!(
            grpcs,
            Target::Otlp(Otlp {
                host: "h".into(),
                port: 4317,
                protocol: OtlpProtocol::Grpc,
                tls: Some(OtlpTls {
                    ca: "/c".into(),
                    name: "h".into()
                }),
            })
        );
    }

    #[test]
    fn malformed_descriptions_are_refused() {
        for text in [
            "",
            "syslog",
            "syslog+udp://host",
            "syslog+udp://host:0",
            "syslog+udp://host:99999",
            "syslog+tcp://::1:514",
            "syslog+tcp://:514",
            "syslog+tcp://[[::1]:514",
            "syslog+tcp://a]b:514",
            "syslog+tls://a&b:1?ca=/c",
            "syslog+udp://a/b:1",
            "syslog+tls://h:1",
            "syslog+tls://h:1?ca=",
            "syslog+tcp://h:1?ca=/x",
            "syslog+unix://dev/log",
            "journald+unix://",
            "http://h:1",
            "otlp://h:1",
            "otlp+http://h",
            "otlp+http://h:1/",
            "otlp+http://h:1/v1 logs",
            "otlp+http://h:1/v1/%2e",
            "otlp+http://h:1?ca=/c",
            "otlp+https://h:1/v1/logs",
            "otlp+grpc://h:1/v1/logs",
            "otlp+grpc://h:1?ca=/c",
            "otlp+grpcs://h:1",
            "otlp+grpcs://h:1?ca=/c&path=/x",
        ] {
            assert!(text.parse::<Target>().is_err(), "{text}");
        }
    }
}
