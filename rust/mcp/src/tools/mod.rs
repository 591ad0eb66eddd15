//! The tools: their names, what they take, and the call that runs each.
//!
//! Every tool reads its arguments strictly (an unknown field is an error
//! that lists the fields it takes), names its act, passes it through the
//! gate, and only then does the work. A failure is a sentence for the agent,
//! never a crash of the server.

mod apply;
mod command;
mod error;
mod files;
mod git;
mod lsp;
mod nix;
mod provide;
mod search;
mod skills;
mod tasks;
mod web;

pub use apply::{REQUEST_APPLY, fill_workspace, finish_workspace, make_workspace};
pub(crate) use command::SessionPolicy;
pub use error::ToolError;
pub use lsp::{
    LSP_DEFINITION, LSP_DIAGNOSTICS, LSP_HOVER, LSP_REFERENCES, LSP_SYMBOLS, LSP_TOOLS, LspServers,
    MAX_STARTS as LSP_MAX_STARTS, has_servers as has_language_servers,
};
pub use provide::PROVIDE_TOOL;
pub use search::WEB_SEARCH;
pub use skills::{READ_SKILL, has_skills, is_skill_prompt};
pub use tasks::{PipedError, SERVE_PORT, could_permit_a_port, furnish, prepare_piped};
pub use web::Robots;

use std::sync::Arc;

use rmcp::model::{JsonObject, Tool, ToolAnnotations};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::session::Session;

/// Every tool this server can offer, in the order they are listed.
pub const TOOL_NAMES: [&str; 23] = [
    "read_file",
    "list_directory",
    "glob",
    "grep",
    "write_file",
    "edit_file",
    "run_command",
    "nix_eval",
    "nix_build",
    PROVIDE_TOOL,
    "fetch_url",
    WEB_SEARCH,
    READ_SKILL,
    "task_output",
    "stop_task",
    "list_tasks",
    SERVE_PORT,
    REQUEST_APPLY,
    LSP_DIAGNOSTICS,
    LSP_DEFINITION,
    LSP_REFERENCES,
    LSP_HOVER,
    LSP_SYMBOLS,
];

/// What a tool call needs besides its arguments.
pub struct Call<'a> {
    pub session: &'a Arc<Session>,
    pub client: &'a crate::ask::Client,
    /// Set when the client cancels the call.
    pub cancel: CancellationToken,
}

impl Call<'_> {
    /// Decides `act` for this call ([`Session::gate`]): a question it asks
    /// is withdrawn when the client cancels the call.
    pub async fn gate(
        &self,
        act: &crate::gate::Act<'_>,
        asking: crate::gate::Asking,
    ) -> Result<(), ToolError> {
        self.session
            .gate(self.client, &self.cancel, act, asking)
            .await
            .map_err(ToolError::from)
    }
}

/// Runs one tool: `Ok` is the text the agent reads, `Err` why it did not
/// do what it was asked.
pub async fn dispatch(call: &Call<'_>, name: &str, arguments: Value) -> Result<String, ToolError> {
    within_bounds(name, &arguments)?;
    // The workspace's files are written while the server answers; every
    // tool waits for them (at once when they are there).
    if let Some(ready) = call.session.workspace_ready.clone() {
        tokio::task::spawn_blocking(move || ready.wait())
            .await
            .map_err(|e| {
                ToolError::stopped(
                    "waiting for the session's workspace",
                    e,
                    call.session.command,
                )
            })??;
    }
    match name {
        "read_file" => files::read_file(call, parse(name, arguments)?).await,
        "list_directory" => files::list_directory(call, parse(name, arguments)?).await,
        "glob" => files::glob(call, parse(name, arguments)?).await,
        "grep" => files::grep(call, parse(name, arguments)?).await,
        "write_file" => files::write_file(call, parse(name, arguments)?).await,
        "edit_file" => files::edit_file(call, parse(name, arguments)?).await,
        "run_command" => command::run_command(call, parse(name, arguments)?).await,
        "nix_eval" => nix::nix_eval(call, parse(name, arguments)?).await,
        "nix_build" => nix::nix_build(call, parse(name, arguments)?).await,
        PROVIDE_TOOL => provide::provide_tool(call, parse(name, arguments)?).await,
        "fetch_url" => web::fetch_url(call, parse(name, arguments)?).await,
        WEB_SEARCH => search::web_search(call, parse(name, arguments)?).await,
        READ_SKILL => skills::read_skill(call, parse(name, arguments)?).await,
        "task_output" => tasks::task_output(call, parse(name, arguments)?).await,
        "stop_task" => tasks::stop_task(call, parse(name, arguments)?).await,
        "list_tasks" => tasks::list_tasks(call, parse(name, arguments)?).await,
        SERVE_PORT => tasks::serve_port(call, parse(name, arguments)?).await,
        REQUEST_APPLY => apply::request_apply(call, parse(name, arguments)?).await,
        LSP_DIAGNOSTICS => lsp::diagnostics(call, parse(name, arguments)?).await,
        LSP_DEFINITION => lsp::definition(call, parse(name, arguments)?).await,
        LSP_REFERENCES => lsp::references(call, parse(name, arguments)?).await,
        LSP_HOVER => lsp::hover(call, parse(name, arguments)?).await,
        LSP_SYMBOLS => lsp::symbols(call, parse(name, arguments)?).await,
        other => Err(ToolError::NotFound(format!(
            "there is no tool named `{other}`; this server's tools are {}",
            TOOL_NAMES.join(", ")
        ))),
    }
}

/// Refuses arguments outside the bounds the tool's schema advertises
/// (`minimum`, `maximum`, `minItems`, `maxItems`), naming the argument and
/// the bound: an agent is told, never silently clamped.
fn within_bounds(tool: &str, arguments: &Value) -> Result<(), ToolError> {
    let Some(definition) = definition(tool) else {
        return Ok(());
    };
    let Some(properties) = definition
        .input_schema
        .get("properties")
        .and_then(Value::as_object)
    else {
        return Ok(());
    };
    for (field, schema) in properties {
        let Some(given) = arguments.get(field) else {
            continue;
        };
        let bound = |key: &str| schema.get(key).and_then(Value::as_f64);
        let (value, low, high, shown) = match given {
            Value::Number(n) => (
                n.as_f64().unwrap_or(f64::NAN),
                bound("minimum"),
                bound("maximum"),
                format!("is {given}"),
            ),
            Value::Array(items) => (
                items.len() as f64,
                bound("minItems"),
                bound("maxItems"),
                format!("has {} items", items.len()),
            ),
            _ => continue,
        };
        // NaN (a number serde cannot hold exactly) is outside every bound.
        let below = low.is_some_and(|low| value.is_nan() || value < low);
        let above = high.is_some_and(|high| value.is_nan() || value > high);
        if below || above {
            let range = match (low, high) {
                (Some(low), Some(high)) => format!("from {low} to {high}"),
                (Some(low), None) => format!("at least {low}"),
                (None, Some(high)) => format!("at most {high}"),
                (None, None) => String::new(),
            };
            return Err(ToolError::OutOfBounds {
                tool: tool.to_owned(),
                field: field.clone(),
                shown,
                range,
            });
        }
    }
    Ok(())
}

/// Reads a tool's arguments, naming the fields it takes when they are wrong.
fn parse<T: DeserializeOwned>(tool: &str, arguments: Value) -> Result<T, ToolError> {
    serde_json::from_value(arguments).map_err(|e| {
        let takes = definition(tool)
            .and_then(|t| {
                t.input_schema
                    .get("properties")
                    .and_then(Value::as_object)
                    .map(|p| p.keys().cloned().collect::<Vec<_>>().join(", "))
            })
            .unwrap_or_default();
        ToolError::Unreadable {
            tool: tool.to_owned(),
            why: e.to_string(),
            takes,
        }
    })
}

fn schema(value: Value) -> Arc<JsonObject> {
    Arc::new(match value {
        Value::Object(map) => map,
        _ => JsonObject::new(),
    })
}

fn tool(name: &'static str, description: &'static str, input: Value, read_only: bool) -> Tool {
    let mut tool = Tool::new(name, description, schema(input));
    let mut annotations = ToolAnnotations::default();
    annotations.read_only_hint = Some(read_only);
    annotations.open_world_hint = Some(matches!(name, "fetch_url" | WEB_SEARCH));
    tool.annotations = Some(annotations);
    tool
}

/// The session's skills as MCP prompts.
pub fn skill_prompts(session: &Session) -> Vec<rmcp::model::Prompt> {
    skills::prompts(session)
}

/// One skill as an MCP prompt, decided at its layer like read_skill.
pub async fn skill_prompt(
    call: &Call<'_>,
    name: &str,
) -> Result<rmcp::model::GetPromptResult, ToolError> {
    skills::prompt(call, name).await
}

/// The definition of one tool as `session` offers it: read_skill's
/// description lists the session's skills.
pub fn offered_definition(session: &Session, name: &str) -> Option<Tool> {
    let mut tool = definition(name)?;
    if name == READ_SKILL {
        tool.description = Some(skills::description(session).into());
    }
    Some(tool)
}

/// The definition of one tool, as `tools/list` sends it.
pub fn definition(name: &str) -> Option<Tool> {
    let path = json!({"type": "string", "description": "A path inside the workspace, relative to it (absolute paths must be under it)."});
    Some(match name {
        "read_file" => tool(
            "read_file",
            "Read a UTF-8 text file in the workspace. `offset` (first line, 1-based) and `limit` (number of lines) read part of a long file.",
            json!({"type": "object", "properties": {
                "path": path,
                "offset": {"type": "integer", "minimum": 1},
                "limit": {"type": "integer", "minimum": 1}
            }, "required": ["path"], "additionalProperties": false}),
            true,
        ),
        "list_directory" => tool(
            "list_directory",
            "List a folder of the workspace: folders end in `/`, links in `@`, files show their size.",
            json!({"type": "object", "properties": {"path": path}, "additionalProperties": false}),
            true,
        ),
        "glob" => tool(
            "glob",
            "Find paths in the workspace matching a glob (`**/*.rs`, `src/*.toml`), relative to `path` (default the workspace). Links are listed, never followed; `.git` is skipped.",
            json!({"type": "object", "properties": {
                "pattern": {"type": "string"},
                "path": path
            }, "required": ["pattern"], "additionalProperties": false}),
            true,
        ),
        "grep" => tool(
            "grep",
            "Search text files in the workspace for a regular expression (Rust regex syntax). Prints `path:line: text`. `glob` keeps only files matching it; `path` is a file or folder to search.",
            json!({"type": "object", "properties": {
                "pattern": {"type": "string"},
                "path": path,
                "glob": {"type": "string"},
                "ignore_case": {"type": "boolean"},
                "max_results": {"type": "integer", "minimum": 1, "maximum": files::MAX_GREP_RESULTS}
            }, "required": ["pattern"], "additionalProperties": false}),
            true,
        ),
        "write_file" => tool(
            "write_file",
            "Write a whole file in the workspace (made or replaced, folders made as needed). The write is atomic: a refused or failed write leaves the old file as it was.",
            json!({"type": "object", "properties": {
                "path": path,
                "content": {"type": "string"}
            }, "required": ["path", "content"], "additionalProperties": false}),
            false,
        ),
        "edit_file" => tool(
            "edit_file",
            "Replace `old_string` with `new_string` in a file of the workspace. `old_string` must occur exactly once unless `replace_all` is true.",
            json!({"type": "object", "properties": {
                "path": path,
                "old_string": {"type": "string"},
                "new_string": {"type": "string"},
                "replace_all": {"type": "boolean"}
            }, "required": ["path", "old_string", "new_string"], "additionalProperties": false}),
            false,
        ),
        "run_command" => tool(
            "run_command",
            "Run a program in Chock's sandbox, with the project's Nix dev shell as toolchain and the workspace read-write. `argv` is the program and its arguments (no shell: write [\"sh\", \"-c\", \"...\"] for one). Answers the exit status and the output. A program still running after `timeout_seconds` (default 300, at most 3600) is killed, and the answer says so. With `background: true` (for a dev server, a watcher) it answers at once with a task id and runs on until stop_task or the end of the session; read its output with task_output. A background command is never asked about: only what the policy allows outright runs, and ports rules name (net.serve.<port>) are published for it on this machine's 127.0.0.1.",
            json!({"type": "object", "properties": {
                "argv": {"type": "array", "items": {"type": "string"}, "minItems": 1},
                "cwd": {"type": "string", "description": "A folder inside the workspace to run in (default the workspace)."},
                "timeout_seconds": {"type": "integer", "minimum": 1, "maximum": command::MAX_TIMEOUT_SECONDS, "description": "Kill the program after this many seconds (default 300); not with `background`."},
                "background": {"type": "boolean", "description": "Start it as a background task and answer at once with its id."},
                "secrets": {"type": "array", "items": {"type": "string"}, "description": "Secrets named in chock.zon's .secrets that this one command is given, each as an environment variable of its own name; each is decided under secret.use.<name>, and its value is replaced by [secret NAME] in the answer."},
                "secret_files": {"type": "array", "items": {"type": "string"}, "description": "Secrets named in chock.zon's .secrets that this one command is given as files, /run/chock/secrets/<name>, readable by the command alone and gone when it ends (for programs that read a key from a file); decided like `secrets`."}
            }, "required": ["argv"], "additionalProperties": false}),
            false,
        ),
        "nix_eval" => tool(
            "nix_eval",
            "Evaluate a Nix expression with fix, Chock's own evaluator: pure, paths only inside the workspace, nothing built. The answer is cut at 16384 bytes.",
            json!({"type": "object", "properties": {
                "expression": {"type": "string"},
                "json": {"type": "boolean", "description": "Answer as JSON instead of Nix syntax."}
            }, "required": ["expression"], "additionalProperties": false}),
            true,
        ),
        "nix_build" => tool(
            "nix_build",
            "Build one attribute of the project through the Nix daemon. `attribute` is a list with one name per level, never one dotted string: [\"packages\", \"x86_64-linux\", \"default\"]. `flake` is optional and must be the project.",
            json!({"type": "object", "properties": {
                "attribute": {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": chock_nix::MAX_SEGMENTS},
                "flake": {"type": "string"}
            }, "required": ["attribute"], "additionalProperties": false}),
            false,
        ),
        PROVIDE_TOOL => tool(
            PROVIDE_TOOL,
            "Get a program this session has not got: build one attribute of a flake through the Nix daemon and answer the full paths of its `bin/` programs, to run with run_command (argv[0] the full path). `attribute` is a list with one name per level of the flake's outputs, never one dotted string. `input` names an input of the project's flake.lock (e.g. \"nixpkgs\" with [\"legacyPackages\", \"x86_64-linux\", \"ripgrep\"]); without it, the project's own flake.",
            json!({"type": "object", "properties": {
                "attribute": {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": chock_nix::MAX_SEGMENTS},
                "input": {"type": "string", "description": "An input of the project's flake.lock, by its name in the project's flake.nix."}
            }, "required": ["attribute"], "additionalProperties": false}),
            false,
        ),
        "fetch_url" => tool(
            "fetch_url",
            "Read one page over http or https (GET only: no header, credential or body can be sent). Redirects are followed only while every host is allowed; robots.txt is honoured; the answer is cut at `max_bytes` (default and most 1 MiB).",
            json!({"type": "object", "properties": {
                "url": {"type": "string"},
                "max_bytes": {"type": "integer", "minimum": 1, "maximum": web::MAX_FETCH_BYTES}
            }, "required": ["url"], "additionalProperties": false}),
            true,
        ),
        WEB_SEARCH => tool(
            WEB_SEARCH,
            "Search the web with the engine the person configured: answers up to `count` results (title, URL, snippet). Each search is decided under web.search and may ask the person. Reading a result is fetch_url, decided for its host.",
            json!({"type": "object", "properties": {
                "query": {"type": "string", "description": "What to search for (at most 400 characters)."},
                "count": {"type": "integer", "minimum": 1, "maximum": chock_policy::MAX_SEARCH_RESULTS, "description": "How many results (default and most: the engine's .max_results)."}
            }, "required": ["query"], "additionalProperties": false}),
            true,
        ),
        READ_SKILL => tool(
            READ_SKILL,
            "Read a skill by name (instructions for one kind of task); each read is decided under skill.read.<layer>. A skill grants nothing.",
            json!({"type": "object", "properties": {
                "name": {"type": "string", "description": "The skill's name, as listed."},
                "file": {"type": "string", "description": "A file beside its SKILL.md, relative to the skill's folder (default: the SKILL.md itself)."}
            }, "required": ["name"], "additionalProperties": false}),
            true,
        ),
        "task_output" => tool(
            "task_output",
            "Read a background task's output (stdout and stderr together) from `offset` (default 0); the answer gives the next offset to read from. `wait_seconds` (at most 30) waits for output past the offset first. A task keeps its last 1 MiB of output; a read from before that says how much was dropped.",
            json!({"type": "object", "properties": {
                "task": {"type": "integer", "minimum": 1},
                "offset": {"type": "integer", "minimum": 0},
                "max_bytes": {"type": "integer", "minimum": 1, "maximum": crate::tasks::OUTPUT_BYTES},
                "wait_seconds": {"type": "integer", "minimum": 0, "maximum": tasks::MAX_WAIT_SECONDS}
            }, "required": ["task"], "additionalProperties": false}),
            true,
        ),
        "stop_task" => tool(
            "stop_task",
            "Stop a background task: its whole sandbox is killed and its published ports are closed.",
            json!({"type": "object", "properties": {
                "task": {"type": "integer", "minimum": 1}
            }, "required": ["task"], "additionalProperties": false}),
            false,
        ),
        "list_tasks" => tool(
            "list_tasks",
            "List this session's background tasks: id, command, state (running, or how it ended), network, output so far and published ports.",
            json!({"type": "object", "properties": {}, "additionalProperties": false}),
            true,
        ),
        SERVE_PORT => tool(
            SERVE_PORT,
            "Publish a port a background task's server listens on (inside its sandbox, on 127.0.0.1) at the same port on this machine's 127.0.0.1, so the person can open it. Decided at net.serve.<port>: a person may be asked. Ports under 1024, ports in use on this machine and more than 4 per session are refused. `task` may be left out when one task runs.",
            json!({"type": "object", "properties": {
                "port": {"type": "integer", "minimum": 1, "maximum": 65535},
                "task": {"type": "integer", "minimum": 1}
            }, "required": ["port"], "additionalProperties": false}),
            false,
        ),
        REQUEST_APPLY => tool(
            REQUEST_APPLY,
            "Ask for the work in this session's workspace to be carried into the person's repository: it is committed there as the session commit and, after the person approves (workspace.apply), lands as chock.zon's .apply.mode says (or parks at refs/chock/<session>); in a project that is not a git repository the changes are written into its tree, whole or not at all. Answers what was carried and where.",
            json!({"type": "object", "properties": {}, "additionalProperties": false}),
            false,
        ),
        LSP_DIAGNOSTICS => tool(
            LSP_DIAGNOSTICS,
            "The language server's diagnostics (errors, warnings) for a file of the workspace, as it is now: call it after a write to see what the write broke. Answered by the server chock.zon's .lsp names for the file's extension, started when first needed.",
            json!({"type": "object", "properties": {"path": path}, "required": ["path"], "additionalProperties": false}),
            true,
        ),
        LSP_DEFINITION => tool(
            LSP_DEFINITION,
            "Where the symbol at a place of a file is defined, from the language server: `path:line:column` lines. `line` and `column` count from 1.",
            place_schema(&path),
            true,
        ),
        LSP_REFERENCES => tool(
            LSP_REFERENCES,
            "Every reference to the symbol at a place of a file, its declaration included, from the language server: `path:line:column` lines (at most 500). `line` and `column` count from 1.",
            place_schema(&path),
            true,
        ),
        LSP_HOVER => tool(
            LSP_HOVER,
            "What the language server says of the symbol at a place of a file (its type, its documentation). `line` and `column` count from 1.",
            place_schema(&path),
            true,
        ),
        LSP_SYMBOLS => tool(
            LSP_SYMBOLS,
            "The outline of a file from the language server: each symbol's kind, name and line, indented by depth.",
            json!({"type": "object", "properties": {"path": path}, "required": ["path"], "additionalProperties": false}),
            true,
        ),
        _ => return None,
    })
}

/// What a language-server tool about one place of a file takes.
fn place_schema(path: &Value) -> Value {
    json!({"type": "object", "properties": {
        "path": path,
        "line": {"type": "integer", "minimum": 1},
        "column": {"type": "integer", "minimum": 1}
    }, "required": ["path", "line", "column"], "additionalProperties": false})
}
