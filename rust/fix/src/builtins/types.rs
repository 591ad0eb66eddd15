//! Type tests: `typeOf`, `isInt`, `isFunction`, ...

use super::primop;
use crate::error::Result;
use crate::eval::Evaluator;
use crate::source::Pos;
use crate::value::{PrimOp, Value};

pub static PRIMOPS: &[PrimOp] = &[
    primop!("typeOf", 1, type_of),
    primop!("isNull", 1, |ev, a, _| ev
        .force(&a[0])
        .map(|v| Value::Bool(matches!(v, Value::Null)))),
    primop!("isFunction", 1, |ev, a, _| ev
        .force(&a[0])
        .map(|v| Value::Bool(v.is_function()))),
    primop!("isInt", 1, |ev, a, _| ev
        .force(&a[0])
        .map(|v| Value::Bool(matches!(v, Value::Int(_))))),
    primop!("isFloat", 1, |ev, a, _| ev
        .force(&a[0])
        .map(|v| Value::Bool(matches!(v, Value::Float(_))))),
    primop!("isString", 1, |ev, a, _| ev
        .force(&a[0])
        .map(|v| Value::Bool(matches!(v, Value::String(_))))),
    primop!("isBool", 1, |ev, a, _| ev
        .force(&a[0])
        .map(|v| Value::Bool(matches!(v, Value::Bool(_))))),
    primop!("isPath", 1, |ev, a, _| ev
        .force(&a[0])
        .map(|v| Value::Bool(matches!(v, Value::Path(_))))),
    primop!("isAttrs", 1, |ev, a, _| ev
        .force(&a[0])
        .map(|v| Value::Bool(matches!(v, Value::Attrs(_))))),
    primop!("isList", 1, |ev, a, _| ev
        .force(&a[0])
        .map(|v| Value::Bool(matches!(v, Value::List(_))))),
];

fn type_of<'a>(ev: &mut Evaluator<'a>, args: &[Value<'a>], _pos: Pos) -> Result<Value<'a>> {
    let v = ev.force(&args[0])?;
    Ok(Value::string(v.type_name()))
}
