//! Each agent's way of hearing an answer: its output JSON and exit codes.
//!
//! - Claude Code (`PreToolUse`): exit 0 with `hookSpecificOutput`
//!   `permissionDecision` `allow`, `ask` or `deny` and a reason. `allow`
//!   skips Claude's prompt; `ask` shows Claude's prompt with the reason;
//!   `deny` refuses and tells Claude why.
//! - Cursor (`preToolUse`, `beforeShellExecution`, `beforeMCPExecution`):
//!   exit 0 with `permission` and a `user_message` and `agent_message`.
//!   `beforeReadFile` has no `ask`, so there an ask is a refusal.
//! - Gemini CLI (`BeforeTool`): exit 0 with `decision` `allow`, `ask` or
//!   `deny` and a `reason`.
//! - Codex (`PreToolUse`): no output and exit 0 lets the call go on;
//!   `permissionDecision: deny` with a reason refuses it. Codex hooks have no
//!   `ask` (Codex reports one as an unsupported answer and runs the call), so
//!   an ask is a refusal that says a person must approve it.
//!
//! An allow that only a shipped default gives is no objection: no decision
//! is printed and the agent's own permission rules apply, as if Chock were
//! not there. Only a rule a person wrote switches the agent's prompt off.
//!
//! When Chock cannot answer at all (the payload is unreadable, the policy
//! does not load) the call is refused: exit 2 with the reason on stderr for
//! the agents that read exit 2 as a refusal, a `deny` for Cursor.

use serde_json::json;

use crate::agent::Agent;

/// What the hook tells the agent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HookAnswer {
    /// Refused.
    Deny,
    /// Handed to the agent's own prompt: a person says yes or no.
    Ask,
    /// No objection: the agent's own permission rules decide, as if Chock
    /// were not there (what a shipped default's allow becomes in a hook).
    Pass,
    /// Goes ahead, the agent's own prompt skipped: a rule a person wrote allows it.
    Allow,
}

impl HookAnswer {
    /// What the hook tells the agent of an act the gate ended as `outcome`.
    pub fn of(outcome: chock_gate::Outcome) -> HookAnswer {
        match outcome {
            chock_gate::Outcome::Go => HookAnswer::Allow,
            chock_gate::Outcome::NoObjection => HookAnswer::Pass,
            chock_gate::Outcome::Prompt => HookAnswer::Ask,
            chock_gate::Outcome::Refused(_) => HookAnswer::Deny,
        }
    }

    /// The word the agents use, and the log's (no objection is the
    /// policy's allow).
    pub fn as_str(self) -> &'static str {
        match self {
            HookAnswer::Deny => "deny",
            HookAnswer::Ask => "ask",
            HookAnswer::Pass | HookAnswer::Allow => "allow",
        }
    }
}

/// What `chock hook` prints and how it exits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    /// Written to standard output.
    pub stdout: String,
    /// Written to standard error.
    pub stderr: String,
    /// The process exit code.
    pub exit_code: u8,
}

/// Whether `agent` will show an `ask` for `tool` to a person at this hook
/// event, in this permission mode (Claude Code's payload `permission_mode`).
/// Claude Code drops a hook's ask in `bypassPermissions`, refuses what it
/// would ask in `dontAsk`, and in `acceptEdits` accepts its file edits
/// unasked; only `default` and `plan` (or no mode given) show every ask,
/// `acceptEdits` shows them for its other tools, and any other mode is
/// answered as one where nobody will be asked.
pub fn can_ask(agent: Agent, event: &str, tool: &str, permission_mode: Option<&str>) -> bool {
    let edits = matches!(tool, "Write" | "Edit" | "MultiEdit" | "NotebookEdit");
    let shows = match permission_mode {
        None | Some("default" | "plan") => true,
        Some("acceptEdits") => !edits,
        Some(_) => false,
    };
    match agent {
        Agent::Claude => shows,
        Agent::Gemini => true,
        Agent::Cursor => event != "beforeReadFile",
        Agent::Codex => false,
    }
}

/// The reply carrying `answer` with `reason`, in `agent`'s format. An ask
/// the agent cannot hand to a person must already have been made a deny.
pub fn reply(agent: Agent, answer: HookAnswer, reason: &str) -> Reply {
    if answer == HookAnswer::Pass {
        return pass(agent);
    }
    let stdout = match agent {
        Agent::Claude => json!({
            "hookSpecificOutput": {
                "hookEventName": "PreToolUse",
                "permissionDecision": answer.as_str(),
                "permissionDecisionReason": reason,
            }
        })
        .to_string(),
        Agent::Cursor => json!({
            "permission": answer.as_str(),
            "user_message": reason,
            "agent_message": reason,
        })
        .to_string(),
        Agent::Gemini => match answer {
            HookAnswer::Ask => json!({
                "decision": "ask",
                "reason": reason,
                "systemMessage": reason,
            }),
            _ => json!({"decision": answer.as_str(), "reason": reason}),
        }
        .to_string(),
        Agent::Codex => match answer {
            HookAnswer::Allow | HookAnswer::Pass => String::new(),
            HookAnswer::Ask | HookAnswer::Deny => json!({
                "hookSpecificOutput": {
                    "hookEventName": "PreToolUse",
                    "permissionDecision": "deny",
                    "permissionDecisionReason": reason,
                }
            })
            .to_string(),
        },
    };
    Reply {
        stdout: if stdout.is_empty() {
            stdout
        } else {
            format!("{stdout}\n")
        },
        stderr: String::new(),
        exit_code: 0,
    }
}

/// No objection: no decision at all, so the agent's own permission flow
/// runs (Claude Code and Codex: exit 0 and no output; Cursor and Gemini CLI:
/// an empty JSON object).
fn pass(agent: Agent) -> Reply {
    let stdout = match agent {
        Agent::Claude | Agent::Codex => "",
        Agent::Cursor | Agent::Gemini => "{}\n",
    };
    Reply {
        stdout: stdout.to_owned(),
        stderr: String::new(),
        exit_code: 0,
    }
}

/// The reply when Chock could not decide: the call is refused.
pub fn failure(agent: Agent, reason: &str) -> Reply {
    match agent {
        Agent::Cursor => {
            let mut reply = reply(agent, HookAnswer::Deny, reason);
            reply.stderr = format!("chock hook: {reason}\n");
            reply
        }
        Agent::Claude | Agent::Gemini | Agent::Codex => Reply {
            stdout: String::new(),
            stderr: format!("chock hook: {reason}\n"),
            exit_code: 2,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    fn parsed(reply: &Reply) -> Value {
        serde_json::from_str(&reply.stdout).unwrap_or(Value::Null)
    }

    #[test]
    fn claude_hears_all_three_answers() {
        for answer in [HookAnswer::Allow, HookAnswer::Ask, HookAnswer::Deny] {
            let out = reply(Agent::Claude, answer, "why");
            assert_eq!(out.exit_code, 0);
            let value = parsed(&out);
            assert_eq!(
                value["hookSpecificOutput"]["permissionDecision"],
                answer.as_str()
            );
            assert_eq!(
                value["hookSpecificOutput"]["permissionDecisionReason"],
                "why"
            );
        }
    }

    #[test]
    fn no_objection_leaves_the_agent_s_own_flow() {
        assert_eq!(reply(Agent::Claude, HookAnswer::Pass, "x").stdout, "");
        assert_eq!(reply(Agent::Codex, HookAnswer::Pass, "x").stdout, "");
        assert_eq!(
            parsed(&reply(Agent::Cursor, HookAnswer::Pass, "x")),
            serde_json::json!({})
        );
        assert_eq!(
            parsed(&reply(Agent::Gemini, HookAnswer::Pass, "x")),
            serde_json::json!({})
        );
    }

    #[test]
    fn codex_allows_by_silence_and_refuses_with_a_reason() {
        assert_eq!(reply(Agent::Codex, HookAnswer::Allow, "x").stdout, "");
        let value = parsed(&reply(Agent::Codex, HookAnswer::Deny, "no"));
        assert_eq!(value["hookSpecificOutput"]["permissionDecision"], "deny");
        assert!(!can_ask(Agent::Codex, "PreToolUse", "Bash", None));
    }

    #[test]
    fn claude_asks_only_in_a_mode_that_shows_the_ask() {
        for mode in [None, Some("default"), Some("plan")] {
            assert!(
                can_ask(Agent::Claude, "PreToolUse", "Write", mode),
                "{mode:?}"
            );
        }
        for mode in [
            "bypassPermissions",
            "dontAsk",
            "acceptEdits",
            "somethingNew",
        ] {
            assert!(
                !can_ask(Agent::Claude, "PreToolUse", "Write", Some(mode)),
                "{mode}"
            );
        }
        assert!(can_ask(
            Agent::Claude,
            "PreToolUse",
            "Bash",
            Some("acceptEdits")
        ));
        assert!(!can_ask(
            Agent::Claude,
            "PreToolUse",
            "Bash",
            Some("bypassPermissions")
        ));
    }

    #[test]
    fn cursor_and_gemini_formats() {
        let value = parsed(&reply(Agent::Cursor, HookAnswer::Ask, "r"));
        assert_eq!(value["permission"], "ask");
        assert_eq!(value["agent_message"], "r");
        assert!(!can_ask(Agent::Cursor, "beforeReadFile", "Read", None));
        let value = parsed(&reply(Agent::Gemini, HookAnswer::Deny, "r"));
        assert_eq!(value["decision"], "deny");
        assert_eq!(value["reason"], "r");
    }

    #[test]
    fn a_failure_refuses_the_call() {
        let out = failure(Agent::Claude, "broken");
        assert_eq!(out.exit_code, 2);
        assert!(out.stderr.contains("broken"));
        let out = failure(Agent::Cursor, "broken");
        assert_eq!(parsed(&out)["permission"], "deny");
    }
}
