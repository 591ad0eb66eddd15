//! Which MCP server a Cursor call goes to.
//!
//! Cursor's `beforeMCPExecution` payload names the tool and the server's
//! URL or command line, not the server's name, and Chock's action is
//! `mcp.<server>.tool.<tool>`. The name is found by matching the URL or
//! command against the servers in the project's `.cursor/mcp.json` and the
//! person's `~/.cursor/mcp.json`.

use std::path::{Path, PathBuf};

use serde_json::Value;

/// The files Cursor reads MCP servers from, project first.
pub fn config_files(project: &Path, home: Option<&Path>) -> Vec<PathBuf> {
    let mut files = vec![project.join(".cursor").join("mcp.json")];
    if let Some(home) = home {
        files.push(home.join(".cursor").join("mcp.json"));
    }
    files
}

/// The name of the server reached at `endpoint` (a URL or a command line),
/// if exactly one configured server matches it.
pub fn server_for(endpoint: &str, files: &[PathBuf]) -> Option<String> {
    let wanted = endpoint.trim();
    let mut found: Vec<String> = Vec::new();
    for file in files {
        let Ok(text) = std::fs::read_to_string(file) else {
            continue;
        };
        let Ok(config) = jsonc_parser::parse_to_serde_value::<Value>(&text, &Default::default())
        else {
            continue;
        };
        let Some(servers) = config.get("mcpServers").and_then(Value::as_object) else {
            continue;
        };
        for (name, server) in servers {
            if endpoints(server).iter().any(|e| e == wanted) && !found.contains(name) {
                found.push(name.clone());
            }
        }
    }
    match found.as_slice() {
        [one] => Some(one.clone()),
        _ => None,
    }
}

/// The ways a server's entry can be written in a payload: its URL, its
/// command alone, and its command with its arguments.
fn endpoints(server: &Value) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(url) = server.get("url").and_then(Value::as_str) {
        out.push(url.trim().to_owned());
    }
    if let Some(command) = server.get("command").and_then(Value::as_str) {
        out.push(command.trim().to_owned());
        let args: Vec<&str> = server
            .get("args")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        if !args.is_empty() {
            out.push(format!("{} {}", command.trim(), args.join(" ")));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_server_is_found_by_url_or_command() -> Result<(), Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        let file = dir.path().join("mcp.json");
        std::fs::write(
            &file,
            r#"{ // servers
              "mcpServers": {
                "docs": { "url": "https://mcp.example.com/sse" },
                "db": { "command": "npx", "args": ["-y", "db-mcp"] }
              }
            }"#,
        )?;
        let files = vec![file];
        assert_eq!(
            server_for("https://mcp.example.com/sse", &files).as_deref(),
            Some("docs")
        );
        assert_eq!(server_for("npx -y db-mcp", &files).as_deref(), Some("db"));
        assert_eq!(server_for("npx other", &files), None);
        Ok(())
    }
}
