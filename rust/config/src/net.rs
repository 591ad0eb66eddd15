//! `.policy.net` of `chock.zon`: whether a session is given a network
//! namespace, a router and a resolver, beside what the rules permit.

use serde::Deserialize;

/// Whether a session is given a network namespace, router and resolver.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NetMode {
    /// Read the rules: a router only when some rule permits something under `net`.
    #[default]
    Auto,
    /// No router whatever the rules say.
    None,
    /// A router even when no rule permits a host yet.
    Filtered,
}

/// `.policy.net`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NetSettings {
    #[serde(default)]
    pub router: NetMode,
    #[serde(default)]
    pub background: NetMode,
}
