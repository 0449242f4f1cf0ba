//! The metadata record (type 0): a string table and the element tree
//! `root { metadata { class* } region }` describing every class in [`crate::types`].

use indexmap::IndexSet;

use crate::error::{Error, Result};
use crate::leb128;
use crate::types::{Ann, FieldDecl, TypeDecl, FIRST_CLASS_ID};

/// The classes of one writer, with their ids resolved.
#[derive(Debug, Clone)]
pub struct Metadata {
    types: Vec<TypeDecl>,
    /// The serialized element tree and string table (everything after the metadata id).
    body: Vec<u8>,
}

impl Metadata {
    /// Resolves `types` (class id = index + [`FIRST_CLASS_ID`]) and serializes the tree.
    pub fn new(types: Vec<TypeDecl>) -> Result<Metadata> {
        let body = serialize(&types)?;
        Ok(Metadata { types, body })
    }

    /// The class id of `name`.
    pub fn class_id(&self, name: &str) -> Option<u64> {
        self.types
            .iter()
            .position(|t| t.name == name)
            .map(|i| i as u64 + FIRST_CLASS_ID)
    }

    /// The declared classes.
    pub fn types(&self) -> &[TypeDecl] {
        &self.types
    }

    /// A whole metadata record: size, type 0, start ticks, duration 0, `metadata_id`, body.
    pub fn write_record(&self, out: &mut Vec<u8>, start_ticks: i64, metadata_id: u64) {
        let mut head = Vec::with_capacity(24);
        leb128::write_u64(&mut head, 0);
        leb128::write_i64(&mut head, start_ticks);
        leb128::write_u64(&mut head, 0);
        leb128::write_u64(&mut head, metadata_id);
        let size = leb128::record_size(head.len() + self.body.len());
        leb128::write_u64(out, size);
        out.extend_from_slice(&head);
        out.extend_from_slice(&self.body);
    }
}

struct Element {
    name: &'static str,
    attrs: Vec<(String, String)>,
    children: Vec<Element>,
}

impl Element {
    fn new(name: &'static str) -> Element {
        Element {
            name,
            attrs: Vec::new(),
            children: Vec::new(),
        }
    }

    fn attr(mut self, key: impl Into<String>, value: impl Into<String>) -> Element {
        self.attrs.push((key.into(), value.into()));
        self
    }
}

fn serialize(types: &[TypeDecl]) -> Result<Vec<u8>> {
    let id_of = |name: &str| -> Result<u64> {
        types
            .iter()
            .position(|t| t.name == name)
            .map(|i| i as u64 + FIRST_CLASS_ID)
            .ok_or(Error::Metadata(format!(
                "class {name} is referenced but not declared"
            )))
    };
    let mut metadata = Element::new("metadata");
    for (index, t) in types.iter().enumerate() {
        let mut class = Element::new("class").attr("name", t.name);
        if let Some(super_type) = t.super_type {
            class = class.attr("superType", super_type);
        }
        if t.simple {
            class = class.attr("simpleType", "true");
        }
        class = class.attr("id", (index as u64 + FIRST_CLASS_ID).to_string());
        for a in &t.annotations {
            class.children.push(annotation(*a, &id_of)?);
        }
        for f in &t.fields {
            class.children.push(field(f, &id_of)?);
        }
        metadata.children.push(class);
    }
    // UTC: the writer's output must not depend on the machine's time zone (goldens).
    let region = Element::new("region")
        .attr("locale", "en_US")
        .attr("gmtOffset", "0")
        .attr("dst", "0");
    let mut root = Element::new("root");
    root.children.push(metadata);
    root.children.push(region);

    let mut strings = IndexSet::new();
    collect_strings(&root, &mut strings);
    let mut out = Vec::new();
    leb128::write_u64(&mut out, strings.len() as u64);
    for s in &strings {
        // Encoding 3 = UTF-8 byte array (encoding 2, a pool reference, is illegal here).
        out.push(3);
        leb128::write_u64(&mut out, s.len() as u64);
        out.extend_from_slice(s.as_bytes());
    }
    write_element(&root, &strings, &mut out);
    Ok(out)
}

fn field(f: &FieldDecl, id_of: &dyn Fn(&str) -> Result<u64>) -> Result<Element> {
    let mut e = Element::new("field")
        .attr("name", f.name)
        .attr("class", id_of(f.type_name)?.to_string());
    if f.array {
        e = e.attr("dimension", "1");
    }
    if f.pooled {
        // Only ever "true": the JDK treats the attribute's presence as true, JMC parses it.
        e = e.attr("constantPool", "true");
    }
    for a in &f.annotations {
        e.children.push(annotation(*a, id_of)?);
    }
    Ok(e)
}

fn annotation(a: Ann, id_of: &dyn Fn(&str) -> Result<u64>) -> Result<Element> {
    let e = Element::new("annotation").attr("class", id_of(a.class_name())?.to_string());
    Ok(match a {
        Ann::Label(v)
        | Ann::Description(v)
        | Ann::Timestamp(v)
        | Ann::Timespan(v)
        | Ann::DataAmount(v) => e.attr("value", v),
        Ann::Category(values) => values
            .iter()
            .enumerate()
            .fold(e, |e, (i, v)| e.attr(format!("value-{i}"), *v)),
        Ann::Unsigned | Ann::MemoryAddress | Ann::ContentType => e,
    })
}

fn collect_strings(e: &Element, strings: &mut IndexSet<String>) {
    strings.insert(e.name.to_string());
    for (k, v) in &e.attrs {
        strings.insert(k.clone());
        strings.insert(v.clone());
    }
    for c in &e.children {
        collect_strings(c, strings);
    }
}

fn write_element(e: &Element, strings: &IndexSet<String>, out: &mut Vec<u8>) {
    let index = |s: &str| strings.get_index_of(s).unwrap_or_default() as u64;
    leb128::write_u64(out, index(e.name));
    leb128::write_u64(out, e.attrs.len() as u64);
    for (k, v) in &e.attrs {
        leb128::write_u64(out, index(k));
        leb128::write_u64(out, index(v));
    }
    leb128::write_u64(out, e.children.len() as u64);
    for c in &e.children {
        write_element(c, strings, out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::{all_types, NativeStackEncoding};

    #[test]
    fn undeclared_reference_is_an_error() {
        let mut types = all_types(NativeStackEncoding::Pooled);
        types.retain(|t| t.name != "jdk.types.Symbol");
        let err = Metadata::new(types).unwrap_err();
        assert!(err.to_string().contains("jdk.types.Symbol"), "{err}");
    }

    #[test]
    fn record_is_self_sized_and_deterministic() {
        let md = Metadata::new(all_types(NativeStackEncoding::Pooled)).unwrap();
        let mut a = Vec::new();
        md.write_record(&mut a, 123, 7);
        let (size, n) = leb128::read_u64(&a).unwrap();
        assert_eq!(size as usize, a.len());
        assert_eq!(a[n], 0, "metadata record type");
        let mut b = Vec::new();
        Metadata::new(all_types(NativeStackEncoding::Pooled))
            .unwrap()
            .write_record(&mut b, 123, 7);
        assert_eq!(a, b);
        assert_eq!(md.class_id("jdk.CPUTimeSample"), Some(FIRST_CLASS_ID));
    }
}
