//! The MCP side: what the server says about itself, the tools it lists,
//! and each call handed to its tool.

use std::borrow::Cow;
use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, GetPromptRequestMethod,
    GetPromptRequestParams, GetPromptResponse, Implementation, ListPromptsRequestMethod,
    ListPromptsResult, ListResourcesRequestMethod, ListResourcesResult, ListToolsResult,
    PaginatedRequestParams, ProtocolVersion, ReadResourceRequestMethod, ReadResourceRequestParams,
    ReadResourceResponse, ServerCapabilities, ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::Value;

use crate::gateway::{Gateway, GatewayError};
use crate::session::Session;
use crate::tools::{self, Call, ToolError};

/// What the server tells the agent once, at the start (and `chock run`
/// its model, in the system prompt).
pub const INSTRUCTIONS: &str = "Chock's tools: every call is decided by the project's policy (chock.zon), \
may ask the person, and is written to a decision log. File tools work inside the workspace only; \
run_command runs in a sandbox. A refusal says which rule decided and which rule would allow the act: \
do not retry a refused call unchanged; tell the person what you need.";

pub struct ChockServer {
    session: Arc<Session>,
    /// The MCP servers chock.zon names, offered beside Chock's own tools.
    gateway: Gateway,
}

impl ChockServer {
    pub fn new(session: Arc<Session>, gateway: Gateway) -> ChockServer {
        ChockServer { session, gateway }
    }

    /// Whether the server relays other MCP servers, and so declares (and
    /// answers) resources and prompts; without one it declares only tools,
    /// and a resources or prompts request is answered -32601, as for any
    /// method it does not have.
    fn relays(&self) -> bool {
        !self.gateway.is_empty()
    }

    /// Whether the server offers prompts: its skills, or a relayed server's.
    fn has_prompts(&self) -> bool {
        self.relays() || self.session.offered.contains(&tools::READ_SKILL)
    }

    /// The tool result the client reads: the one place a tool's error
    /// becomes text, marked `isError`.
    fn result(&self, outcome: Result<String, ToolError>) -> CallToolResult {
        match self.session.answer(outcome) {
            Ok(text) => CallToolResult::success(vec![ContentBlock::text(text)]),
            Err(crate::session::Failed(text)) => {
                CallToolResult::error(vec![ContentBlock::text(text)])
            }
        }
    }
}

impl ServerHandler for ChockServer {
    fn get_info(&self) -> ServerConfig {
        // The gateway passes on its servers' log messages (MCP logging,
        // which servers still send, is deprecated by SEP-2577).
        #[expect(deprecated)]
        let capabilities = if !self.relays() && self.has_prompts() {
            ServerCapabilities::builder()
                .enable_tools()
                .enable_prompts()
                .build()
        } else if !self.relays() {
            ServerCapabilities::builder().enable_tools().build()
        } else {
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tool_list_changed()
                .enable_resources()
                .enable_prompts()
                .enable_logging()
                .build()
        };
        let mut instructions = INSTRUCTIONS.to_string();
        for withheld in self.session.withheld.iter().filter(|w| w.by_rule) {
            instructions.push_str(&format!(" {}.", withheld.why));
        }
        for sentence in self.gateway.instructions() {
            instructions.push_str(&format!(" {sentence}."));
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
        let mut tools: Vec<_> = self
            .session
            .offered
            .iter()
            .filter_map(|name| tools::offered_definition(&self.session, name))
            .collect();
        tools.extend(crate::extra::definitions(&self.session));
        tools.extend(self.gateway.tools(&self.session).await);
        Ok(ListToolsResult::with_all_items(tools))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let name = request.name.to_string();
        if let Some(refusal) = self.session.withheld_refusal(&name) {
            return Ok(self.result(Err(ToolError::Refused(refusal))).into());
        }
        if self.gateway.owns(&name) {
            return match self.gateway.call(&self.session, request, &context).await {
                Ok(result) => Ok(result.into()),
                // A crossed bound is a JSON-RPC error naming the server.
                Err(GatewayError::Bound(error)) => Err(error),
                Err(error) => Ok(self.result(Err(error.into())).into()),
            };
        }
        let arguments = Value::Object(request.arguments.unwrap_or_default());
        let client = crate::ask::Client::Mcp(context.peer.clone());
        let call = Call {
            session: &self.session,
            client: &client,
            cancel: context.ct.clone(),
        };
        let extra = tokio::select! {
            outcome = crate::extra::dispatch(&call, &name, arguments.clone()) => outcome,
            () = context.ct.cancelled() => Some(Err(ToolError::Cancelled { tool: name.clone(), by: "the client" })),
        };
        if let Some(outcome) = extra {
            return Ok(self.result(outcome).into());
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
        let outcome = tokio::select! {
            outcome = tools::dispatch(&call, &name, arguments) => outcome,
            () = context.ct.cancelled() => Err(ToolError::Cancelled { tool: name.clone(), by: "the client" }),
        };
        Ok(self.result(outcome).into())
    }

    /// The least severe of the servers' log messages passed on.
    #[expect(deprecated, reason = "MCP logging is deprecated by SEP-2577")]
    async fn set_level(
        &self,
        request: rmcp::model::SetLevelRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        if !self.relays() {
            return Err(ErrorData::method_not_found::<
                rmcp::model::SetLevelRequestMethod,
            >());
        }
        self.gateway.set_log_level(request.level);
        Ok(())
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        if !self.relays() {
            return Err(ErrorData::method_not_found::<ListResourcesRequestMethod>());
        }
        Ok(ListResourcesResult::with_all_items(
            self.gateway.resources(&context.peer).await,
        ))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        if !self.relays() {
            return Err(ErrorData::method_not_found::<ReadResourceRequestMethod>());
        }
        self.gateway
            .read_resource(&self.session, request)
            .await
            .map(Into::into)
            .map_err(|why| ErrorData::resource_not_found(why.to_string(), None))
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        if !self.has_prompts() {
            return Err(ErrorData::method_not_found::<ListPromptsRequestMethod>());
        }
        let mut prompts = if self.session.offered.contains(&tools::READ_SKILL) {
            tools::skill_prompts(&self.session)
        } else {
            Vec::new()
        };
        if self.relays() {
            prompts.extend(self.gateway.prompts(&context.peer).await);
        }
        Ok(ListPromptsResult::with_all_items(prompts))
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        if !self.has_prompts() {
            return Err(ErrorData::method_not_found::<GetPromptRequestMethod>());
        }
        if self.session.offered.contains(&tools::READ_SKILL)
            && tools::is_skill_prompt(&self.session, &request.name)
        {
            let client = crate::ask::Client::Mcp(context.peer.clone());
            let call = Call {
                session: &self.session,
                client: &client,
                cancel: context.ct.clone(),
            };
            return tools::skill_prompt(&call, &request.name)
                .await
                .map(Into::into)
                .map_err(|why| {
                    ErrorData::invalid_params(self.session.secrets.scrub(&why.to_string()), None)
                });
        }
        if !self.relays() {
            return Err(ErrorData::invalid_params(
                format!("there is no prompt named `{}`", request.name),
                None,
            ));
        }
        self.gateway
            .prompt(&self.session, request)
            .await
            .map(Into::into)
            .map_err(|why| ErrorData::invalid_params(why.to_string(), None))
    }
}
