//! Evaluation errors. Inside the evaluator an error carries raw positions
//! (cheap to create, and `tryEval` throws most of them away); at the
//! boundary it is rendered once into a message with file:line:col, a code
//! frame and a short trace.

use crate::source::{Pos, SourceMap};

/// What went wrong, as far as a caller or `tryEval` needs to know.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorKind {
    /// The source does not parse, or fails a check made before evaluation.
    Parse,
    /// `throw`: catchable by `tryEval`.
    Throw,
    /// A failed `assert`: catchable by `tryEval`.
    Assert,
    /// `abort`: never catchable.
    Abort,
    /// A value of the wrong type, a missing attribute, a bad argument.
    Eval,
    /// A value that needs itself to be computed.
    InfiniteRecursion,
    /// Deeper than the call depth allowed (`--max-call-depth`).
    StackOverflow,
    /// A file could not be read, or reading it is not allowed.
    Io,
    /// Refused by the embedding's bounds: a path outside the allowed roots,
    /// an impure builtin in pure mode.
    Refused,
    /// More memory than the evaluation may use.
    OutOfMemory,
    /// Interrupted (Ctrl-C).
    Interrupted,
    /// A builtin fix does not have (the fetchers outside pure mode).
    NotYet,
    /// The evaluation needs a derivation's output, which it cannot build
    /// (import from derivation); the message names the derivation.
    BuildNeeded,
    /// A flake input the evaluation needs is not in the store; the
    /// message names every absent input of its lock and their hosts.
    MissingInput,
}

impl ErrorKind {
    /// Whether `builtins.tryEval` catches this error (Nix catches `throw`
    /// and failed assertions only).
    pub fn catchable(self) -> bool {
        matches!(self, ErrorKind::Throw | ErrorKind::Assert)
    }
}

/// One line of the trace: "while evaluating ..." and where.
#[derive(Clone, Debug)]
pub struct Frame {
    pub pos: Pos,
    pub message: String,
    /// Shown even in a short trace (`builtins.addErrorContext`).
    pub always: bool,
}

#[derive(Debug)]
struct ErrorData {
    kind: ErrorKind,
    message: String,
    pos: Pos,
    trace: Vec<Frame>,
}

/// An error inside the evaluator. Boxed so `Result<Value, Error>` stays
/// small on the hot path.
#[derive(Debug)]
pub struct Error(Box<ErrorData>);

pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    pub fn new(kind: ErrorKind, message: impl Into<String>, pos: Pos) -> Self {
        Error(Box::new(ErrorData {
            kind,
            message: message.into(),
            pos,
            trace: Vec::new(),
        }))
    }

    pub fn eval(message: impl Into<String>, pos: Pos) -> Self {
        Error::new(ErrorKind::Eval, message, pos)
    }

    pub fn kind(&self) -> ErrorKind {
        self.0.kind
    }

    /// Sets the position if the error has none yet.
    pub fn at(mut self, pos: Pos) -> Self {
        if self.0.pos.is_none() {
            self.0.pos = pos;
        }
        self
    }

    /// Adds a frame to the trace (outermost frames are added last).
    pub fn with_frame(mut self, pos: Pos, message: impl Into<String>) -> Self {
        // Very deep recursions would otherwise build a huge trace; the
        // renderer shows only the ends of it anyway.
        if self.0.trace.len() < MAX_KEPT_FRAMES {
            self.0.trace.push(Frame {
                pos,
                message: message.into(),
                always: false,
            });
        }
        self
    }

    /// Adds context a program asked for (`builtins.addErrorContext`),
    /// which a short trace always shows.
    pub fn with_context(mut self, message: impl Into<String>) -> Self {
        self.0.trace.push(Frame {
            pos: Pos::NONE,
            message: message.into(),
            always: true,
        });
        self
    }

    /// The message Nix prints: `error:` with the trace, outermost first,
    /// then the error itself with its code frame.
    pub fn render(&self, sources: &SourceMap) -> String {
        let mut out = String::from("error:");
        let frames = self.shown_frames();
        if frames.is_empty() {
            out.push(' ');
            out.push_str(&indent_rest(&self.0.message, "       "));
            out.push('\n');
            if let Some(frame) = sources.frame(self.0.pos, "       ") {
                out.push_str(&frame);
            }
            return out;
        }
        out.push('\n');
        for entry in frames {
            match entry {
                Shown::Frame(f) => {
                    out.push_str(&format!(
                        "       … {}\n",
                        indent_rest(&f.message, "         ")
                    ));
                    if let Some(frame) = sources.frame(f.pos, "         ") {
                        out.push_str(&frame);
                    }
                    out.push('\n');
                }
                Shown::Omitted(n) => out.push_str(&format!("       ({n} frames omitted)\n\n")),
            }
        }
        out.push_str(&format!(
            "       error: {}\n",
            indent_rest(&self.0.message, "       ")
        ));
        if let Some(frame) = sources.frame(self.0.pos, "       ") {
            out.push_str(&frame);
        }
        out
    }

    /// A short trace: the outermost and innermost few frames, and every
    /// frame a program added with `addErrorContext`.
    fn shown_frames(&self) -> Vec<Shown<'_>> {
        let mut frames: Vec<&Frame> = self.0.trace.iter().rev().collect();
        frames.dedup_by(|a, b| a.pos == b.pos && a.message == b.message && a.always == b.always);
        let ordinary: Vec<usize> = (0..frames.len()).filter(|&i| !frames[i].always).collect();
        let keep = |i: usize| {
            frames[i].always || {
                let rank = ordinary.iter().position(|&j| j == i).unwrap_or(0);
                rank < SHOWN_EACH_END || rank + SHOWN_EACH_END >= ordinary.len()
            }
        };
        let mut shown = Vec::new();
        let mut omitted = 0;
        for (i, frame) in frames.iter().enumerate() {
            if keep(i) {
                if omitted > 0 {
                    shown.push(Shown::Omitted(omitted));
                    omitted = 0;
                }
                shown.push(Shown::Frame(frame));
            } else {
                omitted += 1;
            }
        }
        if omitted > 0 {
            shown.push(Shown::Omitted(omitted));
        }
        shown
    }
}

enum Shown<'e> {
    Frame(&'e Frame),
    Omitted(usize),
}

const MAX_KEPT_FRAMES: usize = 1000;
const SHOWN_EACH_END: usize = 4;

fn indent_rest(text: &str, indent: &str) -> String {
    text.replace('\n', &format!("\n{indent}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::Origin;
    use std::rc::Rc;

    #[test]
    fn renders_message_and_frame() {
        let mut map = SourceMap::new();
        let f = map.add(Origin::File("/a.nix".into()), Rc::from("x y\n"));
        let e = Error::eval("undefined variable 'y'", map.pos(f, 2));
        assert_eq!(
            e.render(&map),
            "error: undefined variable 'y'\n       at /a.nix:1:3:\n            1| x y\n             |   ^\n            2|\n"
        );
    }

    #[test]
    fn renders_trace_outermost_first() {
        let map = SourceMap::new();
        let e = Error::new(ErrorKind::Throw, "boom", Pos::NONE)
            .with_frame(Pos::NONE, "inner")
            .with_frame(Pos::NONE, "outer");
        assert_eq!(
            e.render(&map),
            "error:\n       … outer\n\n       … inner\n\n       error: boom\n"
        );
        assert!(e.kind().catchable());
    }
}
