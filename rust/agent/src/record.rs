//! The session's log as the loop keeps it (chock-sessions): which
//! session to write (a new one, or an earlier one held to go on with),
//! the conversation and the state an earlier session's events fold back
//! into, and each event written as it happens.

use chock_mcp::local::Finished;
use chock_provider::{ToolCall, Turn};
use chock_sessions::{Event, SessionLog, Sessions, Stored};

use crate::{Resume, RunError, RunOptions, state};

/// The kind of the custom events that change the plan.
const PLAN: &str = "plan";
/// The kind of the custom events that make or widen a promise.
const PROMISES: &str = "policy.self";

/// The session to write: a fresh id, or an earlier session's log held to
/// go on writing, with its events.
pub(crate) struct Opened {
    pub id: String,
    pub earlier: Option<(SessionLog, Vec<Stored>)>,
}

/// Finds and holds the session to resume (refused while it runs, when it
/// is another project's, or when its log does not verify).
pub(crate) fn open_session(
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
                        .map(|c| ToolCall::new(c.id.clone(), c.name.clone(), c.arguments.clone()))
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

/// The state events an earlier session's log holds (its plans and its
/// promises), in the order written; a log that holds one this build cannot
/// read refuses the resume.
pub(crate) fn state_of(stored: &[Stored]) -> Result<Vec<state::Event>, RunError> {
    let events: Vec<Event> = stored.iter().map(|s| s.event.clone()).collect();
    let mut kept: Vec<state::Event> =
        chock_sessions::custom_events(&events, PLAN).map_err(|e| RunError::Own(e.to_string()))?;
    kept.extend(
        chock_sessions::custom_events::<state::Event>(&events, PROMISES)
            .map_err(|e| RunError::Own(e.to_string()))?,
    );
    Ok(kept)
}

/// The session's log as the loop writes it: a failure to write is kept to
/// be said once (the work matters more than its record).
pub(crate) struct Record {
    log: SessionLog,
    failed: bool,
    unsaid: Option<String>,
}

impl Record {
    pub fn new(log: SessionLog) -> Record {
        Record {
            log,
            failed: false,
            unsaid: None,
        }
    }

    pub fn write(&mut self, event: &Event) {
        if let Err(e) = self.log.append(event)
            && !std::mem::replace(&mut self.failed, true)
        {
            self.unsaid = Some(format!(
                "the session log {} could not be written, so this session may not resume whole: {e}",
                self.log.path().display()
            ));
        }
    }

    /// A state event, under the kind a reader folds it by.
    pub fn write_state(&mut self, event: &state::Event) {
        let kind = match event {
            state::Event::Plan { .. } => PLAN,
            state::Event::Promised { .. } | state::Event::Widened { .. } => PROMISES,
        };
        match Event::custom(kind, event) {
            Ok(event) => self.write(&event),
            Err(e) => {
                if !std::mem::replace(&mut self.failed, true) {
                    self.unsaid = Some(format!("the session's state could not be logged: {e}"));
                }
            }
        }
    }

    /// What went wrong writing, once.
    pub fn unsaid(&mut self) -> Option<String> {
        self.unsaid.take()
    }
}

/// A reply as the session log keeps it.
pub(crate) fn turn_event(
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
        tokens: crate::spending::tokens_of(reply.usage),
        model: model.clone(),
    }
}

/// What became of the workspace, in words, for the log's end.
pub(crate) fn finished_text(finished: &Finished) -> String {
    match finished {
        Finished::NoWorkspace => "no workspace".into(),
        Finished::Nothing => "the workspace held no work to apply".into(),
        Finished::Applied(said) => format!("applied: {said}"),
        Finished::Kept(why) => format!("not applied, kept: {why}"),
    }
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
