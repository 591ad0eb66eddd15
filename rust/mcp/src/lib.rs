//! Chock's MCP tool server: each tool call decided, confined and logged.
//!
//! `chock mcp` puts Chock's tools in front of the agents people already run
//! (Claude Code, Codex, Gemini CLI, Zed, Goose...) through the Model Context
//! Protocol over stdio. Every call is named (`call.read_file`, `exec.*`,
//! `net.fetch.<host>`, `nix.build.*`), answered by the policy read once at
//! start, asked of a person when the answer is `ask` (through the client's
//! elicitation, else a `chock approve` running in another terminal), written
//! to the decision log (route `mcp`), and only then carried out: file tools
//! inside the workspace and nowhere else, commands in the sandbox.
//!
//! The MCP servers `chock.zon` names are offered through the same server
//! (the gateway): their tools as `<server>__<tool>`, each call decided under
//! `mcp.<server>.tool.<tool>`; secrets a call or a server is granted are
//! scrubbed from every answer.
//!
//! [`serve_stdio`] runs the server; [`approve`] is both the socket the server
//! listens on for answers and the client `chock approve` uses.

#![forbid(unsafe_code)]

mod agent;
pub mod approve;
mod ask;
mod build;
mod call_socket;
pub mod credential;
mod error;
pub mod extra;
pub mod fetch;
mod gate;
mod gateway;
pub mod local;
mod ports;
pub mod push;
mod secrets;
mod server;
mod session;
mod style;
mod tasks;
mod tools;
mod transport;
pub mod workspace;

pub use ask::{
    ASK_TIMEOUT, Asked, CallAsker, Client, CredentialFor, Local, Person, Reply, Unanswered,
};
pub use chock_policy::Ceiling;
pub use error::McpError;
pub use gate::{Act, Decided, ForReview, POLICY_EDIT, Refusal, Reviewed, Reviewer};
pub use server::INSTRUCTIONS;
pub use session::{Failed, ServeOptions, serve, serve_stdio};
pub use tools::{LSP_MAX_STARTS, LSP_TOOLS, TOOL_NAMES};
pub use transport::MAX_MESSAGE_BYTES;
pub use workspace::FileError;

/// The route every line this server writes to the decision log carries.
pub const ROUTE: chock_gate::Route = chock_gate::Route::Mcp;
/// The agent kind the server asks as: the agent that talks to it is the main one.
pub const AGENT_KIND: &str = "main";
