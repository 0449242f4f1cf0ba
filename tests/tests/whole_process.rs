//! `threads=all`: the whole process's CPU, the JVM's own threads and native threads included.
//!
//! - An allocation loop under G1 and under generational ZGC (JDK 25): the GC threads are
//!   sampled (their share of the recorded CPU), written as the JDK writes its VM thread (OS name
//!   and id, no Java name, Java thread id 0); the recording's CPU (Σ `samplingPeriod` and lost
//!   CPU time, read by the JDK's reader) is the process's CPU during the recording within 2 %,
//!   as the test itself reads it from the kernel (`tests::process_cpu`: `/proc/PID/stat` while
//!   the agent's writer thread lives, less that thread's own CPU time, which is not sampled,
//!   from its `/proc/PID/task/TID/schedstat`), not the agent's own figure; each busy thread's
//!   recorded CPU is its own CPU time (the kernel's `schedstat`, read by the program itself),
//!   the allocating threads and the GC threads among them.
//! - A JNI library that starts two pthreads of its own after a second, named with `prctl`, that
//!   compress with zlib: both are sampled from their start (at most 110 ms of their CPU time
//!   before their first sample: a bound in CPU time, not in wall time), with their own CPU
//!   time, their stacks through the library's function and zlib's `deflate`.
//! - 2,000 short-lived native threads: the JVM lives, the recording is whole, slots are reused.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;
use tests::jdk::{required, Jdk};
use tests::process_cpu::run_watched;
use tests::readers::{cpu_sample_events, iso_duration_ticks, lost_cpu_ticks_by_thread};
use tests::workload::{agent_library, jfr_symbolize, run_java, wholeproc_dir};

fn work_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("jfrnative-whole-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// `WholeProcess ARGS` with the agent (`options`) and `jvm_args`.
fn whole_command(jdk: &Jdk, options: &str, jvm_args: &[&str], args: &[&str]) -> Command {
    let dir = wholeproc_dir();
    let mut java = Command::new(jdk.tool("java"));
    java.args(jvm_args)
        .arg(format!(
            "-agentpath:{}={options}",
            agent_library().display()
        ))
        .arg(format!("-Djava.library.path={}", dir.display()))
        .arg("-cp")
        .arg(&dir)
        .arg("WholeProcess")
        .args(args);
    java
}

/// Runs `WholeProcess ARGS` with the agent (`options`) and `jvm_args`.
fn run_whole(jdk: &Jdk, options: &str, jvm_args: &[&str], args: &[&str]) -> Output {
    let mut java = whole_command(jdk, options, jvm_args, args);
    run_java(jdk, &mut java).unwrap_or_else(|e| panic!("{e}"))
}

/// One thread as the JDK's reader sees our samples of it.
#[derive(Debug, Default)]
struct ThreadSamples {
    samples: u64,
    cpu_ns: u64,
    java_ids: Vec<i64>,
    java_names: Vec<Option<String>>,
    first_ns: i64,
}

/// Our samples by the thread's OS name (`jfr print --json` of `jdk`).
fn by_thread(jdk: &Jdk, file: &Path) -> BTreeMap<String, ThreadSamples> {
    let mut threads: BTreeMap<String, ThreadSamples> = BTreeMap::new();
    for e in cpu_sample_events(jdk, file).unwrap() {
        let v = &e["values"];
        let thread = &v["eventThread"];
        let name = thread["osName"].as_str().unwrap_or("?").to_string();
        let t = threads.entry(name).or_insert(ThreadSamples {
            first_ns: i64::MAX,
            ..ThreadSamples::default()
        });
        t.samples += 1;
        t.cpu_ns += 1_000 * iso_duration_ticks(v["samplingPeriod"].as_str().unwrap()).unwrap();
        let id = thread["javaThreadId"].as_i64().unwrap_or(-1);
        if !t.java_ids.contains(&id) {
            t.java_ids.push(id);
        }
        let jname = thread["javaName"].as_str().map(str::to_string);
        if !t.java_names.contains(&jname) {
            t.java_names.push(jname);
        }
        t.first_ns = t.first_ns.min(epoch_ns(&v["startTime"]));
    }
    threads
}

/// `jfr print --json`'s time (`2026-11-27T21:10:29.897123456Z`) as ns since the epoch.
fn epoch_ns(v: &Value) -> i64 {
    let text = v.as_str().unwrap();
    let out = Command::new("date")
        .args(["-u", "-d", text, "+%s%N"])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).trim().parse().unwrap()
}

/// The `TASK name ns` lines: each thread's CPU time by its name (threads of one name summed).
fn task_cpu_ns(stdout: &str) -> BTreeMap<String, u64> {
    let mut tasks = BTreeMap::new();
    for line in stdout.lines() {
        let w: Vec<&str> = line.split('\t').collect();
        if let ["TASK", name, ns] = w.as_slice() {
            *tasks.entry(name.to_string()).or_default() += ns.parse::<u64>().unwrap();
        }
    }
    tasks
}

/// The agent's `threads=all` line: (CPU-s of the process during the recording in threads other
/// than the agent's writer, which is not sampled, by the agent's own count; CPU-s the samples
/// and lost samples stand for).
fn process_line(stderr: &str) -> (f64, f64) {
    let line = stderr
        .lines()
        .find(|l| l.contains("threads=all:"))
        .unwrap_or_else(|| panic!("no threads=all line: {stderr}"));
    let number_before = |what: &str| -> f64 {
        let at = line.find(what).unwrap();
        line[..at]
            .split_whitespace()
            .last()
            .unwrap()
            .parse()
            .unwrap()
    };
    (
        number_before(" of them in threads other"),
        number_before(" CPU-s (").max(0.0),
    )
}

/// Largest relative difference of the recording's CPU with the process's, as the kernel counts
/// it while the recording ran.
const MAX_CPU_ERROR: f64 = 0.02;

#[test]
fn gc_threads_are_sampled_and_the_recording_adds_up_to_the_process_cpu() {
    let Some(jdk) = required(25) else {
        return;
    };
    for (gc, flag) in [("G1", "-XX:+UseG1GC"), ("ZGC", "-XX:+UseZGC")] {
        let dir = work_dir(gc);
        let file = dir.join("alloc.jfr");
        let options = format!("file={},threads=all,interval=2ms", file.display());
        let mut java = whole_command(&jdk, &options, &[flag, "-Xmx256m"], &["alloc", "4"]);
        let (out, window) = run_watched(&mut java);
        assert!(out.status.success(), "{gc}: {out:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        let stdout = String::from_utf8_lossy(&out.stdout);
        let threads = by_thread(&jdk, &file);
        let lost: u64 = lost_cpu_ticks_by_thread(&jdk, &file)
            .unwrap()
            .values()
            .sum::<u64>()
            * 1_000;
        let recorded: u64 = threads.values().map(|t| t.cpu_ns).sum::<u64>() + lost;
        let (agent_s, claimed_s) = process_line(&stderr);
        let recorded_s = recorded as f64 / 1e9;
        // The process's CPU as the kernel counts it, read by this test: while the agent's
        // writer thread lived, less the writer's own (a range: the polls bracket each end).
        let (lo, hi) = window.during_ns();
        let (lo_s, hi_s) = (lo as f64 / 1e9, hi as f64 / 1e9);
        eprintln!(
            "{gc}: process {lo_s:.3}-{hi_s:.3} CPU-s while recorded (the kernel, read from \
             outside: {window:?}), {agent_s:.3} by the agent's own count; recorded \
             {recorded_s:.3} CPU-s; threads: {:?}",
            threads
                .iter()
                .map(|(n, t)| (n.as_str(), t.cpu_ns / 1_000_000))
                .collect::<Vec<_>>()
        );
        // The range is narrow enough for the check below to mean something (measured 0.6-1.1 %
        // of it: each end within two 2 ms polls).
        assert!(
            hi - lo <= lo / 20,
            "{gc}: the polls bracket the process's CPU only to {lo_s:.3}-{hi_s:.3} CPU-s"
        );
        // The JDK's reader and the agent count the same samples.
        assert!(
            (recorded_s - claimed_s).abs() < 0.02,
            "{gc}: {recorded_s} vs {claimed_s}"
        );
        assert!(
            recorded_s >= lo_s * (1.0 - MAX_CPU_ERROR)
                && recorded_s <= hi_s * (1.0 + MAX_CPU_ERROR),
            "{gc}: the recording has {recorded_s:.3} CPU-s of the process's {lo_s:.3}-{hi_s:.3}"
        );
        // GC threads: not Java threads, written as the JDK writes its own.
        let gc_threads: Vec<(&String, &ThreadSamples)> = threads
            .iter()
            .filter(|(n, _)| {
                n.starts_with("GC Thread") || n.starts_with('Z') || n.starts_with("G1")
            })
            .collect();
        let gc_ns: u64 = gc_threads.iter().map(|(_, t)| t.cpu_ns).sum();
        assert!(
            gc_ns * 20 > recorded,
            "{gc}: GC threads {gc_ns} ns of {recorded}"
        );
        for (name, t) in &gc_threads {
            assert_eq!(t.java_ids, vec![0], "{gc}: {name}");
            assert_eq!(t.java_names, vec![None], "{gc}: {name}");
        }
        for java in ["allocator-0", "allocator-1"] {
            let t = &threads[java];
            assert!(
                t.java_ids.iter().all(|&id| id > 0),
                "{gc}: {java}: {:?}",
                t.java_ids
            );
        }
        // Each busy thread: its recorded CPU is its own CPU time.
        let tasks = task_cpu_ns(&stdout);
        let compared = compare_busy_threads(gc, &threads, &tasks);
        for expected in ["allocator-0", "allocator-1"] {
            assert!(
                compared.iter().any(|n| n == expected),
                "{gc}: {expected} not compared with its own CPU time: {compared:?} of {tasks:?}"
            );
        }
        assert!(
            gc_threads.iter().any(|(n, _)| compared.contains(n)),
            "{gc}: no GC thread compared with its own CPU time: {compared:?} of {tasks:?}"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// Compares each busy thread's recorded CPU (Σ `samplingPeriod`) with its own CPU time (`TASK`
/// lines: `schedstat`, read by the program at its end); returns the names compared. Left out:
/// threads with less than 300 ms of CPU (a few samples' worth of noise), and `java`, the
/// launcher's first thread, which made the JVM before the recording started (its CPU time is
/// mostly from before). GC threads are compared too (they start with the JVM, but use next to
/// no CPU before the recording starts: measured 0.99-1.0 of their own).
fn compare_busy_threads(
    gc: &str,
    threads: &BTreeMap<String, ThreadSamples>,
    tasks: &BTreeMap<String, u64>,
) -> Vec<String> {
    let mut compared = Vec::new();
    for (name, &own) in tasks {
        if own < 300_000_000 || name == "java" {
            continue;
        }
        let recorded = threads.get(name).map_or(0, |t| t.cpu_ns);
        let ratio = recorded as f64 / own as f64;
        eprintln!(
            "{gc}: {name}: recorded {} ms of its {} ms ({ratio:.3})",
            recorded / 1_000_000,
            own / 1_000_000
        );
        assert!(
            (0.9..=1.05).contains(&ratio),
            "{gc}: {name}: recorded {} ms of its {} ms",
            recorded / 1_000_000,
            own / 1_000_000
        );
        compared.push(name.clone());
    }
    compared
}

/// Most CPU time (ms) a native thread started during the recording may use before it is
/// sampled: two scan periods of one CPU (100 ms), and its last interval (10 ms).
const MAX_UNSAMPLED_MS: i64 = 110;

#[test]
fn native_threads_a_library_starts_later_are_sampled_from_their_first_second() {
    let Some(jdk) = required(25) else {
        return;
    };
    let dir = work_dir("pthreads");
    let file = dir.join("pthreads.jfr");
    let options = format!("file={},threads=all", file.display());
    let out = run_whole(&jdk, &options, &[], &["pthreads", "5"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let threads = by_thread(&jdk, &file);
    let workers: Vec<(String, i64, u64)> = stdout
        .lines()
        .filter_map(|l| {
            let w: Vec<&str> = l.split('\t').collect();
            match w.as_slice() {
                ["WORKER", name, start, cpu] => Some((
                    name.to_string(),
                    start.parse().unwrap(),
                    cpu.parse().unwrap(),
                )),
                _ => None,
            }
        })
        .collect();
    assert_eq!(workers.len(), 2, "{stdout}");
    for (name, start_ns, cpu_ns) in &workers {
        let t = threads
            .get(name)
            .unwrap_or_else(|| panic!("no sample of {name}: {:?}", threads.keys()));
        // Sampled from its start: the CPU time it used before its first sample (its own CPU
        // time less what its samples stand for) is bounded in CPU time, not in wall time,
        // which a loaded machine stretches. The agent finds a new thread at its next scan of
        // /proc/self/task (every 50 ms); its CPU until then is written as lost, not sampled.
        let unsampled_ms = (*cpu_ns as i64 - t.cpu_ns as i64) / 1_000_000;
        let delay_ms = (t.first_ns - start_ns) / 1_000_000;
        assert!(
            unsampled_ms <= MAX_UNSAMPLED_MS,
            "{name}: {unsampled_ms} ms of its CPU time not sampled (first sample {delay_ms} ms \
             after its start)"
        );
        assert_eq!(t.java_ids, vec![0], "{name}");
        let ratio = t.cpu_ns as f64 / *cpu_ns as f64;
        assert!(
            (0.9..=1.05).contains(&ratio),
            "{name}: recorded {} ms of its {} ms",
            t.cpu_ns / 1_000_000,
            cpu_ns / 1_000_000
        );
        eprintln!(
            "{name}: first sample {delay_ms} ms after its start, {unsampled_ms} ms of CPU \
             before it; {} ms recorded of {} ms",
            t.cpu_ns / 1_000_000,
            cpu_ns / 1_000_000
        );
    }
    // Their stacks: the library's function and zlib's deflate, symbolized.
    let out = jfr_symbolize(&[
        file.to_str().unwrap(),
        "--format",
        "collapsed",
        "--thread",
        "zlib-worker",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let collapsed = String::from_utf8_lossy(&out.stdout);
    let (mut all, mut through) = (0u64, 0u64);
    for line in collapsed.lines() {
        let (stack, n) = line.rsplit_once(' ').unwrap();
        let n: u64 = n.parse().unwrap();
        all += n;
        if stack.contains("compress_block") && stack.contains("deflate") && stack.contains("work") {
            through += n;
        }
    }
    assert!(all > 0, "{collapsed}");
    assert!(
        through * 100 >= all * 90,
        "{through} of {all} CPU ns through work, compress_block and deflate:\n{collapsed}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn thousands_of_short_lived_native_threads_are_handled() {
    let Some(jdk) = required(25) else {
        return;
    };
    let dir = work_dir("churn");
    let file = dir.join("churn.jfr");
    let options = format!("file={},threads=all,interval=1ms", file.display());
    let out = run_whole(&jdk, &options, &[], &["churn", "2000"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stdout.contains("CHURNED\t2000"), "{stdout}");
    assert!(stderr.contains("jfr-native: wrote"), "{stderr}");
    let created: u64 = stderr
        .split("thread slots created ")
        .nth(1)
        .and_then(|r| r.split(',').next())
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("{stderr}"));
    assert!(
        created < 1_000,
        "{created} slots for 2000 short threads: {stderr}"
    );
    assert!(!cpu_sample_events(&jdk, &file).unwrap().is_empty());
    let _ = std::fs::remove_dir_all(&dir);
}
