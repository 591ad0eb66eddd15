//! The client against a provider on loopback that speaks each API kind
//! with scripted replies: streamed text and a tool call whose arguments
//! arrive in pieces, an error, 429 with retry-after then success, 500 then
//! success, retries that run out, a stream that stalls, a malformed line,
//! an error inside a stream, and what each request carried.

mod loopback;

use std::time::{Duration, Instant};

use chock_policy::ProviderKind;
use chock_provider::{
    Client, Conversation, Model, ProviderError, Request, Settings, StopReason, ToolCall, ToolDef,
    Turn, Usage,
};
use loopback::{Piece, Scripted, Server, event};
use serde_json::json;

const KINDS: [ProviderKind; 3] = [
    ProviderKind::Anthropic,
    ProviderKind::OpenaiChat,
    ProviderKind::OpenaiResponses,
];

fn quick() -> Settings {
    Settings {
        attempts: 3,
        backoff: Duration::from_millis(20),
        backoff_max: Duration::from_millis(100),
        retry_after_max: Duration::from_secs(5),
        stall: Duration::from_secs(5),
        connect: Duration::from_secs(5),
    }
}

fn conversation() -> Conversation {
    Conversation {
        system: Some("be brief".into()),
        turns: vec![
            Turn::User("read a.txt".into()),
            Turn::Assistant {
                text: String::new(),
                tool_calls: vec![ToolCall::new("call_0", "list_files", json!({}))],
            },
            Turn::ToolResult {
                call_id: "call_0".into(),
                content: "a.txt".into(),
                is_error: false,
            },
            Turn::Images(vec![chock_provider::Image {
                media_type: "image/png".into(),
                base64: "iVBORw0KGgo=".into(),
            }]),
        ],
        tools: vec![ToolDef {
            name: "read_file".into(),
            description: "Reads a file".into(),
            input_schema: json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}),
        }],
    }
}

/// The beginning of a reply: the stream opened and "Hel" written.
fn opening(kind: ProviderKind) -> String {
    match kind {
        ProviderKind::Anthropic => [
            event(
                Some("message_start"),
                &json!({"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant", "content": [], "model": "m", "usage": {"input_tokens": 12, "output_tokens": 1}}}),
            ),
            event(
                Some("content_block_start"),
                &json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
            ),
            event(Some("ping"), &json!({"type": "ping"})),
            event(
                Some("content_block_delta"),
                &json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hel"}}),
            ),
        ]
        .concat(),
        ProviderKind::OpenaiChat => [
            event(
                None,
                &json!({"id": "c1", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": null}]}),
            ),
            event(
                None,
                &json!({"choices": [{"index": 0, "delta": {"content": "Hel"}, "finish_reason": null}]}),
            ),
        ]
        .concat(),
        ProviderKind::OpenaiResponses => [
            event(
                Some("response.created"),
                &json!({"type": "response.created", "response": {"id": "r1", "status": "in_progress"}}),
            ),
            event(
                Some("response.output_item.added"),
                &json!({"type": "response.output_item.added", "output_index": 0, "item": {"type": "message", "id": "m1", "role": "assistant", "content": []}}),
            ),
            event(
                Some("response.output_text.delta"),
                &json!({"type": "response.output_text.delta", "output_index": 0, "content_index": 0, "delta": "Hel"}),
            ),
        ]
        .concat(),
    }
}

/// A whole reply: "Hello", then a call to read_file whose arguments come
/// in two pieces; 12 tokens in, 30 out.
fn text_and_call(kind: ProviderKind) -> String {
    let rest = match kind {
        ProviderKind::Anthropic => [
            event(
                Some("content_block_delta"),
                &json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "lo"}}),
            ),
            event(
                Some("content_block_stop"),
                &json!({"type": "content_block_stop", "index": 0}),
            ),
            event(
                Some("content_block_start"),
                &json!({"type": "content_block_start", "index": 1, "content_block": {"type": "tool_use", "id": "toolu_1", "name": "read_file", "input": {}}}),
            ),
            event(
                Some("content_block_delta"),
                &json!({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": "{\"pa"}}),
            ),
            event(
                Some("content_block_delta"),
                &json!({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": "th\": \"a.txt\"}"}}),
            ),
            event(
                Some("content_block_stop"),
                &json!({"type": "content_block_stop", "index": 1}),
            ),
            event(
                Some("message_delta"),
                &json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 30}}),
            ),
            event(Some("message_stop"), &json!({"type": "message_stop"})),
        ]
        .concat(),
        ProviderKind::OpenaiChat => [
            event(
                None,
                &json!({"choices": [{"index": 0, "delta": {"content": "lo"}, "finish_reason": null}]}),
            ),
            event(
                None,
                &json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "toolu_1", "type": "function", "function": {"name": "read_file", "arguments": ""}}]}}]}),
            ),
            event(
                None,
                &json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": "{\"pa"}}]}}]}),
            ),
            event(
                None,
                &json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": "th\": \"a.txt\"}"}}]}}]}),
            ),
            event(
                None,
                &json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}),
            ),
            event(
                None,
                &json!({"choices": [], "usage": {"prompt_tokens": 12, "completion_tokens": 30}}),
            ),
            "data: [DONE]\n\n".to_owned(),
        ]
        .concat(),
        ProviderKind::OpenaiResponses => [
            event(
                Some("response.output_text.delta"),
                &json!({"type": "response.output_text.delta", "output_index": 0, "content_index": 0, "delta": "lo"}),
            ),
            event(
                Some("response.output_item.added"),
                &json!({"type": "response.output_item.added", "output_index": 1, "item": {"type": "function_call", "id": "fc_1", "call_id": "toolu_1", "name": "read_file", "arguments": ""}}),
            ),
            event(
                Some("response.function_call_arguments.delta"),
                &json!({"type": "response.function_call_arguments.delta", "output_index": 1, "item_id": "fc_1", "delta": "{\"pa"}),
            ),
            event(
                Some("response.function_call_arguments.delta"),
                &json!({"type": "response.function_call_arguments.delta", "output_index": 1, "item_id": "fc_1", "delta": "th\": \"a.txt\"}"}),
            ),
            event(
                Some("response.completed"),
                &json!({"type": "response.completed", "response": {"id": "r1", "status": "completed", "usage": {"input_tokens": 12, "output_tokens": 30}}}),
            ),
        ]
        .concat(),
    };
    opening(kind) + &rest
}

/// An error the provider reports inside a stream it has begun.
fn error_in_stream(kind: ProviderKind) -> String {
    let error = match kind {
        ProviderKind::Anthropic => event(
            Some("error"),
            &json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}),
        ),
        ProviderKind::OpenaiChat => event(None, &json!({"error": {"message": "Overloaded"}})),
        ProviderKind::OpenaiResponses => event(
            Some("error"),
            &json!({"type": "error", "message": "Overloaded", "code": "server_error"}),
        ),
    };
    opening(kind) + &error
}

async fn send(
    server: &Server,
    kind: ProviderKind,
    key: Option<&str>,
    settings: Settings,
) -> (Result<chock_provider::Reply, ProviderError>, Vec<String>) {
    let client =
        Client::new(&server.instance(kind), key.map(str::to_owned), settings).expect("client");
    let conversation = conversation();
    let request = Request {
        model: "m-1",
        max_tokens: 256,
        conversation: &conversation,
    };
    let mut streamed = Vec::new();
    let reply = client
        .send(&request, &mut |text: &str| streamed.push(text.to_owned()))
        .await;
    (reply, streamed)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streamed_text_and_a_tool_call_in_pieces_are_assembled_for_every_kind() {
    for kind in KINDS {
        // Cut into 7-byte pieces: events and JSON split anywhere.
        let server = Server::start(vec![Scripted::stream(&text_and_call(kind), 7)]);
        let (reply, streamed) = send(&server, kind, Some("sk-test"), quick()).await;
        let reply = reply.unwrap_or_else(|e| panic!("{kind:?}: {e}"));
        assert_eq!(streamed.concat(), "Hello", "{kind:?}");
        assert!(
            streamed.len() >= 2,
            "{kind:?}: streamed as it came: {streamed:?}"
        );
        assert_eq!(reply.text, "Hello");
        assert_eq!(
            reply.tool_calls,
            vec![ToolCall::new(
                "toolu_1",
                "read_file",
                json!({"path": "a.txt"})
            )],
            "{kind:?}"
        );
        assert_eq!(reply.stop, StopReason::ToolUse, "{kind:?}");
        assert_eq!(
            (reply.usage.input_tokens, reply.usage.output_tokens),
            (12, 30),
            "{kind:?}"
        );
        assert_eq!(reply.attempts, 1);

        let requests = server.requests();
        assert_eq!(requests.len(), 1);
        let sent = &requests[0];
        let body = &sent.body;
        assert_eq!(body["model"], "m-1");
        assert_eq!(body["stream"], true);
        match kind {
            ProviderKind::Anthropic => {
                assert_eq!(sent.path, "/v1/messages");
                assert_eq!(sent.header("x-api-key"), Some("sk-test"));
                assert_eq!(
                    sent.header("anthropic-version"),
                    Some(chock_provider::ANTHROPIC_VERSION)
                );
                assert_eq!(body["system"], "be brief");
                assert_eq!(body["max_tokens"], 256);
                assert_eq!(body["tools"][0]["input_schema"]["type"], "object");
                assert_eq!(body["messages"][1]["content"][0]["type"], "tool_use");
                assert_eq!(body["messages"][2]["role"], "user");
                assert_eq!(body["messages"][2]["content"][0]["type"], "tool_result");
                assert_eq!(body["messages"][2]["content"][0]["tool_use_id"], "call_0");
                // The image after the result, in the same user message.
                assert_eq!(
                    body["messages"][2]["content"][1],
                    json!({"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}})
                );
                assert_eq!(body["messages"].as_array().map(Vec::len), Some(3));
            }
            ProviderKind::OpenaiChat => {
                assert_eq!(sent.path, "/v1/chat/completions");
                assert_eq!(sent.header("authorization"), Some("Bearer sk-test"));
                assert_eq!(body["messages"][0]["role"], "system");
                assert_eq!(
                    body["messages"][2]["tool_calls"][0]["function"]["arguments"],
                    "{}"
                );
                assert_eq!(body["messages"][3]["role"], "tool");
                assert_eq!(body["messages"][3]["tool_call_id"], "call_0");
                // A tool message takes text only: the image follows as the user's.
                assert_eq!(
                    body["messages"][4],
                    json!({"role": "user", "content": [{"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}]})
                );
                assert_eq!(body["tools"][0]["function"]["parameters"]["type"], "object");
                assert_eq!(body["stream_options"]["include_usage"], true);
            }
            ProviderKind::OpenaiResponses => {
                assert_eq!(sent.path, "/v1/responses");
                assert_eq!(sent.header("authorization"), Some("Bearer sk-test"));
                assert_eq!(body["instructions"], "be brief");
                assert_eq!(body["store"], false);
                assert_eq!(body["input"][1]["type"], "function_call");
                assert_eq!(body["input"][2]["type"], "function_call_output");
                assert_eq!(body["input"][2]["call_id"], "call_0");
                assert_eq!(
                    body["input"][3],
                    json!({"role": "user", "content": [{"type": "input_image", "image_url": "data:image/png;base64,iVBORw0KGgo="}]})
                );
                assert_eq!(body["tools"][0]["parameters"]["type"], "object");
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_without_a_key_sends_no_key_header() {
    for kind in KINDS {
        let server = Server::start(vec![Scripted::stream(&text_and_call(kind), 4096)]);
        let (reply, _) = send(&server, kind, None, quick()).await;
        reply.unwrap_or_else(|e| panic!("{kind:?}: {e}"));
        let sent = &server.requests()[0];
        assert_eq!(sent.header("x-api-key"), None);
        assert_eq!(sent.header("authorization"), None);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_4xx_is_not_retried_and_says_what_to_do() {
    for kind in KINDS {
        let server = Server::start(vec![Scripted::error(401, "invalid x-api-key")]);
        let (reply, streamed) = send(&server, kind, Some("sk-bad"), quick()).await;
        let err = reply.expect_err("refused");
        let words = err.to_string();
        assert!(
            matches!(err, ProviderError::Http { status: 401, .. }),
            "{words}"
        );
        assert!(words.contains("invalid x-api-key"), "{words}");
        assert!(words.contains("chock login loop"), "{words}");
        assert!(
            !words.contains("sk-bad"),
            "the key is never in an error: {words}"
        );
        assert!(streamed.is_empty());
        assert_eq!(server.requests().len(), 1, "a 4xx is not retried");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_429_s_retry_after_is_honoured_then_the_reply_is_read() {
    for kind in KINDS {
        let server = Server::start(vec![
            Scripted::error(429, "rate limited").with_header("retry-after", "1"),
            Scripted::stream(&text_and_call(kind), 64),
        ]);
        let started = Instant::now();
        let (reply, _) = send(&server, kind, None, quick()).await;
        let reply = reply.unwrap_or_else(|e| panic!("{kind:?}: {e}"));
        assert!(
            started.elapsed() >= Duration::from_millis(950),
            "retry-after: 1 waits a second, not the 20 ms backoff: {:?}",
            started.elapsed()
        );
        assert_eq!(reply.attempts, 2);
        assert_eq!(reply.text, "Hello");
        assert_eq!(server.requests().len(), 2);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_500_is_retried_with_backoff_then_the_reply_is_read() {
    for kind in KINDS {
        let server = Server::start(vec![
            Scripted::error(500, "internal"),
            Scripted::error(529, "overloaded"),
            Scripted::stream(&text_and_call(kind), 64),
        ]);
        let (reply, _) = send(&server, kind, None, quick()).await;
        let reply = reply.unwrap_or_else(|e| panic!("{kind:?}: {e}"));
        assert_eq!(reply.attempts, 3);
        assert_eq!(reply.tool_calls.len(), 1);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retries_are_bounded_and_a_long_retry_after_is_not_waited_for() {
    let server = Server::start(vec![
        Scripted::error(503, "down"),
        Scripted::error(503, "down"),
        Scripted::error(503, "still down"),
        Scripted::stream(&text_and_call(ProviderKind::Anthropic), 64),
    ]);
    let (reply, _) = send(&server, ProviderKind::Anthropic, None, quick()).await;
    let err = reply.expect_err("gave up");
    assert!(
        matches!(err, ProviderError::GaveUp { attempts: 3, .. }),
        "{err}"
    );
    assert!(err.to_string().contains("still down"), "{err}");
    assert_eq!(server.requests().len(), 3);

    let server = Server::start(vec![
        Scripted::error(429, "slow down").with_header("retry-after", "3600"),
    ]);
    let started = Instant::now();
    let (reply, _) = send(&server, ProviderKind::OpenaiChat, None, quick()).await;
    let err = reply.expect_err("too long");
    assert!(
        matches!(err, ProviderError::WaitTooLong { seconds: 3600, .. }),
        "{err}"
    );
    assert!(started.elapsed() < Duration::from_secs(3));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalled_stream_is_abandoned_at_the_time_bound() {
    for kind in KINDS {
        let mut scripted = Scripted::stream(&opening(kind), 4096);
        scripted.body.push(Piece::Hang(Duration::from_secs(10)));
        let server = Server::start(vec![scripted]);
        let settings = Settings {
            stall: Duration::from_millis(300),
            ..quick()
        };
        let started = Instant::now();
        let (reply, streamed) = send(&server, kind, None, settings).await;
        let err = reply.expect_err("stalled");
        assert!(
            matches!(err, ProviderError::Stalled { .. }),
            "{kind:?}: {err}"
        );
        assert!(
            started.elapsed() < Duration::from_secs(3),
            "{:?}",
            started.elapsed()
        );
        assert_eq!(
            streamed,
            vec!["Hel".to_owned()],
            "what came before is shown"
        );
        assert_eq!(
            server.requests().len(),
            1,
            "a stream begun is not sent again"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_malformed_line_and_a_cut_stream_fail_closed() {
    for kind in KINDS {
        let cases = [
            opening(kind) + "HTTP/1.1 200 OK\n\n",
            opening(kind),
            opening(kind) + "data: {not json\n\n",
        ];
        for (i, body) in cases.iter().enumerate() {
            let server = Server::start(vec![Scripted::stream(body, 4096)]);
            let (reply, _) = send(&server, kind, None, quick()).await;
            let err = reply.expect_err("malformed");
            assert!(
                matches!(err, ProviderError::Malformed { .. }),
                "{kind:?} case {i}: {err}"
            );
            assert_eq!(
                server.requests().len(),
                1,
                "a malformed reply is not retried"
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_whose_arguments_are_no_json_object_comes_back_marked_not_failed() {
    for kind in KINDS {
        let server = Server::start(vec![Scripted::stream(
            &text_and_call(kind).replace("a.txt\\\"}", "a.txt\\\""),
            4096,
        )]);
        let (reply, _) = send(&server, kind, None, quick()).await;
        let reply = reply.expect("the reply stands");
        let [call] = &reply.tool_calls[..] else {
            panic!("{kind:?}: one call: {:?}", reply.tool_calls)
        };
        assert_eq!(call.name, "read_file", "{kind:?}");
        assert_eq!(
            call.arguments,
            json!({}),
            "{kind:?}: `{{}}` goes back on the wire"
        );
        let why = call.malformed.as_deref().unwrap_or_default();
        assert!(
            why.contains("`read_file`") && why.contains("not JSON"),
            "{kind:?}: {why}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reply_that_is_not_a_stream_is_refused() {
    let server = Server::start(vec![Scripted {
        status: 200,
        headers: vec![("content-type".into(), "application/json".into())],
        body: vec![Piece::Bytes(b"{\"id\":\"x\"}".to_vec())],
    }]);
    let (reply, _) = send(&server, ProviderKind::OpenaiChat, None, quick()).await;
    let err = reply.expect_err("not a stream");
    assert!(err.to_string().contains("not an event stream"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_error_inside_a_stream_is_reported() {
    for kind in KINDS {
        let server = Server::start(vec![Scripted::stream(&error_in_stream(kind), 4096)]);
        let (reply, _) = send(&server, kind, None, quick()).await;
        let err = reply.expect_err("error in stream");
        assert!(
            matches!(err, ProviderError::InReply { .. }),
            "{kind:?}: {err}"
        );
        assert!(err.to_string().contains("Overloaded"), "{err}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn usage_is_counted_per_request_and_in_all() {
    let kind = ProviderKind::OpenaiResponses;
    let server = Server::start(vec![
        Scripted::stream(&text_and_call(kind), 4096),
        Scripted::stream(&text_and_call(kind), 4096),
    ]);
    let client = Client::new(&server.instance(kind), None, quick()).expect("client");
    let conversation = conversation();
    let request = Request {
        model: "m-1",
        max_tokens: 256,
        conversation: &conversation,
    };
    for _ in 0..2 {
        let reply = client.send(&request, &mut |_| {}).await.expect("reply");
        assert_eq!(reply.usage.output_tokens, 30);
    }
    assert_eq!(
        client.used(),
        Usage {
            input_tokens: 24,
            output_tokens: 60,
            ..Usage::default()
        }
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_is_not_there_is_retried_then_named() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("address").port();
    drop(listener);
    let server = Server {
        port,
        requests: Default::default(),
    };
    let (reply, _) = send(&server, ProviderKind::Anthropic, None, quick()).await;
    let err = reply.expect_err("unreachable");
    assert!(
        matches!(
            err,
            ProviderError::Unreachable { .. } | ProviderError::GaveUp { .. }
        ),
        "{err}"
    );
    assert!(err.to_string().contains("loop"), "{err}");
}
