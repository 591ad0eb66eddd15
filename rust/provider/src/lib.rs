//! Model providers for Chock's own session: one client over three API
//! kinds (Anthropic Messages, OpenAI Chat Completions, OpenAI Responses,
//! the last two also spoken by vLLM, llama.cpp, Ollama and OpenRouter),
//! each request streamed, retried with backoff on 429 and 5xx, bounded in
//! time and size, and its tokens counted; the credential store that
//! `chock login` writes; and `model.select` decided and logged through the
//! gate. The instances come from the operator's `config.zon`, read by
//! `chock-policy`. See `docs/providers.md`.

#![forbid(unsafe_code)]

mod anthropic;
mod client;
mod conversation;
mod credentials;
mod error;
pub mod http;
mod openai_chat;
mod openai_responses;
mod select;
pub mod sse;
mod stream;
mod wire;

pub use anthropic::VERSION as ANTHROPIC_VERSION;
pub use client::{Client, MAX_REPLY_BYTES, Model, Settings};
pub use conversation::{
    Conversation, Image, Reply, Request, StopReason, ToolCall, ToolDef, Turn, Usage,
};
pub use credentials::{Credentials, MAX_KEY_BYTES, key_for};
pub use error::ProviderError;
pub use select::select_model;
pub use stream::{ReplyStream, StreamFault};
