//! Reading the host and port a URL would reach, so a fetch can be named
//! (`nix.net.*`) before anything is fetched. nix_build (fixed-output
//! derivations) and flake inputs (`flake.lock`) share this one reader, so a
//! URL names the same host in both phases.
//!
//! Nothing is guessed: a scheme outside the table, a URL with no host, an
//! IPv6 literal (it has no labels to reverse) and a port outside 1..=65535 are
//! refusals, because a fetch nobody can name is a fetch nobody can rule on.

/// Where a URL leads: its scheme (after any transport prefix), host and port.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Endpoint {
    /// The scheme that chose the default port, lower-cased (`https`, `ssh`, ...).
    pub scheme: String,
    /// The host, lower-cased, without user information or port.
    pub host: String,
    pub port: u16,
}

/// Why a URL names no endpoint.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EndpointError {
    #[error("`{url}` is not a URL: it has no `scheme://`")]
    NoScheme { url: String },
    #[error(
        "`{url}` uses the scheme `{scheme}`, which Chock does not read; only https, http, ftp, git and ssh name a host and port"
    )]
    UnknownScheme { url: String, scheme: String },
    #[error("`{url}` names no host")]
    NoHost { url: String },
    #[error(
        "`{url}` names an IPv6 address, which cannot be written as an action name; use a host name"
    )]
    Ipv6 { url: String },
    #[error("`{url}` names the port `{port}`; a port is a number from 1 to 65535")]
    BadPort { url: String, port: String },
}

/// A host that cannot be written as labels of an action name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("host `{host}` cannot be named: {why}")]
pub struct HostError {
    pub host: String,
    pub why: &'static str,
}

/// `docs.ziglang.org` → `org.ziglang.docs`, refusing what cannot be a host:
/// empty labels (so `..`, a leading or trailing dot), `*`, spaces, anything
/// but letters, digits, `-` and `_`.
pub fn reversed_host(host: &str) -> Result<String, HostError> {
    let refuse = |why| HostError {
        host: host.to_string(),
        why,
    };
    if host.is_empty() {
        return Err(refuse("it is empty"));
    }
    if host.contains('*') {
        return Err(refuse("`*` is not part of a host name"));
    }
    if host.contains(char::is_whitespace) {
        return Err(refuse("a host name has no spaces"));
    }
    if !host.is_ascii() {
        return Err(refuse(
            "write an international name in its ASCII (xn--) form",
        ));
    }
    let mut labels = Vec::new();
    for label in host.split('.') {
        if label.is_empty() {
            return Err(refuse(
                "it has an empty label (`..`, or a dot at either end)",
            ));
        }
        if !label
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        {
            return Err(refuse("a label holds only letters, digits, `-` and `_`"));
        }
        labels.push(label.to_ascii_lowercase());
    }
    labels.reverse();
    Ok(labels.join("."))
}

/// The schemes Chock reads, with the port each names when the URL gives none.
pub const SCHEMES: [(&str, u16); 5] = [
    ("https", 443),
    ("http", 80),
    ("ftp", 21),
    ("git", 9418),
    ("ssh", 22),
];

/// Reads the endpoint of `url`. A transport written in front of the scheme
/// (`git+https`, `hg+ssh`) is taken off and the scheme behind the last `+` is
/// read; user information (`user:pass@`) is dropped.
pub fn url_endpoint(url: &str) -> Result<Endpoint, EndpointError> {
    let (scheme, rest) = url
        .split_once("://")
        .ok_or_else(|| EndpointError::NoScheme {
            url: url.to_string(),
        })?;
    let scheme = scheme
        .rsplit('+')
        .next()
        .unwrap_or(scheme)
        .to_ascii_lowercase();
    let default_port = SCHEMES
        .iter()
        .find(|(name, _)| *name == scheme)
        .map(|(_, port)| *port)
        .ok_or_else(|| EndpointError::UnknownScheme {
            url: url.to_string(),
            scheme: scheme.clone(),
        })?;
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    let host_port = authority.rsplit('@').next().unwrap_or(authority);
    if host_port.starts_with('[') {
        return Err(EndpointError::Ipv6 {
            url: url.to_string(),
        });
    }
    let (host, port) = match host_port.split_once(':') {
        Some((host, port)) => (host, parse_port(url, port)?),
        None => (host_port, default_port),
    };
    if host.is_empty() {
        return Err(EndpointError::NoHost {
            url: url.to_string(),
        });
    }
    Ok(Endpoint {
        scheme,
        host: host.to_ascii_lowercase(),
        port,
    })
}

fn parse_port(url: &str, port: &str) -> Result<u16, EndpointError> {
    let bad = || EndpointError::BadPort {
        url: url.to_string(),
        port: port.to_string(),
    };
    if port.is_empty() || !port.bytes().all(|b| b.is_ascii_digit()) {
        return Err(bad());
    }
    match port.parse::<u16>() {
        Ok(0) | Err(_) => Err(bad()),
        Ok(n) => Ok(n),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn endpoint(url: &str) -> (String, String, u16) {
        let e = url_endpoint(url).unwrap_or_else(|e| panic!("{url}: {e}"));
        (e.scheme, e.host, e.port)
    }

    #[test]
    fn each_scheme_names_its_default_port() {
        assert_eq!(
            endpoint("https://ftpmirror.gnu.org/x"),
            ("https".into(), "ftpmirror.gnu.org".into(), 443)
        );
        assert_eq!(
            endpoint("http://a.example/"),
            ("http".into(), "a.example".into(), 80)
        );
        assert_eq!(
            endpoint("ftp://ftp.gmplib.org/pub"),
            ("ftp".into(), "ftp.gmplib.org".into(), 21)
        );
        assert_eq!(
            endpoint("git://sourceware.org/x.git"),
            ("git".into(), "sourceware.org".into(), 9418)
        );
        assert_eq!(
            endpoint("ssh://git@example.com/a.git"),
            ("ssh".into(), "example.com".into(), 22)
        );
    }

    #[test]
    fn a_transport_prefix_is_taken_off() {
        assert_eq!(
            endpoint("git+https://github.com/a/b"),
            ("https".into(), "github.com".into(), 443)
        );
        assert_eq!(
            endpoint("hg+http://hg.example/r"),
            ("http".into(), "hg.example".into(), 80)
        );
    }

    #[test]
    fn user_information_query_and_fragment_are_not_the_host() {
        assert_eq!(
            endpoint("https://user:pw@Host.Example:8443?x=1#y").1,
            "host.example"
        );
        assert_eq!(endpoint("https://user:pw@Host.Example:8443?x=1#y").2, 8443);
        assert_eq!(endpoint("https://h.example#frag").1, "h.example");
    }

    #[test]
    fn what_cannot_be_named_is_refused() {
        assert!(matches!(
            url_endpoint("mirror://gnu/hello"),
            Err(EndpointError::UnknownScheme { .. })
        ));
        assert!(matches!(
            url_endpoint("file:///etc/passwd"),
            Err(EndpointError::UnknownScheme { .. })
        ));
        assert!(matches!(
            url_endpoint("example.com/x"),
            Err(EndpointError::NoScheme { .. })
        ));
        assert!(matches!(
            url_endpoint("https:///x"),
            Err(EndpointError::NoHost { .. })
        ));
        assert!(matches!(
            url_endpoint("https://[::1]:80/"),
            Err(EndpointError::Ipv6 { .. })
        ));
        for port in ["0", "65536", "", "-1", "8o"] {
            let url = format!("https://h.example:{port}/");
            assert!(
                matches!(url_endpoint(&url), Err(EndpointError::BadPort { .. })),
                "{url}"
            );
        }
    }
}
