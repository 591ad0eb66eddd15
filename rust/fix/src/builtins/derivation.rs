//! `derivationStrict`: a set of attributes becomes a derivation, its
//! `.drv` path and its output paths, computed exactly as Nix computes
//! them and recorded (not written) in the evaluation's registry.
//! `derivation` itself is a Nix function around it
//! (`corepkgs/derivation.nix`), as in Nix.

use super::{arg_context, json::to_json_with_context, primop};
use crate::error::{Error, Result};
use crate::eval::{Coercion, Evaluator};
use crate::source::Pos;
use crate::value::{Attr, Attrs, Context, ContextAcc, ContextElem, NixString, PrimOp, Value};
use chock_store::derivation::read_derivation;
use chock_store::store_path::{FileIngestionMethod, FixedOutputHash};
use chock_store::{Derivation, DerivationOutput, Hash, HashAlgo, StorePath};
use std::collections::{BTreeMap, BTreeSet};
use std::rc::Rc;

pub static PRIMOPS: &[PrimOp] = &[primop!("derivationStrict", 1, derivation_strict)];

/// Attribute values: numbers, Booleans and lists become strings, paths are
/// copied to the store (Nix's `coerceToString(..., coerceMore, copyToStore)`).
const ATTRIBUTE: Coercion = Coercion {
    more: true,
    copy_to_store: true,
};

/// Attributes whose effect `__structuredAttrs` replaces with `outputChecks`.
const LEGACY_CHECKS: [&str; 6] = [
    "allowedReferences",
    "allowedRequisites",
    "disallowedReferences",
    "disallowedRequisites",
    "maxSize",
    "maxClosureSize",
];

/// How the output of a fixed-output derivation is hashed.
#[derive(Clone, Copy)]
enum HashMode {
    Flat,
    Recursive,
}

/// What the attributes say, gathered while they are read.
struct Building {
    drv: Derivation,
    context: ContextAcc,
    outputs: Vec<String>,
    output_hash: Option<String>,
    output_hash_algo: Option<String>,
    hash_mode: Option<HashMode>,
}

fn derivation_strict<'a>(
    ev: &mut Evaluator<'a>,
    args: &[Value<'a>],
    pos: Pos,
) -> Result<Value<'a>> {
    let attrs = ev.force_attrs(&args[0], pos, arg_context(0, "derivationStrict"))?;
    let name_sym = ev.sym("name");
    let Some(name_attr) = attrs.get_attr(name_sym).cloned() else {
        return Err(Error::eval("attribute 'name' missing", pos).with_frame(
            pos,
            "in the attrset passed as argument to builtins.derivationStrict",
        ));
    };
    let name = ev.force_string(
        &name_attr.value,
        name_attr.pos,
        "while evaluating the `name` attribute passed to builtins.derivationStrict",
    )?;
    let name = name.lossy().into_owned();
    build(ev, &attrs, &name, pos).map_err(|e| {
        e.with_frame(
            name_attr.pos,
            format!("while evaluating derivation '{name}'"),
        )
    })
}

fn build<'a>(ev: &mut Evaluator<'a>, attrs: &Attrs<'a>, name: &str, pos: Pos) -> Result<Value<'a>> {
    check_name(name, pos)?;
    let structured = match attrs.get(ev.sym("__structuredAttrs")).cloned() {
        Some(v) => ev.force_bool(
            &v,
            pos,
            "while evaluating the `__structuredAttrs` attribute passed to builtins.derivationStrict",
        )?,
        None => false,
    };
    let ignore_nulls = match attrs.get(ev.sym("__ignoreNulls")).cloned() {
        Some(v) => ev.force_bool(
            &v,
            pos,
            "while evaluating the `__ignoreNulls` attribute passed to builtins.derivationStrict",
        )?,
        None => false,
    };
    let mut b = Building {
        drv: Derivation::new(name),
        context: ContextAcc::default(),
        outputs: vec!["out".to_string()],
        output_hash: None,
        output_hash_algo: None,
        hash_mode: None,
    };
    let mut json = structured.then(Vec::<u8>::new);
    for attr in attrs.lexicographic(&ev.symbols) {
        let key = ev.symbols.text(attr.name).into_owned();
        if key == "__ignoreNulls" {
            continue;
        }
        read_attribute(ev, &mut b, &key, attr, ignore_nulls, json.as_mut()).map_err(|e| {
            e.with_frame(
                attr.pos,
                format!("while evaluating attribute '{key}' of derivation '{name}'"),
            )
        })?;
    }
    if let Some(mut json) = json {
        if json.is_empty() {
            json.push(b'{');
        }
        json.push(b'}');
        b.drv
            .env
            .insert("__json".to_string(), utf8(json, "__json", pos)?);
    }
    let context = std::mem::take(&mut b.context).finish();
    add_inputs(ev, &mut b.drv, context.as_ref(), pos)?;
    if b.drv.builder.is_empty() {
        return Err(Error::eval("required attribute 'builder' missing", pos));
    }
    if b.drv.platform.is_empty() {
        return Err(Error::eval("required attribute 'system' missing", pos));
    }
    if name.ends_with(".drv") {
        return Err(Error::eval(
            "derivation names are allowed to end in '.drv' only if they produce a single derivation file",
            pos,
        ));
    }
    finish(ev, b, pos)
}

/// Reads one attribute into the derivation.
fn read_attribute<'a>(
    ev: &mut Evaluator<'a>,
    b: &mut Building,
    key: &str,
    attr: &Attr<'a>,
    ignore_nulls: bool,
    json: Option<&mut Vec<u8>>,
) -> Result<()> {
    let pos = attr.pos;
    let value = ev.force(&attr.value)?;
    if ignore_nulls && matches!(value, Value::Null) {
        return Ok(());
    }
    match key {
        "__contentAddressed" if ev.force_bool(&value, pos, "")? => {
            return Err(feature_disabled("ca-derivations", pos));
        }
        "__impure" if ev.force_bool(&value, pos, "")? => {
            return Err(feature_disabled("impure-derivations", pos));
        }
        "args" => {
            let list = ev.force_list(&value, pos, "")?;
            for item in list.as_slice() {
                let s = ev.coerce_to_string(item, ATTRIBUTE, pos).map_err(|e| {
                    e.with_frame(pos, "while evaluating an element of the argument list")
                })?;
                b.context.add(s.context());
                b.drv.args.push(utf8(s.as_bytes().to_vec(), key, pos)?);
            }
            return Ok(());
        }
        _ => {}
    }
    match json {
        Some(json) => read_structured(ev, b, key, &value, pos, json),
        None => {
            let s = ev.coerce_to_string(&value, ATTRIBUTE, pos)?;
            b.context.add(s.context());
            let text = utf8(s.as_bytes().to_vec(), key, pos)?;
            match key {
                "builder" => b.drv.builder = text.clone(),
                "system" => b.drv.platform = text.clone(),
                "outputHash" => b.output_hash = Some(text.clone()),
                "outputHashAlgo" => b.output_hash_algo = Some(text.clone()),
                "outputHashMode" => b.hash_mode = Some(hash_mode(&text, pos)?),
                "outputs" => {
                    b.outputs = outputs(text.split_ascii_whitespace().map(str::to_string), pos)?
                }
                _ => {}
            }
            b.drv.env.insert(key.to_string(), text);
            Ok(())
        }
    }
}

/// With `__structuredAttrs`, every attribute goes into `__json`; a few are
/// also read as plain strings.
fn read_structured<'a>(
    ev: &mut Evaluator<'a>,
    b: &mut Building,
    key: &str,
    value: &Value<'a>,
    pos: Pos,
    json: &mut Vec<u8>,
) -> Result<()> {
    if key == "__structuredAttrs" {
        return Ok(());
    }
    if LEGACY_CHECKS.contains(&key) {
        ev.emit(&format!(
            "warning: 'structuredAttrs' disables the effect of the derivation attribute '{key}'; use 'outputChecks.<output>.{key}' instead"
        ));
    }
    let (text, context) = to_json_with_context(ev, value, pos)?;
    b.context.add(context.as_ref());
    json.push(if json.is_empty() { b'{' } else { b',' });
    let mut quoted = Vec::new();
    super::json::json_string(key.as_bytes(), &mut quoted, pos)?;
    json.extend_from_slice(&quoted);
    json.push(b':');
    json.extend_from_slice(&text);
    let plain = |ev: &mut Evaluator<'a>| -> Result<String> {
        let s = ev.force_string(value, pos, "")?;
        utf8(s.as_bytes().to_vec(), key, pos)
    };
    match key {
        "builder" => {
            let s = ev.force_string(value, pos, "")?;
            b.context.add(s.context());
            b.drv.builder = utf8(s.as_bytes().to_vec(), key, pos)?;
        }
        "system" => b.drv.platform = plain(ev)?,
        "outputHash" => b.output_hash = Some(plain(ev)?),
        "outputHashAlgo" => b.output_hash_algo = Some(plain(ev)?),
        "outputHashMode" => b.hash_mode = Some(hash_mode(&plain(ev)?, pos)?),
        "outputs" => {
            let list = ev.force_list(value, pos, "")?;
            let mut names = Vec::with_capacity(list.len());
            for item in list.as_slice() {
                names.push(ev.force_string(item, pos, "")?.lossy().into_owned());
            }
            b.outputs = outputs(names.into_iter(), pos)?;
        }
        _ => {}
    }
    Ok(())
}

fn hash_mode(text: &str, pos: Pos) -> Result<HashMode> {
    match text {
        "recursive" => Ok(HashMode::Recursive),
        "flat" => Ok(HashMode::Flat),
        "text" => Err(feature_disabled("dynamic-derivations", pos)),
        other => Err(Error::eval(
            format!("invalid value '{other}' for 'outputHashMode' attribute"),
            pos,
        )),
    }
}

fn outputs(names: impl Iterator<Item = String>, pos: Pos) -> Result<Vec<String>> {
    let mut seen = Vec::new();
    for name in names {
        if seen.contains(&name) {
            return Err(Error::eval(
                format!("duplicate derivation output '{name}'"),
                pos,
            ));
        }
        if name == "drvPath" {
            return Err(Error::eval(
                format!("invalid derivation output name '{name}'"),
                pos,
            ));
        }
        seen.push(name);
    }
    if seen.is_empty() {
        return Err(Error::eval(
            "derivation cannot have an empty set of outputs",
            pos,
        ));
    }
    Ok(seen)
}

fn feature_disabled(feature: &str, pos: Pos) -> Error {
    Error::eval(
        format!(
            "experimental Nix feature '{feature}' is disabled; add '--extra-experimental-features {feature}' to enable it"
        ),
        pos,
    )
}

fn utf8(bytes: Vec<u8>, key: &str, pos: Pos) -> Result<String> {
    String::from_utf8(bytes).map_err(|_| {
        Error::eval(
            format!("the attribute '{key}' of a derivation is not valid UTF-8, which fix cannot write into a .drv file"),
            pos,
        )
    })
}

/// Nix's rules for the name of a store path, with its message.
pub(crate) fn check_name(name: &str, pos: Pos) -> Result<()> {
    let problem = if name.is_empty() {
        Some("name must not be empty".to_string())
    } else if name.len() > 211 {
        Some(format!(
            "name '{name}' must be no longer than 211 characters"
        ))
    } else if name.starts_with('.')
        && (name == "." || name == ".." || name.starts_with(".-") || name.starts_with("..-"))
    {
        Some(format!("name '{name}' is not valid"))
    } else {
        name.chars()
            .find(|&c| !(c.is_ascii_alphanumeric() || "+-._?=".contains(c)))
            .map(|c| format!("name '{name}' contains illegal character '{c}'"))
    };
    match problem {
        Some(p) => Err(Error::eval(
            format!("invalid derivation name: {p}. Please pass a different 'name'."),
            pos,
        )),
        None => Ok(()),
    }
}

fn store_path(path: &str, pos: Pos) -> Result<StorePath> {
    StorePath::from_absolute_path(path).map_err(|e| {
        Error::eval(
            format!("string context names '{path}', which is not a store path: {e}"),
            pos,
        )
    })
}

/// Everything in the attributes' context becomes an input: a plain path a
/// source, an output an input derivation, and a whole derivation (`=`)
/// its closure with every output.
fn add_inputs(
    ev: &mut Evaluator<'_>,
    drv: &mut Derivation,
    context: Option<&Context>,
    pos: Pos,
) -> Result<()> {
    let Some(context) = context else {
        return Ok(());
    };
    for elem in context.elems() {
        match elem {
            ContextElem::Opaque(p) => {
                drv.input_srcs.insert(store_path(p, pos)?);
            }
            ContextElem::Built { drv: d, output } => {
                drv.input_drvs
                    .entry(store_path(d, pos)?)
                    .or_default()
                    .insert(output.to_string());
            }
            ContextElem::DrvDeep(d) => add_closure(ev, drv, store_path(d, pos)?, pos)?,
        }
    }
    Ok(())
}

fn add_closure(
    ev: &mut Evaluator<'_>,
    drv: &mut Derivation,
    root: StorePath,
    pos: Pos,
) -> Result<()> {
    let mut todo = vec![root];
    let mut seen = BTreeSet::new();
    while let Some(path) = todo.pop() {
        if !seen.insert(path.clone()) {
            continue;
        }
        drv.input_srcs.insert(path.clone());
        if path.is_derivation() {
            let (outputs, references) = derivation_edges(ev, &path, pos)?;
            drv.input_drvs.insert(path.clone(), outputs);
            todo.extend(references);
        } else if let Some(text) = ev.store.registry.texts.get(&path) {
            todo.extend(text.references.iter().cloned());
        }
    }
    Ok(())
}

/// The output names and references of a derivation this evaluation
/// produced (read in place), or of one already in the store.
fn derivation_edges(
    ev: &Evaluator<'_>,
    path: &StorePath,
    pos: Pos,
) -> Result<(BTreeSet<String>, BTreeSet<StorePath>)> {
    let edges = |d: &Derivation| (d.outputs.keys().cloned().collect(), d.references());
    if let Some(d) = ev.store.registry.derivations.get(path) {
        return Ok(edges(d));
    }
    read_derivation(path)
        .map(|d| edges(&d))
        .map_err(|e| Error::eval(format!("reading derivation '{path}': {e}"), pos))
}

/// Computes the output paths and the `.drv` path, and records the result.
fn finish<'a>(ev: &mut Evaluator<'a>, b: Building, pos: Pos) -> Result<Value<'a>> {
    let Building {
        mut drv,
        outputs,
        output_hash,
        output_hash_algo,
        hash_mode,
        ..
    } = b;
    let store_err = |e: chock_store::DerivationError| Error::eval(e.to_string(), pos);
    let mut load = |p: &StorePath| read_derivation(p);
    if let Some(hash) = output_hash {
        if outputs != ["out"] {
            return Err(Error::eval(
                "multiple outputs are not supported in fixed-output derivations",
                pos,
            ));
        }
        let hash = parse_output_hash(ev, &hash, output_hash_algo.as_deref(), pos)?;
        let method = match hash_mode.unwrap_or(HashMode::Flat) {
            HashMode::Flat => FileIngestionMethod::Flat,
            HashMode::Recursive => FileIngestionMethod::Recursive,
        };
        drv.set_fixed_output(FixedOutputHash { method, hash })
            .map_err(store_err)?;
    } else {
        for output in &outputs {
            drv.outputs
                .insert(output.clone(), DerivationOutput::Deferred);
        }
        drv.fill_in_output_paths(&mut ev.store.hashes, &mut load)
            .map_err(store_err)?;
    }
    // Serialised once: its size is checked and its hash names the `.drv`.
    let aterm = drv.to_aterm();
    crate::store::check_size(
        &format!("the derivation '{}'", drv.name),
        aterm.len() as u64,
        ev.options.max_object_bytes,
        pos,
    )?;
    let drv_path =
        chock_store::store_path::text_path(&format!("{}.drv", drv.name), &aterm, &drv.references())
            .map_err(|e| Error::eval(e.to_string(), pos))?;
    drop(aterm);
    let own = ev
        .store
        .hashes
        .hash_modulo(&drv, false, &mut load)
        .map_err(store_err)?;
    ev.store.hashes.insert(drv_path.clone(), own);
    let drv_text: Rc<str> = Rc::from(drv_path.to_absolute().as_str());
    let mut result = Vec::with_capacity(drv.outputs.len() + 1);
    result.push(Attr {
        name: ev.sym("drvPath"),
        pos: Pos::NONE,
        value: Value::String(NixString::with_context(
            drv_text.as_bytes(),
            Some(Context::one(ContextElem::DrvDeep(drv_text.clone()))),
        )),
    });
    let mut output_paths = BTreeMap::new();
    for name in drv.outputs.keys() {
        if let Some(path) = drv.output_path(name).map_err(store_err)? {
            output_paths.insert(name.clone(), path.to_absolute());
        }
    }
    for (name, path) in output_paths {
        ev.store.outputs.insert(path.clone(), drv_path.clone());
        let context = Context::one(ContextElem::Built {
            drv: drv_text.clone(),
            output: Rc::from(name.as_str()),
        });
        result.push(Attr {
            name: ev.sym(&name),
            pos: Pos::NONE,
            value: Value::String(NixString::with_context(path.as_bytes(), Some(context))),
        });
    }
    ev.store.registry.derivations.insert(drv_path, drv);
    Ok(Value::Attrs(Attrs::from_unsorted(result)))
}

/// `outputHash` in any form Nix takes (base16, nix32, base64, SRI,
/// `algo:hash`); an empty one stands for the all-zero hash, with Nix's
/// warning, so the build reports the right one.
fn parse_output_hash(ev: &Evaluator<'_>, text: &str, algo: Option<&str>, pos: Pos) -> Result<Hash> {
    let algo = match algo.filter(|a| !a.is_empty()) {
        Some(a) => Some(
            a.parse::<HashAlgo>()
                .map_err(|e| Error::eval(e.to_string(), pos))?,
        ),
        None => None,
    };
    if text.is_empty() {
        let Some(algo) = algo else {
            return Err(Error::eval("empty hash requires explicit hash type", pos));
        };
        let zero = Hash::from_bytes(algo, &[0u8; 64][..algo.size()])
            .ok_or_else(|| Error::eval("cannot make an empty hash", pos))?;
        ev.emit(&format!(
            "warning: found empty hash, assuming '{}'",
            zero.to_sri()
        ));
        return Ok(zero);
    }
    Hash::parse(text, algo).map_err(|e| Error::eval(format!("invalid outputHash: {e}"), pos))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_nix_rules() {
        assert!(check_name("hello-2.12", Pos::NONE).is_ok());
        assert!(check_name("~jiggle~", Pos::NONE).is_err());
        assert!(check_name("", Pos::NONE).is_err());
        assert!(check_name(&"x".repeat(212), Pos::NONE).is_err());
    }

    #[test]
    fn outputs_refuse_duplicates_and_drv_path() {
        let names = |v: &[&str]| {
            v.iter()
                .map(|s| s.to_string())
                .collect::<Vec<_>>()
                .into_iter()
        };
        assert!(outputs(names(&["out", "dev"]), Pos::NONE).is_ok());
        assert!(outputs(names(&["out", "out"]), Pos::NONE).is_err());
        assert!(outputs(names(&["drvPath"]), Pos::NONE).is_err());
        assert!(outputs(names(&[]), Pos::NONE).is_err());
    }
}
