//! Zig itself as the oracle: the vector table is re-checked against the real
//! `zig ast-check --zon`, generated texts are read by both and must get the
//! same verdict, and everything the writer produces must pass
//! `zig ast-check --zon` and `zig fmt --check --zon`. These tests fail, never
//! skip, when Zig is missing (`scripts/setup` installs it).

mod common;

use std::collections::BTreeMap;
use std::fmt;

use common::vectors::{DEVIATIONS, VECTORS};
use common::{scratch, zig_accepts};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::ser::{Serialize, SerializeMap, SerializeSeq, Serializer};

#[test]
fn the_vector_table_is_what_zig_says() {
    let dir = scratch("oracle-vectors");
    let wrong: Vec<String> = VECTORS
        .iter()
        .enumerate()
        .filter(|(i, (text, accepts))| {
            zig_accepts(&dir, &format!("v{i}"), text.as_bytes(), false) != *accepts
        })
        .map(|(_, (text, accepts))| format!("{text:?}: table says {accepts}"))
        .collect();
    assert!(
        wrong.is_empty(),
        "the table disagrees with zig:\n{}",
        wrong.join("\n")
    );
    for text in DEVIATIONS {
        assert!(
            chock_zon::validate(text).is_err(),
            "{text:?} is a deviation we refuse"
        );
    }
}

/// Pieces a generated text is built from: enough of the grammar, and enough
/// near-misses, that random sequences land on both sides of the line.
fn piece() -> impl Strategy<Value = String> {
    let fixed = prop::sample::select(vec![
        ".{",
        "}",
        ".{}",
        ",",
        "=",
        ".a",
        ".b",
        ".@\"a\"",
        ".@\"fn\"",
        ".fn",
        ".true",
        "-",
        " ",
        "\n",
        "\t",
        "\r\n",
        "// c\n",
        "/// d\n",
        "//! e\n",
        "true",
        "null",
        "nan",
        "inf",
        "foo",
        "\"s\"",
        "\"\\n\"",
        "\"\\x4\"",
        "\"\\u{41}\"",
        "\"\\u{D800}\"",
        "\"\\q\"",
        "\"a\tb\"",
        "'x'",
        "'\\u{1F600}'",
        "''",
        "\\\\line\n",
        "(",
        "@",
        "..",
        ".a.b",
    ])
    .prop_map(str::to_string);
    let number = "[0-9][0-9a-fxobpeE_.+-]{0,6}";
    prop_oneof![3 => fixed, 1 => number]
}

fn text() -> impl Strategy<Value = String> {
    prop::collection::vec(piece(), 1..12).prop_map(|pieces| pieces.concat())
}

#[test]
fn generated_texts_get_the_same_verdict_from_zig_and_from_us() {
    let dir = scratch("oracle-generated");
    let mut runner = TestRunner::new(Config {
        cases: 600,
        failure_persistence: None,
        ..Config::default()
    });
    let accepted = std::cell::Cell::new(0u32);
    runner
        .run(&text(), |text| {
            let ours = chock_zon::validate(&text);
            let deviation = matches!(&ours, Err(e) if e.message().contains("not UTF-8"));
            let zig = zig_accepts(&dir, "case", text.as_bytes(), false);
            if !deviation {
                prop_assert_eq!(
                    ours.is_ok(),
                    zig,
                    "{:?}: ours {:?}",
                    text,
                    ours.err().map(|e| e.to_string())
                );
            }
            accepted.set(accepted.get() + u32::from(zig));
            Ok(())
        })
        .unwrap_or_else(|e| panic!("{e}"));
    let accepted = accepted.get();
    assert!(
        accepted > 10,
        "the generator must also produce valid ZON ({accepted} accepted)"
    );
}

#[test]
fn generated_numbers_get_the_same_verdict() {
    let dir = scratch("oracle-numbers");
    let mut runner = TestRunner::new(Config {
        cases: 400,
        failure_persistence: None,
        ..Config::default()
    });
    runner
        .run(&"-?[0-9][0-9a-fxobpeEP_.+-]{0,8}", |text| {
            let ours = chock_zon::validate(&text).is_ok();
            prop_assert_eq!(
                ours,
                zig_accepts(&dir, "n", text.as_bytes(), false),
                "{:?}",
                text
            );
            Ok(())
        })
        .unwrap_or_else(|e| panic!("{e}"));
}

/// Any ZON value, for the writer's round trip.
#[derive(Debug, Clone)]
enum Value {
    Null,
    Bool(bool),
    Int(i128),
    Float(f64),
    Str(String),
    Enum(String),
    Struct(BTreeMap<String, Value>),
    Tuple(Vec<Value>),
}

fn value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i128>().prop_map(Value::Int),
        any::<f64>().prop_map(Value::Float),
        any::<String>().prop_map(|s| Value::Str(s.replace('\0', ""))),
        "[a-z_][a-z0-9_ ]{0,6}".prop_map(Value::Enum),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::btree_map(
                "[a-zA-Z_@ ][a-z0-9_ ]{0,5}|fn|error|_",
                inner.clone(),
                0..5
            )
            .prop_map(Value::Struct),
            prop::collection::vec(inner, 0..5).prop_map(Value::Tuple),
        ]
    })
}

impl Serialize for Value {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Value::Null => s.serialize_none(),
            Value::Bool(b) => s.serialize_bool(*b),
            Value::Int(i) => s.serialize_i128(*i),
            Value::Float(f) => s.serialize_f64(*f),
            Value::Str(v) => s.serialize_str(v),
            Value::Enum(name) => {
                let name: &'static str = Box::leak(name.clone().into_boxed_str());
                s.serialize_unit_variant("Value", 0, name)
            }
            Value::Struct(fields) => {
                let mut map = s.serialize_map(Some(fields.len()))?;
                for (k, v) in fields {
                    map.serialize_entry(k, v)?;
                }
                map.end()
            }
            Value::Tuple(items) => {
                let mut seq = s.serialize_seq(Some(items.len()))?;
                for v in items {
                    seq.serialize_element(v)?;
                }
                seq.end()
            }
        }
    }
}

impl<'de> Deserialize<'de> for Value {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(ValueVisitor)
    }
}

struct ValueVisitor;

impl<'de> Visitor<'de> for ValueVisitor {
    type Value = Value;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any ZON value")
    }
    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }
    fn visit_i128<E>(self, v: i128) -> Result<Value, E> {
        Ok(Value::Int(v))
    }
    fn visit_u128<E: de::Error>(self, v: u128) -> Result<Value, E> {
        i128::try_from(v).map(Value::Int).map_err(E::custom)
    }
    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(Value::Float(v))
    }
    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::Str(v.to_string()))
    }
    fn visit_enum<A: de::EnumAccess<'de>>(self, data: A) -> Result<Value, A::Error> {
        let (name, variant): (String, _) = data.variant()?;
        de::VariantAccess::unit_variant(variant)?;
        Ok(Value::Enum(name))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut fields = BTreeMap::new();
        while let Some((k, v)) = map.next_entry::<String, Value>()? {
            fields.insert(k, v);
        }
        Ok(Value::Struct(fields))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::new();
        while let Some(v) = seq.next_element()? {
            items.push(v);
        }
        Ok(Value::Tuple(items))
    }
}

#[test]
fn everything_the_writer_writes_zig_accepts_and_we_read_back() {
    let dir = scratch("oracle-writer");
    let mut runner = TestRunner::new(Config {
        cases: 200,
        failure_persistence: None,
        ..Config::default()
    });
    runner
        .run(&value(), |value| {
            let text = chock_zon::to_string(&value).expect("any generated value can be written");
            prop_assert!(
                zig_accepts(&dir, "w", text.as_bytes(), true),
                "zig refused:\n{}",
                text
            );
            let back: Value = chock_zon::from_str(&text)
                .map_err(|e| TestCaseError::fail(format!("{e}\n{text}")))?;
            let again = chock_zon::to_string(&back).expect("writes again");
            prop_assert_eq!(again, text);
            Ok(())
        })
        .unwrap_or_else(|e| panic!("{e}"));
}
