//! The serde Deserializer over a parsed document. Every error is placed at the
//! innermost node that saw it (a wrong type at the value, an unknown field at
//! its name, a missing field at the struct that lacks it).

use serde::de::{
    self, DeserializeSeed, EnumAccess, Expected, IntoDeserializer, MapAccess, SeqAccess,
    VariantAccess, Visitor,
};

use crate::error::{DeError, Span, locate};
use crate::parse::{Field, Kind, Node};
use crate::spanned::{SPANNED_END, SPANNED_FIELDS, SPANNED_NAME, SPANNED_START, SPANNED_VALUE};

type Result<T> = std::result::Result<T, DeError>;

pub(crate) struct NodeDeserializer<'a> {
    pub(crate) node: &'a Node,
}

impl<'a> NodeDeserializer<'a> {
    fn span(&self) -> Span {
        self.node.span
    }

    /// "expected X, found Y", at this node.
    fn wrong(&self, expected: &dyn Expected) -> DeError {
        DeError::at(
            self.span(),
            format!("expected {expected}, found {}", describe(&self.node.kind)),
        )
    }

    fn int<T, V>(self, visitor: V, visit: impl FnOnce(V, T) -> Result<V::Value>) -> Result<V::Value>
    where
        T: TryFrom<i128> + TryFrom<u128>,
        V: Visitor<'a>,
    {
        let Kind::Int {
            negative,
            magnitude,
        } = self.node.kind
        else {
            return Err(self.wrong(&visitor));
        };
        let value: Option<T> = magnitude.and_then(|m| {
            if negative {
                0i128
                    .checked_sub_unsigned(m)
                    .and_then(|v| T::try_from(v).ok())
            } else {
                T::try_from(m).ok()
            }
        });
        match value {
            Some(v) => locate(visit(visitor, v), self.span()),
            None => Err(DeError::at(
                self.span(),
                format!(
                    "this integer does not fit: expected {}",
                    ExpectedText(&visitor)
                ),
            )),
        }
    }
}

/// Adapts a visitor's `expecting` for use inside `format!`.
struct ExpectedText<'v>(&'v dyn Expected);

impl std::fmt::Display for ExpectedText<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

/// A node in words, for "found ..." in messages.
fn describe(kind: &Kind) -> String {
    match kind {
        Kind::Bool(b) => format!("`{b}`"),
        Kind::Null => "`null`".into(),
        Kind::Int {
            negative,
            magnitude,
        } => match magnitude {
            Some(m) => format!("the integer {}{m}", if *negative { "-" } else { "" }),
            None => "an integer wider than 128 bits".into(),
        },
        Kind::Float(f) => format!("the float {f}"),
        Kind::Str(s) => format!("the string {s:?}"),
        Kind::Enum(name) => format!("the enum literal `.{name}`"),
        Kind::Empty => "`.{}`".into(),
        Kind::Struct(_) => "a struct `.{ .name = value }`".into(),
        Kind::Tuple(_) => "a tuple `.{ value, ... }`".into(),
    }
}

macro_rules! deserialize_int {
    ($($method:ident => $visit:ident : $ty:ty),* $(,)?) => {
        $(
            fn $method<V: Visitor<'a>>(self, visitor: V) -> Result<V::Value> {
                self.int::<$ty, V>(visitor, |v, n| v.$visit(n))
            }
        )*
    };
}

impl<'a> de::Deserializer<'a> for NodeDeserializer<'a> {
    type Error = DeError;

    fn deserialize_any<V: Visitor<'a>>(self, visitor: V) -> Result<V::Value> {
        let span = self.span();
        let result = match &self.node.kind {
            Kind::Bool(b) => visitor.visit_bool(*b),
            Kind::Null => visitor.visit_unit(),
            Kind::Int {
                negative: false, ..
            } => return self.deserialize_u128(visitor),
            Kind::Int { negative: true, .. } => return self.deserialize_i128(visitor),
            Kind::Float(f) => visitor.visit_f64(*f),
            Kind::Str(s) => visitor.visit_borrowed_str(s),
            Kind::Enum(name) => visitor.visit_enum(EnumLiteral { name, span }),
            Kind::Empty => visitor.visit_map(Fields::new(&[])),
            Kind::Struct(fields) => visitor.visit_map(Fields::new(fields)),
            Kind::Tuple(items) => visitor.visit_seq(Items::new(items)),
        };
        locate(result, span)
    }

    deserialize_int! {
        deserialize_i8 => visit_i8: i8,
        deserialize_i16 => visit_i16: i16,
        deserialize_i32 => visit_i32: i32,
        deserialize_i64 => visit_i64: i64,
        deserialize_i128 => visit_i128: i128,
        deserialize_u8 => visit_u8: u8,
        deserialize_u16 => visit_u16: u16,
        deserialize_u32 => visit_u32: u32,
        deserialize_u64 => visit_u64: u64,
        deserialize_u128 => visit_u128: u128,
    }

    fn deserialize_bool<V: Visitor<'a>>(self, visitor: V) -> Result<V::Value> {
        match self.node.kind {
            Kind::Bool(b) => locate(visitor.visit_bool(b), self.span()),
            _ => Err(self.wrong(&visitor)),
        }
    }

    fn deserialize_f32<V: Visitor<'a>>(self, visitor: V) -> Result<V::Value> {
        self.deserialize_f64(visitor)
    }

    fn deserialize_f64<V: Visitor<'a>>(self, visitor: V) -> Result<V::Value> {
        let value = match self.node.kind {
            Kind::Float(f) => f,
            Kind::Int {
                negative,
                magnitude: Some(m),
            } => {
                let f = m as f64;
                if negative { -f } else { f }
            }
            _ => return Err(self.wrong(&visitor)),
        };
        locate(visitor.visit_f64(value), self.span())
    }

    fn deserialize_char<V: Visitor<'a>>(self, visitor: V) -> Result<V::Value> {
        let c = match &self.node.kind {
            Kind::Int {
                negative: false,
                magnitude: Some(m),
            } => u32::try_from(*m).ok().and_then(char::from_u32),
            Kind::Str(s) if s.chars().count() == 1 => s.chars().next(),
            _ => None,
        };
        match c {
            Some(c) => locate(visitor.visit_char(c), self.span()),
            None => Err(self.wrong(&visitor)),
        }
    }

    fn deserialize_str<V: Visitor<'a>>(self, visitor: V) -> Result<V::Value> {
        match &self.node.kind {
            Kind::Str(s) => locate(visitor.visit_borrowed_str(s), self.span()),
            Kind::Enum(name) => Err(DeError::at(
                self.span(),
                format!(
                    "expected {}, found the enum literal `.{name}`: write \"{name}\" in quotes",
                    ExpectedText(&visitor)
                ),
            )),
            _ => Err(self.wrong(&visitor)),
        }
    }

    fn deserialize_string<V: Visitor<'a>>(self, visitor: V) -> Result<V::Value> {
        self.deserialize_str(visitor)
    }

    fn deserialize_bytes<V: Visitor<'a>>(self, visitor: V) -> Result<V::Value> {
        match &self.node.kind {
            Kind::Str(s) => locate(visitor.visit_borrowed_bytes(s.as_bytes()), self.span()),
            Kind::Tuple(_) | Kind::Empty => self.deserialize_seq(visitor),
            _ => Err(self.wrong(&visitor)),
        }
    }

    fn deserialize_byte_buf<V: Visitor<'a>>(self, visitor: V) -> Result<V::Value> {
        self.deserialize_bytes(visitor)
    }

    fn deserialize_option<V: Visitor<'a>>(self, visitor: V) -> Result<V::Value> {
        match self.node.kind {
            Kind::Null => locate(visitor.visit_none(), self.span()),
            _ => {
                let span = self.span();
                locate(visitor.visit_some(self), span)
            }
        }
    }

    fn deserialize_unit<V: Visitor<'a>>(self, visitor: V) -> Result<V::Value> {
        match self.node.kind {
            Kind::Null | Kind::Empty => locate(visitor.visit_unit(), self.span()),
            _ => Err(self.wrong(&visitor)),
        }
    }

    fn deserialize_unit_struct<V: Visitor<'a>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value> {
        self.deserialize_unit(visitor)
    }

    fn deserialize_newtype_struct<V: Visitor<'a>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value> {
        let span = self.span();
        locate(visitor.visit_newtype_struct(self), span)
    }

    fn deserialize_seq<V: Visitor<'a>>(self, visitor: V) -> Result<V::Value> {
        let result = match &self.node.kind {
            Kind::Tuple(items) => visitor.visit_seq(Items::new(items)),
            Kind::Empty => visitor.visit_seq(Items::new(&[])),
            _ => return Err(self.wrong(&visitor)),
        };
        locate(result, self.span())
    }

    fn deserialize_tuple<V: Visitor<'a>>(self, _len: usize, visitor: V) -> Result<V::Value> {
        self.deserialize_seq(visitor)
    }

    fn deserialize_tuple_struct<V: Visitor<'a>>(
        self,
        _name: &'static str,
        _len: usize,
        visitor: V,
    ) -> Result<V::Value> {
        self.deserialize_seq(visitor)
    }

    fn deserialize_map<V: Visitor<'a>>(self, visitor: V) -> Result<V::Value> {
        let result = match &self.node.kind {
            Kind::Struct(fields) => visitor.visit_map(Fields::new(fields)),
            Kind::Empty => visitor.visit_map(Fields::new(&[])),
            _ => return Err(self.wrong(&visitor)),
        };
        locate(result, self.span())
    }

    fn deserialize_struct<V: Visitor<'a>>(
        self,
        name: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value> {
        if name == SPANNED_NAME && fields == SPANNED_FIELDS {
            return visitor.visit_map(SpannedAccess {
                span: self.node.span,
                value: Wrapped::Node(self.node),
                step: 0,
            });
        }
        self.deserialize_map(visitor)
    }

    fn deserialize_enum<V: Visitor<'a>>(
        self,
        _name: &'static str,
        _variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value> {
        let span = self.span();
        let result = match &self.node.kind {
            Kind::Enum(name) => visitor.visit_enum(EnumLiteral { name, span }),
            Kind::Struct(fields) if fields.len() == 1 => match fields.first() {
                Some(field) => visitor.visit_enum(TaggedUnion { field }),
                None => Err(self.wrong(&visitor)),
            },
            Kind::Str(s) => {
                return Err(DeError::at(
                    span,
                    format!(
                        "expected {}, found the string {s:?}: write .{s} without quotes",
                        ExpectedText(&visitor)
                    ),
                ));
            }
            _ => return Err(self.wrong(&visitor)),
        };
        locate(result, span)
    }

    fn deserialize_identifier<V: Visitor<'a>>(self, visitor: V) -> Result<V::Value> {
        match &self.node.kind {
            Kind::Str(s) | Kind::Enum(s) => locate(visitor.visit_borrowed_str(s), self.span()),
            _ => Err(self.wrong(&visitor)),
        }
    }

    fn deserialize_ignored_any<V: Visitor<'a>>(self, visitor: V) -> Result<V::Value> {
        visitor.visit_unit()
    }
}

/// The fields of a struct literal, as a serde map whose keys are the names.
struct Fields<'a> {
    fields: std::slice::Iter<'a, Field>,
    value: Option<&'a Node>,
}

impl<'a> Fields<'a> {
    fn new(fields: &'a [Field]) -> Self {
        Fields {
            fields: fields.iter(),
            value: None,
        }
    }
}

impl<'a> MapAccess<'a> for Fields<'a> {
    type Error = DeError;

    fn next_key_seed<K: DeserializeSeed<'a>>(&mut self, seed: K) -> Result<Option<K::Value>> {
        let Some(field) = self.fields.next() else {
            return Ok(None);
        };
        self.value = Some(&field.value);
        let key = NameDeserializer {
            name: &field.name,
            span: field.name_span,
        };
        locate(seed.deserialize(key), field.name_span).map(Some)
    }

    fn next_value_seed<V: DeserializeSeed<'a>>(&mut self, seed: V) -> Result<V::Value> {
        match self.value.take() {
            Some(node) => locate(seed.deserialize(NodeDeserializer { node }), node.span),
            None => Err(de::Error::custom(
                "a value was asked for before its field name",
            )),
        }
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.fields.len())
    }
}

/// The elements of a tuple literal.
struct Items<'a> {
    items: std::slice::Iter<'a, Node>,
}

impl<'a> Items<'a> {
    fn new(items: &'a [Node]) -> Self {
        Items {
            items: items.iter(),
        }
    }
}

impl<'a> SeqAccess<'a> for Items<'a> {
    type Error = DeError;

    fn next_element_seed<T: DeserializeSeed<'a>>(&mut self, seed: T) -> Result<Option<T::Value>> {
        match self.items.next() {
            Some(node) => locate(seed.deserialize(NodeDeserializer { node }), node.span).map(Some),
            None => Ok(None),
        }
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.items.len())
    }
}

/// A field name, handed to serde as a string so `deny_unknown_fields` and
/// `rename` work as usual; errors point at the name. A key read as a
/// [`crate::Spanned`] gets the name's own span.
struct NameDeserializer<'a> {
    name: &'a str,
    span: Span,
}

impl<'de> de::Deserializer<'de> for NameDeserializer<'de> {
    type Error = DeError;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        locate(visitor.visit_borrowed_str(self.name), self.span)
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value> {
        if name == SPANNED_NAME && fields == SPANNED_FIELDS {
            return visitor.visit_map(SpannedAccess {
                span: self.span,
                value: Wrapped::Name(self.name),
                step: 0,
            });
        }
        self.deserialize_any(visitor)
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf option unit unit_struct newtype_struct seq tuple
        tuple_struct map enum identifier ignored_any
    }
}

/// `.name` read as an enum: a unit variant.
struct EnumLiteral<'a> {
    name: &'a str,
    span: Span,
}

impl<'a> EnumAccess<'a> for EnumLiteral<'a> {
    type Error = DeError;
    type Variant = UnitOnly;

    fn variant_seed<V: DeserializeSeed<'a>>(self, seed: V) -> Result<(V::Value, UnitOnly)> {
        let key = NameDeserializer {
            name: self.name,
            span: self.span,
        };
        let value = locate(seed.deserialize(key), self.span)?;
        Ok((value, UnitOnly { span: self.span }))
    }
}

struct UnitOnly {
    span: Span,
}

impl<'a> VariantAccess<'a> for UnitOnly {
    type Error = DeError;

    fn unit_variant(self) -> Result<()> {
        Ok(())
    }

    fn newtype_variant_seed<T: DeserializeSeed<'a>>(self, _seed: T) -> Result<T::Value> {
        Err(self.needs_payload())
    }

    fn tuple_variant<V: Visitor<'a>>(self, _len: usize, _visitor: V) -> Result<V::Value> {
        Err(self.needs_payload())
    }

    fn struct_variant<V: Visitor<'a>>(
        self,
        _fields: &'static [&'static str],
        _visitor: V,
    ) -> Result<V::Value> {
        Err(self.needs_payload())
    }
}

impl UnitOnly {
    fn needs_payload(&self) -> DeError {
        DeError::at(
            self.span,
            "this variant carries a value: write it as .{ .variant = value }",
        )
    }
}

/// `.{ .variant = value }` read as an enum with a payload (Zig's tagged union).
struct TaggedUnion<'a> {
    field: &'a Field,
}

impl<'a> EnumAccess<'a> for TaggedUnion<'a> {
    type Error = DeError;
    type Variant = NodeDeserializer<'a>;

    fn variant_seed<V: DeserializeSeed<'a>>(
        self,
        seed: V,
    ) -> Result<(V::Value, NodeDeserializer<'a>)> {
        let key = NameDeserializer {
            name: &self.field.name,
            span: self.field.name_span,
        };
        let value = locate(seed.deserialize(key), self.field.name_span)?;
        Ok((
            value,
            NodeDeserializer {
                node: &self.field.value,
            },
        ))
    }
}

impl<'a> VariantAccess<'a> for NodeDeserializer<'a> {
    type Error = DeError;

    fn unit_variant(self) -> Result<()> {
        match self.node.kind {
            Kind::Null | Kind::Empty => Ok(()),
            _ => Err(DeError::at(
                self.span(),
                "this variant carries no value: write it as .variant",
            )),
        }
    }

    fn newtype_variant_seed<T: DeserializeSeed<'a>>(self, seed: T) -> Result<T::Value> {
        let span = self.span();
        locate(seed.deserialize(self), span)
    }

    fn tuple_variant<V: Visitor<'a>>(self, _len: usize, visitor: V) -> Result<V::Value> {
        de::Deserializer::deserialize_seq(self, visitor)
    }

    fn struct_variant<V: Visitor<'a>>(
        self,
        _fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value> {
        de::Deserializer::deserialize_map(self, visitor)
    }
}

/// What a [`crate::Spanned`] wraps: a value, or a field's name.
enum Wrapped<'a> {
    Node(&'a Node),
    Name(&'a str),
}

/// Hands a [`crate::Spanned`] its byte range and then the value itself.
struct SpannedAccess<'a> {
    span: Span,
    value: Wrapped<'a>,
    step: u8,
}

impl<'a> MapAccess<'a> for SpannedAccess<'a> {
    type Error = DeError;

    fn next_key_seed<K: DeserializeSeed<'a>>(&mut self, seed: K) -> Result<Option<K::Value>> {
        let key = match self.step {
            0 => SPANNED_START,
            1 => SPANNED_END,
            2 => SPANNED_VALUE,
            _ => return Ok(None),
        };
        seed.deserialize(de::value::BorrowedStrDeserializer::new(key))
            .map(Some)
    }

    fn next_value_seed<V: DeserializeSeed<'a>>(&mut self, seed: V) -> Result<V::Value> {
        let step = self.step;
        self.step += 1;
        match (step, &self.value) {
            (0, _) => seed.deserialize((self.span.start as u64).into_deserializer()),
            (1, _) => seed.deserialize((self.span.end as u64).into_deserializer()),
            (_, Wrapped::Node(node)) => seed.deserialize(NodeDeserializer { node }),
            (_, Wrapped::Name(name)) => seed.deserialize(NameDeserializer {
                name,
                span: self.span,
            }),
        }
    }
}
