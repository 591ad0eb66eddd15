//! The loop's own tools, offered to the model beside the tool server's,
//! and the one place every call of the session is dispatched.
//!
//! | tool | decided at | what it does |
//! |---|---|---|
//! | `update_plan` | the loop (no row) | replaces the plan, shown to the person |
//! | `ask_user` | the loop (no row) | puts a yes-or-no question (or, with `text`, one asking for a line of words) to the person by the path every ask takes |
//! | `read_guidance` | `call.read_guidance` | reads AGENTS.md, CLAUDE.md and the like |
//! | `read_memory` | `call.read_memory` | reads the project's notes |
//! | `write_memory` | `call.write_memory` | replaces (or appends to) them |
//! | `restrict_self` | the loop (no row: it only narrows) | makes a promise |
//! | `policy_widen` | `policy.widen` (unnamed: ask) | replaces one promise with a wider one |
//! | `spawn_agent` | the loop: declared kinds, `.subagents` | runs a child agent on a task ([`crate::spawn`]) |
//! | `read_image` | `call.read_image` | reads a PNG, JPEG, GIF or WebP of the workspace for the model to see |
//! | `set_title` | the loop (no row: it only names the session) | names the session, shown and logged |
//! | `request_action` | the loop (no row: it does nothing itself) | asks the person to do an act only they can, shown and logged |
//!
//! A spawned agent is offered the same tools but `update_plan`,
//! `restrict_self`, `policy_widen` and `set_title`, which are the main
//! agent's: the plan, the promises and the title are the session's.
//!
//! A decided call is logged as the tool server's calls are (its tool, its
//! action, who answered); the loop's own answers are events of the
//! session's state ([`crate::state::Event`]). Every later call, of any
//! tool, is held under the promises ([`Bound`]).

use std::sync::{Arc, Mutex, PoisonError};

use chock_mcp::Failed;
use chock_mcp::local::InProcess;
use chock_policy::{Decision, Question};
use chock_provider::ToolDef;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::memory::{MEMORY_BYTES, Memory, MemoryError};
use crate::plan::Plan;
use crate::ratchet::{Change, Promise, PromiseError};
use crate::spawn::Provider;
use crate::state::{Event, State};
use crate::{CancellationToken, Show};

pub const UPDATE_PLAN: &str = "update_plan";
pub const ASK_USER: &str = "ask_user";
pub const READ_GUIDANCE: &str = "read_guidance";
pub const READ_MEMORY: &str = "read_memory";
pub const WRITE_MEMORY: &str = "write_memory";
pub const RESTRICT_SELF: &str = "restrict_self";
pub const POLICY_WIDEN: &str = "policy_widen";
pub const SPAWN_AGENT: &str = "spawn_agent";
pub const READ_IMAGE: &str = "read_image";
/// The most bytes of an image `read_image` sends (the APIs take 5 MB).
pub const IMAGE_BYTES: u64 = 5 * 1000 * 1000;
pub const SET_TITLE: &str = "set_title";
pub const REQUEST_ACTION: &str = "request_action";
/// The own tools only the main agent is offered.
const MAIN_ONLY: [&str; 4] = [UPDATE_PLAN, RESTRICT_SELF, POLICY_WIDEN, SET_TITLE];
/// The most bytes of a session's title.
pub const TITLE_BYTES: usize = 120;
/// The most bytes of an act `request_action` asks for, and of its reason.
pub const REQUEST_BYTES: usize = 2000;
/// The kinds of the session events `set_title` and `request_action` write.
pub const TITLE_EVENT: &str = chock_sessions::TITLE_EVENT;
pub const REQUEST_EVENT: &str = "request_action";
/// The action `policy_widen` is decided at.
pub const WIDEN_ACTION: &str = "policy.widen";
/// The most bytes of an `ask_user` question.
pub const QUESTION_BYTES: usize = 2000;
/// The most bytes of a person's answer in words the agent reads.
pub const ANSWER_BYTES: usize = 2000;

/// The loop's own tools, as the model is told of them.
pub fn definitions() -> Vec<ToolDef> {
    let promise = |what: &str| {
        json!({"type": "object", "properties": {
            "action": {"type": "string", "description": format!("{what} An action name (`git.push`) or a class (`net.fetch.*`), at most 64 bytes.")},
            "ceiling": {"type": "string", "enum": ["deny", "agent_then_human", "ask", "agent_review", "allow"]},
            "reason": {"type": "string", "description": "Why, at most 500 bytes."}
        }, "required": ["action", "ceiling", "reason"], "additionalProperties": false})
    };
    let def = |name: &str, description: &str, input_schema: Value| ToolDef {
        name: name.into(),
        description: description.into(),
        input_schema,
    };
    vec![
        def(
            UPDATE_PLAN,
            "Replace your task list, shown to the person: every step, each pending, in_progress (at most one) or completed. Keep it current as you work.",
            json!({"type": "object", "properties": {
                "steps": {"type": "array", "maxItems": crate::plan::MAX_STEPS, "items": {"type": "object", "properties": {
                    "step": {"type": "string"},
                    "status": {"type": "string", "enum": ["pending", "in_progress", "completed"]}
                }, "required": ["step", "status"], "additionalProperties": false}}
            }, "required": ["steps"], "additionalProperties": false}),
        ),
        def(
            ASK_USER,
            "Ask the person a question they answer yes or no, or with `text` in a line of words (at their terminal, or in `chock approve`). When nobody can be asked, the answer says so at once: decide yourself, or finish and say what you need.",
            json!({"type": "object", "properties": {
                "question": {"type": "string", "description": "One question, answerable yes or no (or, with `text`, in one line)."},
                "text": {"type": "boolean", "description": "Ask for an answer in words (one line, at most 2000 bytes) instead of yes or no."}
            }, "required": ["question"], "additionalProperties": false}),
        ),
        def(
            READ_GUIDANCE,
            "Read the instructions the project keeps for coding agents (AGENTS.md, CLAUDE.md, GEMINI.md, .github/copilot-instructions.md and the like) at the workspace's root and in each folder down to `path`. Read them before you start.",
            json!({"type": "object", "properties": {
                "path": {"type": "string", "description": "A folder of the workspace whose guidance is wanted too (default: the root only)."}
            }, "additionalProperties": false}),
        ),
        def(
            READ_MEMORY,
            "Read the notes agents kept about this project in earlier sessions.",
            json!({"type": "object", "properties": {}, "additionalProperties": false}),
        ),
        def(
            WRITE_MEMORY,
            "Replace the notes kept about this project for later sessions (or add to them with `append`): what you learned that is not in the code. At most 64 KiB in all.",
            json!({"type": "object", "properties": {
                "content": {"type": "string"},
                "append": {"type": "boolean", "description": "Add `content` at the end instead of replacing the notes."}
            }, "required": ["content"], "additionalProperties": false}),
        ),
        def(
            RESTRICT_SELF,
            "Promise a ceiling on your own later calls: every act whose action `action` covers is answered at most `ceiling` for the rest of the session, whatever the policy says. A promise can only narrow (at most 32); to loosen one, call policy_widen.",
            promise("The actions the promise binds."),
        ),
        def(
            POLICY_WIDEN,
            "Ask to replace one of your promises with a wider ceiling. `action` names the promise exactly as it was made. It is decided at policy.widen: a person is asked unless a rule answers.",
            promise("The promise's action, exactly as made."),
        ),
        def(
            READ_IMAGE,
            "Look at an image of the workspace (PNG, JPEG, GIF or WebP, at most 5 MB): a screenshot, a diagram, a rendered page. It is shown to you after the call's result.",
            json!({"type": "object", "properties": {
                "path": {"type": "string", "description": "The image's path in the workspace."}
            }, "required": ["path"], "additionalProperties": false}),
        ),
        def(
            SET_TITLE,
            "Name this session in a few words (one line, at most 120 bytes), shown to the person and in `chock sessions`. Call it once you know what the task is; call again if it changes.",
            json!({"type": "object", "properties": {
                "title": {"type": "string"}
            }, "required": ["title"], "additionalProperties": false}),
        ),
        def(
            REQUEST_ACTION,
            "Ask the person to do something only they can (log in somewhere, plug in a device, approve a payment, run a command on their own machine): it is shown to them and logged, and you are not told when or whether it is done. Go on with what you can, or finish and say what you wait for.",
            json!({"type": "object", "properties": {
                "action": {"type": "string", "description": "What the person should do, at most 2000 bytes."},
                "why": {"type": "string", "description": "Why it is needed, at most 2000 bytes."}
            }, "required": ["action"], "additionalProperties": false}),
        ),
        def(
            SPAWN_AGENT,
            "Hand one task to a new agent of a kind chock.zon declares (its .policy.agents, whose parent is your kind) and wait for its final answer. It works in the same workspace with the same tools, never allowed more than you.",
            json!({"type": "object", "properties": {
                "kind": {"type": "string", "description": "The agent kind, as chock.zon declares it."},
                "task": {"type": "string", "description": "The whole task: the agent sees nothing of your conversation."}
            }, "required": ["kind", "task"], "additionalProperties": false}),
        ),
    ]
}

/// Every tool offered to an agent of the session `tools`: the loop's own
/// (for a spawned agent, without the main agent's), then the tool server's.
pub async fn offered(tools: &InProcess, spawned: bool) -> Vec<ToolDef> {
    let mut offered: Vec<ToolDef> = definitions()
        .into_iter()
        .filter(|d| !spawned || !MAIN_ONLY.contains(&d.name.as_str()))
        .collect();
    offered.extend(tools.tools().await.into_iter().map(|t| ToolDef {
        name: t.name,
        description: t.description,
        input_schema: t.input_schema,
    }));
    offered
}

/// The most calls in a row the model may make that cannot be run (no
/// such tool, or arguments that are no JSON object) before its prompt is
/// stopped: each is answered with an error it can correct, and a model
/// that keeps failing is stuck.
pub const MAX_UNUSABLE_CALLS: u32 = 5;

/// Why `call` cannot be run at all, as the model reads it: its arguments
/// are no JSON object, or it names no tool of `offered` (the whole list,
/// the loop's own among them, is named). `None` for a call the gate and
/// the tools answer, a withheld tool's among them (refused there).
pub fn unusable(
    call: &chock_provider::ToolCall,
    offered: &[ToolDef],
    tools: &InProcess,
) -> Option<String> {
    let known = offered.iter().any(|d| d.name == call.name)
        || definitions().iter().any(|d| d.name == call.name)
        || tools.withheld_refusal(&call.name).is_some();
    if !known {
        let names: Vec<&str> = offered.iter().map(|d| d.name.as_str()).collect();
        return Some(format!(
            "there is no tool named `{}`; the tools offered are {}. Call one of them by its exact name",
            call.name,
            names.join(", ")
        ));
    }
    call.malformed.as_ref().map(|why| {
        format!(
            "{why}; the call was not run. Call `{}` again with its arguments as one JSON object, as its schema says",
            call.name
        )
    })
}

/// The agent a call comes from: its session of the tool server and how
/// many agents it has spawned so far.
pub struct Caller<'a> {
    pub tools: &'a InProcess,
    pub children: &'a mut u32,
}

/// One decision the gate logged for a call, as a [`Show`] is told of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decided {
    pub tool: String,
    pub action: String,
    pub decision: Decision,
    pub answered_by: chock_log::AnsweredBy,
}

/// The decisions logged since they were last taken, in order.
#[derive(Default)]
pub(crate) struct Decisions(Mutex<Vec<Decided>>);

impl chock_mcp::Decided for Decisions {
    fn decided(
        &self,
        tool: &str,
        action: &str,
        decision: Decision,
        answered_by: chock_log::AnsweredBy,
    ) {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(Decided {
                tool: tool.to_owned(),
                action: action.to_owned(),
                decision,
                answered_by,
            });
    }
}

impl Decisions {
    fn take(&self) -> Vec<Decided> {
        std::mem::take(&mut *self.0.lock().unwrap_or_else(PoisonError::into_inner))
    }
}

/// Why one of the loop's own tools did not do what it was asked. Each kind
/// is one the model acts on differently, as with the tool server's tools;
/// the words are the sentence it reads, made text where the result is
/// written ([`InProcess::answer`]).
#[derive(Debug, thiserror::Error)]
pub enum OwnToolError {
    /// The gate refused the act.
    #[error(transparent)]
    Gate(#[from] chock_mcp::Refusal),
    /// A promise, or a bound of chock.zon's, refuses it; the sentence
    /// names what would allow it.
    #[error("{0}")]
    Refused(String),
    /// The arguments do not fit the tool's schema; `takes` lists its fields.
    #[error("{tool}: the arguments cannot be read: {why}; it takes {takes}")]
    Unreadable {
        tool: String,
        why: serde_json::Error,
        takes: String,
    },
    /// An argument the tool cannot act on; the sentence names it and says
    /// what would do.
    #[error("{0}")]
    Argument(String),
    /// A promise's arguments cannot be read, or there is no room for it.
    #[error(transparent)]
    Promise(#[from] PromiseError),
    /// A tool of the main agent's, called by a spawned agent.
    #[error(
        "{0} is the main agent's: the plan and the promises are the session's, and a spawned agent is not offered it"
    )]
    MainOnly(String),
    /// What the call names is not there: a file, a tool.
    #[error("{0}")]
    NotFound(String),
    /// The project's notes cannot be kept (there is no place for them).
    #[error(transparent)]
    NoMemory(Arc<MemoryError>),
    /// The notes could not be read or written.
    #[error(transparent)]
    Memory(#[from] MemoryError),
    /// A file of the workspace could not be read.
    #[error(transparent)]
    File(#[from] chock_mcp::FileError),
    /// Nobody answered the agent's question: why.
    #[error("nobody answered: {0}; decide yourself, or finish and say what you need")]
    Unanswered(String),
    /// There was nobody to put the agent's question to.
    #[error(
        "nobody can be asked: there is no terminal to ask at and no `chock approve` is running; decide yourself, or finish and say what you need"
    )]
    Nobody,
    /// A spawned agent ended without an answer: why, as its parent reads it.
    #[error(transparent)]
    Spawned(#[from] Failed),
}

/// The loop's own tools and the session's state.
pub struct OwnTools {
    state: Arc<Mutex<State>>,
    events: Vec<Event>,
    memory: Result<Memory, Arc<MemoryError>>,
    /// Log events of the own tools not yet taken for the log (spawned
    /// agents' runs, titles, requests).
    ran: Vec<chock_sessions::Event>,
    /// The calls under way and the task, as a reviewer agent is told of them.
    under_way: Arc<crate::review::UnderWay>,
    /// The decisions the gate logged, shown after the call that made them.
    decisions: Arc<Decisions>,
    /// Images read since they were last taken, for the model to see.
    images: Vec<chock_provider::Image>,
}

/// The promises as the session's gate reads them: a further term of every
/// later call's minimum.
struct Bound(Arc<Mutex<State>>);

impl chock_mcp::Ceiling for Bound {
    fn ceiling(&self, action: &str) -> Option<(Decision, String)> {
        let state = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        state
            .promises
            .ceiling(action)
            .map(|p| (p.ceiling, p.shown()))
    }
}

/// The session's state folded from the events of the session resumed,
/// before its tool server starts.
pub struct Folded {
    state: Arc<Mutex<State>>,
    events: Vec<Event>,
}

impl Folded {
    /// Folds `earlier`, the state events of the session resumed (none for a
    /// new one).
    pub fn new(earlier: Vec<Event>) -> Folded {
        Folded {
            state: Arc::new(Mutex::new(State::fold(&earlier))),
            events: earlier,
        }
    }

    /// How many state events the session's log holds already.
    pub fn logged(&self) -> usize {
        self.events.len()
    }

    /// The promises, now and as later made, as a ceiling to bind to the
    /// session's policy ([`chock_policy::Policy::bound_by`]) before it
    /// decides anything, `model.select` first: every decision made for the
    /// session is then held under them.
    pub fn ceiling(&self) -> Arc<dyn chock_mcp::Ceiling> {
        Arc::new(Bound(self.state.clone()))
    }
}

impl OwnTools {
    /// The own tools of the session `tools`, from its state `folded`
    /// (whose [`Folded::ceiling`] the session's policy is bound by).
    pub fn new(
        tools: &InProcess,
        folded: Folded,
    ) -> Result<OwnTools, chock_mcp::local::AlreadySet> {
        let decisions = Arc::new(Decisions::default());
        tools.observed_by(decisions.clone())?;
        Ok(OwnTools {
            state: folded.state,
            events: folded.events,
            memory: Memory::of(tools.project()).map_err(Arc::new),
            ran: Vec::new(),
            under_way: Arc::default(),
            decisions,
            images: Vec::new(),
        })
    }

    /// The state as it is shared (a reviewer agent reads the plan).
    pub(crate) fn shared_state(&self) -> Arc<Mutex<State>> {
        self.state.clone()
    }

    /// The calls under way and the task, shared with a reviewer agent.
    pub(crate) fn under_way(&self) -> Arc<crate::review::UnderWay> {
        self.under_way.clone()
    }

    /// The state now.
    pub fn state(&self) -> State {
        self.state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Every event so far, in order; [`State::fold`] of them is [`OwnTools::state`].
    pub fn events(&self) -> &[Event] {
        &self.events
    }

    /// The images `read_image` read since the last time, as the turn that
    /// shows them to the model (after the results of the reply that read
    /// them), if any.
    pub fn take_images(&mut self) -> Option<chock_provider::Turn> {
        let images = std::mem::take(&mut self.images);
        (!images.is_empty()).then_some(chock_provider::Turn::Images(images))
    }

    /// The log events of the own tools (spawned agents' runs, titles,
    /// requests) since the last time.
    pub fn take_ran(&mut self) -> Vec<chock_sessions::Event> {
        std::mem::take(&mut self.ran)
    }

    fn record(&mut self, event: Event) {
        self.state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .apply(&event);
        self.events.push(event);
    }

    /// One call, by name: the loop's own tools here, every other to the
    /// tool server (its own tools and the gateway's). `Ok` is what the
    /// model reads, `Err` a refusal or an error; either way with the
    /// session's secrets scrubbed, as every tool's answer is.
    pub async fn call(
        &mut self,
        caller: &mut Caller<'_>,
        provider: &Provider<'_>,
        show: &mut dyn Show,
        name: &str,
        arguments: Value,
        cancel: &CancellationToken,
    ) -> Result<String, Failed> {
        let _under_way = self.under_way.began(name, &arguments);
        let outcome = self
            .dispatch(caller, provider, show, name, arguments, cancel)
            .await;
        // A spawned agent's calls took theirs; what is left is this call's
        // (and a background command's, decided meanwhile).
        for decided in self.decisions.take() {
            show.decided(&decided);
        }
        outcome
    }

    async fn dispatch(
        &mut self,
        caller: &mut Caller<'_>,
        provider: &Provider<'_>,
        show: &mut dyn Show,
        name: &str,
        arguments: Value,
        cancel: &CancellationToken,
    ) -> Result<String, Failed> {
        let tools = caller.tools;
        if !definitions().iter().any(|d| d.name == name) {
            return tools.call(name, arguments, cancel).await;
        }
        let outcome = if tools.chain().len() > 1 && MAIN_ONLY.contains(&name) {
            Err(OwnToolError::MainOnly(name.to_owned()))
        } else {
            self.own(caller, provider, show, name, arguments, cancel)
                .await
        };
        tools.answer(outcome)
    }

    async fn own(
        &mut self,
        caller: &mut Caller<'_>,
        provider: &Provider<'_>,
        show: &mut dyn Show,
        name: &str,
        arguments: Value,
        cancel: &CancellationToken,
    ) -> Result<String, OwnToolError> {
        let tools = caller.tools;
        match name {
            UPDATE_PLAN => {
                let plan = Plan::from_arguments(arguments)?;
                show.plan(&plan);
                let said = plan.summary();
                self.record(Event::Plan { plan });
                Ok(said)
            }
            ASK_USER => ask_user(tools, arguments).await,
            READ_GUIDANCE => {
                #[derive(Deserialize)]
                #[serde(deny_unknown_fields)]
                struct Args {
                    path: Option<String>,
                }
                let args: Args = parse(name, arguments)?;
                let folder = args.path.clone().unwrap_or_else(|| ".".into());
                tools
                    .decide(name, "call.read_guidance", Some(folder), Vec::new())
                    .await?;
                crate::guidance::read(tools, args.path.as_deref())
            }
            READ_MEMORY => {
                let _: Empty = parse(name, arguments)?;
                let memory = self
                    .memory
                    .as_ref()
                    .map_err(|e| OwnToolError::NoMemory(e.clone()))?;
                let file = memory.file().display().to_string();
                tools
                    .decide(name, "call.read_memory", Some(file), Vec::new())
                    .await?;
                Ok(memory
                    .read()?
                    .unwrap_or_else(|| "no notes are kept about this project yet".into()))
            }
            WRITE_MEMORY => {
                #[derive(Deserialize)]
                #[serde(deny_unknown_fields)]
                struct Args {
                    content: String,
                    append: Option<bool>,
                }
                let args: Args = parse(name, arguments)?;
                let memory = self
                    .memory
                    .as_ref()
                    .map_err(|e| OwnToolError::NoMemory(e.clone()))?;
                let file = memory.file().display().to_string();
                tools
                    .decide(
                        name,
                        "call.write_memory",
                        Some(file.clone()),
                        vec![format!("{} bytes of notes", args.content.len())],
                    )
                    .await?;
                let text = if args.append == Some(true) {
                    let mut text = memory.read()?.unwrap_or_default();
                    if !text.is_empty() && !text.ends_with('\n') {
                        text.push('\n');
                    }
                    text.push_str(&args.content);
                    text
                } else {
                    args.content
                };
                memory.write(&text)?;
                Ok(format!(
                    "the notes hold {} bytes (of {MEMORY_BYTES}); later sessions read them with read_memory",
                    text.len()
                ))
            }
            READ_IMAGE => {
                #[derive(Deserialize)]
                #[serde(deny_unknown_fields)]
                struct Args {
                    path: String,
                }
                let args: Args = parse(name, arguments)?;
                tools
                    .decide(name, "call.read_image", Some(args.path.clone()), Vec::new())
                    .await?;
                let bytes = tools.read_bytes(&args.path, IMAGE_BYTES)?.ok_or_else(|| {
                    OwnToolError::NotFound(format!("{READ_IMAGE}: there is no file {}", args.path))
                })?;
                let media_type = image_type(&bytes).ok_or_else(|| {
                    OwnToolError::Argument(format!(
                        "{READ_IMAGE}: {} is not a PNG, JPEG, GIF or WebP image (read by its first bytes, whatever its name)",
                        args.path
                    ))
                })?;
                use base64::Engine as _;
                self.images.push(chock_provider::Image {
                    media_type: media_type.to_owned(),
                    base64: base64::engine::general_purpose::STANDARD.encode(&bytes),
                });
                Ok(format!(
                    "{}: {media_type}, {} bytes; it is shown to you after this result",
                    args.path,
                    bytes.len()
                ))
            }
            SET_TITLE => {
                #[derive(Deserialize)]
                #[serde(deny_unknown_fields)]
                struct Args {
                    title: String,
                }
                let args: Args = parse(name, arguments)?;
                let title = one_line(&args.title);
                if title.is_empty() || title.len() > TITLE_BYTES {
                    return Err(OwnToolError::Argument(format!(
                        "{SET_TITLE}: `title` must say something in at most {TITLE_BYTES} bytes"
                    )));
                }
                show.title(&title);
                self.log(show, TITLE_EVENT, &json!({"title": title}));
                Ok(format!("the session is titled: {title}"))
            }
            REQUEST_ACTION => {
                #[derive(Deserialize)]
                #[serde(deny_unknown_fields)]
                struct Args {
                    action: String,
                    why: Option<String>,
                }
                let args: Args = parse(name, arguments)?;
                let action = one_line(&args.action);
                let why = args.why.as_deref().map(one_line).filter(|w| !w.is_empty());
                if action.is_empty()
                    || action.len() > REQUEST_BYTES
                    || why.as_ref().is_some_and(|w| w.len() > REQUEST_BYTES)
                {
                    return Err(OwnToolError::Argument(format!(
                        "{REQUEST_ACTION}: `action` must say what to do, and it and `why` at most {REQUEST_BYTES} bytes each"
                    )));
                }
                let agent = tools
                    .chain()
                    .last()
                    .copied()
                    .unwrap_or(chock_mcp::AGENT_KIND)
                    .to_owned();
                show.requested(&agent, &action, why.as_deref());
                self.log(
                    show,
                    REQUEST_EVENT,
                    &json!({"agent": agent, "action": action, "why": why}),
                );
                Ok(
                    "shown to the person and logged; you are not told when or whether it is done"
                        .into(),
                )
            }
            RESTRICT_SELF => self.restrict(Promise::from_arguments(name, arguments)?),
            POLICY_WIDEN => {
                let wanted = Promise::from_arguments(name, arguments)?;
                self.widen(tools, wanted).await
            }
            SPAWN_AGENT => {
                let args: crate::spawn::Args = parse(name, arguments)?;
                if args.task.trim().is_empty() {
                    return Err(OwnToolError::Argument(format!(
                        "{SPAWN_AGENT}: `task` must say the whole task; the agent sees nothing else"
                    )));
                }
                crate::spawn::allowed(tools, *caller.children, &args.kind)?;
                crate::spawn::model_allowed(tools, provider, &args.kind)?;
                *caller.children += 1;
                let ran = crate::spawn::run(self, tools, provider, show, args, cancel).await;
                let answer = ran.answer.clone();
                match chock_sessions::Event::custom(crate::spawn::AGENT_EVENT, &ran) {
                    Ok(event) => self.ran.push(event),
                    Err(e) => {
                        show.line(&format!("the spawned agent's run could not be logged: {e}"))
                    }
                }
                answer.map_err(OwnToolError::from)
            }
            other => Err(OwnToolError::NotFound(format!(
                "there is no tool named `{other}` among the loop's own"
            ))),
        }
    }

    /// Keeps one event of `kind` for the session log.
    fn log(&mut self, show: &mut dyn Show, kind: &str, fields: &Value) {
        match chock_sessions::Event::custom(kind, fields) {
            Ok(event) => self.ran.push(event),
            Err(e) => show.line(&format!("the {kind} could not be logged: {e}")),
        }
    }

    fn restrict(&mut self, promise: Promise) -> Result<String, OwnToolError> {
        match self.state().promises.room_for(&promise)? {
            Change::NoChange => Ok(format!(
                "no change: `{}` is already held at most {}",
                promise.action, promise.ceiling
            )),
            Change::Widens(current) => Err(OwnToolError::Refused(format!(
                "refused: your promises already hold `{}` at most {current}, and a restriction only narrows. To loosen a promise, call {POLICY_WIDEN} naming it exactly; a person is asked.",
                promise.action
            ))),
            Change::Narrows => {
                let said = format!(
                    "promised: every later act under `{}` is answered at most {} for the rest of this session",
                    promise.action, promise.ceiling
                );
                self.record(Event::Promised { promise });
                Ok(said)
            }
        }
    }

    async fn widen(&mut self, tools: &InProcess, wanted: Promise) -> Result<String, OwnToolError> {
        let held = self.state().promises;
        let Some(current) = held.on(&wanted.action).cloned() else {
            let made: Vec<String> = held
                .held()
                .iter()
                .map(|p| format!("`{}`", p.action))
                .collect();
            return Err(OwnToolError::Argument(format!(
                "{POLICY_WIDEN}: no promise was made on exactly `{}`; the promises are {}",
                wanted.action,
                if made.is_empty() {
                    "none".into()
                } else {
                    made.join(", ")
                }
            )));
        };
        if wanted.ceiling <= current.ceiling {
            return Err(OwnToolError::Argument(format!(
                "{POLICY_WIDEN}: `{}` is held at most {}, and {} is not wider; to narrow it, call {RESTRICT_SELF}",
                wanted.action, current.ceiling, wanted.ceiling
            )));
        }
        tools
            .decide(
                POLICY_WIDEN,
                WIDEN_ACTION,
                Some(wanted.action.to_string()),
                vec![
                    format!("the agent promised: {}", current.shown()),
                    format!(
                        "it asks to raise it to {}, because: {}",
                        wanted.ceiling, wanted.reason
                    ),
                ],
            )
            .await?;
        let action = wanted.action.clone();
        self.record(Event::Widened {
            promise: wanted,
            authorised: true,
        });
        let now = self.state().promises.ceiling_over(&action);
        Ok(format!(
            "widened: the promise on `{action}` is replaced; that pattern is now held at most {now} by your promises"
        ))
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Empty {}

fn parse<T: serde::de::DeserializeOwned>(tool: &str, arguments: Value) -> Result<T, OwnToolError> {
    let takes = definitions()
        .into_iter()
        .find(|d| d.name == tool)
        .and_then(|d| {
            d.input_schema["properties"]
                .as_object()
                .map(|p| p.keys().cloned().collect::<Vec<_>>().join(", "))
        })
        .unwrap_or_default();
    serde_json::from_value(arguments).map_err(|why| OwnToolError::Unreadable {
        tool: tool.to_owned(),
        why,
        takes,
    })
}

/// `ask_user`: the question goes where every ask goes; nobody there is
/// said at once, never waited for. With `text`, the answer is one line of
/// words, cleaned ([`cleaned_answer`]).
async fn ask_user(tools: &InProcess, arguments: Value) -> Result<String, OwnToolError> {
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Args {
        question: String,
        #[serde(default)]
        text: bool,
    }
    let args: Args = parse(ASK_USER, arguments)?;
    let question = args.question.trim();
    if question.is_empty() || question.len() > QUESTION_BYTES {
        return Err(OwnToolError::Argument(format!(
            "{ASK_USER}: `question` must be given, at most {QUESTION_BYTES} bytes"
        )));
    }
    if args.text {
        let asked = Question {
            action: ASK_USER.into(),
            decision: Decision::Ask,
            summary: format!("the agent asks: {question}"),
            detail: vec!["answer in one line; the agent reads the answer".into()],
            rules: Vec::new(),
        };
        return match tools.ask_text(ASK_USER, asked).await {
            Ok(raw) => match cleaned_answer(&raw) {
                answer if answer.is_empty() => {
                    Ok("the person gave no answer (an empty line)".into())
                }
                answer => Ok(format!("the person answered: {answer}")),
            },
            Err(why) => Err(OwnToolError::Unanswered(why.to_string())),
        };
    }
    let asked = Question {
        action: ASK_USER.into(),
        decision: Decision::Ask,
        summary: format!("the agent asks: {question}"),
        detail: vec!["answer yes or no; the agent reads the answer".into()],
        rules: Vec::new(),
    };
    use chock_mcp::Reply;
    match tools.ask(ASK_USER, asked).await {
        Some(Reply::Yes | Reply::YesFor(_)) => Ok("the person answered yes".into()),
        Some(Reply::No) => Ok("the person answered no".into()),
        Some(Reply::NoBecause(reason)) => Ok(format!("the person answered no, because: {reason}")),
        Some(Reply::Cancelled) => Err(OwnToolError::Unanswered(
            "the question was dismissed without an answer".into(),
        )),
        Some(Reply::Unanswered(why)) => Err(OwnToolError::Unanswered(why)),
        None => Err(OwnToolError::Nobody),
    }
}

/// A person's answer in words as the agent reads it (and the session log
/// keeps it): every control character (line ends, escapes) taken out,
/// trimmed, and cut to [`ANSWER_BYTES`] on a character's boundary.
/// The media type of an image by its first bytes, when it is one the
/// APIs take.
fn image_type(bytes: &[u8]) -> Option<&'static str> {
    match bytes {
        [0x89, b'P', b'N', b'G', b'\r', b'\n', 0x1a, b'\n', ..] => Some("image/png"),
        [0xff, 0xd8, 0xff, ..] => Some("image/jpeg"),
        [b'G', b'I', b'F', b'8', b'7' | b'9', b'a', ..] => Some("image/gif"),
        [
            b'R',
            b'I',
            b'F',
            b'F',
            _,
            _,
            _,
            _,
            b'W',
            b'E',
            b'B',
            b'P',
            ..,
        ] => Some("image/webp"),
        _ => None,
    }
}

/// `text` as one line a person reads: no control characters (a newline
/// or a tab is a space), trimmed.
fn one_line(text: &str) -> String {
    let spaced: String = text
        .chars()
        .map(|c| if c.is_whitespace() { ' ' } else { c })
        .collect();
    chock_policy::visible(spaced.trim()).trim().to_owned()
}

fn cleaned_answer(raw: &str) -> String {
    let clean: String = raw.chars().filter(|c| !c.is_control()).collect();
    let clean = clean.trim();
    let cut = (0..=clean.len().min(ANSWER_BYTES))
        .rev()
        .find(|i| clean.is_char_boundary(*i))
        .unwrap_or(0);
    clean[..cut].trim_end().to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_image_is_known_by_its_first_bytes_never_its_name() {
        let webp = b"RIFF\x10\0\0\0WEBPVP8 ";
        assert_eq!(image_type(b"\x89PNG\r\n\x1a\n\0\0"), Some("image/png"));
        assert_eq!(image_type(b"\xff\xd8\xff\xe0"), Some("image/jpeg"));
        assert_eq!(image_type(b"GIF89a.."), Some("image/gif"));
        assert_eq!(image_type(b"GIF87a.."), Some("image/gif"));
        assert_eq!(image_type(webp), Some("image/webp"));
        for none in [
            &b""[..],
            b"\x89PNG",
            b"GIF88a..",
            b"RIFF\x10\0\0\0WAVEfmt ",
            b"<svg/>",
        ] {
            assert_eq!(image_type(none), None, "{none:?}");
        }
    }

    #[test]
    fn a_title_or_a_request_is_one_line_with_nothing_hidden() {
        assert_eq!(
            one_line("  fix\nthe\ttests \u{1b}[2J "),
            one_line("fix the tests \u{1b}[2J")
        );
        assert!(!one_line("a\u{1b}[2Jb").contains('\u{1b}'));
        assert!(!one_line("a\u{202e}b").contains('\u{202e}'));
    }

    #[test]
    fn an_answer_in_words_loses_control_characters_and_is_bounded() {
        assert_eq!(
            cleaned_answer("  call it \u{1b}[31mred\u{7}\tnow\r\n"),
            "call it [31mrednow"
        );
        let long = "é".repeat(ANSWER_BYTES);
        let cut = cleaned_answer(&long);
        assert!(cut.len() <= ANSWER_BYTES && cut.len() > ANSWER_BYTES - 2);
        assert!(cut.chars().all(|c| c == 'é'));
        assert_eq!(cleaned_answer("\n\r "), "");
    }
}
