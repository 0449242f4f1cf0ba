//! The constant values a recording interns (symbols, classes, methods, stacks, threads, ...),
//! how each is encoded in a checkpoint, and which other constants each one references.

use std::hash::{Hash, Hasher};

use indexmap::Equivalent;

use crate::ids::*;
use crate::leb128;
use crate::pool::Pool;
use crate::stack_hash::{java_stack_hash, native_stack_hash, FrameWords};
use crate::types::NativeStackEncoding;

/// A Java package.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Package {
    /// Internal-form name, e.g. `java/util`.
    pub name: SymbolId,
    /// The module, if known.
    pub module: Option<ModuleId>,
    /// Whether the module exports it.
    pub exported: bool,
}

/// A Java module.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Module {
    /// Module name.
    pub name: SymbolId,
    /// Version, if known.
    pub version: Option<SymbolId>,
    /// Location, if known.
    pub location: Option<SymbolId>,
    /// Defining class loader, if known.
    pub class_loader: Option<ClassLoaderId>,
}

/// A Java class loader.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ClassLoader {
    /// The loader's own class, if known.
    pub class: Option<ClassId>,
    /// The loader's name.
    pub name: SymbolId,
}

/// A Java class, or the library that stands in for a class in a native frame.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Class {
    /// Defining loader (`None` = bootstrap).
    pub class_loader: Option<ClassLoaderId>,
    /// Internal-form name, e.g. `java/lang/String`. Never null: `jfr print` needs it.
    pub name: SymbolId,
    /// The package, if known.
    pub package: Option<PackageId>,
    /// Access flags.
    pub modifiers: i32,
    /// Hidden class.
    pub hidden: bool,
}

/// A Java method.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Method {
    /// Declaring class.
    pub class: ClassId,
    /// Method name.
    pub name: SymbolId,
    /// Descriptor such as `(I)V`; readers parse it, so it must have the form `(...)R`.
    pub descriptor: SymbolId,
    /// Access flags (`0x100` = native).
    pub modifiers: i32,
    /// Hidden frames are skipped by `jfr print` and JMC.
    pub hidden: bool,
}

/// One Java stack frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Frame {
    /// The method.
    pub method: MethodId,
    /// Source line; negative = unknown (readers then print no line).
    pub line: i32,
    /// Bytecode index; negative = unknown or native.
    pub bytecode_index: i32,
    /// How the frame was executing.
    pub frame_type: FrameType,
}

impl FrameWords for Frame {
    /// (method, line) and (bytecode index, type): every field.
    #[inline]
    fn words(&self) -> [u64; 2] {
        [
            u64::from(self.method.0) | u64::from(self.line as u32) << 32,
            u64::from(self.bytecode_index as u32) | (self.frame_type as u64) << 32,
        ]
    }
}

/// A Java thread, as `java.lang.Thread` in JFR.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Thread {
    /// OS thread name, if known.
    pub os_name: Option<Box<str>>,
    /// OS thread id (Linux tid).
    pub os_thread_id: i64,
    /// Java thread name, if it is a Java thread.
    pub java_name: Option<Box<str>>,
    /// Java thread id (`Thread.threadId()`), 0 if unknown.
    pub java_thread_id: i64,
    /// Thread group, if known.
    pub group: Option<ThreadGroupId>,
    /// Virtual thread.
    pub is_virtual: bool,
}

/// A Java thread group.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ThreadGroup {
    /// Parent group.
    pub parent: Option<ThreadGroupId>,
    /// Group name.
    pub name: Option<Box<str>>,
}

/// An interned stack: the owned form stored in the pool.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct StackKey<T> {
    pub truncated: bool,
    pub frames: Box<[T]>,
}

/// The borrowed form used for lookups, hashing exactly like [`StackKey`].
pub(crate) struct StackRef<'a, T> {
    pub truncated: bool,
    pub frames: &'a [T],
}

// The owned and borrowed forms hash alike, through [`crate::stack_hash`].
impl Hash for StackKey<Frame> {
    #[inline]
    fn hash<H: Hasher>(&self, state: &mut H) {
        state.write_u64(java_stack_hash(self.truncated, &self.frames));
    }
}

impl Hash for StackRef<'_, Frame> {
    #[inline]
    fn hash<H: Hasher>(&self, state: &mut H) {
        state.write_u64(java_stack_hash(self.truncated, self.frames));
    }
}

impl Hash for StackKey<u64> {
    #[inline]
    fn hash<H: Hasher>(&self, state: &mut H) {
        state.write_u64(native_stack_hash(self.truncated, &self.frames));
    }
}

impl Hash for StackRef<'_, u64> {
    #[inline]
    fn hash<H: Hasher>(&self, state: &mut H) {
        state.write_u64(native_stack_hash(self.truncated, self.frames));
    }
}

impl<T: PartialEq> Equivalent<StackKey<T>> for StackRef<'_, T> {
    fn equivalent(&self, key: &StackKey<T>) -> bool {
        self.truncated == key.truncated && *self.frames == *key.frames
    }
}

/// Every constant pool of a recording.
#[derive(Debug, Default)]
pub(crate) struct Pools {
    pub symbols: Pool<Box<str>>,
    pub packages: Pool<Package>,
    pub modules: Pool<Module>,
    pub class_loaders: Pool<ClassLoader>,
    pub classes: Pool<Class>,
    pub methods: Pool<Method>,
    pub stack_traces: Pool<StackKey<Frame>>,
    pub native_stack_traces: Pool<StackKey<u64>>,
    pub threads: Pool<Thread>,
    pub thread_groups: Pool<ThreadGroup>,
}

/// The class ids a checkpoint needs, resolved once from the metadata.
#[derive(Debug, Clone, Copy)]
pub(crate) struct PoolClassIds {
    pub symbol: u64,
    pub package: u64,
    pub module: u64,
    pub class_loader: u64,
    pub class: u64,
    pub method: u64,
    pub stack_trace: u64,
    pub frame_type: u64,
    pub native_stack_trace: u64,
    pub thread: u64,
    pub thread_group: u64,
}

fn mark_opt<K: Hash + Eq>(pool: &mut Pool<K>, index: Option<u32>) {
    if let Some(i) = index {
        pool.mark(i);
    }
}

impl Pools {
    /// Marks, transitively, everything the marked entries reference, so that a chunk carries
    /// every constant its events reach (readers treat each chunk on its own).
    pub fn close(&mut self) {
        loop {
            let mut progressed = false;
            for i in self.stack_traces.take_unclosed() {
                progressed = true;
                let methods: Vec<u32> = self
                    .stack_traces
                    .get(i)
                    .map(|s| s.frames.iter().map(|f| f.method.0).collect())
                    .unwrap_or_default();
                methods.into_iter().for_each(|m| self.methods.mark(m));
            }
            for i in self.methods.take_unclosed() {
                progressed = true;
                if let Some(m) = self.methods.get(i).cloned() {
                    self.classes.mark(m.class.0);
                    self.symbols.mark(m.name.0);
                    self.symbols.mark(m.descriptor.0);
                }
            }
            for i in self.classes.take_unclosed() {
                progressed = true;
                if let Some(c) = self.classes.get(i).cloned() {
                    mark_opt(&mut self.class_loaders, c.class_loader.map(|x| x.0));
                    self.symbols.mark(c.name.0);
                    mark_opt(&mut self.packages, c.package.map(|x| x.0));
                }
            }
            for i in self.class_loaders.take_unclosed() {
                progressed = true;
                if let Some(l) = self.class_loaders.get(i).cloned() {
                    mark_opt(&mut self.classes, l.class.map(|x| x.0));
                    self.symbols.mark(l.name.0);
                }
            }
            for i in self.packages.take_unclosed() {
                progressed = true;
                if let Some(p) = self.packages.get(i).cloned() {
                    self.symbols.mark(p.name.0);
                    mark_opt(&mut self.modules, p.module.map(|x| x.0));
                }
            }
            for i in self.modules.take_unclosed() {
                progressed = true;
                if let Some(m) = self.modules.get(i).cloned() {
                    self.symbols.mark(m.name.0);
                    mark_opt(&mut self.symbols, m.version.map(|x| x.0));
                    mark_opt(&mut self.symbols, m.location.map(|x| x.0));
                    mark_opt(&mut self.class_loaders, m.class_loader.map(|x| x.0));
                }
            }
            for i in self.threads.take_unclosed() {
                progressed = true;
                if let Some(t) = self.threads.get(i) {
                    let group = t.group.map(|g| g.0);
                    mark_opt(&mut self.thread_groups, group);
                }
            }
            for i in self.thread_groups.take_unclosed() {
                progressed = true;
                let parent = self
                    .thread_groups
                    .get(i)
                    .and_then(|g| g.parent.map(|p| p.0));
                mark_opt(&mut self.thread_groups, parent);
            }
            // Leaves: nothing to follow, but advance their cursors.
            progressed |= !self.symbols.take_unclosed().is_empty();
            progressed |= !self.native_stack_traces.take_unclosed().is_empty();
            if !progressed {
                return;
            }
        }
    }

    /// Appends the body of one checkpoint record (after size and type) holding every marked
    /// entry (native stacks only if they are `native` = pooled) and the fixed FrameType pool: start ticks, duration 0, delta 0 (the only
    /// checkpoint of its chunk), type mask 0, pools. Never writes an empty pool.
    pub fn write_checkpoint_payload(
        &self,
        ids: &PoolClassIds,
        native: NativeStackEncoding,
        start_ticks: i64,
        out: &mut Vec<u8>,
    ) {
        let mut pools: Vec<(u64, usize, Vec<u8>)> = Vec::new();
        let mut add = |class_id: u64, entries: Vec<(u64, Vec<u8>)>| {
            if entries.is_empty() {
                return;
            }
            let mut bytes = Vec::new();
            for (key, value) in &entries {
                leb128::write_u64(&mut bytes, *key);
                bytes.extend_from_slice(value);
            }
            pools.push((class_id, entries.len(), bytes));
        };
        add(
            ids.frame_type,
            FrameType::ALL
                .iter()
                .map(|t| (t.key(), encode_string(Some(t.description()))))
                .collect(),
        );
        add(
            ids.symbol,
            // Every symbol in UTF-8 (encoding 3), the empty one too: async-profiler's
            // converter rejects any other encoding in a symbol (null and the empty-string
            // encoding included).
            encode_all(&self.symbols, |s, o| write_utf8(o, s)),
        );
        add(ids.package, encode_all(&self.packages, encode_package));
        add(ids.module, encode_all(&self.modules, encode_module));
        add(
            ids.class_loader,
            encode_all(&self.class_loaders, encode_class_loader),
        );
        add(ids.class, encode_all(&self.classes, encode_class));
        add(ids.method, encode_all(&self.methods, encode_method));
        add(
            ids.stack_trace,
            encode_all(&self.stack_traces, encode_stack_trace),
        );
        if native == NativeStackEncoding::Pooled {
            add(
                ids.native_stack_trace,
                encode_all(&self.native_stack_traces, encode_native_stack_trace),
            );
        }
        add(ids.thread, encode_all(&self.threads, encode_thread));
        add(
            ids.thread_group,
            encode_all(&self.thread_groups, encode_thread_group),
        );

        leb128::write_i64(out, start_ticks);
        leb128::write_u64(out, 0); // duration
        leb128::write_u64(out, 0); // delta to the previous checkpoint: none
        out.push(0); // type mask
        leb128::write_u64(out, pools.len() as u64);
        for (class_id, count, bytes) in pools {
            leb128::write_u64(out, class_id);
            leb128::write_u64(out, count as u64);
            out.extend_from_slice(&bytes);
        }
    }

    /// The program counters of every native stack marked in this chunk (its segments'
    /// included).
    pub fn marked_native_pcs(&self) -> impl Iterator<Item = u64> + '_ {
        self.native_stack_traces
            .marked()
            .flat_map(|stack| native_parts(&stack.frames).pcs())
    }

    /// Forgets the chunk's marks.
    pub fn clear_marks(&mut self) {
        self.symbols.clear_marks();
        self.packages.clear_marks();
        self.modules.clear_marks();
        self.class_loaders.clear_marks();
        self.classes.clear_marks();
        self.methods.clear_marks();
        self.stack_traces.clear_marks();
        self.native_stack_traces.clear_marks();
        self.threads.clear_marks();
        self.thread_groups.clear_marks();
    }

    /// Distinct constants interned so far, all pools together.
    pub fn len(&self) -> usize {
        self.symbols.len()
            + self.packages.len()
            + self.modules.len()
            + self.class_loaders.len()
            + self.classes.len()
            + self.methods.len()
            + self.stack_traces.len()
            + self.native_stack_traces.len()
            + self.threads.len()
            + self.thread_groups.len()
    }
}

fn encode_all<K: Hash + Eq>(
    pool: &Pool<K>,
    encode: impl Fn(&K, &mut Vec<u8>),
) -> Vec<(u64, Vec<u8>)> {
    pool.used_entries()
        .into_iter()
        .map(|(index, value)| {
            let mut bytes = Vec::new();
            encode(value, &mut bytes);
            (u64::from(index) + 1, bytes)
        })
        .collect()
}

/// Writes a `java.lang.String` inline: 0 = null, 1 = empty, 3 = UTF-8 bytes.
pub(crate) fn write_string(out: &mut Vec<u8>, s: Option<&str>) {
    match s {
        None => out.push(0),
        Some("") => out.push(1),
        Some(s) => write_utf8(out, s),
    }
}

/// A string in UTF-8 (encoding 3) whatever its length.
fn write_utf8(out: &mut Vec<u8>, s: &str) {
    out.push(3);
    leb128::write_u64(out, s.len() as u64);
    out.extend_from_slice(s.as_bytes());
}

fn encode_string(s: Option<&str>) -> Vec<u8> {
    let mut out = Vec::new();
    write_string(&mut out, s);
    out
}

fn write_bool(out: &mut Vec<u8>, b: bool) {
    out.push(u8::from(b));
}

fn encode_package(p: &Package, o: &mut Vec<u8>) {
    leb128::write_u64(o, p.name.key());
    leb128::write_u64(o, key_or_null(p.module, ModuleId::key));
    write_bool(o, p.exported);
}

fn encode_module(m: &Module, o: &mut Vec<u8>) {
    leb128::write_u64(o, m.name.key());
    leb128::write_u64(o, key_or_null(m.version, SymbolId::key));
    leb128::write_u64(o, key_or_null(m.location, SymbolId::key));
    leb128::write_u64(o, key_or_null(m.class_loader, ClassLoaderId::key));
}

fn encode_class_loader(l: &ClassLoader, o: &mut Vec<u8>) {
    leb128::write_u64(o, key_or_null(l.class, ClassId::key));
    leb128::write_u64(o, l.name.key());
}

fn encode_class(c: &Class, o: &mut Vec<u8>) {
    leb128::write_u64(o, key_or_null(c.class_loader, ClassLoaderId::key));
    leb128::write_u64(o, c.name.key());
    leb128::write_u64(o, key_or_null(c.package, PackageId::key));
    leb128::write_i64(o, i64::from(c.modifiers));
    write_bool(o, c.hidden);
}

fn encode_method(m: &Method, o: &mut Vec<u8>) {
    leb128::write_u64(o, m.class.key());
    leb128::write_u64(o, m.name.key());
    leb128::write_u64(o, m.descriptor.key());
    leb128::write_i32(o, m.modifiers);
    write_bool(o, m.hidden);
}

fn encode_stack_trace(s: &StackKey<Frame>, o: &mut Vec<u8>) {
    write_bool(o, s.truncated);
    leb128::write_u64(o, s.frames.len() as u64);
    for f in s.frames.iter() {
        leb128::write_u64(o, f.method.key());
        leb128::write_i32(o, f.line);
        leb128::write_i32(o, f.bytecode_index);
        leb128::write_u64(o, f.frame_type.key());
    }
}

/// The word that starts a segment in a native stack's key: never a program counter.
pub(crate) const SEGMENT_MARK: u64 = u64::MAX;

/// A segment's second word: its Java frame index, whether it is truncated, its pc count.
pub(crate) fn segment_header(java_frame_index: u32, truncated: bool, count: usize) -> u64 {
    u64::from(java_frame_index) | (u64::from(truncated) << 32) | ((count as u64) << 33)
}

/// A native stack's key, split: the pcs above the first Java frame, then each segment as
/// (Java frame index, truncated, pcs). The key is the pcs, then for each segment
/// [`SEGMENT_MARK`], [`segment_header`] and its pcs: one word list, so that hashing and
/// comparing a stack stay what they were.
pub(crate) struct NativeParts<'a> {
    pub top: &'a [u64],
    rest: &'a [u64],
}

pub(crate) fn native_parts(words: &[u64]) -> NativeParts<'_> {
    let split = words
        .iter()
        .position(|&w| w == SEGMENT_MARK)
        .unwrap_or(words.len());
    let (top, rest) = words.split_at(split);
    NativeParts { top, rest }
}

impl<'a> NativeParts<'a> {
    /// The segments: (Java frame index, truncated, pcs).
    pub fn segments(&self) -> impl Iterator<Item = (u32, bool, &'a [u64])> {
        let mut rest = self.rest;
        std::iter::from_fn(move || {
            let (&mark, after) = rest.split_first()?;
            let (&header, after) = after.split_first()?;
            if mark != SEGMENT_MARK {
                return None;
            }
            let count = usize::try_from(header >> 33).ok()?.min(after.len());
            let (pcs, next) = after.split_at(count);
            rest = next;
            Some((header as u32, (header >> 32) & 1 == 1, pcs))
        })
    }

    /// Every pc: the top ones, then each segment's.
    pub fn pcs(&self) -> impl Iterator<Item = u64> + 'a {
        let top = self.top.iter().copied();
        top.chain(self.segments().flat_map(|(_, _, pcs)| pcs.iter().copied()))
    }
}

/// Writes a native stack as an inline `jdk.NativeStackTrace`: truncated, count, pcs, then its
/// segments: count, and each one's Java frame index, truncated, count, pcs.
pub(crate) fn encode_native_stack_trace(s: &StackKey<u64>, o: &mut Vec<u8>) {
    let parts = native_parts(&s.frames);
    write_bool(o, s.truncated);
    leb128::write_u64(o, parts.top.len() as u64);
    for &pc in parts.top {
        leb128::write_u64(o, pc);
    }
    leb128::write_u64(o, parts.segments().count() as u64);
    for (java_frame_index, truncated, pcs) in parts.segments() {
        leb128::write_i32(o, java_frame_index as i32);
        write_bool(o, truncated);
        leb128::write_u64(o, pcs.len() as u64);
        for &pc in pcs {
            leb128::write_u64(o, pc);
        }
    }
}

fn encode_thread(t: &Thread, o: &mut Vec<u8>) {
    write_string(o, t.os_name.as_deref());
    leb128::write_i64(o, t.os_thread_id);
    write_string(o, t.java_name.as_deref());
    leb128::write_i64(o, t.java_thread_id);
    leb128::write_u64(o, key_or_null(t.group, ThreadGroupId::key));
    write_bool(o, t.is_virtual);
}

fn encode_thread_group(g: &ThreadGroup, o: &mut Vec<u8>) {
    leb128::write_u64(o, key_or_null(g.parent, ThreadGroupId::key));
    write_string(o, g.name.as_deref());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_native_key_splits_into_its_top_frames_and_segments() {
        let words = [
            0x10,
            0x20,
            SEGMENT_MARK,
            segment_header(1, false, 2),
            0x30,
            0x40,
            SEGMENT_MARK,
            segment_header(4, true, 0),
        ];
        let parts = native_parts(&words);
        assert_eq!(parts.top, &[0x10, 0x20]);
        let segments: Vec<_> = parts.segments().collect();
        assert_eq!(
            segments,
            vec![(1, false, &[0x30, 0x40][..]), (4, true, &[][..])]
        );
        assert_eq!(
            parts.pcs().collect::<Vec<_>>(),
            vec![0x10, 0x20, 0x30, 0x40]
        );
        // No segments: all pcs are the top ones.
        let plain = [0x10, 0x20];
        assert_eq!(native_parts(&plain).top, &plain);
        assert_eq!(native_parts(&plain).segments().count(), 0);
        // A count beyond the words left reads what is there.
        let short = [SEGMENT_MARK, segment_header(2, false, 5), 0x50];
        let segments: Vec<_> = native_parts(&short).segments().collect();
        assert_eq!(segments, vec![(2, false, &[0x50][..])]);
    }

    #[test]
    fn every_field_of_a_frame_reaches_its_hash_words() {
        let base = Frame {
            method: MethodId(7),
            line: 12,
            bytecode_index: 3,
            frame_type: FrameType::JitCompiled,
        };
        let changed = [
            Frame {
                method: MethodId(8),
                ..base
            },
            Frame { line: -1, ..base },
            Frame {
                bytecode_index: -1,
                ..base
            },
            Frame {
                frame_type: FrameType::Inlined,
                ..base
            },
        ];
        for frame in changed {
            assert_ne!(frame.words(), base.words(), "{frame:?}");
        }
    }
}
