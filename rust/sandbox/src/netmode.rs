//! Which network a command's sandbox is given, read from
//! `.policy.net.router` and `.policy.net.background`.
//!
//! Every sandbox has a network namespace of its own with loopback up. A
//! [`Network::Closed`] one has nothing else; a [`Network::Filtered`] one is
//! the one the router serves (a resolver and a relay that decide each host
//! at `net.connect.*`). A router is a mechanism, never a permission: it
//! grants no host by itself.

use chock_policy::{NetMode, Policy};

/// The network a sandbox is given.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Network {
    /// Loopback inside the namespace and nothing else.
    #[default]
    #[serde(rename = "none")]
    Closed,
    /// The router: each host decided at `net.connect.*`.
    Filtered,
}

impl Network {
    /// The word `.policy.net` uses for it.
    pub fn word(self) -> &'static str {
        match self {
            Network::Closed => "none",
            Network::Filtered => "filtered",
        }
    }
}

/// What the session itself has: `.policy.net.router`, where `.auto` gives
/// a router only when some rule of any layer permits something under `net`
/// ([`crate::net::permits_under_net`]).
pub fn session(policy: &Policy) -> Network {
    match policy.config().net().router {
        NetMode::None => Network::Closed,
        NetMode::Filtered => Network::Filtered,
        NetMode::Auto if crate::net::permits_under_net(policy) => Network::Filtered,
        NetMode::Auto => Network::Closed,
    }
}

/// What a background command gets: `.policy.net.background`, where `.auto`
/// is whatever the session has.
pub fn background(policy: &Policy) -> Network {
    match policy.config().net().background {
        NetMode::Auto => session(policy),
        NetMode::None => Network::Closed,
        NetMode::Filtered => Network::Filtered,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chock_policy::{Decision, Pattern, Rule};

    fn policy(rules: &[(&str, Decision)]) -> Policy {
        Policy::from_rules(
            rules
                .iter()
                .map(|(action, decision)| {
                    Rule::new(Some(Pattern::parse(action).expect("pattern")), *decision)
                })
                .collect(),
            Vec::new(),
        )
    }

    #[test]
    fn auto_reads_the_rules_and_a_deny_builds_nothing() {
        assert_eq!(session(&policy(&[])), Network::Closed);
        assert_eq!(
            session(&policy(&[("net.connect.*", Decision::Deny)])),
            Network::Closed
        );
        assert_eq!(
            session(&policy(&[("net.connect.com.github", Decision::Allow)])),
            Network::Filtered
        );
        assert_eq!(
            background(&policy(&[("net.connect.com.github", Decision::Ask)])),
            Network::Filtered
        );
    }
}
