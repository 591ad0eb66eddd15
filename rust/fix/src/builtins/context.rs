//! The string context builtins: `getContext`, `appendContext`,
//! `hasContext`, `unsafeDiscardStringContext`,
//! `unsafeDiscardOutputDependency` and `addDrvOutputDependencies`.

use super::{arg_context, list_value, primop};
use crate::error::{Error, Result};
use crate::eval::{Coercion, Evaluator};
use crate::source::Pos;
use crate::value::{Attr, Attrs, Context, ContextElem, NixString, PrimOp, Value};
use std::collections::BTreeMap;
use std::rc::Rc;

pub static PRIMOPS: &[PrimOp] = &[
    primop!("unsafeDiscardStringContext", 1, discard_context),
    primop!(
        "unsafeDiscardOutputDependency",
        1,
        discard_output_dependency
    ),
    primop!("addDrvOutputDependencies", 1, add_drv_output_dependencies),
    primop!("hasContext", 1, has_context),
    primop!("getContext", 1, get_context),
    primop!("appendContext", 2, append_context),
];

fn discard_context<'a>(ev: &mut Evaluator<'a>, args: &[Value<'a>], pos: Pos) -> Result<Value<'a>> {
    let s = ev
        .coerce_to_string(&args[0], Coercion::INTERPOLATION, pos)
        .map_err(|e| e.with_frame(pos, arg_context(0, "unsafeDiscardStringContext")))?;
    Ok(Value::String(s.without_context()))
}

/// The string with its context mapped element by element.
fn map_context(s: &NixString, f: impl Fn(&ContextElem) -> ContextElem) -> NixString {
    let Some(context) = s.context() else {
        return s.clone();
    };
    let elems = context.elems().iter().map(f).collect();
    NixString::with_context(s.as_bytes(), Context::from_elems(elems))
}

fn discard_output_dependency<'a>(
    ev: &mut Evaluator<'a>,
    args: &[Value<'a>],
    pos: Pos,
) -> Result<Value<'a>> {
    let s = ev
        .coerce_to_string(&args[0], Coercion::INTERPOLATION, pos)
        .map_err(|e| e.with_frame(pos, arg_context(0, "unsafeDiscardOutputDependency")))?;
    Ok(Value::String(map_context(&s, |e| match e {
        ContextElem::DrvDeep(p) => ContextElem::Opaque(p.clone()),
        other => other.clone(),
    })))
}

fn add_drv_output_dependencies<'a>(
    ev: &mut Evaluator<'a>,
    args: &[Value<'a>],
    pos: Pos,
) -> Result<Value<'a>> {
    let s = ev
        .coerce_to_string(&args[0], Coercion::INTERPOLATION, pos)
        .map_err(|e| e.with_frame(pos, arg_context(0, "addDrvOutputDependencies")))?;
    let elems = s.context().map(Context::elems).unwrap_or_default();
    let [elem] = elems else {
        return Err(Error::eval(
            format!(
                "context of string '{}' must have exactly one element, but has {}",
                s.lossy(),
                elems.len()
            ),
            pos,
        ));
    };
    let deep = match elem {
        ContextElem::Opaque(p) if p.ends_with(".drv") => ContextElem::DrvDeep(p.clone()),
        ContextElem::Opaque(p) => {
            return Err(Error::eval(format!("path '{p}' is not a derivation"), pos));
        }
        ContextElem::Built { output, .. } => {
            return Err(Error::eval(
                format!(
                    "`addDrvOutputDependencies` can only act on derivations, not on a derivation output such as '{output}'"
                ),
                pos,
            ));
        }
        ContextElem::DrvDeep(_) => elem.clone(),
    };
    Ok(Value::String(NixString::with_context(
        s.as_bytes(),
        Some(Context::one(deep)),
    )))
}

fn has_context<'a>(ev: &mut Evaluator<'a>, args: &[Value<'a>], pos: Pos) -> Result<Value<'a>> {
    let s = ev.force_string(&args[0], pos, arg_context(0, "hasContext"))?;
    Ok(Value::Bool(s.has_context()))
}

/// What `getContext` says of one store path.
#[derive(Default)]
struct PathInfo {
    path: bool,
    all_outputs: bool,
    outputs: Vec<Rc<str>>,
}

fn get_context<'a>(ev: &mut Evaluator<'a>, args: &[Value<'a>], pos: Pos) -> Result<Value<'a>> {
    let s = ev.force_string(&args[0], pos, arg_context(0, "getContext"))?;
    let mut by_path: BTreeMap<Rc<str>, PathInfo> = BTreeMap::new();
    for elem in s.context().map(Context::elems).unwrap_or_default() {
        match elem {
            ContextElem::Opaque(p) => by_path.entry(p.clone()).or_default().path = true,
            ContextElem::DrvDeep(p) => by_path.entry(p.clone()).or_default().all_outputs = true,
            ContextElem::Built { drv, output } => by_path
                .entry(drv.clone())
                .or_default()
                .outputs
                .push(output.clone()),
        }
    }
    let mut entries = Vec::with_capacity(by_path.len());
    for (path, info) in by_path {
        let mut fields = Vec::new();
        if info.path {
            fields.push(Attr {
                name: ev.sym("path"),
                pos: Pos::NONE,
                value: Value::Bool(true),
            });
        }
        if info.all_outputs {
            fields.push(Attr {
                name: ev.sym("allOutputs"),
                pos: Pos::NONE,
                value: Value::Bool(true),
            });
        }
        if !info.outputs.is_empty() {
            let outputs = info
                .outputs
                .iter()
                .map(|o| Value::string(o.as_ref()))
                .collect();
            fields.push(Attr {
                name: ev.sym("outputs"),
                pos: Pos::NONE,
                value: list_value(outputs),
            });
        }
        entries.push(Attr {
            name: ev.symbols.intern(path.as_bytes()),
            pos: Pos::NONE,
            value: Value::Attrs(Attrs::from_unsorted(fields)),
        });
    }
    Ok(Value::Attrs(Attrs::from_unsorted(entries)))
}

fn append_context<'a>(ev: &mut Evaluator<'a>, args: &[Value<'a>], pos: Pos) -> Result<Value<'a>> {
    let s = ev.force_string(&args[0], pos, arg_context(0, "appendContext"))?;
    let wanted = ev.force_attrs(&args[1], pos, arg_context(1, "appendContext"))?;
    let mut elems: Vec<ContextElem> = s.context().map(|c| c.elems().to_vec()).unwrap_or_default();
    for attr in wanted.iter() {
        let name = ev.symbols.text(attr.name).into_owned();
        if chock_store::StorePath::from_absolute_path(&name).is_err() {
            return Err(Error::eval(
                format!("context key '{name}' is not a store path"),
                attr.pos,
            ));
        }
        let path: Rc<str> = Rc::from(name.as_str());
        let info = ev.force_attrs(
            &attr.value,
            attr.pos,
            "while evaluating the value of a string context",
        )?;
        let path_sym = ev.sym("path");
        if let Some(v) = info.get(path_sym)
            && ev.force_bool(
                v,
                attr.pos,
                "while evaluating the `path` attribute of a string context",
            )?
        {
            elems.push(ContextElem::Opaque(path.clone()));
        }
        let all_sym = ev.sym("allOutputs");
        if let Some(v) = info.get(all_sym)
            && ev.force_bool(
                v,
                attr.pos,
                "while evaluating the `allOutputs` attribute of a string context",
            )?
        {
            if !name.ends_with(".drv") {
                return Err(Error::eval(
                    format!(
                        "tried to add all-outputs context of {name}, which is not a derivation, to a string"
                    ),
                    attr.pos,
                ));
            }
            elems.push(ContextElem::DrvDeep(path.clone()));
        }
        let outputs_sym = ev.sym("outputs");
        if let Some(v) = info.get(outputs_sym) {
            let outputs = ev.force_list(
                v,
                attr.pos,
                "while evaluating the `outputs` attribute of a string context",
            )?;
            if !outputs.is_empty() && !name.ends_with(".drv") {
                return Err(Error::eval(
                    format!(
                        "tried to add derivation output context of {name}, which is not a derivation, to a string"
                    ),
                    attr.pos,
                ));
            }
            for output in outputs.as_slice() {
                let output = ev.force_string(
                    output,
                    attr.pos,
                    "while evaluating an output name within a string context",
                )?;
                elems.push(ContextElem::Built {
                    drv: path.clone(),
                    output: Rc::from(output.lossy().as_ref()),
                });
            }
        }
    }
    Ok(Value::String(NixString::with_context(
        s.as_bytes(),
        Context::from_elems(elems),
    )))
}
