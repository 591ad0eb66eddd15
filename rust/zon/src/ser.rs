//! The writer: any `Serialize` value as ZON text that `zig ast-check --zon`
//! and `zig fmt --check` accept. Layout follows `std.zon.stringify`: a
//! container of at most two scalar items goes on one line, anything bigger one
//! item per line with a trailing comma, four spaces per level.

use serde::ser::{self, Serialize};

use crate::error::WriteError;
use crate::parse::KEYWORDS;

type Result<T> = std::result::Result<T, WriteError>;

/// Writes `value` as a ZON document (ending in a newline).
pub fn to_string<T: Serialize + ?Sized>(value: &T) -> Result<String> {
    let tree = value.serialize(TreeSerializer)?;
    let mut out = String::new();
    write_tree(&tree, 0, &mut out);
    out.push('\n');
    Ok(out)
}

/// A value on its way out: scalars are already spelled.
#[derive(Debug)]
enum Tree {
    Scalar(String),
    Struct(Vec<(String, Tree)>),
    Tuple(Vec<Tree>),
}

impl Tree {
    fn is_scalar(&self) -> bool {
        match self {
            Tree::Scalar(_) => true,
            Tree::Struct(f) => f.is_empty(),
            Tree::Tuple(i) => i.is_empty(),
        }
    }
}

fn write_tree(tree: &Tree, indent: usize, out: &mut String) {
    match tree {
        Tree::Scalar(s) => out.push_str(s),
        Tree::Struct(fields) => {
            let items: Vec<(Option<&str>, &Tree)> =
                fields.iter().map(|(k, v)| (Some(k.as_str()), v)).collect();
            write_container(&items, indent, out);
        }
        Tree::Tuple(items) => {
            let items: Vec<(Option<&str>, &Tree)> = items.iter().map(|v| (None, v)).collect();
            write_container(&items, indent, out);
        }
    }
}

fn write_container(items: &[(Option<&str>, &Tree)], indent: usize, out: &mut String) {
    if items.is_empty() {
        out.push_str(".{}");
        return;
    }
    let inline = items.len() <= 2 && items.iter().all(|(_, v)| v.is_scalar());
    if let [(None, only)] = items
        && inline
    {
        // zig fmt writes a one-element tuple without inner spaces: `.{1}`.
        out.push_str(".{");
        write_tree(only, indent, out);
        out.push('}');
        return;
    }
    if inline {
        out.push_str(".{ ");
        for (i, (name, value)) in items.iter().enumerate() {
            if i > 0 {
                out.push_str(", ");
            }
            write_item(*name, value, indent, out);
        }
        out.push_str(" }");
        return;
    }
    out.push_str(".{\n");
    for (name, value) in items {
        push_indent(indent + 1, out);
        write_item(*name, value, indent + 1, out);
        out.push_str(",\n");
    }
    push_indent(indent, out);
    out.push('}');
}

fn write_item(name: Option<&str>, value: &Tree, indent: usize, out: &mut String) {
    if let Some(name) = name {
        out.push('.');
        out.push_str(name);
        out.push_str(" = ");
    }
    write_tree(value, indent, out);
}

fn push_indent(level: usize, out: &mut String) {
    for _ in 0..level {
        out.push_str("    ");
    }
}

/// A string literal with every byte Zig would refuse escaped.
pub fn quote_string(s: &str) -> String {
    quote(s)
}

/// A field or enum name as ZON spells it: bare when Zig allows, `@"..."`
/// otherwise; refuses the empty name and NUL, which no spelling can carry.
pub fn quote_name(s: &str) -> Result<String> {
    name(s)
}

fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 || c == '\u{7f}' => {
                out.push_str(&format!("\\x{:02x}", c as u32))
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// A field or enum name: bare when Zig allows it, `@"..."` otherwise.
pub(crate) fn name(s: &str) -> Result<String> {
    if s.is_empty() {
        return Err(WriteError::new("a ZON name cannot be empty"));
    }
    if s.contains('\0') {
        return Err(WriteError::new(format!(
            "a ZON name cannot hold a NUL byte: {s:?}"
        )));
    }
    let mut bytes = s.bytes();
    let bare = bytes
        .next()
        .is_some_and(|b| b == b'_' || b.is_ascii_alphabetic())
        && bytes.all(|b| b == b'_' || b.is_ascii_alphanumeric())
        && !KEYWORDS.contains(&s);
    Ok(if bare {
        s.to_string()
    } else {
        format!("@{}", quote(s))
    })
}

fn float(f: f64) -> String {
    if f.is_nan() {
        "nan".into()
    } else if f.is_infinite() {
        if f > 0.0 { "inf".into() } else { "-inf".into() }
    } else {
        // Debug always has a `.` or an exponent, which Zig needs to read a float.
        format!("{f:?}")
    }
}

struct TreeSerializer;

fn scalar(s: impl Into<String>) -> Result<Tree> {
    Ok(Tree::Scalar(s.into()))
}

fn tagged(variant: &str, value: Tree) -> Result<Tree> {
    Ok(Tree::Struct(vec![(name(variant)?, value)]))
}

impl ser::Serializer for TreeSerializer {
    type Ok = Tree;
    type Error = WriteError;
    type SerializeSeq = TupleBuilder;
    type SerializeTuple = TupleBuilder;
    type SerializeTupleStruct = TupleBuilder;
    type SerializeTupleVariant = TupleBuilder;
    type SerializeMap = StructBuilder;
    type SerializeStruct = StructBuilder;
    type SerializeStructVariant = StructBuilder;

    fn serialize_bool(self, v: bool) -> Result<Tree> {
        scalar(v.to_string())
    }
    fn serialize_i8(self, v: i8) -> Result<Tree> {
        scalar(v.to_string())
    }
    fn serialize_i16(self, v: i16) -> Result<Tree> {
        scalar(v.to_string())
    }
    fn serialize_i32(self, v: i32) -> Result<Tree> {
        scalar(v.to_string())
    }
    fn serialize_i64(self, v: i64) -> Result<Tree> {
        scalar(v.to_string())
    }
    fn serialize_i128(self, v: i128) -> Result<Tree> {
        scalar(v.to_string())
    }
    fn serialize_u8(self, v: u8) -> Result<Tree> {
        scalar(v.to_string())
    }
    fn serialize_u16(self, v: u16) -> Result<Tree> {
        scalar(v.to_string())
    }
    fn serialize_u32(self, v: u32) -> Result<Tree> {
        scalar(v.to_string())
    }
    fn serialize_u64(self, v: u64) -> Result<Tree> {
        scalar(v.to_string())
    }
    fn serialize_u128(self, v: u128) -> Result<Tree> {
        scalar(v.to_string())
    }
    fn serialize_f32(self, v: f32) -> Result<Tree> {
        scalar(float(f64::from(v)))
    }
    fn serialize_f64(self, v: f64) -> Result<Tree> {
        scalar(float(v))
    }
    fn serialize_char(self, v: char) -> Result<Tree> {
        scalar(quote(&v.to_string()))
    }
    fn serialize_str(self, v: &str) -> Result<Tree> {
        scalar(quote(v))
    }
    fn serialize_bytes(self, v: &[u8]) -> Result<Tree> {
        Ok(Tree::Tuple(
            v.iter().map(|b| Tree::Scalar(b.to_string())).collect(),
        ))
    }
    fn serialize_none(self) -> Result<Tree> {
        scalar("null")
    }
    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Result<Tree> {
        value.serialize(self)
    }
    fn serialize_unit(self) -> Result<Tree> {
        Ok(Tree::Struct(Vec::new()))
    }
    fn serialize_unit_struct(self, _name: &'static str) -> Result<Tree> {
        Ok(Tree::Struct(Vec::new()))
    }
    fn serialize_unit_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
    ) -> Result<Tree> {
        scalar(format!(".{}", name(variant)?))
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        value: &T,
    ) -> Result<Tree> {
        value.serialize(self)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        value: &T,
    ) -> Result<Tree> {
        tagged(variant, value.serialize(TreeSerializer)?)
    }
    fn serialize_seq(self, len: Option<usize>) -> Result<TupleBuilder> {
        Ok(TupleBuilder::new(None, len))
    }
    fn serialize_tuple(self, len: usize) -> Result<TupleBuilder> {
        Ok(TupleBuilder::new(None, Some(len)))
    }
    fn serialize_tuple_struct(self, _name: &'static str, len: usize) -> Result<TupleBuilder> {
        Ok(TupleBuilder::new(None, Some(len)))
    }
    fn serialize_tuple_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        len: usize,
    ) -> Result<TupleBuilder> {
        Ok(TupleBuilder::new(Some(variant), Some(len)))
    }
    fn serialize_map(self, len: Option<usize>) -> Result<StructBuilder> {
        Ok(StructBuilder::new(None, len))
    }
    fn serialize_struct(self, _name: &'static str, len: usize) -> Result<StructBuilder> {
        Ok(StructBuilder::new(None, Some(len)))
    }
    fn serialize_struct_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        len: usize,
    ) -> Result<StructBuilder> {
        Ok(StructBuilder::new(Some(variant), Some(len)))
    }
}

struct TupleBuilder {
    variant: Option<&'static str>,
    items: Vec<Tree>,
}

impl TupleBuilder {
    fn new(variant: Option<&'static str>, len: Option<usize>) -> Self {
        TupleBuilder {
            variant,
            items: Vec::with_capacity(len.unwrap_or(0).min(1024)),
        }
    }

    fn push<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<()> {
        self.items.push(value.serialize(TreeSerializer)?);
        Ok(())
    }

    fn finish(self) -> Result<Tree> {
        let tuple = Tree::Tuple(self.items);
        match self.variant {
            Some(variant) => tagged(variant, tuple),
            None => Ok(tuple),
        }
    }
}

macro_rules! tuple_like {
    ($($trait:ident :: $method:ident),*) => {
        $(
            impl ser::$trait for TupleBuilder {
                type Ok = Tree;
                type Error = WriteError;
                fn $method<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<()> {
                    self.push(value)
                }
                fn end(self) -> Result<Tree> {
                    self.finish()
                }
            }
        )*
    };
}

tuple_like!(
    SerializeSeq::serialize_element,
    SerializeTuple::serialize_element,
    SerializeTupleStruct::serialize_field,
    SerializeTupleVariant::serialize_field
);

struct StructBuilder {
    variant: Option<&'static str>,
    fields: Vec<(String, Tree)>,
    key: Option<String>,
}

impl StructBuilder {
    fn new(variant: Option<&'static str>, len: Option<usize>) -> Self {
        StructBuilder {
            variant,
            fields: Vec::with_capacity(len.unwrap_or(0).min(1024)),
            key: None,
        }
    }

    fn field<T: Serialize + ?Sized>(&mut self, key: &str, value: &T) -> Result<()> {
        let spelled = name(key)?;
        if self.fields.iter().any(|(k, _)| *k == spelled) {
            return Err(WriteError::new(format!(
                "field `{key}` written twice: ZON refuses duplicate fields"
            )));
        }
        self.fields
            .push((spelled, value.serialize(TreeSerializer)?));
        Ok(())
    }

    fn finish(self) -> Result<Tree> {
        let fields = Tree::Struct(self.fields);
        match self.variant {
            Some(variant) => tagged(variant, fields),
            None => Ok(fields),
        }
    }
}

impl ser::SerializeMap for StructBuilder {
    type Ok = Tree;
    type Error = WriteError;

    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result<()> {
        self.key = Some(key.serialize(KeySerializer)?);
        Ok(())
    }

    fn serialize_value<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<()> {
        let key = self
            .key
            .take()
            .ok_or_else(|| WriteError::new("a map value came before its key"))?;
        self.field(&key, value)
    }

    fn end(self) -> Result<Tree> {
        self.finish()
    }
}

impl ser::SerializeStruct for StructBuilder {
    type Ok = Tree;
    type Error = WriteError;

    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        key: &'static str,
        value: &T,
    ) -> Result<()> {
        self.field(key, value)
    }

    fn end(self) -> Result<Tree> {
        self.finish()
    }
}

impl ser::SerializeStructVariant for StructBuilder {
    type Ok = Tree;
    type Error = WriteError;

    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        key: &'static str,
        value: &T,
    ) -> Result<()> {
        self.field(key, value)
    }

    fn end(self) -> Result<Tree> {
        self.finish()
    }
}

/// Map keys become field names, so only strings (and chars) are accepted.
struct KeySerializer;

fn not_a_name<T>() -> Result<T> {
    Err(WriteError::new("a ZON struct field name must be a string"))
}

impl ser::Serializer for KeySerializer {
    type Ok = String;
    type Error = WriteError;
    type SerializeSeq = ser::Impossible<String, WriteError>;
    type SerializeTuple = ser::Impossible<String, WriteError>;
    type SerializeTupleStruct = ser::Impossible<String, WriteError>;
    type SerializeTupleVariant = ser::Impossible<String, WriteError>;
    type SerializeMap = ser::Impossible<String, WriteError>;
    type SerializeStruct = ser::Impossible<String, WriteError>;
    type SerializeStructVariant = ser::Impossible<String, WriteError>;

    fn serialize_str(self, v: &str) -> Result<String> {
        Ok(v.to_string())
    }
    fn serialize_char(self, v: char) -> Result<String> {
        Ok(v.to_string())
    }
    fn serialize_unit_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
    ) -> Result<String> {
        Ok(variant.to_string())
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        value: &T,
    ) -> Result<String> {
        value.serialize(self)
    }
    fn serialize_bool(self, _v: bool) -> Result<String> {
        not_a_name()
    }
    fn serialize_i8(self, _v: i8) -> Result<String> {
        not_a_name()
    }
    fn serialize_i16(self, _v: i16) -> Result<String> {
        not_a_name()
    }
    fn serialize_i32(self, _v: i32) -> Result<String> {
        not_a_name()
    }
    fn serialize_i64(self, _v: i64) -> Result<String> {
        not_a_name()
    }
    fn serialize_u8(self, _v: u8) -> Result<String> {
        not_a_name()
    }
    fn serialize_u16(self, _v: u16) -> Result<String> {
        not_a_name()
    }
    fn serialize_u32(self, _v: u32) -> Result<String> {
        not_a_name()
    }
    fn serialize_u64(self, _v: u64) -> Result<String> {
        not_a_name()
    }
    fn serialize_f32(self, _v: f32) -> Result<String> {
        not_a_name()
    }
    fn serialize_f64(self, _v: f64) -> Result<String> {
        not_a_name()
    }
    fn serialize_bytes(self, _v: &[u8]) -> Result<String> {
        not_a_name()
    }
    fn serialize_none(self) -> Result<String> {
        not_a_name()
    }
    fn serialize_some<T: Serialize + ?Sized>(self, _value: &T) -> Result<String> {
        not_a_name()
    }
    fn serialize_unit(self) -> Result<String> {
        not_a_name()
    }
    fn serialize_unit_struct(self, _name: &'static str) -> Result<String> {
        not_a_name()
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        _index: u32,
        _variant: &'static str,
        _value: &T,
    ) -> Result<String> {
        not_a_name()
    }
    fn serialize_seq(self, _len: Option<usize>) -> Result<Self::SerializeSeq> {
        not_a_name()
    }
    fn serialize_tuple(self, _len: usize) -> Result<Self::SerializeTuple> {
        not_a_name()
    }
    fn serialize_tuple_struct(
        self,
        _name: &'static str,
        _len: usize,
    ) -> Result<Self::SerializeTupleStruct> {
        not_a_name()
    }
    fn serialize_tuple_variant(
        self,
        _name: &'static str,
        _index: u32,
        _variant: &'static str,
        _len: usize,
    ) -> Result<Self::SerializeTupleVariant> {
        not_a_name()
    }
    fn serialize_map(self, _len: Option<usize>) -> Result<Self::SerializeMap> {
        not_a_name()
    }
    fn serialize_struct(self, _name: &'static str, _len: usize) -> Result<Self::SerializeStruct> {
        not_a_name()
    }
    fn serialize_struct_variant(
        self,
        _name: &'static str,
        _index: u32,
        _variant: &'static str,
        _len: usize,
    ) -> Result<Self::SerializeStructVariant> {
        not_a_name()
    }
}
