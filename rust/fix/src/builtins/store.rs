//! Builtins that need the store or the network. They exist, so code that
//! tests `builtins ? fetchGit` sees them, and fail with a clear message:
//! store paths and derivations come with fix part 2; fetching never happens
//! inside an evaluation, and pure mode refuses it outright.

use super::primop;
use crate::error::{Error, ErrorKind, Result};
use crate::eval::Evaluator;
use crate::source::Pos;
use crate::value::{PrimOp, Value};

pub static PRIMOPS: &[PrimOp] = &[
    primop!("derivation", 1, |ev, _, p| not_yet(ev, p, "derivation")),
    primop!("derivationStrict", 1, |ev, _, p| not_yet(
        ev,
        p,
        "derivationStrict"
    )),
    primop!("storePath", 1, |ev, _, p| not_yet(ev, p, "storePath")),
    primop!("toFile", 2, |ev, _, p| not_yet(ev, p, "toFile")),
    primop!("filterSource", 2, |ev, _, p| not_yet(ev, p, "filterSource")),
    primop!("path", 1, |ev, _, p| not_yet(ev, p, "path")),
    primop!("outputOf", 2, |ev, _, p| not_yet(ev, p, "outputOf")),
    primop!("getFlake", 1, |ev, _, p| not_yet(ev, p, "getFlake")),
    primop!("fetchurl", 1, |ev, _, p| fetcher(ev, p, "fetchurl")),
    primop!("fetchTarball", 1, |ev, _, p| fetcher(ev, p, "fetchTarball")),
    primop!("fetchGit", 1, |ev, _, p| fetcher(ev, p, "fetchGit")),
    primop!("fetchMercurial", 1, |ev, _, p| fetcher(
        ev,
        p,
        "fetchMercurial"
    )),
    primop!("fetchTree", 1, |ev, _, p| fetcher(ev, p, "fetchTree")),
    primop!("fetchClosure", 1, |ev, _, p| fetcher(ev, p, "fetchClosure")),
];

fn not_yet<'a>(_ev: &mut Evaluator<'a>, pos: Pos, name: &str) -> Result<Value<'a>> {
    Err(Error::new(
        ErrorKind::NotYet,
        format!(
            "builtins.{name} is not supported yet: derivations and store paths come with fix part 2"
        ),
        pos,
    ))
}

fn fetcher<'a>(ev: &mut Evaluator<'a>, pos: Pos, name: &str) -> Result<Value<'a>> {
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
