//! Turning values into strings: interpolation, `toString`, `+` on strings.

use super::Evaluator;
use crate::error::{Error, Result};
use crate::source::Pos;
use crate::symbol::known;
use crate::value::{NixString, Value};

/// How far a coercion goes (Nix's `coerceMore` and `copyToStore`).
#[derive(Clone, Copy)]
pub struct Coercion {
    /// Also numbers, Booleans, null and lists (`toString`).
    pub more: bool,
    /// A path becomes the store path of a copy (interpolation into a
    /// string); otherwise it stays the path itself.
    pub copy_to_store: bool,
}

impl Coercion {
    /// `"${x}"` and `"a" + x`.
    pub const INTERPOLATION: Coercion = Coercion {
        more: false,
        copy_to_store: true,
    };
    /// `./a/${x}`.
    pub const PATH_SEGMENT: Coercion = Coercion {
        more: false,
        copy_to_store: false,
    };
    /// `builtins.toString`.
    pub const TO_STRING: Coercion = Coercion {
        more: true,
        copy_to_store: false,
    };
}

impl<'a> Evaluator<'a> {
    /// A value as a string, the way `how` allows. Nested lists and sets
    /// count against the call depth.
    pub fn coerce_to_string(
        &mut self,
        v: &Value<'a>,
        how: Coercion,
        pos: Pos,
    ) -> Result<NixString> {
        self.nested(pos, |ev| ev.coerce_to_string_in(v, how, pos))
    }

    fn coerce_to_string_in(&mut self, v: &Value<'a>, how: Coercion, pos: Pos) -> Result<NixString> {
        let v = self.force(v)?;
        match &v {
            Value::String(s) => return Ok(s.clone()),
            Value::Path(p) => {
                if how.copy_to_store {
                    return self.copy_to_store(p.as_bytes(), pos);
                }
                return Ok(p.clone());
            }
            Value::Attrs(attrs) => {
                if let Some(f) = attrs.get(known::TO_STRING).cloned() {
                    let result = self
                        .call(f, v.clone(), pos)
                        .and_then(|r| self.coerce_to_string(&r, how, pos));
                    return result.map_err(|e| {
                        e.with_frame(pos, "while calling the `__toString` attribute")
                    });
                }
                if let Some(out) = attrs.get(known::OUT_PATH).cloned() {
                    let result = self.coerce_to_string(&out, how, pos);
                    return result.map_err(|e| {
                        e.with_frame(pos, "while evaluating the `outPath` attribute")
                    });
                }
            }
            _ => {}
        }
        if how.more {
            match &v {
                Value::Bool(true) => return Ok(NixString::from("1")),
                Value::Bool(false) | Value::Null => return Ok(NixString::from("")),
                Value::Int(n) => return Ok(NixString::from_int(*n)),
                Value::Float(f) => return Ok(NixString::from(format!("{f:.6}"))),
                Value::List(items) => {
                    let mut out = Vec::new();
                    let mut context = crate::value::ContextAcc::default();
                    let n = items.len();
                    for (i, item) in items.as_slice().iter().enumerate() {
                        let s = self.coerce_to_string(item, how, pos).map_err(|e| {
                            e.with_frame(pos, "while evaluating one element of the list")
                        })?;
                        out.extend_from_slice(s.as_bytes());
                        context.add(s.context());
                        if i + 1 < n {
                            let item = self.force(item)?;
                            let empty_list = matches!(&item, Value::List(l) if l.is_empty());
                            if !empty_list {
                                out.push(b' ');
                            }
                        }
                    }
                    return Ok(NixString::with_context(&out, context.finish()));
                }
                _ => {}
            }
        }
        Err(Error::eval(
            format!(
                "cannot coerce {} to a string: {}",
                v.describe(),
                self.show_brief(&v)
            ),
            pos,
        ))
    }
}
