//! The measures a rule answers, each one number and the line it is found at.

use std::time::Instant;

use streaming_iterator::StreamingIterator;

use crate::{Language, Refusal};

/// What a rule measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Measure {
    /// The longest line, in characters.
    LineLength,
    /// The deepest nesting of blocks (sets, lists and `let`s in Nix).
    NestingDepth,
    /// The longest function, in lines.
    FunctionLength,
    /// How many times a tree-sitter query matches.
    QueryMatches,
}

impl Measure {
    pub const ALL: [Measure; 4] = [
        Measure::LineLength,
        Measure::NestingDepth,
        Measure::FunctionLength,
        Measure::QueryMatches,
    ];

    /// The name a rule's `.measure` gives it.
    pub fn name(self) -> &'static str {
        match self {
            Measure::LineLength => "line_length",
            Measure::NestingDepth => "nesting_depth",
            Measure::FunctionLength => "function_length",
            Measure::QueryMatches => "query_matches",
        }
    }

    /// Every name, for a sentence that lists them.
    pub fn names() -> String {
        Measure::ALL.map(Measure::name).join(", ")
    }

    /// `value` of this measure, in words.
    pub(crate) fn said(self, value: u64) -> String {
        match self {
            Measure::LineLength => format!("a line of {value} characters"),
            Measure::NestingDepth => format!("blocks nested {value} deep"),
            Measure::FunctionLength => format!("a function of {value} lines"),
            Measure::QueryMatches => format!("match {value} of its query"),
        }
    }
}

/// A measure's answer: the number, and the line (from 1) it is found at
/// (0 when the content holds nothing measured).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reading {
    pub value: u64,
    pub line: usize,
}

/// A query held more matches in progress than tree-sitter keeps.
pub(crate) struct QueryOverflow;

/// The longest line of `content`, in characters, and the first line that long.
pub(crate) fn line_length(content: &str) -> Reading {
    let mut longest = Reading { value: 0, line: 0 };
    for (number, line) in content.lines().enumerate() {
        let length = line.chars().count() as u64;
        if length > longest.value {
            longest = Reading {
                value: length,
                line: number + 1,
            };
        }
    }
    longest
}

/// `content` parsed as `language`; `None` when `deadline` came first.
pub(crate) fn parse(
    language: Language,
    content: &str,
    deadline: Instant,
) -> Result<Option<tree_sitter::Tree>, Refusal> {
    let mut parser = tree_sitter::Parser::new();
    parser
        .set_language(&language.grammar())
        .map_err(|e| Refusal::Grammar {
            language,
            why: e.to_string(),
        })?;
    let bytes = content.as_bytes();
    let mut read = |offset: usize, _| bytes.get(offset..).unwrap_or_default();
    // tree-sitter calls this as it works; true cancels the parse.
    let mut late = |_: &tree_sitter::ParseState| Instant::now() >= deadline;
    let options = tree_sitter::ParseOptions::new().progress_callback(&mut late);
    Ok(parser.parse_with_options(&mut read, None, Some(options)))
}

/// How often a walk of the tree looks at the clock, in nodes.
const CLOCK_EVERY: u32 = 4096;

/// The deepest nesting or the longest function of `tree`; `None` when
/// `deadline` came first.
pub(crate) fn walk(
    tree: &tree_sitter::Tree,
    language: Language,
    measure: Measure,
    deadline: Instant,
) -> Option<Reading> {
    let grammar = language.grammar();
    let kinds = match measure {
        Measure::NestingDepth => language.nesting_kinds(),
        _ => language.function_kinds(),
    };
    let ids: Vec<u16> = kinds
        .iter()
        .map(|k| grammar.id_for_node_kind(k, true))
        .collect();
    let mut best = Reading { value: 0, line: 0 };
    let mut cursor = tree.walk();
    // How many counted nodes enclose the cursor's node, itself included.
    let mut depth: u64 = 0;
    let mut seen: u32 = 0;
    loop {
        seen = seen.wrapping_add(1);
        if seen.is_multiple_of(CLOCK_EVERY) && Instant::now() >= deadline {
            return None;
        }
        let node = cursor.node();
        let counted = ids.contains(&node.kind_id());
        if counted {
            depth += 1;
            let start = node.start_position().row;
            let value = match measure {
                Measure::NestingDepth => depth,
                _ => (node.end_position().row - start + 1) as u64,
            };
            if value > best.value {
                best = Reading {
                    value,
                    line: start + 1,
                };
            }
        }
        if cursor.goto_first_child() {
            continue;
        }
        // A leaf: leave it and every node whose last child it ends.
        let mut leaving = counted;
        loop {
            if leaving {
                depth -= 1;
            }
            if cursor.goto_next_sibling() {
                break;
            }
            if !cursor.goto_parent() {
                return Some(best);
            }
            leaving = ids.contains(&cursor.node().kind_id());
        }
    }
}

/// How many times `query` matches `tree`, and the line of the first match
/// over `limit` (else of the last); `None` when `deadline` came first.
pub(crate) fn query_matches(
    tree: &tree_sitter::Tree,
    query: &tree_sitter::Query,
    content: &str,
    limit: u64,
    deadline: Instant,
) -> Result<Option<Reading>, QueryOverflow> {
    let mut cursor = tree_sitter::QueryCursor::new();
    cursor.set_match_limit(crate::MATCH_LIMIT);
    let mut late = |_: &tree_sitter::QueryCursorState| Instant::now() >= deadline;
    let options = tree_sitter::QueryCursorOptions::new().progress_callback(&mut late);
    let mut matches =
        cursor.matches_with_options(query, tree.root_node(), content.as_bytes(), options);
    let mut reading = Reading { value: 0, line: 0 };
    while let Some(found) = matches.next() {
        reading.value += 1;
        if let Some(capture) = found.captures.first() {
            reading.line = capture.node.start_position().row + 1;
        }
        if reading.value > limit {
            break;
        }
    }
    drop(matches);
    if cursor.did_exceed_match_limit() {
        return Err(QueryOverflow);
    }
    // A cancelled query ends as if it had no more matches.
    if Instant::now() >= deadline {
        return Ok(None);
    }
    Ok(Some(reading))
}
