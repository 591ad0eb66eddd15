//! `match` and `split` with the semantics Nix gets from `std::regex` in
//! POSIX extended mode: patterns are ERE (a backslash is literal inside a
//! bracket, `.` matches a newline), matching works on bytes, `match` must
//! cover the whole string, and `split` takes leftmost-longest matches,
//! stepping over empty matches the way `std::regex_iterator` does.

use super::{arg_context, list_value, plain_string, primop};
use crate::error::{Error, Result};
use crate::eval::Evaluator;
use crate::source::Pos;
use crate::value::{PrimOp, Value};
use regex_automata::meta::Regex;
use regex_automata::util::syntax;
use regex_automata::{Anchored, Input, MatchKind};
use std::rc::Rc;

pub static PRIMOPS: &[PrimOp] = &[primop!("match", 2, match_op), primop!("split", 2, split_op)];

/// Where a group matched, if it took part in the match.
type Groups = Vec<Option<(usize, usize)>>;

/// One pattern compiled the four ways the builtins need it.
pub struct NixRegex {
    /// Leftmost-first, unanchored: where the next match starts.
    first: Regex,
    /// Everything-matches, run anchored: how far a match can reach.
    longest: Regex,
    /// `\A(?:P)\z`: `match`.
    whole: Regex,
    /// `(?:P)\z`: the groups of a match known to end at the haystack's end.
    to_end: Regex,
    /// Whether the pattern has groups. Without any, a match's groups are
    /// known without a search that tracks them (the capture engines cost
    /// several times a DFA's search).
    has_groups: bool,
}

/// Why a pattern is not a regular expression `builtins.match` and
/// `builtins.split` take.
#[derive(Debug, thiserror::Error)]
pub enum RegexError {
    #[error("the pattern is not valid UTF-8")]
    NotUtf8,
    #[error("trailing backslash")]
    TrailingBackslash,
    #[error("unmatched '{{'")]
    UnmatchedBrace,
    #[error("invalid repetition bound '{{{0}}}'")]
    BadBound(String),
    #[error("unmatched '['")]
    UnmatchedBracket,
    #[error("unterminated character class")]
    UnterminatedClass,
    #[error("collating elements and equivalence classes are not supported")]
    Collating,
    /// The translated pattern, refused by the regex engine.
    #[error("{0}")]
    Engine(Box<regex_automata::meta::BuildError>),
}

/// Rewrites a POSIX ERE into the syntax of the `regex` crates.
pub fn translate(ere: &[u8]) -> std::result::Result<String, RegexError> {
    let text = std::str::from_utf8(ere).map_err(|_| RegexError::NotUtf8)?;
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len() + 8);
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        match c {
            '\\' => {
                let Some(&next) = chars.get(i + 1) else {
                    return Err(RegexError::TrailingBackslash);
                };
                if next.is_ascii_alphanumeric() {
                    out.push('\\');
                    out.push(next);
                } else {
                    out.push_str(&regex_syntax::escape(&next.to_string()));
                }
                i += 2;
            }
            '[' => {
                i = bracket(&chars, i, &mut out)?;
            }
            '{' => {
                // Only a valid bound `{n}`, `{n,}`, `{n,m}` may follow.
                let close = chars[i..].iter().position(|&c| c == '}').map(|p| p + i);
                let Some(close) = close else {
                    return Err(RegexError::UnmatchedBrace);
                };
                let inner: String = chars[i + 1..close].iter().collect();
                let valid = !inner.is_empty()
                    && inner.split(',').count() <= 2
                    && inner.split(',').next().is_some_and(|n| !n.is_empty())
                    && inner.chars().all(|c| c.is_ascii_digit() || c == ',');
                if !valid {
                    return Err(RegexError::BadBound(inner));
                }
                out.push('{');
                out.push_str(&inner);
                out.push('}');
                i = close + 1;
            }
            '#' | ' ' | '&' | '~' => {
                out.push_str(&regex_syntax::escape(&c.to_string()));
                i += 1;
            }
            other => {
                out.push(other);
                i += 1;
            }
        }
    }
    Ok(out)
}

/// Copies a bracket expression starting at `chars[start] == '['`.
fn bracket(
    chars: &[char],
    start: usize,
    out: &mut String,
) -> std::result::Result<usize, RegexError> {
    let mut i = start + 1;
    out.push('[');
    if chars.get(i) == Some(&'^') {
        out.push('^');
        i += 1;
    }
    let mut first = true;
    loop {
        let Some(&c) = chars.get(i) else {
            return Err(RegexError::UnmatchedBracket);
        };
        match c {
            ']' if !first => {
                out.push(']');
                return Ok(i + 1);
            }
            '[' if matches!(chars.get(i + 1), Some(':' | '=' | '.')) => {
                let kind = chars[i + 1];
                let end = (i + 2..chars.len().saturating_sub(1))
                    .find(|&j| chars[j] == kind && chars[j + 1] == ']');
                let Some(end) = end else {
                    return Err(RegexError::UnterminatedClass);
                };
                if kind != ':' {
                    return Err(RegexError::Collating);
                }
                let name: String = chars[i..end + 2].iter().collect();
                out.push_str(&name);
                i = end + 2;
            }
            '\\' | '[' | '&' | '~' | ']' => {
                out.push('\\');
                out.push(c);
                i += 1;
            }
            '-' if !first && chars.get(i + 1) != Some(&']') => {
                out.push('-');
                i += 1;
            }
            '-' => {
                out.push_str("\\-");
                i += 1;
            }
            other => {
                out.push(other);
                i += 1;
            }
        }
        first = false;
    }
}

fn build(pattern: &str, kind: MatchKind) -> std::result::Result<Regex, RegexError> {
    let syntax = syntax::Config::new()
        .unicode(false)
        .utf8(false)
        .dot_matches_new_line(true);
    Regex::builder()
        .syntax(syntax)
        .configure(Regex::config().match_kind(kind).utf8_empty(false))
        .build(pattern)
        .map_err(|e| RegexError::Engine(Box::new(e)))
}

impl NixRegex {
    pub fn compile(ere: &[u8]) -> std::result::Result<NixRegex, RegexError> {
        let p = translate(ere)?;
        let whole = build(&format!(r"\A(?:{p})\z"), MatchKind::LeftmostFirst)?;
        Ok(NixRegex {
            first: build(&p, MatchKind::LeftmostFirst)?,
            longest: build(&p, MatchKind::All)?,
            has_groups: whole.captures_len() > 1,
            whole,
            to_end: build(&format!(r"(?:{p})\z"), MatchKind::LeftmostFirst)?,
        })
    }

    /// The groups of a match of the whole of `hay`.
    pub fn full_match(&self, hay: &[u8]) -> Option<Groups> {
        if !self.has_groups {
            return self.whole.is_match(hay).then(Vec::new);
        }
        let mut caps = self.whole.create_captures();
        self.whole.captures(hay, &mut caps);
        if !caps.is_match() {
            return None;
        }
        Some(
            (1..caps.group_len())
                .map(|g| caps.get_group(g).map(|s| (s.start, s.end)))
                .collect(),
        )
    }

    /// The end of the longest match starting exactly at `at`.
    fn longest_at(&self, hay: &[u8], at: usize) -> Option<usize> {
        let input = Input::new(hay).range(at..).anchored(Anchored::Yes);
        self.longest.search_half(&input).map(|m| m.offset())
    }

    /// The leftmost-longest match at or after `from`, skipping empty
    /// matches when `non_empty_at` says so.
    fn next_match(&self, hay: &[u8], from: usize) -> Option<(usize, usize)> {
        let input = Input::new(hay).range(from..);
        let start = self.first.search(&input)?.start();
        let end = self.longest_at(hay, start).unwrap_or(start);
        Some((start, end))
    }

    /// The groups of the highest-priority match spanning exactly `start..end`.
    fn groups(&self, hay: &[u8], start: usize, end: usize) -> Groups {
        if !self.has_groups {
            return Vec::new();
        }
        let mut caps = self.to_end.create_captures();
        let input = Input::new(&hay[..end])
            .range(start..)
            .anchored(Anchored::Yes);
        self.to_end.search_captures(&input, &mut caps);
        (1..caps.group_len())
            .map(|g| caps.get_group(g).map(|s| (s.start, s.end)))
            .collect()
    }

    /// Every match as `std::regex_iterator` finds them: after an empty
    /// match, first a non-empty match at the same place, else a search one
    /// byte further on.
    pub fn matches(&self, hay: &[u8]) -> Vec<(usize, usize, Groups)> {
        let mut found = Vec::new();
        let mut from = 0;
        let mut last_empty_at: Option<usize> = None;
        loop {
            let next = match last_empty_at {
                Some(at) => match self.longest_at(hay, at) {
                    Some(end) if end > at => Some((at, end)),
                    _ => {
                        if at >= hay.len() {
                            None
                        } else {
                            self.next_match(hay, at + 1)
                        }
                    }
                },
                None => {
                    if from > hay.len() {
                        None
                    } else {
                        self.next_match(hay, from)
                    }
                }
            };
            let Some((start, end)) = next else { break };
            let groups = self.groups(hay, start, end);
            found.push((start, end, groups));
            from = end;
            last_empty_at = (start == end).then_some(end);
        }
        found
    }
}

fn compiled<'a>(
    ev: &mut Evaluator<'a>,
    v: &Value<'a>,
    pos: Pos,
    name: &'static str,
) -> Result<Rc<NixRegex>> {
    let pattern = plain_string(ev, v, pos, arg_context(0, name))?;
    if let Some(re) = ev.regex_cache.get(pattern.as_bytes()) {
        return Ok(re.clone());
    }
    let re = NixRegex::compile(pattern.as_bytes()).map_err(|e| {
        Error::eval(
            format!("invalid regular expression '{}': {e}", pattern.lossy()),
            pos,
        )
    })?;
    let re = Rc::new(re);
    ev.regex_cache
        .insert(pattern.as_bytes().to_vec(), re.clone());
    Ok(re)
}

fn group_values<'a>(hay: &[u8], groups: &[Option<(usize, usize)>]) -> Value<'a> {
    list_value(
        groups
            .iter()
            .map(|g| match g {
                Some((s, e)) => Value::string(&hay[*s..*e]),
                None => Value::Null,
            })
            .collect(),
    )
}

fn match_op<'a>(ev: &mut Evaluator<'a>, args: &[Value<'a>], pos: Pos) -> Result<Value<'a>> {
    let re = compiled(ev, &args[0], pos, "match")?;
    let s = ev.force_string(&args[1], pos, arg_context(1, "match"))?;
    match re.full_match(s.as_bytes()) {
        Some(groups) => Ok(group_values(s.as_bytes(), &groups)),
        None => Ok(Value::Null),
    }
}

fn split_op<'a>(ev: &mut Evaluator<'a>, args: &[Value<'a>], pos: Pos) -> Result<Value<'a>> {
    let re = compiled(ev, &args[0], pos, "split")?;
    let s = ev.force_string(&args[1], pos, arg_context(1, "split"))?;
    let hay = s.as_bytes();
    let matches = re.matches(hay);
    if matches.is_empty() {
        return Ok(list_value(vec![Value::String(s.clone())]));
    }
    let mut out = Vec::with_capacity(matches.len() * 2 + 1);
    let mut prev_end = 0;
    for (start, end, groups) in &matches {
        out.push(Value::string(&hay[prev_end.min(*start)..*start]));
        out.push(group_values(hay, groups));
        prev_end = *end;
    }
    out.push(Value::string(&hay[prev_end..]));
    Ok(list_value(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(re: &str, s: &str) -> Vec<(usize, usize)> {
        NixRegex::compile(re.as_bytes())
            .unwrap()
            .matches(s.as_bytes())
            .into_iter()
            .map(|(a, b, _)| (a, b))
            .collect()
    }

    #[test]
    fn split_steps_like_regex_iterator() {
        assert_eq!(split("a*", "bab"), vec![(0, 0), (1, 2), (2, 2), (3, 3)]);
        assert_eq!(split("x*", ""), vec![(0, 0)]);
        assert_eq!(split("(a|ab)", "xabz"), vec![(1, 3)]);
    }

    #[test]
    fn match_covers_the_whole_string() {
        let re = NixRegex::compile(b"(a|ab)(c|bcd)(d*)").unwrap();
        assert_eq!(
            re.full_match(b"abcd"),
            Some(vec![Some((0, 1)), Some((1, 4)), Some((4, 4))])
        );
        assert!(NixRegex::compile(b"a").unwrap().full_match(b"ab").is_none());
        assert!(
            NixRegex::compile(b".*")
                .unwrap()
                .full_match(b"a\nb")
                .is_some()
        );
    }

    #[test]
    fn ere_brackets_keep_backslash_literal() {
        let re = NixRegex::compile(br"[\.]").unwrap();
        assert!(re.full_match(b"\\").is_some());
        assert!(re.full_match(b".").is_some());
        assert!(
            NixRegex::compile(b"[]a]")
                .unwrap()
                .full_match(b"]")
                .is_some()
        );
        assert!(
            NixRegex::compile(b"[[:alpha:]]+")
                .unwrap()
                .full_match(b"abc")
                .is_some()
        );
        assert!(
            NixRegex::compile(b"a{2}")
                .unwrap()
                .full_match(b"aa")
                .is_some()
        );
        assert!(matches!(
            NixRegex::compile(b"a{x"),
            Err(RegexError::UnmatchedBrace)
        ));
    }
}
