//! Errors, strictness and tracing: `throw`, `abort`, `tryEval`, `seq`,
//! `deepSeq`, `trace`, `warn`, `addErrorContext`, and `getEnv`.

use super::{arg_context, plain_string, primop};
use crate::error::{Error, ErrorKind, Result};
use crate::eval::{Coercion, Evaluator};
use crate::source::Pos;
use crate::symbol::known;
use crate::value::{Attr, Attrs, PrimOp, Value};

pub static PRIMOPS: &[PrimOp] = &[
    primop!("abort", 1, abort),
    primop!("throw", 1, throw),
    primop!("tryEval", 1, try_eval),
    primop!("seq", 2, seq),
    primop!("deepSeq", 2, deep_seq),
    primop!("trace", 2, trace),
    // `traceVerbose` prints only with Nix's `trace-verbose` setting, which
    // fix does not have: it returns its second argument.
    primop!("traceVerbose", 2, |ev, a, _| ev.force(&a[1])),
    primop!("warn", 2, warn),
    primop!("addErrorContext", 2, add_error_context),
    // The debugger's breakpoint; without a debugger it is the identity.
    primop!("break", 1, |ev, a, _| ev.force(&a[0])),
    primop!("getEnv", 1, get_env),
];

fn message<'a>(ev: &mut Evaluator<'a>, v: &Value<'a>, pos: Pos, name: &str) -> Result<String> {
    let s = ev
        .coerce_to_string(v, Coercion::PATH_SEGMENT, pos)
        .map_err(|e| {
            e.with_frame(
                pos,
                format!("while evaluating the error message passed to builtins.{name}"),
            )
        })?;
    Ok(s.lossy().into_owned())
}

fn abort<'a>(ev: &mut Evaluator<'a>, args: &[Value<'a>], pos: Pos) -> Result<Value<'a>> {
    let msg = message(ev, &args[0], pos, "abort")?;
    Err(Error::new(
        ErrorKind::Abort,
        format!("evaluation aborted with the following error message: '{msg}'"),
        pos,
    ))
}

fn throw<'a>(ev: &mut Evaluator<'a>, args: &[Value<'a>], pos: Pos) -> Result<Value<'a>> {
    let msg = message(ev, &args[0], pos, "throw")?;
    Err(Error::new(ErrorKind::Throw, msg, pos))
}

/// Catches `throw` and failed assertions, nothing else (as Nix does).
fn try_eval<'a>(ev: &mut Evaluator<'a>, args: &[Value<'a>], _pos: Pos) -> Result<Value<'a>> {
    let (value, success) = match ev.force(&args[0]) {
        Ok(_) => (args[0].clone(), true),
        Err(e) if e.kind().catchable() => (Value::Bool(false), false),
        Err(e) => return Err(e),
    };
    Ok(Value::Attrs(Attrs::from_unsorted(vec![
        Attr {
            name: known::VALUE,
            pos: Pos::NONE,
            value,
        },
        Attr {
            name: known::SUCCESS,
            pos: Pos::NONE,
            value: Value::Bool(success),
        },
    ])))
}

fn seq<'a>(ev: &mut Evaluator<'a>, args: &[Value<'a>], _pos: Pos) -> Result<Value<'a>> {
    ev.force(&args[0])?;
    ev.force(&args[1])
}

fn deep_seq<'a>(ev: &mut Evaluator<'a>, args: &[Value<'a>], pos: Pos) -> Result<Value<'a>> {
    ev.force_deep(&args[0], pos)?;
    ev.force(&args[1])
}

fn trace<'a>(ev: &mut Evaluator<'a>, args: &[Value<'a>], _pos: Pos) -> Result<Value<'a>> {
    let v = ev.force(&args[0])?;
    let text = match &v {
        Value::String(s) => s.lossy().into_owned(),
        other => crate::print::pretty(ev, other),
    };
    ev.emit(&format!("trace: {text}"));
    ev.force(&args[1])
}

fn warn<'a>(ev: &mut Evaluator<'a>, args: &[Value<'a>], pos: Pos) -> Result<Value<'a>> {
    let msg = ev.force_string(
        &args[0],
        pos,
        "while evaluating the first argument; the message passed to builtins.warn",
    )?;
    ev.emit(&format!("evaluation warning: {}", msg.lossy()));
    if ev.options.abort_on_warn {
        return Err(Error::new(
            ErrorKind::Abort,
            "aborting to reveal stack trace of warning, as abort-on-warn is set",
            pos,
        ));
    }
    ev.force(&args[1])
}

fn add_error_context<'a>(
    ev: &mut Evaluator<'a>,
    args: &[Value<'a>],
    pos: Pos,
) -> Result<Value<'a>> {
    match ev.force(&args[1]) {
        Ok(v) => Ok(v),
        Err(e) => {
            let context = message(ev, &args[0], pos, "addErrorContext")?;
            Err(e.with_context(context))
        }
    }
}

/// The environment is empty in pure mode.
fn get_env<'a>(ev: &mut Evaluator<'a>, args: &[Value<'a>], pos: Pos) -> Result<Value<'a>> {
    let name = plain_string(ev, &args[0], pos, arg_context(0, "getEnv"))?;
    if ev.options.pure {
        return Ok(Value::string(""));
    }
    let value = std::env::var_os(std::ffi::OsStr::new(name.lossy().as_ref()))
        .map(|v| std::os::unix::ffi::OsStrExt::as_bytes(v.as_os_str()).to_vec())
        .unwrap_or_default();
    Ok(Value::string(value))
}
