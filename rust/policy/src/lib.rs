//! Chock's policy engine: rules, shipped defaults, layers and the readings
//! that answer them, and why an answer is what it is.
//!
//! Every act an agent asks for carries an action name (made only by
//! [`names`], the chock-names crate); [`Policy::decide`] answers a [`Key`]
//! from the project's `chock.zon`, the [`defaults`] and every organisation
//! bundle, and says which rule decided and what rule would change the
//! answer. The settings those files hold are chock-config's, folded in one
//! [`Config`] ([`Policy::config`]). The rules are documented in
//! `docs/policy.md`.

#![forbid(unsafe_code)]

mod ask;
pub mod control;
mod decision;
pub mod defaults;
mod edit;
mod either;
mod error;
mod files;
mod identity;
mod index;
mod nix_net;
pub mod package;
mod pattern;
mod policy;
mod promise;
pub mod root;
mod rule;
#[cfg(test)]
mod test_support;
#[cfg(test)]
mod tests;
pub mod unparsed;
pub mod workspace;

pub use ask::{Answer, Asker, Nobody, Question, Scope, visible};
// The settings chock-config reads, named here too for the crates above.
pub use chock_config::{
    Agent, Budget, COMMAND_TIMEOUT, Config, ContainerSettings, DEFAULT_LSP_TIMEOUT,
    DEFAULT_MAX_DEPTH, DEFAULT_MAX_WIDTH, DEFAULT_SEARCH_BYTES, DEFAULT_SEARCH_RESULTS,
    DEFAULT_SEARCH_TIMEOUT, DEFAULT_SKILL_BYTES, DeviceId, DeviceNameError, KeySource, Launch,
    LspServer, MAX_AGENT_KINDS, MAX_DEVICES, MAX_LSP_SERVERS, MAX_LSP_TIMEOUT, MAX_PRICES,
    MAX_PROVIDERS, MAX_SEARCH_BYTES, MAX_SEARCH_RESULTS, MAX_SECRET_BYTES, MAX_SECRETS,
    MAX_SERVERS, MAX_SINKS, MAX_SKILL_BYTES, MAX_STYLE_BYTES, MAX_STYLE_RULES, MAX_STYLE_TIMEOUT,
    McpServer, NOT_IMPLEMENTED, NamedDevice, NetMode, NetSettings, NoReviewer, PLUGIN_TOOLS, Price,
    ProviderInstance, ProviderKind, Review, SEARCH_LOGIN, SearchEngine, SearchKind, SecretEnv,
    SecretError, SecretStore, Sink, SkillLayer, SkillSettings, StoreCommandError, StyleMeasure,
    StyleRule, StyleSettings, SubagentCaps, Subagents, TOOL_SEPARATOR, Witness,
};
pub use chock_flakelock::{Endpoint, EndpointError, SCHEMES, url_endpoint};
pub use chock_names as names;
pub use decision::{Decision, NotADecision};
pub use edit::{EditError, RuleEdit, always_offered, write_rules};
pub use error::PolicyError;
pub use files::{BUNDLE_VERSION, IndexBlock, MAX_RULES, OrgBundle, UnknownActions};
pub use index::RuleSet;
pub use names::{ExecContext, NameError, Phase};
pub use nix_net::{MAX_SITE_BYTES, NIX_NET_HOSTS, NIX_NET_OPAQUE, nix_net_mirror};
pub use package::{HookPoint, PolicyPackage, Rollout};
pub use pattern::{EXACT_SCORE, Pattern, PatternError};
pub use policy::{
    DecidedBy, Explained, Held, Layer, LoadOptions, PROJECT_FILE, Policy, Reading, SYSTEM_BUNDLE,
    StartQuestion, Suggestion, Verdict, read_once_note,
};
pub use promise::{AlreadyBound, Ceiling};
pub use rule::{Key, Rule, RuleSource, Specificity};
