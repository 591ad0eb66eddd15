//! Deciding names and connections for the router, through the one gate.

use std::collections::{BTreeSet, HashMap};
use std::ops::Deref;
use std::sync::{Arc, Mutex};

use chock_gate::Route;
use chock_log::Log;
use chock_policy::{Asker, Decision, Key, Policy, Question, Reading, names};

/// What the router asks while a command runs. Implementations must be
/// cheap to call from the relay's and the resolver's threads.
pub trait Decide: Send + Sync {
    /// Whether `host` may be looked up at all: false only when every port
    /// of it is refused by the rules (nobody is asked here; the port is
    /// not known yet). A refused name is never looked up.
    fn name(&self, host: &str) -> bool;
    /// `net.connect.<reversed host>.<port>`: true only when the rules allow
    /// it, or a person who could be asked said yes.
    fn connect(&self, host: &str, port: u16) -> bool;
    /// IPv4 address literals some rule allows outright
    /// (`net.connect.<reversed octets>.<port>`): they are in the allow set
    /// from the start, though no name was looked up for them.
    fn literals(&self) -> Vec<std::net::Ipv4Addr> {
        Vec::new()
    }
    /// The answer [`Decide::connect`] already gave `host` and `port` in this
    /// run, if any: known without asking or waiting.
    fn settled(&self, _host: &str, _port: u16) -> Option<bool> {
        None
    }
}

/// The most answers a run remembers; past it a connection is asked again.
const MAX_SETTLED: usize = 1024;

/// The policy's answers through the gate, each connection's decision
/// logged once and remembered for the run (a person is asked once per
/// host and port).
pub struct NetGate<P> {
    policy: P,
    log: Log,
    asker: Arc<dyn Asker + Send + Sync>,
    route: Route,
    project: String,
    agent_kind: String,
    /// The agent the log names (the client's own name on the tool server).
    logged_agent: String,
    tool: String,
    settled: Mutex<HashMap<String, bool>>,
}

impl<P: Deref<Target = Policy> + Send + Sync> NetGate<P> {
    /// Decides under `policy` as the main agent's acts through
    /// `run_command`, asking `asker`, logging to `log` on `route` in
    /// `project` under the agent name `logged_agent`.
    pub fn new(
        policy: P,
        log: Log,
        asker: Arc<dyn Asker + Send + Sync>,
        (route, project, logged_agent): (Route, String, String),
    ) -> NetGate<P> {
        NetGate {
            policy,
            log,
            asker,
            route,
            project,
            agent_kind: crate::exec::AGENT_KIND.into(),
            logged_agent,
            tool: crate::exec::TOOL.into(),
            settled: Mutex::new(HashMap::new()),
        }
    }

    fn key(&self, action: String) -> Key {
        Key::new(action)
            .with_tool(self.tool.clone())
            .with_agent_kind(self.agent_kind.clone())
    }
}

impl<P: Deref<Target = Policy> + Send + Sync> Decide for NetGate<P> {
    fn name(&self, host: &str) -> bool {
        let Ok(reversed) = names::reversed_host(host) else {
            return false;
        };
        let prefix = format!("net.connect.{reversed}.");
        // Only exact names and `.*` classes exist, so every port no rule
        // names exactly gets one answer: try each named port and one more.
        let named: BTreeSet<u16> = super::every_rule(&self.policy)
            .filter_map(|r| r.action.as_ref())
            .filter(|p| !p.is_class())
            .filter_map(|p| p.as_str().strip_prefix(&prefix)?.parse().ok())
            .collect();
        let unnamed = (1..=u16::MAX).find(|p| !named.contains(p)).unwrap_or(0);
        named.iter().copied().chain([unnamed]).any(|port| {
            let verdict = self
                .policy
                .decide(&self.key(format!("{prefix}{port}")), Reading::Act);
            !matches!(verdict.decision, Decision::Deny | Decision::AgentThenHuman)
        })
    }

    fn literals(&self) -> Vec<std::net::Ipv4Addr> {
        let mut found: Vec<std::net::Ipv4Addr> = super::every_rule(&self.policy)
            .filter_map(|r| r.action.as_ref())
            .filter(|p| !p.is_class())
            .filter_map(|p| {
                let rest = p.as_str().strip_prefix("net.connect.")?;
                let labels: Vec<&str> = rest.split('.').collect();
                let [d, c, b, a, port] = labels.as_slice() else {
                    return None;
                };
                let octets = [a, b, c, d].map(|o| o.parse::<u8>().ok());
                let [Some(a), Some(b), Some(c), Some(d)] = octets else {
                    return None;
                };
                port.parse::<u16>().ok()?;
                let verdict = self
                    .policy
                    .decide(&self.key(p.as_str().to_owned()), Reading::Act);
                (verdict.decision == Decision::Allow).then_some(std::net::Ipv4Addr::new(a, b, c, d))
            })
            .collect();
        found.sort();
        found.dedup();
        found
    }

    fn settled(&self, host: &str, port: u16) -> Option<bool> {
        let action = names::net_connect(host, port).ok()?;
        self.settled
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(&action)
            .copied()
    }

    fn connect(&self, host: &str, port: u16) -> bool {
        let Ok(action) = names::net_connect(host, port) else {
            return false;
        };
        // One lock over the whole decision: a second connection to the
        // same host and port waits for the first one's answer.
        let mut settled = self
            .settled
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(goes) = settled.get(&action) {
            return *goes;
        }
        let key = self.key(action.clone());
        let verdict = self.policy.decide(&key, Reading::Act);
        let end = chock_gate::settle(self.route, &verdict, self.asker.as_ref(), || Question {
            action: action.clone(),
            decision: verdict.decision,
            summary: format!("a program in the sandbox connects to {host} port {port}"),
            detail: vec![format!("project: {}", self.project)],
            rules: verdict.suggestion.iter().cloned().collect(),
        });
        let entry = end.entry(
            self.route,
            self.project.clone(),
            &key.with_agent_kind(self.logged_agent.clone()),
            &verdict,
            Some(format!("{host}:{port}")),
        );
        if self.log.append(&entry).is_none() {
            tracing::warn!(
                "the decision log in {} could not be written; {action} is not on record",
                self.log.dir().display()
            );
        }
        let goes = end.goes();
        if settled.len() < MAX_SETTLED {
            settled.insert(action, goes);
        }
        goes
    }
}
