//! The MCP side: what the server says about itself, the tools it lists,
//! and each call handed to its tool.

use std::borrow::Cow;
use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    ListToolsResult, PaginatedRequestParams, ProtocolVersion, ServerCapabilities, ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::Value;

use crate::session::Session;
use crate::tools::{self, Call};

/// What the server tells the agent once, at the start.
const INSTRUCTIONS: &str = "Chock's tools: every call is decided by the project's policy (chock.zon), \
may ask the person, and is written to a decision log. File tools work inside the workspace only; \
run_command runs in a sandbox. A refusal says which rule decided and which rule would allow the act: \
do not retry a refused call unchanged; tell the person what you need.";

pub struct ChockServer {
    session: Arc<Session>,
}

impl ChockServer {
    pub fn new(session: Arc<Session>) -> ChockServer {
        ChockServer { session }
    }

    fn result(&self, outcome: Result<String, String>) -> CallToolResult {
        let note = self.session.watch.notice();
        let with_note = |mut text: String| {
            if let Some(note) = &note {
                text.push_str(&format!("\n\nnote: {note}"));
            }
            text
        };
        match outcome {
            Ok(text) => CallToolResult::success(vec![ContentBlock::text(with_note(text))]),
            Err(text) => CallToolResult::error(vec![ContentBlock::text(with_note(text))]),
        }
    }
}

impl ServerHandler for ChockServer {
    fn get_info(&self) -> ServerConfig {
        let capabilities = ServerCapabilities::builder().enable_tools().build();
        let mut instructions = INSTRUCTIONS.to_string();
        for withheld in self.session.withheld.iter().filter(|w| w.by_rule) {
            instructions.push_str(&format!(" {}.", withheld.why));
        }
        ServerConfig::new(capabilities)
            .with_server_info(Implementation::new("chock", env!("CARGO_PKG_VERSION")))
            .with_instructions(instructions)
    }

    /// Elicitation is a request from server to client during a call, which
    /// the protocol has up to 2025-11-25; later versions replace it.
    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        Cow::Borrowed(ProtocolVersion::known_up_to(&ProtocolVersion::V_2025_11_25))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let tools = self
            .session
            .offered
            .iter()
            .filter_map(|name| tools::definition(name))
            .collect();
        Ok(ListToolsResult::with_all_items(tools))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let name = request.name.to_string();
        if let Some(withheld) = self.session.withheld.iter().find(|w| w.tool == name) {
            return Ok(self
                .result(Err(format!("refused: {}", withheld.why)))
                .into());
        }
        // An unknown tool is a protocol error (JSON-RPC -32602), as the MCP
        // specification says, not a tool result.
        if !tools::TOOL_NAMES.contains(&name.as_str()) {
            return Err(ErrorData::invalid_params(
                format!(
                    "unknown tool `{name}`; this server's tools are {}",
                    tools::TOOL_NAMES.join(", ")
                ),
                None,
            ));
        }
        let arguments = Value::Object(request.arguments.unwrap_or_default());
        let call = Call {
            session: &self.session,
            peer: &context.peer,
            cancel: context.ct.clone(),
        };
        let outcome = tokio::select! {
            outcome = tools::dispatch(&call, &name, arguments) => outcome,
            () = context.ct.cancelled() => Err(format!("{name} was cancelled by the client")),
        };
        Ok(self.result(outcome).into())
    }
}
