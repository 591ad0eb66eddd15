//! The gate's questions put to the client: `session/request_permission`
//! about the tool call that asks, with the question's action, what a yes
//! lets happen, and the rule that would answer it without asking. Allow
//! once or reject; a client that cannot answer (an error, its input
//! ended) leaves the question to `chock approve`, and then refused; a
//! cancelled prompt withdraws it.

use std::sync::mpsc::RecvTimeoutError;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use chock_policy::{Answer, Asker, Question};

use crate::rpc::Peer;
use crate::schema::{
    PermissionOption, PermissionOptionKind, PermissionOutcome, RequestPermissionRequest,
    RequestPermissionResponse, TextBlock, ToolCallContent, ToolCallUpdate,
};
use crate::{Turn, lock};

const ALLOW: &str = "allow_once";
const REJECT: &str = "reject_once";

/// How often a question waiting for the client looks whether its prompt
/// was cancelled.
const CANCEL_POLL: Duration = Duration::from_millis(100);

/// A session's asker: its questions go to the client.
pub struct Permission {
    pub peer: Arc<Peer>,
    /// The session's id, known once it started (it is its log's); nothing
    /// is asked before.
    pub session: Arc<OnceLock<String>>,
    pub turn: Arc<Turn>,
}

impl Asker for Permission {
    fn ask(&self, question: &Question) -> Answer {
        let Some(session) = self.session.get() else {
            return Answer::Unavailable;
        };
        let (call, title) = lock(&self.turn.call)
            .clone()
            .unwrap_or_else(|| (question.action.clone(), question.action.clone()));
        let option = |id: &str, name: &str, kind| PermissionOption {
            option_id: id.to_owned(),
            name: name.to_owned(),
            kind,
        };
        let request = RequestPermissionRequest {
            session_id: session.clone(),
            tool_call: ToolCallUpdate {
                tool_call_id: call,
                title: Some(title),
                status: None,
                content: Some(vec![ToolCallContent::Content {
                    content: TextBlock::new(asked(question)),
                }]),
            },
            options: vec![
                option(ALLOW, "Allow once", PermissionOptionKind::AllowOnce),
                option(REJECT, "Reject", PermissionOptionKind::RejectOnce),
            ],
        };
        let answer = self.peer.request("session/request_permission", &request);
        loop {
            match answer.recv_timeout(CANCEL_POLL) {
                Ok(Ok(value)) => return read(value),
                // The client could not answer, or is gone.
                Ok(Err(_)) | Err(RecvTimeoutError::Disconnected) => return Answer::Unavailable,
                Err(RecvTimeoutError::Timeout) if self.turn.cancelled() => {
                    return Answer::Cancelled;
                }
                Err(RecvTimeoutError::Timeout) => {}
            }
        }
    }
}

/// The client's answer: only the allow option is a yes; an answer that is
/// not ACP's is no answer.
fn read(value: serde_json::Value) -> Answer {
    match serde_json::from_value::<RequestPermissionResponse>(value) {
        Ok(response) => match response.outcome {
            PermissionOutcome::Selected { option_id } if option_id == ALLOW => Answer::Yes,
            PermissionOutcome::Selected { .. } => Answer::No,
            PermissionOutcome::Cancelled => Answer::Cancelled,
        },
        Err(_) => Answer::Unavailable,
    }
}

/// The question as the person reads it in the editor.
fn asked(question: &Question) -> String {
    format!("Chock asks: {}", question.shown())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn only_the_allow_option_is_a_yes() {
        let chose = |id: &str| json!({"outcome": {"outcome": "selected", "optionId": id}});
        assert_eq!(read(chose(ALLOW)), Answer::Yes);
        assert_eq!(read(chose(REJECT)), Answer::No);
        assert_eq!(read(chose("allow_always")), Answer::No);
        assert_eq!(
            read(json!({"outcome": {"outcome": "cancelled"}})),
            Answer::Cancelled
        );
        assert_eq!(read(json!({"yes": true})), Answer::Unavailable);
    }
}
