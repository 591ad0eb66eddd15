//! What one line of the log holds, and the hashes that chain the lines.

use std::fmt;
use std::str::FromStr;

pub use chock_policy::Scope;
use chock_policy::{Decision, Layer};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::Route;

/// One decision as the caller knows it: everything a line holds except the
/// chain fields (`seq`, `prev`, `unchained`) and the time, which the log fills in.
///
/// Names only, never contents: no file contents, no command arguments, no
/// secret, no environment values. `subject` names what the act was about
/// (a derivation, a host, a program), not what it carried.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entry {
    /// Which door the question came through: `exec`, `hook`, `mcp`, `build`, ...
    pub route: Route,
    /// The project the act was for (its directory, as text).
    pub project: String,
    /// The action name that was answered, e.g. `call.write_file`.
    pub action: String,
    /// The asking agent's kind (the first field of the policy key).
    pub agent_kind: String,
    /// The model behind the agent, when known.
    pub model: Option<String>,
    /// The agent's tool that made the request, when known.
    pub tool: Option<String>,
    /// The answer, spelt as the policy spells it: `allow`, `ask`, `deny`, ...
    pub decision: Decision,
    /// Which rule, in which layer and file, gave the answer.
    pub decided_by: DecidedBy,
    /// Who in the end answered: a rule, a shipped default, a person, or nobody.
    pub answered_by: AnsweredBy,
    /// What the act was about, by name only (a derivation, a host, a program).
    pub subject: Option<String>,
    /// How far a person's yes reached, when a person said yes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<Scope>,
}

impl Entry {
    /// A line no rule decided and nobody answered: written by hand
    /// (`chock log append`), or Chock's own note about the log (a sink's
    /// skipped lines).
    pub fn unruled(
        route: Route,
        project: String,
        action: String,
        agent_kind: String,
        decision: Decision,
        subject: Option<String>,
    ) -> Entry {
        Entry {
            route,
            project,
            action,
            agent_kind,
            model: None,
            tool: None,
            decision,
            decided_by: DecidedBy {
                layer: Layer::Nothing,
                file: None,
                line: None,
                policy: None,
                held: None,
                identity: None,
            },
            answered_by: AnsweredBy::Nobody,
            subject,
            scope: None,
        }
    }
}

impl From<&chock_policy::DecidedBy> for DecidedBy {
    fn from(by: &chock_policy::DecidedBy) -> DecidedBy {
        DecidedBy {
            layer: by.layer,
            file: by.file.as_ref().map(|f| f.to_string_lossy().into_owned()),
            line: by.line,
            policy: by.policy.clone(),
            held: by.held.as_ref().map(|held| Held {
                policy: held.policy.clone(),
                stage: held.stage.as_str().into(),
                would: held.would.as_str().into(),
            }),
            identity: by.identity.clone(),
        }
    }
}

/// Where the answer came from: the policy layer and, for a written rule, its place.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DecidedBy {
    /// `project`, `org`, `policy`, `default`, `nothing`, `promise` or
    /// `stop`, as the policy engine names its layers.
    pub layer: Layer,
    /// The file holding the rule, when a written rule decided.
    pub file: Option<String>,
    /// The rule's line in that file.
    pub line: Option<u32>,
    /// The installed policy package whose rule or guard decided, by id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy: Option<String>,
    /// A package's answer its rollout stage held back, when one was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub held: Option<Held>,
    /// The identity of the policy that answered: `sha256:<hex>` over every
    /// layer's rules, so a fleet can tell which rules decided.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub identity: Option<String>,
}

/// A package's answer held back by its rollout stage (`observe`, `ask`):
/// the stage, and what the package would have answered in force.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Held {
    pub policy: String,
    pub stage: String,
    pub would: String,
}

/// Who gave the final answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AnsweredBy {
    /// A rule written in a project or org policy.
    Rule,
    /// One of the shipped default rules.
    Default,
    /// A person answered a question.
    Person,
    /// A question went unanswered (timed out, nobody there).
    Nobody,
    /// The client dismissed the question without a person answering it
    /// (an MCP elicitation answered `cancel`).
    Client,
    /// A reviewer agent answered (`agent_review`, in Chock's own session),
    /// or refused an `agent_then_human` act before any person was asked.
    Reviewer,
}

impl AnsweredBy {
    /// Who answered when the policy's answer is the last word: a written
    /// rule (the project's or an organisation's), a shipped default, or,
    /// when no rule matched, nobody.
    pub fn of_layer(layer: chock_policy::Layer) -> AnsweredBy {
        match layer {
            chock_policy::Layer::Project
            | chock_policy::Layer::Org
            | chock_policy::Layer::Policy
            | chock_policy::Layer::Promise => AnsweredBy::Rule,
            chock_policy::Layer::Default => AnsweredBy::Default,
            chock_policy::Layer::Nothing => AnsweredBy::Nobody,
            chock_policy::Layer::Stop => AnsweredBy::Person,
        }
    }

    /// The word written in the log.
    pub fn as_str(self) -> &'static str {
        match self {
            AnsweredBy::Rule => "rule",
            AnsweredBy::Default => "default",
            AnsweredBy::Person => "person",
            AnsweredBy::Nobody => "nobody",
            AnsweredBy::Client => "client",
            AnsweredBy::Reviewer => "reviewer",
        }
    }
}

impl fmt::Display for AnsweredBy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One whole line of the log. Field order is the order on disk.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Record {
    /// Place in the chain: 1 for the first line ever, one more for each line, across rotations.
    pub seq: u64,
    /// sha256 (hex) of the previous line's exact bytes without its newline; 64 zeros for the first.
    pub prev: String,
    /// Why this line could not be chained (the lock stayed held, the last line was unreadable).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unchained: Option<String>,
    /// When the decision was logged: RFC 3339, UTC, milliseconds.
    pub ts: String,
    /// The decision itself.
    #[serde(flatten)]
    pub entry: Entry,
}

/// A sha256 digest: the hash of one line, and what the next line's `prev` names.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Sha256Hash(pub [u8; 32]);

impl Sha256Hash {
    /// What the first line of a log names as `prev`.
    pub const ZERO: Sha256Hash = Sha256Hash([0; 32]);

    /// The hash of one line's exact bytes (without its newline).
    pub fn of_line(line: &[u8]) -> Sha256Hash {
        Sha256Hash(Sha256::digest(line).into())
    }

    /// Reads 64 hex digits (either case); anything else is not a hash.
    pub fn from_hex(text: &str) -> Option<Sha256Hash> {
        let mut bytes = [0u8; 32];
        hex::decode_to_slice(text, &mut bytes).ok()?;
        Some(Sha256Hash(bytes))
    }
}

impl fmt::Display for Sha256Hash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&hex::encode(self.0))
    }
}

impl fmt::Debug for Sha256Hash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Sha256Hash({self})")
    }
}

/// A line's place and hash, `SEQ:SHA256`: what `chock log head` prints and
/// what a person keeps elsewhere to check the log against later.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Head {
    /// The line's `seq`.
    pub seq: u64,
    /// The sha256 of the line's exact bytes.
    pub hash: Sha256Hash,
}

impl fmt::Display for Head {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.seq, self.hash)
    }
}

/// Why a `SEQ:SHA256` text is not a head.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HeadError {
    /// The text has no colon between the two parts.
    #[error("`{0}` is not a head: write it as SEQ:SHA256, as `chock log head` prints it")]
    Shape(String),
    /// The part before the colon is not a whole number.
    #[error(
        "`{0}` is not a head: the part before the colon must be a line's seq (a whole number from 1)"
    )]
    Seq(String),
    /// The part after the colon is not a sha256.
    #[error("`{0}` is not a head: the part after the colon must be 64 hex digits")]
    Hash(String),
}

impl FromStr for Head {
    type Err = HeadError;

    fn from_str(text: &str) -> Result<Head, HeadError> {
        let trimmed = text.trim();
        let (seq, hash) = trimmed
            .split_once(':')
            .ok_or_else(|| HeadError::Shape(text.to_owned()))?;
        let seq = seq
            .parse::<u64>()
            .ok()
            .filter(|seq| *seq >= 1)
            .ok_or_else(|| HeadError::Seq(text.to_owned()))?;
        let hash = Sha256Hash::from_hex(hash).ok_or_else(|| HeadError::Hash(text.to_owned()))?;
        Ok(Head { seq, hash })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_layer_is_answered_by_its_kind_and_spelt_as_the_policy_spells_it() {
        let by = chock_policy::DecidedBy {
            layer: Layer::Project,
            file: Some("/src/demo/chock.zon".into()),
            line: Some(7),
            rule: None,
            policy: Some("no-big".into()),
            held: None,
            identity: None,
        };
        let line = DecidedBy::from(&by);
        assert_eq!(
            (line.layer, line.file.as_deref(), line.line),
            (Layer::Project, Some("/src/demo/chock.zon"), Some(7))
        );
        assert_eq!(line.policy.as_deref(), Some("no-big"));
        assert_eq!(AnsweredBy::of_layer(Layer::Policy), AnsweredBy::Rule);
        assert_eq!(AnsweredBy::of_layer(Layer::Nothing), AnsweredBy::Nobody);
        assert_eq!(AnsweredBy::of_layer(Layer::Default), AnsweredBy::Default);
        assert_eq!(AnsweredBy::of_layer(Layer::Org), AnsweredBy::Rule);
    }

    fn entry() -> Entry {
        Entry {
            route: Route::Cli,
            project: "/src/demo".into(),
            action: "call.write_file".into(),
            agent_kind: "coder".into(),
            model: None,
            tool: Some("Write".into()),
            decision: Decision::Allow,
            decided_by: DecidedBy {
                layer: Layer::Project,
                file: Some("/src/demo/chock.zon".into()),
                line: Some(7),
                policy: None,
                held: None,
                identity: None,
            },
            answered_by: AnsweredBy::Rule,
            subject: None,
            scope: None,
        }
    }

    #[test]
    fn a_person_s_scope_is_written_last_and_reads_back() {
        for scope in [Scope::Once, Scope::Session, Scope::Always] {
            let mut entry = entry();
            entry.answered_by = AnsweredBy::Person;
            entry.scope = Some(scope);
            let line = serde_json::to_string(&entry).unwrap();
            let word = format!(r#","subject":null,"scope":"{scope}"}}"#);
            assert!(line.ends_with(&word), "{line}");
            assert_eq!(serde_json::from_str::<Entry>(&line).unwrap(), entry);
            assert_eq!(Scope::parse(scope.as_str()), Some(scope));
        }
        let plain = serde_json::to_string(&entry()).unwrap();
        let unknown = format!(r#"{},"scope":"forever"}}"#, &plain[..plain.len() - 1]);
        assert!(serde_json::from_str::<Entry>(&unknown).is_err());
    }

    #[test]
    fn fields_go_out_in_the_documented_order() {
        let record = Record {
            seq: 3,
            prev: Sha256Hash::ZERO.to_string(),
            unchained: None,
            ts: "2025-01-02T03:04:05.678Z".into(),
            entry: entry(),
        };
        let line = serde_json::to_string(&record).unwrap();
        let zeros = "0".repeat(64);
        assert_eq!(
            line,
            format!(
                r#"{{"seq":3,"prev":"{zeros}","ts":"2025-01-02T03:04:05.678Z","route":"cli","project":"/src/demo","action":"call.write_file","agent_kind":"coder","model":null,"tool":"Write","decision":"allow","decided_by":{{"layer":"project","file":"/src/demo/chock.zon","line":7}},"answered_by":"rule","subject":null}}"#
            )
        );
        let back: Record = serde_json::from_str(&line).unwrap();
        assert_eq!(back, record);
    }

    #[test]
    fn unchained_goes_right_after_the_chain_fields() {
        let record = Record {
            seq: 1,
            prev: Sha256Hash::ZERO.to_string(),
            unchained: Some("the lock stayed held".into()),
            ts: "2025-01-02T03:04:05.678Z".into(),
            entry: entry(),
        };
        let line = serde_json::to_string(&record).unwrap();
        assert!(
            line.contains(r#"0","unchained":"the lock stayed held","ts":"#),
            "{line}"
        );
    }

    #[test]
    fn heads_read_back_what_they_print() {
        let head = Head {
            seq: 42,
            hash: Sha256Hash::of_line(b"x"),
        };
        assert_eq!(head.to_string().parse::<Head>(), Ok(head));
        assert!(matches!("42".parse::<Head>(), Err(HeadError::Shape(_))));
        assert!(matches!("0:ab".parse::<Head>(), Err(HeadError::Seq(_))));
        assert!(matches!("x:ab".parse::<Head>(), Err(HeadError::Seq(_))));
        assert!(matches!("4:abc".parse::<Head>(), Err(HeadError::Hash(_))));
    }

    #[test]
    fn line_hash_is_plain_sha256_of_the_bytes() {
        assert_eq!(
            Sha256Hash::of_line(b"abc").to_string(),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }
}
