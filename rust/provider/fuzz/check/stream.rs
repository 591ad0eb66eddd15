//! The check the `stream` fuzz target runs on each input, shared with the
//! crate's `no_panic` test, which feeds it the corpus kept in the
//! repository: any bytes, read as a reply stream of each API kind, whole
//! and cut into pieces at a place the input chooses, end in a reply or a
//! fault without a panic; both readings agree; the text streamed is the
//! reply's text; and no input is read for longer than the bound. The
//! first byte of an input is where it is cut, the rest the stream.

use std::time::{Duration, Instant};

use chock_policy::ProviderKind;
use chock_provider::{Reply, ReplyStream, StreamFault};

/// The longest one reading may take: the readers are linear in their input.
pub const BOUND: Duration = if cfg!(fuzzing) {
    Duration::from_millis(50)
} else {
    Duration::from_millis(500)
};

const KINDS: [ProviderKind; 3] = [
    ProviderKind::Anthropic,
    ProviderKind::OpenaiChat,
    ProviderKind::OpenaiResponses,
];

fn read(kind: ProviderKind, pieces: &[&[u8]]) -> (Result<Reply, StreamFault>, String) {
    let mut stream = ReplyStream::new(kind);
    let mut streamed = String::new();
    for piece in pieces {
        match stream.feed(piece, &mut |t: &str| streamed.push_str(t)) {
            Ok(Some(reply)) => return (Ok(reply), streamed),
            Ok(None) => {}
            Err(fault) => return (Err(fault), streamed),
        }
    }
    (Err(stream.ended()), streamed)
}

/// Reads `input` less its first byte as each kind's stream, whole and cut
/// in two where the first byte says; the number of replies read whole.
pub fn read_stream(input: &[u8]) -> usize {
    let Some((cut, bytes)) = input.split_first() else {
        return 0;
    };
    let (a, b) = bytes.split_at(usize::from(*cut).min(bytes.len()));
    let mut replies = 0;
    for kind in KINDS {
        let fastest = (0..3)
            .map(|_| {
                let started = Instant::now();
                let whole = read(kind, &[bytes]);
                let pieces = read(kind, &[a, b]);
                let took = started.elapsed();
                assert_eq!(
                    whole.0.as_ref().map(|r| &r.text).ok(),
                    pieces.0.as_ref().map(|r| &r.text).ok(),
                    "{kind:?}: a cut changed the reply"
                );
                if let Ok(reply) = &whole.0 {
                    replies += 1;
                    assert_eq!(
                        reply.text, whole.1,
                        "{kind:?}: streamed text is the reply's"
                    );
                    assert!(reply.tool_calls.iter().all(|c| c.arguments.is_object()));
                }
                took
            })
            .min()
            .unwrap_or_default();
        assert!(
            fastest <= BOUND,
            "{kind:?}: {} bytes read in {fastest:?}, over {BOUND:?}",
            bytes.len()
        );
    }
    replies / 3
}
