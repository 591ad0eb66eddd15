//! The reader against the grammar vectors: every text Zig accepts is
//! accepted, every text Zig refuses is refused, with the documented deviations.

mod common;

use common::vectors::{DEVIATIONS, VECTORS};

#[test]
fn reader_agrees_with_zig_on_every_vector() {
    let mut wrong = Vec::new();
    for (text, zig_accepts) in VECTORS {
        let ours = chock_zon::validate(text).is_ok();
        let expected = *zig_accepts && !DEVIATIONS.contains(text);
        if ours != expected {
            wrong.push(format!("{text:?}: zig {zig_accepts}, chock-zon {ours}"));
        }
    }
    assert!(wrong.is_empty(), "disagreements:\n{}", wrong.join("\n"));
}

#[test]
fn every_refusal_has_a_position_and_a_sentence() {
    for (text, _) in VECTORS {
        if let Err(e) = chock_zon::validate(text) {
            let shown = e.to_string();
            assert!(shown.starts_with("<input>:"), "{shown}");
            assert!(e.line() >= 1 && e.column() >= 1, "{shown}");
            assert!(!e.message().is_empty());
            assert!(
                !e.message().ends_with('.'),
                "messages end without a period: {shown}"
            );
        }
    }
}

#[test]
fn refusals_point_at_the_offending_text() {
    let cases = [
        (
            ".{\n    .a = 1,\n    .a = 2,\n}",
            3,
            6,
            "duplicate field `a`",
        ),
        (".{ .a = 1, .@\"a\" = 2 }", 1, 13, "duplicate field `a`"),
        (".{\n  .x = \"a\tb\",\n}", 2, 10, "raw tab"),
        (".{ .x = 01 }", 1, 9, "leading zero"),
        (".{ .x = -0 }", 1, 9, "ambiguous"),
        ("/// doc\n.{}", 1, 1, "doc comments"),
        (".{ .x = \"\\q\" }", 1, 10, "invalid escape"),
        (".{ .fn = 1 }", 1, 5, "keyword"),
        (".{ .x = foo }", 1, 9, "not a ZON value"),
        (".{ 1, .a = 2 }", 1, 10, "tuple cannot hold"),
    ];
    for (text, line, column, words) in cases {
        let e = chock_zon::validate(text).expect_err(text);
        assert_eq!((e.line(), e.column()), (line, column), "{text:?}: {e}");
        assert!(e.message().contains(words), "{text:?}: {e}");
    }
}

#[test]
fn the_offending_line_is_shown_with_a_caret() {
    let e = chock_zon::validate(".{\n    .a = 1,\n    .b = 0x_1,\n}").expect_err("bad hex");
    let shown = e.to_string();
    let lines: Vec<&str> = shown.lines().collect();
    assert_eq!(lines.len(), 3, "{shown}");
    assert!(lines[0].starts_with("<input>:3:"), "{shown}");
    assert!(lines[1].ends_with("    .b = 0x_1,"), "{shown}");
    assert!(lines[2].trim_end().ends_with('^'), "{shown}");
}

#[test]
fn nesting_is_bounded() {
    let ok = format!(
        "{}{}",
        ".{".repeat(chock_zon::MAX_DEPTH as usize),
        "}".repeat(chock_zon::MAX_DEPTH as usize)
    );
    chock_zon::validate(&ok).expect("nesting at the bound");
    let deep = format!("{}{}", ".{".repeat(100_000), "}".repeat(100_000));
    let e = chock_zon::validate(&deep).expect_err("too deep");
    assert!(e.message().contains("nest deeper"), "{e}");
}

#[test]
fn a_file_over_one_mebibyte_is_refused() {
    let big = format!(".{{ .x = \"{}\" }}", "a".repeat(chock_zon::MAX_FILE_BYTES));
    let e = chock_zon::validate(&big).expect_err("too large");
    assert!(e.message().contains("1 MiB"), "{e}");
    let fits = format!("\"{}\"", "a".repeat(chock_zon::MAX_FILE_BYTES - 2));
    chock_zon::validate(&fits).expect("exactly 1 MiB is accepted");
}
