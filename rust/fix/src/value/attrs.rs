//! Attribute sets: one allocation of entries sorted by `Sym`, so a lookup
//! is a binary search over integers and `//` is a linear merge.

use super::Value;
use crate::source::Pos;
use crate::stats::{Counter, count};
use crate::symbol::{Sym, Symbols};
use crate::thin::ThinRc;
use smallvec::SmallVec;

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
    pub(crate) fn count(&self) -> crate::thin::Count<'_> {
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

    /// Where `name` is among the entries: a scan of a small set, a binary
    /// search of a larger one.
    #[inline]
    fn index_of(&self, name: Sym) -> Option<usize> {
        let entries = self.as_slice();
        if entries.len() <= LINEAR {
            return entries.iter().position(|a| a.name == name);
        }
        entries.binary_search_by_key(&name, |a| a.name).ok()
    }

    #[inline]
    pub fn get_attr(&self, name: Sym) -> Option<&Attr<'a>> {
        self.index_of(name).map(|i| &self.as_slice()[i])
    }

    /// `get_attr`, trying the entry at `hint` first and leaving there
    /// where the name was found.
    #[inline]
    pub fn get_hinted(&self, name: Sym, hint: &std::cell::Cell<u32>) -> Option<&Attr<'a>> {
        let entries = self.as_slice();
        if let Some(attr) = entries.get(hint.get() as usize)
            && attr.name == name
        {
            return Some(attr);
        }
        let i = self.index_of(name)?;
        // Only a hint: an index past u32 (never, in practice) is checked
        // by name before it is used.
        hint.set(i as u32);
        Some(&entries[i])
    }

    pub fn get(&self, name: Sym) -> Option<&Value<'a>> {
        self.get_attr(name).map(|a| &a.value)
    }

    pub fn contains(&self, name: Sym) -> bool {
        self.get_attr(name).is_some()
    }

    /// `self // other`: every name of both, `other` winning.
    ///
    /// Each entry of `other` is placed by a binary search in what is left
    /// of `self`, which splits both into runs; the result is built in
    /// place by cloning the runs in order. `acc // small` (the usual
    /// shape, a fold growing one set) costs a few searches and one tight
    /// copy instead of a comparison per entry.
    pub fn update(&self, other: &Attrs<'a>) -> Attrs<'a> {
        if other.is_empty() {
            return self.clone();
        }
        if self.is_empty() {
            return other.clone();
        }
        let (a, b) = (self.as_slice(), other.as_slice());
        let mut runs: SmallVec<[&[Attr<'a>]; 16]> = SmallVec::new();
        let (mut i, mut j) = (0, 0);
        while j < b.len() {
            let (at, replaced) = match a[i..].binary_search_by_key(&b[j].name, |x| x.name) {
                Ok(k) => (i + k, true),
                Err(k) => (i + k, false),
            };
            if at > i {
                runs.push(&a[i..at]);
            }
            i = at + usize::from(replaced);
            // The entries of `other` that fall before the next one of
            // `self` go in one run.
            let start = j;
            j += 1;
            while j < b.len() && a.get(i).is_none_or(|next| b[j].name < next.name) {
                j += 1;
            }
            runs.push(&b[start..j]);
        }
        if i < a.len() {
            runs.push(&a[i..]);
        }
        count(Counter::Sets);
        Attrs(ThinRc::from_cloned_runs((), &runs))
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
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `a0 = 0; a1 = 1; ...`: `n` entries.
    fn numbered(n: usize) -> Vec<(String, i64)> {
        (0..n).map(|i| (format!("a{i}"), i as i64)).collect()
    }

    fn set<S: AsRef<str>>(symbols: &mut Symbols, pairs: &[(S, i64)]) -> Attrs<'static> {
        let entries = pairs
            .iter()
            .map(|(n, v)| Attr {
                name: symbols.intern_str(n.as_ref()),
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
    fn a_hinted_lookup_finds_the_name_wherever_the_hint_points() {
        let mut symbols = Symbols::new();
        let pairs = numbered(20);
        for set in [set(&mut symbols, &pairs[..5]), set(&mut symbols, &pairs)] {
            for (i, (name, value)) in pairs[..set.len()].iter().enumerate() {
                let sym = symbols.intern_str(name);
                // No hint yet, a hint at another entry, one past the end:
                // each is searched, and the hint left at the entry found.
                for start in [0, (i as u32 + 1) % set.len() as u32, 1000] {
                    let hint = std::cell::Cell::new(start);
                    let found = set.get_hinted(sym, &hint).map(|a| &a.value);
                    assert_eq!(int(found), Some(*value));
                    assert_eq!(set.as_slice()[hint.get() as usize].name, sym);
                    assert_eq!(
                        int(set.get_hinted(sym, &hint).map(|a| &a.value)),
                        Some(*value)
                    );
                }
            }
            let missing = symbols.intern_str("missing");
            let hint = std::cell::Cell::new(3);
            assert!(set.get_hinted(missing, &hint).is_none());
            assert_eq!(hint.get(), 3, "a name not found leaves the hint");
        }
    }

    #[test]
    fn lookup_small_and_large() {
        let mut symbols = Symbols::new();
        let pairs = numbered(20);
        let big = set(&mut symbols, &pairs);
        for (n, v) in &pairs {
            assert_eq!(int(big.get(symbols.intern_str(n))), Some(*v));
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

    proptest::proptest! {
        /// `//` gives exactly the map union with the right side winning,
        /// sorted, whatever the two sets' sizes and overlap.
        #[test]
        fn update_is_the_right_biased_union(
            left in proptest::collection::btree_map(0u32..60, 0i64..100, 0..40),
            right in proptest::collection::btree_map(0u32..60, 100i64..200, 0..40),
        ) {
            let mut symbols = Symbols::new();
            let names: Vec<String> = (0..60).map(|i| format!("n{i}")).collect();
            let to_pairs = |m: &std::collections::BTreeMap<u32, i64>| -> Vec<(&str, i64)> {
                m.iter().map(|(k, v)| (names[*k as usize].as_str(), *v)).collect()
            };
            let a = set(&mut symbols, &to_pairs(&left));
            let b = set(&mut symbols, &to_pairs(&right));
            let merged = a.update(&b);
            let mut expected = left.clone();
            expected.extend(right.iter().map(|(k, v)| (*k, *v)));
            proptest::prop_assert_eq!(merged.len(), expected.len());
            proptest::prop_assert!(merged.as_slice().windows(2).all(|w| w[0].name < w[1].name));
            for (k, v) in &expected {
                let sym = symbols.intern_str(&names[*k as usize]);
                proptest::prop_assert_eq!(int(merged.get(sym)), Some(*v));
            }
        }
    }
}
