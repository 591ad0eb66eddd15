//! The closure of the requested derivation, walked through the registry:
//! every object it needs, in the order the store must receive them, and a
//! refusal for any input derivation the evaluation did not produce.

use std::collections::{BTreeMap, BTreeSet};

use chock_store::registry::{Source, SourceContents, TextFile};
use chock_store::{Derivation, Registry, StorePath};

use crate::error::Refusal;

/// One object of the registry.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Object<'r> {
    Derivation(&'r Derivation),
    Text(&'r TextFile),
    Source(&'r Source),
}

impl Object<'_> {
    /// The word for people (`derivation`, `text file`, `source`).
    pub(crate) fn kind(&self) -> &'static str {
        match self {
            Object::Derivation(_) => "derivation",
            Object::Text(_) => "text file",
            Object::Source(_) => "source",
        }
    }
}

/// What a build of `top` needs.
#[derive(Debug)]
pub(crate) struct Closure<'r> {
    /// Every registry object `top` needs, `top` last and each object after
    /// everything it refers to.
    pub order: Vec<(&'r StorePath, Object<'r>)>,
    /// The derivations among them.
    pub derivations: BTreeMap<&'r StorePath, &'r Derivation>,
    /// Paths referred to that the evaluation did not produce (sources that
    /// were in the store before it), each with the first object needing it.
    pub outside: BTreeMap<StorePath, StorePath>,
}

/// Walks from `top` through input derivations, input sources and the
/// references of text files. An input derivation missing from the registry
/// is refused by name; `top` itself must be one of its derivations.
pub(crate) fn walk<'r>(registry: &'r Registry, top: &StorePath) -> Result<Closure<'r>, Refusal> {
    let Some((top_key, _)) = registry.derivations.get_key_value(top) else {
        return Err(Refusal::NotEvaluated {
            drv: top.clone(),
            needed_by: None,
        });
    };
    let mut closure = Closure {
        order: Vec::new(),
        derivations: BTreeMap::new(),
        outside: BTreeMap::new(),
    };
    // Expanded paths; a path is emitted after everything it refers to.
    let mut expanded: BTreeSet<&StorePath> = BTreeSet::new();
    // (path, children pushed yet)
    let mut stack: Vec<(&StorePath, bool)> = vec![(top_key, false)];
    while let Some((path, children_pushed)) = stack.pop() {
        let object = lookup(registry, path);
        if children_pushed {
            if let Some(object) = object {
                if let Object::Derivation(drv) = object {
                    closure.derivations.insert(path, drv);
                }
                closure.order.push((path, object));
            }
            continue;
        }
        if !expanded.insert(path) {
            continue;
        }
        stack.push((path, true));
        let children: Vec<(&StorePath, bool)> = match object {
            Some(Object::Derivation(drv)) => drv
                .input_drvs
                .keys()
                .map(|p| (p, true))
                .chain(drv.input_srcs.iter().map(|p| (p, false)))
                .collect(),
            Some(Object::Text(text)) => text.references.iter().map(|p| (p, false)).collect(),
            Some(Object::Source(_)) | None => Vec::new(),
        };
        for (child, built) in children {
            let Some(key) = registry_key(registry, child) else {
                if built {
                    return Err(Refusal::NotEvaluated {
                        drv: child.clone(),
                        needed_by: Some(path.clone()),
                    });
                }
                closure
                    .outside
                    .entry(child.clone())
                    .or_insert_with(|| path.clone());
                continue;
            };
            if built && !registry.derivations.contains_key(child) {
                return Err(Refusal::NotEvaluated {
                    drv: child.clone(),
                    needed_by: Some(path.clone()),
                });
            }
            if let Some(Object::Source(Source {
                contents: SourceContents::InStore,
                ..
            })) = lookup(registry, key)
            {
                // In the store before the evaluation: it must be valid, and is never written.
                closure
                    .outside
                    .entry(key.clone())
                    .or_insert_with(|| path.clone());
                continue;
            }
            if !expanded.contains(key) {
                stack.push((key, false));
            }
        }
    }
    Ok(closure)
}

fn lookup<'r>(registry: &'r Registry, path: &StorePath) -> Option<Object<'r>> {
    registry
        .derivations
        .get(path)
        .map(Object::Derivation)
        .or_else(|| registry.texts.get(path).map(Object::Text))
        .or_else(|| registry.sources.get(path).map(Object::Source))
}

/// The registry's own copy of `path` (so the closure borrows only the registry).
fn registry_key<'r>(registry: &'r Registry, path: &StorePath) -> Option<&'r StorePath> {
    registry
        .derivations
        .get_key_value(path)
        .map(|(k, _)| k)
        .or_else(|| registry.texts.get_key_value(path).map(|(k, _)| k))
        .or_else(|| registry.sources.get_key_value(path).map(|(k, _)| k))
}

#[cfg(test)]
mod tests {
    use super::*;
    use chock_store::DerivationOutput;

    fn path(name: &str) -> StorePath {
        let hash: String = name
            .bytes()
            .cycle()
            .take(32)
            .map(|b| b"0123456789abcdfghijklmnpqrsvwxyz"[usize::from(b) % 32] as char)
            .collect();
        StorePath::from_base_name(&format!("{hash}-{name}")).expect("store path")
    }

    fn drv(name: &str, inputs: &[&StorePath], srcs: &[&StorePath]) -> Derivation {
        let mut d = Derivation::new(name);
        d.outputs.insert("out".into(), DerivationOutput::Deferred);
        for i in inputs {
            d.input_drvs.insert((*i).clone(), ["out".to_owned()].into());
        }
        d.input_srcs = srcs.iter().map(|s| (*s).clone()).collect();
        d
    }

    #[test]
    fn inputs_come_before_their_users_and_outside_paths_are_kept() {
        let (a, b, top) = (path("a.drv"), path("b.drv"), path("top.drv"));
        let (note, src, input) = (path("note"), path("src"), path("flake-input"));
        let tree = path("tree");
        let mut registry = Registry::new();
        registry
            .derivations
            .insert(a.clone(), drv("a", &[], &[&src, &tree]));
        registry.sources.insert(
            tree.clone(),
            Source {
                name: "tree".into(),
                contents: SourceContents::Tree {
                    path: "/src/tree".into(),
                    kept: None,
                },
            },
        );
        registry
            .derivations
            .insert(b.clone(), drv("b", &[&a], &[&note, &input]));
        registry
            .derivations
            .insert(top.clone(), drv("top", &[&a, &b], &[]));
        registry.texts.insert(
            note.clone(),
            TextFile {
                name: "note".into(),
                contents: vec![],
                references: [src.clone()].into(),
            },
        );
        registry.sources.insert(
            src.clone(),
            Source {
                name: "src".into(),
                contents: SourceContents::InStore,
            },
        );
        let closure = walk(&registry, &top).expect("closure");
        let order: Vec<&StorePath> = closure.order.iter().map(|(p, _)| *p).collect();
        let at = |p: &StorePath| order.iter().position(|o| *o == p).expect("in order");
        assert_eq!(
            order.len(),
            5,
            "a source already in the store is not written"
        );
        assert!(at(&tree) < at(&a), "a source is written before its user");
        assert!(at(&a) < at(&b) && at(&note) < at(&b) && at(&b) < at(&top));
        assert_eq!(order.last(), Some(&&top));
        assert_eq!(closure.derivations.len(), 3);
        assert_eq!(closure.outside.get(&input), Some(&b));
        assert!(
            closure.outside.contains_key(&src),
            "a source already in the store must be valid"
        );
    }

    #[test]
    fn a_derivation_nobody_evaluated_is_refused_by_name() {
        let (a, top) = (path("a.drv"), path("top.drv"));
        let mut registry = Registry::new();
        registry
            .derivations
            .insert(top.clone(), drv("top", &[&a], &[]));
        match walk(&registry, &top) {
            Err(Refusal::NotEvaluated { drv, needed_by }) => {
                assert_eq!(drv, a);
                assert_eq!(needed_by, Some(top.clone()));
            }
            other => panic!("{other:?}"),
        }
        match walk(&registry, &a) {
            Err(Refusal::NotEvaluated { drv, needed_by }) => {
                assert_eq!((drv, needed_by), (a.clone(), None));
            }
            other => panic!("{other:?}"),
        }
        // A text file registered at a derivation's path is still not a derivation.
        registry.texts.insert(
            a,
            TextFile {
                name: "a.drv".into(),
                contents: vec![],
                references: BTreeSet::new(),
            },
        );
        assert!(matches!(
            walk(&registry, &top),
            Err(Refusal::NotEvaluated { .. })
        ));
    }

    #[test]
    fn a_long_chain_is_walked_without_recursion() {
        let mut registry = Registry::new();
        let mut previous: Option<StorePath> = None;
        for i in 0..20_000 {
            let p = StorePath::from_base_name(&format!(
                "{:0>32}-n{i}.drv",
                format!("{i}").replace(['e', 'o', 'u', 't'], "0")
            ))
            .expect("path");
            let inputs: Vec<&StorePath> = previous.iter().collect();
            registry
                .derivations
                .insert(p.clone(), drv(&format!("n{i}"), &inputs, &[]));
            previous = Some(p);
        }
        let top = previous.expect("top");
        assert_eq!(walk(&registry, &top).expect("chain").order.len(), 20_000);
    }
}
