//! One interning table: values in insertion order (so output is deterministic), their index as
//! the handle, and the set of entries the current chunk references.

use std::hash::Hash;

use indexmap::{Equivalent, IndexSet};
use rustc_hash::FxBuildHasher;

/// An insertion-ordered interner with per-chunk "used" marks.
#[derive(Debug)]
pub(crate) struct Pool<K> {
    values: IndexSet<K, FxBuildHasher>,
    used: Vec<bool>,
    /// Indices marked in this chunk, in marking order.
    used_list: Vec<u32>,
    /// How many of `used_list` had their own references marked (see `Pools::close`).
    closed: usize,
}

impl<K: Hash + Eq> Default for Pool<K> {
    fn default() -> Self {
        Pool {
            values: IndexSet::default(),
            used: Vec::new(),
            used_list: Vec::new(),
            closed: 0,
        }
    }
}

impl<K: Hash + Eq> Pool<K> {
    /// The index of `value`, inserting `make()` if it is new. `make` runs only on a miss, so a
    /// borrowed lookup key costs no allocation when the value repeats.
    #[inline]
    pub fn intern<Q>(&mut self, value: &Q, make: impl FnOnce() -> K) -> u32
    where
        Q: ?Sized + Hash + Equivalent<K>,
    {
        if let Some(index) = self.values.get_index_of(value) {
            return index as u32;
        }
        let (index, _) = self.values.insert_full(make());
        self.used.push(false);
        index as u32
    }

    /// The value at `index`, if it exists.
    #[inline]
    pub fn get(&self, index: u32) -> Option<&K> {
        self.values.get_index(index as usize)
    }

    /// Marks `index` as referenced by the current chunk; unknown indices are ignored (their key
    /// then dangles and readers show null, which is all a wrong handle can mean).
    #[inline]
    pub fn mark(&mut self, index: u32) {
        if let Some(used) = self.used.get_mut(index as usize) {
            if !*used {
                *used = true;
                self.used_list.push(index);
            }
        }
    }

    /// Entries marked but whose references are not yet marked; advances the cursor.
    pub fn take_unclosed(&mut self) -> Vec<u32> {
        let fresh = self
            .used_list
            .get(self.closed..)
            .unwrap_or_default()
            .to_vec();
        self.closed = self.used_list.len();
        fresh
    }

    /// The marked entries of this chunk in index order, with their values.
    pub fn used_entries(&self) -> Vec<(u32, &K)> {
        let mut indices = self.used_list.clone();
        indices.sort_unstable();
        indices
            .into_iter()
            .filter_map(|i| self.get(i).map(|v| (i, v)))
            .collect()
    }

    /// The values marked in this chunk, in marking order.
    pub fn marked(&self) -> impl Iterator<Item = &K> + '_ {
        self.used_list.iter().filter_map(|&i| self.get(i))
    }

    /// Forgets this chunk's marks (the values stay interned, their keys stay valid).
    pub fn clear_marks(&mut self) {
        for &i in &self.used_list {
            if let Some(u) = self.used.get_mut(i as usize) {
                *u = false;
            }
        }
        self.used_list.clear();
        self.closed = 0;
    }

    /// How many distinct values are interned.
    pub fn len(&self) -> usize {
        self.values.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interns_once_and_marks_once() {
        let mut p: Pool<Box<str>> = Pool::default();
        let a = p.intern("a", || "a".into());
        let b = p.intern("b", || "b".into());
        assert_eq!(p.intern("a", || unreachable!("a is interned")), a);
        assert_ne!(a, b);
        p.mark(b);
        p.mark(b);
        p.mark(a);
        p.mark(99);
        let used: Vec<_> = p
            .used_entries()
            .into_iter()
            .map(|(i, v)| (i, v.to_string()))
            .collect();
        assert_eq!(used, vec![(a, "a".into()), (b, "b".into())]);
        assert_eq!(p.take_unclosed(), vec![b, a]);
        assert!(p.take_unclosed().is_empty());
        p.clear_marks();
        assert!(p.used_entries().is_empty());
        assert_eq!(p.len(), 2);
    }
}
