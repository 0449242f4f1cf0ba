//! Samples folded into weighted stacks: the data behind the collapsed, flame graph, text and
//! JSON views.

use std::sync::Arc;

use indexmap::IndexSet;
use rustc_hash::{FxBuildHasher, FxHashMap};

use crate::profile::{ChunkProfile, JavaFrame, Sample};
use crate::resolve::Symbolizer;

/// What kind of code a frame is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    /// Native code, a real (not inlined) function.
    Native,
    /// Native code inlined into the next frame.
    NativeInlined,
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
}

impl Kind {
    fn of_java(frame: &JavaFrame) -> Kind {
        match frame.frame_type.as_deref() {
            Some("Interpreted") => Kind::Interpreted,
            Some("JIT compiled") => Kind::Compiled,
            Some("Inlined") => Kind::Inlined,
            Some("Native") => Kind::JavaNative,
            _ => Kind::Java,
        }
    }

    /// Whether the frame is native code.
    pub fn is_native(self) -> bool {
        matches!(self, Kind::Native | Kind::NativeInlined)
    }

    /// A short label: "native", "inlined native", "interpreted", "jit", "inlined", ...
    pub fn label(self) -> &'static str {
        match self {
            Kind::Native => "native",
            Kind::NativeInlined => "native-inlined",
            Kind::Interpreted => "interpreted",
            Kind::Compiled => "jit",
            Kind::Inlined => "inlined",
            Kind::JavaNative => "java-native",
            Kind::Java => "java",
        }
    }
}

/// One distinct frame.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct FrameKey {
    /// Function (`level3`, `lib+0x1234`) or Java method (`com.example.Main.run`).
    pub name: Arc<str>,
    /// Native library file name, for native frames.
    pub library: Option<Arc<str>>,
    /// Source file and line, for native frames with DWARF.
    pub source: Option<(Arc<str>, u32)>,
    /// What kind of code.
    pub kind: Kind,
}

/// Weight and count.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Weight {
    /// CPU time, ns (sum of `samplingPeriod`).
    pub cpu_ns: u64,
    /// Samples.
    pub samples: u64,
}

impl Weight {
    fn add(&mut self, cpu_ns: u64) {
        self.cpu_ns = self.cpu_ns.saturating_add(cpu_ns);
        self.samples += 1;
    }
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
}

/// Every kept sample folded by (thread, stack).
#[derive(Debug, Default)]
pub struct Aggregate {
    /// Distinct frames; stacks hold their indexes.
    pub frames: IndexSet<FrameKey, FxBuildHasher>,
    /// Stack (leaf first) → weight. With `per_thread`, the thread is the last (root) frame.
    pub stacks: FxHashMap<Vec<u32>, Weight>,
    /// Per thread name.
    pub threads: FxHashMap<Arc<str>, Weight>,
    /// All kept samples.
    pub total: Weight,
    /// Kept samples whose Java stack was not taken (`failed`).
    pub failed: Weight,
    /// Kept samples with at least one native frame.
    pub with_native: Weight,
    /// Kept samples whose native walk was cut short.
    pub native_truncated: Weight,
    /// Samples the recorder lost (`jdk.CPUTimeSamplesLost`), before any filter.
    pub lost_samples: u64,
}

impl Aggregate {
    fn intern(&mut self, key: FrameKey) -> u32 {
        self.frames.insert_full(key).0 as u32
    }

    /// Adds the samples of one chunk; `origin_nanos` is the recording's start, `chunk_start`
    /// the chunk's (start ns, start ticks, ticks per second).
    pub fn add_chunk(
        &mut self,
        profile: &ChunkProfile,
        symbolizer: &mut Symbolizer,
        filter: &Filter,
        origin_nanos: i64,
        chunk_clock: (i64, i64, i64),
    ) {
        self.lost_samples += profile.lost_samples;
        let mut stack = Vec::new();
        for sample in &profile.samples {
            if !self.keep(sample, filter, origin_nanos, chunk_clock) {
                continue;
            }
            stack.clear();
            for (i, &pc) in sample.native.iter().enumerate() {
                let location = symbolizer.resolve(profile.library_of(pc), pc, i == 0);
                for f in location.frames.iter() {
                    let key = FrameKey {
                        name: f.name.clone(),
                        library: location.library.clone(),
                        source: f.file.clone().zip(f.line),
                        kind: if f.inlined {
                            Kind::NativeInlined
                        } else {
                            Kind::Native
                        },
                    };
                    stack.push(self.intern(key));
                }
            }
            for j in sample.java.iter() {
                let name = match (&j.class, &j.method) {
                    (Some(c), Some(m)) => Arc::from(format!("{c}.{m}").as_str()),
                    (None, Some(m)) => m.clone(),
                    _ => Arc::from("[unknown Java frame]"),
                };
                let key = FrameKey {
                    name,
                    library: None,
                    source: None,
                    kind: Kind::of_java(j),
                };
                stack.push(self.intern(key));
            }
            let thread = sample
                .thread
                .clone()
                .unwrap_or_else(|| Arc::from("[unknown thread]"));
            if filter.per_thread {
                let key = FrameKey {
                    name: Arc::from(format!("[{thread}]").as_str()),
                    library: None,
                    source: None,
                    kind: Kind::Java,
                };
                stack.push(self.intern(key));
            }
            self.stacks
                .entry(stack.clone())
                .or_default()
                .add(sample.weight_ns);
            self.threads
                .entry(thread)
                .or_default()
                .add(sample.weight_ns);
            self.total.add(sample.weight_ns);
            if sample.failed {
                self.failed.add(sample.weight_ns);
            }
            if !sample.native.is_empty() {
                self.with_native.add(sample.weight_ns);
            }
            if sample.native_truncated {
                self.native_truncated.add(sample.weight_ns);
            }
        }
    }

    fn keep(
        &self,
        sample: &Sample,
        filter: &Filter,
        origin_nanos: i64,
        (start_nanos, start_ticks, ticks_per_second): (i64, i64, i64),
    ) -> bool {
        if !filter.threads.is_empty() {
            let name = sample.thread.as_deref().unwrap_or("");
            if !filter.threads.iter().any(|t| name.contains(t.as_str())) {
                return false;
            }
        }
        if filter.from_ns.is_some() || filter.to_ns.is_some() {
            let tps = ticks_per_second.max(1) as i128;
            let at = i128::from(start_nanos)
                + (i128::from(sample.start_ticks) - i128::from(start_ticks)) * 1_000_000_000 / tps
                - i128::from(origin_nanos);
            if filter.from_ns.is_some_and(|f| at < i128::from(f)) {
                return false;
            }
            if filter.to_ns.is_some_and(|t| at >= i128::from(t)) {
                return false;
            }
        }
        true
    }
}
