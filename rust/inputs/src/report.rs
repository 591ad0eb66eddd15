//! What a survey or a fetch found: each input's state and each host's answer.

use chock_log::AnsweredBy;
use chock_policy::{Decision, Verdict};
use serde::Serialize;
use serde_json::{Value, json};

use chock_flakelock::{Input, InputRefusal};

/// Every input of the lock and every host asked about.
#[derive(Debug, Clone)]
pub struct Report {
    pub inputs: Vec<InputReport>,
    pub hosts: Vec<HostAnswer>,
}

/// One input and where it stands.
#[derive(Debug, Clone)]
pub struct InputReport {
    pub name: String,
    pub node: String,
    /// `github`, `tarball`, ... (`None` when the lock's node was refused).
    pub input_type: Option<&'static str>,
    pub describe: Option<String>,
    pub store_path: Option<String>,
    /// `host:port` of each host it is fetched from.
    pub hosts: Vec<String>,
    pub state: InputState,
}

/// Where an input stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InputState {
    /// The store held it before anything was fetched.
    InStore,
    /// Fetched now, its narHash checked, added and its path checked.
    Fetched,
    /// Not in the store, and every host it needs is allowed (a survey).
    Missing,
    /// Not in the store, and these actions are not allowed.
    NotAllowed { hosts: Vec<String> },
    /// A person refused a host it needs in this session; `earlier` when that
    /// was before this call (it was not asked again).
    RefusedByPerson {
        host: String,
        port: u16,
        action: String,
        earlier: bool,
    },
    /// The lock names it in a way Chock does not fetch.
    Refused(InputRefusal),
    /// Fetching or checking failed; nothing was written.
    Failed(String),
    /// A build did not want it.
    NotWanted,
    /// The store could not be asked.
    Unknown,
}

impl InputState {
    /// One word for it, as `--json` prints it.
    pub fn as_str(&self) -> &'static str {
        match self {
            InputState::InStore => "in_store",
            InputState::Fetched => "fetched",
            InputState::Missing => "missing",
            InputState::NotAllowed { .. } => "not_allowed",
            InputState::RefusedByPerson { .. } => "refused_by_person",
            InputState::Refused(_) => "refused",
            InputState::Failed(_) => "failed",
            InputState::NotWanted => "not_wanted",
            InputState::Unknown => "unknown",
        }
    }

    /// Whether the input is in the store now.
    pub fn is_present(&self) -> bool {
        matches!(self, InputState::InStore | InputState::Fetched)
    }

    /// The sentence a person reads about it.
    pub fn explain(&self) -> String {
        match self {
            InputState::InStore => "in the store".into(),
            InputState::Fetched => "fetched: narHash checked, added to the store".into(),
            InputState::Missing => {
                "not in the store; nothing needs asking to fetch it (`chock inputs --fetch`)".into()
            }
            InputState::NotAllowed { hosts } => format!(
                "not fetched: {} {} not allowed",
                hosts.join(", "),
                if hosts.len() == 1 { "is" } else { "are" }
            ),
            InputState::RefusedByPerson {
                host,
                port,
                earlier,
                ..
            } => format!(
                "not fetched: {host}:{port} was refused {} in this session; work with what is there rather than asking again",
                if *earlier { "earlier" } else { "just now" }
            ),
            InputState::Refused(refusal) => format!("refused: {}", refusal.why),
            InputState::Failed(why) => format!("failed: {why}"),
            InputState::NotWanted => "not wanted by this build".into(),
            InputState::Unknown => "unknown: the store could not be asked".into(),
        }
    }
}

impl InputReport {
    pub(crate) fn new(input: &Input, state: InputState) -> InputReport {
        let source = input.source.as_ref().ok();
        InputReport {
            name: input.name.clone(),
            node: input.node.clone(),
            input_type: source.map(|s| s.input_type.as_str()),
            describe: source.map(|s| s.describe.clone()),
            store_path: source.map(|s| s.store_path.to_string()),
            hosts: input
                .hosts()
                .iter()
                .map(|e| format!("{}:{}", e.host, e.port))
                .collect(),
            state,
        }
    }
}

/// The answer about one host (or one redirect hop).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostAnswer {
    pub host: String,
    pub port: u16,
    /// The inputs that need it (for a hop: the redirect).
    pub inputs: Vec<String>,
    /// The phase name, `nix.net.eval.<reversed>.<port>`.
    pub action: String,
    /// The either-phase name, `nix.net.<reversed>.<port>`.
    pub either: Option<String>,
    /// The final answer (a person's, when one was asked).
    pub decision: Decision,
    pub answered_by: AnsweredBy,
    /// Whether fetching from it may go ahead.
    pub granted: bool,
    /// A person's refusal from earlier in the session, not asked again.
    pub earlier: bool,
    /// What the rules said, and the rule that would change it.
    pub verdict: Option<Verdict>,
}

impl HostAnswer {
    /// For a host fetching was not granted: what it is, how it was
    /// answered, and the rule that would allow it when one would. What
    /// `chock build` prints and the tool server tells the agent.
    pub fn refusal(&self) -> Option<String> {
        if self.granted {
            return None;
        }
        let by = match self.answered_by {
            AnsweredBy::Rule => "by a rule",
            AnsweredBy::Default => "by a shipped default",
            AnsweredBy::Person => "by a person",
            AnsweredBy::Nobody => "and nobody could be asked",
            AnsweredBy::Client => "and the client dismissed the question with no person answering",
            AnsweredBy::Reviewer => "by a reviewer agent",
        };
        let mut text = format!(
            "{}:{} (for {}) is {}, answered {} {by}",
            self.host,
            self.port,
            self.inputs.join(", "),
            self.action,
            self.decision.as_str(),
        );
        if let Some(suggestion) = self.verdict.as_ref().and_then(|v| v.suggestion.as_ref()) {
            text.push_str(&format!(
                "\n  to fetch from it, add to {}:\n    {},",
                suggestion.block, suggestion.rule
            ));
        }
        Some(text)
    }
}

#[derive(Serialize)]
struct HostJson<'a> {
    host: &'a str,
    port: u16,
    inputs: &'a [String],
    action: &'a str,
    either: Option<&'a str>,
    decision: &'a str,
    answered_by: &'a str,
    granted: bool,
    earlier: bool,
    rules: Option<&'a Verdict>,
}

impl Report {
    /// Whether every input the lock names is in the store now.
    pub fn all_present(&self) -> bool {
        self.inputs.iter().all(|i| i.state.is_present())
    }

    /// The report as `chock inputs --json` prints it.
    pub fn to_json(&self) -> Value {
        let inputs: Vec<Value> = self
            .inputs
            .iter()
            .map(|i| {
                json!({
                    "input": i.name,
                    "node": i.node,
                    "type": i.input_type,
                    "source": i.describe,
                    "store_path": i.store_path,
                    "hosts": i.hosts,
                    "state": i.state.as_str(),
                    "message": i.state.explain(),
                })
            })
            .collect();
        let hosts: Vec<Value> = self
            .hosts
            .iter()
            .map(|h| {
                serde_json::to_value(HostJson {
                    host: &h.host,
                    port: h.port,
                    inputs: &h.inputs,
                    action: &h.action,
                    either: h.either.as_deref(),
                    decision: h.decision.as_str(),
                    answered_by: h.answered_by.as_str(),
                    granted: h.granted,
                    earlier: h.earlier,
                    rules: h.verdict.as_ref(),
                })
                .unwrap_or(Value::Null)
            })
            .collect();
        json!({ "inputs": inputs, "hosts": hosts })
    }
}
