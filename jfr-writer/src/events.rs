//! The events this writer emits, one struct each, encoded in the field order of
//! [`crate::types`]. Every event starts with `startTime` in ticks of the recording's clock.

use crate::constants::{encode_native_stack_trace, write_string, Pools};
use crate::ids::*;
use crate::leb128;
use crate::types::NativeStackEncoding;

/// The event types, in the order [`crate::types`] declares them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EventType {
    /// `jdk.CPUTimeSample`
    CpuTimeSample,
    /// `jdk.CPUTimeSamplesLost`
    CpuTimeSamplesLost,
    /// `jdk.NativeLibrary`
    NativeLibrary,
    /// `jdk.ActiveRecording`
    ActiveRecording,
    /// `jdk.ActiveSetting`
    ActiveSetting,
    /// `jdk.JVMInformation`
    JvmInformation,
    /// `jdk.OSInformation`
    OsInformation,
    /// `jdk.CPUInformation`
    CpuInformation,
    /// `jdk.ThreadStart`
    ThreadStart,
    /// `jdk.ThreadEnd`
    ThreadEnd,
    /// `jfrnative.JvmCode`
    JvmCode,
}

impl EventType {
    /// Every event type.
    pub const ALL: [EventType; 11] = [
        EventType::CpuTimeSample,
        EventType::CpuTimeSamplesLost,
        EventType::NativeLibrary,
        EventType::ActiveRecording,
        EventType::ActiveSetting,
        EventType::JvmInformation,
        EventType::OsInformation,
        EventType::CpuInformation,
        EventType::ThreadStart,
        EventType::ThreadEnd,
        EventType::JvmCode,
    ];

    /// The JFR name.
    pub fn name(self) -> &'static str {
        match self {
            EventType::CpuTimeSample => "jdk.CPUTimeSample",
            EventType::CpuTimeSamplesLost => "jdk.CPUTimeSamplesLost",
            EventType::NativeLibrary => "jdk.NativeLibrary",
            EventType::ActiveRecording => "jdk.ActiveRecording",
            EventType::ActiveSetting => "jdk.ActiveSetting",
            EventType::JvmInformation => "jdk.JVMInformation",
            EventType::OsInformation => "jdk.OSInformation",
            EventType::CpuInformation => "jdk.CPUInformation",
            EventType::ThreadStart => "jdk.ThreadStart",
            EventType::ThreadEnd => "jdk.ThreadEnd",
            EventType::JvmCode => "jfrnative.JvmCode",
        }
    }
}

/// A set of event types.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct EventTypes(u32);

impl EventTypes {
    /// Adds `t`.
    #[inline]
    pub fn insert(&mut self, t: EventType) {
        self.0 |= 1 << t as u32;
    }

    /// Whether `t` is in the set.
    pub fn contains(self, t: EventType) -> bool {
        self.0 & (1 << t as u32) != 0
    }
}

/// Field encoder handed to [`Event::encode`]: writes values and marks the constants they
/// reference as used by the current chunk.
pub struct Encoder<'a> {
    pub(crate) out: &'a mut Vec<u8>,
    pub(crate) pools: &'a mut Pools,
    pub(crate) native: NativeStackEncoding,
}

impl Encoder<'_> {
    /// A `long` (or `int`, `short`: all varints).
    #[inline]
    pub fn long(&mut self, v: i64) {
        leb128::write_i64(self.out, v);
    }

    /// An `int`, as its 32-bit pattern ([`leb128::write_i32`]).
    pub fn int(&mut self, v: i32) {
        leb128::write_i32(self.out, v);
    }

    /// An unsigned `long`.
    #[inline]
    pub fn ulong(&mut self, v: u64) {
        leb128::write_u64(self.out, v);
    }

    /// A `boolean`.
    #[inline]
    pub fn boolean(&mut self, v: bool) {
        self.out.push(u8::from(v));
    }

    /// A `java.lang.String`, written inline (null for `None`).
    pub fn string(&mut self, s: Option<&str>) {
        write_string(self.out, s);
    }

    /// A `java.lang.Thread` reference.
    #[inline]
    pub fn thread(&mut self, t: Option<ThreadId>) {
        if let Some(t) = t {
            self.pools.threads.mark(t.0);
        }
        self.ulong(key_or_null(t, ThreadId::key));
    }

    /// A `jdk.types.StackTrace` reference.
    #[inline]
    pub fn stack_trace(&mut self, s: Option<StackTraceId>) {
        if let Some(s) = s {
            self.pools.stack_traces.mark(s.0);
        }
        self.ulong(key_or_null(s, StackTraceId::key));
    }

    /// A `jdk.NativeStackTrace`: a pool reference or the inline struct, per the recording's
    /// [`NativeStackEncoding`]. `None` inline is an empty, non-truncated stack (an inline struct
    /// cannot be null).
    #[inline]
    pub fn native_stack_trace(&mut self, s: Option<NativeStackTraceId>) {
        // Marked either way: the chunk's native stacks say which libraries it needs.
        if let Some(s) = s {
            self.pools.native_stack_traces.mark(s.0);
        }
        match self.native {
            NativeStackEncoding::Pooled => {
                self.ulong(key_or_null(s, NativeStackTraceId::key));
            }
            NativeStackEncoding::Inline => {
                match s.and_then(|s| self.pools.native_stack_traces.get(s.0)) {
                    Some(stack) => encode_native_stack_trace(stack, self.out),
                    None => {
                        // Not truncated, no frames, no segments.
                        self.boolean(false);
                        self.ulong(0);
                        self.ulong(0);
                    }
                }
            }
        }
    }
}

/// An event this writer can encode.
pub trait Event {
    /// Its type.
    const TYPE: EventType;
    /// `startTime`, in ticks.
    fn start_ticks(&self) -> i64;
    /// Writes every field, `startTime` first, in declaration order.
    fn encode(&self, e: &mut Encoder<'_>);
}

/// `jdk.CPUTimeSample`: a thread used `sampling_period_ticks` of CPU time, and this was its stack.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CpuTimeSample {
    /// When the sample was taken.
    pub start_ticks: i64,
    /// Java frames (from AsyncGetCallTrace), `None` if none could be taken.
    pub stack_trace: Option<StackTraceId>,
    /// The sampled thread.
    pub thread: Option<ThreadId>,
    /// The Java stack could not be taken.
    pub failed: bool,
    /// CPU time this sample stands for: interval × (1 + timer overruns), in ticks.
    pub sampling_period_ticks: u64,
    /// Taken at a safepoint rather than where the CPU was (always false for this recorder).
    pub biased: bool,
    /// Native frames above the first Java frame, leaf first.
    pub native_stack_trace: Option<NativeStackTraceId>,
}

impl Event for CpuTimeSample {
    const TYPE: EventType = EventType::CpuTimeSample;
    fn start_ticks(&self) -> i64 {
        self.start_ticks
    }
    #[inline]
    fn encode(&self, e: &mut Encoder<'_>) {
        e.long(self.start_ticks);
        e.stack_trace(self.stack_trace);
        e.thread(self.thread);
        e.boolean(self.failed);
        e.ulong(self.sampling_period_ticks);
        e.boolean(self.biased);
        e.native_stack_trace(self.native_stack_trace);
    }
}

/// `jdk.CPUTimeSamplesLost`: samples that were due but not recorded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CpuTimeSamplesLost<'a> {
    /// When the loss was noticed.
    pub start_ticks: i64,
    /// How many samples.
    pub lost_samples: i32,
    /// The thread that lost them, if known.
    pub thread: Option<ThreadId>,
    /// Why (a jfr-native extension field), e.g. `buffer full`.
    pub reason: &'a str,
    /// The CPU time the lost samples stood for, ns (a jfr-native extension field: the sum of
    /// the `samplingPeriod`s they would have had), so that readers can count every CPU
    /// nanosecond.
    pub lost_cpu_ns: u64,
}

impl Event for CpuTimeSamplesLost<'_> {
    const TYPE: EventType = EventType::CpuTimeSamplesLost;
    fn start_ticks(&self) -> i64 {
        self.start_ticks
    }
    fn encode(&self, e: &mut Encoder<'_>) {
        e.long(self.start_ticks);
        e.int(self.lost_samples);
        e.thread(self.thread);
        e.string(Some(self.reason));
        e.ulong(self.lost_cpu_ns);
    }
}

/// `jdk.NativeLibrary`: a loaded ELF object, with what offline symbolization needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NativeLibrary<'a> {
    /// When it was seen.
    pub start_ticks: i64,
    /// Path of the file as mapped.
    pub name: &'a str,
    /// Lowest mapped address.
    pub base_address: u64,
    /// End (exclusive) of the highest mapped address.
    pub top_address: u64,
    /// GNU build-id in hex, if the file has one.
    pub build_id: Option<&'a str>,
    /// The file offset mapped at `base_address`.
    pub file_offset: u64,
}

impl Event for NativeLibrary<'_> {
    const TYPE: EventType = EventType::NativeLibrary;
    fn start_ticks(&self) -> i64 {
        self.start_ticks
    }
    fn encode(&self, e: &mut Encoder<'_>) {
        e.long(self.start_ticks);
        e.string(Some(self.name));
        e.ulong(self.base_address);
        e.ulong(self.top_address);
        e.string(self.build_id);
        e.ulong(self.file_offset);
    }
}

/// `jfrnative.JvmCode`: a range of code the JVM generated at run time (a stub, an adapter, a
/// runtime stub, a vtable or itable stub) and its name, so that a native pc in it can be named
/// offline: no library file holds it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JvmCode<'a> {
    /// When it was seen.
    pub start_ticks: i64,
    /// The JVM's name for it (`jlong_disjoint_arraycopy`, `vtable stub`, `_new_array_Java`).
    pub name: &'a str,
    /// Its first byte.
    pub start_address: u64,
    /// One past its last byte.
    pub end_address: u64,
}

impl Event for JvmCode<'_> {
    const TYPE: EventType = EventType::JvmCode;
    fn start_ticks(&self) -> i64 {
        self.start_ticks
    }
    fn encode(&self, e: &mut Encoder<'_>) {
        e.long(self.start_ticks);
        e.string(Some(self.name));
        e.ulong(self.start_address);
        e.ulong(self.end_address);
    }
}

/// `jdk.ActiveRecording`: the recording itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ActiveRecording<'a> {
    /// When written.
    pub start_ticks: i64,
    /// Recording id.
    pub id: i64,
    /// Recording name.
    pub name: &'a str,
    /// Output file.
    pub destination: Option<&'a str>,
    /// Written to disk.
    pub disk: bool,
    /// Maximum age kept, ms (0 = unlimited).
    pub max_age_ms: i64,
    /// Chunk rotation interval, ms.
    pub flush_interval_ms: i64,
    /// Maximum size kept, bytes (0 = unlimited).
    pub max_size_bytes: i64,
    /// Recording start, ms since the epoch.
    pub recording_start_ms: i64,
    /// Planned duration, ms (0 = until stopped).
    pub recording_duration_ms: i64,
}

impl Event for ActiveRecording<'_> {
    const TYPE: EventType = EventType::ActiveRecording;
    fn start_ticks(&self) -> i64 {
        self.start_ticks
    }
    fn encode(&self, e: &mut Encoder<'_>) {
        e.long(self.start_ticks);
        e.long(self.id);
        e.string(Some(self.name));
        e.string(self.destination);
        e.boolean(self.disk);
        e.long(self.max_age_ms);
        e.long(self.flush_interval_ms);
        e.long(self.max_size_bytes);
        e.long(self.recording_start_ms);
        e.long(self.recording_duration_ms);
    }
}

/// `jdk.ActiveSetting`: one option of the recorder.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ActiveSetting<'a> {
    /// When written.
    pub start_ticks: i64,
    /// Class id of the event type the setting applies to ([`crate::Recording::event_type_id`]).
    pub event_type_id: i64,
    /// Setting name, e.g. `interval`.
    pub name: &'a str,
    /// Setting value, e.g. `10ms`.
    pub value: &'a str,
}

impl Event for ActiveSetting<'_> {
    const TYPE: EventType = EventType::ActiveSetting;
    fn start_ticks(&self) -> i64 {
        self.start_ticks
    }
    fn encode(&self, e: &mut Encoder<'_>) {
        e.long(self.start_ticks);
        e.long(self.event_type_id);
        e.string(Some(self.name));
        e.string(Some(self.value));
    }
}

/// `jdk.JVMInformation`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JvmInformation<'a> {
    /// When written.
    pub start_ticks: i64,
    /// `java.vm.name`.
    pub jvm_name: &'a str,
    /// `java.vm.version` and build.
    pub jvm_version: &'a str,
    /// JVM arguments.
    pub jvm_arguments: &'a str,
    /// Flags-file arguments.
    pub jvm_flags: &'a str,
    /// Application arguments.
    pub java_arguments: &'a str,
    /// JVM start, ms since the epoch.
    pub jvm_start_time_ms: i64,
    /// Process id.
    pub pid: i64,
}

impl Event for JvmInformation<'_> {
    const TYPE: EventType = EventType::JvmInformation;
    fn start_ticks(&self) -> i64 {
        self.start_ticks
    }
    fn encode(&self, e: &mut Encoder<'_>) {
        e.long(self.start_ticks);
        for s in [
            self.jvm_name,
            self.jvm_version,
            self.jvm_arguments,
            self.jvm_flags,
            self.java_arguments,
        ] {
            e.string(Some(s));
        }
        e.long(self.jvm_start_time_ms);
        e.long(self.pid);
    }
}

/// `jdk.OSInformation`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OsInformation<'a> {
    /// When written.
    pub start_ticks: i64,
    /// uname-like description.
    pub os_version: &'a str,
}

impl Event for OsInformation<'_> {
    const TYPE: EventType = EventType::OsInformation;
    fn start_ticks(&self) -> i64 {
        self.start_ticks
    }
    fn encode(&self, e: &mut Encoder<'_>) {
        e.long(self.start_ticks);
        e.string(Some(self.os_version));
    }
}

/// `jdk.CPUInformation`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CpuInformation<'a> {
    /// When written.
    pub start_ticks: i64,
    /// CPU type, e.g. `AMD64`.
    pub cpu: &'a str,
    /// Model description.
    pub description: &'a str,
    /// Sockets.
    pub sockets: u32,
    /// Cores.
    pub cores: u32,
    /// Hardware threads.
    pub hw_threads: u32,
}

impl Event for CpuInformation<'_> {
    const TYPE: EventType = EventType::CpuInformation;
    fn start_ticks(&self) -> i64 {
        self.start_ticks
    }
    fn encode(&self, e: &mut Encoder<'_>) {
        e.long(self.start_ticks);
        e.string(Some(self.cpu));
        e.string(Some(self.description));
        for n in [self.sockets, self.cores, self.hw_threads] {
            e.ulong(u64::from(n));
        }
    }
}

/// `jdk.ThreadStart`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ThreadStart {
    /// When the thread started.
    pub start_ticks: i64,
    /// The thread that wrote the event.
    pub event_thread: Option<ThreadId>,
    /// Where, if known.
    pub stack_trace: Option<StackTraceId>,
    /// The new thread.
    pub thread: Option<ThreadId>,
    /// Its parent, if known.
    pub parent_thread: Option<ThreadId>,
}

impl Event for ThreadStart {
    const TYPE: EventType = EventType::ThreadStart;
    fn start_ticks(&self) -> i64 {
        self.start_ticks
    }
    fn encode(&self, e: &mut Encoder<'_>) {
        e.long(self.start_ticks);
        e.thread(self.event_thread);
        e.stack_trace(self.stack_trace);
        e.thread(self.thread);
        e.thread(self.parent_thread);
    }
}

/// `jdk.ThreadEnd`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ThreadEnd {
    /// When the thread ended.
    pub start_ticks: i64,
    /// The thread that wrote the event.
    pub event_thread: Option<ThreadId>,
    /// The thread that ended.
    pub thread: Option<ThreadId>,
}

impl Event for ThreadEnd {
    const TYPE: EventType = EventType::ThreadEnd;
    fn start_ticks(&self) -> i64 {
        self.start_ticks
    }
    fn encode(&self, e: &mut Encoder<'_>) {
        e.long(self.start_ticks);
        e.thread(self.event_thread);
        e.thread(self.thread);
    }
}
