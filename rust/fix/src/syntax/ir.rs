//! The lowered program the evaluator walks. Every variable is already
//! resolved: a local is (depth, slot) in the environment chain, a builtin is
//! an index into the globals, and only names under `with` are looked up by
//! name at run time. Attribute sets arrive with their static names sorted
//! and nested paths merged, so building one at run time is a copy.

use crate::source::Pos;
use crate::symbol::Sym;
use crate::value::NixString;

pub enum Expr {
    Int(i64),
    Float(f64),
    Str(NixString),
    /// An absolute path, already resolved against the file's directory.
    Path(NixString),
    /// A variable bound `depth` environments up, in slot `idx`.
    Local {
        depth: u32,
        idx: u32,
    },
    /// A builtin or constant of the base environment.
    Global(u32),
    /// A name found in no static scope: looked up in the enclosing `with`s.
    WithVar(Box<WithVar>),
    Interpolate(Box<Interpolation>),
    List(Box<[Expr]>),
    Attrs(Box<AttrsExpr>),
    Let(Box<LetExpr>),
    Lambda(Box<LambdaExpr>),
    Apply(Box<ApplyExpr>),
    Select(Box<SelectExpr>),
    HasAttr(Box<HasAttrExpr>),
    If(Box<IfExpr>),
    Assert(Box<AssertExpr>),
    With(Box<WithExpr>),
    BinOp(Box<BinOpExpr>),
    Not(Box<NotExpr>),
    /// `__curPos`: an attribute set with this position.
    CurPos(Pos),
}

pub struct WithVar {
    pub name: Sym,
    /// The depth of every enclosing `with` environment, innermost first.
    pub depths: Box<[u32]>,
    pub pos: Pos,
}

pub enum Part {
    Lit(NixString),
    Expr(Expr, Pos),
}

pub struct Interpolation {
    pub parts: Box<[Part]>,
    /// `./a/${b}`: the result is a path, not a string.
    pub path: bool,
}

pub struct StaticAttr {
    pub name: Sym,
    pub pos: Pos,
    pub value: Expr,
}

pub struct DynamicAttr {
    pub name: Expr,
    pub value: Expr,
    pub pos: Pos,
}

/// An attribute set literal.
///
/// When `env_slots` is non-zero the set gets an environment of its own:
/// for `rec`, slot `i` holds static attribute `i`; after the attributes come
/// the sources of `inherit (e)`, evaluated in the new environment for `rec`
/// and in the enclosing one otherwise. Values are evaluated in the new
/// environment when it exists. Sources that are all variables take no
/// slots: `inherit (x) a;` is lowered to `x.a` read where the set is.
pub struct AttrsExpr {
    pub statics: Box<[StaticAttr]>,
    pub dynamics: Box<[DynamicAttr]>,
    pub rec: bool,
    /// A `rec` set with a static `__overrides` attribute.
    pub overrides: bool,
    pub env_slots: u32,
    pub inherit_sources: Box<[Expr]>,
}

/// `let`: one environment with a slot per binding (plus the sources of
/// `inherit (e)` unless they are all variables), all evaluated lazily in
/// that environment.
pub struct LetExpr {
    pub bindings: Box<[Expr]>,
    pub body: Expr,
}

pub struct Formal {
    pub name: Sym,
    pub default: Option<Expr>,
    pub pos: Pos,
}

pub enum Param {
    /// `x: body`, the argument in slot 0.
    Ident(Sym),
    /// `{ a, b ? d, ... } @ x: body`: `x` (if present) in slot 0, then the
    /// formals in the order given here (sorted by `Sym`).
    Formals(Box<Formals>),
}

pub struct Formals {
    pub entries: Box<[Formal]>,
    pub ellipsis: bool,
    pub bind: Option<Sym>,
}

impl Formals {
    pub fn first_slot(&self) -> u32 {
        u32::from(self.bind.is_some())
    }

    pub fn find(&self, name: Sym) -> Option<&Formal> {
        self.entries
            .binary_search_by_key(&name, |f| f.name)
            .ok()
            .map(|i| &self.entries[i])
    }
}

pub struct LambdaExpr {
    /// The name it was bound to, for traces (`f = x: ...`).
    pub name: Option<Sym>,
    pub param: Param,
    pub body: Expr,
    pub slots: u32,
    /// `a: b: body`'s inner lambda: its environment is the enclosing
    /// lambda's slots followed by its own parameter (in slot `slots - 1`),
    /// so a call given both arguments builds one environment, not two. A
    /// closure of it closes over the enclosing lambda's environment, whose
    /// slots are copied when it is called.
    pub merged: bool,
    pub pos: Pos,
}

impl LambdaExpr {
    /// For a call with `n` arguments (one or two) of a lambda whose
    /// parameters are plain names, all bound into one environment (`x:`,
    /// or `a: b:` whose inner lambda is `merged`): the lambda whose body
    /// the call runs. Binding such arguments forces nothing, so callers may
    /// bind them ahead of running the body. `None` for any other shape.
    pub fn plain_chain(&self, n: usize) -> Option<&LambdaExpr> {
        if self.merged || !matches!(self.param, Param::Ident(_)) {
            return None;
        }
        match (n, &self.body) {
            (1, _) => Some(self),
            (2, Expr::Lambda(inner)) if inner.merged && matches!(inner.param, Param::Ident(_)) => {
                Some(inner)
            }
            _ => None,
        }
    }
}

pub struct ApplyExpr {
    pub func: Expr,
    pub args: Args,
    pub pos: Pos,
}

/// A call's arguments: one or two, nearly always, held in the call's own
/// block, so that a call reads one block for its function and arguments.
pub type Args = smallvec::SmallVec<[Expr; 2]>;

/// An attribute path's keys: one or two, nearly always, held in the
/// block of the selection or `?` test they belong to.
pub type Keys = smallvec::SmallVec<[AttrKey; 2]>;

pub enum AttrKey {
    Static(Sym),
    Dynamic(Expr),
}

pub struct SelectExpr {
    pub base: Expr,
    /// One or two keys, nearly always: held in the selection's own block.
    pub path: smallvec::SmallVec<[SelectKey; 2]>,
    pub default: Option<Expr>,
    pub pos: Pos,
}

/// A key of a selection's path, and where in its set the name was found
/// last time: the set a selection reads is often the same one, or one of
/// the same shape, so the entry there is tried before a search. Side by
/// side, so that a selection reads one block for both.
pub struct SelectKey {
    pub key: AttrKey,
    pub hint: std::cell::Cell<u32>,
}

impl SelectExpr {
    pub fn new(
        base: Expr,
        path: impl IntoIterator<Item = AttrKey>,
        default: Option<Expr>,
        pos: Pos,
    ) -> Self {
        let path = path
            .into_iter()
            .map(|key| SelectKey {
                key,
                hint: std::cell::Cell::new(0),
            })
            .collect();
        SelectExpr {
            base,
            path,
            default,
            pos,
        }
    }
}

pub struct HasAttrExpr {
    pub base: Expr,
    pub path: Keys,
    pub pos: Pos,
}

pub struct IfExpr {
    pub cond: Expr,
    pub then: Expr,
    pub otherwise: Expr,
    pub pos: Pos,
}

pub struct AssertExpr {
    pub cond: Expr,
    pub body: Expr,
    /// The condition as written, for the message.
    pub text: Box<str>,
    pub pos: Pos,
}

pub struct WithExpr {
    pub attrs: Expr,
    pub body: Expr,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BinOp {
    Add,
    Sub,
    Mul,
    Div,
    Concat,
    Update,
    Eq,
    Neq,
    Lt,
    Le,
    Gt,
    Ge,
    And,
    Or,
    Impl,
}

pub struct BinOpExpr {
    pub op: BinOp,
    pub lhs: Expr,
    pub rhs: Expr,
    pub pos: Pos,
}

pub struct NotExpr {
    pub expr: Expr,
    pub pos: Pos,
}
