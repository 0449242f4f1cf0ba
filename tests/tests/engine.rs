//! The sampling engines on JDK 17 and JDK 25: `engine=perf` (the default) takes about one real
//! stack per interval of CPU time, beyond the scheduler tick that limits the timers, with
//! weights that sum to each thread's CPU time; unprivileged it counts user time and its weights
//! still hold the kernel time; where perf is refused (a seccomp filter, as in containers) the
//! recording goes on with CPU timers and says so once.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

use tests::jdk::{missing, oracle_jdks, Jdk};
use tests::readers::{jfr_json, lost_cpu_ticks_by_thread, run};
use tests::workload::{build_once, java_with_agent, run_java, thread_cpu_ns};

/// Two busy threads: one in the JNI library's chain, one in Java.
const THREADS: &str = "w-native:native,w-java:java";
const BUSY: [&str; 2] = ["w-native", "w-java"];

fn out_dir(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("jfrnative-engine-{}-{test}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// `testdata/seccomp/deny_perf`: runs a program with perf_event_open failing with EPERM.
fn deny_perf() -> PathBuf {
    static BUILT: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    build_once(&BUILT, "seccomp", |_, src, dir| {
        run(Command::new("gcc")
            .args(["-O2", "-o"])
            .arg(dir.join("deny_perf"))
            .arg(src.join("deny_perf.c")))
        .map(drop)
    })
    .join("deny_perf")
}

/// `wrapper... java ...`: the workload command run through another program.
fn wrapped(wrapper: &[&str], java: &Command) -> Command {
    let mut cmd = Command::new(wrapper[0]);
    cmd.args(&wrapper[1..])
        .arg(java.get_program())
        .args(java.get_args());
    cmd
}

/// Per busy thread: (samples, Σ samplingPeriod + the CPU time of its lost samples in µs, the
/// thread's CPU time in µs).
fn per_thread(jdk: &Jdk, file: &Path, out: &Output) -> BTreeMap<&'static str, (u64, u64, u64)> {
    per_named_thread(jdk, file, out, &BUSY)
}

/// [`per_thread`] for the threads named `busy`.
fn per_named_thread(
    jdk: &Jdk,
    file: &Path,
    out: &Output,
    busy: &[&'static str],
) -> BTreeMap<&'static str, (u64, u64, u64)> {
    let reading = jfr_json(jdk, file).unwrap_or_else(|e| panic!("{}: {e}", jdk.name()));
    let lost = lost_cpu_ticks_by_thread(jdk, file).unwrap_or_else(|e| panic!("{e}"));
    let cpu = thread_cpu_ns(&out.stdout);
    busy.iter()
        .map(|&thread| {
            let samples: Vec<_> = reading
                .samples
                .iter()
                .filter(|s| s.thread == thread)
                .collect();
            let period_us: u64 = samples.iter().map(|s| s.period_ticks).sum::<u64>()
                + lost.get(thread).copied().unwrap_or(0);
            (
                thread,
                (samples.len() as u64, period_us, cpu[thread] / 1_000),
            )
        })
        .collect()
}

/// The workload's threads for 2 CPU-seconds each at 1 ms with `options`, run through `wrapper`
/// (none if empty); returns the file and the JVM's output.
fn record(jdk: &Jdk, test: &str, options: &str, wrapper: &[&str]) -> (PathBuf, Output) {
    record_threads(jdk, test, options, wrapper, THREADS)
}

/// [`record`] with the workload's threads given (`name:mode,...`).
fn record_threads(
    jdk: &Jdk,
    test: &str,
    options: &str,
    wrapper: &[&str],
    threads: &str,
) -> (PathBuf, Output) {
    let dir = out_dir(test);
    let file = dir.join(format!("jdk{}.jfr", jdk.major));
    let agent = format!("file={},interval=1ms{options}", file.display());
    let mut java = java_with_agent(jdk, &agent, &[], 2.0, threads);
    let out = if wrapper.is_empty() {
        run_java(jdk, &mut java)
    } else {
        run_java(jdk, &mut wrapped(wrapper, &java))
    }
    .unwrap_or_else(|e| panic!("{e}"));
    (file, out)
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Asserts each busy thread's Σ samplingPeriod (plus the CPU time of its lost samples) is
/// within 1% of its CPU time; returns the real samples per CPU-second of each.
fn assert_weights(what: &str, threads: &BTreeMap<&str, (u64, u64, u64)>) -> Vec<f64> {
    threads
        .iter()
        .map(|(thread, &(samples, period_us, cpu_us))| {
            let rate = samples as f64 / (cpu_us as f64 / 1e6);
            let error = (period_us as f64 - cpu_us as f64).abs() / cpu_us as f64;
            eprintln!(
                "{what}: {thread}: {samples} samples, {rate:.0} per CPU-second; Σ samplingPeriod \
                 + lost {period_us} us of {cpu_us} us CPU ({:.2}%)",
                error * 100.0
            );
            assert!(
                error <= 0.01,
                "{what}: {thread}: Σ samplingPeriod {period_us} us of {cpu_us} us CPU"
            );
            rate
        })
        .collect()
}

#[test]
fn perf_takes_a_stack_every_interval_with_exact_weights() {
    for jdk in oracle_jdks() {
        let what = format!("{} engine=perf", jdk.name());
        let (file, out) = record(&jdk, "perf", "", &[]);
        let log = stderr(&out);
        assert!(log.contains("engine: perf (task-clock"), "{what}: {log}");
        assert!(!log.contains("perf_event_open failed"), "{what}: {log}");
        for rate in assert_weights(&what, &per_thread(&jdk, &file, &out)) {
            assert!(rate >= 950.0, "{what}: {rate:.0} samples per CPU-second");
        }
        // The timers on the same workload, for comparison: tick-limited (HZ real samples per
        // CPU-second at most), weights exact through their overrun counts.
        let what = format!("{} engine=timer", jdk.name());
        let (file, out) = record(&jdk, "timer", ",engine=timer", &[]);
        assert!(stderr(&out).contains("engine: timer"), "{what}");
        assert_weights(&what, &per_thread(&jdk, &file, &out));
    }
}

#[test]
fn perf_refused_by_a_seccomp_filter_falls_back_to_timers() {
    let deny = deny_perf();
    let deny = deny.to_str().unwrap();
    for jdk in oracle_jdks() {
        let what = format!("{} under a filter refusing perf_event_open", jdk.name());
        let (file, out) = record(&jdk, "seccomp", ",engine=perf", &[deny]);
        let log = stderr(&out);
        let said = log
            .matches("jfr-native: engine=perf: perf_event_open failed (Operation not permitted")
            .count();
        assert_eq!(said, 1, "{what}: the fallback is said once: {log}");
        assert!(
            log.contains("sampling with per-thread CPU timers (engine=timer)"),
            "{what}"
        );
        assert!(log.contains("engine: timer"), "{what}: {log}");
        // The recording happens, with the timers' weights.
        let threads = per_thread(&jdk, &file, &out);
        assert_weights(&what, &threads);
        for (thread, (samples, _, _)) in threads {
            assert!(samples >= 100, "{what}: {thread}: {samples} samples");
        }
    }
}

/// Whether `nobody` can run programs from this checkout (the test skips otherwise, e.g. in a
/// home directory closed to other users).
fn nobody_can_run(paths: &[&Path]) -> bool {
    paths.iter().all(|p| {
        Command::new("setpriv")
            .args([
                "--reuid=nobody",
                "--regid=nogroup",
                "--clear-groups",
                "test",
                "-r",
            ])
            .arg(p)
            .status()
            .is_ok_and(|s| s.success())
    })
}

#[test]
fn unprivileged_perf_counts_user_time_and_weights_hold_kernel_time() {
    let paranoid = std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid")
        .unwrap_or_default()
        .trim()
        .parse::<i32>()
        .unwrap_or(3);
    let root = real_uid() == 0;
    if !root || paranoid != 2 {
        let why = format!(
            "root, to drop to nobody, and kernel.perf_event_paranoid 2 (uid {}, level {paranoid})",
            real_uid()
        );
        missing(&why, "unprivileged perf");
        return;
    }
    let agent = tests::workload::agent_library();
    let workload = tests::workload::workload_dir();
    if !nobody_can_run(&[&agent, &workload]) {
        let why = format!("user nobody able to read {}", agent.display());
        missing(&why, "unprivileged perf");
        return;
    }
    for jdk in oracle_jdks() {
        let what = format!("{} as nobody", jdk.name());
        let dir = out_dir("nobody");
        run(Command::new("chmod").arg("0777").arg(&dir)).unwrap();
        let (file, out) = record(
            &jdk,
            "nobody",
            "",
            &[
                "setpriv",
                "--reuid=nobody",
                "--regid=nogroup",
                "--clear-groups",
                "--inh-caps=-all",
            ],
        );
        let log = stderr(&out);
        assert!(
            log.contains("engine: perf (task-clock, user time"),
            "{what}: {log}"
        );
        for rate in assert_weights(&what, &per_thread(&jdk, &file, &out)) {
            // Kernel time is not counted, so a little less than one sample per interval.
            assert!(rate >= 800.0, "{what}: {rate:.0} samples per CPU-second");
        }
    }
}

/// The real user id of the test process (from /proc, without unsafe code).
fn real_uid() -> u32 {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("Uid:"))
        .and_then(|l| l.split_whitespace().next()?.parse().ok())
        .unwrap_or(u32::MAX)
}

#[test]
fn a_small_descriptor_limit_leaves_descriptors_to_the_application() {
    // With a limit of 1,024 descriptors the agent opens no counter (it keeps a quarter of the
    // limit, and 1,024, to the application): every thread gets a CPU timer, said once.
    for jdk in oracle_jdks() {
        let what = format!("{} with 1,024 descriptors", jdk.name());
        let (file, out) = record(&jdk, "nofile", "", &["prlimit", "--nofile=1024:1024"]);
        let log = stderr(&out);
        assert_eq!(
            log.matches("jfr-native: cannot open a perf counter for thread")
                .count(),
            1,
            "{what}: said once: {log}"
        );
        assert!(
            log.contains("threads sampled with a CPU timer (no perf counter)"),
            "{what}: {log}"
        );
        let threads = per_thread(&jdk, &file, &out);
        assert_weights(&what, &threads);
        for (thread, (samples, _, _)) in threads {
            assert!(samples >= 100, "{what}: {thread}: {samples} samples");
        }
    }
}

#[test]
fn a_full_signal_queue_does_not_kill_the_jvm() {
    // No real-time signal can be queued: the kernel sends each counter's overflow as SIGIO,
    // whose default action ends the process (exit 157, "I/O possible", before the agent
    // handled it). The JVM must run to its end and say what happened.
    for jdk in oracle_jdks() {
        let what = format!("{} with RLIMIT_SIGPENDING 0", jdk.name());
        let (_, out) = record(&jdk, "sigpending", "", &["prlimit", "--sigpending=0"]);
        let log = stderr(&out);
        assert!(out.status.success(), "{what}: {log}");
        assert!(
            log.contains("counter signals received as SIGIO (signal queue full)"),
            "{what}: {log}"
        );
    }
}

#[test]
fn a_thread_that_blocks_the_signal_queues_a_bounded_number_of_samples() {
    // The masked thread burns its 2 CPU-seconds in 100 ms native slices with every signal
    // blocked. A counter armed without a limit would queue one real-time signal per ms of
    // each slice (about 2,000 in all, a burst of 100 after each slice); armed for 16 overflows
    // at a time, at most 16 queue per slice. Its weights must still add up to its CPU time:
    // the first sample after each slice carries the slice.
    const SLICES: u64 = 20;
    for jdk in oracle_jdks() {
        let what = format!("{} with a thread that blocks signals", jdk.name());
        let (file, out) = record_threads(&jdk, "masked", "", &[], "w-masked:masked");
        let log = stderr(&out);
        assert!(out.status.success(), "{what}: {log}");
        assert!(log.contains("engine: perf (task-clock"), "{what}: {log}");
        let threads = per_named_thread(&jdk, &file, &out, &["w-masked"]);
        assert_weights(&what, &threads);
        let (samples, _, _) = threads["w-masked"];
        assert!(
            (SLICES / 2..=17 * SLICES + 40).contains(&samples),
            "{what}: {samples} samples for {SLICES} masked slices"
        );
    }
}

/// The short form of `tools/scripts/interrupt_cost.sh` (what one 1 ms interrupt costs the
/// machine before any profiler work): every mode runs, and a counter armed 16 overflows at a
/// time signals once per ms of CPU, as one re-armed after each overflow does.
#[test]
fn the_interrupt_cost_script_measures_every_signal_source() {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tools/scripts/interrupt_cost.sh");
    let out = run(Command::new("bash").arg(script).args(["1", "400000000"]))
        .unwrap_or_else(|e| panic!("{e}"));
    eprintln!("{out}");
    for mode in [
        "none",
        "cpu-timer",
        "mono-timer",
        "perf-nosignal",
        "perf-refresh-1",
        "perf-refresh-16",
    ] {
        let row: Vec<&str> = out
            .lines()
            .find(|l| l.split_whitespace().next() == Some(mode))
            .unwrap_or_else(|| panic!("no {mode} row:\n{out}"))
            .split_whitespace()
            .collect();
        let rate: f64 = row[2].parse().unwrap();
        if mode.starts_with("perf-refresh") || mode == "mono-timer" {
            assert!(
                rate >= 900.0,
                "{mode}: {rate} signals per CPU-second\n{out}"
            );
        }
    }
}
