//! Policy packages: a folder `.agents/policies/<id>/` holding `manifest.zon`
//! (what the policy is, where it applies, the rules it adds, its guidance),
//! an optional guard program and an `evals/` suite. The manifest is read
//! strictly: an unknown field, a missing one or a bad value is an error
//! naming the file, the line and what to write instead.
//!
//! A package's rules are their own layer ([`crate::Layer::Policy`]): they
//! join the project's rules, the most specific of the two wins, and of two
//! equally specific the more restrictive.

use std::path::{Component, Path, PathBuf};

use chock_zon::Spanned;
use serde::{Deserialize, Serialize};

use crate::error::PolicyError;
use crate::files::{StrictRule, strict_rules};
use crate::index::RuleSet;
use chock_config::{ByteSize, ConfigError, Source};

/// Where packages live, under the project.
pub const POLICIES_DIR: &str = crate::control::POLICIES_DIR;
/// A package's manifest, in its folder.
pub const MANIFEST: &str = "manifest.zon";
/// A package's eval cases, in its folder.
pub const EVALS_DIR: &str = "evals";
/// The longest a guard may be given to answer.
pub const MAX_GUARD_TIMEOUT_MS: u64 = 60_000;
/// A guard's time bound when the manifest names none.
pub const DEFAULT_GUARD_TIMEOUT_MS: u64 = 2_000;
/// A guard's memory bound when the manifest names none.
pub const DEFAULT_GUARD_MEMORY: u64 = 256 << 20;

/// Where a package applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum HookPoint {
    /// An agent's tool call, through its hook.
    Tool,
    /// `git commit`, through the git pre-commit hook.
    PreCommit,
    /// `git push`, through the git pre-push hook.
    PrePush,
    /// The CI gate on a pull request.
    Ci,
}

impl HookPoint {
    /// Every hook point, in the order a change meets them.
    pub const ALL: [HookPoint; 4] = [
        HookPoint::Tool,
        HookPoint::PreCommit,
        HookPoint::PrePush,
        HookPoint::Ci,
    ];

    /// The name a manifest writes.
    pub fn as_str(self) -> &'static str {
        match self {
            HookPoint::Tool => "tool",
            HookPoint::PreCommit => "pre-commit",
            HookPoint::PrePush => "pre-push",
            HookPoint::Ci => "ci",
        }
    }

    /// Reads a manifest's name.
    pub fn from_name(name: &str) -> Option<HookPoint> {
        HookPoint::ALL.into_iter().find(|h| h.as_str() == name)
    }
}

/// How far a package's answers go, as an organisation rolls it out:
/// `observe` answers nothing (each call is answered as without the
/// package, and the log line says what the package would have answered),
/// `ask` holds a refusal to an ask (a person can still say yes), `enforce`
/// answers in full. Its verdicts rank warn (allowed, told) < ask < block
/// (deny); a stage caps them at warn, ask or block.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default, Deserialize, Serialize,
)]
#[serde(rename_all = "snake_case")]
pub enum Rollout {
    Observe,
    Ask,
    #[default]
    Enforce,
}

impl Rollout {
    /// The word a manifest writes after `.rollout = .`.
    pub fn as_str(self) -> &'static str {
        match self {
            Rollout::Observe => "observe",
            Rollout::Ask => "ask",
            Rollout::Enforce => "enforce",
        }
    }

    /// `decision` as this stage lets it through: `observe` allows (a warn),
    /// `ask` raises anything stricter than an ask to an ask, `enforce`
    /// keeps it.
    pub fn cap(self, decision: crate::Decision) -> crate::Decision {
        match self {
            Rollout::Observe => crate::Decision::Allow,
            Rollout::Ask => decision.max(crate::Decision::Ask),
            Rollout::Enforce => decision,
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a policy manifest `.{ .id = \"...\", .version = \"1.0.0\", .summary = \"...\", .hooks = .{ \"tool\" } }`"
)]
struct ManifestFile {
    id: Spanned<String>,
    version: Spanned<String>,
    summary: Spanned<String>,
    hooks: Spanned<Vec<Spanned<String>>>,
    #[serde(default)]
    rules: Spanned<Vec<Spanned<StrictRule>>>,
    #[serde(default)]
    guard: Option<Spanned<GuardBlock>>,
    #[serde(default)]
    guidance: String,
    #[serde(default)]
    rollout: Rollout,
}

#[derive(Debug, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a guard `.{ .program = \"guard.sh\" }`, with optional `.timeout_ms` and `.memory`"
)]
struct GuardBlock {
    program: String,
    timeout_ms: Option<u64>,
    memory: Option<ByteSize>,
}

/// A package's guard: a program inside the package's folder, run on each
/// call at the package's hook points.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Guard {
    /// The program, inside the package's folder.
    pub program: PathBuf,
    /// How long it may take before its silence is a deny.
    pub timeout_ms: u64,
    /// The most memory it may use.
    pub memory_bytes: u64,
    /// The manifest line that names it.
    pub line: u32,
}

/// One package, read and checked.
#[derive(Debug, Clone)]
pub struct PolicyPackage {
    pub id: String,
    pub version: String,
    pub summary: String,
    pub hooks: Vec<HookPoint>,
    pub rules: RuleSet,
    pub guard: Option<Guard>,
    pub guidance: String,
    /// How far its answers go (`.rollout`, `enforce` when not written).
    pub rollout: Rollout,
    /// The package's folder.
    pub dir: PathBuf,
    /// Its `manifest.zon`.
    pub manifest: PathBuf,
}

impl PolicyPackage {
    /// Whether the package applies at `point`.
    pub fn applies_at(&self, point: HookPoint) -> bool {
        self.hooks.contains(&point)
    }
}

/// What a package id is, for every refusal of one.
pub const ID_RULE: &str = "a policy id is one label: letters, digits, `-` and `_` (such as `no-large-files`), not starting with `-`, at most 64 bytes; no `.`, `/` or space, since it names the folder `.agents/policies/<id>/`";

/// Whether `id` is a package id: one label of ASCII letters, digits, `-`
/// and `_`, not starting with `-`, at most 64 bytes. It names a folder, so
/// it can never be empty, `.`, `..` or hold a `/`.
pub fn valid_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 64
        && !id.starts_with('-')
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// Reads a package id (as `chock.lock` names one), refusing what
/// [`valid_id`] refuses at the value's line and column.
pub fn deserialize_id<'de, D: serde::Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    let id = String::deserialize(d)?;
    if valid_id(&id) {
        Ok(id)
    } else {
        Err(serde::de::Error::custom(format!("`{id}`: {ID_RULE}")))
    }
}

/// Reads the package in `dir` (its `manifest.zon`, a plain file of at most
/// [`chock_zon::MAX_FILE_BYTES`]; a link there is refused).
pub fn read_package(dir: &Path) -> Result<PolicyPackage, PolicyError> {
    let manifest = dir.join(MANIFEST);
    let linked = std::fs::symlink_metadata(&manifest).is_ok_and(|m| m.file_type().is_symlink());
    if linked {
        return Err(chock_zon::Error::whole_file(
            Some(&manifest),
            "is a symbolic link, and a package's manifest is a plain file in its folder: replace the link with the file",
        )
        .into());
    }
    let text = chock_zon::read_text(&manifest)?;
    Ok(read_manifest(dir, &manifest, &text)?)
}

/// Reads `text` as the manifest `manifest` of the package in `dir`: every
/// fault an error naming the file, line and column.
pub fn read_manifest(
    dir: &Path,
    manifest: &Path,
    text: &str,
) -> Result<PolicyPackage, ConfigError> {
    let source = Source::new(manifest, text);
    let file: ManifestFile = source.read()?;
    let folder = dir.file_name().and_then(|n| n.to_str()).unwrap_or("");
    if !valid_id(&file.id.value) {
        return Err(source.error(file.id.span, ID_RULE));
    }
    if file.id.value != folder {
        return Err(source.error(
            file.id.span,
            format!(
                "the id `{}` is not the folder's name `{folder}`: a package lives in `{POLICIES_DIR}/<id>/`, so rename one to match the other",
                file.id.value
            ),
        ));
    }
    if file.version.value.trim().is_empty() || file.version.value.contains(char::is_whitespace) {
        return Err(source.error(
            file.version.span,
            "`.version` is a version with no space, such as \"1.0.0\"",
        ));
    }
    if file.summary.value.trim().is_empty() {
        return Err(source.error(
            file.summary.span,
            "`.summary` says in one line what the policy keeps from happening",
        ));
    }
    let mut hooks = Vec::new();
    for hook in &file.hooks.value {
        let Some(point) = HookPoint::from_name(&hook.value) else {
            return Err(source.error(
                hook.span,
                format!(
                    "`{}` is no hook point: write \"tool\", \"pre-commit\", \"pre-push\" or \"ci\"",
                    hook.value
                ),
            ));
        };
        if hooks.contains(&point) {
            return Err(source.error(
                hook.span,
                format!("\"{}\" is named twice: keep one", hook.value),
            ));
        }
        hooks.push(point);
    }
    if hooks.is_empty() {
        return Err(source.error(
            file.hooks.span,
            "`.hooks` names where the policy applies: at least one of \"tool\", \"pre-commit\", \"pre-push\", \"ci\"",
        ));
    }
    let guard = match file.guard {
        Some(Spanned { span, value }) => {
            let line = chock_zon::line_col(text, span.start).0;
            let program = Path::new(&value.program);
            let inside = !value.program.is_empty()
                && program
                    .components()
                    .all(|c| matches!(c, Component::Normal(_)));
            if !inside {
                return Err(source.error(
                    span,
                    "`.guard.program` is a path inside the package's folder, such as \"guard.sh\" (no `..`, not absolute)",
                ));
            }
            let timeout_ms = value.timeout_ms.unwrap_or(DEFAULT_GUARD_TIMEOUT_MS);
            if timeout_ms == 0 || timeout_ms > MAX_GUARD_TIMEOUT_MS {
                return Err(source.error(
                    span,
                    format!("`.guard.timeout_ms` is between 1 and {MAX_GUARD_TIMEOUT_MS}"),
                ));
            }
            let memory_bytes = value.memory.map_or(DEFAULT_GUARD_MEMORY, |m| m.0);
            if memory_bytes < (1 << 20) {
                return Err(source.error(
                    span,
                    "`.guard.memory` is at least \"1MiB\": a program cannot start in less",
                ));
            }
            Some(Guard {
                program: dir.join(program),
                timeout_ms,
                memory_bytes,
                line,
            })
        }
        None => None,
    };
    if guard.is_none() && file.rules.value.is_empty() {
        return Err(source.error(
            file.rules.span,
            "this policy neither adds a rule (`.rules`) nor names a guard (`.guard`), so it decides nothing: add one",
        ));
    }
    let rules = strict_rules(&source, file.rules)?;
    Ok(PolicyPackage {
        id: file.id.value,
        version: file.version.value,
        summary: file.summary.value,
        hooks,
        rules,
        guard,
        guidance: file.guidance,
        rollout: file.rollout,
        dir: dir.to_path_buf(),
        manifest: manifest.to_path_buf(),
    })
}

/// Every package under `project/.agents/policies/`, in the order of their
/// ids. No such folder means none. A link there, or a folder without its
/// `manifest.zon`, refuses the load: a package whose rules vanished (its
/// manifest removed, its folder swapped for a link) must not load as a
/// project without them. Files (`INDEX.md`) and folders whose name starts
/// with `.` (an install's staging folder) are not packages.
pub fn read_packages(project: &Path) -> Result<Vec<PolicyPackage>, PolicyError> {
    let root = project.join(POLICIES_DIR);
    let entries = match std::fs::read_dir(&root) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(source) => return Err(PolicyError::Io { path: root, source }),
    };
    let mut dirs = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|source| PolicyError::Io {
            path: root.clone(),
            source,
        })?;
        let kind = entry.file_type().map_err(|source| PolicyError::Io {
            path: entry.path(),
            source,
        })?;
        let hidden = entry.file_name().as_encoded_bytes().starts_with(b".");
        if kind.is_symlink() {
            return Err(chock_zon::Error::whole_file(
                Some(&entry.path()),
                format!("is a symbolic link, and {POLICIES_DIR}/ holds packages as real folders: remove the link (`chock install` puts back what chock.lock names)"),
            )
            .into());
        }
        if kind.is_dir() && !hidden {
            if std::fs::symlink_metadata(entry.path().join(MANIFEST)).is_err() {
                return Err(chock_zon::Error::whole_file(
                    Some(&entry.path().join(MANIFEST)),
                    "is missing, so the package in this folder would bind nothing: put it back (`chock install` restores what chock.lock names) or remove the folder",
                )
                .into());
            }
            dirs.push(entry.path());
        }
    }
    dirs.sort();
    dirs.iter().map(|d| read_package(d)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str) -> Result<PolicyPackage, String> {
        let dir = Path::new("/p/.agents/policies/no-big");
        read_manifest(dir, &dir.join(MANIFEST), text).map_err(|e| e.to_string())
    }

    #[test]
    fn a_whole_manifest_reads() {
        let p = read(
            ".{ .id = \"no-big\", .version = \"1.0.0\", .summary = \"no big files\",\n .hooks = .{ \"pre-commit\", \"tool\" },\n .rules = .{ .{ .action = \"git.push\", .decision = .ask } },\n .guard = .{ .program = \"guard.sh\", .timeout_ms = 500, .memory = \"64MiB\" },\n .guidance = \"Keep files small.\" }",
        )
        .expect("reads");
        assert_eq!(p.hooks, vec![HookPoint::PreCommit, HookPoint::Tool]);
        assert_eq!(p.rules.len(), 1);
        let guard = p.guard.expect("guard");
        assert_eq!(guard.timeout_ms, 500);
        assert_eq!(guard.memory_bytes, 64 << 20);
        assert_eq!(guard.line, 4);
    }

    #[test]
    fn mistakes_name_the_line_and_the_fix() {
        let base = ".{ .id = \"no-big\", .version = \"1\", .summary = \"s\",\n";
        let cases = [
            (
                ".hooks = .{ \"commit\" }, .rules = .{} }",
                ":2:",
                "no hook point",
            ),
            (".hooks = .{}, .rules = .{} }", ":2:", "at least one"),
            (
                ".hooks = .{ \"tool\" }, .rules = .{} }",
                ":2:",
                "decides nothing",
            ),
            (
                ".hooks = .{ \"tool\" }, .guard = .{ .program = \"../x\" } }",
                ":2:",
                "inside the package",
            ),
            (".hooks = .{ \"tool\" }, .colour = 1 }", ":2:", "colour"),
        ];
        for (rest, line, words) in cases {
            let error = read(&format!("{base}{rest}")).expect_err(rest);
            assert!(
                error.contains("manifest.zon") && error.contains(line),
                "{error}"
            );
            assert!(error.contains(words), "{rest}: {error}");
        }
        let error = read(".{ .id = \"other\", .version = \"1\", .summary = \"s\", .hooks = .{ \"tool\" }, .rules = .{ .{ .decision = .deny } } }")
            .expect_err("id");
        assert!(error.contains("not the folder's name"), "{error}");
    }
}

#[cfg(test)]
mod layer_tests {
    use super::*;
    use crate::{Decision, Key, Layer, Pattern, Policy, Reading, Rule};

    fn package(rules: &str) -> PolicyPackage {
        let dir = Path::new("/p/.agents/policies/pkg");
        let text = format!(
            ".{{ .id = \"pkg\", .version = \"1\", .summary = \"s\", .hooks = .{{ \"tool\" }}, .rules = .{{ {rules} }} }}"
        );
        read_manifest(dir, &dir.join(MANIFEST), &text).expect("manifest")
    }

    fn staged(rules: &str, rollout: &str) -> PolicyPackage {
        let dir = Path::new("/p/.agents/policies/pkg");
        let text = format!(
            ".{{ .id = \"pkg\", .version = \"1\", .summary = \"s\", .hooks = .{{ \"tool\" }}, .rollout = .{rollout}, .rules = .{{ {rules} }} }}"
        );
        read_manifest(dir, &dir.join(MANIFEST), &text).expect("manifest")
    }

    /// Each stage caps the package's answer (observe: allowed, ask: an ask
    /// at most, enforce: as written) and says what it held back; a stage
    /// never widens what the project alone answers, and one no stage names
    /// does not read.
    #[test]
    fn a_rollout_stage_caps_the_package_and_never_widens() {
        let deny = ".{ .action = \"git.push\", .decision = .deny }";
        let push = Key::new("git.push");
        for (stage, decision) in [
            ("observe", Decision::Allow),
            ("ask", Decision::Ask),
            ("enforce", Decision::Deny),
        ] {
            let policy = Policy::from_rules(vec![rule("git.push", Decision::Allow)], Vec::new())
                .with_packages(vec![staged(deny, stage)]);
            let verdict = policy.decide(&push, Reading::Act);
            assert_eq!(verdict.decision, decision, "{stage}");
            let held = verdict
                .decided_by
                .held
                .map(|h| (h.policy, h.stage.as_str(), h.would));
            if stage == "enforce" {
                assert_eq!(held, None);
            } else {
                assert_eq!(held, Some(("pkg".into(), stage, Decision::Deny)), "{stage}");
            }
        }
        // The project denies pushes everywhere; a staged package's more
        // specific allow (or its capped deny) does not lift that.
        for rules in [".{ .action = \"git.push\", .decision = .allow }", deny] {
            for stage in ["observe", "ask"] {
                let policy = Policy::from_rules(vec![rule("git.*", Decision::Deny)], Vec::new())
                    .with_packages(vec![staged(rules, stage)]);
                let verdict = policy.decide(&push, Reading::Act);
                assert_eq!(verdict.decision, Decision::Deny, "{stage} {rules}");
            }
        }
        // A stage with no rule for the act changes nothing and says nothing.
        let policy = Policy::from_rules(vec![rule("git.commit", Decision::Allow)], Vec::new())
            .with_packages(vec![staged(deny, "observe")]);
        let commit = policy.decide(&Key::new("git.commit"), Reading::Act);
        assert_eq!(
            (commit.decision, commit.decided_by.held),
            (Decision::Allow, None)
        );

        let dir = Path::new("/p/.agents/policies/pkg");
        let text = ".{ .id = \"pkg\", .version = \"1\", .summary = \"s\", .hooks = .{ \"tool\" },\n .rollout = .shadow, .rules = .{ .{ .decision = .deny } } }";
        let error = read_manifest(dir, &dir.join(MANIFEST), text)
            .expect_err("an unknown stage")
            .to_string();
        assert!(error.contains("manifest.zon:2:"), "{error}");
        assert!(error.contains("shadow"), "{error}");
    }

    fn rule(action: &str, decision: Decision) -> Rule {
        Rule::new(Some(Pattern::parse(action).expect("pattern")), decision)
    }

    #[test]
    fn a_package_rule_joins_the_project_by_specificity_and_names_its_id() {
        let policy = Policy::from_rules(vec![rule("git.*", Decision::Allow)], Vec::new())
            .with_packages(vec![package(
                ".{ .action = \"git.push\", .decision = .deny }, .{ .action = \"git.*\", .decision = .ask }",
            )]);
        let push = policy.decide(&Key::new("git.push"), Reading::Act);
        assert_eq!(push.decision, Decision::Deny);
        assert_eq!(push.decided_by.layer, Layer::Policy);
        assert_eq!(push.decided_by.policy.as_deref(), Some("pkg"));
        assert_eq!(push.decided_by.line, Some(1));
        // Equally specific: the more restrictive of the two.
        let commit = policy.decide(&Key::new("git.commit"), Reading::Act);
        assert_eq!(
            (commit.decision, commit.decided_by.layer),
            (Decision::Ask, Layer::Policy)
        );
        // A more specific project rule wins over the package's class.
        let policy = Policy::from_rules(vec![rule("git.commit", Decision::Allow)], Vec::new())
            .with_packages(vec![package(".{ .action = \"git.*\", .decision = .deny }")]);
        let commit = policy.decide(&Key::new("git.commit"), Reading::Act);
        assert_eq!(
            (commit.decision, commit.decided_by.layer),
            (Decision::Allow, Layer::Project)
        );
    }
}
