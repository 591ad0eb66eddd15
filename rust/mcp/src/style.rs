//! The project's style rules on write_file and edit_file: `style.parse`
//! read once at start, the rules of `chock.zon` read with chock-style, and
//! the content a write would leave checked before anything is written.

use std::path::Path;

use chock_gate::{Outcome, Refused, Settled};
use chock_log::AnsweredBy;
use chock_policy::{StartQuestion, StyleMeasure, StyleSettings};
use chock_style::{Bounds, Measure, Rule, RuleSpec};

use crate::AGENT_KIND;
use crate::error::McpError;
use crate::session::Session;
use crate::workspace::Workspace;

/// The tool the start row is logged under: the rules are the writes'.
const TOOL: &str = "write_file";

/// The rules a session's writes are checked against.
pub struct Style {
    rules: Vec<Rule>,
    bounds: Bounds,
}

/// The rules of `settings`, each read by chock-style; a rule it cannot
/// read refuses the start at the rule's place in `chock.zon`.
fn read(settings: &StyleSettings) -> Result<Style, McpError> {
    let rules = settings
        .rules
        .iter()
        .map(|rule| {
            Rule::new(RuleSpec {
                name: &rule.name,
                origin: rule.place(),
                files: rule.files.as_deref(),
                language: rule.language.as_deref(),
                measure: Some(measure(rule.measure)),
                limit: rule.limit,
                query: rule.query.as_deref(),
            })
            .map_err(|e| McpError::Stopped(format!("{}: {e}", rule.place())))
        })
        .collect::<Result<_, _>>()?;
    let defaults = Bounds::default();
    Ok(Style {
        rules,
        bounds: Bounds {
            max_bytes: settings
                .max_bytes
                .and_then(|b| usize::try_from(b).ok())
                .unwrap_or(defaults.max_bytes),
            time: settings.timeout.unwrap_or(defaults.time),
        },
    })
}

fn measure(measure: StyleMeasure) -> Measure {
    match measure {
        StyleMeasure::LineLength => Measure::LineLength,
        StyleMeasure::NestingDepth => Measure::NestingDepth,
        StyleMeasure::FunctionLength => Measure::FunctionLength,
        StyleMeasure::QueryMatches => Measure::QueryMatches,
    }
}

/// At session start: the project's rules read, then `style.parse`, where
/// only allow runs them (nobody can be asked yet). Any other answer leaves
/// every write unchecked and says so in one line. `None` when there are no
/// rules to run.
pub(crate) fn start(session: &Session) -> Result<Option<Style>, McpError> {
    let Some(settings) = session.policy.config().style() else {
        return Ok(None);
    };
    let style = read(settings)?;
    let answer =
        chock_gate::start::at_start(&session.policy, AGENT_KIND, &StartQuestion::StyleParse)
            .map_err(|e| McpError::Stopped(format!("style.parse cannot be named: {e}")))?;
    let verdict = &answer.verdict;
    let settled = Settled {
        outcome: if answer.granted {
            Outcome::Go
        } else {
            Outcome::Refused(Refused::Denied)
        },
        decision: verdict.decision,
        answered_by: AnsweredBy::of_layer(verdict.decided_by.layer),
        scope: None,
    };
    session.record(AGENT_KIND, TOOL, "style.parse", None, verdict, &settled);
    if answer.granted {
        return Ok(Some(style));
    }
    let count = style.rules.len();
    let (rules, run) = if count == 1 {
        ("rule", "does")
    } else {
        ("rules", "do")
    };
    let change = match &verdict.suggestion {
        // The rule every agent kind's session reads, not only this one's.
        Some(s) => format!(
            "; to run them, add to {}: .{{ .action = \"style.parse\", .decision = .allow }}",
            s.block
        ),
        None => String::new(),
    };
    tracing::warn!(
        "{}: style.parse answered {} at start, by {}, so the {count} style {rules} of {} {run} not run and every write is unchecked{change}",
        session.command,
        verdict.decision,
        crate::gate::decided_by_words(verdict),
        session.policy.project_file().display(),
    );
    Ok(None)
}

/// Checks `content`, what a write of `rel` would leave, against the
/// session's rules: `Err` is the sentence the write is refused with.
pub(crate) fn check(
    session: &Session,
    rel: &Path,
    content: &str,
) -> Result<(), crate::tools::ToolError> {
    let Some(style) = &session.style else {
        return Ok(());
    };
    chock_style::check(&style.rules, rel, content, &style.bounds).map_err(|refusal| {
        crate::tools::ToolError::Style(format!(
            "`{}`: {refusal}; nothing was written",
            Workspace::show(rel)
        ))
    })
}
