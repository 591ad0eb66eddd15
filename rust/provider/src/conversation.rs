//! What a request says and what a reply holds, the same for every API kind:
//! a system prompt, turns, the tools the model may call, and per request the
//! model and a bound on what it writes. Each kind's module turns these into
//! its own wire format and its stream back into a [`Reply`].

use serde::{Deserialize, Serialize};

/// A tool the model may call: its name, what it does, and a JSON schema of
/// its arguments (an object schema).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolDef {
    pub name: String,
    pub description: String,
    pub input_schema: serde_json::Value,
}

/// One call the model asked for: the id the provider gave it (a result
/// names it), the tool, and its arguments as a JSON object.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    pub arguments: serde_json::Value,
    /// Why the arguments the model wrote are no JSON object, when they are
    /// not: the call is not run, `arguments` is then `{}` (what goes back
    /// on the wire), and the loop answers the model with this error.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub malformed: Option<String>,
}

impl ToolCall {
    /// A call with well-formed `arguments`.
    pub fn new(
        id: impl Into<String>,
        name: impl Into<String>,
        arguments: serde_json::Value,
    ) -> ToolCall {
        ToolCall {
            id: id.into(),
            name: name.into(),
            arguments,
            malformed: None,
        }
    }
}

/// One turn of a conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Turn {
    /// What the person (or the loop on their behalf) says.
    User(String),
    /// What the model said: text and the calls it asked for.
    Assistant {
        text: String,
        tool_calls: Vec<ToolCall>,
    },
    /// The result of one call, by the call's id.
    ToolResult {
        call_id: String,
        content: String,
        is_error: bool,
    },
    /// Images the calls of the reply before read (`read_image`), for the
    /// model to see: after that reply's results, as the person's turn on
    /// the wire (each API takes an image there).
    Images(Vec<Image>),
}

/// An image, as every API takes it: its media type (`image/png`,
/// `image/jpeg`, `image/gif`, `image/webp`) and its bytes in base64.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Image {
    pub media_type: String,
    pub base64: String,
}

impl Image {
    /// The image as a `data:` URL (the OpenAI APIs take one).
    pub fn data_url(&self) -> String {
        format!("data:{};base64,{}", self.media_type, self.base64)
    }
}

/// A conversation: the system prompt, the turns so far, the tools offered.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Conversation {
    pub system: Option<String>,
    pub turns: Vec<Turn>,
    pub tools: Vec<ToolDef>,
}

/// One request: a conversation for a model, with a bound on its reply.
#[derive(Debug, Clone, Copy)]
pub struct Request<'a> {
    /// The model id as it goes on the wire (`claude-sonnet-4-5`, `gpt-5`).
    pub model: &'a str,
    /// The most tokens the reply may hold.
    pub max_tokens: u32,
    pub conversation: &'a Conversation,
}

/// Why the model stopped.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum StopReason {
    /// It finished its turn.
    EndTurn,
    /// It asked for tool calls and waits for their results.
    ToolUse,
    /// It reached `max_tokens`.
    MaxTokens,
    /// Another reason, as the provider named it.
    Other(String),
}

/// Tokens one request used, as the provider counted them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    /// Tokens read (the prompt), cached or not.
    pub input_tokens: u64,
    /// Tokens written (the reply).
    pub output_tokens: u64,
    /// Of the input, tokens read from the provider's prompt cache.
    pub cache_read_tokens: u64,
    /// Of the input, tokens written to the provider's prompt cache.
    pub cache_write_tokens: u64,
}

impl Usage {
    /// `self` plus `other`, saturating.
    pub fn plus(self, other: Usage) -> Usage {
        Usage {
            input_tokens: self.input_tokens.saturating_add(other.input_tokens),
            output_tokens: self.output_tokens.saturating_add(other.output_tokens),
            cache_read_tokens: self
                .cache_read_tokens
                .saturating_add(other.cache_read_tokens),
            cache_write_tokens: self
                .cache_write_tokens
                .saturating_add(other.cache_write_tokens),
        }
    }
}

/// The model's reply to one request, assembled from its stream.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Reply {
    pub text: String,
    pub tool_calls: Vec<ToolCall>,
    pub stop: StopReason,
    pub usage: Usage,
    /// How many attempts it took (1 without a retry).
    pub attempts: u32,
}

impl Reply {
    /// The reply as the assistant's turn, to append to the conversation.
    pub fn turn(&self) -> Turn {
        Turn::Assistant {
            text: self.text.clone(),
            tool_calls: self.tool_calls.clone(),
        }
    }
}

/// Why a tool call's arguments cannot be read.
#[derive(Debug, thiserror::Error)]
pub(crate) enum BadArguments {
    #[error("the arguments of the call to `{0}` are JSON but not an object")]
    NotAnObject(String),
    #[error("the arguments of the call to `{0}` are not JSON ({1})")]
    NotJson(String, serde_json::Error),
}

/// A tool call's arguments, streamed as JSON text in pieces, read once the
/// call is complete: a JSON object (empty text is `{}`), else why not.
pub(crate) fn arguments(name: &str, text: &str) -> Result<serde_json::Value, BadArguments> {
    if text.trim().is_empty() {
        return Ok(serde_json::Value::Object(Default::default()));
    }
    match serde_json::from_str::<serde_json::Value>(text) {
        Ok(value @ serde_json::Value::Object(_)) => Ok(value),
        Ok(_) => Err(BadArguments::NotAnObject(name.to_owned())),
        Err(e) => Err(BadArguments::NotJson(name.to_owned(), e)),
    }
}
