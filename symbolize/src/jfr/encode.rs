//! Encoding decoded values back, by the same metadata: the inverse of [`super::value`].

use jfr_writer::leb128::{write_i64, write_u64};

use super::cursor::JString;
use super::metadata::Metadata;
use super::value::Value;

/// Appends `value`, an instance of `class_id`, as its inline encoding. A value that does not
/// fit the class (which the decoder never produces) is written as that class's zero value.
pub fn encode_instance(md: &Metadata, class_id: u64, value: &Value, out: &mut Vec<u8>) {
    encode_at(md, class_id, value, out, 0);
}

/// Deepest inline nesting written (as deep as the decoder reads).
const MAX_DEPTH: usize = 32;

fn encode_at(md: &Metadata, class_id: u64, value: &Value, out: &mut Vec<u8>, depth: usize) {
    let Some(class) = md.class(class_id) else {
        return;
    };
    if depth > MAX_DEPTH {
        return;
    }
    match (class.name.as_str(), value) {
        ("boolean", v) => out.push(u8::from(v.as_bool().unwrap_or(false))),
        ("byte", v) => out.push(v.as_i64().unwrap_or(0) as u8),
        // Narrow types as HotSpot writes them: the bit pattern of their own width, so that a
        // negative `int` takes 5 bytes, not 9.
        ("char" | "short", v) => write_u64(out, u64::from(v.as_i64().unwrap_or(0) as u16)),
        ("int", v) => write_u64(out, u64::from(v.as_i64().unwrap_or(0) as u32)),
        ("long", v) => write_i64(out, v.as_i64().unwrap_or(0)),
        ("float", Value::Float(f)) => out.extend_from_slice(&(*f as f32).to_bits().to_be_bytes()),
        ("float", _) => out.extend_from_slice(&[0; 4]),
        ("double", Value::Float(f)) => out.extend_from_slice(&f.to_bits().to_be_bytes()),
        ("double", _) => out.extend_from_slice(&[0; 8]),
        ("java.lang.String", Value::Str(s)) => encode_string(s, out),
        ("java.lang.String", _) => out.push(0),
        (_, Value::Struct(fields)) => {
            for (i, f) in class.fields.iter().enumerate() {
                let v = fields.get(i);
                if f.array {
                    match v {
                        Some(Value::Array(items)) => {
                            write_u64(out, items.len() as u64);
                            for item in items {
                                encode_field(md, f.class_id, f.constant_pool, item, out, depth);
                            }
                        }
                        _ => write_u64(out, 0),
                    }
                } else {
                    match v {
                        Some(v) => encode_field(md, f.class_id, f.constant_pool, v, out, depth),
                        None if f.constant_pool => write_u64(out, 0),
                        None => {
                            encode_at(md, f.class_id, &Value::Struct(Vec::new()), out, depth + 1)
                        }
                    }
                }
            }
        }
        _ => encode_at(md, class_id, &Value::Struct(Vec::new()), out, depth + 1),
    }
}

fn encode_field(
    md: &Metadata,
    class_id: u64,
    constant_pool: bool,
    v: &Value,
    out: &mut Vec<u8>,
    depth: usize,
) {
    if constant_pool {
        match v {
            Value::Ref { key, .. } => write_u64(out, *key),
            _ => write_u64(out, 0),
        }
    } else {
        encode_at(md, class_id, v, out, depth + 1);
    }
}

/// The zero value of a field: null reference, 0, false, null string, or a struct of zeros.
pub fn encode_zero(md: &Metadata, class_id: u64, constant_pool: bool, out: &mut Vec<u8>) {
    if constant_pool {
        write_u64(out, 0);
        return;
    }
    encode_instance(md, class_id, &Value::Struct(Vec::new()), out);
}

/// Appends a string: null, inline UTF-8, or a string-pool reference. An empty string is UTF-8
/// of length 0, not the empty-string encoding: it is then valid in a `jdk.types.Symbol`
/// too, where async-profiler's converter accepts UTF-8 only.
pub fn encode_string(s: &JString, out: &mut Vec<u8>) {
    match s {
        JString::Null => out.push(0),
        JString::Text(t) => {
            out.push(3);
            write_u64(out, t.len() as u64);
            out.extend_from_slice(t.as_bytes());
        }
        JString::PoolRef(key) => {
            out.push(2);
            write_u64(out, *key);
        }
    }
}
