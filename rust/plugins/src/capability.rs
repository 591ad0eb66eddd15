//! The capabilities a plugin's tool declares, each priced under an
//! ordinary action name, and the set granted to one plugin.

use std::collections::BTreeSet;
use std::fmt;

/// One thing a tool may do outside its own memory.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Capability {
    /// `fs.read`: read a file beneath the workspace, priced as `file.read`.
    FsRead,
    /// `fs.write`: write a file beneath the workspace, priced as `file.write`.
    FsWrite,
    /// `net.fetch.<host>`: GET a URL on this host.
    NetFetch(FetchHost),
}

/// A host a tool may fetch from: lower case, an IP address without
/// brackets, and the action it is priced under.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct FetchHost {
    host: String,
    action: String,
}

impl FetchHost {
    pub fn host(&self) -> &str {
        &self.host
    }
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum CapabilityError {
    #[error("`exec` is never granted to a plugin: a plugin runs no program")]
    Exec,
    #[error(
        "`{0}` is no capability a plugin may declare; it declares `fs.read`, `fs.write` or `net.fetch:<host>`"
    )]
    Unknown(String),
    #[error("`{given}` names no host to fetch from: {why}")]
    BadHost { given: String, why: String },
}

impl Capability {
    /// Reads a capability as a manifest writes it: `fs.read`, `fs.write`,
    /// `net.fetch:<host>`.
    pub fn parse(text: &str) -> Result<Capability, CapabilityError> {
        match text {
            "fs.read" => Ok(Capability::FsRead),
            "fs.write" => Ok(Capability::FsWrite),
            "exec" => Err(CapabilityError::Exec),
            _ => match text.strip_prefix("net.fetch:") {
                Some(host) => Capability::fetch(host).map_err(|why| CapabilityError::BadHost {
                    given: text.into(),
                    why,
                }),
                None => Err(CapabilityError::Unknown(text.into())),
            },
        }
    }

    fn fetch(host: &str) -> Result<Capability, String> {
        let host = host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_ascii_lowercase();
        let action = chock_names::net_fetch(&host).map_err(|e| e.to_string())?;
        Ok(Capability::NetFetch(FetchHost { host, action }))
    }

    /// The ordinary action this capability is priced under.
    pub fn action(&self) -> String {
        match self {
            Capability::FsRead => "file.read".into(),
            Capability::FsWrite => "file.write".into(),
            Capability::NetFetch(fetch) => fetch.action.clone(),
        }
    }
}

impl fmt::Display for Capability {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Capability::FsRead => f.write_str("fs.read"),
            Capability::FsWrite => f.write_str("fs.write"),
            Capability::NetFetch(fetch) => write!(f, "net.fetch:{}", fetch.host),
        }
    }
}

/// What one plugin was granted: the capabilities of every tool offered.
/// The host links an interface only when something in it was granted.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Grants {
    granted: BTreeSet<Capability>,
}

impl Grants {
    pub fn new(granted: impl IntoIterator<Item = Capability>) -> Grants {
        Grants {
            granted: granted.into_iter().collect(),
        }
    }

    pub fn has(&self, capability: &Capability) -> bool {
        self.granted.contains(capability)
    }

    /// Whether any host may be fetched from (the `net-fetch` interface is
    /// linked).
    pub fn fetches(&self) -> bool {
        self.granted
            .iter()
            .any(|c| matches!(c, Capability::NetFetch(_)))
    }

    /// Whether `host` (as a URL gives it) was granted to fetch from.
    pub fn fetches_from(&self, host: &str) -> bool {
        let host = host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_ascii_lowercase();
        self.granted
            .iter()
            .any(|c| matches!(c, Capability::NetFetch(f) if f.host == host))
    }

    pub fn iter(&self) -> impl Iterator<Item = &Capability> {
        self.granted.iter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_capability_is_priced_under_its_ordinary_action() {
        let cases = [
            ("fs.read", "file.read"),
            ("fs.write", "file.write"),
            ("net.fetch:Example.COM", "net.fetch.com.example"),
            ("net.fetch:127.0.0.1", "net.fetch.1.0.0.127"),
        ];
        for (written, action) in cases {
            let capability = Capability::parse(written).map(|c| c.action());
            assert_eq!(capability.as_deref(), Ok(action), "{written}");
        }
    }

    #[test]
    fn exec_and_unknown_capabilities_are_refused() {
        assert_eq!(Capability::parse("exec"), Err(CapabilityError::Exec));
        assert!(matches!(
            Capability::parse("fs.delete"),
            Err(CapabilityError::Unknown(_))
        ));
        assert!(matches!(
            Capability::parse("net.fetch:"),
            Err(CapabilityError::BadHost { .. })
        ));
    }
}
