//! The ZON grammar, read into a tree of nodes that remember where they came
//! from. Everything Zig refuses is refused here, with the position of the
//! offending byte; the few things Zig accepts and we do not (bytes that are not
//! UTF-8, nesting deeper than [`MAX_DEPTH`]) are documented in `docs/zon.md`.

use std::collections::HashSet;

use crate::error::Span;
use crate::number::{self, Number};

/// Containers nest at most this deep: a bound so that no input can exhaust
/// the stack (Zig has none; a configuration file needs a handful).
pub const MAX_DEPTH: u32 = 128;

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Node {
    pub(crate) span: Span,
    pub(crate) kind: Kind,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Kind {
    Bool(bool),
    Null,
    /// An integer or character literal: sign and magnitude (`None` beyond 128 bits).
    Int {
        negative: bool,
        magnitude: Option<u128>,
    },
    Float(f64),
    Str(String),
    Enum(String),
    /// `.{}`: an empty struct or an empty tuple, as the reader's type decides.
    Empty,
    Struct(Vec<Field>),
    Tuple(Vec<Node>),
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Field {
    pub(crate) name: String,
    pub(crate) name_span: Span,
    pub(crate) value: Node,
}

/// Words Zig reserves: a field or enum name spelled like one must be quoted as `@"..."`.
pub(crate) const KEYWORDS: &[&str] = &[
    "addrspace",
    "align",
    "allowzero",
    "and",
    "anyframe",
    "anytype",
    "asm",
    "break",
    "callconv",
    "catch",
    "comptime",
    "const",
    "continue",
    "defer",
    "else",
    "enum",
    "errdefer",
    "error",
    "export",
    "extern",
    "fn",
    "for",
    "if",
    "inline",
    "noalias",
    "nosuspend",
    "noinline",
    "opaque",
    "or",
    "orelse",
    "packed",
    "pub",
    "resume",
    "return",
    "linksection",
    "struct",
    "suspend",
    "switch",
    "test",
    "threadlocal",
    "try",
    "union",
    "unreachable",
    "var",
    "volatile",
    "while",
];

/// A syntax refusal: where, and the sentence.
pub(crate) type SyntaxError = (Span, String);

type Result<T> = std::result::Result<T, SyntaxError>;

/// Parses one whole ZON document: exactly one value, with only whitespace and
/// comments around it.
pub(crate) fn parse_document(text: &str) -> Result<Node> {
    let mut p = Parser {
        text,
        src: text.as_bytes(),
        pos: 0,
        depth: 0,
    };
    if text.starts_with('\u{feff}') {
        p.pos = '\u{feff}'.len_utf8();
    }
    p.skip_trivia()?;
    let node = p.value()?;
    p.skip_trivia()?;
    if p.pos < p.src.len() {
        return Err(p.error_here(
            1,
            "expected the end of the file: a ZON file holds exactly one value",
        ));
    }
    Ok(node)
}

struct Parser<'a> {
    text: &'a str,
    src: &'a [u8],
    pos: usize,
    depth: u32,
}

impl Parser<'_> {
    fn peek(&self) -> Option<u8> {
        self.src.get(self.pos).copied()
    }

    fn peek_at(&self, ahead: usize) -> Option<u8> {
        self.src.get(self.pos + ahead).copied()
    }

    fn error_here(&self, len: usize, message: impl Into<String>) -> SyntaxError {
        (Span::new(self.pos, self.pos + len), message.into())
    }

    fn error_at(&self, at: usize, message: impl Into<String>) -> SyntaxError {
        (Span::new(at, at + 1), message.into())
    }

    /// What is at the cursor, in words, for "expected X, found Y".
    fn found(&self) -> String {
        match self.text.get(self.pos..).and_then(|s| s.chars().next()) {
            None => "the end of the file".into(),
            Some(c) if c.is_control() || c == ' ' => format!("{c:?}"),
            Some(c) => format!("`{c}`"),
        }
    }

    /// Skips whitespace and `//` comments, refusing doc comments and raw
    /// control bytes inside a comment as Zig does.
    fn skip_trivia(&mut self) -> Result<()> {
        loop {
            match self.peek() {
                Some(b' ' | b'\t' | b'\n' | b'\r') => self.pos += 1,
                Some(b'/') if self.peek_at(1) == Some(b'/') => self.comment()?,
                _ => return Ok(()),
            }
        }
    }

    fn comment(&mut self) -> Result<()> {
        let start = self.pos;
        let third = self.peek_at(2);
        let doc = third == Some(b'!') || (third == Some(b'/') && self.peek_at(3) != Some(b'/'));
        if doc {
            return Err((
                Span::new(start, start + 3),
                "doc comments (`///`, `//!`) are not allowed in ZON: write `//`".into(),
            ));
        }
        self.pos += 2;
        self.line_body("a comment").map(|_| ())
    }

    /// Consumes the rest of a line (a comment or a multi-line string line),
    /// refusing a tab or control byte and a CR that is not followed by LF.
    /// Returns the line's content without the line ending.
    fn line_body(&mut self, what: &str) -> Result<&str> {
        let start = self.pos;
        loop {
            match self.peek() {
                None | Some(b'\n') => break,
                Some(b'\r') if self.peek_at(1) == Some(b'\n') => break,
                Some(b) if b < 0x20 || b == 0x7f => {
                    return Err(self.error_here(
                        1,
                        format!("{what} cannot hold a raw {}", describe_control(b)),
                    ));
                }
                Some(_) => self.pos += 1,
            }
        }
        let end = self.pos;
        if self.peek() == Some(b'\r') {
            self.pos += 1;
        }
        if self.peek() == Some(b'\n') {
            self.pos += 1;
        }
        Ok(self.text.get(start..end).unwrap_or(""))
    }

    fn value(&mut self) -> Result<Node> {
        let start = self.pos;
        match self.peek() {
            Some(b'.') => self.dotted(),
            Some(b'"') => {
                let s = self.string_literal()?;
                Ok(self.node(start, Kind::Str(s)))
            }
            Some(b'\\') if self.peek_at(1) == Some(b'\\') => self.multiline_string(),
            Some(b'\'') => self.char_literal(),
            Some(b'0'..=b'9') => self.number(start, false),
            Some(b'-') => self.negative(),
            Some(b'a'..=b'z' | b'A'..=b'Z' | b'_') => self.bare_word(),
            Some(b'(') => Err(self.error_here(1, "parentheses are not allowed in ZON")),
            Some(b'@') => Err(self.error_here(
                1,
                "`@` starts a builtin or a quoted name, and neither is a ZON value: a quoted name needs a leading dot, as in .@\"name\"",
            )),
            _ => Err(self.error_here(
                1,
                format!(
                    "expected a value (a string, number, `.name`, `.{{ ... }}`, true, false or null), found {}",
                    self.found()
                ),
            )),
        }
    }

    fn node(&self, start: usize, kind: Kind) -> Node {
        Node {
            span: Span::new(start, self.pos),
            kind,
        }
    }

    /// `.name` (an enum literal) or `.{ ... }` (a struct or tuple).
    fn dotted(&mut self) -> Result<Node> {
        let start = self.pos;
        self.pos += 1;
        if self.peek() == Some(b'.') {
            return Err(self.error_at(start, "expected a name or `{` after `.`, found `..`"));
        }
        self.skip_trivia()?;
        if self.peek() == Some(b'{') {
            return self.container(start);
        }
        let (name, _) = self.identifier()?;
        let node = self.node(start, Kind::Enum(name));
        self.refuse_suffix()?;
        Ok(node)
    }

    /// Refuses the Zig expression forms that may follow a value but are not ZON.
    fn refuse_suffix(&mut self) -> Result<()> {
        let save = self.pos;
        self.skip_trivia()?;
        let refusal = match self.peek() {
            Some(b'.') if self.peek_at(1) != Some(b'{') && self.peek_at(1) != Some(b'.') => {
                Some("field accesses are not allowed in ZON")
            }
            Some(b'+' | b'*' | b'/' | b'%' | b'|' | b'&' | b'^' | b'<' | b'>' | b'!') => {
                Some("operators are not allowed in ZON")
            }
            Some(b'(') => Some("calls are not allowed in ZON"),
            Some(b'{') => Some("typed initializers are not allowed in ZON: write `.{`"),
            _ => None,
        };
        match refusal {
            Some(message) => Err(self.error_here(1, message)),
            None => {
                self.pos = save;
                Ok(())
            }
        }
    }

    /// A field or enum name: bare, or quoted as `@"..."`.
    fn identifier(&mut self) -> Result<(String, Span)> {
        let start = self.pos;
        match self.peek() {
            Some(b'@') if self.peek_at(1) == Some(b'"') => {
                self.pos += 1;
                let name = self.string_literal()?;
                let span = Span::new(start, self.pos);
                if name.is_empty() {
                    return Err((span, "a name cannot be empty".into()));
                }
                if name.contains('\0') {
                    return Err((span, "a name cannot hold a NUL byte".into()));
                }
                Ok((name, span))
            }
            Some(b'a'..=b'z' | b'A'..=b'Z' | b'_') => {
                while matches!(self.peek(), Some(b) if b == b'_' || b.is_ascii_alphanumeric()) {
                    self.pos += 1;
                }
                let name = self.text.get(start..self.pos).unwrap_or("").to_string();
                let span = Span::new(start, self.pos);
                if KEYWORDS.contains(&name.as_str()) {
                    return Err((
                        span,
                        format!("`{name}` is a Zig keyword: quote it as @\"{name}\""),
                    ));
                }
                Ok((name, span))
            }
            _ => Err(self.error_here(
                1,
                format!("expected a name after `.`, found {}", self.found()),
            )),
        }
    }

    fn container(&mut self, start: usize) -> Result<Node> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(
                self.error_here(1, format!("containers nest deeper than {MAX_DEPTH} levels"))
            );
        }
        self.pos += 1;
        self.skip_trivia()?;
        let kind = if self.peek() == Some(b'}') {
            self.pos += 1;
            Kind::Empty
        } else if self.at_field_init()? {
            Kind::Struct(self.struct_fields()?)
        } else {
            Kind::Tuple(self.tuple_items()?)
        };
        self.depth -= 1;
        let node = self.node(start, kind);
        self.refuse_suffix()?;
        Ok(node)
    }

    /// Whether the cursor is at `.name =`: the first element decides whether
    /// a container is a struct or a tuple.
    fn at_field_init(&mut self) -> Result<bool> {
        let save = self.pos;
        let answer = self.field_name().is_ok() && {
            self.skip_trivia()?;
            self.peek() == Some(b'=') && self.peek_at(1) != Some(b'=')
        };
        self.pos = save;
        Ok(answer)
    }

    fn field_name(&mut self) -> Result<(String, Span)> {
        if self.peek() != Some(b'.') || self.peek_at(1) == Some(b'.') {
            return Err(self.error_here(
                1,
                format!(
                    "expected a field initializer `.name = value`, found {}",
                    self.found()
                ),
            ));
        }
        self.pos += 1;
        self.skip_trivia()?;
        self.identifier()
    }

    fn struct_fields(&mut self) -> Result<Vec<Field>> {
        let mut fields = Vec::new();
        let mut seen = HashSet::new();
        loop {
            let (name, name_span) = self.field_name()?;
            self.skip_trivia()?;
            if self.peek() != Some(b'=') {
                return Err(self.error_here(
                    1,
                    format!("expected `=` after the field name, found {}", self.found()),
                ));
            }
            self.pos += 1;
            self.skip_trivia()?;
            let value = self.value()?;
            if !seen.insert(name.clone()) {
                return Err((
                    name_span,
                    format!("duplicate field `{name}`: each field may appear once"),
                ));
            }
            fields.push(Field {
                name,
                name_span,
                value,
            });
            if self.close_or_comma("field initializer")? {
                return Ok(fields);
            }
        }
    }

    fn tuple_items(&mut self) -> Result<Vec<Node>> {
        let mut items = Vec::new();
        loop {
            items.push(self.value()?);
            if self.close_or_comma("element")? {
                return Ok(items);
            }
        }
    }

    /// After an element: `}` closes (true); `,` continues unless `}` follows.
    fn close_or_comma(&mut self, element: &str) -> Result<bool> {
        self.skip_trivia()?;
        match self.peek() {
            Some(b'}') => {
                self.pos += 1;
                Ok(true)
            }
            Some(b',') => {
                self.pos += 1;
                self.skip_trivia()?;
                if self.peek() == Some(b'}') {
                    self.pos += 1;
                    return Ok(true);
                }
                Ok(false)
            }
            Some(b'=') => Err(self.error_here(
                1,
                "a tuple cannot hold `.name = value`: a container whose first element is not a field is a tuple",
            )),
            _ => Err(self.error_here(1, format!("expected `,` or `}}` after the {element}, found {}", self.found()))),
        }
    }

    /// `"..."` with Zig's escapes; the result must be UTF-8.
    fn string_literal(&mut self) -> Result<String> {
        let start = self.pos;
        self.pos += 1;
        let mut bytes = Vec::new();
        loop {
            match self.peek() {
                None | Some(b'\n') => {
                    return Err((
                        Span::new(start, start + 1),
                        "this string is not closed: add `\"` before the end of the line".into(),
                    ));
                }
                Some(b'"') => {
                    self.pos += 1;
                    break;
                }
                Some(b'\\') => {
                    self.escape(&mut bytes, false)?;
                }
                Some(b) if b < 0x20 || b == 0x7f => {
                    return Err(self.error_here(
                        1,
                        format!(
                            "a string cannot hold a raw {}: write it as an escape",
                            describe_control(b)
                        ),
                    ));
                }
                Some(b) => {
                    bytes.push(b);
                    self.pos += 1;
                }
            }
        }
        String::from_utf8(bytes).map_err(|_| {
            (
                Span::new(start, self.pos),
                "the escapes in this string make bytes that are not UTF-8: Chock reads text only"
                    .to_string(),
            )
        })
    }

    /// One escape at the cursor (`\n`, `\xHH`, `\u{H+}`, ...), appended as
    /// bytes; returns the scalar for character literals.
    fn escape(&mut self, out: &mut Vec<u8>, in_char: bool) -> Result<u32> {
        let at = self.pos;
        self.pos += 1;
        let letter = self.peek();
        self.pos += 1;
        let simple = match letter {
            Some(b'n') => Some(b'\n'),
            Some(b'r') => Some(b'\r'),
            Some(b't') => Some(b'\t'),
            Some(b'\\') => Some(b'\\'),
            Some(b'\'') => Some(b'\''),
            Some(b'"') => Some(b'"'),
            _ => None,
        };
        if let Some(b) = simple {
            out.push(b);
            return Ok(u32::from(b));
        }
        match letter {
            Some(b'x') => {
                let hi = self.hex_digit()?;
                let lo = self.hex_digit()?;
                let byte = (hi << 4 | lo) as u8;
                out.push(byte);
                Ok(u32::from(byte))
            }
            Some(b'u') => {
                let scalar = self.unicode_escape(in_char)?;
                if let Some(c) = char::from_u32(scalar) {
                    let mut buf = [0u8; 4];
                    out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
                }
                Ok(scalar)
            }
            _ => Err(self.error_at(
                at,
                format!(
                    "invalid escape `\\{}`: the escapes are \\n \\r \\t \\\\ \\' \\\" \\xHH and \\u{{H}}",
                    letter.map_or(String::new(), |b| (b as char).to_string())
                ),
            )),
        }
    }

    fn hex_digit(&mut self) -> Result<u32> {
        match self.peek().and_then(|b| (b as char).to_digit(16)) {
            Some(d) => {
                self.pos += 1;
                Ok(d)
            }
            None => {
                Err(self.error_here(1, format!("expected a hex digit, found {}", self.found())))
            }
        }
    }

    fn unicode_escape(&mut self, in_char: bool) -> Result<u32> {
        let start = self.pos;
        if self.peek() != Some(b'{') {
            return Err(self.error_here(1, "expected `{` after `\\u`, as in \\u{1F600}"));
        }
        self.pos += 1;
        let mut value: u32 = 0;
        let mut digits = 0;
        while let Some(d) = self.peek().and_then(|b| (b as char).to_digit(16)) {
            value = value.saturating_mul(16).saturating_add(d);
            digits += 1;
            self.pos += 1;
        }
        if self.peek() != Some(b'}') {
            return Err(self.error_here(
                1,
                format!("expected a hex digit or `}}`, found {}", self.found()),
            ));
        }
        self.pos += 1;
        let span = Span::new(start, self.pos);
        if digits == 0 {
            return Err((span, "empty unicode escape `\\u{}`".into()));
        }
        let surrogate = (0xD800..=0xDFFF).contains(&value);
        if value > 0x10FFFF || (surrogate && !in_char) {
            return Err((
                span,
                "this unicode escape is not a Unicode scalar value".into(),
            ));
        }
        Ok(value)
    }

    /// One or more `\\` lines, with only whitespace and comments between them.
    fn multiline_string(&mut self) -> Result<Node> {
        let start = self.pos;
        let mut lines: Vec<String> = Vec::new();
        let mut end;
        loop {
            self.pos += 2;
            lines.push(self.line_body("a multi-line string")?.to_string());
            end = self.pos;
            self.skip_trivia()?;
            if !(self.peek() == Some(b'\\') && self.peek_at(1) == Some(b'\\')) {
                break;
            }
        }
        self.pos = end;
        Ok(Node {
            span: Span::new(start, end),
            kind: Kind::Str(lines.join("\n")),
        })
    }

    /// `'x'`, `'\n'`, `'\u{1F600}'`: the code point, as an integer.
    fn char_literal(&mut self) -> Result<Node> {
        let start = self.pos;
        self.pos += 1;
        let value = match self.peek() {
            Some(b'\'') => {
                return Err((
                    Span::new(start, start + 2),
                    "empty character literal".into(),
                ));
            }
            Some(b'\\') => self.escape(&mut Vec::new(), true)?,
            Some(b) if b < 0x20 || b == 0x7f || b == b'\n' => {
                return Err(self.error_here(
                    1,
                    format!(
                        "a character literal cannot hold a raw {}",
                        describe_control(b)
                    ),
                ));
            }
            Some(_) => {
                let c = self
                    .text
                    .get(self.pos..)
                    .and_then(|s| s.chars().next())
                    .unwrap_or('\0');
                self.pos += c.len_utf8();
                u32::from(c)
            }
            None => {
                return Err((
                    Span::new(start, start + 1),
                    "this character literal is not closed".into(),
                ));
            }
        };
        if self.peek() != Some(b'\'') {
            return Err(self.error_here(
                1,
                format!(
                    "expected `'` to close the character literal, found {}",
                    self.found()
                ),
            ));
        }
        self.pos += 1;
        Ok(self.node(
            start,
            Kind::Int {
                negative: false,
                magnitude: Some(u128::from(value)),
            },
        ))
    }

    fn number(&mut self, start: usize, negative: bool) -> Result<Node> {
        let token_start = self.pos;
        let end = number::token_end(self.src, token_start);
        let token = self.src.get(token_start..end).unwrap_or(&[]);
        let parsed = number::parse(token)
            .map_err(|(offset, message)| self.error_at(token_start + offset, message))?;
        self.pos = end;
        let kind = match parsed {
            Number::Int(magnitude) => {
                if negative && magnitude == Some(0) {
                    return Err((
                        Span::new(start, end),
                        "integer literal `-0` is ambiguous: write 0, or -0.0 for a negative zero float".into(),
                    ));
                }
                Kind::Int {
                    negative,
                    magnitude,
                }
            }
            Number::Float(f) => Kind::Float(if negative { -f } else { f }),
        };
        let node = self.node(start, kind);
        self.refuse_suffix()?;
        Ok(node)
    }

    fn negative(&mut self) -> Result<Node> {
        let start = self.pos;
        self.pos += 1;
        self.skip_trivia()?;
        match self.peek() {
            Some(b'0'..=b'9') => self.number(start, true),
            Some(b'i') if self.word_at_cursor() == "inf" => {
                self.pos += 3;
                Ok(self.node(start, Kind::Float(f64::NEG_INFINITY)))
            }
            _ => Err(self.error_at(start, "expected a number or `inf` after `-`")),
        }
    }

    fn word_at_cursor(&self) -> &str {
        let rest = self.text.get(self.pos..).unwrap_or("");
        let len = rest
            .bytes()
            .take_while(|b| *b == b'_' || b.is_ascii_alphanumeric())
            .count();
        rest.get(..len).unwrap_or("")
    }

    /// `true`, `false`, `null`, `nan`, `inf`; any other bare word is refused
    /// with what the writer probably meant.
    fn bare_word(&mut self) -> Result<Node> {
        let start = self.pos;
        let word = self.word_at_cursor().to_string();
        let kind = match word.as_str() {
            "true" => Kind::Bool(true),
            "false" => Kind::Bool(false),
            "null" => Kind::Null,
            "nan" => Kind::Float(f64::NAN),
            "inf" => Kind::Float(f64::INFINITY),
            _ => {
                return Err((
                    Span::new(start, start + word.len()),
                    format!(
                        "`{word}` is not a ZON value: write \"{word}\" for a string or .{word} for an enum literal"
                    ),
                ));
            }
        };
        self.pos += word.len();
        let node = self.node(start, kind);
        self.refuse_suffix()?;
        Ok(node)
    }
}

fn describe_control(b: u8) -> String {
    match b {
        b'\t' => "tab".into(),
        b'\r' => "carriage return (CR without LF)".into(),
        b'\n' => "newline".into(),
        0 => "NUL byte".into(),
        _ => format!("control byte 0x{b:02x}"),
    }
}
