//! Another CPU profiler in the same JVM must not hide the truth. The `testdata/coincident`
//! workload runs busy pure-Java threads, each with a second per-thread CPU-time timer of its
//! own ("the other profiler": `timer_create` on the thread's CPU clock, `SIGEV_THREAD_ID`, a
//! handler with an empty `sa_mask` that does a few hundred ns of work), at the agent's interval
//! (1 ms) on JDK 17 and JDK 25.
//!
//! Both timers expire at the same scheduler tick, so the kernel delivers both signals at once:
//! the other profiler's (the lower number) first, then ours on top, before the other handler's
//! first instruction. Taken as it is, such a sample has its leaf in the other handler and no
//! Java stack (AsyncGetCallTrace sees a native pc on a thread in Java). The agent recognizes a
//! handler entered but not started (`unwind::walk::entered_handler`) and takes the sample from
//! the code that handler's signal interrupted.

use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;

use tests::golden::SampleView;
use tests::jdk::{oracle_jdks, Jdk};
use tests::natives::Symbols;
use tests::readers::{jfr_json, run};
use tests::workload::{build_once, java_with_agent_in, javac, jni_gcc, run_java, thread_cpu_ns};

/// CPU time each busy thread runs for.
const SECONDS: f64 = 2.5;
/// Busy threads.
const THREADS: usize = 2;
/// Our signal: above the other profiler's, so that ours is the one delivered on top (the
/// agent's default, SIGRTMIN+4, is above SIGPROF, which most profilers use, for the same effect).
const OUR_SIGNAL: i32 = 50;
/// The other profiler's signal.
const OTHER_SIGNAL: i32 = 40;
/// Both profilers' interval.
const INTERVAL_NS: u64 = 1_000_000;
/// The other profiler's library and its handler's functions.
const LIBRARY: &str = "libotherprofiler.so";
const HANDLER_FUNCTIONS: [&str; 2] = ["other_profiler_handler", "other_profiler_work"];
/// Fewest busy-thread samples a check needs.
const MIN_SAMPLES: usize = 300;

/// A directory with `libotherprofiler.so` (`-O2`) and the `Coincident` class.
fn workload_dir() -> PathBuf {
    static BUILT: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    build_once(&BUILT, "coincident", |jdk, src, dir| {
        run(jni_gcc(jdk, &["-O2"])
            .arg(src.join("other_profiler.c"))
            .arg("-o")
            .arg(dir.join(LIBRARY))
            .arg("-lrt"))?;
        javac(jdk, &src.join("Coincident.java"), dir)
    })
}

/// One JDK's run.
struct Recording {
    jdk: Jdk,
    /// The busy threads' samples.
    samples: Vec<SampleView>,
    symbols: Symbols,
    /// The agent's summary (stderr).
    stderr: String,
    /// Signals the other profiler's handler took.
    other_signals: u64,
}

fn record(jdk: &Jdk) -> Result<Recording, String> {
    let dir = workload_dir();
    let file = dir.join(format!("jdk{}.jfr", jdk.major));
    // The timer engine: its timers expire on the same scheduler tick as the other profiler's,
    // which is the case under test (perf counters fire between ticks).
    let options = format!(
        "file={},interval={}us,signal={OUR_SIGNAL},engine=timer",
        file.display(),
        INTERVAL_NS / 1_000
    );
    let mut java = java_with_agent_in(jdk, &options, &[], &dir);
    java.arg("Coincident")
        .arg(SECONDS.to_string())
        .arg(OTHER_SIGNAL.to_string())
        .arg(INTERVAL_NS.to_string())
        .arg(THREADS.to_string());
    let out = run_java(jdk, &mut java)?;
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let cpu = thread_cpu_ns(&out.stdout);
    if cpu.len() != THREADS {
        return Err(format!("{}: CPU lines: {stdout}", jdk.name()));
    }
    let other_signals = stdout
        .lines()
        .find_map(|l| l.strip_prefix("OTHER_SIGNALS "))
        .and_then(|n| n.trim().parse().ok())
        .ok_or_else(|| format!("{}: no OTHER_SIGNALS line: {stdout}", jdk.name()))?;
    let reading = jfr_json(jdk, &file)?;
    let symbols = Symbols::new(&reading);
    let samples = reading
        .samples
        .into_iter()
        .filter(|s| s.thread.starts_with("busy-"))
        .collect();
    Ok(Recording {
        jdk: jdk.clone(),
        samples,
        symbols,
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        other_signals,
    })
}

/// The recordings, one per JDK, made once per test process.
fn recordings() -> &'static [Recording] {
    static RECORDINGS: OnceLock<Result<Vec<Recording>, String>> = OnceLock::new();
    RECORDINGS
        .get_or_init(|| oracle_jdks().iter().map(record).collect())
        .as_deref()
        .unwrap_or_else(|e| panic!("recording the coincident workload: {e}"))
}

/// Whether the sample's leaf is in the other profiler's handler (or the work it calls).
fn leaf_in_other_handler(rec: &Recording, s: &SampleView) -> bool {
    rec.symbols
        .frames(s)
        .first()
        .is_some_and(|f| HANDLER_FUNCTIONS.iter().any(|h| f.is(LIBRARY, h)))
}

/// Whether the sample has the busy thread's Java stack.
fn has_java_stack(s: &SampleView) -> bool {
    !s.failed && s.java.iter().any(|f| f.starts_with("Coincident."))
}

/// Runs `check` on every recording (which must have enough samples, and the other profiler must
/// have run), then fails with all its errors.
fn on_every_jdk(check: impl Fn(&Recording) -> Result<(), String>) {
    let errors: Vec<String> = recordings()
        .iter()
        .map(|rec| {
            let jdk = rec.jdk.name();
            if rec.samples.len() < MIN_SAMPLES {
                return Err(format!("{jdk}: only {} samples", rec.samples.len()));
            }
            if rec.other_signals < rec.samples.len() as u64 / 2 {
                return Err(format!(
                    "{jdk}: the other profiler took only {} signals ({} samples of ours)",
                    rec.other_signals,
                    rec.samples.len()
                ));
            }
            check(rec)
        })
        .filter_map(Result::err)
        .collect();
    assert!(errors.is_empty(), "{}", errors.join("\n"));
}

/// `part` of `of` samples as a percentage, printed.
fn percent(rec: &Recording, what: &str, part: usize, of: usize) -> f64 {
    let share = 100.0 * part as f64 / of.max(1) as f64;
    eprintln!(
        "{}: {what}: {part} of {of} busy-thread samples ({share:.1}%); the other profiler took {} signals",
        rec.jdk.name(),
        rec.other_signals
    );
    share
}

#[test]
fn few_samples_have_their_leaf_in_another_profilers_handler() {
    on_every_jdk(|rec| {
        let inside: Vec<&SampleView> = rec
            .samples
            .iter()
            .filter(|s| leaf_in_other_handler(rec, s))
            .collect();
        let share = percent(
            rec,
            "leaf in the other handler",
            inside.len(),
            rec.samples.len(),
        );
        if share > 5.0 {
            return Err(format!(
                "{}: {share:.1}% of the samples have their leaf in the other profiler's handler (want <= 5%); first: {}",
                rec.jdk.name(),
                rec.symbols.describe(inside[0])
            ));
        }
        Ok(())
    });
}

#[test]
fn samples_that_arrive_with_another_profilers_signal_keep_the_java_stack() {
    on_every_jdk(|rec| {
        let without: Vec<&SampleView> = rec.samples.iter().filter(|s| !has_java_stack(s)).collect();
        let with = rec.samples.len() - without.len();
        let share = percent(rec, "with a Java stack", with, rec.samples.len());
        if share < 95.0 {
            return Err(format!(
                "{}: {share:.1}% of the samples have the Java stack (want >= 95%); first without: {}",
                rec.jdk.name(),
                rec.symbols.describe(without[0])
            ));
        }
        Ok(())
    });
}

#[test]
fn the_summary_counts_samples_taken_under_another_handlers_entry() {
    on_every_jdk(|rec| {
        let count: u64 = rec
            .stderr
            .lines()
            .find_map(|l| {
                l.trim()
                    .strip_prefix("another signal handler at its entry: ")
            })
            .and_then(|rest| rest.split_whitespace().next()?.parse().ok())
            .unwrap_or(0);
        let share = percent(
            rec,
            "taken from the context another handler's signal interrupted (summary)",
            count as usize,
            rec.samples.len(),
        );
        if share < 50.0 {
            return Err(format!(
                "{}: the summary counts {count} samples taken under another handler's entry (want most of {}): {}",
                rec.jdk.name(),
                rec.samples.len(),
                rec.stderr
            ));
        }
        Ok(())
    });
}

/// The scenario is what it claims: the other profiler's handler makes a frame and calls its
/// work (so that time in it is not mistaken for an entry), and the timer signal set up here is
/// real (checked by the run itself: `OTHER_SIGNALS`).
#[test]
fn the_other_handler_calls_its_work() {
    let lib = workload_dir().join(LIBRARY);
    let text = run(Command::new("objdump")
        .args(["-d", "--no-show-raw-insn"])
        .arg(&lib))
    .unwrap_or_else(|e| panic!("{e}"));
    let body: Vec<&str> = text
        .split("\n\n")
        .find(|block| block.contains("<other_profiler_handler>:"))
        .unwrap_or_else(|| panic!("no other_profiler_handler in {}", lib.display()))
        .lines()
        .collect();
    assert!(
        body.iter()
            .any(|l| l.contains("call") && l.contains("other_profiler_work")),
        "{body:#?}"
    );
}
