//! One shell word, read the way the shell would expand it: the text it
//! certainly becomes, or the fact that it is only known at run time, and every
//! command substitution inside it (which the caller decides on its own).

use brush_parser::word::{ParameterExpr, WordPiece, WordPieceWithSource};

/// What a word expands to, as far as it can be read without running anything.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Value {
    /// The text with quotes and escapes removed and `~` replaced; meaningful
    /// only when `certain` is true.
    pub text: String,
    /// False when any part is only known at run time: a variable, a command
    /// substitution, a glob, a brace expansion, an unknown home directory.
    pub certain: bool,
}

impl Value {
    /// The word's text when it is certain, and nothing otherwise.
    pub fn literal(&self) -> Option<&str> {
        self.certain.then_some(self.text.as_str())
    }
}

/// What the word reader found besides the value: scripts to read on their
/// own and signs of text that is code.
#[derive(Debug, Default)]
pub struct Found {
    /// Command substitutions (`$(...)`, backquotes), each as script text.
    pub scripts: Vec<String>,
    /// A parameter expansion holds a command the reader cannot lift out
    /// (`${x:-$(cmd)}`, `${a[$(cmd)]}`).
    pub hidden_command: bool,
    /// A word (or a here-document) the word grammar could not read.
    pub unreadable: bool,
    /// The word grammar gave up on a word (or a here-document) that would
    /// cost more work than its bound allows.
    pub too_complex: bool,
    /// An arithmetic context (`$((...))`, `${a[i]}`) appeared: the shell may
    /// evaluate a variable's text as code there.
    pub arithmetic: bool,
    /// A quoted literal holds text that would be a command substitution if
    /// it were ever evaluated.
    pub quoted_code: bool,
}

/// Where `~` and `~+` lead, for reading words.
#[derive(Debug, Clone, Copy)]
pub struct Expansion<'a> {
    /// The home directory `~` expands to, when known.
    pub home: Option<&'a str>,
    /// The current directory `~+` expands to, when known.
    pub cwd: Option<&'a str>,
}

/// Reads one raw word as the parser gave it.
pub fn read(raw: &str, expansion: Expansion<'_>, found: &mut Found) -> Value {
    let options = crate::parser_options();
    // Third-party code reading untrusted text: a panic is a word not read.
    let parsed = std::panic::catch_unwind(|| brush_parser::word::parse(raw, &options));
    match parsed_pieces(parsed, found) {
        Some(pieces) => {
            let mut value = Value {
                text: String::new(),
                certain: true,
            };
            for piece in &pieces {
                piece_value(piece, raw, false, expansion, found, &mut value);
            }
            value
        }
        None => uncertain(),
    }
}

/// Reads the body of a here-document that undergoes expansion, collecting its
/// command substitutions.
pub fn read_heredoc(body: &str, found: &mut Found) {
    let options = crate::parser_options();
    let parsed = std::panic::catch_unwind(|| brush_parser::word::parse_heredoc(body, &options));
    if let Some(pieces) = parsed_pieces(parsed, found) {
        let mut value = uncertain();
        let none = Expansion {
            home: None,
            cwd: None,
        };
        for piece in &pieces {
            piece_value(piece, body, true, none, found, &mut value);
        }
    }
}

/// The pieces a parse of the word grammar gave, or none with `found` told
/// why (a panic in the third-party parser is a word not read).
fn parsed_pieces(
    parsed: std::thread::Result<Result<Vec<WordPieceWithSource>, brush_parser::WordParseError>>,
    found: &mut Found,
) -> Option<Vec<WordPieceWithSource>> {
    match parsed {
        Ok(Ok(pieces)) => Some(pieces),
        Ok(Err(brush_parser::WordParseError::TooComplex(_))) => {
            found.unreadable = true;
            found.too_complex = true;
            None
        }
        _ => {
            found.unreadable = true;
            None
        }
    }
}

fn uncertain() -> Value {
    Value {
        text: String::new(),
        certain: false,
    }
}

fn piece_value(
    piece: &WordPieceWithSource,
    raw: &str,
    quoted: bool,
    expansion: Expansion<'_>,
    found: &mut Found,
    value: &mut Value,
) {
    match &piece.piece {
        WordPiece::Text(text) => {
            if !quoted && (has_glob(text) || has_brace_expansion(text)) {
                value.certain = false;
            }
            if quoted && looks_like_code(text) {
                found.quoted_code = true;
            }
            value.text.push_str(text);
        }
        WordPiece::SingleQuotedText(text) => {
            if looks_like_code(text) {
                found.quoted_code = true;
            }
            value.text.push_str(text);
        }
        WordPiece::AnsiCQuotedText(text) => {
            if looks_like_code(text) {
                found.quoted_code = true;
            }
            // `$'...'` escapes are decoded by the shell; only plain text is certain.
            if text.contains('\\') {
                value.certain = false;
            }
            value.text.push_str(text);
        }
        WordPiece::DoubleQuotedSequence(inner) | WordPiece::GettextDoubleQuotedSequence(inner) => {
            for piece in inner {
                piece_value(piece, raw, true, expansion, found, value);
            }
        }
        WordPiece::TildeExpansion(tilde) => {
            use brush_parser::word::TildeExpr;
            let known = match tilde {
                TildeExpr::Home => expansion.home,
                TildeExpr::WorkingDir => expansion.cwd,
                _ => None,
            };
            match known {
                Some(dir) => value.text.push_str(dir),
                None => value.certain = false,
            }
        }
        WordPiece::ParameterExpansion(expr) => {
            value.certain = false;
            if let ParameterExpr::Parameter { parameter, .. } = expr
                && matches!(
                    parameter,
                    brush_parser::word::Parameter::NamedWithIndex { .. }
                )
            {
                found.arithmetic = true;
            }
            let source = raw.get(piece.start_index..piece.end_index).unwrap_or(raw);
            if source.contains('[') {
                found.arithmetic = true;
            }
            if holds_command(source) {
                found.hidden_command = true;
            }
        }
        WordPiece::CommandSubstitution(script) => {
            value.certain = false;
            found.scripts.push(script.clone());
        }
        WordPiece::BackquotedCommandSubstitution(script) => {
            value.certain = false;
            found.scripts.push(unescape_backquoted(script));
        }
        WordPiece::EscapeSequence(escaped) => {
            // `\c` is `c`; a backslash-newline joins lines and leaves nothing.
            let mut chars = escaped.chars();
            chars.next();
            let rest: String = chars.collect();
            if rest != "\n" {
                value.text.push_str(&rest);
            }
        }
        WordPiece::ArithmeticExpression(expr) => {
            value.certain = false;
            found.arithmetic = true;
            // The expression is itself expanded first, so `$((1 + $(cmd)))` runs cmd.
            read(&expr.value, expansion, found);
        }
    }
}

/// The characters that make an unquoted word a pathname pattern: `*`, `?`,
/// and a `[` closed by a later `]` (a lone `[`, the test command, is not).
fn has_glob(text: &str) -> bool {
    text.contains(['*', '?'])
        || text
            .find('[')
            .is_some_and(|open| text[open + 1..].contains(']'))
}

/// `{a,b}` and `{1..3}`: bash turns one word into several.
fn has_brace_expansion(text: &str) -> bool {
    match (text.find('{'), text.rfind('}')) {
        (Some(open), Some(close)) if open < close => {
            let inside = &text[open..close];
            inside.contains(',') || inside.contains("..")
        }
        _ => false,
    }
}

/// Text that would run a command if the shell ever evaluated it.
fn looks_like_code(text: &str) -> bool {
    text.contains("$(") || text.contains('`')
}

/// Whether the source of a parameter expansion holds a command substitution.
fn holds_command(source: &str) -> bool {
    looks_like_code(source) || source.contains("<(") || source.contains(">(")
}

/// Inside backquotes, `\$`, `` \` `` and `\\` stand for the character itself.
fn unescape_backquoted(script: &str) -> String {
    let mut out = String::with_capacity(script.len());
    let mut chars = script.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\\'
            && let Some(&next) = chars.peek()
            && matches!(next, '$' | '`' | '\\')
        {
            out.push(next);
            chars.next();
            continue;
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn value(raw: &str) -> (Value, Found) {
        let mut found = Found::default();
        let expansion = Expansion {
            home: Some("/home/me"),
            cwd: Some("/work"),
        };
        (read(raw, expansion, &mut found), found)
    }

    #[test]
    fn quotes_and_escapes_are_removed() {
        assert_eq!(value("r'm'").0.literal(), Some("rm"));
        assert_eq!(value(r"\rm").0.literal(), Some("rm"));
        assert_eq!(value(r#""a b""#).0.literal(), Some("a b"));
        assert_eq!(value(r#""a\"b""#).0.literal(), Some("a\"b"));
    }

    #[test]
    fn tilde_is_the_home_directory() {
        assert_eq!(value("~/x").0.literal(), Some("/home/me/x"));
        assert_eq!(value("~other/x").0.literal(), None);
    }

    #[test]
    fn run_time_parts_make_a_word_uncertain() {
        for raw in ["$x", "${x}", "a*", "{rm,-rf}", "$(id)", "`id`", "$((1+2))"] {
            assert_eq!(value(raw).0.literal(), None, "{raw}");
        }
    }

    #[test]
    fn substitutions_are_collected_as_scripts() {
        let (_, found) = value(r#""$(rm -rf ~)"x`echo \$HOME`"#);
        assert_eq!(found.scripts, vec!["rm -rf ~", "echo $HOME"]);
    }

    #[test]
    fn arithmetic_is_expanded_before_it_is_evaluated() {
        let (_, found) = value("$((1 + $(id -u)))");
        assert!(found.arithmetic);
        assert_eq!(found.scripts, vec!["id -u"]);
    }

    #[test]
    fn a_command_hidden_in_a_parameter_expansion_is_noticed() {
        assert!(value("${x:-$(id)}").1.hidden_command);
        assert!(!value("${x:-y}").1.hidden_command);
    }

    #[test]
    fn quoted_code_is_noticed() {
        assert!(value("'a[$(id)]'").1.quoted_code);
        assert!(!value("'plain'").1.quoted_code);
    }
}
