//! The agent on the bundled Java + JNI workload: exact native chains, CPU-time weights and files
//! every JDK's readers accept on every JDK of the matrix (11, 17, 21, 25: each JDK's
//! `RecordingFile` and `jfr print --json`, and JMC's parser, read each JDK's file); on JDK 17 and 25, coexistence
//! with JDK 25's own sampler, crash-safety, and option errors.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use tests::golden::SampleView;
use tests::jdk::{matrix_jdks, oracle_jdks, required, third_party_reader, Jdk};
use tests::natives::Symbols;
use tests::one_recording::jmc_view;
use tests::readers::{jfr_json, jfrs, jvm_code_ranges, recording_file, run};
use tests::workload::{java_with_agent, run_workload, thread_cpu_ns, workload_dir};

fn out_dir(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("jfrnative-agent-{}-{test}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The function of libburner.so at `pc`, if the pc is there.
fn burner_function(symbols: &Symbols, pc: u64) -> Option<String> {
    let frame = symbols.frame(pc);
    (frame.library.as_deref() == Some("libburner.so"))
        .then_some(frame.function)
        .flatten()
}

/// At least 99% of the `w-native` samples whose leaf is in `level3` carry the exact native chain
/// up to the JNI function, then the expected Java frames.
fn assert_exact_chains(what: &str, samples: &[SampleView], symbols: &Symbols) {
    let chain = ["level3", "level2", "level1", "Java_Burner_nativeBurn"];
    let in_leaf: Vec<&SampleView> = samples
        .iter()
        .filter(|s| s.thread == "w-native")
        .filter(|s| {
            s.pcs
                .first()
                .and_then(|&pc| burner_function(symbols, pc))
                .as_deref()
                == Some("level3")
        })
        .collect();
    let exact = in_leaf
        .iter()
        .filter(|s| {
            let names: Vec<Option<String>> = s
                .pcs
                .iter()
                .map(|&pc| burner_function(symbols, pc))
                .collect();
            names.len() == chain.len()
                && names
                    .iter()
                    .zip(chain)
                    .all(|(n, c)| n.as_deref() == Some(c))
                && s.native_truncated == Some(false)
                && s.java
                    .first()
                    .is_some_and(|f| f == "Burner.nativeBurn:-1:Native")
                && s.java
                    .get(1)
                    .is_some_and(|f| f.starts_with("Burner.nativeLoop:"))
        })
        .count();
    eprintln!(
        "{what}: {exact} of {} level3 samples carry the exact chain",
        in_leaf.len()
    );
    assert!(
        in_leaf.len() >= 50,
        "{what}: only {} samples in level3",
        in_leaf.len()
    );
    assert!(
        exact * 100 >= in_leaf.len() * 99,
        "{what}: {exact} of {} level3 samples have the exact chain; first: {:?}",
        in_leaf.len(),
        in_leaf.first().map(|s| s.to_string())
    );
}

/// Checks one recording of `w-native:native,w-java:java`.
fn check_recording(jdk: &Jdk, file: &Path, stdout: &[u8], interval: &str) {
    let what = format!("{} at {interval}", jdk.name());
    let interval_us: u64 = interval.strip_suffix("ms").unwrap().parse::<u64>().unwrap() * 1_000;
    let reading = jfr_json(jdk, file).unwrap_or_else(|e| panic!("{what}: {e}"));
    let symbols = Symbols::new(&reading);

    // Every pc of every native frame lies in a jdk.NativeLibrary range, but JVM-generated
    // code's: a stub the sample was taken in, or the runtime stub that called the VM, is the
    // last native frame, named by a jfrnative.JvmCode range of the file; a sample in JIT code
    // that no walk could leave keeps that pc alone (docs/how-it-works.md). The frames between
    // were unwound from libraries' call-frame information, so they are in libraries.
    let stubs = jvm_code_ranges(jdk, file).unwrap_or_else(|e| panic!("{what}: {e}"));
    let named_stub = |pc: u64| {
        stubs
            .iter()
            .any(|(_, start, end)| *start <= pc && pc < *end)
    };
    let mut leaves_in_jvm_code = 0;
    for s in &reading.samples {
        for (i, &pc) in s.pcs.iter().enumerate() {
            if symbols.frame(pc).library.is_some() {
                continue;
            }
            if named_stub(pc) && i + 1 == s.pcs.len() {
                continue;
            }
            assert!(
                i == 0,
                "{what}: caller pc {pc:#x} (frame {i} of {}) in no library and no named JVM \
                 stub at the end of the native frames",
                s.pcs.len()
            );
            leaves_in_jvm_code += 1;
        }
    }
    assert!(
        leaves_in_jvm_code * 100 <= reading.samples.len(),
        "{what}: {leaves_in_jvm_code} of {} samples interrupted outside every library",
        reading.samples.len()
    );

    assert_exact_chains(&what, &reading.samples, &symbols);
    // The Java thread runs JIT/interpreted code: no native frames in most samples.
    let java_thread: Vec<&SampleView> = reading
        .samples
        .iter()
        .filter(|s| s.thread == "w-java")
        .collect();
    let java_only = java_thread
        .iter()
        .filter(|s| {
            s.pcs.is_empty()
                && s.java
                    .first()
                    .is_some_and(|f| f.starts_with("Burner.javaBurn"))
        })
        .count();
    assert!(
        java_only * 10 >= java_thread.len() * 8,
        "{what}: {java_only} of {} Java-thread samples in javaBurn",
        java_thread.len()
    );

    // Per thread, the sum of samplingPeriod plus the CPU of lost samples (counted in intervals)
    // is within 1% of the thread's CPU time.
    let cpu = thread_cpu_ns(stdout);
    for thread in ["w-native", "w-java"] {
        let samples: Vec<_> = reading
            .samples
            .iter()
            .filter(|s| s.thread == thread)
            .collect();
        let sampled_us: u64 = samples.iter().map(|s| s.period_ticks).sum();
        let tid = samples.first().map_or(-1, |s| s.tid);
        let lost_intervals: u64 = reading
            .lost
            .iter()
            .filter(|l| l.contains(&format!(" tid={tid} ")))
            .filter_map(|l| {
                l.strip_prefix("lost=")?
                    .split(' ')
                    .next()?
                    .parse::<u64>()
                    .ok()
            })
            .sum();
        let lost_us = lost_intervals * interval_us;
        let cpu_us = cpu[thread] / 1_000;
        let accounted_us = sampled_us + lost_us;
        let error = (accounted_us as f64 - cpu_us as f64).abs() / cpu_us as f64;
        eprintln!(
            "{what}: {thread}: sampled {sampled_us} us + lost {lost_us} us of {cpu_us} us CPU ({:.2}%)",
            error * 100.0
        );
        assert!(
            error <= 0.01,
            "{what}: {thread} sampled {sampled_us} us + lost {lost_us} us of {cpu_us} us CPU"
        );
    }

    // The other readers accept the file and agree on the sample count.
    let samples = reading.samples.len() as u64;
    let (jfrs_reading, _) = jfrs(file).unwrap_or_else(|e| panic!("{what}: jfrs: {e}"));
    assert_eq!(
        jfrs_reading.counts.get("jdk.CPUTimeSample"),
        Some(&samples),
        "{what}: jfrs"
    );
    assert_eq!(
        jfrs_reading.samples, reading.samples,
        "{what}: jfrs and jfr print --json disagree"
    );
    // Every JDK's readers on one file per JDK (the 10 ms one): the 1 ms file has the same
    // events, more of them, and the JDK's own reader checked it above.
    let readers = if interval == "10ms" {
        matrix_jdks()
    } else {
        vec![jdk.clone()]
    };
    for other in readers {
        let rf = recording_file(&other, file)
            .unwrap_or_else(|e| panic!("{what}: RecordingFile of {}: {e}", other.name()));
        assert_eq!(
            rf.counts.get("jdk.CPUTimeSample"),
            Some(&samples),
            "{what}: RecordingFile of {}",
            other.name()
        );
        let json =
            jfr_json(&other, file).unwrap_or_else(|e| panic!("{what}: {}: {e}", other.name()));
        assert_eq!(
            json.samples,
            reading.samples,
            "{what}: jfr print --json of {}",
            other.name()
        );
    }
    // And JMC's parser (it runs on JDK 17 and later), whichever JDK recorded the file. In this
    // raw file (`nstack=pooled`) JMC splits jdk.CPUTimeSample by chunk (docs/jfr-format.md):
    // every sample is read, under one type or another of that name.
    if let (Some(cp), Some(jmc_jdk)) = (third_party_reader("JMC_CP", "JMC's parser"), required(17))
    {
        let view = jmc_view(&jmc_jdk, &cp, file);
        let jmc_samples: u64 = view
            .types
            .iter()
            .filter(|(t, _)| {
                t.starts_with("jdk.CPUTimeSample") && !t.starts_with("jdk.CPUTimeSamplesLost")
            })
            .map(|(_, n)| n)
            .sum();
        assert_eq!(jmc_samples, samples, "{what}: JMC's types {:?}", view.types);
        assert_eq!(view.skipped, 0, "{what}: JMC skipped events");
    }
}

#[test]
fn records_exact_native_chains_and_cpu_time_on_every_jdk() {
    for jdk in matrix_jdks() {
        for interval in ["10ms", "1ms"] {
            let file = out_dir("chains").join(format!("jdk{}-{interval}.jfr", jdk.major));
            let out = run_workload(
                &jdk,
                &format!("file={},interval={interval}", file.display()),
                &[],
                2.0,
                "w-native:native,w-java:java",
            );
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert!(
                stderr.contains("jfr-native: wrote"),
                "{}: no summary: {stderr}",
                jdk.name()
            );
            check_recording(&jdk, &file, &out.stdout, interval);
        }
    }
}

#[test]
fn jdk25_builtin_sampler_keeps_working_beside_the_agent() {
    let Some(jdk) = required(25) else {
        return;
    };
    let dir = out_dir("coexist");
    let (ours, theirs) = (dir.join("agent.jfr"), dir.join("jdk.jfr"));
    let start = format!("-XX:StartFlightRecording=filename={},jdk.CPUTimeSample#enabled=true,jdk.CPUTimeSample#throttle=10ms", theirs.display());
    run_workload(
        &jdk,
        &format!("file={}", ours.display()),
        &[&start],
        1.5,
        "w-native:native",
    );
    let count = |file: &Path| -> u64 {
        let summary = run(Command::new(jdk.tool("jfr")).arg("summary").arg(file)).unwrap();
        summary
            .lines()
            .find(|l| l.split_whitespace().next() == Some("jdk.CPUTimeSample"))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|n| n.parse().ok())
            .unwrap_or(0)
    };
    let (n_theirs, n_ours) = (count(&theirs), count(&ours));
    assert!(
        n_theirs >= 50,
        "JDK's own sampler recorded {n_theirs} samples"
    );
    assert!(n_ours >= 50, "the agent recorded {n_ours} samples");
}

#[test]
fn sigkill_leaves_every_finished_chunk_readable() {
    for jdk in oracle_jdks() {
        let file = out_dir("kill").join(format!("jdk{}.jfr", jdk.major));
        let mut child = java_with_agent(
            &jdk,
            &format!("file={},chunk=200ms", file.display()),
            &[],
            20.0,
            "w-native:native",
        )
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
        std::thread::sleep(Duration::from_millis(2_500));
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();
        let summary = run(Command::new(jdk.tool("jfr")).arg("summary").arg(&file))
            .unwrap_or_else(|e| panic!("{}: {e}", jdk.name()));
        let chunks: u64 = summary
            .lines()
            .find_map(|l| l.trim().strip_prefix("Chunks:"))
            .and_then(|n| n.trim().parse().ok())
            .unwrap_or(0);
        assert!(
            chunks >= 3,
            "{}: only {chunks} chunks after 2.5 s at chunk=200ms",
            jdk.name()
        );
        let reading = jfr_json(&jdk, &file).unwrap_or_else(|e| panic!("{}: {e}", jdk.name()));
        assert!(
            reading.samples.iter().any(|s| s.thread == "w-native"),
            "{}: no samples survived",
            jdk.name()
        );
        assert!(
            reading
                .counts
                .get("jdk.NativeLibrary")
                .is_some_and(|&n| n >= chunks),
            "{}: libraries in every chunk",
            jdk.name()
        );
    }
}

#[test]
fn bad_options_stop_the_jvm_with_a_message_naming_the_option() {
    let Some(jdk) = oracle_jdks().into_iter().next() else {
        return;
    };
    let file = out_dir("options").join("x.jfr");
    let cases = [
        (
            format!("file={},interval=fast", file.display()),
            "bad agent option 'interval'",
        ),
        (
            format!("file={},colour=blue", file.display()),
            "bad agent option 'colour'",
        ),
        ("interval=10ms".to_string(), "bad agent option 'file'"),
        (
            "file=/nonexistent-dir/x.jfr".to_string(),
            "cannot write file=/nonexistent-dir/x.jfr",
        ),
        (format!("file={},depth=0", file.display()), "'depth'"),
    ];
    for (options, message) in cases {
        let out = java_with_agent(&jdk, &options, &[], 0.1, "w:java")
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{options}: the JVM started");
        assert!(
            stderr.contains(message),
            "{options}: stderr lacks {message:?}: {stderr}"
        );
    }
}

/// `jcmd PID JVMTI.agent_load LIB OPTIONS`; returns jcmd's output.
fn jcmd_agent_load(jdk: &Jdk, pid: u32, agent: &Path, options: &str) -> String {
    let out = jdk
        .jcmd(pid)
        .arg("JVMTI.agent_load")
        .arg(agent)
        .arg(options)
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr)
}

#[test]
fn attach_samples_threads_that_already_run() {
    for jdk in oracle_jdks() {
        let dir = out_dir("attach");
        let file = dir.join(format!("jdk{}.jfr", jdk.major));
        let workload = workload_dir();
        // Built before the JVM starts: a first, uncached build takes longer than the workload runs.
        let agent = tests::workload::agent_library();
        let mut child = Command::new(jdk.tool("java"))
            .arg(format!("-Djava.library.path={}", workload.display()))
            .arg("-cp")
            .arg(&workload)
            .args(["Burner", "4", "w-native:native,w-java:java"])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(800));
        assert!(
            child.try_wait().unwrap().is_none(),
            "{}: the workload ended before the attach",
            jdk.name()
        );
        // Unquoted, jcmd passes only "file": the agent refuses (return code -1) and says how to
        // quote; the JVM keeps running.
        let unquoted = jcmd_agent_load(
            &jdk,
            child.id(),
            &agent,
            &format!("file={},interval=10ms", file.display()),
        );
        assert!(
            unquoted.contains("return code: -1"),
            "{}: unquoted options were not refused by the agent: {unquoted}",
            jdk.name()
        );
        let quoted = jcmd_agent_load(
            &jdk,
            child.id(),
            &agent,
            &format!("\"file={},interval=10ms\"", file.display()),
        );
        assert!(
            quoted.contains("return code: 0"),
            "{}: attach failed: {quoted}",
            jdk.name()
        );
        let out = child.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "{}: the JVM failed after attach",
            jdk.name()
        );
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains("quote the options"),
            "{}: no quoting hint: {stderr}",
            jdk.name()
        );
        assert!(
            stderr.contains("jfr-native: wrote"),
            "{}: no summary: {stderr}",
            jdk.name()
        );
        let what = format!("{} after attach", jdk.name());
        let reading = jfr_json(&jdk, &file).unwrap_or_else(|e| panic!("{what}: {e}"));
        assert_exact_chains(&what, &reading.samples, &Symbols::new(&reading));
        let java = reading
            .samples
            .iter()
            .filter(|s| s.thread == "w-java")
            .count();
        let java_ok = reading
            .samples
            .iter()
            .filter(|s| s.thread == "w-java" && !s.failed)
            .count();
        assert!(
            java >= 50 && java_ok * 100 >= java * 95,
            "{what}: {java_ok} of {java} Java-thread samples have Java stacks"
        );
    }
}

/// The `thread slots created N, reused M` figures of the agent's summary.
fn slot_counts(stderr: &str) -> (u64, u64) {
    let line = stderr
        .lines()
        .find(|l| l.starts_with("jfr-native: wrote"))
        .unwrap_or_else(|| panic!("no summary in:\n{stderr}"));
    let number_after = |key: &str| -> u64 {
        line.split(key)
            .nth(1)
            .and_then(|r| {
                r.trim_start()
                    .split(|c: char| !c.is_ascii_digit())
                    .next()
                    .and_then(|n| n.parse().ok())
            })
            .unwrap_or_else(|| panic!("no '{key}' in {line}"))
    };
    (number_after("slots created"), number_after("reused"))
}

#[test]
fn slots_of_ended_threads_are_recycled_for_new_threads() {
    for jdk in oracle_jdks() {
        let file = out_dir("churn").join(format!("churn{}.jfr", jdk.major));
        // 3 s of short threads one after the other: about 150 threads, 20 ms of CPU each,
        // alternating between the native chain (ch-n-I) and Java (ch-j-I).
        let out = run_workload(
            &jdk,
            &format!("file={},interval=10ms", file.display()),
            &[],
            3.0,
            "ch:churn",
        );
        let stderr = String::from_utf8_lossy(&out.stderr);
        let (created, reused) = slot_counts(&stderr);
        assert!(
            created <= 20 && reused >= 120,
            "{}: created {created}, reused {reused}",
            jdk.name()
        );
        // A recycled slot reports its new thread: no sample of a native-mode thread is in
        // javaBurn and none of a Java-mode thread in the native chain; nearly all are in their
        // own mode's code (a few land in thread start-up or exit); each name keeps one tid.
        let reading = jfr_json(&jdk, &file).unwrap();
        let mut tids: std::collections::BTreeMap<&str, std::collections::BTreeSet<i64>> =
            Default::default();
        let (mut native, mut java, mut native_in_mode, mut java_in_mode) = (0, 0, 0, 0);
        for s in &reading.samples {
            let in_java = |m: &str| s.java.iter().any(|f| f.starts_with(m));
            let native_mode = s.thread.starts_with("ch-n-");
            if !native_mode && !s.thread.starts_with("ch-j-") {
                continue;
            }
            let (own, other) = if native_mode {
                ("Burner.nativeLoop", "Burner.javaBurn")
            } else {
                ("Burner.javaBurn", "Burner.nativeLoop")
            };
            assert!(!in_java(other), "{}: {s:?}", jdk.name());
            let in_mode = u32::from(s.failed || in_java(own));
            if native_mode {
                native += 1;
                native_in_mode += in_mode;
            } else {
                java += 1;
                java_in_mode += in_mode;
            }
            tids.entry(&s.thread).or_default().insert(s.tid);
        }
        assert!(
            native_in_mode * 10 >= native * 9 && java_in_mode * 10 >= java * 9,
            "{}: in their mode's code: {native_in_mode} of {native} native, {java_in_mode} of \
             {java} Java samples",
            jdk.name()
        );
        assert!(
            native >= 30 && java >= 30,
            "{native} native, {java} Java samples"
        );
        assert!(tids.len() >= 50, "{} threads with samples", tids.len());
        assert!(
            tids.values().all(|t| t.len() == 1),
            "a thread name with several tids: {tids:?}"
        );
    }
}

/// Every chunk describes the libraries its samples reach (the symbolizer reads each chunk on
/// its own), the first chunk every library, the later ones no other; ticks count from the
/// recording's start and map to the wall-clock time of the run.
#[test]
fn chunks_describe_the_libraries_their_samples_reach_on_a_clock_from_the_start() {
    use symbolize::jfr::{read_chunks, sizes};
    use symbolize::profile::read_chunk;

    let Some(jdk) = oracle_jdks().into_iter().last() else {
        return;
    };
    let file = out_dir("chunk-libraries").join("libraries.jfr");
    let epoch_ns = || {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos() as i64
    };
    let before_ns = epoch_ns();
    run_workload(
        &jdk,
        &format!("file={},interval=1ms,chunk=250ms", file.display()),
        &[],
        2.0,
        "w-native:native,w-java:java",
    );
    let after_ns = epoch_ns();
    let bytes = std::fs::read(&file).unwrap();
    let read = read_chunks(&bytes);
    assert!(read.error.is_none(), "{:?}", read.error);
    assert!(read.chunks.len() >= 4, "{} chunks", read.chunks.len());
    let first = read.chunks[0].header;
    // The old clock counted µs since boot: more than 10 s on any machine running this test.
    assert!(
        (0..10_000_000).contains(&first.start_ticks),
        "first chunk starts at tick {}",
        first.start_ticks
    );
    let wall_ns = |ticks: i64| {
        first.start_nanos + (ticks - first.start_ticks) * 1_000_000_000 / first.ticks_per_second
    };
    let mut first_libraries = 0;
    let mut later_libraries = 0;
    let profiles: Vec<_> = read.chunks.iter().map(|c| read_chunk(c).unwrap()).collect();
    // A return address just past a library's last byte is looked up at pc - 1.
    let holds = |p: &symbolize::profile::ChunkProfile, pc: u64| {
        p.library_of(pc).is_some() || p.library_of(pc.wrapping_sub(1)).is_some()
    };
    let in_any_chunk = |pc: u64| profiles.iter().any(|p| holds(p, pc));
    for (i, (profile, chunk)) in profiles.iter().zip(&read.chunks).enumerate() {
        let in_chunk = |pc: u64| holds(profile, pc);
        for s in &profile.samples {
            let t = wall_ns(s.start_ticks);
            assert!(
                (before_ns..=after_ns).contains(&t),
                "chunk {i}: sample at {t} ns, run from {before_ns} to {after_ns}"
            );
            // A pc of JVM-generated code, which no library holds, is the last native frame
            // (a stub) and named by a jfrnative.JvmCode event of its own chunk, or the
            // interrupted pc kept alone; every other pc is in a library of its chunk.
            for (k, &pc) in s.native.iter().enumerate() {
                let named_stub = profile.jvm_code_of(pc).is_some() && k + 1 == s.native.len();
                let jvm_code = k == 0 && !in_any_chunk(pc);
                assert!(
                    in_chunk(pc) || named_stub || jvm_code,
                    "chunk {i}: pc {pc:#x} (frame {k}) in no library or named JVM code of the \
                     chunk"
                );
            }
        }
        // Every pc of a sample reaches a library: the native frames above the first Java
        // frame and those between Java frames (segments: JNI code calling Java back).
        let reached = |lib: &symbolize::LibraryRef| {
            profile.samples.iter().any(|s| {
                s.native
                    .iter()
                    .chain(s.segments.iter().flat_map(|seg| seg.pcs.iter()))
                    .any(|&pc| (lib.base..=lib.top).contains(&pc))
            })
        };
        if i == 0 {
            first_libraries = profile.libraries.len();
            assert!(
                profile.libraries.len() >= 10,
                "the first chunk describes every library: {:?}",
                profile.libraries
            );
        } else {
            later_libraries += profile.libraries.len();
            for lib in &profile.libraries {
                // Described later only when reached, or when loaded during the recording.
                assert!(
                    reached(lib)
                        || !read.chunks[0]
                            .bytes
                            .windows(lib.path.len())
                            .any(|w| w == lib.path.as_bytes()),
                    "chunk {i} describes {} which none of its samples reach",
                    lib.path
                );
            }
            // About 6 KB: the types a chunk of samples holds, and `jfrnative.JvmCode` (about
            // 250 bytes) where its stacks reach JVM stubs.
            let chunk_sizes = sizes::measure(chunk.bytes).unwrap();
            assert!(
                chunk_sizes.metadata.bytes <= 6_400,
                "chunk {i}: metadata of {} bytes",
                chunk_sizes.metadata.bytes
            );
        }
    }
    // Every chunk used to list every library: later chunks now list at most half of them on
    // average (the ones their samples reach; with the perf engine's 1,000 samples per CPU-second
    // these are about 4 of the first chunk's 19 here).
    let later = read.chunks.len() - 1;
    assert!(
        later_libraries * 2 <= first_libraries * later,
        "{later_libraries} library events in {later} later chunks, {first_libraries} in the first"
    );
}
