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
use std::marker::PhantomData;
use std::mem::MaybeUninit;

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

/// The shared, updatable state of a thunk, packed into two words so that
/// a thunk block is 24 bytes (its count and these), not 32: an evaluation
/// makes a thunk for nearly every deferred expression (1.2 million for a
/// NixOS-style module evaluation), and an enum with a tag word of its own
/// would be a third larger. An `UnsafeCell` rather than a `RefCell`: the
/// discipline a borrow flag would check is kept by this module's methods.
///
/// The first word says which state the cell holds (`pack`, `unpack`):
/// - below `VALUE_TAGS`: `Done`, the two words being the value itself
///   (`Value` is `repr(u64)`, its tag is the first word), so `evaluated`
///   hands out a reference into the cell;
/// - `APPLY`, `FORWARD` or `BLACKHOLE`: that state, the second word the
///   handle it owns, if any;
/// - otherwise the address of the code, with `CALL_BIT` set for `Call`
///   (the IR is aligned to 8), and the second word the environment.
struct ThunkCell<'a> {
    words: UnsafeCell<[MaybeUninit<*const ()>; 2]>,
    _holds: PhantomData<ThunkState<'a>>,
}

/// Every `Value` tag is below this (there are twelve).
const VALUE_TAGS: usize = 0x100;
const APPLY: usize = VALUE_TAGS;
const FORWARD: usize = 0x101;
const BLACKHOLE: usize = 0x102;
/// No reference points into the first page of memory, which is never
/// mapped, so an address of code is never taken for one of the tags.
const LOWEST_ADDRESS: usize = 0x1000;
const CALL_BIT: usize = 1;

const _: () = {
    assert!(std::mem::size_of::<Value<'static>>() == 2 * std::mem::size_of::<usize>());
    assert!(std::mem::align_of::<Value<'static>>() == std::mem::align_of::<usize>());
    assert!(std::mem::align_of::<Expr>() > CALL_BIT);
    assert!(std::mem::align_of::<LambdaExpr>() > CALL_BIT);
};

type Words = [MaybeUninit<*const ()>; 2];

/// The words for a state that owns what it holds (see `ThunkCell`).
#[inline(always)]
fn pack(state: ThunkState<'_>) -> Words {
    let tagged = |tag: usize, body: *const ()| {
        [
            MaybeUninit::new(std::ptr::without_provenance(tag)),
            MaybeUninit::new(body),
        ]
    };
    let code = |address: *const (), bits: usize| {
        // Checked, not assumed: a code address taken for a tag would be
        // read back as the wrong state.
        assert!(
            address.addr() >= LOWEST_ADDRESS,
            "thunk: code at a tag's address"
        );
        address.map_addr(|a| a | bits)
    };
    match state {
        ThunkState::Done(value) => {
            let mut words = [MaybeUninit::uninit(); 2];
            // SAFETY: the words are two aligned machine words, the size
            // and alignment of a `Value` (checked above).
            unsafe { words.as_mut_ptr().cast::<Value<'_>>().write(value) };
            words
        }
        ThunkState::Pending(expr, env) => [
            MaybeUninit::new(code(std::ptr::from_ref(expr).cast(), 0)),
            MaybeUninit::new(env.0.into_raw()),
        ],
        ThunkState::Call(lambda, env) => [
            MaybeUninit::new(code(std::ptr::from_ref(lambda).cast(), CALL_BIT)),
            MaybeUninit::new(env.0.into_raw()),
        ],
        ThunkState::Apply(call) => tagged(APPLY, call.into_raw()),
        ThunkState::Forward(value) => tagged(FORWARD, ThinRc::from_array((), [value]).into_raw()),
        ThunkState::Blackhole => tagged(BLACKHOLE, std::ptr::null()),
    }
}

/// The state `pack` made of `words`, which give up what they own.
///
/// # Safety
/// `words` must come from `pack` for a state living at least as long as
/// `'a`, and be unpacked once.
#[inline(always)]
unsafe fn unpack<'a>(words: &Words) -> ThunkState<'a> {
    // SAFETY: `pack` writes the first word in every state (a value's tag
    // is a whole word).
    let head = unsafe { words[0].assume_init() };
    if head.addr() < VALUE_TAGS {
        // SAFETY: below `VALUE_TAGS` the words hold a value `pack` wrote.
        return ThunkState::Done(unsafe { words.as_ptr().cast::<Value<'a>>().read() });
    }
    // SAFETY: every state but a black hole has its second word written by
    // `pack`, and what it owns is taken back here once, with the type it
    // was packed as; an address of code is of IR that lives for `'a`.
    unsafe {
        if head.addr() >= LOWEST_ADDRESS {
            let env = Env(ThinRc::from_raw(words[1].assume_init()));
            return if head.addr() & CALL_BIT == 0 {
                ThunkState::Pending(&*head.cast::<Expr>(), env)
            } else {
                ThunkState::Call(&*head.map_addr(|a| a & !CALL_BIT).cast::<LambdaExpr>(), env)
            };
        }
        match head.addr() {
            APPLY => ThunkState::Apply(ThinRc::from_raw(words[1].assume_init())),
            FORWARD => {
                let held: ThinRc<(), Value<'a>> = ThinRc::from_raw(words[1].assume_init());
                ThunkState::Forward(held.as_slice()[0].clone())
            }
            _ => ThunkState::Blackhole,
        }
    }
}

impl<'a> ThunkCell<'a> {
    #[inline(always)]
    fn new(state: ThunkState<'a>) -> Self {
        ThunkCell {
            words: UnsafeCell::new(pack(state)),
            _holds: PhantomData,
        }
    }

    /// The first word, which says the state.
    #[inline(always)]
    fn head(&self) -> usize {
        // SAFETY: a read of the word that every state writes, ending
        // before this returns; nothing writes the cell meanwhile (the
        // evaluator is single-threaded and nothing here calls out).
        unsafe { (*self.words.get())[0].assume_init().addr() }
    }
}

impl Drop for ThunkCell<'_> {
    fn drop(&mut self) {
        // SAFETY: the words were packed by `pack` and are unpacked this
        // once, as the cell goes.
        unsafe { unpack(self.words.get_mut()) }.discard();
    }
}

impl<'a> Thunk<'a> {
    #[inline(always)]
    pub fn from_state(state: ThunkState<'a>) -> Self {
        count(Counter::ThunksCreated);
        Thunk(Shared::new(ThunkCell::new(state)))
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
        let cell = &self.0;
        if cell.head() >= VALUE_TAGS {
            return None;
        }
        // SAFETY: the words hold a `Done` value (see `ThunkCell`). No
        // method writes a `Done` state (`replace_unless_done`), so the
        // value stays in place while the thunk lives, which the borrow of
        // `self` guarantees.
        Some(unsafe { &*cell.words.get().cast::<Value<'a>>() })
    }

    /// Whether the thunk is being evaluated (reaching it now is infinite
    /// recursion).
    pub fn is_blackhole(&self) -> bool {
        self.0.head() == BLACKHOLE
    }

    /// Writes `state` unless the thunk is evaluated, and gives back what
    /// was there (to be dropped by the caller, outside the cell); an
    /// evaluated thunk keeps its value and `state` comes back.
    #[inline(always)]
    fn replace_unless_done(&self, state: ThunkState<'a>) -> ThunkState<'a> {
        if self.0.head() < VALUE_TAGS {
            return state;
        }
        let cell = self.0.words.get();
        // SAFETY: the state is not `Done`, so no reference into the cell
        // exists (see `evaluated`); the old words are unpacked once, as
        // they are overwritten, without running any code in between.
        unsafe {
            let old = unpack(&*cell);
            cell.write(pack(state));
            old
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
        let cell = self.0.words.get();
        // SAFETY: the state is not `Done`, so no reference into the cell
        // exists; its words are unpacked once, and the black hole written
        // over them owns nothing (its second word is never read).
        unsafe {
            let taken = unpack(&*cell);
            (*cell)[0] = MaybeUninit::new(std::ptr::without_provenance(BLACKHOLE));
            taken
        }
    }

    /// Stores the value of a thunk that `start` took out.
    #[inline]
    pub fn finish(&self, value: Value<'a>) {
        // Nearly always the black hole `start` left, which owns nothing:
        // the value is written over it, with nothing to unpack or drop.
        if self.0.head() == BLACKHOLE {
            // SAFETY: a black hole is not `Done`, so no reference into the
            // cell exists, and it owns nothing to give up.
            unsafe { self.0.words.get().cast::<Value<'a>>().write(value) };
        } else {
            drop(self.replace_unless_done(ThunkState::Done(value)));
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
    use crate::source::Pos;
    use crate::syntax::ir::Param;

    #[test]
    fn a_thunk_block_is_three_words() {
        assert_eq!(std::mem::size_of::<ThunkCell<'static>>(), 16);
    }

    /// Each state comes back from the cell as it went in, and a thunk
    /// dropped in it gives up exactly the one reference it held: the
    /// handle kept here is the only one left.
    #[test]
    fn every_state_comes_back_as_packed_and_gives_up_what_it_holds() {
        let expr = Expr::Int(1);
        let lambda = LambdaExpr {
            name: None,
            param: Param::Ident(crate::symbol::known::FUNCTOR),
            body: Expr::Int(2),
            slots: 1,
            merged: false,
            pos: Pos::NONE,
        };
        let mut env = Env::with_array(&Env::root(), [Value::Int(7)]);
        let mut call = ThinRc::from_array((), [Value::Int(1), Value::Int(2)]);
        let mut held = Thunk::from_state(ThunkState::Blackhole);

        let pending = Thunk::from_state(ThunkState::Pending(&expr, env.clone()));
        let ThunkState::Pending(e, scope) = pending.start() else {
            panic!("not pending");
        };
        assert!(std::ptr::eq(e, &expr) && ThinRc::ptr_eq(&scope.0, &env.0));
        assert!(pending.is_blackhole());
        pending.set(ThunkState::Pending(e, scope));
        assert!(!pending.is_blackhole());

        let deferred = Thunk::from_state(ThunkState::Call(&lambda, env.clone()));
        let ThunkState::Call(l, scope) = deferred.start() else {
            panic!("not a call");
        };
        assert!(std::ptr::eq(l, &lambda) && ThinRc::ptr_eq(&scope.0, &env.0));
        deferred.set(ThunkState::Call(l, scope));

        let applied = Thunk::from_state(ThunkState::Apply(call.clone()));
        let ThunkState::Apply(c) = applied.start() else {
            panic!("not an application");
        };
        assert!(ThinRc::ptr_eq(&c, &call));
        applied.set(ThunkState::Apply(c));

        let forward = Thunk::from_state(ThunkState::Forward(Value::Thunk(held.clone())));
        assert!(
            matches!(forward.start(), ThunkState::Forward(Value::Thunk(t)) if t.addr() == held.addr())
        );
        let done = Thunk::from_state(ThunkState::Done(Value::Thunk(held.clone())));
        assert!(matches!(done.evaluated(), Some(Value::Thunk(t)) if t.addr() == held.addr()));
        for value in [
            Value::Null,
            Value::Bool(true),
            Value::Int(-5),
            Value::Float(0.5),
        ] {
            let tag = std::mem::discriminant(&value);
            let t = Thunk::from_state(ThunkState::Done(value));
            assert_eq!(t.evaluated().map(std::mem::discriminant), Some(tag));
        }

        assert!(env.0.unique_slice_mut().is_none() && call.unique_slice_mut().is_none());
        drop((pending, deferred, applied, forward, done));
        assert!(
            env.0.unique_slice_mut().is_some(),
            "the environment's references"
        );
        assert!(
            call.unique_slice_mut().is_some(),
            "the application's references"
        );
        assert!(
            held.0.unique_slice_mut().is_some(),
            "the value's references"
        );
    }

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
