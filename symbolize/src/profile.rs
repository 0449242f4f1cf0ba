//! The CPU samples and libraries of one chunk, read through its metadata by field name, so
//! that files from the recorder, from the JDK, or from other writers with other field orders
//! read alike.

use std::sync::Arc;

use rustc_hash::FxHashMap;

use crate::jfr::cursor::JString;
use crate::jfr::metadata::{Class, Element};
use crate::jfr::value::decode_instance;
use crate::jfr::{Chunk, ReadError, Record, Value};
use crate::resolve::{Frame, LibraryRef, Location, Symbolizer};

/// A Java frame as recorded.
#[derive(Debug, Clone, PartialEq)]
pub struct JavaFrame {
    /// Class name with dots (`java.lang.String`), `None` if unknown.
    pub class: Option<Arc<str>>,
    /// Method name.
    pub method: Option<Arc<str>>,
    /// Method descriptor (`(Ljava/lang/String;I)V`), when recorded: it tells overloads apart.
    pub descriptor: Option<Arc<str>>,
    /// Line number, when recorded (the JDK writes -1 or 0 for unknown).
    pub line: Option<i64>,
    /// Frame type description ("Interpreted", "JIT compiled", "Inlined", "Native", ...).
    pub frame_type: Option<Arc<str>>,
}

/// Native frames between two Java frames of a sample (jfr-native's `segments` of a
/// `jdk.NativeStackTrace`): the
/// native code that called back into Java.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Segment {
    /// Index into [`Sample::java`] of the Java frame these native frames were called by: they
    /// sit between Java frames `java_index - 1` and `java_index`.
    pub java_index: usize,
    /// Native PCs (return addresses), innermost first.
    pub pcs: Arc<[u64]>,
    /// Native frames are missing after these.
    pub truncated: bool,
}

/// What tells a thread apart beyond its name, as its `java.lang.Thread` constant says; each
/// `None` when the file does not say.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ThreadIds {
    /// `javaThreadId`: `Thread.threadId()` (0 or absent for a thread that never ran Java).
    pub java: Option<i64>,
    /// `osThreadId`: the kernel's thread id (for a virtual thread, the carrier's when sampled).
    pub os: Option<i64>,
    /// `virtual` (JDK 19 and later): a virtual thread.
    pub is_virtual: Option<bool>,
}

/// A `jdk.NativeStackTrace` as read: pcs, truncated, segments.
type NativeStack = (Arc<[u64]>, bool, Arc<[Segment]>);

/// The segments of a sample with `java_frames` Java frames: one whose index is not that of a
/// Java frame of the sample could not be placed, and is dropped.
fn placed(segments: Arc<[Segment]>, java_frames: usize) -> Arc<[Segment]> {
    if segments.iter().all(|s| s.java_index < java_frames) {
        return segments;
    }
    segments
        .iter()
        .filter(|s| s.java_index < java_frames)
        .cloned()
        .collect()
}

/// One `jdk.CPUTimeSample` (or `jdk.ExecutionSample`).
#[derive(Debug, Clone)]
pub struct Sample {
    /// Chunk-relative offset of the event record.
    pub record_offset: usize,
    /// `startTime` in ticks.
    pub start_ticks: i64,
    /// Thread name (`javaName`, else `osName`).
    pub thread: Option<Arc<str>>,
    /// The thread's ids and whether it is virtual.
    pub thread_ids: ThreadIds,
    /// `samplingPeriod` in nanoseconds: the CPU time this sample stands for.
    pub weight_ns: u64,
    /// `failed`: no Java stack could be taken.
    pub failed: bool,
    /// Java frames, top first.
    pub java: Arc<[JavaFrame]>,
    /// `stackTrace.truncated`: the Java stack's outermost frames are missing.
    pub java_truncated: bool,
    /// Native PCs, leaf first.
    pub native: Arc<[u64]>,
    /// `nativeStackTrace.truncated`.
    pub native_truncated: bool,
    /// The native stack's `segments`: native frames between Java frames, by increasing
    /// `java_index`.
    pub segments: Arc<[Segment]>,
}

/// One `jdk.CPUTimeSamplesLost`: samples that were due and not recorded.
#[derive(Debug, Clone)]
pub struct Lost {
    /// `startTime` in ticks.
    pub start_ticks: i64,
    /// Thread name, when the event names one.
    pub thread: Option<Arc<str>>,
    /// The thread's ids, when the event names one.
    pub thread_ids: ThreadIds,
    /// `lostSamples`.
    pub samples: u64,
    /// The CPU time they stood for, ns: jfr-native's `lostCpuTime`; `None` when the writer did
    /// not say (the JDK's own events), as it cannot be known then.
    pub cpu_ns: Option<u64>,
    /// `reason` (a jfr-native extension), when present.
    pub reason: Option<Arc<str>>,
}

/// Samples and libraries of one chunk.
#[derive(Debug, Default)]
pub struct ChunkProfile {
    /// Every `jdk.NativeLibrary`, sorted by base address.
    pub libraries: Vec<LibraryRef>,
    /// Every `jfrnative.JvmCode` (code the JVM generated: stubs, adapters), sorted by start.
    pub jvm_code: Vec<JvmCodeRef>,
    /// Every `jdk.CPUTimeSample`, in file order.
    pub samples: Vec<Sample>,
    /// Every `jdk.ExecutionSample` (the JDK's own sampler; no CPU time, no native frames:
    /// `weight_ns` is 0), in file order.
    pub execution_samples: Vec<Sample>,
    /// Every `jdk.CPUTimeSamplesLost`, in file order.
    pub lost: Vec<Lost>,
    /// Whether `jdk.CPUTimeSample` has a `nativeStackTrace` field here (jfr-native's events;
    /// the JDK's own have none).
    pub native_field: bool,
    /// The sampling interval of `jdk.CPUTimeSample` that the chunk's `jdk.ActiveSetting`
    /// events state, ns: jfr-native's `interval` option (written when it was given), or the
    /// JDK's `throttle` when it is a time (`10 ms`; a rate such as `500/s` is no interval).
    /// `None` when the chunk does not say.
    pub interval_ns: Option<u64>,
}

impl ChunkProfile {
    /// The library holding `pc`.
    pub fn library_of(&self, pc: u64) -> Option<&LibraryRef> {
        let i = self.libraries.partition_point(|l| l.base <= pc);
        let lib = self.libraries.get(i.checked_sub(1)?)?;
        (pc < lib.top).then_some(lib)
    }

    /// The JVM-generated code holding `pc`, as the recording names it: the innermost range
    /// (a blob's range may hold the stubs a chunk names apart).
    pub fn jvm_code_of(&self, pc: u64) -> Option<&JvmCodeRef> {
        let i = self.jvm_code.partition_point(|c| c.start <= pc);
        self.jvm_code.get(..i)?.iter().rev().find(|c| pc < c.end)
    }

    /// Resolves native `pc` (`leaf`: the interrupted pc): by the JVM's own name where the
    /// recording names the code there (a stub), else through its library.
    pub fn locate(&self, symbolizer: &mut Symbolizer, pc: u64, leaf: bool) -> Location {
        match self.jvm_code_of(pc) {
            Some(code) => Location {
                library: Some(Arc::from(JVM_CODE_LIBRARY)),
                address: None,
                frames: Arc::from([Frame {
                    name: code.name.clone(),
                    named: true,
                    file: None,
                    line: None,
                    inlined: false,
                }]),
            },
            None => symbolizer.resolve(self.library_of(pc), pc, leaf),
        }
    }
}

/// A range of code the JVM generated at run time, with its name (`jfrnative.JvmCode`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JvmCodeRef {
    /// The JVM's name (`StubRoutines::jlong_disjoint_arraycopy`, `vtable stub`).
    pub name: Arc<str>,
    /// Its first byte.
    pub start: u64,
    /// One past its last byte.
    pub end: u64,
}

/// What stands for the library of JVM-generated code in every view (no file holds it). Not
/// `[...]`: JMC reads a class name starting with '[' as an array type.
pub const JVM_CODE_LIBRARY: &str = "jvm-generated";

/// What the name of a thread that is not a Java thread ends with in reports, flame graphs and
/// exports (`threads=all`: the JVM's GC, JIT compiler and VM threads, native threads).
pub const NOT_JAVA_MARK: &str = " [not Java]";

/// The name our `jdk.NativeLibrary` events take in a merged file whose JDK chunks have their
/// own: the JDK's list every library under the JDK's declaration (JMC's Native Libraries
/// page); ours add the build-id and file offset that the symbolizer resolves PCs with.
pub const OUR_LIBRARY_EVENT: &str = "jfrnative.NativeLibrary";

/// Reads the samples and libraries of `chunk`.
pub fn read_chunk(chunk: &Chunk<'_>) -> Result<ChunkProfile, ReadError> {
    let md = &chunk.metadata;
    let sample_class = md.class_by_name("jdk.CPUTimeSample");
    // Ours, renamed in a file merged with the JDK's own recording, else the JDK's name.
    let library_class = md
        .class_by_name(OUR_LIBRARY_EVENT)
        .or_else(|| md.class_by_name("jdk.NativeLibrary"));
    let lost_class = md.class_by_name("jdk.CPUTimeSamplesLost");
    let jvm_code_class = md.class_by_name("jfrnative.JvmCode");
    let execution_class = md.class_by_name("jdk.ExecutionSample");
    // Ours, renamed in a file merged with a JDK that declares it otherwise (JDK 11), else the
    // JDK's name.
    let setting_class = md
        .class_by_name("jfrnative.ActiveSetting")
        .or_else(|| md.class_by_name("jdk.ActiveSetting"));
    let view = View::new(chunk);
    let mut profile = ChunkProfile {
        native_field: sample_class.is_some_and(|c| c.field_index("nativeStackTrace").is_some()),
        ..ChunkProfile::default()
    };
    let period_unit = sample_class
        .and_then(|c| timespan_unit(&md.root, &c.name, "samplingPeriod"))
        .unwrap_or_else(|| "TICKS".to_string());
    let lost_cpu_unit = lost_class
        .and_then(|c| timespan_unit(&md.root, &c.name, "lostCpuTime"))
        .unwrap_or_else(|| "TICKS".to_string());
    let mut java_stacks: FxHashMap<u64, (Arc<[JavaFrame]>, bool)> = FxHashMap::default();
    let mut native_stacks: FxHashMap<u64, NativeStack> = FxHashMap::default();
    for record in chunk.records() {
        let record = record?;
        if let Some(class) = library_class.filter(|c| c.id == record.type_id) {
            let fields = view.event_fields(&record, class)?;
            let get = |name: &str| class.field_index(name).and_then(|i| fields.get(i));
            let int = |name: &str| get(name).and_then(Value::as_i64);
            let (Some(path), Some(base), Some(top)) = (
                get("name").and_then(|v| view.string(v)),
                int("baseAddress"),
                int("topAddress"),
            ) else {
                continue;
            };
            profile.libraries.push(LibraryRef {
                path: path.to_string(),
                base: base as u64,
                top: top as u64,
                build_id: get("buildId")
                    .and_then(|v| view.string(v))
                    .map(|s| s.to_string())
                    .filter(|s| !s.is_empty()),
                file_offset: int("fileOffset").unwrap_or(0) as u64,
            });
        } else if let Some(class) = jvm_code_class.filter(|c| c.id == record.type_id) {
            let fields = view.event_fields(&record, class)?;
            let get = |name: &str| class.field_index(name).and_then(|i| fields.get(i));
            let int = |name: &str| get(name).and_then(Value::as_i64);
            if let (Some(name), Some(start), Some(end)) = (
                get("name").and_then(|v| view.string(v)),
                int("startAddress"),
                int("endAddress"),
            ) {
                profile.jvm_code.push(JvmCodeRef {
                    name,
                    start: start as u64,
                    end: end as u64,
                });
            }
        } else if let Some(class) = setting_class.filter(|c| c.id == record.type_id) {
            let fields = view.event_fields(&record, class)?;
            let get = |name: &str| class.field_index(name).and_then(|i| fields.get(i));
            let for_cpu_samples = sample_class
                .is_some_and(|c| get("id").and_then(Value::as_i64) == i64::try_from(c.id).ok());
            let name = get("name").and_then(|v| view.string(v));
            if for_cpu_samples && matches!(name.as_deref(), Some("interval" | "throttle")) {
                if let Some(ns) = get("value")
                    .and_then(|v| view.string(v))
                    .and_then(|v| duration_ns(&v))
                {
                    profile.interval_ns = Some(ns);
                }
            }
        } else if let Some(class) = lost_class.filter(|c| c.id == record.type_id) {
            let fields = view.event_fields(&record, class)?;
            let get = |name: &str| class.field_index(name).and_then(|i| fields.get(i));
            let lost = get("lostSamples").and_then(Value::as_i64).unwrap_or(0);
            profile.lost.push(Lost {
                start_ticks: get("startTime").and_then(Value::as_i64).unwrap_or(0),
                thread: get("eventThread").and_then(|v| view.thread_name(v)),
                thread_ids: get("eventThread")
                    .map_or_else(ThreadIds::default, |v| view.thread_ids(v)),
                samples: lost.max(0) as u64,
                cpu_ns: get("lostCpuTime")
                    .and_then(Value::as_i64)
                    .map(|v| to_nanos(v, &lost_cpu_unit, chunk.header.ticks_per_second)),
                reason: get("reason")
                    .and_then(|v| view.string(v))
                    .filter(|r| !r.is_empty()),
            });
        } else if let Some((class, execution)) = sample_class
            .filter(|c| c.id == record.type_id)
            .map(|c| (c, false))
            .or_else(|| {
                execution_class
                    .filter(|c| c.id == record.type_id)
                    .map(|c| (c, true))
            })
        {
            let fields = view.event_fields(&record, class)?;
            let get = |name: &str| class.field_index(name).and_then(|i| fields.get(i));
            let weight_ns = if execution {
                0
            } else {
                let period = get("samplingPeriod").and_then(Value::as_i64).unwrap_or(0);
                to_nanos(period, &period_unit, chunk.header.ticks_per_second)
            };
            let (java, java_truncated) = match get("stackTrace") {
                Some(Value::Ref { key, .. }) => java_stacks
                    .entry(*key)
                    .or_insert_with(|| view.java_stack(get("stackTrace")))
                    .clone(),
                other => view.java_stack(other),
            };
            let (native, native_truncated, segments) = match get("nativeStackTrace") {
                Some(Value::Ref { key, .. }) => native_stacks
                    .entry(*key)
                    .or_insert_with(|| view.native_stack(get("nativeStackTrace")))
                    .clone(),
                other => view.native_stack(other),
            };
            let segments = placed(segments, java.len());
            let thread_value = get("eventThread").or_else(|| get("sampledThread"));
            let sample = Sample {
                record_offset: record.offset,
                start_ticks: get("startTime").and_then(Value::as_i64).unwrap_or(0),
                thread: thread_value.and_then(|v| view.thread_name(v)),
                thread_ids: thread_value.map_or_else(ThreadIds::default, |v| view.thread_ids(v)),
                weight_ns,
                failed: get("failed").and_then(Value::as_bool).unwrap_or(false),
                java,
                java_truncated,
                native,
                native_truncated,
                segments,
            };
            if execution {
                profile.execution_samples.push(sample);
            } else {
                profile.samples.push(sample);
            }
        }
    }
    profile.libraries.sort_by_key(|l| l.base);
    profile.jvm_code.sort_by_key(|c| c.start);
    Ok(profile)
}

/// A duration as the agent's options (`10ms`, `500us`) and the JDK's settings (`10 ms`, `1 s`)
/// write it, in ns; `None` for anything else (a rate, `off`).
fn duration_ns(text: &str) -> Option<u64> {
    let text = text.trim();
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let scale = match unit.trim() {
        "ns" => 1.0,
        "us" => 1e3,
        "ms" => 1e6,
        "s" => 1e9,
        _ => return None,
    };
    let ns = number.parse::<f64>().ok()? * scale;
    (ns >= 1.0 && ns < u64::MAX as f64).then_some(ns.round() as u64)
}

fn to_nanos(value: i64, unit: &str, ticks_per_second: i64) -> u64 {
    let v = value.max(0) as u128;
    let ns = match unit {
        "NANOSECONDS" => v,
        "MICROSECONDS" => v * 1_000,
        "MILLISECONDS" => v * 1_000_000,
        "SECONDS" => v * 1_000_000_000,
        _ if ticks_per_second > 0 => v * 1_000_000_000 / ticks_per_second as u128,
        _ => v,
    };
    ns.min(u64::MAX as u128) as u64
}

/// The `@Timespan` value of field `field` of class `class`, from the metadata tree.
fn timespan_unit(root: &Element, class: &str, field: &str) -> Option<String> {
    let md = root.children.iter().find(|e| e.name == "metadata")?;
    let timespan_id = md
        .children
        .iter()
        .find(|c| c.name == "class" && c.attr("name") == Some("jdk.jfr.Timespan"))?
        .attr("id")?;
    let class = md
        .children
        .iter()
        .find(|c| c.name == "class" && c.attr("name") == Some(class))?;
    let field = class
        .children
        .iter()
        .find(|f| f.name == "field" && f.attr("name") == Some(field))?;
    field
        .children
        .iter()
        .find(|a| a.name == "annotation" && a.attr("class") == Some(timespan_id))?
        .attr("value")
        .map(str::to_string)
}

/// Reads values of one chunk by field name, following constant-pool references.
pub struct View<'c, 'a> {
    chunk: &'c Chunk<'a>,
}

impl<'c, 'a> View<'c, 'a> {
    /// A view of `chunk`.
    pub fn new(chunk: &'c Chunk<'a>) -> View<'c, 'a> {
        View { chunk }
    }

    /// The fields of an event record of class `class`.
    pub fn event_fields(
        &self,
        record: &Record<'_>,
        class: &Class,
    ) -> Result<Vec<Value>, ReadError> {
        let mut c = record.payload(self.chunk.offset);
        match decode_instance(&mut c, &self.chunk.metadata, class.id, 0)? {
            Value::Struct(fields) => Ok(fields),
            _ => Err(c.error("an event that is not a struct")),
        }
    }

    /// `value`, or the constant it refers to, with the class it is an instance of.
    fn deref<'v>(&'v self, value: &'v Value) -> Option<&'v Value>
    where
        'c: 'v,
    {
        match value {
            Value::Ref { class_id, key } => self.chunk.constant(*class_id, *key),
            v => Some(v),
        }
    }

    fn field_of<'v>(&'v self, value: &'v Value, class_name: &str, field: &str) -> Option<&'v Value>
    where
        'c: 'v,
    {
        let class = self.chunk.metadata.class_by_name(class_name)?;
        let index = class.field_index(field)?;
        match self.deref(value)? {
            Value::Struct(fields) => fields.get(index),
            _ => None,
        }
    }

    /// A string: inline, from the string pool, or a one-field struct such as a symbol.
    pub fn string(&self, value: &Value) -> Option<Arc<str>> {
        match self.deref(value)? {
            Value::Str(JString::Text(s)) => Some(Arc::from(s.as_str())),
            Value::Str(JString::PoolRef(key)) => {
                let id = self.chunk.metadata.class_by_name("java.lang.String")?.id;
                match self.chunk.constant(id, *key)? {
                    Value::Str(JString::Text(s)) => Some(Arc::from(s.as_str())),
                    _ => None,
                }
            }
            Value::Struct(fields) if fields.len() == 1 => self.string(&fields[0]),
            _ => None,
        }
    }

    /// The thread's Java name, else its OS name; a thread that is not a Java thread (the JVM's
    /// own, a native thread: no Java name, Java thread id 0, not virtual) is marked
    /// [`NOT_JAVA_MARK`] in every view.
    fn thread_name(&self, thread: &Value) -> Option<Arc<str>> {
        let field = |f: &str| self.field_of(thread, "java.lang.Thread", f);
        if let Some(name) = field("javaName").and_then(|v| self.string(v)) {
            return Some(name);
        }
        let os = self.string(field("osName")?)?;
        let java_id = field("javaThreadId").and_then(Value::as_i64).unwrap_or(0);
        let is_virtual = field("virtual").and_then(Value::as_bool).unwrap_or(false);
        if java_id == 0 && !is_virtual {
            return Some(format!("{os}{NOT_JAVA_MARK}").into());
        }
        Some(os)
    }

    fn thread_ids(&self, thread: &Value) -> ThreadIds {
        let field = |name: &str| self.field_of(thread, "java.lang.Thread", name);
        ThreadIds {
            java: field("javaThreadId").and_then(Value::as_i64),
            os: field("osThreadId").and_then(Value::as_i64),
            is_virtual: field("virtual").and_then(Value::as_bool),
        }
    }

    fn java_stack(&self, stack: Option<&Value>) -> (Arc<[JavaFrame]>, bool) {
        let truncated = stack
            .and_then(|s| self.field_of(s, "jdk.types.StackTrace", "truncated"))
            .and_then(Value::as_bool)
            .unwrap_or(false);
        let frames = stack.and_then(|s| self.field_of(s, "jdk.types.StackTrace", "frames"));
        let Some(Value::Array(frames)) = frames else {
            return (Arc::from([]), truncated);
        };
        (
            frames.iter().map(|f| self.java_frame(f)).collect(),
            truncated,
        )
    }

    fn java_frame(&self, frame: &Value) -> JavaFrame {
        let method = self.field_of(frame, "jdk.types.StackFrame", "method");
        let class = method
            .and_then(|m| self.field_of(m, "jdk.types.Method", "type"))
            .and_then(|c| self.field_of(c, "java.lang.Class", "name"))
            .and_then(|n| self.string(n))
            .map(|n| Arc::from(n.replace('/', ".").as_str()));
        JavaFrame {
            class,
            method: method
                .and_then(|m| self.field_of(m, "jdk.types.Method", "name"))
                .and_then(|n| self.string(n)),
            descriptor: method
                .and_then(|m| self.field_of(m, "jdk.types.Method", "descriptor"))
                .and_then(|n| self.string(n)),
            line: self
                .field_of(frame, "jdk.types.StackFrame", "lineNumber")
                .and_then(Value::as_i64)
                .filter(|&l| l > 0),
            frame_type: self
                .field_of(frame, "jdk.types.StackFrame", "type")
                .and_then(|t| self.string(t)),
        }
    }

    fn native_stack(&self, stack: Option<&Value>) -> NativeStack {
        let Some(stack) = stack else {
            return (Arc::from([]), false, Arc::from([]));
        };
        let truncated = self
            .field_of(stack, "jdk.NativeStackTrace", "truncated")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        let pcs = self.pcs(self.field_of(stack, "jdk.NativeStackTrace", "frames"));
        let segments = match self.field_of(stack, "jdk.NativeStackTrace", "segments") {
            Some(Value::Array(items)) => self.segments(items),
            _ => Arc::from([]),
        };
        (pcs, truncated, segments)
    }

    /// The pcs of a `jdk.NativeStackFrame` array.
    fn pcs(&self, frames: Option<&Value>) -> Arc<[u64]> {
        let Some(Value::Array(frames)) = frames else {
            return Arc::from([]);
        };
        frames
            .iter()
            .filter_map(|f| {
                self.field_of(f, "jdk.NativeStackFrame", "pc")
                    .and_then(Value::as_i64)
            })
            .map(|pc| pc as u64)
            .collect()
    }

    /// A native stack's `segments` (jfr-native's `jfrnative.NativeSegment`s), by increasing
    /// Java frame index.
    fn segments(&self, items: &[Value]) -> Arc<[Segment]> {
        const CLASS: &str = "jfrnative.NativeSegment";
        let mut out: Vec<Segment> = items
            .iter()
            .filter_map(|item| {
                let index = self
                    .field_of(item, CLASS, "javaFrameIndex")
                    .and_then(Value::as_i64)
                    .and_then(|i| usize::try_from(i).ok())?;
                Some(Segment {
                    java_index: index,
                    pcs: self.pcs(self.field_of(item, CLASS, "frames")),
                    truncated: self
                        .field_of(item, CLASS, "truncated")
                        .and_then(Value::as_bool)
                        .unwrap_or(false),
                })
            })
            .collect();
        out.sort_by_key(|s| s.java_index);
        Arc::from(out)
    }
}

#[cfg(test)]
mod tests {
    use super::duration_ns;
    use super::{ChunkProfile, JvmCodeRef};
    use std::sync::Arc;

    #[test]
    fn jvm_code_is_found_in_the_innermost_named_range() {
        let code = |name: &str, start: u64, end: u64| JvmCodeRef {
            name: Arc::from(name),
            start,
            end,
        };
        let profile = ChunkProfile {
            jvm_code: vec![
                code("StubRoutines (1)", 0x1000, 0x9000),
                code("StubRoutines::jbyte_arraycopy", 0x2000, 0x2100),
                code("vtable stub", 0xa000, 0xa020),
            ],
            ..ChunkProfile::default()
        };
        let name = |pc| profile.jvm_code_of(pc).map(|c| &*c.name);
        assert_eq!(name(0x2050), Some("StubRoutines::jbyte_arraycopy"));
        assert_eq!(
            name(0x2100),
            Some("StubRoutines (1)"),
            "past the stub, in its blob"
        );
        assert_eq!(name(0xa01f), Some("vtable stub"));
        assert_eq!(name(0x9500), None);
        assert_eq!(name(0xfff), None);
    }

    #[test]
    fn intervals_read_as_the_agent_and_the_jdk_write_them() {
        assert_eq!(duration_ns("10ms"), Some(10_000_000));
        assert_eq!(duration_ns("500us"), Some(500_000));
        assert_eq!(duration_ns("10 ms"), Some(10_000_000));
        assert_eq!(duration_ns("1 s"), Some(1_000_000_000));
        assert_eq!(duration_ns("0.5ms"), Some(500_000));
        assert_eq!(duration_ns("100ns"), Some(100));
        // A rate, or no duration at all, is no interval.
        assert_eq!(duration_ns("500/s"), None);
        assert_eq!(duration_ns("off"), None);
        assert_eq!(duration_ns("10"), None);
        assert_eq!(duration_ns("0ms"), None);
    }
}
