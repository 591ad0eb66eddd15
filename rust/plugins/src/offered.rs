//! The plugins as a session's tools ([`chock_mcp::extra`]): each offered
//! tool listed as `plugin__<plugin>__<tool>` beside Chock's own, every
//! call decided at `plugin.<plugin>.tool.<tool>` through the gate and
//! logged there, then run in its plugin's bounded instance.

use std::sync::Arc;

use chock_mcp::extra::{ExtraSession, ExtraStart, ExtraTool, ExtraTools};
use chock_policy::{PLUGIN_TOOLS, TOOL_SEPARATOR};

use crate::host::{Bounds, Host};
use crate::reach::Reach;
use crate::session::Plugins;

/// The project's plugins, started with every session.
#[derive(Debug, Default)]
pub struct PluginTools {
    bounds: Bounds,
}

impl PluginTools {
    pub fn new(bounds: Bounds) -> PluginTools {
        PluginTools { bounds }
    }
}

/// One session's plugins, and the tools they offer.
struct Offered {
    plugins: Plugins,
    tools: Vec<ExtraTool>,
    /// Each listed tool's plugin and tool, in the order of `tools`.
    called: Vec<(String, String)>,
}

impl ExtraTools for PluginTools {
    fn start(&self, start: ExtraStart<'_>) -> Arc<dyn ExtraSession> {
        let reach = Reach {
            workspace: Some(start.workspace),
            runtime: Some(start.runtime),
        };
        let started = Host::new(self.bounds).and_then(|host| {
            let places = crate::store::Place::every(start.project);
            Plugins::start(&places, start.policy, start.agent_kind, &host, &reach)
        });
        match started {
            Ok(plugins) => Arc::new(Offered::new(plugins)),
            Err(e) => {
                tracing::warn!("no plugin is offered: {e}");
                Arc::new(Offered::new(Plugins::none()))
            }
        }
    }
}

impl Offered {
    fn new(plugins: Plugins) -> Offered {
        let mut tools = Vec::new();
        let mut called = Vec::new();
        for (plugin, tool) in plugins.offered() {
            let Ok(action) = chock_names::plugin_tool(plugin, &tool.name) else {
                continue;
            };
            tools.push(ExtraTool {
                name: format!(
                    "{PLUGIN_TOOLS}{TOOL_SEPARATOR}{plugin}{TOOL_SEPARATOR}{}",
                    tool.name
                ),
                action,
                description: tool.description.clone(),
                input_schema: tool.input_schema.as_object().cloned().unwrap_or_default(),
                detail: format!("a tool of the plugin `{plugin}`"),
            });
            called.push((plugin.to_string(), tool.name.clone()));
        }
        Offered {
            plugins,
            tools,
            called,
        }
    }
}

impl ExtraSession for Offered {
    fn tools(&self) -> &[ExtraTool] {
        &self.tools
    }

    fn call(&self, name: &str, input: serde_json::Value) -> Result<String, String> {
        let at = self.tools.iter().position(|t| t.name == name);
        let Some((plugin, tool)) = at.and_then(|at| self.called.get(at)) else {
            return Err(format!("there is no plugin tool named `{name}`"));
        };
        self.plugins
            .call(plugin, tool, &input)
            .map(|answer| answer.to_string())
            .map_err(|e| e.to_string())
    }
}
