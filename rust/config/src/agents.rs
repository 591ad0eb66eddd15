//! The agent kinds `chock.zon` declares (`.policy.agents`), the caps on
//! `chock run`'s spawn tree (`.subagents`, of `chock.zon` or a bundle) and
//! the reviewer agent (`.review`; a bundle's `.review.by_agent` forbids one).

use std::collections::{HashMap, HashSet};

use chock_zon::Spanned;
use serde::Deserialize;

use crate::{ConfigError, Source};

/// At most this many agent kinds in `.policy.agents`.
pub const MAX_AGENT_KINDS: usize = 64;

#[derive(Debug, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "an agent kind `.{ .kind = \"helper\", .parent = \"main\" }`"
)]
pub struct AgentFields {
    kind: String,
    parent: Option<String>,
}

/// One agent kind the project declares, and the kind that spawns it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Agent {
    pub kind: String,
    pub parent: Option<String>,
}

pub fn check_agents(
    source: &Source<'_>,
    list: Spanned<Vec<Spanned<AgentFields>>>,
) -> Result<Vec<Agent>, ConfigError> {
    if list.value.len() > MAX_AGENT_KINDS {
        return Err(source.error(
            list.span,
            format!(
                "{} agent kinds, and a project declares at most {MAX_AGENT_KINDS}",
                list.value.len()
            ),
        ));
    }
    let mut spans = HashMap::new();
    let mut agents = Vec::new();
    for Spanned { span, value } in list.value {
        if value.kind.is_empty() || value.kind.contains(['*', '\0']) {
            return Err(source.error(
                span,
                "an agent kind is a name: not empty, with no `*` or NUL byte",
            ));
        }
        if spans.insert(value.kind.clone(), span).is_some() {
            return Err(source.error(
                span,
                format!("agent kind `{}` is declared twice: keep one", value.kind),
            ));
        }
        agents.push(Agent {
            kind: value.kind,
            parent: value.parent,
        });
    }
    let parents: HashMap<&str, Option<&str>> = agents
        .iter()
        .map(|a| (a.kind.as_str(), a.parent.as_deref()))
        .collect();
    for agent in &agents {
        let span = spans.get(&agent.kind).copied().unwrap_or_default();
        let mut seen = HashSet::from([agent.kind.as_str()]);
        let mut next = agent.parent.as_deref();
        while let Some(parent) = next {
            let Some(grandparent) = parents.get(parent) else {
                return Err(source.error(
                    span,
                    format!("agent kind `{}` names parent `{parent}`, which is not declared: declare it in .policy.agents", agent.kind),
                ));
            };
            if !seen.insert(parent) {
                return Err(source.error(
                    span,
                    format!("agent kind `{}` is its own ancestor: the parents form a loop through `{parent}`", agent.kind),
                ));
            }
            next = *grandparent;
        }
    }
    Ok(agents)
}

#[derive(Debug, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "the `.subagents` block: `.{ .max_depth = 1, .max_width = 4 }`"
)]
pub struct SubagentFields {
    max_depth: Option<u32>,
    max_width: Option<u32>,
}

/// Caps on the spawn tree; 0 is a real cap.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Subagents {
    pub max_depth: Option<u32>,
    pub max_width: Option<u32>,
}

/// `.subagents`, of `chock.zon` or a bundle: at least one cap.
pub fn check_subagents(
    source: &Source<'_>,
    block: Option<Spanned<SubagentFields>>,
) -> Result<Option<Subagents>, ConfigError> {
    let Some(Spanned { span, value }) = block else {
        return Ok(None);
    };
    if value.max_depth.is_none() && value.max_width.is_none() {
        return Err(source.error(span, "subagents needs .max_depth, .max_width or both"));
    }
    Ok(Some(Subagents {
        max_depth: value.max_depth,
        max_width: value.max_width,
    }))
}

/// `.review` of `chock.zon`: the agent kind that answers `agent_review`
/// and `agent_then_human` in Chock's own session.
#[derive(Debug, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "the `.review` block: `.{ .agent_kind = \"reviewer\" }`, naming a kind of .policy.agents"
)]
pub struct ReviewFields {
    agent_kind: String,
}

/// The reviewer agent `chock.zon` names, and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Review {
    /// Its agent kind, declared in `.policy.agents`.
    pub agent_kind: String,
    pub file: std::path::PathBuf,
    pub line: u32,
}

/// `.review`: a kind `.policy.agents` declares.
pub fn check_review(
    source: &Source<'_>,
    block: Option<Spanned<ReviewFields>>,
    agents: &[Agent],
) -> Result<Option<Review>, ConfigError> {
    let Some(Spanned { span, value }) = block else {
        return Ok(None);
    };
    let kind = value.agent_kind;
    if !agents.iter().any(|a| a.kind == kind) {
        return Err(source.error(
            span,
            format!("review: agent kind `{kind}` is not declared: add .{{ .kind = \"{kind}\" }} to .policy.agents"),
        ));
    }
    Ok(Some(Review {
        agent_kind: kind,
        file: source.file.to_path_buf(),
        line: source.line(span),
    }))
}

/// `.review` of an organisation bundle: whether a reviewer agent may answer
/// at all. Unlike the rest of a bundle, an unknown field here refuses it: a
/// misspelt `.by_agent = false` would otherwise let agents approve.
#[derive(Debug, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "the `.review` block: `.{ .by_agent = false }`"
)]
pub struct OrgReviewFields {
    pub by_agent: bool,
}
