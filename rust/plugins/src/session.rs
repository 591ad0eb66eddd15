//! A session's plugins: every plugin chock.lock pins, its tools decided
//! once ([`crate::offer`]) and the plugin built with what its offered tools
//! were granted, before any of its code runs.

use std::path::Path;

use chock_packages::lock::LockedPlugin;
use chock_policy::Policy;

use crate::error::PluginError;
use crate::host::{Host, Loaded};
use crate::manifest::ToolManifest;
use crate::offer::{self, Offer};
use crate::reach::Reach;
use crate::store;

/// One pinned plugin at session start.
pub struct Started {
    pub pin: LockedPlugin,
    /// What was offered of it; none when it could not be read.
    pub offer: Option<Offer>,
    /// Why none of it is offered (its files, or its build), if so.
    pub problem: Option<String>,
    loaded: Option<Loaded>,
}

/// The plugins of one session.
pub struct Plugins {
    started: Vec<Started>,
}

impl Plugins {
    /// Reads, decides and builds every plugin pinned in `project`'s lock.
    pub fn start(
        project: &Path,
        policy: &Policy,
        agent_kind: &str,
        host: &Host,
        reach: &Reach,
    ) -> Result<Plugins, PluginError> {
        let started = store::installed(project)?
            .into_iter()
            .map(|(pin, plugin)| match plugin {
                Ok(plugin) => build(pin, plugin, policy, agent_kind, host, reach),
                Err(e) => Started {
                    pin,
                    offer: None,
                    problem: Some(e.to_string()),
                    loaded: None,
                },
            })
            .collect();
        Ok(Plugins { started })
    }

    /// No plugin at all.
    pub fn none() -> Plugins {
        Plugins {
            started: Vec::new(),
        }
    }

    /// Every pinned plugin, offered or not.
    pub fn started(&self) -> &[Started] {
        &self.started
    }

    /// Every offered tool: its plugin's id and its manifest.
    pub fn offered(&self) -> impl Iterator<Item = (&str, &ToolManifest)> {
        self.started
            .iter()
            .filter_map(|s| s.offer.as_ref())
            .flat_map(|offer| {
                offer.offered.iter().filter_map(move |name| {
                    offer
                        .manifest
                        .tool(name)
                        .map(|t| (offer.manifest.id.as_str(), t))
                })
            })
    }

    /// Calls the offered tool `tool` of `plugin` (the call is decided by
    /// the caller first). Blocks: call it from a blocking thread.
    pub fn call(
        &self,
        plugin: &str,
        tool: &str,
        input: &serde_json::Value,
    ) -> Result<serde_json::Value, PluginError> {
        let started = self.started.iter().find(|s| s.pin.id == plugin);
        let offered = started
            .and_then(|s| Some((s.offer.as_ref()?, s.loaded.as_ref()?)))
            .filter(|(offer, _)| offer.offered.iter().any(|t| t == tool));
        match offered {
            Some((_, loaded)) => loaded.call(tool, input),
            None => Err(PluginError::Refused(format!(
                "plugin.{plugin}.tool.{tool} is not offered in this session (`chock plugins list` says why)"
            ))),
        }
    }
}

fn build(
    pin: LockedPlugin,
    plugin: store::Installed,
    policy: &Policy,
    agent_kind: &str,
    host: &Host,
    reach: &Reach,
) -> Started {
    let mut offer = offer::decide(policy, agent_kind, plugin.manifest);
    let loaded = if offer.offered.is_empty() {
        None
    } else {
        match host.load(&plugin.component, offer.grants.clone(), reach.clone()) {
            Ok(loaded) => Some(loaded),
            Err(e) => {
                offer.withhold_all(&e.to_string());
                None
            }
        }
    };
    Started {
        pin,
        offer: Some(offer),
        problem: None,
        loaded,
    }
}
