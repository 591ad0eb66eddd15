//! OpenAI's Responses API: `POST <base>/responses` with a bearer key and
//! `store: false` (nothing is kept at the provider between requests; each
//! request carries the whole conversation), streamed as typed events
//! (`response.output_text.delta`, `response.output_item.added`,
//! `response.function_call_arguments.delta`, `response.completed`).

use serde::Deserialize;
use serde_json::{Value, json};

use crate::conversation::{Request, StopReason, Turn};
use crate::openai_chat::{bearer, error_words};
use crate::sse::SseEvent;
use crate::wire::{Gathered, PartialCall, ReadStream, StreamFault, Wire, json, stop_reason};

pub(crate) struct OpenaiResponses;

impl Wire for OpenaiResponses {
    fn path(&self) -> &'static str {
        "/responses"
    }

    fn headers(&self, key: Option<&str>) -> Vec<(&'static str, String)> {
        bearer(key)
    }

    fn body(&self, request: &Request<'_>) -> Value {
        let conversation = request.conversation;
        let mut input = Vec::new();
        for turn in &conversation.turns {
            match turn {
                Turn::User(text) => input.push(json!({"role": "user", "content": text})),
                Turn::Assistant { text, tool_calls } => {
                    if !text.is_empty() {
                        input.push(json!({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": text}]}));
                    }
                    for call in tool_calls {
                        input.push(json!({"type": "function_call", "call_id": call.id, "name": call.name, "arguments": call.arguments.to_string()}));
                    }
                }
                Turn::ToolResult {
                    call_id, content, ..
                } => input.push(
                    json!({"type": "function_call_output", "call_id": call_id, "output": content}),
                ),
                Turn::Images(images) => input.push(json!({"role": "user", "content": images
                    .iter()
                    .map(|image| json!({"type": "input_image", "image_url": image.data_url()}))
                    .collect::<Vec<_>>()})),
            }
        }
        let mut body = json!({
            "model": request.model,
            "input": input,
            "max_output_tokens": request.max_tokens,
            "stream": true,
            "store": false,
        });
        if let Some(system) = &conversation.system {
            body["instructions"] = json!(system);
        }
        if !conversation.tools.is_empty() {
            body["tools"] = conversation
                .tools
                .iter()
                .map(|t| json!({"type": "function", "name": t.name, "description": t.description, "parameters": t.input_schema}))
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
    /// The output index → the call it is.
    items: Vec<(u64, usize)>,
}

#[derive(Deserialize)]
#[serde(tag = "type")]
enum Event {
    #[serde(rename = "response.output_text.delta")]
    TextDelta { delta: String },
    #[serde(rename = "response.output_item.added")]
    ItemAdded { output_index: u64, item: Item },
    #[serde(rename = "response.function_call_arguments.delta")]
    ArgumentsDelta { output_index: u64, delta: String },
    #[serde(rename = "response.function_call_arguments.done")]
    ArgumentsDone {
        output_index: u64,
        arguments: String,
    },
    #[serde(rename = "response.completed")]
    Completed { response: ResponseFields },
    #[serde(rename = "response.incomplete")]
    Incomplete { response: ResponseFields },
    #[serde(rename = "response.failed")]
    Failed { response: ResponseFields },
    #[serde(rename = "error")]
    Error {
        #[serde(default)]
        message: String,
        #[serde(default)]
        code: Option<String>,
    },
    #[serde(other)]
    Other,
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Item {
    FunctionCall {
        call_id: String,
        name: String,
        #[serde(default)]
        arguments: String,
    },
    #[serde(other)]
    Other,
}

#[derive(Deserialize)]
struct ResponseFields {
    #[serde(default)]
    usage: Option<UsageFields>,
    #[serde(default)]
    error: Option<Value>,
    #[serde(default)]
    incomplete_details: Option<Incomplete>,
}

#[derive(Deserialize)]
struct Incomplete {
    #[serde(default)]
    reason: String,
}

#[derive(Deserialize)]
struct UsageFields {
    #[serde(default)]
    input_tokens: u64,
    #[serde(default)]
    output_tokens: u64,
    #[serde(default)]
    input_tokens_details: Option<Details>,
}

#[derive(Deserialize)]
struct Details {
    #[serde(default)]
    cached_tokens: u64,
}

impl Reader {
    fn call(&mut self, output_index: u64) -> Result<&mut PartialCall, StreamFault> {
        self.items
            .iter()
            .find(|(i, _)| *i == output_index)
            .and_then(|(_, c)| self.gathered.calls.get_mut(*c))
            .ok_or_else(|| {
                StreamFault::Malformed(format!(
                    "arguments came for output {output_index}, which is no function call"
                ))
            })
    }

    fn ended(&mut self, response: ResponseFields, stop: StopReason) {
        if let Some(usage) = response.usage {
            self.gathered.usage.input_tokens = usage.input_tokens;
            self.gathered.usage.output_tokens = usage.output_tokens;
            self.gathered.usage.cache_read_tokens =
                usage.input_tokens_details.map_or(0, |d| d.cached_tokens);
        }
        self.gathered.stop = Some(stop);
    }
}

impl ReadStream for Reader {
    fn event(
        &mut self,
        event: SseEvent,
        on_text: &mut (dyn FnMut(&str) + Send),
    ) -> Result<bool, StreamFault> {
        match json::<Event>(&event.data, "an event")? {
            Event::TextDelta { delta } => self.gathered.text(&delta, on_text),
            Event::ItemAdded { output_index, item } => {
                if let Item::FunctionCall {
                    call_id,
                    name,
                    arguments,
                } = item
                {
                    self.items.push((output_index, self.gathered.calls.len()));
                    self.gathered.calls.push(PartialCall {
                        id: call_id,
                        name,
                        arguments,
                    });
                }
            }
            Event::ArgumentsDelta {
                output_index,
                delta,
            } => self.call(output_index)?.arguments.push_str(&delta),
            // The whole arguments, once more: they replace the pieces.
            Event::ArgumentsDone {
                output_index,
                arguments,
            } => self.call(output_index)?.arguments = arguments,
            Event::Completed { response } => {
                self.ended(response, StopReason::EndTurn);
                return Ok(true);
            }
            Event::Incomplete { response } => {
                let reason = response
                    .incomplete_details
                    .as_ref()
                    .map_or_else(String::new, |d| d.reason.clone());
                self.ended(response, stop_reason(&reason));
                return Ok(true);
            }
            Event::Failed { response } => {
                return Err(StreamFault::Provider(
                    response
                        .error
                        .as_ref()
                        .map_or_else(|| "the response failed".into(), error_words),
                ));
            }
            Event::Error { message, code } => {
                return Err(StreamFault::Provider(match code {
                    Some(code) => format!("{message} ({code})"),
                    None => message,
                }));
            }
            Event::Other => {}
        }
        Ok(false)
    }

    fn finish(self: Box<Self>) -> Result<crate::Reply, StreamFault> {
        self.gathered.reply()
    }
}
