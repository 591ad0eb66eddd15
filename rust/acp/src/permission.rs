//! The gate's questions put to the client: `session/request_permission`
//! about the tool call that asks, with the question's action, what a yes
//! lets happen, and the rule that would answer it without asking. Allow
//! once, allow for this session, always allow (the rule written into
//! `chock.zon`, where the question offers it), or reject; a client that
//! cannot answer (an error, its input ended) leaves the question to
//! `chock approve`, and then refused; a cancelled prompt withdraws it.

use std::sync::mpsc::RecvTimeoutError;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use chock_gate::{Offer, Scope, Word};
use chock_policy::{Answer, Asker, Question};

use crate::rpc::Peer;
use crate::schema::{
    PermissionOption, PermissionOptionKind, PermissionOutcome, RequestPermissionRequest,
    RequestPermissionResponse, TextBlock, ToolCallContent, ToolCallUpdate,
};
use crate::{Turn, lock};

const ALLOW: &str = "allow_once";
const ALLOW_SESSION: &str = "allow_session";
const ALLOW_ALWAYS: &str = "allow_always";
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
        chock_mcp::Person::ask_scoped(self, question, Offer::default()).answer
    }
}

impl chock_mcp::Person for Permission {
    fn ask_scoped(&self, question: &Question, offer: Offer) -> Word {
        let Some(session) = self.session.get() else {
            return Word::plain(Answer::Unavailable);
        };
        let (call, title) = lock(&self.turn.call)
            .clone()
            .unwrap_or_else(|| (question.action.clone(), question.action.clone()));
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
            options: options(offer),
        };
        let answer = self.peer.request("session/request_permission", &request);
        loop {
            match answer.recv_timeout(CANCEL_POLL) {
                Ok(Ok(value)) => return read(value, offer),
                // The client could not answer, or is gone.
                Ok(Err(_)) | Err(RecvTimeoutError::Disconnected) => {
                    return Word::plain(Answer::Unavailable);
                }
                Err(RecvTimeoutError::Timeout) if self.turn.cancelled() => {
                    return Word::plain(Answer::Cancelled);
                }
                Err(RecvTimeoutError::Timeout) => {}
            }
        }
    }
}

/// The options a question offers: allow once, for this session and
/// always where `offer` has them (ACP has no session kind: both are
/// `allow_always`, told apart by name), and reject.
fn options(offer: Offer) -> Vec<PermissionOption> {
    offer
        .scopes()
        .into_iter()
        .map(|scope| {
            let (id, name, kind) = match scope {
                Scope::Once => (ALLOW, "Allow once", PermissionOptionKind::AllowOnce),
                Scope::Session => (
                    ALLOW_SESSION,
                    "Allow for this session",
                    PermissionOptionKind::AllowAlways,
                ),
                Scope::Always => (
                    ALLOW_ALWAYS,
                    "Always allow (writes the rule into chock.zon)",
                    PermissionOptionKind::AllowAlways,
                ),
            };
            (id, name, kind)
        })
        .chain([(REJECT, "Reject", PermissionOptionKind::RejectOnce)])
        .map(|(id, name, kind)| PermissionOption {
            option_id: id.to_owned(),
            name: name.to_owned(),
            kind,
        })
        .collect()
}

/// The scope of the allow option `id`, when it is one.
fn scope_of(id: &str) -> Option<Scope> {
    match id {
        ALLOW => Some(Scope::Once),
        ALLOW_SESSION => Some(Scope::Session),
        ALLOW_ALWAYS => Some(Scope::Always),
        _ => None,
    }
}

/// The client's answer: an allow option offered is a yes for its scope,
/// any other option a no; an answer that is not ACP's is no answer.
fn read(value: serde_json::Value, offer: Offer) -> Word {
    match serde_json::from_value::<RequestPermissionResponse>(value) {
        Ok(response) => match response.outcome {
            PermissionOutcome::Selected { option_id } => match scope_of(&option_id) {
                Some(scope) if offer.offers(scope) => Word::yes(scope, offer),
                _ => Word::no(None),
            },
            PermissionOutcome::Cancelled => Word::plain(Answer::Cancelled),
        },
        Err(_) => Word::plain(Answer::Unavailable),
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
    fn an_offered_allow_option_is_a_yes_for_its_scope() {
        let both = Offer {
            session: true,
            always: true,
        };
        let chose = |id: &str| json!({"outcome": {"outcome": "selected", "optionId": id}});
        let answer = |id: &str, offer| {
            let word = read(chose(id), offer);
            (word.answer, word.scope)
        };
        assert_eq!(answer(ALLOW, both), (Answer::Yes, Scope::Once));
        assert_eq!(answer(ALLOW_SESSION, both), (Answer::Yes, Scope::Session));
        assert_eq!(answer(ALLOW_ALWAYS, both), (Answer::Yes, Scope::Always));
        assert_eq!(answer(REJECT, both).0, Answer::No);
        assert_eq!(answer("reject_always", both).0, Answer::No);
        // An option not offered is a no.
        assert_eq!(answer(ALLOW_ALWAYS, Offer::default()).0, Answer::No);
        assert_eq!(
            read(json!({"outcome": {"outcome": "cancelled"}}), both).answer,
            Answer::Cancelled
        );
        assert_eq!(read(json!({"yes": true}), both).answer, Answer::Unavailable);
    }

    #[test]
    fn the_options_are_those_the_question_offers() {
        let ids = |offer| -> Vec<(String, serde_json::Value)> {
            options(offer)
                .into_iter()
                .map(|o| (o.option_id.clone(), serde_json::to_value(o.kind).unwrap()))
                .collect()
        };
        let kinds = |pairs: &[(&str, &str)]| -> Vec<(String, serde_json::Value)> {
            pairs
                .iter()
                .map(|(i, k)| ((*i).to_owned(), json!(k)))
                .collect()
        };
        assert_eq!(
            ids(Offer::default()),
            kinds(&[(ALLOW, "allow_once"), (REJECT, "reject_once")])
        );
        let session_only = Offer {
            session: true,
            always: false,
        };
        assert_eq!(
            ids(session_only),
            kinds(&[
                (ALLOW, "allow_once"),
                (ALLOW_SESSION, "allow_always"),
                (REJECT, "reject_once")
            ])
        );
        let both = Offer {
            session: true,
            always: true,
        };
        assert_eq!(ids(both).len(), 4);
        assert_eq!(ids(both)[2].0, ALLOW_ALWAYS);
    }
}
