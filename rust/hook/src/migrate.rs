//! `chock migrate <agent>`: an agent's MCP servers and its permissions on
//! their tools, as `chock.zon` blocks and rules, so a person moves the
//! servers behind the gateway in one step.
//!
//! What is read, per agent (the project's file first, then the person's):
//!
//! | agent | servers | permissions |
//! |---|---|---|
//! | Claude Code | `.mcp.json`, `~/.claude.json` (`mcpServers`, and the project's own under `projects`) | `permissions.allow/ask/deny` of `.claude/settings.json`, `.claude/settings.local.json`, `~/.claude/settings.json`: `mcp__<server>` and `mcp__<server>__<tool>` |
//! | Cursor | `.cursor/mcp.json`, `~/.cursor/mcp.json` | `permissions.allow/deny` of `.cursor/cli.json`, `~/.cursor/cli-config.json`: `Mcp(<server>:<tool>)` |
//! | Gemini CLI | `mcpServers` of `.gemini/settings.json`, `~/.gemini/settings.json` | each server's `trust`, `includeTools`, `excludeTools` |
//! | Codex | `[mcp_servers.*]` of `.codex/config.toml`, `~/.codex/config.toml` | each server's `enabled_tools`, `disabled_tools` |
//!
//! A server's environment variables become secrets of the same name
//! (`chock.zon` names them; the operator's `config.zon` says where each is
//! kept). A value written in the agent's file is never copied into the
//! project: the person is told to keep it in their shell's environment or
//! a store. A URL server's host gets an allow rule, because the agent
//! already reached it. What has no equivalent (shell permissions, HTTP
//! headers, Chock's own server) is listed, not guessed at.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use chock_policy::{Decision, names};
use serde::Serialize;
use serde_json::Value;

use crate::agent::Agent;

/// Why the blocks were not added to `chock.zon`.
#[derive(Debug, thiserror::Error)]
pub enum MigrateError {
    #[error("cannot be read: {0}")]
    Unreadable(#[source] std::io::Error),
    #[error(
        "chock.zon already has an `.mcp` or `.secrets` block; add the servers above to it by hand"
    )]
    HasBlocks,
    #[error("chock.zon has a `.policy` block without `.rules`; add the rules above to it by hand")]
    PolicyWithoutRules,
    #[error("chock.zon cannot be read: {0}")]
    NotZon(String),
    #[error("chock.zon's top level is not a struct `.{{ ... }}`")]
    NotAStruct,
    #[error("has no folder")]
    NoFolder,
    #[error("cannot be checked: {0}")]
    Check(#[source] std::io::Error),
    #[error("the merged file would not load, so nothing was written: {0}")]
    WouldNotLoad(#[source] Box<chock_policy::PolicyError>),
    #[error("cannot be written: {0}")]
    Write(#[source] std::io::Error),
    #[error("cannot be replaced: {0}")]
    Replace(#[source] std::io::Error),
}

/// One server as `chock.zon` writes it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Server {
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub command: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
}

/// One rule as `.policy.rules` writes it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Rule {
    pub action: String,
    pub decision: Decision,
}

/// What an agent's files amount to in Chock's terms.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Migration {
    pub servers: Vec<Server>,
    /// Secret names, for `.secrets`.
    pub secrets: Vec<String>,
    /// Where the operator could keep each secret: the environment variable
    /// the agent's file named, else the secret's own name.
    pub stores: BTreeMap<String, String>,
    pub rules: Vec<Rule>,
    /// The files read.
    pub read: Vec<PathBuf>,
    /// What was left out, and why, one sentence each.
    pub notes: Vec<String>,
}

/// The blocks a migration adds to `chock.zon`, as a ZON file of its own.
#[derive(Serialize)]
struct Blocks<'a> {
    mcp: &'a [Server],
    secrets: &'a [String],
    policy: PolicyBlock<'a>,
}

#[derive(Serialize)]
struct PolicyBlock<'a> {
    rules: &'a [Rule],
}

#[derive(Serialize)]
struct OperatorBlocks {
    secrets: BTreeMap<String, Store>,
}

#[derive(Serialize)]
struct Store {
    env: String,
}

impl Migration {
    /// Reads `agent`'s files for `project` (and the person's, under `home`).
    pub fn read(agent: Agent, project: &Path, home: Option<&Path>) -> Migration {
        let mut m = Migration::default();
        // Each file, the project's first: (in the project, under home, what it holds).
        let files: &[(Option<&str>, Option<&str>, Holds)] = match agent {
            Agent::Claude => &[
                (
                    Some(chock_policy::control::MCP_JSON),
                    Some(".claude.json"),
                    Holds::Servers,
                ),
                (
                    Some(".claude/settings.json"),
                    Some(".claude/settings.json"),
                    Holds::ClaudePermissions,
                ),
                (
                    Some(".claude/settings.local.json"),
                    None,
                    Holds::ClaudePermissions,
                ),
            ],
            Agent::Cursor => &[
                (
                    Some(".cursor/mcp.json"),
                    Some(".cursor/mcp.json"),
                    Holds::Servers,
                ),
                (
                    Some(".cursor/cli.json"),
                    Some(".cursor/cli-config.json"),
                    Holds::CursorPermissions,
                ),
            ],
            Agent::Gemini => &[(
                Some(".gemini/settings.json"),
                Some(".gemini/settings.json"),
                Holds::Servers,
            )],
            Agent::Codex => &[(
                Some(".codex/config.toml"),
                Some(".codex/config.toml"),
                Holds::Codex,
            )],
        };
        for (own, theirs, holds) in files {
            let paths = [
                own.map(|p| project.join(p)),
                theirs.and_then(|p| home.map(|h| h.join(p))),
            ];
            for file in paths.into_iter().flatten() {
                if *holds == Holds::Codex {
                    m.codex(&file);
                    continue;
                }
                let Some(json) = m.json(&file) else { continue };
                match holds {
                    Holds::Servers => {
                        m.json_servers(&file, json.get("mcpServers"));
                        // ~/.claude.json keeps each project's own servers under its path.
                        let own = json
                            .get("projects")
                            .and_then(|p| p.get(project.to_string_lossy().as_ref()))
                            .and_then(|p| p.get("mcpServers"));
                        m.json_servers(&file, own);
                    }
                    Holds::ClaudePermissions => m.claude_permissions(&file, &json),
                    Holds::CursorPermissions => m.cursor_permissions(&file, &json),
                    Holds::Codex => {}
                }
            }
        }
        if matches!(agent, Agent::Claude | Agent::Cursor) {
            m.strictest_first();
        }
        m
    }

    /// Claude Code and Cursor read their permissions deny first, then
    /// ask, then allow, whatever each names, where Chock's more specific
    /// rule answers: so each tool's rule is made no wider than its
    /// server's (`mcp__github` denied and `mcp__github__get_issue` allowed
    /// is a deny there, and here).
    fn strictest_first(&mut self) {
        let servers: BTreeMap<String, Decision> = self
            .rules
            .iter()
            .filter(|r| r.action.ends_with(".tool.*"))
            .map(|r| (r.action.clone(), r.decision))
            .collect();
        for rule in &mut self.rules {
            if let Some((server, tool)) = rule.action.split_once(".tool.")
                && tool != "*"
                && let Some(bound) = servers.get(&format!("{server}.tool.*"))
            {
                rule.decision = rule.decision.min(*bound);
            }
        }
    }

    /// Whether there is anything to write.
    pub fn is_empty(&self) -> bool {
        self.servers.is_empty() && self.rules.is_empty()
    }

    /// The blocks as ZON (`.mcp`, `.secrets`, `.policy.rules`), as they
    /// would read in a new `chock.zon`.
    pub fn zon(&self) -> String {
        chock_zon::to_string(&Blocks {
            mcp: &self.servers,
            secrets: &self.secrets,
            policy: PolicyBlock { rules: &self.rules },
        })
        .unwrap_or_default()
    }

    /// What the operator's `config.zon` needs so each secret can be given:
    /// kept in an environment variable of their shell (they may change it
    /// to a file or a command).
    pub fn operator_zon(&self) -> Option<String> {
        if self.stores.is_empty() {
            return None;
        }
        let secrets = self
            .stores
            .iter()
            .map(|(name, var)| (name.clone(), Store { env: var.clone() }))
            .collect();
        chock_zon::to_string(&OperatorBlocks { secrets }).ok()
    }

    /// `chock.zon` with these blocks added: a new file when there is none,
    /// else the existing text with `.mcp`, `.secrets` and the rules put in
    /// (its comments and layout kept). Refuses a file that already names
    /// servers or secrets, which only a person can merge.
    pub fn merged(&self, existing: Option<&str>) -> Result<String, MigrateError> {
        let Some(text) = existing else {
            return Ok(self.zon());
        };
        let top = Top::read(text)?;
        if top.mcp || top.secrets {
            return Err(MigrateError::HasBlocks);
        }
        let mut inserts: Vec<(usize, String)> = Vec::new();
        let fields = |indent: &str| {
            let mut out = String::new();
            for (name, value) in [
                ("mcp", chock_zon::to_string(&self.servers)),
                ("secrets", chock_zon::to_string(&self.secrets)),
            ] {
                let value = value.unwrap_or_default();
                out.push_str(&format!(
                    "{indent}.{name} = {},\n",
                    value.trim_end().replace('\n', &format!("\n{indent}"))
                ));
            }
            out
        };
        let rules: String = self
            .rules
            .iter()
            .map(|r| {
                format!(
                    "        {},\n",
                    chock_zon::to_string(r).unwrap_or_default().trim_end()
                )
            })
            .collect();
        match top.rules_end {
            Some(end) => {
                inserts.push((end, rules));
                inserts.push((top.end, fields("    ")));
            }
            None if top.policy => {
                return Err(MigrateError::PolicyWithoutRules);
            }
            None => {
                let policy = format!("    .policy = .{{ .rules = .{{\n{rules}    }} }},\n");
                inserts.push((top.end, fields("    ") + &policy));
            }
        }
        let mut out = text.to_owned();
        inserts.sort_by_key(|(at, _)| std::cmp::Reverse(*at));
        for (at, insert) in inserts {
            // The closing brace goes on a line of its own after what is added.
            let before = &out[..at];
            let needs_comma = before
                .trim_end()
                .chars()
                .last()
                .is_some_and(|c| c != ',' && c != '{');
            let needs_newline = !before.ends_with('\n');
            let mut piece = String::new();
            if needs_comma {
                piece.push(',');
            }
            if needs_newline {
                piece.push('\n');
            }
            piece.push_str(&insert);
            out.insert_str(at, &piece);
        }
        Ok(out)
    }

    /// Adds the blocks to `file` (made when missing). The merged text must
    /// load as a policy before it replaces the old file, in one rename.
    pub fn write(&self, file: &Path) -> Result<(), MigrateError> {
        let existing = match std::fs::read_to_string(file) {
            Ok(text) => Some(text),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => return Err(MigrateError::Unreadable(e)),
        };
        let merged = self.merged(existing.as_deref())?;
        let dir = file.parent().ok_or(MigrateError::NoFolder)?;
        let check = tempfile::tempdir().map_err(MigrateError::Check)?;
        std::fs::write(check.path().join(chock_policy::PROJECT_FILE), &merged)
            .map_err(MigrateError::Check)?;
        chock_policy::Policy::load(&chock_policy::LoadOptions {
            project_dir: check.path().to_path_buf(),
            operator_config: None,
            discovered_bundles: vec![],
            org_bundles: vec![],
        })
        .map_err(|e| MigrateError::WouldNotLoad(Box::new(e)))?;
        let mut staged = tempfile::NamedTempFile::new_in(dir).map_err(MigrateError::Write)?;
        std::io::Write::write_all(&mut staged, merged.as_bytes()).map_err(MigrateError::Write)?;
        staged
            .persist(file)
            .map_err(|e| MigrateError::Replace(e.error))?;
        Ok(())
    }

    fn json(&mut self, file: &Path) -> Option<Value> {
        let text = std::fs::read_to_string(file).ok()?;
        match jsonc_parser::parse_to_serde_value::<Value>(&text, &Default::default()) {
            Ok(value) => {
                self.read.push(file.to_path_buf());
                Some(value)
            }
            Err(e) => {
                self.notes
                    .push(format!("{} was not read: {e}", file.display()));
                None
            }
        }
    }

    /// `mcpServers` as Claude Code, Cursor and Gemini CLI write it.
    fn json_servers(&mut self, file: &Path, table: Option<&Value>) {
        let Some(table) = table.and_then(Value::as_object) else {
            return;
        };
        for (name, server) in table {
            let text = |key: &str| server.get(key).and_then(Value::as_str).map(str::to_owned);
            let args: Vec<String> = server
                .get("args")
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .filter_map(Value::as_str)
                        .map(str::to_owned)
                        .collect()
                })
                .unwrap_or_default();
            let env: Vec<(String, String)> = server
                .get("env")
                .and_then(Value::as_object)
                .map(|e| {
                    e.iter()
                        .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_owned()))
                        .collect()
                })
                .unwrap_or_default();
            if server
                .get("headers")
                .is_some_and(|h| h.as_object().is_some_and(|h| !h.is_empty()))
            {
                self.notes.push(format!(
                    "{name} ({}): its HTTP headers are not carried over; a url server behind Chock is reached without them",
                    file.display()
                ));
            }
            // Gemini's `httpUrl` is Streamable HTTP; `url` is SSE there and
            // either elsewhere.
            let url = text("httpUrl")
                .or_else(|| text("url"))
                .or_else(|| text("serverUrl"));
            let launch = match (text("command"), url) {
                (Some(command), _) => {
                    Launch::Command(std::iter::once(command).chain(args).collect())
                }
                (None, Some(url)) => Launch::Url(url),
                (None, None) => {
                    self.notes.push(format!(
                        "{name} ({}): neither a command nor a url; left out",
                        file.display()
                    ));
                    continue;
                }
            };
            let Some(chock_name) = self.server(file, name, launch, env) else {
                continue;
            };
            // Gemini CLI's per-server settings.
            if server.get("trust").and_then(Value::as_bool) == Some(true) {
                self.rule(format!("mcp.{chock_name}.tool.*"), Decision::Allow);
            }
            let tools = |key: &str| -> Vec<String> {
                server
                    .get(key)
                    .and_then(Value::as_array)
                    .map(|a| {
                        a.iter()
                            .filter_map(Value::as_str)
                            .map(str::to_owned)
                            .collect()
                    })
                    .unwrap_or_default()
            };
            self.only_and_never(&chock_name, &tools("includeTools"), &tools("excludeTools"));
        }
    }

    /// `enabled_tools`/`includeTools` (only these) and
    /// `disabled_tools`/`excludeTools` (never these) of one server.
    fn only_and_never(&mut self, server: &str, only: &[String], never: &[String]) {
        if !only.is_empty() {
            self.rule(format!("mcp.{server}.tool.*"), Decision::Deny);
            for tool in only {
                if let Ok(action) = names::mcp_tool(server, tool) {
                    // The rest of the server's rules (or none: ask) answer these.
                    if !self.rules.iter().any(|r| r.action == action) {
                        self.rule(action, Decision::Ask);
                    }
                }
            }
        }
        for tool in never {
            match names::mcp_tool(server, tool) {
                Ok(action) => self.rule(action, Decision::Deny),
                Err(e) => self.notes.push(format!("{server}: tool {tool}: {e}")),
            }
        }
    }

    /// Adds one server; `None` when it is left out (said in a note).
    fn server(
        &mut self,
        file: &Path,
        name: &str,
        launch: Launch,
        env: Vec<(String, String)>,
    ) -> Option<String> {
        if let Launch::Command(argv) = &launch
            && argv
                .first()
                .is_some_and(|c| c == "chock" || c.ends_with("/chock"))
            && argv.get(1).is_some_and(|a| a == "mcp")
        {
            self.notes.push(format!(
                "{name} ({}): this is Chock's own tool server, which offers the others; left as it is",
                file.display()
            ));
            return None;
        }
        let chock_name: String = name
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                    c
                } else {
                    '-'
                }
            })
            .collect::<String>()
            .replace("__", "_");
        if chock_name.is_empty() {
            return None;
        }
        if chock_name != name {
            self.notes.push(format!(
                "server `{name}` is `{chock_name}` in chock.zon (a server's name is one label of letters, digits, `_` and `-`, without `__`)"
            ));
        }
        if self.servers.iter().any(|s| s.name == chock_name) {
            self.notes.push(format!(
                "{name} ({}): a server of that name was read from an earlier file, which wins",
                file.display()
            ));
            return None;
        }
        let mut server = Server {
            name: chock_name.clone(),
            command: None,
            url: None,
            env: BTreeMap::new(),
        };
        match launch {
            Launch::Command(argv) => {
                for (var, value) in env {
                    let secret: String = var
                        .chars()
                        .map(|c| {
                            if c.is_ascii_alphanumeric() || c == '_' {
                                c
                            } else {
                                '_'
                            }
                        })
                        .collect();
                    // `${VAR}` (Claude Code, Cursor) names where it is kept already.
                    let kept_in = value
                        .strip_prefix("${")
                        .and_then(|v| v.strip_suffix('}'))
                        .map(|v| v.split(":-").next().unwrap_or(v).to_owned())
                        .filter(|v| !v.is_empty());
                    if kept_in.is_none() && !value.is_empty() {
                        self.notes.push(format!(
                            "{chock_name}: the value of {var} written in {} is not copied; keep it in your shell's environment as {secret} (or point config.zon at a file or a command)",
                            file.display()
                        ));
                    }
                    if !self.secrets.contains(&secret) {
                        self.secrets.push(secret.clone());
                    }
                    self.stores
                        .entry(secret.clone())
                        .or_insert_with(|| kept_in.unwrap_or_else(|| secret.clone()));
                    server.env.insert(var, secret);
                }
                server.command = Some(argv);
            }
            Launch::Url(url) => {
                match chock_policy::url_endpoint(&url)
                    .map_err(|e| e.to_string())
                    .and_then(|e| names::mcp_host(&chock_name, &e.host).map_err(|e| e.to_string()))
                {
                    Ok(action) => self.rule(action, Decision::Allow),
                    Err(why) => {
                        self.notes
                            .push(format!("{chock_name}: {url}: {why}; left out"));
                        return None;
                    }
                }
                server.url = Some(url);
            }
        }
        self.servers.push(server);
        Some(chock_name)
    }

    fn rule(&mut self, action: String, decision: Decision) {
        if let Some(existing) = self.rules.iter_mut().find(|r| r.action == action) {
            // Two files that disagree: the stricter answer stands.
            existing.decision = existing.decision.min(decision);
        } else {
            self.rules.push(Rule { action, decision });
        }
    }

    /// Claude Code's `permissions`: `mcp__<server>` and `mcp__<server>__<tool>`.
    fn claude_permissions(&mut self, file: &Path, json: &Value) {
        self.permissions(file, json, &["allow", "ask", "deny"], |entry| {
            let rest = entry.strip_prefix("mcp__")?;
            Some(rest.split_once("__").unwrap_or((rest, "*")))
        });
    }

    /// Cursor's `permissions`: `Mcp(<server>:<tool>)`.
    fn cursor_permissions(&mut self, file: &Path, json: &Value) {
        self.permissions(file, json, &["allow", "deny"], |entry| {
            entry
                .strip_prefix("Mcp(")?
                .strip_suffix(')')?
                .split_once(':')
        });
    }

    /// The lists `permissions.<allow|ask|deny>`, each entry read by `tool`
    /// as a server and a tool (`*` for all), or not an MCP permission.
    fn permissions(
        &mut self,
        file: &Path,
        json: &Value,
        lists: &[&str],
        tool: impl for<'e> Fn(&'e str) -> Option<(&'e str, &'e str)>,
    ) {
        for key in lists {
            let decision = match *key {
                "allow" => Decision::Allow,
                "ask" => Decision::Ask,
                _ => Decision::Deny,
            };
            let entries = json
                .get("permissions")
                .and_then(|p| p.get(key))
                .and_then(Value::as_array);
            for entry in entries.into_iter().flatten().filter_map(Value::as_str) {
                match tool(entry) {
                    Some((server, tool)) => self.tool_rule(file, entry, server, tool, decision),
                    None => self.untranslated(file, entry),
                }
            }
        }
    }

    fn tool_rule(
        &mut self,
        file: &Path,
        entry: &str,
        server: &str,
        tool: &str,
        decision: Decision,
    ) {
        let action = if tool == "*" {
            names::label(server).map(|s| format!("mcp.{s}.tool.*"))
        } else {
            names::mcp_tool(server, tool)
        };
        match action {
            Ok(action) => self.rule(action, decision),
            Err(e) => self
                .notes
                .push(format!("{entry} ({}): {e}; left out", file.display())),
        }
    }

    fn untranslated(&mut self, file: &Path, entry: &str) {
        self.notes.push(format!(
            "{entry} ({}): not an MCP permission; Chock decides commands and files by its own rules (see `chock policy defaults`)",
            file.display()
        ));
    }

    /// Codex's `[mcp_servers.<name>]` tables.
    fn codex(&mut self, file: &Path) {
        let Ok(text) = std::fs::read_to_string(file) else {
            return;
        };
        let config: toml::Table = match toml::from_str(&text) {
            Ok(config) => config,
            Err(e) => {
                self.notes
                    .push(format!("{} was not read: {e}", file.display()));
                return;
            }
        };
        self.read.push(file.to_path_buf());
        let Some(servers) = config.get("mcp_servers").and_then(toml::Value::as_table) else {
            return;
        };
        for (name, server) in servers {
            let text = |key: &str| {
                server
                    .get(key)
                    .and_then(toml::Value::as_str)
                    .map(str::to_owned)
            };
            let list = |key: &str| -> Vec<String> {
                server
                    .get(key)
                    .and_then(toml::Value::as_array)
                    .map(|a| {
                        a.iter()
                            .filter_map(toml::Value::as_str)
                            .map(str::to_owned)
                            .collect()
                    })
                    .unwrap_or_default()
            };
            let mut env: Vec<(String, String)> = server
                .get("env")
                .and_then(toml::Value::as_table)
                .map(|e| {
                    e.iter()
                        .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_owned()))
                        .collect()
                })
                .unwrap_or_default();
            // Variables Codex passes through from the person's shell.
            env.extend(list("env_vars").into_iter().map(|v| {
                let kept = format!("${{{v}}}");
                (v, kept)
            }));
            if text("bearer_token_env_var").is_some() {
                self.notes.push(format!(
                    "{name} ({}): its bearer token is not carried over; a url server behind Chock is reached without it",
                    file.display()
                ));
            }
            let launch = match (text("command"), text("url")) {
                (Some(command), _) => {
                    Launch::Command(std::iter::once(command).chain(list("args")).collect())
                }
                (None, Some(url)) => Launch::Url(url),
                (None, None) => {
                    self.notes.push(format!(
                        "{name} ({}): neither a command nor a url; left out",
                        file.display()
                    ));
                    continue;
                }
            };
            if let Some(chock_name) = self.server(file, name, launch, env) {
                self.only_and_never(&chock_name, &list("enabled_tools"), &list("disabled_tools"));
            }
        }
    }
}

enum Launch {
    Command(Vec<String>),
    Url(String),
}

/// What one agent file holds.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Holds {
    Servers,
    ClaudePermissions,
    CursorPermissions,
    Codex,
}

/// Where blocks go in an existing `chock.zon`.
struct Top {
    /// The byte offset of the top struct's closing brace.
    end: usize,
    /// The offset of `.policy.rules`' closing brace, when there is one.
    rules_end: Option<usize>,
    policy: bool,
    mcp: bool,
    secrets: bool,
}

impl Top {
    fn read(text: &str) -> Result<Top, MigrateError> {
        use chock_zon::Spanned;
        use serde::de::IgnoredAny;
        #[derive(serde::Deserialize)]
        struct File {
            policy: Option<Spanned<Policy>>,
            mcp: Option<IgnoredAny>,
            secrets: Option<IgnoredAny>,
        }
        #[derive(serde::Deserialize)]
        struct Policy {
            rules: Option<Spanned<IgnoredAny>>,
        }
        let file: Spanned<File> =
            chock_zon::from_str(text).map_err(|e| MigrateError::NotZon(e.to_string()))?;
        let close =
            |span: chock_zon::Span| text[..span.end].rfind('}').ok_or(MigrateError::NotAStruct);
        let end = close(file.span)?;
        let rules_end = match file
            .value
            .policy
            .as_ref()
            .and_then(|p| p.value.rules.as_ref())
        {
            Some(rules) => Some(close(rules.span)?),
            None => None,
        };
        Ok(Top {
            end,
            rules_end,
            policy: file.value.policy.is_some(),
            mcp: file.value.mcp.is_some(),
            secrets: file.value.secrets.is_some(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, path: &str, text: &str) {
        let path = dir.join(path);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(path, text).expect("write");
    }

    /// The blocks load as a policy, with the servers and rules they say.
    fn loads(dir: &Path, text: &str) -> chock_policy::Policy {
        std::fs::write(dir.join("chock.zon"), text).expect("write");
        chock_policy::Policy::load(&chock_policy::LoadOptions {
            project_dir: dir.to_path_buf(),
            operator_config: None,
            discovered_bundles: vec![],
            org_bundles: vec![],
        })
        .unwrap_or_else(|e| panic!("{e}\n{text}"))
    }

    /// Each action is decided as paired.
    fn assert_decides(policy: &chock_policy::Policy, expected: &[(&str, Decision)]) {
        for (action, decision) in expected {
            let decided = policy
                .decide(&chock_policy::Key::new(*action), chock_policy::Reading::Act)
                .decision;
            assert_eq!(decided, *decision, "{action}");
        }
    }

    /// A note says `needle`.
    fn assert_noted(m: &Migration, needle: &str) {
        assert!(
            m.notes.iter().any(|n| n.contains(needle)),
            "{needle}: {:?}",
            m.notes
        );
    }

    #[test]
    fn claude_servers_and_permissions_become_blocks_and_rules() {
        let project = tempfile::tempdir().expect("tempdir");
        let home = tempfile::tempdir().expect("tempdir");
        write(
            project.path(),
            ".mcp.json",
            r#"{ "mcpServers": {
                "github": { "command": "npx", "args": ["-y", "@modelcontextprotocol/server-github"],
                            "env": { "GITHUB_PERSONAL_ACCESS_TOKEN": "${GH_TOKEN}" } },
                "notion": { "type": "http", "url": "https://mcp.notion.com/mcp", "headers": { "X": "y" } },
                "chock": { "command": "chock", "args": ["mcp"] }
            } }"#,
        );
        write(
            home.path(),
            ".claude.json",
            &format!(
                r#"{{ "projects": {{ "{}": {{ "mcpServers": {{ "my.db": {{ "command": "db-mcp", "env": {{ "DB_PASSWORD": "hunter2" }} }} }} }} }} }}"#,
                project.path().display()
            ),
        );
        write(
            project.path(),
            ".claude/settings.json",
            r#"{ "permissions": { "allow": ["mcp__github__get_issue", "Bash(npm test)"], "deny": ["mcp__notion"], "ask": ["mcp__github__create_issue"] } }"#,
        );
        let m = Migration::read(Agent::Claude, project.path(), Some(home.path()));
        let names: Vec<&str> = m.servers.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["github", "notion", "my-db"]);
        assert_eq!(m.secrets, ["GITHUB_PERSONAL_ACCESS_TOKEN", "DB_PASSWORD"]);
        assert_eq!(m.stores["GITHUB_PERSONAL_ACCESS_TOKEN"], "GH_TOKEN");
        let zon = m.zon();
        assert!(!zon.contains("hunter2"), "a value is never copied: {zon}");
        let policy = loads(project.path(), &zon);
        assert_eq!(policy.config().mcp_servers().len(), 3);
        assert_decides(
            &policy,
            &[
                ("mcp.github.tool.get_issue", Decision::Allow),
                ("mcp.github.tool.create_issue", Decision::Ask),
                ("mcp.notion.tool.search", Decision::Deny),
                ("mcp.notion.host.com.notion.mcp", Decision::Allow),
            ],
        );
        let notes = m.notes.join("\n");
        for said in [
            "headers",
            "Chock's own",
            "Bash(npm test)",
            "hunter2",
            "`my-db`",
        ] {
            let said = if said == "hunter2" {
                "is not copied"
            } else {
                said
            };
            assert!(notes.contains(said), "{said}: {notes}");
        }
        assert!(!notes.contains("hunter2"), "{notes}");
        let operator = m.operator_zon().expect("stores");
        assert!(
            operator.contains(".GITHUB_PERSONAL_ACCESS_TOKEN = .{ .env = \"GH_TOKEN\" }"),
            "{operator}"
        );
    }

    /// Claude Code's answer to a call of `server`'s `tool` under these
    /// lists: deny if any entry naming it (the server, or the tool) is
    /// denied, else ask if any is asked, else allow if any is allowed, else
    /// ask (an MCP tool nobody allowed is asked about).
    fn claude_answer(lists: &[(&str, Vec<String>)], server: &str, tool: &str) -> Decision {
        let names = [format!("mcp__{server}"), format!("mcp__{server}__{tool}")];
        let listed = |list: &str| {
            lists
                .iter()
                .filter(|(l, _)| *l == list)
                .any(|(_, entries)| entries.iter().any(|e| names.contains(e)))
        };
        if listed("deny") {
            Decision::Deny
        } else if listed("ask") {
            Decision::Ask
        } else if listed("allow") {
            Decision::Allow
        } else {
            Decision::Ask
        }
    }

    #[test]
    fn a_claude_migration_answers_every_call_as_claude_code_does() {
        // Every way of putting the server and two of its tools in none,
        // some or all of the three lists, split over the project's two
        // files; each call (the two tools and one no entry names) is
        // answered by the migrated rules as Claude Code answers it.
        let entries = ["mcp__gh", "mcp__gh__read", "mcp__gh__write"];
        let lists = ["allow", "ask", "deny"];
        let calls = ["read", "write", "other"];
        let mut compared = 0;
        for combo in 0..(1u32 << (entries.len() * lists.len())) {
            let mut settings: Vec<(&str, Vec<String>)> = Vec::new();
            let mut local: Vec<(&str, Vec<String>)> = Vec::new();
            for (e, entry) in entries.iter().enumerate() {
                for (l, list) in lists.iter().enumerate() {
                    let bit = e * lists.len() + l;
                    if combo & (1 << bit) != 0 {
                        let file = if bit.is_multiple_of(2) {
                            &mut settings
                        } else {
                            &mut local
                        };
                        match file.iter_mut().find(|(name, _)| name == list) {
                            Some((_, items)) => items.push((*entry).to_owned()),
                            None => file.push((list, vec![(*entry).to_owned()])),
                        }
                    }
                }
            }
            let project = tempfile::tempdir().expect("tempdir");
            write(
                project.path(),
                ".mcp.json",
                r#"{ "mcpServers": { "gh": { "command": "gh-mcp" } } }"#,
            );
            let as_json = |lists: &[(&str, Vec<String>)]| {
                let permissions: serde_json::Map<String, Value> = lists
                    .iter()
                    .map(|(l, items)| ((*l).to_owned(), serde_json::json!(items)))
                    .collect();
                serde_json::json!({ "permissions": permissions }).to_string()
            };
            write(project.path(), ".claude/settings.json", &as_json(&settings));
            write(
                project.path(),
                ".claude/settings.local.json",
                &as_json(&local),
            );
            let m = Migration::read(Agent::Claude, project.path(), None);
            let policy = loads(project.path(), &m.zon());
            let all: Vec<(&str, Vec<String>)> = settings.into_iter().chain(local).collect();
            for tool in calls {
                let original = claude_answer(&all, "gh", tool);
                let migrated = policy
                    .decide(
                        &chock_policy::Key::new(format!("mcp.gh.tool.{tool}")),
                        chock_policy::Reading::Act,
                    )
                    .decision;
                assert_eq!(
                    migrated, original,
                    "{tool} under {all:?}: migrated {:?}",
                    m.rules
                );
                compared += 1;
            }
        }
        assert_eq!(compared, 512 * 3);
    }

    #[test]
    fn gemini_trust_and_tool_lists_and_cursor_permissions() {
        let project = tempfile::tempdir().expect("tempdir");
        write(
            project.path(),
            ".gemini/settings.json",
            r#"{ "mcpServers": {
                "time": { "command": "uvx", "args": ["mcp-server-time"], "trust": true, "excludeTools": ["convert_time"] },
                "docs": { "httpUrl": "https://docs.example.com/mcp", "includeTools": ["search"] }
            } }"#,
        );
        let m = Migration::read(Agent::Gemini, project.path(), None);
        let policy = loads(project.path(), &m.zon());
        assert_decides(
            &policy,
            &[
                ("mcp.time.tool.get_current_time", Decision::Allow),
                ("mcp.time.tool.convert_time", Decision::Deny),
                ("mcp.docs.tool.search", Decision::Ask),
                ("mcp.docs.tool.delete", Decision::Deny),
            ],
        );

        write(
            project.path(),
            ".cursor/mcp.json",
            r#"{ "mcpServers": { "linear": { "url": "https://mcp.linear.app/sse" } } }"#,
        );
        write(
            project.path(),
            ".cursor/cli.json",
            r#"{ "permissions": { "allow": ["Mcp(linear:*)", "Shell(ls)"], "deny": ["Mcp(linear:delete_issue)"] } }"#,
        );
        let m = Migration::read(Agent::Cursor, project.path(), None);
        let policy = loads(project.path(), &m.zon());
        assert_decides(
            &policy,
            &[
                ("mcp.linear.tool.list_issues", Decision::Allow),
                ("mcp.linear.tool.delete_issue", Decision::Deny),
            ],
        );
        assert_noted(&m, "Shell(ls)");
    }

    #[test]
    fn codex_tables_become_servers() {
        let project = tempfile::tempdir().expect("tempdir");
        let home = tempfile::tempdir().expect("tempdir");
        write(
            home.path(),
            ".codex/config.toml",
            r#"
model = "o3"
[mcp_servers.context7]
command = "npx"
args = ["-y", "@upstash/context7-mcp"]
env_vars = ["CONTEXT7_KEY"]
disabled_tools = ["resolve-library-id"]

[mcp_servers.figma]
url = "https://mcp.figma.com/mcp"
bearer_token_env_var = "FIGMA_TOKEN"
"#,
        );
        let m = Migration::read(Agent::Codex, project.path(), Some(home.path()));
        assert_eq!(
            m.servers[0].command.as_deref().map(<[String]>::len),
            Some(3)
        );
        assert_eq!(m.stores["CONTEXT7_KEY"], "CONTEXT7_KEY");
        let policy = loads(project.path(), &m.zon());
        assert_decides(
            &policy,
            &[
                ("mcp.context7.tool.resolve-library-id", Decision::Deny),
                ("mcp.figma.host.com.figma.mcp", Decision::Allow),
            ],
        );
        assert_noted(&m, "bearer token");
    }

    #[test]
    fn merging_keeps_the_file_and_refuses_what_a_person_must_merge() {
        let project = tempfile::tempdir().expect("tempdir");
        write(
            project.path(),
            ".mcp.json",
            r#"{ "mcpServers": { "time": { "command": "uvx", "args": ["mcp-server-time"] } } }"#,
        );
        write(
            project.path(),
            ".claude/settings.json",
            r#"{ "permissions": { "allow": ["mcp__time"] } }"#,
        );
        let m = Migration::read(Agent::Claude, project.path(), None);
        let existing = ".{\n    // the project's own\n    .policy = .{ .rules = .{\n        .{ .action = \"git.*\", .decision = .allow },\n    } },\n}\n";
        let merged = m.merged(Some(existing)).expect("merged");
        assert!(merged.contains("// the project's own"), "{merged}");
        let policy = loads(project.path(), &merged);
        assert_decides(
            &policy,
            &[
                ("git.push", Decision::Allow),
                ("mcp.time.tool.x", Decision::Allow),
            ],
        );
        assert_eq!(policy.config().mcp_servers()[0].name, "time");
        let without_policy = m
            .merged(Some(".{ .nix = .{ .dev_shell = \"ci\" } }"))
            .expect("merged");
        let policy = loads(project.path(), &without_policy);
        assert_decides(&policy, &[("mcp.time.tool.x", Decision::Allow)]);
        assert!(
            m.merged(Some(".{ .mcp = .{} }"))
                .unwrap_err()
                .to_string()
                .contains("by hand")
        );
        assert!(
            m.merged(Some("not zon"))
                .unwrap_err()
                .to_string()
                .contains("cannot be read")
        );
    }
}
