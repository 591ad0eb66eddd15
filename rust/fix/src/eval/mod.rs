//! The evaluator: a tree-walking interpreter over the lowered program.
//!
//! Laziness: arguments, list elements, attribute values and bindings become
//! thunks (unless they are constants or an existing variable, which are
//! shared as they are); forcing a thunk runs it once and stores the value in
//! place. Deep recursion is bounded twice: by the Nix call depth
//! (`max_call_depth`, like Nix's `max-call-depth`) and by a check of the
//! machine stack itself, so no input can overflow it.

mod coerce;
mod compare;
mod files;
mod force;
mod ops;

pub use coerce::Coercion;
pub use files::{CORE_PACKAGES, IoPolicy, lexical_absolute, os_path};

use crate::error::{Error, ErrorKind, Result};
use crate::options::EvalOptions;
use crate::source::{Pos, SourceMap};
use crate::symbol::{Sym, Symbols, known};
use crate::syntax::ir::*;
use crate::value::{
    Attr, Attrs, Closure, Env, List, NixString, PartialApp, PrimOp, Thunk, ThunkState, Value,
};
use rustc_hash::FxHashMap;
use smallvec::SmallVec;
use std::rc::Rc;
use std::sync::atomic::Ordering;

/// What was being evaluated when an error happened, made into text only
/// when an error needs it (a `&str`, or a builtin's argument position).
pub trait Context {
    fn text(&self) -> String;
}

impl Context for &str {
    fn text(&self) -> String {
        (*self).to_string()
    }
}

impl Context for &String {
    fn text(&self) -> String {
        (*self).clone()
    }
}

/// One evaluation: the code it loaded, its symbols and globals, and the
/// bounds it runs under. `'a` is the lifetime of the loaded code.
pub struct Evaluator<'a> {
    code: &'a typed_arena::Arena<Expr>,
    pub symbols: Symbols,
    pub sources: SourceMap,
    pub options: EvalOptions,
    pub(crate) globals: Vec<Value<'a>>,
    pub(crate) global_names: FxHashMap<Sym, u32>,
    pub(crate) builtins: Attrs<'a>,
    pub(crate) root_env: Env<'a>,
    pub(crate) imports: FxHashMap<Vec<u8>, Value<'a>>,
    pub(crate) io: IoPolicy,
    pub(crate) regex_cache: FxHashMap<Vec<u8>, Rc<crate::builtins::NixRegex>>,
    /// Store paths computed for source paths copied so far.
    pub(crate) store_copies: FxHashMap<Vec<u8>, NixString>,
    /// The context of the strings `toJSON` has written so far.
    pub(crate) json_context: crate::value::ContextAcc,
    /// What the evaluation would put in the store, and what it knows of it.
    pub(crate) store: crate::store::Produced,
    call_depth: usize,
    /// Below this stack address recursion stops with an error.
    pub(crate) stack_limit: usize,
    /// Steps since the evaluation started, for sampling the interrupt flag
    /// and the memory bound.
    ticks: u32,
}

/// Addresses below this much headroom on the machine stack are refused.
const STACK_HEADROOM: usize = 256 * 1024;

use crate::stack::address as stack_address;

impl<'a> Evaluator<'a> {
    /// A new evaluation. `stack_size` is the size of the stack of the
    /// thread it will run on (the machine-stack bound is measured from
    /// here).
    pub fn new(
        code: &'a typed_arena::Arena<Expr>,
        options: EvalOptions,
        stack_size: usize,
    ) -> Self {
        let io = IoPolicy::new(&options);
        let here = stack_address();
        let stack_limit = here.saturating_sub(stack_size.saturating_sub(STACK_HEADROOM));
        let mut ev = Evaluator {
            code,
            symbols: Symbols::new(),
            sources: SourceMap::new(),
            options,
            globals: Vec::new(),
            global_names: FxHashMap::default(),
            builtins: Attrs::empty(),
            root_env: Env::root(),
            imports: FxHashMap::default(),
            io,
            regex_cache: FxHashMap::default(),
            store_copies: FxHashMap::default(),
            json_context: Default::default(),
            store: Default::default(),
            call_depth: 0,
            stack_limit,
            ticks: 0,
        };
        crate::builtins::install(&mut ev);
        ev
    }

    /// Keeps lowered code alive for the whole evaluation.
    pub(crate) fn keep(&self, expr: Expr) -> &'a Expr {
        self.code.alloc(expr)
    }

    pub fn sym(&mut self, name: &str) -> Sym {
        self.symbols.intern_str(name)
    }

    #[inline(always)]
    pub(crate) fn check_stack(&self, pos: Pos) -> Result<()> {
        if stack_address() < self.stack_limit {
            return Err(Self::stack_overflow(pos));
        }
        Ok(())
    }

    #[cold]
    #[inline(never)]
    fn stack_overflow(pos: Pos) -> Error {
        Error::new(
            ErrorKind::StackOverflow,
            "stack overflow; max-call-depth exceeded",
            pos,
        )
    }

    /// Enters one level of recursion (a call, or a level of a deep walk
    /// such as `deepSeq`): checks the call depth, the machine stack and
    /// Ctrl-C. Pair with `leave`.
    ///
    /// Every call passes here, so the common case is one combined test;
    /// anything to look at (the bounds, or the sampled Ctrl-C and memory
    /// check every 64 entries) goes out of line.
    #[inline]
    pub(crate) fn enter(&mut self, pos: Pos) -> Result<()> {
        self.ticks = self.ticks.wrapping_add(1);
        if self.call_depth >= self.options.max_call_depth
            || stack_address() < self.stack_limit
            || self.ticks.is_multiple_of(64)
        {
            return self.enter_checked(pos);
        }
        self.call_depth += 1;
        Ok(())
    }

    #[cold]
    #[inline(never)]
    fn enter_checked(&mut self, pos: Pos) -> Result<()> {
        if self.call_depth >= self.options.max_call_depth {
            return Err(Error::new(
                ErrorKind::StackOverflow,
                "stack overflow; max-call-depth exceeded",
                pos,
            ));
        }
        self.check_stack(pos)?;
        self.poll_interrupt(pos)?;
        self.call_depth += 1;
        Ok(())
    }

    pub(crate) fn leave(&mut self) {
        self.call_depth -= 1;
    }

    /// Runs one level of a recursive walk (`deepSeq`, `toJSON`, equality,
    /// ...) between `enter` and `leave`.
    pub(crate) fn nested<T>(
        &mut self,
        pos: Pos,
        work: impl FnOnce(&mut Self) -> Result<T>,
    ) -> Result<T> {
        self.enter(pos)?;
        let result = work(self);
        self.leave();
        result
    }

    /// Ctrl-C, the time bound and the memory bound, looked at every 64th
    /// call.
    pub(crate) fn poll_interrupt(&self, pos: Pos) -> Result<()> {
        if let Some(flag) = &self.options.interrupt
            && flag.load(Ordering::Relaxed)
        {
            return Err(Error::new(
                ErrorKind::Interrupted,
                "evaluation interrupted",
                pos,
            ));
        }
        if let Some(deadline) = self.options.deadline
            && std::time::Instant::now() >= deadline
        {
            return Err(Error::new(
                ErrorKind::Interrupted,
                "evaluation stopped: it ran past its time bound (--timeout)",
                pos,
            ));
        }
        self.check_memory(0, pos)
    }

    /// Fails when the values held, plus `more` bytes about to be
    /// allocated, exceed the memory bound.
    pub(crate) fn check_memory(&self, more: usize, pos: Pos) -> Result<()> {
        if let Some(limit) = self.options.max_memory
            && crate::memory::live().saturating_add(more) > limit
        {
            return Err(Error::new(
                ErrorKind::OutOfMemory,
                format!(
                    "the evaluation needs more than the {} MiB of memory it may use; raise --max-memory or evaluate less",
                    limit >> 20
                ),
                pos,
            ));
        }
        Ok(())
    }

    /// Room for one more element in `v`, a builtin's working set counted
    /// in `held`: when `v` is full it doubles, the bound checked first for
    /// the new block beside the old one (both are held while it is
    /// copied), and `held` then counts the new block.
    #[inline]
    pub(crate) fn room<C: crate::memory::Growable>(
        &self,
        held: &mut crate::memory::Held,
        v: &mut C,
        pos: Pos,
    ) -> Result<()> {
        if v.len() < v.capacity() {
            return Ok(());
        }
        let grown = v.capacity().saturating_mul(2).max(8);
        self.check_memory(grown.saturating_mul(C::ELEMENT), pos)?;
        v.reserve_exact(grown - v.len());
        held.set(v.capacity().saturating_mul(C::ELEMENT));
        Ok(())
    }

    /// Counts `n` elements of `T` in `held` as a builtin's working set,
    /// the bound checked first.
    pub(crate) fn hold<T>(&self, held: &mut crate::memory::Held, n: usize, pos: Pos) -> Result<()> {
        let bytes = n.saturating_mul(std::mem::size_of::<T>());
        self.check_memory(bytes, pos)?;
        held.set(bytes);
        Ok(())
    }

    /// Sends a `trace` or warning line to the embedding (stderr by default).
    pub(crate) fn emit(&self, line: &str) {
        match &self.options.trace {
            Some(sink) => sink(line),
            None => eprintln!("{line}"),
        }
    }

    /// Calls a function the way `nix-instantiate` calls the top level: a
    /// function with formals gets the auto arguments it names (all of them
    /// with `...`); anything else is returned as it is.
    pub fn auto_call(&mut self, v: Value<'a>, args: &Attrs<'a>) -> Result<Value<'a>> {
        let f = self.force(&v)?;
        match &f {
            Value::Attrs(attrs) if attrs.contains(known::FUNCTOR) => {
                let functor = attrs.get(known::FUNCTOR).cloned().unwrap_or(Value::Null);
                let functor = self.force(&functor)?;
                let inner = self.call(functor, f.clone(), Pos::NONE)?;
                self.auto_call(inner, args)
            }
            Value::Lambda(closure) => {
                let Param::Formals(formals) = &closure.lambda.param else {
                    return Ok(f);
                };
                if formals.ellipsis {
                    return self.call(f.clone(), Value::Attrs(args.clone()), Pos::NONE);
                }
                let mut given = Vec::new();
                for formal in formals.entries.iter() {
                    match args.get_attr(formal.name) {
                        Some(a) => given.push(a.clone()),
                        None if formal.default.is_some() => {}
                        None => {
                            return Err(Error::eval(
                                format!(
                                    "cannot evaluate a function that has an argument without a value ('{}')\nNix attempted to evaluate a function as a top level expression; in this case it must have its arguments supplied either by default values, or passed explicitly with '--arg' or '--argstr'.",
                                    self.symbols.text(formal.name)
                                ),
                                formal.pos,
                            ));
                        }
                    }
                }
                self.call(
                    f.clone(),
                    Value::Attrs(Attrs::from_unsorted(given)),
                    Pos::NONE,
                )
            }
            _ => Ok(f),
        }
    }

    // ----- laziness -----

    /// The value of `expr` in `env` without evaluating it: constants and
    /// variables are shared as they are, anything else becomes a thunk.
    #[inline]
    pub fn thunk(&self, expr: &'a Expr, env: &Env<'a>) -> Value<'a> {
        match expr {
            Expr::Int(n) => Value::Int(*n),
            Expr::Float(f) => Value::Float(*f),
            Expr::Str(s) => Value::String(s.clone()),
            Expr::Path(p) => Value::Path(p.clone()),
            Expr::Local { depth, idx } => match env.get(*depth, *idx) {
                Some(v) => v.clone(),
                // A recursive scope still being filled: defer the lookup.
                None => Value::Thunk(Thunk::new(expr, env.clone())),
            },
            Expr::Global(g) => self.globals[*g as usize].clone(),
            Expr::Lambda(l) => Closure::value(l, env),
            _ => Value::Thunk(Thunk::new(expr, env.clone())),
        }
    }

    /// A number operand known without running anything: a constant, or a
    /// variable whose value is an evaluated number.
    #[inline]
    fn known_number(&self, expr: &'a Expr, env: &Env<'a>) -> Option<Value<'a>> {
        let value = match expr {
            Expr::Int(n) => return Some(Value::Int(*n)),
            Expr::Float(f) => return Some(Value::Float(*f)),
            Expr::Local { depth, idx } => env.get(*depth, *idx)?.evaluated()?,
            _ => return None,
        };
        match value {
            Value::Int(n) => Some(Value::Int(*n)),
            Value::Float(f) => Some(Value::Float(*f)),
            _ => None,
        }
    }

    /// Arithmetic or a comparison of two numbers already known. Anything
    /// that could fail (overflow, division by zero) is left to the thunk,
    /// which fails only if it is forced, as Nix would.
    #[inline(never)]
    fn known_binop(&self, b: &'a BinOpExpr, env: &Env<'a>) -> Option<Value<'a>> {
        let l = self.known_number(&b.lhs, env)?;
        let r = self.known_number(&b.rhs, env)?;
        ops::number_op(b.op, &l, &r)
    }

    /// The value in weak head normal form (never a thunk).
    #[inline]
    pub fn force(&mut self, v: &Value<'a>) -> Result<Value<'a>> {
        match v {
            Value::Thunk(t) => self.force_thunk(t),
            other => Ok(other.clone()),
        }
    }

    #[inline]
    pub fn force_thunk(&mut self, t: &Thunk<'a>) -> Result<Value<'a>> {
        match t.evaluated() {
            Some(v) => Ok(v.clone()),
            None => self.run_thunk(t),
        }
    }

    /// Evaluates a thunk not yet evaluated and stores its value in place.
    #[inline(never)]
    fn run_thunk(&mut self, t: &Thunk<'a>) -> Result<Value<'a>> {
        // A chain of thunks forwarding to thunks recurses through here
        // without passing `eval_node`.
        self.check_stack(Pos::NONE)?;
        crate::stats::count(crate::stats::Counter::ThunksForced);
        let state = t.start();
        let result = match &state {
            ThunkState::Pending(expr, env) => self.eval(expr, env),
            ThunkState::Call(lambda, env) => self.run_bound_call(lambda, env),
            ThunkState::Apply(call) => match call.as_slice().split_first() {
                Some((f, args)) => self.force(f).and_then(|f| self.call_n(f, args, Pos::NONE)),
                None => Ok(Value::Null),
            },
            ThunkState::Forward(v) => self.force(v),
            ThunkState::Blackhole => {
                return Err(Error::new(
                    ErrorKind::InfiniteRecursion,
                    "infinite recursion encountered",
                    Pos::NONE,
                ));
            }
            ThunkState::Done(v) => Ok(v.clone()),
        };
        match result {
            Ok(v) => {
                t.finish(v.clone());
                state.discard();
                Ok(v)
            }
            Err(e) => {
                // A failed thunk is evaluated again when forced again.
                t.set(state);
                Err(e)
            }
        }
    }

    // ----- evaluation -----

    /// Evaluates `expr` in `env` to weak head normal form.
    ///
    /// Variables and constants, most of what is evaluated, are answered
    /// here, inlined into the caller; everything else goes to `eval_node`,
    /// whose frame is large.
    #[inline(always)]
    pub fn eval(&mut self, expr: &'a Expr, env: &Env<'a>) -> Result<Value<'a>> {
        match expr {
            Expr::Local { depth, idx } => match env.get(*depth, *idx) {
                Some(v) => self.force(v),
                None => Err(Self::unfilled_slot()),
            },
            Expr::Int(n) => Ok(Value::Int(*n)),
            // The most frequent compound forms go straight to their code
            // (each checks the machine stack itself), not through
            // `eval_node`'s large frame.
            Expr::Select(s) => self.select(s, env),
            Expr::Apply(a) => self.apply(a, env),
            Expr::BinOp(b) => self.binop(b, env),
            _ => self.eval_node(expr, env),
        }
    }

    /// Reading a slot of a recursive scope before it is filled.
    #[cold]
    #[inline(never)]
    fn unfilled_slot() -> Error {
        Error::new(
            ErrorKind::InfiniteRecursion,
            "infinite recursion encountered",
            Pos::NONE,
        )
    }

    #[inline(never)]
    fn eval_node(&mut self, expr: &'a Expr, env: &Env<'a>) -> Result<Value<'a>> {
        self.check_stack(Pos::NONE)?;
        match expr {
            // Bodies in tail position: a chain of them is walked by
            // `tail_body`, out of line, so this frame, which stays on the
            // stack while the body is evaluated (every level of a recursion
            // through a function's `if` keeps one), holds nothing of theirs.
            // An `if` on its own: its branch is evaluated here.
            Expr::If(i) => {
                let branch = self.branch(i, env)?;
                self.eval(branch, env)
            }
            Expr::Let(_) | Expr::Assert(_) | Expr::With(_) => {
                let (body, scope) = self.tail_body(expr, env)?;
                match scope {
                    None => self.eval(body, env),
                    Some(scope) => self.eval(body, &scope),
                }
            }
            Expr::Int(n) => Ok(Value::Int(*n)),
            Expr::Float(f) => Ok(Value::Float(*f)),
            Expr::Str(s) => Ok(Value::String(s.clone())),
            Expr::Path(p) => Ok(Value::Path(p.clone())),
            Expr::Local { depth, idx } => {
                // Forced through the reference: the environment outlives
                // this call, so the slot's value is not cloned first.
                match env.get(*depth, *idx) {
                    Some(v) => self.force(v),
                    None => Err(Self::unfilled_slot()),
                }
            }
            Expr::Global(g) => {
                let v = self.globals[*g as usize].clone();
                self.force(&v)
            }
            Expr::WithVar(w) => self.with_lookup(w, env),
            Expr::Interpolate(i) => self.interpolate(i, env),
            Expr::List(items) => Ok(Value::List(List::from_iter(
                items.iter().map(|e| self.thunk(e, env)),
            ))),
            Expr::Attrs(a) => self.attrs(a, env),
            Expr::Lambda(l) => Ok(Closure::value(l, env)),
            Expr::Apply(a) => self.apply(a, env),
            Expr::Select(s) => self.select(s, env),
            Expr::HasAttr(h) => self.has_attr(h, env).map(Value::Bool),
            Expr::BinOp(b) => self.binop(b, env),
            Expr::Not(n) => {
                let v = self.eval(&n.expr, env)?;
                match v {
                    Value::Bool(b) => Ok(Value::Bool(!b)),
                    other => Err(self.type_error("a Boolean", &other, n.pos)),
                }
            }
            Expr::CurPos(pos) => Ok(self.pos_attrs(*pos)),
        }
    }

    /// The branch an `if` takes.
    #[inline(always)]
    fn branch(&mut self, i: &'a IfExpr, env: &Env<'a>) -> Result<&'a Expr> {
        match self.eval(&i.cond, env)? {
            Value::Bool(b) => Ok(if b { &i.then } else { &i.otherwise }),
            other => Err(self.not_a_condition(i, &other)),
        }
    }

    #[cold]
    #[inline(never)]
    fn not_a_condition(&self, i: &IfExpr, cond: &Value<'a>) -> Error {
        self.type_error("a Boolean", cond, i.pos)
            .with_frame(i.pos, "while evaluating a branch condition")
    }

    /// What a chain of `if`, `assert`, `let` and `with` comes down to: the
    /// first body that is none of them, and the scope it runs in when a
    /// `let` or `with` on the way made one. Conditions are evaluated and
    /// checked here, and bindings made, one step of the chain after the
    /// other, so a long chain costs no stack.
    #[inline(never)]
    fn tail_body(
        &mut self,
        mut expr: &'a Expr,
        env: &Env<'a>,
    ) -> Result<(&'a Expr, Option<Env<'a>>)> {
        let mut owned_env: Option<Env<'a>> = None;
        loop {
            let env: &Env<'a> = owned_env.as_ref().unwrap_or(env);
            match expr {
                Expr::Let(l) => {
                    let scope = Env::new(env, l.bindings.len());
                    for (i, b) in l.bindings.iter().enumerate() {
                        let v = self.thunk(b, &scope);
                        scope.set(i, v);
                    }
                    expr = &l.body;
                    owned_env = Some(scope);
                }
                Expr::If(i) => expr = self.branch(i, env)?,
                Expr::Assert(a) => {
                    let cond = self.eval(&a.cond, env)?;
                    match cond {
                        Value::Bool(true) => expr = &a.body,
                        Value::Bool(false) => return Err(self.assertion_failed(a, env)),
                        other => {
                            return Err(self.type_error("a Boolean", &other, a.pos).with_frame(
                                a.pos,
                                "while evaluating the condition of the assertion",
                            ));
                        }
                    }
                }
                Expr::With(w) => {
                    let attrs = self.thunk(&w.attrs, env);
                    owned_env = Some(Env::with_array(env, [attrs]));
                    expr = &w.body;
                }
                _ => return Ok((expr, owned_env)),
            }
        }
    }

    /// The error of a failed `assert`; for `a == b`, what differs.
    #[cold]
    #[inline(never)]
    fn assertion_failed(&mut self, a: &'a AssertExpr, env: &Env<'a>) -> Error {
        if let Expr::BinOp(b) = &a.cond
            && b.op == BinOp::Eq
        {
            let explained = self.eval(&b.lhs, env).and_then(|l| {
                let r = self.eval(&b.rhs, env)?;
                self.explain_unequal(&l, &r, b.pos)
            });
            return match explained {
                Ok(e) | Err(e) => e.with_frame(a.pos, "in an equality assertion"),
            };
        }
        Error::new(
            ErrorKind::Assert,
            format!("assertion '{}' failed", a.text),
            a.pos,
        )
    }

    /// `{ file, line, column }` for a position, or `null`.
    #[inline(never)]
    pub fn pos_attrs(&mut self, pos: Pos) -> Value<'a> {
        let Some(loc) = self.sources.resolve(pos) else {
            return Value::Null;
        };
        let file = loc.file.origin.display();
        let (line, column) = (loc.line, loc.column);
        let entries = vec![
            Attr {
                name: known::FILE,
                pos: Pos::NONE,
                value: Value::string(file),
            },
            Attr {
                name: known::LINE,
                pos: Pos::NONE,
                value: Value::Int(i64::from(line)),
            },
            Attr {
                name: known::COLUMN,
                pos: Pos::NONE,
                value: Value::Int(i64::from(column)),
            },
        ];
        Value::Attrs(Attrs::from_unsorted(entries))
    }

    #[inline(never)]
    fn with_lookup(&mut self, w: &'a WithVar, env: &Env<'a>) -> Result<Value<'a>> {
        crate::stats::count(crate::stats::Counter::AttrLookups);
        for &depth in w.depths.iter() {
            let scope = env.get(depth, 0).cloned().unwrap_or(Value::Null);
            let attrs = self.force(&scope)?;
            let Value::Attrs(attrs) = attrs else {
                return Err(self.type_error("a set", &attrs, w.pos));
            };
            if let Some(v) = attrs.get(w.name) {
                let v = v.clone();
                return self.force(&v);
            }
        }
        Err(Error::eval(
            format!("undefined variable '{}'", self.symbols.text(w.name)),
            w.pos,
        ))
    }

    #[inline(never)]
    fn interpolate(&mut self, i: &'a Interpolation, env: &Env<'a>) -> Result<Value<'a>> {
        // The strings of the interpolated parts, in order; a string value
        // is taken as it is (no coercion, no count taken and given back),
        // and the literals are read in place.
        let mut strings: SmallVec<[NixString; 4]> = SmallVec::new();
        let mut context = crate::value::ContextAcc::default();
        for part in i.parts.iter() {
            if let Part::Expr(e, pos) = part {
                let s = match self.eval(e, env)? {
                    Value::String(s) => s,
                    v => {
                        let how = if i.path {
                            Coercion::PATH_SEGMENT
                        } else {
                            Coercion::INTERPOLATION
                        };
                        self.coerce_to_string(&v, how, *pos)
                            .map_err(|e| e.with_frame(*pos, "while evaluating a path segment"))?
                    }
                };
                if i.path {
                    ops::no_store_reference_in_path(&s, *pos)?;
                }
                context.add(s.context());
                strings.push(s);
            }
        }
        let mut slices: SmallVec<[&[u8]; 8]> = SmallVec::with_capacity(i.parts.len());
        let mut evaluated = strings.iter();
        for part in i.parts.iter() {
            match part {
                Part::Lit(s) => slices.push(s.as_bytes()),
                Part::Expr(..) => {
                    if let Some(s) = evaluated.next() {
                        slices.push(s.as_bytes());
                    }
                }
            }
        }
        self.check_memory(slices.iter().map(|s| s.len()).sum(), Pos::NONE)?;
        let joined = NixString::from_parts_with(&slices, context.finish());
        if i.path {
            return Ok(Value::Path(NixString::from(crate::syntax::canon_path(
                joined.as_bytes(),
            ))));
        }
        Ok(Value::String(joined))
    }

    #[inline(never)]
    fn attrs(&mut self, a: &'a AttrsExpr, env: &Env<'a>) -> Result<Value<'a>> {
        let scope = if a.env_slots > 0 {
            Env::new(env, a.env_slots as usize)
        } else {
            env.clone()
        };
        let n = a.statics.len();
        if !a.rec && a.dynamics.is_empty() {
            // The common case, built in place: one allocation.
            for (k, src) in a.inherit_sources.iter().enumerate() {
                let v = self.thunk(src, env);
                scope.set(k, v);
            }
            let entries = a.statics.iter().map(|s| Attr {
                name: s.name,
                pos: s.pos,
                value: self.thunk(&s.value, &scope),
            });
            return Ok(Value::Attrs(Attrs::from_sorted_iter(entries)));
        }
        let mut entries = Vec::with_capacity(n + a.dynamics.len());
        if a.rec {
            for (i, s) in a.statics.iter().enumerate() {
                let mut v = self.thunk(&s.value, &scope);
                if a.overrides {
                    // Each slot must be redirectable by `__overrides`.
                    v = Value::Thunk(Thunk::from_state(ThunkState::Forward(v)));
                }
                scope.set(i, v);
            }
            for (k, src) in a.inherit_sources.iter().enumerate() {
                let v = self.thunk(src, &scope);
                scope.set(n + k, v);
            }
            for (i, s) in a.statics.iter().enumerate() {
                let value = scope.get(0, i as u32).cloned().unwrap_or(Value::Null);
                entries.push(Attr {
                    name: s.name,
                    pos: s.pos,
                    value,
                });
            }
            if a.overrides {
                // Dynamic attributes come after the overrides, as in Nix.
                entries = self.apply_overrides(entries)?;
            }
        } else {
            for (k, src) in a.inherit_sources.iter().enumerate() {
                let v = self.thunk(src, env);
                scope.set(k, v);
            }
            for s in a.statics.iter() {
                entries.push(Attr {
                    name: s.name,
                    pos: s.pos,
                    value: self.thunk(&s.value, &scope),
                });
            }
        }
        if a.dynamics.is_empty() {
            return Ok(Value::Attrs(Attrs::from_sorted(entries)));
        }
        for d in a.dynamics.iter() {
            let name = self.eval(&d.name, &scope)?;
            let name = match name {
                Value::Null => continue,
                Value::String(s) => self.symbols.intern(s.as_bytes()),
                other => {
                    return Err(self
                        .type_error("a string", &other, d.pos)
                        .with_frame(d.pos, "while evaluating the name of a dynamic attribute"));
                }
            };
            match entries.binary_search_by_key(&name, |e| e.name) {
                Ok(existing) => {
                    let previous = entries[existing].pos;
                    let at = self
                        .sources
                        .resolve(previous)
                        .map(|l| l.display())
                        .unwrap_or_default();
                    return Err(Error::eval(
                        format!(
                            "dynamic attribute '{}' already defined at {at}",
                            self.symbols.text(name)
                        ),
                        d.pos,
                    ));
                }
                Err(at) => entries.insert(
                    at,
                    Attr {
                        name,
                        pos: d.pos,
                        value: self.thunk(&d.value, &scope),
                    },
                ),
            }
        }
        Ok(Value::Attrs(Attrs::from_sorted(entries)))
    }

    /// A `rec` set with `__overrides`: its attributes replace the set's own,
    /// in the set and in the scope its other attributes see, and add new
    /// ones (a legacy feature Nix keeps). `entries` are the set's static
    /// attributes, sorted, and stay so.
    #[inline(never)]
    fn apply_overrides(&mut self, mut entries: Vec<Attr<'a>>) -> Result<Vec<Attr<'a>>> {
        let Ok(at) = entries.binary_search_by_key(&known::OVERRIDES, |e| e.name) else {
            return Ok(entries);
        };
        let pos = entries[at].pos;
        let overrides = entries[at].value.clone();
        let overrides = self.force_attrs(
            &overrides,
            pos,
            "while evaluating the `__overrides` attribute",
        )?;
        for o in overrides.iter() {
            match entries.binary_search_by_key(&o.name, |e| e.name) {
                // One of the set's own: its slot now forwards to the override.
                Ok(i) => {
                    if let Value::Thunk(t) = &entries[i].value {
                        t.set(ThunkState::Forward(o.value.clone()));
                    }
                    entries[i].pos = o.pos;
                }
                Err(i) => entries.insert(i, o.clone()),
            }
        }
        Ok(entries)
    }

    #[inline]
    pub(crate) fn attr_name(&mut self, key: &'a AttrKey, env: &Env<'a>, pos: Pos) -> Result<Sym> {
        match key {
            AttrKey::Static(s) => Ok(*s),
            AttrKey::Dynamic(e) => self.dynamic_attr_name(e, env, pos),
        }
    }

    #[inline(never)]
    fn dynamic_attr_name(&mut self, e: &'a Expr, env: &Env<'a>, pos: Pos) -> Result<Sym> {
        match self.eval(e, env)? {
            Value::String(s) => Ok(self.symbols.intern(s.as_bytes())),
            other => Err(self
                .type_error("a string", &other, pos)
                .with_frame(pos, "while evaluating an attribute name")),
        }
    }

    #[inline(never)]
    fn select(&mut self, s: &'a SelectExpr, env: &Env<'a>) -> Result<Value<'a>> {
        self.check_stack(Pos::NONE)?;
        let mut current = self.eval(&s.base, env)?;
        crate::stats::add(crate::stats::Counter::AttrLookups, s.path.len() as u64);
        for (i, step) in s.path.iter().enumerate() {
            let name = self.attr_name(&step.key, env, s.pos)?;
            let found = match &current {
                Value::Attrs(attrs) => attrs
                    .get_hinted(name, &step.hint)
                    .map(|a| self.force(&a.value)),
                _ => None,
            };
            match found {
                Some(forced) => {
                    let next = forced.map_err(|e| {
                        let path = self.show_path(&s.path[..=i], name);
                        e.with_frame(s.pos, format!("while evaluating the attribute '{path}'"))
                    })?;
                    std::mem::replace(&mut current, next).discard();
                }
                None => {
                    if let Some(default) = &s.default {
                        return self.eval(default, env);
                    }
                    return Err(match &current {
                        Value::Attrs(attrs) => self.missing_attr(attrs, name, s.pos),
                        other => self
                            .type_error("a set", other, s.pos)
                            .with_frame(s.pos, "while selecting an attribute"),
                    });
                }
            }
        }
        Ok(current)
    }

    #[cold]
    #[inline(never)]
    fn show_path(&self, keys: &[SelectKey], last: Sym) -> String {
        let mut parts: Vec<String> = keys
            .iter()
            .map(|k| match &k.key {
                AttrKey::Static(s) => self.symbols.text(*s).into_owned(),
                AttrKey::Dynamic(_) => "\"${...}\"".to_string(),
            })
            .collect();
        if let Some(l) = parts.last_mut() {
            *l = self.symbols.text(last).into_owned();
        }
        parts.join(".")
    }

    /// "attribute 'x' missing", with a suggestion when a name is close.
    #[cold]
    #[inline(never)]
    pub(crate) fn missing_attr(&self, attrs: &Attrs<'a>, name: Sym, pos: Pos) -> Error {
        let wanted = self.symbols.text(name);
        let mut close: Vec<String> = attrs
            .iter()
            .map(|a| self.symbols.text(a.name).into_owned())
            .filter(|n| edit_distance(n, &wanted) <= 2)
            .collect();
        close.sort();
        let mut message = format!("attribute '{wanted}' missing");
        if !close.is_empty() {
            let list: Vec<String> = close.iter().take(3).map(|c| format!("'{c}'")).collect();
            message.push_str(&format!("\nDid you mean {}?", list.join(", ")));
        }
        Error::eval(message, pos)
    }

    #[inline(never)]
    fn has_attr(&mut self, h: &'a HasAttrExpr, env: &Env<'a>) -> Result<bool> {
        let mut current = self.eval(&h.base, env)?;
        crate::stats::add(crate::stats::Counter::AttrLookups, h.path.len() as u64);
        let last = h.path.len().saturating_sub(1);
        for (i, key) in h.path.iter().enumerate() {
            let name = self.attr_name(key, env, h.pos)?;
            let Value::Attrs(attrs) = &current else {
                return Ok(false);
            };
            let Some(v) = attrs.get(name).cloned() else {
                return Ok(false);
            };
            // `a ? b.c` looks into `a.b` but never evaluates `a.b.c`.
            if i < last {
                current = self.force(&v)?;
            }
        }
        Ok(true)
    }

    // ----- calls -----

    #[inline(never)]
    fn apply(&mut self, a: &'a ApplyExpr, env: &Env<'a>) -> Result<Value<'a>> {
        self.check_stack(Pos::NONE)?;
        let mut f = self.eval(&a.func, env)?;
        let mut i = 0;
        while i < a.args.len() {
            if let Value::PrimOp(op) = &f
                && op.arity <= a.args.len() - i
            {
                let op: &'static PrimOp = op;
                f = self.apply_primop(op, &a.args[i..i + op.arity], env, a.pos)?;
                i += op.arity;
                continue;
            }
            if matches!(f, Value::Lambda(_)) && a.args.len() - i >= 2 {
                return self.apply_lambda_to_rest(f, &a.args[i..], env, a.pos);
            }
            let arg = self.argument(&a.args[i], env);
            f = self.call(f, arg, a.pos)?;
            i += 1;
        }
        Ok(f)
    }

    /// `f x y ...`, the rest in one go: curried lambdas without their
    /// intermediate closures (two arguments, the most common, in an array
    /// rather than a `SmallVec`). Out of line, so that `apply`'s frame,
    /// which every level of a recursion through a call keeps on the stack,
    /// holds none of the arguments gathered here.
    #[inline(never)]
    fn apply_lambda_to_rest(
        &mut self,
        f: Value<'a>,
        args: &'a [Expr],
        env: &Env<'a>,
        pos: Pos,
    ) -> Result<Value<'a>> {
        if let [x, y] = args {
            let mut rest = [self.argument(x, env), self.argument(y, env)];
            return self.call_owned(f, &mut rest, pos);
        }
        let mut rest = self.thunks(args, env);
        self.call_owned(f, &mut rest, pos)
    }

    /// A builtin given all its arguments at once: no partial application.
    #[inline(never)]
    fn apply_primop(
        &mut self,
        op: &'static PrimOp,
        args: &'a [Expr],
        env: &Env<'a>,
        pos: Pos,
    ) -> Result<Value<'a>> {
        // Builtins take one to three arguments: gathered in an array, with
        // no length or spill to keep as a `SmallVec` has.
        match args {
            [a] => self.call_primop(op, &[self.argument(a, env)], pos),
            [a, b] => {
                let args = [self.argument(a, env), self.argument(b, env)];
                self.call_primop(op, &args, pos)
            }
            [a, b, c] => {
                let args = [
                    self.argument(a, env),
                    self.argument(b, env),
                    self.argument(c, env),
                ];
                self.call_primop(op, &args, pos)
            }
            _ => {
                let args = self.thunks(args, env);
                self.call_primop(op, &args, pos)
            }
        }
    }

    /// The arguments of a call, unevaluated. Pushed one by one: a
    /// `collect` into a `SmallVec` goes through its generic `extend`, which
    /// cost more than the few thunks made here.
    #[inline]
    fn thunks(&self, exprs: &'a [Expr], env: &Env<'a>) -> SmallVec<[Value<'a>; 4]> {
        let mut out = SmallVec::new();
        if exprs.len() > 4 {
            out.reserve_exact(exprs.len());
        }
        for e in exprs {
            out.push(self.argument(e, env));
        }
        out
    }

    /// `thunk` for a call's argument, where arithmetic on a variable is
    /// common (`f (n - 1)`): when its operands are evaluated numbers, the
    /// result itself, so no thunk is allocated and none runs later.
    #[inline]
    fn argument(&self, expr: &'a Expr, env: &Env<'a>) -> Value<'a> {
        if let Expr::BinOp(b) = expr
            && let Some(v) = self.known_binop(b, env)
        {
            return v;
        }
        self.thunk(expr, env)
    }

    /// Applies a function value to one argument.
    #[inline]
    pub fn call(&mut self, f: Value<'a>, arg: Value<'a>, pos: Pos) -> Result<Value<'a>> {
        match f {
            Value::Lambda(c) => self.call_lambda(&c, arg, pos),
            other => self.call_other(other, arg, pos),
        }
    }

    /// `call` for builtins, partial applications, functors and thunks:
    /// kept out of line so the lambda path stays small on the stack.
    #[inline(never)]
    fn call_other(&mut self, f: Value<'a>, arg: Value<'a>, pos: Pos) -> Result<Value<'a>> {
        match f {
            Value::Lambda(c) => self.call_lambda(&c, arg, pos),
            Value::PrimOp(op) => {
                if op.arity == 1 {
                    self.call_primop(op, &[arg], pos)
                } else {
                    Ok(Value::PrimOpApp(crate::thin::Shared::new(PartialApp {
                        op,
                        args: vec![arg],
                    })))
                }
            }
            Value::PrimOpApp(app) => {
                if app.args.len() + 1 == app.op.arity {
                    // The last argument: the builtin runs on arguments
                    // gathered on the stack, no `Vec` made.
                    match app.args.as_slice() {
                        [a] => self.call_primop(app.op, &[a.clone(), arg], pos),
                        [a, b] => self.call_primop(app.op, &[a.clone(), b.clone(), arg], pos),
                        _ => {
                            let mut args: SmallVec<[Value<'a>; 4]> = SmallVec::new();
                            for a in app.args.iter() {
                                args.push(a.clone());
                            }
                            args.push(arg);
                            self.call_primop(app.op, &args, pos)
                        }
                    }
                } else {
                    let mut args = Vec::with_capacity(app.args.len() + 1);
                    args.extend(app.args.iter().cloned());
                    args.push(arg);
                    Ok(Value::PrimOpApp(crate::thin::Shared::new(PartialApp {
                        op: app.op,
                        args,
                    })))
                }
            }
            Value::Attrs(attrs) if attrs.contains(known::FUNCTOR) => {
                let functor = attrs.get(known::FUNCTOR).cloned().unwrap_or(Value::Null);
                let functor = self.force(&functor)?;
                let inner = self.call(functor, Value::Attrs(attrs), pos)?;
                self.call(inner, arg, pos)
            }
            Value::Thunk(t) => {
                let f = self.force_thunk(&t)?;
                self.call(f, arg, pos)
            }
            other => Err(Error::eval(
                format!(
                    "attempt to call something which is not a function but {}: {}",
                    other.describe(),
                    self.show_brief(&other)
                ),
                pos,
            )),
        }
    }

    /// Applies a function to several arguments in turn.
    pub fn call_n(&mut self, f: Value<'a>, args: &[Value<'a>], pos: Pos) -> Result<Value<'a>> {
        let mut owned: SmallVec<[Value<'a>; 4]> = SmallVec::new();
        if args.len() > 4 {
            owned.reserve_exact(args.len());
        }
        for a in args {
            owned.push(a.clone());
        }
        self.call_owned(f, &mut owned, pos)
    }

    /// `call_n` taking the arguments' ownership: they move into the
    /// environments instead of being copied (the slice is left holding nulls).
    pub fn call_owned(
        &mut self,
        f: Value<'a>,
        args: &mut [Value<'a>],
        pos: Pos,
    ) -> Result<Value<'a>> {
        let mut f = f;
        let mut i = 0;
        while i < args.len() {
            if let Value::Lambda(c) = &f {
                let (v, used) = self.call_lambda_chain(c, &mut args[i..], pos)?;
                std::mem::replace(&mut f, v).discard();
                i += used;
            } else if let Value::PrimOp(op) = &f
                && op.arity <= args.len() - i
            {
                let op: &'static PrimOp = op;
                f = self.call_primop(op, &args[i..i + op.arity], pos)?;
                i += op.arity;
            } else {
                let arg = std::mem::replace(&mut args[i], Value::Null);
                f = self.call(f, arg, pos)?;
                i += 1;
            }
        }
        Ok(f)
    }

    pub(crate) fn call_primop(
        &mut self,
        op: &'static PrimOp,
        args: &[Value<'a>],
        pos: Pos,
    ) -> Result<Value<'a>> {
        self.enter(pos)?;
        crate::stats::count(crate::stats::Counter::PrimopCalls);
        let result = (op.func)(self, args, pos);
        self.leave();
        result.map_err(|e| {
            e.at(pos)
                .with_frame(pos, format!("while calling the '{}' builtin", op.name))
        })
    }

    fn call_lambda(
        &mut self,
        closure: &Closure<'a>,
        arg: Value<'a>,
        pos: Pos,
    ) -> Result<Value<'a>> {
        self.call_lambda_chain(closure, &mut [arg], pos)
            .map(|(v, _)| v)
    }

    /// Calls a lambda with as many of `args` as its curried body takes
    /// (`a: b: c: ...`), binding the arguments straight into the
    /// environments instead of making the inner closures: one environment
    /// for a run of one-parameter lambdas (`LambdaExpr::merged`), one per
    /// lambda with formals. Returns the result and how many arguments were
    /// used (at least one).
    fn call_lambda_chain(
        &mut self,
        closure: &Closure<'a>,
        args: &mut [Value<'a>],
        pos: Pos,
    ) -> Result<(Value<'a>, usize)> {
        self.enter(pos)?;
        let mut lambda = closure.lambda;
        let mut used = 0;
        let result = self
            .bind_chain(&mut lambda, &closure.env, args, &mut used, pos)
            .and_then(|env| self.eval(&lambda.body, &env));
        self.leave();
        crate::stats::add(crate::stats::Counter::LambdaCalls, used as u64);
        match result {
            Ok(v) => Ok((v, used)),
            Err(e) => Err(self.call_frame(e, lambda)),
        }
    }

    /// Calls `f` with `args` (moved out) for a builtin that calls one
    /// function many times (`sort`, `foldl'`, `filter`, `partition`, ...).
    /// When `f` is a lambda with plain parameters taking exactly these
    /// arguments, the
    /// previous call's environment, kept in `spare`, is refilled if that
    /// call left nothing holding it, instead of a new one per call.
    pub(crate) fn call_again(
        &mut self,
        f: &Value<'a>,
        args: &mut [Value<'a>],
        spare: &mut Option<Env<'a>>,
        pos: Pos,
    ) -> Result<Value<'a>> {
        let Value::Lambda(c) = f else {
            return self.call_owned(f.clone(), args, pos);
        };
        let Some(lambda) = c.lambda.plain_chain(args.len()) else {
            return self.call_owned(f.clone(), args, pos);
        };
        let env = match spare.take() {
            Some(mut env) => {
                if env.refill(args) {
                    env
                } else {
                    Env::with_params(&c.env, false, args)
                }
            }
            None => Env::with_params(&c.env, false, args),
        };
        self.enter(pos)?;
        let result = self.eval(&lambda.body, &env);
        self.leave();
        crate::stats::add(crate::stats::Counter::LambdaCalls, args.len() as u64);
        *spare = Some(env);
        result.map_err(|e| self.call_frame(e, lambda))
    }

    /// The body of a deferred call whose arguments are already bound
    /// (`ThunkState::Call`): what `call_lambda_chain` does after binding.
    fn run_bound_call(&mut self, lambda: &'a LambdaExpr, env: &Env<'a>) -> Result<Value<'a>> {
        self.enter(Pos::NONE)?;
        let result = self.eval(&lambda.body, env);
        self.leave();
        let calls = if lambda.merged { 2 } else { 1 };
        crate::stats::add(crate::stats::Counter::LambdaCalls, calls);
        result.map_err(|e| self.call_frame(e, lambda))
    }

    /// The trace line of an error inside a lambda's call.
    #[cold]
    #[inline(never)]
    fn call_frame(&self, e: Error, lambda: &LambdaExpr) -> Error {
        e.with_frame(
            lambda.pos,
            match lambda.name {
                Some(_) => format!("while calling '{}'", self.lambda_name(lambda)),
                None => "while calling anonymous lambda".to_string(),
            },
        )
    }

    /// The environment `call_lambda_chain` evaluates the body in: binds
    /// `args` to `lambda` and the lambdas of its curried body while both
    /// last, leaving in `lambda` the last one bound and in `used` how many
    /// arguments were taken.
    #[inline]
    fn bind_chain(
        &mut self,
        lambda: &mut &'a LambdaExpr,
        closed: &Env<'a>,
        args: &mut [Value<'a>],
        used: &mut usize,
        pos: Pos,
    ) -> Result<Env<'a>> {
        // One argument for a lambda that does not share its enclosing
        // one's environment (most calls): the argument alone.
        if let (Param::Ident(_), false, [arg]) = (&lambda.param, lambda.merged, &mut *args) {
            *used = 1;
            return Ok(Env::with_array(
                closed,
                [std::mem::replace(arg, Value::Null)],
            ));
        }
        // `None` until the first binding: the closure's environment is
        // borrowed, not counted and dropped again.
        let mut env: Option<Env<'a>> = None;
        loop {
            let current = *lambda;
            let up = env.as_ref().unwrap_or(closed);
            let rest = &mut args[*used..];
            let Some(first) = rest.first_mut() else {
                break;
            };
            let next = match &current.param {
                Param::Ident(_) => {
                    // The merged lambdas that follow share this environment.
                    let mut last = current;
                    let mut n = 1;
                    while let Expr::Lambda(next) = &last.body {
                        if !next.merged || n == rest.len() {
                            break;
                        }
                        last = next;
                        n += 1;
                    }
                    *lambda = last;
                    *used += n;
                    Env::with_params(up, current.merged, &mut rest[..n])
                }
                Param::Formals(formals) => {
                    let arg = std::mem::replace(first, Value::Null);
                    *used += 1;
                    self.bind_formals(current, up, formals, arg, pos)?
                }
            };
            env = Some(next);
            match (&lambda.body, *used < args.len()) {
                (Expr::Lambda(inner), true) => *lambda = inner,
                _ => break,
            }
        }
        Ok(env.unwrap_or_else(|| closed.clone()))
    }

    /// How Nix names a function in messages: its binding, or "anonymous lambda".
    pub(crate) fn lambda_name(&self, lambda: &LambdaExpr) -> String {
        match lambda.name {
            Some(n) => self.symbols.text(n).into_owned(),
            None => "anonymous lambda".to_string(),
        }
    }

    #[inline(never)]
    fn bind_formals(
        &mut self,
        lambda: &'a LambdaExpr,
        up: &Env<'a>,
        formals: &'a Formals,
        arg: Value<'a>,
        pos: Pos,
    ) -> Result<Env<'a>> {
        let forced = self.force(&arg)?;
        let Value::Attrs(attrs) = forced else {
            return Err(self.type_error("a set", &forced, pos).with_frame(
                lambda.pos,
                "while evaluating the value passed for the lambda argument",
            ));
        };
        let env = Env::new(up, lambda.slots as usize);
        if formals.bind.is_some() {
            env.set(0, arg);
        }
        let first = formals.first_slot() as usize;
        let mut used = 0;
        for (i, formal) in formals.entries.iter().enumerate() {
            match attrs.get(formal.name) {
                Some(v) => {
                    env.set(first + i, v.clone());
                    used += 1;
                }
                None => match &formal.default {
                    Some(d) => {
                        let v = self.thunk(d, &env);
                        env.set(first + i, v);
                    }
                    None => {
                        return Err(Error::eval(
                            format!(
                                "function '{}' called without required argument '{}'",
                                self.lambda_name(lambda),
                                self.symbols.text(formal.name)
                            ),
                            pos,
                        )
                        .with_frame(
                            lambda.pos,
                            format!("from call site of '{}'", self.lambda_name(lambda)),
                        ));
                    }
                },
            }
        }
        if !formals.ellipsis && used != attrs.len() {
            let unexpected = attrs
                .lexicographic(&self.symbols)
                .into_iter()
                .find(|a| formals.find(a.name).is_none());
            if let Some(extra) = unexpected {
                return Err(Error::eval(
                    format!(
                        "function '{}' called with unexpected argument '{}'",
                        self.lambda_name(lambda),
                        self.symbols.text(extra.name)
                    ),
                    pos,
                ));
            }
        }
        Ok(env)
    }

    // ----- errors -----

    #[cold]
    #[inline(never)]
    pub(crate) fn type_error(&self, expected: &str, found: &Value<'a>, pos: Pos) -> Error {
        Error::eval(
            format!(
                "expected {expected} but found {}: {}",
                found.describe(),
                self.show_brief(found)
            ),
            pos,
        )
    }

    /// A short rendering of a value for messages (no forcing).
    pub(crate) fn show_brief(&self, v: &Value<'a>) -> String {
        crate::print::brief(self, v)
    }
}

/// Levenshtein distance, for "Did you mean" hints.
fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for i in 1..=a.len() {
        let mut cur = vec![i; b.len() + 1];
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            cur[j] = (prev[j] + 1).min(cur[j - 1] + 1).min(prev[j - 1] + cost);
        }
        prev = cur;
    }
    prev[b.len()]
}

#[cfg(test)]
mod tests {
    /// Asserts that each expression prints the value given with it.
    fn assert_values(cases: &[(&str, &str)]) {
        for (expr, want) in cases {
            assert_eq!(eval(expr), *want, "{expr}");
        }
    }

    fn eval(expr: &str) -> String {
        let mut request = crate::Request::new(crate::Source::expr(expr, std::env::temp_dir()));
        request.strict = true;
        match crate::evaluate(&crate::EvalOptions::default(), &request) {
            Ok(out) => String::from_utf8_lossy(&out.text).into_owned(),
            Err(e) => format!("error: {e}"),
        }
    }

    /// Curried one-parameter lambdas share one environment: every way of
    /// applying them (all at once, one by one, partially through a builtin)
    /// sees the same arguments, and a repeated name is the innermost one.
    #[test]
    fn curried_lambdas_see_their_arguments_however_applied() {
        let cases = [
            ("let f = x: y: z: [x y z]; in f 1 2 3", "[ 1 2 3 ]"),
            ("let f = x: y: z: [x y z]; g = f 1; in g 2 3", "[ 1 2 3 ]"),
            (
                "let f = x: y: z: [x y z]; h = f 1 2; in [(h 3) (h 4)]",
                "[ [ 1 2 3 ] [ 1 2 4 ] ]",
            ),
            ("let f = x: y: z: [x y z]; in ((f 1) 2) 3", "[ 1 2 3 ]"),
            (
                "let f = x: x: y: [x y]; in [(f 1 2 3) (((f 1) 2) 3)]",
                "[ [ 2 3 ] [ 2 3 ] ]",
            ),
            ("let f = x: y: x: y: [x y]; in f 1 2 3 4", "[ 3 4 ]"),
            (
                "let f = a: b: { c }: d: e: [a b c d e]; in f 1 2 { c = 3; } 4 5",
                "[ 1 2 3 4 5 ]",
            ),
            ("let f = a: (b: a + b); in f 1 2", "3"),
            ("(a: b: with { c = 3; }; a + b + c) 1 2", "6"),
            (
                "(a: b: rec { x = a; y = b; z = x + y; }) 1 2",
                "{ x = 1; y = 2; z = 3; }",
            ),
            ("builtins.foldl' (acc: x: acc * 10 + x) 0 [ 1 2 3 ]", "123"),
            ("builtins.sort (a: b: a > b) [ 1 3 2 ]", "[ 3 2 1 ]"),
            ("map (f: f 5) (map (x: y: x - y) [ 10 20 ])", "[ 5 15 ]"),
            ("let f = x: y: let z = x + y; in w: z * w; in f 1 2 3", "9"),
        ];
        assert_values(&cases);
    }

    /// An argument computed at the call (`f (n - 1)` with `n` known) has
    /// the value the operator gives, and one that would fail stays lazy:
    /// the error comes only if the argument is used.
    #[test]
    fn arithmetic_arguments_computed_at_the_call_keep_their_meaning() {
        let cases = [
            (
                "let n = 7; f = x: x; in [ (f (n - 1)) (f (n / 2)) (f (n * 3)) (f (n + 0.5)) ]",
                "[ 6 3 21 7.5 ]",
            ),
            (
                "let n = -7; f = x: x; in [ (f (n / 2)) (f (n < 2)) (f (n >= -7)) (f (2 > n)) ]",
                "[ -3 true true true ]",
            ),
            (
                "let n = 2.5; f = x: x; in [ (f (n <= 2)) (f (n == 2.5)) (f (n != 2)) (f (n / 2)) ]",
                "[ false true true 1.25 ]",
            ),
            ("let n = 9223372036854775807; f = x: 1; in f (n + 1)", "1"),
            ("let n = 5; f = x: 1; in f (n / 0)", "1"),
            ("let n = 5; f = x: 1; in f (n / 0.0)", "1"),
            ("let s = \"a\"; f = x: 1; in f (s - 1)", "1"),
        ];
        assert_values(&cases);
        for (expr, error) in [
            (
                "let n = 9223372036854775807; f = x: x; in f (n + 1)",
                "integer overflow",
            ),
            ("let n = 5; f = x: x; in f (n / 0)", "division by zero"),
            (
                "let s = \"a\"; f = x: x; in f (s - 1)",
                "expected an integer",
            ),
        ] {
            let out = eval(expr);
            assert!(
                out.starts_with("error:") && out.contains(error),
                "{expr}: {out}"
            );
        }
    }

    /// `map`, `genList`, `mapAttrs` and `zipAttrsWith` defer their calls;
    /// a lambda with plain parameters gets its arguments bound up front
    /// (`ThunkState::Call`), any other function a deferred application.
    /// Either way nothing runs until an element is used, and an error in
    /// one names the lambda it came from.
    #[test]
    fn deferred_calls_of_builtins_stay_lazy_whatever_the_function() {
        let cases = [
            ("builtins.length (map (x: throw \"unused\") [ 1 2 ])", "2"),
            ("map (x: x * 2) [ 1 2 ]", "[ 2 4 ]"),
            ("let f = a: b: a - b; in map (f 10) [ 1 2 ]", "[ 9 8 ]"),
            ("map ({ a }: a) [ { a = 1; } ]", "[ 1 ]"),
            ("map builtins.toString [ 1 2 ]", "[ \"1\" \"2\" ]"),
            ("builtins.genList (i: i * i) 4", "[ 0 1 4 9 ]"),
            (
                "builtins.mapAttrs (n: v: n + v) { a = \"x\"; }",
                "{ a = \"ax\"; }",
            ),
            (
                "builtins.mapAttrs (n: { v }: v) { a = { v = 1; }; }",
                "{ a = 1; }",
            ),
            ("builtins.mapAttrs (n: v: x: n) { a = 1; } ? a", "true"),
            (
                "builtins.zipAttrsWith (n: vs: builtins.length vs) [ { a = 1; } { a = 2; } ]",
                "{ a = 2; }",
            ),
            (
                "(builtins.tryEval (builtins.head (map (x: throw \"no\") [ 1 ]))).success",
                "false",
            ),
            (
                "builtins.attrNames (builtins.mapAttrs (n: v: throw n) { a = 1; b = 2; })",
                "[ \"a\" \"b\" ]",
            ),
        ];
        assert_values(&cases);
        let out = eval("let double = x: x * 2; in builtins.head (map double [ \"a\" ])");
        assert!(out.contains("while calling 'double'"), "{out}");
        let out = eval("builtins.mapAttrs (name: value: value + 1) { a = \"s\"; }");
        assert!(out.contains("while calling anonymous lambda"), "{out}");
    }

    /// Builtins that call one function many times refill the previous
    /// call's environment only when nothing kept it: closures, thunks and
    /// `let` scopes made by a call see that call's arguments, not a later
    /// call's.
    #[test]
    fn a_reused_call_environment_never_changes_what_a_call_kept() {
        let cases = [
            (
                "map (f: f null) (builtins.foldl' (acc: x: acc ++ [ (_: x) ]) [ ] [ 1 2 3 ])",
                "[ 1 2 3 ]",
            ),
            (
                "builtins.foldl' (acc: x: acc ++ [ (x * 10) ]) [ ] [ 1 2 3 ]",
                "[ 10 20 30 ]",
            ),
            ("builtins.concatMap (x: [ x x ]) [ 1 2 ]", "[ 1 1 2 2 ]"),
            (
                "builtins.concatMap (x: let y = { v = x; }; in [ y.v ]) [ 1 2 ]",
                "[ 1 2 ]",
            ),
            (
                "builtins.filter (x: let y = x; in y > 1) [ 1 2 3 ]",
                "[ 2 3 ]",
            ),
            (
                "builtins.sort (a: b: a.k < b.k) [ { k = 2; } { k = 1; } { k = 3; } ]",
                "[ { k = 1; } { k = 2; } { k = 3; } ]",
            ),
            ("builtins.all (x: x > 0) [ 1 2 ]", "true"),
            ("builtins.any (x: x > 1) [ 1 2 ]", "true"),
            ("builtins.foldl' (a: b: a + b) 0 [ 1 2 3 ]", "6"),
            (
                "builtins.foldl' (acc: { x }: acc + x) 0 [ { x = 1; } { x = 2; } ]",
                "3",
            ),
            (
                "builtins.partition (x: x > 1) [ 1 2 3 ]",
                "{ right = [ 2 3 ]; wrong = [ 1 ]; }",
            ),
            (
                "builtins.groupBy (x: if x > 1 then \"big\" else \"small\") [ 1 2 3 ]",
                "{ big = [ 2 3 ]; small = [ 1 ]; }",
            ),
            (
                "map (f: f null) (builtins.partition (x: true) (map (x: _: x) [ 1 2 ])).right",
                "[ 1 2 ]",
            ),
        ];
        assert_values(&cases);
        let out = eval("builtins.all (x: x) [ 1 ]");
        assert!(out.contains("passed to builtins.all"), "{out}");
    }

    #[test]
    fn a_wrong_argument_to_a_curried_lambda_is_still_an_error() {
        let out = eval("let f = a: { c }: c; in f 1 { c = 1; d = 2; }");
        assert!(out.contains("unexpected argument 'd'"), "{out}");
        let out = eval("let f = a: b: a + b; in f 1 \"x\"");
        assert!(out.starts_with("error:"), "{out}");
    }
}
