//! Samples folded into weighted stacks: the data behind the collapsed, flame graph, text and
//! JSON views.

use std::collections::BTreeSet;
use std::sync::Arc;

use indexmap::IndexSet;
use rustc_hash::{FxBuildHasher, FxHashMap, FxHashSet};

use super::located::{Cut, Located, Origin};
pub use super::weight::Weight;
use crate::profile::{ChunkProfile, JavaFrame, Lost, Sample};
use crate::resolve::{Frame, Symbolizer};

/// What kind of code a frame is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    /// Native code, a named function (C, C++, Rust, ...) outside the JVM.
    Native,
    /// Native code inlined into the next frame.
    NativeInlined,
    /// HotSpot's own code (`libjvm.so`), or a frame recorded as "C++".
    Vm,
    /// Code the kernel maps or runs (`[vdso]`), or a frame recorded as "Kernel".
    Kernel,
    /// Native code without a function name (`lib+0x1234`, a nearest exported symbol, or
    /// outside every library).
    Unsymbolized,
    /// Java, interpreted.
    Interpreted,
    /// Java, JIT compiled.
    Compiled,
    /// Java, inlined by the JIT.
    Inlined,
    /// A Java `native` method (the JNI boundary).
    JavaNative,
    /// A Java frame whose type was not recorded.
    Java,
    /// Not code: a frame that says why a stack is incomplete (`[no Java stack]`,
    /// `[lost samples]`, ...), or a thread at the root of its stacks.
    Placeholder,
}

impl Kind {
    /// Every kind, in the order legends list them.
    pub const ALL: [Kind; 11] = [
        Kind::Compiled,
        Kind::Inlined,
        Kind::Interpreted,
        Kind::JavaNative,
        Kind::Java,
        Kind::Native,
        Kind::NativeInlined,
        Kind::Vm,
        Kind::Kernel,
        Kind::Unsymbolized,
        Kind::Placeholder,
    ];

    fn of_java(frame: &JavaFrame) -> Kind {
        match frame.frame_type.as_deref() {
            Some("Interpreted") => Kind::Interpreted,
            Some("JIT compiled") => Kind::Compiled,
            Some("Inlined") => Kind::Inlined,
            Some("Native") => Kind::JavaNative,
            Some("C++") => Kind::Vm,
            Some("Kernel") => Kind::Kernel,
            _ => Kind::Java,
        }
    }

    fn of_native(library: Option<&str>, frame: &Frame) -> Kind {
        match library {
            Some(l) if l.starts_with('[') => Kind::Kernel,
            Some(crate::profile::JVM_CODE_LIBRARY) => Kind::Vm,
            _ if !frame.named => Kind::Unsymbolized,
            Some(l) if l.starts_with("libjvm.") => Kind::Vm,
            _ if frame.inlined => Kind::NativeInlined,
            _ => Kind::Native,
        }
    }

    /// Whether the frame is native code.
    pub fn is_native(self) -> bool {
        matches!(
            self,
            Kind::Native | Kind::NativeInlined | Kind::Vm | Kind::Kernel | Kind::Unsymbolized
        )
    }

    /// Whether the frame is a Java method.
    pub fn is_java(self) -> bool {
        matches!(
            self,
            Kind::Interpreted | Kind::Compiled | Kind::Inlined | Kind::JavaNative | Kind::Java
        )
    }

    /// A short label: "native", "jit", "inlined", "interpreted", ...
    pub fn label(self) -> &'static str {
        match self {
            Kind::Native => "native",
            Kind::NativeInlined => "native-inlined",
            Kind::Vm => "libjvm",
            Kind::Kernel => "kernel",
            Kind::Unsymbolized => "unsymbolized",
            Kind::Interpreted => "interpreted",
            Kind::Compiled => "jit",
            Kind::Inlined => "inlined",
            Kind::JavaNative => "java-native",
            Kind::Java => "java",
            Kind::Placeholder => "placeholder",
        }
    }

    /// What a legend says about the kind.
    pub fn description(self) -> &'static str {
        match self {
            Kind::Native => "native (C/C++/Rust)",
            Kind::NativeInlined => "native, inlined",
            Kind::Vm => "JVM (libjvm)",
            Kind::Kernel => "kernel / vdso",
            Kind::Unsymbolized => "native, no symbol",
            Kind::Interpreted => "Java, interpreted",
            Kind::Compiled => "Java, JIT compiled",
            Kind::Inlined => "Java, inlined",
            Kind::JavaNative => "Java native method",
            Kind::Java => "Java, type unknown",
            Kind::Placeholder => "missing frames / lost",
        }
    }
}

/// One distinct frame.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct FrameKey {
    /// Function (`level3`, `lib+0x1234`), Java method (`com.example.Main.run`), or a
    /// placeholder (`[no Java stack]`).
    pub name: Arc<str>,
    /// Native library file name, for native frames.
    pub library: Option<Arc<str>>,
    /// Source file, for native frames with DWARF.
    pub file: Option<Arc<str>>,
    /// Source line: DWARF's for native frames, the recorded one for Java frames.
    pub line: Option<u32>,
    /// A Java method's descriptor (`(Ljava/lang/String;I)V`): overloads are different frames.
    pub descriptor: Option<Arc<str>>,
    /// What kind of code.
    pub kind: Kind,
}

impl FrameKey {
    fn placeholder(name: &str) -> FrameKey {
        FrameKey {
            name: Arc::from(name),
            library: None,
            file: None,
            line: None,
            descriptor: None,
            kind: Kind::Placeholder,
        }
    }

    /// `name`, with the parameters when `overloaded` holds it: `Main.compile(String[], Context)`.
    pub fn shown_name(&self, overloaded: &Names) -> String {
        match &self.descriptor {
            Some(d) if overloaded.contains(&self.name) => {
                format!("{}{}", self.name, parameters(d))
            }
            _ => self.name.to_string(),
        }
    }
}

/// A set of frame names (the overloaded Java methods of [`Aggregate::overloaded`]).
pub type Names = FxHashSet<Arc<str>>;

/// Placeholder: the Java stack could not be taken (`failed`).
pub const NO_JAVA_STACK: &str = "[no Java stack]";
/// Placeholder: the thread ran no Java method (not failed; an empty Java stack).
pub const NO_JAVA_FRAMES: &str = "[no Java frames]";
/// Placeholder: the native walk stopped before it reached the Java frames.
pub const NATIVE_TRUNCATED: &str = "[native stack truncated]";
/// Placeholder: native frames between two Java frames are missing (the walk of the native code
/// that called back into Java stopped before it reached the Java caller).
pub const NATIVE_GAP: &str = "[native frames missing]";
/// Placeholder: the native walk was cut short before its first frame.
pub const NATIVE_UNKNOWN: &str = "[native frames unknown]";
/// Placeholder: the Java stack's outermost frames are missing.
pub const JAVA_TRUNCATED: &str = "[Java stack truncated]";
/// Placeholder: samples the recorder lost (followed by `: reason` when it says why).
pub const LOST_SAMPLES: &str = "[lost samples]";

/// Which events a profile was made from.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// `jdk.CPUTimeSample`: weighed by CPU time (`samplingPeriod`).
    #[default]
    CpuTime,
    /// `jdk.ExecutionSample` (the JDK's own sampler, its default `profile` settings): no CPU
    /// time per sample and no native frames; weighed by sample count only.
    Execution,
}

/// Which samples to keep and how to fold them.
#[derive(Debug, Default, Clone)]
pub struct Filter {
    /// Keep only threads whose name contains one of these.
    pub threads: Vec<String>,
    /// Put each thread's name at the root of its stacks.
    pub per_thread: bool,
    /// Keep samples at or after this many ns since the recording's first chunk start.
    pub from_ns: Option<u64>,
    /// Keep samples before this many ns since the recording's first chunk start.
    pub to_ns: Option<u64>,
    /// Also keep the samples by thread and by location ([`Aggregate::located`]: program
    /// counters, libraries, inline chains), for the pprof export.
    pub locations: bool,
    /// Also keep, with the samples by location, each sample's time and weight and its thread's
    /// ids, for the OTLP export (implies `locations`).
    pub events: bool,
}

/// Every kept sample folded by (thread, stack).
#[derive(Debug, Default)]
pub struct Aggregate {
    /// Which events the profile was made from.
    pub source: Source,
    /// Distinct frames; stacks hold their indexes.
    pub frames: IndexSet<FrameKey, FxBuildHasher>,
    /// Stack (leaf first) → weight. With `per_thread`, the thread is the last (root) frame.
    /// Every sample is in one stack, lost samples included: their sum is [`Aggregate::total`].
    pub stacks: FxHashMap<Vec<u32>, Weight>,
    /// Per thread name (lost samples without a thread under `[unknown thread]`).
    pub threads: FxHashMap<Arc<str>, Weight>,
    /// Everything: recorded samples and lost ones.
    pub total: Weight,
    /// Recorded samples.
    pub recorded: Weight,
    /// Lost samples: their count, and the CPU time the recorder says they stood for.
    pub lost: Weight,
    /// Lost samples whose CPU time the file does not give (the JDK's own events): counted in
    /// `lost.samples` with no CPU time.
    pub lost_cpu_unknown: u64,
    /// Samples whose Java stack was not taken (`failed`).
    pub failed: Weight,
    /// Samples with at least one native frame.
    pub with_native: Weight,
    /// Samples with native frames between Java frames (native code that called back into
    /// Java: JNI and FFM upcalls).
    pub with_segments: Weight,
    /// Samples with native frames whose native walk stopped before the Java frames.
    pub native_truncated: Weight,
    /// Samples whose native walk was cut short before its first frame: no native frames.
    pub native_unknown: Weight,
    /// Samples whose Java stack lacks its outermost frames.
    pub java_truncated: Weight,
    /// Chunks whose CPU samples can carry native stacks (a `nativeStackTrace` field); none in
    /// a file the JDK wrote itself.
    pub chunks_with_native_field: u64,
    /// The samples by thread and by location, when [`Filter::locations`] asked for them.
    pub located: Option<Located>,
    /// The sampling intervals the chunks' settings state for `jdk.CPUTimeSample`, ns (see
    /// [`ChunkProfile::interval_ns`]): one value when it is known, none when no chunk says.
    pub intervals_ns: BTreeSet<u64>,
    /// The time the kept samples come from, ns since the epoch: from the first chunk's start to
    /// the last chunk's end, cut to the filter's window (set by [`crate::driver::run`]).
    pub span_nanos: Option<(i64, i64)>,
}

/// The parameter list of a method descriptor, in source form: `(Ljava/lang/String;[II)V` →
/// `(String, int[], int)`. A malformed descriptor is shown as it is.
pub fn parameters(descriptor: &str) -> String {
    let Some(params) = descriptor
        .strip_prefix('(')
        .and_then(|d| d.split_once(')'))
        .map(|(p, _)| p)
    else {
        return descriptor.to_string();
    };
    let mut out = Vec::new();
    let mut chars = params.chars();
    let mut dims = 0;
    while let Some(c) = chars.next() {
        let base = match c {
            '[' => {
                dims += 1;
                continue;
            }
            'B' => "byte".to_string(),
            'C' => "char".to_string(),
            'D' => "double".to_string(),
            'F' => "float".to_string(),
            'I' => "int".to_string(),
            'J' => "long".to_string(),
            'S' => "short".to_string(),
            'Z' => "boolean".to_string(),
            'L' => {
                let class: String = chars.by_ref().take_while(|&c| c != ';').collect();
                let simple = class.rsplit(['/', '.']).next().unwrap_or(&class);
                simple.replace('$', ".")
            }
            _ => return descriptor.to_string(),
        };
        out.push(format!("{base}{}", "[]".repeat(dims)));
        dims = 0;
    }
    format!("({})", out.join(", "))
}

impl Aggregate {
    /// The names of Java methods that have more than one descriptor among the frames: they are
    /// shown with their parameters ([`FrameKey::shown_name`]).
    pub fn overloaded(&self) -> Names {
        let mut first: FxHashMap<&Arc<str>, &Arc<str>> = FxHashMap::default();
        let mut out = FxHashSet::default();
        for f in self.frames.iter() {
            if let Some(d) = &f.descriptor {
                if first.entry(&f.name).or_insert(d) != &d {
                    out.insert(f.name.clone());
                }
            }
        }
        out
    }

    /// What a weight counts in this profile: its CPU time, or its samples for a profile of
    /// execution samples (which carry no CPU time).
    pub fn measure(&self, w: &Weight) -> u64 {
        match self.source {
            Source::CpuTime => w.cpu_ns,
            Source::Execution => w.samples,
        }
    }

    fn intern(&mut self, key: FrameKey) -> u32 {
        self.frames.insert_full(key).0 as u32
    }

    /// Pushes the frames of native `pc` (its inline chain, innermost first) and its location;
    /// `leaf`: the interrupted pc, not a return address.
    fn push_native<'p>(
        &mut self,
        stack: &mut Vec<u32>,
        cuts: &mut Vec<Cut<'p>>,
        profile: &'p ChunkProfile,
        symbolizer: &mut Symbolizer,
        pc: u64,
        leaf: bool,
    ) {
        let library = profile.library_of(pc);
        let location = profile.locate(symbolizer, pc, leaf);
        for f in location.frames.iter() {
            let key = FrameKey {
                name: f.name.clone(),
                library: location.library.clone(),
                file: f.file.clone(),
                line: f.line,
                descriptor: None,
                kind: Kind::of_native(location.library.as_deref(), f),
            };
            stack.push(self.intern(key));
        }
        cuts.push(Cut {
            end: stack.len(),
            library,
            address: Some(pc),
            named: location.frames.last().is_some_and(|f| f.named),
        });
    }

    /// Adds the samples of one chunk (its `jdk.CPUTimeSample`s and losses, or with
    /// [`Source::Execution`] its `jdk.ExecutionSample`s); `origin_nanos` is the recording's
    /// start, `chunk_clock` the chunk's (start ns, start ticks, ticks per second).
    pub fn add_chunk(
        &mut self,
        profile: &ChunkProfile,
        symbolizer: &mut Symbolizer,
        filter: &Filter,
        origin_nanos: i64,
        chunk_clock: (i64, i64, i64),
    ) {
        let samples = match self.source {
            Source::CpuTime => &profile.samples,
            Source::Execution => &profile.execution_samples,
        };
        if profile.native_field {
            self.chunks_with_native_field += 1;
        }
        if self.source == Source::CpuTime {
            self.intervals_ns.extend(profile.interval_ns);
        }
        if (filter.locations || filter.events) && self.located.is_none() {
            self.located = Some(Located::default());
        }
        let mut stack = Vec::new();
        // Where each location of the stack ends (for `located`): one per native PC (its inline
        // chain), per physical Java frame (a method and the methods inlined into it), per
        // placeholder.
        let mut cuts: Vec<Cut<'_>> = Vec::new();
        for sample in samples {
            let (thread, at) = (sample.thread.as_deref(), sample.start_ticks);
            if !keep(thread, at, filter, origin_nanos, chunk_clock) {
                continue;
            }
            stack.clear();
            cuts.clear();
            if sample.native_truncated && sample.native.is_empty() {
                stack.push(self.intern(FrameKey::placeholder(NATIVE_UNKNOWN)));
                Cut::close(&mut cuts, stack.len());
            }
            for (i, &pc) in sample.native.iter().enumerate() {
                self.push_native(&mut stack, &mut cuts, profile, symbolizer, pc, i == 0);
            }
            if sample.native_truncated && !sample.native.is_empty() {
                stack.push(self.intern(FrameKey::placeholder(NATIVE_TRUNCATED)));
                Cut::close(&mut cuts, stack.len());
            }
            let mut segments = sample.segments.iter().peekable();
            for (index, j) in sample.java.iter().enumerate() {
                // The native code that called this Java frame back (an upcall), between it and
                // the frame above.
                while let Some(segment) = segments.next_if(|s| s.java_index == index) {
                    Cut::close(&mut cuts, stack.len());
                    for &pc in segment.pcs.iter() {
                        self.push_native(&mut stack, &mut cuts, profile, symbolizer, pc, false);
                    }
                    if segment.truncated {
                        stack.push(self.intern(FrameKey::placeholder(NATIVE_GAP)));
                        Cut::close(&mut cuts, stack.len());
                    }
                }
                self.push_java(&mut stack, &mut cuts, j);
            }
            Cut::close(&mut cuts, stack.len());
            if sample.java.is_empty() {
                let why = if sample.failed {
                    NO_JAVA_STACK
                } else {
                    NO_JAVA_FRAMES
                };
                stack.push(self.intern(FrameKey::placeholder(why)));
            } else if sample.java_truncated {
                stack.push(self.intern(FrameKey::placeholder(JAVA_TRUNCATED)));
            }
            Cut::close(&mut cuts, stack.len());
            let w = Weight {
                cpu_ns: sample.weight_ns,
                samples: 1,
            };
            let origin = Origin {
                thread: sample.thread.clone(),
                thread_ids: sample.thread_ids,
                time_nanos: event_nanos(sample.start_ticks, chunk_clock),
            };
            self.add_stack(&mut stack, &mut cuts, origin, filter, w);
            self.tally(sample);
        }
        if self.source == Source::Execution {
            return;
        }
        self.add_lost(&profile.lost, filter, origin_nanos, chunk_clock);
    }

    /// Pushes Java frame `j` onto `stack`; its location ends here unless the JIT inlined it.
    fn push_java(&mut self, stack: &mut Vec<u32>, cuts: &mut Vec<Cut<'_>>, j: &JavaFrame) {
        let name = match (&j.class, &j.method) {
            (Some(c), Some(m)) => Arc::from(format!("{c}.{m}").as_str()),
            (None, Some(m)) => m.clone(),
            _ => Arc::from("[unknown Java frame]"),
        };
        let key = FrameKey {
            name,
            library: None,
            file: None,
            line: j.line.and_then(|l| u32::try_from(l).ok()),
            descriptor: j.descriptor.clone(),
            kind: Kind::of_java(j),
        };
        let inlined = key.kind == Kind::Inlined;
        stack.push(self.intern(key));
        // A method the JIT inlined shares the physical frame of its caller (the next
        // frame); a truncated stack may end with one whose caller is missing.
        if !inlined {
            Cut::close(cuts, stack.len());
        }
    }

    /// Counts `sample` in the totals of the report's summary.
    fn tally(&mut self, sample: &Sample) {
        self.recorded.add(sample.weight_ns);
        if sample.failed {
            self.failed.add(sample.weight_ns);
        }
        if !sample.native.is_empty() {
            self.with_native.add(sample.weight_ns);
        }
        if !sample.segments.is_empty() {
            self.with_segments.add(sample.weight_ns);
        }
        if sample.native_truncated {
            if sample.native.is_empty() {
                self.native_unknown.add(sample.weight_ns);
            } else {
                self.native_truncated.add(sample.weight_ns);
            }
        }
        if sample.java_truncated && !sample.java.is_empty() {
            self.java_truncated.add(sample.weight_ns);
        }
    }

    /// Adds the chunk's `jdk.CPUTimeSamplesLost` events as placeholder stacks.
    fn add_lost(
        &mut self,
        lost_events: &[Lost],
        filter: &Filter,
        origin_nanos: i64,
        chunk_clock: (i64, i64, i64),
    ) {
        let mut stack = Vec::new();
        let mut cuts: Vec<Cut<'_>> = Vec::new();
        for lost in lost_events {
            let (thread, at) = (lost.thread.as_deref(), lost.start_ticks);
            if lost.samples == 0 || !keep(thread, at, filter, origin_nanos, chunk_clock) {
                continue;
            }
            let name = match &lost.reason {
                Some(reason) => format!("[lost samples: {reason}]"),
                None => LOST_SAMPLES.to_string(),
            };
            stack.clear();
            cuts.clear();
            stack.push(self.intern(FrameKey::placeholder(&name)));
            Cut::close(&mut cuts, stack.len());
            let w = Weight {
                cpu_ns: lost.cpu_ns.unwrap_or(0),
                samples: lost.samples,
            };
            let origin = Origin {
                thread: lost.thread.clone(),
                thread_ids: lost.thread_ids,
                time_nanos: event_nanos(lost.start_ticks, chunk_clock),
            };
            self.add_stack(&mut stack, &mut cuts, origin, filter, w);
            self.lost.add_weight(w);
            if lost.cpu_ns.is_none() {
                self.lost_cpu_unknown += lost.samples;
            }
        }
    }

    fn add_stack(
        &mut self,
        stack: &mut Vec<u32>,
        cuts: &mut Vec<Cut<'_>>,
        origin: Origin,
        filter: &Filter,
        w: Weight,
    ) {
        let thread = origin
            .thread
            .clone()
            .unwrap_or_else(|| Arc::from("[unknown thread]"));
        if filter.per_thread {
            let root = FrameKey::placeholder(&format!("[{thread}]"));
            stack.push(self.intern(root));
            Cut::close(cuts, stack.len());
        }
        if let Some(located) = &mut self.located {
            located.add(&origin, stack, cuts, w, filter.events);
        }
        match self.stacks.get_mut(stack.as_slice()) {
            Some(weight) => weight.add_weight(w),
            None => {
                self.stacks.insert(stack.clone(), w);
            }
        }
        self.threads.entry(thread).or_default().add_weight(w);
        self.total.add_weight(w);
    }
}

/// The time of an event at `start_ticks` of a chunk whose clock is (start ns, start ticks, ticks
/// per second), ns since the epoch.
fn event_nanos(
    start_ticks: i64,
    (start_nanos, chunk_ticks, ticks_per_second): (i64, i64, i64),
) -> i64 {
    let tps = ticks_per_second.max(1) as i128;
    let at = i128::from(start_nanos)
        + (i128::from(start_ticks) - i128::from(chunk_ticks)) * 1_000_000_000 / tps;
    at.clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64
}

/// Whether an event of `thread` at `start_ticks` passes `filter`.
fn keep(
    thread: Option<&str>,
    start_ticks: i64,
    filter: &Filter,
    origin_nanos: i64,
    chunk_clock: (i64, i64, i64),
) -> bool {
    if !filter.threads.is_empty() {
        let name = thread.unwrap_or("");
        if !filter.threads.iter().any(|t| name.contains(t.as_str())) {
            return false;
        }
    }
    if filter.from_ns.is_some() || filter.to_ns.is_some() {
        let at = i128::from(event_nanos(start_ticks, chunk_clock)) - i128::from(origin_nanos);
        if filter.from_ns.is_some_and(|f| at < i128::from(f)) {
            return false;
        }
        if filter.to_ns.is_some_and(|t| at >= i128::from(t)) {
            return false;
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parameters_read_as_in_source() {
        assert_eq!(parameters("()V"), "()");
        assert_eq!(
            parameters("([Ljava/lang/String;Lcom/sun/tools/javac/util/Context;)I"),
            "(String[], Context)"
        );
        assert_eq!(
            parameters("(I[[JLjava/util/Map$Entry;Z)V"),
            "(int, long[][], Map.Entry, boolean)"
        );
        assert_eq!(parameters("(Q)V"), "(Q)V");
        assert_eq!(parameters("broken"), "broken");
    }

    #[test]
    fn only_overloaded_methods_show_their_parameters() {
        let mut agg = Aggregate::default();
        let java = |name: &str, descriptor: &str| FrameKey {
            name: Arc::from(name),
            library: None,
            file: None,
            line: None,
            descriptor: Some(Arc::from(descriptor)),
            kind: Kind::Interpreted,
        };
        let a = java("Main.compile", "([Ljava/lang/String;)I");
        let b = java("Main.compile", "([Ljava/lang/String;LContext;)I");
        let c = java("Main.run", "()V");
        for f in [&a, &b, &c] {
            agg.intern(f.clone());
        }
        let overloaded = agg.overloaded();
        assert_eq!(a.shown_name(&overloaded), "Main.compile(String[])");
        assert_eq!(b.shown_name(&overloaded), "Main.compile(String[], Context)");
        assert_eq!(c.shown_name(&overloaded), "Main.run");
    }
}
