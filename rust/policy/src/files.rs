//! What each file may hold, as serde types: the rule blocks with the checks
//! serde cannot make (bundle version, action namespaces), and each settings
//! block handed to chock-config's reader, file by file. Every file
//! fails closed: an unknown field or block anywhere in `chock.zon`,
//! `config.zon` or an organisation bundle refuses the file, naming the
//! nearest known name, because a misspelt block binds nothing and a rule
//! nobody reads is worse than no rule. A block some Chock documents and this
//! one does not implement yet is refused by name, never ignored; a file in
//! another file's shape is refused with the shape it must have.

use std::sync::Arc;

use chock_zon::{Span, Spanned};
use serde::Deserialize;

use crate::decision::Decision;
use crate::index::RuleSet;
use crate::pattern::Pattern;
use crate::rule::{Rule, RuleSource};
use chock_config::agents::{
    AgentFields, OrgReviewFields, ReviewFields, SubagentFields, Subagents, check_agents,
    check_review, check_subagents,
};
use chock_config::budget::{Budget, BudgetFields, read_budget};
use chock_config::config::{
    LimitsBlock, LogBlock, NixBlock, OrgCeiling, OrgNixBlock, ProjectSettings,
};
use chock_config::container::{ContainerBlock, check_container};
use chock_config::sinks::{Sink, SinkFields, check_sinks};
use chock_config::witnesses::{Witness, WitnessFields, check_witnesses};
use chock_config::{ConfigError, FileKind, NetSettings, Source};

/// At most this many rules per file.
pub const MAX_RULES: usize = 512;
/// The bundle format this build reads.
pub const BUNDLE_VERSION: u32 = 1;

/// What a rule whose action starts with a namespace Chock does not name
/// (`exce.path.rm`) does to `chock.zon` (`.unknown_actions`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum UnknownActions {
    /// Refuse the file (the default): such a rule can never match.
    #[default]
    Refuse,
    /// Load it and warn on every load: for a `chock.zon` written for a newer
    /// Chock that names more.
    Warn,
}

/// `.index` of `chock.zon`: the budget of `.agents/policies/INDEX.md`
/// (read by chock-packages; checked here with the rest of the file).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "the `.index` block: `.{ .max_tokens = 4000 }`"
)]
pub struct IndexBlock {
    pub max_tokens: Option<u64>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a struct literal `.{ ... }` at the top of chock.zon"
)]
pub(crate) struct ProjectFile {
    /// For a `chock.zon` written for a newer Chock: warn, not refuse.
    #[serde(default)]
    unknown_actions: UnknownActions,
    /// Read by chock-packages; here only checked.
    #[serde(default, rename = "index")]
    _index: IndexBlock,
    #[serde(default)]
    pub(crate) policy: PolicyBlock,
    #[serde(default)]
    pub(crate) nix: NixBlock,
    #[serde(default)]
    pub(crate) limits: LimitsBlock,
    #[serde(default)]
    container: Option<Spanned<ContainerBlock>>,
    /// The MCP servers the gateway offers (see `servers`).
    #[serde(default)]
    pub(crate) mcp: Option<chock_config::servers::ServersBlock>,
    /// The secrets the project names; never where they are kept.
    #[serde(default)]
    pub(crate) secrets: Option<chock_config::servers::SecretsBlock>,
    #[serde(default)]
    pub(crate) apply: Option<Spanned<crate::workspace::ApplyBlock>>,
    #[serde(default)]
    pub(crate) workspace: Spanned<Vec<Spanned<crate::workspace::BindFields>>>,
    #[serde(default)]
    pub(crate) deny_read: Spanned<Vec<Spanned<String>>>,
    /// Caps on `chock run`'s spawn tree.
    #[serde(default)]
    subagents: Option<Spanned<SubagentFields>>,
    /// Which skill layers are listed, and the bound of one read.
    #[serde(default)]
    skills: Option<Spanned<chock_config::skills::SkillsFields>>,
    /// The reviewer agent of `chock run`.
    #[serde(default)]
    review: Option<Spanned<ReviewFields>>,
    /// The style rules a write is checked against (see `style`).
    #[serde(default)]
    style: Option<Spanned<chock_config::style::StyleFields>>,
    /// The project's language servers (see `lsp`).
    #[serde(default)]
    lsp: Option<Spanned<Vec<Spanned<chock_config::lsp::ServerFields>>>>,
    /// The USB and serial devices the project wants (see `devices`).
    #[serde(default)]
    devices: Option<Spanned<Vec<Spanned<chock_config::devices::DeviceFields>>>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "the `.policy` block: `.{ .rules = .{ ... } }`"
)]
pub(crate) struct PolicyBlock {
    #[serde(default)]
    rules: Spanned<Vec<Spanned<StrictRule>>>,
    #[serde(default)]
    agents: Spanned<Vec<Spanned<AgentFields>>>,
    #[serde(default)]
    pub(crate) net: NetSettings,
}

/// A rule, in `chock.zon`, a bundle or a package: exactly these five fields.
#[derive(Debug, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a rule `.{ .action = \"...\", .decision = .allow }`"
)]
pub(crate) struct StrictRule {
    agent_kind: Option<Pattern>,
    model: Option<Pattern>,
    tool: Option<Pattern>,
    action: Option<Spanned<Pattern>>,
    decision: Decision,
}

/// The operator's `config.zon`: settings, where secrets are kept, the
/// providers and their prices.
#[derive(Debug, Default, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a struct literal `.{ ... }` at the top of config.zon"
)]
pub(crate) struct OperatorFile {
    #[serde(default)]
    pub(crate) nix: NixBlock,
    #[serde(default)]
    pub(crate) limits: LimitsBlock,
    #[serde(default)]
    pub(crate) log: LogBlock,
    /// Where each secret is kept.
    #[serde(default, rename = "secrets")]
    pub(crate) secret_fields: chock_config::servers::StoresBlock,
    /// The model provider instances.
    #[serde(default, rename = "providers")]
    pub(crate) provider_fields: Option<chock_config::providers::ProvidersBlock>,
    /// What models cost, for `chock usage`.
    #[serde(default, rename = "prices")]
    pub(crate) price_fields: Option<chock_config::prices::PricesBlock>,
    /// The web_search tool's engine.
    #[serde(default, rename = "search")]
    pub(crate) search_fields: Option<Spanned<chock_config::search::SearchFields>>,
    /// Which skill layers are listed.
    #[serde(default, rename = "skills")]
    pub(crate) skill_fields: Option<Spanned<chock_config::skills::SkillsFields>>,
    /// Where the decision log is shipped.
    #[serde(default, rename = "sinks")]
    pub(crate) sink_fields: Spanned<Vec<Spanned<SinkFields>>>,
    /// Who cosigns the log's checkpoints.
    #[serde(default, rename = "witnesses")]
    pub(crate) witness_fields: Spanned<Vec<Spanned<WitnessFields>>>,
}

#[derive(Debug, Deserialize)]
struct OrgVersion {
    version: Option<Spanned<u32>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "an organisation bundle `.{ .version = 1, .rules = .{ .{ .action = \"...\", .decision = .deny } } }`"
)]
struct OrgFile {
    /// Read first, by [`OrgVersion`].
    #[serde(default, rename = "version")]
    _version: Option<serde::de::IgnoredAny>,
    subject: Option<Spanned<String>>,
    issuer: Option<Spanned<String>>,
    issued_ms: Option<u64>,
    expires_ms: Option<u64>,
    #[serde(default)]
    rules: Spanned<Vec<Spanned<StrictRule>>>,
    #[serde(default)]
    sinks: Spanned<Vec<Spanned<SinkFields>>>,
    #[serde(default)]
    witnesses: Spanned<Vec<Spanned<WitnessFields>>>,
    budget: Option<Spanned<BudgetFields>>,
    subagents: Option<Spanned<SubagentFields>>,
    review: Option<OrgReviewFields>,
    #[serde(default)]
    deny_read: Vec<String>,
    #[serde(default)]
    limits: LimitsBlock,
    #[serde(default)]
    nix: OrgNixBlock,
    #[serde(default)]
    mandatory_policies: Vec<Spanned<String>>,
}

/// What `chock.zon` contributes, checked.
#[derive(Debug)]
pub(crate) struct ProjectLayer {
    pub(crate) rules: RuleSet,
    pub(crate) workspace: crate::workspace::WorkspaceSettings,
    /// Rules in a namespace Chock does not name, under `.unknown_actions = .warn`.
    pub(crate) warnings: Vec<String>,
}

/// `chock.zon`'s rules and workspace, and its settings for the [`chock_config::Config`].
pub(crate) fn read_project(
    source: &Source<'_>,
) -> Result<(ProjectLayer, ProjectSettings), ConfigError> {
    let file: ProjectFile = source.read_as(FileKind::Project)?;
    let (rules, warnings) = rules(source, file.policy.rules, file.unknown_actions)?;
    let agents = check_agents(source, file.policy.agents)?;
    let container = match file.container {
        Some(block) => Some(check_container(
            source,
            block,
            file.nix.dev_shell.is_some(),
        )?),
        None => None,
    };
    let servers = chock_config::servers::read_project_servers(source, file.mcp, file.secrets)?;
    let workspace = crate::workspace::read(source, file.apply, file.workspace, file.deny_read)?;
    let subagents = check_subagents(source, file.subagents)?;
    let review = check_review(source, file.review, &agents)?;
    let skills = chock_config::skills::read_skills(source, file.skills)?;
    let style = chock_config::style::read_style(source, file.style)?;
    let lsp = chock_config::lsp::read_lsp(source, file.lsp)?;
    let devices = chock_config::devices::read_devices(source, file.devices)?;
    Ok((
        ProjectLayer {
            rules,
            workspace,
            warnings,
        },
        ProjectSettings {
            agents,
            net: file.policy.net,
            nix: file.nix,
            limits: file.limits,
            container,
            servers,
            subagents,
            review,
            skills,
            style,
            lsp,
            devices,
        },
    ))
}

/// Rules whose every action namespace Chock names (a package's, a
/// bundle's): one that does not refuses the file.
pub(crate) fn strict_rules(
    source: &Source<'_>,
    list: Spanned<Vec<Spanned<StrictRule>>>,
) -> Result<RuleSet, ConfigError> {
    Ok(rules(source, list, UnknownActions::Refuse)?.0)
}

/// The rules of `list`, checked, and a warning for each action in a
/// namespace Chock does not name when `unknown` says to warn.
fn rules(
    source: &Source<'_>,
    list: Spanned<Vec<Spanned<StrictRule>>>,
    unknown: UnknownActions,
) -> Result<(RuleSet, Vec<String>), ConfigError> {
    if list.value.len() > MAX_RULES {
        return Err(source.error(
            list.span,
            format!(
                "{} rules, and a file holds at most {MAX_RULES}: merge rules with a class such as `git.*`",
                list.value.len()
            ),
        ));
    }
    let mut warnings = Vec::new();
    let mut rules = Vec::with_capacity(list.value.len());
    for Spanned { span, value } in list.value {
        if let Some(action) = &value.action
            && !crate::names::known_namespace(action.value.as_str())
        {
            let error = unknown_namespace(source, action);
            match unknown {
                UnknownActions::Refuse => return Err(error),
                UnknownActions::Warn => warnings.push(error.to_string()),
            }
        }
        rules.push(Rule {
            agent_kind: value.agent_kind,
            model: value.model,
            tool: value.tool,
            action: value.action.map(|a| a.value),
            decision: value.decision,
            source: Some(rule_source(source, span)),
        });
    }
    Ok((RuleSet::new(rules), warnings))
}

fn unknown_namespace(source: &Source<'_>, action: &Spanned<Pattern>) -> ConfigError {
    let written = crate::names::namespace(action.value.as_str());
    let near = chock_zon::nearest(written, crate::names::NAMESPACES)
        .map(|n| format!(" (did you mean `{n}`?)"))
        .unwrap_or_default();
    source.error(
        action.span,
        format!(
            "`{}` is in no action namespace Chock names{near}: its first label `{written}` is not one of {}, so this rule could never match; a chock.zon written for a newer Chock may say `.unknown_actions = .warn`",
            action.value.as_str(),
            crate::names::NAMESPACES.join(", ")
        ),
    )
}

fn rule_source(source: &Source<'_>, span: Span) -> RuleSource {
    RuleSource {
        file: Arc::clone(&source.shared),
        line: chock_zon::line_col(source.text, span.start).0,
        text: source
            .text
            .get(span.start..span.end)
            .unwrap_or("")
            .to_string(),
    }
}

/// An organisation's bundle: a ceiling on every answer, and the settings
/// and sinks it imposes.
#[derive(Debug, Clone)]
pub struct OrgBundle {
    pub file: std::path::PathBuf,
    pub subject: Option<String>,
    pub issuer: Option<String>,
    pub issued_ms: Option<u64>,
    /// Milliseconds since the epoch; `None` (or 0 in the file) never expires.
    pub expires_ms: Option<u64>,
    pub sinks: Vec<Sink>,
    pub witnesses: Vec<Witness>,
    pub budget: Option<Budget>,
    pub subagents: Option<Subagents>,
    /// `.review.by_agent`: `false` forbids reviewer agents in every
    /// session under this bundle.
    pub review_by_agent: bool,
    pub deny_read: Vec<String>,
    /// `.mandatory_policies`: the ids of policy packages every project
    /// under this bundle holds in force; one missing or disabled refuses
    /// the load.
    pub mandatory_policies: Vec<String>,
    pub(crate) rules: RuleSet,
    pub(crate) max_object_bytes: Option<u64>,
    pub(crate) max_session_bytes: Option<u64>,
    pub(crate) processes: Option<chock_config::Amount>,
    pub(crate) memory: Option<chock_config::Amount>,
}

impl OrgBundle {
    pub fn rules(&self) -> &RuleSet {
        &self.rules
    }

    /// What this bundle holds the settings to.
    pub fn ceiling(&self) -> OrgCeiling {
        OrgCeiling {
            file: self.file.clone(),
            subagents: self.subagents,
            review_by_agent: self.review_by_agent,
            max_object_bytes: self.max_object_bytes,
            max_session_bytes: self.max_session_bytes,
            processes: self.processes,
            memory: self.memory,
            sinks: self.sinks.clone(),
            witnesses: self.witnesses.clone(),
        }
    }

    /// Expired means now is past the expiry; equal is still current. An
    /// expired bundle still binds.
    pub fn is_expired(&self, now_ms: u64) -> bool {
        self.expires_ms.is_some_and(|e| now_ms > e)
    }
}

pub(crate) fn read_bundle(source: &Source<'_>) -> Result<OrgBundle, ConfigError> {
    let version: OrgVersion = source.read()?;
    if let Some(v) = version.version
        && v.value > BUNDLE_VERSION
    {
        return Err(source.error(
            v.span,
            format!(
                "bundle version {} is newer than this Chock reads ({BUNDLE_VERSION}): update Chock",
                v.value
            ),
        ));
    }
    let file: OrgFile = source.read_as(FileKind::Bundle)?;
    for text in [&file.subject, &file.issuer].into_iter().flatten() {
        if text.value.len() > 256 {
            return Err(source.error(text.span, "subject and issuer are at most 256 bytes"));
        }
    }
    let sinks = check_sinks(source, file.sinks)?;
    let witnesses = check_witnesses(source, file.witnesses)?;
    let budget = read_budget(source, file.budget)?;
    let subagents = check_subagents(source, file.subagents)?;
    let rules = strict_rules(source, file.rules)?;
    let mut mandatory_policies = Vec::new();
    for id in file.mandatory_policies {
        if !crate::package::valid_id(&id.value) {
            return Err(source.error(id.span, crate::package::ID_RULE));
        }
        mandatory_policies.push(id.value);
    }
    Ok(OrgBundle {
        file: source.file.to_path_buf(),
        subject: file.subject.map(|s| s.value),
        issuer: file.issuer.map(|s| s.value),
        issued_ms: file.issued_ms,
        expires_ms: file.expires_ms.filter(|e| *e != 0),
        sinks,
        witnesses,
        budget,
        subagents,
        review_by_agent: file.review.is_none_or(|r| r.by_agent),
        deny_read: file.deny_read,
        mandatory_policies,
        rules,
        max_object_bytes: file.nix.max_object_bytes.map(|b| b.0),
        max_session_bytes: file.nix.max_session_bytes.map(|b| b.0),
        processes: file.limits.processes.map(|p| p.0),
        memory: file.limits.memory.map(|m| m.0),
    })
}
