//! A package's eval suite: `evals/*.json`, each one call and the verdict it
//! must get. A case is put through what a hook does — the agent's payload
//! read and every act named, each answered by the compiled policy (the
//! project's rules, every package's, the defaults), every guard that applies
//! run, and the gate's end for the call — with no log line written.
//!
//! ```json
//! {"hook": "tool", "agent": "claude", "payload": { ...the agent's own hook payload... }, "expect": "deny"}
//! {"hook": "pre-commit", "staged": [{"path": "big.bin", "bytes": 6000000}], "expect": "deny"}
//! ```
//!
//! `expect` is `allow`, `ask` or `deny`; a call the policy has no objection
//! to (only a shipped default allows it) counts as `allow`.

use std::path::{Path, PathBuf};

use chock_hook::agent::Agent;
use chock_hook::answer::{self, HookAnswer};
use chock_hook::decide::{self, Asker, Judged};
use chock_hook::{guards, naming, payload};
use chock_policy::package::EVALS_DIR;
use chock_policy::{HookPoint, Key, Policy, PolicyPackage, Reading};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::{PackageError, io};

/// The verdict a case expects.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Expect {
    Allow,
    Ask,
    Deny,
}

impl Expect {
    pub fn as_str(self) -> &'static str {
        match self {
            Expect::Allow => "allow",
            Expect::Ask => "ask",
            Expect::Deny => "deny",
        }
    }

    fn of(answer: HookAnswer) -> Expect {
        match answer {
            HookAnswer::Allow | HookAnswer::Pass => Expect::Allow,
            HookAnswer::Ask => Expect::Ask,
            HookAnswer::Deny => Expect::Deny,
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct CaseFile {
    hook: String,
    agent: Option<String>,
    payload: Option<Value>,
    staged: Option<Value>,
    args: Option<Vec<String>>,
    expect: Expect,
}

/// One case, read.
#[derive(Debug, Clone)]
pub struct Case {
    pub file: PathBuf,
    pub hook: HookPoint,
    pub agent: Option<Agent>,
    /// The agent's payload (tool) or what the git hook gives its guards.
    pub detail: Value,
    pub expect: Expect,
}

/// What a case got.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Outcome {
    pub file: PathBuf,
    pub expect: Expect,
    pub got: Expect,
    /// The sentence a hook would give.
    pub reason: String,
}

impl Outcome {
    pub fn passed(&self) -> bool {
        self.expect == self.got
    }
}

/// Reads every case of `package`, in the order of their names.
pub fn read_cases(package: &PolicyPackage) -> Result<Vec<Case>, PackageError> {
    let dir = package.dir.join(EVALS_DIR);
    let mut names = Vec::new();
    match std::fs::read_dir(&dir) {
        Ok(entries) => {
            for entry in entries {
                let path = entry.map_err(io(&dir, "reading"))?.path();
                if path.extension().is_some_and(|e| e == "json") {
                    names.push(path);
                }
            }
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(io(&dir, "reading")(e)),
    }
    names.sort();
    names.iter().map(|p| read_case(p)).collect()
}

fn read_case(path: &Path) -> Result<Case, PackageError> {
    let text = std::fs::read_to_string(path).map_err(io(path, "reading the eval case"))?;
    parse_case(path, &text)
}

/// Reads `text` as the eval case `path`; a fault names the file, and the
/// line for JSON that does not parse.
pub fn parse_case(path: &Path, text: &str) -> Result<Case, PackageError> {
    let bad = |why: String| {
        PackageError::Refused(format!(
            "{}: {why}; a case is {{\"hook\": \"tool\", \"agent\": \"claude\", \"payload\": {{...}}, \"expect\": \"deny\"}} or {{\"hook\": \"pre-commit\", \"staged\": [{{\"path\": \"a\", \"bytes\": 1}}], \"expect\": \"allow\"}}",
            path.display()
        ))
    };
    let file: CaseFile =
        serde_json::from_str(text).map_err(|e| bad(format!("line {}: {e}", e.line())))?;
    let hook = HookPoint::from_name(&file.hook)
        .ok_or_else(|| bad(format!("`{}` is no hook point", file.hook)))?;
    let (agent, detail) = match hook {
        HookPoint::Tool => {
            let name = file
                .agent
                .ok_or_else(|| bad("a tool case names its `agent`".into()))?;
            let agent = Agent::ALL
                .into_iter()
                .find(|a| a.name() == name)
                .ok_or_else(|| {
                    bad(format!(
                        "`{name}` is no agent: claude, cursor, gemini or codex"
                    ))
                })?;
            let payload = file
                .payload
                .ok_or_else(|| bad("a tool case holds the agent's `payload`".into()))?;
            (Some(agent), payload)
        }
        HookPoint::PreCommit => (None, json!({ "staged": file.staged.unwrap_or(json!([])) })),
        // The CI gate's run of a commit reads what its pre-commit read; of
        // the push, its arguments.
        HookPoint::Ci if file.staged.is_some() => (None, json!({ "staged": file.staged })),
        HookPoint::PrePush | HookPoint::Ci => {
            (None, json!({ "args": file.args.unwrap_or_default() }))
        }
    };
    Ok(Case {
        file: path.to_path_buf(),
        hook,
        agent,
        detail,
        expect: file.expect,
    })
}

/// Puts `case` through the compiled `policy` for `project`.
pub fn run_case(policy: &Policy, project: &Path, case: &Case) -> Outcome {
    let (judged, can_ask, title) = match case.agent {
        Some(agent) => tool_call(policy, project, agent, &case.detail),
        None => (git_call(policy, project, case), true, "git"),
    };
    let judged = match judged {
        Ok(judged) => judged,
        Err(why) => {
            return Outcome {
                file: case.file.clone(),
                expect: case.expect,
                got: Expect::Deny,
                reason: why.to_string(),
            };
        }
    };
    let call = decide::Call::end(judged, can_ask);
    Outcome {
        file: case.file.clone(),
        expect: case.expect,
        got: Expect::of(call.answer()),
        reason: call.reason(title),
    }
}

/// What the layers judged of a case's call, or why its payload is no call.
type Judgement = Result<Vec<Judged>, chock_hook::HookError>;

fn tool_call(
    policy: &Policy,
    project: &Path,
    agent: Agent,
    payload_json: &Value,
) -> (Judgement, bool, &'static str) {
    let call = match payload::parse(agent, &payload_json.to_string()) {
        Ok(call) => call,
        Err(e) => return (Err(e), false, agent.title()),
    };
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let store = PathBuf::from("/nix/store");
    let place = naming::Place::on_host(project, home.as_deref(), false, &store);
    let asker = Asker {
        agent_kind: agent.name(),
        tool: Some(call.tool.as_str()),
        model: call.model.as_deref(),
    };
    let mut judged = decide::judge(policy, &asker, naming::name(&call, agent, &place));
    let request = guards::call(HookPoint::Tool, agent.name(), project, payload_json.clone());
    judged.extend(guards::judge(policy, project, HookPoint::Tool, &request));
    let mode = payload_json.get("permission_mode").and_then(Value::as_str);
    let can_ask = answer::can_ask(agent, &call.event, &call.tool, mode);
    (Ok(judged), can_ask, agent.title())
}

fn git_call(policy: &Policy, project: &Path, case: &Case) -> Judgement {
    // A case reading staged files is a commit's (pre-commit, or the CI
    // gate's run of one); any other, a push's.
    let (tool, action) = match case.detail.get("staged") {
        Some(_) => ("pre-commit", "git.commit"),
        None => ("pre-push", "git.push"),
    };
    let key = Key::new(action).with_agent_kind("git").with_tool(tool);
    let mut judged = vec![Judged {
        action: action.to_owned(),
        subject: None,
        verdict: policy.decide(&key, Reading::Act),
        unnamed: None,
        said: None,
    }];
    let request = guards::call(case.hook, "git", project, case.detail.clone());
    judged.extend(guards::judge(policy, project, case.hook, &request));
    Ok(judged)
}
