//! Chock's own agent session, `chock run`: a model at a provider instance
//! of `config.zon`, chosen through `model.select` before anything else;
//! the tool server's tools ([`chock_mcp::local::InProcess`]), called in
//! this process through the same session and the same gate as `chock mcp`,
//! on a session workspace in a git project; and the loop: the conversation
//! sent, each tool call run and its result appended, until the model stops
//! calling tools or the turns run out. At the end the workspace's work
//! goes through the one `workspace.apply` question, or is kept and said
//! where. Every session is written to its session log (chock-sessions):
//! the task, each reply and the tokens it used, each tool result, the
//! end; `--continue` and `--session` fold that log back into the
//! conversation and go on writing it. What is shown is the caller's
//! ([`Show`]): a library never draws on a terminal. See `docs/run.md`.

use std::path::PathBuf;
use std::sync::Arc;

use chock_mcp::local::{Finished, InProcess};
use chock_mcp::{Local, ServeOptions};
use chock_policy::Asker;
use chock_provider::{
    Client, Conversation, Credentials, Model, ProviderError, Request, Settings, ToolCall, ToolDef,
    Turn, Usage,
};
use chock_sessions::{Event, SessionError, SessionLog, Sessions, Stored};

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
    /// Go on with an earlier session of this project instead of a new one.
    pub resume: Option<Resume>,
}

/// Which earlier session to go on with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Resume {
    /// The newest session of the project (`--continue`).
    Newest,
    /// The session with this id (`--session ID`).
    Id(String),
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
    /// The session's id (its log's and its workspace's name).
    pub session: String,
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
    /// The session log cannot be started, or the session to resume cannot
    /// be used (not found, running, another project's, not verifying).
    #[error(transparent)]
    Session(#[from] SessionError),
    /// The session to resume is another project's.
    #[error(
        "session {session} is of the project {project}: run from there, or with --project {project}"
    )]
    OtherProject { session: String, project: String },
    /// The project cannot be found.
    #[error(transparent)]
    Project(#[from] chock_sandbox::project::ProjectError),
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

/// The session to write: a fresh id, or an earlier session's log held to
/// go on writing, with its events.
struct Opened {
    id: String,
    earlier: Option<(SessionLog, Vec<Stored>)>,
}

/// Finds and holds the session to resume (refused while it runs, when it
/// is another project's, or when its log does not verify).
fn open_session(
    sessions: &Sessions,
    options: &RunOptions,
    project: &str,
) -> Result<Opened, RunError> {
    let id = match &options.resume {
        None => {
            return Ok(Opened {
                id: chock_sessions::new_id(),
                earlier: None,
            });
        }
        Some(Resume::Newest) => sessions.newest_for(project)?,
        Some(Resume::Id(id)) => id.clone(),
    };
    let (log, stored) = sessions.resume(&id)?;
    let started_in = stored.iter().find_map(|s| match &s.event {
        Event::Start(start) => Some(start.project.clone()),
        _ => None,
    });
    if let Some(other) = started_in.filter(|p| p != project) {
        return Err(RunError::OtherProject {
            session: id,
            project: other,
        });
    }
    Ok(Opened {
        id,
        earlier: Some((log, stored)),
    })
}

/// The conversation an earlier session's events make: the tasks, the
/// model's replies, the results it was given. A call the session stopped
/// before running is answered as not run, so every call has its result.
pub fn conversation_of(stored: &[Stored]) -> Vec<Turn> {
    let mut turns = Vec::new();
    let mut unanswered: Vec<String> = Vec::new();
    let close = |turns: &mut Vec<Turn>, unanswered: &mut Vec<String>| {
        for call_id in unanswered.drain(..) {
            turns.push(Turn::ToolResult {
                call_id,
                content: "this call was not run: the session stopped before it".into(),
                is_error: true,
            });
        }
    };
    for s in stored {
        match &s.event {
            Event::User(user) => {
                close(&mut turns, &mut unanswered);
                turns.push(Turn::User(user.text.clone()));
            }
            Event::Turn(turn) => {
                close(&mut turns, &mut unanswered);
                unanswered = turn.tool_calls.iter().map(|c| c.id.clone()).collect();
                turns.push(Turn::Assistant {
                    text: turn.text.clone(),
                    tool_calls: turn
                        .tool_calls
                        .iter()
                        .map(|c| ToolCall {
                            id: c.id.clone(),
                            name: c.name.clone(),
                            arguments: c.arguments.clone(),
                        })
                        .collect(),
                });
            }
            Event::ToolResult(result) => {
                unanswered.retain(|id| *id != result.call_id);
                turns.push(Turn::ToolResult {
                    call_id: result.call_id.clone(),
                    content: result.content.clone(),
                    is_error: result.answer != chock_sessions::Answer::Allowed,
                });
            }
            Event::Start(_) | Event::Resume(_) | Event::End(_) | Event::Custom(_) => {}
        }
    }
    close(&mut turns, &mut unanswered);
    turns
}

/// The session's log as the loop writes it: a failure to write is said
/// once and the session goes on (the work matters more than its record).
struct Record {
    log: SessionLog,
    failed: bool,
}

impl Record {
    fn write(&mut self, event: &Event, show: &mut dyn Show) {
        if let Err(e) = self.log.append(event)
            && !std::mem::replace(&mut self.failed, true)
        {
            show.line(&format!(
                "the session log {} could not be written, so this session may not resume whole: {e}",
                self.log.path().display()
            ));
        }
    }
}

async fn session(
    options: RunOptions,
    person: Arc<dyn Asker + Send + Sync>,
    show: &mut dyn Show,
) -> Result<Ended, RunError> {
    let project = chock_sandbox::project::Project::for_command(options.project.as_deref())?;
    let project_text = project.dir.display().to_string();
    let sessions = Sessions::from_env()?;
    let opened = open_session(&sessions, &options, &project_text)?;
    let serve = ServeOptions {
        project: Some(project.dir.clone()),
        workspace: true,
        allow_dirty: options.allow_dirty,
        workspace_prefix: "run",
        workspace_session: Some(opened.id.clone()),
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
    let (tools, (client, model)) = match (started, failed) {
        (Ok(started), _) => started,
        (Err(_), Some(e)) => return Err(e),
        (Err(e), None) => return Err(e.into()),
    };
    let (mut record, earlier) = match opened.earlier {
        Some((log, stored)) => {
            let mut record = Record { log, failed: false };
            record.write(&Event::Resume(model.clone()), show);
            (record, conversation_of(&stored))
        }
        None => match sessions.create(&opened.id) {
            Ok(log) => {
                let mut record = Record { log, failed: false };
                let start = chock_sessions::Start {
                    session: opened.id.clone(),
                    project: project_text.clone(),
                    model: model.clone(),
                    chock: env!("CARGO_PKG_VERSION").into(),
                };
                record.write(&Event::Start(start), show);
                (record, Vec::new())
            }
            Err(e) => {
                tools.finish(false).await;
                return Err(e.into());
            }
        },
    };
    record.write(
        &Event::User(chock_sessions::User {
            text: options.task.clone(),
        }),
        show,
    );
    let mut turns_so_far = earlier;
    turns_so_far.push(Turn::User(options.task.clone()));
    let mut conversation = Conversation {
        system: Some(system_prompt(&tools.withheld())),
        turns: turns_so_far,
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
                record.write(
                    &Event::End(chock_sessions::End {
                        how: chock_sessions::How::Failed,
                        said: e.to_string(),
                    }),
                    show,
                );
                // The work so far is kept, never lost.
                tools.finish(false).await;
                return Err(e.into());
            }
        };
        if !reply.text.is_empty() && !reply.text.ends_with('\n') {
            show.text("\n");
        }
        record.write(&Event::Turn(turn_event(&reply, &model)), show);
        conversation.turns.push(reply.turn());
        if reply.tool_calls.is_empty() {
            break How::Done;
        }
        for call in reply.tool_calls {
            let outcome = tools.call(&call.name, call.arguments.clone()).await;
            show.line(&call_line(&call.name, &call.arguments, &outcome));
            let answer = chock_sessions::Answer::of(&outcome);
            let (content, is_error) = match outcome {
                Ok(text) => (text, false),
                Err(text) => (text, true),
            };
            record.write(
                &Event::ToolResult(chock_sessions::ToolResult {
                    call_id: call.id.clone(),
                    tool: call.name.clone(),
                    answer,
                    content: content.clone(),
                }),
                show,
            );
            conversation.turns.push(Turn::ToolResult {
                call_id: call.id,
                content,
                is_error,
            });
        }
    };
    // Only finished work is offered; work stopped at max turns is kept.
    let workspace = tools.finish(how == How::Done).await;
    record.write(
        &Event::End(chock_sessions::End {
            how: match how {
                How::Done => chock_sessions::How::Done,
                How::MaxTurns => chock_sessions::How::MaxTurns,
            },
            said: finished_text(&workspace),
        }),
        show,
    );
    Ok(Ended {
        session: opened.id,
        how,
        turns,
        usage: client.used(),
        workspace,
    })
}

/// A reply as the session log keeps it.
fn turn_event(
    reply: &chock_provider::Reply,
    model: &chock_sessions::ModelRef,
) -> chock_sessions::Turn {
    chock_sessions::Turn {
        text: reply.text.clone(),
        tool_calls: reply
            .tool_calls
            .iter()
            .map(|c| chock_sessions::Call {
                id: c.id.clone(),
                name: c.name.clone(),
                arguments: c.arguments.clone(),
            })
            .collect(),
        tokens: chock_sessions::Tokens {
            input: reply.usage.input_tokens,
            output: reply.usage.output_tokens,
            cache_read: reply.usage.cache_read_tokens,
            cache_write: reply.usage.cache_write_tokens,
        },
        model: model.clone(),
    }
}

/// What became of the workspace, in words, for the log's end.
fn finished_text(finished: &Finished) -> String {
    match finished {
        Finished::NoWorkspace => "no workspace".into(),
        Finished::Nothing => "the workspace held no work to apply".into(),
        Finished::Applied(said) => format!("applied: {said}"),
        Finished::Kept(why) => format!("not applied, kept: {why}"),
    }
}

/// The instance and model decided (`model.select`), and the client for them.
fn choose(
    options: &RunOptions,
    project: String,
    policy: &chock_policy::Policy,
    log: &chock_log::Log,
) -> Result<(Client, chock_sessions::ModelRef), RunError> {
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
    let client = Client::new(configured, key, options.settings).map_err(RunError::Setup)?;
    let model = chock_sessions::ModelRef {
        instance: configured.name.clone(),
        kind: configured.kind.as_str().to_owned(),
        model: options.model.clone(),
    };
    Ok((client, model))
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

#[cfg(test)]
mod tests {
    use super::*;
    use chock_sessions::{Answer, Call, ModelRef, Tokens, ToolResult, User};

    fn stored(event: Event) -> Stored {
        Stored {
            seq: 1,
            ts: "t".into(),
            event,
        }
    }

    #[test]
    fn a_log_folds_back_into_turns_and_a_call_never_run_is_answered() {
        let model = ModelRef {
            instance: "i".into(),
            kind: "anthropic".into(),
            model: "m".into(),
        };
        let call = |id: &str| Call {
            id: id.into(),
            name: "read_file".into(),
            arguments: serde_json::json!({"path": "a"}),
        };
        let events = [
            Event::User(User {
                text: "task".into(),
            }),
            Event::Turn(chock_sessions::Turn {
                text: "two calls".into(),
                tool_calls: vec![call("c1"), call("c2")],
                tokens: Tokens::default(),
                model,
            }),
            Event::ToolResult(ToolResult {
                call_id: "c1".into(),
                tool: "read_file".into(),
                answer: Answer::Refused,
                content: "refused: no".into(),
            }),
            Event::End(chock_sessions::End {
                how: chock_sessions::How::Failed,
                said: "the model went away".into(),
            }),
            Event::User(User {
                text: "again".into(),
            }),
        ];
        let stored: Vec<Stored> = events.into_iter().map(stored).collect();
        let turns = conversation_of(&stored);
        assert_eq!(turns.len(), 5, "{turns:?}");
        assert_eq!(turns[0], Turn::User("task".into()));
        assert!(matches!(&turns[1], Turn::Assistant { tool_calls, .. } if tool_calls.len() == 2));
        assert_eq!(
            turns[2],
            Turn::ToolResult {
                call_id: "c1".into(),
                content: "refused: no".into(),
                is_error: true,
            }
        );
        assert!(
            matches!(&turns[3], Turn::ToolResult { call_id, is_error: true, .. } if call_id == "c2"),
            "the call never run is answered before the next task: {:?}",
            turns[3]
        );
        assert_eq!(turns[4], Turn::User("again".into()));
    }
}
