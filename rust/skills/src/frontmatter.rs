//! The frontmatter of a `SKILL.md`: the YAML block between two `---`
//! lines at its top, read as far as skills use YAML (top-level `key:
//! value` pairs; plain, quoted and block scalars; lists as `- item` lines
//! or `[a, b]`). Keys Chock does not read (`license`, `metadata`, `model`)
//! are passed over, as agents pass over keys they do not know. A fault is
//! named by its line in the file.

/// What Chock reads of a skill's frontmatter.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Frontmatter {
    pub name: String,
    pub description: String,
    /// `allowed-tools`, as written: advisory text shown to the model,
    /// never a permission.
    pub allowed_tools: Vec<String>,
    /// The line the body starts on (1-based).
    pub body_line: usize,
    /// The byte offset the body starts at.
    pub body_start: usize,
}

/// A fault in a frontmatter, at a line of the file (1-based).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FrontmatterError {
    pub line: usize,
    pub why: String,
}

fn fault(line: usize, why: impl Into<String>) -> FrontmatterError {
    FrontmatterError {
        line,
        why: why.into(),
    }
}

/// A value as written: one scalar, or a list of them.
enum Value {
    Scalar(String),
    List(Vec<String>),
}

/// Reads the frontmatter of `text`, a whole `SKILL.md`.
pub fn parse(text: &str) -> Result<Frontmatter, FrontmatterError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut lines = text.split_inclusive('\n');
    let first = lines.next().unwrap_or("");
    if first.trim_end() != "---" {
        return Err(fault(
            1,
            "a SKILL.md begins with a `---` line, then `name:` and `description:`, then `---`",
        ));
    }
    let mut offset = first.len();
    let mut block: Vec<(usize, &str)> = Vec::new();
    let mut closed = false;
    for (i, line) in lines.enumerate() {
        offset += line.len();
        let number = i + 2;
        if line.trim_end() == "---" {
            closed = true;
            break;
        }
        block.push((number, line.trim_end_matches(['\n', '\r'])));
    }
    if !closed {
        return Err(fault(
            1,
            "the frontmatter that opens here is never closed: end it with a `---` line",
        ));
    }
    let body_line = block.last().map_or(2, |(n, _)| n + 1) + 1;
    let mut out = Frontmatter {
        body_line,
        body_start: offset,
        ..Frontmatter::default()
    };
    let mut seen: Vec<String> = Vec::new();
    let mut at = 0;
    while at < block.len() {
        let (number, line) = block[at];
        at += 1;
        let content = line.trim_start();
        if content.is_empty() || content.starts_with('#') {
            continue;
        }
        if content.len() != line.len() {
            return Err(fault(
                number,
                "an indented line with no key above it: each top-level line is `key: value`",
            ));
        }
        let Some((key, rest)) = line.split_once(':') else {
            return Err(fault(number, "expected `key: value`"));
        };
        let key = key.trim();
        if seen.iter().any(|k| k == key) {
            return Err(fault(number, format!("`{key}` is given twice: keep one")));
        }
        seen.push(key.to_owned());
        // The lines indented under this key are its value's.
        let start = at;
        while at < block.len() {
            let (_, next) = block[at];
            if !next.trim().is_empty() && !next.starts_with([' ', '\t']) {
                break;
            }
            at += 1;
        }
        let value = value(number, rest.trim(), &block[start..at])?;
        match key {
            "name" => out.name = scalar(number, key, value)?,
            "description" => out.description = scalar(number, key, value)?,
            "allowed-tools" | "allowed_tools" => {
                out.allowed_tools = match value {
                    Value::List(items) => items,
                    Value::Scalar(text) => text
                        .split([',', ' '])
                        .map(str::trim)
                        .filter(|t| !t.is_empty())
                        .map(str::to_owned)
                        .collect(),
                }
            }
            _ => {}
        }
    }
    if out.name.is_empty() {
        return Err(fault(1, "the frontmatter gives no `name:`"));
    }
    if out.description.trim().is_empty() {
        return Err(fault(
            1,
            "the frontmatter gives no `description:`, and the description is all the model is shown of a skill: say what it does and when to use it",
        ));
    }
    Ok(out)
}

fn scalar(line: usize, key: &str, value: Value) -> Result<String, FrontmatterError> {
    match value {
        Value::Scalar(text) => Ok(text),
        Value::List(_) => Err(fault(
            line,
            format!("`{key}` is one line of text, not a list"),
        )),
    }
}

/// The value of a key: `inline` after its colon, `nested` the lines
/// indented under it.
fn value(line: usize, inline: &str, nested: &[(usize, &str)]) -> Result<Value, FrontmatterError> {
    let block_scalar = matches!(inline.chars().next(), Some('>' | '|'))
        && inline[1..].trim().chars().all(|c| matches!(c, '-' | '+'));
    if block_scalar {
        let folded = inline.starts_with('>');
        let lines: Vec<&str> = nested.iter().map(|(_, l)| l.trim()).collect();
        let text = if folded {
            lines
                .split(|l| l.is_empty())
                .map(|para| para.join(" "))
                .collect::<Vec<_>>()
                .join("\n")
        } else {
            lines.join("\n")
        };
        return Ok(Value::Scalar(text.trim().to_owned()));
    }
    if inline.is_empty() {
        let items: Vec<&(usize, &str)> = nested
            .iter()
            .filter(|(_, l)| !l.trim().is_empty())
            .collect();
        if items.is_empty() {
            return Ok(Value::Scalar(String::new()));
        }
        let mut list = Vec::new();
        for (number, item) in items {
            let item = item.trim();
            let Some(entry) = item.strip_prefix('-') else {
                // A nested map (`metadata:`): not read.
                return Ok(Value::List(Vec::new()));
            };
            list.push(plain_or_quoted(*number, entry.trim())?);
        }
        return Ok(Value::List(list));
    }
    if let Some(inner) = inline.strip_prefix('[') {
        let inner = inner
            .strip_suffix(']')
            .ok_or_else(|| fault(line, "a `[` list is closed by `]` on the same line"))?;
        let items = inner
            .split(',')
            .map(str::trim)
            .filter(|t| !t.is_empty())
            .map(|t| plain_or_quoted(line, t))
            .collect::<Result<_, _>>()?;
        return Ok(Value::List(items));
    }
    let mut text = plain_or_quoted(line, inline)?;
    // A plain scalar may go on over indented lines, folded with spaces.
    if !inline.starts_with(['"', '\'']) {
        for (_, more) in nested {
            let more = more.trim();
            if !more.is_empty() {
                text.push(' ');
                text.push_str(more);
            }
        }
    }
    Ok(Value::Scalar(text))
}

fn plain_or_quoted(line: usize, text: &str) -> Result<String, FrontmatterError> {
    if let Some(inner) = text.strip_prefix('"') {
        let mut out = String::new();
        let mut chars = inner.chars();
        while let Some(c) = chars.next() {
            match c {
                '"' => return Ok(out),
                '\\' => match chars.next() {
                    Some('n') => out.push('\n'),
                    Some('t') => out.push('\t'),
                    Some(other) => out.push(other),
                    None => break,
                },
                c => out.push(c),
            }
        }
        return Err(fault(line, "a `\"` string is not closed on its line"));
    }
    if let Some(inner) = text.strip_prefix('\'') {
        let mut out = String::new();
        let mut chars = inner.chars().peekable();
        while let Some(c) = chars.next() {
            if c == '\'' {
                if chars.peek() == Some(&'\'') {
                    chars.next();
                    out.push('\'');
                } else {
                    return Ok(out);
                }
            } else {
                out.push(c);
            }
        }
        return Err(fault(line, "a `'` string is not closed on its line"));
    }
    // A ` #` ends a plain scalar: the rest is a comment.
    let plain = text.split(" #").next().unwrap_or(text);
    Ok(plain.trim().to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_shapes_skills_are_written_in() {
        let text = "---\nname: pdf-forms\ndescription: >\n  Fill PDF forms.\n  Use when asked.\nallowed-tools: Read, Bash(python:*)\nlicense: MIT\nmetadata:\n  owner: me\n---\n# Body\n";
        let fm = parse(text).expect("reads");
        assert_eq!(fm.name, "pdf-forms");
        assert_eq!(fm.description, "Fill PDF forms. Use when asked.");
        assert_eq!(fm.allowed_tools, vec!["Read", "Bash(python:*)"]);
        assert_eq!(&text[fm.body_start..], "# Body\n");
        assert_eq!(fm.body_line, 11);
        let quoted = parse("---\nname: 'it''s'\ndescription: \"a \\\"b\\\"\" # no\nallowed-tools:\n  - Read\n  - \"Grep\"\n---\n")
            .expect("reads");
        assert_eq!(quoted.name, "it's");
        assert_eq!(quoted.description, "a \"b\"");
        assert_eq!(quoted.allowed_tools, vec!["Read", "Grep"]);
        let flow = parse("---\nname: x\ndescription: plain text\n  that goes on\nallowed-tools: [Read, 'Write']\n---\n").expect("reads");
        assert_eq!(flow.description, "plain text that goes on");
        assert_eq!(flow.allowed_tools, vec!["Read", "Write"]);
    }

    #[test]
    fn a_fault_names_its_line() {
        for (text, line, says) in [
            ("# no frontmatter\n", 1, "begins with a `---`"),
            ("---\nname: x\n", 1, "never closed"),
            ("---\nname: x\n---\n", 1, "no `description:`"),
            ("---\ndescription: d\n---\n", 1, "no `name:`"),
            ("---\nname: x\nname: y\ndescription: d\n---\n", 3, "twice"),
            ("---\nname: x\ndescription: \"open\n---\n", 3, "not closed"),
            ("---\nname: x\njust words\n---\n", 3, "key: value"),
            ("---\n  indented: x\n---\n", 2, "indented"),
            ("---\nname:\n  - a\ndescription: d\n---\n", 2, "not a list"),
        ] {
            let error = parse(text).expect_err(text);
            assert_eq!(
                (error.line, error.why.contains(says)),
                (line, true),
                "{text}: {error:?}"
            );
        }
    }
}
