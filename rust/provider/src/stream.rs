//! One reply's event stream, fed as it arrives: the event-stream reader
//! ([`crate::sse`]) and the kind's assembly of events into a [`Reply`],
//! with the size bound. The client reads every reply through it, and the
//! fuzz target feeds it any bytes cut anywhere.

use chock_policy::ProviderKind;

use crate::client::MAX_REPLY_BYTES;
use crate::conversation::Reply;
use crate::sse::{SseEvent, SseParser};
use crate::wire::{ReadStream, Wire};

pub use crate::wire::StreamFault;

/// The wire format of `kind`.
pub(crate) fn wire(kind: ProviderKind) -> Box<dyn Wire> {
    match kind {
        ProviderKind::Anthropic => Box::new(crate::anthropic::Anthropic),
        ProviderKind::OpenaiChat => Box::new(crate::openai_chat::OpenaiChat),
        ProviderKind::OpenaiResponses => Box::new(crate::openai_responses::OpenaiResponses),
    }
}

/// One reply's stream in one API kind.
pub struct ReplyStream {
    parser: SseParser,
    reader: Option<Box<dyn ReadStream>>,
    events: Vec<SseEvent>,
    total: usize,
}

impl ReplyStream {
    pub fn new(kind: ProviderKind) -> ReplyStream {
        ReplyStream {
            parser: SseParser::new(),
            reader: Some(wire(kind).reader()),
            events: Vec::new(),
            total: 0,
        }
    }

    /// Reads the next piece of the body, giving streamed text to
    /// `on_text`; the reply once its last event has come (what follows it
    /// is not read).
    pub fn feed(
        &mut self,
        piece: &[u8],
        on_text: &mut (dyn FnMut(&str) + Send),
    ) -> Result<Option<Reply>, StreamFault> {
        let Some(reader) = self.reader.as_mut() else {
            return Err(StreamFault::Malformed("the reply was already whole".into()));
        };
        self.total += piece.len();
        if self.total > MAX_REPLY_BYTES {
            return Err(StreamFault::Malformed(format!(
                "the stream is longer than {MAX_REPLY_BYTES} bytes"
            )));
        }
        // The events before a malformed line are read first, so where the
        // body was cut never changes the outcome.
        let parsed = self.parser.feed(piece, &mut self.events);
        for event in self.events.drain(..) {
            if reader.event(event, on_text)? {
                return match self.reader.take() {
                    Some(reader) => reader.finish().map(Some),
                    None => Err(StreamFault::Malformed("the reply was already whole".into())),
                };
            }
        }
        parsed.map_err(|e| StreamFault::Malformed(e.to_string()))?;
        Ok(None)
    }

    /// The body ended before the reply's last event: what was wrong.
    pub fn ended(&mut self) -> StreamFault {
        match self.parser.finish() {
            Err(e) => StreamFault::Malformed(e.to_string()),
            Ok(()) => StreamFault::Malformed("the stream ended before its last event".into()),
        }
    }
}
