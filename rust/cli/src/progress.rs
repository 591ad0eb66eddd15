//! Progress on a terminal, the one place Chock draws while it works.
//!
//! The libraries know nothing of terminals: they say what they are doing as
//! tracing events. chock-store passes on the daemon's build log lines and
//! activities (target `nix_daemon`); chock-nix, chock-inputs and
//! chock-sandbox name each long step (target [`TARGET`]): evaluating,
//! fetching an input, writing to the store, building, a dev shell. While a
//! command runs a long library call inside [`during`], and stderr is a
//! terminal, the newest of those events is shown on one line beside a
//! spinner, cleared when the call returns. On a pipe or a file nothing is
//! drawn and nothing is printed; `--verbose` prints the events as log lines
//! instead.

use std::io::{IsTerminal, Write};
use std::sync::Mutex;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use tracing::field::{Field, Visit};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::Layer;
use tracing_subscriber::filter::Targets;
use tracing_subscriber::layer::Context;

/// The tracing target of the libraries' progress events.
pub const TARGET: &str = "chock_progress";

/// The line drawn while [`during`] runs; `None` outside it or off a terminal.
static LINE: Mutex<Option<ProgressBar>> = Mutex::new(None);

fn line() -> Option<ProgressBar> {
    LINE.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .clone()
}

/// The layer that draws, when stderr is a terminal: the daemon's messages
/// and the libraries' progress events, nothing else.
pub fn layer<S: Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>>()
-> Option<impl Layer<S>> {
    std::io::stderr().is_terminal().then(|| {
        Drawn.with_filter(
            Targets::new()
                .with_target("nix_daemon", Level::DEBUG)
                .with_target(TARGET, Level::INFO),
        )
    })
}

/// Runs `work` with its progress drawn on the terminal, and clears the line
/// after it; without a terminal it only runs `work`.
pub fn during<R>(work: impl FnOnce() -> R) -> R {
    if std::io::stderr().is_terminal() {
        let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
        if let Ok(style) = ProgressStyle::with_template("{spinner} {elapsed} {wide_msg}") {
            bar.set_style(style);
        }
        bar.enable_steady_tick(Duration::from_millis(120));
        *LINE
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(bar);
    }
    let result = work();
    if let Some(bar) = LINE
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .take()
    {
        bar.finish_and_clear();
    }
    result
}

/// Hides the line while `write` writes to the terminal (a question, a
/// warning), then draws it again.
pub fn suspend<R>(write: impl FnOnce() -> R) -> R {
    match line() {
        Some(bar) => bar.suspend(write),
        None => write(),
    }
}

/// stderr for the log lines tracing prints, written with the line hidden.
pub struct Stderr;

impl Write for Stderr {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        suspend(|| std::io::stderr().write_all(bytes)).map(|()| bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        std::io::stderr().flush()
    }
}

struct Drawn;

impl<S: Subscriber> Layer<S> for Drawn {
    fn on_event(&self, event: &Event<'_>, _context: Context<'_, S>) {
        let Some(bar) = line() else {
            return;
        };
        let mut message = Message::default();
        event.record(&mut message);
        // A build log line may hold several lines, and only one is drawn.
        if let Some(text) = message.0.lines().map(str::trim).rfind(|l| !l.is_empty()) {
            bar.set_message(text.to_owned());
        }
    }
}

/// The event's `message` field, as its format string made it.
#[derive(Default)]
struct Message(String);

impl Visit for Message {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        if field.name() == "message" {
            self.0 = format!("{value:?}");
        }
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == "message" {
            value.clone_into(&mut self.0);
        }
    }
}
