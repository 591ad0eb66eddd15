//! The agents whose hooks Chock answers, by the names people type.

use std::fmt;
use std::str::FromStr;

use crate::HookError;

/// An agent that runs `chock hook <agent>` from its own hook file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Agent {
    /// Claude Code: `PreToolUse` in `.claude/settings.json`.
    Claude,
    /// Cursor: `preToolUse` and `beforeMCPExecution` in `.cursor/hooks.json`.
    Cursor,
    /// Gemini CLI: `BeforeTool` in `.gemini/settings.json`.
    Gemini,
    /// Codex: `PreToolUse` in `.codex/hooks.json`.
    Codex,
}

impl Agent {
    /// Every agent, in the order `chock sync` reports them.
    pub const ALL: [Agent; 4] = [Agent::Claude, Agent::Cursor, Agent::Gemini, Agent::Codex];

    /// The name written after `chock hook`, and the agent kind in policy keys
    /// and log lines.
    pub fn name(self) -> &'static str {
        match self {
            Agent::Claude => "claude",
            Agent::Cursor => "cursor",
            Agent::Gemini => "gemini",
            Agent::Codex => "codex",
        }
    }

    /// The agent as people know it, for messages.
    pub fn title(self) -> &'static str {
        match self {
            Agent::Claude => "Claude Code",
            Agent::Cursor => "Cursor",
            Agent::Gemini => "Gemini CLI",
            Agent::Codex => "Codex",
        }
    }

    /// The environment variable the agent sets to the project root for its hooks.
    pub fn project_variable(self) -> Option<&'static str> {
        match self {
            Agent::Claude => Some("CLAUDE_PROJECT_DIR"),
            Agent::Gemini => Some("GEMINI_PROJECT_DIR"),
            Agent::Cursor | Agent::Codex => None,
        }
    }
}

impl fmt::Display for Agent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Agent {
    type Err = HookError;

    fn from_str(text: &str) -> Result<Agent, HookError> {
        match text.to_ascii_lowercase().as_str() {
            "claude" | "claude-code" | "claudecode" => Ok(Agent::Claude),
            "cursor" => Ok(Agent::Cursor),
            "gemini" | "gemini-cli" => Ok(Agent::Gemini),
            "codex" => Ok(Agent::Codex),
            _ => Err(HookError::UnknownAgent(text.to_owned())),
        }
    }
}

/// Parses `claude,cursor` as given to `chock sync --agents`.
pub fn parse_list(text: &str) -> Result<Vec<Agent>, HookError> {
    let mut agents = Vec::new();
    for name in text.split(',').map(str::trim).filter(|n| !n.is_empty()) {
        let agent: Agent = name.parse()?;
        if !agents.contains(&agent) {
            agents.push(agent);
        }
    }
    if agents.is_empty() {
        return Err(HookError::UnknownAgent(text.to_owned()));
    }
    Ok(agents)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for agent in Agent::ALL {
            assert_eq!(agent.name().parse::<Agent>().ok(), Some(agent));
        }
        assert_eq!("Claude-Code".parse::<Agent>().ok(), Some(Agent::Claude));
        assert!("vim".parse::<Agent>().is_err());
    }

    #[test]
    fn lists_are_deduplicated() {
        let agents = parse_list("claude, cursor,claude").unwrap_or_default();
        assert_eq!(agents, vec![Agent::Claude, Agent::Cursor]);
        assert!(parse_list(",").is_err());
    }
}
