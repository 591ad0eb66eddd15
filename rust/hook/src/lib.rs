//! Agent hooks: decide the tool calls of Claude Code, Cursor, Gemini CLI and Codex; wire hooks, git hooks and CI.

#![forbid(unsafe_code)]

pub mod agent;
pub mod answer;
mod cursor_mcp;
pub mod decide;
mod error;
pub mod guards;
pub mod migrate;
pub mod naming;
pub mod overrides;
pub mod payload;
pub mod project;
pub mod run;
pub mod stop;
pub mod sync;
pub mod watchdog;

pub use error::HookError;
