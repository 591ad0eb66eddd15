//! Editing ZON text in place: one item added to a list, every other byte
//! kept as written (comments, spacing, order), so a tool that adds a rule
//! to a person's file changes only that rule's line.

use crate::Error;
use crate::error::Span;
use crate::parse::{Field, Kind, Node};

/// `text` with `item` (ZON source of one value) appended to the list at
/// `path` (field names from the top struct down, e.g. `["policy",
/// "rules"]`). A struct or the list missing on the way is created, as
/// small as it can be written. Refuses text that is not ZON, a path
/// through something that is not a struct, and a list that is not one.
pub fn append_to_list(text: &str, path: &[&str], item: &str) -> Result<String, Error> {
    let root = crate::parse_checked(text)?;
    let (node, depth) = deepest(&root, path);
    let rest = path[depth..]
        .iter()
        .map(|name| crate::quote_name(name).map_err(|e| Error::whole_file(None, e.to_string())))
        .collect::<Result<Vec<_>, _>>()?;
    let rest: Vec<&str> = rest.iter().map(String::as_str).collect();
    let insertions = match rest.split_first() {
        None => list_insertion(text, node, item)?,
        Some((name, rest)) => field_insertion(text, node, name, &nested(rest, item))?,
    };
    let mut edited = text.to_owned();
    for insertion in insertions.iter().rev() {
        edited.insert_str(insertion.at, &insertion.text);
    }
    Ok(edited)
}

/// Text to put at a byte offset.
struct Insertion {
    at: usize,
    text: String,
}

/// The deepest node of `path` that exists, and how many names led to it.
fn deepest<'a>(root: &'a Node, path: &[&str]) -> (&'a Node, usize) {
    let mut node = root;
    for (depth, name) in path.iter().enumerate() {
        let Kind::Struct(fields) = &node.kind else {
            return (node, depth);
        };
        match fields.iter().find(|f| f.name == *name) {
            Some(field) => node = &field.value,
            None => return (node, depth),
        }
    }
    (node, path.len())
}

/// `.{ .b = .{ item } }` for the (quoted) names `rest` below a new field.
fn nested(rest: &[&str], item: &str) -> String {
    match rest.split_first() {
        None => format!(".{{ {item} }}"),
        Some((name, rest)) => format!(".{{ .{name} = {} }}", nested(rest, item)),
    }
}

/// `name` (quoted) is a new field of the struct `node`.
fn field_insertion(
    text: &str,
    node: &Node,
    name: &str,
    value: &str,
) -> Result<Vec<Insertion>, Error> {
    let field = format!(".{name} = {value}");
    match &node.kind {
        Kind::Empty => Ok(into_empty(node, &field)),
        Kind::Struct(fields) => Ok(after_last(text, node, last_field_end(fields), &field)),
        _ => Err(not_a(text, node.span, "struct", name)),
    }
}

fn list_insertion(text: &str, node: &Node, item: &str) -> Result<Vec<Insertion>, Error> {
    match &node.kind {
        Kind::Empty => Ok(into_empty(node, item)),
        Kind::Tuple(items) => {
            let last = items.last().map_or(node.span.start, |n| n.span.end);
            Ok(after_last(text, node, last, item))
        }
        _ => Err(not_a(text, node.span, "list", "the new item")),
    }
}

fn last_field_end(fields: &[Field]) -> usize {
    fields.last().map_or(0, |f| f.value.span.end)
}

fn not_a(text: &str, span: Span, what: &str, wanted: &str) -> Error {
    Error::at(
        None,
        text,
        span,
        format!("this is not a {what}, so {wanted} cannot be added here"),
    )
}

/// `.{}` (or `.{ }`) becomes `.{ item }`.
fn into_empty(node: &Node, item: &str) -> Vec<Insertion> {
    vec![Insertion {
        at: node.span.end - 1,
        text: format!(" {item} "),
    }]
}

/// `item` after the container's last element, which ends at `last`: on
/// its own line, indented as the line the last element ends on, when the
/// container is written over several lines; else after it on the same
/// line. The last element gets the comma it lacks.
fn after_last(text: &str, node: &Node, last: usize, item: &str) -> Vec<Insertion> {
    let close = node.span.end - 1;
    let between = &text[last..close];
    let comma = between
        .trim_start_matches([' ', '\t', '\r', '\n'])
        .starts_with(',')
        .then(|| last + between.find(',').unwrap_or(0) + 1);
    let mut insertions = Vec::new();
    if comma.is_none() {
        insertions.push(Insertion {
            at: last,
            text: ",".into(),
        });
    }
    let from = comma.unwrap_or(last);
    if !text[node.span.start..close].contains('\n') {
        insertions.push(Insertion {
            at: from,
            text: format!(" {item}"),
        });
        return insertions;
    }
    let indent = indent_of_line(text, last);
    insertions.push(match text[from..close].find('\n') {
        Some(newline) => Insertion {
            at: from + newline + 1,
            text: format!("{indent}{item},\n"),
        },
        None => Insertion {
            at: from,
            text: format!("\n{indent}{item},"),
        },
    });
    insertions
}

/// The spaces and tabs that begin the line holding byte `at`.
fn indent_of_line(text: &str, at: usize) -> String {
    let start = text[..at].rfind('\n').map_or(0, |n| n + 1);
    text[start..]
        .chars()
        .take_while(|c| *c == ' ' || *c == '\t')
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const RULE: &str = ".{ .action = \"b\", .decision = .allow }";

    fn append(text: &str) -> String {
        let edited = append_to_list(text, &["policy", "rules"], RULE).unwrap();
        crate::validate(&edited).unwrap();
        edited
    }

    #[test]
    fn a_rule_joins_a_multiline_list_on_its_own_line_keeping_every_comment() {
        let text = ".{\n    // mine\n    .policy = .{\n        .rules = .{\n            .{ .action = \"a\", .decision = .ask }, // why\n        },\n    },\n}\n";
        assert_eq!(
            append(text),
            ".{\n    // mine\n    .policy = .{\n        .rules = .{\n            .{ .action = \"a\", .decision = .ask }, // why\n            .{ .action = \"b\", .decision = .allow },\n        },\n    },\n}\n"
        );
    }

    #[test]
    fn a_last_item_without_a_comma_gets_one() {
        let text = ".{ .policy = .{ .rules = .{\n    .{ .action = \"a\", .decision = .ask }\n} } }";
        assert_eq!(
            append(text),
            ".{ .policy = .{ .rules = .{\n    .{ .action = \"a\", .decision = .ask },\n    .{ .action = \"b\", .decision = .allow },\n} } }"
        );
    }

    #[test]
    fn a_one_line_list_stays_on_one_line() {
        assert_eq!(
            append(".{ .policy = .{ .rules = .{ .{ .action = \"a\", .decision = .ask } } } }"),
            ".{ .policy = .{ .rules = .{ .{ .action = \"a\", .decision = .ask }, .{ .action = \"b\", .decision = .allow } } } }"
        );
        assert_eq!(
            append(".{ .policy = .{ .rules = .{} } }"),
            ".{ .policy = .{ .rules = .{ .{ .action = \"b\", .decision = .allow } } } }"
        );
    }

    #[test]
    fn missing_blocks_are_created() {
        assert_eq!(
            append(".{}"),
            ".{ .policy = .{ .rules = .{ .{ .action = \"b\", .decision = .allow } } } }"
        );
        assert_eq!(
            append(".{\n    .name = \"p\",\n}\n"),
            ".{\n    .name = \"p\",\n    .policy = .{ .rules = .{ .{ .action = \"b\", .decision = .allow } } },\n}\n"
        );
        assert_eq!(
            append(".{ .policy = .{ .org = \"x\" } }"),
            ".{ .policy = .{ .org = \"x\", .rules = .{ .{ .action = \"b\", .decision = .allow } } } }"
        );
    }

    #[test]
    fn what_is_not_a_list_or_not_zon_is_refused() {
        for text in [
            ".{ .policy = .{ .rules = 3 } }",
            ".{ .policy = \"x\" }",
            ".{ .policy = ",
        ] {
            assert!(
                append_to_list(text, &["policy", "rules"], RULE).is_err(),
                "{text}"
            );
        }
    }
}
