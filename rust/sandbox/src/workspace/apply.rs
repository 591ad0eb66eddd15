//! Apply: the workspace's work, committed there as the session commit,
//! carried into the person's repository after one `workspace.apply`
//! question that shows what it holds (files, lines, commits) and where it
//! lands.
//!
//! The commit always reaches `refs/chock/<session>` first. Where it goes
//! from there is settled before the question is put, so the question says
//! exactly what a yes does: `.apply.mode` in `chock.zon` (`ref`, `merge`,
//! `rebase`, `squash`) unless `workspace.integrate` answers deny (read with
//! the ceiling reading: only deny takes the capability away), then `ref`.
//! Every landing is computed whole (`git merge-tree`, `commit-tree`) before
//! anything of the person's moves: a conflict parks the work at the ref and
//! says so, and the branch and the tree move together or not at all.
//!
//! An overlay workspace (a project that is not a git repository) has no
//! commit: its upper layer is written into the project's tree, whole or
//! not at all, and a conflict or a landing that may not move anything
//! keeps the work in the workspace.

use std::path::{Path, PathBuf};

use chock_gate::Route;
use chock_log::Log;
use chock_policy::workspace::ApplyMode;
use chock_policy::{Asker, Key, Policy, Question, Reading, StartQuestion, Verdict};
use serde::Serialize;

use chock_policy::visible;

use super::git::{Git, split_z};
use super::history::{self, Guard, History};
use super::{AGENT_KIND, REF_PREFIX, SessionWorkspace, WorkspaceError, journal};

/// The action an apply is asked under.
pub const ACTION: &str = "workspace.apply";
/// The branch in the session's own repository the commit is fetched from.
const SESSION_BRANCH: &str = "refs/heads/chock-session";

/// One file the session changed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct FileChange {
    pub path: String,
    /// Lines added and removed; `None` for a binary file.
    pub lines: Option<(u64, u64)>,
}

/// Where an approved apply lands, settled before the question.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Landing {
    /// Parked at `refs/chock/<session>`; `why` when the project's mode was
    /// another one.
    Ref { why: Option<String> },
    /// Onto the branch checked out, in this mode.
    Branch { branch: String, mode: ApplyMode },
    /// An overlay's changes written into the project's tree.
    Tree,
    /// An overlay's changes kept in the workspace, and why.
    Kept { why: String },
}

/// A branch's move, computed whole before the question.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Target {
    pub branch: String,
    pub tip: String,
    pub new: String,
}

/// What an apply would carry, and where.
#[derive(Clone, Debug, Serialize)]
pub struct Plan {
    pub session: String,
    pub project: PathBuf,
    /// The session commit.
    pub commit: String,
    pub base: String,
    pub files: Vec<FileChange>,
    /// `abbrev subject` of each commit, oldest first.
    pub commits: Vec<String>,
    /// `copy` binds written back.
    pub copies: Vec<String>,
    pub landing: Landing,
    /// A branch landing as computed before the question: its tip then and
    /// the commit it moves to (written into the person's repository as
    /// objects, no ref of theirs moved).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target: Option<Target>,
    /// What the person should know about the landing.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// An overlay's paths no apply carries (a `.git` the session made, a
    /// bind not written back).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub left_out: Vec<String>,
    /// The unified diff of what lands, one line each ([`landing_diff`]):
    /// what decides what runs first, cut at [`DIFF_LINES`].
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub diff: Vec<String>,
    /// An overlay's changes as the question showed them: the digest of
    /// their frozen copy, which the landing's copy must match.
    #[serde(skip)]
    pub(crate) frozen: Option<String>,
}

impl Plan {
    /// `refs/chock/<session>`.
    pub fn reference(&self) -> String {
        format!("{REF_PREFIX}{}", self.session)
    }

    /// One line: files, lines, commits and the landing.
    pub fn summary(&self) -> String {
        let (added, removed) = self
            .files
            .iter()
            .filter_map(|f| f.lines)
            .fold((0, 0), |(a, r), (x, y)| (a + x, r + y));
        let plural = |n: usize| if n == 1 { "" } else { "s" };
        let landing = match &self.landing {
            Landing::Ref { why: None } => format!("parks at {}", self.reference()),
            Landing::Ref { why: Some(why) } => {
                format!("parks at {} ({why})", self.reference())
            }
            Landing::Branch { branch, mode } => {
                format!("lands on {branch} as {}", mode.as_str())
            }
            Landing::Tree => "writes them into your tree".to_owned(),
            Landing::Kept { why } => format!("stays in the workspace ({why})"),
        };
        let mut text = format!(
            "carry session {} into {}: {} file{} (+{added} -{removed}), {} commit{}",
            self.session,
            self.project.display(),
            self.files.len(),
            plural(self.files.len()),
            self.commits.len(),
            plural(self.commits.len())
        );
        if !self.copies.is_empty() {
            text.push_str(&format!(
                ", {} copy bind{} written back",
                self.copies.len(),
                plural(self.copies.len())
            ));
        }
        text.push_str(&format!("; {landing}"));
        text
    }

    /// The lines under the summary: every file, commit and copy bind.
    pub fn detail(&self) -> Vec<String> {
        let mut lines: Vec<String> = self
            .files
            .iter()
            .map(|f| match f.lines {
                Some((a, r)) => format!("{} +{a} -{r}", f.path),
                None => format!("{} (binary)", f.path),
            })
            .collect();
        lines.extend(self.commits.iter().map(|c| format!("commit {c}")));
        lines.extend(self.notes.iter().cloned());
        lines.extend(
            self.copies
                .iter()
                .map(|c| format!("writes back {c} (a copy bind) into your tree")),
        );
        lines.extend(
            self.left_out
                .iter()
                .map(|c| format!("leaves out {c} (never carried)")),
        );
        if !self.diff.is_empty() {
            lines.push(DIFF_HEADING.to_owned());
            lines.extend(self.diff.iter().cloned());
        }
        lines
    }
}

/// What an apply came to.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Applied {
    /// The workspace holds nothing the repository lacks.
    Nothing,
    /// On the branch: `commit` is its new tip.
    Landed {
        branch: String,
        mode: ApplyMode,
        commit: String,
    },
    /// At the ref, and why when the mode was another one.
    Parked {
        reference: String,
        commit: String,
        why: Option<String>,
    },
    /// An overlay's changes written into the project's tree.
    Written { files: usize },
    /// An overlay's changes kept in the workspace: nothing of the tree
    /// changed.
    Kept { dir: PathBuf, why: String },
    /// Not carried; the sentence says why and what to do.
    Refused { sentence: String },
}

impl std::fmt::Display for Applied {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Applied::Nothing => write!(f, "the workspace holds nothing to apply"),
            Applied::Landed {
                branch,
                mode,
                commit,
            } => write!(
                f,
                "applied: {branch} is now {} ({})",
                short(commit),
                mode.as_str()
            ),
            Applied::Parked {
                reference,
                commit,
                why,
            } => {
                write!(f, "parked at {reference} ({})", short(commit))?;
                if let Some(why) = why {
                    write!(f, ": {why}")?;
                }
                write!(
                    f,
                    "; nothing of your branch or tree moved (`git merge {reference}` takes it)"
                )
            }
            Applied::Written { files } => write!(
                f,
                "applied: {files} file{} written into your tree",
                if *files == 1 { "" } else { "s" }
            ),
            Applied::Kept { dir, why } => write!(
                f,
                "kept in the workspace {}: {why}; nothing of your tree changed (the session's files are there to read or copy; `chock workspace clear` drops them)",
                dir.display()
            ),
            Applied::Refused { sentence } => write!(f, "{sentence}"),
        }
    }
}

fn short(commit: &str) -> &str {
    commit.get(..12).unwrap_or(commit)
}

/// Who commits: the person's own `user.name` and `user.email`, else Chock.
fn identity(host: &Git) -> Vec<(String, String)> {
    let mut env = super::git::IdentityRead::start(host).finish();
    for (var, fallback) in [
        ("GIT_AUTHOR_NAME", "Chock session"),
        ("GIT_AUTHOR_EMAIL", "chock@localhost"),
        ("GIT_COMMITTER_NAME", "Chock session"),
        ("GIT_COMMITTER_EMAIL", "chock@localhost"),
    ] {
        if !env.iter().any(|(k, _)| k == var) {
            env.push((var.into(), fallback.into()));
        }
    }
    env
}

/// Every path the session's history touches that no apply carries: a
/// control input (`chock_policy::control`, through
/// `layout::only_a_person_edits`), a `deny_read` file (no session could
/// read it, so a change there is the notice, not the file), a path inside
/// a bind (never committed; the person's own path, or a copy written back
/// on its own); and every path no checkout may write.
fn guarded(
    workspace: &SessionWorkspace,
    history: &History,
) -> (Vec<(String, Guard)>, Vec<Crafted>) {
    let mut guarded = Vec::new();
    let mut bad = Vec::new();
    for path in history.touched.keys() {
        if let Some(why) = history::crafted(path) {
            bad.push((path.clone(), why));
        } else if crate::layout::only_a_person_edits(Path::new(path)) {
            let read_by = chock_policy::control::control_input(Path::new(path))
                .map_or("Chock", |input| input.read_by);
            guarded.push((path.clone(), Guard::Control(read_by)));
        } else if workspace
            .meta
            .deny_read
            .iter()
            .any(|c| c.rel == Path::new(path))
        {
            guarded.push((path.clone(), Guard::DenyRead));
        } else if let Some(bind) = workspace
            .meta
            .binds
            .iter()
            .find(|b| history::within(path, &b.name))
        {
            guarded.push((path.clone(), Guard::Bind(bind.name.clone())));
        }
    }
    (guarded, bad)
}

/// A path no checkout may write, and why.
type Crafted = (String, &'static str);

/// Lines added and removed per file between two commits of `host`.
fn numstat(host: &Git, from: &str, to: &str) -> Result<Vec<FileChange>, WorkspaceError> {
    let out = host.run([
        "diff",
        "--numstat",
        "-z",
        "--no-renames",
        "--no-ext-diff",
        "--no-textconv",
        from,
        to,
    ])?;
    Ok(split_z(&out.stdout)
        .into_iter()
        .filter_map(|line| {
            let mut parts = line.splitn(3, '\t');
            let (a, r, path) = (parts.next()?, parts.next()?, parts.next()?);
            Some(FileChange {
                path: path.to_owned(),
                lines: a.parse().ok().zip(r.parse().ok()),
            })
        })
        .collect())
}

/// The detail line the diff follows in an apply's question: no line about
/// a file, commit or bind reads so, so a reader (the pager, the page) finds
/// where the diff starts without trusting a name the agent chose.
pub const DIFF_HEADING: &str = "the diff of what lands (what decides what runs first):";

/// Where the diff starts in a question's `detail` (its heading's index),
/// if it has one.
pub fn diff_start(detail: &[String]) -> Option<usize> {
    detail.iter().position(|line| line == DIFF_HEADING)
}

/// The most lines of diff a question carries; the rest is named by count
/// and by the command that shows it whole.
pub const DIFF_LINES: usize = 2000;
/// The most characters of one diff line a question carries.
const DIFF_LINE_CHARS: usize = 400;

/// Paths (or the folders holding them) that decide what runs when the
/// person builds, tests or pushes: shown first in an apply's diff, being
/// what a person reads most carefully.
const RUNS_THINGS: &[&str] = &[
    "flake.nix",
    "flake.lock",
    "default.nix",
    "shell.nix",
    "Makefile",
    "justfile",
    "build.rs",
    "Cargo.toml",
    "package.json",
    "pyproject.toml",
    "setup.py",
    ".github",
    ".gitlab-ci.yml",
    ".gitmodules",
    ".gitattributes",
];

/// Whether a change at `path` decides what runs: a control input or a
/// build or CI definition ([`RUNS_THINGS`]), at any depth.
pub(crate) fn decides_what_runs(path: &str) -> bool {
    crate::layout::only_a_person_edits(Path::new(path))
        || path.split('/').any(|part| RUNS_THINGS.contains(&part))
}

/// The unified diff from `from` to `to` in the person's repository (the
/// objects fetched there, never the session's own git): the files of
/// `files` that decide what runs first, then the rest, bounded.
fn landing_diff(
    host: &Git,
    from: &str,
    to: &str,
    files: &[FileChange],
) -> Result<Vec<String>, WorkspaceError> {
    let first: Vec<String> = files
        .iter()
        .filter(|f| decides_what_runs(&f.path))
        .map(|f| format!(":(literal){}", f.path))
        .collect();
    let mut text = Vec::new();
    if !first.is_empty() {
        text.extend(diff_of(host, from, to, first.iter().cloned())?);
    }
    let rest = first
        .iter()
        .map(|spec| spec.replacen(":(literal)", ":(exclude,literal)", 1));
    text.extend(diff_of(host, from, to, rest)?);
    Ok(bounded(
        &text,
        &format!(
            "`git diff {from} {to}` in {} shows it whole",
            host.dir().display()
        ),
    ))
}

/// `git diff` between two commits for `pathspecs` (every path when none),
/// with no program or setting of the repository's choosing in the way.
fn diff_of(
    host: &Git,
    from: &str,
    to: &str,
    pathspecs: impl Iterator<Item = String>,
) -> Result<Vec<u8>, WorkspaceError> {
    let mut args: Vec<String> = [
        "diff",
        "--no-color",
        "--no-renames",
        "--no-ext-diff",
        "--no-textconv",
        "--src-prefix=a/",
        "--dst-prefix=b/",
        from,
        to,
        "--",
    ]
    .map(str::to_owned)
    .to_vec();
    args.extend(pathspecs);
    Ok(host.run(args)?.stdout)
}

/// `diff` as the question's lines: each cut at [`DIFF_LINE_CHARS`], and
/// all cut at [`DIFF_LINES`] with a line saying how much was left out and
/// `whole` (how to see it all).
pub(crate) fn bounded(diff: &[u8], whole: &str) -> Vec<String> {
    let text = String::from_utf8_lossy(diff);
    let all: Vec<&str> = text.lines().collect();
    let mut lines: Vec<String> = all
        .iter()
        .take(DIFF_LINES)
        .map(|line| match line.char_indices().nth(DIFF_LINE_CHARS) {
            Some((at, _)) => format!(
                "{} ... ({} more characters)",
                &line[..at],
                line[at..].chars().count()
            ),
            None => (*line).to_owned(),
        })
        .collect();
    if all.len() > DIFF_LINES {
        lines.push(format!(
            "... {} more lines of the diff left out; {whole}",
            all.len() - DIFF_LINES
        ));
    }
    lines
}

impl SessionWorkspace {
    /// Commits what the tree holds as the session commit, fetches it into
    /// the person's repository (objects only, every one checked by fsck;
    /// no ref of theirs moves), and says what an apply would carry and
    /// where, read there from the objects that land; `None` when there is
    /// nothing.
    pub fn plan_apply(
        &mut self,
        policy: &Policy,
        log: &Log,
        route: Route,
    ) -> Result<Option<Plan>, WorkspaceError> {
        if self.meta.overlay {
            return self.plan_overlay_apply(policy, log, route);
        }
        let host = Git::host(&self.meta.project);
        let git = self.git().with_env(identity(&host));
        // No session runs while this process holds the workspace: a lock
        // file of git's there is a killed apply's, once nobody holds it open.
        for lock in [
            "index.lock",
            "HEAD.lock",
            "packed-refs.lock",
            "refs/heads/chock-session.lock",
        ] {
            journal::clear_stale_lock(&self.git_dir().join(lock))?;
        }
        git.run(["add", "-A"])?;
        let staged = git.output(["diff", "--cached", "--quiet"], None)?;
        if !staged.ok {
            git.run([
                "commit",
                "-q",
                "--no-verify",
                "-m",
                &format!("chock session {}", self.meta.session),
            ])?;
        }
        let commit = git.line(["rev-parse", "--verify", "HEAD^{commit}"])?;
        let base = self.meta.base.clone();
        let copies: Vec<String> = self
            .meta
            .binds
            .iter()
            .filter(|b| b.write_back)
            .map(|b| b.name.clone())
            .collect();
        if commit == base && copies.is_empty() {
            return Ok(None);
        }
        self.fetch_into(&host, &commit)?;
        let host = host.with_env(identity(&Git::host(&self.meta.project)));
        let history = History::read(&host, &base, &commit)?;
        let (guarded, bad) = guarded(self, &history);
        if !guarded.is_empty() || !bad.is_empty() {
            return Err(WorkspaceError::Refused(history::refusal(
                &host,
                &history,
                &guarded,
                &bad,
                &base,
                crate::layout::WHY_NO_APPLY_CARRIES,
            )));
        }
        let mut notes = Vec::new();
        let landing = self.landing(policy, log, route, &host)?;
        let (landing, target) = settle(
            &host,
            landing,
            &self.meta.session,
            &commit,
            &history,
            &mut notes,
        )?;
        let (from, to) = match &target {
            Some(target) => (target.tip.as_str(), target.new.as_str()),
            None => (base.as_str(), commit.as_str()),
        };
        let files = numstat(&host, from, to)?;
        let diff = landing_diff(&host, from, to, &files)?;
        let shown: std::collections::BTreeSet<&str> =
            files.iter().map(|f| f.path.as_str()).collect();
        let undone: Vec<&String> = history
            .touched
            .keys()
            .filter(|p| !shown.contains(p.as_str()))
            .collect();
        if !undone.is_empty() {
            notes.push(format!(
                "also changed by a commit and back again (in the history, not the tree): {}",
                undone
                    .iter()
                    .map(|p| visible(p).into_owned())
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        Ok(Some(Plan {
            session: self.meta.session.clone(),
            project: self.meta.project.clone(),
            commit,
            base,
            files,
            commits: history.lines(),
            copies,
            landing,
            target,
            notes,
            left_out: Vec::new(),
            diff,
            frozen: None,
        }))
    }

    /// Fetches `commit` from the session's repository into the person's,
    /// as objects alone (no ref, no `FETCH_HEAD`), with every object
    /// checked (`fetch.fsckObjects`); refused, naming what git said, when
    /// one is not sound.
    fn fetch_into(&self, host: &Git, commit: &str) -> Result<(), WorkspaceError> {
        let git_dir = self.tree().join(".git");
        // The agent could write these; Chock's own say where the objects
        // come from and that the history is whole.
        let alternates = git_dir.join("objects/info/alternates");
        let mut text = self
            .meta
            .host_objects
            .as_os_str()
            .as_encoded_bytes()
            .to_vec();
        text.push(b'\n');
        std::fs::write(&alternates, text).map_err(super::io("writing", &alternates))?;
        for cut in ["shallow", "info/grafts"] {
            let path = git_dir.join(cut);
            if std::fs::symlink_metadata(&path).is_ok() {
                return Err(WorkspaceError::Refused(format!(
                    "the workspace's repository has {}, which hides part of its history; nothing was applied: remove it (`rm {}`) and apply again",
                    visible(&path.display().to_string()),
                    visible(&path.display().to_string())
                )));
            }
        }
        self.git().run(["update-ref", SESSION_BRANCH, commit])?;
        let out = host.output(
            [
                "fetch".as_ref(),
                "-q".as_ref(),
                "--no-tags".as_ref(),
                "--no-write-fetch-head".as_ref(),
                "--no-recurse-submodules".as_ref(),
                "--no-auto-gc".as_ref(),
                git_dir.as_os_str(),
                SESSION_BRANCH.as_ref(),
            ],
            None,
        )?;
        if !out.ok {
            return Err(WorkspaceError::Refused(format!(
                "git's checks refuse an object of the session's history (`git fetch` with fsck said: {}); nothing was applied and your repository is as it was: make those commits again in the workspace",
                visible(
                    out.stderr
                        .lines()
                        .take(3)
                        .collect::<Vec<_>>()
                        .join("; ")
                        .as_str()
                )
            )));
        }
        let there = host.output(["cat-file", "-e", &format!("{commit}^{{commit}}")], None)?;
        if !there.ok {
            return Err(WorkspaceError::Refused(format!(
                "the session commit {commit} did not reach {} by the fetch; nothing was applied",
                self.meta.project.display()
            )));
        }
        Ok(())
    }

    /// An overlay's plan: its upper layer read against the project, landing
    /// in the tree unless `.apply.mode` is `ref` or `workspace.integrate`
    /// answers deny (a project with no git has no ref to park at, so the
    /// work stays in the workspace).
    fn plan_overlay_apply(
        &self,
        policy: &Policy,
        log: &Log,
        route: Route,
    ) -> Result<Option<Plan>, WorkspaceError> {
        let carried = self.overlay_changes()?;
        if carried.changes.is_empty() {
            return Ok(None);
        }
        let landing = match self.integrate(policy, log, route)? {
            Some(why) => Landing::Kept { why },
            None if policy.workspace().apply_mode == ApplyMode::Ref => Landing::Kept {
                why: "the mode is ref, and a project that is not a git repository has no ref to park at".into(),
            },
            None => Landing::Tree,
        };
        let diff = super::overlay::overlay_diff(
            &self.meta.project,
            carried.frozen.path(),
            &self.upper(),
            &carried.files,
        );
        let frozen = Some(carried.frozen.digest()?);
        Ok(Some(Plan {
            session: self.meta.session.clone(),
            project: self.meta.project.clone(),
            commit: String::new(),
            base: String::new(),
            files: carried.files,
            commits: Vec::new(),
            copies: Vec::new(),
            landing,
            target: None,
            notes: Vec::new(),
            left_out: carried.left_out,
            diff,
            frozen,
        }))
    }

    /// `workspace.integrate` (logged): why no apply may move anything of
    /// the person's, or `None` when it may.
    fn integrate(
        &self,
        policy: &Policy,
        log: &Log,
        route: Route,
    ) -> Result<Option<String>, WorkspaceError> {
        let integrate =
            chock_gate::start::at_start(policy, AGENT_KIND, &StartQuestion::WorkspaceIntegrate)
                .map_err(|e| WorkspaceError::Refused(format!("workspace.integrate: {e}")))?;
        let key = Key::new("workspace.integrate".to_owned()).with_agent_kind(AGENT_KIND);
        let entry = chock_gate::line(
            route,
            self.meta.project.to_string_lossy(),
            &key,
            &integrate.verdict,
            (
                integrate.verdict.decision,
                chock_log::AnsweredBy::of_layer(integrate.verdict.decided_by.layer),
            ),
            None,
        );
        let _ = log.append(&entry);
        if integrate.granted {
            return Ok(None);
        }
        let by = &integrate.verdict.decided_by;
        let rule = match (&by.rule, &by.file, by.line) {
            (Some(rule), Some(file), Some(line)) => {
                format!("{rule} ({}:{line})", file.display())
            }
            (Some(rule), _, _) => rule.clone(),
            _ => "a rule".into(),
        };
        Ok(Some(format!(
            "workspace.integrate answers deny by {rule}, so no apply moves {}",
            if self.meta.overlay {
                "anything of your tree"
            } else {
                "a branch of yours"
            }
        )))
    }

    /// `workspace.integrate` (logged) and `.apply.mode` settle the landing.
    fn landing(
        &self,
        policy: &Policy,
        log: &Log,
        route: Route,
        host: &Git,
    ) -> Result<Landing, WorkspaceError> {
        if let Some(why) = self.integrate(policy, log, route)? {
            return Ok(Landing::Ref { why: Some(why) });
        }
        let mode = policy.workspace().apply_mode;
        if mode == ApplyMode::Ref {
            return Ok(Landing::Ref { why: None });
        }
        let head = host.output(["symbolic-ref", "-q", "HEAD"], None)?;
        match head.text().strip_prefix("refs/heads/") {
            Some(branch) if head.ok => Ok(Landing::Branch {
                branch: branch.to_owned(),
                mode,
            }),
            _ => Ok(Landing::Ref {
                why: Some(format!(
                    "your HEAD is detached, so there is no branch to {}",
                    mode.as_str()
                )),
            }),
        }
    }

    /// Carries `plan` into the person's repository: the commit (fetched
    /// when the plan was made) to `refs/chock/<session>`, then the branch
    /// and the tree to the landing computed then, under a journal the
    /// next apply finishes or rolls back should this one be killed; then
    /// the copy binds; the workspace's base becomes the commit.
    pub fn carry(&mut self, plan: &Plan) -> Result<Applied, WorkspaceError> {
        if self.meta.overlay {
            return self.carry_overlay(plan);
        }
        let host = Git::host(&self.meta.project);
        let reference = plan.reference();
        let message = format!("chock session {}", plan.session);
        let parked = |why: Option<String>| Applied::Parked {
            reference: reference.clone(),
            commit: plan.commit.clone(),
            why,
        };
        let applied = match (&plan.landing, &plan.target) {
            (Landing::Branch { branch, mode }, Some(target)) => {
                let held = journal::begin(
                    self,
                    journal::Step::Git {
                        branch: branch.clone(),
                        tip: target.tip.clone(),
                        new: target.new.clone(),
                        reference: reference.clone(),
                    },
                )?;
                host.run(["update-ref", "-m", &message, &reference, &plan.commit])?;
                let applied = match move_branch(&host, &self.meta.project, target, &message)? {
                    Ok(()) => {
                        host.run(["update-ref", "-d", &reference])?;
                        Applied::Landed {
                            branch: branch.clone(),
                            mode: *mode,
                            commit: target.new.clone(),
                        }
                    }
                    Err(why) => parked(Some(why)),
                };
                held.done()?;
                applied
            }
            (Landing::Ref { why }, _) => {
                host.run(["update-ref", "-m", &message, &reference, &plan.commit])?;
                parked(why.clone())
            }
            // An overlay's landings, or a branch with no target: a
            // repository's plan never holds them.
            _ => {
                host.run(["update-ref", "-m", &message, &reference, &plan.commit])?;
                parked(None)
            }
        };
        if !plan.copies.is_empty() {
            let denied = self.denied();
            let changes: Vec<super::overlay::Change> = plan
                .copies
                .iter()
                .map(|name| {
                    if std::fs::symlink_metadata(self.tree().join(name)).is_ok() {
                        super::overlay::Change::Write(name.into())
                    } else {
                        super::overlay::Change::Remove(name.into())
                    }
                })
                .collect();
            journal::write_tree(self, &self.tree(), &changes, &denied)
                .and_then(journal::Held::done)
                .map_err(|e| {
                    WorkspaceError::Refused(format!(
                        "{applied}; but the copy binds were not written back: {e}"
                    ))
                })?;
        }
        self.meta.base = plan.commit.clone();
        self.save()?;
        Ok(applied)
    }
}

impl SessionWorkspace {
    /// Writes an overlay's changes into the project, or keeps them: the
    /// changes are read again (what was asked about is what is written, or
    /// nothing), and every conflict is found before anything is written.
    fn carry_overlay(&mut self, plan: &Plan) -> Result<Applied, WorkspaceError> {
        let kept = |why: String| Applied::Kept {
            dir: self.upper(),
            why,
        };
        if let Landing::Kept { why } = &plan.landing {
            return Ok(kept(why.clone()));
        }
        let carried = self.overlay_changes()?;
        if Some(carried.frozen.digest()?) != plan.frozen {
            return Ok(kept(
                "the workspace changed after the question was put".into(),
            ));
        }
        let conflicts = self.overlay_conflicts(&carried.changes);
        if !conflicts.is_empty() {
            return Ok(kept(format!(
                "you changed or removed {} since the workspace was made (or the folder that held it), and the session changed it too",
                shown_paths(&conflicts)
            )));
        }
        let held = self.overlay_write(&carried)?;
        self.overlay_applied(&carried.changes)?;
        held.done()?;
        Ok(Applied::Written {
            files: plan.files.len(),
        })
    }
}

/// The merge of `ours` and `theirs` as a tree (`base` given or found), or
/// the conflicted paths.
fn merge_tree(
    host: &Git,
    base: Option<&str>,
    ours: &str,
    theirs: &str,
) -> Result<Result<String, Vec<String>>, WorkspaceError> {
    let mut args = vec![
        "merge-tree".to_owned(),
        "--write-tree".into(),
        "--no-messages".into(),
        "--name-only".into(),
        "-z".into(),
    ];
    if let Some(base) = base {
        args.push(format!("--merge-base={base}"));
    }
    args.push(ours.into());
    args.push(theirs.into());
    let out = host.output(&args, None)?;
    let fields = split_z(&out.stdout);
    match (out.code, fields.first()) {
        (Some(0), Some(tree)) => Ok(Ok(tree.clone())),
        (Some(1), Some(_)) => Ok(Err(fields.into_iter().skip(1).collect())),
        _ => Err(host.failed(&args, &out)),
    }
}

fn conflict(paths: &[String], branch: &str) -> String {
    format!(
        "it conflicts with {branch} in {}",
        if paths.is_empty() {
            "some files".to_owned()
        } else {
            shown_paths(paths)
        }
    )
}

/// Paths as one escaped list.
fn shown_paths(paths: &[String]) -> String {
    paths
        .iter()
        .map(|p| visible(p).into_owned())
        .collect::<Vec<_>>()
        .join(", ")
}

/// The paths that differ between two commits.
pub(super) fn changed_paths(
    host: &Git,
    from: &str,
    to: &str,
) -> Result<Vec<String>, WorkspaceError> {
    Ok(split_z(
        &host
            .run([
                "diff-tree",
                "-r",
                "-z",
                "--no-renames",
                "--name-only",
                from,
                to,
            ])?
            .stdout,
    ))
}

/// Why the person's own uncommitted work on a path the landing changes
/// (an edit, a staged change, a file removed from the tree whether or not
/// the removal is staged) keeps the landing from moving their tree; it is
/// theirs, kept as an edit is, and the work parks. Read with `git status`
/// taking no lock and writing nothing (a landing is computed before the
/// question, when nothing of the person's may change).
fn theirs_in_the_way(host: &Git, changed: &[String]) -> Result<Option<String>, WorkspaceError> {
    let status = host.run([
        "--no-optional-locks",
        "status",
        "--porcelain=v1",
        "-z",
        "--untracked-files=no",
        "--no-renames",
    ])?;
    let differs: Vec<String> = split_z(&status.stdout)
        .into_iter()
        .filter_map(|line| line.get(3..).map(str::to_owned))
        .collect();
    let changed: std::collections::BTreeSet<&str> = changed.iter().map(String::as_str).collect();
    let theirs: Vec<String> = differs
        .into_iter()
        .filter(|p| changed.contains(p.as_str()))
        .collect();
    Ok((!theirs.is_empty()).then(|| {
        format!(
            "you changed or removed {} in your tree since your last commit, and the session changes it too: commit, restore or stage that work (your removal counts as work) and apply again",
            shown_paths(&theirs)
        )
    }))
}

/// Computes the new tip for a branch landing (a merge, a replay, a
/// squash: every object written into the person's repository, no ref of
/// theirs moved), or parks: a conflict, or the person's uncommitted work
/// on a path it changes.
fn settle(
    host: &Git,
    landing: Landing,
    session: &str,
    commit: &str,
    history: &History,
    notes: &mut Vec<String>,
) -> Result<(Landing, Option<Target>), WorkspaceError> {
    let Landing::Branch { branch, mode } = landing else {
        return Ok((landing, None));
    };
    let full = format!("refs/heads/{branch}");
    let tip = host.line(["rev-parse", "--verify", &format!("{full}^{{commit}}")])?;
    let moved = !host
        .output(["merge-base", "--is-ancestor", &tip, commit], None)?
        .ok;
    // Already on the branch (an apply that landed before it was stopped):
    // nothing moves.
    if host
        .output(["merge-base", "--is-ancestor", commit, &tip], None)?
        .ok
    {
        let new = tip.clone();
        return Ok((
            Landing::Branch {
                branch: branch.clone(),
                mode,
            },
            Some(Target { branch, tip, new }),
        ));
    }
    let mut mode = mode;
    if mode == ApplyMode::Rebase && moved && history.has_merge_or_root() {
        notes.push(
            "the session's history holds a merge (or a commit with no parent), which a rebase does not replay: it lands as a merge, every commit as it is".to_owned(),
        );
        mode = ApplyMode::Merge;
    }
    let message = format!("chock session {session}");
    let parks = |why: String| Ok((Landing::Ref { why: Some(why) }, None));
    let new = match mode {
        ApplyMode::Ref => return parks("the mode is ref".into()),
        ApplyMode::Merge | ApplyMode::Rebase if !moved => commit.to_owned(),
        ApplyMode::Merge => match merge_tree(host, None, &tip, commit)? {
            Ok(tree) => host.line([
                "commit-tree",
                &tree,
                "-p",
                &tip,
                "-p",
                commit,
                "-m",
                &format!("Merge {message}"),
            ])?,
            Err(paths) => return parks(conflict(&paths, &branch)),
        },
        ApplyMode::Squash => {
            let tree = if moved {
                match merge_tree(host, None, &tip, commit)? {
                    Ok(tree) => tree,
                    Err(paths) => return parks(conflict(&paths, &branch)),
                }
            } else {
                host.line(["rev-parse", &format!("{commit}^{{tree}}")])?
            };
            let mut text = message;
            for c in history.lines() {
                text.push_str(&format!("\n\n{c}"));
            }
            host.line(["commit-tree", &tree, "-p", &tip, "-m", &text])?
        }
        ApplyMode::Rebase => {
            let mut current = tip.clone();
            for replayed in &history.commits {
                let parent = &replayed.parents[0];
                let tree = match merge_tree(host, Some(parent), &current, &replayed.id)? {
                    Ok(tree) => tree,
                    Err(paths) => return parks(conflict(&paths, &branch)),
                };
                current = replay(host, &replayed.id, &tree, &current)?;
            }
            current
        }
    };
    let changed = changed_paths(host, &tip, &new)?;
    if let Some(why) = theirs_in_the_way(host, &changed)? {
        return parks(why);
    }
    Ok((
        Landing::Branch {
            branch: branch.clone(),
            mode,
        },
        Some(Target { branch, tip, new }),
    ))
}

/// An entry's mode, inode, size, and change and modification times.
type Stamp = (u32, u64, u64, i64, i64);

/// What each path is in the tree (kind, inode, size, times), to tell
/// whether a git that failed wrote any of them.
fn snapshot(project: &Path, paths: &[String]) -> Vec<Option<Stamp>> {
    use std::os::unix::fs::MetadataExt;
    paths
        .iter()
        .map(|p| {
            std::fs::symlink_metadata(project.join(p)).ok().map(|m| {
                (
                    m.mode(),
                    m.ino(),
                    m.size(),
                    m.mtime_nsec() + m.mtime() * 1_000_000_000,
                    m.ctime_nsec() + m.ctime() * 1_000_000_000,
                )
            })
        })
        .collect()
}

/// Moves the branch and the tree to `target`, the branch checked to be
/// where the question saw it; `Err(why)` parks, saying truly what moved.
/// `why` is a sentence, as every reason a landing parks with: it becomes
/// the parked result's `why`, which the person reads, and every kind of
/// it is answered alike (the work parks), so no type would serve a caller.
fn move_branch(
    host: &Git,
    project: &Path,
    target: &Target,
    message: &str,
) -> Result<Result<(), String>, WorkspaceError> {
    let branch = &target.branch;
    let full = format!("refs/heads/{branch}");
    let now = host.line(["rev-parse", "--verify", &format!("{full}^{{commit}}")])?;
    if now != target.tip {
        return Ok(Err(format!(
            "{branch} moved since the question was put (it is at {} now); nothing of your branch or tree moved",
            short(&now)
        )));
    }
    let changed = changed_paths(host, &target.tip, &target.new)?;
    if let Some(why) = theirs_in_the_way(host, &changed)? {
        return Ok(Err(why));
    }
    host.output(["update-index", "-q", "--refresh"], None)?;
    let before = snapshot(project, &changed);
    let moved = host.output(
        ["update-ref", "-m", message, &full, &target.new, &target.tip],
        None,
    )?;
    if !moved.ok {
        return Ok(Err(format!(
            "{branch} could not be moved ({}); nothing of your branch or tree moved",
            visible(
                moved
                    .stderr
                    .lines()
                    .next()
                    .unwrap_or("git update-ref refused")
            )
        )));
    }
    let tree = host.output(["read-tree", "-m", "-u", &target.tip, &target.new], None)?;
    if tree.ok {
        return Ok(Ok(()));
    }
    host.run([
        "update-ref",
        "-m",
        "chock apply undone",
        &full,
        &target.tip,
        &target.new,
    ])?;
    let after = snapshot(project, &changed);
    let written: Vec<String> = changed
        .iter()
        .zip(before.iter().zip(&after))
        .filter(|(_, (b, a))| b != a)
        .map(|(p, _)| p.clone())
        .collect();
    let said = visible(
        tree.stderr
            .lines()
            .next()
            .unwrap_or("git read-tree refused"),
    )
    .into_owned();
    Ok(Err(if written.is_empty() {
        format!(
            "git did not move your tree ({said}); your branch was put back and nothing of your tree moved: if your uncommitted work is in the way, commit or stash it, and apply again"
        )
    } else {
        format!(
            "git stopped while moving your tree ({said}) and your branch was put back, but it had already written {}: `git checkout -- PATH` takes each back",
            shown_paths(&written)
        )
    }))
}

/// `commit` made again with `tree` on `parent`, keeping its author and message.
fn replay(host: &Git, commit: &str, tree: &str, parent: &str) -> Result<String, WorkspaceError> {
    let fields = host.run([
        "show",
        "-s",
        "-z",
        "--format=%an%x00%ae%x00%aI%x00%B",
        commit,
    ])?;
    let parts: Vec<String> = fields
        .stdout
        .split(|b| *b == 0)
        .map(|s| String::from_utf8_lossy(s).into_owned())
        .collect();
    let [name, email, date, message, ..] = parts.as_slice() else {
        return Err(WorkspaceError::Refused(format!(
            "cannot read the commit {commit}"
        )));
    };
    let with_author = host.clone().with_env(
        [
            ("GIT_AUTHOR_NAME", name),
            ("GIT_AUTHOR_EMAIL", email),
            ("GIT_AUTHOR_DATE", date),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.clone()))
        .chain(
            identity(host)
                .into_iter()
                .filter(|(k, _)| k.starts_with("GIT_COMMITTER")),
        )
        .collect(),
    );
    with_author.line(["commit-tree", tree, "-p", parent, "-m", message.trim_end()])
}

/// The `workspace.apply` question for `plan`.
pub fn question(plan: &Plan, verdict: &Verdict) -> Question {
    Question {
        action: ACTION.into(),
        decision: verdict.decision,
        summary: plan.summary(),
        detail: plan.detail(),
        rules: verdict.suggestion.iter().cloned().collect(),
    }
}

/// A whole apply: the session commit, the plan, the one `workspace.apply`
/// question through the gate (asked of `asker` for `who`, logged on
/// `route`), and,
/// when it goes ahead, the carry.
pub fn apply(
    workspace: &mut SessionWorkspace,
    policy: &Policy,
    log: &Log,
    route: Route,
    asker: &dyn Asker,
    who: &chock_nix::Who,
) -> Result<(Option<Plan>, Applied), WorkspaceError> {
    // An apply into this project killed half-way is finished or rolled
    // back before another starts (`chock apply` says what it did).
    if let Some(dir) = workspace.dir.parent() {
        journal::recover_dir(dir)?;
    }
    let Some(plan) = workspace.plan_apply(policy, log, route)? else {
        return Ok((None, Applied::Nothing));
    };
    let key = Key {
        agent_kind: who.agent_kind.clone(),
        model: who.model.clone(),
        tool: who.tool.clone(),
        action: ACTION.to_owned(),
    };
    let verdict = policy.decide(&key, Reading::Act);
    let asked = question(&plan, &verdict);
    let settled = chock_gate::settle(route, &verdict, asker, || asked.clone());
    let entry = settled.entry(
        route,
        workspace.meta.project.to_string_lossy(),
        &key,
        &verdict,
        Some(workspace.meta.session.clone()),
    );
    let _ = log.append(&entry);
    if !settled.goes() {
        let sentence = match settled.outcome {
            chock_gate::Outcome::Refused(chock_gate::Refused::PersonSaidNo) => {
                "you said no: nothing was carried; the work stays in the workspace".to_owned()
            }
            chock_gate::Outcome::Refused(chock_gate::Refused::Denied) => format!(
                "{ACTION} answers deny{}: nothing was carried; the work stays in the workspace",
                verdict
                    .decided_by
                    .rule
                    .as_ref()
                    .map(|r| format!(" by {r}"))
                    .unwrap_or_default()
            ),
            _ => format!("{}; nothing was carried", asked.unanswered()),
        };
        return Ok((Some(plan), Applied::Refused { sentence }));
    }
    let applied = workspace.carry(&plan)?;
    Ok((Some(plan), applied))
}
