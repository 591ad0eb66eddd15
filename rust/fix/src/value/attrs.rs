//! Attribute sets: one allocation of entries sorted by `Sym`, so a lookup
//! is a binary search over integers and `//` is a linear merge.

use super::Value;
use crate::source::Pos;
use crate::stats::{Counter, count};
use crate::symbol::{Sym, Symbols};
use crate::thin::{Exact, ThinRc};

#[derive(Clone)]
pub struct Attr<'a> {
    pub name: Sym,
    pub pos: Pos,
    pub value: Value<'a>,
}

#[derive(Clone)]
pub struct Attrs<'a>(ThinRc<(), Attr<'a>>);

/// Below this many entries a linear scan beats a binary search.
const LINEAR: usize = 8;

impl<'a> Attrs<'a> {
    pub fn empty() -> Self {
        Attrs(ThinRc::from_iter((), std::iter::empty()))
    }

    /// From entries already sorted by name, without duplicates.
    pub fn from_sorted(entries: Vec<Attr<'a>>) -> Self {
        debug_assert!(entries.windows(2).all(|w| w[0].name < w[1].name));
        count(Counter::Sets);
        Attrs(ThinRc::from_iter((), entries))
    }

    /// From an exactly-sized iterator of entries already sorted by name.
    pub fn from_sorted_iter<I>(entries: I) -> Self
    where
        I: IntoIterator<Item = Attr<'a>>,
        I::IntoIter: ExactSizeIterator,
    {
        count(Counter::Sets);
        Attrs(ThinRc::from_iter((), entries))
    }

    /// From entries in any order; of several entries with one name the
    /// first is kept.
    pub fn from_unsorted(mut entries: Vec<Attr<'a>>) -> Self {
        entries.sort_by_key(|a| a.name);
        entries.dedup_by(|later, earlier| later.name == earlier.name);
        Attrs::from_sorted(entries)
    }

    /// The reference count (see `Value::clone`).
    #[inline(always)]
    pub(crate) fn count(&self) -> &std::cell::Cell<usize> {
        self.0.count()
    }

    #[inline]
    pub fn as_slice(&self) -> &[Attr<'a>] {
        self.0.as_slice()
    }

    pub fn iter(&self) -> std::slice::Iter<'_, Attr<'a>> {
        self.as_slice().iter()
    }

    pub fn len(&self) -> usize {
        self.as_slice().len()
    }

    pub fn is_empty(&self) -> bool {
        self.as_slice().is_empty()
    }

    #[inline]
    pub fn get_attr(&self, name: Sym) -> Option<&Attr<'a>> {
        let entries = self.as_slice();
        if entries.len() <= LINEAR {
            return entries.iter().find(|a| a.name == name);
        }
        entries
            .binary_search_by_key(&name, |a| a.name)
            .ok()
            .map(|i| &entries[i])
    }

    pub fn get(&self, name: Sym) -> Option<&Value<'a>> {
        self.get_attr(name).map(|a| &a.value)
    }

    pub fn contains(&self, name: Sym) -> bool {
        self.get_attr(name).is_some()
    }

    /// `self // other`: every name of both, `other` winning. The size is
    /// counted first so the result is built in place, with no `Vec`.
    pub fn update(&self, other: &Attrs<'a>) -> Attrs<'a> {
        if other.is_empty() {
            return self.clone();
        }
        if self.is_empty() {
            return other.clone();
        }
        let (a, b) = (self.as_slice(), other.as_slice());
        let shared = {
            let (mut i, mut j, mut n) = (0, 0, 0);
            while i < a.len() && j < b.len() {
                match a[i].name.cmp(&b[j].name) {
                    std::cmp::Ordering::Less => i += 1,
                    std::cmp::Ordering::Greater => j += 1,
                    std::cmp::Ordering::Equal => {
                        n += 1;
                        i += 1;
                        j += 1;
                    }
                }
            }
            n
        };
        let merged = Merge { a, b, i: 0, j: 0 };
        count(Counter::Sets);
        Attrs(ThinRc::from_iter(
            (),
            Exact {
                inner: merged,
                left: a.len() + b.len() - shared,
            },
        ))
    }

    /// The entries in the order Nix shows them: by name, bytewise.
    pub fn lexicographic<'s>(&'s self, symbols: &Symbols) -> Vec<&'s Attr<'a>> {
        let mut sorted: Vec<&Attr<'a>> = self.iter().collect();
        sorted.sort_by(|x, y| symbols.bytes(x.name).cmp(symbols.bytes(y.name)));
        sorted
    }

    pub fn addr(&self) -> usize {
        self.0.addr()
    }

    pub fn ptr_eq(a: &Self, b: &Self) -> bool {
        ThinRc::ptr_eq(&a.0, &b.0)
    }
}

/// The sorted union of two sorted entry lists, the right one winning.
struct Merge<'s, 'a> {
    a: &'s [Attr<'a>],
    b: &'s [Attr<'a>],
    i: usize,
    j: usize,
}

impl<'a> Iterator for Merge<'_, 'a> {
    type Item = Attr<'a>;
    fn next(&mut self) -> Option<Attr<'a>> {
        match (self.a.get(self.i), self.b.get(self.j)) {
            (Some(x), Some(y)) => match x.name.cmp(&y.name) {
                std::cmp::Ordering::Less => {
                    self.i += 1;
                    Some(x.clone())
                }
                std::cmp::Ordering::Greater => {
                    self.j += 1;
                    Some(y.clone())
                }
                std::cmp::Ordering::Equal => {
                    self.i += 1;
                    self.j += 1;
                    Some(y.clone())
                }
            },
            (Some(x), None) => {
                self.i += 1;
                Some(x.clone())
            }
            (None, Some(y)) => {
                self.j += 1;
                Some(y.clone())
            }
            (None, None) => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(symbols: &mut Symbols, pairs: &[(&str, i64)]) -> Attrs<'static> {
        let entries = pairs
            .iter()
            .map(|(n, v)| Attr {
                name: symbols.intern_str(n),
                pos: Pos::NONE,
                value: Value::Int(*v),
            })
            .collect();
        Attrs::from_unsorted(entries)
    }

    fn int(v: Option<&Value<'_>>) -> Option<i64> {
        match v {
            Some(Value::Int(n)) => Some(*n),
            _ => None,
        }
    }

    #[test]
    fn lookup_small_and_large() {
        let mut symbols = Symbols::new();
        let names: Vec<String> = (0..20).map(|i| format!("a{i}")).collect();
        let pairs: Vec<(&str, i64)> = names
            .iter()
            .enumerate()
            .map(|(i, n)| (n.as_str(), i as i64))
            .collect();
        let big = set(&mut symbols, &pairs);
        for (i, n) in names.iter().enumerate() {
            assert_eq!(int(big.get(symbols.intern_str(n))), Some(i as i64));
        }
        let small = set(&mut symbols, &[("x", 1)]);
        assert_eq!(int(small.get(symbols.intern_str("x"))), Some(1));
        assert!(small.get(symbols.intern_str("y")).is_none());
    }

    #[test]
    fn update_prefers_right() {
        let mut symbols = Symbols::new();
        let a = set(&mut symbols, &[("x", 1), ("y", 2)]);
        let b = set(&mut symbols, &[("y", 3), ("z", 4)]);
        let c = a.update(&b);
        assert_eq!(c.len(), 3);
        assert_eq!(int(c.get(symbols.intern_str("y"))), Some(3));
        assert_eq!(int(c.get(symbols.intern_str("x"))), Some(1));
    }

    #[test]
    fn first_duplicate_wins_and_order_is_lexicographic() {
        let mut symbols = Symbols::new();
        let b = symbols.intern_str("b");
        let a = symbols.intern_str("a");
        let attrs = Attrs::from_unsorted(vec![
            Attr {
                name: b,
                pos: Pos::NONE,
                value: Value::Int(1),
            },
            Attr {
                name: a,
                pos: Pos::NONE,
                value: Value::Int(2),
            },
            Attr {
                name: b,
                pos: Pos::NONE,
                value: Value::Int(3),
            },
        ]);
        assert_eq!(int(attrs.get(b)), Some(1));
        let names: Vec<_> = attrs
            .lexicographic(&symbols)
            .iter()
            .map(|x| symbols.text(x.name).into_owned())
            .collect();
        assert_eq!(names, ["a", "b"]);
    }
}
