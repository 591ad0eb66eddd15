//! A session's flake inputs, and the two moments they are fetched.
//!
//! **At start** ([`FlakeInputs::at_start`]) nobody is there to be asked: each
//! host of each input missing from the store is put to the rules, only
//! `allow` fetches, and the session starts whatever arrived.
//!
//! **At build time** ([`FlakeInputs::at_build`]) a person is at the prompt.
//! The inputs the evaluation found missing are put to the rules host by host;
//! the hosts no rule answers go into one question through the caller's
//! [`Asker`]; what was allowed is fetched. A host the person refused is
//! remembered for the session: an input that needs it again is named and
//! refused without asking. The caller evaluates once more after this and
//! takes a second miss as the answer, so there is never a loop.
//!
//! Every answer is one line in the decision log (route `inputs` at start,
//! `build` at build time), a redirect hop's too.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use chock_gate::{Outcome, Refused};
use chock_log::{AnsweredBy, Log};
use chock_policy::{Asker, Decision, Endpoint, Policy, Question, Verdict};
use chock_store::StorePath;
use chock_store::daemon::{DaemonConnection, DaemonError};
use futures_util::StreamExt;
use futures_util::stream::FuturesUnordered;

use crate::decide::{Asking, HostVerdict, decide_host};
use crate::fetch::{FetchError, Fetcher, HopGate, Limits};
use crate::progress::{Event, Progress, Reporter, Traced};
use crate::report::{HostAnswer, InputReport, InputState, Report};
use crate::store;
use chock_flakelock::{Input, Source};
use chock_flakelock::{Lock, LockError};

/// The lock file, in the project's root.
pub const LOCK_FILE: &str = "flake.lock";

/// A host and port, the unit a question is about.
pub type HostPort = (String, u16);

fn host_port(endpoint: &Endpoint) -> HostPort {
    (endpoint.host.clone(), endpoint.port)
}

/// What the fetching needs from the session around it.
pub struct Env<'a> {
    pub policy: &'a Policy,
    pub log: &'a Log,
    pub fetcher: &'a Fetcher,
    pub progress: &'a dyn Progress,
}

/// Why [`FlakeInputs::fetch_for_build`] could not fetch.
#[derive(Debug, thiserror::Error)]
pub enum BuildFetchError {
    #[error(transparent)]
    Fetcher(#[from] FetchError),
    #[error(transparent)]
    Daemon(#[from] DaemonError),
}

/// Which inputs a build wants.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Wanted {
    /// Every input the store does not hold.
    AllMissing,
    /// The inputs at these store paths (those the evaluation missed).
    Paths(BTreeSet<StorePath>),
}

/// The project's `flake.lock`, read once per session, and what people said
/// about its hosts in this session.
#[derive(Debug)]
pub struct FlakeInputs {
    project: PathBuf,
    lock: Lock,
    inputs: Vec<Input>,
    /// Hosts a person refused in this session, with the action asked.
    refused_by_person: BTreeMap<HostPort, String>,
}

impl FlakeInputs {
    /// Reads `<project>/flake.lock`; `None` when the project has none (the
    /// ordinary case for a project without a flake).
    pub fn open(project: &Path) -> Result<Option<FlakeInputs>, LockError> {
        let file = project.join(LOCK_FILE);
        match chock_store::fs::symlink_metadata(&file) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(source) => return Err(LockError::Read { file, source }),
            Ok(_) => {}
        }
        Ok(Some(FlakeInputs::from_lock(project, Lock::read(&file)?)))
    }

    /// The inputs of an already read lock.
    pub fn from_lock(project: &Path, lock: Lock) -> FlakeInputs {
        let inputs = lock
            .nodes
            .iter()
            .map(|node| Input::from_node(node, &lock.file, project))
            .collect();
        FlakeInputs {
            project: project.to_path_buf(),
            lock,
            inputs,
            refused_by_person: BTreeMap::new(),
        }
    }

    pub fn lock(&self) -> &Lock {
        &self.lock
    }

    pub fn inputs(&self) -> &[Input] {
        &self.inputs
    }

    /// The store path of every input Chock can fetch.
    pub fn store_paths(&self) -> BTreeSet<StorePath> {
        self.sources().map(|(_, s)| s.store_path.clone()).collect()
    }

    /// Hosts a person refused in this session.
    pub fn refused_by_person(&self) -> impl Iterator<Item = &HostPort> {
        self.refused_by_person.keys()
    }

    fn sources(&self) -> impl Iterator<Item = (&Input, &Source)> {
        self.inputs
            .iter()
            .filter_map(|i| i.source.as_ref().ok().map(|s| (i, s)))
    }

    /// What `chock inputs` shows without fetching: every input, every host
    /// with the answer it would get at start, and what the store holds
    /// (`valid`, or unknown when the store could not be asked). Nothing is
    /// logged, because nothing is done.
    pub fn survey(&self, policy: &Policy, valid: Option<&BTreeSet<StorePath>>) -> Report {
        let asking = Asking::at_start();
        let mut hosts = Vec::new();
        for (endpoint, inputs) in self.hosts_of(self.sources().map(|(i, s)| (i.name.as_str(), s))) {
            hosts.push(answer_of_rules(policy, &asking, &endpoint, inputs));
        }
        let inputs = self
            .inputs
            .iter()
            .map(|input| {
                let state = match (&input.source, valid) {
                    (Err(refusal), _) => InputState::Refused(refusal.clone()),
                    (Ok(_), None) => InputState::Unknown,
                    (Ok(source), Some(valid)) if valid.contains(&source.store_path) => {
                        InputState::InStore
                    }
                    (Ok(source), Some(_)) => {
                        let blocked = blocked_hosts(source, &hosts);
                        if blocked.is_empty() {
                            InputState::Missing
                        } else {
                            InputState::NotAllowed { hosts: blocked }
                        }
                    }
                };
                InputReport::new(input, state)
            })
            .collect();
        Report { inputs, hosts }
    }

    /// Session start: fetch every missing input whose hosts the rules
    /// allow, asking nobody.
    pub async fn at_start(
        &mut self,
        env: &Env<'_>,
        conn: &mut DaemonConnection,
    ) -> Result<Report, DaemonError> {
        self.provide(env, conn, &Asking::at_start(), &Wanted::AllMissing, None)
            .await
    }

    /// Build time: fetch the wanted inputs, asking `asker` once about the
    /// hosts no rule answers (never about one a person refused in this
    /// session).
    pub async fn at_build(
        &mut self,
        env: &Env<'_>,
        conn: &mut DaemonConnection,
        asking: &Asking,
        wanted: &Wanted,
        asker: &dyn Asker,
    ) -> Result<Report, DaemonError> {
        self.provide(env, conn, asking, wanted, Some(asker)).await
    }

    /// Build time for a build whose evaluation found `paths` missing: the
    /// fetcher from the environment, a connection to the daemon, then
    /// [`FlakeInputs::at_build`], each step a tracing event ([`Traced`]).
    /// What `chock build` and the tool server's builds both do.
    pub async fn fetch_for_build(
        &mut self,
        policy: &Policy,
        log: &Log,
        asking: &Asking,
        paths: BTreeSet<StorePath>,
        asker: &dyn Asker,
    ) -> Result<Report, BuildFetchError> {
        let fetcher = Fetcher::from_env(Limits::default())?;
        let env = Env {
            policy,
            log,
            fetcher: &fetcher,
            progress: &Traced,
        };
        let mut conn = chock_store::daemon::connect().await?;
        let wanted = Wanted::Paths(paths);
        Ok(self
            .at_build(&env, &mut conn, asking, &wanted, asker)
            .await?)
    }

    /// Every endpoint `sources` reach, once, in first-seen order, with the
    /// inputs that need it.
    fn hosts_of<'s>(
        &self,
        sources: impl Iterator<Item = (&'s str, &'s Source)>,
    ) -> Vec<(Endpoint, Vec<String>)> {
        let mut hosts: Vec<(Endpoint, Vec<String>)> = Vec::new();
        for (name, source) in sources {
            for endpoint in &source.hosts {
                match hosts
                    .iter_mut()
                    .find(|(e, _)| host_port(e) == host_port(endpoint))
                {
                    Some((_, names)) => names.push(name.to_string()),
                    None => hosts.push((endpoint.clone(), vec![name.to_string()])),
                }
            }
        }
        hosts
    }

    async fn provide(
        &mut self,
        env: &Env<'_>,
        conn: &mut DaemonConnection,
        asking: &Asking,
        wanted: &Wanted,
        asker: Option<&dyn Asker>,
    ) -> Result<Report, DaemonError> {
        let valid = store::valid_paths(conn, &self.store_paths()).await?;
        let is_wanted = |source: &Source| match wanted {
            Wanted::AllMissing => true,
            Wanted::Paths(paths) => paths.contains(&source.store_path),
        };
        let missing: Vec<(String, Source)> = self
            .sources()
            .filter(|(_, s)| !valid.contains(&s.store_path) && is_wanted(s))
            .map(|(i, s)| (i.name.clone(), s.clone()))
            .collect();
        let needed = self.hosts_of(missing.iter().map(|(n, s)| (n.as_str(), s)));
        let logger = Logger {
            log: env.log,
            project: self.project.display().to_string(),
            asking,
        };
        let mut answers = self.answer_hosts(env.policy, &logger, needed, asker);
        let granted: BTreeSet<HostPort> = answers
            .iter()
            .filter(|a| a.granted)
            .map(|a| (a.host.clone(), a.port))
            .collect();
        let allowed = missing
            .iter()
            .filter(|(_, s)| s.hosts.iter().all(|e| granted.contains(&host_port(e))));
        let (fetched, mut hop_answers) = fetch_all(env, conn, &logger, &granted, allowed).await;
        answers.append(&mut hop_answers);
        let inputs = self
            .inputs
            .iter()
            .map(|input| {
                let state = match &input.source {
                    Err(refusal) => InputState::Refused(refusal.clone()),
                    Ok(source) if valid.contains(&source.store_path) => InputState::InStore,
                    Ok(source) if !is_wanted(source) => InputState::NotWanted,
                    Ok(source) => match fetched.get(&source.store_path) {
                        Some(Ok(())) => InputState::Fetched,
                        Some(Err(why)) => InputState::Failed(why.to_string()),
                        None => self.not_fetched(source, &answers),
                    },
                };
                InputReport::new(input, state)
            })
            .collect();
        Ok(Report {
            inputs,
            hosts: answers,
        })
    }

    /// Why an input whose hosts were not all granted stayed out.
    fn not_fetched(&self, source: &Source, answers: &[HostAnswer]) -> InputState {
        for endpoint in &source.hosts {
            if let Some(action) = self.refused_by_person.get(&host_port(endpoint)) {
                let earlier = answers
                    .iter()
                    .find(|a| (a.host.as_str(), a.port) == (endpoint.host.as_str(), endpoint.port))
                    .is_none_or(|a| a.earlier);
                return InputState::RefusedByPerson {
                    host: endpoint.host.clone(),
                    port: endpoint.port,
                    action: action.clone(),
                    earlier,
                };
            }
        }
        InputState::NotAllowed {
            hosts: blocked_hosts(source, answers),
        }
    }

    /// Puts each host to the rules, and the rest (at build time) to one
    /// question. Every new answer is logged.
    fn answer_hosts(
        &mut self,
        policy: &Policy,
        logger: &Logger<'_>,
        needed: Vec<(Endpoint, Vec<String>)>,
        asker: Option<&dyn Asker>,
    ) -> Vec<HostAnswer> {
        let mut answers = Vec::new();
        let mut undecided = Vec::new();
        for (endpoint, inputs) in needed {
            let mut answer = answer_of_rules(policy, logger.asking, &endpoint, inputs);
            if let Some(action) = self.refused_by_person.get(&host_port(&endpoint)) {
                // Named, and not asked again.
                answer.answered_by = AnsweredBy::Person;
                answer.decision = Decision::Deny;
                answer.granted = false;
                answer.earlier = true;
                answer.action = action.clone();
                answers.push(answer);
                continue;
            }
            let asks = answer.verdict.as_ref().is_some_and(|v| {
                chock_gate::before_asking(logger.asking.route, v) == chock_gate::Step::Ask
            });
            if asker.is_some() && asks {
                undecided.push(answers.len());
            } else {
                logger.write(&answer);
            }
            answers.push(answer);
        }
        if let (Some(asker), false) = (asker, undecided.is_empty()) {
            let asked: Vec<&HostAnswer> =
                undecided.iter().filter_map(|i| answers.get(*i)).collect();
            let reply = asker.ask(&question(&asked));
            for i in undecided {
                let Some(answer) = answers.get_mut(i) else {
                    continue;
                };
                let heard = chock_gate::heard(answer.decision, reply);
                answer.answered_by = heard.answered_by;
                answer.decision = heard.decision;
                answer.granted = heard.goes();
                if heard.outcome == Outcome::Refused(Refused::PersonSaidNo) {
                    self.refused_by_person
                        .insert((answer.host.clone(), answer.port), answer.action.clone());
                }
                logger.write(answer);
            }
        }
        answers
    }
}

/// The rules' answer for one host; an act no rule names is answered by
/// nobody until a person is asked.
fn answer_of_rules(
    policy: &Policy,
    asking: &Asking,
    endpoint: &Endpoint,
    inputs: Vec<String>,
) -> HostAnswer {
    match decide_host(policy, asking, endpoint) {
        Ok(HostVerdict {
            action,
            either,
            verdict,
        }) => HostAnswer {
            host: endpoint.host.clone(),
            port: endpoint.port,
            inputs,
            action,
            either: Some(either),
            decision: verdict.decision,
            answered_by: AnsweredBy::of_layer(verdict.decided_by.layer),
            // Granted by the rules alone; an ask is put to a person later
            // (at build time), or stays out (at start).
            granted: matches!(
                chock_gate::before_asking(asking.route, &verdict),
                chock_gate::Step::Settled(settled) if settled.goes()
            ),
            earlier: false,
            verdict: Some(verdict),
        },
        // Sources name only hosts that have names; this is the refusal if
        // one ever does not.
        Err(error) => HostAnswer {
            host: endpoint.host.clone(),
            port: endpoint.port,
            inputs,
            action: error.to_string(),
            either: None,
            decision: Decision::Deny,
            answered_by: AnsweredBy::Nobody,
            granted: false,
            earlier: false,
            verdict: None,
        },
    }
}

/// The actions of `source`'s hosts that were not granted.
fn blocked_hosts(source: &Source, answers: &[HostAnswer]) -> Vec<String> {
    source
        .hosts
        .iter()
        .filter_map(|e| {
            answers
                .iter()
                .find(|a| a.host == e.host && a.port == e.port && !a.granted)
                .map(|a| a.action.clone())
        })
        .collect()
}

/// One question for every host no rule answered.
fn question(asked: &[&HostAnswer]) -> Question {
    let mut inputs: Vec<&str> = asked
        .iter()
        .flat_map(|a| a.inputs.iter().map(String::as_str))
        .collect();
    inputs.sort_unstable();
    inputs.dedup();
    let hosts: Vec<String> = asked
        .iter()
        .map(|a| format!("{}:{}", a.host, a.port))
        .collect();
    let (action, decision) = match asked {
        [one] => (one.action.clone(), one.decision),
        _ => (
            "nix.net.hosts".to_string(),
            chock_gate::strictest(asked.iter().map(|a| a.decision), |d| *d)
                .unwrap_or(Decision::Ask),
        ),
    };
    Question {
        action,
        decision,
        summary: format!(
            "fetch the flake input{} {} from {}",
            if inputs.len() == 1 { "" } else { "s" },
            inputs.join(", "),
            hosts.join(", ")
        ),
        detail: asked
            .iter()
            .map(|a| {
                let rule = a
                    .verdict
                    .as_ref()
                    .and_then(|v| v.suggestion.as_ref())
                    .map_or(String::new(), |s| {
                        format!(" (to stop being asked: {})", s.rule)
                    });
                format!("{}:{} for {}{rule}", a.host, a.port, a.inputs.join(", "))
            })
            .collect(),
        rules: asked
            .iter()
            .filter_map(|a| a.verdict.as_ref().and_then(|v| v.suggestion.clone()))
            .collect(),
    }
}

/// Writes one log line per answer.
struct Logger<'a> {
    log: &'a Log,
    project: String,
    asking: &'a Asking,
}

impl Logger<'_> {
    fn write(&self, answer: &HostAnswer) {
        let key = self.asking.key(&answer.action);
        let unnamed = Verdict::bare(answer.decision, chock_policy::Layer::Nothing);
        let entry = chock_gate::line(
            self.asking.route,
            self.project.clone(),
            &key,
            answer.verdict.as_ref().unwrap_or(&unnamed),
            (answer.decision, answer.answered_by),
            Some(format!(
                "{}:{} for {}",
                answer.host,
                answer.port,
                answer.inputs.join(", ")
            )),
        );
        self.log.append(&entry);
    }
}

/// The hop gate of one fetch: a host already granted is followed; any other
/// is put to the rules, never to a person, and logged.
struct Hops<'a> {
    policy: &'a Policy,
    logger: &'a Logger<'a>,
    granted: &'a BTreeSet<HostPort>,
    decided: BTreeMap<HostPort, bool>,
    answers: Vec<HostAnswer>,
}

impl HopGate for Hops<'_> {
    fn allow_hop(&mut self, url: &str, endpoint: &Endpoint) -> bool {
        let key = host_port(endpoint);
        if self.granted.contains(&key) {
            return true;
        }
        if let Some(known) = self.decided.get(&key) {
            return *known;
        }
        let answer = answer_of_rules(
            self.policy,
            self.logger.asking,
            endpoint,
            vec![format!("a redirect to {url}")],
        );
        self.logger.write(&answer);
        self.decided.insert(key, answer.granted);
        let granted = answer.granted;
        self.answers.push(answer);
        granted
    }
}

/// How many inputs are downloaded and unpacked at once; adding to the
/// store goes one at a time over the one daemon connection.
const PARALLEL_FETCHES: usize = 4;

/// Fetches every allowed input (each store path once), checks each and adds
/// it to the store as soon as its tree is there. Returns the outcome per
/// store path and the answers about redirect hops.
async fn fetch_all<'s>(
    env: &Env<'_>,
    conn: &mut DaemonConnection,
    logger: &Logger<'_>,
    granted: &BTreeSet<HostPort>,
    allowed: impl Iterator<Item = &'s (String, Source)>,
) -> (BTreeMap<StorePath, Result<(), FetchError>>, Vec<HostAnswer>) {
    let mut seen = BTreeSet::new();
    let mut queue = allowed
        .filter(|(_, s)| seen.insert(s.store_path.clone()))
        .map(|(name, source)| async move {
            let mut hops = Hops {
                policy: env.policy,
                logger,
                granted,
                decided: BTreeMap::new(),
                answers: Vec::new(),
            };
            let report = Reporter {
                progress: env.progress,
                input: name,
            };
            let tree = env.fetcher.fetch(source, &mut hops, &report).await;
            (name, source, tree, hops.answers)
        });
    let mut in_flight = FuturesUnordered::new();
    in_flight.extend(queue.by_ref().take(PARALLEL_FETCHES));
    let mut outcomes = BTreeMap::new();
    let mut hop_answers = Vec::new();
    while let Some((name, source, tree, mut hops)) = in_flight.next().await {
        in_flight.extend(queue.next());
        hop_answers.append(&mut hops);
        let report = Reporter {
            progress: env.progress,
            input: name,
        };
        let outcome = match tree {
            Ok(fetched) => {
                report.send(Event::Stage("checking narHash and adding to the store"));
                store::add_checked(conn, &fetched.root, source).await
            }
            Err(error) => Err(error),
        };
        let outcome = match outcome {
            Ok(()) => {
                report.send(Event::Done {
                    ok: true,
                    message: &source.store_path.to_string(),
                });
                Ok(())
            }
            Err(error) => {
                let message = error.to_string();
                tracing::warn!(input = name.as_str(), "{message}");
                report.send(Event::Done {
                    ok: false,
                    message: &message,
                });
                Err(error)
            }
        };
        outcomes.insert(source.store_path.clone(), outcome);
    }
    (outcomes, hop_answers)
}
