//! One `chock hook` call from start to answer, for an agent and for a git hook.
//!
//! The order is the point: the stop files first (a stop holds even when
//! nothing else loads), then the payload, then the policy, then every act
//! named and answered, then one log line per act, then the reply. Anything
//! that goes wrong on the way refuses the call; nothing fails open.

use std::ffi::OsString;
use std::io::Read;
use std::path::{Path, PathBuf};

use chock_gate::{Outcome, Refused, Route, Settled};
use chock_log::{AnsweredBy, Entry};
use chock_policy::{
    Answer, Config, Decision, HookPoint, Key, LoadOptions, Policy, PolicyError, Reading,
};

use crate::agent::{self, Agent};
use crate::answer::{self, HookAnswer, Reply};
use crate::decide::{self, Asker, Judged};
use crate::guards;
use crate::naming::{self, Place};
use crate::overrides;
use crate::payload;
use crate::project;
use crate::stop::{self, InForce};
use crate::sync::GitHook;

/// The route every line this crate writes carries.
pub const ROUTE: &str = "hook";

/// The largest payload read; a bigger one is refused, not truncated.
const MAX_PAYLOAD_BYTES: u64 = 64 << 20;

/// The process a hook runs in: its directory and its environment.
pub struct Env<'a> {
    /// The hook process's working directory.
    pub cwd: PathBuf,
    /// Looks up an environment variable.
    pub var: &'a dyn Fn(&str) -> Option<OsString>,
}

impl Env<'_> {
    fn home(&self) -> Option<PathBuf> {
        (self.var)("HOME")
            .map(PathBuf::from)
            .filter(|p| p.is_absolute())
    }

    fn state_dir(&self) -> Option<PathBuf> {
        stop::state_dir_from(self.var).ok()
    }

    /// The Nix store: `NIX_STORE_DIR` when it is set to an absolute path.
    fn store_dir(&self) -> PathBuf {
        (self.var)("NIX_STORE_DIR")
            .map(PathBuf::from)
            .filter(|p| p.is_absolute())
            .unwrap_or_else(|| PathBuf::from("/nix/store"))
    }
}

/// Answers one agent tool call whose payload is on `input`.
pub fn agent_hook(
    agent: Agent,
    explicit_project: Option<&Path>,
    input: &mut dyn Read,
    env: &Env<'_>,
) -> Reply {
    let project = project::resolve(explicit_project, Some(agent), env.var, &env.cwd);
    let log = Logger::new(&project, agent.name());
    if let Some(stopped) = stop::in_force(&project, env.state_dir().as_deref()) {
        log.stopped(&stopped, None);
        // The payload is not read, only drained: an agent still writing it
        // to a hook that has exited would see a broken pipe, not the refusal.
        drain(input);
        return answer::reply(agent, HookAnswer::Deny, &stopped.reason());
    }
    let read = read_payload(input).and_then(|text| payload::read(agent, &text));
    let payload::Payload {
        call,
        permission_mode: mode,
        json,
    } = match read {
        Ok(read) => read,
        Err(error) => {
            let reason = error.to_string();
            log.failure(&reason, None, &Config::default());
            return answer::failure(agent, &reason);
        }
    };
    let tool = Some(call.tool.as_str());
    let policy = match load_policy(&project) {
        Ok(policy) => policy,
        Err(error) => {
            let reason =
                format!("the policy could not be loaded, so every call is refused: {error}");
            log.failure(&reason, tool, &Config::default());
            return answer::failure(agent, &reason);
        }
    };
    let config = policy.config();
    let home = env.home();
    let store_dir = env.store_dir();
    let place = Place::on_host(
        &project,
        home.as_deref(),
        (env.var)("CDPATH").is_some_and(|v| !v.is_empty()),
        &store_dir,
    );
    let named = naming::name(&call, agent, &place);
    // A call to Chock's own tool server is decided there, once: the
    // server asks through the client or `chock approve` itself.
    let own = agent::chock_servers(&project, home.as_deref());
    let (to_server, acts): (Vec<_>, Vec<_>) = named
        .into_iter()
        .partition(|act| agent::for_own_server(act, &own));
    if !to_server.is_empty() && acts.is_empty() {
        return answer::reply(
            agent,
            HookAnswer::Allow,
            &agent::through_to_server(&to_server),
        );
    }
    let asker = Asker {
        agent_kind: agent.name(),
        tool,
        model: call.model.as_deref(),
    };
    let mut judged = decide::judge(&policy, &asker, acts);
    let call_json = guards::call(HookPoint::Tool, agent.name(), &project, json);
    judged.extend(guards::judge(
        &policy,
        &project,
        HookPoint::Tool,
        &call_json,
    ));
    let can_ask = answer::can_ask(agent, &call.event, &call.tool, mode.as_deref());
    let ended = decide::Call::end(judged, can_ask);
    log.ended(&ended, &asker, config);
    answer::reply(agent, ended.answer(), &ended.reason(agent.title()))
}

/// Reads and discards standard input, up to the payload limit.
fn drain(input: &mut dyn Read) {
    let _ = std::io::copy(&mut input.take(MAX_PAYLOAD_BYTES), &mut std::io::sink());
}

fn read_payload(input: &mut dyn Read) -> Result<String, crate::HookError> {
    let mut text = String::new();
    let read = input
        .take(MAX_PAYLOAD_BYTES + 1)
        .read_to_string(&mut text)
        .map_err(crate::HookError::Stdin)?;
    if read as u64 > MAX_PAYLOAD_BYTES {
        return Err(crate::HookError::Stdin(std::io::Error::other(format!(
            "the payload is larger than {} MiB",
            MAX_PAYLOAD_BYTES >> 20
        ))));
    }
    Ok(text)
}

fn load_policy(project: &Path) -> Result<Policy, PolicyError> {
    Policy::load(&LoadOptions::from_env(project, Vec::new())?)
}

/// How a git hook call ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GateReply {
    /// Whether git may go on.
    pub passed: bool,
    /// What to print on standard error.
    pub message: String,
}

/// What the gate needs besides the hook.
pub struct Gate<'a> {
    /// The git hook being answered.
    pub hook: GitHook,
    /// `--project`, when given.
    pub project: Option<&'a Path>,
    /// Running in CI, where nobody can be asked.
    pub ci: bool,
    /// What git passed the hook (pre-push: the remote's name and URL).
    pub args: &'a [String],
    /// `--base`: what the CI gate's change under review is measured from
    /// (else the CI's own variables name it).
    pub base: Option<&'a str>,
}

/// The most bytes of a CI's event file read for the pull request's base.
const MAX_EVENT_BYTES: u64 = 64 << 20;

/// The base of the change a CI gate judges: `--base`, else GitHub's pull
/// request (its event file's `pull_request.base.sha`, then
/// `GITHUB_BASE_REF` as `origin/<ref>`), else GitLab's merge request
/// (`CI_MERGE_REQUEST_DIFF_BASE_SHA`). None of them is an error saying so.
pub fn review_base(
    flag: Option<&str>,
    var: &dyn Fn(&str) -> Option<OsString>,
) -> Result<String, guards::GitError> {
    if let Some(base) = flag {
        return Ok(base.to_owned());
    }
    let set = |name: &str| {
        var(name)
            .map(|v| v.to_string_lossy().trim().to_owned())
            .filter(|v| !v.is_empty())
    };
    if let Some(event) = set("GITHUB_EVENT_PATH")
        && let Some(sha) = event_base(Path::new(&event))?
    {
        return Ok(sha);
    }
    if let Some(branch) = set("GITHUB_BASE_REF") {
        return Ok(format!("origin/{branch}"));
    }
    if let Some(sha) = set("CI_MERGE_REQUEST_DIFF_BASE_SHA") {
        return Ok(sha);
    }
    Err(guards::GitError::NoBase)
}

/// The pull request's base commit in GitHub's event file, or `None` for an
/// event of another kind (a push).
fn event_base(path: &Path) -> Result<Option<String>, guards::GitError> {
    use std::io::Read as _;
    let unreadable = |e: &dyn std::fmt::Display| guards::GitError::Event {
        file: path.to_path_buf(),
        why: e.to_string(),
    };
    let file = std::fs::File::open(path).map_err(|e| unreadable(&e))?;
    let mut bytes = Vec::new();
    file.take(MAX_EVENT_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| unreadable(&e))?;
    if bytes.len() as u64 > MAX_EVENT_BYTES {
        return Err(unreadable(&format!("it is over {MAX_EVENT_BYTES} bytes")));
    }
    let event: serde_json::Value = serde_json::from_slice(&bytes).map_err(|e| unreadable(&e))?;
    match event.pointer("/pull_request/base/sha") {
        None => Ok(None),
        Some(serde_json::Value::String(sha)) if !sha.is_empty() => Ok(Some(sha.clone())),
        Some(other) => Err(unreadable(&format!(
            "its pull_request.base.sha is {other}, not a commit"
        ))),
    }
}

/// Answers a git hook under `git.commit` or `git.push`. `ask_person` puts a
/// question to the person at the terminal: `Some(yes)`, or `None` when no
/// person can be reached.
pub fn git_gate(
    gate: &Gate<'_>,
    env: &Env<'_>,
    ask_person: &mut dyn FnMut(&str) -> Option<bool>,
) -> GateReply {
    let project = project::resolve(gate.project, None, env.var, &env.cwd);
    let log = Logger::git(&project, gate.ci);
    let subject = gate.args.first().cloned();
    if let Some(stopped) = stop::in_force(&project, env.state_dir().as_deref()) {
        log.stopped(&stopped, Some(gate.hook.name()));
        return GateReply {
            passed: false,
            message: stopped.reason(),
        };
    }
    let policy = match load_policy(&project) {
        Ok(policy) => policy,
        Err(error) => {
            let reason = format!(
                "the policy could not be loaded, so {} is refused: {error}",
                gate.hook.action()
            );
            log.failure(&reason, Some(gate.hook.name()), &Config::default());
            return GateReply {
                passed: false,
                message: reason,
            };
        }
    };
    let config = policy.config();
    let review = if gate.ci {
        match review_base(gate.base, env.var).and_then(|base| guards::review(&project, &base)) {
            Ok(review) => Some(review),
            Err(why) => {
                let reason = format!("the CI gate refuses {}: {why}", gate.hook.action());
                log.failure(&reason, Some(gate.hook.name()), config);
                return GateReply {
                    passed: false,
                    message: reason,
                };
            }
        }
    } else {
        None
    };
    let asker = Asker {
        agent_kind: "git",
        tool: Some(gate.hook.name()),
        model: None,
    };
    let key = Key {
        agent_kind: asker.agent_kind.to_owned(),
        model: None,
        tool: Some(gate.hook.name().to_owned()),
        action: gate.hook.action().to_owned(),
    };
    let verdict = policy.decide(&key, Reading::Act);
    let judged = Judged {
        action: key.action,
        subject: subject.clone(),
        verdict,
        unnamed: None,
        said: None,
    };
    // A guard that answers lower than the rules decides; the rules' act
    // and every other guard's answer is a line of its own.
    let mut guarded = guards::git(&policy, &project, gate.hook, review.as_ref(), gate.args);
    let lowest = chock_gate::strictest(
        guarded
            .iter()
            .enumerate()
            .filter(|(_, g)| g.verdict.decision < judged.verdict.decision),
        |(_, g)| g.verdict.decision,
    )
    .map(|(i, _)| i);
    let judged = match lowest {
        Some(i) => {
            let guard = guarded.remove(i);
            guarded.insert(0, judged);
            guard
        }
        None => judged,
    };
    for other in &guarded {
        log.write(
            other,
            &asker,
            &decide::settle(&other.verdict, false),
            config,
        );
    }
    let overridden =
        !gate.ci && used_override(&judged, &project, env, gate, ask_person, &log, config);
    let mut judged = judged;
    if overridden {
        // The person's yes, given above, is this act's answer.
        judged.verdict.decision = Decision::Ask;
    }
    let verdict = judged.verdict.clone();
    let question = format!(
        "Chock: allow {}{}? The policy asks a person. [y/N] ",
        gate.hook.action(),
        subject
            .as_deref()
            .map(|s| format!(" to {s}"))
            .unwrap_or_default()
    );
    // In CI the pull request's reviewer is the person a question goes to;
    // at a terminal, the person there.
    let person = |_: &chock_policy::Question| {
        if gate.ci {
            return Answer::Handed;
        }
        if overridden {
            return Answer::Yes;
        }
        match ask_person(&question) {
            Some(true) => Answer::Yes,
            Some(false) => Answer::No,
            None => Answer::Unavailable,
        }
    };
    let person = std::cell::RefCell::new(person);
    let settled = chock_gate::settle(
        log.route,
        &verdict,
        &|q: &chock_policy::Question| (person.borrow_mut())(q),
        || chock_policy::Question {
            action: gate.hook.action().to_owned(),
            decision: verdict.decision,
            summary: String::new(),
            detail: Vec::new(),
            rules: verdict.suggestion.iter().cloned().collect(),
        },
    );
    let action = gate.hook.action();
    let (passed, message) = match settled.outcome {
        // A package held back by its rollout stage is a warning, told.
        Outcome::Go | Outcome::NoObjection => {
            let held = decide::held_sentence([&judged]);
            (true, held.trim_start().to_owned())
        }
        Outcome::Prompt => (
            true,
            format!(
                "chock: {action} would ask a person; in CI the pull request's reviewer is that person"
            ),
        ),
        Outcome::Refused(Refused::PersonSaidNo) => {
            (false, format!("chock: {action} refused by you"))
        }
        Outcome::Refused(Refused::Nobody | Refused::Cancelled) => (
            false,
            format!(
                "chock: {action} needs a person's yes, and no terminal is there to ask.{}",
                decide::change_sentence(&verdict)
            ),
        ),
        // A git hook has no reviewer agent: the last two never come here.
        Outcome::Refused(
            Refused::Denied
            | Refused::NoReviewer
            | Refused::ReviewerSaidNo
            | Refused::ReviewFailed
            | Refused::Stopped,
        ) => {
            let call = decide::Call {
                acts: vec![decide::Ended {
                    judged: judged.clone(),
                    settled,
                }],
            };
            (false, format!("chock: {}", call.reason("git")))
        }
    };
    log.write(&judged, &asker, &settled, config);
    GateReply { passed, message }
}

/// Whether a person's one-time override lets `judged` through: a refusal
/// by a policy package, at a person's git hook, with an override of that
/// package armed (`chock override`) is put to the person at the terminal;
/// their yes uses the override up (one line, `policy.override.<id>`,
/// answered by the person). With no terminal, or a no, it is left armed
/// and the refusal stands.
fn used_override(
    judged: &Judged,
    project: &Path,
    env: &Env<'_>,
    gate: &Gate<'_>,
    ask_person: &mut dyn FnMut(&str) -> Option<bool>,
    log: &Logger,
    config: &Config,
) -> bool {
    let by = &judged.verdict.decided_by;
    let (Some(id), Some(state)) = (by.policy.as_deref(), env.state_dir()) else {
        return false;
    };
    if judged.verdict.decision >= Decision::Ask || !overrides::armed(&state, project, id) {
        return false;
    }
    let question = format!(
        "Chock: the policy `{id}` refuses {}. You armed a one-time override of it: use it now? [y/N] ",
        gate.hook.action()
    );
    if ask_person(&question) != Some(true) || !overrides::take(&state, project, id) {
        return false;
    }
    let entry = log.entry(
        &overrides::action(id),
        Some(gate.hook.name()),
        (Decision::Allow, AnsweredBy::Person),
        Some(judged.action.clone()),
    );
    log.append(entry, config);
    true
}

/// Writes this crate's lines to the decision log. A logging failure never
/// changes an answer (chock-log reports it on stderr once).
pub(crate) struct Logger {
    project: String,
    agent_kind: &'static str,
    route: Route,
}

impl Logger {
    pub(crate) fn new(project: &Path, agent_kind: &'static str) -> Logger {
        Logger {
            project: project.display().to_string(),
            agent_kind,
            route: Route::Hook,
        }
    }

    /// The lines of a git hook: route `git`, or `ci` when the CI gate runs it.
    fn git(project: &Path, ci: bool) -> Logger {
        Logger {
            route: if ci { Route::Ci } else { Route::Git },
            ..Logger::new(project, "git")
        }
    }

    fn append(&self, entry: Entry, config: &Config) {
        chock_log::append(&entry, config);
    }

    fn key(&self, action: &str, tool: Option<&str>) -> Key {
        Key {
            agent_kind: self.agent_kind.to_owned(),
            model: None,
            tool: tool.map(str::to_owned),
            action: action.to_owned(),
        }
    }

    /// A line no rule decided (a failure, a person's stop or
    /// resume), made by the gate as every other line is.
    fn entry(
        &self,
        action: &str,
        tool: Option<&str>,
        end: (Decision, AnsweredBy),
        subject: Option<String>,
    ) -> Entry {
        let verdict = chock_policy::Verdict::bare(end.0, chock_policy::Layer::Nothing);
        chock_gate::line(
            self.route,
            self.project.clone(),
            &self.key(action, tool),
            &verdict,
            end,
            subject,
        )
    }

    /// A call refused because Chock is stopped.
    fn stopped(&self, stopped: &InForce, tool: Option<&str>) {
        let (verdict, settled) = chock_gate::stopped(&stopped.file);
        let entry = settled.entry(
            self.route,
            self.project.clone(),
            &self.key(STOPPED, tool),
            &verdict,
            None,
        );
        self.append(entry, &Config::default());
    }

    /// A call refused because Chock could not decide it.
    fn failure(&self, reason: &str, tool: Option<&str>, config: &Config) {
        self.refused(decide::UNNAMED, reason, tool, config);
    }

    /// A call refused under `action` with nobody asked, `reason` the subject.
    pub(crate) fn refused(&self, action: &str, reason: &str, tool: Option<&str>, config: &Config) {
        let entry = self.entry(
            action,
            tool,
            (Decision::Deny, AnsweredBy::Nobody),
            Some(reason.to_owned()),
        );
        self.append(entry, config);
    }

    /// One line per act of a call, each as the gate ended it.
    fn ended(&self, call: &decide::Call, asker: &Asker<'_>, config: &Config) {
        for one in &call.acts {
            self.write(&one.judged, asker, &one.settled, config);
        }
    }

    fn write(&self, judged: &Judged, asker: &Asker<'_>, settled: &Settled, config: &Config) {
        let key = Key {
            agent_kind: self.agent_kind.to_owned(),
            model: asker.model.map(str::to_owned),
            tool: asker.tool.map(str::to_owned),
            action: judged.action.clone(),
        };
        let subject = match (&judged.subject, &judged.unnamed) {
            (Some(subject), Some(why)) => Some(format!("{subject}: {why}")),
            (subject, _) => subject.clone(),
        };
        let entry = settled.entry(
            self.route,
            self.project.clone(),
            &key,
            &judged.verdict,
            subject,
        );
        self.append(entry, config);
    }
}

/// The action a refusal by `chock stop` is logged under.
pub const STOPPED: &str = "chock.stopped";

/// Writes the line a person's own command leaves (`chock stop`, `chock
/// resume`, `chock override`): who (a person), what (`chock.stop`,
/// `chock.resume`, `policy.override.<id>`) and which file.
pub fn log_person(project: &Path, action: &str, file: &Path) {
    let logger = Logger::new(project, "person");
    let entry = logger.entry(
        action,
        None,
        (Decision::Allow, AnsweredBy::Person),
        Some(file.display().to_string()),
    );
    logger.append(entry, &Config::default());
}
