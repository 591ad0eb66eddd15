//! How far a person's yes reaches: this once, the rest of the session, or
//! always. Every route that asks offers the same answers (once; for this
//! session where the asking process is a session; always where the rule
//! to write is the project's; no; no with a reason the agent is told),
//! and reads them back as a [`Word`].
//!
//! An asker that knows nothing of scopes gives a plain yes, which is
//! [`Scope::Once`]: a caller that forgot to ask for more grants the least.
//! A session's yes lives in [`SessionGrants`], in the memory of the
//! process that asked, and is gone when it ends; an "always" is the rule
//! the question suggested, written into `chock.zon` ([`keep`]).

use std::collections::HashSet;
use std::path::Path;
use std::sync::Mutex;

use chock_policy::{Answer, Decision, EditError, Key, Layer, Question, RuleEdit, Verdict};

use crate::Settled;

pub use chock_log::Scope;

/// The scopes one question offers beyond "once".
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Offer {
    /// The asking process is a session that can remember a yes.
    pub session: bool,
    /// Each rule that answers the question is the project's to write
    /// (absent for an organisation's or a package's ceiling).
    pub always: bool,
}

impl Offer {
    /// What `question` offers, asked by a process that is a session
    /// (`in_session`) for the project whose file is `project_file`.
    pub fn of(question: &Question, in_session: bool, project_file: &Path) -> Offer {
        Offer {
            session: in_session,
            always: chock_policy::always_offered(project_file, &question.rules),
        }
    }

    /// Whether `scope` is one of the answers offered.
    pub fn offers(self, scope: Scope) -> bool {
        match scope {
            Scope::Once => true,
            Scope::Session => self.session,
            Scope::Always => self.always,
        }
    }

    /// The scopes offered, in the order a prompt lists them.
    pub fn scopes(self) -> Vec<Scope> {
        [Scope::Once, Scope::Session, Scope::Always]
            .into_iter()
            .filter(|s| self.offers(*s))
            .collect()
    }
}

/// A person's answer as a route reads it: the answer, how far a yes
/// reaches, and the reason of a no (which the agent is told).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Word {
    pub answer: Answer,
    pub scope: Scope,
    pub reason: Option<String>,
}

impl Word {
    /// A yes for `scope`, held to what was offered: a scope not offered
    /// is read as once.
    pub fn yes(scope: Scope, offer: Offer) -> Word {
        Word {
            answer: Answer::Yes,
            scope: if offer.offers(scope) {
                scope
            } else {
                Scope::Once
            },
            reason: None,
        }
    }

    /// A no, with the person's reason when there is one.
    pub fn no(reason: Option<String>) -> Word {
        Word {
            answer: Answer::No,
            scope: Scope::Once,
            reason: reason.filter(|r| !r.trim().is_empty()),
        }
    }

    /// Any answer without a scope (a plain asker's).
    pub fn plain(answer: Answer) -> Word {
        Word {
            answer,
            scope: Scope::Once,
            reason: None,
        }
    }
}

/// The acts a person allowed for the rest of this session, by action,
/// agent kind and tool; held in this process's memory only.
#[derive(Debug, Default)]
pub struct SessionGrants {
    granted: Mutex<HashSet<(String, String, Option<String>)>>,
}

fn grant_key(key: &Key) -> (String, String, Option<String>) {
    (key.action.clone(), key.agent_kind.clone(), key.tool.clone())
}

impl SessionGrants {
    /// Whether a person allowed `key` for this session.
    pub fn granted(&self, key: &Key) -> bool {
        self.granted
            .lock()
            .is_ok_and(|set| set.contains(&grant_key(key)))
    }

    /// Remembers a person's yes to `key` for the rest of this session.
    pub fn grant(&self, key: &Key) {
        if let Ok(mut set) = self.granted.lock() {
            set.insert(grant_key(key));
        }
    }
}

/// What a yes for `scope` leaves behind: a session's grant of `key` in
/// `grants`, or the question's rules written into `project_file` (the
/// edit returned, for its diff and its log line) and, as the running
/// session read its rules before, a grant too. Once leaves nothing.
pub fn keep(
    scope: Scope,
    key: &Key,
    question: &Question,
    grants: Option<&SessionGrants>,
    project_file: &Path,
) -> Result<Option<RuleEdit>, EditError> {
    match (scope, grants) {
        (Scope::Session, Some(grants)) => {
            grants.grant(key);
            Ok(None)
        }
        (Scope::Always, grants) => {
            let edit = chock_policy::write_rules(project_file, &question.rules)?;
            if let Some(grants) = grants {
                grants.grant(key);
            }
            Ok(Some(edit))
        }
        _ => Ok(None),
    }
}

/// The verdict and end of the `policy.edit` line a yes "always" writes
/// for each rule it put into the project's file: the person's yes, kept
/// always, given in the project's layer.
pub fn rule_written() -> (Verdict, Settled) {
    let verdict = Verdict::bare(Decision::Allow, Layer::Project);
    let settled = Settled {
        scope: Some(Scope::Always),
        ..crate::heard(Decision::Ask, Answer::Yes)
    };
    (verdict, settled)
}

#[cfg(test)]
mod tests {
    use super::*;
    use chock_policy::{Decision, Suggestion};

    fn question(file: &Path, block: String) -> Question {
        Question {
            action: "exec.ls".into(),
            decision: Decision::Ask,
            summary: "run ls".into(),
            detail: vec![],
            rules: vec![Suggestion {
                rule: ".{ .action = \"exec.ls\", .decision = .allow }".into(),
                block: block.replace("FILE", &file.display().to_string()),
            }],
        }
    }

    #[test]
    fn always_is_offered_only_where_the_rule_is_the_project_s() {
        let file = Path::new("/p/chock.zon");
        let own = question(file, ".policy.rules in FILE".into());
        assert_eq!(
            Offer::of(&own, true, file).scopes(),
            [Scope::Once, Scope::Session, Scope::Always]
        );
        let org = question(
            file,
            ".rules in /etc/chock/org.zon (the organisation's bundle: a project cannot raise it, only its owner can)".into(),
        );
        assert_eq!(Offer::of(&org, false, file).scopes(), [Scope::Once]);
        let mut none = own;
        none.rules.clear();
        assert!(!Offer::of(&none, true, file).always);
    }

    #[test]
    fn a_scope_not_offered_is_read_as_once() {
        let offer = Offer {
            session: false,
            always: true,
        };
        assert_eq!(Word::yes(Scope::Session, offer).scope, Scope::Once);
        assert_eq!(Word::yes(Scope::Always, offer).scope, Scope::Always);
        assert_eq!(Word::no(Some("  ".into())).reason, None);
        assert_eq!(Word::plain(Answer::Yes).scope, Scope::Once);
        for scope in [Scope::Once, Scope::Session, Scope::Always] {
            assert_eq!(Scope::parse(scope.as_str()), Some(scope));
        }
    }

    #[test]
    fn a_session_grant_covers_the_same_action_agent_kind_and_tool_only() {
        let grants = SessionGrants::default();
        let mut key = Key::new("exec.ls");
        key.tool = Some("Bash".into());
        let file = Path::new("/nonexistent/chock.zon");
        let q = question(file, String::new());
        assert_eq!(
            keep(Scope::Session, &key, &q, Some(&grants), file).unwrap(),
            None
        );
        assert!(grants.granted(&key));
        let mut other_tool = key.clone();
        other_tool.tool = Some("Edit".into());
        let mut other_kind = key;
        other_kind.agent_kind = "reviewer".into();
        assert!(!grants.granted(&other_tool));
        assert!(!grants.granted(&other_kind));
        assert!(!grants.granted(&Key::new("exec.rm")));
    }

    #[test]
    fn always_writes_the_rule_and_refuses_a_ceiling() {
        let dir = std::env::temp_dir().join(format!("chock-scope-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("chock.zon");
        let _ = std::fs::remove_file(&file);
        let key = Key::new("exec.ls");
        let ceiling = question(&file, ".rules in /etc/org.zon".into());
        assert!(keep(Scope::Always, &key, &ceiling, None, &file).is_err());
        assert!(!file.exists());
        let own = question(&file, ".policy.rules in FILE".into());
        let edit = keep(Scope::Always, &key, &own, None, &file)
            .unwrap()
            .unwrap();
        assert!(
            edit.after
                .contains(".{ .action = \"exec.ls\", .decision = .allow },")
        );
        assert_eq!(std::fs::read_to_string(&file).unwrap(), edit.after);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
