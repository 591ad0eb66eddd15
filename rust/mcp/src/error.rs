//! Why the server could not start, or `chock approve` could not reach it.

use std::path::PathBuf;

/// A fault that stops the server or the approver before any tool call.
#[derive(Debug, thiserror::Error)]
pub enum McpError {
    /// The project could not be placed.
    #[error(transparent)]
    Project(#[from] chock_sandbox::project::ProjectError),
    /// A policy layer could not be read; nothing is served with half a policy.
    #[error(transparent)]
    Policy(#[from] chock_policy::PolicyError),
    /// The decision log's folder is unknown.
    #[error(transparent)]
    Log(#[from] chock_log::LogError),
    /// The container image chock.zon names cannot be the toolchain: a
    /// session holds its tree from its first second, or does not start.
    #[error(transparent)]
    Image(#[from] chock_sandbox::image::ImageLoadError),
    /// The server's name cannot be one label of `mcp.<name>.tool.<tool>`.
    #[error(
        "the server name `{name}` cannot name its tools' start rows ({source}); pass --name with letters, digits, `-` or `_`"
    )]
    Name {
        name: String,
        #[source]
        source: chock_policy::NameError,
    },
    /// The async runtime could not start.
    #[error("could not start the server's runtime: {0}; free some memory or threads and retry")]
    Runtime(std::io::Error),
    /// The caller stopped the start once the policy was read (`chock run`:
    /// the model was refused); the sentence says why.
    #[error("{0}")]
    Stopped(String),
    /// The MCP session ended in a fault rather than by the client closing stdin.
    #[error("the MCP session failed: {0}")]
    Session(String),
    /// The project directory could not be opened as the workspace.
    #[error(
        "the workspace {path} cannot be opened: {source}; check that it exists and is readable"
    )]
    Workspace {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The folder of the background commands' records could not be made.
    #[error(
        "the folder for background commands' records, {path}, cannot be made: {source}; check that its parent is yours and writable"
    )]
    TasksDir {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The session workspace (`--workspace`) could not be made.
    #[error(transparent)]
    SessionWorkspace(#[from] chock_sandbox::workspace::WorkspaceError),
    /// The approve socket's folder could not be made or read.
    #[error(
        "the approve socket folder {path} cannot be used: {source}; check its owner and mode (0700)"
    )]
    ApproveDir {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// No server is running that `chock approve` could answer.
    #[error(
        "no chock mcp server of yours is running (looked in {dir}); start your agent with Chock's tool server first"
    )]
    NoServer { dir: PathBuf },
    /// Talking to one server over its socket failed.
    #[error("the chock mcp server at {path} cannot be reached: {source}")]
    Unreachable {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The socket's other end is another user: it is neither asked nor answered.
    #[error(
        "{path} belongs to user {uid}, not you; only the user running the server can answer it"
    )]
    OtherUser { path: PathBuf, uid: u32 },
}
