//! The builtins: every primop Nix has, grouped by what they work on. The
//! ones that need the store or the network exist and fail with a clear
//! "not yet" (fix part 2); fetchers are refused in pure mode.

mod attrs;
mod context;
mod control;
mod derivation;
mod files;
mod hash;
mod json;
mod lists;
mod numbers;
mod regex;
mod store;
mod strings;
mod toml;
mod types;
mod versions;
mod xml;

pub use json::to_json;
pub use regex::NixRegex;
pub(crate) use store::store_string;
pub use strings::base_name;
pub use xml::to_xml;

use crate::eval::Evaluator;
use crate::source::Pos;
use crate::value::{Attr, Attrs, List, PrimOp, Thunk, ThunkState, Value};

/// The version fix reports: nixpkgs requires at least 2.18, and fix
/// implements the language and pure builtins of that release line.
pub const NIX_VERSION: &str = "2.18.9";

/// Names reachable without `builtins.` (as in Nix).
const GLOBAL: &[&str] = &[
    "abort",
    "baseNameOf",
    "break",
    "derivationStrict",
    "dirOf",
    "fetchGit",
    "fetchMercurial",
    "fetchTarball",
    "fetchTree",
    "fromTOML",
    "import",
    "isNull",
    "map",
    "placeholder",
    "removeAttrs",
    "scopedImport",
    "throw",
    "toString",
];

fn groups() -> [&'static [PrimOp]; 18] {
    [
        attrs::PRIMOPS,
        context::PRIMOPS,
        derivation::PRIMOPS,
        control::PRIMOPS,
        files::PRIMOPS,
        hash::PRIMOPS,
        json::PRIMOPS,
        lists::PRIMOPS,
        numbers::PRIMOPS,
        regex::PRIMOPS,
        store::PRIMOPS,
        strings::PRIMOPS,
        toml::PRIMOPS,
        types::PRIMOPS,
        versions::PRIMOPS,
        xml::PRIMOPS,
        crate::flake::PRIMOPS,
        crate::flake::reference::PRIMOPS,
    ]
}

/// Fills the base environment and the `builtins` set.
pub fn install(ev: &mut Evaluator<'_>) {
    let mut entries: Vec<(String, Value<'_>, bool)> = Vec::new();
    for group in groups() {
        for op in group {
            entries.push((
                op.name.to_string(),
                Value::PrimOp(op),
                GLOBAL.contains(&op.name),
            ));
        }
    }
    entries.push(("true".into(), Value::Bool(true), true));
    entries.push(("false".into(), Value::Bool(false), true));
    entries.push(("null".into(), Value::Null, true));
    entries.push(("langVersion".into(), Value::Int(6), false));
    entries.push(("nixVersion".into(), Value::string(NIX_VERSION), false));
    entries.push((
        "storeDir".into(),
        Value::string(ev.options.store_dir.clone()),
        false,
    ));
    entries.push((
        "currentSystem".into(),
        Value::string(ev.options.current_system.clone()),
        false,
    ));
    if !ev.options.pure {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs() as i64)
            .unwrap_or(0);
        entries.push(("currentTime".into(), Value::Int(now), false));
    }
    let nix_path = files::nix_path_value(ev);
    entries.push(("nixPath".into(), nix_path, false));

    // `builtins` holds itself; the slot is filled after the set exists.
    let mut attrs = Vec::with_capacity(entries.len() + 1);
    let mut globals = Vec::with_capacity(entries.len() + 1);
    for (name, value, global) in entries {
        let sym = ev.sym(&name);
        attrs.push(Attr {
            name: sym,
            pos: Pos::NONE,
            value: value.clone(),
        });
        let env_name = if global { name } else { format!("__{name}") };
        globals.push((ev.sym(&env_name), value));
    }
    let builtins_sym = ev.sym("builtins");
    let itself = Thunk::from_state(ThunkState::Blackhole);
    attrs.push(Attr {
        name: builtins_sym,
        pos: Pos::NONE,
        value: Value::Thunk(itself.clone()),
    });
    // `derivation` is Nix code around derivationStrict, lowered once the
    // globals it names exist.
    let derivation_sym = ev.sym("derivation");
    let derivation = Thunk::from_state(ThunkState::Blackhole);
    attrs.push(Attr {
        name: derivation_sym,
        pos: Pos::NONE,
        value: Value::Thunk(derivation.clone()),
    });
    globals.push((derivation_sym, Value::Thunk(derivation.clone())));
    let builtins = Attrs::from_unsorted(attrs);
    itself.set(ThunkState::Done(Value::Attrs(builtins.clone())));
    globals.push((builtins_sym, Value::Attrs(builtins.clone())));
    for (sym, value) in globals {
        let idx = ev.globals.len() as u32;
        ev.globals.push(value);
        ev.global_names.insert(sym, idx);
    }
    ev.builtins = builtins;
    let lowered = ev.load_source(
        crate::source::Origin::File("<nix/derivation-internal.nix>".into()),
        include_str!("../corepkgs/derivation.nix"),
        std::path::Path::new("/"),
        None,
    );
    derivation.set(match lowered {
        Ok(expr) => ThunkState::Pending(expr, ev.root_env.clone()),
        // The file ships with fix and is tested; should it ever fail to
        // lower, `derivation` fails with the reason instead of the process.
        Err(e) => ThunkState::Done(Value::string(format!("derivation.nix: {e:?}"))),
    });
}

/// Shorthand for a primop table entry.
macro_rules! primop {
    ($name:expr, $arity:expr, $func:expr) => {
        crate::value::PrimOp {
            name: $name,
            arity: $arity,
            func: $func,
        }
    };
}
pub(crate) use primop;

/// "while evaluating the first argument passed to builtins.NAME", made
/// into text only when an error needs it.
#[derive(Clone, Copy)]
pub(crate) struct ArgContext {
    n: usize,
    name: &'static str,
}

pub(crate) fn arg_context(n: usize, name: &'static str) -> ArgContext {
    ArgContext { n, name }
}

impl From<ArgContext> for String {
    fn from(c: ArgContext) -> String {
        crate::eval::Context::text(&c)
    }
}

impl crate::eval::Context for ArgContext {
    fn text(&self) -> String {
        const ORDINALS: [&str; 4] = ["first", "second", "third", "fourth"];
        let nth = ORDINALS.get(self.n).unwrap_or(&"an");
        format!(
            "while evaluating the {nth} argument passed to builtins.{}",
            self.name
        )
    }
}

pub(crate) fn list_value<'a>(items: Vec<Value<'a>>) -> Value<'a> {
    Value::List(List::from_vec(items))
}

/// A string argument that may not carry a context (Nix's
/// `forceStringNoCtx`): a string only, no coercion of paths or sets, and
/// none that refers to a store path.
pub(crate) fn plain_string<'a>(
    ev: &mut Evaluator<'a>,
    v: &Value<'a>,
    pos: Pos,
    context: impl crate::eval::Context + Copy,
) -> crate::error::Result<crate::value::NixString> {
    let s = ev.force_string(v, pos, context)?;
    if let Some(first) = s.context().and_then(|c| c.elems().first()) {
        return Err(crate::error::Error::eval(
            format!(
                "the string '{}' is not allowed to refer to a store path (such as '{}')",
                s.lossy(),
                first.encoded()
            ),
            pos,
        )
        .with_frame(pos, context.text()));
    }
    Ok(s)
}
