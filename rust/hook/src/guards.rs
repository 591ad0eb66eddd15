//! The guards of installed policy packages: each a program that reads the
//! call as JSON on its standard input and answers a verdict as JSON.
//!
//! A guard runs in Chock's sandbox (its own namespaces with no network, the
//! project as its workspace, the package's memory bound and a time bound).
//! It answers `{"decision": "allow" | "ask" | "deny", "reason": "..."}` and
//! exits 0. Anything else — a non-zero exit, a signal, silence past its
//! bound, more than [`MAX_ANSWER_BYTES`], or text that is not that object —
//! is a deny that says which. Each answer is a [`Judged`] act, so it is
//! settled by the one gate and written as one decision-log line, with the
//! package id as what decided.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use chock_policy::{DecidedBy, Decision, HookPoint, Layer, Policy, PolicyPackage, Verdict};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::decide::Judged;

/// The most a guard may print on its standard output.
pub const MAX_ANSWER_BYTES: usize = 64 << 10;
/// Where the call is, inside the guard's sandbox.
const CALL_FILE: &str = "chock-call.json";
/// The processes a guard may run at once.
const GUARD_PROCESSES: u64 = 64;
/// The signal that ends a guard past its bound.
const SIGKILL: i32 = 9;
/// The most staged files a pre-commit call lists.
const MAX_STAGED: usize = 10_000;

/// A guard's answer, as it must print it.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Answer {
    decision: Decision,
    #[serde(default)]
    reason: String,
}

/// What a guard said, or why its answer counts as a deny.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GuardAnswer {
    pub decision: Decision,
    /// The guard's reason, or what went wrong with it.
    pub reason: String,
    /// Whether `reason` is the guard's own words (its answer), which may
    /// quote what it read, rather than Chock's account of a failure.
    pub from_guard: bool,
    /// How long it took.
    pub took: Duration,
}

/// The action a guard's answer is logged under: `guard.<id>`.
pub fn action(package: &PolicyPackage) -> String {
    format!("guard.{}", package.id)
}

/// The call a guard reads: the hook point, who asks, the project and what
/// the route knows (the agent's own payload, the staged files of a commit,
/// a push's arguments).
pub fn call(point: HookPoint, agent_kind: &str, project: &Path, detail: Value) -> Value {
    json!({
        "hook": point.as_str(),
        "agent": agent_kind,
        "project": project.display().to_string(),
        "call": detail,
    })
}

/// The most commits of a change under review a CI gate judges.
pub const MAX_COMMITS: usize = 1000;

/// Why what a guard reads of a commit, a push or a change under review
/// could not be gathered from git.
#[derive(Debug, thiserror::Error)]
pub enum GitError {
    #[error("running git: {0}")]
    Run(#[source] std::io::Error),
    #[error("writing to git {args}: {source}")]
    Input {
        args: String,
        source: std::io::Error,
    },
    #[error("git {args} failed: {stderr}")]
    Failed { args: String, stderr: String },
    #[error("git gave an entry without its path: {0}")]
    NoPath(String),
    #[error("git gave an entry Chock cannot read: {0}")]
    Unreadable(String),
    #[error("more than {MAX_STAGED} files in one commit, more than a guard is shown")]
    TooManyFiles,
    #[error("git gave no size for {path}: {line}")]
    NoSize { path: String, line: String },
    #[error(
        "the base `{0}` is not a commit here: fetch it (actions/checkout with `fetch-depth: 0`, or `git fetch origin {0}`)"
    )]
    BaseNotACommit(String),
    #[error(
        "`{0}` and HEAD share no history here: fetch the whole history (actions/checkout with `fetch-depth: 0`)"
    )]
    NoSharedHistory(String),
    #[error("`{base}...HEAD` holds {count} commits, more than the {MAX_COMMITS} a CI gate judges")]
    TooManyCommits { base: String, count: usize },
    #[error(
        "the CI gate judges a change against its base, and none is named: run it on a pull request (GITHUB_BASE_REF, GITHUB_EVENT_PATH) or a merge request (CI_MERGE_REQUEST_DIFF_BASE_SHA), or name it with --base REF"
    )]
    NoBase,
    #[error("{} (GITHUB_EVENT_PATH) cannot be read: {why}", file.display())]
    Event { file: PathBuf, why: String },
}

/// Runs git in `project`, `input` on its standard input; its standard
/// output, or what failed.
fn git_output(project: &Path, args: &[&str], input: Option<&[u8]>) -> Result<Vec<u8>, GitError> {
    use std::io::Write as _;
    let mut child = std::process::Command::new("git")
        .arg("-C")
        .arg(project)
        .args(args)
        .stdin(if input.is_some() {
            std::process::Stdio::piped()
        } else {
            std::process::Stdio::null()
        })
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .map_err(GitError::Run)?;
    if let (Some(bytes), Some(mut stdin)) = (input, child.stdin.take()) {
        stdin.write_all(bytes).map_err(|source| GitError::Input {
            args: args.join(" "),
            source,
        })?;
    }
    let out = child.wait_with_output().map_err(GitError::Run)?;
    if out.status.success() {
        Ok(out.stdout)
    } else {
        Err(GitError::Failed {
            args: args.join(" "),
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_owned(),
        })
    }
}

/// The files a diff in git's `--raw -z --no-abbrev` form adds or changes,
/// each with its blob and size: `[{"path", "blob", "bytes"}]`. A
/// submodule's entry names a commit of another repository and is left out.
fn changed_files(project: &Path, raw: &[u8]) -> Result<Value, GitError> {
    let mut fields = raw.split(|b| *b == 0).filter(|f| !f.is_empty());
    let mut entries = Vec::new();
    while let Some(head) = fields.next() {
        let head = String::from_utf8_lossy(head);
        let path = fields
            .next()
            .ok_or_else(|| GitError::NoPath(head.clone().into_owned()))?;
        // `:old-mode new-mode old-blob new-blob status`
        let parts: Vec<&str> = head.trim_start_matches(':').split(' ').collect();
        let [_, mode, _, blob, _] = parts[..] else {
            return Err(GitError::Unreadable(head.into_owned()));
        };
        if mode == "160000" {
            continue;
        }
        if entries.len() == MAX_STAGED {
            return Err(GitError::TooManyFiles);
        }
        entries.push((String::from_utf8_lossy(path).into_owned(), blob.to_owned()));
    }
    if entries.is_empty() {
        return Ok(Value::Array(Vec::new()));
    }
    let asked: String = entries
        .iter()
        .map(|(_, blob)| format!("{blob}\n"))
        .collect();
    let sizes = git_output(
        project,
        &["cat-file", "--batch-check"],
        Some(asked.as_bytes()),
    )?;
    let sizes = String::from_utf8_lossy(&sizes);
    let mut lines = sizes.lines();
    let mut files = Vec::with_capacity(entries.len());
    for (path, blob) in entries {
        let line = lines.next().unwrap_or("");
        let size = match line.split(' ').collect::<Vec<_>>()[..] {
            [sha, "blob", size] if sha == blob => size.parse::<u64>().ok(),
            _ => None,
        };
        let Some(bytes) = size else {
            return Err(GitError::NoSize {
                path,
                line: line.to_owned(),
            });
        };
        files.push(json!({ "path": path, "blob": blob, "bytes": bytes }));
    }
    Ok(Value::Array(files))
}

/// The diff options every list of changed files is read with.
const RAW: [&str; 5] = [
    "--raw",
    "-z",
    "--no-abbrev",
    "--no-renames",
    "--diff-filter=ACMRT",
];

/// The files a commit would add or change, each with its staged blob and
/// size: `[{"path": ..., "blob": ..., "bytes": ...}]`, from `git diff --cached`.
pub fn staged_files(project: &Path) -> Result<Value, GitError> {
    let mut args = vec!["diff", "--cached"];
    args.extend(RAW);
    let raw = git_output(project, &args, None)?;
    changed_files(project, &raw)
}

/// The files `commit` adds or changes against its first parent (all of
/// them for a root commit), as [`staged_files`] lists them.
pub fn commit_files(project: &Path, commit: &str) -> Result<Value, GitError> {
    let mut args = vec![
        "diff-tree",
        "-r",
        "--root",
        "-m",
        "--first-parent",
        "--no-commit-id",
    ];
    args.extend(RAW);
    args.push(commit);
    let raw = git_output(project, &args, None)?;
    changed_files(project, &raw)
}

/// The change a CI gate judges: what `base...HEAD` adds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Review {
    /// The base as it was named (`--base`, or the CI's variables).
    pub base: String,
    /// Where the change's history meets the base's.
    pub merge_base: String,
    /// The commit under review.
    pub head: String,
    /// Its commits not in the base, oldest first.
    pub commits: Vec<String>,
}

/// Reads the change `base...HEAD` of `project`: a base git cannot find, or
/// one with no history shared with HEAD, is an error saying to fetch it.
pub fn review(project: &Path, base: &str) -> Result<Review, GitError> {
    let one = |args: &[&str]| -> Result<String, GitError> {
        Ok(String::from_utf8_lossy(&git_output(project, args, None)?)
            .trim()
            .to_owned())
    };
    let rev = format!("{base}^{{commit}}");
    let base_commit = one(&["rev-parse", "--verify", "--quiet", &rev])
        .map_err(|_| GitError::BaseNotACommit(base.to_owned()))?;
    let head = one(&["rev-parse", "--verify", "HEAD^{commit}"])?;
    let merge_base = one(&["merge-base", &base_commit, &head])
        .map_err(|_| GitError::NoSharedHistory(base.to_owned()))?;
    let range = format!("{merge_base}..{head}");
    let listed = one(&["rev-list", "--reverse", &range])?;
    let commits: Vec<String> = listed.lines().map(str::to_owned).collect();
    if commits.len() > MAX_COMMITS {
        return Err(GitError::TooManyCommits {
            base: base.to_owned(),
            count: commits.len(),
        });
    }
    Ok(Review {
        base: base.to_owned(),
        merge_base,
        head,
        commits,
    })
}

/// Runs `package`'s guard on `call` with `project` as its workspace.
pub fn run(project: &Path, package: &PolicyPackage, call: &Value) -> GuardAnswer {
    let started = Instant::now();
    let (decision, reason, from_guard) = match run_bounded(project, package, call) {
        Ok((decision, reason)) => (decision, reason, true),
        Err(why) => (Decision::Deny, why.to_string(), false),
    };
    GuardAnswer {
        decision,
        reason,
        from_guard,
        took: started.elapsed(),
    }
}

/// Why a guard gave no answer; the words are the reason of the deny it
/// stands for.
#[derive(Debug, thiserror::Error)]
pub enum GuardError {
    #[error("the policy `{0}` names no guard")]
    NoGuard(String),
    #[error("its guard {} cannot be found: {source}", program.display())]
    NotFound {
        program: PathBuf,
        source: std::io::Error,
    },
    #[error("no scratch folder for the guard: {0}")]
    NoScratch(#[source] std::io::Error),
    #[error("its sandbox could not be laid out: {0}")]
    Layout(#[source] chock_sandbox::SandboxError),
    #[error("its sandbox could not be made: {0}")]
    Sandbox(#[source] chock_sandbox::SandboxError),
    #[error("the project cannot be read: {0}")]
    Project(#[source] std::io::Error),
    #[error("its guard could not start: {0}")]
    Start(#[source] chock_sandbox::SandboxError),
    #[error("its guard cannot be bounded: {0}")]
    Unbounded(#[source] chock_sandbox::SandboxError),
    #[error("its guard gave no answer within its bound of {0} ms")]
    TimedOut(u64),
    #[error("its guard failed: {0}")]
    Failed(#[source] chock_sandbox::SandboxError),
    #[error("its guard passed its memory bound of {0} bytes")]
    OverMemory(u64),
    /// A nonzero exit, with the first line of what it printed on stderr.
    #[error("its guard failed (exit {code}): {stderr}")]
    Exit { code: i32, stderr: String },
    #[error("its guard was killed by signal {0}")]
    Killed(i32),
    #[error("its guard printed more than {MAX_ANSWER_BYTES} bytes")]
    TooLong,
    #[error(
        "its guard did not answer `{{\"decision\": \"allow\" | \"ask\" | \"deny\", \"reason\": \"...\"}}` ({0})"
    )]
    NoAnswer(#[source] serde_json::Error),
}

fn run_bounded(
    project: &Path,
    package: &PolicyPackage,
    call: &Value,
) -> Result<(Decision, String), GuardError> {
    let guard = package
        .guard
        .as_ref()
        .ok_or_else(|| GuardError::NoGuard(package.id.clone()))?;
    let program = guard
        .program
        .canonicalize()
        .map_err(|source| GuardError::NotFound {
            program: guard.program.clone(),
            source,
        })?;
    let cache = tempfile::tempdir().map_err(GuardError::NoScratch)?;
    let mut layout = chock_sandbox::resolve_layout(
        project,
        cache.path(),
        &chock_sandbox::Toolchain::Host,
        16 << 20,
    )
    .map_err(GuardError::Layout)?;
    layout
        .etc_files
        .push((CALL_FILE.to_owned(), call.to_string().into_bytes()));
    let mut limits = chock_sandbox::Limits::for_this_machine()
        .lowered(Some(GUARD_PROCESSES), Some(guard.memory_bytes));
    limits.cpu_seconds = guard.timeout_ms.div_ceil(1000).max(1);
    let sandbox = chock_sandbox::Sandbox::new(layout, limits, chock_sandbox::WriteExecute::Refused)
        .map_err(GuardError::Sandbox)?;
    let command = chock_sandbox::Command {
        program: PathBuf::from("/bin/sh"),
        args: vec![
            "sh".into(),
            "-c".into(),
            format!("exec \"$0\" < /etc/{CALL_FILE}").into(),
            program.into_os_string(),
        ],
        env: vec![
            (
                OsString::from("PATH"),
                OsString::from("/usr/local/bin:/usr/bin:/bin"),
            ),
            (OsString::from("CHOCK_POLICY"), OsString::from(&package.id)),
        ],
        cwd: project.canonicalize().map_err(GuardError::Project)?,
        stdio: chock_sandbox::Stdio::Capture {
            limit: MAX_ANSWER_BYTES + 1,
        },
    };
    let running = sandbox.spawn(&command).map_err(GuardError::Start)?;
    let handle = running.signal_handle().map_err(GuardError::Unbounded)?;
    let bound = Duration::from_millis(guard.timeout_ms);
    let (done, finished) = mpsc::channel::<()>();
    let watcher = std::thread::spawn(move || {
        let overran = finished.recv_timeout(bound) == Err(mpsc::RecvTimeoutError::Timeout);
        if overran {
            let _ = handle.signal(SIGKILL);
        }
        overran
    });
    let waited = running.wait();
    let _ = done.send(());
    let overran = watcher.join().unwrap_or(true);
    if overran {
        return Err(GuardError::TimedOut(guard.timeout_ms));
    }
    let finished = waited.map_err(GuardError::Failed)?;
    if finished.cgroup.is_some_and(|c| c.oom_kills > 0) {
        return Err(GuardError::OverMemory(guard.memory_bytes));
    }
    match finished.exit {
        chock_sandbox::Exit::Code(0) => {}
        chock_sandbox::Exit::Code(code) => {
            return Err(GuardError::Exit {
                code,
                stderr: first_line(&finished.stderr),
            });
        }
        chock_sandbox::Exit::Signal(signal) => return Err(GuardError::Killed(signal)),
    }
    if finished.truncated || finished.stdout.len() > MAX_ANSWER_BYTES {
        return Err(GuardError::TooLong);
    }
    read_answer(&finished.stdout)
}

/// Reads what a guard printed as its answer; anything but one
/// `{"decision": ..., "reason": ...}` object is an error saying so.
pub fn read_answer(bytes: &[u8]) -> Result<(Decision, String), GuardError> {
    serde_json::from_slice::<Answer>(bytes)
        .map(|a| (a.decision, a.reason))
        .map_err(GuardError::NoAnswer)
}

fn first_line(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes)
        .lines()
        .next()
        .unwrap_or("")
        .chars()
        .take(200)
        .collect()
}

/// A guard's answer as the verdict the gate settles: the package's layer,
/// its id, its guard program as the file, capped at the package's rollout
/// stage (and what the stage held back said).
pub fn verdict(package: &PolicyPackage, answer: &GuardAnswer) -> Verdict {
    let decision = package.rollout.cap(answer.decision);
    let held = (decision != answer.decision).then(|| chock_policy::Held {
        policy: package.id.clone(),
        stage: package.rollout,
        would: answer.decision,
    });
    Verdict {
        decision,
        decided_by: DecidedBy {
            layer: Layer::Policy,
            file: package.guard.as_ref().map(|g| g.program.clone()),
            line: None,
            rule: None,
            policy: Some(package.id.clone()),
            held,
            identity: None,
        },
        suggestion: None,
    }
}

/// Runs the guard of every package of `policy` that applies at `point`,
/// each answer one act.
pub fn judge(policy: &Policy, project: &Path, point: HookPoint, call: &Value) -> Vec<Judged> {
    policy
        .packages()
        .iter()
        .filter(|p| p.guard.is_some() && p.applies_at(point))
        .map(|package| judged(package, run(project, package, call), None))
        .collect()
}

/// A guard's answer as one act about `about` (a commit under review). The
/// guard's own reason is told but never logged, since it may quote what
/// the guard read; Chock's account of a failed guard is the subject.
fn judged(package: &PolicyPackage, answer: GuardAnswer, about: Option<String>) -> Judged {
    let verdict = verdict(package, &answer);
    let (subject, said) = match (answer.from_guard, about) {
        (_, about) if answer.reason.is_empty() => (about, None),
        (true, about) => (about, Some(answer.reason)),
        (false, Some(about)) => (Some(format!("{about}: {}", answer.reason)), None),
        (false, None) => (Some(answer.reason), None),
    };
    Judged {
        action: action(package),
        subject,
        verdict,
        unnamed: None,
        said,
    }
}

/// Runs the guards that apply to a git hook. Outside CI a commit's guards
/// read its staged files, a push's its arguments. The CI gate's run
/// (`review`) judges the change under review: each of its commits is put
/// to the guards as its pre-commit would have seen it, and the push's
/// guards read the whole range.
pub fn git(
    policy: &Policy,
    project: &Path,
    hook: crate::sync::GitHook,
    review: Option<&Review>,
    args: &[String],
) -> Vec<Judged> {
    let point = match (review, hook) {
        (Some(_), _) => HookPoint::Ci,
        (None, crate::sync::GitHook::PreCommit) => HookPoint::PreCommit,
        (None, crate::sync::GitHook::PrePush) => HookPoint::PrePush,
    };
    let guarded: Vec<&PolicyPackage> = policy
        .packages()
        .iter()
        .filter(|p| p.guard.is_some() && p.applies_at(point))
        .collect();
    if guarded.is_empty() {
        return Vec::new();
    }
    // Each call a guard reads, with what its lines are about.
    let calls: Result<Vec<(Option<String>, Value)>, GitError> = match (review, hook) {
        (None, crate::sync::GitHook::PreCommit) => {
            staged_files(project).map(|s| vec![(None, json!({ "staged": s }))])
        }
        (None, crate::sync::GitHook::PrePush) => Ok(vec![(None, json!({ "args": args }))]),
        (Some(review), crate::sync::GitHook::PreCommit) => review
            .commits
            .iter()
            .map(|commit| {
                commit_files(project, commit).map(|s| {
                    (
                        Some(commit.clone()),
                        json!({ "staged": s, "commit": commit }),
                    )
                })
            })
            .collect(),
        (Some(review), crate::sync::GitHook::PrePush) => Ok(vec![(
            Some(format!("{}..{}", review.merge_base, review.head)),
            json!({
                "args": args,
                "base": review.merge_base,
                "head": review.head,
                "commits": review.commits,
            }),
        )]),
    };
    match calls {
        Ok(calls) => calls
            .into_iter()
            .flat_map(|(about, detail)| {
                let call = call(point, "git", project, detail);
                guarded
                    .iter()
                    .map(|package| judged(package, run(project, package, &call), about.clone()))
                    .collect::<Vec<_>>()
            })
            .collect(),
        Err(why) => guarded
            .iter()
            .map(|package| {
                let answer = GuardAnswer {
                    decision: Decision::Deny,
                    reason: format!("what the guard reads could not be gathered: {why}"),
                    from_guard: false,
                    took: Duration::ZERO,
                };
                judged(package, answer, None)
            })
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A guard's refusal is capped at its package's rollout stage, and
    /// what was held back is named; in force it is the guard's own answer.
    #[test]
    fn a_guard_s_answer_is_capped_at_its_package_s_stage() {
        let dir = Path::new("/p/.agents/policies/big");
        for (stage, decision) in [
            ("observe", Decision::Allow),
            ("ask", Decision::Ask),
            ("enforce", Decision::Deny),
        ] {
            let text = format!(
                ".{{ .id = \"big\", .version = \"1\", .summary = \"s\", .hooks = .{{ \"pre-commit\" }}, .rollout = .{stage}, .guard = .{{ .program = \"guard.sh\" }} }}"
            );
            let package =
                chock_policy::package::read_manifest(dir, &dir.join("manifest.zon"), &text)
                    .expect("manifest");
            let answer = GuardAnswer {
                decision: Decision::Deny,
                reason: "big.bin is over 5 MB".to_owned(),
                from_guard: true,
                took: Duration::ZERO,
            };
            let verdict = verdict(&package, &answer);
            assert_eq!(verdict.decision, decision, "{stage}");
            let held = verdict.decided_by.held.map(|h| (h.stage, h.would));
            if stage == "enforce" {
                assert_eq!(held, None);
            } else {
                assert_eq!(held, Some((package.rollout, Decision::Deny)), "{stage}");
            }
        }
    }
}
