//! A rule's tree-sitter query, compiled within a bound. tree-sitter's
//! query compiler cannot take a group or an alternation that holds no node
//! pattern (`((#eq? @a "x"))`): quantified (`+`, `*`, `?`) it loops with its
//! memory growing without end, captured it fails an assertion and aborts
//! the process. It loops too on a repetition of what may be empty
//! (`(identifier)*+`, `((identifier)*)+`). Both are refused before the
//! compiler sees the text (a quantifier on a quantifier, or on a grouping
//! that holds a `*` or a `?`, is refused),
//! and every compile runs on a thread of its own that is waited for
//! [`COMPILE_TIME`] at most, so a query that still does not come back
//! refuses the rule.

use std::time::Duration;

/// How long a query may take to compile.
pub const COMPILE_TIME: Duration = Duration::from_secs(2);

/// The offset of a group or an alternation holding no node pattern, or
/// of a quantifier on a quantifier or on a grouping that may be empty, if
/// `query` has one.
pub(crate) fn empty_group(query: &str) -> Option<usize> {
    struct Open {
        at: usize,
        /// `(#...)`: a predicate, whose strings are arguments, not nodes.
        predicate: bool,
        /// It holds a node pattern: a node, `_`, or an anonymous node's string.
        node: bool,
        /// A node of a name (`(block ...)`), never empty, unlike a grouping.
        named: bool,
        /// Something directly in it may be absent (`*`, `?`).
        quantified: bool,
    }
    let bytes = query.as_bytes();
    let mut open: Vec<Open> = Vec::new();
    // Whether the last thing read was a quantifier, and whether a
    // quantifier now would repeat a grouping that holds one.
    let mut after_quantifier = false;
    let mut repeats_quantified = false;
    let mut i = 0;
    while i < bytes.len() {
        let byte = bytes[i];
        if matches!(byte, b'+' | b'*' | b'?') {
            if after_quantifier || repeats_quantified {
                return Some(i);
            }
            // `*` and `?` may match nothing; a repetition of that loops.
            if let Some(group) = open.last_mut().filter(|_| byte != b'+') {
                group.quantified = true;
            }
            after_quantifier = true;
            i += 1;
            continue;
        }
        if !byte.is_ascii_whitespace() {
            after_quantifier = false;
            repeats_quantified = false;
        }
        match byte {
            b';' => {
                while i < bytes.len() && bytes[i] != b'\n' {
                    i += 1;
                }
            }
            b'"' => {
                i += 1;
                while i < bytes.len() && bytes[i] != b'"' {
                    i += if bytes[i] == b'\\' { 2 } else { 1 };
                }
                if let Some(group) = open.last_mut().filter(|g| !g.predicate) {
                    group.node = true;
                }
            }
            b'_' if !bytes
                .get(i + 1)
                .is_some_and(|b| b.is_ascii_alphanumeric() || *b == b'_') =>
            {
                if let Some(group) = open.last_mut().filter(|g| !g.predicate) {
                    group.node = true;
                }
            }
            b'(' | b'[' => {
                let next = bytes[i + 1..]
                    .iter()
                    .find(|b| !b.is_ascii_whitespace())
                    .copied();
                let named =
                    bytes[i] == b'(' && next.is_some_and(|b| b.is_ascii_alphabetic() || b == b'_');
                open.push(Open {
                    at: i,
                    predicate: bytes[i] == b'(' && next == Some(b'#'),
                    node: named,
                    named,
                    quantified: false,
                });
            }
            b')' | b']' => {
                let Some(group) = open.pop() else {
                    // Unbalanced: the compiler says so.
                    return None;
                };
                if !group.node && !group.predicate {
                    return Some(group.at);
                }
                repeats_quantified = group.quantified && !group.named;
                if group.node
                    && let Some(parent) = open.last_mut()
                {
                    parent.node = true;
                }
            }
            _ => {}
        }
        i += 1;
    }
    None
}

/// `text` compiled for `grammar`, on a thread waited for [`COMPILE_TIME`]:
/// `None` when it did not come back in time (the thread is left to its
/// loop, and the rule, refused, makes the session stop).
pub(crate) fn compile(
    grammar: tree_sitter::Language,
    text: &str,
) -> Option<Result<tree_sitter::Query, tree_sitter::QueryError>> {
    let (send, receive) = std::sync::mpsc::channel();
    let text = text.to_owned();
    std::thread::Builder::new()
        .name("style-query".into())
        .spawn(move || {
            let _ = send.send(tree_sitter::Query::new(&grammar, &text));
        })
        .ok()?;
    receive.recv_timeout(COMPILE_TIME).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_group_with_no_node_is_found() {
        for query in [
            "((#bi))+",
            "((#bi \"x\"))+",
            "[(#bi)] *",
            "((#bi\"gn\"\"nbiai\"gn\"\"ng\"n+i\"n))+\n",
            "(block ((#eq? @a \"x\"))?)",
            "((#i\x0bn))\n@x",
            "()",
            "[]",
            "(identifier)*+ @a",
            "_*+ @a",
            "(identifier) * + @a",
            "((identifier)*)+ @a",
            "[(a) (b)?]* @x",
            "______________@_________*+_______@___________",
        ] {
            assert!(empty_group(query).is_some(), "{query:?}");
        }
        for query in [
            "((identifier) @c (#bi))+",
            "((_)+)+ @x",
            "(\"fn\")+ @f",
            "[(identifier) (string)]* @x",
            "; a comment )+\n(block) @b",
            "(string \")+\") @s",
            "[_ (block)] @x",
            "(block (identifier)*)+ @b",
            "((identifier) @a . (block))+",
            "((identifier) @a (#eq? @a \"x\"))",
        ] {
            assert_eq!(empty_group(query), None, "{query}");
        }
    }

    #[test]
    fn the_query_that_hangs_the_compiler_is_refused_at_once() {
        let started = std::time::Instant::now();
        let refused = crate::Rule::new(crate::RuleSpec {
            name: "q",
            language: Some("tsx"),
            measure: Some(crate::Measure::QueryMatches),
            query: Some("((#bi\"gn\"\"nbiai\"gn\"\"ng\"n+i\"n))+\n"),
            ..crate::RuleSpec::default()
        })
        .expect_err("refused")
        .to_string();
        assert!(refused.contains("holds no node pattern"), "{refused}");
        assert!(started.elapsed() < Duration::from_secs(1));
    }
}
