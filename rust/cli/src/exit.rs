//! Exit codes shared by every command; the README's table is written from these.

/// The command did what was asked (a policy answer of deny is still a success for `explain`).
pub const SUCCESS: u8 = 0;
/// The command line was not understood, or something it needs could not be loaded.
pub const FAILURE: u8 = 1;
/// A fault in the machine or in what was run (a blocking doctor row, a broken build).
pub const FAULT: u8 = 2;
/// The act was refused by the policy or by a person.
pub const REFUSED: u8 = 3;
/// `chock run` stopped at `--max-turns` with the model still calling tools.
pub const STOPPED: u8 = 4;
/// Stopped with Ctrl-C at a prompt, as a shell reports a process that
/// SIGINT ended.
pub const INTERRUPTED: u8 = 130;
