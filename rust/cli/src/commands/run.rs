//! `chock run`: Chock's own agent session in the current project. The
//! session is chock-agent's; this module turns flags into its options and
//! draws it as plain lines: the model's text streamed to stdout, each tool
//! call and its decision as one line on stderr.

use std::io::{IsTerminal, Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use chock_agent::spending::dollars;
use chock_agent::{How, Resume, RunError, RunOptions, Show};
use chock_mcp::local::Finished;

use crate::ask::TerminalAsker;
use crate::exit;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The project directory (default: the nearest directory up from here with chock.zon, flake.nix or .git).
    #[arg(long, value_name = "DIR")]
    pub project: Option<PathBuf>,
    #[command(flatten)]
    pub session: SessionArgs,
    /// Go on with the newest session of this project: its conversation, its kept workspace, its log.
    #[arg(long = "continue", conflicts_with = "session_id")]
    pub resume: bool,
    /// Go on with the session ID (`chock sessions` lists them).
    #[arg(long = "session", value_name = "ID")]
    pub session_id: Option<String>,
    /// Show the tokens and cost so far after each reply (default: when stderr is a terminal); `--print-cost=false` never.
    #[arg(long, value_name = "BOOL", num_args = 0..=1, default_missing_value = "true")]
    pub print_cost: Option<bool>,
    /// Write every event of the session to stdout as one JSON object a line (schema: docs/run-events.schema.json) instead of the model's text.
    #[arg(long)]
    pub json: bool,
    /// The task (default: read from stdin).
    #[arg(last = true, value_name = "TASK")]
    pub task: Vec<String>,
}

// How a session is run, for `chock run` and `chock acp` alike (flattened;
// a doc comment here would become their about).
#[derive(Debug, clap::Args)]
pub struct SessionArgs {
    /// The provider instance of config.zon (default: the only one there).
    #[arg(long, value_name = "INSTANCE", env = "CHOCK_PROVIDER")]
    pub provider: Option<String>,
    /// The model id, as the provider names it (decided by model.select before anything else).
    #[arg(long, value_name = "ID", env = "CHOCK_MODEL")]
    pub model: String,
    /// The most requests sent to the model for one task (with `chock acp`, one prompt); a session still calling tools then stops and its work is kept.
    #[arg(long, value_name = "N", default_value_t = 50, value_parser = clap::value_parser!(u32).range(1..))]
    pub max_turns: u32,
    /// Copy the project's uncommitted work into the session workspace.
    #[arg(long)]
    pub allow_dirty: bool,
    /// The dev shell run_command uses (default: chock.zon's, else `default`).
    #[arg(long, value_name = "NAME")]
    pub dev_shell: Option<String>,
    /// Stop once the session has cost this many dollars (every agent's tokens at the model's price); its work is kept.
    #[arg(long, value_name = "DOLLARS")]
    pub max_budget: Option<f64>,
    /// Stop once the session has used this many tokens, in and out, over every agent; its work is kept.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub max_tokens: Option<u64>,
}

impl SessionArgs {
    /// The session's options, `command` naming what serves it.
    pub fn options(self, project: Option<PathBuf>, command: &'static str) -> RunOptions {
        RunOptions {
            command,
            project,
            provider: self.provider,
            model: self.model,
            max_turns: self.max_turns,
            allow_dirty: self.allow_dirty,
            dev_shell: self.dev_shell,
            settings: chock_provider::Settings::default(),
            resume: None,
            budget: chock_agent::spending::Budget {
                dollars: self.max_budget,
                tokens: self.max_tokens,
            },
            extra_tools: Some(crate::commands::plugins::tools()),
        }
    }
}

/// Plain lines: text to stdout, one line per tool call to stderr, and
/// with `print_cost` what the session has spent after each reply.
struct Plain {
    print_cost: bool,
}

/// Tokens and, when the model has a price, dollars.
fn spent_text(usage: &chock_provider::Usage, cost: Option<f64>) -> String {
    let tokens = format!(
        "{} tokens in, {} out",
        usage.input_tokens, usage.output_tokens
    );
    match cost {
        Some(cost) => format!("{tokens}, {}", dollars(cost)),
        None => format!("{tokens}, cost unknown (no price for the model)"),
    }
}

impl Show for Plain {
    fn text(&mut self, piece: &str) {
        let mut out = crate::out::stdout();
        let _ = out.write_all(piece.as_bytes());
        let _ = out.flush();
    }

    fn line(&mut self, line: &str) {
        eprintln!("chock run: {line}");
    }

    fn spent(&mut self, spent: &chock_agent::Spent) {
        if self.print_cost {
            eprintln!(
                "chock run: turn: {}; session: {}",
                spent_text(&spent.turn, spent.turn_cost),
                spent_text(&spent.session, spent.session_cost)
            );
        }
    }
}

/// The version of the `--json` events' schema (docs/run-events.schema.json):
/// raised when a field changes meaning or goes; new fields and new event
/// types do not raise it.
pub const EVENTS_VERSION: u32 = 1;

/// `--json`: every event as one JSON object a line on stdout.
struct Json;

impl Json {
    fn emit(&mut self, kind: &str, fields: serde_json::Value) {
        let mut event = serde_json::json!({"v": EVENTS_VERSION, "type": kind});
        if let (Some(event), serde_json::Value::Object(fields)) = (event.as_object_mut(), fields) {
            event.extend(fields);
        }
        outln!("{event}");
    }

    /// The `end` event: how the session ended and where its work is.
    fn end(&mut self, ended: &Result<chock_agent::Ended, RunError>) {
        let fields = match ended {
            Ok(ended) => {
                let (state, said) = match &ended.workspace {
                    Finished::Applied(said) => ("applied", said.clone()),
                    Finished::Kept(why) => ("kept", why.clone()),
                    Finished::NoWorkspace | Finished::Nothing => {
                        ("nothing", "the workspace held no work to apply".to_owned())
                    }
                };
                serde_json::json!({
                    "how": how_word(&ended.how),
                    "session": ended.session,
                    "requests": ended.turns,
                    "usage": tokens_json(&ended.usage),
                    "cost": ended.cost,
                    "workspace": {"state": state, "said": said},
                    "continue": format!("chock run --session {}", ended.session),
                })
            }
            Err(error) => serde_json::json!({"how": "failed", "error": error.to_string()}),
        };
        self.emit("end", fields);
    }
}

/// The tokens of `usage` as the events give them.
fn tokens_json(usage: &chock_provider::Usage) -> serde_json::Value {
    serde_json::json!({
        "input": usage.input_tokens,
        "output": usage.output_tokens,
        "cache_read": usage.cache_read_tokens,
        "cache_write": usage.cache_write_tokens,
    })
}

/// How a session ended, as the session log's `end` spells it.
fn how_word(how: &How) -> &'static str {
    match how {
        How::Done => "done",
        How::MaxTurns => "max_turns",
        How::Refusal => "refusal",
        How::Cancelled => "cancelled",
        How::Budget => "budget",
        How::UnusableCalls => "unusable_calls",
    }
}

impl Show for Json {
    fn started(&mut self, session: &str, model: &chock_sessions::ModelRef) {
        self.emit(
            "start",
            serde_json::json!({"session": session, "instance": model.instance, "kind": model.kind, "model": model.model}),
        );
    }

    fn text(&mut self, piece: &str) {
        self.emit("text", serde_json::json!({"text": piece}));
    }

    fn line(&mut self, line: &str) {
        self.emit("notice", serde_json::json!({"text": line}));
    }

    fn title(&mut self, title: &str) {
        self.emit("title", serde_json::json!({"title": title}));
    }

    fn requested(&mut self, agent: &str, action: &str, why: Option<&str>) {
        self.emit(
            "request_action",
            serde_json::json!({"agent": agent, "action": action, "why": why}),
        );
    }

    fn plan(&mut self, plan: &chock_agent::plan::Plan) {
        self.emit("plan", serde_json::json!({"steps": plan.steps}));
    }

    fn spent(&mut self, spent: &chock_agent::Spent) {
        self.emit(
            "usage",
            serde_json::json!({
                "turn": tokens_json(&spent.turn),
                "session": tokens_json(&spent.session),
                "turn_cost": spent.turn_cost,
                "session_cost": spent.session_cost,
            }),
        );
    }

    fn decided(&mut self, decided: &chock_agent::own_tools::Decided) {
        self.emit(
            "decision",
            serde_json::json!({
                "tool": decided.tool,
                "action": decided.action,
                "decision": decided.decision.as_str(),
                "answered_by": decided.answered_by,
            }),
        );
    }

    fn call_started(&mut self, call: &chock_agent::ToolCall) {
        self.emit(
            "tool_call",
            serde_json::json!({"id": call.id, "name": call.name, "arguments": call.arguments}),
        );
    }

    fn call_ended(
        &mut self,
        call: &chock_agent::ToolCall,
        outcome: &Result<String, chock_mcp::Failed>,
    ) {
        let content = match outcome {
            Ok(text) | Err(chock_mcp::Failed(text)) => text,
        };
        self.emit(
            "tool_result",
            serde_json::json!({
                "id": call.id,
                "name": call.name,
                "answer": chock_sessions::Answer::of(outcome).as_str(),
                "content": content,
            }),
        );
    }
}

/// SIGINT (Ctrl-C) and SIGTERM cancel the session's turn: the reply
/// streaming is dropped, the command running killed with its sandbox, and
/// the session ends as a cancelled one (its log's `end` written, its work
/// kept and said where). A second SIGINT ends the process at once, with
/// the terminal's echo on again. The handlers are in place before the
/// session starts.
fn cancel_on_signals(cancel: chock_agent::CancellationToken) -> anyhow::Result<()> {
    // Written to the descriptor past std's lock of stderr, which a
    // question at the terminal holds while it waits for the answer.
    fn say(text: &str) {
        let _ = rustix::io::write(std::io::stderr(), text.as_bytes());
    }
    use anyhow::Context as _;
    use tokio::signal::unix::{SignalKind, signal};
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .build()
        .context("could not start the runtime that waits for Ctrl-C")?;
    let (mut interrupt, mut terminate) = runtime
        .block_on(async {
            Ok::<_, std::io::Error>((
                signal(SignalKind::interrupt())?,
                signal(SignalKind::terminate())?,
            ))
        })
        .context("could not wait for Ctrl-C and SIGTERM")?;
    std::thread::spawn(move || {
        runtime.block_on(async move {
            loop {
                let interrupted = tokio::select! {
                    got = interrupt.recv() => got.map(|()| true),
                    got = terminate.recv() => got.map(|()| false),
                };
                let Some(interrupted) = interrupted else {
                    return;
                };
                if interrupted && cancel.is_cancelled() {
                    crate::ask::echo(true);
                    say("\nchock run: stopped at once; what the session wrote so far stays in its workspace (`chock workspace` lists it)\n");
                    std::process::exit(exit::INTERRUPTED.into());
                }
                if !cancel.is_cancelled() {
                    cancel.cancel();
                    say(if interrupted {
                        "\nchock run: cancelling: the turn stops and the work is kept (Ctrl-C again stops at once)\n"
                    } else {
                        "\nchock run: cancelling: the turn stops and the work is kept\n"
                    });
                }
            }
        });
    });
    Ok(())
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let task = if args.task.is_empty() {
        if std::io::stdin().is_terminal() {
            eprintln!("chock run: what should the agent do? (end with Ctrl-D)");
        }
        let mut text = String::new();
        if let Err(e) = std::io::stdin().read_to_string(&mut text) {
            eprintln!("chock run: the task could not be read from stdin: {e}");
            return Ok(exit::FAILURE.into());
        }
        text
    } else {
        args.task.join(" ")
    };
    if task.trim().is_empty() {
        eprintln!("chock run: no task: give one after `--` or on stdin");
        return Ok(exit::FAILURE.into());
    }
    let mut options = args.session.options(args.project, "chock run");
    options.resume = match (args.resume, args.session_id) {
        (_, Some(id)) => Some(Resume::Id(id)),
        (true, None) => Some(Resume::Newest),
        (false, None) => None,
    };
    let mut plain = Plain {
        print_cost: args
            .print_cost
            .unwrap_or_else(|| std::io::stderr().is_terminal()),
    };
    let mut json = args.json.then_some(Json);
    let show: &mut dyn Show = match json.as_mut() {
        Some(json) => json,
        None => &mut plain,
    };
    let cancel = chock_agent::CancellationToken::new();
    if let Err(e) = cancel_on_signals(cancel.clone()) {
        eprintln!("chock run: {e:#}");
        return Ok(exit::FAILURE.into());
    }
    let ended = chock_agent::run(
        options,
        &task,
        Arc::new(TerminalAsker::default()),
        show,
        &cancel,
    );
    if let Some(json) = json.as_mut() {
        json.end(&ended);
    }
    let ended = match ended {
        Ok(ended) => ended,
        Err(error) => {
            eprintln!("chock run: {error}");
            let code = match error {
                RunError::Refused(_) => exit::REFUSED,
                RunError::Provider(_) => exit::FAILURE,
                RunError::NoProvider(_)
                | RunError::Setup(_)
                | RunError::Start(_)
                | RunError::Own(_)
                | RunError::Session(_)
                | RunError::OtherProject { .. }
                | RunError::Project(_)
                | RunError::Runtime(_)
                | RunError::Budget(_) => exit::FAILURE,
            };
            return Ok(code.into());
        }
    };
    let usage = ended.usage;
    let how = match ended.how {
        How::Done => "the model finished",
        How::MaxTurns => "stopped at --max-turns, the model still calling tools",
        How::Refusal => "stopped: the model refused to go on",
        How::Cancelled => {
            "cancelled: the turn was stopped (a command running was killed with its sandbox)"
        }
        How::Budget => "stopped at the budget (--max-budget, --max-tokens)",
        How::UnusableCalls => "stopped: the model kept making calls that could not be run",
    };
    eprintln!(
        "chock run: {how} after {} requests ({}); session {} (`chock run --session {}` goes on with it)",
        ended.turns,
        spent_text(&usage, ended.cost),
        ended.session,
        ended.session
    );
    let code = match &ended.workspace {
        Finished::Applied(said) => {
            eprintln!("chock run: applied: {said}");
            exit::SUCCESS
        }
        Finished::NoWorkspace | Finished::Nothing => {
            eprintln!("chock run: the workspace held no work to apply");
            exit::SUCCESS
        }
        Finished::Kept(why) => {
            eprintln!("chock run: not applied: {why}");
            exit::REFUSED
        }
    };
    Ok(match ended.how {
        // Only a signal cancels `chock run`.
        How::Cancelled => exit::INTERRUPTED,
        How::MaxTurns | How::Refusal | How::Budget | How::UnusableCalls => exit::STOPPED,
        How::Done => code,
    }
    .into())
}
