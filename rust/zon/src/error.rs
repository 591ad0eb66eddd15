//! One error type for everything the reader refuses: a syntax fault, a value of
//! the wrong shape, an unknown field, a file too large. Each one carries the
//! position of the offending text and the line itself, because a person fixing
//! a configuration file needs to see where, not just what.

use std::fmt;
use std::path::{Path, PathBuf};

/// A byte range in the source text; ordered by where it starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Span {
    pub start: usize,
    pub end: usize,
}

impl Span {
    pub(crate) fn new(start: usize, end: usize) -> Self {
        Span { start, end }
    }
}

/// A refusal located in a ZON file: `FILE:LINE:COL: message`, then the
/// offending line with a caret under the span.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct Error {
    file: Option<PathBuf>,
    line: u32,
    column: u32,
    message: String,
    /// The line, or of a long line the window of it that is shown.
    line_text: String,
    /// Where the caret goes in `line_text`, in characters.
    caret: usize,
    underline: usize,
}

/// How many characters of a line an error shows at most, around its column.
const SHOWN_LINE_CHARS: usize = 160;

impl Error {
    /// Builds an error for `span` of `text`; other crates use this for
    /// semantic refusals (a bad pattern, too many rules) so they read exactly
    /// like syntax errors.
    pub fn at(file: Option<&Path>, text: &str, span: Span, message: impl Into<String>) -> Self {
        let (line, column) = line_col(text, span.start);
        let start_in_line = column.saturating_sub(1) as usize;
        let (line_text, caret) = window(&line_text(text, span.start), start_in_line);
        let rest = line_text.chars().count().saturating_sub(caret).max(1);
        let span_chars = text
            .get(span.start.min(text.len())..span.end.min(text.len()))
            .map(|s| s.chars().take_while(|c| *c != '\n').count())
            .unwrap_or(1);
        Error {
            file: file.map(Path::to_path_buf),
            line,
            column,
            message: message.into(),
            line_text,
            caret,
            underline: span_chars.clamp(1, rest),
        }
    }

    /// An error about the whole file (too large, not UTF-8): placed at 1:1.
    pub fn whole_file(file: Option<&Path>, message: impl Into<String>) -> Self {
        Error {
            file: file.map(Path::to_path_buf),
            line: 1,
            column: 1,
            message: message.into(),
            line_text: String::new(),
            caret: 0,
            underline: 0,
        }
    }

    /// Names the file the error came from (the reader itself only sees text).
    pub fn with_file(mut self, file: &Path) -> Self {
        self.file = Some(file.to_path_buf());
        self
    }

    pub fn file(&self) -> Option<&Path> {
        self.file.as_deref()
    }

    pub fn line(&self) -> u32 {
        self.line
    }

    pub fn column(&self) -> u32 {
        self.column
    }

    /// The sentence alone, without position or source line.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The source line the error points into (empty for whole-file errors);
    /// of a line longer than 160 characters, the 160 around the column,
    /// with `…` where text was left out.
    pub fn line_text(&self) -> &str {
        &self.line_text
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.file {
            Some(file) => write!(f, "{}", file.display())?,
            None => f.write_str("<input>")?,
        }
        write!(f, ":{}:{}: {}", self.line, self.column, self.message)?;
        if self.underline > 0 {
            let number = self.line.to_string();
            let gutter = " ".repeat(number.len());
            let shown: String = self
                .line_text
                .chars()
                .map(|c| if c == '\t' { ' ' } else { c })
                .collect();
            write!(f, "\n {number} | {shown}")?;
            let pad = " ".repeat(self.caret);
            write!(f, "\n {gutter} | {pad}{}", "^".repeat(self.underline))?;
        }
        Ok(())
    }
}

/// 1-based line and column (in characters) of a byte offset.
pub fn line_col(text: &str, offset: usize) -> (u32, u32) {
    let offset = floor_char_boundary(text, offset);
    let before = text.get(..offset).unwrap_or("");
    let line = before.bytes().filter(|b| *b == b'\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let column = before.get(line_start..).map_or(0, |s| s.chars().count()) + 1;
    (saturate(line), saturate(column))
}

fn line_text(text: &str, offset: usize) -> String {
    let offset = floor_char_boundary(text, offset);
    let start = text
        .get(..offset)
        .and_then(|s| s.rfind('\n'))
        .map_or(0, |i| i + 1);
    let rest = text.get(start..).unwrap_or("");
    let end = rest.find('\n').unwrap_or(rest.len());
    rest.get(..end)
        .unwrap_or("")
        .trim_end_matches('\r')
        .to_string()
}

/// `line` as shown, and where `column` (0-based, in characters) falls in
/// it: whole when short, else [`SHOWN_LINE_CHARS`] characters around the
/// column with `…` where text was left out, so that an error in a
/// megabyte-long line prints a few hundred bytes.
fn window(line: &str, column: usize) -> (String, usize) {
    let length = line.chars().count();
    if length <= SHOWN_LINE_CHARS {
        return (line.to_string(), column);
    }
    let start = column
        .saturating_sub(SHOWN_LINE_CHARS / 2)
        .min(length - SHOWN_LINE_CHARS);
    let mut shown = String::with_capacity(SHOWN_LINE_CHARS + 8);
    if start > 0 {
        shown.push('…');
    }
    shown.extend(line.chars().skip(start).take(SHOWN_LINE_CHARS));
    if start + SHOWN_LINE_CHARS < length {
        shown.push('…');
    }
    (shown, column - start + usize::from(start > 0))
}

fn floor_char_boundary(text: &str, offset: usize) -> usize {
    let mut offset = offset.min(text.len());
    while offset > 0 && !text.is_char_boundary(offset) {
        offset -= 1;
    }
    offset
}

fn saturate(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// An error found while deserializing, before it is placed in the text.
#[derive(Debug)]
pub(crate) struct DeError {
    pub(crate) message: String,
    pub(crate) span: Option<Span>,
}

impl DeError {
    pub(crate) fn at(span: Span, message: impl Into<String>) -> Self {
        DeError {
            message: message.into(),
            span: Some(span),
        }
    }
}

impl fmt::Display for DeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for DeError {}

impl serde::de::Error for DeError {
    fn custom<T: fmt::Display>(msg: T) -> Self {
        DeError {
            message: msg.to_string(),
            span: None,
        }
    }

    fn unknown_field(field: &str, expected: &'static [&'static str]) -> Self {
        DeError::custom(unknown("field", field, expected))
    }

    fn unknown_variant(variant: &str, expected: &'static [&'static str]) -> Self {
        DeError::custom(unknown("variant", variant, expected))
    }
}

/// "unknown field `.polciy`: did you mean `.policy`?", then every name the
/// place takes, so a misspelt name is fixed without opening the docs.
fn unknown(what: &str, written: &str, expected: &[&str]) -> String {
    let mut message = format!("unknown {what} `.{written}`");
    if let Some(near) = nearest(written, expected) {
        message.push_str(&format!(": did you mean `.{near}`?"));
    }
    match expected {
        [] => message.push_str(" (none is taken here: remove it)"),
        names => {
            let names: Vec<String> = names.iter().map(|n| format!("`.{n}`")).collect();
            message.push_str(&format!(" (expected one of {})", names.join(", ")));
        }
    }
    message
}

/// The name of `known` closest to `written`, if one is close enough to be
/// a misspelling of it: at most a third of its letters (and at least one)
/// added, removed, changed or swapped with a neighbour.
pub fn nearest<'a>(written: &str, known: &[&'a str]) -> Option<&'a str> {
    let written: Vec<char> = written.to_lowercase().chars().collect();
    let bound = (written.len() / 3).clamp(1, 3);
    known
        .iter()
        .map(|name| {
            let chars: Vec<char> = name.to_lowercase().chars().collect();
            (edits(&written, &chars), *name)
        })
        .filter(|(distance, _)| *distance <= bound)
        .min_by_key(|(distance, _)| *distance)
        .map(|(_, name)| name)
}

/// The optimal string alignment distance: insertions, deletions,
/// substitutions and swaps of two neighbours, each one edit.
fn edits(a: &[char], b: &[char]) -> usize {
    let width = b.len() + 1;
    let mut table = vec![0usize; (a.len() + 1) * width];
    let at = |i: usize, j: usize| i * width + j;
    for i in 0..=a.len() {
        table[at(i, 0)] = i;
    }
    for j in 0..=b.len() {
        table[at(0, j)] = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut best = (table[at(i - 1, j)] + 1)
                .min(table[at(i, j - 1)] + 1)
                .min(table[at(i - 1, j - 1)] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                best = best.min(table[at(i - 2, j - 2)] + 1);
            }
            table[at(i, j)] = best;
        }
    }
    table[at(a.len(), b.len())]
}

/// Places errors that carry no span yet at `span`: the innermost node that
/// saw the error is the most precise place to point at.
pub(crate) fn locate<T>(result: Result<T, DeError>, span: Span) -> Result<T, DeError> {
    result.map_err(|mut e| {
        if e.span.is_none() {
            e.span = Some(span);
        }
        e
    })
}

/// What the writer refuses: a value ZON cannot spell (a map with non-string
/// keys, an empty field name).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct WriteError {
    message: String,
}

impl WriteError {
    pub(crate) fn new(message: impl Into<String>) -> Self {
        WriteError {
            message: message.into(),
        }
    }
}

impl serde::ser::Error for WriteError {
    fn custom<T: fmt::Display>(msg: T) -> Self {
        WriteError::new(msg.to_string())
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn an_error_in_a_long_line_shows_a_window_with_the_caret_under_it() {
        let text = ".{ .a = ".repeat(100_000) + "}";
        let error = crate::validate(&text).unwrap_err();
        let shown = error.to_string();
        assert!(shown.len() < 1000, "{} bytes: {shown:.300}", shown.len());
        let column = error.column() as usize;
        assert!(column > 160, "the error is far into the line");
        let lines: Vec<&str> = shown.lines().collect();
        let code = lines[1].chars().collect::<Vec<_>>();
        let caret = lines[2].find('^').unwrap();
        // The caret stands under the character at the error's column.
        let at = text.chars().nth(column - 1).unwrap();
        assert_eq!(code[caret], at, "{shown}");
        assert!(lines[1].contains('…'));
    }

    #[test]
    fn a_misspelt_name_gets_the_nearest_known_one() {
        let known = ["policy", "nix", "limits", "container"];
        assert_eq!(super::nearest("polciy", &known), Some("policy"));
        assert_eq!(super::nearest("Policy", &known), Some("policy"));
        assert_eq!(super::nearest("limit", &known), Some("limits"));
        assert_eq!(super::nearest("nxi", &known), Some("nix"));
        assert_eq!(super::nearest("colour", &known), None);
        assert_eq!(super::nearest("", &known), None);
        let message = super::unknown("field", "polciy", &known);
        assert!(
            message.starts_with("unknown field `.polciy`: did you mean `.policy`?"),
            "{message}"
        );
        assert!(message.contains("`.container`"), "{message}");
    }

    #[test]
    fn a_short_line_is_shown_whole() {
        let error = crate::validate(".{ .a = , }").unwrap_err();
        let shown = error.to_string();
        assert!(shown.contains("| .{ .a = , }"), "{shown}");
    }
}
