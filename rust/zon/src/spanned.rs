//! `Spanned<T>`: a value together with the byte range it was read from, so a
//! configuration reader can name the line of a rule long after parsing, or
//! refuse a value with a position after checking it against others.

use std::fmt;
use std::marker::PhantomData;

use serde::de::{self, Deserialize, Deserializer, MapAccess, Visitor};

use crate::error::Span;

pub(crate) const SPANNED_NAME: &str = "$chock_zon::Spanned";
pub(crate) const SPANNED_START: &str = "$chock_zon::Spanned::start";
pub(crate) const SPANNED_END: &str = "$chock_zon::Spanned::end";
pub(crate) const SPANNED_VALUE: &str = "$chock_zon::Spanned::value";
pub(crate) const SPANNED_FIELDS: &[&str] = &[SPANNED_START, SPANNED_END, SPANNED_VALUE];

/// A value and where it was written. Only this crate's deserializer fills the
/// span; any other deserializer refuses the type. As a struct's key it is
/// the field's name and the name's span, and keys ordered by span come in
/// the order the file writes them.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Spanned<T> {
    pub span: Span,
    pub value: T,
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Spanned<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_struct(SPANNED_NAME, SPANNED_FIELDS, SpannedVisitor(PhantomData))
    }
}

struct SpannedVisitor<T>(PhantomData<T>);

impl<'de, T: Deserialize<'de>> Visitor<'de> for SpannedVisitor<T> {
    type Value = Spanned<T>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a value read by chock-zon")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut start = None;
        let mut end = None;
        let mut value = None;
        while let Some(key) = map.next_key::<&str>()? {
            match key {
                SPANNED_START => start = Some(map.next_value::<u64>()?),
                SPANNED_END => end = Some(map.next_value::<u64>()?),
                SPANNED_VALUE => value = Some(map.next_value::<T>()?),
                _ => return Err(de::Error::custom("Spanned can only be read by chock-zon")),
            }
        }
        match (start, end, value) {
            (Some(start), Some(end), Some(value)) => Ok(Spanned {
                span: Span {
                    start: usize::try_from(start).unwrap_or(usize::MAX),
                    end: usize::try_from(end).unwrap_or(usize::MAX),
                },
                value,
            }),
            _ => Err(de::Error::custom("Spanned can only be read by chock-zon")),
        }
    }
}
