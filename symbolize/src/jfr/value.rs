//! Field values decoded by the metadata, whatever the event or constant type.

use super::cursor::{Cursor, JString};
use super::error::ReadError;
use super::metadata::{Field, Metadata};

/// Deepest struct nesting accepted while decoding inline values.
const MAX_DEPTH: usize = 32;

/// One decoded value.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// `boolean`.
    Bool(bool),
    /// `byte`, `char`, `short`, `int`, `long`.
    Int(i64),
    /// `float`, `double`.
    Float(f64),
    /// `java.lang.String`, inline or a reference into the `java.lang.String` pool.
    Str(JString),
    /// A constant-pool reference: the key into the pool of the field's class.
    Ref {
        /// Class of the pool.
        class_id: u64,
        /// Key in the pool.
        key: u64,
    },
    /// An inline instance: its fields in metadata order.
    Struct(Vec<Value>),
    /// An array.
    Array(Vec<Value>),
}

impl Value {
    /// The integer, if this is one.
    pub fn as_i64(&self) -> Option<i64> {
        match self {
            Value::Int(v) => Some(*v),
            _ => None,
        }
    }

    /// The boolean, if this is one.
    pub fn as_bool(&self) -> Option<bool> {
        match self {
            Value::Bool(v) => Some(*v),
            _ => None,
        }
    }
}

/// Decodes an inline instance of `class_id`: a primitive, a string, or its fields in order.
pub fn decode_instance(
    c: &mut Cursor<'_>,
    md: &Metadata,
    class_id: u64,
    depth: usize,
) -> Result<Value, ReadError> {
    let Some(class) = md.class(class_id) else {
        return Err(c.error(format!(
            "class id {class_id} is not declared in the metadata"
        )));
    };
    match class.name.as_str() {
        "boolean" => return Ok(Value::Bool(c.u8()? != 0)),
        "byte" => return Ok(Value::Int(i64::from(c.u8()? as i8))),
        // HotSpot writes the bit pattern of the type's own width (an `int` -1 is 5 bytes):
        // narrow before widening, so that it reads back as -1, not 4294967295.
        "char" => return Ok(Value::Int(i64::from(c.varint_i64()? as u16))),
        "short" => return Ok(Value::Int(i64::from(c.varint_i64()? as i16))),
        "int" => return Ok(Value::Int(i64::from(c.varint_i64()? as i32))),
        "long" => return Ok(Value::Int(c.varint_i64()?)),
        "float" => return Ok(Value::Float(f64::from(f32::from_bits(c.be_u32()?)))),
        "double" => return Ok(Value::Float(f64::from_bits(c.be_u64()?))),
        "java.lang.String" => return Ok(Value::Str(c.string()?)),
        _ => {}
    }
    if depth > MAX_DEPTH {
        return Err(c.error("inline values nested too deep"));
    }
    let mut fields = Vec::with_capacity(class.fields.len());
    for f in &class.fields {
        fields.push(decode_field(c, md, f, depth)?);
    }
    Ok(Value::Struct(fields))
}

/// Decodes the value of one field `f` of an instance nested `depth` deep.
pub fn decode_field(
    c: &mut Cursor<'_>,
    md: &Metadata,
    f: &Field,
    depth: usize,
) -> Result<Value, ReadError> {
    if f.array {
        let n = c.count()?;
        let mut items = Vec::with_capacity(n);
        for _ in 0..n {
            let before = c.pos();
            items.push(field_value(c, md, f.class_id, f.constant_pool, depth)?);
            // `count` bounds arrays by the bytes left, which holds only if each element takes
            // one: elements of a class without fields take none, and arrays of them nested in
            // arrays would make values quadratic in the record's size.
            if c.pos() == before {
                return Err(c.error(format!(
                    "field {}: an array of values that take no bytes",
                    f.name
                )));
            }
        }
        Ok(Value::Array(items))
    } else {
        field_value(c, md, f.class_id, f.constant_pool, depth)
    }
}

fn field_value(
    c: &mut Cursor<'_>,
    md: &Metadata,
    class_id: u64,
    constant_pool: bool,
    depth: usize,
) -> Result<Value, ReadError> {
    if constant_pool {
        Ok(Value::Ref {
            class_id,
            key: c.varint()?,
        })
    } else {
        decode_instance(c, md, class_id, depth + 1)
    }
}

#[cfg(test)]
mod zero_width_tests {
    use super::*;
    use crate::jfr::metadata::Element;

    fn element(name: &str, attrs: &[(&str, &str)], children: Vec<Element>) -> Element {
        Element::new(name, attrs, children)
    }

    /// Classes `Empty` (100, no fields) and `Holder` (101: `Empty[] items`).
    fn metadata() -> Metadata {
        let field = element(
            "field",
            &[("name", "items"), ("class", "100"), ("dimension", "1")],
            vec![],
        );
        let classes = vec![
            element("class", &[("name", "Empty"), ("id", "100")], vec![]),
            element("class", &[("name", "Holder"), ("id", "101")], vec![field]),
        ];
        let root = element("root", &[], vec![element("metadata", &[], classes)]);
        Metadata::from_tree(0, 1, root).unwrap()
    }

    /// Elements that take no bytes are refused: the count's bound by the bytes left assumes
    /// one byte each, and an array of 1,000 `Holder`s of up to 1,000 empty values each would
    /// otherwise make a million values out of two kilobytes (found reading the reader for the
    /// fuzz targets, not yet by a fuzzer).
    #[test]
    fn an_array_of_values_that_take_no_bytes_is_an_error() {
        let md = metadata();
        let mut payload = vec![100u8];
        payload.extend_from_slice(&[0; 100]);
        let mut c = Cursor::new(&payload, 0);
        let e = decode_instance(&mut c, &md, 101, 0).unwrap_err();
        assert!(e.what.contains("take no bytes"), "{e}");
        // An empty array of them is still read.
        let mut c = Cursor::new(&[0u8], 0);
        assert_eq!(
            decode_instance(&mut c, &md, 101, 0).unwrap(),
            Value::Struct(vec![Value::Array(vec![])])
        );
    }
}
