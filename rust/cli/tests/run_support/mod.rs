//! What the tests of Chock's own session share (`chock run`, `chock acp`):
//! a real git project whose config.zon names one provider instance on the
//! loopback server, and that server's scripted replies in each API's
//! stream. A test binary using it declares `loopback` and
//! `sandbox_fixture` beside it.

use chock_policy::ProviderKind;
use serde_json::{Value, json};

use crate::loopback::{Scripted, Server, event};
use crate::sandbox_fixture::{Fixture, describe, git_stdout as git};

pub const APPLY_ALLOWED: &str = r#".{ .action = "workspace.apply", .decision = .allow }"#;

/// A git project on `main` with `a.txt`, chock.zon's rules `rules` after
/// workspace.apply allowed (merge mode), and config.zon naming one
/// instance, `loop`, of `kind` at `server`.
pub fn project(kind: ProviderKind, server: &Server, rules: &str) -> Fixture {
    project_zon(
        kind,
        server,
        &format!(
            ".{{ .apply = .{{ .mode = .merge }}, .policy = .{{ .rules = .{{ {APPLY_ALLOWED}, {rules} }} }} }}\n"
        ),
    )
}

/// [`project`] with `zon` as its whole chock.zon.
#[allow(dead_code, reason = "the run tests use it, the acp tests do not")]
pub fn project_zon(kind: ProviderKind, server: &Server, zon: &str) -> Fixture {
    let fx = Fixture::host();
    git(&fx.project, &["init", "-q", "-b", "main"]);
    std::fs::write(fx.project.join("a.txt"), "one\n").expect("a.txt");
    fx.zon(zon);
    git(&fx.project, &["add", "."]);
    git(&fx.project, &["commit", "-q", "-m", "init"]);
    with_provider(fx, kind, server)
}

/// [`project`] with no git: `a.txt` and `gone.txt`, workspace.apply allowed.
#[allow(dead_code, reason = "the run tests use it, the acp tests do not")]
pub fn plain_project(kind: ProviderKind, server: &Server) -> Fixture {
    let fx = Fixture::host();
    std::fs::write(fx.project.join("a.txt"), "one\n").expect("a.txt");
    std::fs::write(fx.project.join("gone.txt"), "bye\n").expect("gone.txt");
    fx.zon(&format!(
        ".{{ .policy = .{{ .rules = .{{ {APPLY_ALLOWED} }} }} }}\n"
    ));
    with_provider(fx, kind, server)
}

/// `fx` with config.zon naming one instance, `loop`, of `kind` at `server`.
fn with_provider(fx: Fixture, kind: ProviderKind, server: &Server) -> Fixture {
    let (kind_name, base) = match kind {
        ProviderKind::Anthropic => ("anthropic", format!("http://127.0.0.1:{}", server.port)),
        ProviderKind::OpenaiChat => (
            "openai_chat",
            format!("http://127.0.0.1:{}/v1", server.port),
        ),
        ProviderKind::OpenaiResponses => (
            "openai_responses",
            format!("http://127.0.0.1:{}/v1", server.port),
        ),
    };
    let config = fx.root().join("config/chock");
    std::fs::create_dir_all(&config).expect("config dir");
    std::fs::write(
        config.join("config.zon"),
        format!(
            ".{{ .providers = .{{ .{{ .name = \"loop\", .kind = .{kind_name}, .base_url = \"{base}\", .key = .none }} }} }}\n"
        ),
    )
    .expect("config.zon");
    fx
}

/// One scripted reply of `kind`: `text`, then `calls` (id, tool,
/// arguments); it stops for tool use when there are calls.
pub fn reply(kind: ProviderKind, said: &str, calls: &[(&str, &str, Value)]) -> Scripted {
    let calls: Vec<(&str, &str, String)> = calls
        .iter()
        .map(|(id, name, arguments)| (*id, *name, arguments.to_string()))
        .collect();
    reply_raw(kind, said, &calls)
}

/// [`reply`] with each call's arguments as the model wrote them, JSON or not.
pub fn reply_raw(kind: ProviderKind, said: &str, calls: &[(&str, &str, String)]) -> Scripted {
    let body = match kind {
        ProviderKind::Anthropic => {
            let mut events = vec![
                event(
                    Some("message_start"),
                    &json!({"type": "message_start", "message": {"id": "msg", "type": "message", "role": "assistant", "content": [], "model": "m", "usage": {"input_tokens": 10, "output_tokens": 1}}}),
                ),
                event(
                    Some("content_block_start"),
                    &json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
                ),
                event(
                    Some("content_block_delta"),
                    &json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": said}}),
                ),
                event(
                    Some("content_block_stop"),
                    &json!({"type": "content_block_stop", "index": 0}),
                ),
            ];
            for (i, (id, name, arguments)) in calls.iter().enumerate() {
                let index = i + 1;
                events.push(event(
                    Some("content_block_start"),
                    &json!({"type": "content_block_start", "index": index, "content_block": {"type": "tool_use", "id": id, "name": name, "input": {}}}),
                ));
                events.push(event(
                    Some("content_block_delta"),
                    &json!({"type": "content_block_delta", "index": index, "delta": {"type": "input_json_delta", "partial_json": arguments}}),
                ));
                events.push(event(
                    Some("content_block_stop"),
                    &json!({"type": "content_block_stop", "index": index}),
                ));
            }
            let stop = if calls.is_empty() {
                "end_turn"
            } else {
                "tool_use"
            };
            events.push(event(
                Some("message_delta"),
                &json!({"type": "message_delta", "delta": {"stop_reason": stop}, "usage": {"output_tokens": 5}}),
            ));
            events.push(event(
                Some("message_stop"),
                &json!({"type": "message_stop"}),
            ));
            events.concat()
        }
        ProviderKind::OpenaiChat => {
            let mut events = vec![event(
                None,
                &json!({"choices": [{"index": 0, "delta": {"role": "assistant", "content": said}, "finish_reason": null}]}),
            )];
            for (i, (id, name, arguments)) in calls.iter().enumerate() {
                events.push(event(
                    None,
                    &json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": i, "id": id, "type": "function", "function": {"name": name, "arguments": arguments}}]}}]}),
                ));
            }
            let stop = if calls.is_empty() {
                "stop"
            } else {
                "tool_calls"
            };
            events.push(event(
                None,
                &json!({"choices": [{"index": 0, "delta": {}, "finish_reason": stop}]}),
            ));
            events.push(event(
                None,
                &json!({"choices": [], "usage": {"prompt_tokens": 10, "completion_tokens": 5}}),
            ));
            events.push("data: [DONE]\n\n".to_owned());
            events.concat()
        }
        ProviderKind::OpenaiResponses => unreachable!("not scripted here"),
    };
    Scripted::stream(&body, 64)
}

/// Installs with `chock plugins install` the plugin `hello`, whose one tool
/// `hi` (no capability) answers `{"hi":1}`.
#[allow(dead_code)] // run_loop.rs, which shares this module, installs none
pub fn install_hello_plugin(fx: &Fixture) {
    let source = fx.root().join("hello-plugin");
    std::fs::create_dir_all(&source).expect("mkdir");
    std::fs::write(
        source.join("plugin.zon"),
        r#".{ .id = "hello", .version = "1.0.0", .tools = .{ .{ .name = "hi", .description = "Says hi", .input_schema = .{ .type = "object" } } } }"#,
    )
    .expect("written");
    let answers = chock_plugins::fixtures::plugin(
        "",
        r#"(data (i32.const 48) "{\"hi\":1}")"#,
        "(call $answer (i32.const 0) (i32.const 48) (i32.const 8))",
    );
    std::fs::write(source.join("plugin.wasm"), answers).expect("written");
    let installed = fx
        .chock()
        .args(["plugins", "install"])
        .arg(&source)
        .output()
        .expect("chock plugins install");
    assert!(installed.status.success(), "{}", describe(&installed));
}
