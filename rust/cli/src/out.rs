//! Everything a command prints on stdout goes through `outln!`/`out!` or
//! [`stdout`], so a reader that goes away never meets a panic. Rust ignores
//! SIGPIPE, which turns a closed pipe into `EPIPE` on the next write, and
//! `println!` panics on it. Chock then stops quietly, as git does, with
//! 141, what a shell shows for a program SIGPIPE ended: the reader chose to
//! stop reading (`chock log show --json | head -1`), but what the command
//! would have said was not all said, so a pipeline under `pipefail` must
//! not take it for a success (`chock check | head`).
//! Any other write error (a full disk behind `> file`) ends it with 1,
//! named on stderr. Both end the process where the write failed: nothing a
//! command does after its output is gone is worth doing. `chock hook` is
//! the exception: its 0 is an agent's "go on", so it writes its answer
//! itself and fails when it cannot (commands/hook.rs).

use std::io::{self, Write};

use crate::exit;

/// `println!` that ends the process as [`closed`] says when stdout is gone.
macro_rules! outln {
    () => {
        $crate::out::write(format_args!("\n"))
    };
    ($($arg:tt)*) => {
        $crate::out::write(format_args!("{}\n", format_args!($($arg)*)))
    };
}

/// `print!` likewise.
macro_rules! out {
    ($($arg:tt)*) => {
        $crate::out::write(format_args!($($arg)*))
    };
}

/// Writes `args` on stdout, or ends the process when it cannot.
pub fn write(args: std::fmt::Arguments<'_>) {
    stdout()
        .write_fmt(args)
        .unwrap_or_else(|error| closed(&error));
}

/// Stdout for a command that writes it with `Write` (JSON, raw bytes):
/// its writes never return an error, they end the process instead.
pub fn stdout() -> Stdout {
    Stdout(io::stdout())
}

pub struct Stdout(io::Stdout);

impl Write for Stdout {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        Ok(self.0.write(bytes).unwrap_or_else(|error| closed(&error)))
    }

    fn flush(&mut self) -> io::Result<()> {
        self.0.flush().unwrap_or_else(|error| closed(&error));
        Ok(())
    }
}

/// Ends the process for a write to stdout that failed with `error`.
fn closed(error: &io::Error) -> ! {
    if error.kind() == io::ErrorKind::BrokenPipe {
        std::process::exit(exit::PIPE_CLOSED.into());
    }
    let _ = writeln!(io::stderr(), "chock: cannot write to stdout: {error}");
    std::process::exit(exit::FAILURE.into())
}

/// The JSON a `--json` command prints on stdout for an error:
/// `{"error": {"message", "file", "line"}}` (`kind` too where the command
/// has kinds), `file` and `line` null when the message names no place.
pub fn error_json(message: &str, kind: Option<&str>) -> serde_json::Value {
    let (file, line) = place(message).unzip();
    let mut error = serde_json::json!({ "message": message, "file": file, "line": line });
    if let Some(kind) = kind {
        error["kind"] = kind.into();
    }
    serde_json::json!({ "error": error })
}

/// The first `FILE:LINE:COL:` (or `FILE:LINE:`) a message names, as
/// Chock's parse errors begin.
fn place(message: &str) -> Option<(String, u64)> {
    message.split_whitespace().find_map(|word| {
        let mut parts = word.splitn(3, ':');
        let file = parts.next()?;
        let line = parts.next()?.parse().ok()?;
        parts.next()?;
        (file.contains('/') || file.contains('.')).then(|| (file.to_owned(), line))
    })
}

/// Whether the command line asks for JSON (`--json` before any `--`):
/// then an error is printed as [`error_json`] on stdout as well.
pub fn wants_json() -> bool {
    std::env::args()
        .skip(1)
        .take_while(|arg| arg != "--")
        .any(|arg| arg == "--json")
}

#[cfg(test)]
mod tests {
    #[test]
    fn an_error_s_place_is_its_file_and_line() {
        let error = super::error_json("loading: /p/chock.zon:3:7: `x` is not a ZON value", None);
        assert_eq!(error["error"]["file"], "/p/chock.zon");
        assert_eq!(error["error"]["line"], 3);
        let none = super::error_json("no daemon at 12:30:00: refused", Some("fault"));
        assert_eq!(none["error"]["file"], serde_json::Value::Null);
        assert_eq!(none["error"]["kind"], "fault");
    }
}
