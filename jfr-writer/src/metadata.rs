//! The metadata record (type 0): a string table and the element tree
//! `root { metadata { class* } region }` describing the classes of [`crate::types`] that a chunk
//! needs: the event types it declares and every class they reach through fields and
//! annotations, with the class ids of the full list (stable in every chunk).

use indexmap::IndexSet;

use crate::error::{Error, Result};
use crate::leb128;
use crate::types::{Ann, FieldDecl, TypeDecl, FIRST_CLASS_ID};

/// The classes of one writer, with their ids resolved.
#[derive(Debug, Clone)]
pub struct Metadata {
    types: Vec<TypeDecl>,
}

impl Metadata {
    /// Resolves `types` (class id = index + [`FIRST_CLASS_ID`]) and checks that every class
    /// they reference is declared.
    pub fn new(types: Vec<TypeDecl>) -> Result<Metadata> {
        serialize(&types, &vec![true; types.len()])?;
        Ok(Metadata { types })
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

    /// The element tree and string table (everything after the metadata id) declaring the
    /// event types for which `declare` is true, and every class they reach.
    pub fn body(&self, declare: impl Fn(&TypeDecl) -> bool) -> Vec<u8> {
        let wanted = reachable(&self.types, declare);
        // `new` checked every reference of the full list; a subset closed under references
        // cannot fail.
        serialize(&self.types, &wanted).unwrap_or_default()
    }

    /// A whole metadata record: size, type 0, start ticks, duration 0, `metadata_id`, `body`.
    pub fn write_record(out: &mut Vec<u8>, start_ticks: i64, metadata_id: u64, body: &[u8]) {
        let mut head = Vec::with_capacity(24);
        leb128::write_u64(&mut head, 0);
        leb128::write_i64(&mut head, start_ticks);
        leb128::write_u64(&mut head, 0);
        leb128::write_u64(&mut head, metadata_id);
        let size = leb128::record_size(head.len() + body.len());
        leb128::write_u64(out, size);
        out.extend_from_slice(&head);
        out.extend_from_slice(body);
    }
}

/// Which of `types` a metadata declaring the events `declare` selects must hold: those events
/// and, transitively, the types of their fields and the classes of their annotations.
/// Non-event classes that nothing reaches are left out; so are events not selected.
fn reachable(types: &[TypeDecl], declare: impl Fn(&TypeDecl) -> bool) -> Vec<bool> {
    let index_of = |name: &str| types.iter().position(|t| t.name == name);
    let mut wanted = vec![false; types.len()];
    let mut todo: Vec<usize> = (0..types.len())
        .filter(|&i| types[i].is_event() && declare(&types[i]))
        .collect();
    while let Some(i) = todo.pop() {
        if std::mem::replace(&mut wanted[i], true) {
            continue;
        }
        let t = &types[i];
        let annotations = t
            .annotations
            .iter()
            .chain(t.fields.iter().flat_map(|f| f.annotations.iter()))
            .map(|a| a.class_name());
        let fields = t.fields.iter().map(|f| f.type_name);
        // The super type of events, `jdk.jfr.Event`, is a name only, never a declared class.
        todo.extend(annotations.chain(fields).filter_map(index_of));
    }
    wanted
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

/// Serializes the classes of `types` whose `wanted` flag is set (ids from the full list).
fn serialize(types: &[TypeDecl], wanted: &[bool]) -> Result<Vec<u8>> {
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
        if !wanted.get(index).copied().unwrap_or(false) {
            continue;
        }
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
        Metadata::write_record(&mut a, 123, 7, &md.body(|_| true));
        let (size, n) = leb128::read_u64(&a).unwrap();
        assert_eq!(size as usize, a.len());
        assert_eq!(a[n], 0, "metadata record type");
        let mut b = Vec::new();
        let again = Metadata::new(all_types(NativeStackEncoding::Pooled)).unwrap();
        Metadata::write_record(&mut b, 123, 7, &again.body(|_| true));
        assert_eq!(a, b);
        assert_eq!(md.class_id("jdk.CPUTimeSample"), Some(FIRST_CLASS_ID));
    }

    fn varint(body: &[u8], pos: &mut usize) -> usize {
        let (v, n) = leb128::read_u64(&body[*pos..]).unwrap();
        *pos += n;
        v as usize
    }

    fn element(body: &[u8], pos: &mut usize, strings: &[String], out: &mut Vec<String>) {
        let name = &strings[varint(body, pos)];
        let attrs: Vec<(&String, &String)> = (0..varint(body, pos))
            .map(|_| (&strings[varint(body, pos)], &strings[varint(body, pos)]))
            .collect();
        if name == "class" {
            let class = attrs.iter().find(|(k, _)| *k == "name").unwrap();
            out.push(class.1.clone());
        }
        for _ in 0..varint(body, pos) {
            element(body, pos, strings, out);
        }
    }

    /// The class names a body declares, read back from its string table and tree.
    fn declared(body: &[u8]) -> Vec<String> {
        let mut pos = 0;
        let mut strings = Vec::new();
        for _ in 0..varint(body, &mut pos) {
            assert_eq!(body[pos], 3, "UTF-8 strings");
            pos += 1;
            let len = varint(body, &mut pos);
            strings.push(String::from_utf8(body[pos..pos + len].to_vec()).unwrap());
            pos += len;
        }
        let mut out = Vec::new();
        element(body, &mut pos, &strings, &mut out);
        assert_eq!(pos, body.len(), "the whole body is one tree");
        out
    }

    #[test]
    fn declares_what_the_selected_events_reach_with_stable_ids() {
        let md = Metadata::new(all_types(NativeStackEncoding::Pooled)).unwrap();
        let body = md.body(|t| t.name == "jdk.NativeLibrary");
        let names = declared(&body);
        for name in [
            "jdk.NativeLibrary",
            "long",
            "java.lang.String",
            "jdk.jfr.Label",
            "jdk.jfr.Timestamp",
            "jdk.jfr.MemoryAddress",
            // The meta-annotation of MemoryAddress, Unsigned and Timestamp.
            "jdk.jfr.ContentType",
        ] {
            assert!(names.iter().any(|n| n == name), "{name} missing: {names:?}");
        }
        for name in [
            "jdk.CPUTimeSample",
            "jdk.types.StackTrace",
            "boolean",
            "jdk.ThreadEnd",
        ] {
            assert!(
                !names.iter().any(|n| n == name),
                "{name} declared: {names:?}"
            );
        }
        assert!(body.len() < md.body(|_| true).len());
        // Class ids are those of the full list, whatever the subset.
        let id = md.class_id("jdk.NativeLibrary").unwrap().to_string();
        let all = md.body(|_| true);
        let find = |hay: &[u8], needle: &[u8]| hay.windows(needle.len()).any(|w| w == needle);
        assert!(find(&body, id.as_bytes()) && find(&all, id.as_bytes()));
    }
}
