//! The ratchet: promises the agent makes about its own acts
//! (`restrict_self`), each a ceiling on every later call whose action its
//! pattern covers, and the one way back up (`policy_widen`, decided as
//! the action `policy.widen`, which no rule names by default, so a person
//! is asked).
//!
//! A promise is exactly three fields: an action pattern (the policy's
//! pattern language, at most 64 bytes), a ceiling decision and a reason
//! (at most 500 bytes). A session holds at most 32. The effective ceiling
//! of an action is the minimum over every promise whose pattern covers it
//! (none: allow). A proposal lower than the current ceiling of its pattern
//! is applied at once; an equal one changes nothing; a higher one is
//! refused and must go through `policy_widen`.

use chock_policy::{Decision, Pattern};
use serde::{Deserialize, Deserializer, Serialize};

/// The most promises a session holds.
pub const MAX_PROMISES: usize = 32;
/// The most bytes of a promise's action pattern.
pub const MAX_PATTERN_BYTES: usize = 64;
/// The most bytes of a promise's reason.
pub const MAX_REASON_BYTES: usize = 500;

/// One promise.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Promise {
    /// The actions it binds.
    pub action: Pattern,
    /// The most they may be answered.
    #[serde(deserialize_with = "known_or_deny")]
    pub ceiling: Decision,
    /// Why, in the agent's words.
    pub reason: String,
}

/// A ceiling this build does not know reads as `deny`: an older build
/// reading a newer log keeps the promise at its narrowest.
fn known_or_deny<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Decision, D::Error> {
    let word = String::deserialize(deserializer)?;
    Ok(word.parse().unwrap_or(Decision::Deny))
}

impl Promise {
    /// Reads `restrict_self`'s (or `policy_widen`'s) arguments, each field
    /// checked: a malformed pattern, a misspelled ceiling (with the valid
    /// names) or a field over its bound is refused, naming it.
    pub fn from_arguments(
        tool: &str,
        arguments: serde_json::Value,
    ) -> Result<Promise, PromiseError> {
        let refused = |why| PromiseError::Arguments {
            tool: tool.to_owned(),
            why,
        };
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        struct Given {
            action: String,
            ceiling: String,
            reason: String,
        }
        let given: Given = serde_json::from_value(arguments).map_err(|e| {
            refused(format!(
                "the arguments cannot be read: {e}; it takes exactly `action`, `ceiling` and `reason`"
            ))
        })?;
        if given.action.len() > MAX_PATTERN_BYTES {
            return Err(refused(format!(
                "`action` is {} bytes, over the {MAX_PATTERN_BYTES}-byte bound",
                given.action.len()
            )));
        }
        let action =
            Pattern::parse(&given.action).map_err(|e| refused(format!("`action`: {e}")))?;
        let ceiling: Decision = given
            .ceiling
            .parse()
            .map_err(|e| refused(format!("`ceiling`: {e}")))?;
        let reason = given.reason.trim().to_owned();
        if reason.is_empty() || given.reason.len() > MAX_REASON_BYTES {
            return Err(refused(format!(
                "`reason` must be given, at most {MAX_REASON_BYTES} bytes"
            )));
        }
        Ok(Promise {
            action,
            ceiling,
            reason,
        })
    }

    /// The promise as a refusal names it.
    pub fn shown(&self) -> String {
        format!(
            "`{}` at most {} (restrict_self: \"{}\")",
            self.action, self.ceiling, self.reason
        )
    }
}

/// Why a promise was not taken; the sentence is what the agent is told.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PromiseError {
    /// Its arguments were refused; `why` names the field and the fault.
    #[error("{tool}: {why}")]
    Arguments { tool: String, why: String },
    /// The session holds [`MAX_PROMISES`] already.
    #[error(
        "refused: a session holds at most {MAX_PROMISES} promises, and this one has them all; narrow one already made instead"
    )]
    Full,
}

/// What a proposal would do to the promises held.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// It is lower than the current ceiling of its pattern: applied at once.
    Narrows,
    /// It equals it: nothing changes.
    NoChange,
    /// It is higher: refused; the current ceiling is this.
    Widens(Decision),
}

/// Every promise a session holds, in the order made.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Promises {
    held: Vec<Promise>,
}

impl Promises {
    pub fn held(&self) -> &[Promise] {
        &self.held
    }

    /// The ceiling of one action: the lowest promise whose pattern covers
    /// it, with that promise; `None` when none does (allow).
    pub fn ceiling(&self, action: &str) -> Option<&Promise> {
        self.held
            .iter()
            .filter(|p| p.action.matches(action))
            .min_by_key(|p| p.ceiling)
    }

    /// The ceiling of a whole pattern: only a promise covering all of it
    /// answers (`git.push` says nothing of `git.*`).
    pub fn ceiling_over(&self, pattern: &Pattern) -> Decision {
        self.held
            .iter()
            .filter(|p| p.action.covers(pattern))
            .map(|p| p.ceiling)
            .min()
            .unwrap_or(Decision::Allow)
    }

    /// How `proposal` compares with what is held.
    pub fn classify(&self, proposal: &Promise) -> Change {
        let current = self.ceiling_over(&proposal.action);
        match proposal.ceiling.cmp(&current) {
            std::cmp::Ordering::Less => Change::Narrows,
            std::cmp::Ordering::Equal => Change::NoChange,
            std::cmp::Ordering::Greater => Change::Widens(current),
        }
    }

    /// Whether `proposal` may be held: [`Promises::classify`], and a new
    /// narrowing refused once [`MAX_PROMISES`] are held (narrowing one
    /// already made is still taken).
    pub fn room_for(&self, proposal: &Promise) -> Result<Change, PromiseError> {
        let change = self.classify(proposal);
        if change == Change::Narrows
            && self.on(&proposal.action).is_none()
            && self.held.len() >= MAX_PROMISES
        {
            return Err(PromiseError::Full);
        }
        Ok(change)
    }

    /// The promise on exactly `pattern`, as written.
    pub fn on(&self, pattern: &Pattern) -> Option<&Promise> {
        self.held.iter().find(|p| p.action == *pattern)
    }

    /// Holds a narrowing promise: one on the same pattern is replaced
    /// (the new one is lower), else it is added.
    pub(crate) fn promise(&mut self, promise: Promise) {
        match self.held.iter_mut().find(|p| p.action == promise.action) {
            Some(held) => *held = promise,
            None => self.held.push(promise),
        }
    }

    /// An authorised widening: replaces the promise on exactly its
    /// pattern; the others are untouched.
    pub(crate) fn widen(&mut self, promise: Promise) {
        if let Some(held) = self.held.iter_mut().find(|p| p.action == promise.action) {
            *held = promise;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn promise(action: &str, ceiling: &str) -> Promise {
        Promise::from_arguments(
            "restrict_self",
            json!({"action": action, "ceiling": ceiling, "reason": "r"}),
        )
        .expect("promise")
    }

    #[test]
    fn the_ceiling_is_the_lowest_covering_promise() {
        let mut held = Promises::default();
        assert!(held.ceiling("git.push").is_none());
        held.promise(promise("git.*", "ask"));
        held.promise(promise("git.push", "deny"));
        assert_eq!(
            held.ceiling("git.push").map(|p| p.ceiling),
            Some(Decision::Deny)
        );
        assert_eq!(
            held.ceiling("git.fetch").map(|p| p.ceiling),
            Some(Decision::Ask)
        );
        assert!(held.ceiling("gitlab.push").is_none());
        // git.push says nothing of the class git.*.
        assert_eq!(
            held.ceiling_over(&Pattern::parse("git.*").unwrap()),
            Decision::Ask
        );
    }

    #[test]
    fn narrower_applies_equal_changes_nothing_wider_is_refused() {
        let mut held = Promises::default();
        held.promise(promise("net.*", "ask"));
        assert_eq!(
            held.classify(&promise("net.fetch.*", "deny")),
            Change::Narrows
        );
        assert_eq!(
            held.classify(&promise("net.fetch.*", "ask")),
            Change::NoChange
        );
        assert_eq!(
            held.classify(&promise("net.fetch.*", "allow")),
            Change::Widens(Decision::Ask)
        );
        // A class above the promise is not bound by it.
        assert_eq!(held.classify(&promise("exec.*", "ask")), Change::Narrows);
    }

    #[test]
    fn a_session_holds_at_most_32_promises() {
        let mut held = Promises::default();
        for i in 0..MAX_PROMISES {
            let p = promise(&format!("net.fetch.host{i}"), "deny");
            assert_eq!(held.room_for(&p), Ok(Change::Narrows));
            held.promise(p);
        }
        let more = held.room_for(&promise("git.push", "deny"));
        assert!(more.unwrap_err().to_string().contains("at most 32"));
        // Narrowing one already made is still taken, in its place.
        let lower = promise("net.fetch.host0", "deny");
        assert_eq!(held.room_for(&lower), Ok(Change::NoChange));
        let first = Promise {
            ceiling: Decision::Deny,
            ..promise("net.fetch.host1", "deny")
        };
        held.widen(Promise {
            ceiling: Decision::Ask,
            ..first.clone()
        });
        assert_eq!(held.room_for(&first), Ok(Change::Narrows));
        held.promise(first);
        assert_eq!(held.held().len(), MAX_PROMISES);
    }

    #[test]
    fn each_field_is_checked() {
        let tool = "restrict_self";
        let long = "a".repeat(65);
        for (arguments, says) in [
            (
                json!({"action": "*", "ceiling": "deny", "reason": "r"}),
                "leave the field out",
            ),
            (
                json!({"action": "a.*.b", "ceiling": "deny", "reason": "r"}),
                "`*`",
            ),
            (
                json!({"action": long, "ceiling": "deny", "reason": "r"}),
                "64-byte",
            ),
            (
                json!({"action": "git.push", "ceiling": "never", "reason": "r"}),
                "deny, agent_then_human, ask",
            ),
            (
                json!({"action": "git.push", "ceiling": "deny", "reason": ""}),
                "`reason`",
            ),
            (
                json!({"action": "git.push", "ceiling": "deny", "reason": "x".repeat(501)}),
                "`reason`",
            ),
            (
                json!({"action": "git.push", "ceiling": "deny", "reason": "r", "see": "doc"}),
                "exactly",
            ),
        ] {
            let refused = Promise::from_arguments(tool, arguments)
                .expect_err("refused")
                .to_string();
            assert!(refused.contains(says), "{refused}");
        }
    }

    #[test]
    fn an_unknown_ceiling_in_a_log_reads_as_deny() {
        let read: Promise = serde_json::from_value(
            json!({"action": "git.push", "ceiling": "maybe", "reason": "r"}),
        )
        .expect("read");
        assert_eq!(read.ceiling, Decision::Deny);
    }
}
