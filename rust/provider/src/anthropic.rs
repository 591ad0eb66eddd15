//! Anthropic's Messages API: `POST <base>/v1/messages` with `x-api-key`
//! and `anthropic-version`, streamed as `message_start`,
//! `content_block_start`/`_delta`/`_stop`, `message_delta` and
//! `message_stop` events.

use serde::Deserialize;
use serde_json::{Value, json};

use crate::conversation::{Request, Turn};
use crate::sse::SseEvent;
use crate::wire::{Gathered, PartialCall, ReadStream, StreamFault, Wire, json, stop_reason};

/// The API version every request names.
pub const VERSION: &str = "2023-06-01";

pub(crate) struct Anthropic;

impl Wire for Anthropic {
    fn path(&self) -> &'static str {
        "/v1/messages"
    }

    fn headers(&self, key: Option<&str>) -> Vec<(&'static str, String)> {
        let mut headers = vec![("anthropic-version", VERSION.to_owned())];
        if let Some(key) = key {
            headers.push(("x-api-key", key.to_owned()));
        }
        headers
    }

    fn body(&self, request: &Request<'_>) -> Value {
        let conversation = request.conversation;
        // Consecutive turns of one role are one message (tool results
        // answering one reply go back together).
        let mut messages: Vec<(&str, Vec<Value>)> = Vec::new();
        for turn in &conversation.turns {
            let (role, blocks) = match turn {
                Turn::User(text) => ("user", vec![json!({"type": "text", "text": text})]),
                Turn::Assistant { text, tool_calls } => {
                    let mut blocks = Vec::new();
                    if !text.is_empty() {
                        blocks.push(json!({"type": "text", "text": text}));
                    }
                    for call in tool_calls {
                        blocks.push(json!({"type": "tool_use", "id": call.id, "name": call.name, "input": call.arguments}));
                    }
                    ("assistant", blocks)
                }
                Turn::ToolResult {
                    call_id,
                    content,
                    is_error,
                } => (
                    "user",
                    vec![
                        json!({"type": "tool_result", "tool_use_id": call_id, "content": content, "is_error": is_error}),
                    ],
                ),
                // After the results, in the same user message.
                Turn::Images(images) => (
                    "user",
                    images
                        .iter()
                        .map(|image| json!({"type": "image", "source": {"type": "base64", "media_type": image.media_type, "data": image.base64}}))
                        .collect(),
                ),
            };
            match messages.last_mut() {
                Some((last, held)) if *last == role => held.extend(blocks),
                _ => messages.push((role, blocks)),
            }
        }
        let mut body = json!({
            "model": request.model,
            "max_tokens": request.max_tokens,
            "stream": true,
            "messages": messages
                .into_iter()
                .map(|(role, content)| json!({"role": role, "content": content}))
                .collect::<Vec<_>>(),
        });
        if let Some(system) = &conversation.system {
            body["system"] = json!(system);
        }
        if !conversation.tools.is_empty() {
            body["tools"] = conversation
                .tools
                .iter()
                .map(|t| json!({"name": t.name, "description": t.description, "input_schema": t.input_schema}))
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
    started: bool,
    /// The stream's block index → the call it is, for tool-use blocks.
    blocks: Vec<(u64, usize)>,
}

#[derive(Deserialize)]
struct UsageFields {
    #[serde(default)]
    input_tokens: Option<u64>,
    #[serde(default)]
    output_tokens: Option<u64>,
    #[serde(default)]
    cache_read_input_tokens: Option<u64>,
    #[serde(default)]
    cache_creation_input_tokens: Option<u64>,
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Event {
    MessageStart {
        message: MessageFields,
    },
    ContentBlockStart {
        index: u64,
        content_block: BlockStart,
    },
    ContentBlockDelta {
        index: u64,
        delta: Delta,
    },
    ContentBlockStop {},
    MessageDelta {
        delta: MessageDeltaFields,
        #[serde(default)]
        usage: Option<UsageFields>,
    },
    MessageStop {},
    Ping {},
    Error {
        error: ErrorFields,
    },
    #[serde(other)]
    Unknown,
}

#[derive(Deserialize)]
struct MessageFields {
    usage: UsageFields,
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum BlockStart {
    Text {
        #[serde(default)]
        text: String,
    },
    ToolUse {
        id: String,
        name: String,
    },
    #[serde(other)]
    Other,
}

#[derive(Deserialize)]
#[serde(tag = "type")]
enum Delta {
    #[serde(rename = "text_delta")]
    Text { text: String },
    #[serde(rename = "input_json_delta")]
    InputJson { partial_json: String },
    #[serde(other)]
    Other,
}

#[derive(Deserialize)]
struct MessageDeltaFields {
    #[serde(default)]
    stop_reason: Option<String>,
}

#[derive(Deserialize)]
pub(crate) struct ErrorFields {
    #[serde(default, rename = "type")]
    pub(crate) kind: String,
    #[serde(default)]
    pub(crate) message: String,
}

impl Reader {
    fn usage(&mut self, usage: &UsageFields) {
        let u = &mut self.gathered.usage;
        let cache_read = usage.cache_read_input_tokens.unwrap_or(0);
        let cache_write = usage.cache_creation_input_tokens.unwrap_or(0);
        if let Some(input) = usage.input_tokens {
            u.input_tokens = input + cache_read + cache_write;
            u.cache_read_tokens = cache_read;
            u.cache_write_tokens = cache_write;
        }
        if let Some(output) = usage.output_tokens {
            u.output_tokens = output;
        }
    }
}

impl ReadStream for Reader {
    fn event(
        &mut self,
        event: SseEvent,
        on_text: &mut (dyn FnMut(&str) + Send),
    ) -> Result<bool, StreamFault> {
        let parsed: Event = json(&event.data, "an event")?;
        if !self.started
            && !matches!(
                parsed,
                Event::MessageStart { .. } | Event::Ping {} | Event::Error { .. }
            )
        {
            return Err(StreamFault::Malformed(
                "the stream did not begin with message_start".into(),
            ));
        }
        match parsed {
            Event::MessageStart { message } => {
                self.started = true;
                self.usage(&message.usage);
            }
            Event::ContentBlockStart {
                index,
                content_block,
            } => match content_block {
                BlockStart::Text { text } => self.gathered.text(&text, on_text),
                BlockStart::ToolUse { id, name } => {
                    self.blocks.push((index, self.gathered.calls.len()));
                    self.gathered.calls.push(PartialCall {
                        id,
                        name,
                        arguments: String::new(),
                    });
                }
                BlockStart::Other => {}
            },
            Event::ContentBlockDelta { index, delta } => match delta {
                Delta::Text { text } => self.gathered.text(&text, on_text),
                Delta::InputJson { partial_json } => {
                    let call = self
                        .blocks
                        .iter()
                        .find(|(i, _)| *i == index)
                        .and_then(|(_, c)| self.gathered.calls.get_mut(*c))
                        .ok_or_else(|| {
                            StreamFault::Malformed(format!(
                                "arguments came for block {index}, which is no tool call"
                            ))
                        })?;
                    call.arguments.push_str(&partial_json);
                }
                Delta::Other => {}
            },
            Event::MessageDelta { delta, usage } => {
                if let Some(word) = delta.stop_reason {
                    self.gathered.stop = Some(stop_reason(&word));
                }
                if let Some(usage) = usage {
                    self.usage(&usage);
                }
            }
            Event::MessageStop {} => return Ok(true),
            Event::Error { error } => {
                return Err(StreamFault::Provider(format!(
                    "{} ({})",
                    error.message, error.kind
                )));
            }
            Event::ContentBlockStop {} | Event::Ping {} | Event::Unknown => {}
        }
        Ok(false)
    }

    fn finish(self: Box<Self>) -> Result<crate::Reply, StreamFault> {
        self.gathered.reply()
    }
}
