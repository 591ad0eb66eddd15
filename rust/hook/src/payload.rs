//! What an agent's hook payload asks, in one shape for every agent.
//!
//! Each agent sends JSON on standard input with its own field names and its
//! own tool names. This module reads the fields each agent documents and
//! turns the call into a [`Request`]: a shell command, a file read or write,
//! a fetch, a search, an MCP tool, a tool that only changes the
//! conversation, or a tool Chock does not know.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::HookError;
use crate::agent::Agent;

/// One tool call, as Chock decides it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolCall {
    /// The hook event as the agent named it (`PreToolUse`, `beforeShellExecution`, ...).
    pub event: String,
    /// The agent's own name for the tool (`Bash`, `Shell`, `run_shell_command`, ...).
    pub tool: String,
    /// What the call does.
    pub request: Request,
    /// The directory the agent works in, when the payload says.
    pub cwd: Option<PathBuf>,
    /// The model behind the agent, when the payload says.
    pub model: Option<String>,
}

/// What a tool call does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Request {
    /// Runs a shell command, in a directory of its own when one is given.
    Shell {
        command: String,
        dir: Option<PathBuf>,
    },
    /// Reads files (none named: the tool reads what a pattern matches).
    Read { paths: Vec<PathBuf> },
    /// Creates or overwrites files (or deletes them).
    Write { paths: Vec<PathBuf> },
    /// Changes part of files.
    Edit { paths: Vec<PathBuf> },
    /// Finds files by pattern.
    Glob,
    /// Searches file contents.
    Grep,
    /// Lists a directory.
    List,
    /// Fetches pages: each URL as written.
    Fetch { urls: Vec<String> },
    /// Puts a query to a web search engine.
    Search,
    /// Calls a tool of an MCP server: the server when the payload names it,
    /// else the server's URL or command line when the payload gives that.
    Mcp {
        server: Option<String>,
        tool: String,
        endpoint: Option<String>,
    },
    /// Writes the agent's memory notes.
    Memory,
    /// Changes only the conversation (plans, task lists, questions to the
    /// person, subagents whose own calls are hooked): no act on the machine.
    Conversation,
    /// A tool Chock does not know.
    Other,
}

/// Reads one payload of `agent`.
pub fn parse(agent: Agent, input: &str) -> Result<ToolCall, HookError> {
    read(agent, input).map(|payload| payload.call)
}

/// A payload read once: the call, the agent's permission mode when it
/// says one (Claude Code's `permission_mode`), and the JSON as sent, for
/// the guards.
#[derive(Debug, Clone, PartialEq)]
pub struct Payload {
    pub call: ToolCall,
    pub permission_mode: Option<String>,
    pub json: Value,
}

/// Reads `input`, parsing its JSON once, into the call and what else the
/// hook reads of it.
pub fn read(agent: Agent, input: &str) -> Result<Payload, HookError> {
    let value: Value = serde_json::from_str(input).map_err(|error| HookError::PayloadNotJson {
        agent,
        error: error.to_string(),
    })?;
    Ok(Payload {
        call: call_of(agent, &value)?,
        permission_mode: string(&value, "permission_mode").map(str::to_owned),
        json: value,
    })
}

fn call_of(agent: Agent, value: &Value) -> Result<ToolCall, HookError> {
    if !value.is_object() {
        return Err(HookError::PayloadShape {
            agent,
            missing: "a JSON object",
        });
    }
    let cwd = string(value, "cwd").map(PathBuf::from);
    let model = string(value, "model").map(str::to_owned);
    let event = string(value, "hook_event_name")
        .unwrap_or_default()
        .to_owned();
    check_event(agent, &event)?;
    let (tool, request) = match agent {
        Agent::Claude => claude(value)?,
        Agent::Cursor => cursor(value, &event, cwd.as_deref())?,
        Agent::Gemini => gemini(value)?,
        Agent::Codex => codex(value)?,
    };
    let request = resolve_relative(request, cwd.as_deref());
    Ok(ToolCall {
        event,
        tool,
        request,
        cwd,
        model,
    })
}

/// The events each agent's payload may come from: the ones before a tool runs.
fn check_event(agent: Agent, event: &str) -> Result<(), HookError> {
    let (allowed, expected): (&[&str], &'static str) = match agent {
        Agent::Claude | Agent::Codex => (&["PreToolUse"], "PreToolUse"),
        Agent::Gemini => (&["BeforeTool"], "BeforeTool"),
        Agent::Cursor => (
            &[
                "preToolUse",
                "beforeShellExecution",
                "beforeMCPExecution",
                "beforeReadFile",
            ],
            "preToolUse, beforeShellExecution, beforeMCPExecution and beforeReadFile",
        ),
    };
    if event.is_empty() {
        // The event decides what the payload means: a payload that does not
        // say it is refused, not read as the likeliest one.
        return Err(HookError::PayloadShape {
            agent,
            missing: "hook_event_name",
        });
    }
    if allowed.contains(&event) {
        Ok(())
    } else {
        Err(HookError::WrongEvent {
            agent,
            event: event.to_owned(),
            expected,
        })
    }
}

fn string<'a>(value: &'a Value, key: &str) -> Option<&'a str> {
    value.get(key).and_then(Value::as_str)
}

/// The tool name and its input object, which every tool event carries.
fn tool_and_input(agent: Agent, value: &Value) -> Result<(String, Value), HookError> {
    let tool = string(value, "tool_name").ok_or(HookError::PayloadShape {
        agent,
        missing: "tool_name",
    })?;
    // Without its input a call cannot be named: refused, never named by its
    // tool alone (which would suggest allowing every call of that tool).
    let missing = HookError::PayloadShape {
        agent,
        missing: "tool_input",
    };
    let input = match value.get("tool_input") {
        // Cursor's beforeMCPExecution has sent the input as a JSON string.
        Some(Value::String(text)) => serde_json::from_str(text).map_err(|_| missing)?,
        Some(Value::Null) | None => return Err(missing),
        Some(other) => other.clone(),
    };
    Ok((tool.to_owned(), input))
}

/// The path a tool that reads or writes one file names, in the first of
/// [`PATH_KEYS`] that holds one: a call without it is refused, naming the
/// field, never decided as a call on no file in particular.
fn required_path(
    agent: Agent,
    input: &Value,
    missing: &'static str,
) -> Result<Vec<PathBuf>, HookError> {
    PATH_KEYS
        .iter()
        .find_map(|key| string(input, key))
        .map(|p| vec![PathBuf::from(p)])
        .ok_or(HookError::PayloadShape { agent, missing })
}

const PATH_KEYS: &[&str] = &[
    "file_path",
    "path",
    "target_file",
    "filePath",
    "notebook_path",
    "absolute_path",
];

fn shell_command(agent: Agent, input: &Value) -> Result<String, HookError> {
    match input.get("command") {
        Some(Value::String(command)) => Ok(command.clone()),
        // An argument vector: each word quoted, so the shell reading sees it exactly.
        Some(Value::Array(words)) => {
            let words: Option<Vec<&str>> = words.iter().map(Value::as_str).collect();
            words
                .map(|w| w.iter().map(|w| quote(w)).collect::<Vec<_>>().join(" "))
                .ok_or(HookError::PayloadShape {
                    agent,
                    missing: "tool_input.command as text",
                })
        }
        _ => Err(HookError::PayloadShape {
            agent,
            missing: "tool_input.command",
        }),
    }
}

/// Single-quotes a word for the shell.
fn quote(word: &str) -> String {
    format!("'{}'", word.replace('\'', r"'\''"))
}

/// `mcp__server__tool`, the name Claude Code and Codex give MCP tools.
fn double_underscore_mcp(tool: &str) -> Option<Request> {
    let rest = tool.strip_prefix("mcp__")?;
    let (server, name) = rest.split_once("__")?;
    Some(Request::Mcp {
        server: Some(server.to_owned()),
        tool: name.to_owned(),
        endpoint: None,
    })
}

fn claude(value: &Value) -> Result<(String, Request), HookError> {
    let agent = Agent::Claude;
    let (tool, input) = tool_and_input(agent, value)?;
    let request = match tool.as_str() {
        // A Bash call always carries its command (one without is refused,
        // naming it); Monitor has a form that watches a running one, which
        // is no command of its own.
        "Bash" | "Monitor" if tool == "Bash" || input.get("command").is_some() => Request::Shell {
            command: shell_command(agent, &input)?,
            dir: None,
        },
        "Read" => Request::Read {
            paths: required_path(agent, &input, "tool_input.file_path")?,
        },
        "Write" => Request::Write {
            paths: required_path(agent, &input, "tool_input.file_path")?,
        },
        "Edit" | "MultiEdit" => Request::Edit {
            paths: required_path(agent, &input, "tool_input.file_path")?,
        },
        "NotebookEdit" => Request::Edit {
            paths: required_path(agent, &input, "tool_input.notebook_path")?,
        },
        "Glob" => Request::Glob,
        "Grep" => Request::Grep,
        "LS" => Request::List,
        "WebFetch" => Request::Fetch {
            urls: string(&input, "url")
                .map(str::to_owned)
                .into_iter()
                .collect(),
        },
        "WebSearch" => Request::Search,
        "Agent"
        | "Task"
        | "TodoWrite"
        | "TaskCreate"
        | "TaskGet"
        | "TaskList"
        | "TaskUpdate"
        | "TaskOutput"
        | "TaskStop"
        | "AskUserQuestion"
        | "ExitPlanMode"
        | "EnterPlanMode"
        | "ToolSearch"
        | "BashOutput"
        | "KillShell"
        | "CronCreate"
        | "CronDelete"
        | "CronList"
        | "SendMessage"
        | "ScheduleWakeup"
        | "WaitForMcpServers"
        | "ReportFindings"
        | "Skill"
        | "Workflow"
        | "LSP"
        | "ListMcpResourcesTool" => Request::Conversation,
        other => double_underscore_mcp(other).unwrap_or(Request::Other),
    };
    Ok((tool, request))
}

fn cursor(value: &Value, event: &str, cwd: Option<&Path>) -> Result<(String, Request), HookError> {
    let agent = Agent::Cursor;
    match event {
        "beforeShellExecution" => {
            let command = string(value, "command").ok_or(HookError::PayloadShape {
                agent,
                missing: "command",
            })?;
            return Ok((
                "Shell".to_owned(),
                Request::Shell {
                    command: command.to_owned(),
                    dir: cwd.map(Path::to_path_buf),
                },
            ));
        }
        "beforeReadFile" => {
            return Ok((
                "Read".to_owned(),
                Request::Read {
                    paths: required_path(agent, value, "file_path")?,
                },
            ));
        }
        "beforeMCPExecution" => {
            let (tool, _) = tool_and_input(agent, value)?;
            let endpoint = string(value, "url").or_else(|| string(value, "command"));
            return Ok((
                tool.clone(),
                Request::Mcp {
                    server: None,
                    tool,
                    endpoint: endpoint.map(str::to_owned),
                },
            ));
        }
        _ => {}
    }
    let (tool, input) = tool_and_input(agent, value)?;
    let request = match tool.as_str() {
        "Shell" | "Terminal" | "run_terminal_cmd" => Request::Shell {
            command: shell_command(agent, &input)?,
            dir: string(&input, "cwd")
                .or_else(|| string(&input, "working_directory"))
                .map(PathBuf::from),
        },
        "Read" | "read_file" => Request::Read {
            paths: required_path(agent, &input, "tool_input.file_path")?,
        },
        "Write" | "TabWrite" | "Delete" | "delete_file" => Request::Write {
            paths: required_path(agent, &input, "tool_input.file_path")?,
        },
        "Edit" | "StrReplace" | "MultiEdit" | "edit_file" | "search_replace" => Request::Edit {
            paths: required_path(agent, &input, "tool_input.file_path")?,
        },
        "Glob" | "file_search" => Request::Glob,
        "Grep" | "grep_search" | "codebase_search" | "SemanticSearch" => Request::Grep,
        "LS" | "list_dir" => Request::List,
        "WebFetch" | "fetch" => Request::Fetch {
            urls: string(&input, "url")
                .map(str::to_owned)
                .into_iter()
                .collect(),
        },
        "WebSearch" | "web_search" => Request::Search,
        "Task" | "TodoWrite" | "todo_write" | "AskQuestion" | "CreatePlan" => Request::Conversation,
        other => match other.strip_prefix("MCP:") {
            // `MCP:server:tool` names the server; `MCP:tool` leaves it to
            // beforeMCPExecution, which carries the server's command or URL.
            Some(rest) => match rest.split_once(':') {
                Some((server, name)) => Request::Mcp {
                    server: Some(server.to_owned()),
                    tool: name.to_owned(),
                    endpoint: None,
                },
                None => Request::Mcp {
                    server: None,
                    tool: rest.to_owned(),
                    endpoint: None,
                },
            },
            None => Request::Other,
        },
    };
    Ok((tool, request))
}

fn gemini(value: &Value) -> Result<(String, Request), HookError> {
    let agent = Agent::Gemini;
    let (tool, input) = tool_and_input(agent, value)?;
    if let Some(context) = value.get("mcp_context") {
        let server = string(context, "server_name").map(str::to_owned);
        let name = string(context, "tool_name").unwrap_or(&tool).to_owned();
        return Ok((
            tool,
            Request::Mcp {
                server,
                tool: name,
                endpoint: None,
            },
        ));
    }
    let request = match tool.as_str() {
        "run_shell_command" => Request::Shell {
            command: shell_command(agent, &input)?,
            dir: string(&input, "dir_path")
                .or_else(|| string(&input, "directory"))
                .map(PathBuf::from),
        },
        "read_file" => Request::Read {
            paths: required_path(agent, &input, "tool_input.file_path")?,
        },
        "read_many_files" => Request::Read { paths: Vec::new() },
        "write_file" => Request::Write {
            paths: required_path(agent, &input, "tool_input.file_path")?,
        },
        "replace" | "edit" => Request::Edit {
            paths: required_path(agent, &input, "tool_input.file_path")?,
        },
        "glob" => Request::Glob,
        "grep_search" | "search_file_content" => Request::Grep,
        "list_directory" => Request::List,
        "web_fetch" => Request::Fetch {
            urls: string(&input, "prompt").map(urls_in).unwrap_or_default(),
        },
        "google_web_search" => Request::Search,
        "save_memory" => Request::Memory,
        "write_todos" | "ask_user" | "activate_skill" | "enter_plan_mode" | "exit_plan_mode"
        | "list_mcp_resources" | "get_internal_docs" => Request::Conversation,
        t if t.starts_with("tracker_") => Request::Conversation,
        other => match other.strip_prefix("mcp_") {
            Some(rest) => Request::Mcp {
                server: None,
                tool: rest.to_owned(),
                endpoint: None,
            },
            None => Request::Other,
        },
    };
    Ok((tool, request))
}

fn codex(value: &Value) -> Result<(String, Request), HookError> {
    let agent = Agent::Codex;
    let (tool, input) = tool_and_input(agent, value)?;
    let request = match tool.as_str() {
        "Bash" | "shell" | "local_shell" | "exec_command" | "unified_exec" => Request::Shell {
            command: shell_command(agent, &input)?,
            dir: string(&input, "workdir").map(PathBuf::from),
        },
        "apply_patch" => {
            let patch = string(&input, "command")
                .or_else(|| string(&input, "input"))
                .ok_or(HookError::PayloadShape {
                    agent,
                    missing: "tool_input.command with the patch",
                })?;
            let request = patch_request(patch);
            if matches!(&request, Request::Edit { paths } if paths.is_empty()) {
                return Err(HookError::PayloadShape {
                    agent,
                    missing: "file in its patch (`*** Add File:`, `*** Update File:`, `*** Delete File:`)",
                });
            }
            request
        }
        "update_plan" | "request_user_input" | "view_image" => Request::Conversation,
        "web_search" => Request::Search,
        other => double_underscore_mcp(other).unwrap_or(Request::Other),
    };
    Ok((tool, request))
}

/// The files a Codex patch touches: `*** Add File:` writes a new file,
/// `*** Update File:` edits one (and `*** Move to:` writes its new place),
/// `*** Delete File:` removes one.
fn patch_request(patch: &str) -> Request {
    let mut writes = Vec::new();
    let mut edits = Vec::new();
    for line in patch.lines() {
        let line = line.trim_end();
        if let Some(path) = line.strip_prefix("*** Add File: ") {
            writes.push(PathBuf::from(path.trim()));
        } else if let Some(path) = line.strip_prefix("*** Delete File: ") {
            writes.push(PathBuf::from(path.trim()));
        } else if let Some(path) = line.strip_prefix("*** Move to: ") {
            writes.push(PathBuf::from(path.trim()));
        } else if let Some(path) = line.strip_prefix("*** Update File: ") {
            edits.push(PathBuf::from(path.trim()));
        }
    }
    if writes.is_empty() {
        Request::Edit { paths: edits }
    } else {
        // A patch that creates, moves or deletes is decided as a write of
        // every file it touches.
        writes.extend(edits);
        Request::Write { paths: writes }
    }
}

/// The http and https URLs written in a text, in order (Gemini's web_fetch
/// takes them inside its prompt).
pub fn urls_in(text: &str) -> Vec<String> {
    let mut urls = Vec::new();
    for (at, _) in text.match_indices("http") {
        let rest = &text[at..];
        if !(rest.starts_with("http://") || rest.starts_with("https://")) {
            continue;
        }
        let end = rest
            .find(|c: char| {
                c.is_whitespace() || matches!(c, '"' | '\'' | '<' | '>' | '`' | ')' | ']')
            })
            .unwrap_or(rest.len());
        let url = rest[..end].trim_end_matches(['.', ',', ';', ':', '!', '?']);
        if !urls.iter().any(|u| u == url) {
            urls.push(url.to_owned());
        }
    }
    urls
}

/// Relative paths in a payload are taken from the payload's directory.
fn resolve_relative(request: Request, cwd: Option<&Path>) -> Request {
    let fix = |paths: Vec<PathBuf>| -> Vec<PathBuf> {
        paths
            .into_iter()
            .map(|p| match cwd {
                Some(base) if p.is_relative() => base.join(p),
                _ => p,
            })
            .collect()
    };
    match request {
        Request::Read { paths } => Request::Read { paths: fix(paths) },
        Request::Write { paths } => Request::Write { paths: fix(paths) },
        Request::Edit { paths } => Request::Edit { paths: fix(paths) },
        Request::Shell { command, dir } => Request::Shell {
            command,
            dir: dir.map(|d| match cwd {
                Some(base) if d.is_relative() => base.join(d),
                _ => d,
            }),
        },
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_found_in_prose() {
        assert_eq!(
            urls_in("Summarise https://docs.ziglang.org/x and (http://a.example/b)."),
            vec!["https://docs.ziglang.org/x", "http://a.example/b"]
        );
        assert!(urls_in("no links here, httpx").is_empty());
    }

    #[test]
    fn a_codex_patch_names_its_files() {
        let patch = "*** Begin Patch\n*** Update File: src/a.rs\n@@\n-x\n+y\n*** End Patch\n";
        assert_eq!(
            patch_request(patch),
            Request::Edit {
                paths: vec!["src/a.rs".into()]
            }
        );
        let patch =
            "*** Begin Patch\n*** Add File: new.rs\n+x\n*** Delete File: old.rs\n*** End Patch";
        assert_eq!(
            patch_request(patch),
            Request::Write {
                paths: vec!["new.rs".into(), "old.rs".into()]
            }
        );
    }

    #[test]
    fn mcp_names_split_into_server_and_tool() {
        assert_eq!(
            double_underscore_mcp("mcp__plugin_x_db__query"),
            Some(Request::Mcp {
                server: Some("plugin_x_db".into()),
                tool: "query".into(),
                endpoint: None,
            })
        );
        assert_eq!(double_underscore_mcp("mcp_nope"), None);
    }

    #[test]
    fn a_payload_that_is_not_an_object_is_refused() {
        assert!(parse(Agent::Claude, "[]").is_err());
        assert!(parse(Agent::Claude, "not json").is_err());
        assert!(parse(Agent::Claude, r#"{"hook_event_name":"PreToolUse"}"#).is_err());
    }

    #[test]
    fn only_the_events_before_a_tool_runs_are_answered() {
        let post =
            r#"{"hook_event_name":"PostToolUse","tool_name":"Bash","tool_input":{"command":"ls"}}"#;
        assert!(matches!(
            parse(Agent::Claude, post),
            Err(HookError::WrongEvent { .. })
        ));
        let after = r#"{"hook_event_name":"afterFileEdit","file_path":"/x"}"#;
        assert!(parse(Agent::Cursor, after).is_err());
    }

    #[test]
    fn argument_vectors_are_quoted_for_the_shell_reader() {
        let input = serde_json::json!({"command": ["bash", "-lc", "rm -rf 'x y'"]});
        assert_eq!(
            shell_command(Agent::Codex, &input).ok().as_deref(),
            Some(r"'bash' '-lc' 'rm -rf '\''x y'\'''")
        );
    }
}
