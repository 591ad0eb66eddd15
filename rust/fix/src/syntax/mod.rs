//! From source text to the lowered program: rnix parses, and our own pass
//! makes the checks Nix makes in its parser that rnix does not (duplicate
//! attributes and formals, undefined variables, a lone CR ending a comment,
//! whitespace outside `[ \t\r\n]`) while resolving every variable.

pub mod ir;
mod lower;
mod strings;

pub use lower::{LowerOptions, lower};
pub use strings::canon_path;

use crate::error::{Error, ErrorKind, Result};
use crate::source::{FileId, SourceMap};
use rnix::SyntaxKind;
use std::borrow::Cow;

/// Nix ends a `#` comment at a carriage return and counts a lone CR as a
/// line end; rnix only knows `\n`. Replacing each lone CR outside strings by
/// `\n` keeps every byte offset and makes both agree.
pub fn normalize_line_ends(text: &str) -> Cow<'_, str> {
    if !text.contains('\r') {
        return Cow::Borrowed(text);
    }
    let mut bytes = text.as_bytes().to_vec();
    while let Ok(current) = std::str::from_utf8(&bytes) {
        let mut changed = false;
        let mut offset = 0;
        let mut fixes = Vec::new();
        for (kind, token) in rnix::tokenize(current) {
            if matches!(
                kind,
                SyntaxKind::TOKEN_COMMENT | SyntaxKind::TOKEN_WHITESPACE
            ) {
                let tb = token.as_bytes();
                for (i, &b) in tb.iter().enumerate() {
                    if b == b'\r' && tb.get(i + 1) != Some(&b'\n') {
                        let at_token_end = i + 1 == tb.len();
                        let followed_by_lf =
                            at_token_end && current.as_bytes().get(offset + i + 1) == Some(&b'\n');
                        if !followed_by_lf {
                            fixes.push(offset + i);
                        }
                    }
                }
            }
            offset += token.len();
        }
        for at in fixes {
            bytes[at] = b'\n';
            changed = true;
        }
        if !changed {
            break;
        }
    }
    match String::from_utf8(bytes) {
        Ok(s) => Cow::Owned(s),
        Err(_) => Cow::Borrowed(text),
    }
}

/// Parses the text of `file` (already normalised and registered in
/// `sources`) and returns the syntax tree, or the first error with its
/// position.
pub fn parse(sources: &SourceMap, file: FileId) -> Result<rnix::Root> {
    let text = &sources.file(file).text;
    let parse = rnix::Root::parse(text);
    if let Some(error) = parse.errors().first() {
        let (offset, message) = describe_parse_error(error, text.len());
        return Err(Error::new(
            ErrorKind::Parse,
            message,
            sources.pos(file, offset),
        ));
    }
    let root = parse.tree();
    check_tokens(&root, sources, file)?;
    Ok(root)
}

/// rnix treats any Unicode whitespace as whitespace; Nix only `[ \t\r\n]`.
/// Only a non-ASCII whitespace character can differ, so the text is
/// scanned for those and each one's token looked at.
fn check_tokens(root: &rnix::Root, sources: &SourceMap, file: FileId) -> Result<()> {
    use rowan::ast::AstNode;
    let text = &sources.file(file).text;
    for (offset, c) in non_ascii_chars(text).filter(|(_, c)| c.is_whitespace()) {
        let at = rnix::TextSize::from(u32::try_from(offset).unwrap_or(u32::MAX));
        let in_whitespace = root
            .syntax()
            .token_at_offset(at)
            .right_biased()
            .is_some_and(|t| t.kind() == SyntaxKind::TOKEN_WHITESPACE);
        if in_whitespace {
            return Err(Error::new(
                ErrorKind::Parse,
                format!("syntax error, unexpected invalid token {c:?}"),
                sources.pos(file, offset),
            ));
        }
    }
    Ok(())
}

/// The characters of `text` outside ASCII, with their offsets. Most
/// sources are ASCII or nearly so: the text is passed over in blocks,
/// each checked whole a word at a time, and decoded only where a block
/// holds something else.
fn non_ascii_chars(text: &str) -> impl Iterator<Item = (usize, char)> + '_ {
    const BLOCK: usize = 64;
    let bytes = text.as_bytes();
    let mut at = 0;
    std::iter::from_fn(move || {
        while at < bytes.len() {
            let end = (at + BLOCK).min(bytes.len());
            let block = &bytes[at..end];
            if block.is_ascii() {
                at = end;
                continue;
            }
            // `at` is a character's start: it follows an ASCII byte or a
            // whole character.
            let offset = at + block.iter().position(|b| !b.is_ascii())?;
            let c = text[offset..].chars().next()?;
            at = offset + c.len_utf8();
            return Some((offset, c));
        }
        None
    })
}

fn describe_parse_error(error: &rnix::ParseError, len: usize) -> (usize, String) {
    use rnix::ParseError as P;
    match error {
        P::Unexpected(range) => (
            usize::from(range.start()),
            "syntax error, unexpected input".to_string(),
        ),
        P::UnexpectedExtra(range) => (
            usize::from(range.start()),
            "syntax error, unexpected input, expecting end of file".to_string(),
        ),
        P::UnexpectedWanted(got, range, wanted) => (
            usize::from(range.start()),
            format!(
                "syntax error, unexpected {}, expecting {}",
                describe_kind(*got),
                describe_list(wanted)
            ),
        ),
        P::UnexpectedDoubleBind(range) => (
            usize::from(range.start()),
            "syntax error, the argument pattern is bound twice".to_string(),
        ),
        P::UnexpectedEOF => (len, "syntax error, unexpected end of file".to_string()),
        P::UnexpectedEOFWanted(wanted) => (
            len,
            format!(
                "syntax error, unexpected end of file, expecting {}",
                describe_list(wanted)
            ),
        ),
        P::DuplicatedArgs(range, name) => (
            usize::from(range.start()),
            format!("duplicate formal function argument '{name}'"),
        ),
        P::RecursionLimitExceeded => (
            0,
            "the expression is nested too deeply to parse".to_string(),
        ),
        _ => (0, format!("syntax error: {error}")),
    }
}

fn describe_list(kinds: &[SyntaxKind]) -> String {
    let names: Vec<String> = kinds.iter().map(|k| describe_kind(*k)).collect();
    match names.len() {
        0 => "something else".to_string(),
        1 => names[0].clone(),
        n => format!("{} or {}", names[..n - 1].join(", "), names[n - 1]),
    }
}

fn describe_kind(kind: SyntaxKind) -> String {
    use SyntaxKind::*;
    let text = match kind {
        TOKEN_ADD => "'+'",
        TOKEN_AND_AND => "'&&'",
        TOKEN_ASSIGN => "'='",
        TOKEN_ASSERT => "'assert'",
        TOKEN_AT => "'@'",
        TOKEN_COLON => "':'",
        TOKEN_COMMA => "','",
        TOKEN_CONCAT => "'++'",
        TOKEN_DIV => "'/'",
        TOKEN_DOT => "'.'",
        TOKEN_ELLIPSIS => "'...'",
        TOKEN_ELSE => "'else'",
        TOKEN_EQUAL => "'=='",
        TOKEN_ERROR => "invalid token",
        TOKEN_FLOAT => "floating-point literal",
        TOKEN_IDENT => "identifier",
        TOKEN_IF => "'if'",
        TOKEN_IMPLICATION => "'->'",
        TOKEN_IN => "'in'",
        TOKEN_INHERIT => "'inherit'",
        TOKEN_INTEGER => "integer literal",
        TOKEN_INTERPOL_END => "'}'",
        TOKEN_INTERPOL_START => "'${'",
        TOKEN_INVERT => "'!'",
        TOKEN_L_BRACE => "'{'",
        TOKEN_L_BRACK => "'['",
        TOKEN_L_PAREN => "'('",
        TOKEN_LESS => "'<'",
        TOKEN_LESS_OR_EQ => "'<='",
        TOKEN_LET => "'let'",
        TOKEN_MORE => "'>'",
        TOKEN_MORE_OR_EQ => "'>='",
        TOKEN_MUL => "'*'",
        TOKEN_NOT_EQUAL => "'!='",
        TOKEN_OR => "'or'",
        TOKEN_OR_OR => "'||'",
        TOKEN_PATH_ABS | TOKEN_PATH_REL => "path",
        TOKEN_PATH_HOME => "'~/' path",
        TOKEN_PATH_SEARCH => "'<path>'",
        TOKEN_PIPE_LEFT => "'<|'",
        TOKEN_PIPE_RIGHT => "'|>'",
        TOKEN_QUESTION => "'?'",
        TOKEN_R_BRACE => "'}'",
        TOKEN_R_BRACK => "']'",
        TOKEN_R_PAREN => "')'",
        TOKEN_REC => "'rec'",
        TOKEN_SEMICOLON => "';'",
        TOKEN_STRING_CONTENT => "string content",
        TOKEN_STRING_END | TOKEN_STRING_START => "string delimiter",
        TOKEN_SUB => "'-'",
        TOKEN_THEN => "'then'",
        TOKEN_UPDATE => "'//'",
        TOKEN_URI => "URI",
        TOKEN_WITH => "'with'",
        other => {
            return format!("{other:?}")
                .to_lowercase()
                .replace("node_", "")
                .replace('_', " ");
        }
    };
    text.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lone_cr_in_comment_becomes_newline() {
        assert_eq!(normalize_line_ends("# foo\rinvalid\n"), "# foo\ninvalid\n");
        assert_eq!(normalize_line_ends("# foo\r\nx\n"), "# foo\r\nx\n");
        // A CR inside an indented string is content, not a line end.
        assert_eq!(normalize_line_ends("''a\rb''"), "''a\rb''");
        assert_eq!(normalize_line_ends("1 +\r2"), "1 +\n2");
    }

    use proptest::prelude::*;

    proptest! {
        /// The block scan finds exactly the characters a char-by-char walk
        /// finds outside ASCII, wherever they fall against a block's end.
        #[test]
        fn non_ascii_chars_are_those_of_a_char_walk(
            pieces in proptest::collection::vec(
                prop_oneof![
                    "[ -~\n]{0,70}",
                    any::<char>().prop_map(String::from),
                ],
                0..12,
            )
        ) {
            let text: String = pieces.concat();
            let walked: Vec<(usize, char)> =
                text.char_indices().filter(|(_, c)| !c.is_ascii()).collect();
            prop_assert_eq!(non_ascii_chars(&text).collect::<Vec<_>>(), walked);
        }
    }

    #[test]
    fn unicode_whitespace_between_tokens_is_refused_and_in_a_comment_kept() {
        let mut sources = SourceMap::new();
        let pad = "#".repeat(63);
        let spaced = sources.add(
            crate::source::Origin::String,
            format!("{pad}\n1 +\u{a0}2").into(),
        );
        let error = parse(&sources, spaced).err().map(|e| e.render(&sources));
        assert!(
            error
                .as_deref()
                .is_some_and(|e| e.contains("unexpected invalid token")),
            "{error:?}"
        );
        let commented = sources.add(
            crate::source::Origin::String,
            format!("{pad}\u{a0}\n1 + 2 # \u{2003}").into(),
        );
        assert!(parse(&sources, commented).is_ok());
    }
}
