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

/// The files a commit would add or change, each with its staged size:
/// `[{"path": ..., "bytes": ...}]`, from `git diff --cached`.
pub fn staged_files(project: &Path) -> Result<Value, String> {
    let git = |args: &[&str]| {
        std::process::Command::new("git")
            .arg("-C")
            .arg(project)
            .args(args)
            .output()
            .map_err(|e| format!("running git: {e}"))
            .and_then(|out| {
                if out.status.success() {
                    Ok(out.stdout)
                } else {
                    Err(format!(
                        "git {} failed: {}",
                        args.join(" "),
                        String::from_utf8_lossy(&out.stderr).trim()
                    ))
                }
            })
    };
    let names = git(&[
        "diff",
        "--cached",
        "--name-only",
        "-z",
        "--diff-filter=ACMR",
    ])?;
    let mut files = Vec::new();
    for name in names.split(|b| *b == 0).filter(|n| !n.is_empty()) {
        if files.len() == MAX_STAGED {
            return Err(format!(
                "more than {MAX_STAGED} files are staged, more than a guard is shown"
            ));
        }
        let name = String::from_utf8_lossy(name).into_owned();
        let size = git(&["cat-file", "-s", &format!(":{name}")])?;
        let bytes: u64 = String::from_utf8_lossy(&size)
            .trim()
            .parse()
            .map_err(|_| format!("git gave no size for {name}"))?;
        files.push(json!({ "path": name, "bytes": bytes }));
    }
    Ok(Value::Array(files))
}

/// Runs `package`'s guard on `call` with `project` as its workspace.
pub fn run(project: &Path, package: &PolicyPackage, call: &Value) -> GuardAnswer {
    let started = Instant::now();
    let (decision, reason) = match run_bounded(project, package, call) {
        Ok(answer) => answer,
        Err(why) => (Decision::Deny, why),
    };
    GuardAnswer {
        decision,
        reason,
        took: started.elapsed(),
    }
}

fn run_bounded(
    project: &Path,
    package: &PolicyPackage,
    call: &Value,
) -> Result<(Decision, String), String> {
    let guard = package
        .guard
        .as_ref()
        .ok_or_else(|| format!("the policy `{}` names no guard", package.id))?;
    let program = guard
        .program
        .canonicalize()
        .map_err(|e| format!("its guard {} cannot be found: {e}", guard.program.display()))?;
    let cache = tempfile::tempdir().map_err(|e| format!("no scratch folder for the guard: {e}"))?;
    let mut layout = chock_sandbox::resolve_layout(
        project,
        cache.path(),
        &chock_sandbox::Toolchain::Host,
        16 << 20,
    )
    .map_err(|e| format!("its sandbox could not be laid out: {e}"))?;
    layout
        .etc_files
        .push((CALL_FILE.to_owned(), call.to_string().into_bytes()));
    let mut limits = chock_sandbox::Limits::for_this_machine()
        .lowered(Some(GUARD_PROCESSES), Some(guard.memory_bytes));
    limits.cpu_seconds = guard.timeout_ms.div_ceil(1000).max(1);
    let sandbox = chock_sandbox::Sandbox::new(layout, limits, chock_sandbox::WriteExecute::Refused)
        .map_err(|e| format!("its sandbox could not be made: {e}"))?;
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
        cwd: project
            .canonicalize()
            .map_err(|e| format!("the project cannot be read: {e}"))?,
        stdio: chock_sandbox::Stdio::Capture {
            limit: MAX_ANSWER_BYTES + 1,
        },
    };
    let running = sandbox
        .spawn(&command)
        .map_err(|e| format!("its guard could not start: {e}"))?;
    let handle = running
        .signal_handle()
        .map_err(|e| format!("its guard cannot be bounded: {e}"))?;
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
        return Err(format!(
            "its guard gave no answer within its bound of {} ms",
            guard.timeout_ms
        ));
    }
    let finished = waited.map_err(|e| format!("its guard failed: {e}"))?;
    if finished.cgroup.is_some_and(|c| c.oom_kills > 0) {
        return Err(format!(
            "its guard passed its memory bound of {} bytes",
            guard.memory_bytes
        ));
    }
    match finished.exit {
        chock_sandbox::Exit::Code(0) => {}
        chock_sandbox::Exit::Code(code) => {
            return Err(format!(
                "its guard failed (exit {code}): {}",
                first_line(&finished.stderr)
            ));
        }
        chock_sandbox::Exit::Signal(signal) => {
            return Err(format!("its guard was killed by signal {signal}"));
        }
    }
    if finished.truncated || finished.stdout.len() > MAX_ANSWER_BYTES {
        return Err(format!(
            "its guard printed more than {MAX_ANSWER_BYTES} bytes"
        ));
    }
    read_answer(&finished.stdout)
}

/// Reads what a guard printed as its answer; anything but one
/// `{"decision": ..., "reason": ...}` object is an error saying so.
pub fn read_answer(bytes: &[u8]) -> Result<(Decision, String), String> {
    serde_json::from_slice::<Answer>(bytes)
        .map(|a| (a.decision, a.reason))
        .map_err(|e| {
            format!(
                "its guard did not answer `{{\"decision\": \"allow\" | \"ask\" | \"deny\", \"reason\": \"...\"}}` ({e})"
            )
        })
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
/// its id, its guard program as the file.
pub fn verdict(package: &PolicyPackage, answer: &GuardAnswer) -> Verdict {
    Verdict {
        decision: answer.decision,
        decided_by: DecidedBy {
            layer: Layer::Policy,
            file: package.guard.as_ref().map(|g| g.program.clone()),
            line: None,
            rule: None,
            policy: Some(package.id.clone()),
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
        .map(|package| {
            let answer = run(project, package, call);
            Judged {
                action: action(package),
                subject: (!answer.reason.is_empty()).then(|| answer.reason.clone()),
                verdict: verdict(package, &answer),
                unnamed: None,
            }
        })
        .collect()
}

/// Runs the guards that apply to a git hook (`ci`: the CI gate's run of
/// it): a commit's guards read its staged files, a push's its arguments.
pub fn git(
    policy: &Policy,
    project: &Path,
    hook: crate::sync::GitHook,
    ci: bool,
    args: &[String],
) -> Vec<Judged> {
    let point = match (ci, hook) {
        (true, _) => HookPoint::Ci,
        (false, crate::sync::GitHook::PreCommit) => HookPoint::PreCommit,
        (false, crate::sync::GitHook::PrePush) => HookPoint::PrePush,
    };
    let any = policy
        .packages()
        .iter()
        .any(|p| p.guard.is_some() && p.applies_at(point));
    if !any {
        return Vec::new();
    }
    let detail = match hook {
        crate::sync::GitHook::PreCommit => staged_files(project).map(|s| json!({ "staged": s })),
        crate::sync::GitHook::PrePush => Ok(json!({ "args": args })),
    };
    match detail {
        Ok(detail) => judge(policy, project, point, &call(point, "git", project, detail)),
        Err(why) => policy
            .packages()
            .iter()
            .filter(|p| p.guard.is_some() && p.applies_at(point))
            .map(|package| {
                let answer = GuardAnswer {
                    decision: Decision::Deny,
                    reason: format!("what the guard reads could not be gathered: {why}"),
                    took: Duration::ZERO,
                };
                Judged {
                    action: action(package),
                    subject: Some(answer.reason.clone()),
                    verdict: verdict(package, &answer),
                    unnamed: None,
                }
            })
            .collect(),
    }
}
