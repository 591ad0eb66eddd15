//! The five answers, least permissive first. The order is the rank, and the
//! rank is what every fold uses: two answers meet at the lower one.

use std::fmt;

use serde::{Deserialize, Serialize};

/// One answer to an act. `Ord` follows the rank: `Deny < AgentThenHuman <
/// Ask < AgentReview < Allow`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    /// Refused.
    Deny,
    /// A reviewer agent says yes, then a person says yes: stricter than `ask`.
    AgentThenHuman,
    /// One yes from a person.
    Ask,
    /// One yes from a reviewer agent: the one answer that lets work through
    /// with nobody awake, so it ranks above `ask`.
    AgentReview,
    /// Goes ahead with nobody asked.
    Allow,
}

impl Decision {
    /// Every decision, least permissive first.
    pub const ALL: [Decision; 5] = [
        Decision::Deny,
        Decision::AgentThenHuman,
        Decision::Ask,
        Decision::AgentReview,
        Decision::Allow,
    ];

    /// The meet of two answers: the less permissive one.
    pub fn min(self, other: Decision) -> Decision {
        std::cmp::min(self, other)
    }

    /// The word a rule writes after `.decision = .`.
    pub fn as_str(self) -> &'static str {
        match self {
            Decision::Deny => "deny",
            Decision::AgentThenHuman => "agent_then_human",
            Decision::Ask => "ask",
            Decision::AgentReview => "agent_review",
            Decision::Allow => "allow",
        }
    }

    /// Whether a person must say yes.
    pub fn needs_human(self) -> bool {
        matches!(self, Decision::Ask | Decision::AgentThenHuman)
    }

    /// Whether a reviewer agent must say yes.
    pub fn needs_review(self) -> bool {
        matches!(self, Decision::AgentReview | Decision::AgentThenHuman)
    }
}

/// A word that names no decision.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{0}` is not a decision: write deny, agent_then_human, ask, agent_review or allow")]
pub struct NotADecision(pub String);

impl std::str::FromStr for Decision {
    type Err = NotADecision;

    /// Reads the word a rule writes (`allow`, `agent_review`, ...), as logs and flags spell it.
    fn from_str(word: &str) -> Result<Decision, NotADecision> {
        Decision::ALL
            .into_iter()
            .find(|d| d.as_str() == word)
            .ok_or_else(|| NotADecision(word.to_string()))
    }
}

impl fmt::Display for Decision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rank_is_the_documented_order() {
        let mut sorted = Decision::ALL;
        sorted.sort();
        assert_eq!(sorted, Decision::ALL);
        assert!(Decision::AgentThenHuman < Decision::Ask);
        assert!(Decision::Ask < Decision::AgentReview);
    }

    #[test]
    fn min_is_the_less_permissive_and_allow_is_its_identity() {
        for a in Decision::ALL {
            assert_eq!(a.min(Decision::Allow), a);
            assert_eq!(Decision::Deny.min(a), Decision::Deny);
            for b in Decision::ALL {
                assert_eq!(a.min(b), b.min(a));
                assert!(a.min(b) <= a && a.min(b) <= b);
            }
        }
    }

    #[test]
    fn words_round_trip_through_zon() {
        for d in Decision::ALL {
            let read: Decision = chock_zon::from_str(&format!(".{}", d.as_str())).expect("reads");
            assert_eq!(read, d);
            assert_eq!(d.to_string(), d.as_str());
            assert_eq!(d.as_str().parse::<Decision>(), Ok(d));
        }
        assert!("maybe".parse::<Decision>().is_err());
        let e = chock_zon::from_str::<Decision>(".agent_reveiw").expect_err("misspelt");
        assert!(
            e.message()
                .contains("unknown variant `.agent_reveiw`: did you mean `.agent_review`?"),
            "{e}"
        );
    }

    #[test]
    fn who_must_say_yes() {
        assert!(Decision::Ask.needs_human() && !Decision::Ask.needs_review());
        assert!(Decision::AgentThenHuman.needs_human() && Decision::AgentThenHuman.needs_review());
        assert!(Decision::AgentReview.needs_review() && !Decision::AgentReview.needs_human());
        assert!(!Decision::Allow.needs_human() && !Decision::Deny.needs_review());
    }
}
