//! Chock's own agent session, `chock run`: a model at a provider instance
//! of `config.zon`, chosen through `model.select` before anything else;
//! the tool server's tools ([`chock_mcp::local::InProcess`]), called in
//! this process through the same session and the same gate as `chock mcp`,
//! on a session workspace in a git project; and the loop: the conversation
//! sent, each tool call run and its result appended, until the model stops
//! calling tools or the turns run out. At the end the workspace's work
//! goes through the one `workspace.apply` question, or is kept and said
//! where. What is shown is the caller's ([`Show`]): a library never draws
//! on a terminal. See `docs/run.md`.

use std::path::PathBuf;
use std::sync::Arc;

use chock_mcp::local::{Finished, InProcess};
use chock_mcp::{Local, ServeOptions};
use chock_policy::Asker;
use chock_provider::{
    Client, Conversation, Credentials, Model, ProviderError, Request, Settings, ToolDef, Turn,
    Usage,
};

/// The agent kind `model.select` and every tool call are decided for.
pub const AGENT_KIND: &str = chock_mcp::AGENT_KIND;
/// The name the session's tool calls carry in the decision log.
pub const CALLER: &str = "chock-run";
/// The most tokens one reply may hold.
pub const MAX_TOKENS: u32 = 16384;

/// How `chock run` was started.
pub struct RunOptions {
    /// The project (default: found from the working directory).
    pub project: Option<PathBuf>,
    /// The provider instance of `config.zon` (default: the only one).
    pub provider: Option<String>,
    /// The model id, as it goes on the wire.
    pub model: String,
    /// The most requests sent to the model.
    pub max_turns: u32,
    /// Copy the project's uncommitted work into the session workspace.
    pub allow_dirty: bool,
    /// What the person asks for.
    pub task: String,
    /// How hard the client tries and how long it waits.
    pub settings: Settings,
}

/// What the person sees as the session goes; the binary draws it.
pub trait Show: Send {
    /// A piece of the model's text, as it streams.
    fn text(&mut self, piece: &str);
    /// One line about the session: a tool call and its decision, the end.
    fn line(&mut self, line: &str);
}

/// How a session ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ended {
    pub how: How,
    /// Requests sent to the model.
    pub turns: u32,
    /// Tokens used over the session.
    pub usage: Usage,
    /// What became of the workspace's work.
    pub workspace: Finished,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum How {
    /// The model stopped calling tools.
    Done,
    /// It was still calling tools after `max_turns` requests.
    MaxTurns,
}

/// Why a session could not start or go on.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// `config.zon` names no instance to use, or several and none was chosen.
    #[error("{0}")]
    NoProvider(String),
    /// The instance cannot be used as `config.zon` names it (unknown, its
    /// key missing, its client unable to start); nothing was made.
    #[error(transparent)]
    Setup(ProviderError),
    /// `model.select` refused the model; nothing was made.
    #[error("{0}")]
    Refused(String),
    /// The tool server's session could not start.
    #[error(transparent)]
    Start(#[from] chock_mcp::McpError),
    /// A request to the model failed (after its retries).
    #[error(transparent)]
    Provider(#[from] ProviderError),
    /// The async runtime could not start.
    #[error("could not start the session's runtime: {0}; free some memory or threads and retry")]
    Runtime(std::io::Error),
}

/// The system prompt: the tool server's own instructions, and what this
/// session is.
fn system_prompt(withheld: &[String]) -> String {
    let mut text = format!(
        "You are a coding agent working in a person's project through Chock. {} \
You work on a session workspace, a copy of the project's repository: when you finish, \
your work is offered to the person to apply. Finish by answering without calling a tool.",
        chock_mcp::INSTRUCTIONS
    );
    for why in withheld {
        text.push_str(&format!(" {why}."));
    }
    text
}

/// Runs one session to its end; `person` is asked first when an act needs
/// a yes (then `chock approve`).
pub fn run(
    options: RunOptions,
    person: Arc<dyn Asker + Send + Sync>,
    show: &mut dyn Show,
) -> Result<Ended, RunError> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(RunError::Runtime)?;
    runtime.block_on(session(options, person, show))
}

async fn session(
    options: RunOptions,
    person: Arc<dyn Asker + Send + Sync>,
    show: &mut dyn Show,
) -> Result<Ended, RunError> {
    let serve = ServeOptions {
        project: options.project.clone(),
        workspace: true,
        allow_dirty: options.allow_dirty,
        command: "chock run",
        ..ServeOptions::default()
    };
    let caller = Local {
        name: CALLER.into(),
        person,
    };
    // model.select first, once the policy is read: a refused model stops
    // the run before a workspace is made.
    let mut failed: Option<RunError> = None;
    let started = tokio::task::block_in_place(|| {
        InProcess::start(&serve, caller, |project, policy, log| {
            choose(&options, project.dir.display().to_string(), policy, log).map_err(|e| {
                let said = e.to_string();
                failed = Some(e);
                said
            })
        })
    });
    let (tools, client) = match (started, failed) {
        (Ok(started), _) => started,
        (Err(_), Some(e)) => return Err(e),
        (Err(e), None) => return Err(e.into()),
    };
    let mut conversation = Conversation {
        system: Some(system_prompt(&tools.withheld())),
        turns: vec![Turn::User(options.task.clone())],
        tools: tools
            .tools()
            .into_iter()
            .map(|t| ToolDef {
                name: t.name,
                description: t.description,
                input_schema: t.input_schema,
            })
            .collect(),
    };
    let mut turns = 0;
    let how = loop {
        if turns >= options.max_turns {
            break How::MaxTurns;
        }
        turns += 1;
        let request = Request {
            model: &options.model,
            max_tokens: MAX_TOKENS,
            conversation: &conversation,
        };
        let sent = client.send(&request, &mut |piece| show.text(piece)).await;
        let reply = match sent {
            Ok(reply) => reply,
            Err(e) => {
                // The work so far is kept, never lost.
                tools.finish(false).await;
                return Err(e.into());
            }
        };
        if !reply.text.is_empty() && !reply.text.ends_with('\n') {
            show.text("\n");
        }
        conversation.turns.push(reply.turn());
        if reply.tool_calls.is_empty() {
            break How::Done;
        }
        for call in reply.tool_calls {
            let outcome = tools.call(&call.name, call.arguments.clone()).await;
            show.line(&call_line(&call.name, &call.arguments, &outcome));
            let (content, is_error) = match outcome {
                Ok(text) => (text, false),
                Err(text) => (text, true),
            };
            conversation.turns.push(Turn::ToolResult {
                call_id: call.id,
                content,
                is_error,
            });
        }
    };
    // Only finished work is offered; work stopped at max turns is kept.
    let workspace = tools.finish(how == How::Done).await;
    Ok(Ended {
        how,
        turns,
        usage: client.used(),
        workspace,
    })
}

/// The instance and model decided (`model.select`), and the client for them.
fn choose(
    options: &RunOptions,
    project: String,
    policy: &chock_policy::Policy,
    log: &chock_log::Log,
) -> Result<Client, RunError> {
    let instance = match &options.provider {
        Some(name) => name.clone(),
        None => match policy.providers() {
            [only] => only.name.clone(),
            none_or_many => {
                let names: Vec<_> = none_or_many.iter().map(|p| p.name.as_str()).collect();
                let file = policy.operator_file().map_or_else(
                    || "config.zon ($XDG_CONFIG_HOME/chock/config.zon)".to_owned(),
                    |p| p.display().to_string(),
                );
                return Err(RunError::NoProvider(if names.is_empty() {
                    format!(
                        "{file} names no provider instance: add one to its .providers (docs/providers.md)"
                    )
                } else {
                    format!(
                        "{file} names {} provider instances ({}): choose one with --provider",
                        names.len(),
                        names.join(", ")
                    )
                }));
            }
        },
    };
    let (configured, _) =
        chock_provider::select_model(policy, log, &project, AGENT_KIND, &instance, &options.model)
            .map_err(|e| match e {
                refused @ ProviderError::Refused { .. } => RunError::Refused(refused.to_string()),
                other => RunError::Setup(other),
            })?;
    let credentials = Credentials::from_env().map_err(RunError::Setup)?;
    let key = chock_provider::key_for(policy, configured, &credentials).map_err(RunError::Setup)?;
    Client::new(configured, key, options.settings).map_err(RunError::Setup)
}

/// One line for a tool call: the tool, its arguments cut short, and how
/// it was answered (the first line of a refusal or an error).
fn call_line(
    name: &str,
    arguments: &serde_json::Value,
    outcome: &Result<String, String>,
) -> String {
    let mut args = arguments.to_string();
    if args.len() > 120 {
        let cut = (0..=117)
            .rev()
            .find(|i| args.is_char_boundary(*i))
            .unwrap_or(0);
        args.truncate(cut);
        args.push_str("...");
    }
    let answer = match outcome {
        Ok(_) => "done".to_owned(),
        Err(why) => why.lines().next().unwrap_or_default().to_owned(),
    };
    format!("tool {name} {args}: {answer}")
}
