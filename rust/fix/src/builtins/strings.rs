//! Strings: `substring` (on bytes), `stringLength`, `concatStringsSep`,
//! `replaceStrings`, `toString`, `baseNameOf`, `dirOf`. Each keeps the
//! context of the strings it takes apart or joins, as Nix does.

use super::{arg_context, primop};
use crate::error::{Error, Result};
use crate::eval::{Coercion, Evaluator};
use crate::source::Pos;
use crate::value::{ContextAcc, NixString, PrimOp, Value};

pub static PRIMOPS: &[PrimOp] = &[
    primop!("substring", 3, substring),
    primop!("stringLength", 1, string_length),
    primop!("concatStringsSep", 2, concat_strings_sep),
    primop!("replaceStrings", 3, replace_strings),
    primop!("toString", 1, to_string),
    primop!("baseNameOf", 1, base_name_of),
    primop!("dirOf", 1, dir_of),
];

/// The default coercion of builtins that take "a string": strings,
/// paths (copied to the store) and sets with `outPath`/`__toString`.
fn coerced<'a>(
    ev: &mut Evaluator<'a>,
    v: &Value<'a>,
    pos: Pos,
    context: &str,
) -> Result<NixString> {
    ev.coerce_to_string(v, Coercion::INTERPOLATION, pos)
        .map_err(|e| e.with_frame(pos, context.to_string()))
}

fn substring<'a>(ev: &mut Evaluator<'a>, args: &[Value<'a>], pos: Pos) -> Result<Value<'a>> {
    let start = ev.force_int(
        &args[0],
        pos,
        "while evaluating the first argument (the start offset) passed to builtins.substring",
    )?;
    if start < 0 {
        return Err(Error::eval("negative start position in 'substring'", pos));
    }
    let len = ev.force_int(
        &args[1],
        pos,
        "while evaluating the second argument (the substring length) passed to builtins.substring",
    )?;
    if len == 0 {
        let s = ev.force(&args[2])?;
        if let Value::String(s) = s {
            return Ok(Value::String(NixString::with_context(
                b"",
                s.context().cloned(),
            )));
        }
    }
    let s = coerced(
        ev,
        &args[2],
        pos,
        "while evaluating the third argument (the string) passed to builtins.substring",
    )?;
    let bytes = s.as_bytes();
    let start = usize::try_from(start).unwrap_or(usize::MAX);
    let part = if start >= bytes.len() {
        b"".as_slice()
    } else if len < 0 {
        &bytes[start..]
    } else {
        &bytes[start..start.saturating_add(len as usize).min(bytes.len())]
    };
    if part.len() == bytes.len() {
        return Ok(Value::String(s));
    }
    Ok(Value::String(NixString::with_context(
        part,
        s.context().cloned(),
    )))
}

fn string_length<'a>(ev: &mut Evaluator<'a>, args: &[Value<'a>], pos: Pos) -> Result<Value<'a>> {
    let s = coerced(
        ev,
        &args[0],
        pos,
        "while evaluating the argument passed to builtins.stringLength",
    )?;
    Ok(Value::Int(s.len() as i64))
}

fn concat_strings_sep<'a>(
    ev: &mut Evaluator<'a>,
    args: &[Value<'a>],
    pos: Pos,
) -> Result<Value<'a>> {
    let sep = ev.force_string(&args[0], pos, "while evaluating the first argument (the separator string) passed to builtins.concatStringsSep")?;
    let list = ev.force_list(&args[1], pos, "while evaluating the second argument (the list of strings to concat) passed to builtins.concatStringsSep")?;
    // Coerced first, then copied once into a block of the joined length;
    // the parts are the builtin's working set until then.
    let mut held = crate::memory::Held::default();
    ev.hold::<NixString>(&mut held, list.len(), pos)?;
    let mut parts = Vec::with_capacity(list.len());
    let mut context = ContextAcc::default();
    let mut len = 0usize;
    for item in list.as_slice() {
        let s = coerced(
            ev,
            item,
            pos,
            "while evaluating one element of the list of strings to concat passed to builtins.concatStringsSep",
        )?;
        len = len.saturating_add(s.len()).saturating_add(sep.len());
        ev.check_memory(len, pos)?;
        context.add(s.context());
        parts.push(s);
    }
    if parts.len() > 1 {
        context.add(sep.context());
    }
    Ok(Value::String(NixString::joined(
        &parts,
        sep.as_bytes(),
        context.finish(),
    )))
}

/// Replaces, left to right, the first pattern of `from` that matches at
/// each position. As in Nix 2.8, every pattern and then every replacement
/// is forced before the string, used or not, so an error in an unused
/// replacement (a `throw` that `tryEval` catches, too) is the call's error.
fn replace_strings<'a>(ev: &mut Evaluator<'a>, args: &[Value<'a>], pos: Pos) -> Result<Value<'a>> {
    let from = ev.force_list(
        &args[0],
        pos,
        "while evaluating the first argument passed to builtins.replaceStrings",
    )?;
    let to = ev.force_list(
        &args[1],
        pos,
        "while evaluating the second argument passed to builtins.replaceStrings",
    )?;
    if from.len() != to.len() {
        return Err(Error::eval(
            "'from' and 'to' arguments passed to builtins.replaceStrings have different lengths",
            pos,
        ));
    }
    let mut patterns = Vec::with_capacity(from.len());
    for p in from.as_slice() {
        patterns.push(ev.force_string(
            p,
            pos,
            "while evaluating one of the strings to replace passed to builtins.replaceStrings",
        )?);
    }
    let mut replacements = Vec::with_capacity(to.len());
    for r in to.as_slice() {
        replacements.push(ev.force_string(
            r,
            pos,
            "while evaluating one of the replacement strings passed to builtins.replaceStrings",
        )?);
    }
    let s = ev.force_string(
        &args[2],
        pos,
        "while evaluating the third argument passed to builtins.replaceStrings",
    )?;
    let mut context = ContextAcc::default();
    context.add(s.context());
    let s = s.as_bytes();
    let mut out = Vec::with_capacity(s.len());
    // The bytes a pattern starts with. With no empty pattern, a position
    // whose byte starts none matches nothing, so runs of such bytes are
    // copied whole instead of trying every pattern at each.
    let mut starts = [false; 256];
    let mut any_empty = false;
    for pat in &patterns {
        match pat.as_bytes().first() {
            Some(&b) => starts[usize::from(b)] = true,
            None => any_empty = true,
        }
    }
    let mut p = 0;
    while p <= s.len() {
        if !any_empty {
            let run = s[p..]
                .iter()
                .position(|&b| starts[usize::from(b)])
                .unwrap_or(s.len() - p);
            out.extend_from_slice(&s[p..p + run]);
            p += run;
            if p == s.len() {
                break;
            }
        }
        let matched = patterns
            .iter()
            .position(|pat| s[p..].starts_with(pat.as_bytes()));
        match matched {
            Some(k) => {
                let r = &replacements[k];
                out.extend_from_slice(r.as_bytes());
                context.add(r.context());
                let len = patterns[k].len();
                if len == 0 {
                    if let Some(&c) = s.get(p) {
                        out.push(c);
                    }
                    p += 1;
                } else {
                    p += len;
                }
            }
            None => {
                if let Some(&c) = s.get(p) {
                    out.push(c);
                }
                p += 1;
            }
        }
    }
    Ok(Value::String(NixString::with_context(
        &out,
        context.finish(),
    )))
}

fn to_string<'a>(ev: &mut Evaluator<'a>, args: &[Value<'a>], pos: Pos) -> Result<Value<'a>> {
    let s = ev
        .coerce_to_string(&args[0], Coercion::TO_STRING, pos)
        .map_err(|e| {
            e.with_frame(
                pos,
                "while evaluating the first argument passed to builtins.toString",
            )
        })?;
    Ok(Value::String(s))
}

fn base_name_of<'a>(ev: &mut Evaluator<'a>, args: &[Value<'a>], pos: Pos) -> Result<Value<'a>> {
    let s = ev
        .coerce_to_string(&args[0], Coercion::PATH_SEGMENT, pos)
        .map_err(|e| e.with_frame(pos, arg_context(0, "baseNameOf")))?;
    Ok(Value::String(NixString::with_context(
        base_name(s.as_bytes()),
        s.context().cloned(),
    )))
}

/// Nix's `baseNameOf`: the last component; one trailing slash is ignored.
pub fn base_name(path: &[u8]) -> &[u8] {
    if path.is_empty() {
        return path;
    }
    let mut last = path.len() - 1;
    if path[last] == b'/' && last > 0 {
        last -= 1;
    }
    let start = path[..=last]
        .iter()
        .rposition(|&b| b == b'/')
        .map_or(0, |p| p + 1);
    &path[start..=last]
}

fn dir_of<'a>(ev: &mut Evaluator<'a>, args: &[Value<'a>], pos: Pos) -> Result<Value<'a>> {
    let v = ev.force(&args[0])?;
    if let Value::Path(p) = &v {
        let bytes = p.as_bytes();
        let parent = match bytes.iter().rposition(|&b| b == b'/') {
            Some(0) | None => b"/".as_slice(),
            Some(i) => &bytes[..i],
        };
        return Ok(Value::Path(NixString::new(parent)));
    }
    let s = ev
        .coerce_to_string(&v, Coercion::PATH_SEGMENT, pos)
        .map_err(|e| {
            e.with_frame(
                pos,
                "while evaluating the first argument passed to 'builtins.dirOf'",
            )
        })?;
    let bytes = s.as_bytes();
    let parent = match bytes.iter().rposition(|&b| b == b'/') {
        None => b".".as_slice(),
        Some(0) => b"/".as_slice(),
        Some(i) => &bytes[..i],
    };
    Ok(Value::String(NixString::with_context(
        parent,
        s.context().cloned(),
    )))
}

#[cfg(test)]
mod tests {
    use super::base_name;

    #[test]
    fn base_name_like_nix() {
        assert_eq!(base_name(b"/a/b/c"), b"c");
        assert_eq!(base_name(b"/a/b/"), b"b");
        assert_eq!(base_name(b"c"), b"c");
        assert_eq!(base_name(b"/"), b"");
        assert_eq!(base_name(b""), b"");
    }
}
