//! Builtins that put things in the store (`toFile`, `path`,
//! `filterSource`) or name what is there (`storePath`). Nothing is
//! written: each computes the path Nix would give the object and records
//! the object in the evaluation's registry. Fetchers never run inside an
//! evaluation.

use super::{arg_context, files::coerce_to_path, plain_string, primop};
use crate::error::{Error, ErrorKind, Result};
use crate::eval::{Evaluator, os_path};
use crate::source::Pos;
use crate::store::nar::{WalkError, hash_filtered};
use crate::store::{Located, check_size};
use crate::value::{Context, ContextElem, NixString, PrimOp, Value};
use chock_store::registry::{SourceContents, TextFile};
use chock_store::store_path::{self, FileIngestionMethod};
use chock_store::{Hash, HashAlgo, StorePath};
use std::collections::BTreeSet;
use std::path::Path;
use std::rc::Rc;

pub static PRIMOPS: &[PrimOp] = &[
    primop!("storePath", 1, store_path_op),
    primop!("toFile", 2, to_file),
    primop!("filterSource", 2, filter_source),
    primop!("path", 1, path_op),
    primop!("outputOf", 2, |_, _, p| Err(Error::eval(
        "experimental Nix feature 'dynamic-derivations' is disabled; add '--extra-experimental-features dynamic-derivations' to enable it",
        p
    ))),
    primop!("fetchurl", 1, |ev, a, p| fetcher(ev, a, p, "fetchurl")),
    primop!("fetchTarball", 1, |ev, a, p| fetcher(
        ev,
        a,
        p,
        "fetchTarball"
    )),
    primop!("fetchGit", 1, |ev, a, p| fetcher(ev, a, p, "fetchGit")),
    primop!("fetchMercurial", 1, |ev, a, p| fetcher(
        ev,
        a,
        p,
        "fetchMercurial"
    )),
    primop!("fetchTree", 1, |ev, a, p| fetcher(ev, a, p, "fetchTree")),
    primop!("fetchClosure", 1, |ev, a, p| fetcher(
        ev,
        a,
        p,
        "fetchClosure"
    )),
];

/// A fetcher: its argument is read as Nix reads it (the value, and each
/// attribute of a set), so what would fail before a fetch fails the same
/// way; then the fetch is refused.
fn fetcher<'a>(
    ev: &mut Evaluator<'a>,
    args: &[Value<'a>],
    pos: Pos,
    name: &str,
) -> Result<Value<'a>> {
    // The attributes fetchers with a fixed set of them accept; the others
    // take any and report what they cannot use later.
    let accepted: &[&str] = match name {
        "fetchurl" | "fetchTarball" => &["url", "sha256", "name"],
        "fetchMercurial" => &["url", "rev", "name"],
        _ => &[],
    };
    if let Value::Attrs(attrs) = ev.force(&args[0])? {
        if let Some(other) = attrs
            .iter()
            .find(|a| !accepted.is_empty() && !accepted.contains(&ev.symbols.text(a.name).as_ref()))
        {
            return Err(Error::eval(
                format!(
                    "unsupported argument '{}' to '{name}'",
                    ev.symbols.text(other.name)
                ),
                pos,
            ));
        }
        for a in attrs.iter() {
            ev.force(&a.value)?;
        }
    }
    if ev.options.pure {
        return Err(Error::new(
            ErrorKind::Refused,
            format!(
                "builtins.{name} is refused in pure evaluation mode: an evaluation never fetches; fetch inputs before evaluating"
            ),
            pos,
        ));
    }
    Err(Error::new(
        ErrorKind::NotYet,
        format!(
            "builtins.{name} is not supported: fix has no fetcher; inputs must already be in the store"
        ),
        pos,
    ))
}

/// A string naming a store object, with that object as its context.
pub(crate) fn store_string(path: &str) -> NixString {
    NixString::with_context(
        path.as_bytes(),
        Some(Context::one(ContextElem::Opaque(Rc::from(path)))),
    )
}

fn store_error(e: impl std::fmt::Display, pos: Pos) -> Error {
    Error::eval(e.to_string(), pos)
}

fn store_path_op<'a>(ev: &mut Evaluator<'a>, args: &[Value<'a>], pos: Pos) -> Result<Value<'a>> {
    if ev.options.pure {
        return Err(Error::new(
            ErrorKind::Refused,
            "'builtins.storePath' is not allowed in pure evaluation mode",
            pos,
        ));
    }
    let path = coerce_to_path(ev, &args[0], pos, arg_context(0, "storePath"))?;
    let text = String::from_utf8_lossy(&path).into_owned();
    let inside = text
        .strip_prefix(ev.options.store_dir.as_str())
        .and_then(|rest| rest.strip_prefix('/'))
        .ok_or_else(|| Error::eval(format!("path '{text}' is not in the Nix store"), pos))?;
    let base = inside.split('/').next().unwrap_or_default();
    let object = StorePath::from_base_name(base).map_err(|e| store_error(e, pos))?;
    let context = Context::one(ContextElem::Opaque(Rc::from(object.to_absolute().as_str())));
    Ok(Value::String(NixString::with_context(
        text.as_bytes(),
        Some(context),
    )))
}

fn to_file<'a>(ev: &mut Evaluator<'a>, args: &[Value<'a>], pos: Pos) -> Result<Value<'a>> {
    let name = plain_string(ev, &args[0], pos, arg_context(0, "toFile"))?;
    let name = name.lossy().into_owned();
    let contents = ev.force_string(&args[1], pos, arg_context(1, "toFile"))?;
    let mut references = BTreeSet::new();
    for elem in contents.context().map(Context::elems).unwrap_or_default() {
        match elem {
            ContextElem::Opaque(p) => {
                references
                    .insert(StorePath::from_absolute_path(p).map_err(|e| store_error(e, pos))?);
            }
            other => {
                return Err(Error::eval(
                    format!(
                        "in 'toFile': the file named '{name}' must not contain a reference to a derivation but contains ({})",
                        other.encoded()
                    ),
                    pos,
                ));
            }
        }
    }
    check_size(
        &format!("the file '{name}'"),
        contents.len() as u64,
        ev.options.max_object_bytes,
        pos,
    )?;
    let path = store_path::text_path(&name, contents.as_bytes(), &references)
        .map_err(|e| store_error(e, pos))?;
    let result = store_string(&path.to_absolute());
    ev.store.add_text(
        path,
        TextFile {
            name,
            contents: contents.as_bytes().to_vec(),
            references,
        },
    );
    Ok(Value::String(result))
}

fn filter_source<'a>(ev: &mut Evaluator<'a>, args: &[Value<'a>], pos: Pos) -> Result<Value<'a>> {
    let path = coerce_to_path(ev, &args[1], pos, arg_context(1, "filterSource"))?;
    let filter = ev.force(&args[0])?;
    let name = String::from_utf8_lossy(super::base_name(&path)).into_owned();
    add_path(ev, &path, &name, Some(filter), true, None, pos)
}

fn path_op<'a>(ev: &mut Evaluator<'a>, args: &[Value<'a>], pos: Pos) -> Result<Value<'a>> {
    let attrs = ev.force_attrs(&args[0], pos, arg_context(0, "path"))?;
    let mut path = None;
    let mut name = None;
    let mut filter = None;
    let mut recursive = true;
    let mut expected = None;
    for attr in attrs.lexicographic(&ev.symbols) {
        let key = ev.symbols.text(attr.name).into_owned();
        match key.as_str() {
            "path" => {
                path = Some(coerce_to_path(
                    ev,
                    &attr.value,
                    attr.pos,
                    "while evaluating the 'path' attribute passed to builtins.path",
                )?)
            }
            "name" => {
                name = Some(
                    ev.force_string(
                        &attr.value,
                        attr.pos,
                        "while evaluating the `name` attribute passed to builtins.path",
                    )?
                    .lossy()
                    .into_owned(),
                )
            }
            "filter" => filter = Some(ev.force(&attr.value)?),
            "recursive" => {
                recursive = ev.force_bool(
                    &attr.value,
                    attr.pos,
                    "while evaluating the `recursive` attribute passed to builtins.path",
                )?
            }
            "sha256" => {
                let text = ev.force_string(
                    &attr.value,
                    attr.pos,
                    "while evaluating the `sha256` attribute passed to builtins.path",
                )?;
                let hash = Hash::parse(&text.lossy(), Some(HashAlgo::Sha256))
                    .map_err(|e| store_error(e, attr.pos))?;
                expected = Some(hash);
            }
            other => {
                return Err(Error::eval(
                    format!("unsupported argument '{other}' to 'addPath'"),
                    attr.pos,
                )
                .with_frame(pos, "while evaluating the argument passed to builtins.path"));
            }
        }
    }
    let Some(path) = path else {
        return Err(Error::eval(
            "missing required 'path' attribute in the first argument to builtins.path",
            pos,
        ));
    };
    let name =
        name.unwrap_or_else(|| String::from_utf8_lossy(super::base_name(&path)).into_owned());
    add_path(ev, &path, &name, filter, recursive, expected, pos)
}

/// `builtins.path` and `filterSource`: the path of a copy of `path` under
/// `name`, filtered, hashed as a tree (recursive) or as the file's bytes.
fn add_path<'a>(
    ev: &mut Evaluator<'a>,
    path: &[u8],
    name: &str,
    filter: Option<Value<'a>>,
    recursive: bool,
    expected: Option<Hash>,
    pos: Pos,
) -> Result<Value<'a>> {
    super::derivation::check_name(name, pos)?;
    let logical = os_path(path);
    ev.check_path(logical, pos)?;
    let host = match ev.store.locate(&ev.options.store_dir, logical, pos)? {
        Located::Host(p) => p,
        Located::Text(_) => {
            return Err(Error::eval(
                format!(
                    "builtins.path cannot copy '{}', a file this evaluation would write itself",
                    logical.display()
                ),
                pos,
            ));
        }
    };
    let max = ev.options.max_object_bytes;
    let (store_path, contents) = if recursive {
        let walked = match &filter {
            Some(f) => walk_filtered(ev, logical, &host, f.clone(), max, pos)?,
            None => walk_filtered_with(ev, logical, &host, max, pos, &mut |_, _, _| Ok(true))?,
        };
        let kept = filter.is_some().then_some(walked.kept);
        let store_path = store_path::make_source_path(name, &walked.hash, &BTreeSet::new())
            .map_err(|e| store_error(e, pos))?;
        (
            store_path,
            SourceContents::Tree {
                path: host.clone(),
                kept,
            },
        )
    } else {
        let bytes = chock_store::fs::read(&host).map_err(|e| {
            Error::new(
                ErrorKind::Io,
                format!("opening file '{}': {e}", logical.display()),
                pos,
            )
        })?;
        check_size(
            &format!("the file '{}'", logical.display()),
            bytes.len() as u64,
            max,
            pos,
        )?;
        let hash = Hash::sha256(&bytes);
        let store_path = store_path::make_fixed_output_path(
            FileIngestionMethod::Flat,
            &hash,
            name,
            &BTreeSet::new(),
            false,
        )
        .map_err(|e| store_error(e, pos))?;
        (
            store_path,
            SourceContents::Flat {
                path: host.clone(),
                algo: HashAlgo::Sha256,
            },
        )
    };
    if let Some(expected) = expected {
        let method = if recursive {
            FileIngestionMethod::Recursive
        } else {
            FileIngestionMethod::Flat
        };
        let wanted =
            store_path::make_fixed_output_path(method, &expected, name, &BTreeSet::new(), false)
                .map_err(|e| store_error(e, pos))?;
        if wanted != store_path {
            return Err(Error::eval(
                format!(
                    "store path mismatch in (possibly filtered) path added from '{}': the sha256 given puts it at {wanted}, its contents at {store_path}",
                    logical.display()
                ),
                pos,
            ));
        }
    }
    let result = store_string(&store_path.to_absolute());
    ev.store.add_source(store_path, name.to_string(), contents);
    Ok(Value::String(result))
}

/// Walks `host` (read as `logical`), asking the Nix function `filter`.
fn walk_filtered<'a>(
    ev: &mut Evaluator<'a>,
    logical: &Path,
    host: &Path,
    filter: Value<'a>,
    max: u64,
    pos: Pos,
) -> Result<crate::store::nar::Filtered> {
    walk_filtered_with(ev, logical, host, max, pos, &mut |ev, path, kind| {
        let path = Value::string(path.as_os_str().as_encoded_bytes());
        let verdict = ev.call_n(filter.clone(), &[path, Value::string(kind)], pos)?;
        ev.force_bool(
            &verdict,
            pos,
            "while evaluating the return value of the path filter function",
        )
    })
}

type FilterFn<'f, 'a> = dyn FnMut(&mut Evaluator<'a>, &Path, &'static str) -> Result<bool> + 'f;

fn walk_filtered_with<'a>(
    ev: &mut Evaluator<'a>,
    logical: &Path,
    host: &Path,
    max: u64,
    pos: Pos,
    filter: &mut FilterFn<'_, 'a>,
) -> Result<crate::store::nar::Filtered> {
    let mut ask = |entry: &Path, kind: &'static str| -> Result<bool> {
        // The filter sees the path as the program wrote it.
        let shown = match entry.strip_prefix(host) {
            Ok(rest) => logical.join(rest),
            Err(_) => entry.to_path_buf(),
        };
        filter(ev, &shown, kind)
    };
    match hash_filtered(host, max, &mut ask) {
        Ok(walked) => Ok(walked),
        Err(WalkError::Filter(e)) => Err(e),
        Err(WalkError::Io(p, e)) => Err(Error::new(
            ErrorKind::Io,
            format!("reading '{}' to add it to the store: {e}", p.display()),
            pos,
        )),
        Err(WalkError::TooLarge(size)) => {
            Err(
                check_size(&format!("'{}'", logical.display()), size, max, pos)
                    .err()
                    .unwrap_or_else(|| Error::eval("too large", pos)),
            )
        }
    }
}
