//! The door a question came through, as every log line names it.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// The door a question came through, as the decision log spells it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Route {
    /// `chock exec`.
    Exec,
    /// An agent's hook (`chock hook <agent>`).
    Hook,
    /// A git hook (`pre-commit`, `pre-push`) at the person's terminal.
    Git,
    /// A git hook's check run by the CI gate on a pull request.
    Ci,
    /// The tool server (`chock mcp`), and the builds its calls make.
    Mcp,
    /// `chock build`.
    Build,
    /// Flake inputs read at session start.
    Inputs,
    /// Chock's own agent session (`chock run`), and what it decides before
    /// its first turn (`model.select`).
    Run,
    /// A line written by hand with `chock log append`, the hidden command
    /// tests use to fill a log. No question comes through it, so it is not
    /// one of [`Route::ALL`].
    Cli,
    /// A sink's shipper (`chock log ship`), saying what it could not ship
    /// (`log.sink.overflow`). No question comes through it either.
    Sink,
}

impl Route {
    /// Every door a question comes through, for tables.
    pub const ALL: [Route; 8] = [
        Route::Exec,
        Route::Hook,
        Route::Git,
        Route::Ci,
        Route::Mcp,
        Route::Build,
        Route::Inputs,
        Route::Run,
    ];

    /// The door its log word names.
    pub fn parse(word: &str) -> Option<Route> {
        Route::ALL.into_iter().find(|r| r.as_str() == word)
    }

    /// The routes that are no door: lines Chock writes with no question.
    pub const NOT_DOORS: [Route; 2] = [Route::Cli, Route::Sink];

    /// The route a log line's word names: a door, or a line written with
    /// no question (by hand, by a sink's shipper).
    pub fn read(word: &str) -> Option<Route> {
        Route::parse(word).or_else(|| Route::NOT_DOORS.into_iter().find(|r| r.as_str() == word))
    }

    /// The agent kind a call on this route is asked with when nothing
    /// names another: an agent's hook asks as the agent (`claude`,
    /// `cursor`, `gemini`, `codex`; `claude` here), a git hook as `git`,
    /// everything else as Chock's main agent.
    pub fn usual_agent_kind(self) -> &'static str {
        match self {
            Route::Hook => "claude",
            Route::Git | Route::Ci => "git",
            Route::Exec
            | Route::Mcp
            | Route::Build
            | Route::Inputs
            | Route::Run
            | Route::Cli
            | Route::Sink => "main",
        }
    }

    /// The word in the log's `route` field.
    pub fn as_str(self) -> &'static str {
        match self {
            Route::Exec => "exec",
            Route::Hook => "hook",
            Route::Git => "git",
            Route::Ci => "ci",
            Route::Mcp => "mcp",
            Route::Build => "build",
            Route::Inputs => "inputs",
            Route::Run => "run",
            Route::Cli => "cli",
            Route::Sink => "sink",
        }
    }
}

impl fmt::Display for Route {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for Route {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for Route {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Route, D::Error> {
        let word = String::deserialize(deserializer)?;
        Route::read(&word).ok_or_else(|| {
            let known: Vec<&str> = Route::ALL
                .iter()
                .chain(&Route::NOT_DOORS)
                .map(|r| r.as_str())
                .collect();
            serde::de::Error::custom(format!(
                "unknown route `{word}`: a line names one of {}",
                known.join(", ")
            ))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_route_reads_back_the_word_it_writes() {
        for route in Route::ALL.into_iter().chain(Route::NOT_DOORS) {
            let word = serde_json::to_string(&route).unwrap();
            assert_eq!(word, format!("\"{}\"", route.as_str()));
            assert_eq!(serde_json::from_str::<Route>(&word).unwrap(), route);
        }
    }

    #[test]
    fn a_line_written_by_hand_is_no_door() {
        assert_eq!(Route::read("cli"), Some(Route::Cli));
        assert_eq!(Route::parse("cli"), None);
        assert_eq!(Route::read("sink"), Some(Route::Sink));
        assert_eq!(Route::parse("sink"), None);
        let error = serde_json::from_str::<Route>("\"shell\"").unwrap_err();
        assert!(
            error.to_string().contains("unknown route `shell`"),
            "{error}"
        );
    }
}
