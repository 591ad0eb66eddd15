//! `spawn_agent`: a child agent of a kind `chock.zon` declares, run to its
//! end on the same model, workspace and tool server session, with its own
//! conversation. Its every act is decided through the spawn chain (the
//! main agent's kind down to its own), so it never gets more than any agent
//! above it; the session's promises bind it as they bind every call of the
//! session. Its turns go to the session log as one `agent` event.

use chock_mcp::Failed;
use chock_mcp::local::InProcess;
use chock_provider::{Client, Conversation, Model, Request, Turn};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::own_tools::{Caller, OwnToolError, OwnTools, SPAWN_AGENT};
use crate::{CancellationToken, MAX_TOKENS, Show};

/// The model the session talks to, as a child's loop talks to it too.
pub struct Provider<'a> {
    pub client: &'a Client,
    pub model: &'a str,
    pub model_ref: &'a chock_sessions::ModelRef,
    /// The most requests one agent's loop sends for one task.
    pub max_turns: u32,
    /// The session's budget, which the child's requests spend too.
    pub spending: &'a crate::spending::Spending,
}

/// The kind of a session event holding one child's run.
pub const AGENT_EVENT: &str = chock_sessions::AGENT_EVENT;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Args {
    pub kind: String,
    pub task: String,
}

/// One child's run as the session log keeps it.
#[derive(Serialize)]
pub(crate) struct Ran {
    /// The agent kind, and the chain it was spawned through.
    pub kind: String,
    pub chain: Vec<String>,
    pub task: String,
    /// Its turns and its tool results, in order.
    pub turns: Vec<Value>,
    /// What it handed back (its final text, or why it ended without one).
    pub answer: Result<String, Failed>,
}

/// Whether the caller `tools` may spawn a `kind` agent now, having spawned
/// `children` already: the kind is declared, its parent is the caller's
/// kind, and the caps of `.subagents` hold. `Err` is the refusal the model
/// reads, naming what to change.
pub(crate) fn allowed(tools: &InProcess, children: u32, kind: &str) -> Result<(), OwnToolError> {
    let chain = tools.chain();
    let caller = chain.last().copied().unwrap_or(chock_mcp::AGENT_KIND);
    let declared = tools.agent_kinds();
    let Some(agent) = declared.iter().find(|a| a.kind == kind) else {
        let kinds: Vec<String> = declared.iter().map(|a| format!("`{}`", a.kind)).collect();
        return Err(OwnToolError::Refused(format!(
            "refused: {SPAWN_AGENT}: `{kind}` is not an agent kind chock.zon declares (declared: {}). To allow it, add to chock.zon's .policy.agents: .{{ .kind = \"{kind}\", .parent = \"{caller}\" }}",
            if kinds.is_empty() {
                "none".into()
            } else {
                kinds.join(", ")
            }
        )));
    };
    if agent.parent.as_deref() != Some(caller) {
        return Err(OwnToolError::Refused(format!(
            "refused: {SPAWN_AGENT}: a `{caller}` agent cannot spawn `{kind}`: chock.zon's .policy.agents gives `{kind}` {}, and an agent spawns only the kinds whose .parent is its own kind",
            match &agent.parent {
                Some(parent) => format!("the parent `{parent}`"),
                None => "no parent".into(),
            }
        )));
    }
    let caps = tools.subagent_caps();
    // The chain holds the main agent, so its length is the child's depth.
    let depth = chain.len() as u32;
    if depth > caps.max_depth {
        return Err(OwnToolError::Refused(format!(
            "refused: {SPAWN_AGENT}: a `{kind}` agent would be {depth} below the main agent, and .subagents.max_depth is {} (chock.zon's, default {}, held to any organisation bundle's). To allow it, raise .subagents.max_depth in chock.zon",
            caps.max_depth,
            chock_policy::DEFAULT_MAX_DEPTH
        )));
    }
    if children >= caps.max_width {
        return Err(OwnToolError::Refused(format!(
            "refused: {SPAWN_AGENT}: this `{caller}` agent has spawned {children} agents in this session, and .subagents.max_width is {} (chock.zon's, default {}, held to any organisation bundle's). Do the rest yourself, or raise .subagents.max_width in chock.zon",
            caps.max_width,
            chock_policy::DEFAULT_MAX_WIDTH
        )));
    }
    Ok(())
}

/// `model.select` for a `kind` child on the session's model, decided and
/// logged as the session's own was at start (under the promises made since,
/// as every decision of the session is): only allow lets it run.
pub(crate) fn model_allowed(
    tools: &InProcess,
    provider: &Provider<'_>,
    kind: &str,
) -> Result<(), OwnToolError> {
    let (policy, log) = tools.policy_and_log();
    chock_provider::select_model(
        policy,
        log,
        &tools.project().dir.display().to_string(),
        kind,
        &provider.model_ref.instance,
        provider.model,
    )
    .map(|_| ())
    .map_err(|e| OwnToolError::Refused(format!("refused: {SPAWN_AGENT}: {e}")))
}

/// Runs a `kind` child of `parent` on `task` to its end: its final text, or
/// why it has none, and its turns for the log.
pub(crate) async fn run(
    own: &mut OwnTools,
    parent: &InProcess,
    provider: &Provider<'_>,
    show: &mut dyn Show,
    args: Args,
    cancel: &CancellationToken,
) -> Ran {
    let tools = parent.spawned(&args.kind);
    let chain: Vec<String> = tools.chain().iter().map(|k| (*k).to_owned()).collect();
    let mut ran = Ran {
        kind: args.kind.clone(),
        chain,
        task: args.task.clone(),
        turns: Vec::new(),
        answer: Err(Failed(String::new())),
    };
    let offered = crate::own_tools::offered(&tools, true).await;
    let mut conversation = Conversation {
        system: Some(format!(
            "{} You are a `{}` agent, spawned by a `{}` agent for the one task below; your final answer is handed back to it.",
            crate::system_prompt(&tools.withheld()),
            args.kind,
            ran.chain[ran.chain.len() - 2]
        )),
        turns: vec![Turn::User(args.task)],
        tools: offered,
    };
    let mut children = 0;
    let mut unusable_in_row = 0;
    for _ in 0..provider.max_turns {
        if let Some(why) = provider.spending.reached(provider.client.used()) {
            ran.answer = Err(Failed(format!(
                "the `{}` agent was stopped: {why}",
                ran.kind
            )));
            return ran;
        }
        let request = Request {
            model: provider.model,
            max_tokens: MAX_TOKENS,
            conversation: &conversation,
        };
        // A child's text is not streamed to the person: its answer is its
        // parent's to read, and its calls are shown.
        let mut unshown = |_: &str| {};
        let reply = tokio::select! {
            reply = provider.client.send(&request, &mut unshown) => reply,
            () = cancel.cancelled() => {
                ran.answer = Err(Failed(format!("the `{}` agent was cancelled by the person", ran.kind)));
                return ran;
            }
        };
        let reply = match reply {
            Ok(reply) => reply,
            Err(e) => {
                ran.answer = Err(Failed(format!(
                    "the `{}` agent's request failed: {e}",
                    ran.kind
                )));
                return ran;
            }
        };
        ran.turns.push(
            serde_json::to_value(crate::record::turn_event(&reply, provider.model_ref))
                .unwrap_or(Value::Null),
        );
        conversation.turns.push(reply.turn());
        if reply.tool_calls.is_empty() {
            ran.answer = Ok(reply.text);
            return ran;
        }
        for call in reply.tool_calls {
            show.call_started(&call);
            let outcome = match crate::own_tools::unusable(&call, &conversation.tools, &tools) {
                Some(why) => {
                    unusable_in_row += 1;
                    Err(Failed(why))
                }
                None => {
                    unusable_in_row = 0;
                    let mut caller = Caller {
                        tools: &tools,
                        children: &mut children,
                    };
                    Box::pin(own.call(
                        &mut caller,
                        provider,
                        show,
                        &call.name,
                        call.arguments.clone(),
                        cancel,
                    ))
                    .await
                }
            };
            show.call_ended(&call, &outcome);
            ran.turns.push(serde_json::json!({
                "call_id": call.id,
                "tool": call.name,
                "answer": chock_sessions::Answer::of(&outcome),
                "content": match &outcome { Ok(t) | Err(Failed(t)) => t },
            }));
            let (content, is_error) = match outcome {
                Ok(text) => (text, false),
                Err(Failed(text)) => (text, true),
            };
            conversation.turns.push(Turn::ToolResult {
                call_id: call.id,
                content,
                is_error,
            });
        }
        if let Some(images) = own.take_images() {
            conversation.turns.push(images);
        }
        if unusable_in_row >= crate::own_tools::MAX_UNUSABLE_CALLS {
            ran.answer = Err(Failed(format!(
                "the `{}` agent made {unusable_in_row} calls in a row that could not be run",
                ran.kind
            )));
            return ran;
        }
    }
    ran.answer = Err(Failed(format!(
        "the `{}` agent did not finish in {} requests",
        ran.kind, provider.max_turns
    )));
    ran
}
