//! `hashString`, `hashFile` and `convertHash`, with chock-store's hashes
//! (the same code that computes store paths).

use super::{arg_context, plain_string, primop};
use crate::error::{Error, Result};
use crate::eval::Evaluator;
use crate::source::Pos;
use crate::symbol::Sym;
use crate::value::{Attrs, PrimOp, Value};
use chock_store::{Encoding, Hash, HashAlgo};

pub static PRIMOPS: &[PrimOp] = &[
    primop!("hashString", 2, hash_string),
    primop!("hashFile", 2, hash_file),
    primop!("convertHash", 1, convert_hash),
    primop!("placeholder", 1, placeholder),
];

fn algo(name: &[u8], pos: Pos) -> Result<HashAlgo> {
    let text = String::from_utf8_lossy(name);
    text.parse::<HashAlgo>().map_err(|_| {
        Error::eval(
            format!("unknown hash algorithm '{text}', expect 'md5', 'sha1', 'sha256', or 'sha512'"),
            pos,
        )
    })
}

fn hash_string<'a>(ev: &mut Evaluator<'a>, args: &[Value<'a>], pos: Pos) -> Result<Value<'a>> {
    let name = plain_string(ev, &args[0], pos, arg_context(0, "hashString"))?;
    let algo = algo(name.as_bytes(), pos)?;
    let s = ev.force_string(&args[1], pos, arg_context(1, "hashString"))?;
    Ok(Value::string(Hash::digest(algo, s.as_bytes()).to_base16()))
}

fn hash_file<'a>(ev: &mut Evaluator<'a>, args: &[Value<'a>], pos: Pos) -> Result<Value<'a>> {
    let name = plain_string(ev, &args[0], pos, arg_context(0, "hashFile"))?;
    let algo = algo(name.as_bytes(), pos)?;
    let path = super::files::coerce_to_path(ev, &args[1], pos, arg_context(1, "hashFile"))?;
    let bytes = ev.read_file(crate::eval::os_path(&path), pos)?;
    Ok(Value::string(Hash::digest(algo, bytes).to_base16()))
}

fn string_attr<'a>(
    ev: &mut Evaluator<'a>,
    attrs: &Attrs<'a>,
    name: Sym,
    pos: Pos,
) -> Result<Option<String>> {
    let Some(v) = attrs.get(name).cloned() else {
        return Ok(None);
    };
    let what = format!(
        "while evaluating the attribute '{}' passed to builtins.convertHash",
        ev.symbols.text(name)
    );
    let s = ev.force_string(&v, pos, &what)?;
    Ok(Some(s.lossy().into_owned()))
}

/// `convertHash { hash; toHashFormat; hashAlgo ? null; }`.
fn convert_hash<'a>(ev: &mut Evaluator<'a>, args: &[Value<'a>], pos: Pos) -> Result<Value<'a>> {
    let attrs = ev.force_attrs(&args[0], pos, arg_context(0, "convertHash"))?;
    let (hash_sym, format_sym, algo_sym) =
        (ev.sym("hash"), ev.sym("toHashFormat"), ev.sym("hashAlgo"));
    let Some(text) = string_attr(ev, &attrs, hash_sym, pos)? else {
        return Err(ev.missing_attr(&attrs, hash_sym, pos).with_frame(
            pos,
            "in the attrset passed as argument to builtins.convertHash",
        ));
    };
    let algo = match string_attr(ev, &attrs, algo_sym, pos)? {
        Some(a) => Some(algo(a.as_bytes(), pos)?),
        None => None,
    };
    let Some(format) = string_attr(ev, &attrs, format_sym, pos)? else {
        return Err(ev.missing_attr(&attrs, format_sym, pos).with_frame(
            pos,
            "in the attrset passed as argument to builtins.convertHash",
        ));
    };
    let hash = Hash::parse(&text, algo).map_err(|e| Error::eval(e.to_string(), pos))?;
    let out = match format.as_str() {
        "base16" => hash.encode(Encoding::Base16),
        "nix32" | "base32" => hash.encode(Encoding::Nix32),
        "base64" => hash.encode(Encoding::Base64),
        "sri" => hash.to_sri(),
        other => {
            return Err(Error::eval(
                format!(
                    "unknown hash format '{other}', expect 'base16', 'base32', 'base64', or 'sri'"
                ),
                pos,
            ));
        }
    };
    Ok(Value::string(out))
}

/// `placeholder "out"`: the string a derivation's builder sees in place of
/// an output's path, `/` and the nix32 SHA-256 of `nix-output:NAME`.
fn placeholder<'a>(ev: &mut Evaluator<'a>, args: &[Value<'a>], pos: Pos) -> Result<Value<'a>> {
    let name = plain_string(ev, &args[0], pos, arg_context(0, "placeholder"))?;
    let digest = Hash::sha256([b"nix-output:".as_slice(), name.as_bytes()].concat());
    Ok(Value::string(format!("/{}", digest.to_nix32())))
}
