//! Printing values the way `nix-instantiate --eval` does, and the short
//! renderings used in error messages.

use crate::eval::Evaluator;
use crate::value::Value;
use rustc_hash::FxHashSet;

/// A float the way C++ streams print a double (`%g`, six significant
/// digits), which is how Nix prints floats.
pub fn format_float(f: f64) -> String {
    if f.is_nan() {
        return if f.is_sign_negative() {
            "-nan".into()
        } else {
            "nan".into()
        };
    }
    if f.is_infinite() {
        return if f < 0.0 { "-inf".into() } else { "inf".into() };
    }
    if f == 0.0 {
        return if f.is_sign_negative() {
            "-0".into()
        } else {
            "0".into()
        };
    }
    let sci = format!("{f:.5e}");
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    if !(-4..6).contains(&exp) {
        let mantissa = trim_zeros(mantissa);
        let sign = if exp < 0 { '-' } else { '+' };
        return format!("{mantissa}e{sign}{:02}", exp.abs());
    }
    let decimals = (5 - exp).max(0) as usize;
    trim_zeros(&format!("{f:.decimals$}")).to_string()
}

fn trim_zeros(s: &str) -> &str {
    if !s.contains('.') {
        return s;
    }
    s.trim_end_matches('0').trim_end_matches('.')
}

/// A string literal as Nix prints it: quoted, with `"`, `\`, `${` and
/// control characters escaped.
pub fn quote_string(bytes: &[u8], out: &mut Vec<u8>) {
    out.push(b'"');
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'"' => out.extend_from_slice(b"\\\""),
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            b'\t' => out.extend_from_slice(b"\\t"),
            b'$' if bytes.get(i + 1) == Some(&b'{') => {
                out.extend_from_slice(b"\\${");
                i += 1;
            }
            c => out.push(c),
        }
        i += 1;
    }
    out.push(b'"');
}

/// An attribute name as Nix prints it: bare when it reads back as an
/// identifier, quoted otherwise (and for the keywords).
pub fn identifier(name: &[u8], out: &mut Vec<u8>) {
    const KEYWORDS: [&[u8]; 9] = [
        b"if", b"then", b"else", b"assert", b"with", b"let", b"in", b"rec", b"inherit",
    ];
    let plain = match name.first() {
        Some(c) if c.is_ascii_alphabetic() || *c == b'_' => name
            .iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'\'' | b'-')),
        _ => false,
    };
    if plain && !KEYWORDS.contains(&name) {
        out.extend_from_slice(name);
    } else {
        quote_string(name, out);
    }
}

/// `nix-instantiate --eval` output (`printAmbiguous`): the value as far as
/// it has been evaluated, `<CODE>` for the rest, `«repeated»` for a list
/// or set already printed above. Deeper than the call depth (or than the
/// machine stack allows) is an error, as in Nix.
pub fn print_value<'a>(ev: &Evaluator<'a>, v: &Value<'a>) -> crate::error::Result<Vec<u8>> {
    let mut out = Vec::new();
    let mut printer = Printer {
        ev,
        seen: FxHashSet::default(),
        depth: 0,
    };
    printer.ambiguous(v, None, &mut out).map_err(|()| {
        crate::error::Error::new(
            crate::error::ErrorKind::StackOverflow,
            "stack overflow; max-call-depth exceeded",
            crate::source::Pos::NONE,
        )
    })?;
    Ok(out)
}

struct Printer<'p, 'a> {
    ev: &'p Evaluator<'a>,
    seen: FxHashSet<usize>,
    depth: usize,
}

impl<'a> Printer<'_, 'a> {
    /// Enters one level of nesting; `Err` when it is one too many.
    fn deeper(&mut self) -> Result<(), ()> {
        self.depth += 1;
        if self.depth > self.ev.options.max_call_depth
            || crate::stack::address() < self.ev.stack_limit
        {
            return Err(());
        }
        Ok(())
    }

    fn ambiguous(
        &mut self,
        v: &Value<'a>,
        cell: Option<usize>,
        out: &mut Vec<u8>,
    ) -> Result<(), ()> {
        match v {
            Value::Thunk(t) => {
                if let Some(inner) = t.evaluated() {
                    return self.ambiguous(inner, Some(t.addr()), out);
                } else if t.is_blackhole() {
                    out.extend_from_slice("«potential infinite recursion»".as_bytes())
                } else {
                    out.extend_from_slice(b"<CODE>")
                }
            }
            Value::Null => out.extend_from_slice(b"null"),
            Value::Bool(b) => out.extend_from_slice(if *b { b"true" } else { b"false" }),
            Value::Int(n) => out.extend_from_slice(crate::value::decimal(*n, &mut [0; 20])),
            Value::Float(f) => out.extend_from_slice(format_float(*f).as_bytes()),
            Value::String(s) => quote_string(s.as_bytes(), out),
            Value::Path(p) => out.extend_from_slice(p.as_bytes()),
            Value::Attrs(attrs) => {
                if !attrs.is_empty() && !self.seen.insert(attrs.addr()) {
                    out.extend_from_slice("«repeated»".as_bytes());
                    return Ok(());
                }
                self.deeper()?;
                out.extend_from_slice(b"{ ");
                for attr in attrs.lexicographic(&self.ev.symbols) {
                    identifier(self.ev.symbols.bytes(attr.name), out);
                    out.extend_from_slice(b" = ");
                    self.ambiguous(&attr.value, None, out)?;
                    out.extend_from_slice(b"; ");
                }
                out.push(b'}');
                self.depth -= 1;
            }
            Value::List(list) => {
                // Nix remembers the cell holding the list; the root is a copy.
                if !list.is_empty()
                    && let Some(id) = cell
                    && !self.seen.insert(id)
                {
                    out.extend_from_slice("«repeated»".as_bytes());
                    return Ok(());
                }
                self.deeper()?;
                out.extend_from_slice(b"[ ");
                for item in list.as_slice() {
                    let id = match item {
                        Value::List(l) => Some(l.addr()),
                        _ => None,
                    };
                    self.ambiguous(item, id, out)?;
                    out.push(b' ');
                }
                out.push(b']');
                self.depth -= 1;
            }
            Value::Lambda(_) => out.extend_from_slice(b"<LAMBDA>"),
            Value::PrimOp(_) => out.extend_from_slice(b"<PRIMOP>"),
            Value::PrimOpApp(_) => out.extend_from_slice(b"<PRIMOP-APP>"),
        }
        Ok(())
    }

    /// The rendering of `trace` and of error messages. `full` shows
    /// everything (`trace`); otherwise one level, ten items, 1 KiB strings.
    fn readable(&mut self, v: &Value<'a>, full: bool, out: &mut String) -> Result<(), ()> {
        let (max_string, max_items) = if full {
            (usize::MAX, usize::MAX)
        } else {
            (1024, 10)
        };
        let nested = !full && self.depth >= 1;
        match v {
            Value::Thunk(t) => match t.evaluated() {
                Some(inner) => return self.readable(inner, full, out),
                None => out.push_str("«thunk»"),
            },
            Value::String(s) => {
                let mut bytes = Vec::new();
                quote_string(&s.as_bytes()[..s.len().min(max_string)], &mut bytes);
                out.push_str(&String::from_utf8_lossy(&bytes));
                if s.len() > max_string {
                    out.push_str("«…»");
                }
            }
            Value::Attrs(attrs) if nested => {
                out.push_str(if attrs.is_empty() { "{ }" } else { "{ ... }" })
            }
            Value::List(list) if nested => {
                out.push_str(if list.is_empty() { "[ ]" } else { "[ ... ]" })
            }
            Value::Attrs(attrs) => {
                if !attrs.is_empty() && !self.seen.insert(attrs.addr()) {
                    out.push_str("«repeated»");
                    return Ok(());
                }
                self.deeper()?;
                out.push_str("{ ");
                for (i, attr) in attrs
                    .lexicographic(&self.ev.symbols)
                    .into_iter()
                    .enumerate()
                {
                    if i == max_items {
                        out.push_str(&format!("«{} attributes elided» ", attrs.len() - max_items));
                        break;
                    }
                    let mut name = Vec::new();
                    identifier(self.ev.symbols.bytes(attr.name), &mut name);
                    out.push_str(&String::from_utf8_lossy(&name));
                    out.push_str(" = ");
                    self.readable(&attr.value, full, out)?;
                    out.push_str("; ");
                }
                out.push('}');
                self.depth -= 1;
            }
            Value::List(list) => {
                if !list.is_empty() && !self.seen.insert(list.addr()) {
                    out.push_str("«repeated»");
                    return Ok(());
                }
                self.deeper()?;
                out.push_str("[ ");
                for (i, item) in list.as_slice().iter().enumerate() {
                    if i == max_items {
                        out.push_str(&format!("«{} items elided» ", list.len() - max_items));
                        break;
                    }
                    self.readable(item, full, out)?;
                    out.push(' ');
                }
                out.push(']');
                self.depth -= 1;
            }
            Value::Lambda(c) => match self.ev.sources.resolve(c.lambda.pos) {
                Some(loc) => out.push_str(&format!("«lambda @ {}»", loc.display())),
                None => out.push_str("«lambda»"),
            },
            Value::PrimOp(op) => out.push_str(&format!("«primop {}»", op.name)),
            Value::PrimOpApp(app) => {
                out.push_str(&format!("«partially applied primop {}»", app.op.name))
            }
            other => {
                let mut bytes = Vec::new();
                self.ambiguous(other, None, &mut bytes)?;
                out.push_str(&String::from_utf8_lossy(&bytes));
            }
        }
        Ok(())
    }
}

/// The whole value as `builtins.trace` shows it: nothing is forced,
/// unevaluated parts are `«thunk»`, what was shown above is `«repeated»`.
pub fn pretty<'a>(ev: &Evaluator<'a>, v: &Value<'a>) -> String {
    let mut out = String::new();
    let mut printer = Printer {
        ev,
        seen: FxHashSet::default(),
        depth: 0,
    };
    if printer.readable(v, true, &mut out).is_err() {
        out.push_str(" «nested too deeply to show»");
    }
    out
}

/// A short rendering for error messages: nested values and long strings
/// are cut, nothing is forced.
pub fn brief<'a>(ev: &Evaluator<'a>, v: &Value<'a>) -> String {
    let mut out = String::new();
    let mut printer = Printer {
        ev,
        seen: FxHashSet::default(),
        depth: 0,
    };
    let _ = printer.readable(v, false, &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floats_print_like_cpp_streams() {
        assert_eq!(format_float(1.0), "1");
        assert_eq!(format_float(2.5), "2.5");
        assert_eq!(format_float(0.1), "0.1");
        assert_eq!(format_float(1e20), "1e+20");
        assert_eq!(format_float(123456789.0), "1.23457e+08");
        assert_eq!(format_float(123456.0), "123456");
        assert_eq!(format_float(1234567.0), "1.23457e+06");
        assert_eq!(format_float(0.0001), "0.0001");
        assert_eq!(format_float(0.00001), "1e-05");
        assert_eq!(format_float(-1.23456789), "-1.23457");
        assert_eq!(format_float(999999.5), "1e+06");
    }

    #[test]
    fn identifiers_are_quoted_when_needed() {
        let show = |n: &[u8]| {
            let mut out = Vec::new();
            identifier(n, &mut out);
            String::from_utf8(out).unwrap()
        };
        assert_eq!(show(b"a-b'c_1"), "a-b'c_1");
        assert_eq!(show(b"1234"), "\"1234\"");
        assert_eq!(show(b"a.b"), "\"a.b\"");
        assert_eq!(show(b"if"), "\"if\"");
        assert_eq!(show(b""), "\"\"");
    }

    #[test]
    fn strings_are_escaped() {
        let mut out = Vec::new();
        quote_string(b"a\"b\\c\n${x}$y", &mut out);
        assert_eq!(out, b"\"a\\\"b\\\\c\\n\\${x}$y\"");
    }
}
