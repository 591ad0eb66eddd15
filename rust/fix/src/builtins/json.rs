//! `toJSON` and `fromJSON`, with Nix's rules: sets print sorted by name,
//! `__toString` then `outPath` peel a set, floats print in the shortest
//! form that reads back exactly; integers too large are errors.

use super::{arg_context, list_value, plain_string, primop};
use crate::error::{Error, Result};
use crate::eval::Evaluator;
use crate::source::Pos;
use crate::symbol::known;
use crate::value::{Attr, Attrs, Context, NixString, PrimOp, Value};
use std::fmt::Write as _;

pub static PRIMOPS: &[PrimOp] = &[
    primop!("toJSON", 1, to_json_op),
    primop!("fromJSON", 1, from_json_op),
];

fn to_json_op<'a>(ev: &mut Evaluator<'a>, args: &[Value<'a>], pos: Pos) -> Result<Value<'a>> {
    let (out, context) = to_json_with_context(ev, &args[0], pos)?;
    Ok(Value::String(NixString::with_context(&out, context)))
}

/// `v` as JSON, with the context of every string in it (`toJSON`, the
/// `__json` of a derivation with structured attributes).
pub fn to_json_with_context<'a>(
    ev: &mut Evaluator<'a>,
    v: &Value<'a>,
    pos: Pos,
) -> Result<(Vec<u8>, Option<Context>)> {
    let outer = std::mem::take(&mut ev.json_context);
    let mut out = Vec::new();
    let result = to_json(ev, v, pos, true, &mut out);
    let context = std::mem::replace(&mut ev.json_context, outer).finish();
    result.map(|()| (out, context))
}

/// Writes `v` as compact JSON. `copy_paths`: a path becomes the store path
/// of its copy (Nix's default), unless it came out of `__toString`.
pub fn to_json<'a>(
    ev: &mut Evaluator<'a>,
    v: &Value<'a>,
    pos: Pos,
    copy_paths: bool,
    out: &mut Vec<u8>,
) -> Result<()> {
    ev.nested(pos, |ev| to_json_in(ev, v, pos, copy_paths, out))
}

fn to_json_in<'a>(
    ev: &mut Evaluator<'a>,
    v: &Value<'a>,
    pos: Pos,
    copy_paths: bool,
    out: &mut Vec<u8>,
) -> Result<()> {
    let (v, through_to_string) = peel(ev, v, pos)?;
    match &v {
        Value::Null => out.extend_from_slice(b"null"),
        Value::Bool(b) => out.extend_from_slice(if *b { b"true" } else { b"false" }),
        Value::Int(n) => out.extend_from_slice(crate::value::decimal(*n, &mut [0; 20])),
        Value::Float(f) => out.extend_from_slice(json_float(*f).as_bytes()),
        Value::String(s) => {
            ev.json_context.add(s.context());
            json_string(s.as_bytes(), out, pos)?
        }
        // A path that came out of `__toString` stays a path (a Nix quirk).
        Value::Path(p) if copy_paths && !through_to_string => {
            let s = ev.copy_to_store(p.as_bytes(), pos)?;
            ev.json_context.add(s.context());
            json_string(s.as_bytes(), out, pos)?;
        }
        Value::Path(p) => json_string(p.as_bytes(), out, pos)?,
        Value::Attrs(attrs) => {
            out.push(b'{');
            for (i, attr) in attrs.lexicographic(&ev.symbols).into_iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                json_string(ev.symbols.bytes(attr.name), out, pos)?;
                out.push(b':');
                to_json(ev, &attr.value, attr.pos, copy_paths, out).map_err(|e| {
                    let name = ev.symbols.text(attr.name).into_owned();
                    e.with_frame(attr.pos, format!("while evaluating attribute '{name}'"))
                })?;
            }
            out.push(b'}');
        }
        Value::List(list) => {
            out.push(b'[');
            for (i, item) in list.as_slice().iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                to_json(ev, item, pos, copy_paths, out).map_err(|e| {
                    e.with_frame(pos, format!("while evaluating list element at index {i}"))
                })?;
            }
            out.push(b']');
        }
        other => {
            return Err(Error::eval(
                format!("cannot convert {} to JSON", other.describe()),
                pos,
            ));
        }
    }
    Ok(())
}

/// Peels a set through `__toString` (checked to give a string) and
/// `outPath`, as Nix does before writing JSON. Also says whether a
/// `__toString` was called on the way.
fn peel<'a>(ev: &mut Evaluator<'a>, v: &Value<'a>, pos: Pos) -> Result<(Value<'a>, bool)> {
    let mut v = ev.force(v)?;
    let mut through_to_string = false;
    loop {
        let Value::Attrs(attrs) = &v else {
            if through_to_string && !matches!(v, Value::String(_) | Value::Path(_)) {
                return Err(Error::eval(
                    format!(
                        "`__toString` should return a string, but got {}: {}",
                        v.describe(),
                        ev.show_brief(&v)
                    ),
                    pos,
                ));
            }
            return Ok((v, through_to_string));
        };
        if let Some(f) = attrs.get(known::TO_STRING).cloned() {
            let r = ev
                .call(f, v.clone(), pos)
                .map_err(|e| e.with_frame(pos, "while calling the `__toString` attribute"))?;
            v = ev.force(&r)?;
            through_to_string = true;
            continue;
        }
        if let Some(o) = attrs.get(known::OUT_PATH).cloned() {
            v = ev.force(&o)?;
            continue;
        }
        if through_to_string {
            return Err(Error::eval(
                format!(
                    "`__toString` must return a string, but got {}: {}",
                    v.describe(),
                    ev.show_brief(&v)
                ),
                pos,
            )
            .with_frame(pos, "while using the result of the `__toString` attribute"));
        }
        return Ok((v, false));
    }
}

/// A JSON string: must be valid UTF-8; `"`, `\` and control characters
/// escaped as nlohmann's JSON (which Nix uses) escapes them.
pub(crate) fn json_string(bytes: &[u8], out: &mut Vec<u8>, pos: Pos) -> Result<()> {
    let text = match std::str::from_utf8(bytes) {
        Ok(text) => text,
        Err(e) => {
            let at = e.valid_up_to();
            return Err(Error::eval(
                format!(
                    "JSON serialization error: [json.exception.type_error.316] invalid UTF-8 byte at index {at}: 0x{:02X}",
                    bytes.get(at).copied().unwrap_or(0)
                ),
                pos,
            ));
        }
    };
    out.push(b'"');
    for c in text.chars() {
        match c {
            '"' => out.extend_from_slice(b"\\\""),
            '\\' => out.extend_from_slice(b"\\\\"),
            '\n' => out.extend_from_slice(b"\\n"),
            '\r' => out.extend_from_slice(b"\\r"),
            '\t' => out.extend_from_slice(b"\\t"),
            '\u{08}' => out.extend_from_slice(b"\\b"),
            '\u{0c}' => out.extend_from_slice(b"\\f"),
            c if (c as u32) < 0x20 => {
                out.extend_from_slice(format!("\\u{:04x}", c as u32).as_bytes())
            }
            c => {
                let mut buf = [0u8; 4];
                out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
            }
        }
    }
    out.push(b'"');
    Ok(())
}

/// A float as nlohmann's JSON writes it: the shortest digits that read
/// back exactly, `1.0` for whole numbers, exponents outside 1e-4..1e15.
pub fn json_float(f: f64) -> String {
    if !f.is_finite() {
        return "null".to_string();
    }
    if f == 0.0 {
        return if f.is_sign_negative() {
            "-0.0".into()
        } else {
            "0.0".into()
        };
    }
    let sci = format!("{:e}", f.abs());
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let k = digits.len() as i32;
    // The value is 0.digits * 10^n.
    let n = exp + 1;
    let mut out = String::new();
    if f < 0.0 {
        out.push('-');
    }
    if k <= n && n <= 15 {
        out.push_str(&digits);
        out.push_str(&"0".repeat((n - k) as usize));
        out.push_str(".0");
    } else if 0 < n && n <= 15 {
        out.push_str(&digits[..n as usize]);
        out.push('.');
        out.push_str(&digits[n as usize..]);
    } else if -4 < n && n <= 0 {
        out.push_str("0.");
        out.push_str(&"0".repeat((-n) as usize));
        out.push_str(&digits);
    } else {
        out.push_str(&digits[..1]);
        if k > 1 {
            out.push('.');
            out.push_str(&digits[1..]);
        }
        let e = n - 1;
        let _ = write!(out, "e{}{:02}", if e < 0 { '-' } else { '+' }, e.abs());
    }
    out
}

fn from_json_op<'a>(ev: &mut Evaluator<'a>, args: &[Value<'a>], pos: Pos) -> Result<Value<'a>> {
    let s = plain_string(ev, &args[0], pos, arg_context(0, "fromJSON"))?;
    let mut parser = JsonParser {
        text: s.as_bytes(),
        at: 0,
    };
    parser.skip_ws();
    let v = parser
        .value(ev, 0)
        .map_err(|m| Error::eval(m.to_string(), pos))?;
    parser.skip_ws();
    if parser.at != parser.text.len() {
        return Err(Error::eval(
            parser
                .error("syntax error while parsing value - unexpected input; expected end of input")
                .to_string(),
            pos,
        ));
    }
    Ok(v)
}

/// Deeper nesting than this is refused rather than recursed into.
const MAX_JSON_DEPTH: usize = 10_000;

struct JsonParser<'t> {
    text: &'t [u8],
    at: usize,
}

/// Why a `builtins.fromJSON` text was refused, in Nix's words.
#[derive(Debug, thiserror::Error)]
enum JsonError {
    #[error("while parsing JSON at byte {at}: {what}")]
    Syntax { at: usize, what: &'static str },
    #[error(
        "input string '{0}' cannot be represented as Nix string because it contains null bytes"
    )]
    NulByte(String),
    #[error("unsigned json number {0} outside of Nix integer range")]
    OutOfRange(String),
}

impl<'t> JsonParser<'t> {
    fn error(&self, what: &'static str) -> JsonError {
        JsonError::Syntax { at: self.at, what }
    }

    fn no_nul(&self, s: Vec<u8>) -> Result<Vec<u8>, JsonError> {
        if s.contains(&0) {
            return Err(JsonError::NulByte(
                String::from_utf8_lossy(&s).replace('\0', "␀"),
            ));
        }
        Ok(s)
    }

    fn skip_ws(&mut self) {
        while matches!(self.text.get(self.at), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.at += 1;
        }
    }

    fn literal(&mut self, word: &[u8]) -> Result<(), JsonError> {
        if self.text[self.at..].starts_with(word) {
            self.at += word.len();
            Ok(())
        } else {
            Err(self.error("syntax error while parsing value - invalid literal"))
        }
    }

    fn value<'a>(&mut self, ev: &mut Evaluator<'a>, depth: usize) -> Result<Value<'a>, JsonError> {
        if depth > MAX_JSON_DEPTH {
            return Err(self.error("nesting too deep"));
        }
        match self.text.get(self.at) {
            None => Err(self.error("syntax error while parsing value - unexpected end of input")),
            Some(b'n') => self.literal(b"null").map(|_| Value::Null),
            Some(b't') => self.literal(b"true").map(|_| Value::Bool(true)),
            Some(b'f') => self.literal(b"false").map(|_| Value::Bool(false)),
            Some(b'"') => self
                .string()
                .and_then(|s| self.no_nul(s))
                .map(Value::string),
            Some(b'[') => {
                self.at += 1;
                self.skip_ws();
                let mut items = Vec::new();
                if self.text.get(self.at) == Some(&b']') {
                    self.at += 1;
                    return Ok(list_value(items));
                }
                loop {
                    self.skip_ws();
                    items.push(self.value(ev, depth + 1)?);
                    self.skip_ws();
                    match self.text.get(self.at) {
                        Some(b',') => self.at += 1,
                        Some(b']') => {
                            self.at += 1;
                            return Ok(list_value(items));
                        }
                        _ => {
                            return Err(self
                                .error("syntax error while parsing array - expected ',' or ']'"));
                        }
                    }
                }
            }
            Some(b'{') => {
                self.at += 1;
                self.skip_ws();
                let mut entries: Vec<Attr<'a>> = Vec::new();
                if self.text.get(self.at) == Some(&b'}') {
                    self.at += 1;
                    return Ok(Value::Attrs(Attrs::empty()));
                }
                loop {
                    self.skip_ws();
                    if self.text.get(self.at) != Some(&b'"') {
                        return Err(self.error(
                            "syntax error while parsing object key - expected string literal",
                        ));
                    }
                    let key = self.string().and_then(|s| self.no_nul(s))?;
                    self.skip_ws();
                    if self.text.get(self.at) != Some(&b':') {
                        return Err(self
                            .error("syntax error while parsing object separator - expected ':'"));
                    }
                    self.at += 1;
                    self.skip_ws();
                    let value = self.value(ev, depth + 1)?;
                    let name = ev.symbols.intern(&key);
                    // The last of several equal keys wins, as in Nix.
                    entries.retain(|e| e.name != name);
                    entries.push(Attr {
                        name,
                        pos: Pos::NONE,
                        value,
                    });
                    self.skip_ws();
                    match self.text.get(self.at) {
                        Some(b',') => self.at += 1,
                        Some(b'}') => {
                            self.at += 1;
                            return Ok(Value::Attrs(Attrs::from_unsorted(entries)));
                        }
                        _ => {
                            return Err(self
                                .error("syntax error while parsing object - expected ',' or '}'"));
                        }
                    }
                }
            }
            Some(b'-' | b'0'..=b'9') => self.number(),
            Some(_) => Err(self.error("syntax error while parsing value - invalid literal")),
        }
    }

    fn number<'a>(&mut self) -> Result<Value<'a>, JsonError> {
        let start = self.at;
        if self.text.get(self.at) == Some(&b'-') {
            self.at += 1;
        }
        let digits = |p: &mut Self| {
            let s = p.at;
            while p.text.get(p.at).is_some_and(u8::is_ascii_digit) {
                p.at += 1;
            }
            p.at - s
        };
        let int_start = self.at;
        let n = digits(self);
        if n == 0 || (n > 1 && self.text[int_start] == b'0') {
            return Err(self.error("syntax error while parsing value - invalid number"));
        }
        let mut float = false;
        if self.text.get(self.at) == Some(&b'.') {
            self.at += 1;
            float = true;
            if digits(self) == 0 {
                return Err(self.error(
                    "syntax error while parsing value - invalid number; expected digit after '.'",
                ));
            }
        }
        if matches!(self.text.get(self.at), Some(b'e' | b'E')) {
            self.at += 1;
            float = true;
            if matches!(self.text.get(self.at), Some(b'+' | b'-')) {
                self.at += 1;
            }
            if digits(self) == 0 {
                return Err(self.error("syntax error while parsing value - invalid number; expected digit after exponent sign"));
            }
        }
        let text = std::str::from_utf8(&self.text[start..self.at]).unwrap_or("0");
        if !float {
            if let Ok(i) = text.parse::<i64>() {
                return Ok(Value::Int(i));
            }
            if !text.starts_with('-') && text.parse::<u64>().is_ok() {
                return Err(JsonError::OutOfRange(text.to_owned()));
            }
        }
        text.parse::<f64>()
            .map(Value::Float)
            .map_err(|_| self.error("invalid number"))
    }

    fn hex4(&mut self) -> Result<u32, JsonError> {
        let digits = self
            .text
            .get(self.at..self.at + 4)
            .ok_or_else(|| self.error("incomplete \\u escape"))?;
        let text = std::str::from_utf8(digits).map_err(|_| self.error("invalid \\u escape"))?;
        let v = u32::from_str_radix(text, 16).map_err(|_| self.error("invalid \\u escape"))?;
        self.at += 4;
        Ok(v)
    }

    fn string(&mut self) -> Result<Vec<u8>, JsonError> {
        self.at += 1;
        let mut out = Vec::new();
        loop {
            let Some(&c) = self.text.get(self.at) else {
                return Err(self.error("syntax error while parsing value - missing closing quote"));
            };
            self.at += 1;
            match c {
                b'"' => return Ok(out),
                b'\\' => {
                    let Some(&e) = self.text.get(self.at) else {
                        return Err(self.error("unexpected end of input in escape"));
                    };
                    self.at += 1;
                    match e {
                        b'"' => out.push(b'"'),
                        b'\\' => out.push(b'\\'),
                        b'/' => out.push(b'/'),
                        b'b' => out.push(8),
                        b'f' => out.push(12),
                        b'n' => out.push(b'\n'),
                        b'r' => out.push(b'\r'),
                        b't' => out.push(b'\t'),
                        b'u' => {
                            let mut code = self.hex4()?;
                            if (0xD800..0xDC00).contains(&code) {
                                if self.text.get(self.at..self.at + 2) != Some(b"\\u") {
                                    return Err(self.error("surrogate U+D800..U+DBFF must be followed by U+DC00..U+DFFF"));
                                }
                                self.at += 2;
                                let low = self.hex4()?;
                                if !(0xDC00..0xE000).contains(&low) {
                                    return Err(self.error("surrogate U+D800..U+DBFF must be followed by U+DC00..U+DFFF"));
                                }
                                code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00);
                            } else if (0xDC00..0xE000).contains(&code) {
                                return Err(self.error("surrogate U+DC00..U+DFFF must follow U+D800..U+DBFF"));
                            }
                            let ch = char::from_u32(code).ok_or_else(|| self.error("invalid code point"))?;
                            let mut buf = [0u8; 4];
                            out.extend_from_slice(ch.encode_utf8(&mut buf).as_bytes());
                        }
                        _ => return Err(self.error("syntax error while parsing value - invalid string: forbidden character after backslash")),
                    }
                }
                c if c < 0x20 => {
                    return Err(self.error("syntax error while parsing value - invalid string: control character must be escaped"));
                }
                c => out.push(c),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::json_float;

    #[test]
    fn floats_like_nlohmann() {
        assert_eq!(json_float(1.0), "1.0");
        assert_eq!(json_float(1.44), "1.44");
        assert_eq!(json_float(0.1), "0.1");
        assert_eq!(json_float(100.0), "100.0");
        assert_eq!(json_float(1e15), "1e+15");
        assert_eq!(json_float(123456789.123), "123456789.123");
        assert_eq!(json_float(5e-7), "5e-07");
        assert_eq!(json_float(0.0001), "0.0001");
        assert_eq!(json_float(-2.5), "-2.5");
        assert_eq!(json_float(1e100), "1e+100");
        assert_eq!(json_float(f64::NAN), "null");
    }
}
