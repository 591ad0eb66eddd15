//! Forcing to a known type (with Nix's messages), and forcing deeply.

use super::{Context, Evaluator};
use crate::error::Result;
use crate::source::Pos;
use crate::value::{Attrs, List, NixString, Value};
use rustc_hash::FxHashSet;

impl<'a> Evaluator<'a> {
    pub fn force_attrs(
        &mut self,
        v: &Value<'a>,
        pos: Pos,
        context: impl Context,
    ) -> Result<Attrs<'a>> {
        match self
            .force(v)
            .map_err(|e| e.with_frame(pos, context.text()))?
        {
            Value::Attrs(a) => Ok(a),
            other => Err(self
                .type_error("a set", &other, pos)
                .with_frame(pos, context.text())),
        }
    }

    pub fn force_list(
        &mut self,
        v: &Value<'a>,
        pos: Pos,
        context: impl Context,
    ) -> Result<List<'a>> {
        match self
            .force(v)
            .map_err(|e| e.with_frame(pos, context.text()))?
        {
            Value::List(l) => Ok(l),
            other => Err(self
                .type_error("a list", &other, pos)
                .with_frame(pos, context.text())),
        }
    }

    pub fn force_int(&mut self, v: &Value<'a>, pos: Pos, context: impl Context) -> Result<i64> {
        match self
            .force(v)
            .map_err(|e| e.with_frame(pos, context.text()))?
        {
            Value::Int(n) => Ok(n),
            other => Err(self
                .type_error("an integer", &other, pos)
                .with_frame(pos, context.text())),
        }
    }

    pub fn force_bool(&mut self, v: &Value<'a>, pos: Pos, context: impl Context) -> Result<bool> {
        match self
            .force(v)
            .map_err(|e| e.with_frame(pos, context.text()))?
        {
            Value::Bool(b) => Ok(b),
            other => Err(self
                .type_error("a Boolean", &other, pos)
                .with_frame(pos, context.text())),
        }
    }

    /// A string (not coerced: paths and sets are refused).
    pub fn force_string(
        &mut self,
        v: &Value<'a>,
        pos: Pos,
        context: impl Context,
    ) -> Result<NixString> {
        match self
            .force(v)
            .map_err(|e| e.with_frame(pos, context.text()))?
        {
            Value::String(s) => Ok(s),
            other => Err(self
                .type_error("a string", &other, pos)
                .with_frame(pos, context.text())),
        }
    }

    /// A function (a set with `__functor` counts).
    pub fn force_function(
        &mut self,
        v: &Value<'a>,
        pos: Pos,
        context: impl Context,
    ) -> Result<Value<'a>> {
        let f = self
            .force(v)
            .map_err(|e| e.with_frame(pos, context.text()))?;
        match &f {
            Value::Lambda(_) | Value::PrimOp(_) | Value::PrimOpApp(_) => Ok(f),
            Value::Attrs(a) if a.contains(crate::symbol::known::FUNCTOR) => Ok(f),
            other => Err(self
                .type_error("a function", other, pos)
                .with_frame(pos, context.text())),
        }
    }

    /// Forces a value and everything inside it (`deepSeq`, `--strict`).
    /// Cycles are walked once; the depth counts against the call depth.
    pub fn force_deep(&mut self, v: &Value<'a>, pos: Pos) -> Result<()> {
        let mut seen = FxHashSet::default();
        self.force_deep_in(v, pos, &mut seen)
    }

    fn force_deep_in(
        &mut self,
        v: &Value<'a>,
        pos: Pos,
        seen: &mut FxHashSet<usize>,
    ) -> Result<()> {
        let v = self.force(v)?;
        match &v {
            Value::Attrs(attrs) if seen.insert(attrs.addr()) => self.nested(pos, |ev| {
                for attr in attrs.iter() {
                    ev.force_deep_in(&attr.value, attr.pos, seen).map_err(|e| {
                        let name = ev.symbols.text(attr.name).into_owned();
                        e.with_frame(attr.pos, format!("while evaluating the attribute '{name}'"))
                    })?;
                }
                Ok(())
            }),
            Value::List(list) if seen.insert(list.addr()) => self.nested(pos, |ev| {
                for (i, item) in list.as_slice().iter().enumerate() {
                    ev.force_deep_in(item, pos, seen).map_err(|e| {
                        e.with_frame(pos, format!("while evaluating list element at index {i}"))
                    })?;
                }
                Ok(())
            }),
            _ => Ok(()),
        }
    }
}
