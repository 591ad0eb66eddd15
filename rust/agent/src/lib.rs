//! Chock's own agent session, `chock run`: a model at a provider instance
//! of `config.zon`, chosen through `model.select` before anything else;
//! the tool server's tools ([`chock_mcp::local::InProcess`]), called in
//! this process through the same session and the same gate as `chock mcp`,
//! on a session workspace in a git project; and the loop: the conversation
//! sent, each tool call run and its result appended, until the model stops
//! calling tools or the turns run out. At the end the workspace's work
//! goes through the one `workspace.apply` question, or is kept and said
//! where. What is shown is the caller's ([`Show`]): a library never draws
//! on a terminal. Beside the tool server's tools the model is offered the
//! loop's own ([`own_tools`]): a plan, questions to the person, the
//! project's guidance and memory, and promises about its own acts
//! ([`ratchet`]), kept as events of the session's [`state`]. See
//! `docs/run.md`. Every session is written to its session log
//! (chock-sessions, [`record`]): the task, each reply and the tokens it
//! used, each tool result, the plan and the promises, the end; `--continue`
//! and `--session` fold that log back into the conversation and the state
//! and go on writing it.
//!
//! [`run`] is one task from start to end; a [`Session`] keeps the
//! conversation and the workspace across prompts, each of which may be
//! cancelled (`chock acp`, `docs/acp.md`).

#![forbid(unsafe_code)]

pub mod guidance;
pub mod memory;
pub mod own_tools;
pub mod plan;
pub mod ratchet;
pub mod record;
pub mod review;
mod scratch;
pub mod spawn;
pub mod spending;
pub mod state;

use std::path::PathBuf;
use std::sync::Arc;

use chock_mcp::local::{Finished, InProcess};
use chock_mcp::{Failed, Local, ServeOptions};
use chock_provider::{
    Client, Conversation, Credentials, Model, ProviderError, Request, Settings, StopReason, Usage,
};
pub use chock_provider::{ToolCall, Turn};
use chock_sessions::{Event, SessionError, Sessions};
pub use tokio_util::sync::CancellationToken;

/// The agent kind `model.select` and every tool call are decided for.
pub const AGENT_KIND: &str = chock_mcp::AGENT_KIND;
/// The name the session's tool calls carry in the decision log.
pub const CALLER: &str = "chock-run";
/// The most tokens one reply may hold.
pub const MAX_TOKENS: u32 = 16384;

/// How a session is started (`chock run`, and each of `chock acp`'s).
#[derive(Clone)]
pub struct RunOptions {
    /// The project (default: found from the working directory).
    pub project: Option<PathBuf>,
    /// The provider instance of `config.zon` (default: the only one).
    pub provider: Option<String>,
    /// The model id, as it goes on the wire.
    pub model: String,
    /// The most requests sent to the model for one prompt.
    pub max_turns: u32,
    /// Copy the project's uncommitted work into the session workspace.
    pub allow_dirty: bool,
    /// The dev shell run_command uses (default: chock.zon's, else `default`).
    pub dev_shell: Option<String>,
    /// How hard the client tries and how long it waits.
    pub settings: Settings,
    /// Go on with an earlier session of this project instead of a new one.
    pub resume: Option<Resume>,
    /// Where the session stops spending (`--max-budget`, `--max-tokens`).
    pub budget: spending::Budget,
    /// The command serving it (`chock run`, `chock acp`), as `chock
    /// approve` names its questions.
    pub command: &'static str,
    /// Tools offered beside Chock's own (the project's plugins).
    pub extra_tools: Option<Arc<dyn chock_mcp::extra::ExtraTools>>,
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
    /// The session has started (or been resumed): its id and its model.
    fn started(&mut self, session: &str, model: &chock_sessions::ModelRef) {
        let _ = (session, model);
    }
    /// A piece of the model's text, as it streams.
    fn text(&mut self, piece: &str);
    /// One line about the session: a tool call and its decision, the end.
    fn line(&mut self, line: &str);
    /// The agent's plan, each time it changes: by default one line per step.
    fn plan(&mut self, plan: &plan::Plan) {
        for step in plan.lines() {
            self.line(&format!("plan {step}"));
        }
    }
    /// The session's title, each time the agent sets it (`set_title`).
    fn title(&mut self, title: &str) {
        self.line(&format!("title: {title}"));
    }
    /// An act the agent `agent` asks the person to do (`request_action`).
    fn requested(&mut self, agent: &str, action: &str, why: Option<&str>) {
        self.line(&format!(
            "the `{agent}` agent asks you to: {action}{}",
            why.map_or(String::new(), |why| format!(" (why: {why})"))
        ));
    }
    /// What the session has spent, after each reply of the main agent.
    fn spent(&mut self, spent: &Spent) {
        let _ = spent;
    }
    /// A decision the gate logged while a call ran (its action, the
    /// decision, who answered), before the call's end is shown.
    fn decided(&mut self, decided: &own_tools::Decided) {
        let _ = decided;
    }
    /// A tool call the model asked for, before it goes through the gate.
    fn call_started(&mut self, call: &ToolCall) {
        let _ = call;
    }
    /// How a tool call was answered: `Ok` its result, `Err` the refusal or
    /// error the model reads. By default one line ([`Show::line`]).
    fn call_ended(&mut self, call: &ToolCall, outcome: &Result<String, Failed>) {
        self.line(&call_line(&call.name, &call.arguments, outcome));
    }
}

/// What a session has spent, after one reply.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Spent {
    /// The reply's own tokens.
    pub turn: Usage,
    /// Over the session so far, every agent's (spawned ones and the
    /// reviewer too).
    pub session: Usage,
    /// What the reply cost, and the session so far, in dollars, when the
    /// model has a price.
    pub turn_cost: Option<f64>,
    pub session_cost: Option<f64>,
}

/// How a session ended.
#[derive(Debug, Clone, PartialEq)]
pub struct Ended {
    pub how: How,
    /// The session's id (its log's and its workspace's name).
    pub session: String,
    /// Requests sent to the model.
    pub turns: u32,
    /// Tokens used over the session.
    pub usage: Usage,
    /// What they cost in dollars, when the model has a price.
    pub cost: Option<f64>,
    /// What became of the workspace's work.
    pub workspace: Finished,
    /// The session's state at the end (the plan, the promises).
    pub state: state::State,
    /// The events that state is the fold of, in order.
    pub events: Vec<state::Event>,
}

/// How one prompt ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum How {
    /// The model stopped calling tools.
    Done,
    /// It was still calling tools after `max_turns` requests.
    MaxTurns,
    /// The model refused to go on (the provider's `refusal` or
    /// `content_filter` stop).
    Refusal,
    /// The prompt's token was cancelled: the reply streaming was dropped,
    /// the call running ended, the calls after it not run.
    Cancelled,
    /// The session reached its budget (`--max-budget`, `--max-tokens`).
    Budget,
    /// The model made [`own_tools::MAX_UNUSABLE_CALLS`] calls in a row
    /// that could not be run (no such tool, arguments no JSON object).
    UnusableCalls,
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
    /// The scratchpad could not be made, the loop's own tools set up, or
    /// an earlier session's state read.
    #[error("{0}")]
    Own(String),
    /// The budget cannot be held (a dollar budget for a model with no
    /// price, or no amount); nothing was made.
    #[error(transparent)]
    Budget(spending::BudgetError),
    /// The async runtime could not start.
    #[error("could not start the session's runtime: {0}; free some memory or threads and retry")]
    Runtime(std::io::Error),
}

/// The system prompt: the tool server's own instructions, and what this
/// session is.
pub(crate) fn system_prompt(withheld: &[String]) -> String {
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

/// Runs one session to its end on `task`; `person` is asked first when an
/// act needs a yes (then `chock approve`). Cancelling `cancel` stops the
/// turn as [`Session::prompt`] says; the session then ends, its work kept.
pub fn run(
    options: RunOptions,
    task: &str,
    person: Arc<dyn chock_mcp::Person>,
    show: &mut dyn Show,
    cancel: &CancellationToken,
) -> Result<Ended, RunError> {
    let mut session = Session::start(options, person)?;
    show.started(&session.id, &session.model_ref);
    let how = match session.prompt(task, show, cancel) {
        Ok(how) => how,
        Err(e) => {
            // The work so far is kept, never lost.
            let closed = session.finish(false);
            if let Some(left) = closed.scratchpad_left {
                show.line(&left);
            }
            return Err(e);
        }
    };
    let turns = session.requests;
    let usage = session.used();
    let cost = session.cost();
    let state = session.state();
    let events = session.events().to_vec();
    let id = session.id().to_owned();
    // Only finished work is offered; work stopped early is kept.
    let closed = session.finish(how == How::Done);
    if let Some(left) = closed.scratchpad_left {
        show.line(&left);
    }
    Ok(Ended {
        how,
        session: id,
        turns,
        usage,
        cost,
        workspace: closed.workspace,
        state,
        events,
    })
}

/// A session: the model decided, the workspace made, and one conversation
/// that each prompt continues.
pub struct Session {
    id: String,
    tools: InProcess,
    own: own_tools::OwnTools,
    /// How many of the own tools' state events are in the log.
    logged_state: usize,
    record: record::Record,
    /// How the last prompt ended, for the log's end.
    last: chock_sessions::How,
    client: Arc<Client>,
    /// The reviewer agent `chock.zon` names, when it names one.
    reviewer: Option<Arc<review::Reviewer>>,
    model_ref: chock_sessions::ModelRef,
    conversation: Conversation,
    model: String,
    max_turns: u32,
    spending: spending::Spending,
    /// Requests sent over the session.
    requests: u32,
    /// Agents the main agent spawned over the session.
    children: u32,
    // After the tools, so background commands end before it goes.
    scratchpad: scratch::Scratchpad,
    // Last, so the tool server's session ends before its runtime does.
    runtime: tokio::runtime::Runtime,
}

/// How a session's end went.
#[derive(Debug)]
pub struct Closed {
    /// What became of the workspace's work.
    pub workspace: Finished,
    /// The scratchpad could not be removed: where it is left, and why.
    pub scratchpad_left: Option<String>,
}

impl Session {
    /// Decides `model.select`, then makes the workspace and the tool
    /// server's session, and starts the session's log (or, resuming,
    /// holds the earlier session's, verified, and folds it back into the
    /// conversation and the state); a refused model makes nothing.
    pub fn start(
        options: RunOptions,
        person: Arc<dyn chock_mcp::Person>,
    ) -> Result<Session, RunError> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .map_err(RunError::Runtime)?;
        let project = chock_sandbox::project::Project::for_command(options.project.as_deref())?;
        let project_text = project.dir.display().to_string();
        let sessions = Sessions::from_env()?;
        let opened = record::open_session(&sessions, &options, &project_text)?;
        let scratchpad = scratch::Scratchpad::make().map_err(|e| RunError::Own(e.to_string()))?;
        let serve = ServeOptions {
            project: Some(project.dir),
            workspace_session: Some(opened.id.clone()),
            workspace: true,
            allow_dirty: options.allow_dirty,
            command: options.command,
            dev_shell: options.dev_shell.clone(),
            scratchpad: Some(scratchpad.dir().to_path_buf()),
            extra_tools: options.extra_tools.clone(),
            ..ServeOptions::default()
        };
        let caller = Local {
            name: CALLER.into(),
            person,
            spawned: Vec::new(),
        };
        // The promises of the session resumed bind from its first decision.
        let folded = own_tools::Folded::new(match &opened.earlier {
            Some((_, stored)) => record::state_of(stored)?,
            None => Vec::new(),
        });
        let logged_state = folded.logged();
        // model.select first, once the policy is read and bound by the
        // promises: a refused model stops the run before a workspace is made.
        let mut failed: Option<RunError> = None;
        let started = runtime.block_on(async {
            tokio::task::block_in_place(|| {
                InProcess::start(&serve, caller, |project, policy, log| {
                    policy
                        .bound_by(folded.ceiling())
                        .map_err(|e| e.to_string())?;
                    choose(&options, project.dir.display().to_string(), policy, log).map_err(|e| {
                        let said = e.to_string();
                        failed = Some(e);
                        said
                    })
                })
            })
        });
        let (tools, (client, model_ref, spending)) = match (started, failed) {
            (Ok(started), _) => started,
            (Err(_), Some(e)) => return Err(e),
            (Err(e), None) => return Err(e.into()),
        };
        let (record, earlier) = match opened.earlier {
            Some((log, stored)) => {
                let mut record = record::Record::new(log);
                record.write(&Event::Resume(model_ref.clone()));
                (record, record::conversation_of(&stored))
            }
            None => match sessions.create(&opened.id) {
                Ok(log) => {
                    let mut record = record::Record::new(log);
                    record.write(&Event::Start(chock_sessions::Start {
                        session: opened.id.clone(),
                        project: project_text,
                        model: model_ref.clone(),
                        chock: env!("CARGO_PKG_VERSION").into(),
                    }));
                    (record, Vec::new())
                }
                Err(e) => {
                    runtime.block_on(tools.finish(false));
                    return Err(e.into());
                }
            },
        };
        let own =
            own_tools::OwnTools::new(&tools, folded).map_err(|e| RunError::Own(e.to_string()))?;
        let client = Arc::new(client);
        // With no reviewer named (or one a bundle forbids), agent_review is
        // asked of a person and agent_then_human refused, as in chock mcp.
        let reviewer = match tools.reviewer_kind() {
            Ok(kind) => {
                let reviewer = Arc::new(review::Reviewer::new(
                    kind,
                    client.clone(),
                    (options.model.clone(), model_ref.clone()),
                    own.shared_state(),
                    own.under_way(),
                ));
                tools
                    .reviewed_by(reviewer.clone())
                    .map_err(|e| RunError::Own(e.to_string()))?;
                Some(reviewer)
            }
            Err(_) => None,
        };
        let offered = runtime.block_on(own_tools::offered(&tools, false));
        let conversation = Conversation {
            system: Some(system_prompt(&tools.withheld())),
            turns: earlier,
            tools: offered,
        };
        Ok(Session {
            id: opened.id,
            tools,
            own,
            logged_state,
            record,
            last: chock_sessions::How::Done,
            client,
            reviewer,
            model_ref,
            conversation,
            model: options.model,
            max_turns: options.max_turns,
            spending,
            requests: 0,
            children: 0,
            scratchpad,
            runtime,
        })
    }

    /// Adds the person's `text` to the conversation and runs the loop until
    /// the model stops calling tools, `max_turns` requests were sent for
    /// it, or `cancel` is cancelled. A failed request ends the prompt; the
    /// session stays usable.
    pub fn prompt(
        &mut self,
        text: &str,
        show: &mut dyn Show,
        cancel: &CancellationToken,
    ) -> Result<How, RunError> {
        let runtime = self.runtime.handle().clone();
        let ended = runtime.block_on(self.turns(text, show, cancel));
        self.last = match &ended {
            Ok(How::Done) => chock_sessions::How::Done,
            Ok(How::MaxTurns) => chock_sessions::How::MaxTurns,
            Ok(How::Refusal) => chock_sessions::How::Refusal,
            Ok(How::Cancelled) => chock_sessions::How::Cancelled,
            Ok(How::Budget) => chock_sessions::How::Budget,
            Ok(How::UnusableCalls) => chock_sessions::How::UnusableCalls,
            Err(_) => chock_sessions::How::Failed,
        };
        self.say_unlogged(show);
        ended
    }

    /// Writes to the log the spawned agents' runs and the state events the
    /// own tools added since the last time.
    fn log_state(&mut self) {
        for event in self.own.take_ran() {
            self.record.write(&event);
        }
        for event in &self.own.events()[self.logged_state..] {
            self.record.write_state(event);
        }
        self.logged_state = self.own.events().len();
    }

    /// Shows each review the reviewer agent did since the last time (each
    /// written to the log).
    fn say_reviews(&mut self, show: &mut dyn Show) {
        for done in log_reviews(&mut self.record, self.reviewer.as_deref()) {
            show.line(&done.line());
        }
    }

    /// Says once that the log could not be written.
    fn say_unlogged(&mut self, show: &mut dyn Show) {
        if let Some(unsaid) = self.record.unsaid() {
            show.line(&unsaid);
        }
    }

    async fn turns(
        &mut self,
        text: &str,
        show: &mut dyn Show,
        cancel: &CancellationToken,
    ) -> Result<How, RunError> {
        self.record.write(&Event::User(chock_sessions::User {
            text: text.to_owned(),
        }));
        self.own.under_way().set_task(text);
        self.conversation.turns.push(Turn::User(text.to_owned()));
        let mut sent = 0;
        let mut unusable_in_row = 0;
        loop {
            if cancel.is_cancelled() {
                return Ok(How::Cancelled);
            }
            if sent >= self.max_turns {
                return Ok(How::MaxTurns);
            }
            if let Some(why) = self.spending.reached(self.client.used()) {
                show.line(&format!("stopped: {why}"));
                return Ok(How::Budget);
            }
            sent += 1;
            self.requests += 1;
            let request = Request {
                model: &self.model,
                max_tokens: MAX_TOKENS,
                conversation: &self.conversation,
            };
            // A reply cut short is dropped whole: the conversation keeps
            // only whole turns.
            let mut streamed = |piece: &str| show.text(piece);
            let reply = tokio::select! {
                reply = self.client.send(&request, &mut streamed) => reply?,
                () = cancel.cancelled() => return Ok(How::Cancelled),
            };
            if !reply.text.is_empty() && !reply.text.ends_with('\n') {
                show.text("\n");
            }
            let session = self.client.used();
            show.spent(&Spent {
                turn: reply.usage,
                session,
                turn_cost: self.spending.cost(reply.usage),
                session_cost: self.spending.cost(session),
            });
            self.record
                .write(&Event::Turn(record::turn_event(&reply, &self.model_ref)));
            self.conversation.turns.push(reply.turn());
            if reply.tool_calls.is_empty() {
                return Ok(match &reply.stop {
                    StopReason::Other(why) if why == "refusal" || why == "content_filter" => {
                        How::Refusal
                    }
                    _ => How::Done,
                });
            }
            // Every call gets a result, so the next prompt continues a
            // conversation the provider accepts.
            for call in reply.tool_calls {
                let unusable = own_tools::unusable(&call, &self.conversation.tools, &self.tools);
                let outcome = if cancel.is_cancelled() {
                    Err(Failed("not run: the person cancelled the turn".to_owned()))
                } else if let Some(why) = unusable {
                    unusable_in_row += 1;
                    show.call_started(&call);
                    let outcome = Err(Failed(why));
                    show.call_ended(&call, &outcome);
                    outcome
                } else {
                    unusable_in_row = 0;
                    show.call_started(&call);
                    let provider = spawn::Provider {
                        client: &self.client,
                        model: &self.model,
                        model_ref: &self.model_ref,
                        max_turns: self.max_turns,
                        spending: &self.spending,
                    };
                    let mut caller = own_tools::Caller {
                        tools: &self.tools,
                        children: &mut self.children,
                    };
                    let outcome = self
                        .own
                        .call(
                            &mut caller,
                            &provider,
                            show,
                            &call.name,
                            call.arguments.clone(),
                            cancel,
                        )
                        .await;
                    self.say_reviews(show);
                    show.call_ended(&call, &outcome);
                    self.log_state();
                    outcome
                };
                let answer = chock_sessions::Answer::of(&outcome);
                let (content, is_error) = match outcome {
                    Ok(text) => (text, false),
                    Err(Failed(text)) => (text, true),
                };
                self.record
                    .write(&Event::ToolResult(chock_sessions::ToolResult {
                        call_id: call.id.clone(),
                        tool: call.name.clone(),
                        answer,
                        content: content.clone(),
                    }));
                self.conversation.turns.push(Turn::ToolResult {
                    call_id: call.id,
                    content,
                    is_error,
                });
            }
            if let Some(images) = self.own.take_images() {
                self.conversation.turns.push(images);
            }
            self.say_unlogged(show);
            if unusable_in_row >= own_tools::MAX_UNUSABLE_CALLS {
                show.line(&format!(
                    "stopped: the model made {unusable_in_row} calls in a row that could not be run"
                ));
                return Ok(How::UnusableCalls);
            }
        }
    }

    /// Tokens used over the session, by every agent of it.
    pub fn used(&self) -> Usage {
        self.client.used()
    }

    /// What they cost in dollars, when the model has a price.
    pub fn cost(&self) -> Option<f64> {
        self.spending.cost(self.used())
    }

    /// The session's state now (the plan, the promises).
    pub fn state(&self) -> state::State {
        self.own.state()
    }

    /// The events that state is the fold of, in order.
    pub fn events(&self) -> &[state::Event] {
        self.own.events()
    }

    /// The session's id: its log's and its workspace's name.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The conversation so far (a resumed session's, folded from its log).
    pub fn conversation(&self) -> &[Turn] {
        &self.conversation.turns
    }

    /// Ends the session: with `apply`, its work goes through the one
    /// `workspace.apply` question; whatever is not applied is kept. The
    /// scratchpad goes after the background commands that may use it.
    pub fn finish(self, apply: bool) -> Closed {
        let Session {
            tools,
            mut record,
            last,
            scratchpad,
            runtime,
            reviewer,
            ..
        } = self;
        let workspace = runtime.block_on(tools.finish(apply));
        drop(tools);
        // The apply itself may have been reviewed.
        log_reviews(&mut record, reviewer.as_deref());
        record.write(&Event::End(chock_sessions::End {
            how: last,
            said: record::finished_text(&workspace),
        }));
        Closed {
            workspace,
            scratchpad_left: scratchpad.remove().err().map(|e| e.to_string()),
        }
    }
}

/// Writes the reviews `reviewer` did since the last time to the log, as
/// `review` events, and gives them.
fn log_reviews(
    record: &mut record::Record,
    reviewer: Option<&review::Reviewer>,
) -> Vec<review::Done> {
    let done = reviewer
        .map(review::Reviewer::take_done)
        .unwrap_or_default();
    for one in &done {
        // The kind and the fields are this crate's, never the reserved ones.
        if let Ok(event) = Event::custom(review::REVIEW_EVENT, one) {
            record.write(&event);
        }
    }
    done
}

/// The instance and model decided (`model.select`), and the client for them.
fn choose(
    options: &RunOptions,
    project: String,
    policy: &chock_policy::Policy,
    log: &chock_log::Log,
) -> Result<(Client, chock_sessions::ModelRef, spending::Spending), RunError> {
    let instance = match &options.provider {
        Some(name) => name.clone(),
        None => match policy.config().providers() {
            [only] => only.name.clone(),
            none_or_many => {
                let names: Vec<_> = none_or_many.iter().map(|p| p.name.as_str()).collect();
                let file = policy.config().operator_file().map_or_else(
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
    let rate = chock_sessions::prices::Prices::new(policy.config().prices())
        .rate(configured.kind.as_str(), &options.model);
    let spending = spending::Spending::new(
        options.budget,
        rate,
        &options.model,
        configured.kind.as_str(),
    )
    .map_err(RunError::Budget)?;
    let credentials = Credentials::from_env().map_err(RunError::Setup)?;
    let key = chock_provider::key_for(policy, configured, &credentials).map_err(RunError::Setup)?;
    let client = Client::new(configured, key, options.settings).map_err(RunError::Setup)?;
    let model = chock_sessions::ModelRef {
        instance: configured.name.clone(),
        kind: configured.kind.as_str().to_owned(),
        model: options.model.clone(),
    };
    Ok((client, model, spending))
}

/// One line for a tool call: the tool, its arguments cut short, and how
/// it was answered (the first line of a refusal or an error).
fn call_line(
    name: &str,
    arguments: &serde_json::Value,
    outcome: &Result<String, Failed>,
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
        Err(Failed(why)) => why.lines().next().unwrap_or_default().to_owned(),
    };
    format!("tool {name} {args}: {answer}")
}
