//! The HTTP client fetch_url reads with: GET only, no redirects of its own
//! (each hop is decided by the tool), no proxy, no cookies, no credentials,
//! rustls for TLS, and a resolver that will not turn a name into one of this
//! machine's own addresses.

use std::net::{IpAddr, SocketAddr};
use std::sync::OnceLock;
use std::time::Duration;

use reqwest::dns::{Addrs, Name, Resolve, Resolving};

/// How long connecting may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// How long one request may take, body included.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(60);

/// The product token robots.txt groups are matched against.
pub const ROBOTS_AGENT: &str = "chock";

/// An address a host name may not resolve to: this machine (loopback,
/// unspecified) and what only this link reaches (link-local, multicast). A
/// rule that allows a domain must not let its owner point a name at the
/// services on the person's own machine; a rule naming the address itself
/// (`net.fetch.1.0.0.127`) still reaches it.
fn own_machine(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => {
            v4.is_loopback()
                || v4.is_unspecified()
                || v4.is_link_local()
                || v4.is_multicast()
                || v4.is_broadcast()
        }
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return own_machine(IpAddr::V4(v4));
            }
            v6.is_loopback()
                || v6.is_unspecified()
                || v6.is_multicast()
                || (v6.segments()[0] & 0xffc0) == 0xfe80
        }
    }
}

struct PublicResolver;

impl Resolve for PublicResolver {
    fn resolve(&self, name: Name) -> Resolving {
        Box::pin(async move {
            let host = name.as_str().to_string();
            let found: Vec<SocketAddr> = tokio::net::lookup_host((host.as_str(), 0))
                .await?
                .filter(|a| !own_machine(a.ip()))
                .collect();
            if found.is_empty() {
                return Err(format!(
                    "`{host}` resolves to no address outside this machine; a host name is never followed to this machine's own addresses (write the address itself in the URL and a rule to fetch it)"
                )
                .into());
            }
            let addrs: Addrs = Box::new(found.into_iter());
            Ok(addrs)
        })
    }
}

/// A client with Chock's rules ([`chock_provider::http`]) that gives up
/// connecting after [`CONNECT_TIMEOUT`].
pub fn builder() -> reqwest::ClientBuilder {
    chock_provider::http::client_builder(CONNECT_TIMEOUT)
}

/// The one client of the process (it pools connections), for fetch_url
/// and every other fetch made as it makes them (a plugin's `net.fetch`).
pub fn shared_client() -> Result<reqwest::Client, String> {
    static CLIENT: OnceLock<Result<reqwest::Client, std::sync::Arc<reqwest::Error>>> =
        OnceLock::new();
    CLIENT
        .get_or_init(|| {
            builder()
                .timeout(REQUEST_TIMEOUT)
                .dns_resolver(std::sync::Arc::new(PublicResolver))
                .build()
                .map_err(std::sync::Arc::new)
        })
        .clone()
        .map_err(|e| format!("the HTTP client cannot start: {e}"))
}

/// [`shared_client`], failing as a tool does.
pub fn client() -> Result<reqwest::Client, crate::tools::ToolError> {
    shared_client().map_err(crate::tools::ToolError::Unavailable)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_machines_own_addresses_are_not_reached_by_name() {
        for own in [
            "127.0.0.1",
            "0.0.0.0",
            "169.254.169.254",
            "::1",
            "fe80::1",
            "::ffff:127.0.0.1",
            "224.0.0.1",
        ] {
            assert!(
                own_machine(own.parse().unwrap_or(IpAddr::from([0, 0, 0, 0]))),
                "{own}"
            );
        }
        for public in ["93.184.216.34", "10.0.0.1", "2606:4700::1111"] {
            assert!(
                !own_machine(public.parse().unwrap_or(IpAddr::from([127, 0, 0, 1]))),
                "{public}"
            );
        }
    }
}
