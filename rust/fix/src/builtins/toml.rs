//! `fromTOML` over the `toml` crate (TOML 1.0). Date-times are an error
//! unless the `parse-toml-timestamps` feature is on, as in Nix.

use super::{arg_context, list_value, plain_string, primop};
use crate::error::{Error, Result};
use crate::eval::Evaluator;
use crate::source::Pos;
use crate::symbol::known;
use crate::value::{Attr, Attrs, PrimOp, Value};

pub static PRIMOPS: &[PrimOp] = &[primop!("fromTOML", 1, from_toml)];

fn from_toml<'a>(ev: &mut Evaluator<'a>, args: &[Value<'a>], pos: Pos) -> Result<Value<'a>> {
    let s = plain_string(ev, &args[0], pos, arg_context(0, "fromTOML"))?;
    let text = std::str::from_utf8(s.as_bytes())
        .map_err(|_| Error::eval("while parsing TOML: the document is not valid UTF-8", pos))?;
    let table: toml::Table = text.parse().map_err(|e: toml::de::Error| {
        Error::eval(format!("while parsing TOML: {}", e.message()), pos)
    })?;
    convert(ev, toml::Value::Table(table), pos)
}

fn no_nul(s: &str, pos: Pos) -> Result<()> {
    if s.contains('\0') {
        return Err(Error::eval(
            "while parsing TOML: a string or key contains a NUL byte, which Nix strings cannot hold",
            pos,
        ));
    }
    Ok(())
}

fn convert<'a>(ev: &mut Evaluator<'a>, v: toml::Value, pos: Pos) -> Result<Value<'a>> {
    Ok(match v {
        toml::Value::String(s) => {
            no_nul(&s, pos)?;
            Value::string(s)
        }
        toml::Value::Integer(i) => Value::Int(i),
        toml::Value::Float(f) => Value::Float(f),
        toml::Value::Boolean(b) => Value::Bool(b),
        toml::Value::Array(items) => {
            let mut out = Vec::with_capacity(items.len());
            for item in items {
                out.push(convert(ev, item, pos)?);
            }
            list_value(out)
        }
        toml::Value::Table(table) => {
            let mut entries = Vec::with_capacity(table.len());
            for (k, v) in table {
                no_nul(&k, pos)?;
                let name = ev.symbols.intern_str(&k);
                entries.push(Attr {
                    name,
                    pos: Pos::NONE,
                    value: convert(ev, v, pos)?,
                });
            }
            Value::Attrs(Attrs::from_unsorted(entries))
        }
        toml::Value::Datetime(dt) => {
            if !ev.options.features.parse_toml_timestamps {
                return Err(Error::eval(
                    "while parsing TOML: Dates and times are not supported; enable the experimental feature 'parse-toml-timestamps' to read them",
                    pos,
                ));
            }
            Value::Attrs(Attrs::from_unsorted(vec![
                Attr {
                    name: known::TYPE_UNDERSCORE,
                    pos: Pos::NONE,
                    value: Value::string("timestamp"),
                },
                Attr {
                    name: known::VALUE,
                    pos: Pos::NONE,
                    value: Value::string(timestamp_text(&dt)),
                },
            ]))
        }
    })
}

/// A date-time as Nix prints it: fractional seconds padded to 3, 6 or 9
/// digits.
fn timestamp_text(dt: &toml::value::Datetime) -> String {
    let mut out = String::new();
    if let Some(d) = &dt.date {
        out.push_str(&format!("{:04}-{:02}-{:02}", d.year, d.month, d.day));
    }
    if let Some(t) = &dt.time {
        if dt.date.is_some() {
            out.push('T');
        }
        out.push_str(&format!(
            "{:02}:{:02}:{:02}",
            t.hour,
            t.minute,
            t.second.unwrap_or(0)
        ));
        let nanos = t.nanosecond.unwrap_or(0);
        if nanos != 0 {
            let digits = format!("{nanos:09}");
            let significant = digits.trim_end_matches('0').len();
            let width = if significant <= 3 {
                3
            } else if significant <= 6 {
                6
            } else {
                9
            };
            out.push('.');
            out.push_str(&digits[..width]);
        }
    }
    if let Some(offset) = &dt.offset {
        match offset {
            toml::value::Offset::Z => out.push('Z'),
            toml::value::Offset::Custom { minutes } => {
                let sign = if *minutes < 0 { '-' } else { '+' };
                let m = minutes.unsigned_abs();
                out.push_str(&format!("{sign}{:02}:{:02}", m / 60, m % 60));
            }
        }
    }
    out
}
