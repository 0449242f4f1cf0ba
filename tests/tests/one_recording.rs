//! One recording with the JDK's own Flight Recorder events and our CPU samples
//! (`--jdk-events`, `jfr-symbolize --merge`), read by every reader as one recording:
//!
//! - the bundled demo with `--jdk-events=profile`, on JDK 25 and JDK 17: `RecordingFile` of both
//!   JDKs, `jfr summary`, JMC's parser (one `jdk.CPUTimeSample` type, nothing skipped, each demo
//!   thread one lane holding our samples and the JDK's events about it) and async-profiler's
//!   converter (every sample converted);
//! - `jfr-symbolize --merge` of a recording made with `-XX:StartFlightRecording` and ours of the
//!   same JVM: every event of both, at the same instant (±1 µs) in both JDKs' readers, with
//!   only the documented ones left out; the Java stacks of our samples unchanged; chunks in time
//!   order; `--jdk-samples keep` keeps the JDK's execution samples;
//! - `attach --jdk-events` on a running JVM, whose own recording is left alone;
//! - `record` and `attach --jdk-events` on JDK 11, which takes no `EVENT#setting` options: its
//!   settings (its own default and profile, a user's file) with the samplers off in a file, read
//!   by JDK 11's own `jfr summary` and `jfr print --json`;
//! - a recording cut short: the finished chunks are merged, the damage said.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use tests::jdk::{oracle_jdks, required, third_party_reader, Jdk};
use tests::one_recording::{chunk_starts, jmc_view, summary_types};
use tests::readers::{
    all_event_times, ap_collapsed, cpu_sample_events, recording_file, recording_file_counts,
};
use tests::workload::{agent_library, java_with_agent, jfr_symbolize, jfrnative_demo, tool_binary};

const DEMO_THREADS: [&str; 4] = ["c-checksum", "zlib-compress", "libc-qsort", "java-hashmap"];

fn work_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("jfrnative-one-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The counts of `file` by `RecordingFile` of `jdk`.
fn counts(jdk: &Jdk, file: &Path) -> BTreeMap<String, u64> {
    recording_file_counts(jdk, file).unwrap_or_else(|e| panic!("{}: {e}", jdk.name()))
}

fn count(counts: &BTreeMap<String, u64>, ty: &str) -> u64 {
    counts.get(ty).copied().unwrap_or(0)
}

/// `jfr-symbolize --merge EXTRA INPUTS -o OUT`, which must succeed; returns what it said.
fn merge(inputs: &[&Path], extra: &[&str], out: &Path) -> String {
    let mut args: Vec<&str> = vec!["--merge"];
    args.extend_from_slice(extra);
    args.extend(inputs.iter().map(|p| p.to_str().unwrap()));
    args.extend(["-o", out.to_str().unwrap()]);
    let run = jfr_symbolize(&args);
    let said = String::from_utf8_lossy(&run.stderr).into_owned();
    assert!(run.status.success(), "jfr-symbolize {args:?}: {said}");
    said
}

#[test]
fn the_demo_with_jdk_events_is_one_recording_for_every_reader() {
    let jmc_cp = third_party_reader("JMC_CP", "JMC's parser");
    let converter = third_party_reader("AP_CONVERTER_JAR", "async-profiler's converter");
    for jdk in oracle_jdks() {
        let dir = work_dir(&format!("demo{}", jdk.major));
        jfrnative_demo(&jdk, &dir, &["--jdk-events=profile", "-d", "3s"]);
        let raw = dir.join("demo.jfr");
        let symbolized = dir.join("demo.symbolized.jfr");
        let name = jdk.name();
        assert!(
            !dir.join("demo.jdk").exists(),
            "{name}: the JDK's file is left beside the merged recording"
        );
        // Both JDKs' RecordingFile: our samples once, the JDK's events beside them, none of
        // the JDK's own samplers, one JVMInformation (ours left out: the JDK's has it).
        let samples = count(&counts(&jdk, &raw), "jdk.CPUTimeSample");
        // 4 busy threads for 3 s at 10 ms on 2 cores: at most 600; fewer beside other tests.
        assert!(
            samples > 100,
            "{name}: {samples} CPU samples in 3 s of 4 threads"
        );
        for reader in oracle_jdks() {
            for file in [&raw, &symbolized] {
                let c = counts(&reader, file);
                let what = format!("{} read by {}", file.display(), reader.name());
                assert_eq!(count(&c, "jdk.CPUTimeSample"), samples, "{what}");
                for jdk_type in [
                    "jdk.ThreadStart",
                    "jdk.ThreadEnd",
                    "jdk.ObjectAllocationSample",
                ] {
                    assert!(count(&c, jdk_type) > 0, "{what}: no {jdk_type}: {c:?}");
                }
                for sampler in ["jdk.ExecutionSample", "jdk.NativeMethodSample"] {
                    assert_eq!(count(&c, sampler), 0, "{what}: the JDK's own {sampler}");
                }
                assert_eq!(count(&c, "jdk.JVMInformation"), 1, "{what}");
            }
            // jfr summary counts by class id: one line for our samples, with all of them.
            let listed: Vec<u64> = summary_types(&reader, &raw)
                .into_iter()
                .filter(|(t, _)| t == "jdk.CPUTimeSample")
                .map(|(_, n)| n)
                .collect();
            assert_eq!(
                listed,
                vec![samples],
                "{name}: jfr summary of {}",
                reader.name()
            );
        }
        // JMC: one CPU-sample type, nothing skipped, one lane per demo thread with our samples
        // and the JDK's events about that thread.
        if let Some(cp) = &jmc_cp {
            for file in [&raw, &symbolized] {
                let view = jmc_view(&jdk, cp, file);
                let cpu_types: Vec<(&String, &u64)> = view
                    .types
                    .iter()
                    .filter(|(t, _)| {
                        t.starts_with("jdk.CPUTimeSample") && *t != "jdk.CPUTimeSamplesLost"
                    })
                    .collect();
                assert_eq!(
                    cpu_types,
                    vec![(&"jdk.CPUTimeSample".to_string(), &samples)],
                    "{name}: JMC's CPU types in {}",
                    file.display()
                );
                assert_eq!(view.skipped, 0, "{name}: JMC skipped events");
                assert_eq!(
                    view.chunks,
                    chunk_starts(file).len() as u64,
                    "{name}: JMC chunks"
                );
                for thread in DEMO_THREADS {
                    let lanes: Vec<_> = view.lanes.iter().filter(|l| l.name == thread).collect();
                    assert_eq!(lanes.len(), 1, "{name}: JMC lanes of {thread}: {lanes:?}");
                    let events = &lanes[0].events;
                    assert!(
                        events.get("jdk.CPUTimeSample").is_some_and(|&n| n > 50),
                        "{name}: {thread}: {events:?}"
                    );
                    assert_eq!(
                        events.get("jdk.ThreadEnd"),
                        Some(&1),
                        "{name}: {thread}: {events:?}"
                    );
                }
            }
        }
        if let Some(jar) = &converter {
            let with_stack = cpu_sample_events(&jdk, &symbolized)
                .unwrap()
                .iter()
                .filter(|e| !e["values"]["stackTrace"].is_null())
                .count() as u64;
            let converted: u64 = ap_collapsed(jar, &jdk, &symbolized, &[])
                .iter()
                .map(|(_, n)| n)
                .sum();
            assert_eq!(converted, with_stack, "{name}: async-profiler's converter");
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// Runs the Burner workload with the agent (`ours`, chunks of a second) and the JVM's own
/// recording (`-XX:StartFlightRecording`, as a user starts it) into `jdk_file`.
fn record_both(jdk: &Jdk, dir: &Path) -> (PathBuf, PathBuf) {
    let ours = dir.join("ours.jfr");
    let jdk_file = dir.join("jdk.jfr");
    let start = format!(
        "-XX:StartFlightRecording=settings=default,filename={}",
        jdk_file.display()
    );
    let options = format!("file={},interval=2ms,chunk=1s", ours.display());
    let out = java_with_agent(jdk, &options, &[&start], 3.0, "b-java:java,b-native:native")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    (jdk_file, ours)
}

/// Every event of `times`, by type, moved to the names a merge gives them.
fn renamed(
    mut times: BTreeMap<String, Vec<i64>>,
    from: &str,
    to: &str,
) -> BTreeMap<String, Vec<i64>> {
    if let Some(t) = times.remove(from) {
        times.insert(to.to_string(), t);
    }
    times
}

/// The number the merge said it left out of `what` (`left out ...: N what`), 0 if none.
fn said_left_out(said: &str, what: &str) -> u64 {
    said.split(", ")
        .flat_map(|part| part.rsplit(": ").next())
        .filter_map(|part| part.split_once(' '))
        .find(|(_, rest)| *rest == what)
        .and_then(|(n, _)| n.parse().ok())
        .unwrap_or(0)
}

#[test]
fn merge_keeps_every_event_of_both_recordings_on_one_clock() {
    let Some(jdk) = required(25) else {
        return;
    };
    agent_library();
    let dir = work_dir("merge");
    let (jdk_file, ours) = record_both(&jdk, &dir);
    let merged = dir.join("one.jfr");
    let said = merge(&[&jdk_file, &ours], &["--format", "merged"], &merged);
    assert!(said.contains("of the JDK's Flight Recorder"), "{said}");
    // Chunks in time order, each start distinct (JMC loads one chunk per start).
    let starts = chunk_starts(&merged);
    assert!(starts.len() >= 3, "{starts:?}");
    assert!(starts.windows(2).all(|w| w[0] < w[1]), "{starts:?}");
    for reader in oracle_jdks() {
        let name = reader.name();
        let jdk_times = all_event_times(&reader, &jdk_file).unwrap();
        let our_times = renamed(
            all_event_times(&reader, &ours).unwrap(),
            "jdk.NativeLibrary",
            "jfrnative.NativeLibrary",
        );
        let mut got = all_event_times(&reader, &merged).unwrap();
        // What the merge leaves out: the JDK's execution samples (default), our copies of the
        // JVM's facts that the JDK recorded.
        let mut expected: BTreeMap<String, Vec<i64>> = BTreeMap::new();
        for (ty, times) in &jdk_times {
            if ty != "jdk.ExecutionSample" && ty != "jdk.NativeMethodSample" {
                expected.entry(ty.clone()).or_default().extend(times);
            }
        }
        for (ty, times) in &our_times {
            let duplicate = [
                "jdk.JVMInformation",
                "jdk.OSInformation",
                "jdk.CPUInformation",
                "jdk.ThreadStart",
                "jdk.ThreadEnd",
            ]
            .contains(&ty.as_str())
                && jdk_times.get(ty).is_some_and(|t| !t.is_empty());
            if !duplicate {
                expected.entry(ty.clone()).or_default().extend(times);
            }
        }
        assert!(
            jdk_times
                .get("jdk.ExecutionSample")
                .is_some_and(|t| !t.is_empty()),
            "{name}"
        );
        // The JDK's settings of its own jdk.CPUTimeSample(sLost) types, which the merge
        // removes (ours is the file's one such type): as many as the merge says, a type's
        // handful at most.
        let settings_left_out = said_left_out(&said, "jdk.ActiveSetting (of a removed type) (JDK)");
        assert!(settings_left_out <= 12, "{said}");
        if let Some(settings) = expected.get_mut("jdk.ActiveSetting") {
            settings.sort_unstable();
            let by_time = &mut got.get_mut("jdk.ActiveSetting").unwrap();
            by_time.sort_unstable();
            // Drop from the expected ones the instants the merged file lacks.
            let mut have = by_time.to_vec();
            let mut kept = Vec::new();
            for t in settings.drain(..) {
                if let Some(i) = have.iter().position(|h| (h - t).abs() <= 1_000) {
                    have.swap_remove(i);
                    kept.push(t);
                }
            }
            assert_eq!(
                kept.len() as u64 + settings_left_out,
                jdk_times["jdk.ActiveSetting"].len() as u64
                    + our_times
                        .get("jdk.ActiveSetting")
                        .map_or(0, |t| t.len() as u64),
                "{name}: settings"
            );
            *settings = kept;
        }
        let types: Vec<&String> = expected.keys().collect();
        assert_eq!(types, got.keys().collect::<Vec<_>>(), "{name}: event types");
        for (ty, want) in &expected {
            let (mut want, mut have) = (want.clone(), got[ty].clone());
            want.sort_unstable();
            have.sort_unstable();
            assert_eq!(want.len(), have.len(), "{name}: {ty} events");
            let worst = want
                .iter()
                .zip(&have)
                .map(|(a, b)| (a - b).abs())
                .max()
                .unwrap_or(0);
            assert!(worst <= 1_000, "{name}: {ty} moved by {worst} ns");
        }
        // Our samples' Java stacks and native PCs, as the JDK's reader reads them, unchanged.
        let (before, after) = (
            recording_file(&reader, &ours).unwrap(),
            recording_file(&reader, &merged).unwrap(),
        );
        assert_eq!(
            before.java, after.java,
            "{name}: Java stacks of our samples"
        );
        assert_eq!(
            before.native, after.native,
            "{name}: native PCs of our samples"
        );
    }
    // --jdk-samples keep: the JDK's execution samples stay; our CPU samples are still counted
    // once by the report.
    let kept = dir.join("kept.jfr");
    merge(
        &[&jdk_file, &ours],
        &["--jdk-samples", "keep", "--format", "merged"],
        &kept,
    );
    let (k, j, o) = (
        counts(&jdk, &kept),
        counts(&jdk, &jdk_file),
        counts(&jdk, &ours),
    );
    assert_eq!(
        count(&k, "jdk.ExecutionSample"),
        count(&j, "jdk.ExecutionSample")
    );
    assert_eq!(
        count(&k, "jdk.CPUTimeSample"),
        count(&o, "jdk.CPUTimeSample")
    );
    let report = |file: &Path| {
        let out = jfr_symbolize(&[file.to_str().unwrap(), "--format", "json"]);
        assert!(out.status.success());
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        v["total"]["samples"].as_u64().unwrap()
    };
    assert_eq!(
        report(&kept),
        count(&o, "jdk.CPUTimeSample"),
        "the report counts our samples"
    );
    // The symbolized merge: JMC sees one CPU type, our samples with native frames.
    if let Some(cp) = third_party_reader("JMC_CP", "JMC's parser") {
        let symbolized = dir.join("one.symbolized.jfr");
        merge(&[&jdk_file, &ours], &[], &symbolized);
        let view = jmc_view(&jdk, &cp, &symbolized);
        assert_eq!(
            view.types.get("jdk.CPUTimeSample"),
            Some(&count(&o, "jdk.CPUTimeSample"))
        );
        assert!(
            !view
                .types
                .keys()
                .any(|t| t.starts_with("jdk.CPUTimeSample")
                    && t.len() > "jdk.CPUTimeSamplesLost".len()),
            "{:?}",
            view.types
        );
        assert_eq!(view.skipped, 0);
        for jdk_type in ["jdk.ThreadStart", "jdk.JVMInformation", "jdk.SystemProcess"] {
            assert_eq!(
                view.types.get(jdk_type),
                j.get(jdk_type),
                "JMC's {jdk_type}: {:?}",
                view.types
            );
        }
    }
    // A merge needs both: a clear error naming what is missing.
    let out = jfr_symbolize(&[
        "--merge",
        ours.to_str().unwrap(),
        "--format",
        "merged",
        "-o",
        dir.join("x.jfr").to_str().unwrap(),
    ]);
    assert!(!out.status.success());
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(
        said.contains("no chunk of the JDK's own Flight Recorder"),
        "{said}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_recording_cut_short_is_merged_from_its_finished_chunks() {
    let Some(jdk) = required(25) else {
        return;
    };
    agent_library();
    let dir = work_dir("cut");
    let (jdk_file, ours) = record_both(&jdk, &dir);
    let whole = counts(&jdk, &ours);
    let bytes = std::fs::read(&ours).unwrap();
    // Cut in the middle of the last chunk that has samples (as a JVM killed while writing it
    // leaves it; the very last chunk, written at exit, may have none).
    let chunks = symbolize::jfr::read_chunks(&bytes).chunks;
    let with_samples = |c: &symbolize::jfr::Chunk<'_>| {
        !symbolize::profile::read_chunk(c)
            .unwrap()
            .samples
            .is_empty()
    };
    let cut_chunk = chunks.iter().rposition(with_samples).unwrap();
    let (last, end) = {
        let c = &chunks[cut_chunk];
        (c.offset as usize, c.offset as usize + c.bytes.len())
    };
    let cut = dir.join("cut.jfr");
    std::fs::write(&cut, &bytes[..last + (end - last) / 2]).unwrap();
    let merged = dir.join("one.jfr");
    let said = merge(&[&jdk_file, &cut], &["--format", "merged"], &merged);
    assert!(said.contains("damaged"), "{said}");
    let finished = {
        let whole_file = dir.join("finished.jfr");
        std::fs::write(&whole_file, &bytes[..last]).unwrap();
        count(&counts(&jdk, &whole_file), "jdk.CPUTimeSample")
    };
    let got = counts(&jdk, &merged);
    assert_eq!(
        count(&got, "jdk.CPUTimeSample"),
        finished,
        "the finished chunks' samples"
    );
    assert!(finished < count(&whole, "jdk.CPUTimeSample"));
    assert_eq!(
        chunk_starts(&merged).len(),
        cut_chunk + 1,
        "the finished chunks and the JDK's"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn attach_with_jdk_events_records_the_running_jvm_and_leaves_its_own_recording_alone() {
    let Some(jdk) = required(25) else {
        return;
    };
    agent_library();
    let dir = work_dir("attach");
    // A service that records itself already (a recording of its own, named "mine").
    let theirs = dir.join("theirs.jfr");
    let start = format!(
        "-XX:StartFlightRecording=name=mine,settings=default,filename={}",
        theirs.display()
    );
    let mut java = Command::new(jdk.tool("java"));
    java.arg(&start)
        .arg(format!(
            "-Djava.library.path={}",
            tests::workload::workload_dir().display()
        ))
        .arg("-cp")
        .arg(tests::workload::workload_dir())
        .args(["Burner", "12", "b-java:java,b-native:native"]);
    let mut child = java.spawn().unwrap();
    std::thread::sleep(std::time::Duration::from_secs(2));
    let out_file = dir.join("attach.jfr");
    let out = Command::new(tool_binary("jfrnative"))
        .args([
            "attach",
            &child.id().to_string(),
            "-d",
            "4s",
            "--jdk-events=profile",
            "-o",
        ])
        .arg(&out_file)
        .output()
        .unwrap();
    let jcmd = jdk.jcmd(child.id()).arg("JFR.check").output().unwrap();
    let still = String::from_utf8_lossy(&jcmd.stdout).to_string();
    let status = child.wait().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(status.success());
    assert!(
        still.contains("name=mine"),
        "the JVM's own recording is left running: {still}"
    );
    assert!(!still.contains("jfrnative"), "ours is stopped: {still}");
    let c = counts(&jdk, &out_file);
    assert!(count(&c, "jdk.CPUTimeSample") > 200, "{c:?}");
    // The JDK's periodic events of those 4 s (jdk.CPULoad: every second).
    assert!(count(&c, "jdk.CPULoad") >= 2, "{c:?}");
    assert_eq!(count(&c, "jdk.ExecutionSample"), 0, "{c:?}");
    // The JVM's own recording has none of ours.
    assert_eq!(count(&counts(&jdk, &theirs), "jdk.CPUTimeSample"), 0);
    if let Some(cp) = third_party_reader("JMC_CP", "JMC's parser") {
        let view = jmc_view(&jdk, &cp, &dir.join("attach.symbolized.jfr"));
        assert_eq!(view.skipped, 0);
        assert_eq!(
            view.types.get("jdk.CPUTimeSample"),
            Some(&count(&c, "jdk.CPUTimeSample"))
        );
        let burners: Vec<_> = view
            .lanes
            .iter()
            .filter(|l| l.events.contains_key("jdk.CPUTimeSample") && l.events.len() > 1)
            .collect();
        assert!(
            !burners.is_empty(),
            "no thread with our samples and the JDK's events: {:?}",
            view.lanes
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// The JVM `jfrnative` (pid `cli`) runs, once it has started one.
fn child_of(cli: u32) -> Option<u32> {
    let children = std::fs::read_to_string(format!("/proc/{cli}/task/{cli}/children")).ok()?;
    children.split_whitespace().next()?.parse().ok()
}

#[test]
fn a_jvm_killed_while_recording_with_jdk_events_keeps_our_finished_chunks() {
    let Some(jdk) = required(25) else {
        return;
    };
    agent_library();
    let dir = work_dir("killed");
    let out_file = dir.join("out.jfr");
    let classes = tests::workload::workload_dir();
    let cli = Command::new(tool_binary("jfrnative"))
        .args(["record", "--jdk-events", "--chunk", "1s", "-o"])
        .arg(&out_file)
        .arg("--")
        .arg(jdk.tool("java"))
        .arg(format!("-Djava.library.path={}", classes.display()))
        .arg("-cp")
        .arg(&classes)
        .args(["Burner", "60", "k-native:native"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Until 3 chunks of ours are finished (the file grows chunk by chunk).
    let start = std::time::Instant::now();
    let finished = || {
        std::fs::read(&out_file).map_or(0, |b| {
            let (mut at, mut n) = (0usize, 0);
            while at + 68 <= b.len() {
                let size = u64::from_be_bytes(b[at + 8..at + 16].try_into().unwrap()) as usize;
                if size < 68 || at + size > b.len() {
                    break;
                }
                at += size;
                n += 1;
            }
            n
        })
    };
    while finished() < 3 && start.elapsed() < std::time::Duration::from_secs(60) {
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let jvm = child_of(cli.id()).expect("the JVM jfrnative started");
    let killed = Command::new("kill")
        .args(["-KILL", &jvm.to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let out = cli.wait_with_output().unwrap();
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(said.contains("could not be merged"), "{said}");
    assert!(said.contains("holds jfr-native's samples alone"), "{said}");
    // Our finished chunks are readable, and reported.
    let c = counts(&jdk, &out_file);
    assert!(count(&c, "jdk.CPUTimeSample") > 100, "{c:?}");
    assert!(dir.join("out.symbolized.jfr").exists(), "{said}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// What `jfrnative` said on both streams.
fn said_by(out: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// The events of `file` by type, as `jfr print --json` of `jdk` lists them.
fn json_counts(jdk: &Jdk, file: &Path) -> BTreeMap<String, u64> {
    let text = tests::readers::run(
        Command::new(jdk.tool("jfr"))
            .args(["print", "--json"])
            .arg(file),
    )
    .unwrap_or_else(|e| panic!("jfr print --json {}: {e}", file.display()));
    let json: serde_json::Value = serde_json::from_str(&text).unwrap();
    let mut counts = BTreeMap::new();
    for e in json["recording"]["events"].as_array().unwrap() {
        *counts
            .entry(e["type"].as_str().unwrap().to_string())
            .or_default() += 1;
    }
    counts
}

/// JDK 11's own readers (`jfr summary`, `jfr print --json`) on a merged `--jdk-events`
/// recording: our CPU samples, the JDK's events (`jdk.CPULoad` every `period_ms` or more
/// often), none of the JDK's samplers; and the merge (what `jfrnative` `said`) left none of
/// them out either: they were off in the JVM, not dropped afterwards. Returns the CPULoad count.
fn check_jdk11_recording(jdk: &Jdk, file: &Path, said: &str, seconds: u64, period_ms: u64) -> u64 {
    let what = format!("{}: {said}", file.display());
    let summary: BTreeMap<String, u64> = summary_types(jdk, file).into_iter().collect();
    let json = json_counts(jdk, file);
    for counts in [&summary, &json] {
        assert!(
            count(counts, "jdk.CPUTimeSample") > 50,
            "{what}: {counts:?}"
        );
        assert_eq!(count(counts, "jdk.JVMInformation"), 1, "{what}: {counts:?}");
        let loads = count(counts, "jdk.CPULoad");
        assert!(
            loads * 2 >= seconds * 1000 / period_ms,
            "{what}: {loads} jdk.CPULoad in {seconds} s at {period_ms} ms: {counts:?}"
        );
        for sampler in ["jdk.ExecutionSample", "jdk.NativeMethodSample"] {
            assert_eq!(count(counts, sampler), 0, "{what}: {counts:?}");
        }
    }
    assert_eq!(
        count(&summary, "jdk.CPUTimeSample"),
        count(&json, "jdk.CPUTimeSample")
    );
    assert!(
        said.contains("one recording: 1 chunk(s) of the JDK's"),
        "{what}"
    );
    for sampler in ["jdk.ExecutionSample", "jdk.NativeMethodSample"] {
        assert!(
            !said.contains(sampler),
            "the JVM recorded {sampler}: {what}"
        );
    }
    // JDK 11 declares jdk.ActiveRecording (and jdk.ActiveSetting) otherwise than we do: ours
    // are renamed, so that each name is one type, both sources' events kept.
    assert!(
        !said.contains("declared differently by the two sources"),
        "{what}"
    );
    for ours in ["jfrnative.ActiveRecording", "jfrnative.ActiveSetting"] {
        assert!(said.contains(&format!("as {ours}")), "{what}");
        assert!(count(&json, ours) > 0, "{what}: {json:?}");
    }
    assert!(
        count(&json, "jdk.ActiveSetting") > 0,
        "the JDK's: {what}: {json:?}"
    );
    if let (Some(cp), Some(jmc_jdk)) = (third_party_reader("JMC_CP", "JMC's parser"), required(17))
    {
        let view = jmc_view(&jmc_jdk, &cp, file);
        let active: Vec<&String> = view
            .types
            .keys()
            .filter(|t| t.contains("ActiveRecording") || t.contains("ActiveSetting"))
            .collect();
        for t in &active {
            assert!(
                [
                    "jdk.ActiveRecording",
                    "jdk.ActiveSetting",
                    "jfrnative.ActiveRecording",
                    "jfrnative.ActiveSetting"
                ]
                .contains(&t.as_str()),
                "{what}: JMC splits a type: {active:?}"
            );
        }
        assert_eq!(view.skipped, 0, "{what}: JMC skipped events");
    }
    count(&summary, "jdk.CPULoad")
}

#[test]
fn jdk_events_on_jdk_11_records_its_events_with_its_samplers_off() {
    // JDK 11 takes no EVENT#setting=value options (JDK 17 added them): `--jdk-events` gives it
    // its settings with the samplers off in a file instead.
    let Some(jdk) = required(11) else {
        return;
    };
    agent_library();
    let dir = work_dir("jdk11");
    let classes = tests::workload::workload_dir();
    let library_path = format!("-Djava.library.path={}", classes.display());
    // record: the JDK's default settings.
    let recorded = dir.join("record.jfr");
    let out = Command::new(tool_binary("jfrnative"))
        .args(["record", "--jdk-events", "-o"])
        .arg(&recorded)
        .arg("--")
        .arg(jdk.tool("java"))
        .arg(&library_path)
        .arg("-cp")
        .arg(&classes)
        .args(["Burner", "4", "r-java:java,r-native:native"])
        .output()
        .unwrap();
    let said = said_by(&out);
    assert!(out.status.success(), "{said}");
    check_jdk11_recording(&jdk, &recorded, &said, 4, 1000);
    let summary: BTreeMap<String, u64> = summary_types(&jdk, &recorded).into_iter().collect();
    assert!(count(&summary, "jdk.ThreadStart") > 0, "{summary:?}");
    assert!(
        !dir.join("record.jdk").exists(),
        "the JDK's files and the settings written for it are left: {said}"
    );
    // attach: `profile`, and a user's .jfc (JDK 11's default with jdk.CPULoad every 100 ms,
    // to tell it from the JDK's own).
    let default = std::fs::read_to_string(jdk.home.join("lib/jfr/default.jfc")).unwrap();
    let load =
        "<event name=\"jdk.CPULoad\">\n      <setting name=\"enabled\">true</setting>\n      \
                <setting name=\"period\">1000 ms</setting>";
    assert!(default.contains(load), "JDK 11's default.jfc changed");
    let users = dir.join("mine.jfc");
    std::fs::write(
        &users,
        default.replace(load, &load.replace("1000 ms", "100 ms")),
    )
    .unwrap();
    let users_value = format!("--jdk-events={}", users.display());
    for (settings, period_ms) in [("--jdk-events=profile", 1000), (users_value.as_str(), 100)] {
        let mut java = Command::new(jdk.tool("java"));
        java.arg(&library_path).arg("-cp").arg(&classes).args([
            "Burner",
            "9",
            "a-java:java,a-native:native",
        ]);
        let mut child = java.spawn().unwrap();
        std::thread::sleep(std::time::Duration::from_secs(2));
        let out_file = dir.join("attach.jfr");
        let out = Command::new(tool_binary("jfrnative"))
            .args([
                "attach",
                &child.id().to_string(),
                "-d",
                "3s",
                settings,
                "-o",
            ])
            .arg(&out_file)
            .output()
            .unwrap();
        let status = child.wait().unwrap();
        let said = said_by(&out);
        assert!(out.status.success(), "{settings}: {said}");
        assert!(status.success(), "{settings}");
        let loads = check_jdk11_recording(&jdk, &out_file, &said, 3, period_ms);
        if period_ms == 1000 {
            assert!(loads < 10, "{settings}: {loads} jdk.CPULoad in 3 s");
        }
        assert!(!dir.join("attach.jdk").exists(), "{settings}: {said}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
