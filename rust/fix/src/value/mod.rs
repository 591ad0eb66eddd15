//! Values. A `Value` is 16 bytes: a tag and either a number or one thin
//! pointer. Lists, attribute sets, strings and environments are single
//! allocations (`ThinRc`); thunks are updated in place when forced, so
//! every holder of a thunk sees its value without copying it.

mod attrs;
mod context;
mod string;
mod thunk;

pub use attrs::{Attr, Attrs};
pub use context::{Context, ContextAcc, ContextElem};
pub use string::{NixString, decimal};
pub use thunk::{Thunk, ThunkState};

use crate::error::Result;
use crate::eval::Evaluator;
use crate::source::Pos;
use crate::stats::{Counter, count};
use crate::syntax::ir::LambdaExpr;
use crate::thin::{Count, Shared, ThinRc};
use std::cell::OnceCell;

/// The tag is a whole word (`repr(u64)`), so every variant's payload is
/// the second word and a value moves as two words. With the compiler's
/// byte tag, `Bool` kept its payload in byte 1, and every move of a value
/// (each force, argument and result) copied the tag byte and bytes 1 to 7
/// separately. The tag's unused values still give `Option<Value>` its
/// niche, so both stay 16 bytes.
#[repr(u64)]
pub enum Value<'a> {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    String(NixString),
    /// An absolute, canonical path.
    Path(NixString),
    Attrs(Attrs<'a>),
    List(List<'a>),
    Lambda(Shared<Closure<'a>>),
    PrimOp(&'static PrimOp),
    PrimOpApp(Shared<PartialApp<'a>>),
    Thunk(Thunk<'a>),
}

impl Clone for Value<'_> {
    /// Every shared variant is one `ThinRc` pointer, so a clone is: count
    /// the reference (if there is one), then copy the 16 bytes. Written
    /// out rather than derived so it inlines to a few instructions instead
    /// of a call through a jump table per variant (values are cloned on
    /// every force and every argument passed).
    #[inline]
    fn clone(&self) -> Self {
        if let Some(count) = self.count() {
            // SAFETY: the copy below is the one handle this counts.
            unsafe { count.retain_copy() };
        }
        // SAFETY: the variants without a count are plain data (`PrimOp` is
        // a `&'static`); the others hold one `ThinRc` whose new reference
        // was just counted, so the copy owns it as a clone would.
        unsafe { std::ptr::read(self) }
    }
}

impl Value<'_> {
    /// The reference count of the block a shared variant points at.
    #[inline(always)]
    fn count(&self) -> Option<Count<'_>> {
        match self {
            Value::String(s) | Value::Path(s) => Some(s.count()),
            Value::Attrs(a) => Some(a.count()),
            Value::List(l) => Some(l.0.count()),
            Value::Lambda(c) => Some(c.count()),
            Value::PrimOpApp(p) => Some(p.count()),
            Value::Thunk(t) => Some(t.count()),
            Value::Null | Value::Bool(_) | Value::Int(_) | Value::Float(_) | Value::PrimOp(_) => {
                None
            }
        }
    }

    /// Drops a value, inlining the common cases (plain data, or a block
    /// others still hold: one decrement) where the compiler's drop would
    /// call the per-variant drop glue. For the hot paths that drop
    /// operands and intermediate results.
    #[inline(always)]
    pub fn discard(self) {
        match self.count() {
            None => std::mem::forget(self),
            // SAFETY: the value is forgotten right after giving up its
            // reference.
            Some(count) if unsafe { count.release_shared() } => std::mem::forget(self),
            Some(_) => drop(self),
        }
    }
}

/// A function value: the code and the environment it closes over.
pub struct Closure<'a> {
    pub lambda: &'a LambdaExpr,
    pub env: Env<'a>,
}

impl<'a> Closure<'a> {
    pub fn value(lambda: &'a LambdaExpr, env: &Env<'a>) -> Value<'a> {
        Value::Lambda(Shared::new(Closure {
            lambda,
            env: env.clone(),
        }))
    }
}

/// The Rust side of a builtin. Arguments arrive unforced.
pub type PrimFn = for<'a> fn(&mut Evaluator<'a>, &[Value<'a>], Pos) -> Result<Value<'a>>;

pub struct PrimOp {
    pub name: &'static str,
    pub arity: usize,
    pub func: PrimFn,
}

/// A builtin applied to fewer arguments than it takes.
pub struct PartialApp<'a> {
    pub op: &'static PrimOp,
    pub args: Vec<Value<'a>>,
}

#[derive(Clone)]
pub struct List<'a>(ThinRc<(), Value<'a>>);

impl<'a> List<'a> {
    pub fn from_iter<I>(items: I) -> Self
    where
        I: IntoIterator<Item = Value<'a>>,
        I::IntoIter: ExactSizeIterator,
    {
        List(ThinRc::from_iter((), items))
    }

    /// `len` elements, stopping at the first error (see
    /// `ThinRc::try_from_iter`).
    pub fn try_from_iter<E>(
        len: usize,
        items: impl IntoIterator<Item = std::result::Result<Value<'a>, E>>,
    ) -> std::result::Result<Self, E> {
        ThinRc::try_from_iter((), len, items).map(List)
    }

    pub fn from_vec(items: Vec<Value<'a>>) -> Self {
        List::from_iter(items)
    }

    pub fn as_slice(&self) -> &[Value<'a>] {
        self.0.as_slice()
    }

    pub fn len(&self) -> usize {
        self.as_slice().len()
    }

    pub fn is_empty(&self) -> bool {
        self.as_slice().is_empty()
    }

    pub fn addr(&self) -> usize {
        self.0.addr()
    }
}

/// An environment: the values of one scope's variables and the scope
/// around it. Slots are filled once, possibly after thunks that refer to
/// the environment were made (recursive sets, `let`, formals' defaults).
#[derive(Clone)]
pub struct Env<'a>(ThinRc<Option<Env<'a>>, OnceCell<Value<'a>>>);

impl<'a> Env<'a> {
    pub fn root() -> Self {
        Env(ThinRc::from_iter(None, std::iter::empty()))
    }

    /// A new scope with `slots` empty slots inside `up`.
    pub fn new(up: &Env<'a>, slots: usize) -> Self {
        count(Counter::Envs);
        Env(ThinRc::from_default(Some(up.clone()), slots))
    }

    /// A new scope holding the `N` values.
    #[inline]
    pub fn with_array<const N: usize>(up: &Env<'a>, values: [Value<'a>; N]) -> Self {
        count(Counter::Envs);
        Env(ThinRc::from_array(
            Some(up.clone()),
            values.map(OnceCell::from),
        ))
    }

    /// A new scope holding `values`.
    pub fn with_values<I>(up: &Env<'a>, values: I) -> Self
    where
        I: IntoIterator<Item = Value<'a>>,
        I::IntoIter: ExactSizeIterator,
    {
        count(Counter::Envs);
        Env(ThinRc::from_iter(
            Some(up.clone()),
            values.into_iter().map(OnceCell::from),
        ))
    }

    /// The environment of a one-parameter lambda (and of the `merged`
    /// lambdas of its curried body) called with `args`, one per parameter,
    /// moved out of the slice. `closed` is the environment the lambda's
    /// closure holds; when the lambda is `merged` that is its enclosing
    /// lambda's, whose slots come first. Counted as one environment per
    /// parameter scope, as if each had its own.
    #[inline]
    pub fn with_params(closed: &Env<'a>, merged: bool, args: &mut [Value<'a>]) -> Self {
        crate::stats::add(Counter::Envs, args.len() as u64);
        let take = |v: &mut Value<'a>| OnceCell::from(std::mem::replace(v, Value::Null));
        // The common shapes moved in as arrays, without an iterator.
        let args = match (merged, args) {
            (false, [a]) => return Env(ThinRc::from_array(Some(closed.clone()), [take(a)])),
            (false, [a, b]) => {
                return Env(ThinRc::from_array(Some(closed.clone()), [take(a), take(b)]));
            }
            (true, [a]) => {
                if let [x] = closed.0.as_slice() {
                    return Env(ThinRc::from_array(
                        closed.0.header().clone(),
                        [x.clone(), take(a)],
                    ));
                }
                std::slice::from_mut(a)
            }
            (_, args) => args,
        };
        let (up, prefix): (Option<Env<'a>>, &[OnceCell<Value<'a>>]) = if merged {
            (closed.0.header().clone(), closed.0.as_slice())
        } else {
            (Some(closed.clone()), &[])
        };
        let k = prefix.len();
        let mut args = args.iter_mut();
        Env(ThinRc::from_iter(
            up,
            (0..k + args.len()).map(|i| {
                let v = match prefix.get(i) {
                    // The slots of a one-parameter lambda's environment
                    // are filled when it is made.
                    Some(cell) => cell.get().cloned().unwrap_or(Value::Null),
                    None => args
                        .next()
                        .map_or(Value::Null, |a| std::mem::replace(a, Value::Null)),
                };
                OnceCell::from(v)
            }),
        ))
    }

    /// Makes this call environment the next call's: when nothing else
    /// holds it and it has one slot per argument, the arguments (moved out
    /// of `args`) replace the previous call's. False, and nothing changed,
    /// otherwise.
    pub fn refill(&mut self, args: &mut [Value<'a>]) -> bool {
        let Some(slots) = self.0.unique_slice_mut() else {
            return false;
        };
        if slots.len() != args.len() {
            return false;
        }
        crate::stats::add(Counter::Envs, args.len() as u64);
        for (slot, arg) in slots.iter_mut().zip(args) {
            let old = std::mem::replace(slot, OnceCell::from(std::mem::replace(arg, Value::Null)));
            // The previous call's argument, through the inlined path (most
            // are numbers or values others still hold).
            if let Some(v) = old.into_inner() {
                v.discard();
            }
        }
        true
    }

    pub fn set(&self, idx: usize, value: Value<'a>) {
        if let Some(slot) = self.0.as_slice().get(idx) {
            let _ = slot.set(value);
        }
    }

    fn up_by(&self, depth: u32) -> &Env<'a> {
        let mut env = self;
        for _ in 0..depth {
            match env.0.header() {
                Some(up) => env = up,
                None => break,
            }
        }
        env
    }

    /// The value in slot `idx`, `depth` scopes up; `None` while a
    /// recursive scope is still being filled.
    pub fn get(&self, depth: u32, idx: u32) -> Option<&Value<'a>> {
        self.up_by(depth)
            .0
            .as_slice()
            .get(idx as usize)
            .and_then(OnceCell::get)
    }
}

impl<'a> Value<'a> {
    /// The value without evaluating anything: itself, or the value of a
    /// thunk already evaluated; `None` for a thunk still to run.
    #[inline]
    pub fn evaluated(&self) -> Option<&Value<'a>> {
        match self {
            Value::Thunk(t) => t.evaluated(),
            other => Some(other),
        }
    }

    /// The name `builtins.typeOf` gives.
    pub fn type_name(&self) -> &'static str {
        match self {
            Value::Null => "null",
            Value::Bool(_) => "bool",
            Value::Int(_) => "int",
            Value::Float(_) => "float",
            Value::String(_) => "string",
            Value::Path(_) => "path",
            Value::Attrs(_) => "set",
            Value::List(_) => "list",
            Value::Lambda(_) | Value::PrimOp(_) | Value::PrimOpApp(_) => "lambda",
            Value::Thunk(_) => "thunk",
        }
    }

    /// The type as Nix's messages say it ("an integer", "a set", ...).
    pub fn describe(&self) -> String {
        match self {
            Value::Null => "null".into(),
            Value::Bool(_) => "a Boolean".into(),
            Value::Int(_) => "an integer".into(),
            Value::Float(_) => "a float".into(),
            Value::String(_) => "a string".into(),
            Value::Path(_) => "a path".into(),
            Value::Attrs(_) => "a set".into(),
            Value::List(_) => "a list".into(),
            Value::Lambda(_) => "a function".into(),
            Value::PrimOp(op) => format!("the built-in function '{}'", op.name),
            Value::PrimOpApp(app) => {
                format!("the partially applied built-in function '{}'", app.op.name)
            }
            Value::Thunk(_) => "a thunk".into(),
        }
    }

    pub fn is_function(&self) -> bool {
        matches!(
            self,
            Value::Lambda(_) | Value::PrimOp(_) | Value::PrimOpApp(_)
        )
    }

    pub fn string(s: impl Into<NixString>) -> Self {
        Value::String(s.into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn value_is_two_words() {
        assert_eq!(std::mem::size_of::<Value<'static>>(), 16);
        assert_eq!(std::mem::size_of::<Option<Value<'static>>>(), 16);
    }

    #[test]
    fn env_slots_fill_once() {
        let root = Env::root();
        let env = Env::new(&root, 2);
        assert!(env.get(0, 0).is_none());
        env.set(0, Value::Int(1));
        env.set(0, Value::Int(2));
        assert!(matches!(env.get(0, 0), Some(Value::Int(1))));
        let inner = Env::with_array(&env, [Value::Bool(true)]);
        assert!(matches!(inner.get(1, 0), Some(Value::Int(1))));
        assert!(matches!(inner.get(0, 0), Some(Value::Bool(true))));
    }
}
