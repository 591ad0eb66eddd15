//! The session as the editor sees it: `session/update` notifications. The
//! model's text streams as `agent_message_chunk`; each tool call is a
//! `tool_call` when it goes to the gate (in progress, with its arguments
//! and the file it names) and a `tool_call_update` when it is answered
//! (completed with its result, or failed with the refusal or error, which
//! names the rule). The agent's plan is a `plan` update, whole, each time
//! it changes.

use std::path::PathBuf;
use std::sync::Arc;

use chock_agent::Show;
use serde_json::Value;

use crate::rpc::Peer;
use crate::schema::{
    Location, PlanEntry, PlanPriority, SessionNotification, SessionUpdate, TextBlock, ToolCall,
    ToolCallContent, ToolCallStatus, ToolCallUpdate, ToolKind,
};
use crate::{Turn, lock};

/// The most of a tool's result shown in the editor; the model reads all.
const SHOWN_BYTES: usize = 16 << 10;

pub struct Updates {
    pub peer: Arc<Peer>,
    pub session: String,
    pub project: PathBuf,
    pub turn: Arc<Turn>,
}

impl Updates {
    fn update(&self, update: SessionUpdate) {
        self.peer.notify(
            "session/update",
            &SessionNotification {
                session_id: self.session.clone(),
                update,
            },
        );
    }
}

impl Show for Updates {
    fn text(&mut self, piece: &str) {
        self.update(SessionUpdate::AgentMessageChunk {
            content: TextBlock::new(piece),
        });
    }

    /// A line about the session, apart from the model's own words.
    fn line(&mut self, line: &str) {
        self.update(SessionUpdate::AgentThoughtChunk {
            content: TextBlock::new(format!("{line}\n")),
        });
    }

    fn plan(&mut self, plan: &chock_agent::plan::Plan) {
        let entries = plan
            .steps
            .iter()
            .map(|step| PlanEntry {
                content: step.step.clone(),
                priority: PlanPriority::Medium,
                status: step.status,
            })
            .collect();
        self.update(SessionUpdate::Plan { entries });
    }

    fn call_started(&mut self, call: &chock_agent::ToolCall) {
        let title = title(&call.name, &call.arguments);
        *lock(&self.turn.call) = Some((call.id.clone(), title.clone()));
        let location = call
            .arguments
            .get("path")
            .and_then(Value::as_str)
            .map(|path| Location {
                path: self.project.join(path),
            });
        self.update(SessionUpdate::ToolCall(ToolCall {
            tool_call_id: call.id.clone(),
            title,
            kind: kind(&call.name),
            status: ToolCallStatus::InProgress,
            raw_input: call.arguments.clone(),
            locations: location.into_iter().collect(),
        }));
    }

    fn call_ended(
        &mut self,
        call: &chock_agent::ToolCall,
        outcome: &Result<String, chock_mcp::Failed>,
    ) {
        *lock(&self.turn.call) = None;
        let (status, said) = match outcome {
            Ok(result) => (ToolCallStatus::Completed, result),
            Err(chock_mcp::Failed(why)) => (ToolCallStatus::Failed, why),
        };
        self.update(SessionUpdate::ToolCallUpdate(ToolCallUpdate {
            tool_call_id: call.id.clone(),
            title: None,
            status: Some(status),
            content: Some(vec![ToolCallContent::Content {
                content: TextBlock::new(cut(said)),
            }]),
        }));
    }
}

/// What the editor calls a tool: the kinds it draws apart.
fn kind(tool: &str) -> ToolKind {
    match tool {
        "read_file" | "list_directory" | "task_output" | "list_tasks" => ToolKind::Read,
        "glob" | "grep" => ToolKind::Search,
        "write_file" | "edit_file" => ToolKind::Edit,
        "run_command" | "nix_build" | "stop_task" | "serve_port" => ToolKind::Execute,
        "fetch_url" => ToolKind::Fetch,
        _ => ToolKind::Other,
    }
}

/// The tool and what it is about: its path, command, address or pattern.
fn title(tool: &str, arguments: &Value) -> String {
    let about = ["path", "url", "pattern", "attribute", "expression"]
        .iter()
        .find_map(|key| {
            arguments
                .get(key)
                .and_then(Value::as_str)
                .map(str::to_owned)
        })
        .or_else(|| {
            let argv = arguments.get("argv")?.as_array()?;
            Some(
                argv.iter()
                    .map(|a| a.as_str().unwrap_or("?"))
                    .collect::<Vec<_>>()
                    .join(" "),
            )
        });
    match about {
        Some(about) => cut_to(&format!("{tool} {about}"), 120),
        None => tool.to_owned(),
    }
}

fn cut(text: &str) -> String {
    cut_to(text, SHOWN_BYTES)
}

/// `text` whole, or its first `bound` bytes and how much more there was.
fn cut_to(text: &str, bound: usize) -> String {
    if text.len() <= bound {
        return text.to_owned();
    }
    let at = (0..=bound)
        .rev()
        .find(|i| text.is_char_boundary(*i))
        .unwrap_or(0);
    format!("{}… ({} bytes more)", &text[..at], text.len() - at)
}

/// A resumed session's conversation, shown to the client as it would have
/// seen it happen: the person's words, the model's, each tool call and its
/// result.
pub fn replay(conversation: &[chock_agent::Turn], updates: &mut Updates) {
    let mut calls: Vec<chock_agent::ToolCall> = Vec::new();
    for turn in conversation {
        match turn {
            chock_agent::Turn::User(text) => updates.update(SessionUpdate::UserMessageChunk {
                content: TextBlock::new(text.clone()),
            }),
            chock_agent::Turn::Assistant { text, tool_calls } => {
                if !text.is_empty() {
                    updates.text(text);
                }
                for call in tool_calls {
                    updates.call_started(call);
                }
                calls = tool_calls.clone();
            }
            chock_agent::Turn::ToolResult {
                call_id,
                content,
                is_error,
            } => {
                if let Some(call) = calls.iter().find(|c| c.id == *call_id) {
                    let outcome = if *is_error {
                        Err(chock_mcp::Failed(content.clone()))
                    } else {
                        Ok(content.clone())
                    };
                    updates.call_ended(call, &outcome);
                }
            }
            // Images read are the model's to see; the result said so.
            chock_agent::Turn::Images(_) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_title_names_what_the_call_is_about() {
        assert_eq!(
            title("write_file", &json!({"path": "a.txt", "content": "x"})),
            "write_file a.txt"
        );
        assert_eq!(
            title("run_command", &json!({"argv": ["cargo", "test"]})),
            "run_command cargo test"
        );
        assert_eq!(title("list_tasks", &json!({})), "list_tasks");
        assert!(title("run_command", &json!({"argv": ["x".repeat(300)]})).ends_with("bytes more)"));
    }

    #[test]
    fn a_long_result_is_cut_on_a_character() {
        let text = "é".repeat(10);
        assert_eq!(cut_to(&text, 5), "éé… (16 bytes more)");
        assert_eq!(cut_to("short", 5), "short");
    }
}
