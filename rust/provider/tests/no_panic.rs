//! No reply stream makes the readers panic, hang or disagree with
//! themselves: a provider's body is outside input. The fuzz corpus kept in
//! the repository (`fuzz/corpus/stream`) goes through the check the fuzz
//! target runs (`fuzz/check/`), then proptest's inputs: any bytes, and
//! streams built from each kind's real events, shuffled and cut.

use chock_testkit::replay_fuzz_corpus;
use proptest::prelude::*;

#[path = "../fuzz/check/stream.rs"]
mod stream;

#[test]
fn the_stream_corpus_reads_without_panicking() {
    replay_fuzz_corpus(env!("CARGO_MANIFEST_DIR"), "stream", 12, |bytes| {
        stream::read_stream(bytes);
    });
}

#[test]
fn the_corpus_holds_whole_replies_of_every_kind() {
    let corpus = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus/stream");
    let whole: usize = std::fs::read_dir(&corpus)
        .expect("corpus")
        .filter_map(Result::ok)
        .map(|e| stream::read_stream(&std::fs::read(e.path()).expect("read")))
        .sum();
    assert!(whole >= 3, "only {whole} inputs read as a whole reply");
}

/// Lines each kind really sends, for streams made of them.
const LINES: &[&str] = &[
    "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":3}}}\n\n",
    "data: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n",
    "data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"hi\"}}\n\n",
    "data: {\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":\"tool_use\",\"id\":\"t\",\"name\":\"f\"}}\n\n",
    "data: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"a\\\":\"}}\n\n",
    "data: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"1}\"}}\n\n",
    "data: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":2}}\n\n",
    "data: {\"type\":\"message_stop\"}\n\n",
    "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hi\"}}]}\n\n",
    "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"c\",\"function\":{\"name\":\"f\",\"arguments\":\"{}\"}}]}}]}\n\n",
    "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n",
    "data: [DONE]\n\n",
    "data: {\"type\":\"response.output_text.delta\",\"delta\":\"hi\"}\n\n",
    "data: {\"type\":\"response.output_item.added\",\"output_index\":1,\"item\":{\"type\":\"function_call\",\"call_id\":\"c\",\"name\":\"f\"}}\n\n",
    "data: {\"type\":\"response.function_call_arguments.delta\",\"output_index\":1,\"delta\":\"{}\"}\n\n",
    "data: {\"type\":\"response.completed\",\"response\":{\"usage\":{\"input_tokens\":1,\"output_tokens\":1}}}\n\n",
    ": comment\n",
    "\n",
    "data: {\"error\":{\"message\":\"x\"}}\n\n",
];

/// One whole Chat Completions reply.
const WHOLE: &str = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hi\"}}]}\n\ndata: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n";

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn any_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..600)) {
        stream::read_stream(&bytes);
    }

    #[test]
    fn streams_of_real_events_never_panic(
        picks in proptest::collection::vec(0..LINES.len(), 0..24),
        cut in any::<u8>(),
    ) {
        let mut body = vec![cut];
        for i in picks {
            body.extend_from_slice(LINES[i].as_bytes());
        }
        stream::read_stream(&body);
    }

    #[test]
    fn a_whole_stream_cut_anywhere_reads_the_same(cut in any::<u8>()) {
        let mut body = vec![cut];
        body.extend_from_slice(WHOLE.as_bytes());
        prop_assert_eq!(stream::read_stream(&body), 1);
    }
}
