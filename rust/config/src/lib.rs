//! Chock's configuration model: the settings a person writes in the project's
//! `chock.zon`, the operator's `config.zon` and an organisation bundle, with
//! their bounds and how they fold (project over operator over built-in, an
//! organisation's value a ceiling on top).
//!
//! Settings are numbers and names, not rules: nothing here decides an act.
//! The rule engine, `chock-policy`, depends on this crate and not the other
//! way round: it reads each file once, takes its rule blocks for its layers
//! and hands the settings blocks to these types, so every file has one
//! reading and a setting's shape, bounds and error wording live in one place.
//! [`Config`] holds every layer's settings folded. The action names a setting
//! implies (`lsp.<program>`, `device.usb.<vendor>.<product>`) are made by
//! chock-names, below both crates.

#![forbid(unsafe_code)]

pub mod agents;
pub mod budget;
pub mod config;
pub mod container;
pub mod devices;
mod error;
pub mod lsp;
pub mod net;
pub mod prices;
pub mod providers;
pub mod search;
pub mod servers;
mod settings;
mod sink_target;
pub mod sinks;
pub mod skills;
mod source;
pub mod style;
pub mod witnesses;

pub use settings::{
    Amount, ByteSize, DEFAULT_LOG_KEEP, DEFAULT_LOG_ROTATE_BYTES, DEFAULT_MAX_OBJECT_BYTES,
    DEFAULT_MAX_SESSION_BYTES, DEFAULT_SHIP_IDLE_SECONDS, GIB, Limits, LogSettings, MIB, Machine,
    MemoryAmount, NixSettings, ProcessCount, SizeError, human_bytes, parse_bytes,
};

pub use agents::{Agent, MAX_AGENT_KINDS, Review, Subagents};
pub use budget::Budget;
pub use config::{Config, DEFAULT_MAX_DEPTH, DEFAULT_MAX_WIDTH, NoReviewer, SubagentCaps};
pub use container::ContainerSettings;
pub use devices::{DeviceId, DeviceNameError, MAX_DEVICES, NamedDevice};
pub use error::ConfigError;
pub use lsp::{DEFAULT_LSP_TIMEOUT, LspServer, MAX_LSP_SERVERS, MAX_LSP_TIMEOUT};
pub use net::{NetMode, NetSettings};
pub use prices::{MAX_PRICES, Price};
pub use providers::{KeySource, MAX_PROVIDERS, ProviderInstance, ProviderKind};
pub use search::{
    DEFAULT_SEARCH_BYTES, DEFAULT_SEARCH_RESULTS, DEFAULT_SEARCH_TIMEOUT, MAX_SEARCH_BYTES,
    MAX_SEARCH_RESULTS, SEARCH_LOGIN, SearchEngine, SearchKind,
};
pub use servers::{
    COMMAND_TIMEOUT, Launch, MAX_SECRET_BYTES, MAX_SECRETS, MAX_SERVERS, McpServer, PLUGIN_TOOLS,
    SecretEnv, SecretError, SecretStore, StoreCommandError, TOOL_SEPARATOR,
};
pub use sink_target::{OTLP_HTTP_PATH, Otlp, OtlpProtocol, OtlpTls};
pub use sinks::{
    DEFAULT_BACKLOG_BYTES, JOURNALD_SOCKET, MAX_SINKS, Sink, SinkNameError, Syslog, Target,
    TargetError,
};
pub use skills::{DEFAULT_SKILL_BYTES, MAX_SKILL_BYTES, SkillLayer, SkillSettings};
pub use source::{FileKind, NOT_IMPLEMENTED, Source};
pub use style::{
    MAX_STYLE_BYTES, MAX_STYLE_RULES, MAX_STYLE_TIMEOUT, StyleMeasure, StyleRule, StyleSettings,
};
pub use witnesses::{MAX_WITNESSES, Witness};
