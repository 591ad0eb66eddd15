//! Nix strings: immutable byte strings behind one thin pointer.
//!
//! Nix strings are bytes, not UTF-8 (`builtins.readFile` can return any
//! bytes). The string's context lives in the header of the same
//! allocation: one word, `None` for the strings that have none.

use super::context::Context;
use crate::thin::ThinRc;
use std::fmt;
use std::hash::{Hash, Hasher};

#[derive(Clone)]
pub struct NixString(ThinRc<Option<Context>, u8>);

impl NixString {
    pub fn new(bytes: &[u8]) -> Self {
        NixString(ThinRc::from_slice(None, bytes))
    }

    pub fn from_parts(parts: &[&[u8]]) -> Self {
        NixString(ThinRc::from_slices(None, parts))
    }

    /// `parts` joined by `sep`, with `context`: one copy of each byte.
    pub fn joined(parts: &[NixString], sep: &[u8], context: Option<Context>) -> Self {
        NixString(ThinRc::from_joined(context, parts, sep))
    }

    /// The decimal text of an integer, as Nix prints it.
    pub fn from_int(n: i64) -> Self {
        NixString::new(decimal(n, &mut [0; 20]))
    }

    /// A string that refers to the store objects in `context`.
    pub fn with_context(bytes: &[u8], context: Option<Context>) -> Self {
        NixString(ThinRc::from_slice(context, bytes))
    }

    /// The concatenation of `parts`, with `context`.
    pub fn from_parts_with(parts: &[&[u8]], context: Option<Context>) -> Self {
        NixString(ThinRc::from_slices(context, parts))
    }

    /// The reference count (see `Value::clone`).
    #[inline(always)]
    pub(crate) fn count(&self) -> crate::thin::Count<'_> {
        self.0.count()
    }

    pub fn context(&self) -> Option<&Context> {
        self.0.header().as_ref()
    }

    pub fn has_context(&self) -> bool {
        self.0.header().is_some()
    }

    /// The same text without context.
    pub fn without_context(&self) -> NixString {
        if self.has_context() {
            NixString::new(self.as_bytes())
        } else {
            self.clone()
        }
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

/// Hashes and compares as its bytes do (see `Hash` and `PartialEq`), so a
/// map keyed by strings can be searched by bytes.
impl std::borrow::Borrow<[u8]> for NixString {
    fn borrow(&self) -> &[u8] {
        self.as_bytes()
    }
}

impl AsRef<[u8]> for NixString {
    fn as_ref(&self) -> &[u8] {
        self.as_bytes()
    }
}

/// The decimal digits of `n` (with a `-` when negative), written at the
/// end of `buf`: the 20 bytes fit `i64::MIN`.
pub fn decimal(n: i64, buf: &mut [u8; 20]) -> &[u8] {
    let mut i = buf.len();
    let mut m = n.unsigned_abs();
    loop {
        i -= 1;
        buf[i] = b'0' + (m % 10) as u8;
        m /= 10;
        if m == 0 {
            break;
        }
    }
    if n < 0 {
        i -= 1;
        buf[i] = b'-';
    }
    &buf[i..]
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
    fn decimal_like_to_string() {
        for n in [0, 7, -7, 10, 1234567890, -100, i64::MAX, i64::MIN] {
            assert_eq!(decimal(n, &mut [0; 20]), n.to_string().as_bytes());
            assert_eq!(NixString::from_int(n).as_bytes(), n.to_string().as_bytes());
        }
    }

    #[test]
    fn joins_with_a_separator() {
        let parts = [NixString::from("a"), NixString::from("bc")];
        assert_eq!(NixString::joined(&parts, b"--", None).as_bytes(), b"a--bc");
    }

    #[test]
    fn compares_by_bytes() {
        assert_eq!(NixString::from("x"), NixString::from(b"x".as_slice()));
        assert!(NixString::from("a") < NixString::from("b"));
        assert_eq!(NixString::new(&[0xff]).lossy(), "\u{fffd}");
    }
}
