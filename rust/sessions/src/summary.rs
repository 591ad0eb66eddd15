//! A session folded into what `chock sessions` and `chock usage` show.

use crate::error::SessionError;
use crate::event::{End, Event, ModelRef, Tokens, Turn};
use crate::file::{Stored, parse_bytes};

/// The kind of a session event holding one spawned agent's run: its
/// `kind`, and its `turns` (each reply as a `turn` event holds it, between
/// its tool results).
pub const AGENT_EVENT: &str = "agent";
/// The kind of a session event holding one act put to the reviewer agent:
/// the reviewer's `kind`, and its reply as a `turn` event holds it (`turn`,
/// null when none came).
pub const REVIEW_EVENT: &str = "review";
/// The kind of a session event holding the title the agent gave the
/// session (`set_title`): its `title`; the newest is the session's.
pub const TITLE_EVENT: &str = "title";

/// Which agent of a session used tokens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Agent {
    /// The session's own agent (the main one).
    Main,
    /// An agent it spawned, of this kind.
    Spawned(String),
    /// The reviewer agent, of this kind.
    Reviewer(String),
}

/// The tokens one agent used through one model in a session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelUsage {
    pub agent: Agent,
    pub model: ModelRef,
    pub turns: u64,
    pub tokens: Tokens,
}

/// A spawned agent's run or a review, as far as usage reads it.
#[derive(serde::Deserialize)]
struct Spent {
    kind: String,
    #[serde(default)]
    turns: Vec<serde_json::Value>,
    #[serde(default)]
    turn: Option<serde_json::Value>,
}

/// One session, folded.
#[derive(Debug, Clone, PartialEq)]
pub struct Summary {
    pub id: String,
    /// When its first event was written.
    pub started: Option<String>,
    /// When its last event was written.
    pub last: Option<String>,
    pub project: Option<String>,
    /// The model it talked to last.
    pub model: Option<ModelRef>,
    /// The title the agent gave it last, if any.
    pub title: Option<String>,
    /// Model replies over the whole session, resumes included.
    pub turns: u64,
    /// How it ended last; `None` while running, or when it stopped
    /// without saying (killed).
    pub ended: Option<End>,
    /// Its lock is held by a live process.
    pub running: bool,
    /// Tokens per agent and model, in the order first used: the main
    /// agent's, its spawned agents' and the reviewer's.
    pub usage: Vec<ModelUsage>,
    /// Why its log could not be read whole, when it could not.
    pub unreadable: Option<String>,
}

impl Summary {
    /// Folds a log's bytes (or why they could not be read).
    pub fn of(id: &str, running: bool, bytes: Result<Vec<u8>, SessionError>) -> Summary {
        let mut summary = Summary {
            id: id.to_owned(),
            started: None,
            last: None,
            project: None,
            model: None,
            title: None,
            turns: 0,
            ended: None,
            running,
            usage: Vec::new(),
            unreadable: None,
        };
        match bytes.map(|b| parse_bytes(&b)) {
            Ok(Ok(stored)) => summary.fold(&stored),
            Ok(Err((line, why))) => summary.unreadable = Some(format!("line {line}: {why}")),
            Err(e) => summary.unreadable = Some(e.to_string()),
        }
        summary
    }

    fn fold(&mut self, stored: &[Stored]) {
        self.started = stored.first().map(|s| s.ts.clone());
        self.last = stored.last().map(|s| s.ts.clone());
        for s in stored {
            match &s.event {
                Event::Start(start) => {
                    self.project = Some(start.project.clone());
                    self.model = Some(start.model.clone());
                }
                Event::Resume(model) => {
                    self.model = Some(model.clone());
                    self.ended = None;
                }
                Event::Turn(turn) => {
                    self.turns += 1;
                    self.spent(Agent::Main, turn);
                }
                Event::End(end) => self.ended = Some(end.clone()),
                Event::Custom(custom) if custom.kind == TITLE_EVENT => {
                    if let Some(title) = custom.fields.get("title").and_then(|t| t.as_str()) {
                        self.title = Some(title.to_owned());
                    }
                }
                Event::Custom(custom) => {
                    // Another part's event that does not read is its own
                    // to name (`chock sessions verify` reads every line).
                    let Some(Ok(spent)) = s.event.decode::<Spent>(&custom.kind) else {
                        continue;
                    };
                    let agent = match custom.kind.as_str() {
                        AGENT_EVENT => Agent::Spawned(spent.kind),
                        REVIEW_EVENT => Agent::Reviewer(spent.kind),
                        _ => continue,
                    };
                    // A run's tool results sit between its turns; only a
                    // turn holds tokens.
                    for turn in spent.turns.into_iter().chain(spent.turn) {
                        if let Ok(turn) = serde_json::from_value::<Turn>(turn) {
                            self.spent(agent.clone(), &turn);
                        }
                    }
                }
                Event::User(_) | Event::ToolResult(_) => {}
            }
        }
    }

    fn spent(&mut self, agent: Agent, turn: &Turn) {
        match self
            .usage
            .iter_mut()
            .find(|u| u.agent == agent && u.model == turn.model)
        {
            Some(used) => {
                used.turns += 1;
                used.tokens = used.tokens.plus(turn.tokens);
            }
            None => self.usage.push(ModelUsage {
                agent,
                model: turn.model.clone(),
                turns: 1,
                tokens: turn.tokens,
            }),
        }
    }

    /// Tokens over every agent and model.
    pub fn tokens(&self) -> Tokens {
        self.usage
            .iter()
            .fold(Tokens::default(), |sum, u| sum.plus(u.tokens))
    }

    /// How it ended, in one word: `running`, `done`, `max_turns`, `failed`,
    /// `unreadable`, or `stopped` (it ended without saying how: killed).
    pub fn state(&self) -> &str {
        if self.running {
            "running"
        } else if self.unreadable.is_some() {
            "unreadable"
        } else {
            self.ended.as_ref().map_or("stopped", |e| e.how.as_str())
        }
    }
}
