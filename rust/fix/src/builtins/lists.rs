//! Lists: `map`, `filter`, folds, `sort` (stable), `genList`,
//! `genericClosure`, ...

use super::{arg_context, list_value, plain_string, primop};
use crate::error::{Error, Result};
use crate::eval::Evaluator;
use crate::source::Pos;
use crate::symbol::known;
use crate::thin::Exact;
use crate::value::{Attr, Attrs, List, PrimOp, Thunk, Value};
use rustc_hash::FxHashMap;

pub static PRIMOPS: &[PrimOp] = &[
    primop!("map", 2, map),
    primop!("filter", 2, filter),
    primop!("elem", 2, elem),
    primop!("elemAt", 2, elem_at),
    primop!("head", 1, head),
    primop!("tail", 1, tail),
    primop!("length", 1, length),
    primop!("foldl'", 3, foldl_strict),
    primop!("any", 2, |ev, a, p| any_all(ev, a, p, "any", true)),
    primop!("all", 2, |ev, a, p| any_all(ev, a, p, "all", false)),
    primop!("genList", 2, gen_list),
    primop!("sort", 2, sort),
    primop!("partition", 2, partition),
    primop!("concatLists", 1, concat_lists),
    primop!("concatMap", 2, concat_map),
    primop!("groupBy", 2, group_by),
    primop!("genericClosure", 1, generic_closure),
];

fn list_arg<'a>(
    ev: &mut Evaluator<'a>,
    v: &Value<'a>,
    pos: Pos,
    n: usize,
    name: &'static str,
) -> Result<List<'a>> {
    ev.force_list(v, pos, arg_context(n, name))
}

fn function_arg<'a>(
    ev: &mut Evaluator<'a>,
    v: &Value<'a>,
    pos: Pos,
    n: usize,
    name: &'static str,
) -> Result<Value<'a>> {
    ev.force_function(v, pos, arg_context(n, name))
}

/// `map f xs`: a deferred `f x` per element. `f` itself is forced only
/// when an element is (as Nix 2.3 to 2.12 do; Nix issue 9779), so a list
/// may be built from a function that depends on that list.
fn map<'a>(ev: &mut Evaluator<'a>, args: &[Value<'a>], pos: Pos) -> Result<Value<'a>> {
    let list = list_arg(ev, &args[1], pos, 1, "map")?;
    if list.is_empty() {
        return Ok(Value::List(list));
    }
    let f = deferred_function(&args[0]);
    Ok(Value::List(List::from_iter(
        list.as_slice()
            .iter()
            .map(|x| Value::Thunk(Thunk::apply(&f, x.clone()))),
    )))
}

/// A function argument a builtin only defers calls of: its value when
/// already evaluated (so a lambda's call can be bound at once), else the
/// thunk itself, left unforced.
fn deferred_function<'a>(f: &Value<'a>) -> Value<'a> {
    f.evaluated().unwrap_or(f).clone()
}

/// The elements of `list` whose bit is set in `keep` (`count` of them),
/// in order, in a list of their own. An element already evaluated goes in
/// as its value rather than its thunk, so the new list holds no count on
/// the thunk (a number then costs nothing to copy or drop).
fn kept_elements<'a>(list: &List<'a>, keep: &[u64], count: usize) -> List<'a> {
    let items = list
        .as_slice()
        .iter()
        .enumerate()
        .filter(|(i, _)| keep[i / 64] >> (i % 64) & 1 == 1)
        .map(|(_, x)| x.evaluated().unwrap_or(x).clone());
    List::from_iter(Exact {
        inner: items,
        left: count,
    })
}

fn filter<'a>(ev: &mut Evaluator<'a>, args: &[Value<'a>], pos: Pos) -> Result<Value<'a>> {
    let list = list_arg(ev, &args[1], pos, 1, "filter")?;
    if list.is_empty() {
        return Ok(Value::List(list));
    }
    let f = function_arg(ev, &args[0], pos, 0, "filter")?;
    // Which elements stay, one bit each; the list is built once at the end.
    let mut keep = vec![0u64; list.len().div_ceil(64)];
    let mut kept = 0;
    let mut spare = None;
    for (i, x) in list.as_slice().iter().enumerate() {
        let r = ev.call_again(&f, &mut [x.clone()], &mut spare, pos)?;
        if ev.force_bool(
            &r,
            pos,
            "while evaluating the return value of the filtering function passed to builtins.filter",
        )? {
            keep[i / 64] |= 1 << (i % 64);
            kept += 1;
        }
    }
    if kept == list.len() {
        return Ok(Value::List(list));
    }
    Ok(Value::List(kept_elements(&list, &keep, kept)))
}

/// `elem x xs`: `x` is compared with each element as Nix compares two
/// cells (so a function is an element of a list holding that same
/// function), and is not forced when the list is empty.
fn elem<'a>(ev: &mut Evaluator<'a>, args: &[Value<'a>], pos: Pos) -> Result<Value<'a>> {
    let list = list_arg(ev, &args[1], pos, 1, "elem")?;
    for y in list.as_slice() {
        if ev.equal_cells(&args[0], y, pos)? {
            return Ok(Value::Bool(true));
        }
    }
    Ok(Value::Bool(false))
}

fn elem_at<'a>(ev: &mut Evaluator<'a>, args: &[Value<'a>], pos: Pos) -> Result<Value<'a>> {
    let list = list_arg(ev, &args[0], pos, 0, "elemAt")?;
    let n = ev.force_int(&args[1], pos, arg_context(1, "elemAt"))?;
    match usize::try_from(n)
        .ok()
        .and_then(|i| list.as_slice().get(i))
        .cloned()
    {
        Some(v) => ev.force(&v),
        None => Err(Error::eval(
            format!(
                "'builtins.elemAt' called with index {n} on a list of size {}",
                list.len()
            ),
            pos,
        )),
    }
}

fn head<'a>(ev: &mut Evaluator<'a>, args: &[Value<'a>], pos: Pos) -> Result<Value<'a>> {
    let list = list_arg(ev, &args[0], pos, 0, "head")?;
    match list.as_slice().first().cloned() {
        Some(v) => ev.force(&v),
        None => Err(Error::eval("'builtins.head' called on an empty list", pos)),
    }
}

fn tail<'a>(ev: &mut Evaluator<'a>, args: &[Value<'a>], pos: Pos) -> Result<Value<'a>> {
    let list = list_arg(ev, &args[0], pos, 0, "tail")?;
    match list.as_slice().split_first() {
        Some((_, rest)) => Ok(Value::List(List::from_iter(rest.iter().cloned()))),
        None => Err(Error::eval("'builtins.tail' called on an empty list", pos)),
    }
}

fn length<'a>(ev: &mut Evaluator<'a>, args: &[Value<'a>], pos: Pos) -> Result<Value<'a>> {
    let list = list_arg(ev, &args[0], pos, 0, "length")?;
    Ok(Value::Int(list.len() as i64))
}

/// `foldl'`: the accumulator is forced at every step, the elements are not.
fn foldl_strict<'a>(ev: &mut Evaluator<'a>, args: &[Value<'a>], pos: Pos) -> Result<Value<'a>> {
    let f = function_arg(ev, &args[0], pos, 0, "foldlStrict")?;
    let list = list_arg(ev, &args[2], pos, 2, "foldlStrict")?;
    if list.is_empty() {
        return ev.force(&args[1]);
    }
    let mut acc = args[1].clone();
    let mut spare = None;
    for x in list.as_slice() {
        acc = ev.call_again(&f, &mut [acc, x.clone()], &mut spare, pos)?;
    }
    Ok(acc)
}

fn any_all<'a>(
    ev: &mut Evaluator<'a>,
    args: &[Value<'a>],
    pos: Pos,
    name: &'static str,
    any: bool,
) -> Result<Value<'a>> {
    let f = function_arg(ev, &args[0], pos, 0, name)?;
    let list = list_arg(ev, &args[1], pos, 1, name)?;
    let context = if any {
        "while evaluating the return value of the function passed to builtins.any"
    } else {
        "while evaluating the return value of the function passed to builtins.all"
    };
    let mut spare = None;
    for x in list.as_slice() {
        let r = ev.call_again(&f, &mut [x.clone()], &mut spare, pos)?;
        if ev.force_bool(&r, pos, context)? == any {
            return Ok(Value::Bool(any));
        }
    }
    Ok(Value::Bool(!any))
}

fn gen_list<'a>(ev: &mut Evaluator<'a>, args: &[Value<'a>], pos: Pos) -> Result<Value<'a>> {
    let n = ev.force_int(&args[1], pos, arg_context(1, "genList"))?;
    if n < 0 {
        return Err(Error::eval(format!("cannot create list of size {n}"), pos));
    }
    if n == 0 {
        return Ok(list_value(Vec::new()));
    }
    // Like `map`, the generator is forced only when an element is.
    let f = deferred_function(&args[0]);
    // A value and a deferred call per element.
    ev.check_memory((n as usize).saturating_mul(96), pos)?;
    // Built in place. Ctrl-C and the memory bound are looked at between
    // chunks of a long list; once they stop it, what was built is freed
    // and nothing more is made.
    let list = List::try_from_iter(
        n as usize,
        (0..n as usize).map(|i| {
            if i % (1 << 16) == 0 {
                ev.poll_interrupt(pos)?;
            }
            Ok(Value::Thunk(Thunk::apply(&f, Value::Int(i as i64))))
        }),
    )?;
    Ok(Value::List(list))
}

/// A stable merge sort whose comparison may fail (it calls Nix code):
/// bottom-up between two buffers, moving the values (16 bytes each), so
/// nothing is allocated per merge and the comparisons walk memory in order.
fn merge_sort<'a>(
    ev: &mut Evaluator<'a>,
    items: Vec<Value<'a>>,
    less: &mut dyn FnMut(&mut Evaluator<'a>, &Value<'a>, &Value<'a>) -> Result<bool>,
) -> Result<Vec<Value<'a>>> {
    let n = items.len();
    let mut src = items;
    let mut dst: Vec<Value<'a>> = vec![Value::Null; n];
    let take = |v: &mut Value<'a>| std::mem::replace(v, Value::Null);
    let mut width = 1;
    while width < n {
        let mut start = 0;
        while start < n {
            let mid = (start + width).min(n);
            let end = (start + 2 * width).min(n);
            let (mut i, mut j, mut k) = (start, mid, start);
            while i < mid && j < end {
                // Take from the right only when it is strictly less: stability.
                if less(ev, &src[j], &src[i])? {
                    dst[k] = take(&mut src[j]);
                    j += 1;
                } else {
                    dst[k] = take(&mut src[i]);
                    i += 1;
                }
                k += 1;
            }
            let (left, right) = src.split_at_mut(mid);
            for rest in left[i..]
                .iter_mut()
                .chain(right[j - mid..end - mid].iter_mut())
            {
                dst[k] = take(rest);
                k += 1;
            }
            start = end;
        }
        std::mem::swap(&mut src, &mut dst);
        width *= 2;
    }
    Ok(src)
}

/// `sort builtins.lessThan` over integers only, or strings only (forced):
/// lessThan's own order with no call per comparison, as Nix also skips the
/// call for lessThan. The order is total and both sorts are stable, so the
/// result is the merge sort's; any other list (floats, mixed types, where
/// lessThan can fail) takes the general path and fails as it would.
/// Integers are sorted as plain numbers (equal ones cannot be told apart,
/// so stability is moot) and the sorted list holds the numbers themselves,
/// not the thunks they came from.
fn sorted_by_less_than<'a>(f: &Value<'a>, items: &[Value<'a>]) -> Option<List<'a>> {
    if !matches!(f, Value::PrimOp(op) if op.name == "lessThan") {
        return None;
    }
    match items.first()?.evaluated()? {
        Value::Int(_) => {
            let mut numbers = items
                .iter()
                .map(|v| match v.evaluated()? {
                    Value::Int(n) => Some(*n),
                    _ => None,
                })
                .collect::<Option<Vec<i64>>>()?;
            numbers.sort_unstable();
            Some(List::from_iter(numbers.into_iter().map(Value::Int)))
        }
        Value::String(_) => {
            let mut pairs = items
                .iter()
                .map(|v| match v.evaluated()? {
                    s @ Value::String(bytes) => Some((bytes.as_bytes(), s)),
                    _ => None,
                })
                .collect::<Option<Vec<_>>>()?;
            pairs.sort_by(|a, b| a.0.cmp(b.0));
            Some(List::from_iter(pairs.into_iter().map(|(_, v)| v.clone())))
        }
        _ => None,
    }
}

fn sort<'a>(ev: &mut Evaluator<'a>, args: &[Value<'a>], pos: Pos) -> Result<Value<'a>> {
    let list = list_arg(ev, &args[1], pos, 1, "sort")?;
    if list.is_empty() {
        return Ok(Value::List(list));
    }
    // The comparator must be a function even when nothing is compared.
    let f = function_arg(ev, &args[0], pos, 0, "sort")?;
    if list.len() == 1 {
        ev.force(&list.as_slice()[0])?;
        return Ok(Value::List(list));
    }
    let items = list.as_slice();
    for item in items {
        ev.force(item)?;
    }
    // Sorting holds two more lists' worth: the keys or the copy it sorts,
    // and the buffer it merges into.
    let mut held = crate::memory::Held::default();
    ev.hold::<Value<'a>>(&mut held, items.len().saturating_mul(2), pos)?;
    if let Some(sorted) = sorted_by_less_than(&f, items) {
        return Ok(Value::List(sorted));
    }
    let mut spare = None;
    let mut less = |ev: &mut Evaluator<'a>, a: &Value<'a>, b: &Value<'a>| -> Result<bool> {
        let r = ev.call_again(&f, &mut [a.clone(), b.clone()], &mut spare, pos)?;
        ev.force_bool(
            &r,
            pos,
            "while evaluating the return value of the sorting function passed to builtins.sort",
        )
    };
    let sorted = merge_sort(ev, items.to_vec(), &mut less)?;
    Ok(list_value(sorted))
}

fn partition<'a>(ev: &mut Evaluator<'a>, args: &[Value<'a>], pos: Pos) -> Result<Value<'a>> {
    let f = function_arg(ev, &args[0], pos, 0, "partition")?;
    let list = list_arg(ev, &args[1], pos, 1, "partition")?;
    // Which elements are right, one bit each (as in `filter`).
    let mut right = vec![0u64; list.len().div_ceil(64)];
    let mut count = 0;
    let mut spare = None;
    for (i, x) in list.as_slice().iter().enumerate() {
        ev.force(x)?;
        let r = ev.call_again(&f, &mut [x.clone()], &mut spare, pos)?;
        if ev.force_bool(&r, pos, "while evaluating the return value of the partition function passed to builtins.partition")? {
            right[i / 64] |= 1 << (i % 64);
            count += 1;
        }
    }
    let mut wrong = right.iter().map(|w| !w).collect::<Vec<u64>>();
    if let Some(last) = wrong.last_mut()
        && list.len() % 64 != 0
    {
        *last &= (1 << (list.len() % 64)) - 1;
    }
    Ok(Value::Attrs(Attrs::from_unsorted(vec![
        Attr {
            name: known::RIGHT,
            pos: Pos::NONE,
            value: Value::List(kept_elements(&list, &right, count)),
        },
        Attr {
            name: known::WRONG,
            pos: Pos::NONE,
            value: Value::List(kept_elements(&list, &wrong, list.len() - count)),
        },
    ])))
}

fn concat_lists<'a>(ev: &mut Evaluator<'a>, args: &[Value<'a>], pos: Pos) -> Result<Value<'a>> {
    let list = list_arg(ev, &args[0], pos, 0, "concatLists")?;
    let mut out = Vec::new();
    for x in list.as_slice() {
        let inner = ev.force_list(
            x,
            pos,
            "while evaluating a value of the list passed to builtins.concatLists",
        )?;
        ev.check_memory(
            (out.len() + inner.len()) * std::mem::size_of::<Value<'a>>(),
            pos,
        )?;
        out.extend_from_slice(inner.as_slice());
    }
    Ok(list_value(out))
}

fn concat_map<'a>(ev: &mut Evaluator<'a>, args: &[Value<'a>], pos: Pos) -> Result<Value<'a>> {
    let f = function_arg(ev, &args[0], pos, 0, "concatMap")?;
    let list = list_arg(ev, &args[1], pos, 1, "concatMap")?;
    let mut out = Vec::new();
    let mut spare = None;
    for x in list.as_slice() {
        let r = ev.call_again(&f, &mut [x.clone()], &mut spare, pos)?;
        let inner = ev.force_list(
            &r,
            pos,
            "while evaluating the return value of the function passed to builtins.concatMap",
        )?;
        out.extend_from_slice(inner.as_slice());
    }
    Ok(list_value(out))
}

fn group_by<'a>(ev: &mut Evaluator<'a>, args: &[Value<'a>], pos: Pos) -> Result<Value<'a>> {
    let f = function_arg(ev, &args[0], pos, 0, "groupBy")?;
    let list = list_arg(ev, &args[1], pos, 1, "groupBy")?;
    let mut groups: FxHashMap<crate::symbol::Sym, Vec<Value<'a>>> = FxHashMap::default();
    let mut spare = None;
    for x in list.as_slice() {
        let r = ev.call_again(&f, &mut [x.clone()], &mut spare, pos)?;
        let name = plain_string(
            ev,
            &r,
            pos,
            "while evaluating the return value of the grouping function passed to builtins.groupBy",
        )?;
        let sym = ev.symbols.intern(name.as_bytes());
        groups.entry(sym).or_default().push(x.clone());
    }
    let entries = groups
        .into_iter()
        .map(|(name, items)| Attr {
            name,
            pos: Pos::NONE,
            value: list_value(items),
        })
        .collect();
    Ok(Value::Attrs(Attrs::from_unsorted(entries)))
}

fn generic_closure<'a>(ev: &mut Evaluator<'a>, args: &[Value<'a>], pos: Pos) -> Result<Value<'a>> {
    let spec = ev.force_attrs(&args[0], pos, arg_context(0, "genericClosure"))?;
    let Some(start) = spec.get(known::START_SET).cloned() else {
        return Err(ev.missing_attr(&spec, known::START_SET, pos).with_frame(
            pos,
            "in the attrset passed as argument to builtins.genericClosure",
        ));
    };
    let start = ev.force_list(
        &start,
        pos,
        "while evaluating the 'startSet' attribute passed as argument to builtins.genericClosure",
    )?;
    if start.is_empty() {
        return Ok(Value::List(start));
    }
    let Some(op) = spec.get(known::OPERATOR).cloned() else {
        return Err(ev.missing_attr(&spec, known::OPERATOR, pos).with_frame(
            pos,
            "in the attrset passed as argument to builtins.genericClosure",
        ));
    };
    let op = ev.force_function(
        &op,
        pos,
        "while evaluating the 'operator' attribute passed as argument to builtins.genericClosure",
    )?;
    // The work list, the keys seen so far (kept sorted by `<`) and the
    // result are the builtin's working set: counted as they grow.
    let (mut held_work, mut held_keys, mut held_result) = Default::default();
    let mut work: std::collections::VecDeque<Value<'a>> = std::collections::VecDeque::new();
    for item in start.as_slice() {
        ev.room(&mut held_work, &mut work, pos)?;
        work.push_back(item.clone());
    }
    let mut keys: Vec<Value<'a>> = Vec::new();
    let mut result = Vec::new();
    while let Some(e) = work.pop_front() {
        let attrs = ev.force_attrs(
            &e,
            pos,
            "while evaluating an element of the closure in builtins.genericClosure",
        )?;
        let Some(key) = attrs.get(known::KEY).cloned() else {
            return Err(ev
                .missing_attr(&attrs, known::KEY, pos)
                .with_frame(pos, "in a genericClosure element"));
        };
        let key = ev.force(&key)?;
        // Binary search by `<`; equal when neither is less.
        let (mut lo, mut hi) = (0, keys.len());
        let mut found = false;
        while lo < hi {
            let mid = (lo + hi) / 2;
            if ev.less_than(&keys[mid], &key, pos)? {
                lo = mid + 1;
            } else if ev.less_than(&key, &keys[mid], pos)? {
                hi = mid;
            } else {
                found = true;
                break;
            }
        }
        if found {
            continue;
        }
        ev.room(&mut held_keys, &mut keys, pos)?;
        keys.insert(lo, key);
        ev.room(&mut held_result, &mut result, pos)?;
        result.push(e.clone());
        let next = ev.call(op.clone(), e, pos)?;
        let next = ev.force_list(
            &next,
            pos,
            "while evaluating the return value of the `operator` passed to builtins.genericClosure",
        )?;
        for item in next.as_slice() {
            ev.force(item)?;
            ev.room(&mut held_work, &mut work, pos)?;
            work.push_back(item.clone());
        }
    }
    Ok(list_value(result))
}
