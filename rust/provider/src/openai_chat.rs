//! OpenAI's Chat Completions: `POST <base>/chat/completions` with a bearer
//! key, streamed as `chat.completion.chunk` objects and ended by
//! `data: [DONE]`. vLLM, llama.cpp's server, Ollama and OpenRouter speak
//! it too. Usage comes in a last chunk, asked for with
//! `stream_options.include_usage`.

use serde::Deserialize;
use serde_json::{Value, json};

use crate::conversation::{Request, Turn};
use crate::sse::SseEvent;
use crate::wire::{Gathered, PartialCall, ReadStream, StreamFault, Wire, json, stop_reason};

pub(crate) struct OpenaiChat;

/// The bearer header every OpenAI kind sends its key in.
pub(crate) fn bearer(key: Option<&str>) -> Vec<(&'static str, String)> {
    key.map(|k| ("authorization", format!("Bearer {k}")))
        .into_iter()
        .collect()
}

impl Wire for OpenaiChat {
    fn path(&self) -> &'static str {
        "/chat/completions"
    }

    fn headers(&self, key: Option<&str>) -> Vec<(&'static str, String)> {
        bearer(key)
    }

    fn body(&self, request: &Request<'_>) -> Value {
        let conversation = request.conversation;
        let mut messages = Vec::new();
        if let Some(system) = &conversation.system {
            messages.push(json!({"role": "system", "content": system}));
        }
        for turn in &conversation.turns {
            messages.push(match turn {
                Turn::User(text) => json!({"role": "user", "content": text}),
                Turn::Assistant { text, tool_calls } => {
                    let mut message = json!({"role": "assistant", "content": text});
                    if !tool_calls.is_empty() {
                        message["tool_calls"] = tool_calls
                            .iter()
                            .map(|c| json!({"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments.to_string()}}))
                            .collect();
                    }
                    message
                }
                Turn::ToolResult {
                    call_id, content, ..
                } => json!({"role": "tool", "tool_call_id": call_id, "content": content}),
                // A tool message takes text only: the images follow the
                // results as the user's.
                Turn::Images(images) => json!({"role": "user", "content": images
                    .iter()
                    .map(|image| json!({"type": "image_url", "image_url": {"url": image.data_url()}}))
                    .collect::<Vec<_>>()}),
            });
        }
        let mut body = json!({
            "model": request.model,
            "messages": messages,
            "max_completion_tokens": request.max_tokens,
            "stream": true,
            "stream_options": {"include_usage": true},
        });
        if !conversation.tools.is_empty() {
            body["tools"] = conversation
                .tools
                .iter()
                .map(|t| json!({"type": "function", "function": {"name": t.name, "description": t.description, "parameters": t.input_schema}}))
                .collect();
        }
        body
    }

    fn reader(&self) -> Box<dyn ReadStream> {
        Box::new(Reader::default())
    }
}

#[derive(Default)]
struct Reader {
    gathered: Gathered,
    /// The stream's tool-call index → the call it is.
    indices: Vec<(u64, usize)>,
}

#[derive(Deserialize)]
struct Chunk {
    #[serde(default)]
    choices: Vec<Choice>,
    #[serde(default)]
    usage: Option<UsageFields>,
    #[serde(default)]
    error: Option<Value>,
}

#[derive(Deserialize)]
struct Choice {
    #[serde(default)]
    delta: Option<DeltaFields>,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Deserialize)]
struct DeltaFields {
    #[serde(default)]
    content: Option<String>,
    #[serde(default)]
    tool_calls: Vec<CallDelta>,
}

#[derive(Deserialize)]
struct CallDelta {
    index: u64,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    function: Option<FunctionDelta>,
}

#[derive(Deserialize)]
struct FunctionDelta {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    arguments: Option<String>,
}

#[derive(Deserialize)]
struct UsageFields {
    #[serde(default)]
    prompt_tokens: u64,
    #[serde(default)]
    completion_tokens: u64,
    #[serde(default)]
    prompt_tokens_details: Option<Details>,
}

#[derive(Deserialize)]
struct Details {
    #[serde(default)]
    cached_tokens: u64,
}

/// A provider's error object (`{"message": ..}`) as one sentence.
pub(crate) fn error_words(error: &Value) -> String {
    error
        .get("message")
        .and_then(Value::as_str)
        .map_or_else(|| error.to_string(), str::to_owned)
}

impl ReadStream for Reader {
    fn event(
        &mut self,
        event: SseEvent,
        on_text: &mut (dyn FnMut(&str) + Send),
    ) -> Result<bool, StreamFault> {
        if event.data == "[DONE]" {
            return Ok(true);
        }
        let chunk: Chunk = json(&event.data, "a chunk")?;
        if let Some(error) = chunk.error {
            return Err(StreamFault::Provider(error_words(&error)));
        }
        if let Some(usage) = chunk.usage {
            self.gathered.usage.input_tokens = usage.prompt_tokens;
            self.gathered.usage.output_tokens = usage.completion_tokens;
            self.gathered.usage.cache_read_tokens =
                usage.prompt_tokens_details.map_or(0, |d| d.cached_tokens);
        }
        for choice in chunk.choices {
            if let Some(delta) = choice.delta {
                if let Some(text) = delta.content {
                    self.gathered.text(&text, on_text);
                }
                for call in delta.tool_calls {
                    let at = match self.indices.iter().find(|(i, _)| *i == call.index) {
                        Some((_, at)) => *at,
                        None => {
                            self.indices.push((call.index, self.gathered.calls.len()));
                            self.gathered.calls.push(PartialCall::default());
                            self.gathered.calls.len() - 1
                        }
                    };
                    let Some(held) = self.gathered.calls.get_mut(at) else {
                        continue;
                    };
                    // The id and name come once (some servers repeat them);
                    // the arguments come in pieces.
                    if let Some(id) = call.id.filter(|_| held.id.is_empty()) {
                        held.id = id;
                    }
                    if let Some(function) = call.function {
                        if let Some(name) = function.name.filter(|_| held.name.is_empty()) {
                            held.name = name;
                        }
                        held.arguments
                            .push_str(function.arguments.as_deref().unwrap_or(""));
                    }
                }
            }
            if let Some(word) = choice.finish_reason {
                self.gathered.stop = Some(stop_reason(&word));
            }
        }
        Ok(false)
    }

    fn finish(self: Box<Self>) -> Result<crate::Reply, StreamFault> {
        self.gathered.reply()
    }
}
