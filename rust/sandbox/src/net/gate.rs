//! Deciding names and connections for the router, through the one gate.

use std::collections::{HashMap, HashSet};
use std::ops::Deref;
use std::sync::{Arc, Mutex};

use chock_gate::Route;
use chock_log::{AnsweredBy, Log};
use chock_policy::{Asker, Decision, Key, Layer, Policy, Question, Reading, Verdict, names};

/// What the router asks while a command runs. Implementations must be
/// cheap to call from the relay's and the resolver's threads.
pub trait Decide: Send + Sync {
    /// Whether the name `host` may be looked up on the host (nobody is
    /// asked here; the port is not known yet): true only when some rule
    /// could let a connection to it go ahead on this route. A refused name
    /// is answered REFUSED and never leaves the sandbox.
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
/// host and port), each refused name logged once.
pub struct NetGate<P> {
    policy: P,
    log: Log,
    asker: Arc<dyn Asker + Send + Sync>,
    /// Whether `asker` can reach anyone: without, only what a rule allows
    /// outright is looked up. Found out at the first name a question could
    /// let through, never before: finding out may take a while (a command
    /// with no terminal waits for a running `chock approve` to find it).
    can_ask: std::sync::OnceLock<bool>,
    route: Route,
    project: String,
    agent_kind: String,
    /// The agent the log names (the client's own name on the tool server).
    logged_agent: String,
    tool: String,
    settled: Mutex<HashMap<String, bool>>,
    /// The names refused so far (each logged once; past [`MAX_SETTLED`] each
    /// refusal is logged again).
    refused: Mutex<HashSet<String>>,
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
            can_ask: std::sync::OnceLock::new(),
            asker,
            route,
            project,
            agent_kind: crate::exec::AGENT_KIND.into(),
            logged_agent,
            tool: crate::exec::TOOL.into(),
            settled: Mutex::new(HashMap::new()),
            refused: Mutex::new(HashSet::new()),
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
        let action = format!("net.connect.{reversed}");
        // What every port could get: a rule must answer, and answer what
        // this route can carry out (a question only where someone can be asked).
        let answers = self
            .policy
            .decide_one_below(&self.key(action.clone()), Reading::Act);
        let goes = |decision: Decision| match decision {
            Decision::Allow => true,
            Decision::Ask | Decision::AgentReview => {
                *self.can_ask.get_or_init(|| self.asker.can_ask())
            }
            Decision::Deny | Decision::AgentThenHuman => false,
        };
        let numeric = super::dns::numeric(host).is_some();
        if !numeric
            && answers
                .iter()
                .any(|(_, v)| v.decided_by.layer != Layer::Nothing && goes(v.decision))
        {
            return true;
        }
        let mut refused = self
            .refused
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if refused.contains(host) {
            return false;
        }
        // The line names the most any port could get, and who said it.
        let verdict = match answers
            .into_iter()
            .map(|(_, v)| v)
            .max_by_key(|v| v.decision)
        {
            Some(verdict) if !numeric => verdict,
            _ => Verdict::bare(Decision::Deny, Layer::Nothing),
        };
        let answered_by = match verdict.decision {
            Decision::Deny | Decision::AgentThenHuman => {
                AnsweredBy::of_layer(verdict.decided_by.layer)
            }
            _ => AnsweredBy::Nobody,
        };
        let entry = chock_gate::line(
            self.route,
            self.project.clone(),
            &self
                .key(format!("{action}.*"))
                .with_agent_kind(self.logged_agent.clone()),
            &verdict,
            (verdict.decision, answered_by),
            Some(host.to_owned()),
        );
        if self.log.append(&entry).is_none() {
            tracing::warn!(
                "the decision log in {} could not be written; the refused name {host} is not on record",
                self.log.dir().display()
            );
        }
        if refused.len() < MAX_SETTLED {
            refused.insert(host.to_owned());
        }
        false
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

#[cfg(test)]
mod tests {
    use super::*;
    use chock_policy::{Answer, Nobody, Pattern, Rule};

    /// An asker with a person behind it who is never reached here.
    struct Someone;

    impl Asker for Someone {
        fn ask(&self, _question: &Question) -> Answer {
            Answer::No
        }
    }

    fn gate(
        rules: &[(&str, Decision)],
        asker: Arc<dyn Asker + Send + Sync>,
        dir: &std::path::Path,
    ) -> NetGate<Box<Policy>> {
        let policy = Policy::from_rules(
            rules
                .iter()
                .map(|(a, d)| Rule::new(Some(Pattern::parse(a).expect("pattern")), *d))
                .collect(),
            Vec::new(),
        );
        NetGate::new(
            Box::new(policy),
            Log::at(dir, Default::default()),
            asker,
            (Route::Exec, "/p".into(), "main".into()),
        )
    }

    fn lines(dir: &std::path::Path) -> Vec<serde_json::Value> {
        std::fs::read_to_string(dir.join("decisions.jsonl"))
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    }

    /// An asker that counts how often it is asked whether it can ask.
    struct Counted(std::sync::atomic::AtomicUsize);

    impl Asker for Counted {
        fn ask(&self, _question: &Question) -> Answer {
            Answer::No
        }

        fn can_ask(&self) -> bool {
            self.0.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            true
        }
    }

    /// Whether anyone can be asked is found out only for a name a
    /// question could let through, and once: a command whose names rules
    /// settle (or that names none) never waits to find out.
    #[test]
    fn whether_anyone_can_be_asked_is_found_out_only_when_it_matters() {
        let rules = [
            ("net.connect.test.allowed.443", Decision::Allow),
            ("net.connect.test.asked.*", Decision::Ask),
        ];
        let dir = tempfile::tempdir().expect("tempdir");
        let counted = Arc::new(Counted(Default::default()));
        let gate = gate(&rules, counted.clone(), dir.path());
        let asked = || counted.0.load(std::sync::atomic::Ordering::Relaxed);
        assert_eq!(asked(), 0, "not when the gate is made");
        assert!(gate.name("allowed.test"));
        assert!(!gate.name("10.0.0.5"));
        assert_eq!(
            asked(),
            0,
            "not for a name a rule allows, nor a numeric one"
        );
        assert!(gate.name("asked.test"));
        assert!(gate.name("other.asked.test"));
        assert_eq!(
            asked(),
            1,
            "once, for the first name a question could let through"
        );
    }

    #[test]
    fn a_name_is_looked_up_only_when_a_rule_could_let_this_route_connect() {
        let rules = [
            ("net.connect.test.allowed.443", Decision::Allow),
            ("net.connect.test.asked.*", Decision::Ask),
            ("net.connect.test.denied.*", Decision::Deny),
            ("net.connect.test.*", Decision::AgentThenHuman),
            ("net.connect.5.0.0.10.8080", Decision::Allow),
        ];
        let dir = tempfile::tempdir().expect("tempdir");
        let someone = gate(&rules, Arc::new(Someone), dir.path());
        let nobody_dir = tempfile::tempdir().expect("tempdir");
        let nobody = gate(&rules, Arc::new(Nobody), nobody_dir.path());
        for (host, with_someone, with_nobody) in [
            ("allowed.test", true, true),
            ("asked.test", true, false),
            ("denied.test", false, false),
            ("other.test", false, false),
            ("unnamed.example", false, false),
            // Numeric: never looked up, even where a rule names it.
            ("10.0.0.5", false, false),
            ("167772161", false, false),
        ] {
            assert_eq!(someone.name(host), with_someone, "{host}, someone to ask");
            assert_eq!(nobody.name(host), with_nobody, "{host}, nobody to ask");
        }
        for _ in 0..40 {
            assert!(!nobody.name("unnamed.example"));
        }
        let logged = lines(nobody_dir.path());
        let line = |subject: &str| {
            let found: Vec<_> = logged.iter().filter(|l| l["subject"] == subject).collect();
            assert_eq!(found.len(), 1, "{subject} logged once: {logged:?}");
            (
                found[0]["action"].as_str().unwrap_or_default().to_owned(),
                found[0]["decision"].as_str().unwrap_or_default().to_owned(),
                found[0]["answered_by"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned(),
            )
        };
        let owned = |a: &str, d: &str, b: &str| (a.to_owned(), d.to_owned(), b.to_owned());
        assert_eq!(
            line("unnamed.example"),
            owned("net.connect.example.unnamed.*", "ask", "nobody")
        );
        assert_eq!(
            line("asked.test"),
            owned("net.connect.test.asked.*", "ask", "nobody")
        );
        assert_eq!(
            line("denied.test"),
            owned("net.connect.test.denied.*", "deny", "rule")
        );
        assert_eq!(
            line("other.test"),
            owned("net.connect.test.other.*", "agent_then_human", "rule")
        );
        assert_eq!(line("10.0.0.5").1, "deny");
        assert!(
            !logged.iter().any(|l| l["subject"] == "allowed.test"),
            "a name looked up is not a decision: {logged:?}"
        );
        assert!(
            !lines(dir.path())
                .iter()
                .any(|l| l["subject"] == "asked.test"),
            "where someone can be asked, an ask rule lets the name through"
        );
    }
}
