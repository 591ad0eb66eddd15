//! The agents whose hooks Chock answers, by the names people type.

use std::collections::BTreeSet;
use std::fmt;
use std::path::Path;
use std::str::FromStr;

use serde_json::Value;

use crate::HookError;
use crate::naming::Named;

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

/// The names under which the agents' MCP configurations (the project's and
/// the person's) run Chock's own tool server: an entry whose command is
/// `chock` (on the PATH, or this very binary by its path) with `mcp` first.
/// A call to one of them is decided by that server, not by the hook.
pub fn chock_servers(project: &Path, home: Option<&Path>) -> BTreeSet<String> {
    let mut json_files = vec![
        project.join(chock_policy::control::MCP_JSON),
        project.join(".cursor/mcp.json"),
        project.join(".gemini/settings.json"),
    ];
    let mut toml_files = Vec::new();
    if let Some(home) = home {
        json_files.push(home.join(".claude.json"));
        json_files.push(home.join(".cursor/mcp.json"));
        json_files.push(home.join(".gemini/settings.json"));
        toml_files.push(home.join(".codex/config.toml"));
    }
    let mut names = BTreeSet::new();
    for file in json_files {
        let Ok(text) = std::fs::read_to_string(&file) else {
            continue;
        };
        let Ok(config) = jsonc_parser::parse_to_serde_value::<Value>(&text, &Default::default())
        else {
            continue;
        };
        let mut tables = vec![config.get("mcpServers")];
        // ~/.claude.json keeps each project's servers under its path.
        if let Some(own) = config
            .get("projects")
            .and_then(|p| p.get(project.to_string_lossy().as_ref()))
        {
            tables.push(own.get("mcpServers"));
        }
        for (name, server) in tables
            .into_iter()
            .flatten()
            .filter_map(Value::as_object)
            .flatten()
        {
            let command = server.get("command").and_then(Value::as_str);
            let first = server
                .get("args")
                .and_then(Value::as_array)
                .and_then(|a| a.first())
                .and_then(Value::as_str);
            if command.is_some_and(is_chock) && first == Some("mcp") {
                names.insert(name.clone());
            }
        }
    }
    for file in toml_files {
        if let Ok(text) = std::fs::read_to_string(&file) {
            names.extend(codex_chock_servers(&text));
        }
    }
    names
}

/// Codex's `[mcp_servers.NAME]` tables whose `command` is Chock and whose
/// `args` start with `mcp`, read line by line (the two keys as Codex's own
/// documentation writes them).
fn codex_chock_servers(text: &str) -> Vec<String> {
    let mut found = Vec::new();
    // The table being read: its name, whether its command is Chock, whether its args start with mcp.
    let mut current: Option<(String, bool, bool)> = None;
    for line in text.lines().map(str::trim) {
        if line.starts_with('[') {
            if let Some((name, true, true)) = current.take() {
                found.push(name);
            }
            current = line
                .strip_prefix("[mcp_servers.")
                .and_then(|rest| rest.strip_suffix(']'))
                .map(|name| (name.trim_matches('"').to_owned(), false, false));
            continue;
        }
        let (Some((_, command, mcp)), Some((key, value))) =
            (current.as_mut(), line.split_once('='))
        else {
            continue;
        };
        let value = value.trim();
        match key.trim() {
            "command" => *command = is_chock(value.trim_matches('"')),
            "args" => {
                *mcp = value
                    .trim_start_matches('[')
                    .trim_start()
                    .starts_with("\"mcp\"");
            }
            _ => {}
        }
    }
    if let Some((name, true, true)) = current {
        found.push(name);
    }
    found
}

/// Whether `command` runs Chock: `chock` found on the PATH, or a path to
/// this very binary.
fn is_chock(command: &str) -> bool {
    if command == "chock" {
        return true;
    }
    let path = Path::new(command);
    path.file_name().is_some_and(|n| n == "chock")
        && path.is_absolute()
        && match (path.canonicalize(), std::env::current_exe()) {
            (Ok(a), Ok(b)) => b.canonicalize().is_ok_and(|b| a == b),
            _ => false,
        }
}

/// Whether `act` is a call to one of `own` (Chock's tool servers).
pub fn for_own_server(act: &Named, own: &BTreeSet<String>) -> bool {
    let Named::Act { action, .. } = act else {
        return false;
    };
    action
        .strip_prefix("mcp.")
        .and_then(|rest| rest.split_once(".tool."))
        .is_some_and(|(server, _)| own.contains(server))
}

/// The reason given when a call goes through to Chock's tool server.
pub fn through_to_server(acts: &[Named]) -> String {
    let actions: Vec<&str> = acts
        .iter()
        .filter_map(|a| match a {
            Named::Act { action, .. } => Some(action.as_str()),
            Named::Unnameable { .. } => None,
        })
        .collect();
    format!(
        "Chock lets {} through to its own tool server, which decides the call itself (and asks you when its rules ask)",
        actions.join(", ")
    )
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
