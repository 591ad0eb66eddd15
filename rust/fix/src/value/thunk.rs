//! Thunks: shared cells updated in place when forced, so every holder of a
//! thunk sees its value without copying it.
//!
//! The one invariant, and the only unsafe code that relies on it, live in
//! this module: a thunk whose state is `Done` never changes again. That is
//! what lets `Thunk::evaluated` hand out a plain reference to the value
//! without a borrow guard (forcing an evaluated thunk is the evaluator's
//! most frequent operation). The state is private; the other states are
//! read and written only through the methods here, which never keep a
//! reference to a state that can still change, and every writer leaves a
//! `Done` state as it is.

use super::{Env, Value};
use crate::stats::{Counter, count};
use crate::syntax::ir::{Expr, LambdaExpr};
use crate::thin::{Shared, ThinRc};
use std::cell::UnsafeCell;

/// What a thunk holds: code not yet run, a deferred call made by a
/// builtin, or the value.
pub enum ThunkState<'a> {
    Pending(&'a Expr, Env<'a>),
    /// A deferred call of a lambda whose parameters are plain names
    /// (`x: ...`, or the curried pair `name: value: ...`): binding such
    /// arguments forces nothing, so the call's environment is made with
    /// the thunk and only the body is left to run. Made by builtins such as
    /// `map` and `mapAttrs` that must stay lazy.
    Call(&'a LambdaExpr, Env<'a>),
    /// `f x ...`: the function then its arguments, for any other function.
    Apply(ThinRc<(), Value<'a>>),
    /// Stands for another value (a slot redirected by `__overrides`).
    Forward(Value<'a>),
    /// Being evaluated: reaching it again is infinite recursion.
    Blackhole,
    Done(Value<'a>),
}

impl ThunkState<'_> {
    /// Drops a state that `Thunk::start` took out, once its thunk has its
    /// value: the environment of code that ran gives up its reference
    /// inline, without a call of the drop glue (the evaluator's most
    /// frequent drop after a value's).
    #[inline(always)]
    pub fn discard(self) {
        match self {
            ThunkState::Pending(_, env) | ThunkState::Call(_, env) => drop(env),
            ThunkState::Forward(v) | ThunkState::Done(v) => v.discard(),
            ThunkState::Blackhole => {}
            ThunkState::Apply(call) => drop(call),
        }
    }
}

#[derive(Clone)]
pub struct Thunk<'a>(Shared<ThunkCell<'a>>);

/// The shared, updatable state of a thunk. An `UnsafeCell` rather than a
/// `RefCell`: the discipline a borrow flag would check is kept by this
/// module's methods, and the flag would cost a word per thunk and a test
/// per read.
struct ThunkCell<'a> {
    state: UnsafeCell<ThunkState<'a>>,
}

impl<'a> Thunk<'a> {
    #[inline]
    pub fn from_state(state: ThunkState<'a>) -> Self {
        count(Counter::ThunksCreated);
        Thunk(Shared::new(ThunkCell {
            state: UnsafeCell::new(state),
        }))
    }

    pub fn new(expr: &'a Expr, env: Env<'a>) -> Self {
        Thunk::from_state(ThunkState::Pending(expr, env))
    }

    /// A deferred call `f x`.
    pub fn apply(f: &Value<'a>, arg: Value<'a>) -> Self {
        if let Value::Lambda(c) = f
            && let Some(body) = c.lambda.plain_chain(1)
        {
            let env = Env::with_params(&c.env, false, &mut [arg]);
            return Thunk::from_state(ThunkState::Call(body, env));
        }
        Thunk::from_state(ThunkState::Apply(ThinRc::from_array((), [f.clone(), arg])))
    }

    /// A deferred call `f x y`.
    pub fn apply2(f: &Value<'a>, x: Value<'a>, y: Value<'a>) -> Self {
        if let Value::Lambda(c) = f
            && let Some(body) = c.lambda.plain_chain(2)
        {
            let env = Env::with_params(&c.env, false, &mut [x, y]);
            return Thunk::from_state(ThunkState::Call(body, env));
        }
        Thunk::from_state(ThunkState::Apply(ThinRc::from_array((), [f.clone(), x, y])))
    }

    pub fn addr(&self) -> usize {
        self.0.addr()
    }

    /// The reference count (see `Value::clone`).
    #[inline(always)]
    pub(super) fn count(&self) -> crate::thin::Count<'_> {
        self.0.count()
    }

    /// The value, if the thunk has been evaluated.
    #[inline]
    pub fn evaluated(&self) -> Option<&Value<'a>> {
        // SAFETY: the only references into the cell that outlive a method
        // of this module are to `Done` values, and no method writes a
        // `Done` state (`replace_unless_done`), so the value stays in place
        // while the thunk lives, which the borrow of `self` guarantees.
        match unsafe { &*self.0.state.get() } {
            ThunkState::Done(v) => Some(v),
            _ => None,
        }
    }

    /// Whether the thunk is being evaluated (reaching it now is infinite
    /// recursion).
    pub fn is_blackhole(&self) -> bool {
        // SAFETY: a read that ends before this method returns; nothing
        // writes the cell meanwhile (the evaluator is single-threaded and
        // nothing here calls out).
        matches!(unsafe { &*self.0.state.get() }, ThunkState::Blackhole)
    }

    /// Writes `state` unless the thunk is evaluated, and gives back what
    /// was there (to be dropped by the caller, outside the cell); an
    /// evaluated thunk keeps its value and `state` comes back.
    fn replace_unless_done(&self, state: ThunkState<'a>) -> ThunkState<'a> {
        let cell = self.0.state.get();
        // SAFETY: the state is not `Done`, so no reference into it exists
        // (see `evaluated`); the write moves the old state out without
        // running any code.
        unsafe {
            if matches!(&*cell, ThunkState::Done(_)) {
                return state;
            }
            std::ptr::replace(cell, state)
        }
    }

    /// Takes out what is to be run, leaving the thunk a black hole until
    /// `finish` or `set`. An evaluated thunk stays as it is and its
    /// value comes back as `Done`.
    #[inline]
    pub fn start(&self) -> ThunkState<'a> {
        if let Some(v) = self.evaluated() {
            return ThunkState::Done(v.clone());
        }
        self.replace_unless_done(ThunkState::Blackhole)
    }

    /// Stores the value of a thunk that `start` took out.
    #[inline]
    pub fn finish(&self, value: Value<'a>) {
        let old = self.replace_unless_done(ThunkState::Done(value));
        // Nearly always the black hole `start` left, which owns nothing:
        // no call of the drop glue for it.
        if matches!(old, ThunkState::Blackhole) {
            std::mem::forget(old);
        } else {
            drop(old);
        }
    }

    /// Writes the state of a thunk not evaluated: puts back what `start`
    /// took out (a failed evaluation runs again when the thunk is forced
    /// again), sets up a thunk made as a black hole, or redirects one.
    /// Does nothing to an evaluated thunk.
    pub fn set(&self, state: ThunkState<'a>) {
        drop(self.replace_unless_done(state));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_evaluated_thunk_never_changes() {
        let t = Thunk::from_state(ThunkState::Blackhole);
        assert!(t.is_blackhole());
        assert!(t.evaluated().is_none());
        t.set(ThunkState::Done(Value::Int(1)));
        let seen = t.evaluated().expect("evaluated");
        assert!(matches!(seen, Value::Int(1)));
        t.set(ThunkState::Blackhole);
        t.finish(Value::Int(2));
        assert!(matches!(t.start(), ThunkState::Done(Value::Int(1))));
        assert!(matches!(t.evaluated(), Some(Value::Int(1))));
        assert!(!t.is_blackhole());
    }

    #[test]
    fn start_leaves_a_black_hole_until_finished() {
        let t = Thunk::from_state(ThunkState::Forward(Value::Int(3)));
        let taken = t.start();
        assert!(matches!(taken, ThunkState::Forward(Value::Int(3))));
        assert!(t.is_blackhole());
        t.set(taken);
        assert!(!t.is_blackhole());
        assert!(matches!(t.start(), ThunkState::Forward(_)));
        t.finish(Value::Bool(true));
        assert!(matches!(t.evaluated(), Some(Value::Bool(true))));
    }
}
