//! `chock check`: the repository's checks, in order. Each stage says what
//! failed and how to fix it; a stage that needs the packages read is
//! skipped (and says so) when `validate` could not read them.
//!
//! | stage | passes when |
//! |---|---|
//! | validate | every manifest and eval case reads (schema, ids = folders) |
//! | verify | every locked package's content has the lock's hash |
//! | evals | every case gets its verdict through the compiled policy |
//! | matrix | (a table) where each policy is enforced, and where it cannot ask |
//! | mechanisms | each guard is there and runnable, each hook point it names is wired |
//! | index | `INDEX.md` is what `chock sync` writes, within `.index.max_tokens` |
//! | conflicts | no two policies answer the same rule differently |
//! | baseline | the recorded sample's decisions are unchanged |

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use chock_hook::agent::Agent;
use chock_hook::answer;
use chock_hook::sync::{GitHook, agent_file};
use chock_policy::package::{POLICIES_DIR, read_package};
use chock_policy::{HookPoint, Key, LoadOptions, Policy, PolicyPackage, Reading, Rollout};
use serde::{Deserialize, Serialize};

use crate::evals;
use crate::index;
use crate::lock::{Lock, content_hash, write_atomically};
use crate::{PackageError, io};

/// The stages, in the order they run.
pub const STAGES: [&str; 8] = [
    "validate",
    "verify",
    "evals",
    "matrix",
    "mechanisms",
    "index",
    "conflicts",
    "baseline",
];

/// The recorded sample, in the policies folder.
pub const BASELINE_FILE: &str = "baseline.json";

/// One thing wrong, and what to do about it.
#[derive(Debug, Clone, Serialize)]
pub struct Problem {
    pub what: String,
    pub fix: String,
}

/// One stage's result.
#[derive(Debug, Clone, Serialize)]
pub struct Stage {
    pub stage: &'static str,
    /// `passed`, `failed` or `skipped`.
    pub status: &'static str,
    pub problems: Vec<Problem>,
    /// What the stage found that is not a failure (the matrix's rows, the
    /// baseline's diff header).
    pub notes: Vec<String>,
}

impl Stage {
    fn new(stage: &'static str, problems: Vec<Problem>, notes: Vec<String>) -> Stage {
        Stage {
            stage,
            status: if problems.is_empty() {
                "passed"
            } else {
                "failed"
            },
            problems,
            notes,
        }
    }

    fn skipped(stage: &'static str, why: &str) -> Stage {
        Stage {
            stage,
            status: "skipped",
            problems: Vec::new(),
            notes: vec![why.to_owned()],
        }
    }

    pub fn failed(&self) -> bool {
        self.status == "failed"
    }
}

fn problem(what: impl Into<String>, fix: impl Into<String>) -> Problem {
    Problem {
        what: what.into(),
        fix: fix.into(),
    }
}

/// Reads the stage names of `--only a,b`; an unknown one is an error naming
/// the stages there are.
pub fn parse_stages(only: Option<&str>) -> Result<Vec<&'static str>, PackageError> {
    let Some(only) = only else {
        return Ok(STAGES.to_vec());
    };
    let mut picked = Vec::new();
    for name in only.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let Some(stage) = STAGES.iter().find(|s| **s == name) else {
            return Err(PackageError::Refused(format!(
                "`{name}` is no stage of `chock check`: pick from {}",
                STAGES.join(", ")
            )));
        };
        picked.push(*stage);
    }
    picked.sort_by_key(|s| STAGES.iter().position(|t| t == s));
    picked.dedup();
    Ok(picked)
}

/// Runs `stages` for `project`; `ci`: in a CI job's fresh clone, which has
/// no git hooks (they live in `.git/hooks`, never committed), so
/// `mechanisms` does not ask for them: the CI gate stands in there.
pub fn run(project: &Path, stages: &[&'static str], ci: bool) -> Vec<Stage> {
    let (packages, invalid) = read_all(project);
    let policy = load(project, &packages);
    stages
        .iter()
        .map(|&stage| {
            if stage == "validate" {
                return Stage::new(stage, invalid.clone(), Vec::new());
            }
            if stage == "verify" {
                return verify(project);
            }
            let policy = match (&policy, invalid.is_empty()) {
                (Ok(policy), true) => policy,
                (Err(e), true) => {
                    return Stage::new(
                        stage,
                        vec![problem(
                            format!("the policy could not be compiled: {e}"),
                            "fix the file and line named",
                        )],
                        Vec::new(),
                    );
                }
                // Run with `validate`, the stage says why it waited; run
                // alone, it fails: a hook refuses every call meanwhile.
                (_, false) if stages.contains(&"validate") => {
                    return Stage::skipped(
                        stage,
                        "skipped: `validate` found manifests that do not read",
                    );
                }
                (_, false) => {
                    let mut problems = invalid.clone();
                    for p in &mut problems {
                        p.what = format!("not run, since every hook refuses every call while a manifest does not read: {}", p.what);
                    }
                    return Stage::new(stage, problems, Vec::new());
                }
            };
            match stage {
                "evals" => run_evals(project, policy),
                "matrix" => matrix(project, policy),
                "mechanisms" => mechanisms(project, policy, ci),
                "index" => check_index(project, policy),
                "conflicts" => conflicts(policy),
                _ => baseline(project, policy),
            }
        })
        .collect()
}

fn read_all(project: &Path) -> (Vec<PolicyPackage>, Vec<Problem>) {
    let root = project.join(POLICIES_DIR);
    let mut packages = Vec::new();
    let mut problems = Vec::new();
    let Ok(entries) = std::fs::read_dir(&root) else {
        return (packages, problems);
    };
    let mut dirs: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .map(|e| e.path())
        .collect();
    dirs.sort();
    for dir in dirs {
        if !dir.join(chock_policy::package::MANIFEST).exists() {
            problems.push(problem(
                format!("{} holds no manifest.zon", dir.display()),
                "`chock new policy <id>` writes one; or remove the folder",
            ));
            continue;
        }
        match read_package(&dir) {
            Ok(package) => {
                if let Err(e) = evals::read_cases(&package) {
                    problems.push(problem(e.to_string(), "fix the case as the message says"));
                }
                packages.push(package);
            }
            Err(e) => problems.push(problem(e.to_string(), "fix the manifest at the line named")),
        }
    }
    (packages, problems)
}

fn load(project: &Path, packages: &[PolicyPackage]) -> Result<Policy, PackageError> {
    let options = LoadOptions::from_env(project, Vec::new())?;
    Ok(Policy::load(&options)?.with_packages(packages.to_vec()))
}

fn verify(project: &Path) -> Stage {
    let lock = match Lock::read(project) {
        Ok(lock) => lock,
        Err(e) => {
            return Stage::new(
                "verify",
                vec![problem(
                    e.to_string(),
                    "restore chock.lock from version control",
                )],
                Vec::new(),
            );
        }
    };
    let mut problems = Vec::new();
    let mut notes = Vec::new();
    for locked in &lock.policies {
        let mut dir = project.join(POLICIES_DIR);
        if locked.disabled {
            dir.push(crate::beneath::DISABLED_DIR);
        }
        dir.push(&locked.id);
        match content_hash(&dir) {
            Ok(hash) if hash == locked.hash => notes.push(format!("{}: {hash}", locked.id)),
            Ok(hash) => problems.push(problem(
                format!(
                    "{}: the installed content is {hash}, and chock.lock pins {}: a file was changed after the install",
                    dir.display(),
                    locked.hash
                ),
                format!(
                    "`chock install` puts back exactly what the lock names; to keep the change, `chock install {}#{}` again and commit chock.lock",
                    locked.source, locked.id
                ),
            )),
            Err(e) => problems.push(problem(
                format!("{}: {e}", locked.id),
                "`chock install` puts back what the lock names",
            )),
        }
    }
    Stage::new("verify", problems, notes)
}

fn run_evals(project: &Path, policy: &Policy) -> Stage {
    let mut problems = Vec::new();
    let mut notes = Vec::new();
    for package in policy.packages() {
        let cases = match evals::read_cases(package) {
            Ok(cases) => cases,
            Err(e) => {
                problems.push(problem(e.to_string(), "fix the case"));
                continue;
            }
        };
        if cases.is_empty() {
            problems.push(problem(
                format!("{}: no eval case in {}/evals", package.id, package.dir.display()),
                "add a case (a payload and the verdict it must get) for what the policy refuses and for what it lets through",
            ));
        }
        // The same policy without this package: a case must need it.
        let others: Vec<PolicyPackage> = policy
            .packages()
            .iter()
            .filter(|p| p.id != package.id)
            .cloned()
            .collect();
        let without = match load(project, &others) {
            Ok(without) => without,
            Err(e) => {
                problems.push(problem(
                    format!(
                        "{}: the policy without it could not be compiled: {e}",
                        package.id
                    ),
                    "fix the file and line named",
                ));
                continue;
            }
        };
        // Its cases test what it decides in full force, whatever stage it
        // is rolled out at: the stage caps it where it runs, not here.
        let enforced = (package.rollout != Rollout::Enforce).then(|| {
            let mut all = others.clone();
            all.push(PolicyPackage {
                rollout: Rollout::Enforce,
                ..package.clone()
            });
            load(project, &all)
        });
        let with = match &enforced {
            None => policy,
            Some(Ok(enforced)) => enforced,
            Some(Err(e)) => {
                problems.push(problem(
                    format!("{}: the policy could not be compiled: {e}", package.id),
                    "fix the file and line named",
                ));
                continue;
            }
        };
        let mut passed = 0;
        let mut needed = 0;
        for case in &cases {
            if !package.applies_at(case.hook) {
                problems.push(problem(
                    format!(
                        "{}: a case at `{}`, a hook point `{}` does not name, so nothing enforces what it tests",
                        case.file.display(),
                        case.hook.as_str(),
                        package.id
                    ),
                    format!("add \"{}\" to the manifest's `.hooks`, or change the case's `hook`", case.hook.as_str()),
                ));
                continue;
            }
            let outcome = evals::run_case(with, project, case);
            let unaided = evals::run_case(&without, project, case);
            let vacuous = unaided.got == outcome.expect;
            if !vacuous {
                needed += 1;
            }
            if !outcome.passed() {
                problems.push(problem(
                    format!(
                        "{}: expected {}, got {}: {}",
                        case.file.display(),
                        outcome.expect.as_str(),
                        outcome.got.as_str(),
                        outcome.reason
                    ),
                    "change the policy's rules or guard, or the case's `expect` if the case was wrong",
                ));
            } else if vacuous && outcome.expect != evals::Expect::Allow {
                problems.push(problem(
                    format!(
                        "{}: gets {} without `{}` too, so it tests nothing of it",
                        case.file.display(),
                        outcome.expect.as_str(),
                        package.id
                    ),
                    "make the case a call this policy's rules or guard decide",
                ));
            } else {
                passed += 1;
            }
        }
        if !cases.is_empty() && needed == 0 {
            problems.push(problem(
                format!(
                    "{}: every case gets its verdict without this policy too, so none tests it",
                    package.id
                ),
                "add a case the policy's rules or guard decide (what it refuses or asks about)",
            ));
        }
        notes.push(format!(
            "{}: {passed}/{} cases passed",
            package.id,
            cases.len()
        ));
    }
    Stage::new("evals", problems, notes)
}

fn wired_agents(project: &Path) -> Vec<Agent> {
    Agent::ALL
        .into_iter()
        .filter(|a| {
            std::fs::read_to_string(agent_file(project, *a))
                .is_ok_and(|t| t.contains("chock") && t.contains("hook"))
        })
        .collect()
}

fn git_hook_wired(project: &Path, hook: GitHook) -> bool {
    chock_hook::sync::hooks_dir(project)
        .ok()
        .and_then(|d| std::fs::read_to_string(d.join(hook.name())).ok())
        .is_some_and(|t| t.contains(&format!("hook {}", hook.name())))
}

fn asks(package: &PolicyPackage) -> bool {
    package.rules.rules().iter().any(|r| {
        matches!(
            r.decision,
            chock_policy::Decision::Ask | chock_policy::Decision::AgentReview
        )
    })
}

fn matrix(project: &Path, policy: &Policy) -> Stage {
    let agents = wired_agents(project);
    let mut notes = Vec::new();
    for package in policy.packages() {
        for point in &package.hooks {
            let row = match point {
                HookPoint::Tool => {
                    let cells: Vec<String> = Agent::ALL
                        .into_iter()
                        .map(|agent| {
                            let state = if !agents.contains(&agent) {
                                "not wired"
                            } else if asks(package) && !answer::can_ask(agent, "", "", None) {
                                "enforced; cannot ask, so an ask is a deny"
                            } else {
                                "enforced"
                            };
                            format!("{} {state}", agent.name())
                        })
                        .collect();
                    cells.join("; ")
                }
                HookPoint::PreCommit => wired_word(git_hook_wired(project, GitHook::PreCommit)),
                HookPoint::PrePush => wired_word(git_hook_wired(project, GitHook::PrePush)),
                HookPoint::Ci => {
                    let ci = project.join(".github/workflows/chock.yml").exists();
                    wired_word(ci)
                }
            };
            notes.push(format!("{} at {}: {row}", package.id, point.as_str()));
        }
    }
    Stage::new("matrix", Vec::new(), notes)
}

fn wired_word(wired: bool) -> String {
    if wired { "enforced" } else { "not wired" }.to_owned()
}

fn mechanisms(project: &Path, policy: &Policy, ci: bool) -> Stage {
    use std::os::unix::fs::PermissionsExt as _;
    let mut problems = Vec::new();
    let mut notes = Vec::new();
    let agents = wired_agents(project);
    for package in policy.packages() {
        if let Some(guard) = &package.guard {
            match std::fs::metadata(&guard.program) {
                Ok(m) if m.is_file() && m.permissions().mode() & 0o111 != 0 => {}
                Ok(_) => problems.push(problem(
                    format!(
                        "{}: the guard {} is not an executable file",
                        package.id,
                        guard.program.display()
                    ),
                    format!("`chmod +x {}`", guard.program.display()),
                )),
                Err(e) => problems.push(problem(
                    format!(
                        "{}: the guard {} cannot be found: {e}",
                        package.id,
                        guard.program.display()
                    ),
                    format!(
                        "add it, or fix `.guard.program` at {}:{}",
                        package.manifest.display(),
                        guard.line
                    ),
                )),
            }
        }
        for point in &package.hooks {
            if ci && matches!(point, HookPoint::PreCommit | HookPoint::PrePush) {
                notes.push(format!(
                    "{} at {}: a clone's git hooks are not checked in CI; the CI gate runs the guards of policies that name \"ci\"",
                    package.id,
                    point.as_str()
                ));
                continue;
            }
            let (wired, what) = match point {
                HookPoint::Tool => (!agents.is_empty(), "no agent's hook file runs Chock"),
                HookPoint::PreCommit => (
                    git_hook_wired(project, GitHook::PreCommit),
                    "the git pre-commit hook does not run Chock",
                ),
                HookPoint::PrePush => (
                    git_hook_wired(project, GitHook::PrePush),
                    "the git pre-push hook does not run Chock",
                ),
                HookPoint::Ci => (
                    project.join(".github/workflows/chock.yml").exists(),
                    "no CI workflow runs Chock",
                ),
            };
            if !wired {
                let fix = if *point == HookPoint::Ci {
                    "`chock sync --ci`"
                } else {
                    "`chock sync`"
                };
                problems.push(problem(
                    format!("{} applies at {}, and {what}", package.id, point.as_str()),
                    format!("{fix} writes it"),
                ));
            }
        }
    }
    Stage::new("mechanisms", problems, notes)
}

fn check_index(project: &Path, policy: &Policy) -> Stage {
    let mut problems = Vec::new();
    let path = index::index_path(project);
    let want = index::render(project, policy.packages());
    match std::fs::read_to_string(&path) {
        Ok(text) if text == want => {}
        Ok(_) => problems.push(problem(
            format!("{} is not what the installed policies say", path.display()),
            "`chock sync` rewrites it",
        )),
        Err(_) if policy.packages().is_empty() => {}
        Err(_) => problems.push(problem(
            format!("{} is missing", path.display()),
            "`chock sync` writes it",
        )),
    }
    let compiled = project
        .join(POLICIES_DIR)
        .join(crate::compile::COMPILED_FILE);
    match (
        crate::compile::render(policy.packages()),
        std::fs::read_to_string(&compiled),
    ) {
        (Ok(want), Ok(text)) if text == want => {}
        (Ok(_), Ok(_)) => problems.push(problem(
            format!(
                "{} is not what the installed policies compile to: a policy changed after `chock compile`",
                compiled.display()
            ),
            "`chock compile` (or `chock sync`) writes it; commit it with the policies",
        )),
        (Ok(_), Err(_)) if policy.packages().is_empty() => {}
        (Ok(_), Err(_)) => problems.push(problem(
            format!("{} is missing", compiled.display()),
            "`chock compile` (or `chock sync`) writes it",
        )),
        (Err(e), _) => problems.push(problem(e.to_string(), "fix the file named")),
    }
    match index::max_tokens(project) {
        Ok(max) if index::tokens(&want) > max => problems.push(problem(
            format!(
                "the index is {} tokens, over the budget of {max}",
                index::tokens(&want)
            ),
            "shorten the policies' guidance, or raise `.index = .{ .max_tokens = N }` in chock.zon",
        )),
        Ok(_) => {}
        Err(e) => problems.push(problem(e.to_string(), "fix `.index` in chock.zon")),
    }
    let agents = project.join(index::AGENTS_FILE);
    if !policy.packages().is_empty()
        && !std::fs::read_to_string(&agents).is_ok_and(|t| t.contains(&index::pointer()))
    {
        problems.push(problem(
            format!("{} holds no pointer to the index", agents.display()),
            "`chock sync` adds it",
        ));
    }
    Stage::new("index", problems, Vec::new())
}

fn conflicts(policy: &Policy) -> Stage {
    let mut problems = Vec::new();
    let mut seen: BTreeMap<String, (String, chock_policy::Decision, String)> = BTreeMap::new();
    let project = policy.rules().iter().map(|r| ("the project".to_owned(), r));
    let packages = policy.packages().iter().flat_map(|p| {
        p.rules
            .rules()
            .iter()
            .map(move |r| (format!("policy `{}`", p.id), r))
    });
    for (owner, rule) in project.chain(packages) {
        let key = matcher(rule);
        let place = rule
            .source
            .as_ref()
            .map(|s| format!("{}:{}", s.file.display(), s.line))
            .unwrap_or_default();
        match seen.get(&key) {
            Some((other, decision, other_place))
                if *decision != rule.decision && *other != owner =>
            {
                problems.push(problem(
                    format!(
                        "{other} ({other_place}) answers {} and {owner} ({place}) answers {} for the same match `{}`; the more restrictive wins, silently",
                        decision,
                        rule.decision,
                        key
                    ),
                    "keep one answer: change or remove one of the two rules",
                ));
            }
            Some(_) => {}
            None => {
                seen.insert(key, (owner, rule.decision, place));
            }
        }
    }
    Stage::new("conflicts", problems, Vec::new())
}

/// What a rule matches, without its decision: `.action = "git.push", .tool = "Bash"`.
fn matcher(rule: &chock_policy::Rule) -> String {
    [
        ("agent_kind", &rule.agent_kind),
        ("model", &rule.model),
        ("tool", &rule.tool),
        ("action", &rule.action),
    ]
    .iter()
    .filter_map(|(name, p)| p.as_ref().map(|p| format!(".{name} = {:?}", p.as_str())))
    .collect::<Vec<_>>()
    .join(", ")
}

/// One call of the recorded sample and the decision it got.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Sampled {
    pub agent_kind: String,
    #[serde(default)]
    pub tool: Option<String>,
    pub action: String,
    pub decision: String,
    /// The layer (and policy id) that decided.
    pub decided_by: String,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct BaselineFile {
    sample: Vec<Sampled>,
}

fn decide(policy: &Policy, agent_kind: &str, tool: Option<&str>, action: &str) -> Sampled {
    let mut key = Key::new(action).with_agent_kind(agent_kind);
    if let Some(tool) = tool {
        key = key.with_tool(tool);
    }
    let verdict = policy.decide(&key, Reading::Act);
    let by = &verdict.decided_by;
    Sampled {
        agent_kind: agent_kind.to_owned(),
        tool: tool.map(str::to_owned),
        action: action.to_owned(),
        decision: verdict.decision.to_string(),
        decided_by: match &by.policy {
            Some(id) => format!("policy {id}"),
            None => by.layer.as_str().to_owned(),
        },
    }
}

fn baseline_path(project: &Path) -> PathBuf {
    project.join(POLICIES_DIR).join(BASELINE_FILE)
}

fn baseline(project: &Path, policy: &Policy) -> Stage {
    let path = baseline_path(project);
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(_) => {
            return Stage::skipped(
                "baseline",
                "no baseline is recorded: `chock check --record-baseline` records one from the decision log and the eval cases",
            );
        }
    };
    let recorded: BaselineFile = match serde_json::from_str(&text) {
        Ok(b) => b,
        Err(e) => {
            return Stage::new(
                "baseline",
                vec![problem(
                    format!("{}: line {}: {e}", path.display(), e.line()),
                    "`chock check --record-baseline` writes it again",
                )],
                Vec::new(),
            );
        }
    };
    let mut problems = Vec::new();
    for was in &recorded.sample {
        let now = decide(policy, &was.agent_kind, was.tool.as_deref(), &was.action);
        if now.decision != was.decision || now.decided_by != was.decided_by {
            let who = match &was.tool {
                Some(tool) => format!("{} via {tool}", was.agent_kind),
                None => was.agent_kind.clone(),
            };
            problems.push(problem(
                format!(
                    "{} ({who})\n- {} by {}\n+ {} by {}",
                    was.action, was.decision, was.decided_by, now.decision, now.decided_by
                ),
                "if the change is meant, `chock check --record-baseline` records it; else change the rule back",
            ));
        }
    }
    let notes = vec![format!("{} recorded calls compared", recorded.sample.len())];
    Stage::new("baseline", problems, notes)
}

/// Records the baseline: the decisions, now, of every call in the decision
/// log for `project`, every act of the eval cases and the calls already
/// recorded. Returns how many calls it holds.
pub fn record_baseline(project: &Path) -> Result<usize, PackageError> {
    let (packages, invalid) = read_all(project);
    if let Some(first) = invalid.first() {
        return Err(PackageError::Refused(format!(
            "{}: fix it before recording a baseline ({})",
            first.what, first.fix
        )));
    }
    let policy = load(project, &packages)?;
    let mut keys: Vec<(String, Option<String>, String)> = Vec::new();
    if let Ok(text) = std::fs::read_to_string(baseline_path(project))
        && let Ok(old) = serde_json::from_str::<BaselineFile>(&text)
    {
        keys.extend(
            old.sample
                .into_iter()
                .map(|s| (s.agent_kind, s.tool, s.action)),
        );
    }
    let here = project.display().to_string();
    if let Ok(log) = chock_log::Log::from_env(chock_log::Rotation::default())
        && let Ok(records) = log.records()
    {
        for line in records.flatten() {
            if let Ok(record) = line.record
                && record.entry.project == here
                && record.entry.action != chock_hook::decide::UNNAMED
                && !record.entry.action.starts_with("guard.")
            {
                keys.push((
                    record.entry.agent_kind,
                    record.entry.tool,
                    record.entry.action,
                ));
            }
        }
    }
    // Each action a package's rule names, asked by every agent kind and
    // through every tool any rule names, so a rule scoped to one of them
    // is in the sample.
    let every_rule = || {
        policy
            .rules()
            .iter()
            .chain(policy.packages().iter().flat_map(|p| p.rules.rules()))
    };
    let named = |field: fn(&chock_policy::Rule) -> Option<&chock_policy::Pattern>| {
        let mut names: Vec<String> = every_rule()
            .filter_map(|r| {
                field(r)
                    .filter(|p| !p.is_class())
                    .map(|p| p.as_str().to_owned())
            })
            .collect();
        names.sort();
        names.dedup();
        names
    };
    let mut kinds = named(|r| r.agent_kind.as_ref());
    kinds.push("main".to_owned());
    let tools: Vec<Option<String>> = std::iter::once(None)
        .chain(named(|r| r.tool.as_ref()).into_iter().map(Some))
        .collect();
    for package in policy.packages() {
        for rule in package.rules.rules() {
            if let Some(action) = rule.action.as_ref().filter(|p| !p.is_class()) {
                for kind in &kinds {
                    for tool in &tools {
                        keys.push((kind.clone(), tool.clone(), action.as_str().to_owned()));
                    }
                }
            }
        }
    }
    keys.sort();
    keys.dedup();
    let sample: Vec<Sampled> = keys
        .iter()
        .map(|(agent, tool, action)| decide(&policy, agent, tool.as_deref(), action))
        .collect();
    let count = sample.len();
    let text = serde_json::to_string_pretty(&BaselineFile { sample })
        .map_err(|e| PackageError::Refused(e.to_string()))?;
    let path = baseline_path(project);
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(io(dir, "creating"))?;
    }
    write_atomically(&path, format!("{text}\n").as_bytes())?;
    Ok(count)
}
