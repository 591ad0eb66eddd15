//! Reading typed configuration through serde, and writing it back.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

#[derive(Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
struct Strict {
    name: String,
    count: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    note: Option<String>,
    mode: Mode,
    #[serde(default)]
    tags: Vec<String>,
}

#[derive(Debug, Deserialize, Serialize, PartialEq)]
#[serde(rename_all = "snake_case")]
enum Mode {
    Auto,
    AgentReview,
}

#[derive(Debug, Deserialize, PartialEq)]
struct Lenient {
    name: String,
}

#[test]
fn a_struct_reads_with_enums_options_and_tuples() {
    let text = r#"
// a comment
.{
    .name = "demo",
    .count = 0x10,
    .mode = .agent_review,
    .tags = .{ "a", \\multi
                    \\line
    },
}
"#;
    let value: Strict = chock_zon::from_str(text).expect("reads");
    assert_eq!(
        value,
        Strict {
            name: "demo".into(),
            count: 16,
            note: None,
            mode: Mode::AgentReview,
            tags: vec!["a".into(), "multi\nline".into()],
        }
    );
}

#[test]
fn an_empty_literal_is_an_empty_list_or_struct() {
    let value: Vec<u8> = chock_zon::from_str(".{}").expect("empty tuple");
    assert!(value.is_empty());
    let map: BTreeMap<String, u8> = chock_zon::from_str(".{}").expect("empty struct");
    assert!(map.is_empty());
}

#[test]
fn an_unknown_field_is_refused_at_its_name_when_the_type_says_so() {
    let text = ".{\n    .name = \"x\",\n    .cuont = 1,\n}";
    let e = chock_zon::from_str::<Strict>(text).expect_err("unknown field");
    assert_eq!((e.line(), e.column()), (3, 6), "{e}");
    assert!(
        e.message()
            .starts_with("unknown field `.cuont`: did you mean `.count`?"),
        "{e}"
    );
    assert!(e.message().contains("expected one of `.name`"), "{e}");
    let lenient: Lenient = chock_zon::from_str(text).expect("ignored");
    assert_eq!(lenient.name, "x");
}

#[test]
fn a_missing_field_points_at_its_struct() {
    let e = chock_zon::from_str::<Strict>("\n  .{ .name = \"x\", .mode = .auto }")
        .expect_err("missing count");
    assert_eq!((e.line(), e.column()), (2, 3), "{e}");
    assert!(e.message().contains("missing field `count`"), "{e}");
}

#[test]
fn wrong_types_say_what_was_expected_and_what_to_write() {
    let e = chock_zon::from_str::<Strict>(".{ .name = .x, .count = 1, .mode = .auto }")
        .expect_err("enum for string");
    assert!(e.message().contains("write \"x\" in quotes"), "{e}");
    assert_eq!(e.column(), 12, "{e}");
    let e = chock_zon::from_str::<Strict>(".{ .name = \"x\", .count = 1, .mode = \"auto\" }")
        .expect_err("string for enum");
    assert!(e.message().contains("write .auto without quotes"), "{e}");
    let e = chock_zon::from_str::<Strict>(".{ .name = \"x\", .count = -1, .mode = .auto }")
        .expect_err("negative u32");
    assert!(e.message().contains("does not fit"), "{e}");
    let e = chock_zon::from_str::<Strict>(".{ .name = \"x\", .count = 1, .mode = .manual }")
        .expect_err("bad variant");
    assert!(e.message().contains("unknown variant `.manual`"), "{e}");
    assert_eq!(e.column(), 37, "{e}");
}

#[test]
fn a_syntax_error_in_an_ignored_block_still_refuses_the_file() {
    let e = chock_zon::from_str::<Lenient>(".{ .name = \"x\", .other = .{ .a = 01 } }")
        .expect_err("syntax");
    assert!(e.message().contains("leading zero"), "{e}");
}

#[test]
fn spanned_values_know_where_they_were_written() {
    #[derive(Deserialize)]
    struct Doc {
        items: Vec<chock_zon::Spanned<u8>>,
    }
    let text = ".{\n    .items = .{\n        1,\n        22,\n    },\n}";
    let doc: Doc = chock_zon::from_str(text).expect("reads");
    let lines: Vec<(u32, u32)> = doc
        .items
        .iter()
        .map(|s| chock_zon::line_col(text, s.span.start))
        .collect();
    assert_eq!(lines, vec![(3, 9), (4, 9)]);
    assert_eq!(doc.items[1].value, 22);
    assert_eq!(&text[doc.items[1].span.start..doc.items[1].span.end], "22");
}

#[test]
fn chars_floats_and_big_integers() {
    let v: (u32, f64, f64, i128, f64) = chock_zon::from_str(
        ".{ 'é', -1.5e3, 0x1.8p1, -170141183460469231731687303715884105728, 2 }",
    )
    .expect("reads");
    assert_eq!(v, (0xe9, -1500.0, 3.0, i128::MIN, 2.0));
    let nan: f64 = chock_zon::from_str("nan").expect("nan");
    assert!(nan.is_nan());
    let e = chock_zon::from_str::<u128>("0x1_0000_0000_0000_0000_0000_0000_0000_0000")
        .expect_err("129 bits");
    assert!(
        e.message().contains("does not fit") || e.message().contains("128 bits"),
        "{e}"
    );
}

#[test]
fn tagged_unions_read_as_enums_with_payloads() {
    #[derive(Debug, Deserialize, PartialEq)]
    #[serde(rename_all = "snake_case")]
    enum Size {
        Bytes(u64),
        Percent { of: String, value: u8 },
        Unlimited,
    }
    let v: Vec<Size> = chock_zon::from_str(
        ".{ .{ .bytes = 4 }, .{ .percent = .{ .of = \"cpus\", .value = 50 } }, .unlimited }",
    )
    .expect("reads");
    assert_eq!(
        v,
        vec![
            Size::Bytes(4),
            Size::Percent {
                of: "cpus".into(),
                value: 50
            },
            Size::Unlimited
        ]
    );
}

#[test]
fn the_writer_round_trips() {
    let value = Strict {
        name: "tab\there \"quoted\" \\ é \u{1}".into(),
        count: 7,
        note: Some("n".into()),
        mode: Mode::AgentReview,
        tags: vec!["x".into(), "fn".into()],
    };
    let text = chock_zon::to_string(&value).expect("writes");
    let back: Strict = chock_zon::from_str(&text).expect(&text);
    assert_eq!(back, value);
}

#[test]
fn the_writer_lays_out_like_zig_fmt() {
    #[derive(Serialize)]
    struct Rule<'a> {
        action: &'a str,
        decision: Mode,
    }
    #[derive(Serialize)]
    struct Doc<'a> {
        rules: Vec<Rule<'a>>,
    }
    let text = chock_zon::to_string(&Doc {
        rules: vec![Rule {
            action: "net.fetch.org.ziglang.*",
            decision: Mode::Auto,
        }],
    })
    .expect("writes");
    assert_eq!(
        text,
        ".{\n    .rules = .{\n        .{ .action = \"net.fetch.org.ziglang.*\", .decision = .auto },\n    },\n}\n"
    );
}

#[test]
fn the_writer_quotes_names_zig_would_refuse_bare() {
    let mut map = BTreeMap::new();
    map.insert("fn".to_string(), 1);
    map.insert("two words".to_string(), 2);
    map.insert("_".to_string(), 3);
    let text = chock_zon::to_string(&map).expect("writes");
    assert!(text.contains(".@\"fn\" = 1"), "{text}");
    assert!(text.contains(".@\"two words\" = 2"), "{text}");
    assert!(text.contains("._ = 3"), "{text}");
    let back: BTreeMap<String, i32> = chock_zon::from_str(&text).expect("reads back");
    assert_eq!(back, map);
    let mut empty = BTreeMap::new();
    empty.insert(String::new(), 1);
    assert!(chock_zon::to_string(&empty).is_err());
}

#[test]
fn bytes_that_are_not_utf8_are_refused_with_their_line() {
    let e = chock_zon::from_slice_in::<String>(None, b"// ok\n\"a\xffb\"").expect_err("not UTF-8");
    assert_eq!((e.line(), e.column()), (2, 3), "{e}");
}

#[test]
fn a_key_read_as_spanned_has_the_names_own_span_in_file_order() {
    use std::collections::BTreeMap;
    let text = ".{\n    .zeta = 1,\n    .alpha = .{ .x = 2 },\n}";
    let top: BTreeMap<chock_zon::Spanned<String>, serde::de::IgnoredAny> =
        chock_zon::from_str(text).expect("reads");
    let names: Vec<(&str, (u32, u32))> = top
        .keys()
        .map(|k| (k.value.as_str(), chock_zon::line_col(text, k.span.start)))
        .collect();
    assert_eq!(names, vec![("zeta", (2, 6)), ("alpha", (3, 6))]);
    let key = top.keys().next().expect("a key");
    assert_eq!(&text[key.span.start..key.span.end], "zeta");
}
