//! One module per command; each owns its arguments and turns them into a library call.

pub mod acp;
pub mod apply;
pub mod approve;
pub mod build;
pub mod cache;
pub mod completions;
pub mod derivation;
pub mod doctor;
pub mod eval;
pub mod exec;
pub mod hook;
pub mod inputs;
pub mod log;
pub mod install_skills;
pub mod login;
pub mod mcp;
pub mod memory;
pub mod migrate;
pub mod packages;
pub mod policy;
pub mod run;
pub mod sessions;
pub mod skills;
pub mod status;
pub mod usage;
pub mod workspace;
