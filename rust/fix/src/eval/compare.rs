//! `==` and `<` with Nix's rules: ints and floats compare as numbers,
//! functions are never equal (except the same value cell reached twice
//! inside a list or set, Nix's "value identity" shortcut, never at the
//! outer level of `==`), two derivations compare by `outPath`, lists order
//! lexicographically.

use super::Evaluator;
use crate::error::{Error, ErrorKind, Result};
use crate::source::Pos;
use crate::symbol::known;
use crate::value::{Attrs, Value};

/// An identity for "the same value cell": the same thunk, closure, list or
/// set allocation.
fn identity(v: &Value<'_>) -> Option<usize> {
    match v {
        Value::Thunk(t) => Some(t.addr()),
        Value::Lambda(c) => Some(c.addr()),
        Value::PrimOp(op) => Some(*op as *const _ as usize),
        Value::PrimOpApp(a) => Some(a.addr()),
        Value::Attrs(a) => Some(a.addr()),
        Value::List(l) => Some(l.addr()),
        _ => None,
    }
}

impl<'a> Evaluator<'a> {
    /// `l == r` for two forced values.
    pub fn equal(&mut self, l: &Value<'a>, r: &Value<'a>, pos: Pos) -> Result<bool> {
        // Two integers (`elem`, `==` on numbers): no nesting to count.
        if let (Value::Int(a), Value::Int(b)) = (l, r) {
            return Ok(a == b);
        }
        self.nested(pos, |ev| ev.equal_inner(l, r, pos))
    }

    /// `l == r` for two values held by a list, a set or a builtin's
    /// arguments, as Nix's `eqValues` compares two value cells: both are
    /// forced first, then the same cell (the same thunk, or the same
    /// function, list or set reached twice) is equal to itself, functions
    /// included. At the outer level of `==` there is no such shortcut: its
    /// operands are always two cells.
    pub(crate) fn equal_cells(&mut self, l: &Value<'a>, r: &Value<'a>, pos: Pos) -> Result<bool> {
        if let (Some(Value::Int(a)), Some(Value::Int(b))) = (l.evaluated(), r.evaluated()) {
            return Ok(a == b);
        }
        let same = matches!((identity(l), identity(r)), (Some(a), Some(b)) if a == b);
        let l = self.force(l)?;
        let r = self.force(r)?;
        if same {
            return Ok(true);
        }
        self.equal(&l, &r, pos)
    }

    fn equal_inner(&mut self, l: &Value<'a>, r: &Value<'a>, pos: Pos) -> Result<bool> {
        Ok(match (l, r) {
            (Value::Int(a), Value::Int(b)) => a == b,
            (Value::Int(a), Value::Float(b)) => (*a as f64) == *b,
            (Value::Float(a), Value::Int(b)) => *a == (*b as f64),
            (Value::Float(a), Value::Float(b)) => a == b,
            (Value::Bool(a), Value::Bool(b)) => a == b,
            (Value::Null, Value::Null) => true,
            (Value::String(a), Value::String(b)) => a.as_bytes() == b.as_bytes(),
            (Value::Path(a), Value::Path(b)) => a.as_bytes() == b.as_bytes(),
            (Value::List(a), Value::List(b)) => {
                if a.len() != b.len() {
                    return Ok(false);
                }
                for (x, y) in a.as_slice().iter().zip(b.as_slice()) {
                    if !self.equal_cells(x, y, pos)? {
                        return Ok(false);
                    }
                }
                true
            }
            (Value::Attrs(a), Value::Attrs(b)) => self.equal_attrs(a, b, pos)?,
            _ => false,
        })
    }

    fn equal_attrs(&mut self, a: &Attrs<'a>, b: &Attrs<'a>, pos: Pos) -> Result<bool> {
        if self.is_derivation(a)?
            && self.is_derivation(b)?
            && let (Some(x), Some(y)) = (
                a.get(known::OUT_PATH).cloned(),
                b.get(known::OUT_PATH).cloned(),
            )
        {
            return self.equal_cells(&x, &y, pos);
        }
        if a.len() != b.len() {
            return Ok(false);
        }
        for (x, y) in a.iter().zip(b.iter()) {
            if x.name != y.name || !self.equal_cells(&x.value, &y.value, pos)? {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// Whether a set is a derivation: `type = "derivation"`.
    pub fn is_derivation(&mut self, attrs: &Attrs<'a>) -> Result<bool> {
        let Some(t) = attrs.get(known::TYPE).cloned() else {
            return Ok(false);
        };
        let t = self.force(&t)?;
        Ok(matches!(&t, Value::String(s) if s.as_bytes() == b"derivation"))
    }

    /// `l < r` for two forced values.
    pub fn less_than(&mut self, l: &Value<'a>, r: &Value<'a>, pos: Pos) -> Result<bool> {
        Ok(match (l, r) {
            (Value::Int(a), Value::Int(b)) => a < b,
            (Value::Int(a), Value::Float(b)) => (*a as f64) < *b,
            (Value::Float(a), Value::Int(b)) => *a < (*b as f64),
            (Value::Float(a), Value::Float(b)) => a < b,
            (Value::String(a), Value::String(b)) => a.as_bytes() < b.as_bytes(),
            (Value::Path(a), Value::Path(b)) => a.as_bytes() < b.as_bytes(),
            (Value::List(a), Value::List(b)) => {
                self.nested(pos, |ev| ev.list_less_than(a.as_slice(), b.as_slice(), pos))?
            }
            _ => {
                let (shown_l, shown_r) = (self.show_brief(l), self.show_brief(r));
                let message = if std::mem::discriminant(l) == std::mem::discriminant(r) {
                    format!(
                        "cannot compare {} with {}; values of that type are incomparable (values are {shown_l} and {shown_r})",
                        l.describe(),
                        r.describe()
                    )
                } else {
                    format!(
                        "cannot compare {} with {}; values are {shown_l} and {shown_r}",
                        l.describe(),
                        r.describe()
                    )
                };
                return Err(Error::eval(message, pos));
            }
        })
    }

    fn list_less_than(&mut self, a: &[Value<'a>], b: &[Value<'a>], pos: Pos) -> Result<bool> {
        for i in 0.. {
            if i == b.len() {
                return Ok(false);
            }
            if i == a.len() {
                return Ok(true);
            }
            if !self.equal_cells(&a[i], &b[i], pos)? {
                let x = self.force(&a[i])?;
                let y = self.force(&b[i])?;
                return self
                    .less_than(&x, &y, pos)
                    .map_err(|e| e.with_frame(pos, "while comparing two list elements"));
            }
        }
        Ok(false)
    }
}

impl<'a> Evaluator<'a> {
    /// Why `l == r` failed in an `assert`: the first difference, in the
    /// words Nix uses, with the path to it in the trace.
    pub fn explain_unequal(&mut self, l: &Value<'a>, r: &Value<'a>, pos: Pos) -> Result<Error> {
        self.nested(pos, |ev| ev.explain_unequal_in(l, r, pos))
    }

    fn explain_unequal_in(&mut self, l: &Value<'a>, r: &Value<'a>, pos: Pos) -> Result<Error> {
        let l = self.force(l)?;
        let r = self.force(r)?;
        let unequal = |message: String| Ok(Error::new(ErrorKind::Assert, message, pos));
        let numbers = |v: &Value<'a>| matches!(v, Value::Int(_) | Value::Float(_));
        if numbers(&l) && numbers(&r) {
            return unequal(format!(
                "{} with value '{}' is not equal to {} with value '{}'",
                l.describe(),
                self.show_brief(&l),
                r.describe(),
                self.show_brief(&r)
            ));
        }
        if std::mem::discriminant(&l) != std::mem::discriminant(&r) || l.is_function() {
            if l.is_function() && r.is_function() {
                return unequal(
                    "distinct functions and immediate comparisons of identical functions compare as unequal".into(),
                );
            }
            return unequal(format!(
                "{} of value '{}' is not equal to {} of value '{}'",
                l.describe(),
                self.show_brief(&l),
                r.describe(),
                self.show_brief(&r)
            ));
        }
        match (&l, &r) {
            (Value::Bool(_), _) => unequal(format!(
                "boolean '{}' is not equal to boolean '{}'",
                self.show_brief(&l),
                self.show_brief(&r)
            )),
            (Value::String(_), _) => unequal(format!(
                "string '{}' is not equal to string '{}'",
                self.show_brief(&l),
                self.show_brief(&r)
            )),
            (Value::Path(_), _) => unequal(format!(
                "path '{}' is not equal to path '{}'",
                self.show_brief(&l),
                self.show_brief(&r)
            )),
            (Value::List(a), Value::List(b)) => {
                if a.len() != b.len() {
                    return unequal(format!(
                        "list of size '{}' is not equal to list of size '{}', left hand side is '{}', right hand side is '{}'",
                        a.len(),
                        b.len(),
                        self.show_brief(&l),
                        self.show_brief(&r)
                    ));
                }
                for (i, (x, y)) in a.as_slice().iter().zip(b.as_slice()).enumerate() {
                    if !self.equal_cells(x, y, pos)? {
                        let e = self.explain_unequal(x, y, pos)?;
                        return Ok(e.with_frame(pos, format!("while comparing list element {i}")));
                    }
                }
                unequal("the lists compare unequal".into())
            }
            (Value::Attrs(a), Value::Attrs(b)) => {
                if self.is_derivation(a)?
                    && self.is_derivation(b)?
                    && let (Some(x), Some(y)) = (
                        a.get(known::OUT_PATH).cloned(),
                        b.get(known::OUT_PATH).cloned(),
                    )
                {
                    let e = self.explain_unequal(&x, &y, pos)?;
                    return Ok(e.with_frame(
                        pos,
                        "while comparing a derivation by its 'outPath' attribute",
                    ));
                }
                if a.len() != b.len() {
                    return unequal(format!(
                        "attribute names of attribute set '{}' differs from attribute set '{}'",
                        self.show_brief(&l),
                        self.show_brief(&r)
                    ));
                }
                for (x, y) in a.iter().zip(b.iter()) {
                    if x.name != y.name {
                        let (name, verb) = if b.contains(x.name) {
                            (y.name, "is missing in '{l}', but is contained in '{r}'")
                        } else {
                            (x.name, "is contained in '{l}', but not in '{r}'")
                        };
                        let verb = verb
                            .replace("{l}", &self.show_brief(&l))
                            .replace("{r}", &self.show_brief(&r));
                        return unequal(format!(
                            "attribute name '{}' {verb}",
                            self.symbols.text(name)
                        ));
                    }
                    if !self.equal_cells(&x.value, &y.value, pos)? {
                        let e = self.explain_unequal(&x.value, &y.value, pos)?;
                        let name = self.symbols.text(x.name).into_owned();
                        return Ok(e
                            .with_frame(y.pos, "where right hand side is")
                            .with_frame(x.pos, "where left hand side is")
                            .with_frame(pos, format!("while comparing attribute '{name}'")));
                    }
                }
                unequal("the attribute sets compare unequal".into())
            }
            _ => unequal(format!(
                "'{}' is not equal to '{}'",
                self.show_brief(&l),
                self.show_brief(&r)
            )),
        }
    }
}
