//! Each measure on each grammar, the bounds of size and time, and rules
//! written wrong.

use std::path::Path;
use std::time::{Duration, Instant};

use chock_style::{Bounds, Language, Measure, Reading, Refusal, Rule, RuleSpec, check, measure};

/// One sample per grammar and what each measure answers for it, as
/// (value, line).
struct Sample {
    language: Language,
    text: &'static str,
    line_length: (u64, usize),
    nesting_depth: (u64, usize),
    function_length: (u64, usize),
    /// A query, and how many times it matches.
    query: &'static str,
    query_matches: (u64, usize),
}

const SAMPLES: &[Sample] = &[
    Sample {
        language: Language::Rust,
        text: "fn outer() {\n    if true {\n        loop {\n            let x = 1;\n        }\n    }\n}\n",
        line_length: (22, 4),
        nesting_depth: (3, 3),
        function_length: (7, 1),
        query: "(let_declaration) @it",
        query_matches: (1, 4),
    },
    Sample {
        language: Language::Python,
        text: "def outer():\n    if True:\n        for x in y:\n            pass\n",
        line_length: (19, 3),
        nesting_depth: (3, 4),
        function_length: (4, 1),
        query: "(pass_statement) @it",
        query_matches: (1, 4),
    },
    Sample {
        language: Language::JavaScript,
        text: "function outer() {\n  if (a) {\n    while (b) {\n      c();\n    }\n  }\n}\n",
        line_length: (18, 1),
        nesting_depth: (3, 3),
        function_length: (7, 1),
        query: "(call_expression) @it",
        query_matches: (1, 4),
    },
    Sample {
        language: Language::TypeScript,
        text: "function outer(a: number) {\n  if (a) {\n    while (b) {\n      c();\n    }\n  }\n}\n",
        line_length: (27, 1),
        nesting_depth: (3, 3),
        function_length: (7, 1),
        query: "(type_annotation) @it",
        query_matches: (1, 1),
    },
    Sample {
        language: Language::Tsx,
        text: "function outer(a: number) {\n  if (a) {\n    while (b) {\n      c();\n    }\n  }\n}\nconst e = <div>{a}</div>;\n",
        line_length: (27, 1),
        nesting_depth: (3, 3),
        function_length: (7, 1),
        query: "(jsx_element) @it",
        query_matches: (1, 8),
    },
    Sample {
        language: Language::Go,
        text: "package main\n\nfunc outer() {\n\tif a {\n\t\tfor {\n\t\t\tc()\n\t\t}\n\t}\n}\n",
        line_length: (14, 3),
        nesting_depth: (3, 5),
        function_length: (7, 3),
        query: "(call_expression) @it",
        query_matches: (1, 6),
    },
    Sample {
        language: Language::Nix,
        text: "{\n  a = [\n    { b = 1; }\n  ];\n  f = x:\n    x;\n}\n",
        line_length: (14, 3),
        nesting_depth: (3, 3),
        function_length: (2, 5),
        query: "(function_expression) @it",
        query_matches: (1, 5),
    },
];

fn rule(language: Language, measure: Measure, limit: u64, query: Option<&str>) -> Rule {
    Rule::new(RuleSpec {
        name: "sample",
        origin: "chock.zon:3".into(),
        language: Some(language.name()),
        measure: Some(measure),
        limit,
        query,
        ..RuleSpec::default()
    })
    .expect("the rule reads")
}

#[test]
fn each_measure_on_each_grammar() {
    let mut covered = Vec::new();
    for sample in SAMPLES {
        covered.push(sample.language);
        for (which, query, (value, line)) in [
            (Measure::LineLength, None, sample.line_length),
            (Measure::NestingDepth, None, sample.nesting_depth),
            (Measure::FunctionLength, None, sample.function_length),
            (
                Measure::QueryMatches,
                Some(sample.query),
                sample.query_matches,
            ),
        ] {
            let rule = rule(sample.language, which, u64::MAX, query);
            let reading = measure(&rule, Path::new(""), sample.text, &Bounds::default())
                .unwrap_or_else(|e| panic!("{}: {e}", sample.language.name()));
            assert_eq!(
                reading,
                Reading { value, line },
                "{} {}",
                sample.language.name(),
                which.name()
            );
        }
    }
    let mut all = Language::ALL.to_vec();
    all.sort_by_key(|l| l.name());
    covered.sort_by_key(|l| l.name());
    assert_eq!(covered, all, "a grammar without a sample");
}

#[test]
fn a_rule_over_its_limit_says_which_rule_where_and_the_number() {
    let sample = &SAMPLES[0];
    let path = Path::new("src/lib.rs");
    for (which, limit, says) in [
        (
            Measure::NestingDepth,
            2,
            "blocks nested 3 deep at line 3, over the limit of 2",
        ),
        (
            Measure::FunctionLength,
            6,
            "a function of 7 lines at line 1, over the limit of 6",
        ),
        (
            Measure::LineLength,
            21,
            "a line of 22 characters at line 4, over the limit of 21",
        ),
    ] {
        let rules = [rule(Language::Rust, which, limit, None)];
        let refusal = check(&rules, path, sample.text, &Bounds::default()).expect_err("over");
        let message = refusal.to_string();
        assert!(
            message.contains("style rule `sample` (chock.zon:3)") && message.contains(says),
            "{message}"
        );
        // At the limit, the same content passes.
        let rules = [rule(Language::Rust, which, limit + 1, None)];
        check(&rules, path, sample.text, &Bounds::default()).expect("at the limit");
    }
    // The second match of a query allowed one is placed at its own line.
    let text = "fn a() { let x = 1;\n let y = 2; }\n";
    let rules = [rule(
        Language::Rust,
        Measure::QueryMatches,
        1,
        Some("(let_declaration) @it"),
    )];
    match check(&rules, path, text, &Bounds::default()) {
        Err(Refusal::Over { line, value, .. }) => assert_eq!((line, value), (2, 2)),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_rule_reads_only_the_files_it_names() {
    let deep = "fn f() { { { } } }\n";
    let by_language = rule(Language::Rust, Measure::NestingDepth, 1, None);
    let by_glob = Rule::new(RuleSpec {
        name: "tests",
        files: Some("tests/**/*.rs"),
        measure: Some(Measure::NestingDepth),
        limit: 1,
        ..RuleSpec::default()
    })
    .expect("reads");
    assert!(by_language.applies(Path::new("src/a.rs")));
    assert!(!by_language.applies(Path::new("src/a.py")));
    assert!(by_glob.applies(Path::new("tests/x/a.rs")));
    assert!(!by_glob.applies(Path::new("src/a.rs")));
    let rules = [by_glob];
    check(&rules, Path::new("src/a.rs"), deep, &Bounds::default()).expect("not named");
    check(&rules, Path::new("tests/a.rs"), deep, &Bounds::default()).expect_err("named");
    // A glob naming files of no known language cannot be parsed, and says so.
    let unknown = [Rule::new(RuleSpec {
        name: "any",
        files: Some("**"),
        measure: Some(Measure::NestingDepth),
        limit: 1,
        ..RuleSpec::default()
    })
    .expect("reads")];
    let message = check(&unknown, Path::new("notes.txt"), "x", &Bounds::default())
        .expect_err("no language")
        .to_string();
    assert!(message.contains("add `.language`"), "{message}");
}

#[test]
fn a_50_megabyte_file_is_refused_unparsed_and_at_once() {
    let rules = [rule(Language::Rust, Measure::NestingDepth, 100, None)];
    let huge = "fn f() {}\n".repeat(5 << 20);
    assert!(huge.len() >= 50 << 20);
    let started = Instant::now();
    let refusal = check(&rules, Path::new("a.rs"), &huge, &Bounds::default()).expect_err("huge");
    assert!(matches!(refusal, Refusal::TooLarge { .. }), "{refusal}");
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "{:?}",
        started.elapsed()
    );
}

#[test]
fn a_parse_past_its_time_is_cancelled_and_refuses() {
    // Four megabytes of unclosed calls: tree-sitter's error recovery works
    // hard on every one of them.
    let pathological = "f(".repeat(2 << 20);
    for language in Language::ALL {
        let rule = rule(language, Measure::NestingDepth, 100, None);
        let bounds = Bounds {
            time: Duration::from_millis(50),
            ..Bounds::default()
        };
        let started = Instant::now();
        let refusal = measure(&rule, Path::new(""), &pathological, &bounds);
        let took = started.elapsed();
        assert!(
            matches!(refusal, Err(Refusal::TimedOut { .. })),
            "{}: {refusal:?} after {took:?}",
            language.name()
        );
        assert!(
            refusal
                .unwrap_err()
                .to_string()
                .contains("longer than 50 ms"),
            "{}",
            language.name()
        );
        assert!(
            took < Duration::from_millis(1000),
            "{}: {took:?}",
            language.name()
        );
    }
}

#[test]
fn deep_nesting_is_measured_without_recursion_and_within_the_default_bound() {
    let depth = 100_000;
    let text = format!("fn f() {{{}{}}}\n", "{".repeat(depth), "}".repeat(depth));
    let rules = [rule(Language::Rust, Measure::NestingDepth, 10, None)];
    let started = Instant::now();
    let answer = check(&rules, Path::new("a.rs"), &text, &Bounds::default());
    let took = started.elapsed();
    match answer {
        Err(Refusal::Over { value, line, .. }) => assert_eq!((value, line), (depth as u64 + 1, 1)),
        // A slow machine may run out of time first: still a refusal.
        Err(Refusal::TimedOut { .. }) => {}
        other => panic!("{other:?}"),
    }
    assert!(took < Duration::from_secs(3), "{took:?}");
}

#[test]
fn a_rule_written_wrong_is_refused_saying_why() {
    let spec = |language: Option<&'static str>, measure, query: Option<&'static str>| RuleSpec {
        name: "r",
        language,
        measure,
        limit: 1,
        query,
        ..RuleSpec::default()
    };
    for (spec, says) in [
        (
            spec(Some("pyton"), Some(Measure::LineLength), None),
            "did you mean `python`?",
        ),
        (
            spec(None, Some(Measure::LineLength), None),
            "names no files",
        ),
        (spec(Some("rust"), None, None), "names no `.measure`"),
        (
            spec(Some("rust"), Some(Measure::QueryMatches), None),
            "names no `.query`",
        ),
        (
            spec(
                Some("rust"),
                Some(Measure::QueryMatches),
                Some("(no_such_node) @x"),
            ),
            "does not compile for rust",
        ),
        (
            spec(Some("rust"), Some(Measure::QueryMatches), Some("(block)")),
            "first capture",
        ),
        (
            spec(Some("rust"), Some(Measure::LineLength), Some("(block) @b")),
            "read only by `.measure = .query_matches`",
        ),
    ] {
        let message = Rule::new(spec).expect_err(says).to_string();
        assert!(message.contains(says), "{says}: {message}");
    }
    let glob = Rule::new(RuleSpec {
        name: "g",
        files: Some("src/[a"),
        measure: Some(Measure::LineLength),
        ..RuleSpec::default()
    })
    .expect_err("bad glob")
    .to_string();
    assert!(glob.contains("is not a glob"), "{glob}");
}
