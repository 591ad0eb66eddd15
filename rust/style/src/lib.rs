//! Style rules: the content a write would leave behind, parsed with a
//! tree-sitter grammar and measured, before anything is written.
//!
//! A [`Rule`] names the files it reads (a glob, a language, or both), one
//! [`Measure`] and the most that measure may answer. [`check`] reads a
//! file's content against every rule that names its path and answers the
//! first rule over its limit, the line where it is over and the number.
//! Every parse is bounded: content over [`Bounds::max_bytes`] is not
//! parsed, and a parse or a query still running at [`Bounds::time`] is
//! cancelled through tree-sitter's progress callback. Both refuse, because a
//! rule that could not be read has not been kept.
//!
//! This crate knows nothing of policy: whether rules run at all
//! (`style.parse`) and where they are written (`chock.zon`) are the tool
//! server's to join.

#![forbid(unsafe_code)]

mod language;
mod measure;
mod query;

use std::fmt;
use std::path::Path;
use std::time::{Duration, Instant};

pub use language::Language;
pub use measure::{Measure, Reading};

/// The most bytes of content a check parses by default.
pub const DEFAULT_MAX_BYTES: usize = 8 << 20;
/// How long one check (every rule on one file) may take by default.
pub const DEFAULT_TIME: Duration = Duration::from_secs(2);
/// The most matches a query may hold in progress at once; beyond it
/// tree-sitter drops matches, so a check that reaches it refuses.
const MATCH_LIMIT: u32 = 1 << 16;

/// How far one check may go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bounds {
    /// Content longer than this is refused unparsed.
    pub max_bytes: usize,
    /// Every parse and query of one check ends by then, or the check refuses.
    pub time: Duration,
}

impl Default for Bounds {
    fn default() -> Self {
        Bounds {
            max_bytes: DEFAULT_MAX_BYTES,
            time: DEFAULT_TIME,
        }
    }
}

/// A rule as its file writes it, before it is checked.
#[derive(Debug, Clone, Default)]
pub struct RuleSpec<'a> {
    /// What the rule is called in refusals.
    pub name: &'a str,
    /// Where it is written (`chock.zon:14`), for refusals.
    pub origin: String,
    /// A glob over the path from the project's root (`src/**/*.rs`).
    pub files: Option<&'a str>,
    /// The grammar content is parsed with ([`Language::name`]).
    pub language: Option<&'a str>,
    pub measure: Option<Measure>,
    pub limit: u64,
    /// A tree-sitter query, for [`Measure::QueryMatches`].
    pub query: Option<&'a str>,
}

/// A rule, checked: its glob and query compiled, its language known.
#[derive(Debug)]
pub struct Rule {
    name: String,
    origin: String,
    files: Option<globset::GlobMatcher>,
    language: Option<Language>,
    measure: Measure,
    limit: u64,
    query: Option<tree_sitter::Query>,
}

/// Why a rule cannot be read as written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuleError(pub String);

impl fmt::Display for RuleError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for RuleError {}

impl Rule {
    pub fn new(spec: RuleSpec<'_>) -> Result<Rule, RuleError> {
        let fail = |why: String| Err(RuleError(why));
        if spec.name.is_empty() {
            return fail("a style rule needs a `.name`, said when it refuses a write".into());
        }
        let Some(measure) = spec.measure else {
            return fail(format!(
                "style rule `{}` names no `.measure`: one of {}",
                spec.name,
                Measure::names()
            ));
        };
        let language = match spec.language {
            Some(name) => Some(Language::from_name(name).ok_or_else(|| {
                RuleError(format!(
                    "style rule `{}`: `{name}` is not a language this Chock parses ({}){}",
                    spec.name,
                    Language::names(),
                    Language::nearest(name)
                        .map(|n| format!("; did you mean `{n}`?"))
                        .unwrap_or_default()
                ))
            })?),
            None => None,
        };
        let files = match spec.files {
            Some(glob) => {
                let matcher = globset::GlobBuilder::new(glob)
                    .literal_separator(true)
                    .build()
                    .map_err(|e| {
                        RuleError(format!(
                            "style rule `{}`: `.files = \"{glob}\"` is not a glob: {e}",
                            spec.name
                        ))
                    })?
                    .compile_matcher();
                Some(matcher)
            }
            None => None,
        };
        if files.is_none() && language.is_none() {
            return fail(format!(
                "style rule `{}` names no files: give `.language = \"rust\"`, `.files = \"src/**/*.rs\"` or both",
                spec.name
            ));
        }
        let query = match (measure, spec.query) {
            (Measure::QueryMatches, None) => {
                return fail(format!(
                    "style rule `{}` counts a query's matches and names no `.query`: write one, such as `.query = \"(unsafe_block) @it\"`",
                    spec.name
                ));
            }
            (Measure::QueryMatches, Some(text)) => {
                let Some(language) = language else {
                    return fail(format!(
                        "style rule `{}`: a query is written in one grammar's node names, so the rule needs `.language`",
                        spec.name
                    ));
                };
                if let Some(at) = query::empty_group(text) {
                    return fail(format!(
                        "style rule `{}`: the group at byte {} of the query holds no node pattern, which tree-sitter's query compiler cannot take (it loops or aborts); put a node in it, or remove it",
                        spec.name,
                        at + 1
                    ));
                }
                let compiled = query::compile(language.grammar(), text).ok_or_else(|| {
                    RuleError(format!(
                        "style rule `{}`: the query did not compile within {} s; simplify it",
                        spec.name,
                        query::COMPILE_TIME.as_secs()
                    ))
                })?;
                let query = compiled.map_err(|e| {
                    RuleError(format!(
                        "style rule `{}`: the query does not compile for {} (at row {}, column {} of the query): {}",
                        spec.name,
                        language.name(),
                        e.row + 1,
                        e.column + 1,
                        e.message.lines().next().unwrap_or("")
                    ))
                })?;
                if query.capture_names().is_empty() {
                    return fail(format!(
                        "style rule `{}`: a query's matches are placed by their first capture; name one, such as `(unsafe_block) @it`",
                        spec.name
                    ));
                }
                Some(query)
            }
            (_, Some(_)) => {
                return fail(format!(
                    "style rule `{}`: `.query` is read only by `.measure = .query_matches`; remove it or change the measure",
                    spec.name
                ));
            }
            (_, None) => None,
        };
        Ok(Rule {
            name: spec.name.to_owned(),
            origin: spec.origin,
            files,
            language,
            measure,
            limit: spec.limit,
            query,
        })
    }

    /// Whether the rule reads the file at `path` (from the project's root).
    pub fn applies(&self, path: &Path) -> bool {
        match (&self.files, self.language) {
            (Some(glob), _) => glob.is_match(path),
            (None, Some(language)) => Language::of_path(path) == Some(language),
            (None, None) => false,
        }
    }

    /// The grammar the file at `path` is parsed with under this rule.
    fn language_for(&self, path: &Path) -> Option<Language> {
        self.language.or_else(|| Language::of_path(path))
    }

    fn describe(&self) -> String {
        let origin = if self.origin.is_empty() {
            String::new()
        } else {
            format!(" ({})", self.origin)
        };
        format!("style rule `{}`{origin}", self.name)
    }
}

/// Why a check refused the content.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// A rule's measure is over its limit.
    Over {
        rule: String,
        measure: Measure,
        line: usize,
        value: u64,
        limit: u64,
    },
    /// The content is longer than a check parses.
    TooLarge { bytes: usize, max: usize },
    /// The bound of time ran out while `rule` was read.
    TimedOut { rule: String, after: Duration },
    /// A rule that must parse names no language, and the path says none.
    NoLanguage { rule: String, path: String },
    /// A query held more matches at once than a check keeps.
    TooManyMatches { rule: String },
    /// The grammar could not be loaded (a build whose tree-sitter and
    /// grammar disagree).
    Grammar { language: Language, why: String },
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Refusal::Over {
                rule,
                measure,
                line,
                value,
                limit,
            } => write!(
                f,
                "{rule} refuses it: {} at line {line}, over the limit of {limit}",
                measure.said(*value)
            ),
            Refusal::TooLarge { bytes, max } => write!(
                f,
                "the content is {bytes} bytes and style rules parse at most {max}, so it cannot be checked"
            ),
            Refusal::TimedOut { rule, after } => write!(
                f,
                "{rule} could not be checked: parsing and measuring took longer than {} ms, and content that could not be checked is refused",
                after.as_millis()
            ),
            Refusal::NoLanguage { rule, path } => write!(
                f,
                "{rule} parses `{path}` and neither the rule's `.language` nor the file's extension says in which language; add `.language` to the rule"
            ),
            Refusal::TooManyMatches { rule } => write!(
                f,
                "{rule}: its query held more than {MATCH_LIMIT} matches in progress at once, so its count could not be trusted; narrow the query"
            ),
            Refusal::Grammar { language, why } => write!(
                f,
                "the {} grammar could not be loaded ({why}); this is a bug in this build of Chock",
                language.name()
            ),
        }
    }
}

impl std::error::Error for Refusal {}

/// Reads `content`, the whole of the file at `path` as a write would leave
/// it, against every rule of `rules` that names the path: the first over
/// its limit, or that cannot be read within `bounds`, refuses.
pub fn check(rules: &[Rule], path: &Path, content: &str, bounds: &Bounds) -> Result<(), Refusal> {
    let applying: Vec<&Rule> = rules.iter().filter(|r| r.applies(path)).collect();
    if applying.is_empty() {
        return Ok(());
    }
    within_size(content, bounds)?;
    let deadline = Instant::now() + bounds.time;
    let mut trees = Vec::new();
    for rule in applying {
        let reading = read_rule(rule, path, content, &mut trees, deadline, bounds.time)?;
        if reading.value > rule.limit {
            return Err(Refusal::Over {
                rule: rule.describe(),
                measure: rule.measure,
                line: reading.line,
                value: reading.value,
                limit: rule.limit,
            });
        }
    }
    Ok(())
}

/// What `rule` measures of `content`, the file at `path`, parsing it at
/// most once per language (`trees` keeps each parse of this check).
fn read_rule(
    rule: &Rule,
    path: &Path,
    content: &str,
    trees: &mut Vec<(Language, tree_sitter::Tree)>,
    deadline: Instant,
    time: Duration,
) -> Result<Reading, Refusal> {
    let timed_out = || Refusal::TimedOut {
        rule: rule.describe(),
        after: time,
    };
    if rule.measure == Measure::LineLength {
        return Ok(measure::line_length(content));
    }
    let language = rule.language_for(path).ok_or_else(|| Refusal::NoLanguage {
        rule: rule.describe(),
        path: path.display().to_string(),
    })?;
    let at = match trees.iter().position(|(l, _)| *l == language) {
        Some(at) => at,
        None => {
            let tree = measure::parse(language, content, deadline)?.ok_or_else(timed_out)?;
            trees.push((language, tree));
            trees.len() - 1
        }
    };
    let tree = &trees[at].1;
    let measured = match &rule.query {
        Some(query) => measure::query_matches(tree, query, content, rule.limit, deadline),
        None => Ok(measure::walk(tree, language, rule.measure, deadline)),
    };
    match measured {
        Ok(Some(reading)) => Ok(reading),
        Ok(None) => Err(timed_out()),
        Err(measure::QueryOverflow) => Err(Refusal::TooManyMatches {
            rule: rule.describe(),
        }),
    }
}

/// What `rule` answers for `content`, the file at `path`, within `bounds`
/// (whether or not the rule names the path).
pub fn measure(
    rule: &Rule,
    path: &Path,
    content: &str,
    bounds: &Bounds,
) -> Result<Reading, Refusal> {
    within_size(content, bounds)?;
    let deadline = Instant::now() + bounds.time;
    read_rule(rule, path, content, &mut Vec::new(), deadline, bounds.time)
}

fn within_size(content: &str, bounds: &Bounds) -> Result<(), Refusal> {
    if content.len() > bounds.max_bytes {
        return Err(Refusal::TooLarge {
            bytes: content.len(),
            max: bounds.max_bytes,
        });
    }
    Ok(())
}
