//! `.style` of `chock.zon`: the project's style rules, each a measure of
//! the content a write would leave behind and the most it may answer.
//! Whether any of them runs is `style.parse`, read once at session start
//! ([`crate::StartQuestion::StyleParse`]); the tool server reads them with
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

use chock_config::ByteSize;
use chock_config::ConfigError;
use chock_config::Source;

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
pub(crate) struct StyleFields {
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

pub(crate) fn read_style(
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

#[cfg(test)]
mod tests {
    use crate::Decision;
    use crate::test_support::with_project as load;

    #[test]
    fn a_block_reads_with_each_rule_placed() {
        let policy = load(
            ".{ .style = .{\n .rules = .{\n  .{ .name = \"short\", .files = \"src/**\", .measure = .line_length, .limit = 100 },\n  .{ .name = \"no-unsafe\", .language = \"rust\", .measure = .query_matches, .query = \"(unsafe_block) @u\", .limit = 0 },\n },\n .max_bytes = \"1MiB\",\n .timeout_ms = 500,\n} }",
        )
        .expect("loads");
        let style = policy.style().expect("a style block");
        assert_eq!(style.rules.len(), 2);
        assert_eq!(style.max_bytes, Some(1 << 20));
        assert_eq!(style.timeout, Some(std::time::Duration::from_millis(500)));
        let rule = &style.rules[1];
        assert_eq!(rule.measure, super::StyleMeasure::QueryMatches);
        assert_eq!(rule.query.as_deref(), Some("(unsafe_block) @u"));
        assert!(rule.place().ends_with("chock.zon:4:3"), "{}", rule.place());
        assert!(load(".{}").expect("loads").style().is_none());
    }

    #[test]
    fn a_bad_block_is_refused_at_its_place_with_the_nearest_name() {
        let rule =
            |fields: &str| format!(".{{\n .style = .{{ .rules = .{{\n  .{{ {fields} }} }} }} }}");
        for (text, says) in [
            (
                rule(".name = \"a\", .language = \"rust\", .mesure = .line_length, .limit = 1"),
                "chock.zon:3:",
            ),
            (
                rule(".name = \"a\", .language = \"rust\", .mesure = .line_length, .limit = 1"),
                "did you mean `.measure`?",
            ),
            (
                rule(".name = \"a\", .language = \"rust\", .measure = .line_lenght, .limit = 1"),
                "did you mean `.line_length`?",
            ),
            (
                rule(".name = \"a\", .measure = .line_length, .limit = 1"),
                "names no files",
            ),
            (
                rule(".name = \"\", .language = \"rust\", .measure = .line_length, .limit = 1"),
                "`.name` is a few words",
            ),
            (
                rule(".name = \"a\", .language = \"rust\", .measure = .line_length"),
                "limit",
            ),
            (".{\n .style = .{ .rules = .{} } }".into(), "is empty"),
            (
                ".{\n .style = .{ .rulez = .{} } }".into(),
                "did you mean `.rules`?",
            ),
            (
                ".{\n .style = .{ .timeout_ms = 0, .rules = .{ .{ .name = \"a\", .language = \"go\", .measure = .line_length, .limit = 1 } } } }".into(),
                "timeout_ms",
            ),
        ] {
            let message = load(&text).expect_err(&text).to_string();
            assert!(message.contains(says), "{text}: {message}");
            assert!(message.contains("chock.zon:"), "{text}: {message}");
        }
        let twice = load(
            ".{ .style = .{ .rules = .{\n .{ .name = \"a\", .language = \"go\", .measure = .line_length, .limit = 1 },\n .{ .name = \"a\", .language = \"go\", .measure = .line_length, .limit = 2 } } } }",
        )
        .expect_err("twice")
        .to_string();
        assert!(
            twice.contains("chock.zon:3:") && twice.contains("first at line 2"),
            "{twice}"
        );
    }

    #[test]
    fn style_parse_is_read_at_start_as_an_act() {
        let answer = |rules: &str| {
            load(&format!(".{{ .policy = .{{ .rules = .{{ {rules} }} }} }}"))
                .expect("loads")
                .start_verdict("main", &crate::StartQuestion::StyleParse)
                .expect("named")
                .decision
        };
        // Chock ships no rule: nothing said is an ask (and chock-gate
        // grants it at start only on allow).
        assert_eq!(answer(""), Decision::Ask);
        assert_eq!(
            answer(".{ .action = \"style.*\", .decision = .deny }"),
            Decision::Deny
        );
        assert_eq!(
            answer(".{ .action = \"style.parse\", .decision = .allow }"),
            Decision::Allow
        );
        assert!(crate::read_once_note("style.parse").is_some());
    }

    #[test]
    fn style_is_the_projects_and_no_other_files() {
        let dir = tempfile::tempdir().expect("tempdir");
        let config = dir.path().join("config.zon");
        std::fs::write(&config, ".{\n .style = .{} }").expect("write");
        let message = crate::Policy::load(&crate::LoadOptions {
            project_dir: dir.path().to_path_buf(),
            operator_config: Some(config),
            discovered_bundles: vec![],
            org_bundles: vec![],
        })
        .expect_err("config.zon")
        .to_string();
        assert!(
            message.contains("config.zon:2:") && message.contains("chock.zon"),
            "{message}"
        );
    }
}
