//! A session's plugins: every plugin the person's own lock and the
//! project's chock.lock pin, its tools decided once ([`crate::offer`]) and
//! the plugin built with what its offered tools were granted, before any
//! of its code runs.

use std::collections::HashMap;

use chock_packages::lock::LockedPlugin;
use chock_policy::Policy;

use crate::error::PluginError;
use crate::host::{Host, Loaded};
use crate::manifest::ToolManifest;
use crate::offer::{self, Offer};
use crate::reach::Reach;
use crate::store::{self, Place, PlaceKind};

/// One pinned plugin at session start.
pub struct Started {
    pub pin: LockedPlugin,
    /// Whose it is.
    pub place: PlaceKind,
    /// What was offered of it; none when it could not be read.
    pub offer: Option<Offer>,
    /// Why none of it is offered (its files, or its build), if so.
    pub problem: Option<String>,
    loaded: Option<Loaded>,
}

/// The plugins of one session.
pub struct Plugins {
    started: Vec<Started>,
    /// Each id's first place in `started`: the one offered, if any is.
    by_id: HashMap<String, usize>,
}

impl Plugins {
    /// Reads, decides and builds every plugin pinned in `places`, in
    /// order ([`Place::every`]). An id pinned in an earlier place is not
    /// offered again from a later one.
    pub fn start(
        places: &[Place],
        policy: &Policy,
        agent_kind: &str,
        host: &Host,
        reach: &Reach,
    ) -> Result<Plugins, PluginError> {
        let mut started: Vec<Started> = Vec::new();
        let mut by_id = HashMap::new();
        for place in places {
            for (pin, plugin) in store::installed(place)? {
                let taken = by_id.contains_key(&pin.id);
                if !taken {
                    by_id.insert(pin.id.clone(), started.len());
                }
                let plugin = match plugin {
                    Ok(_) if taken => Err(format!(
                        "a plugin with the id `{}` is already offered from your own plugins; remove one of the two",
                        pin.id
                    )),
                    other => other.map_err(|e| e.to_string()),
                };
                started.push(match plugin {
                    Ok(plugin) => build(pin, place.kind, plugin, policy, agent_kind, host, reach),
                    Err(problem) => Started {
                        pin,
                        place: place.kind,
                        offer: None,
                        problem: Some(problem),
                        loaded: None,
                    },
                });
            }
        }
        Ok(Plugins { started, by_id })
    }

    /// No plugin at all.
    pub fn none() -> Plugins {
        Plugins {
            started: Vec::new(),
            by_id: HashMap::new(),
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
        let started = self.by_id.get(plugin).and_then(|&at| self.started.get(at));
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
    place: PlaceKind,
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
        place,
        offer: Some(offer),
        problem: None,
        loaded,
    }
}
