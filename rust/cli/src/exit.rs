//! Exit codes shared by every command: [`TABLE`] is what `chock --help`, the
//! manual page and the README show, written from these.

/// The command did what was asked (a policy answer of deny is still a success for `explain`).
pub const SUCCESS: u8 = 0;
/// The command failed, or what it checked did not pass: something could
/// not be loaded, a blocking `doctor` row, a broken chain, a failed build.
pub const FAILURE: u8 = 1;
/// The command line was not understood (clap's own code for it).
pub const USAGE: u8 = 2;
/// The act was refused by the policy or by a person.
pub const REFUSED: u8 = 3;
/// `chock run` stopped at `--max-turns` with the model still calling tools.
pub const STOPPED: u8 = 4;
/// `chock exec`: Chock failed before the program ran. `exec` passes the
/// program's own status through, so its own outcomes take codes of the
/// range `env`, `timeout` and `docker run` keep for themselves, where no
/// program's 1 or 3 can be taken for them.
pub const EXEC_FAILED: u8 = 124;
/// `chock exec`: Chock refused to run the program.
pub const EXEC_REFUSED: u8 = 125;
/// Stopped with Ctrl-C at a prompt, as a shell reports a process that
/// SIGINT ended.
pub const INTERRUPTED: u8 = 130;
/// The reader of stdout went away, as a shell reports a process that
/// SIGPIPE ended (`git` and coreutils under a closed pipe): never 0, so a
/// pipeline under `set -o pipefail` does not take `chock check | head` for
/// a check that passed.
pub const PIPE_CLOSED: u8 = 141;

/// The table of exit codes, as `chock --help` and chock(1) print it.
pub const TABLE: &str = "\
Exit codes:
  0    done (an `explain` that answers deny is still done)
  1    failed, or a check did not pass (a blocking `doctor` row, a broken log chain, a failed build)
  2    the command line was not understood
  3    refused by the policy or by a person
  4    `chock run` stopped at --max-turns, --max-budget or --max-tokens, after 5 calls in a row it could not run, or the model refused to go on (its work kept)
  130  stopped with Ctrl-C at a prompt that reads with the echo off (`login`, `approve`)
  141  the reader of the output went away (`chock log show | head -1`), quietly, as git does
`chock exec` exits with the program's own status; its own outcomes are 124 (Chock failed before the program ran),
125 (refused), 126 (found but not runnable) and 127 (not found). `chock hook` speaks each agent's hook protocol (2 blocks).";
