//! Interned names. Every identifier and attribute name becomes a `Sym`, so
//! attribute sets compare and search small integers instead of strings.

use crate::value::NixString;
use rustc_hash::FxHashMap;

/// An interned name. Ordered by creation, not alphabetically: attribute
/// sets sort by `Sym` for lookup and sort by text only to print.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
pub struct Sym(u32);

impl Sym {
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

macro_rules! known_symbols {
    ($($name:ident = $text:expr,)*) => {
        /// Names the evaluator itself looks up, interned first so their
        /// `Sym` is a constant.
        pub mod known {
            use super::Sym;
            known_symbols!(@consts 0u32, $($name,)*);
        }
        const KNOWN: &[&str] = &[$($text,)*];
    };
    (@consts $n:expr, $name:ident, $($rest:ident,)*) => {
        pub const $name: Sym = Sym($n);
        known_symbols!(@consts $n + 1u32, $($rest,)*);
    };
    (@consts $n:expr,) => {};
}

known_symbols! {
    FUNCTOR = "__functor",
    OVERRIDES = "__overrides",
    TO_STRING = "__toString",
    OUT_PATH = "outPath",
    TYPE = "type",
    NAME = "name",
    VALUE = "value",
    FILE = "file",
    LINE = "line",
    COLUMN = "column",
    KEY = "key",
    START_SET = "startSet",
    OPERATOR = "operator",
    SUCCESS = "success",
    RIGHT = "right",
    WRONG = "wrong",
    PREFIX = "prefix",
    PATH = "path",
    VERSION = "version",
    DRV_PATH = "drvPath",
    BODY = "body",
    FIND_FILE = "__findFile",
    NIX_PATH = "__nixPath",
    SUB = "__sub",
    MUL = "__mul",
    DIV = "__div",
    LESS_THAN = "__lessThan",
    TYPE_UNDERSCORE = "_type",
}

/// The interner. One per evaluation; symbols are never freed. Each name
/// is kept as a Nix string, so `attrNames`, `mapAttrs` and the like hand
/// out the name itself (a count taken) instead of a copy.
pub struct Symbols {
    map: FxHashMap<NixString, Sym>,
    names: Vec<NixString>,
    /// The table's own blocks, counted by the memory bound (the names
    /// themselves are strings, counted as values).
    held: crate::memory::Held,
}

impl Default for Symbols {
    fn default() -> Self {
        Self::new()
    }
}

impl Symbols {
    pub fn new() -> Self {
        let mut symbols = Symbols {
            map: FxHashMap::default(),
            names: Vec::new(),
            held: crate::memory::Held::default(),
        };
        for text in KNOWN {
            symbols.intern(text.as_bytes());
        }
        symbols
    }

    pub fn intern(&mut self, name: &[u8]) -> Sym {
        if let Some(&sym) = self.map.get(name) {
            return sym;
        }
        self.add(NixString::new(name))
    }

    /// Interns a string without context, keeping that string itself as
    /// the name when it is new (`listToAttrs` names a set's attributes by
    /// strings it already holds).
    pub fn intern_string(&mut self, name: &NixString) -> Sym {
        if let Some(&sym) = self.map.get(name.as_bytes()) {
            return sym;
        }
        if name.has_context() {
            return self.add(name.without_context());
        }
        self.add(name.clone())
    }

    fn add(&mut self, text: NixString) -> Sym {
        let sym = Sym(u32::try_from(self.names.len()).unwrap_or(u32::MAX));
        let before = (self.names.capacity(), self.map.capacity());
        self.names.push(text.clone());
        self.map.insert(text, sym);
        if (self.names.capacity(), self.map.capacity()) != before {
            self.held.set(
                self.names.capacity() * std::mem::size_of::<NixString>()
                    + self.map.capacity() * (std::mem::size_of::<(NixString, Sym)>() + 1),
            );
        }
        sym
    }

    pub fn intern_str(&mut self, name: &str) -> Sym {
        self.intern(name.as_bytes())
    }

    /// The symbol for `name` if it was ever interned.
    pub fn lookup(&self, name: &[u8]) -> Option<Sym> {
        self.map.get(name).copied()
    }

    pub fn bytes(&self, sym: Sym) -> &[u8] {
        self.names
            .get(sym.index())
            .map(|n| n.as_bytes())
            .unwrap_or(b"")
    }

    /// The name as a Nix string: the interned one, shared.
    pub fn string(&self, sym: Sym) -> NixString {
        self.names
            .get(sym.index())
            .cloned()
            .unwrap_or_else(|| NixString::new(b""))
    }

    /// The name as text for messages (invalid UTF-8 is replaced).
    pub fn text(&self, sym: Sym) -> std::borrow::Cow<'_, str> {
        String::from_utf8_lossy(self.bytes(sym))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interning_is_stable() {
        let mut s = Symbols::new();
        let a = s.intern_str("hello");
        let b = s.intern_str("world");
        assert_ne!(a, b);
        assert_eq!(s.intern_str("hello"), a);
        assert_eq!(s.bytes(b), b"world");
        assert_eq!(s.lookup(b"missing"), None);
    }

    #[test]
    fn known_symbols_are_preinterned() {
        let mut s = Symbols::new();
        assert_eq!(s.intern_str("__functor"), known::FUNCTOR);
        assert_eq!(s.intern_str("outPath"), known::OUT_PATH);
        assert_eq!(s.text(known::NAME), "name");
    }
}
