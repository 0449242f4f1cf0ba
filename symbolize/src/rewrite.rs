//! Writing a symbolized copy of a chunk: every `jdk.CPUTimeSample` gets a stack trace that
//! starts with its native frames (leaf first, inlined functions as their own frames) followed
//! by its Java frames, with the native frames between Java frames (the native stack's
//! `segments`: the native code that called a Java frame back) in their place before that Java
//! frame, and loses the `nativeStackTrace` field, which `jfr print` cannot print in text mode. Every other record is copied byte for byte; checkpoints are copied with their
//! chain re-linked, without the `jdk.NativeStackTrace` pool and with every symbol in UTF-8
//! (`rewrite/pools.rs`); one new checkpoint holds the new constants; the metadata is the input's
//! with that field removed and a `jfrnative.Symbolization` event added, which says what was
//! done.
//!
//! Native frames between Java frames that the recorder could not all walk are marked by one
//! frame `unknown.[native frames missing]` where they are missing.
//!
//! A native frame is an ordinary `jdk.types.StackFrame` of type "Native": its method's class
//! is the library file name (`libc.so.6`; `vdso` for the kernel's `[vdso]`, as JMC takes a
//! class name starting with `[` for an array type; `unknown` outside every library), its name
//! the function (or `lib+0xADDR`
//! when the library has no name for it), its modifiers `native` (0x100), its line the DWARF
//! line or -1 when unknown, its bytecode index -1. Its descriptor is the placeholder `()V`:
//! parameters and return type are not known (C++ names carry their parameters in the name),
//! but readers need a well-formed descriptor (an empty one makes `jfr print` fail).

mod pools;

use std::sync::Arc;

use jfr_writer::leb128::{record_size, write_i64, write_u64};
use rustc_hash::{FxHashMap, FxHashSet};

use crate::jfr::chunk::{Pools, HEADER_SIZE};
use crate::jfr::cursor::JString;
use crate::jfr::encode::encode_instance;
use crate::jfr::metadata::{Element, Metadata};
use crate::jfr::{Chunk, ReadError, Value};
use crate::profile::{ChunkProfile, Segment, View};
use crate::report::aggregate::NATIVE_GAP;
use crate::resolve::{Frame, Symbolizer};

/// Name of the event type added to say how the file was made.
pub const SYMBOLIZATION_EVENT: &str = "jfrnative.Symbolization";

/// What one chunk's rewrite did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct ChunkStats {
    /// `jdk.CPUTimeSample` events written.
    pub samples: u64,
    /// Of those, how many got native frames.
    pub with_native: u64,
    /// Native frames of those samples (inlined ones included), counted per sample.
    pub native_frames: u64,
    /// Of those, how many have a function name.
    pub named_frames: u64,
}

impl std::ops::AddAssign for ChunkStats {
    fn add_assign(&mut self, other: ChunkStats) {
        self.samples += other.samples;
        self.with_native += other.with_native;
        self.native_frames += other.native_frames;
        self.named_frames += other.named_frames;
    }
}

/// A stack trace written for (native PCs, Java stack key): its new key, its native frames and
/// how many of them are named.
type NewStack = (u64, u64, u64);

/// What a symbolized stack is made of: the native frames, the native frames between Java
/// frames, and the input's Java stack (its pool key).
type StackKey = (Arc<[u64]>, Arc<[Segment]>, u64);

/// The output metadata for an input chunk's metadata.
pub struct OutputMetadata {
    metadata: Metadata,
    symbolization_id: Option<u64>,
}

impl OutputMetadata {
    /// `input` without `jdk.CPUTimeSample.nativeStackTrace` and with the symbolization event.
    pub fn new(input: &Metadata) -> Result<OutputMetadata, String> {
        let mut root = input.root.clone();
        let symbolization_id = input.max_class_id() + 1;
        let mut added = false;
        let class_id = |name: &str| input.class_by_name(name).map(|c| c.id.to_string());
        if let Some(md) = root.children.iter_mut().find(|e| e.name == "metadata") {
            for class in md.children.iter_mut() {
                if class.name == "class" && class.attr("name") == Some("jdk.CPUTimeSample") {
                    class.children.retain(|f| {
                        !(f.name == "field" && f.attr("name") == Some("nativeStackTrace"))
                    });
                }
            }
            if let Some(event) = symbolization_class(symbolization_id, &class_id) {
                md.children.push(event);
                added = true;
            }
        }
        let metadata = Metadata::from_tree(input.start_ticks, 0, root)?;
        Ok(OutputMetadata {
            metadata,
            symbolization_id: added.then_some(symbolization_id),
        })
    }
}

fn element(name: &str, attrs: &[(&str, &str)], children: Vec<Element>) -> Element {
    Element::new(name, attrs, children)
}

fn symbolization_class(id: u64, class_id: &dyn Fn(&str) -> Option<String>) -> Option<Element> {
    let long = class_id("long")?;
    let string = class_id("java.lang.String")?;
    let annotation = |class: &str, attrs: &[(&str, &str)]| -> Option<Element> {
        let id = class_id(class)?;
        let mut all = vec![("class", id.as_str())];
        all.extend_from_slice(attrs);
        Some(element("annotation", &all, Vec::new()))
    };
    let label = |text: &str| annotation("jdk.jfr.Label", &[("value", text)]);
    let field = |name: &str, class: &str, text: &str, extra: Option<Element>| {
        let mut children: Vec<Element> = label(text).into_iter().collect();
        children.extend(extra);
        element("field", &[("name", name), ("class", class)], children)
    };
    let mut children: Vec<Element> = [
        label("Symbolization"),
        annotation(
            "jdk.jfr.Description",
            &[(
                "value",
                "This chunk's native PCs were resolved offline; CPU-sample stacks start with the native frames",
            )],
        ),
        annotation("jdk.jfr.Category", &[("value-0", "jfr-native")]),
    ]
    .into_iter()
    .flatten()
    .collect();
    children.push(field(
        "startTime",
        &long,
        "Start Time",
        annotation("jdk.jfr.Timestamp", &[("value", "TICKS")]),
    ));
    children.push(field("tool", &string, "Tool", None));
    children.push(field("samples", &long, "CPU Samples", None));
    children.push(field(
        "withNativeFrames",
        &long,
        "Samples With Native Frames",
        None,
    ));
    children.push(field("nativeFrames", &long, "Native Frames", None));
    children.push(field("namedFrames", &long, "Named Native Frames", None));
    children.push(field(
        "unresolvedLibraries",
        &string,
        "Libraries Not Resolved",
        None,
    ));
    Some(element(
        "class",
        &[
            ("name", SYMBOLIZATION_EVENT),
            ("superType", "jdk.jfr.Event"),
            ("id", &id.to_string()),
        ],
        children,
    ))
}

/// First key of the constants the rewrite adds. The JDK reader reuses the previous chunk's
/// value for any (type, key) the next chunk also defines (format notes §9), so a new key must
/// stand for one value in the whole file, and never meet the input's own keys: they come from
/// one counter for the whole file, in a range far above the keys writers use (sequential ids;
/// HotSpot's method ids stay below 2^40).
pub const FIRST_NEW_KEY: u64 = 1 << 48;

/// First key of the stack traces the rewrite adds. Readers that keep stack-trace keys as Java
/// `int`s (async-profiler's converter) drop events whose key is 2^31 or more, so new stack
/// traces take keys from 2^30 up, above the sequential ids writers give (HotSpot's and the
/// agent's start at 1), skipping any key of the input's stack-trace pool in the chunk or the
/// one before it (which the JDK would reuse, §9). Past 2^31 − 1 they fall back to
/// [`FIRST_NEW_KEY`]'s range.
pub const FIRST_NEW_STACK_KEY: u64 = 1 << 30;

/// The keys of the constants that name native functions, kept for the whole file: a function
/// has one method key (and its library one class key) in every chunk, as the JDK keeps a Java
/// method's, so that views which group by method (`jfr view cpu-time-hot-methods`) merge it
/// across chunks. Each chunk still defines every constant it uses, for readers that read
/// chunks alone (JMC).
#[derive(Debug)]
pub struct FileKeys {
    /// `None` once every key above the input's is taken (an input key of `u64::MAX`).
    next_key: Option<u64>,
    next_stack_key: u64,
    /// The keys of the previous chunk's input stack-trace pool.
    previous_stack_keys: FxHashSet<u64>,
    symbols: FxHashMap<Arc<str>, u64>,
    classes: FxHashMap<Arc<str>, u64>,
    methods: FxHashMap<(Arc<str>, Arc<str>), u64>,
}

impl Default for FileKeys {
    fn default() -> FileKeys {
        FileKeys {
            next_key: Some(FIRST_NEW_KEY),
            next_stack_key: FIRST_NEW_STACK_KEY,
            previous_stack_keys: FxHashSet::default(),
            symbols: FxHashMap::default(),
            classes: FxHashMap::default(),
            methods: FxHashMap::default(),
        }
    }
}

/// New constants of one chunk.
struct NewConstants<'m, 'k> {
    md: &'m Metadata,
    pools: &'m Pools,
    keys: &'k mut FileKeys,
    entries: FxHashMap<u64, Vec<(u64, Value)>>,
    /// (class id, key) of the constants this chunk defines.
    defined: FxHashSet<(u64, u64)>,
    native_type: Option<u64>,
    /// A fresh key was asked for with none left: the chunk cannot be written (found by the
    /// fuzz target symbolize_pipeline: an input key of u64::MAX made the next one overflow).
    exhausted: bool,
}

impl<'m, 'k> NewConstants<'m, 'k> {
    fn new(md: &'m Metadata, pools: &'m Pools, keys: &'k mut FileKeys) -> NewConstants<'m, 'k> {
        // Above the input's keys too, should a writer use this range. A writer may use keys
        // up to 2^64 - 1 (the JDK's own recordings do): then the keys stay where they are, and
        // each fresh one skips the keys the input uses ([`NewConstants::fresh_key`]).
        let input_max = pools
            .values()
            .filter_map(|entries| entries.keys().max())
            .max()
            .copied()
            .unwrap_or(0);
        if let Some(above) = input_max.checked_add(1) {
            keys.next_key = keys.next_key.map(|next| next.max(above));
        }
        NewConstants {
            md,
            pools,
            keys,
            entries: FxHashMap::default(),
            defined: FxHashSet::default(),
            native_type: None,
            exhausted: false,
        }
    }

    /// A key that no pool of the input uses and that was not given before; when every key up
    /// to 2^64 - 1 is taken, the chunk is refused ([`NewConstants::exhausted`]) and this key
    /// is not used.
    fn fresh_key(&mut self) -> u64 {
        while let Some(k) = self.keys.next_key {
            self.keys.next_key = k.checked_add(1);
            if !self.pools.values().any(|pool| pool.contains_key(&k)) {
                return k;
            }
        }
        self.exhausted = true;
        u64::MAX
    }

    /// A key for a new stack trace ([`FIRST_NEW_STACK_KEY`]).
    fn fresh_stack_key(&mut self, class_id: u64) -> u64 {
        let input = self.pools.get(&class_id);
        while self.keys.next_stack_key <= i32::MAX as u64 {
            let k = self.keys.next_stack_key;
            self.keys.next_stack_key += 1;
            if !input.is_some_and(|p| p.contains_key(&k))
                && !self.keys.previous_stack_keys.contains(&k)
            {
                return k;
            }
        }
        self.fresh_key()
    }

    /// Defines in this chunk the constant of `class_name` that the file keeps under `kept`
    /// (a key given before, or none yet), and returns its key. A kept key that the input's own
    /// pool of that class uses in this chunk gives way to a fresh one.
    fn define_kept(
        &mut self,
        class_name: &str,
        kept: Option<u64>,
        fields: &[(&str, Value)],
    ) -> u64 {
        let Some(class) = self.md.class_by_name(class_name) else {
            return 0;
        };
        let clashes = |k: u64| {
            self.pools
                .get(&class.id)
                .is_some_and(|p| p.contains_key(&k))
        };
        let key = match kept {
            Some(k) if !clashes(k) => k,
            _ => self.fresh_key(),
        };
        if self.defined.insert((class.id, key)) {
            let values = struct_of(class, fields);
            self.entries
                .entry(class.id)
                .or_default()
                .push((key, values));
        }
        key
    }

    fn add(&mut self, class_name: &str, fields: &[(&str, Value)]) -> u64 {
        let Some(class) = self.md.class_by_name(class_name) else {
            return 0;
        };
        let values = struct_of(class, fields);
        let k = if class_name == "jdk.types.StackTrace" {
            self.fresh_stack_key(class.id)
        } else {
            self.fresh_key()
        };
        self.defined.insert((class.id, k));
        self.entries.entry(class.id).or_default().push((k, values));
        k
    }

    fn reference(&self, class_name: &str, key: u64) -> Value {
        Value::Ref {
            class_id: self.md.class_by_name(class_name).map_or(0, |c| c.id),
            key,
        }
    }

    fn symbol(&mut self, s: &Arc<str>) -> Value {
        let kept = self.keys.symbols.get(s).copied();
        let string = Value::Str(JString::Text(s.to_string()));
        let key = self.define_kept("jdk.types.Symbol", kept, &[("string", string)]);
        self.keys.symbols.entry(s.clone()).or_insert(key);
        self.reference("jdk.types.Symbol", key)
    }

    fn class(&mut self, library: &Arc<str>) -> Value {
        let name = self.symbol(&class_name(library));
        let kept = self.keys.classes.get(library).copied();
        let fields = [
            ("name", name),
            ("modifiers", Value::Int(0)),
            ("hidden", Value::Bool(false)),
        ];
        let key = self.define_kept("java.lang.Class", kept, &fields);
        self.keys.classes.entry(library.clone()).or_insert(key);
        self.reference("java.lang.Class", key)
    }

    fn method(&mut self, library: &Arc<str>, function: &Arc<str>) -> Value {
        let class = self.class(library);
        let name = self.symbol(function);
        let descriptor = self.symbol(&Arc::from("()V"));
        let id = (library.clone(), function.clone());
        let kept = self.keys.methods.get(&id).copied();
        let fields = [
            ("type", class),
            ("name", name),
            ("descriptor", descriptor),
            ("modifiers", Value::Int(0x100)),
            ("hidden", Value::Bool(false)),
        ];
        let key = self.define_kept("jdk.types.Method", kept, &fields);
        self.keys.methods.entry(id).or_insert(key);
        self.reference("jdk.types.Method", key)
    }

    /// Appends the checkpoint payload (after the type id) holding every new constant.
    fn checkpoint_payload(&self, start_ticks: i64, delta: i64) -> Option<Vec<u8>> {
        if self.entries.is_empty() {
            return None;
        }
        let mut out = Vec::new();
        write_i64(&mut out, start_ticks);
        write_u64(&mut out, 0);
        write_i64(&mut out, delta);
        out.push(0);
        let mut classes: Vec<_> = self.entries.keys().copied().collect();
        classes.sort_unstable();
        write_u64(&mut out, classes.len() as u64);
        for class in classes {
            let entries = &self.entries[&class];
            write_u64(&mut out, class);
            write_u64(&mut out, entries.len() as u64);
            for (key, value) in entries {
                write_u64(&mut out, *key);
                encode_instance(self.md, class, value, &mut out);
            }
        }
        Some(out)
    }
}

/// The class name a library's native frames get: its file name, except that a region the
/// kernel maps (`[vdso]`, `[vsyscall]`) loses its brackets. A class name that starts with `[`
/// is an array type descriptor to JDK Mission Control, which throws on `[vdso]` ("The char 'v'
/// is not a valid first char of a field descriptor") and fails the whole stack trace view.
fn class_name(library: &Arc<str>) -> Arc<str> {
    match library.strip_prefix('[') {
        Some(inner) => Arc::from(inner.strip_suffix(']').unwrap_or(inner)),
        None => library.clone(),
    }
}

fn frame_type_native(chunk: &Chunk<'_>, constants: &mut NewConstants<'_, '_>) -> Value {
    let Some(class) = chunk.metadata.class_by_name("jdk.types.FrameType") else {
        return Value::Ref {
            class_id: 0,
            key: 0,
        };
    };
    let view = View::new(chunk);
    let existing = chunk.pools.get(&class.id).and_then(|pool| {
        let mut keys: Vec<_> = pool.keys().copied().collect();
        keys.sort_unstable();
        keys.into_iter()
            .find(|k| view.string(&pool[k]).as_deref() == Some("Native"))
    });
    let key = match (existing, constants.native_type) {
        (Some(k), _) | (None, Some(k)) => k,
        (None, None) => {
            let k = constants.add(
                "jdk.types.FrameType",
                &[("description", Value::Str(JString::Text("Native".into())))],
            );
            constants.native_type = Some(k);
            k
        }
    };
    Value::Ref {
        class_id: class.id,
        key,
    }
}

/// A checkpoint record's head: its start ticks and duration, and the rest of its payload (from
/// the type mask on) with a cursor there.
pub(crate) struct CheckpointHead<'a> {
    /// Start ticks.
    pub start_ticks: i64,
    /// Duration in ticks.
    pub duration: u64,
    /// The payload from the type mask on.
    pub rest: &'a [u8],
    /// A cursor at the start of `rest`.
    pub cursor: crate::jfr::cursor::Cursor<'a>,
}

impl<'a> CheckpointHead<'a> {
    /// Reads the head of checkpoint `record` of `chunk`.
    pub fn read(chunk: &Chunk<'a>, record: &crate::jfr::Record<'a>) -> Result<Self, ReadError> {
        let mut cursor = record.payload(chunk.offset);
        let start_ticks = cursor.varint_i64()?;
        let duration = cursor.varint()?;
        let _delta = cursor.varint()?;
        let rest = &record.bytes[record.payload_start + cursor.pos()..];
        Ok(CheckpointHead {
            start_ticks,
            duration,
            rest,
            cursor,
        })
    }

    /// The start of the payload of this checkpoint written at body offset `here`, with
    /// `start_ticks` and `duration`, linked back to the checkpoint at `previous` (the chain
    /// runs from the last checkpoint back to the first).
    pub fn relinked(
        &self,
        start_ticks: i64,
        duration: u64,
        previous: Option<usize>,
        here: usize,
    ) -> Vec<u8> {
        let mut payload = Vec::with_capacity(self.rest.len() + 24);
        write_i64(&mut payload, start_ticks);
        write_u64(&mut payload, duration);
        write_i64(&mut payload, previous.map_or(0, |p| p as i64 - here as i64));
        payload
    }
}

/// Appends one record (size, type id, payload); returns where it starts.
pub(crate) fn append_record(out: &mut Vec<u8>, type_id: u64, payload: &[u8]) -> usize {
    let at = out.len();
    let mut head = Vec::with_capacity(2);
    write_u64(&mut head, type_id);
    let size = record_size(head.len() + payload.len());
    write_u64(out, size);
    out.extend_from_slice(&head);
    out.extend_from_slice(payload);
    at
}

/// FNV-1a of `bytes`: metadata ids that differ exactly when the metadata does.
pub(crate) fn fnv1a(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// Writes the symbolized copy of `chunk` to `out`. `last` marks the final chunk of the output;
/// `keys` holds the new constants' keys of the whole file (one [`FileKeys`] per output file).
pub fn rewrite_chunk(
    chunk: &Chunk<'_>,
    profile: &ChunkProfile,
    symbolizer: &mut Symbolizer,
    tool: &str,
    last: bool,
    keys: &mut FileKeys,
    out: &mut Vec<u8>,
) -> Result<ChunkStats, ReadError> {
    let start = out.len();
    let md_error = |what: String| ReadError {
        offset: chunk.offset + chunk.header.metadata_offset,
        what,
    };
    let output_md = OutputMetadata::new(&chunk.metadata).map_err(md_error)?;
    let md = &output_md.metadata;
    let mut constants = NewConstants::new(md, &chunk.pools, keys);
    let native_type = frame_type_native(chunk, &mut constants);
    let view = View::new(chunk);
    let sample_class = chunk.metadata.class_by_name("jdk.CPUTimeSample");
    let out_sample_class = md.class_by_name("jdk.CPUTimeSample");
    let mut stats = ChunkStats::default();
    let mut stacks: FxHashMap<StackKey, NewStack> = FxHashMap::default();
    let samples: FxHashMap<usize, usize> = profile
        .samples
        .iter()
        .enumerate()
        .map(|(i, s)| (s.record_offset, i))
        .collect();
    let mut last_checkpoint: Option<usize> = None;
    // The output has no `nativeStackTrace` field: its pool would be unused, and some readers
    // (async-profiler's converter) fail on a pool of a type no event refers to.
    let native_stack_class = chunk
        .metadata
        .class_by_name("jdk.NativeStackTrace")
        .map(|c| c.id);
    let mut body = Vec::with_capacity(chunk.bytes.len());
    body.resize(HEADER_SIZE, 0);
    for record in chunk.records() {
        let record = record?;
        match record.type_id {
            0 => {}
            1 => {
                let mut head = CheckpointHead::read(chunk, &record)?;
                let here = body.len();
                let mut payload =
                    head.relinked(head.start_ticks, head.duration, last_checkpoint, here);
                let unused = [native_stack_class];
                payload.extend_from_slice(&pools::checkpoint_pools(
                    chunk,
                    &mut head.cursor,
                    head.rest,
                    &unused,
                )?);
                append_record(&mut body, 1, &payload);
                last_checkpoint = Some(here);
            }
            t if Some(t) == sample_class.map(|c| c.id) => {
                let (Some(in_class), Some(out_class)) = (sample_class, out_sample_class) else {
                    continue;
                };
                let mut fields = view.event_fields(&record, in_class)?;
                stats.samples += 1;
                if let (Some(&i), Some(trace)) = (
                    samples.get(&record.offset),
                    in_class.field_index("stackTrace"),
                ) {
                    let sample = &profile.samples[i];
                    if !sample.native.is_empty() || !sample.segments.is_empty() {
                        let java_key = match fields.get(trace) {
                            Some(Value::Ref { key, .. }) => *key,
                            _ => 0,
                        };
                        let stack_key = (sample.native.clone(), sample.segments.clone(), java_key);
                        let (key, frames, named) = match stacks.get(&stack_key) {
                            Some(&k) => k,
                            None => {
                                let k = native_stack(
                                    chunk,
                                    profile,
                                    symbolizer,
                                    &mut constants,
                                    &native_type,
                                    sample,
                                    fields.get(trace),
                                );
                                stacks.insert(stack_key, k);
                                k
                            }
                        };
                        stats.with_native += 1;
                        stats.native_frames += frames;
                        stats.named_frames += named;
                        fields[trace] = constants.reference("jdk.types.StackTrace", key);
                    }
                }
                // Drop fields the output class no longer has, by name.
                let kept: Vec<Value> = out_class
                    .fields
                    .iter()
                    .map(|f| {
                        in_class
                            .field_index(&f.name)
                            .and_then(|i| fields.get(i).cloned())
                            .unwrap_or(Value::Struct(Vec::new()))
                    })
                    .collect();
                let mut payload = Vec::with_capacity(record.bytes.len());
                encode_instance(md, out_class.id, &Value::Struct(kept), &mut payload);
                append_record(&mut body, t, &payload);
            }
            _ => body.extend_from_slice(record.bytes),
        }
    }
    let here = body.len();
    if let Some(payload) = constants.checkpoint_payload(
        chunk.header.start_ticks,
        last_checkpoint.map_or(0, |p| p as i64 - here as i64),
    ) {
        append_record(&mut body, 1, &payload);
        last_checkpoint = Some(here);
    }
    if constants.exhausted {
        return Err(ReadError {
            offset: chunk.offset,
            what: "no constant key is left for the symbolized frames (every key up to \
                   2^64 - 1 is taken)"
                .into(),
        });
    }
    drop(constants);
    keys.previous_stack_keys = chunk
        .metadata
        .class_by_name("jdk.types.StackTrace")
        .and_then(|c| chunk.pools.get(&c.id))
        .map(|pool| pool.keys().copied().collect())
        .unwrap_or_default();
    if let Some(id) = output_md.symbolization_id {
        let mut payload = Vec::new();
        let problems: Vec<String> = symbolizer
            .problems()
            .iter()
            .map(|p| format!("{}: {}", p.library, p.reason))
            .collect();
        let values = [
            Value::Int(chunk.header.start_ticks),
            Value::Str(JString::Text(tool.to_string())),
            Value::Int(stats.samples as i64),
            Value::Int(stats.with_native as i64),
            Value::Int(stats.native_frames as i64),
            Value::Int(stats.named_frames as i64),
            Value::Str(JString::Text(problems.join("; "))),
        ];
        encode_instance(md, id, &Value::Struct(values.to_vec()), &mut payload);
        append_record(&mut body, id, &payload);
    }
    let metadata_at = body.len();
    let metadata_id = fnv1a(&md.payload(0, 0)) & (i64::MAX as u64);
    let md_payload = md.payload(chunk.header.start_ticks, metadata_id);
    append_record(&mut body, 0, &md_payload);
    let header = crate::jfr::Header {
        major: 2,
        size: body.len() as u64,
        checkpoint_offset: last_checkpoint.unwrap_or(0) as u64,
        metadata_offset: metadata_at as u64,
        state: 0,
        flags: 1 | if last { 2 } else { 0 },
        ..chunk.header
    }
    .encode();
    body[..HEADER_SIZE].copy_from_slice(&header);
    out.truncate(start);
    out.extend_from_slice(&body);
    Ok(stats)
}

#[allow(clippy::too_many_arguments)]
fn native_stack(
    chunk: &Chunk<'_>,
    profile: &ChunkProfile,
    symbolizer: &mut Symbolizer,
    constants: &mut NewConstants<'_, '_>,
    native_type: &Value,
    sample: &crate::profile::Sample,
    java_trace: Option<&Value>,
) -> NewStack {
    let mut frames = Vec::new();
    let (mut native_frames, mut named) = (0, 0);
    let mut push_native =
        |frames: &mut Vec<Value>, constants: &mut NewConstants<'_, '_>, pc, leaf| {
            let location = profile.locate(symbolizer, pc, leaf);
            // Not `[unknown]`: JMC reads a class name starting with '[' as an array type.
            let library = location
                .library
                .clone()
                .unwrap_or_else(|| Arc::from(UNKNOWN_LIBRARY));
            for f in location.frames.iter() {
                frames.push(native_frame(constants, native_type, &library, f));
                native_frames += 1;
                named += u64::from(f.named);
            }
        };
    for (i, &pc) in sample.native.iter().enumerate() {
        push_native(&mut frames, constants, pc, i == 0);
    }
    // A sample without a Java stack trace (the recorder's Java walk failed: the thread ran
    // Java code below these native frames that no walk could show) is cut short.
    let mut java_truncated = true;
    if let Some(trace) = java_trace {
        if let Some(Value::Struct(fields)) = match trace {
            Value::Ref { class_id, key } => chunk.constant(*class_id, *key),
            v => Some(v),
        } {
            if let Some(class) = chunk.metadata.class_by_name("jdk.types.StackTrace") {
                if let Some(Value::Array(java)) =
                    class.field_index("frames").and_then(|i| fields.get(i))
                {
                    // The native code that called a Java frame back (an upcall) goes between
                    // that frame and the one above it.
                    let mut segments = sample.segments.iter().peekable();
                    for (index, frame) in java.iter().enumerate() {
                        while let Some(segment) = segments.next_if(|s| s.java_index == index) {
                            for &pc in segment.pcs.iter() {
                                push_native(&mut frames, constants, pc, false);
                            }
                            if segment.truncated {
                                frames.push(gap_frame(constants, native_type));
                            }
                        }
                        frames.push(frame.clone());
                    }
                }
                java_truncated = class
                    .field_index("truncated")
                    .and_then(|i| fields.get(i))
                    .and_then(Value::as_bool)
                    .unwrap_or(false);
            }
        }
    }
    let key = constants.add(
        "jdk.types.StackTrace",
        &[
            (
                "truncated",
                Value::Bool(java_truncated || sample.native_truncated),
            ),
            ("frames", Value::Array(frames)),
        ],
    );
    (key, native_frames, named)
}

/// The class of native frames outside every known library.
const UNKNOWN_LIBRARY: &str = "unknown";

/// The frame that stands for native frames between two Java frames that the recorder could not
/// walk (a segment marked truncated).
fn gap_frame(constants: &mut NewConstants<'_, '_>, native_type: &Value) -> Value {
    let method = constants.method(&Arc::from(UNKNOWN_LIBRARY), &Arc::from(NATIVE_GAP));
    let fields = [
        ("method", method),
        ("lineNumber", Value::Int(-1)),
        ("bytecodeIndex", Value::Int(-1)),
        ("type", native_type.clone()),
    ];
    match constants.md.class_by_name("jdk.types.StackFrame") {
        Some(class) => struct_of(class, &fields),
        None => Value::Struct(Vec::new()),
    }
}

fn native_frame(
    constants: &mut NewConstants<'_, '_>,
    native_type: &Value,
    library: &Arc<str>,
    frame: &Frame,
) -> Value {
    // The library is the method's class: a name made of the library and an address says it
    // once (`libz.so.1` `0x4970`, not `libz.so.1` `libz.so.1+0x4970`).
    let name = match frame.name.strip_prefix(library.as_ref()) {
        Some(rest) if !frame.named && rest.starts_with("+0x") => Arc::from(&rest[1..]),
        _ => frame.name.clone(),
    };
    let method = constants.method(library, &name);
    let fields = [
        ("method", method),
        ("lineNumber", Value::Int(frame.line.map_or(-1, i64::from))),
        ("bytecodeIndex", Value::Int(-1)),
        ("type", native_type.clone()),
    ];
    match constants.md.class_by_name("jdk.types.StackFrame") {
        Some(class) => struct_of(class, &fields),
        None => Value::Struct(Vec::new()),
    }
}

/// An instance of `class` with the named `fields`, in the class's field order; fields not
/// named get their zero value (null, 0, false).
fn struct_of(class: &crate::jfr::metadata::Class, fields: &[(&str, Value)]) -> Value {
    Value::Struct(
        class
            .fields
            .iter()
            .map(|f| {
                fields
                    .iter()
                    .find(|(n, _)| *n == f.name)
                    .map_or(Value::Struct(Vec::new()), |(_, v)| v.clone())
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests;
