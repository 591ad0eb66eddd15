//! The messages of ACP version 1 that Chock reads and writes, as the
//! protocol's schema spells them (<https://agentclientprotocol.com/protocol/schema>):
//! exactly the methods `chock acp` answers and the notifications and
//! requests it sends. Fields Chock does not use are not read (the client
//! may send them); fields it does not write are left out. (The official
//! schema crate turns on serde_json's `preserve_order` for every crate of
//! the binary, which would change the order of keys in every JSON line
//! Chock writes elsewhere, so these are Chock's own.)

use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The protocol version Chock speaks.
pub const PROTOCOL_VERSION: u16 = 1;

/// A JSON-RPC error object.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Error {
    pub code: i32,
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

impl Error {
    fn with(code: i32, message: &str, data: impl Into<String>) -> Error {
        Error {
            code,
            message: message.to_owned(),
            data: Some(Value::String(data.into())),
        }
    }

    pub fn parse_error(why: impl Into<String>) -> Error {
        Error::with(-32700, "Parse error", why)
    }

    pub fn invalid_request(why: impl Into<String>) -> Error {
        Error::with(-32600, "Invalid request", why)
    }

    pub fn method_not_found(why: impl Into<String>) -> Error {
        Error::with(-32601, "Method not found", why)
    }

    pub fn invalid_params(why: impl Into<String>) -> Error {
        Error::with(-32602, "Invalid params", why)
    }

    /// A failure the person should read: the sentence is the message.
    pub fn failed(sentence: impl Into<String>) -> Error {
        Error {
            code: -32603,
            message: sentence.into(),
            data: None,
        }
    }

    /// ACP's "resource not found", for a session id Chock did not make.
    pub fn session_not_found(id: &str) -> Error {
        Error::with(
            -32002,
            "Resource not found",
            format!("there is no session {id}: make one with session/new"),
        )
    }
}

// What the client sends.

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InitializeRequest {
    /// Read so that a request without it is refused; Chock answers with
    /// the version it speaks, whatever was asked.
    #[allow(dead_code, reason = "required on the wire, not used")]
    pub protocol_version: u16,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NewSessionRequest {
    pub cwd: PathBuf,
}

/// `session/load`: a session of this project that `chock run` or `chock
/// acp` wrote, by its id.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LoadSessionRequest {
    pub session_id: String,
    pub cwd: PathBuf,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PromptRequest {
    pub session_id: String,
    pub prompt: Vec<ContentBlock>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CancelNotification {
    pub session_id: String,
}

/// A block of a prompt.
#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ContentBlock {
    Text {
        text: String,
    },
    ResourceLink {
        name: String,
        uri: String,
    },
    Resource {
        resource: ResourceContents,
    },
    Image {},
    Audio {},
    #[serde(other)]
    Unknown,
}

/// An embedded resource: text, or a blob.
#[derive(Debug, Deserialize)]
pub struct ResourceContents {
    pub uri: String,
    pub text: Option<String>,
}

/// The client's answer to `session/request_permission`.
#[derive(Debug, Deserialize)]
pub struct RequestPermissionResponse {
    pub outcome: PermissionOutcome,
}

#[derive(Debug, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum PermissionOutcome {
    Cancelled,
    Selected {
        #[serde(rename = "optionId")]
        option_id: String,
    },
}

// What Chock sends.

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct InitializeResponse {
    pub protocol_version: u16,
    pub agent_capabilities: AgentCapabilities,
    pub auth_methods: Vec<Value>,
    pub agent_info: Implementation,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentCapabilities {
    pub load_session: bool,
    pub prompt_capabilities: PromptCapabilities,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PromptCapabilities {
    pub image: bool,
    pub audio: bool,
    pub embedded_context: bool,
}

#[derive(Debug, Serialize)]
pub struct Implementation {
    pub name: String,
    pub title: String,
    pub version: String,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NewSessionResponse {
    pub session_id: String,
}

/// `session/load` answers once the conversation was replayed.
#[derive(Debug, Serialize)]
pub struct LoadSessionResponse {}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PromptResponse {
    pub stop_reason: StopReason,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    EndTurn,
    MaxTurnRequests,
    Refusal,
    Cancelled,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionNotification {
    pub session_id: String,
    pub update: SessionUpdate,
}

#[derive(Debug, Serialize)]
#[serde(tag = "sessionUpdate", rename_all = "snake_case")]
pub enum SessionUpdate {
    UserMessageChunk {
        content: TextBlock,
    },
    AgentMessageChunk {
        content: TextBlock,
    },
    AgentThoughtChunk {
        content: TextBlock,
    },
    ToolCall(ToolCall),
    ToolCallUpdate(ToolCallUpdate),
    /// The agent's plan, whole, each time it changes.
    Plan {
        entries: Vec<PlanEntry>,
    },
}

/// One step of the plan. Chock's plan has no priorities: every step is
/// `medium`.
#[derive(Debug, Serialize)]
pub struct PlanEntry {
    pub content: String,
    pub priority: PlanPriority,
    pub status: chock_agent::plan::Status,
}

#[derive(Debug, Clone, Copy, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PlanPriority {
    Medium,
}

/// A text content block, the one kind Chock writes.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "type", rename = "text")]
pub struct TextBlock {
    pub text: String,
}

impl TextBlock {
    pub fn new(text: impl Into<String>) -> TextBlock {
        TextBlock { text: text.into() }
    }
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolCall {
    pub tool_call_id: String,
    pub title: String,
    pub kind: ToolKind,
    pub status: ToolCallStatus,
    pub raw_input: Value,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub locations: Vec<Location>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolCallUpdate {
    pub tool_call_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<ToolCallStatus>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content: Option<Vec<ToolCallContent>>,
}

#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ToolCallContent {
    Content { content: TextBlock },
}

#[derive(Debug, Serialize)]
pub struct Location {
    pub path: PathBuf,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolKind {
    Read,
    Edit,
    Search,
    Execute,
    Fetch,
    Other,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolCallStatus {
    InProgress,
    Completed,
    Failed,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RequestPermissionRequest {
    pub session_id: String,
    pub tool_call: ToolCallUpdate,
    pub options: Vec<PermissionOption>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PermissionOption {
    pub option_id: String,
    pub name: String,
    pub kind: PermissionOptionKind,
}

#[derive(Debug, Clone, Copy, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PermissionOptionKind {
    AllowOnce,
    AllowAlways,
    RejectOnce,
}
