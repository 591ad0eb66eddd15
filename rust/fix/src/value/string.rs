//! Nix strings: immutable byte strings behind one thin pointer.
//!
//! Nix strings are bytes, not UTF-8 (`builtins.readFile` can return any
//! bytes). String context (part 2) will live in the header of the same
//! allocation, so a string without context pays nothing for it.

use crate::thin::ThinRc;
use std::fmt;
use std::hash::{Hash, Hasher};

#[derive(Clone)]
pub struct NixString(ThinRc<(), u8>);

impl NixString {
    pub fn new(bytes: &[u8]) -> Self {
        NixString(ThinRc::from_slice((), bytes))
    }

    pub fn from_parts(parts: &[&[u8]]) -> Self {
        NixString(ThinRc::from_slices((), parts))
    }

    pub fn as_bytes(&self) -> &[u8] {
        self.0.as_slice()
    }

    pub fn len(&self) -> usize {
        self.as_bytes().len()
    }

    /// The text for messages; invalid UTF-8 is replaced.
    pub fn lossy(&self) -> std::borrow::Cow<'_, str> {
        String::from_utf8_lossy(self.as_bytes())
    }

    pub fn ptr_eq(a: &Self, b: &Self) -> bool {
        ThinRc::ptr_eq(&a.0, &b.0)
    }
}

impl From<&str> for NixString {
    fn from(s: &str) -> Self {
        NixString::new(s.as_bytes())
    }
}

impl From<&[u8]> for NixString {
    fn from(s: &[u8]) -> Self {
        NixString::new(s)
    }
}

impl From<Vec<u8>> for NixString {
    fn from(s: Vec<u8>) -> Self {
        NixString::new(&s)
    }
}

impl From<String> for NixString {
    fn from(s: String) -> Self {
        NixString::new(s.as_bytes())
    }
}

impl PartialEq for NixString {
    fn eq(&self, other: &Self) -> bool {
        NixString::ptr_eq(self, other) || self.as_bytes() == other.as_bytes()
    }
}

impl Eq for NixString {}

impl PartialOrd for NixString {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for NixString {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.as_bytes().cmp(other.as_bytes())
    }
}

impl Hash for NixString {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.as_bytes().hash(state)
    }
}

impl fmt::Debug for NixString {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", self.lossy())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn concatenates_in_one_copy() {
        let s = NixString::from_parts(&[b"ab", b"", b"cde"]);
        assert_eq!(s.as_bytes(), b"abcde");
        assert_eq!(s.len(), 5);
        assert_eq!(NixString::from_parts(&[]).as_bytes(), b"");
    }

    #[test]
    fn compares_by_bytes() {
        assert_eq!(NixString::from("x"), NixString::from(b"x".as_slice()));
        assert!(NixString::from("a") < NixString::from("b"));
        assert_eq!(NixString::new(&[0xff]).lossy(), "\u{fffd}");
    }
}
