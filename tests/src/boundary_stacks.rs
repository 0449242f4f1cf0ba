//! The CPU samples of a recording as the JDK's `jfr print --json` reads them, reduced to what the
//! boundary measures need: the thread (virtual or not, its Java id), the Java stack and its
//! `truncated` flag, how many native pcs the raw file holds, and, from the symbolized copy, the
//! whole stack with the native frames named in their place.
//!
//! The JSON of a recording of deep virtual-thread stacks runs to a hundred megabytes; it is read
//! into typed structures (only the fields used), not into a `serde_json::Value` tree.

use std::path::Path;
use std::process::Command;

use serde::Deserialize;

use crate::jdk::Jdk;

/// Frames `jfr print` writes per stack: more than any stack of the fixtures (the JDK's default
/// is 5, and 64 would cut the 120-deep chains).
pub const STACK_DEPTH: u32 = 4096;

/// One frame of a stack.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frame {
    /// The class, with dots (`java.lang.Thread`; a hidden class as `Name.0x...` or
    /// `Name/0x...` as the file has it); for a native frame of the symbolized file, the library
    /// file name (`libc.so.6`).
    pub class: String,
    /// The method, or the native function.
    pub method: String,
    /// The frame type as `jfr print` names it: `Interpreted`, `JIT compiled`, `Inlined`,
    /// `Native`, ...
    pub kind: String,
    /// The method's `hidden` field.
    pub hidden: bool,
    /// Whether this is a native frame the symbolizer made from a pc (type `Native`, a class
    /// without a package, the method descriptor `()V` and modifiers `native` alone), not a Java
    /// method.
    pub symbolized_native: bool,
}

impl Frame {
    /// `class.method`.
    pub fn name(&self) -> String {
        format!("{}.{}", self.class, self.method)
    }

    /// Whether the frame is `method` of `class` (a class name with dots).
    pub fn is(&self, class: &str, method: &str) -> bool {
        self.class == class && self.method == method
    }

    /// Whether the frame is a native frame of a library whose file name starts with `prefix`.
    pub fn in_library(&self, prefix: &str) -> bool {
        self.symbolized_native && self.class.starts_with(prefix)
    }
}

/// One `jdk.CPUTimeSample`.
#[derive(Debug, Clone)]
pub struct Sample {
    /// `startTime`, ns since the epoch.
    pub start_ns: i64,
    /// `eventThread.javaName` (null for the agent's virtual threads, `""` for the JDK's).
    pub thread: Option<String>,
    /// `eventThread.virtual`.
    pub is_virtual: bool,
    /// `eventThread.javaThreadId`.
    pub java_thread_id: Option<i64>,
    /// The JDK's `biased` field: taken at the next safepoint, not where the signal found the
    /// thread.
    pub biased: bool,
    /// `stackTrace.truncated`; `None` without a stack trace.
    pub truncated: Option<bool>,
    /// The Java frames of the raw file, top first.
    pub java: Vec<Frame>,
    /// The pcs of the raw file's `nativeStackTrace`.
    pub native_pcs: usize,
    /// The stack of the symbolized file (native frames named, leaf first), when it was read.
    pub symbolized: Vec<Frame>,
}

impl Sample {
    /// Whether the leaf is in a native library: the raw file has native pcs and, when the
    /// symbolized stack was read, its leaf is a native frame of a library. Not JVM-generated
    /// code (`jvm-generated`: a stub, named; or a pc of JIT code that no walk could leave,
    /// which the agent keeps alone), nor a pc no recording names (`unknown`).
    pub fn native_leaf(&self) -> bool {
        if self.native_pcs == 0 {
            return false;
        }
        match self.symbolized.first() {
            Some(leaf) => {
                leaf.symbolized_native
                    && !matches!(leaf.class.as_str(), "unknown" | "jvm-generated")
            }
            None => true,
        }
    }

    /// Whether HotSpot was deoptimizing a compiled frame of the thread (the native frames are
    /// libjvm's `Deoptimization::` functions, called from the deoptimization blob while it
    /// rewrites that frame): a transition no Java walk crosses, not the JDK's either
    /// (AsyncGetCallTrace says "deoptimizing", -9). Known only from the symbolized stack.
    pub fn in_deoptimization(&self) -> bool {
        self.has_libjvm_frame_above_java(|m| m.starts_with("Deoptimization::"))
    }

    /// Whether a native frame above the first Java frame is a libjvm function whose name
    /// passes `wanted`.
    fn has_libjvm_frame_above_java(&self, wanted: impl Fn(&str) -> bool) -> bool {
        self.symbolized
            .iter()
            .take_while(|f| f.symbolized_native)
            .any(|f| f.class == "libjvm.so" && wanted(&f.method))
    }

    /// Whether the thread was in the slow path of a `monitorexit` with no Java stack written:
    /// C1-compiled code calls its `monitorexit` runtime stub from a code stub that records no
    /// debug information (a leaf call; HotSpot's own AsyncGetCallTrace fails there). The
    /// native frames reach libjvm's `SharedRuntime::monitor_exit_helper`. Counted apart: the
    /// walk follows such a stub back to the method body since issue 30 (before, 20-26% of a
    /// C1-only contention's samples were here); C2's slow path was walked before.
    pub fn in_unwalkable_monitor_exit(&self) -> bool {
        self.java.is_empty()
            && self.has_libjvm_frame_above_java(|m| {
                m.starts_with("SharedRuntime::monitor_exit_helper")
            })
    }

    /// Whether HotSpot was thawing the virtual thread's frames, with no Java stack written:
    /// libjvm's thaw (`Continuation::prepare_thaw`, `thaw<...>`, `ThawBase::`) copies frames
    /// from the heap stack chunk to the stack (and, under ZGC, transforms the chunk's
    /// references), so neither the stack nor the chunk holds the whole chain at that instant; the
    /// agent walks neither (docs/how-it-works.md#virtual-threads). Counted apart.
    pub fn in_thaw(&self) -> bool {
        self.java.is_empty()
            && self.has_libjvm_frame_above_java(|m| {
                m.starts_with("ThawBase::")
                    || m.starts_with("Continuation::prepare_thaw")
                    || m.starts_with("thaw<")
                    || m.contains(" thaw<")
            })
    }

    /// Whether the native frames show a virtual thread's thaw that has not changed its
    /// continuation yet: libjvm's `Continuation::prepare_thaw`, or
    /// `stackChunkOopDesc::relativize_derived_pointers_concurrently` called directly by
    /// `thaw_slow` (docs/how-it-works.md#virtual-threads). Every frame of the virtual thread is
    /// still in its heap chunks then, and the agent walks them (issue 30); with or without a
    /// Java stack.
    pub fn at_thaw_start(&self) -> bool {
        let native: Vec<&Frame> = self
            .symbolized
            .iter()
            .take_while(|f| f.symbolized_native)
            .collect();
        let libjvm =
            |f: &Frame, wanted: &dyn Fn(&str) -> bool| f.class == "libjvm.so" && wanted(&f.method);
        native.iter().enumerate().any(|(i, f)| {
            libjvm(f, &|m| m.starts_with("Continuation::prepare_thaw"))
                || (libjvm(f, &|m| {
                    m.starts_with("stackChunkOopDesc::relativize_derived_pointers_concurrently")
                }) && native
                    .get(i + 1)
                    .is_some_and(|caller| libjvm(caller, &|m| m.contains("::thaw_slow("))))
        })
    }

    /// Whether the sample has no Java stack and its native frames are all HotSpot's own
    /// (libjvm, and libc below it): VM code that JVM-generated code called (a runtime or
    /// barrier stub), in a transition the walk did not cross, such as an nmethod's entry
    /// barrier on its first call. Not a native library called from Java (its frames would be
    /// there). Counted apart from native leaves, and bounded.
    pub fn in_vm_transition(&self) -> bool {
        let mut native = self
            .symbolized
            .iter()
            .take_while(|f| f.symbolized_native)
            .peekable();
        self.java.is_empty()
            && native.peek().is_some()
            && native.all(|f| f.class == "libjvm.so" || f.in_library("libc.so"))
            && self.symbolized.iter().any(|f| f.class == "libjvm.so")
    }

    /// The symbolized stack if it was read, else the Java frames.
    pub fn stack(&self) -> &[Frame] {
        if self.symbolized.is_empty() {
            &self.java
        } else {
            &self.symbolized
        }
    }

    /// The sample in one line, for messages: thread, flags, and the frames leaf first.
    pub fn describe(&self) -> String {
        let frames: Vec<String> = self.stack().iter().map(Frame::name).collect();
        format!(
            "thread={:?} virtual={} id={:?} truncated={:?} native_pcs={} [{}]",
            self.thread,
            self.is_virtual,
            self.java_thread_id,
            self.truncated,
            self.native_pcs,
            frames.join(" <- ")
        )
    }
}

#[derive(Deserialize)]
struct Document {
    recording: Recording,
}

#[derive(Deserialize)]
struct Recording {
    events: Vec<Event>,
}

#[derive(Deserialize)]
struct Event {
    values: Values,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Values {
    start_time: String,
    event_thread: Option<JsonThread>,
    stack_trace: Option<JsonTrace>,
    #[serde(default)]
    native_stack_trace: Option<JsonNativeTrace>,
    #[serde(default)]
    biased: Option<bool>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct JsonThread {
    java_name: Option<String>,
    java_thread_id: Option<i64>,
    #[serde(rename = "virtual", default)]
    is_virtual: Option<bool>,
}

#[derive(Deserialize)]
struct JsonTrace {
    truncated: bool,
    #[serde(default)]
    frames: Vec<JsonFrame>,
}

#[derive(Deserialize)]
struct JsonNativeTrace {
    #[serde(default)]
    frames: Vec<serde::de::IgnoredAny>,
}

#[derive(Deserialize)]
struct JsonFrame {
    method: Option<JsonMethod>,
    #[serde(rename = "type")]
    kind: Option<String>,
}

#[derive(Deserialize)]
struct JsonMethod {
    #[serde(rename = "type")]
    class: Option<JsonClass>,
    name: Option<String>,
    descriptor: Option<String>,
    modifiers: Option<i64>,
    #[serde(default)]
    hidden: Option<bool>,
}

#[derive(Deserialize)]
struct JsonClass {
    name: Option<String>,
    package: Option<serde::de::IgnoredAny>,
}

/// `native` alone, the modifiers the symbolizer gives a native frame's method.
const NATIVE_MODIFIERS: i64 = 0x100;

fn frame(f: JsonFrame) -> Frame {
    let kind = f.kind.unwrap_or_else(|| "?".into());
    let Some(m) = f.method else {
        return Frame {
            class: "?".into(),
            method: "?".into(),
            kind,
            hidden: false,
            symbolized_native: false,
        };
    };
    let (class, package) = match m.class {
        Some(c) => (c.name.unwrap_or_else(|| "?".into()), c.package.is_some()),
        None => ("?".into(), false),
    };
    let symbolized_native = kind == "Native"
        && !package
        && m.descriptor.as_deref() == Some("()V")
        && m.modifiers == Some(NATIVE_MODIFIERS);
    Frame {
        class: class.replace('/', "."),
        method: m.name.unwrap_or_else(|| "?".into()),
        kind,
        hidden: m.hidden.unwrap_or(false),
        symbolized_native,
    }
}

/// The `jdk.CPUTimeSample` events of `path`, in file order, as `jfr print --json` of `jdk`
/// reads them (stacks to [`STACK_DEPTH`] frames).
fn events(jdk: &Jdk, path: &Path) -> Result<Vec<Values>, String> {
    let out = Command::new(jdk.tool("jfr"))
        .args(["print", "--json", "--stack-depth"])
        .arg(STACK_DEPTH.to_string())
        .args(["--events", "jdk.CPUTimeSample"])
        .arg(path)
        .output()
        .map_err(|e| format!("jfr print {}: {e}", path.display()))?;
    if !out.status.success() {
        return Err(format!(
            "jfr print {}: {}",
            path.display(),
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let doc: Document = serde_json::from_slice(&out.stdout)
        .map_err(|e| format!("jfr print --json {}: {e}", path.display()))?;
    Ok(doc.recording.events.into_iter().map(|e| e.values).collect())
}

fn sample(v: Values) -> Result<Sample, String> {
    let thread = v.event_thread;
    let (truncated, java) = match v.stack_trace {
        Some(t) => (Some(t.truncated), t.frames.into_iter().map(frame).collect()),
        None => (None, Vec::new()),
    };
    Ok(Sample {
        start_ns: instant_ns(&v.start_time)?,
        thread: thread.as_ref().and_then(|t| t.java_name.clone()),
        is_virtual: thread.as_ref().and_then(|t| t.is_virtual) == Some(true),
        java_thread_id: thread.as_ref().and_then(|t| t.java_thread_id),
        biased: v.biased == Some(true),
        truncated,
        java,
        native_pcs: v.native_stack_trace.map_or(0, |n| n.frames.len()),
        symbolized: Vec::new(),
    })
}

/// The samples of a raw recording of the agent, with the stacks of its symbolized copy when
/// given (the two files hold the same samples in the same order: checked, by time and thread).
pub fn read(jdk: &Jdk, raw: &Path, symbolized: Option<&Path>) -> Result<Vec<Sample>, String> {
    let mut samples: Vec<Sample> = events(jdk, raw)?
        .into_iter()
        .map(sample)
        .collect::<Result<_, _>>()?;
    if let Some(path) = symbolized {
        let named: Vec<Sample> = events(jdk, path)?
            .into_iter()
            .map(sample)
            .collect::<Result<_, _>>()?;
        if named.len() != samples.len() {
            return Err(format!(
                "{} has {} samples, {} has {}",
                raw.display(),
                samples.len(),
                path.display(),
                named.len()
            ));
        }
        for (s, n) in samples.iter_mut().zip(named) {
            if (s.start_ns, &s.thread, s.java_thread_id)
                != (n.start_ns, &n.thread, n.java_thread_id)
            {
                return Err(format!(
                    "{} and {} list their samples in different orders",
                    raw.display(),
                    path.display()
                ));
            }
            s.symbolized = n.java;
        }
    }
    Ok(samples)
}

/// The samples of a recording of the JDK's own sampler.
pub fn read_jdk(jdk: &Jdk, path: &Path) -> Result<Vec<Sample>, String> {
    events(jdk, path)?.into_iter().map(sample).collect()
}

/// `2026-11-23T20:18:34.015901981Z` (UTC, as `jfr print --json` writes instants) in ns since
/// 1970.
pub fn instant_ns(text: &str) -> Result<i64, String> {
    let bad = || format!("not a UTC instant: {text}");
    let body = text.strip_suffix('Z').ok_or_else(bad)?;
    let (date, time) = body.split_once('T').ok_or_else(bad)?;
    let number = |s: &str| s.parse::<i64>().map_err(|_| bad());
    let d: Vec<&str> = date.split('-').collect();
    let (clock, fraction) = time.split_once('.').unwrap_or((time, "0"));
    let t: Vec<&str> = clock.split(':').collect();
    let ([y, m, day], [h, mi, s]) = (d.as_slice(), t.as_slice()) else {
        return Err(bad());
    };
    if fraction.len() > 9 {
        return Err(bad());
    }
    let days = days_from_civil(number(y)?, number(m)?, number(day)?);
    let seconds = ((days * 24 + number(h)?) * 60 + number(mi)?) * 60 + number(s)?;
    Ok(seconds * 1_000_000_000 + number(&format!("{fraction:0<9}"))?)
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_instants() {
        assert_eq!(instant_ns("1970-01-01T00:00:00Z"), Ok(0));
        assert_eq!(
            instant_ns("2026-11-23T20:18:34.015901981Z"),
            Ok(1_795_465_114_015_901_981)
        );
        assert_eq!(
            instant_ns("2000-03-01T00:00:01.5Z"),
            Ok(951_868_801_500_000_000)
        );
        assert!(instant_ns("2026-11-23 20:18:34Z").is_err());
        assert!(instant_ns("2026-11-23T20:18:34").is_err());
    }
}
