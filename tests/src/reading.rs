//! What every reader of a JFR file is reduced to, so that tests compare readers with each other
//! and with what the writer was asked to write: a [`Reading`] of [`SampleView`]s and canonical
//! lines, in ticks of the golden files' [`CLOCK`].

use std::collections::BTreeMap;

use jfr_writer::Clock;

/// Ticks are microseconds; tick 0 is 2026-01-01T00:00:00Z.
pub const CLOCK: Clock = Clock {
    ticks_per_second: 1_000_000,
    origin_ticks: 0,
    origin_epoch_nanos: 1_767_225_600_000_000_000,
};

/// What a reader read from a file.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Reading {
    /// Events per type name.
    pub counts: BTreeMap<String, u64>,
    /// Every `jdk.CPUTimeSample`, sorted.
    pub samples: Vec<SampleView>,
    /// Every `jdk.NativeLibrary` as [`library_line`], sorted.
    pub libraries: Vec<String>,
    /// Every `jdk.CPUTimeSamplesLost` as [`lost_line`], sorted.
    pub lost: Vec<String>,
}

impl Reading {
    /// Σ `samplingPeriod` of the CPU samples, ns (readers give periods in ticks of the golden
    /// clock).
    pub fn period_ns(&self) -> u64 {
        let tps = CLOCK.ticks_per_second;
        self.samples
            .iter()
            .map(|s| s.period_ticks * 1_000_000_000 / tps)
            .sum()
    }

    /// The same reading with every list sorted (readers see events in file order).
    pub fn sorted(mut self) -> Reading {
        self.samples.sort();
        self.libraries.sort();
        self.lost.sort();
        self
    }
}

/// A Java frame as readers print it: `pkg.Class.method:line:Type`.
pub fn frame_text(class: &str, method: &str, line: i64, frame_type: &str) -> String {
    format!("{}.{method}:{line}:{frame_type}", class.replace('/', "."))
}

/// One `jdk.CPUTimeSample` as any reader sees it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct SampleView {
    /// `eventThread.javaName`.
    pub thread: String,
    /// `eventThread.osThreadId`.
    pub tid: i64,
    /// `samplingPeriod` in ticks of [`CLOCK`].
    pub period_ticks: u64,
    /// `failed`.
    pub failed: bool,
    /// `stackTrace.truncated`, `None` if the stack trace is null.
    pub java_truncated: Option<bool>,
    /// `stackTrace.frames` as [`frame_text`].
    pub java: Vec<String>,
    /// `nativeStackTrace.truncated`, `None` if null.
    pub native_truncated: Option<bool>,
    /// `nativeStackTrace.frames[].pc`.
    pub pcs: Vec<u64>,
    /// `nativeStackTrace.segments` (jfr-native's native frames between Java frames).
    pub segments: Vec<SegmentView>,
}

/// One `jfrnative.NativeSegment` as any reader sees it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct SegmentView {
    /// `javaFrameIndex`.
    pub java_frame_index: i64,
    /// `truncated`.
    pub truncated: bool,
    /// `frames[].pc`.
    pub pcs: Vec<u64>,
}

impl std::fmt::Display for SegmentView {
    /// `@index:pc,pc`, with `+gap` after the index when truncated.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let pcs: Vec<String> = self.pcs.iter().map(|pc| format!("{pc:#x}")).collect();
        let gap = if self.truncated { "+gap" } else { "" };
        write!(f, "@{}{gap}:{}", self.java_frame_index, pcs.join(","))
    }
}

fn opt(b: Option<bool>) -> String {
    b.map_or("null".to_string(), |b| b.to_string())
}

impl SampleView {
    /// The native part only, as the `RecordingFile` oracle prints it (`NATIVE` lines carry
    /// every program counter of the native stack in encounter order: its frames, then its
    /// segments' frames).
    pub fn pcs_text(&self) -> String {
        let all = self
            .pcs
            .iter()
            .chain(self.segments.iter().flat_map(|s| &s.pcs));
        let pcs: Vec<String> = all.map(|pc| format!("{pc:#x}")).collect();
        format!("pcs=[{}]", pcs.join(","))
    }

    /// The Java part only, as the oracle prints it (`STACK` lines), if there is a stack.
    pub fn java_text(&self) -> Option<String> {
        self.java_truncated
            .map(|t| format!("java_truncated={t} java=[{}]", self.java.join(",")))
    }
}

impl std::fmt::Display for SampleView {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "thread={} tid={} period={} failed={} java_truncated={} java=[{}] native_truncated={} {}",
            self.thread,
            self.tid,
            self.period_ticks,
            self.failed,
            opt(self.java_truncated),
            self.java.join(","),
            opt(self.native_truncated),
            self.pcs_text()
        )?;
        if !self.segments.is_empty() {
            let segments: Vec<String> = self.segments.iter().map(|s| s.to_string()).collect();
            write!(f, " segments=[{}]", segments.join(" "))?;
        }
        Ok(())
    }
}

/// The canonical text of one `jdk.NativeLibrary` event.
pub fn library_line(
    name: &str,
    base: u64,
    top: u64,
    build_id: Option<&str>,
    file_offset: u64,
) -> String {
    format!(
        "{name} {base:#x}-{top:#x} build_id={} offset={file_offset:#x}",
        build_id.unwrap_or("null")
    )
}

/// The canonical text of one `jdk.CPUTimeSamplesLost` event.
pub fn lost_line(lost: i64, os_tid: Option<i64>, reason: &str) -> String {
    format!(
        "lost={lost} tid={} reason={reason}",
        os_tid.map_or("null".into(), |t| t.to_string())
    )
}
