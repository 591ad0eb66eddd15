//! Exit codes shared by every command; the README's table is written from these.

// Some codes are used only by commands that later issues build.
#![allow(dead_code)]

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
/// The command exists in the table but is not built yet.
pub const NOT_BUILT: u8 = 5;

/// Prints why a command is not built yet and returns its exit code, never 0.
pub fn not_built(command: &str, waits_on: &str) -> std::process::ExitCode {
    eprintln!("chock {command}: not implemented yet, because it waits on {waits_on}");
    NOT_BUILT.into()
}
