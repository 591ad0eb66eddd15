//! Package names and versions: `parseDrvName`, `compareVersions`,
//! `splitVersion`, with Nix's component rules (`pre` sorts first, numbers
//! compare as numbers, `2.3a` < `2.3.1`).

use super::{arg_context, list_value, plain_string, primop};
use crate::error::Result;
use crate::eval::Evaluator;
use crate::source::Pos;
use crate::symbol::known;
use crate::value::{Attr, Attrs, PrimOp, Value};
use std::cmp::Ordering;

pub static PRIMOPS: &[PrimOp] = &[
    primop!("parseDrvName", 1, parse_drv_name),
    primop!("compareVersions", 2, compare_versions_op),
    primop!("splitVersion", 1, split_version),
];

/// Splits `name-version` at the first `-` not followed by a letter.
pub fn split_drv_name(s: &[u8]) -> (&[u8], &[u8]) {
    for i in 0..s.len() {
        if s[i] == b'-' && s.get(i + 1).is_some_and(|c| !c.is_ascii_alphabetic()) {
            return (&s[..i], &s[i + 1..]);
        }
    }
    (s, b"")
}

fn next_component<'s>(s: &'s [u8], p: &mut usize) -> &'s [u8] {
    while *p < s.len() && (s[*p] == b'.' || s[*p] == b'-') {
        *p += 1;
    }
    let start = *p;
    if *p < s.len() && s[*p].is_ascii_digit() {
        while *p < s.len() && s[*p].is_ascii_digit() {
            *p += 1;
        }
    } else {
        while *p < s.len() && !s[*p].is_ascii_digit() && s[*p] != b'.' && s[*p] != b'-' {
            *p += 1;
        }
    }
    &s[start..*p]
}

/// A component as C's `int`, if it is one.
fn as_int(c: &[u8]) -> Option<i32> {
    if c.is_empty() || !c.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(c).ok()?.parse().ok()
}

fn component_less(c1: &[u8], c2: &[u8]) -> bool {
    let (n1, n2) = (as_int(c1), as_int(c2));
    match (n1, n2) {
        (Some(a), Some(b)) => a < b,
        _ if c1.is_empty() && n2.is_some() => true,
        _ if c1 == b"pre" && c2 != b"pre" => true,
        _ if c2 == b"pre" => false,
        (_, Some(_)) => true,
        (Some(_), _) => false,
        _ => c1 < c2,
    }
}

pub fn compare_versions(v1: &[u8], v2: &[u8]) -> Ordering {
    let (mut p1, mut p2) = (0, 0);
    while p1 < v1.len() || p2 < v2.len() {
        let c1 = next_component(v1, &mut p1);
        let c2 = next_component(v2, &mut p2);
        if component_less(c1, c2) {
            return Ordering::Less;
        }
        if component_less(c2, c1) {
            return Ordering::Greater;
        }
    }
    Ordering::Equal
}

fn parse_drv_name<'a>(ev: &mut Evaluator<'a>, args: &[Value<'a>], pos: Pos) -> Result<Value<'a>> {
    let s = plain_string(ev, &args[0], pos, arg_context(0, "parseDrvName"))?;
    let (name, version) = split_drv_name(s.as_bytes());
    Ok(Value::Attrs(Attrs::from_unsorted(vec![
        Attr {
            name: known::NAME,
            pos: Pos::NONE,
            value: Value::string(name),
        },
        Attr {
            name: known::VERSION,
            pos: Pos::NONE,
            value: Value::string(version),
        },
    ])))
}

fn compare_versions_op<'a>(
    ev: &mut Evaluator<'a>,
    args: &[Value<'a>],
    pos: Pos,
) -> Result<Value<'a>> {
    let a = plain_string(ev, &args[0], pos, arg_context(0, "compareVersions"))?;
    let b = plain_string(ev, &args[1], pos, arg_context(1, "compareVersions"))?;
    Ok(Value::Int(
        match compare_versions(a.as_bytes(), b.as_bytes()) {
            Ordering::Less => -1,
            Ordering::Equal => 0,
            Ordering::Greater => 1,
        },
    ))
}

fn split_version<'a>(ev: &mut Evaluator<'a>, args: &[Value<'a>], pos: Pos) -> Result<Value<'a>> {
    let s = plain_string(ev, &args[0], pos, arg_context(0, "splitVersion"))?;
    let bytes = s.as_bytes();
    let mut p = 0;
    let mut parts = Vec::new();
    while p < bytes.len() {
        let c = next_component(bytes, &mut p);
        if c.is_empty() {
            break;
        }
        parts.push(Value::string(c));
    }
    Ok(list_value(parts))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_compare_like_nix() {
        assert_eq!(compare_versions(b"1.0", b"2.3"), Ordering::Less);
        assert_eq!(compare_versions(b"2.1", b"2.3"), Ordering::Less);
        assert_eq!(compare_versions(b"2.3", b"2.3"), Ordering::Equal);
        assert_eq!(compare_versions(b"2.5", b"2.3"), Ordering::Greater);
        assert_eq!(compare_versions(b"3.1", b"2.3"), Ordering::Greater);
        assert_eq!(compare_versions(b"2.3.1", b"2.3"), Ordering::Greater);
        assert_eq!(compare_versions(b"2.3.1", b"2.3a"), Ordering::Greater);
        assert_eq!(compare_versions(b"2.3pre1", b"2.3"), Ordering::Less);
        assert_eq!(compare_versions(b"2.3pre3", b"2.3pre12"), Ordering::Less);
        assert_eq!(compare_versions(b"2.3a", b"2.3c"), Ordering::Less);
        assert_eq!(compare_versions(b"2.3pre1", b"2.3c"), Ordering::Less);
        assert_eq!(compare_versions(b"2.3pre1", b"2.3q"), Ordering::Less);
    }

    #[test]
    fn drv_names_split_at_version() {
        assert_eq!(
            split_drv_name(b"nix-0.12pre12876"),
            (&b"nix"[..], &b"0.12pre12876"[..])
        );
        assert_eq!(split_drv_name(b"a-b-c-1.0"), (&b"a-b-c"[..], &b"1.0"[..]));
        assert_eq!(split_drv_name(b"hello"), (&b"hello"[..], &b""[..]));
    }
}
