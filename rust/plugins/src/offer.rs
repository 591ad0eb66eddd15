//! What a session is offered of a plugin, decided once at its start: a
//! tool whose `plugin.<p>.tool.<t>` is denied is not offered (any other
//! answer offers it, and each call is decided again); every capability it
//! declares must be `allow` outright under its own action, or the tool is
//! not offered. The capabilities of the offered tools are what the plugin
//! is linked with.

use chock_policy::{Decision, Key, Policy, Reading, StartQuestion};

use crate::capability::Grants;
use crate::manifest::Manifest;

/// One plugin's tools at session start.
#[derive(Debug, Clone)]
pub struct Offer {
    pub manifest: Manifest,
    pub offered: Vec<String>,
    pub withheld: Vec<Withheld>,
    pub grants: Grants,
}

/// A tool not offered, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Withheld {
    pub tool: String,
    pub why: String,
}

/// Decides `manifest`'s tools for an agent of `agent_kind`.
pub fn decide(policy: &Policy, agent_kind: &str, manifest: Manifest) -> Offer {
    let mut offered = Vec::new();
    let mut withheld = Vec::new();
    let mut granted = Vec::new();
    for tool in &manifest.tools {
        match refusal(policy, agent_kind, &manifest.id, tool) {
            Some(why) => withheld.push(Withheld {
                tool: tool.name.clone(),
                why,
            }),
            None => {
                offered.push(tool.name.clone());
                granted.extend(tool.capabilities.iter().cloned());
            }
        }
    }
    Offer {
        manifest,
        offered,
        withheld,
        grants: Grants::new(granted),
    }
}

/// Why `tool` is not offered, if it is not.
fn refusal(
    policy: &Policy,
    agent_kind: &str,
    plugin: &str,
    tool: &crate::manifest::ToolManifest,
) -> Option<String> {
    let action = match chock_names::plugin_tool(plugin, &tool.name) {
        Ok(action) => action,
        Err(e) => return Some(e.to_string()),
    };
    let question = StartQuestion::ThirdPartyTool {
        action: action.clone(),
    };
    match chock_gate::start::at_start(policy, agent_kind, &question) {
        Err(e) => return Some(e.to_string()),
        Ok(answer) if !answer.granted => return Some(format!("{action} is denied")),
        Ok(_) => {}
    }
    tool.capabilities.iter().find_map(|capability| {
        let action = capability.action();
        let key = Key::new(action.clone()).with_agent_kind(agent_kind);
        let decision = policy.decide(&key, Reading::Act).decision;
        (decision != Decision::Allow).then(|| {
            format!(
                "its capability {capability} ({action}) is {decision}, not allow: a capability is linked before any call, so only allow grants it"
            )
        })
    })
}

impl Offer {
    /// Every tool withheld, for `why` (the plugin could not be built).
    pub fn withhold_all(&mut self, why: &str) {
        for tool in self.offered.drain(..) {
            self.withheld.push(Withheld {
                tool,
                why: why.to_string(),
            });
        }
    }
}
