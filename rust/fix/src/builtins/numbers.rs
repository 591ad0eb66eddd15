//! Arithmetic and bit operations as functions.

use super::{arg_context, primop};
use crate::error::{Error, Result};
use crate::eval::Evaluator;
use crate::source::Pos;
use crate::syntax::ir::BinOp;
use crate::value::{PrimOp, Value};

pub static PRIMOPS: &[PrimOp] = &[
    primop!("add", 2, |ev, a, p| arith(ev, a, p, BinOp::Add)),
    primop!("sub", 2, |ev, a, p| arith(ev, a, p, BinOp::Sub)),
    primop!("mul", 2, |ev, a, p| arith(ev, a, p, BinOp::Mul)),
    primop!("div", 2, |ev, a, p| arith(ev, a, p, BinOp::Div)),
    primop!("bitAnd", 2, |ev, a, p| bits(ev, a, p, "bitAnd", |x, y| x
        & y)),
    primop!("bitOr", 2, |ev, a, p| bits(ev, a, p, "bitOr", |x, y| x | y)),
    primop!("bitXor", 2, |ev, a, p| bits(ev, a, p, "bitXor", |x, y| x
        ^ y)),
    primop!("lessThan", 2, less_than),
    primop!("ceil", 1, |ev, a, p| round(ev, a, p, "ceil", f64::ceil)),
    primop!("floor", 1, |ev, a, p| round(ev, a, p, "floor", f64::floor)),
];

fn numbers<'a>(
    ev: &mut Evaluator<'a>,
    args: &[Value<'a>],
    pos: Pos,
    name: &'static str,
) -> Result<(Value<'a>, Value<'a>)> {
    let a = ev
        .force(&args[0])
        .map_err(|e| e.with_frame(pos, arg_context(0, name)))?;
    let b = ev
        .force(&args[1])
        .map_err(|e| e.with_frame(pos, arg_context(1, name)))?;
    Ok((a, b))
}

fn arith<'a>(ev: &mut Evaluator<'a>, args: &[Value<'a>], pos: Pos, op: BinOp) -> Result<Value<'a>> {
    let name = match op {
        BinOp::Add => "add",
        BinOp::Sub => "sub",
        BinOp::Mul => "mul",
        _ => "div",
    };
    let (a, b) = numbers(ev, args, pos, name)?;
    ev.arith(op, &a, &b, pos)
}

fn bits<'a>(
    ev: &mut Evaluator<'a>,
    args: &[Value<'a>],
    pos: Pos,
    name: &'static str,
    f: fn(i64, i64) -> i64,
) -> Result<Value<'a>> {
    let a = ev.force_int(&args[0], pos, arg_context(0, name))?;
    let b = ev.force_int(&args[1], pos, arg_context(1, name))?;
    Ok(Value::Int(f(a, b)))
}

fn less_than<'a>(ev: &mut Evaluator<'a>, args: &[Value<'a>], pos: Pos) -> Result<Value<'a>> {
    let a = ev.force(&args[0])?;
    let b = ev.force(&args[1])?;
    ev.less_than(&a, &b, pos).map(Value::Bool)
}

/// 2^63, the first float past `i64::MAX`.
const TWO_POW_63: f64 = 9_223_372_036_854_775_808.0;

/// `ceil`/`floor`: an integer stays as it is; a float is rounded and must
/// fit an integer.
fn round<'a>(
    ev: &mut Evaluator<'a>,
    args: &[Value<'a>],
    pos: Pos,
    name: &'static str,
    f: fn(f64) -> f64,
) -> Result<Value<'a>> {
    let v = ev.force(&args[0])?;
    match v {
        Value::Int(n) => Ok(Value::Int(n)),
        Value::Float(x) => {
            let r = f(x);
            if !(-TWO_POW_63..TWO_POW_63).contains(&r) {
                return Err(Error::eval(
                    format!(
                        "float {} does not fit in a 64-bit integer",
                        crate::print::format_float(x)
                    ),
                    pos,
                ));
            }
            Ok(Value::Int(r as i64))
        }
        other => Err(ev
            .type_error("a float", &other, pos)
            .with_frame(pos, arg_context(0, name))),
    }
}
