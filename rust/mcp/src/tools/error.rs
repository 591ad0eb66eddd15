//! Why a tool call did not do what it was asked.
//!
//! Each kind is one the agent can act on differently: a refusal is not
//! retried unchanged, bad arguments are fixed, a missing thing is looked
//! for, a failed program is read. The words are the sentence the agent
//! reads; they become the tool result's text in one place, where the reply
//! is written ([`crate::session::Session::answer`]).

use crate::gateway::GatewayError;
use crate::workspace::FileError;

#[derive(Debug, thiserror::Error)]
pub enum ToolError {
    /// The gate refused the act: its sentence names the rule that decided
    /// and the one that would allow it.
    #[error("{0}")]
    Refused(String),
    /// A site's robots.txt does not let Chock read the page.
    #[error("refused: {0}; Chock honours robots.txt, so this page is not read")]
    Robots(String),
    /// The arguments do not fit the tool's schema; `takes` lists its fields.
    #[error("{tool}: the arguments cannot be read: {why}; it takes {takes}")]
    Unreadable {
        tool: String,
        why: String,
        takes: String,
    },
    /// An argument outside a bound the tool's schema advertises.
    #[error("{tool}: `{field}` {shown}, outside its bounds ({range}); nothing was done")]
    OutOfBounds {
        tool: String,
        field: String,
        shown: String,
        range: String,
    },
    /// An argument the tool cannot act on; the sentence names it and says
    /// what would do.
    #[error("{0}")]
    Argument(String),
    /// An act whose name cannot be written (a host, a secret, a tool).
    #[error(transparent)]
    Name(#[from] chock_policy::NameError),
    /// What the call names does not exist: a tool, a task, a skill, an input.
    #[error("{0}")]
    NotFound(String),
    /// A file of the workspace could not be read, listed or written.
    #[error(transparent)]
    File(#[from] FileError),
    /// What a write would leave breaks one of the project's style rules;
    /// nothing was written.
    #[error("{0}")]
    Style(String),
    /// The program ran and did not succeed (a nonzero exit, a kill), or a
    /// page answered an error: its status and output.
    #[error("{0}")]
    Ran(String),
    /// The program was killed at its time limit: what it printed until then.
    #[error("{0}")]
    TimedOut(String),
    /// The sandbox could not start or run the program.
    #[error("{0}")]
    Sandbox(String),
    /// A Nix evaluation or build failed.
    #[error("{0}")]
    Nix(String),
    /// The network: a page or a search engine could not be read.
    #[error("{0}")]
    Network(String),
    /// The search engine could not be asked, or did not answer.
    #[error(transparent)]
    Search(#[from] chock_search::SearchError),
    /// A language server did not answer, or answered an error.
    #[error("{0}")]
    LanguageServer(String),
    /// An MCP server behind the gateway failed.
    #[error(transparent)]
    Upstream(#[from] GatewayError),
    /// serve_port could not publish the port.
    #[error("serve_port: not published: {0}")]
    NotPublished(#[from] crate::ports::PortError),
    /// The session lacks what the tool needs (a search engine, a workspace,
    /// a free slot for one more task or port).
    #[error("{0}")]
    Unavailable(String),
    /// The session's workspace, which every tool works in, was not made.
    #[error(transparent)]
    Unmade(#[from] crate::session::Unmade),
    /// The client or the person cancelled the call.
    #[error("{tool} was cancelled by {by}")]
    Cancelled { tool: String, by: &'static str },
    /// Work the tool handed to a thread of its own ended without an answer.
    #[error("{what} stopped unexpectedly ({why}); this is a bug in {command}")]
    Bug {
        what: String,
        why: String,
        command: &'static str,
    },
}

impl From<crate::gate::Refusal> for ToolError {
    fn from(crate::gate::Refusal(why): crate::gate::Refusal) -> ToolError {
        ToolError::Refused(why)
    }
}

impl ToolError {
    /// The error of work on a thread of its own that ended without an
    /// answer (a panic, a runtime shutting down).
    pub fn stopped(
        what: impl Into<String>,
        why: impl std::fmt::Display,
        command: &'static str,
    ) -> ToolError {
        ToolError::Bug {
            what: what.into(),
            why: why.to_string(),
            command,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The words the agent reads of the errors this type words itself,
    /// as every tool said them before they had a type.
    #[test]
    fn each_kind_says_what_the_agent_reads() {
        let said = |error: ToolError| error.to_string();
        assert_eq!(
            said(ToolError::Unreadable {
                tool: "grep".into(),
                why: "missing field `pattern`".into(),
                takes: "pattern, path".into(),
            }),
            "grep: the arguments cannot be read: missing field `pattern`; it takes pattern, path"
        );
        assert_eq!(
            said(ToolError::OutOfBounds {
                tool: "grep".into(),
                field: "max_results".into(),
                shown: "is 0".into(),
                range: "from 1 to 2000".into(),
            }),
            "grep: `max_results` is 0, outside its bounds (from 1 to 2000); nothing was done"
        );
        assert_eq!(
            said(ToolError::Cancelled {
                tool: "run_command".into(),
                by: "the client",
            }),
            "run_command was cancelled by the client"
        );
        assert_eq!(
            said(ToolError::stopped("run_command", "a panic", "chock mcp")),
            "run_command stopped unexpectedly (a panic); this is a bug in chock mcp"
        );
        assert_eq!(
            said(ToolError::Robots(
                "https://a.example/robots.txt disallows /x".into()
            )),
            "refused: https://a.example/robots.txt disallows /x; Chock honours robots.txt, so this page is not read"
        );
        let gone = FileError::NotFound {
            path: "a.txt".into(),
        };
        assert_eq!(
            said(ToolError::from(FileError::NotWritten(Box::new(gone)))),
            "`a.txt` does not exist in the workspace; nothing was written"
        );
    }
}
