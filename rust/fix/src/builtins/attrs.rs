//! Attribute sets: names, values, lookups, building and reshaping.

use super::{arg_context, list_value, plain_string, primop};
use crate::error::Result;
use crate::eval::Evaluator;
use crate::source::Pos;
use crate::symbol::{Sym, known};
use crate::syntax::ir::Param;
use crate::value::{Attr, Attrs, List, PrimOp, Thunk, Value};
use rustc_hash::FxHashMap;

pub static PRIMOPS: &[PrimOp] = &[
    primop!("attrNames", 1, attr_names),
    primop!("attrValues", 1, attr_values),
    primop!("getAttr", 2, get_attr),
    primop!("hasAttr", 2, has_attr),
    primop!("unsafeGetAttrPos", 2, unsafe_get_attr_pos),
    primop!("listToAttrs", 1, list_to_attrs),
    primop!("intersectAttrs", 2, intersect_attrs),
    primop!("catAttrs", 2, cat_attrs),
    primop!("functionArgs", 1, function_args),
    primop!("mapAttrs", 2, map_attrs),
    primop!("zipAttrsWith", 2, zip_attrs_with),
    primop!("removeAttrs", 2, remove_attrs),
];

fn attrs_arg<'a>(
    ev: &mut Evaluator<'a>,
    v: &Value<'a>,
    pos: Pos,
    n: usize,
    name: &'static str,
) -> Result<Attrs<'a>> {
    ev.force_attrs(v, pos, arg_context(n, name))
}

fn name_arg<'a>(
    ev: &mut Evaluator<'a>,
    v: &Value<'a>,
    pos: Pos,
    n: usize,
    name: &'static str,
) -> Result<Sym> {
    let s = plain_string(ev, v, pos, arg_context(n, name))?;
    Ok(ev.symbols.intern(s.as_bytes()))
}

fn attr_names<'a>(ev: &mut Evaluator<'a>, args: &[Value<'a>], pos: Pos) -> Result<Value<'a>> {
    let attrs = attrs_arg(ev, &args[0], pos, 0, "attrNames")?;
    let names = attrs
        .lexicographic(&ev.symbols)
        .into_iter()
        .map(|a| Value::String(ev.symbols.string(a.name)));
    Ok(Value::List(List::from_iter(names)))
}

fn attr_values<'a>(ev: &mut Evaluator<'a>, args: &[Value<'a>], pos: Pos) -> Result<Value<'a>> {
    let attrs = attrs_arg(ev, &args[0], pos, 0, "attrValues")?;
    let values = attrs
        .lexicographic(&ev.symbols)
        .into_iter()
        .map(|a| a.value.clone());
    Ok(Value::List(List::from_iter(values)))
}

fn get_attr<'a>(ev: &mut Evaluator<'a>, args: &[Value<'a>], pos: Pos) -> Result<Value<'a>> {
    let name = name_arg(ev, &args[0], pos, 0, "getAttr")?;
    let attrs = attrs_arg(ev, &args[1], pos, 1, "getAttr")?;
    match attrs.get(name).cloned() {
        Some(v) => ev.force(&v),
        None => Err(ev.missing_attr(&attrs, name, pos)),
    }
}

fn has_attr<'a>(ev: &mut Evaluator<'a>, args: &[Value<'a>], pos: Pos) -> Result<Value<'a>> {
    let name = name_arg(ev, &args[0], pos, 0, "hasAttr")?;
    let attrs = attrs_arg(ev, &args[1], pos, 1, "hasAttr")?;
    Ok(Value::Bool(attrs.contains(name)))
}

fn unsafe_get_attr_pos<'a>(
    ev: &mut Evaluator<'a>,
    args: &[Value<'a>],
    pos: Pos,
) -> Result<Value<'a>> {
    let name = name_arg(ev, &args[0], pos, 0, "unsafeGetAttrPos")?;
    let attrs = attrs_arg(ev, &args[1], pos, 1, "unsafeGetAttrPos")?;
    match attrs.get_attr(name) {
        Some(attr) => {
            let at = attr.pos;
            Ok(ev.pos_attrs(at))
        }
        None => Ok(Value::Null),
    }
}

fn list_to_attrs<'a>(ev: &mut Evaluator<'a>, args: &[Value<'a>], pos: Pos) -> Result<Value<'a>> {
    let list = ev.force_list(&args[0], pos, arg_context(0, "listToAttrs"))?;
    let mut held = crate::memory::Held::default();
    ev.hold::<Attr<'a>>(&mut held, list.len(), pos)?;
    let mut entries = Vec::with_capacity(list.len());
    for item in list.as_slice() {
        let pair = ev.force_attrs(
            item,
            pos,
            "while evaluating an element of the list passed to builtins.listToAttrs",
        )?;
        let Some(name) = pair.get(known::NAME).cloned() else {
            return Err(ev
                .missing_attr(&pair, known::NAME, pos)
                .with_frame(pos, "in a {name=...; value=...;} pair"));
        };
        let name = plain_string(
            ev,
            &name,
            pos,
            "while evaluating the `name` attribute of an element of the list passed to builtins.listToAttrs",
        )?;
        let Some(value) = pair.get_attr(known::VALUE) else {
            return Err(ev
                .missing_attr(&pair, known::VALUE, pos)
                .with_frame(pos, "in a {name=...; value=...;} pair"));
        };
        let sym = ev.symbols.intern_string(&name);
        entries.push(Attr {
            name: sym,
            pos: value.pos,
            value: value.value.clone(),
        });
    }
    Ok(Value::Attrs(Attrs::from_unsorted(entries)))
}

fn intersect_attrs<'a>(ev: &mut Evaluator<'a>, args: &[Value<'a>], pos: Pos) -> Result<Value<'a>> {
    let left = attrs_arg(ev, &args[0], pos, 0, "intersectAttrs")?;
    let right = attrs_arg(ev, &args[1], pos, 1, "intersectAttrs")?;
    let kept = right
        .iter()
        .filter(|a| left.contains(a.name))
        .cloned()
        .collect();
    Ok(Value::Attrs(Attrs::from_sorted(kept)))
}

fn cat_attrs<'a>(ev: &mut Evaluator<'a>, args: &[Value<'a>], pos: Pos) -> Result<Value<'a>> {
    let name = name_arg(ev, &args[0], pos, 0, "catAttrs")?;
    let list = ev.force_list(&args[1], pos, arg_context(1, "catAttrs"))?;
    let mut out = Vec::new();
    for item in list.as_slice() {
        let attrs = ev.force_attrs(item, pos, "while evaluating an element in the list passed as second argument to builtins.catAttrs")?;
        if let Some(v) = attrs.get(name) {
            out.push(v.clone());
        }
    }
    Ok(list_value(out))
}

fn function_args<'a>(ev: &mut Evaluator<'a>, args: &[Value<'a>], pos: Pos) -> Result<Value<'a>> {
    let f = ev.force(&args[0])?;
    match &f {
        Value::Lambda(c) => match &c.lambda.param {
            Param::Ident(_) => Ok(Value::Attrs(Attrs::empty())),
            Param::Formals(formals) => {
                let entries = formals
                    .entries
                    .iter()
                    .map(|fm| Attr {
                        name: fm.name,
                        pos: fm.pos,
                        value: Value::Bool(fm.default.is_some()),
                    })
                    .collect();
                Ok(Value::Attrs(Attrs::from_unsorted(entries)))
            }
        },
        Value::PrimOp(_) | Value::PrimOpApp(_) => Ok(Value::Attrs(Attrs::empty())),
        other => Err(ev
            .type_error("a function", other, pos)
            .with_frame(pos, arg_context(0, "functionArgs"))),
    }
}

fn map_attrs<'a>(ev: &mut Evaluator<'a>, args: &[Value<'a>], pos: Pos) -> Result<Value<'a>> {
    let attrs = attrs_arg(ev, &args[1], pos, 1, "mapAttrs")?;
    let f = args[0].clone();
    let entries = attrs.iter().map(|a| {
        let name = Value::String(ev.symbols.string(a.name));
        // Like Nix, the new attributes have no position.
        Attr {
            name: a.name,
            pos: Pos::NONE,
            value: Value::Thunk(Thunk::apply2(&f, name, a.value.clone())),
        }
    });
    Ok(Value::Attrs(Attrs::from_sorted_iter(entries)))
}

fn zip_attrs_with<'a>(ev: &mut Evaluator<'a>, args: &[Value<'a>], pos: Pos) -> Result<Value<'a>> {
    let f = ev.force_function(&args[0], pos, arg_context(0, "zipAttrsWith"))?;
    let list = ev.force_list(&args[1], pos, arg_context(1, "zipAttrsWith"))?;
    let mut grouped: FxHashMap<Sym, Vec<Value<'a>>> = FxHashMap::default();
    let mut order = Vec::new();
    for item in list.as_slice() {
        let attrs = ev.force_attrs(item, pos, "while evaluating a value of the list passed as second argument to builtins.zipAttrsWith")?;
        for a in attrs.iter() {
            let entry = grouped.entry(a.name).or_insert_with(|| {
                order.push(a.name);
                Vec::new()
            });
            entry.push(a.value.clone());
        }
    }
    let mut entries = Vec::with_capacity(order.len());
    for name in order {
        let Some(values) = grouped.remove(&name) else {
            continue;
        };
        let name_value = Value::String(ev.symbols.string(name));
        let value = Value::Thunk(Thunk::apply2(&f, name_value, list_value(values)));
        entries.push(Attr {
            name,
            pos: Pos::NONE,
            value,
        });
    }
    Ok(Value::Attrs(Attrs::from_unsorted(entries)))
}

fn remove_attrs<'a>(ev: &mut Evaluator<'a>, args: &[Value<'a>], pos: Pos) -> Result<Value<'a>> {
    let attrs = attrs_arg(ev, &args[0], pos, 0, "removeAttrs")?;
    let names = ev.force_list(&args[1], pos, arg_context(1, "removeAttrs"))?;
    let mut removed = Vec::with_capacity(names.len());
    for n in names.as_slice() {
        let s = plain_string(
            ev,
            n,
            pos,
            "while evaluating the values of the second argument passed to builtins.removeAttrs",
        )?;
        if let Some(sym) = ev.symbols.lookup(s.as_bytes()) {
            removed.push(sym);
        }
    }
    if removed.is_empty() {
        return Ok(Value::Attrs(attrs));
    }
    removed.sort();
    let kept = attrs
        .iter()
        .filter(|a| removed.binary_search(&a.name).is_err())
        .cloned()
        .collect();
    Ok(Value::Attrs(Attrs::from_sorted(kept)))
}
