//! What a session holds besides its conversation, as events and their
//! fold: the latest plan and the promises. The loop appends an event for
//! each change; whoever keeps the session (a log, a resume) keeps the
//! events and gets the same state back from [`State::fold`].

use serde::{Deserialize, Serialize};

use crate::plan::Plan;
use crate::ratchet::{Promise, Promises};

/// One change to the session's state.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum Event {
    /// The agent's plan, replaced whole.
    Plan { plan: Plan },
    /// A promise made (`restrict_self`), narrowing.
    Promised { promise: Promise },
    /// A promise replaced by `policy_widen`. Only an `authorised` one
    /// (set by the loop alone, after the gate said yes) counts; a reader
    /// ignoring the flag keeps the narrower promise.
    Widened { promise: Promise, authorised: bool },
}

/// The session's state.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct State {
    pub plan: Option<Plan>,
    pub promises: Promises,
}

impl State {
    /// The state after `events`, in order.
    pub fn fold<'a>(events: impl IntoIterator<Item = &'a Event>) -> State {
        let mut state = State::default();
        for event in events {
            state.apply(event);
        }
        state
    }

    /// One event applied.
    pub fn apply(&mut self, event: &Event) {
        match event {
            Event::Plan { plan } => self.plan = Some(plan.clone()),
            Event::Promised { promise } => self.promises.promise(promise.clone()),
            Event::Widened {
                promise,
                authorised: true,
            } => self.promises.widen(promise.clone()),
            Event::Widened {
                authorised: false, ..
            } => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_fold_of_the_events_written_is_the_state_kept() {
        let promise = |c: &str| {
            Promise::from_arguments(
                "t",
                json!({"action": "git.push", "ceiling": c, "reason": "not today"}),
            )
            .expect("promise")
        };
        let plan = Plan::from_arguments(json!({"steps": [{"step": "one", "status": "pending"}]}))
            .expect("plan");
        let events = vec![
            Event::Plan { plan: plan.clone() },
            Event::Promised {
                promise: promise("deny"),
            },
            Event::Widened {
                promise: promise("allow"),
                authorised: false,
            },
        ];
        let text = serde_json::to_string(&events).expect("written");
        let read: Vec<Event> = serde_json::from_str(&text).expect("read");
        let state = State::fold(&read);
        assert_eq!(state.plan, Some(plan));
        assert_eq!(
            state.promises.held(),
            [promise("deny")],
            "an unauthorised widening changes nothing"
        );
        let mut more = read;
        more.push(Event::Widened {
            promise: promise("ask"),
            authorised: true,
        });
        assert_eq!(State::fold(&more).promises.held(), [promise("ask")]);
    }
}
