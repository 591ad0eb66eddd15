//! What a fetch reports while it runs. The library says what happens; the
//! binary draws it (a bar on a terminal, plain lines otherwise).

/// One step of fetching one input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event<'a> {
    /// A download or clone begins from `from`; `bytes` when the size is known.
    Start { from: &'a str, bytes: Option<u64> },
    /// So many more bytes arrived.
    Bytes(u64),
    /// A step after the transfer: `unpacking`, `checking narHash`, `adding to the store`.
    Stage(&'a str),
    /// The input is done: in the store, or not, and why in `message`.
    Done { ok: bool, message: &'a str },
}

/// Receives the events of every fetch, tagged with the input's name.
pub trait Progress: Sync {
    fn event(&self, input: &str, event: Event<'_>);
}

/// Reports nothing.
#[derive(Debug, Clone, Copy, Default)]
pub struct Silent;

impl Progress for Silent {
    fn event(&self, _input: &str, _event: Event<'_>) {}
}

/// Reports each step as a tracing event of target `chock_progress`, which
/// the binary draws on a terminal and `--verbose` logs. Byte counts are left
/// out: a fetch at build time shows what it is doing, not how far it is.
#[derive(Debug, Clone, Copy, Default)]
pub struct Traced;

impl Progress for Traced {
    fn event(&self, input: &str, event: Event<'_>) {
        match event {
            Event::Start { from, .. } => {
                tracing::info!(target: "chock_progress", "{input}: fetching {from}")
            }
            Event::Stage(stage) => tracing::info!(target: "chock_progress", "{input}: {stage}"),
            Event::Done { message, .. } => {
                tracing::info!(target: "chock_progress", "{input}: {message}")
            }
            Event::Bytes(_) => {}
        }
    }
}

/// One input's view of a [`Progress`].
pub(crate) struct Reporter<'a> {
    pub(crate) progress: &'a dyn Progress,
    pub(crate) input: &'a str,
}

impl Reporter<'_> {
    pub(crate) fn send(&self, event: Event<'_>) {
        self.progress.event(self.input, event);
    }
}
