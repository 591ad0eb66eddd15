//! The check the `measure` fuzz target runs on each input, shared with the
//! crate's `no_panic` test, which feeds it the corpus kept in the
//! repository. The first byte picks the grammar and the measure; for a
//! query, the text up to the first NUL is the query (a rule's `.query`,
//! which a project writes) and the rest the content (which an agent
//! writes). A rule reads or says why not, a measure answers or refuses,
//! never a panic; an answer's line is one of the content's; the full check
//! refuses exactly where the measure is over the rule's limit, with the
//! same number; and both answer within their time bound, plus the slack of
//! one stretch of work between two looks at the clock.

use std::path::Path;
use std::time::{Duration, Instant};

use chock_style::{Bounds, Language, Measure, Refusal, Rule, RuleSpec};

/// The time one check is given.
const TIME: Duration = Duration::from_millis(200);
/// How far past it an answer may come: tree-sitter looks at the callback
/// every so many operations, the walk every 4096 nodes.
const SLACK: Duration = if cfg!(fuzzing) {
    Duration::from_millis(300)
} else {
    Duration::from_millis(800)
};

pub fn measure(bytes: &[u8]) {
    let Some((&pick, rest)) = bytes.split_first() else {
        return;
    };
    let Ok(text) = std::str::from_utf8(rest) else {
        return;
    };
    let language = Language::ALL[usize::from(pick) % Language::ALL.len()];
    let measure = Measure::ALL[usize::from(pick / 8) % Measure::ALL.len()];
    let (query, content) = match measure {
        Measure::QueryMatches => text.split_once('\0').unwrap_or((text, "")),
        _ => ("", text),
    };
    let limit = u64::from(pick % 5);
    let rule = Rule::new(RuleSpec {
        name: "fuzz",
        files: Some("**"),
        language: Some(language.name()),
        measure: Some(measure),
        limit,
        query: (measure == Measure::QueryMatches).then_some(query),
        ..RuleSpec::default()
    });
    let Ok(rule) = rule else {
        return;
    };
    let bounds = Bounds {
        time: TIME,
        ..Bounds::default()
    };
    let path = Path::new("fuzzed");
    let started = Instant::now();
    let answer = chock_style::measure(&rule, path, content, &bounds);
    let checked = chock_style::check(std::slice::from_ref(&rule), path, content, &bounds);
    let took = started.elapsed();
    let what = || format!("{} {}", language.name(), measure.name());
    assert!(took <= 2 * TIME + SLACK, "{} took {took:?}", what());
    let reading = match answer {
        Ok(reading) => reading,
        Err(Refusal::TimedOut { .. } | Refusal::TooManyMatches { .. }) => return,
        Err(other) => panic!("{}: {other}", what()),
    };
    // Lines as tree-sitter counts rows: one more after a final newline.
    let rows = content.split('\n').count();
    assert!(
        reading.line <= rows,
        "{}: {reading:?} of {rows} rows",
        what()
    );
    if reading.value == 0 {
        assert_eq!(
            reading.line,
            0,
            "{}: nothing measured is at no line",
            what()
        );
    } else if measure != Measure::QueryMatches {
        assert!(reading.line >= 1, "{}: {reading:?}", what());
    }
    // The check refuses exactly where the measure is over the limit, with
    // the same number (a query's count stops at the first match over it).
    match checked {
        Ok(()) => assert!(reading.value <= limit, "{}: {reading:?} passed", what()),
        Err(Refusal::Over { value, line, .. }) => {
            assert!(reading.value > limit, "{}: {value} refused", what());
            if measure == Measure::QueryMatches {
                assert_eq!(value, limit + 1, "{}", what());
            } else {
                assert_eq!((value, line), (reading.value, reading.line), "{}", what());
            }
        }
        Err(Refusal::TimedOut { .. }) => {}
        Err(other) => panic!("{}: {other}", what()),
    }
}
