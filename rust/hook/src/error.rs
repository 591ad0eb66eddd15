//! What can go wrong in a hook, a sync, a stop or a resume, each said so a
//! person knows what to do next.

use std::path::PathBuf;

use crate::agent::Agent;

/// An error of this crate.
#[derive(Debug, thiserror::Error)]
pub enum HookError {
    /// `chock hook <name>` or `--agents` named something Chock does not answer.
    #[error(
        "there is no agent named `{0}`: write claude, cursor, gemini or codex (or pre-commit, pre-push for git)"
    )]
    UnknownAgent(String),

    /// Standard input did not hold a JSON payload.
    #[error(
        "the {agent} hook payload on standard input is not JSON ({error}): `chock hook {agent}` is meant to be run by {agent} from its hook file"
    )]
    PayloadNotJson { agent: Agent, error: String },

    /// The payload lacked a field every call of that kind carries.
    #[error(
        "the {agent} hook payload has no {missing}: update {agent}, or report the payload shape to Chock"
    )]
    PayloadShape { agent: Agent, missing: &'static str },

    /// The hook was wired to an event Chock does not answer.
    #[error(
        "`chock hook {agent}` answers {expected} and was run for `{event}`: remove it from that event in the agent's hook file (`chock sync` writes the right one)"
    )]
    WrongEvent {
        agent: Agent,
        event: String,
        expected: &'static str,
    },

    /// Standard input could not be read.
    #[error("could not read the hook payload from standard input: {0}")]
    Stdin(#[source] std::io::Error),

    /// A file could not be read or written.
    #[error("{path}: {action} failed: {source}")]
    Io {
        path: PathBuf,
        action: &'static str,
        #[source]
        source: std::io::Error,
    },

    /// A settings file is not valid JSON: it was left untouched.
    #[error(
        "{path}: {message}; Chock left this file as it was: fix it (or move it away) and run `chock sync` again"
    )]
    Unparsable { path: PathBuf, message: String },

    /// A settings file is JSON but not the shape the agent documents.
    #[error(
        "{path}: {message}; Chock left this file as it was: fix it (or move it away) and run `chock sync` again"
    )]
    Unexpected { path: PathBuf, message: String },

    /// A git hook already exists in a language Chock cannot add a line to.
    #[error(
        "{path}: this hook is not a shell script ({interpreter}), so Chock did not change it: call `chock hook {hook}` from it yourself, or move it away and run `chock sync` again"
    )]
    ForeignHook {
        path: PathBuf,
        interpreter: String,
        hook: &'static str,
    },

    /// `chock sync` was asked to wire git hooks outside a git repository.
    #[error(
        "{0} is not inside a git repository, so there are no git hooks to write: run `git init` first, or pass --project"
    )]
    NotARepository(PathBuf),

    /// No home or state directory to keep the user-wide stop in.
    #[error(
        "neither CHOCK_STATE_DIR, XDG_STATE_HOME nor HOME is set to an absolute path, so Chock has no place for the stop of every project: set one of them"
    )]
    NoStateDir,
}
