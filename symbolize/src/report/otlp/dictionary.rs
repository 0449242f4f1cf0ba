//! The tables of an OTLP `ProfilesDictionary`, each built without duplicates and with its
//! zero value at index 0, as the format requires (so that index 0 means "none").

use std::hash::Hash;

use indexmap::IndexSet;
use opentelemetry_proto::tonic::common::v1::{any_value, AnyValue};
use opentelemetry_proto::tonic::profiles::v1development::{
    Function, KeyValueAndUnit, Link, Location, Mapping, ProfilesDictionary, Stack,
};
use rustc_hash::FxBuildHasher;

/// A table of distinct values whose entry 0 is the zero value.
#[derive(Debug)]
pub struct Table<T>(IndexSet<T, FxBuildHasher>);

impl<T: Hash + Eq + Default> Table<T> {
    fn new() -> Table<T> {
        let mut set = IndexSet::default();
        set.insert(T::default());
        Table(set)
    }

    /// The index of `value`, added if new.
    pub fn index(&mut self, value: T) -> i32 {
        let i = match self.0.get_index_of(&value) {
            Some(i) => i,
            None => self.0.insert_full(value).0,
        };
        i32::try_from(i).unwrap_or(i32::MAX)
    }

    fn into_vec(self) -> Vec<T> {
        self.0.into_iter().collect()
    }
}

/// An attribute's value, in a form that can be compared and hashed (OTLP's `AnyValue` cannot:
/// it may hold a float).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Value {
    /// A string.
    Str(String),
    /// A signed integer.
    Int(i64),
    /// A boolean.
    Bool(bool),
}

impl Value {
    fn any(&self) -> AnyValue {
        AnyValue {
            value: Some(match self {
                Value::Str(s) => any_value::Value::StringValue(s.clone()),
                Value::Int(i) => any_value::Value::IntValue(*i),
                Value::Bool(b) => any_value::Value::BoolValue(*b),
            }),
        }
    }
}

/// A location as a table key: OTLP's `Location` is not hashable (its lines are), so the key is
/// its fields.
#[derive(Debug, Default, Clone, PartialEq, Eq, Hash)]
struct LocationKey {
    mapping_index: i32,
    address: u64,
    /// (function index, line)
    lines: Vec<(i32, i64)>,
    attribute_indices: Vec<i32>,
}

/// Every table of the dictionary being built.
#[derive(Debug)]
pub struct Dictionary {
    strings: Table<String>,
    /// (key string index, value) of each attribute.
    attributes: Table<Option<(i32, Value)>>,
    mappings: Table<Mapping>,
    locations: Table<LocationKey>,
    functions: Table<Function>,
    stacks: Table<Stack>,
}

impl Dictionary {
    /// An empty dictionary: each table holds its zero value only.
    pub fn new() -> Dictionary {
        Dictionary {
            strings: Table::new(),
            attributes: Table::new(),
            mappings: Table::new(),
            locations: Table::new(),
            functions: Table::new(),
            stacks: Table::new(),
        }
    }

    /// The index of string `s`.
    pub fn string(&mut self, s: &str) -> i32 {
        match self.strings.0.get_index_of(s) {
            Some(i) => i32::try_from(i).unwrap_or(i32::MAX),
            None => self.strings.index(s.to_string()),
        }
    }

    /// The index of attribute `key` = `value`.
    pub fn attribute(&mut self, key: &str, value: Value) -> i32 {
        let key = self.string(key);
        self.attributes.index(Some((key, value)))
    }

    /// The index of `mapping`.
    pub fn mapping(&mut self, mapping: Mapping) -> i32 {
        self.mappings.index(mapping)
    }

    /// The index of the function (name, system name, file name).
    pub fn function(&mut self, name: &str, system_name: &str, filename: &str) -> i32 {
        let function = Function {
            name_strindex: self.string(name),
            system_name_strindex: self.string(system_name),
            filename_strindex: self.string(filename),
            start_line: 0,
        };
        self.functions.index(function)
    }

    /// The index of a location in mapping `mapping_index` (0: none) at `address` (0: none),
    /// with `lines` as (function index, line), innermost first.
    pub fn location(
        &mut self,
        mapping_index: i32,
        address: u64,
        lines: Vec<(i32, i64)>,
        attribute_indices: Vec<i32>,
    ) -> i32 {
        self.locations.index(LocationKey {
            mapping_index,
            address,
            lines,
            attribute_indices,
        })
    }

    /// The index of the stack of `location_indices`, leaf first.
    pub fn stack(&mut self, location_indices: Vec<i32>) -> i32 {
        self.stacks.index(Stack { location_indices })
    }

    /// The finished `ProfilesDictionary`.
    pub fn finish(self) -> ProfilesDictionary {
        ProfilesDictionary {
            mapping_table: self.mappings.into_vec(),
            location_table: self
                .locations
                .into_vec()
                .into_iter()
                .map(|l| Location {
                    mapping_index: l.mapping_index,
                    address: l.address,
                    lines: l
                        .lines
                        .into_iter()
                        .map(|(function_index, line)| {
                            opentelemetry_proto::tonic::profiles::v1development::Line {
                                function_index,
                                line,
                                column: 0,
                            }
                        })
                        .collect(),
                    attribute_indices: l.attribute_indices,
                })
                .collect(),
            function_table: self.functions.into_vec(),
            link_table: vec![Link::default()],
            string_table: self.strings.into_vec(),
            attribute_table: self
                .attributes
                .into_vec()
                .into_iter()
                .map(|a| match a {
                    None => KeyValueAndUnit::default(),
                    Some((key_strindex, value)) => KeyValueAndUnit {
                        key_strindex,
                        value: Some(value.any()),
                        unit_strindex: 0,
                    },
                })
                .collect(),
            stack_table: self.stacks.into_vec(),
        }
    }
}

impl Default for Dictionary {
    fn default() -> Dictionary {
        Dictionary::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_table_starts_with_its_zero_value_and_keeps_no_duplicates() {
        let mut d = Dictionary::new();
        assert_eq!(d.string(""), 0);
        let a = d.string("main");
        assert_eq!((a, d.string("main")), (1, 1));
        let t = d.attribute("thread.name", Value::Str("main".into()));
        assert_eq!(t, 1);
        assert_eq!(d.attribute("thread.name", Value::Str("main".into())), 1);
        assert_eq!(d.attribute("thread.id", Value::Int(1)), 2);
        let f = d.function("f", "f", "f.c");
        assert_eq!((f, d.function("f", "f", "f.c")), (1, 1));
        let l = d.location(0, 0x10, vec![(f, 3)], vec![]);
        assert_eq!((l, d.location(0, 0x10, vec![(f, 3)], vec![])), (1, 1));
        assert_eq!(d.stack(vec![l]), 1);
        let p = d.finish();
        assert_eq!(p.string_table[0], "");
        assert_eq!(p.mapping_table, [Mapping::default()]);
        assert_eq!(p.location_table.len(), 2);
        assert_eq!(p.location_table[0], Location::default());
        assert_eq!(p.function_table[0], Function::default());
        assert_eq!(p.link_table, [Link::default()]);
        assert_eq!(p.attribute_table.len(), 3);
        assert_eq!(p.attribute_table[0], KeyValueAndUnit::default());
        assert_eq!(p.stack_table[0], Stack::default());
        assert_eq!(p.stack_table[1].location_indices, [1]);
    }
}
