//! Each kind's stream read without HTTP, for what the loopback tests do
//! not script: the token bound reached, a thinking block skipped, a
//! compatible server that repeats a call's id and name in every piece, the
//! Responses API's whole arguments replacing their pieces, usage with a
//! prompt cache, and events before the start.

use chock_policy::ProviderKind;
use chock_provider::{Reply, ReplyStream, StopReason, StreamFault};
use serde_json::json;

fn read(kind: ProviderKind, events: &[serde_json::Value]) -> Result<Reply, StreamFault> {
    let mut stream = ReplyStream::new(kind);
    let mut body = String::new();
    for e in events {
        if e == "[DONE]" {
            body.push_str("data: [DONE]\n\n");
        } else {
            body.push_str(&format!("data: {e}\n\n"));
        }
    }
    match stream.feed(body.as_bytes(), &mut |_| {})? {
        Some(reply) => Ok(reply),
        None => Err(stream.ended()),
    }
}

#[test]
fn the_token_bound_is_a_stop_reason_in_every_kind() {
    let anthropic = read(
        ProviderKind::Anthropic,
        &[
            json!({"type": "message_start", "message": {"usage": {"input_tokens": 5}}}),
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": "cut"}}),
            json!({"type": "message_delta", "delta": {"stop_reason": "max_tokens"}, "usage": {"output_tokens": 9}}),
            json!({"type": "message_stop"}),
        ],
    );
    let chat = read(
        ProviderKind::OpenaiChat,
        &[
            json!({"choices": [{"index": 0, "delta": {"content": "cut"}, "finish_reason": "length"}]}),
            json!("[DONE]"),
        ],
    );
    let responses = read(
        ProviderKind::OpenaiResponses,
        &[
            json!({"type": "response.output_text.delta", "delta": "cut"}),
            json!({"type": "response.incomplete", "response": {"incomplete_details": {"reason": "max_output_tokens"}}}),
        ],
    );
    for reply in [anthropic, chat, responses] {
        let reply = reply.expect("reply");
        assert_eq!(
            (reply.text.as_str(), reply.stop),
            ("cut", StopReason::MaxTokens)
        );
    }
}

#[test]
fn a_thinking_block_is_skipped_and_cache_tokens_are_counted() {
    let reply = read(
        ProviderKind::Anthropic,
        &[
            json!({"type": "message_start", "message": {"usage": {"input_tokens": 5, "cache_read_input_tokens": 100, "cache_creation_input_tokens": 20}}}),
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "thinking", "thinking": ""}}),
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "hmm"}}),
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "signature_delta", "signature": "sig"}}),
            json!({"type": "content_block_start", "index": 1, "content_block": {"type": "text", "text": ""}}),
            json!({"type": "content_block_delta", "index": 1, "delta": {"type": "text_delta", "text": "answer"}}),
            json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 7}}),
            json!({"type": "message_stop"}),
        ],
    )
    .expect("reply");
    assert_eq!(reply.text, "answer");
    assert_eq!(reply.stop, StopReason::EndTurn);
    assert_eq!(
        (
            reply.usage.input_tokens,
            reply.usage.cache_read_tokens,
            reply.usage.cache_write_tokens,
            reply.usage.output_tokens
        ),
        (125, 100, 20, 7)
    );
}

#[test]
fn a_call_s_id_and_name_repeated_in_every_piece_are_kept_once() {
    let piece = |args: &str| json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "c1", "type": "function", "function": {"name": "grep", "arguments": args}}]}}]});
    let reply = read(
        ProviderKind::OpenaiChat,
        &[
            piece("{\"pattern\":"),
            piece("\"x\"}"),
            json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}),
            json!("[DONE]"),
        ],
    )
    .expect("reply");
    assert_eq!(reply.tool_calls.len(), 1);
    assert_eq!(reply.tool_calls[0].id, "c1");
    assert_eq!(reply.tool_calls[0].name, "grep");
    assert_eq!(reply.tool_calls[0].arguments, json!({"pattern": "x"}));
    assert_eq!(
        reply.stop,
        StopReason::ToolUse,
        "a call makes it a tool-use stop"
    );
}

#[test]
fn the_responses_whole_arguments_replace_their_pieces() {
    let reply = read(
        ProviderKind::OpenaiResponses,
        &[
            json!({"type": "response.output_item.added", "output_index": 0, "item": {"type": "function_call", "call_id": "c1", "name": "grep", "arguments": ""}}),
            json!({"type": "response.function_call_arguments.delta", "output_index": 0, "delta": "{\"pat"}),
            json!({"type": "response.function_call_arguments.done", "output_index": 0, "arguments": "{\"pattern\":\"x\"}"}),
            json!({"type": "response.completed", "response": {"usage": {"input_tokens": 3, "output_tokens": 4, "input_tokens_details": {"cached_tokens": 2}}}}),
        ],
    )
    .expect("reply");
    assert_eq!(reply.tool_calls[0].arguments, json!({"pattern": "x"}));
    assert_eq!(reply.usage.cache_read_tokens, 2);
}

#[test]
fn a_messages_stream_that_does_not_begin_with_message_start_is_malformed() {
    let err = read(
        ProviderKind::Anthropic,
        &[
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": "x"}}),
            json!({"type": "message_stop"}),
        ],
    )
    .expect_err("malformed");
    assert!(err.to_string().contains("message_start"), "{err}");
    let err = read(
        ProviderKind::OpenaiResponses,
        &[json!({"type": "response.function_call_arguments.delta", "output_index": 4, "delta": "{}"})],
    )
    .expect_err("no such call");
    assert!(matches!(err, StreamFault::Malformed(_)), "{err}");
}
