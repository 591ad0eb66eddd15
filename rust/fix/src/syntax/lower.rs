//! Lowering: rnix's syntax tree to `ir::Expr`, resolving every variable and
//! making the checks Nix's own parser makes (duplicate attributes, also
//! across nested paths and merged set literals; duplicate formals;
//! undefined variables; `~/` paths in pure mode; pipe operators only when
//! enabled).

use super::ir::*;
use super::strings::{Piece, canon_path, string_pieces};
use crate::error::{Error, ErrorKind, Result};
use crate::options::{LintLevel, Lints};
use crate::source::{FileId, Pos, SourceMap};
use crate::symbol::{Sym, Symbols, known};
use crate::value::NixString;
use rnix::ast::{self, HasEntry};
use rnix::{SyntaxKind, SyntaxNode, TextSize};
use rowan::ast::AstNode;
use rustc_hash::FxHashMap;

/// What lowering needs to know about where the code comes from.
pub struct LowerOptions<'o> {
    /// The directory relative paths are resolved against (absolute).
    pub base_dir: &'o [u8],
    /// The home directory for `~/` paths; `None` refuses them (pure mode).
    pub home: Option<&'o [u8]>,
    /// Whether `|>` and `<|` are allowed (Nix's `pipe-operators` feature).
    pub pipe_operators: bool,
    /// `scopedImport`: names bound in the file's outermost environment,
    /// slot `i` holding `scope[i]`.
    pub scope: Option<&'o [Sym]>,
    /// Below this stack address lowering stops (a chain of 200,000 `+` is
    /// 200,000 levels deep even though rnix bounds nesting).
    pub stack_limit: usize,
    /// The literal lints: warnings go to `warnings`, fatal ones fail.
    pub lints: Lints,
}

/// A lint warning: the message (with the setting's name) and where.
pub type Warning = (String, Pos);

/// Lowers one parsed file.
pub fn lower(
    root: &ast::Root,
    symbols: &mut Symbols,
    globals: &FxHashMap<Sym, u32>,
    sources: &SourceMap,
    file: FileId,
    options: &LowerOptions<'_>,
    warnings: &mut Vec<Warning>,
) -> Result<Expr> {
    let mut lowerer = Lowerer {
        symbols,
        globals,
        sources,
        file,
        options,
        scopes: Vec::new(),
        merge_next: false,
        warnings,
    };
    if let Some(names) = options.scope {
        let map = names
            .iter()
            .enumerate()
            .map(|(i, &s)| (s, i as u32))
            .collect();
        lowerer.scopes.push(Scope::Names(map));
    }
    let expr = lowerer.need(root.expr(), root.syntax())?;
    lowerer.expr(&expr)
}

enum Scope {
    Names(FxHashMap<Sym, u32>),
    With,
    /// An environment with slots but no names (the sources of `inherit (e)`
    /// in a non-recursive set).
    Hidden,
}

struct Lowerer<'l> {
    symbols: &'l mut Symbols,
    globals: &'l FxHashMap<Sym, u32>,
    sources: &'l SourceMap,
    file: FileId,
    options: &'l LowerOptions<'l>,
    scopes: Vec<Scope>,
    /// Set by a one-parameter lambda whose body is another one-parameter
    /// lambda: that inner lambda shares its environment (see
    /// `LambdaExpr::merged`). Taken by the next lambda lowered.
    merge_next: bool,
    warnings: &'l mut Vec<Warning>,
}

/// An attribute set (or `let`) being collected before lowering, so nested
/// paths and later set literals can merge into earlier definitions exactly
/// as Nix's parser merges them.
struct Pending {
    rec: bool,
    pos: Pos,
    statics: Vec<PendingStatic>,
    index: FxHashMap<Sym, usize>,
    dynamics: Vec<PendingDynamic>,
    sources: Vec<ast::Expr>,
}

struct PendingStatic {
    name: Sym,
    pos: Pos,
    value: PendingValue,
}

enum PendingValue {
    Expr(ast::Expr),
    Nested(Box<Pending>),
    Inherit,
    InheritFrom(usize),
}

struct PendingDynamic {
    name: ast::Expr,
    pos: Pos,
    value: PendingValue,
}

enum Key {
    Static(Sym),
    Dynamic(ast::Expr),
}

impl Pending {
    fn new(rec: bool, pos: Pos) -> Self {
        Pending {
            rec,
            pos,
            statics: Vec::new(),
            index: FxHashMap::default(),
            dynamics: Vec::new(),
            sources: Vec::new(),
        }
    }

    fn insert(&mut self, name: Sym, pos: Pos, value: PendingValue) -> usize {
        let i = self.statics.len();
        self.statics.push(PendingStatic { name, pos, value });
        self.index.insert(name, i);
        i
    }
}

fn unparen(mut e: ast::Expr) -> ast::Expr {
    while let ast::Expr::Paren(p) = &e {
        match p.expr() {
            Some(inner) => e = inner,
            None => break,
        }
    }
    e
}

impl Lowerer<'_> {
    fn pos_at(&self, offset: TextSize) -> Pos {
        self.sources.pos(self.file, usize::from(offset))
    }

    fn pos(&self, node: &SyntaxNode) -> Pos {
        self.pos_at(node.text_range().start())
    }

    fn need<T>(&self, x: Option<T>, at: &SyntaxNode) -> Result<T> {
        x.ok_or_else(|| {
            Error::new(
                ErrorKind::Parse,
                "syntax error, incomplete expression",
                self.pos(at),
            )
        })
    }

    fn fail(&self, message: impl Into<String>, pos: Pos) -> Error {
        Error::new(ErrorKind::Parse, message, pos)
    }

    /// Applies one lint: nothing, a warning, or a parse error. `message`
    /// gets the fatal flag (Nix words a few messages differently).
    fn lint(
        &mut self,
        level: LintLevel,
        setting: &str,
        pos: Pos,
        message: impl FnOnce(bool) -> String,
    ) -> Result<()> {
        match level {
            LintLevel::Ignore => Ok(()),
            LintLevel::Warn => {
                let text = format!("{} ({setting})", message(false));
                self.warnings.push((text, pos));
                Ok(())
            }
            LintLevel::Fatal => Err(self.fail(format!("{} ({setting})", message(true)), pos)),
        }
    }

    fn location(&self, pos: Pos) -> String {
        self.sources
            .resolve(pos)
            .map(|l| l.display())
            .unwrap_or_else(|| "«unknown»".into())
    }

    fn ident_sym(&mut self, ident: &ast::Ident) -> Sym {
        // An identifier node holds just its token.
        match ident.syntax().first_token() {
            Some(t) if matches!(t.kind(), SyntaxKind::TOKEN_IDENT | SyntaxKind::TOKEN_OR) => {
                self.symbols.intern(t.text().as_bytes())
            }
            _ => self.symbols.intern(b""),
        }
    }

    /// Resolves `name`, ignoring the innermost `skip` scopes (used by
    /// `inherit x;`, which reads `x` from outside the set it is in).
    fn resolve(&self, name: Sym, skip: usize) -> Option<Expr> {
        let mut withs = Vec::new();
        for (depth, scope) in self.scopes.iter().rev().enumerate() {
            if depth < skip {
                continue;
            }
            match scope {
                Scope::Names(names) => {
                    if let Some(&idx) = names.get(&name) {
                        return Some(Expr::Local {
                            depth: depth as u32,
                            idx,
                        });
                    }
                }
                Scope::With => withs.push(depth as u32),
                Scope::Hidden => {}
            }
        }
        if let Some(&g) = self.globals.get(&name) {
            return Some(Expr::Global(g));
        }
        if withs.is_empty() {
            return None;
        }
        Some(Expr::WithVar(Box::new(WithVar {
            name,
            depths: withs.into(),
            pos: Pos::NONE,
        })))
    }

    fn var(&self, name: Sym, pos: Pos, skip: usize) -> Result<Expr> {
        match self.resolve(name, skip) {
            Some(Expr::WithVar(mut w)) => {
                w.pos = pos;
                Ok(Expr::WithVar(w))
            }
            Some(e) => Ok(e),
            None => Err(self.fail(
                format!("undefined variable '{}'", self.symbols.text(name)),
                pos,
            )),
        }
    }

    /// Whether `name` still means the builtin of that name here (an
    /// operator like `<` is sugar for a call of `__lessThan`, which a
    /// program may rebind).
    fn is_builtin(&self, name: Sym) -> bool {
        match (self.resolve(name, 0), self.globals.get(&name)) {
            (Some(Expr::Global(g)), Some(&b)) => g == b,
            _ => false,
        }
    }

    fn expr(&mut self, e: &ast::Expr) -> Result<Expr> {
        let node = e.syntax();
        let pos = self.pos(node);
        if crate::stack::address() < self.options.stack_limit {
            return Err(Error::new(
                ErrorKind::StackOverflow,
                "the expression is nested too deeply to evaluate",
                pos,
            ));
        }
        Ok(match e {
            ast::Expr::Apply(a) => self.apply(a)?,
            ast::Expr::Assert(a) => {
                let cond_ast = self.need(a.condition(), node)?;
                let text = cond_ast.syntax().text().to_string().into_boxed_str();
                let cond = self.expr(&cond_ast)?;
                let body = self.expr(&self.need(a.body(), node)?)?;
                Expr::Assert(Box::new(AssertExpr {
                    cond,
                    body,
                    text,
                    pos,
                }))
            }
            ast::Expr::Error(_) => return Err(self.fail("syntax error", pos)),
            ast::Expr::IfElse(i) => {
                let cond = self.expr(&self.need(i.condition(), node)?)?;
                let then = self.expr(&self.need(i.body(), node)?)?;
                let otherwise = self.expr(&self.need(i.else_body(), node)?)?;
                Expr::If(Box::new(IfExpr {
                    cond,
                    then,
                    otherwise,
                    pos,
                }))
            }
            ast::Expr::Select(s) => {
                let base = self.expr(&self.need(s.expr(), node)?)?;
                let attrpath = self.need(s.attrpath(), node)?;
                let path = self.attr_keys(&attrpath)?;
                let default = match s.default_expr() {
                    Some(d) => Some(self.expr(&d)?),
                    None => None,
                };
                let pos = self.pos(attrpath.syntax());
                Expr::Select(Box::new(SelectExpr::new(base, path, default, pos)))
            }
            ast::Expr::Str(s) => self.string(s)?,
            ast::Expr::PathAbs(p) => self.path(p.syntax(), PathKind::Abs, pos)?,
            ast::Expr::PathRel(p) => self.path(p.syntax(), PathKind::Rel, pos)?,
            ast::Expr::PathHome(p) => self.path(p.syntax(), PathKind::Home, pos)?,
            ast::Expr::PathSearch(p) => self.search_path(p, pos)?,
            ast::Expr::Literal(l) => self.literal(l, pos)?,
            ast::Expr::Lambda(l) => Expr::Lambda(Box::new(self.lambda(l)?)),
            ast::Expr::LegacyLet(l) => {
                let mut pending = Pending::new(true, pos);
                let mut shown = Vec::new();
                self.add_entries(&mut pending, l.entries(), &mut shown)?;
                let attrs = Expr::Attrs(Box::new(self.lower_attrs(pending)?));
                Expr::Select(Box::new(SelectExpr::new(
                    attrs,
                    [AttrKey::Static(known::BODY)],
                    None,
                    pos,
                )))
            }
            ast::Expr::LetIn(l) => {
                let mut pending = Pending::new(true, pos);
                let mut shown = Vec::new();
                self.add_entries(&mut pending, l.entries(), &mut shown)?;
                let body = self.need(l.body(), node)?;
                Expr::Let(Box::new(self.lower_let(pending, &body)?))
            }
            ast::Expr::List(l) => {
                let items = l
                    .items()
                    .map(|i| self.expr(&i))
                    .collect::<Result<Vec<_>>>()?;
                Expr::List(items.into())
            }
            ast::Expr::BinOp(b) => self.binop(b)?,
            ast::Expr::Paren(p) => self.expr(&self.need(p.expr(), node)?)?,
            ast::Expr::Root(r) => self.expr(&self.need(r.expr(), node)?)?,
            ast::Expr::AttrSet(a) => {
                let mut shown = Vec::new();
                let pending = self.pending_from_literal(a, &mut shown)?;
                Expr::Attrs(Box::new(self.lower_attrs(pending)?))
            }
            ast::Expr::UnaryOp(u) => {
                let operand = self.expr(&self.need(u.expr(), node)?)?;
                match self.need(u.operator(), node)? {
                    ast::UnaryOpKind::Invert => Expr::Not(Box::new(NotExpr { expr: operand, pos })),
                    ast::UnaryOpKind::Negate => {
                        if self.is_builtin(known::SUB) {
                            Expr::BinOp(Box::new(BinOpExpr {
                                op: BinOp::Sub,
                                lhs: Expr::Int(0),
                                rhs: operand,
                                pos,
                            }))
                        } else {
                            let func = self.var(known::SUB, pos, 0)?;
                            Expr::Apply(Box::new(ApplyExpr {
                                func,
                                args: smallvec::smallvec![Expr::Int(0), operand],
                                pos,
                            }))
                        }
                    }
                }
            }
            ast::Expr::Ident(i) => {
                let name = self.ident_sym(i);
                self.var(name, pos, 0)?
            }
            ast::Expr::With(w) => {
                let attrs = self.expr(&self.need(w.namespace(), node)?)?;
                self.scopes.push(Scope::With);
                let body = self.need(w.body(), node).and_then(|b| self.expr(&b));
                self.scopes.pop();
                Expr::With(Box::new(WithExpr { attrs, body: body? }))
            }
            ast::Expr::HasAttr(h) => {
                let base = self.expr(&self.need(h.expr(), node)?)?;
                let path = self.attr_keys(&self.need(h.attrpath(), node)?)?;
                Expr::HasAttr(Box::new(HasAttrExpr { base, path, pos }))
            }
            ast::Expr::CurPos(_) => Expr::CurPos(pos),
        })
    }

    fn apply(&mut self, a: &ast::Apply) -> Result<Expr> {
        let pos = self.pos(a.syntax());
        let mut args = Vec::new();
        let mut current = a.clone();
        let func = loop {
            args.push(self.need(current.argument(), current.syntax())?);
            match self.need(current.lambda(), current.syntax())? {
                ast::Expr::Apply(inner) => current = inner,
                other => break other,
            }
        };
        let func = self.expr(&func)?;
        let args = args
            .iter()
            .rev()
            .map(|e| self.expr(e))
            .collect::<Result<Args>>()?;
        Ok(Expr::Apply(Box::new(ApplyExpr { func, args, pos })))
    }

    fn binop(&mut self, b: &ast::BinOp) -> Result<Expr> {
        use ast::BinOpKind as K;
        let node = b.syntax();
        let op_token = node
            .children_with_tokens()
            .filter_map(|e| e.into_token())
            .find(|t| K::from_kind(t.kind()).is_some());
        let pos = op_token
            .map(|t| self.pos_at(t.text_range().start()))
            .unwrap_or_else(|| self.pos(node));
        let kind = self.need(b.operator(), node)?;
        if matches!(kind, K::PipeLeft | K::PipeRight) && !self.options.pipe_operators {
            return Err(self.fail(
                "experimental Nix feature 'pipe-operators' is disabled; add '--extra-experimental-features pipe-operators' to enable it",
                pos,
            ));
        }
        let lhs = self.expr(&self.need(b.lhs(), node)?)?;
        let rhs = self.expr(&self.need(b.rhs(), node)?)?;
        let op = match kind {
            K::PipeRight => {
                return Ok(Expr::Apply(Box::new(ApplyExpr {
                    func: rhs,
                    args: smallvec::smallvec![lhs],
                    pos,
                })));
            }
            K::PipeLeft => {
                return Ok(Expr::Apply(Box::new(ApplyExpr {
                    func: lhs,
                    args: smallvec::smallvec![rhs],
                    pos,
                })));
            }
            K::Less | K::LessOrEq | K::More | K::MoreOrEq if !self.is_builtin(known::LESS_THAN) => {
                return self.user_comparison(kind, lhs, rhs, pos);
            }
            // `-`, `*` and `/` are calls of `__sub`, `__mul` and `__div`.
            K::Sub | K::Mul | K::Div => {
                let (name, op) = match kind {
                    K::Sub => (known::SUB, BinOp::Sub),
                    K::Mul => (known::MUL, BinOp::Mul),
                    _ => (known::DIV, BinOp::Div),
                };
                if !self.is_builtin(name) {
                    let func = self.var(name, pos, 0)?;
                    return Ok(Expr::Apply(Box::new(ApplyExpr {
                        func,
                        args: smallvec::smallvec![lhs, rhs],
                        pos,
                    })));
                }
                op
            }
            K::Concat => BinOp::Concat,
            K::Update => BinOp::Update,
            K::Add => BinOp::Add,
            K::And => BinOp::And,
            K::Equal => BinOp::Eq,
            K::Implication => BinOp::Impl,
            K::Less => BinOp::Lt,
            K::LessOrEq => BinOp::Le,
            K::More => BinOp::Gt,
            K::MoreOrEq => BinOp::Ge,
            K::NotEqual => BinOp::Neq,
            K::Or => BinOp::Or,
        };
        Ok(Expr::BinOp(Box::new(BinOpExpr { op, lhs, rhs, pos })))
    }

    /// `<` and friends when the program rebound `__lessThan`: exactly the
    /// calls Nix's parser writes for them.
    fn user_comparison(
        &mut self,
        kind: ast::BinOpKind,
        lhs: Expr,
        rhs: Expr,
        pos: Pos,
    ) -> Result<Expr> {
        use ast::BinOpKind as K;
        let func = self.var(known::LESS_THAN, pos, 0)?;
        let call = |func, a, b| {
            Expr::Apply(Box::new(ApplyExpr {
                func,
                args: smallvec::smallvec![a, b],
                pos,
            }))
        };
        let not = |expr| Expr::Not(Box::new(NotExpr { expr, pos }));
        Ok(match kind {
            K::Less => call(func, lhs, rhs),
            K::More => call(func, rhs, lhs),
            K::LessOrEq => not(call(func, rhs, lhs)),
            _ => not(call(func, lhs, rhs)),
        })
    }

    fn literal(&mut self, l: &ast::Literal, pos: Pos) -> Result<Expr> {
        let token = self.need(l.syntax().first_token(), l.syntax())?;
        let text = token.text();
        Ok(match token.kind() {
            SyntaxKind::TOKEN_INTEGER => match text.parse::<i64>() {
                Ok(n) => Expr::Int(n),
                Err(_) => return Err(self.fail(format!("invalid integer '{text}'"), pos)),
            },
            SyntaxKind::TOKEN_FLOAT => match text.parse::<f64>() {
                Ok(f) if f.is_finite() => Expr::Float(f),
                _ => return Err(self.fail(format!("invalid float '{text}'"), pos)),
            },
            _ => {
                if token.kind() == SyntaxKind::TOKEN_URI {
                    let level = self.options.lints.url_literals;
                    self.lint(level, "lint-url-literals", pos, |fatal| {
                        format!(
                            "URL literals are {}. Consider using a string literal \"{text}\" instead",
                            if fatal { "disallowed" } else { "discouraged" }
                        )
                    })?;
                }
                Expr::Str(NixString::from(text))
            }
        })
    }

    fn string(&mut self, s: &ast::Str) -> Result<Expr> {
        let pieces = string_pieces(s);
        self.no_nul(&pieces, s.syntax())?;
        if pieces.iter().all(|p| matches!(p, Piece::Lit(_))) {
            let mut bytes = Vec::new();
            for p in pieces {
                if let Piece::Lit(b) = p {
                    bytes.extend(b);
                }
            }
            return Ok(Expr::Str(NixString::from(bytes)));
        }
        let parts = self.parts(pieces)?;
        Ok(Expr::Interpolate(Box::new(Interpolation {
            parts,
            path: false,
        })))
    }

    /// Nix strings cannot hold a NUL byte.
    fn no_nul(&self, pieces: &[Piece], at: &SyntaxNode) -> Result<()> {
        for p in pieces {
            if let Piece::Lit(bytes) = p
                && bytes.contains(&0)
            {
                return Err(self.fail(
                    format!(
                        "input string '{}' cannot be represented as Nix string because it contains null bytes",
                        String::from_utf8_lossy(bytes).replace('\0', "␀")
                    ),
                    self.pos(at) ,
                ));
            }
        }
        Ok(())
    }

    fn parts(&mut self, pieces: Vec<Piece>) -> Result<Box<[Part]>> {
        pieces
            .into_iter()
            .map(|p| match p {
                Piece::Lit(b) => Ok(Part::Lit(NixString::from(b))),
                Piece::Interp(i) => {
                    let pos = self.pos(i.syntax());
                    let inner = self.need(i.expr(), i.syntax())?;
                    Ok(Part::Expr(self.expr(&inner)?, pos))
                }
            })
            .collect()
    }

    fn path(&mut self, node: &SyntaxNode, kind: PathKind, pos: Pos) -> Result<Expr> {
        let mut pieces = Vec::new();
        for element in node.children_with_tokens() {
            match element {
                rowan::NodeOrToken::Token(t) => {
                    pieces.push(Piece::Lit(t.text().as_bytes().to_vec()))
                }
                rowan::NodeOrToken::Node(n) => match ast::Interpol::cast(n) {
                    Some(i) => pieces.push(Piece::Interp(i)),
                    None => return Err(self.fail("syntax error in path", pos)),
                },
            }
        }
        // Linted as written (a `~/` path in pure mode is refused below
        // before any lint, as in Nix).
        if let Some(Piece::Lit(first)) = pieces.first()
            && (kind != PathKind::Home || self.options.home.is_some())
        {
            self.path_lints(kind, &String::from_utf8_lossy(first), pos)?;
        }
        // Make the first literal segment absolute.
        if let Some(Piece::Lit(first)) = pieces.first_mut() {
            let mut absolute = match kind {
                PathKind::Abs => Vec::new(),
                PathKind::Rel => {
                    let mut base = self.options.base_dir.to_vec();
                    base.push(b'/');
                    base
                }
                PathKind::Home => match self.options.home {
                    Some(home) => home.to_vec(),
                    None => {
                        return Err(Error::new(
                            ErrorKind::Refused,
                            format!(
                                "the path '{}' can not be resolved in pure mode; pass --impure to read the home directory",
                                node.text()
                            ),
                            pos,
                        ));
                    }
                },
            };
            let rest: &[u8] = if kind == PathKind::Home {
                first.get(1..).unwrap_or_default()
            } else {
                first
            };
            absolute.extend_from_slice(rest);
            *first = absolute;
        }
        if let [Piece::Lit(only)] = pieces.as_slice() {
            return Ok(Expr::Path(NixString::from(canon_path(only))));
        }
        let parts = self.parts(pieces)?;
        Ok(Expr::Interpolate(Box::new(Interpolation {
            parts,
            path: true,
        })))
    }

    /// The path literal lints, on the literal's first segment as written.
    fn path_lints(&mut self, kind: PathKind, literal: &str, pos: Pos) -> Result<()> {
        let absolute = self.options.lints.absolute_path_literals;
        match kind {
            PathKind::Abs => self.lint(absolute, "lint-absolute-path-literals", pos, |_| {
                format!(
                    "absolute path literals are not portable. Consider replacing path literal '{literal}' by a string, relative path, or parameter"
                )
            }),
            PathKind::Home => self.lint(absolute, "lint-absolute-path-literals", pos, |_| {
                format!(
                    "home path literals are not portable. Consider replacing path literal '{literal}' by a string, relative path, or parameter"
                )
            }),
            PathKind::Rel if !literal.starts_with('.') => {
                let level = self.options.lints.short_path_literals;
                self.lint(level, "lint-short-path-literals", pos, |_| {
                    format!(
                        "relative path literal '{literal}' should be prefixed with '.' for clarity: './{literal}'"
                    )
                })
            }
            PathKind::Rel => Ok(()),
        }
    }

    /// `<nixpkgs/lib>` is `__findFile __nixPath "nixpkgs/lib"`, as in Nix,
    /// so a program can rebind either name.
    fn search_path(&mut self, p: &ast::PathSearch, pos: Pos) -> Result<Expr> {
        let text = p.syntax().text().to_string();
        let inner = text.trim().trim_start_matches('<').trim_end_matches('>');
        let func = self.var(known::FIND_FILE, pos, 0)?;
        let nix_path = self.var(known::NIX_PATH, pos, 0)?;
        Ok(Expr::Apply(Box::new(ApplyExpr {
            func,
            args: smallvec::smallvec![nix_path, Expr::Str(NixString::from(inner))],
            pos,
        })))
    }

    fn lambda(&mut self, l: &ast::Lambda) -> Result<LambdaExpr> {
        let node = l.syntax();
        let pos = self.pos(node);
        let merged = std::mem::take(&mut self.merge_next);
        let body_ast = self.need(l.body(), node)?;
        match self.need(l.param(), node)? {
            ast::Param::IdentParam(ip) => {
                let ident = self.need(ip.ident(), ip.syntax())?;
                let name = self.ident_sym(&ident);
                // A merged lambda's scope replaces the enclosing lambda's:
                // the same slots plus this parameter (which shadows an
                // outer one of the same name).
                let (scope, outer) = match (merged, self.scopes.pop()) {
                    (true, Some(Scope::Names(outer))) => {
                        // Slots are numbered in order and the newest name
                        // is never shadowed, so the highest is the last.
                        let next = outer.values().max().map_or(0, |&m| m + 1);
                        let mut names = outer.clone();
                        names.insert(name, next);
                        (names, Some(Scope::Names(outer)))
                    }
                    (_, popped) => {
                        if let Some(p) = popped {
                            self.scopes.push(p);
                        }
                        (std::iter::once((name, 0)).collect(), None)
                    }
                };
                let merged = outer.is_some();
                let slots = scope.values().max().map_or(1, |&m| m + 1);
                self.scopes.push(Scope::Names(scope));
                self.merge_next = is_ident_lambda(&body_ast);
                let body = self.expr(&body_ast);
                self.merge_next = false;
                self.scopes.pop();
                if let Some(o) = outer {
                    self.scopes.push(o);
                }
                Ok(LambdaExpr {
                    name: None,
                    param: Param::Ident(name),
                    body: body?,
                    slots,
                    merged,
                    pos,
                })
            }
            ast::Param::Pattern(pat) => {
                let bind = match pat.pat_bind() {
                    Some(b) => {
                        let ident = self.need(b.ident(), b.syntax())?;
                        Some((self.ident_sym(&ident), self.pos(b.syntax())))
                    }
                    None => None,
                };
                let mut entries = Vec::new();
                for entry in pat.pat_entries() {
                    let ident = self.need(entry.ident(), entry.syntax())?;
                    let name = self.ident_sym(&ident);
                    entries.push((name, entry.default(), self.pos(ident.syntax())));
                }
                let mut seen = FxHashMap::default();
                for &(name, _, epos) in &entries {
                    if seen.insert(name, epos).is_some() {
                        return Err(self.fail(
                            format!(
                                "duplicate formal function argument '{}'",
                                self.symbols.text(name)
                            ),
                            epos,
                        ));
                    }
                }
                if let Some((name, bpos)) = bind
                    && seen.contains_key(&name)
                {
                    return Err(self.fail(
                        format!(
                            "duplicate formal function argument '{}'",
                            self.symbols.text(name)
                        ),
                        bpos,
                    ));
                }
                entries.sort_by_key(|e| e.0);
                let first = u32::from(bind.is_some());
                let mut names: FxHashMap<Sym, u32> = entries
                    .iter()
                    .enumerate()
                    .map(|(i, e)| (e.0, first + i as u32))
                    .collect();
                if let Some((name, _)) = bind {
                    names.insert(name, 0);
                }
                self.scopes.push(Scope::Names(names));
                let result = (|| {
                    let mut formals = Vec::with_capacity(entries.len());
                    for (name, default, fpos) in &entries {
                        let default = match default {
                            Some(d) => Some(self.expr(d)?),
                            None => None,
                        };
                        formals.push(Formal {
                            name: *name,
                            default,
                            pos: *fpos,
                        });
                    }
                    let body = self.expr(&body_ast)?;
                    Ok((formals, body))
                })();
                self.scopes.pop();
                let (formals, body) = result?;
                let slots = first + formals.len() as u32;
                let formals = Formals {
                    entries: formals.into(),
                    ellipsis: pat.ellipsis_token().is_some(),
                    bind: bind.map(|b| b.0),
                };
                Ok(LambdaExpr {
                    name: None,
                    param: Param::Formals(Box::new(formals)),
                    body,
                    slots,
                    merged: false,
                    pos,
                })
            }
        }
    }

    fn key(&mut self, attr: &ast::Attr) -> Result<Key> {
        Ok(match attr {
            ast::Attr::Ident(i) => Key::Static(self.ident_sym(i)),
            ast::Attr::Str(s) => match self.static_string(s) {
                Some(sym) => Key::Static(sym),
                None => Key::Dynamic(ast::Expr::Str(s.clone())),
            },
            ast::Attr::Dynamic(d) => {
                let inner = unparen(self.need(d.expr(), d.syntax())?);
                match &inner {
                    ast::Expr::Str(s) => match self.static_string(s) {
                        Some(sym) => Key::Static(sym),
                        None => Key::Dynamic(inner),
                    },
                    _ => Key::Dynamic(inner),
                }
            }
        })
    }

    fn static_string(&mut self, s: &ast::Str) -> Option<Sym> {
        let pieces = string_pieces(s);
        if self.no_nul(&pieces, s.syntax()).is_err() {
            return None;
        }
        let mut bytes = Vec::new();
        for p in pieces {
            match p {
                Piece::Lit(b) => bytes.extend(b),
                Piece::Interp(_) => return None,
            }
        }
        Some(self.symbols.intern(&bytes))
    }

    fn attr_keys(&mut self, path: &ast::Attrpath) -> Result<Keys> {
        let mut keys = Keys::new();
        for attr in path.attrs() {
            keys.push(match self.key(&attr)? {
                Key::Static(s) => AttrKey::Static(s),
                Key::Dynamic(e) => AttrKey::Dynamic(self.expr(&e)?),
            });
        }
        Ok(keys)
    }

    fn pending_from_literal(
        &mut self,
        set: &ast::AttrSet,
        shown: &mut Vec<String>,
    ) -> Result<Pending> {
        let mut pending = Pending::new(set.rec_token().is_some(), self.pos(set.syntax()));
        self.add_entries(&mut pending, set.entries(), shown)?;
        Ok(pending)
    }

    fn add_entries(
        &mut self,
        target: &mut Pending,
        entries: impl Iterator<Item = ast::Entry>,
        shown: &mut Vec<String>,
    ) -> Result<()> {
        for entry in entries {
            match entry {
                ast::Entry::Inherit(inherit) => {
                    let source = match inherit.from() {
                        Some(from) => {
                            target.sources.push(self.need(from.expr(), from.syntax())?);
                            Some(target.sources.len() - 1)
                        }
                        None => None,
                    };
                    for attr in inherit.attrs() {
                        let pos = self.pos(attr.syntax());
                        let Key::Static(name) = self.key(&attr)? else {
                            return Err(self.fail("dynamic attributes not allowed in inherit", pos));
                        };
                        if let Some(&existing) = target.index.get(&name) {
                            shown.push(self.symbols.text(name).into_owned());
                            let err = self.duplicate(shown, pos, target.statics[existing].pos);
                            return Err(err);
                        }
                        let value = source.map_or(PendingValue::Inherit, PendingValue::InheritFrom);
                        target.insert(name, pos, value);
                    }
                }
                ast::Entry::AttrpathValue(binding) => {
                    let node = binding.syntax();
                    let pos = self.pos(node);
                    let path = self.need(binding.attrpath(), node)?;
                    let keys = path
                        .attrs()
                        .map(|a| self.key(&a))
                        .collect::<Result<Vec<_>>>()?;
                    let value = self.need(binding.value(), node)?;
                    let depth = shown.len();
                    self.add_path(target, keys, value, pos, shown)?;
                    shown.truncate(depth);
                }
            }
        }
        Ok(())
    }

    fn duplicate(&self, shown: &[String], pos: Pos, previous: Pos) -> Error {
        self.fail(
            format!(
                "attribute '{}' already defined at {}",
                shown.join("."),
                self.location(previous)
            ),
            pos,
        )
    }

    fn add_path(
        &mut self,
        target: &mut Pending,
        mut keys: Vec<Key>,
        value: ast::Expr,
        pos: Pos,
        shown: &mut Vec<String>,
    ) -> Result<()> {
        if keys.is_empty() {
            return Err(self.fail("syntax error, empty attribute path", pos));
        }
        let rest = keys.split_off(1);
        let Some(first) = keys.pop() else {
            return Ok(());
        };
        match first {
            Key::Static(name) => {
                shown.push(self.symbols.text(name).into_owned());
                if rest.is_empty() {
                    return self.add_value(target, name, value, pos, shown);
                }
                let index = match target.index.get(&name) {
                    Some(&i) => i,
                    None => target.insert(
                        name,
                        pos,
                        PendingValue::Nested(Box::new(Pending::new(false, pos))),
                    ),
                };
                let previous = target.statics[index].pos;
                match &mut target.statics[index].value {
                    PendingValue::Nested(nested) => self.add_path(nested, rest, value, pos, shown),
                    _ => Err(self.duplicate(shown, pos, previous)),
                }
            }
            Key::Dynamic(name) => {
                shown.push("\"${...}\"".to_string());
                let value = if rest.is_empty() {
                    PendingValue::Expr(value)
                } else {
                    let mut nested = Pending::new(false, pos);
                    self.add_path(&mut nested, rest, value, pos, shown)?;
                    PendingValue::Nested(Box::new(nested))
                };
                target.dynamics.push(PendingDynamic { name, pos, value });
                Ok(())
            }
        }
    }

    /// `name = value;` into `target`: a set literal merges into an earlier
    /// set under the same name (Nix keeps the earlier set's `rec`).
    fn add_value(
        &mut self,
        target: &mut Pending,
        name: Sym,
        value: ast::Expr,
        pos: Pos,
        shown: &mut Vec<String>,
    ) -> Result<()> {
        let literal = match unparen(value.clone()) {
            ast::Expr::AttrSet(set) => Some(set),
            _ => None,
        };
        match target.index.get(&name) {
            Some(&i) => {
                let previous = target.statics[i].pos;
                match (&mut target.statics[i].value, literal) {
                    (PendingValue::Nested(existing), Some(set)) => {
                        self.add_entries(existing, set.entries(), shown)
                    }
                    _ => Err(self.duplicate(shown, pos, previous)),
                }
            }
            None => {
                let value = match literal {
                    Some(set) => {
                        let mut nested = self.pending_from_literal(&set, shown)?;
                        nested.pos = self.pos(set.syntax());
                        PendingValue::Nested(Box::new(nested))
                    }
                    None => PendingValue::Expr(value),
                };
                target.insert(name, pos, value);
                Ok(())
            }
        }
    }

    /// Lowers one attribute's value. `sources` says where the values of
    /// `inherit (e)` are read; `skip` is the number of scopes `inherit x;`
    /// looks past.
    fn pending_value(
        &mut self,
        value: PendingValue,
        name: Sym,
        pos: Pos,
        sources: &InheritSources,
        skip: usize,
    ) -> Result<Expr> {
        Ok(match value {
            PendingValue::Expr(e) => {
                let mut lowered = self.expr(&e)?;
                if let Expr::Lambda(l) = &mut lowered
                    && l.name.is_none()
                {
                    l.name = Some(name);
                }
                lowered
            }
            PendingValue::Nested(p) => Expr::Attrs(Box::new(self.lower_attrs(*p)?)),
            PendingValue::Inherit => self.var(name, pos, skip)?,
            PendingValue::InheritFrom(k) => Expr::Select(Box::new(SelectExpr::new(
                sources.base(k),
                [AttrKey::Static(name)],
                None,
                pos,
            ))),
        })
    }

    /// The sources of a set's or `let`'s `inherit (e)`, lowered in the
    /// scope they are evaluated in.
    fn inherit_sources(&mut self, p: &Pending) -> Result<Vec<Expr>> {
        p.sources.iter().map(|s| self.expr(s)).collect()
    }

    fn lower_attrs(&mut self, mut p: Pending) -> Result<AttrsExpr> {
        p.statics.sort_by_key(|s| s.name);
        let n = p.statics.len() as u32;
        let rec = p.rec;
        if rec {
            let overrides = p.index.contains_key(&known::OVERRIDES);
            self.scopes.push(binding_scope(&p));
            let result = self.inherit_sources(&p).and_then(|sources| {
                let sources = InheritSources::new(sources, n);
                let (statics, dynamics) = self.lower_set_body(p, &sources, 1)?;
                Ok((statics, dynamics, sources.into_slots()))
            });
            self.scopes.pop();
            let (statics, dynamics, sources) = result?;
            return Ok(AttrsExpr {
                statics,
                dynamics,
                rec,
                overrides,
                env_slots: n + sources.len() as u32,
                inherit_sources: sources,
            });
        }
        // A non-recursive set's sources are evaluated outside it; unless
        // they are all variables, they get an environment of their own.
        let sources = InheritSources::new(self.inherit_sources(&p)?, 0);
        let (statics, dynamics) = if sources.needs_slots() {
            self.scopes.push(Scope::Hidden);
            let result = self.lower_set_body(p, &sources, 1);
            self.scopes.pop();
            result?
        } else {
            self.lower_set_body(p, &sources, 0)?
        };
        let sources = sources.into_slots();
        Ok(AttrsExpr {
            statics,
            dynamics,
            rec,
            overrides: false,
            env_slots: sources.len() as u32,
            inherit_sources: sources,
        })
    }

    /// A set's attributes, static and dynamic.
    fn lower_set_body(
        &mut self,
        p: Pending,
        sources: &InheritSources,
        skip: usize,
    ) -> Result<SetBody> {
        let mut statics = Vec::with_capacity(p.statics.len());
        for s in p.statics {
            let value = self.pending_value(s.value, s.name, s.pos, sources, skip)?;
            statics.push(StaticAttr {
                name: s.name,
                pos: s.pos,
                value,
            });
        }
        let mut dynamics = Vec::with_capacity(p.dynamics.len());
        for d in p.dynamics {
            let name = self.expr(&d.name)?;
            let value = match d.value {
                PendingValue::Expr(e) => self.expr(&e)?,
                PendingValue::Nested(n) => Expr::Attrs(Box::new(self.lower_attrs(*n)?)),
                PendingValue::Inherit | PendingValue::InheritFrom(_) => {
                    return Err(self.fail("dynamic attributes not allowed in inherit", d.pos));
                }
            };
            dynamics.push(DynamicAttr {
                name,
                value,
                pos: d.pos,
            });
        }
        Ok((statics.into(), dynamics.into()))
    }

    fn lower_let(&mut self, p: Pending, body: &ast::Expr) -> Result<LetExpr> {
        if let Some(d) = p.dynamics.first() {
            return Err(self.fail("dynamic attributes not allowed in let", d.pos));
        }
        let n = p.statics.len() as u32;
        self.scopes.push(binding_scope(&p));
        let result = (|| {
            let sources = InheritSources::new(self.inherit_sources(&p)?, n);
            let mut bindings = Vec::with_capacity(p.statics.len() + p.sources.len());
            for s in p.statics {
                bindings.push(self.pending_value(s.value, s.name, s.pos, &sources, 1)?);
            }
            bindings.extend(sources.into_slots());
            let body = self.expr(body)?;
            Ok(LetExpr {
                bindings: bindings.into(),
                body,
            })
        })();
        self.scopes.pop();
        result
    }
}

type SetBody = (Box<[StaticAttr]>, Box<[DynamicAttr]>);

/// Where `inherit (e) name;` reads `e`. A source that is a variable
/// (`inherit (module) file;`, `inherit (lib) types;`, the usual case) is
/// read where it is, as `module.file`: its value is already shared, so a
/// slot holding it again would cost an environment (for a set) or a slot
/// (for a `let`) and a step more on every read. Other sources are
/// evaluated once, into slots of the set's or `let`'s environment, so
/// each one's value is shared by every name inherited from it.
enum InheritSources {
    Variables(Vec<Variable>),
    /// The sources, in slots from `first` on.
    Slots {
        exprs: Vec<Expr>,
        first: u32,
    },
}

impl InheritSources {
    fn new(exprs: Vec<Expr>, first: u32) -> Self {
        match exprs.iter().map(Variable::of).collect() {
            Some(variables) => InheritSources::Variables(variables),
            None => InheritSources::Slots { exprs, first },
        }
    }

    fn needs_slots(&self) -> bool {
        matches!(self, InheritSources::Slots { .. })
    }

    /// What the `k`th source is read as.
    fn base(&self, k: usize) -> Expr {
        match self {
            InheritSources::Variables(variables) => variables[k].expr(),
            InheritSources::Slots { first, .. } => Expr::Local {
                depth: 0,
                idx: first + k as u32,
            },
        }
    }

    /// The expressions to evaluate into slots (none for variables).
    fn into_slots(self) -> Box<[Expr]> {
        match self {
            InheritSources::Variables(_) => Box::new([]),
            InheritSources::Slots { exprs, .. } => exprs.into(),
        }
    }
}

/// A variable of a static scope or of the base environment.
#[derive(Clone, Copy)]
enum Variable {
    Local { depth: u32, idx: u32 },
    Global(u32),
}

impl Variable {
    fn of(e: &Expr) -> Option<Self> {
        match *e {
            Expr::Local { depth, idx } => Some(Variable::Local { depth, idx }),
            Expr::Global(g) => Some(Variable::Global(g)),
            _ => None,
        }
    }

    fn expr(self) -> Expr {
        match self {
            Variable::Local { depth, idx } => Expr::Local { depth, idx },
            Variable::Global(g) => Expr::Global(g),
        }
    }
}

/// `x: ...` written directly (no parentheses): a lambda that can share
/// the environment of a one-parameter lambda whose body it is.
fn is_ident_lambda(e: &ast::Expr) -> bool {
    matches!(e, ast::Expr::Lambda(l) if matches!(l.param(), Some(ast::Param::IdentParam(_))))
}

/// The scope of a `let` or `rec` set: each binding in the slot of its index.
fn binding_scope(p: &Pending) -> Scope {
    Scope::Names(
        p.statics
            .iter()
            .enumerate()
            .map(|(i, s)| (s.name, i as u32))
            .collect(),
    )
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum PathKind {
    Abs,
    Rel,
    Home,
}
