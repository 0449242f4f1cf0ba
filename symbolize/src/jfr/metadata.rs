//! The metadata record (type 0): the element tree as written, and the class model read from it.
//! The tree is kept so that a rewritten file can carry the same metadata with small edits.

use rustc_hash::FxHashMap;

use super::cursor::{Cursor, JString};
use super::error::ReadError;

/// Deepest element nesting accepted (the JDK's tree is 5 levels deep).
const MAX_DEPTH: usize = 32;

/// One element of the metadata tree.
#[derive(Debug, Clone, PartialEq)]
pub struct Element {
    /// Element name: `root`, `metadata`, `class`, `field`, `annotation`, `setting`, `region`.
    pub name: String,
    /// Attributes in file order.
    pub attrs: Vec<(String, String)>,
    /// Child elements in file order.
    pub children: Vec<Element>,
}

impl Element {
    /// An element named `name` with `attrs` (in order) and `children`.
    pub fn new(name: &str, attrs: &[(&str, &str)], children: Vec<Element>) -> Element {
        Element {
            name: name.into(),
            attrs: attrs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            children,
        }
    }

    /// The value of attribute `key`.
    pub fn attr(&self, key: &str) -> Option<&str> {
        self.attrs
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }
}

/// One field of a class.
#[derive(Debug, Clone, PartialEq)]
pub struct Field {
    /// Field name.
    pub name: String,
    /// Class id of the field's type.
    pub class_id: u64,
    /// `dimension="1"`.
    pub array: bool,
    /// `constantPool` present: the value is a key into the pool of `class_id`.
    pub constant_pool: bool,
}

/// One class of the metadata.
#[derive(Debug, Clone, PartialEq)]
pub struct Class {
    /// Class id.
    pub id: u64,
    /// Class name, e.g. `jdk.CPUTimeSample`.
    pub name: String,
    /// `superType`, e.g. `jdk.jfr.Event`.
    pub super_type: Option<String>,
    /// Fields in encoding order.
    pub fields: Vec<Field>,
}

impl Class {
    /// The index of field `name`.
    pub fn field_index(&self, name: &str) -> Option<usize> {
        self.fields.iter().position(|f| f.name == name)
    }
}

/// A decoded metadata record.
#[derive(Debug, Clone)]
pub struct Metadata {
    /// Start ticks of the record.
    pub start_ticks: i64,
    /// The metadata id.
    pub id: u64,
    /// The whole element tree (`root`).
    pub root: Element,
    classes: FxHashMap<u64, Class>,
    by_name: FxHashMap<String, u64>,
}

impl Metadata {
    /// Parses the payload of a metadata record, after its size and type id.
    pub fn parse(c: &mut Cursor<'_>) -> Result<Metadata, ReadError> {
        let start_ticks = c.varint_i64()?;
        let _duration = c.varint()?;
        let id = c.varint()?;
        let n = c.count()?;
        let mut strings = Vec::with_capacity(n);
        for _ in 0..n {
            match c.string()? {
                JString::Text(s) => strings.push(s),
                JString::Null => strings.push(String::new()),
                JString::PoolRef(_) => {
                    return Err(c.error("a pool reference in the metadata string table"))
                }
            }
        }
        let root = parse_element(c, &strings, 0)?;
        Metadata::from_tree(start_ticks, id, root).map_err(|what| c.error(what))
    }

    /// Builds the class model from an element tree.
    pub fn from_tree(start_ticks: i64, id: u64, root: Element) -> Result<Metadata, String> {
        let mut classes = FxHashMap::default();
        let mut by_name = FxHashMap::default();
        let metadata = root
            .children
            .iter()
            .find(|e| e.name == "metadata")
            .ok_or("metadata has no `metadata` element")?;
        for e in metadata.children.iter().filter(|e| e.name == "class") {
            let class = parse_class(e)?;
            by_name.insert(class.name.clone(), class.id);
            classes.insert(class.id, class);
        }
        Ok(Metadata {
            start_ticks,
            id,
            root,
            classes,
            by_name,
        })
    }

    /// The class with id `id`.
    pub fn class(&self, id: u64) -> Option<&Class> {
        self.classes.get(&id)
    }

    /// The class named `name`.
    pub fn class_by_name(&self, name: &str) -> Option<&Class> {
        self.by_name.get(name).and_then(|id| self.classes.get(id))
    }

    /// The largest class id declared.
    pub fn max_class_id(&self) -> u64 {
        self.classes.keys().copied().max().unwrap_or(1)
    }

    /// Serializes the tree as a metadata record payload (everything after the type id).
    pub fn payload(&self, start_ticks: i64, id: u64) -> Vec<u8> {
        let mut strings: Vec<&str> = Vec::new();
        let mut index: FxHashMap<&str, u64> = FxHashMap::default();
        collect_strings(&self.root, &mut strings, &mut index);
        let mut out = Vec::new();
        jfr_writer::leb128::write_i64(&mut out, start_ticks);
        jfr_writer::leb128::write_u64(&mut out, 0);
        jfr_writer::leb128::write_u64(&mut out, id);
        jfr_writer::leb128::write_u64(&mut out, strings.len() as u64);
        for s in &strings {
            out.push(3);
            jfr_writer::leb128::write_u64(&mut out, s.len() as u64);
            out.extend_from_slice(s.as_bytes());
        }
        write_element(&self.root, &index, &mut out);
        out
    }
}

fn parse_element(
    c: &mut Cursor<'_>,
    strings: &[String],
    depth: usize,
) -> Result<Element, ReadError> {
    if depth > MAX_DEPTH {
        return Err(c.error("metadata elements nested too deep"));
    }
    let string = |c: &mut Cursor<'_>| -> Result<String, ReadError> {
        let at = c.file_offset();
        let i = c.varint()?;
        strings.get(i as usize).cloned().ok_or(ReadError {
            offset: at,
            what: format!(
                "string index {i} outside the metadata's {} strings",
                strings.len()
            ),
        })
    };
    let name = string(c)?;
    let n = c.count()?;
    let mut attrs = Vec::with_capacity(n);
    for _ in 0..n {
        let key = string(c)?;
        let value = string(c)?;
        attrs.push((key, value));
    }
    let n = c.count()?;
    let mut children = Vec::with_capacity(n);
    for _ in 0..n {
        children.push(parse_element(c, strings, depth + 1)?);
    }
    Ok(Element {
        name,
        attrs,
        children,
    })
}

fn parse_class(e: &Element) -> Result<Class, String> {
    let name = e.attr("name").ok_or("a class without a name")?.to_string();
    let id = parse_id(e.attr("id"), &name)?;
    let mut fields = Vec::new();
    for f in e.children.iter().filter(|f| f.name == "field") {
        let field_name = f.attr("name").ok_or("a field without a name")?.to_string();
        fields.push(Field {
            class_id: parse_id(f.attr("class"), &field_name)?,
            array: f.attr("dimension").is_some_and(|d| d == "1"),
            // As the JDK reads it: present means true.
            constant_pool: f.attr("constantPool").is_some_and(|v| v != "false"),
            name: field_name,
        });
    }
    Ok(Class {
        id,
        super_type: e.attr("superType").map(str::to_string),
        name,
        fields,
    })
}

fn parse_id(value: Option<&str>, owner: &str) -> Result<u64, String> {
    value
        .and_then(|v| v.parse().ok())
        .ok_or_else(|| format!("{owner}: missing or bad class id"))
}

fn collect_strings<'a>(
    e: &'a Element,
    out: &mut Vec<&'a str>,
    index: &mut FxHashMap<&'a str, u64>,
) {
    let mut add = |s: &'a str| {
        index.entry(s).or_insert_with(|| {
            out.push(s);
            out.len() as u64 - 1
        });
    };
    add(&e.name);
    for (k, v) in &e.attrs {
        add(k);
        add(v);
    }
    for child in &e.children {
        collect_strings(child, out, index);
    }
}

fn write_element(e: &Element, index: &FxHashMap<&str, u64>, out: &mut Vec<u8>) {
    let w = jfr_writer::leb128::write_u64;
    w(out, index[e.name.as_str()]);
    w(out, e.attrs.len() as u64);
    for (k, v) in &e.attrs {
        w(out, index[k.as_str()]);
        w(out, index[v.as_str()]);
    }
    w(out, e.children.len() as u64);
    for child in &e.children {
        write_element(child, index, out);
    }
}
