//! Files: `import`, `scopedImport`, `readFile`, `readDir`, `readFileType`,
//! `pathExists`, `findFile` and the search path, `toPath`. Every read goes
//! through the evaluator's `IoPolicy` (the allowed roots in pure mode).

use super::{arg_context, list_value, plain_string, primop};
use crate::error::{Error, ErrorKind, Result};
use crate::eval::{Coercion, Context, Evaluator};
use crate::source::Pos;
use crate::store::Located;
use crate::symbol::known;
use crate::syntax::canon_path;
use crate::value::{Attr, Attrs, Env, NixString, PrimOp, Thunk, Value};
use std::os::unix::ffi::OsStrExt;

pub static PRIMOPS: &[PrimOp] = &[
    primop!("import", 1, import),
    primop!("scopedImport", 2, scoped_import),
    primop!("readFile", 1, read_file),
    primop!("readDir", 1, read_dir),
    primop!("readFileType", 1, read_file_type),
    primop!("pathExists", 1, path_exists),
    primop!("findFile", 2, find_file),
    primop!("toPath", 1, to_path),
];

/// A path argument: a path, or a string holding an absolute path.
pub fn coerce_to_path<'a>(
    ev: &mut Evaluator<'a>,
    v: &Value<'a>,
    pos: Pos,
    context: impl Context + Copy,
) -> Result<Vec<u8>> {
    let v = ev.force(v).map_err(|e| e.with_frame(pos, context.text()))?;
    if let Value::Path(p) = &v {
        return Ok(p.as_bytes().to_vec());
    }
    let s = ev
        .coerce_to_string(&v, Coercion::PATH_SEGMENT, pos)
        .map_err(|e| e.with_frame(pos, context.text()))?;
    if s.as_bytes().first() != Some(&b'/') {
        return Err(Error::eval(
            format!("string '{}' doesn't represent an absolute path", s.lossy()),
            pos,
        )
        .with_frame(pos, context.text()));
    }
    Ok(canon_path(s.as_bytes()))
}

fn import<'a>(ev: &mut Evaluator<'a>, args: &[Value<'a>], pos: Pos) -> Result<Value<'a>> {
    let path = coerce_to_path(ev, &args[0], pos, "while importing a file")?;
    ev.import(&path, pos)
}

fn scoped_import<'a>(ev: &mut Evaluator<'a>, args: &[Value<'a>], pos: Pos) -> Result<Value<'a>> {
    let scope = ev.force_attrs(&args[0], pos, arg_context(0, "scopedImport"))?;
    let path = coerce_to_path(ev, &args[1], pos, arg_context(1, "scopedImport"))?;
    let file = ev.resolve_expr_path(crate::eval::os_path(&path), pos)?;
    let names: Vec<_> = scope.iter().map(|a| a.name).collect();
    let expr = ev.load_file(&file, Some(&names), pos)?;
    let env = Env::with_values(
        &ev.root_env.clone(),
        scope.iter().map(|a| a.value.clone()).collect::<Vec<_>>(),
    );
    ev.force(&Value::Thunk(Thunk::new(expr, env)))
}

fn read_file<'a>(ev: &mut Evaluator<'a>, args: &[Value<'a>], pos: Pos) -> Result<Value<'a>> {
    let path = coerce_to_path(ev, &args[0], pos, arg_context(0, "readFile"))?;
    let bytes = ev.read_file(crate::eval::os_path(&path), pos)?;
    if bytes.contains(&0) {
        return Err(Error::eval(
            format!(
                "the contents of the file '{}' cannot be represented as a Nix string",
                String::from_utf8_lossy(&path)
            ),
            pos,
        ));
    }
    Ok(Value::string(bytes))
}

fn type_name(t: std::fs::FileType) -> &'static str {
    if t.is_file() {
        "regular"
    } else if t.is_dir() {
        "directory"
    } else if t.is_symlink() {
        "symlink"
    } else {
        "unknown"
    }
}

fn read_dir<'a>(ev: &mut Evaluator<'a>, args: &[Value<'a>], pos: Pos) -> Result<Value<'a>> {
    let path = coerce_to_path(ev, &args[0], pos, arg_context(0, "readDir"))?;
    let entries = ev.read_dir(crate::eval::os_path(&path), pos)?;
    let attrs = entries
        .into_iter()
        .map(|(name, kind)| Attr {
            name: ev.symbols.intern(&name),
            pos: Pos::NONE,
            value: Value::string(type_name(kind)),
        })
        .collect();
    Ok(Value::Attrs(Attrs::from_unsorted(attrs)))
}

fn read_file_type<'a>(ev: &mut Evaluator<'a>, args: &[Value<'a>], pos: Pos) -> Result<Value<'a>> {
    let path = coerce_to_path(ev, &args[0], pos, arg_context(0, "readFileType"))?;
    let file = crate::eval::os_path(&path);
    match ev.file_type(file, pos)? {
        Some(t) => Ok(Value::string(type_name(t))),
        None => Err(Error::new(
            ErrorKind::Io,
            format!(
                "getting status of '{}': No such file or directory",
                file.display()
            ),
            pos,
        )),
    }
}

/// Like Nix in restricted mode, a path outside the allowed roots does not
/// exist as far as `pathExists` is concerned.
fn path_exists<'a>(ev: &mut Evaluator<'a>, args: &[Value<'a>], pos: Pos) -> Result<Value<'a>> {
    let v = ev.force(&args[0])?;
    let must_be_dir = matches!(&v, Value::String(s) if s.as_bytes().ends_with(b"/") || s.as_bytes().ends_with(b"/."));
    let path = coerce_to_path(ev, &v, pos, arg_context(0, "pathExists"))?;
    let file = crate::eval::os_path(&path);
    if ev.check_path(file, pos).is_err() {
        return Ok(Value::Bool(false));
    }
    let exists = match ev.locate(file, pos)? {
        Located::Text(_) => !must_be_dir,
        Located::Host(host) if must_be_dir => chock_store::fs::is_dir(&host),
        Located::Host(host) => chock_store::fs::exists_no_follow(&host),
    };
    Ok(Value::Bool(exists))
}

/// `__nixPath`: the search path as `[{ prefix; path; }]`; empty when pure.
pub fn nix_path_value<'a>(ev: &mut Evaluator<'a>) -> Value<'a> {
    if ev.options.pure {
        return list_value(Vec::new());
    }
    let entries = ev.options.search_path.clone();
    let items = entries
        .into_iter()
        .map(|e| {
            Value::Attrs(Attrs::from_unsorted(vec![
                Attr {
                    name: known::PREFIX,
                    pos: Pos::NONE,
                    value: Value::string(e.prefix),
                },
                Attr {
                    name: known::PATH,
                    pos: Pos::NONE,
                    value: Value::string(e.path),
                },
            ]))
        })
        .collect();
    list_value(items)
}

fn find_file<'a>(ev: &mut Evaluator<'a>, args: &[Value<'a>], pos: Pos) -> Result<Value<'a>> {
    let list = ev.force_list(&args[0], pos, arg_context(0, "findFile"))?;
    let wanted = plain_string(ev, &args[1], pos, arg_context(1, "findFile"))?;
    let wanted = wanted.as_bytes();
    for entry in list.as_slice() {
        let attrs = ev.force_attrs(
            entry,
            pos,
            "while evaluating an element of the list passed to builtins.findFile",
        )?;
        let prefix = match attrs.get(known::PREFIX).cloned() {
            Some(p) => plain_string(
                ev,
                &p,
                pos,
                "while evaluating the `prefix` attribute of an element of the list passed to builtins.findFile",
            )?,
            None => NixString::from(""),
        };
        let Some(path) = attrs.get(known::PATH).cloned() else {
            return Err(ev
                .missing_attr(&attrs, known::PATH, pos)
                .with_frame(pos, "in an element of the __nixPath"));
        };
        let path = ev
            .coerce_to_string(&path, Coercion::PATH_SEGMENT, pos)
            .map_err(|e| e.with_frame(pos, "while evaluating the `path` attribute of an element of the list passed to builtins.findFile"))?;
        let prefix = prefix.as_bytes();
        let suffix: &[u8] = if prefix.is_empty() {
            wanted
        } else if wanted == prefix {
            b""
        } else if wanted.starts_with(prefix) && wanted.get(prefix.len()) == Some(&b'/') {
            &wanted[prefix.len() + 1..]
        } else {
            continue;
        };
        let path_text = path.lossy();
        if path_text.contains("://") {
            // A URL entry would need a fetch; fix has no fetcher.
            continue;
        }
        let base = crate::eval::lexical_absolute(std::path::Path::new(path_text.as_ref()));
        let mut candidate = base.as_os_str().as_bytes().to_vec();
        if !suffix.is_empty() {
            candidate.push(b'/');
            candidate.extend_from_slice(suffix);
        }
        let candidate = canon_path(&candidate);
        let file = crate::eval::os_path(&candidate);
        ev.check_path(file, pos)?;
        if chock_store::fs::exists_no_follow(file) {
            return Ok(Value::Path(NixString::from(candidate)));
        }
    }
    if let Some(rest) = wanted.strip_prefix(b"nix/") {
        let mut path = crate::eval::CORE_PACKAGES.to_vec();
        path.extend_from_slice(rest);
        return Ok(Value::Path(NixString::from(path)));
    }
    let name = String::from_utf8_lossy(wanted);
    let message = if ev.options.pure {
        format!("cannot look up '<{name}>' in pure evaluation mode (use '--impure' to override)")
    } else {
        format!("file '{name}' was not found in the Nix search path (add it using $NIX_PATH or -I)")
    };
    Err(Error::new(ErrorKind::Throw, message, pos))
}

fn to_path<'a>(ev: &mut Evaluator<'a>, args: &[Value<'a>], pos: Pos) -> Result<Value<'a>> {
    let path = coerce_to_path(ev, &args[0], pos, arg_context(0, "toPath"))?;
    Ok(Value::string(path))
}
