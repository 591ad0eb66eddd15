//! Operators: arithmetic (checked: integer overflow is an error), `+` on
//! strings and paths, `//`, `++`, Boolean logic and comparisons.

use super::{Coercion, Evaluator};
use crate::error::{Error, Result};
use crate::source::Pos;
use crate::syntax::ir::{BinOp, BinOpExpr};
use crate::value::{Env, List, NixString, Value};
use std::cmp::Ordering;

impl<'a> Evaluator<'a> {
    #[inline(never)]
    pub(super) fn binop(&mut self, b: &'a BinOpExpr, env: &Env<'a>) -> Result<Value<'a>> {
        let pos = b.pos;
        self.check_stack(Pos::NONE)?;
        match b.op {
            BinOp::And | BinOp::Or | BinOp::Impl => {
                // The left operand's value that decides alone, and the
                // answer it gives.
                let (decides, answer, left, right) = match b.op {
                    BinOp::And => (
                        false,
                        false,
                        "in the left operand of the AND (&&) operator",
                        "in the right operand of the AND (&&) operator",
                    ),
                    BinOp::Or => (
                        true,
                        true,
                        "in the left operand of the OR (||) operator",
                        "in the right operand of the OR (||) operator",
                    ),
                    _ => (
                        false,
                        true,
                        "in the left operand of the IMPL (->) operator",
                        "in the right operand of the IMPL (->) operator",
                    ),
                };
                if self.eval_bool(&b.lhs, env, pos, left)? == decides {
                    return Ok(Value::Bool(answer));
                }
                Ok(Value::Bool(self.eval_bool(&b.rhs, env, pos, right)?))
            }
            BinOp::Eq | BinOp::Neq => {
                let l = self.eval(&b.lhs, env)?;
                let r = self.eval(&b.rhs, env)?;
                if let (Value::Int(x), Value::Int(y)) = (&l, &r) {
                    let eq = x == y;
                    discard_both(l, r);
                    return Ok(Value::Bool(eq == (b.op == BinOp::Eq)));
                }
                let eq = self.equal(&l, &r, pos);
                discard_both(l, r);
                let eq = eq?;
                Ok(Value::Bool(eq == (b.op == BinOp::Eq)))
            }
            BinOp::Lt | BinOp::Ge => {
                let l = self.eval(&b.lhs, env)?;
                let r = self.eval(&b.rhs, env)?;
                if let (Value::Int(x), Value::Int(y)) = (&l, &r) {
                    let lt = x < y;
                    discard_both(l, r);
                    return Ok(Value::Bool(lt == (b.op == BinOp::Lt)));
                }
                let lt = self.less_than(&l, &r, pos);
                discard_both(l, r);
                let lt = lt?;
                Ok(Value::Bool(lt == (b.op == BinOp::Lt)))
            }
            BinOp::Gt | BinOp::Le => {
                // `a > b` is `b < a`; Nix evaluates `b` first.
                let r = self.eval(&b.rhs, env)?;
                let l = self.eval(&b.lhs, env)?;
                if let (Value::Int(x), Value::Int(y)) = (&l, &r) {
                    let gt = y < x;
                    discard_both(l, r);
                    return Ok(Value::Bool(gt == (b.op == BinOp::Gt)));
                }
                let gt = self.less_than(&r, &l, pos);
                discard_both(l, r);
                let gt = gt?;
                Ok(Value::Bool(gt == (b.op == BinOp::Gt)))
            }
            BinOp::Update => {
                let l = self.eval(&b.lhs, env)?;
                let r = self.eval(&b.rhs, env)?;
                let (Value::Attrs(l), Value::Attrs(r)) = (&l, &r) else {
                    let bad = if matches!(l, Value::Attrs(_)) { &r } else { &l };
                    return Err(self
                        .type_error("a set", bad, pos)
                        .with_frame(pos, "in an operand of the update (//) operator"));
                };
                Ok(Value::Attrs(l.update(r)))
            }
            BinOp::Concat => {
                let l = self.eval(&b.lhs, env)?;
                let r = self.eval(&b.rhs, env)?;
                let (Value::List(l), Value::List(r)) = (&l, &r) else {
                    let bad = if matches!(l, Value::List(_)) { &r } else { &l };
                    return Err(self
                        .type_error("a list", bad, pos)
                        .with_frame(pos, "in an operand of the list concatenation (++) operator"));
                };
                self.check_memory((l.len() + r.len()) * std::mem::size_of::<Value<'a>>(), pos)?;
                Ok(Value::List(concat_lists(l, r)))
            }
            BinOp::Add => {
                let l = self.eval(&b.lhs, env)?;
                let r = self.eval(&b.rhs, env)?;
                if let (Value::Int(x), Value::Int(y)) = (&l, &r)
                    && let Some(n) = x.checked_add(*y)
                {
                    discard_both(l, r);
                    return Ok(Value::Int(n));
                }
                let sum = self.add(&l, &r, pos);
                discard_both(l, r);
                sum
            }
            BinOp::Sub | BinOp::Mul | BinOp::Div => {
                let l = self.eval(&b.lhs, env)?;
                let r = self.eval(&b.rhs, env)?;
                // Numbers: the operation itself, inlined; what can fail
                // (overflow, division by zero) and other types go to `arith`.
                if let Some(v) = number_op(b.op, &l, &r) {
                    discard_both(l, r);
                    return Ok(v);
                }
                let result = self.arith(b.op, &l, &r, pos);
                discard_both(l, r);
                result
            }
        }
    }

    fn eval_bool(
        &mut self,
        e: &'a crate::syntax::ir::Expr,
        env: &Env<'a>,
        pos: Pos,
        context: &str,
    ) -> Result<bool> {
        match self.eval(e, env)? {
            Value::Bool(b) => Ok(b),
            other => Err(self
                .type_error("a Boolean", &other, pos)
                .with_frame(pos, context)),
        }
    }

    /// `+`: numbers add; otherwise the result has the type of the left
    /// operand (a path or a string) and the right one is coerced.
    pub fn add(&mut self, l: &Value<'a>, r: &Value<'a>, pos: Pos) -> Result<Value<'a>> {
        match (l, r) {
            (Value::Int(a), Value::Int(b)) => match a.checked_add(*b) {
                Some(n) => Ok(Value::Int(n)),
                None => Err(Error::eval(
                    format!("integer overflow in adding {a} + {b}"),
                    pos,
                )),
            },
            (Value::Int(a), Value::Float(b)) => Ok(Value::Float(*a as f64 + b)),
            (Value::Float(a), Value::Int(b)) => Ok(Value::Float(a + *b as f64)),
            (Value::Float(a), Value::Float(b)) => Ok(Value::Float(a + b)),
            (Value::Int(_), other) => Err(Error::eval(
                format!("cannot add {} to an integer", other.describe()),
                pos,
            )),
            (Value::Float(_), other) => Err(Error::eval(
                format!("cannot add {} to a float", other.describe()),
                pos,
            )),
            (Value::Path(p), other) => {
                let s = self
                    .coerce_to_string(other, Coercion::PATH_SEGMENT, pos)
                    .map_err(|e| e.with_frame(pos, "while evaluating a path segment"))?;
                no_store_reference_in_path(&s, pos)?;
                let joined = NixString::from_parts(&[p.as_bytes(), s.as_bytes()]);
                Ok(Value::Path(NixString::from(crate::syntax::canon_path(
                    joined.as_bytes(),
                ))))
            }
            _ => {
                let a = self
                    .coerce_to_string(l, Coercion::INTERPOLATION, pos)
                    .map_err(|e| e.with_frame(pos, "while evaluating a path segment"))?;
                let b = self
                    .coerce_to_string(r, Coercion::INTERPOLATION, pos)
                    .map_err(|e| e.with_frame(pos, "while evaluating a path segment"))?;
                self.check_memory(a.len() + b.len(), pos)?;
                let context = crate::value::Context::union(a.context(), b.context());
                Ok(Value::String(NixString::from_parts_with(
                    &[a.as_bytes(), b.as_bytes()],
                    context,
                )))
            }
        }
    }

    /// `-`, `*`, `/` and `builtins.add`, `sub`, `mul`, `div`, checking operands
    /// in Nix's order: the divisor first, then floats, then integers.
    pub fn arith(
        &mut self,
        op: BinOp,
        l: &Value<'a>,
        r: &Value<'a>,
        pos: Pos,
    ) -> Result<Value<'a>> {
        let (name, verb) = match op {
            BinOp::Add => ("+", "adding"),
            BinOp::Sub => ("-", "subtracting"),
            BinOp::Mul => ("*", "multiplying"),
            _ => ("/", "dividing"),
        };
        if let Some(v) = number_op(op, l, r) {
            return Ok(v);
        }
        if op == BinOp::Div {
            match r {
                Value::Int(0) => return Err(Error::eval("division by zero", pos)),
                Value::Float(f) if *f == 0.0 => return Err(Error::eval("division by zero", pos)),
                Value::Int(_) | Value::Float(_) => {}
                other => {
                    return Err(self
                        .type_error("a float", other, pos)
                        .with_frame(pos, "while evaluating the second operand of the division"));
                }
            }
        }
        if matches!(l, Value::Float(_)) || matches!(r, Value::Float(_)) {
            for v in [l, r] {
                if !matches!(v, Value::Int(_) | Value::Float(_)) {
                    return Err(self.type_error("a float", v, pos));
                }
            }
            let (a, b) = (as_float(l), as_float(r));
            return Ok(Value::Float(match op {
                BinOp::Add => a + b,
                BinOp::Sub => a - b,
                BinOp::Mul => a * b,
                _ => a / b,
            }));
        }
        let (Value::Int(a), Value::Int(b)) = (l, r) else {
            let bad = if matches!(l, Value::Int(_)) { r } else { l };
            return Err(self.type_error("an integer", bad, pos));
        };
        let result = match op {
            BinOp::Add => a.checked_add(*b),
            BinOp::Sub => a.checked_sub(*b),
            BinOp::Mul => a.checked_mul(*b),
            _ => a.checked_div(*b),
        };
        result
            .map(Value::Int)
            .ok_or_else(|| Error::eval(format!("integer overflow in {verb} {a} {name} {b}"), pos))
    }
}

/// `l op r` for two numbers when it succeeds: arithmetic (checked;
/// mixed operands are floats), division by a non-zero number, and the
/// comparisons. `None` for anything else, including every case that is an
/// error, which the caller reports.
#[inline(always)]
pub(crate) fn number_op<'a>(op: BinOp, l: &Value<'a>, r: &Value<'a>) -> Option<Value<'a>> {
    if let (Value::Int(a), Value::Int(b)) = (l, r) {
        let (a, b) = (*a, *b);
        return match op {
            BinOp::Add => a.checked_add(b).map(Value::Int),
            BinOp::Sub => a.checked_sub(b).map(Value::Int),
            BinOp::Mul => a.checked_mul(b).map(Value::Int),
            BinOp::Div if b != 0 => a.checked_div(b).map(Value::Int),
            BinOp::Lt => Some(Value::Bool(a < b)),
            BinOp::Le => Some(Value::Bool(a <= b)),
            BinOp::Gt => Some(Value::Bool(a > b)),
            BinOp::Ge => Some(Value::Bool(a >= b)),
            BinOp::Eq => Some(Value::Bool(a == b)),
            BinOp::Neq => Some(Value::Bool(a != b)),
            _ => None,
        };
    }
    if !matches!(l, Value::Int(_) | Value::Float(_))
        || !matches!(r, Value::Int(_) | Value::Float(_))
    {
        return None;
    }
    let (a, b) = (as_float(l), as_float(r));
    match op {
        BinOp::Add => Some(Value::Float(a + b)),
        BinOp::Sub => Some(Value::Float(a - b)),
        BinOp::Mul => Some(Value::Float(a * b)),
        BinOp::Div if b != 0.0 => Some(Value::Float(a / b)),
        // As `binop` computes them: `<` and its negation, operands swapped
        // for `>` and `<=` (which differs from `<=` itself for NaN).
        BinOp::Lt => Some(Value::Bool(a < b)),
        BinOp::Le => Some(Value::Bool(b.partial_cmp(&a) != Some(Ordering::Less))),
        BinOp::Gt => Some(Value::Bool(b < a)),
        BinOp::Ge => Some(Value::Bool(a.partial_cmp(&b) != Some(Ordering::Less))),
        _ => None,
    }
}

fn as_float(v: &Value<'_>) -> f64 {
    match v {
        Value::Int(n) => *n as f64,
        Value::Float(f) => *f,
        _ => 0.0,
    }
}

pub fn concat_lists<'a>(l: &List<'a>, r: &List<'a>) -> List<'a> {
    if r.is_empty() {
        return l.clone();
    }
    if l.is_empty() {
        return r.clone();
    }
    let items = l.as_slice().iter().chain(r.as_slice()).cloned();
    List::from_iter(crate::thin::Exact {
        inner: items,
        left: l.len() + r.len(),
    })
}

/// A path cannot take in a string that refers to the store: the path would
/// lose the reference.
pub(crate) fn no_store_reference_in_path(
    segment: &NixString,
    pos: crate::source::Pos,
) -> Result<()> {
    if segment.has_context() {
        return Err(Error::eval(
            "a string that refers to a store path cannot be appended to a path",
            pos,
        ));
    }
    Ok(())
}

/// Drops two operands through the inlined fast path (`Value::discard`):
/// numbers, nearly every operand, then cost nothing, where a plain drop
/// at the end of `binop` called the drop glue for each.
#[inline(always)]
fn discard_both(l: Value<'_>, r: Value<'_>) {
    l.discard();
    r.discard();
}
