//! `.style` of `chock.zon`: the project's style rules, each a measure of
//! the content a write would leave behind and the most it may answer.
//! Whether any of them runs is `style.parse`, read once at session start
//! (chock-policy's `StartQuestion::StyleParse`); the tool server reads them with
//! chock-style, which knows the languages and measures and says, at the
//! rule's place in this file, what it cannot read.
//!
//! ```zon
//! .style = .{
//!     .rules = .{
//!         .{ .name = "short-lines", .files = "src/**/*.rs", .measure = .line_length, .limit = 100 },
//!         .{ .name = "no-unsafe", .language = "rust", .measure = .query_matches,
//!            .query = "(unsafe_block) @it", .limit = 0 },
//!     },
//!     .max_bytes = "8MiB",
//!     .timeout_ms = 2000,
//! },
//! ```

use std::path::PathBuf;
use std::time::Duration;

use chock_zon::Spanned;
use serde::Deserialize;

use crate::ByteSize;
use crate::{ConfigError, Source};

/// At most this many style rules.
pub const MAX_STYLE_RULES: usize = 64;
/// The most content `.max_bytes` may let a check parse.
pub const MAX_STYLE_BYTES: u64 = 64 << 20;
/// The most time `.timeout_ms` may give one check.
pub const MAX_STYLE_TIMEOUT: Duration = Duration::from_secs(30);

#[derive(Debug, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "the `.style` block: `.{ .rules = .{ .{ .name = \"short-lines\", .files = \"src/**/*.rs\", .measure = .line_length, .limit = 100 } } }`"
)]
pub struct StyleFields {
    rules: Spanned<Vec<Spanned<RuleFields>>>,
    max_bytes: Option<ByteSize>,
    timeout_ms: Option<u64>,
}

#[derive(Debug, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a style rule `.{ .name = \"short-lines\", .language = \"rust\", .measure = .line_length, .limit = 100 }`"
)]
struct RuleFields {
    name: String,
    files: Option<String>,
    language: Option<String>,
    measure: StyleMeasure,
    limit: u64,
    query: Option<String>,
}

/// What a style rule measures, as `.measure` spells it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(
    rename_all = "snake_case",
    expecting = "a measure: `.line_length`, `.nesting_depth`, `.function_length` or `.query_matches`"
)]
pub enum StyleMeasure {
    LineLength,
    NestingDepth,
    FunctionLength,
    QueryMatches,
}

/// One style rule as `chock.zon` writes it, and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StyleRule {
    pub name: String,
    /// A glob over paths from the project's root.
    pub files: Option<String>,
    /// The language's name, checked by the reader that knows the grammars.
    pub language: Option<String>,
    pub measure: StyleMeasure,
    pub limit: u64,
    pub query: Option<String>,
    /// `chock.zon`, and the line and column the rule starts at.
    pub file: PathBuf,
    pub line: u32,
    pub column: u32,
}

impl StyleRule {
    /// `chock.zon:14:9`, where a sentence about the rule points.
    pub fn place(&self) -> String {
        format!("{}:{}:{}", self.file.display(), self.line, self.column)
    }
}

/// The project's `.style`, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StyleSettings {
    pub rules: Vec<StyleRule>,
    /// The most bytes of content a check parses, where the block says.
    pub max_bytes: Option<u64>,
    /// How long one check may take, where the block says.
    pub timeout: Option<Duration>,
}

pub fn read_style(
    source: &Source<'_>,
    block: Option<Spanned<StyleFields>>,
) -> Result<Option<StyleSettings>, ConfigError> {
    let Some(Spanned { span, value }) = block else {
        return Ok(None);
    };
    if value.rules.value.is_empty() {
        return Err(source.error(
            value.rules.span,
            "`.style.rules` is empty: write a rule, or remove the `.style` block",
        ));
    }
    if value.rules.value.len() > MAX_STYLE_RULES {
        return Err(source.error(
            value.rules.span,
            format!(
                "`.style.rules` holds {} rules, over the {MAX_STYLE_RULES} a project may write",
                value.rules.value.len()
            ),
        ));
    }
    if value
        .max_bytes
        .is_some_and(|b| b.0 == 0 || b.0 > MAX_STYLE_BYTES)
    {
        return Err(source.error(
            span,
            format!("`.style.max_bytes` is from 1 byte to {MAX_STYLE_BYTES} bytes (64MiB)"),
        ));
    }
    let timeout = value.timeout_ms.map(Duration::from_millis);
    if timeout.is_some_and(|t| t.is_zero() || t > MAX_STYLE_TIMEOUT) {
        return Err(source.error(
            span,
            format!(
                "`.style.timeout_ms` is from 1 to {} milliseconds",
                MAX_STYLE_TIMEOUT.as_millis()
            ),
        ));
    }
    let mut rules: Vec<StyleRule> = Vec::with_capacity(value.rules.value.len());
    for Spanned { span, value: rule } in value.rules.value {
        if rule.name.is_empty() || rule.name.chars().any(char::is_control) {
            return Err(source.error(
                span,
                "a style rule's `.name` is a few words, said when it refuses a write",
            ));
        }
        if let Some(first) = rules.iter().find(|r| r.name == rule.name) {
            return Err(source.error(
                span,
                format!(
                    "style rule `{}` is written twice (first at line {}): give each rule its own name",
                    rule.name, first.line
                ),
            ));
        }
        if rule.files.is_none() && rule.language.is_none() {
            return Err(source.error(
                span,
                format!(
                    "style rule `{}` names no files: give `.language = \"rust\"`, `.files = \"src/**/*.rs\"` or both",
                    rule.name
                ),
            ));
        }
        let (line, column) = chock_zon::line_col(source.text, span.start);
        rules.push(StyleRule {
            name: rule.name,
            files: rule.files,
            language: rule.language,
            measure: rule.measure,
            limit: rule.limit,
            query: rule.query,
            file: source.file.to_path_buf(),
            line,
            column,
        });
    }
    Ok(Some(StyleSettings {
        rules,
        max_bytes: value.max_bytes.map(|b| b.0),
        timeout,
    }))
}
