//! String context: the store objects a string refers to, so that a
//! derivation built from it knows what it depends on.
//!
//! Most strings have none, so a string holds an `Option<Context>` (one word,
//! `None` for plain text) and every operation on two context-free strings
//! costs one branch. A context is a sorted set shared by reference count:
//! interpolating `"${drv}/bin/x"` reuses the derivation's set as it is.

use std::rc::Rc;

/// One element, in Nix's three encodings.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ContextElem {
    /// `/nix/store/…`: a store object itself (a source, a text file, an
    /// input already in the store).
    Opaque(Rc<str>),
    /// `=/nix/store/….drv`: a derivation with all its outputs and their
    /// closure (what `drvPath` carries).
    DrvDeep(Rc<str>),
    /// `!out!/nix/store/….drv`: one output of a derivation.
    Built { drv: Rc<str>, output: Rc<str> },
}

impl ContextElem {
    /// Nix's encoding (`/p`, `=/p.drv`, `!out!/p.drv`), for messages.
    pub fn encoded(&self) -> String {
        match self {
            ContextElem::Opaque(p) => p.to_string(),
            ContextElem::DrvDeep(p) => format!("={p}"),
            ContextElem::Built { drv, output } => format!("!{output}!{drv}"),
        }
    }
}

/// A non-empty, sorted set of context elements.
#[derive(Clone, Debug)]
pub struct Context(Rc<Vec<ContextElem>>);

impl Context {
    pub fn one(elem: ContextElem) -> Context {
        Context(Rc::new(vec![elem]))
    }

    /// The set of `elems`; `None` when there are none.
    pub fn from_elems(mut elems: Vec<ContextElem>) -> Option<Context> {
        if elems.is_empty() {
            return None;
        }
        elems.sort_unstable();
        elems.dedup();
        Some(Context(Rc::new(elems)))
    }

    pub fn elems(&self) -> &[ContextElem] {
        &self.0
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// The union of two optional contexts, sharing either when the other
    /// adds nothing.
    pub fn union(a: Option<&Context>, b: Option<&Context>) -> Option<Context> {
        match (a, b) {
            (None, None) => None,
            (Some(x), None) | (None, Some(x)) => Some(x.clone()),
            (Some(x), Some(y)) => {
                if Rc::ptr_eq(&x.0, &y.0) || y.0.iter().all(|e| x.0.binary_search(e).is_ok()) {
                    return Some(x.clone());
                }
                if x.0.iter().all(|e| y.0.binary_search(e).is_ok()) {
                    return Some(y.clone());
                }
                let mut all = Vec::with_capacity(x.len() + y.len());
                all.extend(x.0.iter().cloned());
                all.extend(y.0.iter().cloned());
                Context::from_elems(all)
            }
        }
    }
}

impl PartialEq for Context {
    fn eq(&self, other: &Self) -> bool {
        Rc::ptr_eq(&self.0, &other.0) || self.0 == other.0
    }
}

/// Gathers the contexts of many strings (a concatenation, a list turned
/// into a string), copying only when two different sets meet.
#[derive(Default)]
pub struct ContextAcc {
    context: Option<Context>,
}

impl ContextAcc {
    pub fn add(&mut self, other: Option<&Context>) {
        if other.is_some() {
            self.context = Context::union(self.context.as_ref(), other);
        }
    }

    pub fn finish(self) -> Option<Context> {
        self.context
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opaque(p: &str) -> ContextElem {
        ContextElem::Opaque(Rc::from(p))
    }

    #[test]
    fn union_shares_when_nothing_is_added() {
        let a = Context::one(opaque("/nix/store/a"));
        let b = Context::union(Some(&a), Some(&a.clone())).expect("some");
        assert!(Rc::ptr_eq(&a.0, &b.0));
        let c = Context::one(opaque("/nix/store/b"));
        let both = Context::union(Some(&c), Some(&a)).expect("some");
        assert_eq!(
            both.elems(),
            &[opaque("/nix/store/a"), opaque("/nix/store/b")]
        );
        assert!(Context::union(None, None).is_none());
    }

    #[test]
    fn elements_sort_by_kind_then_path_as_nix_does() {
        let set = Context::from_elems(vec![
            ContextElem::Built {
                drv: Rc::from("/nix/store/x.drv"),
                output: Rc::from("out"),
            },
            ContextElem::DrvDeep(Rc::from("/nix/store/x.drv")),
            opaque("/nix/store/z"),
            opaque("/nix/store/z"),
        ])
        .expect("some");
        let encoded: Vec<String> = set.elems().iter().map(ContextElem::encoded).collect();
        assert_eq!(
            encoded,
            ["/nix/store/z", "=/nix/store/x.drv", "!out!/nix/store/x.drv"]
        );
    }
}
