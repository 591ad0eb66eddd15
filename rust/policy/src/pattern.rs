//! The pattern language, one for rules, the org bundle and self-restrictions:
//! a name matches itself; a name ending in `.*` matches every name below it.
//! Nothing else: a `*` anywhere but a final `.*` is refused, with what to
//! write instead.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A checked pattern.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Pattern {
    text: Box<str>,
    class: bool,
}

/// Why a pattern was refused. Each message says what to write instead.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PatternError {
    #[error("`*` is not a pattern: leave the field out to match every value")]
    Star,
    #[error(
        "an empty pattern names nothing: leave the field out to match every value, or write a name such as `git.push`"
    )]
    Empty,
    #[error(
        "`.*` has no name before it: leave the field out to match every value, or write a class such as `git.*`"
    )]
    BareClass,
    #[error(
        "`{written}` has a `*` that does not end it: a `*` may only end a pattern as `.*`; write `{instead}` for the whole class, or name each action in full"
    )]
    InnerStar { written: String, instead: String },
    #[error("a pattern cannot hold a NUL byte: remove it")]
    Nul,
}

/// The score an exact name gets: above any class, however long.
pub const EXACT_SCORE: u64 = 1 << 32;

impl Pattern {
    pub fn parse(text: &str) -> Result<Pattern, PatternError> {
        if text.contains('\0') {
            return Err(PatternError::Nul);
        }
        match text {
            "*" => return Err(PatternError::Star),
            "" => return Err(PatternError::Empty),
            ".*" => return Err(PatternError::BareClass),
            _ => {}
        }
        let (body, class) = match text.strip_suffix(".*") {
            Some(body) => (body, true),
            None => (text, false),
        };
        if body.contains('*') {
            let before = body.split('*').next().unwrap_or("").trim_end_matches('.');
            let instead = if before.is_empty() {
                "the full name".to_string()
            } else {
                format!("{before}.*")
            };
            return Err(PatternError::InnerStar {
                written: text.to_string(),
                instead,
            });
        }
        Ok(Pattern {
            text: text.into(),
            class,
        })
    }

    /// The pattern as written.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    pub fn is_class(&self) -> bool {
        self.class
    }

    /// A class's prefix (`git` for `git.*`), or the whole exact name.
    pub fn body(&self) -> &str {
        if self.class {
            self.text.get(..self.text.len() - 2).unwrap_or("")
        } else {
            &self.text
        }
    }

    /// Exact names match only themselves; `p.*` matches `p.` followed by at
    /// least one byte, so `git.*` matches `git.push` and not `git` or `gitlab.push`.
    pub fn matches(&self, value: &str) -> bool {
        if !self.class {
            return *self.text == *value;
        }
        let body = self.body();
        value.len() > body.len() + 1
            && value.starts_with(body)
            && value.as_bytes().get(body.len()) == Some(&b'.')
    }

    /// Whether every name `other` matches, `self` matches too (used by the
    /// ratchet): an exact name covers only itself; a class covers every
    /// name it matches, itself, and every narrower class below it
    /// (`git.*` covers `git.branch.*`, not the other way); a name never
    /// covers a class.
    pub fn covers(&self, other: &Pattern) -> bool {
        match (self.class, other.class) {
            (false, false) => self.text == other.text,
            (false, true) => false,
            (true, false) => self.matches(&other.text),
            (true, true) => self.body() == other.body() || self.matches(other.body()),
        }
    }

    /// How specific the pattern is: an exact name beats any class, and a
    /// class with more segments beats one with fewer.
    pub fn score(&self) -> u64 {
        if self.class {
            self.body().split('.').count() as u64
        } else {
            EXACT_SCORE
        }
    }
}

impl fmt::Display for Pattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl<'de> Deserialize<'de> for Pattern {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        Pattern::parse(&text).map_err(serde::de::Error::custom)
    }
}

impl Serialize for Pattern {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> Pattern {
        Pattern::parse(s).unwrap_or_else(|e| panic!("{s}: {e}"))
    }

    #[test]
    fn a_name_matches_only_itself() {
        assert!(p("git.push").matches("git.push"));
        assert!(!p("git.push").matches("git.push.x"));
        assert!(!p("git.push").matches("Git.push"));
        assert!(!p("git.push").matches("git"));
    }

    #[test]
    fn a_class_matches_names_below_it_only() {
        let git = p("git.*");
        assert!(git.matches("git.push"));
        assert!(git.matches("git.branch.delete"));
        assert!(!git.matches("git"));
        assert!(!git.matches("git."));
        assert!(!git.matches("gitlab.push"));
        assert!(!git.matches("xgit.push"));
    }

    #[test]
    fn a_class_covers_itself_and_narrower_classes_and_a_name_only_itself() {
        assert!(p("git.*").covers(&p("git.*")));
        assert!(p("git.*").covers(&p("git.branch.*")));
        assert!(p("git.*").covers(&p("git.push")));
        assert!(!p("git.branch.*").covers(&p("git.*")));
        assert!(!p("git.*").covers(&p("gitlab.*")));
        assert!(!p("git.*").covers(&p("git")));
        assert!(p("git.push").covers(&p("git.push")));
        assert!(!p("git.push").covers(&p("git.push.*")));
        assert!(!p("git.push").covers(&p("git.*")));
    }

    #[test]
    fn refusals_say_what_to_write_instead() {
        assert_eq!(Pattern::parse("*"), Err(PatternError::Star));
        assert!(
            PatternError::Star
                .to_string()
                .contains("leave the field out to match every value")
        );
        assert_eq!(Pattern::parse(""), Err(PatternError::Empty));
        assert_eq!(Pattern::parse(".*"), Err(PatternError::BareClass));
        assert_eq!(Pattern::parse("a\0b"), Err(PatternError::Nul));
        let inner = Pattern::parse("a.*.b").expect_err("inner star");
        assert!(inner.to_string().contains("write `a.*`"), "{inner}");
        let glob = Pattern::parse("git*").expect_err("glob");
        assert!(glob.to_string().contains("write `git.*`"), "{glob}");
        assert!(Pattern::parse("git.*.push").is_err());
        assert!(Pattern::parse("*.push").is_err());
    }

    #[test]
    fn scores_rank_exact_over_long_classes_over_short_ones() {
        assert_eq!(p("git.*").score(), 1);
        assert_eq!(p("git.branch.*").score(), 2);
        assert_eq!(p("git.push").score(), EXACT_SCORE);
        assert!(p("a.b.c.d.e.f.*").score() < p("x").score());
    }

    #[test]
    fn every_refusal_reads_differently() {
        let messages = [
            PatternError::Star.to_string(),
            PatternError::Empty.to_string(),
            PatternError::BareClass.to_string(),
            Pattern::parse("a*").expect_err("x").to_string(),
            PatternError::Nul.to_string(),
        ];
        for (i, a) in messages.iter().enumerate() {
            for b in messages.iter().skip(i + 1) {
                assert_ne!(a, b);
            }
        }
    }
}
