//! The network router: what a sandboxed command reaches beyond its own
//! loopback, decided host by host.
//!
//! A sandbox always has a network namespace of its own. With a router, that
//! namespace gets three pieces, all set up by Chock from outside before the
//! program starts:
//!
//! - a **kernel ruleset** (nftables, table `inet chock`): TCP to an address
//!   in its allow set is redirected to the relay; any other TCP is
//!   redirected to a port nobody listens on, so it is refused at once; every
//!   other packet that leaves loopback is rejected. The allow set holds only
//!   addresses the resolver handed out (and address literals a rule allows),
//!   so a hard-coded address or a resolver of the program's own (DNS over
//!   HTTPS) dies in the kernel.
//! - a **resolver** on UDP port 53 of the namespace's loopback, named in its
//!   `/etc/resolv.conf`: it answers only A and AAAA, refuses a name every
//!   rule refuses without looking it up, resolves the rest on the host,
//!   drops the addresses no sandbox may reach ([`addr::refused`]), adds the
//!   rest to the allow set, and only then answers.
//! - a **relay**: its listening socket was made inside the namespace, but
//!   Chock accepts on it from outside. It recovers where each connection was
//!   going (`SO_ORIGINAL_DST`), finds the name the resolver handed that
//!   address out for, decides `net.connect.<reversed host>.<port>` through
//!   the gate (asking a person where one can be asked), and dials that very
//!   address from the host: never a second lookup.
//!
//! A router is a mechanism, never a permission: every connection is still
//! decided, and a router with nothing permitted reaches nothing.

pub mod addr;
mod direct;
mod dns;
mod gate;
mod ns;
pub mod probe;
mod relay;
mod table;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use chock_policy::{Decision, Pattern, Policy, Rule};

pub(crate) use direct::{Plan as DirectPlan, pair as direct_pair, supported as direct_supported};
pub use gate::{Decide, NetGate};
pub use ns::ToolError;
pub(crate) use ns::{Attached, attach};

/// The port the relay listens on inside the namespace (below 1024, so a
/// program without capabilities cannot take it).
pub const RELAY_PORT: u16 = 1;
/// The port refused TCP is sent to: nobody listens there, so the kernel
/// answers with a reset (connection refused, never a hang).
pub const REFUSE_PORT: u16 = 2;
/// How long a dial to the real host may take, by the relay or the direct path.
pub(crate) const DIAL_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);
/// The most connections the relay carries at once; more are refused.
pub const MAX_LINKS: usize = 32;
/// The most names the resolver remembers; the oldest is forgotten (and its
/// addresses leave the allow set) when a new one comes.
pub const MAX_NAMES: usize = 64;
/// The longest name the resolver takes.
pub const MAX_NAME_BYTES: usize = 255;
/// The largest DNS datagram read or written.
pub const MAX_DATAGRAM: usize = 1500;
/// The setting that points the host-side resolver at one DNS server
/// (`IP:PORT` or `IP`); without it the host's `/etc/resolv.conf` is used.
pub const RESOLVER_VAR: &str = "CHOCK_NET_RESOLVER";
/// Where the trust store is inside a sandbox with a network.
pub const CA_BUNDLE: &str = "/etc/chock-ca-certificates.crt";
/// The conventional path linked to [`CA_BUNDLE`].
pub const CA_LINK: &str = "/etc/ssl/certs/ca-certificates.crt";
/// The largest CA bundle copied in.
const MAX_CA_BYTES: u64 = 4 << 20;

/// A router for one run: who decides, and where names are resolved.
#[derive(Clone)]
pub struct Router {
    pub(crate) decide: Arc<dyn Decide>,
    pub(crate) upstream: Option<SocketAddr>,
}

impl std::fmt::Debug for Router {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Router")
            .field("upstream", &self.upstream)
            .finish_non_exhaustive()
    }
}

impl Router {
    /// A router whose every name and connection `decide` answers, resolving
    /// on the host as [`RESOLVER_VAR`] says.
    pub fn new(decide: Arc<dyn Decide>) -> Result<Router, BadResolver> {
        Ok(Router {
            decide,
            upstream: upstream_from_env()?,
        })
    }

    /// Decides `net.connect.<reversed host>.<port>` as a connection to it
    /// would be (asked and logged once per run; a connection made later
    /// gets the same answer): for a caller that must know before anything
    /// connects whether the host will be reached.
    pub fn connect(&self, host: &str, port: u16) -> bool {
        self.decide.connect(&host.to_ascii_lowercase(), port)
    }

    /// Resolves through the DNS server at `upstream` instead.
    pub fn with_upstream(mut self, upstream: SocketAddr) -> Router {
        self.upstream = Some(upstream);
        self
    }
}

/// [`RESOLVER_VAR`] holds no address.
#[derive(Debug, thiserror::Error)]
#[error(
    "{RESOLVER_VAR}={value} is not an address: write IP:PORT (e.g. 192.0.2.53:53) or unset it to use the host's resolver"
)]
pub struct BadResolver {
    /// What the variable holds.
    pub value: String,
}

/// [`RESOLVER_VAR`], read.
fn upstream_from_env() -> Result<Option<SocketAddr>, BadResolver> {
    let Ok(value) = std::env::var(RESOLVER_VAR) else {
        return Ok(None);
    };
    if let Ok(addr) = value.parse::<SocketAddr>() {
        return Ok(Some(addr));
    }
    value
        .parse::<std::net::IpAddr>()
        .map(|ip| Some(SocketAddr::new(ip, 53)))
        .map_err(|_| BadResolver { value })
}

/// Whether some rule (the project's, an organisation bundle's or a shipped
/// default) permits something under `net`: what `.policy.net.router =
/// .auto` reads ([`crate::netmode::session`]). A rule that only denies (or
/// needs a reviewer agent no route has) permits nothing.
pub fn permits_under_net(policy: &Policy) -> bool {
    every_rule(policy).any(|rule| {
        rule.decision != Decision::Deny
            && rule.decision != Decision::AgentThenHuman
            && reaches_under(rule.action.as_ref(), "net")
    })
}

/// Every rule of every layer: the project's, each organisation bundle's,
/// and the shipped defaults.
pub(crate) fn every_rule(policy: &Policy) -> impl Iterator<Item = &Rule> {
    policy
        .rules()
        .iter()
        .chain(policy.org_bundles().iter().flat_map(|b| b.rules().rules()))
        .chain(chock_policy::defaults::shipped_rules().rules())
}

/// Whether `pattern` (absent: every action) can match an action under `prefix.`.
fn reaches_under(pattern: Option<&Pattern>, prefix: &str) -> bool {
    let Some(pattern) = pattern else {
        return true;
    };
    let body = pattern.body();
    let below =
        |a: &str, b: &str| a.len() > b.len() && a.starts_with(b) && a.as_bytes()[b.len()] == b'.';
    body == prefix && pattern.is_class()
        || below(body, prefix)
        || (pattern.is_class() && below(prefix, body))
}

/// What a sandbox with a network adds to its `/etc` and environment: a
/// resolv.conf naming the resolver, and the trust store.
pub(crate) struct Files {
    pub(crate) etc: Vec<(String, Vec<u8>)>,
    pub(crate) links: Vec<(PathBuf, PathBuf)>,
    pub(crate) env: Vec<(String, String)>,
}

/// The files for a sandbox with a router; `project_env` is the command's
/// environment as the dev shell set it (its own `SSL_CERT_FILE` is kept).
pub(crate) fn files(project_env: &dyn Fn(&str) -> Option<String>) -> Files {
    let mut files = Files {
        etc: vec![
            (
                "resolv.conf".into(),
                b"nameserver 127.0.0.1\noptions attempts:2 timeout:5\n".to_vec(),
            ),
            // Written after the sandbox's own, so names go to the resolver too.
            (
                "nsswitch.conf".into(),
                b"passwd: files\ngroup: files\nhosts: files dns\n".to_vec(),
            ),
        ],
        links: Vec::new(),
        env: Vec::new(),
    };
    if let Some(bundle) = host_ca_bundle() {
        let name = Path::new(CA_BUNDLE)
            .strip_prefix("/etc")
            .map(|p| p.to_string_lossy().into_owned())
            .unwrap_or_default();
        files.etc.push((name, bundle));
        files
            .links
            .push((PathBuf::from(CA_BUNDLE), PathBuf::from(CA_LINK)));
        if project_env("SSL_CERT_FILE").is_none() {
            files.env.push(("SSL_CERT_FILE".into(), CA_BUNDLE.into()));
        }
    }
    files
}

/// The host's own CA bundle: what its TLS clients read (`SSL_CERT_FILE`,
/// then the usual places), read through one descriptor and bounded.
fn host_ca_bundle() -> Option<Vec<u8>> {
    use std::io::Read;
    let candidates = std::env::var_os("SSL_CERT_FILE")
        .map(PathBuf::from)
        .into_iter()
        .chain(
            [
                "/etc/ssl/certs/ca-certificates.crt",
                "/etc/pki/tls/certs/ca-bundle.crt",
                "/etc/ssl/cert.pem",
                "/etc/ssl/ca-bundle.pem",
            ]
            .map(PathBuf::from),
        );
    for path in candidates {
        let Ok(file) = std::fs::File::open(&path) else {
            continue;
        };
        let mut bytes = Vec::new();
        if file.take(MAX_CA_BYTES + 1).read_to_end(&mut bytes).is_ok()
            && !bytes.is_empty()
            && bytes.len() as u64 <= MAX_CA_BYTES
        {
            return Some(bytes);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules(zon_rules: &[(&str, Decision)]) -> Policy {
        Policy::from_rules(
            zon_rules
                .iter()
                .map(|(action, decision)| {
                    Rule::new(Some(Pattern::parse(action).unwrap()), *decision)
                })
                .collect(),
            Vec::new(),
        )
    }

    #[test]
    fn only_a_rule_that_permits_under_net_counts() {
        let permits = |r: &[(&str, Decision)]| permits_under_net(&rules(r));
        assert!(!permits(&[]));
        assert!(!permits(&[("net.connect.com.github.443", Decision::Deny)]));
        assert!(!permits(&[("net.connect.*", Decision::AgentThenHuman)]));
        assert!(!permits(&[("netx.a", Decision::Allow)]));
        assert!(!permits(&[("exec.host.*", Decision::Allow)]));
        assert!(permits(&[("net.connect.com.github.443", Decision::Allow)]));
        assert!(permits(&[("net.connect.*", Decision::Ask)]));
        assert!(permits(&[("net.*", Decision::Allow)]));
    }

    #[test]
    fn a_pattern_reaches_under_a_prefix_only_on_a_label_boundary() {
        let p = |s: &str| Pattern::parse(s).unwrap();
        assert!(reaches_under(None, "net"));
        assert!(reaches_under(Some(&p("net.*")), "net"));
        assert!(reaches_under(Some(&p("net.fetch.org.x")), "net"));
        assert!(!reaches_under(Some(&p("net")), "net"));
        assert!(!reaches_under(Some(&p("network.*")), "net"));
        assert!(!reaches_under(Some(&p("nix.net.*")), "net"));
    }
}
