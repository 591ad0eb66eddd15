//! The loaded policy: every layer read once, held immutable, and the answer to
//! a key computed from them. A project's rules (then the shipped defaults,
//! then the reading's answer for an unnamed act) give the project's answer;
//! every organisation bundle is a ceiling on it, folded as a minimum, so a
//! project can lower an answer and never raise one.

use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use crate::decision::Decision;
use crate::defaults::shipped_rules;
use crate::error::PolicyError;
use crate::files::{OperatorFile, OrgBundle, ProjectLayer, read_bundle, read_project};
use crate::index::RuleSet;
use crate::names::{self, NameError};
use crate::package::{PolicyPackage, Rollout, read_packages};
use crate::pattern::Pattern;
use crate::rule::{Key, Rule};
use chock_config::config::OperatorSettings;
use chock_config::{Config, FileKind, Source};

/// The project's policy file, in its root.
pub const PROJECT_FILE: &str = crate::control::CHOCK_ZON;
/// The bundle the NixOS module writes.
pub const SYSTEM_BUNDLE: &str = "/etc/chock/org-policy.zon";

/// How an act nobody named is answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Reading {
    /// Acts: unnamed = `ask` ("a policy that forgot a case must not become permission").
    Act,
    /// Capabilities and resources (`provider.*`, `workspace.integrate`):
    /// unnamed = `allow`.
    Ceiling,
}

impl Reading {
    pub(crate) fn unnamed(self) -> Decision {
        match self {
            Reading::Act => Decision::Ask,
            Reading::Ceiling => Decision::Allow,
        }
    }
}

/// Which layer gave the answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Layer {
    /// A rule in the project's `chock.zon`.
    Project,
    /// A rule in an organisation bundle, lower than the project's answer.
    Org,
    /// A rule of an installed policy package (`.agents/policies/<id>/`).
    Policy,
    /// A shipped default row.
    Default,
    /// No rule matched: the reading's answer for an unnamed act.
    Nothing,
    /// A promise the session made itself (`restrict_self` in `chock run`),
    /// a further term of the minimum that can only lower an answer.
    Promise,
    /// A person stopped Chock (`chock stop`): every call is refused until
    /// `chock resume`, whatever the rules say.
    Stop,
}

impl Layer {
    /// The layer as one word, as `--json` and the decision log spell it:
    /// `project`, `org`, `default`, `nothing`.
    pub fn as_str(self) -> &'static str {
        match self {
            Layer::Project => "project",
            Layer::Org => "org",
            Layer::Policy => "policy",
            Layer::Default => "default",
            Layer::Nothing => "nothing",
            Layer::Promise => "promise",
            Layer::Stop => "stop",
        }
    }

    /// The layer in words, for people.
    pub fn describe(self) -> &'static str {
        match self {
            Layer::Project => "the project's rule",
            Layer::Org => "the organisation's bundle",
            Layer::Policy => "an installed policy's rule",
            Layer::Default => "a shipped default",
            Layer::Nothing => "nothing matched",
            Layer::Promise => "the session's own promise",
            Layer::Stop => "a person's `chock stop`",
        }
    }
}

/// What decided, precisely enough to find and change it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DecidedBy {
    pub layer: Layer,
    pub file: Option<PathBuf>,
    pub line: Option<u32>,
    /// The rule as written (shipped defaults as ZON).
    pub rule: Option<String>,
    /// The policy package whose rule or guard decided, by id.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub policy: Option<String>,
    /// A package's answer its rollout stage held back, when one was.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub held: Option<Held>,
    /// The identity of the policy that answered ([`Policy::identity`]);
    /// none for an answer no policy gave.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub identity: Option<String>,
}

/// A package's answer held back by its rollout stage: the stage and what
/// the package would have answered in force. The decision log's line
/// carries it, so `observe` shows what would have happened.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Held {
    /// The package whose answer was held back, by id.
    pub policy: String,
    pub stage: Rollout,
    pub would: Decision,
}

impl DecidedBy {
    /// No rule matched: the reading's own answer for an act no rule names.
    pub fn nothing() -> DecidedBy {
        DecidedBy {
            layer: Layer::Nothing,
            file: None,
            line: None,
            rule: None,
            policy: None,
            held: None,
            identity: None,
        }
    }
}

/// The rule that would change an answer short of allow, and where it goes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Suggestion {
    /// Exact ZON to add.
    pub rule: String,
    /// Where it goes, e.g. `.policy.rules in /p/chock.zon`.
    pub block: String,
}

/// The answer to one key.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Verdict {
    pub decision: Decision,
    pub decided_by: DecidedBy,
    pub suggestion: Option<Suggestion>,
}

impl Verdict {
    /// A verdict that names no rule: `decision` as given by `layer`, with
    /// nothing to suggest (an act that could not be named, a test).
    pub fn bare(decision: Decision, layer: Layer) -> Verdict {
        Verdict {
            decision,
            decided_by: DecidedBy {
                layer,
                file: None,
                line: None,
                rule: None,
                policy: None,
                held: None,
                identity: None,
            },
            suggestion: None,
        }
    }
}

/// A verdict with the action it answers, serialised as `chock policy explain
/// --json` prints it: `{"action", "decision", "decided_by", "suggestion"}`.
#[derive(Debug, Clone, Serialize)]
pub struct Explained<'a> {
    pub action: &'a str,
    #[serde(flatten)]
    pub verdict: &'a Verdict,
}

/// Where to find each layer. [`LoadOptions::from_env`] fills the operator
/// config and the discovered bundles from the environment; tests name them.
#[derive(Debug, Clone, Default)]
pub struct LoadOptions {
    /// The directory that holds `chock.zon` (a missing file means no rules).
    pub project_dir: PathBuf,
    /// Bundles named explicitly (`--org-bundle`): each must exist.
    pub org_bundles: Vec<PathBuf>,
    /// The operator's `config.zon`; `None` or a missing file means none.
    pub operator_config: Option<PathBuf>,
    /// Bundles found by convention; a missing one is ordinary.
    pub discovered_bundles: Vec<PathBuf>,
}

impl LoadOptions {
    /// `project_dir` plus what the environment says: the operator's
    /// `$XDG_CONFIG_HOME/chock/config.zon` (or `~/.config`), and the bundles
    /// at [`SYSTEM_BUNDLE`] and `$XDG_DATA_HOME/chock/org-policy.zon` (or
    /// `~/.local/share`). With neither HOME nor XDG_DATA_HOME set the data
    /// directory is unknown, and that is an error rather than a guess.
    pub fn from_env(
        project_dir: impl Into<PathBuf>,
        org_bundles: Vec<PathBuf>,
    ) -> Result<Self, PolicyError> {
        let var = |name: &str| {
            std::env::var_os(name)
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
        };
        let home = var("HOME");
        let config_home =
            var("XDG_CONFIG_HOME").or_else(|| home.as_ref().map(|h| h.join(".config")));
        let data_home = var("XDG_DATA_HOME")
            .or_else(|| home.as_ref().map(|h| h.join(".local/share")))
            .ok_or(PolicyError::NoDataDir)?;
        Ok(LoadOptions {
            project_dir: project_dir.into(),
            org_bundles,
            operator_config: config_home.map(|c| c.join(crate::control::OPERATOR_CONFIG)),
            discovered_bundles: vec![
                PathBuf::from(SYSTEM_BUNDLE),
                data_home.join("chock/org-policy.zon"),
            ],
        })
    }
}

/// Every layer, loaded and checked.
#[derive(Debug)]
pub struct Policy {
    project_file: PathBuf,
    project: Option<ProjectLayer>,
    config: Config,
    org: Vec<OrgBundle>,
    packages: Vec<PolicyPackage>,
    /// The hash of every layer's rules ([`Policy::identity`]).
    identity: String,
    warnings: Vec<String>,
    /// The session's own promises, once a session binds them.
    pub(crate) bound: crate::promise::Bound,
}

impl Policy {
    /// Reads every layer once. Any fault refuses the whole load: a policy
    /// that half-loaded would answer questions it was never asked to.
    pub fn load(options: &LoadOptions) -> Result<Policy, PolicyError> {
        if !options.project_dir.is_dir() {
            return Err(PolicyError::NoProjectDir {
                path: options.project_dir.clone(),
            });
        }
        let project_file = options.project_dir.join(PROJECT_FILE);
        let project_text = read_if_present(&project_file)?;
        let (project, project_settings) = match &project_text {
            Some(text) => {
                let (layer, settings) = read_project(&Source::new(&project_file, text))?;
                (Some(layer), Some(settings))
            }
            None => (None, None),
        };
        let operator = match &options.operator_config {
            Some(path) => match read_if_present(path)? {
                Some(text) => Some(read_operator(&Source::new(path, &text))?),
                None => None,
            },
            None => None,
        };
        let mut org = Vec::new();
        for path in &options.discovered_bundles {
            if let Some(text) = read_if_present(path)? {
                org.push(read_bundle(&Source::new(path, &text))?);
            }
        }
        for path in &options.org_bundles {
            let text = read_if_present(path)?
                .ok_or_else(|| PolicyError::NoBundle { path: path.clone() })?;
            org.push(read_bundle(&Source::new(path, &text))?);
        }
        let packages = read_packages(&options.project_dir)?;
        for bundle in &org {
            for id in &bundle.mandatory_policies {
                if !packages.iter().any(|p| &p.id == id) {
                    return Err(chock_zon::Error::whole_file(
                        Some(&bundle.file),
                        format!(
                            "makes the policy `{id}` mandatory, and {} holds no `{id}` in force (missing, or disabled): `chock enable {id}`, or `chock install SOURCE#{id}`",
                            options.project_dir.join(crate::package::POLICIES_DIR).display()
                        ),
                    )
                    .into());
                }
            }
        }
        let ceilings = org.iter().map(OrgBundle::ceiling).collect();
        let config = Config::new(project_file.clone(), project_settings, operator, ceilings);
        if let Some((name, first, second)) = config.sink_clash() {
            return Err(chock_zon::Error::whole_file(
                Some(&second),
                format!(
                    "names the sink `{name}` that {} names for another receiver; sinks share a cursor by name, so give this one its own",
                    first.display()
                ),
            )
            .into());
        }
        let identity =
            crate::identity::identity(&org, &packages, project.as_ref().map(|p| &p.rules));
        let mut policy = Policy {
            project_file,
            project,
            config,
            org,
            packages,
            identity,
            warnings: Vec::new(),
            bound: Default::default(),
        };
        if let Some(text) = &project_text {
            policy.check_children(text)?;
        }
        policy.warnings = policy.collect_warnings(now_ms());
        for warning in &policy.warnings {
            tracing::warn!("{warning}");
        }
        Ok(policy)
    }

    /// Refuses a `chock.zon` whose rule for a declared child kind answers
    /// it above its parent. Each project rule naming an agent kind is
    /// read for every declared kind it names that has a parent: its act
    /// (a class by one act in it, a rule naming no act by one no rule
    /// names) is decided, with its tool and model, for the child and for
    /// the parent, and a child that this rule answers higher is an error
    /// at the rule. A child that holds more only through a rule for every
    /// kind (its parent lowered by a rule of the parent's own) is not: the
    /// spawn chain's fold gives it its parent's answer, and that is what
    /// the parent's rule asks for.
    fn check_children(&self, text: &str) -> Result<(), PolicyError> {
        let probe = |pattern: &Option<Pattern>| {
            pattern.as_ref().map(|p| {
                if p.is_class() {
                    format!("{}.load-check", p.body())
                } else {
                    p.as_str().to_owned()
                }
            })
        };
        for rule in self.rules() {
            let (Some(kinds), Some(source)) = (&rule.agent_kind, &rule.source) else {
                continue;
            };
            let action = probe(&rule.action).unwrap_or_else(|| "load-check.any".into());
            for agent in self
                .config
                .agents()
                .iter()
                .filter(|a| kinds.matches(&a.kind))
            {
                let Some(parent) = agent.parent.as_deref() else {
                    continue;
                };
                let key = |kind: &str| Key {
                    agent_kind: kind.to_owned(),
                    model: probe(&rule.model),
                    tool: probe(&rule.tool),
                    action: action.clone(),
                };
                let child = self.decide(&key(&agent.kind), Reading::Act);
                let by_this_rule = child.decided_by.line == Some(source.line)
                    && child.decided_by.file.as_deref() == Some(source.file.as_path());
                let above = self.decide(&key(parent), Reading::Act);
                if !by_this_rule || child.decision <= above.decision {
                    continue;
                }
                let parents_rule = match (&above.decided_by.rule, above.decided_by.line) {
                    (Some(written), Some(line)) => format!("the rule at line {line}, {written}"),
                    (Some(written), None) => format!("the shipped default {written}"),
                    _ => "no rule".to_owned(),
                };
                return Err(chock_zon::Error::at(
                    Some(&self.project_file),
                    text,
                    line_span(text, source.line),
                    format!(
                        "agent kind `{}` is answered {} for `{action}` where its parent `{parent}` is answered {} (by {parents_rule}); a child kind never holds more than its parent, so lower this rule for `{}` or raise `{parent}`'s",
                        agent.kind,
                        child.decision,
                        above.decision,
                        agent.kind
                    ),
                )
                .into());
            }
        }
        Ok(())
    }

    /// A policy from rules built in code, with no files: for tests and tools.
    pub fn from_rules(project: Vec<Rule>, org: Vec<Vec<Rule>>) -> Policy {
        let project = ProjectLayer {
            rules: RuleSet::new(project),
            workspace: Default::default(),
            warnings: Vec::new(),
        };
        let org: Vec<OrgBundle> = org
            .into_iter()
            .enumerate()
            .map(|(i, rules)| OrgBundle {
                file: PathBuf::from(format!("<org bundle {}>", i + 1)),
                subject: None,
                issuer: None,
                issued_ms: None,
                expires_ms: None,
                sinks: Vec::new(),
                witnesses: Vec::new(),
                budget: None,
                subagents: None,
                review_by_agent: true,
                deny_read: Vec::new(),
                mandatory_policies: Vec::new(),
                rules: RuleSet::new(rules),
                max_object_bytes: None,
                max_session_bytes: None,
                processes: None,
                memory: None,
            })
            .collect();
        let identity = crate::identity::identity(&org, &[], Some(&project.rules));
        Policy {
            project_file: PathBuf::from(PROJECT_FILE),
            project: Some(project),
            config: Config::new(
                PathBuf::from(PROJECT_FILE),
                Some(Default::default()),
                None,
                org.iter().map(OrgBundle::ceiling).collect(),
            ),
            identity,
            org,
            packages: Vec::new(),
            warnings: Vec::new(),
            bound: Default::default(),
        }
    }

    /// The answer to `key`, and what gave it.
    pub fn decide(&self, key: &Key, reading: Reading) -> Verdict {
        self.decide_by(&|rules: &RuleSet| rules.best(key), key, reading)
    }

    /// [`Policy::decide`] with `best` finding each layer's rule, so a
    /// question of two rows (`model.select`) is answered by the same fold.
    fn decide_by<'a>(
        &'a self,
        best: &dyn Fn(&'a RuleSet) -> Option<&'a Rule>,
        key: &Key,
        reading: Reading,
    ) -> Verdict {
        let (own, mut decided_by) = self.staged_answer(best, reading);
        let mut decision = own;
        for bundle in &self.org {
            if let Some(rule) = best(&bundle.rules)
                && rule.decision < decision
            {
                decision = rule.decision;
                decided_by = decided_by_rule(Layer::Org, rule);
            }
        }
        let suggestion = (decision < Decision::Allow).then(|| self.suggest(key, own));
        let verdict = Verdict {
            decision,
            decided_by,
            suggestion: suggestion.flatten(),
        };
        let mut verdict = self.promised(verdict, &key.action);
        verdict.decided_by.identity = Some(self.identity.clone());
        verdict
    }

    /// Every answer an action one label below `key.action` can get for
    /// `key`'s asker (its tool, model and agent kind), each with the label
    /// it was decided for: one for each label a rule of any layer names
    /// there exactly, and one for a label none names. Patterns are exact
    /// names and `.*` classes only, so every label no rule names gets that
    /// last answer: the list holds every answer there is. The router's
    /// resolver asks it of `net.connect.<reversed host>` before any port
    /// is known.
    pub fn decide_one_below(&self, key: &Key, reading: Reading) -> Vec<(String, Verdict)> {
        let prefix = format!("{}.", key.action);
        let layers = self
            .project_rules()
            .into_iter()
            .chain(self.packages.iter().map(|p| &p.rules))
            .chain(self.org.iter().map(|b| &b.rules))
            .chain([shipped_rules()]);
        let mut labels: std::collections::BTreeSet<String> = layers
            .flat_map(RuleSet::rules)
            .filter_map(|rule| rule.action.as_ref())
            .filter(|pattern| !pattern.is_class())
            .filter_map(|pattern| pattern.as_str().strip_prefix(&prefix))
            .filter(|label| !label.is_empty() && !label.contains('.'))
            .map(str::to_owned)
            .collect();
        // Finitely many labels are named, so a number none names is found.
        let unnamed = (1u64..)
            .map(|n| n.to_string())
            .find(|label| !labels.contains(label))
            .unwrap_or_default();
        labels.insert(unnamed);
        labels
            .into_iter()
            .map(|label| {
                let below = Key {
                    action: format!("{prefix}{label}"),
                    ..key.clone()
                };
                let verdict = self.decide(&below, reading);
                (label, verdict)
            })
            .collect()
    }

    /// The answer for an agent spawned through `chain` (the main agent first,
    /// the asking kind last): the minimum of the answers for every link, so a
    /// subagent never holds more than any ancestor. A chain that is empty,
    /// holds an empty link, or does not end in the key's kind is malformed,
    /// and answers `ask` for an act and `deny` for a ceiling.
    pub fn decide_chain(&self, chain: &[&str], key: &Key, reading: Reading) -> Verdict {
        let well_formed = !chain.is_empty()
            && chain.iter().all(|k| !k.is_empty())
            && chain.last() == Some(&key.agent_kind.as_str());
        if !well_formed {
            return Verdict {
                decision: match reading {
                    Reading::Act => Decision::Ask,
                    Reading::Ceiling => Decision::Deny,
                },
                decided_by: DecidedBy::nothing(),
                suggestion: None,
            };
        }
        let mut lowest: Option<Verdict> = None;
        for link in chain {
            let verdict = self.decide(&key.clone().with_agent_kind(*link), reading);
            if lowest
                .as_ref()
                .is_none_or(|l| verdict.decision < l.decision)
            {
                lowest = Some(verdict);
            }
        }
        lowest.unwrap_or_else(|| self.decide(key, reading))
    }

    /// The answer before any org ceiling: project rules, else shipped
    /// defaults, else the reading's answer for an unnamed act.
    /// The same policy with `packages` as its installed policies (in place
    /// of those read from the project): `chock check` compiles a package
    /// it is still checking this way.
    pub fn with_packages(mut self, packages: Vec<PolicyPackage>) -> Policy {
        self.identity = crate::identity::identity(
            &self.org,
            &packages,
            self.project.as_ref().map(|p| &p.rules),
        );
        self.packages = packages;
        self
    }

    /// The policy's identity: `sha256:<hex>` over every layer's rules
    /// (organisation bundles, packages with their stages and guards, the
    /// project's, the shipped defaults). Every answer carries it, so a
    /// fleet's log tells which rules gave it.
    pub fn identity(&self) -> &str {
        &self.identity
    }

    /// The installed policy packages, in the order of their ids.
    pub fn packages(&self) -> &[PolicyPackage] {
        &self.packages
    }

    /// [`Policy::project_answer`] with each package's rollout stage: a
    /// staged package's answer is capped at its stage, and the answer is
    /// never above the one the packages in force give without the staged
    /// ones (so no stage widens anything). Where the capped answer is not
    /// what the packages in full force would answer, it says so (`held`).
    fn staged_answer<'a>(
        &'a self,
        best_of: &dyn Fn(&'a RuleSet) -> Option<&'a Rule>,
        reading: Reading,
    ) -> (Decision, DecidedBy) {
        let staged = |p: &PolicyPackage| p.rollout != Rollout::Enforce;
        let named = self
            .packages
            .iter()
            .any(|p| staged(p) && best_of(&p.rules).is_some());
        if !named {
            return self.project_answer(best_of, reading, Stages::Full);
        }
        let (mut decision, mut by) = self.project_answer(best_of, reading, Stages::Capped);
        let (without, by_without) = self.project_answer(best_of, reading, Stages::Without);
        if without < decision {
            (decision, by) = (without, by_without);
        }
        let (would, by_full) = self.project_answer(best_of, reading, Stages::Full);
        let holder = by_full
            .policy
            .as_ref()
            .and_then(|id| self.packages.iter().find(|p| &p.id == id))
            .filter(|p| staged(p));
        if let Some(package) = holder.filter(|_| would != decision) {
            by.held = Some(Held {
                policy: package.id.clone(),
                stage: package.rollout,
                would,
            });
        }
        (decision, by)
    }

    fn project_answer<'a>(
        &'a self,
        best_of: &dyn Fn(&'a RuleSet) -> Option<&'a Rule>,
        reading: Reading,
        stages: Stages,
    ) -> (Decision, DecidedBy) {
        let own = self.project_rules().and_then(best_of);
        let mut best = own.map(|rule| (rule.decision, rule, decided_by_rule(Layer::Project, rule)));
        for package in &self.packages {
            if stages == Stages::Without && package.rollout != Rollout::Enforce {
                continue;
            }
            let Some(rule) = best_of(&package.rules) else {
                continue;
            };
            let decision = match stages {
                Stages::Capped => package.rollout.cap(rule.decision),
                Stages::Full | Stages::Without => rule.decision,
            };
            let wins = best.as_ref().is_none_or(|(held, held_rule, _)| {
                let (theirs, ours) = (rule.specificity(), held_rule.specificity());
                theirs > ours || (theirs == ours && decision < *held)
            });
            if wins {
                let mut by = decided_by_rule(Layer::Policy, rule);
                by.policy = Some(package.id.clone());
                best = Some((decision, rule, by));
            }
        }
        if let Some((decision, _, by)) = best {
            return (decision, by);
        }
        if let Some(rule) = best_of(shipped_rules()) {
            return (rule.decision, decided_by_rule(Layer::Default, rule));
        }
        (reading.unnamed(), DecidedBy::nothing())
    }

    /// The rule that would raise the answer, in the first layer holding it
    /// below allow: the project's `chock.zon`, else the bundle that lowers it.
    fn suggest(&self, key: &Key, own: Decision) -> Option<Suggestion> {
        if own < Decision::Allow {
            // The rule to beat is the most specific of the project's and
            // every package's, as `project_answer` weighs them.
            let packaged: Vec<&Rule> = self
                .packages
                .iter()
                .filter_map(|p| p.rules.best(key))
                .collect();
            let own_best = self.project_rules().and_then(|r| r.best(key));
            let winner = own_best
                .into_iter()
                .chain(packaged.iter().copied())
                .max_by_key(|r| r.specificity());
            let (rule, beats) = rule_to_beat(key, winner)?;
            // A package's rule as specific as any rule for this call can
            // be, below allow, is a ceiling: no rule of chock.zon raises it.
            let ceiling = winner.map(Rule::specificity);
            if !beats
                && packaged
                    .iter()
                    .any(|r| Some(r.specificity()) == ceiling && r.decision < Decision::Allow)
            {
                return None;
            }
            // Else the project's rule of that rank is the one to replace.
            let winner = own_best.filter(|r| Some(r.specificity()) == ceiling);
            const TIE: &str = "it is as specific, and of two equal rules the more restrictive wins";
            let mut block = match (beats, winner.and_then(|w| w.source.as_ref())) {
                (true, _) => format!(".policy.rules in {}", self.project_file.display()),
                (false, Some(source)) => format!(
                    "{}:{}, in place of the rule there ({TIE})",
                    source.file.display(),
                    source.line
                ),
                (false, None) => {
                    format!(".policy.rules, in place of the rule that decided ({TIE})")
                }
            };
            let lowering: Vec<String> = self
                .org
                .iter()
                .filter(|b| {
                    b.rules
                        .best(key)
                        .is_some_and(|r| r.decision < Decision::Allow)
                })
                .map(|b| b.file.display().to_string())
                .collect();
            if !lowering.is_empty() {
                block.push_str(&format!(
                    "; the organisation's bundle {} also holds it below allow, and only its owner can raise that",
                    lowering.join(", ")
                ));
            }
            return Some(Suggestion {
                rule: rule.to_zon(),
                block,
            });
        }
        let bundle = self.org.iter().find(|b| {
            b.rules
                .best(key)
                .is_some_and(|r| r.decision < Decision::Allow)
        })?;
        let (rule, _) = rule_to_beat(key, bundle.rules.best(key))?;
        Some(Suggestion {
            rule: rule.to_zon(),
            block: format!(
                ".rules in {} (the organisation's bundle: a project cannot raise it, only its owner can)",
                bundle.file.display()
            ),
        })
    }

    pub(crate) fn project_rules(&self) -> Option<&RuleSet> {
        self.project.as_ref().map(|p| &p.rules)
    }

    /// The project's own rules (empty without a `chock.zon`).
    pub fn rules(&self) -> &[Rule] {
        self.project_rules().map_or(&[], RuleSet::rules)
    }

    /// Where the project's `chock.zon` is (it may not exist).
    pub fn project_file(&self) -> &Path {
        &self.project_file
    }

    /// Whether the project has a `chock.zon`.
    pub fn has_project_file(&self) -> bool {
        self.project.is_some()
    }

    /// The settings of every layer, folded.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// Every bundle that binds, in the order read.
    pub fn org_bundles(&self) -> &[OrgBundle] {
        &self.org
    }

    /// The workspace settings of `chock.zon` (`.apply`, `.workspace`,
    /// `.deny_read`), with every organisation bundle's `deny_read` added.
    pub fn workspace(&self) -> crate::workspace::WorkspaceSettings {
        let mut settings = self
            .project
            .as_ref()
            .map(|p| p.workspace.clone())
            .unwrap_or_default();
        for bundle in &self.org {
            for path in &bundle.deny_read {
                settings.deny_read.push(crate::workspace::DenyRead {
                    path: PathBuf::from(path),
                    file: bundle.file.clone(),
                    line: None,
                });
            }
        }
        settings
    }

    /// What the load found worth saying: expired bundles, settings held to a
    /// bundle's ceiling.
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    fn collect_warnings(&self, now: u64) -> Vec<String> {
        let mut warnings: Vec<String> = self
            .org
            .iter()
            .filter(|b| b.is_expired(now))
            .map(|b| {
                let ago = now.saturating_sub(b.expires_ms.unwrap_or(now)) / 1000;
                format!(
                    "the organisation's bundle {} expired {} ago; it still binds until it is replaced",
                    b.file.display(),
                    human_duration(ago)
                )
            })
            .collect();
        warnings.extend(self.config.nix_settings_held().1);
        if let Some(project) = &self.project {
            warnings.extend(project.warnings.iter().cloned());
        }
        warnings
    }

    /// The verdict on a question read once, before the first turn, when
    /// nobody can be asked: the key and reading each question is read
    /// with. What the verdict grants there is chock-gate's `StartRule`.
    pub fn start_verdict(
        &self,
        agent_kind: &str,
        question: &StartQuestion,
    ) -> Result<Verdict, NameError> {
        let key = |action: String| Key::new(action).with_agent_kind(agent_kind);
        let act = |action: &str| self.decide(&key(action.to_owned()), Reading::Act);
        Ok(match question {
            StartQuestion::NixBuild => act("nix.build"),
            StartQuestion::SandboxJit => act("sandbox.jit"),
            StartQuestion::StyleParse => act("style.parse"),
            StartQuestion::WorkspaceIntegrate => {
                self.decide(&key("workspace.integrate".into()), Reading::Ceiling)
            }
            StartQuestion::ModelSelect { instance, model } => self.model_select(
                &key(names::provider(instance)?),
                &key(names::provider_model(instance, model)?),
            ),
            StartQuestion::ThirdPartyTool { action } | StartQuestion::Host { action } => {
                act(action)
            }
        })
    }
}

impl Policy {
    /// `model.select`'s two ceiling rows, `provider.<instance>` (`wide`) and
    /// `provider.<instance>.<model>` (`narrow`): in each layer the narrower
    /// row wins, that is a rule naming the model (`provider.work.gpt-5`,
    /// `provider.work.*`) over one naming the instance (`provider.work`),
    /// over one naming neither (`provider.*`); then every organisation
    /// bundle is a ceiling on the project's answer, as for any key.
    fn model_select(&self, wide: &Key, narrow: &Key) -> Verdict {
        let verdict = self.decide_by(
            &|rules: &RuleSet| narrower_row(rules, wide, narrow),
            narrow,
            Reading::Ceiling,
        );
        self.promised(verdict, &wide.action)
    }
}

/// The rule of `rules` for the narrower of two rows: the best for `narrow`
/// when its action names something below `wide`, else the best for `wide`.
fn narrower_row<'r>(rules: &'r RuleSet, wide: &Key, narrow: &Key) -> Option<&'r Rule> {
    let below_wide = |rule: &&Rule| {
        rule.action
            .as_ref()
            .is_some_and(|p| p.matches(&narrow.action) && !p.matches(&wide.action))
    };
    rules
        .best(narrow)
        .filter(below_wide)
        .or_else(|| rules.best(wide))
}

/// A question answered once at session start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StartQuestion {
    /// Whether the `provide_tool` tool exists (`nix.build`).
    NixBuild,
    /// Whether the write-and-execute rule is lifted (`sandbox.jit`).
    SandboxJit,
    /// Whether the project's style rules run on writes (`style.parse`).
    StyleParse,
    /// Whether an approved apply may move a branch (`workspace.integrate`).
    WorkspaceIntegrate,
    /// Whether a session may use this model at this provider instance.
    ModelSelect { instance: String, model: String },
    /// Whether a third-party tool (`mcp.<s>.tool.<t>`, `plugin.<p>.tool.<t>`) is offered.
    ThirdPartyTool { action: String },
    /// A host reached before anybody can be asked (a remote MCP server's
    /// `mcp.<s>.host.*`, a flake input's `nix.net.eval.*`).
    Host { action: String },
}

/// For actions read once at session start, how the answer is spent there;
/// `None` for ordinary acts, which are asked about when they happen.
pub fn read_once_note(action: &str) -> Option<&'static str> {
    let third_party_tool = |prefix: &str| {
        action.strip_prefix(prefix).is_some_and(|rest| {
            rest.split_once('.')
                .is_some_and(|(_, t)| t.starts_with("tool."))
        })
    };
    match action {
        "nix.build" => Some(
            "nix.build is read once at session start, where only allow gives the session provide_tool",
        ),
        "sandbox.jit" => Some(
            "sandbox.jit is read once at session start, where only allow lifts the write-and-execute rule",
        ),
        "style.parse" => Some(
            "style.parse is read once at session start, where only allow runs the project's style rules; any other answer leaves every write unchecked",
        ),
        "workspace.integrate" => Some(
            "workspace.integrate is read once at session start with the ceiling reading (pass --reading ceiling); only deny takes the capability away",
        ),
        _ if action.starts_with("provider.") => Some(
            "provider rows are read once when a session picks its model, with the ceiling reading (pass --reading ceiling); only allow lets it be used",
        ),
        _ if action.starts_with("nix.net.eval.") => Some(
            "flake inputs are fetched at session start only when this answers allow; otherwise at build time, after asking",
        ),
        _ if third_party_tool("mcp.") || third_party_tool("plugin.") => Some(
            "at session start only deny is spent (the tool is removed); any other answer leaves it offered and is asked again per call",
        ),
        _ if action.starts_with("mcp.") && action.split('.').nth(2) == Some("host") => Some(
            "a url server's host is read once when the server starts, where only allow reaches it (nobody can be asked yet)",
        ),
        _ if action.starts_with("mcp.")
            && action.split('.').count() == 3
            && action.ends_with(".network") =>
        {
            Some(
                "a command server's network is read once when it starts, where only allow gives it a network (its router then reaches only hosts net.connect.* allows outright)",
            )
        }
        _ if action.starts_with("secret.use.") => Some(
            "for a tool call this is asked at the call; for an MCP server's .env or .secret_files it is read once at start, where only allow gives the secret",
        ),
        _ => None,
    }
}

/// Which answers of the packages [`Policy::project_answer`] weighs: each
/// as written (`Full`), each capped at its rollout stage (`Capped`), or
/// only the packages in force (`Without` the staged ones).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stages {
    Full,
    Capped,
    Without,
}

pub(crate) fn decided_by_rule(layer: Layer, rule: &Rule) -> DecidedBy {
    DecidedBy {
        layer,
        file: rule.source.as_ref().map(|s| s.file.as_ref().clone()),
        line: rule.source.as_ref().map(|s| s.line),
        rule: Some(rule.as_written()),
        policy: None,
        held: None,
        identity: None,
    }
}

/// The narrowest rule that allows `key` and beats `winner`: the exact action,
/// then the key's tool, model and agent kind added one at a time until it is
/// more specific. The flag is false when even a rule naming all four would
/// only tie with the winner, which must then be edited instead.
fn rule_to_beat(key: &Key, winner: Option<&Rule>) -> Option<(Rule, bool)> {
    let mut rule = Rule::new(Some(Pattern::parse(&key.action).ok()?), Decision::Allow);
    let wins = |r: &Rule| winner.is_none_or(|w| r.specificity() > w.specificity());
    let exact = |v: Option<&str>| v.and_then(|v| Pattern::parse(v).ok());
    if wins(&rule) {
        return Some((rule, true));
    }
    if let Some(tool) = exact(key.tool.as_deref()) {
        rule.tool = Some(tool);
        if wins(&rule) {
            return Some((rule, true));
        }
    }
    if let Some(model) = exact(key.model.as_deref()) {
        rule.model = Some(model);
        if wins(&rule) {
            return Some((rule, true));
        }
    }
    rule.agent_kind = exact(Some(&key.agent_kind));
    let beats = wins(&rule);
    Some((rule, beats))
}

fn read_if_present(path: &Path) -> Result<Option<String>, PolicyError> {
    match chock_zon::read_text(path) {
        Ok(text) => Ok(Some(text)),
        Err(chock_zon::ReadError::Io { source, .. })
            if source.kind() == std::io::ErrorKind::NotFound =>
        {
            Ok(None)
        }
        Err(e) => Err(e.into()),
    }
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

fn human_duration(seconds: u64) -> String {
    match seconds {
        s if s >= 86_400 => format!("{} days", s / 86_400),
        s if s >= 3_600 => format!("{} hours", s / 3_600),
        s if s >= 60 => format!("{} minutes", s / 60),
        s => format!("{s} seconds"),
    }
}

/// The operator's `config.zon`, every settings block read.
fn read_operator(source: &Source<'_>) -> Result<OperatorSettings, PolicyError> {
    let operator: OperatorFile = source.read_as(FileKind::Operator)?;
    let stores = chock_config::servers::read_operator_secrets(source, operator.secret_fields)?;
    let providers =
        chock_config::providers::read_providers(source, operator.provider_fields, &stores)?;
    let prices = chock_config::prices::read_prices(source, operator.price_fields)?;
    let search =
        chock_config::search::read_search(source, operator.search_fields, &stores, &providers)?;
    let skills = chock_config::skills::read_skills(source, operator.skill_fields)?;
    let sinks = chock_config::sinks::check_sinks(source, operator.sink_fields)?;
    let witnesses = chock_config::witnesses::check_witnesses(source, operator.witness_fields)?;
    Ok(OperatorSettings {
        file: source.file.to_path_buf(),
        nix: operator.nix,
        limits: operator.limits,
        log: operator.log,
        stores,
        providers,
        prices,
        search,
        skills,
        sinks,
        witnesses,
    })
}

/// The span of line `line` (1-based) of `text`, less its indentation.
fn line_span(text: &str, line: u32) -> chock_zon::Span {
    let start = text
        .split_inclusive('\n')
        .take(line.saturating_sub(1) as usize)
        .map(str::len)
        .sum::<usize>();
    let rest = text.get(start..).unwrap_or("");
    let indent = rest.len() - rest.trim_start_matches([' ', '\t']).len();
    let end = rest.find('\n').map_or(text.len(), |n| start + n);
    chock_zon::Span {
        start: start + indent,
        end: end.max(start + indent),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(kind: Option<&str>, action: &str, decision: Decision) -> Rule {
        let mut r = Rule::new(Pattern::parse(action).ok(), decision);
        r.agent_kind = kind.and_then(|k| Pattern::parse(k).ok());
        r
    }

    #[test]
    fn every_answer_one_label_below_is_found_by_its_patterns() {
        let mut tool_only = rule(None, "net.connect.test.b.*", Decision::Allow);
        tool_only.tool = Pattern::parse("fetch_url").ok();
        let policy = Policy::from_rules(
            vec![
                rule(None, "net.connect.test.a.8443", Decision::Allow),
                rule(None, "net.connect.test.*", Decision::Deny),
                rule(None, "net.connect.test.a.x.9", Decision::Allow),
                tool_only,
            ],
            vec![vec![rule(None, "net.connect.test.a.1", Decision::Deny)]],
        );
        let answers = |action: &str, tool: &str| {
            let key = Key::new(action).with_tool(tool);
            policy
                .decide_one_below(&key, Reading::Act)
                .into_iter()
                .map(|(label, v)| (label, v.decision, v.decided_by.layer))
                .collect::<Vec<_>>()
        };
        // The exact port, the org bundle's exact port, and one unnamed
        // port (2: 1 is named): a name two labels down is not one below.
        assert_eq!(
            answers("net.connect.test.a", "run_command"),
            vec![
                ("1".to_owned(), Decision::Deny, Layer::Project),
                ("2".to_owned(), Decision::Deny, Layer::Project),
                ("8443".to_owned(), Decision::Allow, Layer::Project),
            ]
        );
        // A class matches every label; a rule for another tool does not.
        assert_eq!(
            answers("net.connect.test.b", "run_command"),
            vec![("1".to_owned(), Decision::Deny, Layer::Project)]
        );
        assert_eq!(
            answers("net.connect.test.b", "fetch_url"),
            vec![("1".to_owned(), Decision::Allow, Layer::Project)]
        );
        // Nothing named: the unnamed act's own answer.
        assert_eq!(
            answers("net.connect.org.c", "run_command"),
            vec![("1".to_owned(), Decision::Ask, Layer::Nothing)]
        );
    }

    #[test]
    fn a_layer_word_is_the_one_serde_writes() {
        for layer in [Layer::Project, Layer::Org, Layer::Default, Layer::Nothing] {
            let json = serde_json::to_value(layer).ok();
            assert_eq!(json.as_ref().and_then(|v| v.as_str()), Some(layer.as_str()));
        }
    }

    #[test]
    fn a_subagent_never_holds_more_than_its_ancestors() {
        let policy = Policy::from_rules(
            vec![
                rule(Some("main"), "sandbox.jit", Decision::Allow),
                rule(Some("helper"), "git.push", Decision::Allow),
                rule(Some("main"), "git.push", Decision::AgentReview),
            ],
            Vec::new(),
        );
        let jit = Key::new("sandbox.jit").with_agent_kind("helper");
        assert_eq!(
            policy
                .decide_chain(&["main", "helper"], &jit, Reading::Act)
                .decision,
            Decision::Ask
        );
        assert_eq!(
            policy
                .decide_chain(&["main"], &Key::new("sandbox.jit"), Reading::Act)
                .decision,
            Decision::Allow
        );
        let push = Key::new("git.push").with_agent_kind("helper");
        let v = policy.decide_chain(&["main", "helper"], &push, Reading::Act);
        assert_eq!(
            (v.decision, v.decided_by.layer),
            (Decision::AgentReview, Layer::Project)
        );
    }

    #[test]
    fn model_select_takes_the_narrower_row_in_each_layer_and_the_org_as_a_ceiling() {
        let select = |project: Vec<Rule>, org: Vec<Vec<Rule>>, model: &str| {
            let policy = Policy::from_rules(project, org);
            let question = StartQuestion::ModelSelect {
                instance: "work".into(),
                model: model.into(),
            };
            policy
                .start_verdict("main", &question)
                .expect("named")
                .decision
        };
        let r = |action: &str, decision| rule(None, action, decision);
        use Decision::{Allow, Ask, Deny};
        // Nothing named: the ceiling reading allows.
        assert_eq!(select(vec![], vec![], "m-1"), Allow);
        // The instance denied, one model allowed: the model's row is narrower.
        let project = vec![r("provider.work", Deny), r("provider.work.m-1", Allow)];
        assert_eq!(select(project.clone(), vec![], "m-1"), Allow);
        assert_eq!(select(project, vec![], "m-2"), Deny);
        // A class over the instance's models is narrower than the instance.
        let project = vec![r("provider.work", Allow), r("provider.work.*", Ask)];
        assert_eq!(select(project, vec![], "m-1"), Ask);
        // The instance's row is narrower than a class over every provider.
        let project = vec![r("provider.*", Deny), r("provider.work", Allow)];
        assert_eq!(select(project, vec![], "m-1"), Allow);
        // An organisation's deny of the instance binds a project's allow of a model.
        let project = vec![r("provider.work.m-1", Allow)];
        let org = vec![vec![r("provider.work", Deny)]];
        assert_eq!(select(project, org, "m-1"), Deny);
        // Anything short of allow refuses: nobody is there to ask.
        assert_eq!(
            select(vec![r("provider.work.m-1", Ask)], vec![], "m-1"),
            Ask
        );
    }

    #[test]
    fn a_malformed_chain_asks_for_acts_and_denies_ceilings() {
        let policy = Policy::from_rules(Vec::new(), Vec::new());
        let key = Key::new("call.glob").with_agent_kind("helper");
        for chain in [&[][..], &["main", ""][..], &["main"][..]] {
            assert_eq!(
                policy.decide_chain(chain, &key, Reading::Act).decision,
                Decision::Ask
            );
            assert_eq!(
                policy.decide_chain(chain, &key, Reading::Ceiling).decision,
                Decision::Deny
            );
        }
        assert_eq!(
            policy
                .decide_chain(&["main", "helper"], &key, Reading::Act)
                .decision,
            Decision::Allow
        );
    }
}
