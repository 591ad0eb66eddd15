//! The settings of every layer, folded: the project's `chock.zon` over the
//! operator's `config.zon` over the built-in values, each organisation
//! bundle's value a ceiling on top (the minimum, quietly held to with a
//! warning that names the bundle).

use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::agents::{Agent, Review, Subagents};
use crate::servers::{McpServer, OperatorSecrets, ProjectServers, SecretError, SecretStore};
use crate::skills::SkillsBlock;
use crate::{
    Amount, ByteSize, ContainerSettings, DEFAULT_LOG_KEEP, DEFAULT_LOG_ROTATE_BYTES,
    DEFAULT_MAX_OBJECT_BYTES, DEFAULT_MAX_SESSION_BYTES, DEFAULT_SHIP_IDLE_SECONDS, Limits,
    LogSettings, LspServer, Machine, MemoryAmount, NamedDevice, NetSettings, NixSettings, Price,
    ProcessCount, ProviderInstance, SearchEngine, Sink, SkillSettings, StyleSettings, Witness,
    human_bytes,
};

/// How deep a spawn chain may go below the main agent when `chock.zon`
/// does not say: children, never grandchildren.
pub const DEFAULT_MAX_DEPTH: u32 = 1;
/// How many children one agent may spawn over a session when `chock.zon`
/// does not say.
pub const DEFAULT_MAX_WIDTH: u32 = 4;

/// `.nix` of `chock.zon` or `config.zon`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NixBlock {
    pub dev_shell: Option<String>,
    pub max_object_bytes: Option<ByteSize>,
    pub max_session_bytes: Option<ByteSize>,
}

/// `.limits` of `chock.zon`, `config.zon` or a bundle.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LimitsBlock {
    pub processes: Option<ProcessCount>,
    pub memory: Option<MemoryAmount>,
}

/// `.log` of `config.zon`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LogBlock {
    pub rotate_bytes: Option<ByteSize>,
    pub keep: Option<u32>,
    pub fsync: Option<bool>,
    pub ship_idle_seconds: Option<u32>,
}

/// `.nix` of an organisation bundle: ceilings on the byte caps.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OrgNixBlock {
    pub max_object_bytes: Option<ByteSize>,
    pub max_session_bytes: Option<ByteSize>,
}

/// The settings `chock.zon` holds, checked.
#[derive(Debug, Default)]
pub struct ProjectSettings {
    pub agents: Vec<Agent>,
    pub net: NetSettings,
    pub nix: NixBlock,
    pub limits: LimitsBlock,
    pub container: Option<ContainerSettings>,
    pub servers: ProjectServers,
    pub subagents: Option<Subagents>,
    pub review: Option<Review>,
    pub skills: SkillsBlock,
    pub style: Option<StyleSettings>,
    pub lsp: Vec<LspServer>,
    pub devices: Vec<NamedDevice>,
}

/// The settings the operator's `config.zon` holds, checked.
#[derive(Debug, Default)]
pub struct OperatorSettings {
    pub file: PathBuf,
    pub nix: NixBlock,
    pub limits: LimitsBlock,
    pub log: LogBlock,
    pub stores: OperatorSecrets,
    pub providers: Vec<ProviderInstance>,
    pub prices: Vec<Price>,
    pub search: Option<SearchEngine>,
    pub skills: SkillsBlock,
    pub sinks: Vec<Sink>,
    pub witnesses: Vec<Witness>,
}

/// What one organisation bundle holds the settings to.
#[derive(Debug, Clone, Default)]
pub struct OrgCeiling {
    pub file: PathBuf,
    pub subagents: Option<Subagents>,
    /// `.review.by_agent`: `false` forbids reviewer agents.
    pub review_by_agent: bool,
    pub max_object_bytes: Option<u64>,
    pub max_session_bytes: Option<u64>,
    pub processes: Option<Amount>,
    pub memory: Option<Amount>,
    /// The sinks every session on the machine ships its log to.
    pub sinks: Vec<Sink>,
    /// The witnesses every checkpoint on the machine is cosigned by.
    pub witnesses: Vec<Witness>,
}

/// The caps on a spawn tree as they hold (see [`Config::subagents`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SubagentCaps {
    /// How many links below the main agent a chain may have (0: no child).
    pub max_depth: u32,
    /// How many children one agent may spawn over a session.
    pub max_width: u32,
}

/// Why a session has no reviewer agent ([`Config::reviewer`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NoReviewer {
    /// The project's `chock.zon` names none.
    #[error("{} names no reviewer agent: declare its kind in .policy.agents and name it in .review = .{{ .agent_kind = \"reviewer\" }}", .0.display())]
    NotNamed(PathBuf),
    /// An organisation bundle forbids them.
    #[error("the organisation bundle {} forbids reviewer agents (.review.by_agent = false)", .0.display())]
    Forbidden(PathBuf),
}

/// Every layer's settings, read once and held immutable.
#[derive(Debug, Default)]
pub struct Config {
    project_file: PathBuf,
    project: Option<ProjectSettings>,
    operator: Option<OperatorSettings>,
    org: Vec<OrgCeiling>,
}

impl Config {
    /// The settings of `chock.zon` at `project_file` (if it was read), of
    /// the operator's `config.zon` and of every bundle, in the order read.
    pub fn new(
        project_file: PathBuf,
        project: Option<ProjectSettings>,
        operator: Option<OperatorSettings>,
        org: Vec<OrgCeiling>,
    ) -> Config {
        Config {
            project_file,
            project,
            operator,
            org,
        }
    }

    /// The MCP servers `chock.zon` names, in the order written.
    pub fn mcp_servers(&self) -> &[McpServer] {
        self.project
            .as_ref()
            .map_or(&[], |p| p.servers.servers.as_slice())
    }

    /// The secrets `chock.zon` names.
    pub fn secrets(&self) -> &[String] {
        self.project
            .as_ref()
            .map_or(&[], |p| p.servers.secrets.as_slice())
    }

    /// Where the operator's `config.zon` says `secret` is kept; `None` when
    /// it says nothing (the secret then cannot be given).
    pub fn secret_store(&self, secret: &str) -> Option<&SecretStore> {
        self.operator.as_ref().and_then(|o| o.stores.get(secret))
    }

    /// Reads secret `name` from where the operator's `config.zon` keeps it.
    /// The error is a sentence for a person; it never holds the value.
    pub fn read_secret(&self, name: &str) -> Result<String, SecretError> {
        let store = self
            .secret_store(name)
            .ok_or_else(|| SecretError::NoStore {
                name: name.to_string(),
                config: self.operator_file().map_or(
                    "your config.zon ($XDG_CONFIG_HOME/chock/config.zon)".into(),
                    |p| p.display().to_string(),
                ),
            })?;
        store.read(name)
    }

    /// The model provider instances of the operator's `config.zon`, in the
    /// order written.
    pub fn providers(&self) -> &[ProviderInstance] {
        self.operator
            .as_ref()
            .map_or(&[], |o| o.providers.as_slice())
    }

    /// The prices of the operator's `config.zon` (`.prices`), in the order
    /// written.
    pub fn prices(&self) -> &[Price] {
        self.operator.as_ref().map_or(&[], |o| o.prices.as_slice())
    }

    /// The provider instance named `name`, if `config.zon` names it.
    pub fn provider(&self, name: &str) -> Option<&ProviderInstance> {
        self.providers().iter().find(|p| p.name == name)
    }

    /// The search engine of the operator's `config.zon` (`.search`): the
    /// web_search tool is offered only when there is one.
    pub fn search(&self) -> Option<&SearchEngine> {
        self.operator.as_ref().and_then(|o| o.search.as_ref())
    }

    /// Which skill layers are listed and the bound of one read: what both
    /// `.skills` blocks (the operator's, the project's) leave.
    pub fn skills(&self) -> SkillSettings {
        let operator = self.operator.as_ref().map(|o| &o.skills);
        let project = self.project.as_ref().map(|p| &p.skills);
        crate::skills::settle(&operator.into_iter().chain(project).collect::<Vec<_>>())
    }

    /// The project's `chock.zon` (which need not exist).
    pub fn project_file(&self) -> &Path {
        &self.project_file
    }

    /// The operator's `config.zon`, when one was read.
    pub fn operator_file(&self) -> Option<&Path> {
        self.operator.as_ref().map(|o| o.file.as_path())
    }

    /// Agent kinds the project declares.
    pub fn agents(&self) -> &[Agent] {
        self.project.as_ref().map_or(&[], |p| &p.agents)
    }

    /// The caps on `chock run`'s spawn tree: `chock.zon`'s `.subagents`
    /// (each cap it leaves unset is the built-in one,
    /// [`DEFAULT_MAX_DEPTH`] and [`DEFAULT_MAX_WIDTH`]), each held to the
    /// lowest organisation bundle's.
    pub fn subagents(&self) -> SubagentCaps {
        let own = self.project.as_ref().and_then(|p| p.subagents);
        let mut caps = SubagentCaps {
            max_depth: own.and_then(|s| s.max_depth).unwrap_or(DEFAULT_MAX_DEPTH),
            max_width: own.and_then(|s| s.max_width).unwrap_or(DEFAULT_MAX_WIDTH),
        };
        for bundle in &self.org {
            if let Some(held) = bundle.subagents {
                caps.max_depth = caps.max_depth.min(held.max_depth.unwrap_or(u32::MAX));
                caps.max_width = caps.max_width.min(held.max_width.unwrap_or(u32::MAX));
            }
        }
        caps
    }

    /// The reviewer agent of `chock run`: the kind `chock.zon`'s `.review`
    /// names, unless an organisation bundle forbids reviewer agents
    /// (`.review = .{ .by_agent = false }`). `Err` says why there is none.
    pub fn reviewer(&self) -> Result<&Review, NoReviewer> {
        if let Some(bundle) = self.org.iter().find(|b| !b.review_by_agent) {
            return Err(NoReviewer::Forbidden(bundle.file.clone()));
        }
        self.project
            .as_ref()
            .and_then(|p| p.review.as_ref())
            .ok_or_else(|| NoReviewer::NotNamed(self.project_file.clone()))
    }

    /// `.policy.net`.
    pub fn net(&self) -> NetSettings {
        self.project
            .as_ref()
            .map_or_else(NetSettings::default, |p| p.net)
    }

    /// The devices the project names (`.devices` of `chock.zon`).
    pub fn devices(&self) -> &[NamedDevice] {
        self.project.as_ref().map_or(&[], |p| p.devices.as_slice())
    }

    /// The project's language servers (`.lsp` of `chock.zon`).
    pub fn lsp_servers(&self) -> &[LspServer] {
        self.project.as_ref().map_or(&[], |p| p.lsp.as_slice())
    }

    /// The project's style rules (`.style` of `chock.zon`), if it writes any.
    pub fn style(&self) -> Option<&StyleSettings> {
        self.project.as_ref().and_then(|p| p.style.as_ref())
    }

    /// The container image the project's toolchain comes from, if
    /// `chock.zon` names one.
    pub fn container(&self) -> Option<&ContainerSettings> {
        self.project.as_ref().and_then(|p| p.container.as_ref())
    }

    /// The `.nix` block: project > operator > built-in, each byte cap held to
    /// the lowest org ceiling.
    pub fn nix_settings(&self) -> NixSettings {
        self.nix_settings_held().0
    }

    /// The `.nix` block as [`Config::nix_settings`] folds it, and a
    /// sentence for each cap a bundle held lower.
    pub fn nix_settings_held(&self) -> (NixSettings, Vec<String>) {
        let project = self.project.as_ref().map(|p| &p.nix);
        let operator = self.operator.as_ref().map(|o| &o.nix);
        let pick = |f: fn(&NixBlock) -> Option<u64>, builtin: u64| {
            project
                .and_then(f)
                .or_else(|| operator.and_then(f))
                .unwrap_or(builtin)
        };
        let mut held = Vec::new();
        let object = self.hold(
            "nix.max_object_bytes",
            pick(
                |b| b.max_object_bytes.map(|s| s.0),
                DEFAULT_MAX_OBJECT_BYTES,
            ),
            |b| b.max_object_bytes,
            &mut held,
        );
        let session = self.hold(
            "nix.max_session_bytes",
            pick(
                |b| b.max_session_bytes.map(|s| s.0),
                DEFAULT_MAX_SESSION_BYTES,
            ),
            |b| b.max_session_bytes,
            &mut held,
        );
        let dev_shell = project
            .and_then(|b| b.dev_shell.clone())
            .or_else(|| operator.and_then(|b| b.dev_shell.clone()));
        (
            NixSettings {
                dev_shell,
                max_object_bytes: object,
                max_session_bytes: session,
            },
            held,
        )
    }

    /// Holds `value` to the lowest ceiling any bundle sets, noting it when it bites.
    fn hold(
        &self,
        name: &str,
        value: u64,
        ceiling: impl Fn(&OrgCeiling) -> Option<u64>,
        held: &mut Vec<String>,
    ) -> u64 {
        let lowest = self
            .org
            .iter()
            .filter_map(|b| ceiling(b).map(|c| (c, b)))
            .min_by_key(|(c, _)| *c);
        match lowest {
            Some((c, bundle)) if c < value => {
                held.push(format!(
                    "{name} of {} is held to {} by the organisation's bundle {}",
                    human_bytes(value),
                    human_bytes(c),
                    bundle.file.display()
                ));
                c
            }
            _ => value,
        }
    }

    /// The decision log's rotation and syncing, from the operator's `config.zon`.
    pub fn log_settings(&self) -> LogSettings {
        let log = self.operator.as_ref().map(|o| &o.log);
        LogSettings {
            rotate_bytes: log
                .and_then(|l| l.rotate_bytes)
                .map_or(DEFAULT_LOG_ROTATE_BYTES, |b| b.0),
            keep: log.and_then(|l| l.keep).unwrap_or(DEFAULT_LOG_KEEP),
            fsync: log.and_then(|l| l.fsync).unwrap_or(false),
            ship_idle_seconds: log
                .and_then(|l| l.ship_idle_seconds)
                .unwrap_or(DEFAULT_SHIP_IDLE_SECONDS),
        }
    }

    /// Every sink the log is shipped to: each organisation bundle's, then
    /// the operator's. A name two files give the same sink is listed once.
    pub fn sinks(&self) -> Vec<Sink> {
        self.every(|c| &c.sinks, |o| &o.sinks)
    }

    /// Every witness a checkpoint is cosigned by: each organisation
    /// bundle's, then the operator's, each listed once.
    pub fn witnesses(&self) -> Vec<Witness> {
        self.every(|c| &c.witnesses, |o| &o.witnesses)
    }

    /// The organisation bundles read, in the order read.
    pub fn bundle_files(&self) -> Vec<PathBuf> {
        self.org.iter().map(|c| c.file.clone()).collect()
    }

    /// A list both bundles and config.zon hold: every bundle's, then the
    /// operator's, each item once.
    fn every<T: Clone + PartialEq>(
        &self,
        bundle: impl Fn(&OrgCeiling) -> &Vec<T>,
        operator: impl Fn(&OperatorSettings) -> &Vec<T>,
    ) -> Vec<T> {
        let mut all: Vec<T> = Vec::new();
        let named = self
            .org
            .iter()
            .flat_map(bundle)
            .chain(self.operator.iter().flat_map(operator));
        for item in named {
            if !all.contains(item) {
                all.push(item.clone());
            }
        }
        all
    }

    /// Two files naming one sink name for different receivers (they would
    /// share one cursor): the name and both files.
    pub fn sink_clash(&self) -> Option<(String, PathBuf, PathBuf)> {
        let named: Vec<(&Sink, &Path)> = self
            .org
            .iter()
            .flat_map(|c| c.sinks.iter().map(|s| (s, c.file.as_path())))
            .chain(
                self.operator
                    .iter()
                    .flat_map(|o| o.sinks.iter().map(|s| (s, o.file.as_path()))),
            )
            .collect();
        named.iter().enumerate().find_map(|(i, (a, file_a))| {
            named[i + 1..]
                .iter()
                .find(|(b, _)| b.id == a.id && b != a)
                .map(|(_, file_b)| (a.id.clone(), file_a.to_path_buf(), file_b.to_path_buf()))
        })
    }

    /// Sandbox limits on this machine.
    pub fn limits(&self) -> Limits {
        self.limits_on(&Machine::detect())
    }

    /// Sandbox limits: project > operator > machine-sized default, held to
    /// the lowest org ceiling; percentages are of `machine`.
    pub fn limits_on(&self, machine: &Machine) -> Limits {
        let builtin = machine.default_limits();
        let project = self.project.as_ref().map(|p| &p.limits);
        let operator = self.operator.as_ref().map(|o| &o.limits);
        let processes = project
            .and_then(|l| l.processes)
            .or_else(|| operator.and_then(|l| l.processes))
            .map_or(builtin.processes, |p| p.0.resolve(machine.cpus));
        let memory = project
            .and_then(|l| l.memory)
            .or_else(|| operator.and_then(|l| l.memory))
            .map_or(builtin.memory_bytes, |m| m.0.resolve(machine.memory_bytes));
        let ceiling = |value: u64, f: fn(&OrgCeiling) -> Option<Amount>, whole: u64| {
            self.org
                .iter()
                .filter_map(|b| f(b).map(|a| a.resolve(whole)))
                .fold(value, u64::min)
        };
        Limits {
            processes: ceiling(processes, |b| b.processes, machine.cpus),
            memory_bytes: ceiling(memory, |b| b.memory, machine.memory_bytes),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{GIB, MIB};

    fn nix(object: Option<u64>, session: Option<u64>) -> NixBlock {
        NixBlock {
            dev_shell: None,
            max_object_bytes: object.map(ByteSize),
            max_session_bytes: session.map(ByteSize),
        }
    }

    fn bundle(name: &str) -> OrgCeiling {
        OrgCeiling {
            file: PathBuf::from(name),
            review_by_agent: true,
            ..OrgCeiling::default()
        }
    }

    fn config(
        project: ProjectSettings,
        operator: OperatorSettings,
        org: Vec<OrgCeiling>,
    ) -> Config {
        Config::new(
            PathBuf::from("/p/chock.zon"),
            Some(project),
            Some(operator),
            org,
        )
    }

    #[test]
    fn a_byte_cap_is_the_projects_then_the_operators_then_built_in_held_to_the_lowest_bundle() {
        let project = ProjectSettings {
            nix: nix(Some(8 * MIB), None),
            ..ProjectSettings::default()
        };
        let operator = OperatorSettings {
            nix: nix(Some(4 * MIB), Some(64 * MIB)),
            ..OperatorSettings::default()
        };
        let low = OrgCeiling {
            max_session_bytes: Some(32 * MIB),
            ..bundle("/org/low.zon")
        };
        let high = OrgCeiling {
            max_session_bytes: Some(48 * MIB),
            ..bundle("/org/high.zon")
        };
        let (nix, held) = config(project, operator, vec![high, low]).nix_settings_held();
        assert_eq!(nix.max_object_bytes, 8 * MIB);
        assert_eq!(nix.max_session_bytes, 32 * MIB);
        assert_eq!(
            held,
            [
                "nix.max_session_bytes of 64 MiB is held to 32 MiB by the organisation's bundle /org/low.zon"
            ]
        );
        let bare = Config::default().nix_settings();
        assert_eq!(
            (bare.max_object_bytes, bare.max_session_bytes),
            (DEFAULT_MAX_OBJECT_BYTES, DEFAULT_MAX_SESSION_BYTES)
        );
    }

    #[test]
    fn limits_are_shares_of_the_machine_and_a_bundle_only_lowers_them() {
        let machine = Machine {
            cpus: 8,
            memory_bytes: 16 * GIB,
        };
        let operator = OperatorSettings {
            limits: LimitsBlock {
                processes: Some(ProcessCount(Amount::Absolute(1000))),
                memory: Some(MemoryAmount(Amount::Percent(50))),
            },
            ..OperatorSettings::default()
        };
        let org = OrgCeiling {
            processes: Some(Amount::Absolute(100)),
            memory: Some(Amount::Percent(75)),
            ..bundle("/org/b.zon")
        };
        let limits = config(ProjectSettings::default(), operator, vec![org]).limits_on(&machine);
        assert_eq!(limits.processes, 100);
        assert_eq!(limits.memory_bytes, 8 * GIB);
        assert_eq!(
            Config::default().limits_on(&machine),
            machine.default_limits()
        );
    }

    #[test]
    fn spawn_caps_default_and_a_bundle_holds_them_and_can_forbid_a_reviewer() {
        assert_eq!(
            Config::default().subagents(),
            SubagentCaps {
                max_depth: DEFAULT_MAX_DEPTH,
                max_width: DEFAULT_MAX_WIDTH
            }
        );
        let project = ProjectSettings {
            subagents: Some(Subagents {
                max_depth: Some(3),
                max_width: None,
            }),
            ..ProjectSettings::default()
        };
        let forbids = OrgCeiling {
            subagents: Some(Subagents {
                max_depth: Some(2),
                max_width: Some(9),
            }),
            review_by_agent: false,
            ..bundle("/org/strict.zon")
        };
        let held = config(project, OperatorSettings::default(), vec![forbids]);
        assert_eq!(
            held.subagents(),
            SubagentCaps {
                max_depth: 2,
                max_width: DEFAULT_MAX_WIDTH
            }
        );
        assert_eq!(
            held.reviewer(),
            Err(NoReviewer::Forbidden(PathBuf::from("/org/strict.zon")))
        );
        let unnamed = config(
            ProjectSettings::default(),
            OperatorSettings::default(),
            vec![],
        );
        assert_eq!(
            unnamed.reviewer(),
            Err(NoReviewer::NotNamed(PathBuf::from("/p/chock.zon")))
        );
    }
}
