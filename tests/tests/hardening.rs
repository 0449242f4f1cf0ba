//! The agent never crashes, hangs or misleads the JVM: each test puts a sampled thread where an
//! earlier agent crashed (exit 139 or 134), hung, or wrote samples to the wrong thread, using
//! `testdata/hardening` (a JNI library and `Hardening.java`), at 1 ms: the guard-zone and
//! unreadable-page cases on every JDK of the matrix (11, 17, 21, 25), the others on 17 and 25. The
//! tests check the JVM's exit, the agent's own counters in its summary line, and the recording
//! read by the JDK's `jfr`.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use tests::jdk::{matrix_jdks, oracle_jdks, Jdk};
use tests::readers::{jfr_json, run};
use tests::stress::{run_dir, run_guarded, JvmRun};
use tests::workload::{
    agent_library, build_once, java_with_agent_in, javac, jni_gcc, number_after,
};

/// The built workload: the class, `libhardening.so` and the `junk_signals` sender.
fn workload() -> PathBuf {
    static BUILT: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    build_once(&BUILT, "hardening", |jdk, src, dir| {
        // No frame pointers and no red zone: the spin loops push and set rbp themselves. Bound
        // at load: no lazy binding deep in the guard-zone descent.
        run(jni_gcc(
            jdk,
            &["-O2", "-fomit-frame-pointer", "-mno-red-zone", "-Wl,-z,now"],
        )
        .arg(src.join("hardening.c"))
        .arg("-o")
        .arg(dir.join("libhardening.so")))?;
        run(Command::new("gcc")
            .args(["-O2", "-o"])
            .arg(dir.join("junk_signals"))
            .arg(src.join("junk_signals.c")))?;
        javac(jdk, &src.join("Hardening.java"), dir)
    })
}

/// Runs `Hardening args` with the agent in `dir` (its hs_err file would land there), and
/// `started` with its pid once it runs; a run still going after [`LIMIT`] is killed as hung.
fn run_hardening(
    jdk: &Jdk,
    dir: &Path,
    options: &str,
    args: &[&str],
    started: impl FnOnce(u32),
) -> JvmRun {
    let mut java = java_with_agent_in(jdk, options, &[], &workload());
    java.current_dir(dir).arg("Hardening").args(args);
    run_guarded(&mut java, dir, LIMIT, started).unwrap()
}

/// A counter of the agent's summary, e.g. `too little stack left: 12`; 0 if absent (the
/// summary names only counters that are not zero).
fn counter(stderr: &str, name: &str) -> u64 {
    number_after(stderr, &format!("{name}: ")).map_or(0, |n| n as u64)
}

/// Asserts the JVM ended normally, with `DONE` and without a crash report, and returns its
/// stderr.
fn assert_survived(jdk: &Jdk, what: &str, run: &JvmRun) -> String {
    assert!(
        run.code() == Some(0) && !run.crashed() && run.stdout.contains("DONE"),
        "{}: {what}: {}",
        jdk.name(),
        run.describe()
    );
    assert!(run.stderr.contains("jfr-native: wrote"), "{}", run.stderr);
    run.stderr.clone()
}

const LIMIT: Duration = Duration::from_secs(90);

#[test]
fn a_thread_near_its_stack_guard_zone_is_skipped_not_crashed() {
    for jdk in matrix_jdks() {
        // An earlier agent died (exit 139) with 5.4 and 7.5 KB left.
        for left in ["5500", "7500"] {
            let dir = run_dir("hardening", &format!("guard{}-{left}", jdk.major));
            let options = format!("file={},interval=1ms", dir.join("g.jfr").display());
            let result = run_hardening(&jdk, &dir, &options, &["guard", left, "1.0"], drop);
            let stderr = assert_survived(&jdk, &format!("{left} bytes left"), &result);
            let skipped = counter(&stderr, "too little stack left");
            assert!(
                skipped >= 20,
                "{}: {skipped} samples skipped\n{stderr}",
                jdk.name()
            );
            let lost = jfr_json(&jdk, &dir.join("g.jfr")).unwrap().lost;
            assert!(
                lost.iter().any(|l| l.contains("too little stack left")),
                "{}: {left}: the skipped samples' CPU is reported lost: {lost:?}\n{stderr}",
                jdk.name()
            );
        }
    }
}

/// Fibers and alternate signal stacks, walked with frame pointers (an earlier agent read the
/// unmapped gap rbp points into and aborted) and with call-frame information.
#[test]
fn code_on_another_stack_is_sampled_by_its_pc_alone() {
    for jdk in oracle_jdks() {
        for cstack in ["fp", "dwarf"] {
            for args in [&["fiber", "1.0"][..], &["altstack", "62", "1.0"][..]] {
                let dir = run_dir("hardening", &format!("{}{}-{cstack}", args[0], jdk.major));
                let file = dir.join("f.jfr");
                let options = format!("file={},interval=1ms,cstack={cstack}", file.display());
                let result = run_hardening(&jdk, &dir, &options, args, drop);
                let what = format!("{} with cstack={cstack}", args[0]);
                let stderr = assert_survived(&jdk, &what, &result);
                let off_stack = counter(&stderr, "off the thread's stack (pc only)");
                assert!(off_stack >= 20, "{what}: {off_stack}\n{stderr}");
                let reading = jfr_json(&jdk, &file).unwrap();
                let pc_only = reading
                    .samples
                    .iter()
                    .filter(|s| s.thread == "main" && s.pcs.len() == 1)
                    .filter(|s| s.native_truncated == Some(true) && s.failed)
                    .count();
                assert!(
                    pc_only as u64 * 10 >= off_stack * 9,
                    "{what}: {pc_only} pc-only samples, {off_stack} counted"
                );
            }
        }
    }
}

/// A page of the thread's own stack made unreadable, rbp pointing into it: an earlier agent's
/// fault there made HotSpot retry forever (a hang).
#[test]
fn an_unreadable_stack_page_ends_the_sample_not_the_jvm() {
    for jdk in matrix_jdks() {
        let dir = run_dir("hardening", &format!("guardpage{}", jdk.major));
        let options = format!(
            "file={},interval=1ms,cstack=fp",
            dir.join("p.jfr").display()
        );
        let result = run_hardening(&jdk, &dir, &options, &["guardpage", "1.0"], drop);
        let stderr = assert_survived(&jdk, "guard page", &result);
        // Every sample of the spinning thread meets the unreadable page (the guard-zone probes
        // at thread start add a few more). A loaded machine gives fewer, heavier samples.
        let recovered = counter(&stderr, "faulting reads recovered");
        assert!(recovered >= 20, "{recovered}\n{stderr}");
    }
}

/// The threads `Hardening names` prints: Java name → kernel thread ids.
fn printed_tids(lines: &[String]) -> BTreeMap<String, BTreeSet<i64>> {
    let mut tids: BTreeMap<String, BTreeSet<i64>> = BTreeMap::new();
    for l in lines {
        let mut w = l.split_whitespace();
        if let (Some("TID"), Some(name), Some(tid)) = (w.next(), w.next(), w.next()) {
            tids.entry(name.to_string())
                .or_default()
                .insert(tid.parse().unwrap());
        }
    }
    tids
}

/// A JVM running `Hardening names SECONDS [rename]`, its stdout read line by line.
struct NamesJvm {
    child: Child,
    lines: std::sync::mpsc::Receiver<String>,
    seen: Vec<String>,
}

impl NamesJvm {
    fn start(jdk: &Jdk, args: &[&str]) -> NamesJvm {
        let mut child = Command::new(jdk.tool("java"))
            .arg(format!("-Djava.library.path={}", workload().display()))
            .arg("-cp")
            .arg(workload())
            .arg("Hardening")
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        NamesJvm {
            child,
            lines,
            seen: Vec::new(),
        }
    }

    /// Waits for a line satisfying `done` over all lines so far.
    fn wait(&mut self, what: &str, done: impl Fn(&[String]) -> bool) {
        let start = Instant::now();
        while !done(&self.seen) {
            assert!(
                start.elapsed() < Duration::from_secs(60),
                "timed out waiting for {what}"
            );
            if let Ok(line) = self.lines.recv_timeout(Duration::from_millis(100)) {
                self.seen.push(line);
            }
        }
    }

    /// Writes `line` to the program's stdin.
    fn send(&mut self, line: &str) {
        use std::io::Write;
        let stdin = self.child.stdin.as_mut().unwrap();
        writeln!(stdin, "{line}").unwrap();
        stdin.flush().unwrap();
    }

    fn attach(&self, jdk: &Jdk, options: &str) -> String {
        let out = jdk
            .jcmd(self.child.id())
            .arg("JVMTI.agent_load")
            .arg(agent_library())
            .arg(format!("\"{options}\""))
            .output()
            .unwrap();
        // stdout carries the reply; stderr, shown on a failed check, why there is none.
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr)
    }

    fn record(&self, jdk: &Jdk, file: &Path) {
        let reply = self.attach(jdk, &format!("file={},interval=1ms", file.display()));
        assert!(reply.contains("return code: 0"), "{reply}");
        std::thread::sleep(Duration::from_millis(2500));
        let reply = self.attach(jdk, "stop");
        assert!(reply.contains("return code: 0"), "{reply}");
    }
}

impl Drop for NamesJvm {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Threads that share a name, and threads whose Java name differs from their kernel name, each
/// get their own samples after an attach (an earlier agent matched threads by kernel name: it
/// skipped the first and sent the second's samples to another thread).
#[test]
fn attached_threads_are_matched_by_thread_id() {
    for jdk in oracle_jdks() {
        let dir = run_dir("hardening", &format!("names{}", jdk.major));
        let mut jvm = NamesJvm::start(&jdk, &["names", "120"]);
        jvm.wait("five threads", |l| {
            printed_tids(l).values().map(BTreeSet::len).sum::<usize>() == 5
        });
        let printed = printed_tids(&jvm.seen);
        let file = dir.join("names.jfr");
        jvm.record(&jdk, &file);
        let reading = jfr_json(&jdk, &file).unwrap();
        for (name, tids) in &printed {
            for tid in tids {
                let samples: Vec<_> = reading.samples.iter().filter(|s| s.tid == *tid).collect();
                assert!(
                    samples.len() >= 30,
                    "{}: thread {name} ({tid}): {} samples",
                    jdk.name(),
                    samples.len()
                );
                assert!(
                    samples.iter().all(|s| &s.thread == name),
                    "{}: samples of {tid} named {:?}, not {name}",
                    jdk.name(),
                    samples.iter().map(|s| &s.thread).collect::<BTreeSet<_>>()
                );
            }
        }
    }
}

/// A second recording names threads as they are named then (an earlier agent kept the names
/// of the first recording).
#[test]
fn a_second_recording_names_threads_anew() {
    for jdk in oracle_jdks() {
        let dir = run_dir("hardening", &format!("rename{}", jdk.major));
        // Long enough for slow attaches on a loaded machine; killed when the test ends.
        let mut jvm = NamesJvm::start(&jdk, &["names", "120", "rename"]);
        jvm.wait("five threads", |l| {
            printed_tids(l).values().map(BTreeSet::len).sum::<usize>() == 5
        });
        jvm.record(&jdk, &dir.join("first.jfr"));
        jvm.send("rename");
        jvm.wait("the renaming", |l| l.iter().any(|l| l == "RENAMED"));
        let second = dir.join("second.jfr");
        jvm.record(&jdk, &second);
        let reading = jfr_json(&jdk, &second).unwrap();
        let tids: BTreeSet<i64> = printed_tids(&jvm.seen)
            .values()
            .flatten()
            .copied()
            .collect();
        let names: BTreeSet<&str> = reading
            .samples
            .iter()
            .filter(|s| tids.contains(&s.tid))
            .map(|s| s.thread.as_str())
            .collect();
        assert!(
            !names.is_empty(),
            "{}: no samples of the renamed threads",
            jdk.name()
        );
        assert!(
            names.iter().all(|n| n.starts_with("again-")),
            "{}: {names:?}",
            jdk.name()
        );
    }
}

/// 10 000 signals of the agent's number queued from another process, with every `si_code` a
/// sender may use and junk values: ignored (an earlier agent dereferenced the value and
/// aborted after about 6 000).
#[test]
fn signals_queued_from_outside_are_ignored() {
    const SIGNAL: &str = "50";
    for jdk in oracle_jdks() {
        let dir = run_dir("hardening", &format!("junk{}", jdk.major));
        let options = format!(
            "file={},interval=1ms,signal={SIGNAL}",
            dir.join("j.jfr").display()
        );
        let mut sent = String::new();
        let result = run_hardening(&jdk, &dir, &options, &["names", "8"], |pid| {
            std::thread::sleep(Duration::from_secs(2));
            sent = run(Command::new(workload().join("junk_signals")).args([
                &pid.to_string(),
                SIGNAL,
                "10000",
            ]))
            .unwrap();
        });
        let sent: u64 = sent.trim().strip_prefix("sent ").unwrap().parse().unwrap();
        let stderr = assert_survived(&jdk, "junk signals", &result);
        let ignored = counter(&stderr, "signals not from the agent's timers (ignored)");
        assert!(sent >= 9000, "{sent} sent");
        assert_eq!(ignored, sent, "{stderr}");
    }
}

/// An attach that fails leaves no handler of the agent's signal behind: HotSpot unloads the
/// library, and a handler pointing into it would crash the JVM at the next signal.
#[test]
fn a_failed_attach_leaves_no_handler_behind() {
    let caught = |pid: u32| -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
        let mask = status
            .lines()
            .find_map(|l| l.strip_prefix("SigCgt:"))
            .unwrap();
        u64::from_str_radix(mask.trim(), 16).unwrap()
    };
    for jdk in oracle_jdks() {
        let mut jvm = NamesJvm::start(&jdk, &["names", "120"]);
        jvm.wait("five threads", |l| {
            printed_tids(l).values().map(BTreeSet::len).sum::<usize>() == 5
        });
        let before = caught(jvm.child.id());
        for options in [
            "file=/nonexistent/dir/x.jfr,signal=50",
            "file=x.jfr,interval=fast,signal=50",
        ] {
            let reply = jvm.attach(&jdk, options);
            assert!(reply.contains("return code: -1"), "{options}: {reply}");
            assert_eq!(
                caught(jvm.child.id()),
                before,
                "{options}: signal handlers changed"
            );
        }
        assert!(
            jvm.child.try_wait().unwrap().is_none(),
            "the JVM keeps running"
        );
    }
}

/// 2 000 idle threads cost at most 16 KB of agent memory each: RSS growth while starting them,
/// with the agent minus without, the median of five interleaved pairs' differences (an earlier
/// agent kept 48.8 KB per thread).
#[test]
fn idle_threads_cost_little_agent_memory() {
    const THREADS: u64 = 2000;
    // An odd number: the median is one pair's difference.
    const PAIRS: usize = 5;
    let growth_kb = |out: &Output| -> u64 {
        let stdout = String::from_utf8_lossy(&out.stdout);
        let line = stdout.lines().find_map(|l| l.strip_prefix("RSS ")).unwrap();
        let kb: Vec<u64> = line
            .split_whitespace()
            .map(|v| v.parse().unwrap())
            .collect();
        kb[1].saturating_sub(kb[0])
    };
    for jdk in oracle_jdks() {
        let dir = run_dir("hardening", &format!("idle{}", jdk.major));
        let n = THREADS.to_string();
        let args = ["Hardening", "idle", &n, "2"];
        // Interpreted only, with a fixed heap: no JIT or heap growth in the measured window.
        let quiet = ["-Xint", "-Xms64m", "-Xmx64m"];
        let mut without = Command::new(jdk.tool("java"));
        without
            .args(quiet)
            .arg(format!("-Djava.library.path={}", workload().display()))
            .arg("-cp")
            .arg(workload())
            .args(args);
        let options = format!("file={},interval=1ms", dir.join("i.jfr").display());
        let mut with = java_with_agent_in(&jdk, &options, &quiet, &workload());
        with.args(args);
        // Five pairs, each a run without the agent then one with it, back to back: what else
        // the machine does (a collection, the other tests of this binary) moves both runs of a
        // pair alike, so each pair's difference is the agent's cost under the same load, and
        // the median of the five differences is robust to one odd run on either side. (The
        // least growth of each side, taken apart, paired a run with its luckiest baseline: one
        // baseline at half its usual growth made the agent's cost look larger.)
        let mut pairs = Vec::new();
        for _ in 0..PAIRS {
            let mut pair = [0u64; 2];
            for (i, cmd) in [&mut without, &mut with].into_iter().enumerate() {
                let out = cmd.output().unwrap();
                assert!(
                    out.status.success(),
                    "{}",
                    String::from_utf8_lossy(&out.stderr)
                );
                pair[i] = growth_kb(&out);
            }
            pairs.push(pair);
        }
        let mut differences: Vec<i64> = pairs.iter().map(|[w, a]| *a as i64 - *w as i64).collect();
        differences.sort_unstable();
        let median_kb = differences[differences.len() / 2];
        let per_thread = median_kb.max(0) as f64 * 1024.0 / THREADS as f64;
        eprintln!(
            "{}: {THREADS} idle threads: RSS growth (without, with the agent) in KB per pair \
             {pairs:?}, differences {differences:?}, median +{median_kb} KB: {per_thread:.0} \
             bytes per thread",
            jdk.name()
        );
        assert!(per_thread <= 16.0 * 1024.0, "{per_thread} bytes per thread");
    }
}
