//! `jfr-symbolize` end to end: a recording by the agent on JDK 17 and 25, symbolized, read back
//! by the JDKs' `jfr print` (JSON and text) and `jfr summary`, and every other output format;
//! damaged input; no panic on mutated input.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

use serde_json::Value;
use symbolize::report::Filter;
use symbolize::{Options, Symbolizer};
use tests::jdk::{oracle_jdks, Jdk};
use tests::readers::{cpu_sample_events, jfr_json, run};
use tests::workload::{jfr_symbolize, run_workload, tool_binary};

const CHAIN: [&str; 4] = ["level3", "level2", "level1", "Java_Burner_nativeBurn"];

fn out_dir() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("jfrnative-symcli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// One multi-chunk recording per JDK, made once.
fn recording(jdk: &Jdk) -> PathBuf {
    static MADE: OnceLock<std::sync::Mutex<Vec<(u32, PathBuf)>>> = OnceLock::new();
    let made = MADE.get_or_init(Default::default);
    let mut made = made.lock().unwrap();
    if let Some((_, p)) = made.iter().find(|(m, _)| *m == jdk.major) {
        return p.clone();
    }
    let file = out_dir().join(format!("rec{}.jfr", jdk.major));
    run_workload(
        jdk,
        &format!("file={},interval=10ms,chunk=1s", file.display()),
        &[],
        2.5,
        "w-native:native,w-java:java",
    );
    made.push((jdk.major, file.clone()));
    file
}

/// Records the Burner workload (1 s) with the JDK's own recorder into `file`, with the
/// `-XX:StartFlightRecording` `settings` (`settings=profile`, `jdk.CPUTimeSample#enabled=true`).
fn jdk_own_recording(jdk: &Jdk, file: &Path, settings: &[&str]) {
    let workload = tests::workload::workload_dir();
    let out = Command::new(jdk.tool("java"))
        .arg(format!(
            "-XX:StartFlightRecording:filename={},{}",
            file.display(),
            settings.join(",")
        ))
        .arg(format!("-Djava.library.path={}", workload.display()))
        .arg("-cp")
        .arg(&workload)
        .args(["Burner", "1", "a:native,b:java"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}: {}",
        jdk.name(),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// One frame as `jfr print --json` shows it: (class, method, frame type, line).
type Row = (String, String, String, i64);

fn frames_of(event: &Value) -> Vec<Row> {
    event["values"]["stackTrace"]["frames"]
        .as_array()
        .map(|frames| {
            frames
                .iter()
                .map(|f| {
                    (
                        f["method"]["type"]["name"]
                            .as_str()
                            .unwrap_or("")
                            .to_string(),
                        f["method"]["name"].as_str().unwrap_or("").to_string(),
                        f["type"].as_str().unwrap_or("").to_string(),
                        f["lineNumber"].as_i64().unwrap_or(0),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn symbolized_jfr_shows_native_frames_in_jdk_17_and_25() {
    let jdks = oracle_jdks();
    for rec_jdk in &jdks {
        let input = recording(rec_jdk);
        let output = out_dir().join(format!("sym{}.jfr", rec_jdk.major));
        let out = jfr_symbolize(&[input.to_str().unwrap(), "-o", output.to_str().unwrap()]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        for jdk in &jdks {
            let what = format!("recorded on {}, read by {}", rec_jdk.name(), jdk.name());
            let events = cpu_sample_events(jdk, &output).unwrap();
            let native_thread: Vec<&Value> = events
                .iter()
                .filter(|e| e["values"]["eventThread"]["javaName"] == "w-native")
                .collect();
            // Under load the kernel coalesces timer expirations: fewer, heavier samples.
            assert!(
                native_thread.len() >= 50,
                "{what}: {} samples",
                native_thread.len()
            );
            // Samples in the JNI library: everything above `Java_Burner_nativeBurn` is native,
            // and it sits right on `level1` and right under `Burner.nativeBurn`. The leaf is
            // usually `level3`; under load more samples land in the clock call below `level2`.
            // A sample whose Java stack was not taken (`failed`) ends at the JNI function.
            let in_jni: Vec<(Vec<Row>, bool)> = native_thread
                .iter()
                .map(|e| (frames_of(e), e["values"]["failed"] == true))
                .filter(|(f, _)| f.iter().any(|f| f.1 == "Java_Burner_nativeBurn"))
                .collect();
            let good = in_jni
                .iter()
                .filter(|(f, failed)| {
                    let Some(j) = f.iter().position(|f| f.1 == "Java_Burner_nativeBurn") else {
                        return false;
                    };
                    j >= 1
                        && f[..=j].iter().all(|f| f.2 == "Native")
                        && f[j - 1].1 == "level1"
                        && f[j].0 == "libburner.so"
                        && match f.get(j + 1) {
                            Some(n) => n.0 == "Burner" && n.1 == "nativeBurn",
                            None => *failed,
                        }
                })
                .count();
            let full_chain = in_jni
                .iter()
                .filter(|(f, _)| {
                    f.len() > 4
                        && f[..4]
                            .iter()
                            .zip(CHAIN)
                            .all(|(f, want)| f.0 == "libburner.so" && f.1 == want)
                })
                .count();
            assert!(
                in_jni.len() * 10 >= native_thread.len() * 9,
                "{what}: only {} of {} w-native samples are in the JNI library",
                in_jni.len(),
                native_thread.len()
            );
            assert!(
                good * 100 >= in_jni.len() * 99,
                "{what}: {good} of {} JNI samples have the native frames in place",
                in_jni.len()
            );
            assert!(
                full_chain * 3 >= in_jni.len(),
                "{what}: {full_chain} of {} start level3, level2, level1, Java_Burner_nativeBurn",
                in_jni.len()
            );
            assert!(
                events
                    .iter()
                    .all(|e| e["values"].get("nativeStackTrace").is_none()),
                "{what}: the nativeStackTrace field is still there"
            );
            // Text mode, which fails on the unsymbolized file's array field.
            let pretty = run(Command::new(jdk.tool("jfr"))
                .args(["print", "--events", "jdk.CPUTimeSample"])
                .arg(&output))
            .unwrap();
            assert!(
                pretty.contains("libburner.so.level3()"),
                "{what}: text mode lacks the native frame"
            );
            let summary = run(Command::new(jdk.tool("jfr")).arg("summary").arg(&output)).unwrap();
            assert!(
                summary.contains("jfrnative.Symbolization"),
                "{what}: {summary}"
            );
            let note = run(Command::new(jdk.tool("jfr"))
                .args(["print", "--json", "--events", "jfrnative.Symbolization"])
                .arg(&output))
            .unwrap();
            let note: Value = serde_json::from_str(&note).unwrap();
            let notes = note["recording"]["events"].as_array().unwrap();
            let chunks = summary
                .lines()
                .find_map(|l| l.trim().strip_prefix("Chunks: "))
                .and_then(|n| n.trim().parse::<usize>().ok())
                .unwrap();
            assert!(chunks >= 2, "{what}: {chunks} chunks");
            assert_eq!(
                notes.len(),
                chunks,
                "{what}: one Symbolization event per chunk"
            );
            let samples: i64 = notes
                .iter()
                .map(|n| n["values"]["samples"].as_i64().unwrap())
                .sum();
            assert_eq!(samples as usize, events.len(), "{what}");
        }
        // Everything but the sample stacks is kept: same event counts per type.
        let jdk = &jdks[0];
        let counts = |file: &Path| -> Vec<(String, String)> {
            let s = run(Command::new(jdk.tool("jfr")).arg("summary").arg(file)).unwrap();
            s.lines()
                .filter_map(|l| {
                    let w: Vec<&str> = l.split_whitespace().collect();
                    (w.len() == 3
                        && w[0].starts_with("jdk.")
                        && !w[0].ends_with("Metadata")
                        && !w[0].ends_with("CheckPoint")
                        && !w[0].ends_with("Checkpoint"))
                    .then(|| (w[0].to_string(), w[1].to_string()))
                })
                .collect()
        };
        assert_eq!(counts(&input), counts(&output));
    }
}

#[test]
fn every_view_reports_the_native_chain_weighted_by_cpu_time() {
    let jdk = &oracle_jdks()[0];
    let input = recording(jdk);
    let reading = jfr_json(jdk, &input).unwrap();
    let period_ns = reading.period_ns();
    let native_samples = reading
        .samples
        .iter()
        .filter(|s| s.thread == "w-native")
        .count() as u64;

    let folded = jfr_symbolize(&[input.to_str().unwrap(), "--format", "collapsed"]);
    assert!(folded.status.success());
    let folded = String::from_utf8(folded.stdout).unwrap();
    let total: u64 = folded
        .lines()
        .map(|l| l.rsplit_once(' ').unwrap().1.parse::<u64>().unwrap())
        .sum();
    assert_eq!(
        total, period_ns,
        "collapsed weights = sum of samplingPeriod"
    );
    let chain_line = "Burner.nativeBurn;Java_Burner_nativeBurn;level1;level2;level3 ";
    assert!(folded.contains(chain_line), "{folded}");

    let by_thread = jfr_symbolize(&[
        input.to_str().unwrap(),
        "--format",
        "collapsed",
        "--samples",
        "--threads",
        "--thread",
        "w-native",
    ]);
    let by_thread = String::from_utf8(by_thread.stdout).unwrap();
    let counted: u64 = by_thread
        .lines()
        .inspect(|l| assert!(l.starts_with("[w-native];"), "{l}"))
        .map(|l| l.rsplit_once(' ').unwrap().1.parse::<u64>().unwrap())
        .sum();
    assert_eq!(counted, native_samples);

    let svg = out_dir().join("flame.svg");
    let out = jfr_symbolize(&[input.to_str().unwrap(), "-o", svg.to_str().unwrap()]);
    assert!(out.status.success());
    let svg = std::fs::read_to_string(&svg).unwrap();
    assert!(svg.starts_with("<?xml") && svg.contains("<svg") && svg.contains("level3"));

    let json = jfr_symbolize(&[input.to_str().unwrap(), "--format", "json"]);
    let json: Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(
        json["total"]["samples"].as_u64(),
        Some(reading.samples.len() as u64)
    );
    assert_eq!(json["total"]["cpuNanos"].as_u64(), Some(period_ns));
    let top = &json["nativeFunctions"][0];
    let frame = &json["frames"][top["frame"].as_u64().unwrap() as usize];
    assert_eq!(frame["name"], "level3");
    assert_eq!(frame["library"], "libburner.so");

    let text = jfr_symbolize(&[input.to_str().unwrap()]);
    let text = String::from_utf8(text.stdout).unwrap();
    let first_native = text
        .lines()
        .skip_while(|l| !l.starts_with("Top native functions"))
        .nth(2)
        .unwrap_or("");
    assert!(first_native.contains("level3 [libburner.so]"), "{text}");
}

#[test]
fn damaged_input_keeps_the_chunks_before_the_damage() {
    let jdk = &oracle_jdks()[0];
    let input = recording(jdk);
    let bytes = std::fs::read(&input).unwrap();
    let chunks = symbolize::jfr::read_chunks(&bytes);
    assert!(chunks.error.is_none() && chunks.chunks.len() >= 2);
    let last = chunks.chunks.last().unwrap();
    let cut = last.offset as usize + last.bytes.len() / 2;
    let damaged = out_dir().join("damaged.jfr");
    std::fs::write(&damaged, &bytes[..cut]).unwrap();
    let output = out_dir().join("damaged-sym.jfr");
    let out = jfr_symbolize(&[damaged.to_str().unwrap(), "-o", output.to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(damaged.to_str().unwrap())
            && stderr.contains(&format!("at offset {}", last.offset)),
        "{stderr}"
    );
    let summary = run(Command::new(jdk.tool("jfr")).arg("summary").arg(&output)).unwrap();
    assert!(
        summary.contains(&format!("Chunks: {}", chunks.chunks.len() - 1)),
        "{summary}"
    );

    // Every other format too: what the chunks before the damage give (the same as a file of
    // just those chunks), and exit 2.
    let intact = out_dir().join("damaged-intact-prefix.jfr");
    std::fs::write(&intact, &bytes[..last.offset as usize]).unwrap();
    for ext in ["collapsed", "json", "txt", "svg"] {
        let from_damaged = out_dir().join(format!("damaged-out.{ext}"));
        let out = jfr_symbolize(&[
            damaged.to_str().unwrap(),
            "-o",
            from_damaged.to_str().unwrap(),
        ]);
        assert_eq!(out.status.code(), Some(2), "{ext}");
        let from_intact = out_dir().join(format!("intact-out.{ext}"));
        let out = jfr_symbolize(&[
            intact.to_str().unwrap(),
            "-o",
            from_intact.to_str().unwrap(),
        ]);
        assert!(out.status.success(), "{ext}");
        let damaged_text = std::fs::read_to_string(&from_damaged)
            .unwrap()
            .replace(damaged.to_str().unwrap(), "INPUT");
        let intact_text = std::fs::read_to_string(&from_intact)
            .unwrap()
            .replace(intact.to_str().unwrap(), "INPUT");
        assert!(damaged_text.contains("level3"), "{ext}: {damaged_text}");
        assert!(
            damaged_text == intact_text,
            "{ext}: the damaged file's output differs"
        );
    }

    let garbage = out_dir().join("garbage.jfr");
    std::fs::write(&garbage, b"this is not a recording").unwrap();
    let out = jfr_symbolize(&[garbage.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not a JFR chunk"));

    let missing = jfr_symbolize(&["/nonexistent/x.jfr"]);
    assert_eq!(missing.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&missing.stderr).contains("cannot read /nonexistent/x.jfr"));
}

/// Unreadable input never costs the user an existing output, and leaves no empty file; readable
/// input replaces the output whole (written beside it, then renamed: no temporary file stays).
#[test]
fn unreadable_input_leaves_the_output_alone() {
    let dir = out_dir().join("unreadable");
    std::fs::create_dir_all(&dir).unwrap();
    let empty = dir.join("empty.jfr");
    std::fs::write(&empty, b"").unwrap();
    for format in ["jfr", "txt", "svg", "json", "collapsed"] {
        let existing = dir.join(format!("existing.{format}"));
        std::fs::write(&existing, b"an earlier result").unwrap();
        let out = jfr_symbolize(&[empty.to_str().unwrap(), "-o", existing.to_str().unwrap()]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{format}: {stderr}");
        assert!(stderr.contains("left as it was"), "{format}: {stderr}");
        assert_eq!(
            std::fs::read(&existing).unwrap(),
            b"an earlier result",
            "{format}"
        );
        let fresh = dir.join(format!("fresh.{format}"));
        let out = jfr_symbolize(&[empty.to_str().unwrap(), "-o", fresh.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(2), "{format}");
        assert!(
            !fresh.exists(),
            "{format}: an output was made from empty input"
        );
    }
    let jdk = &oracle_jdks()[0];
    let replaced = dir.join("existing.txt");
    let out = jfr_symbolize(&[
        recording(jdk).to_str().unwrap(),
        "-o",
        replaced.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(std::fs::read_to_string(&replaced)
        .unwrap()
        .starts_with("CPU samples:"));
    let left: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".tmp"))
        .collect();
    assert!(left.is_empty(), "temporary files left: {left:?}");
}

#[test]
fn a_closed_pipe_ends_quietly() {
    let jdk = &oracle_jdks()[0];
    let input = recording(jdk);
    let mut child = Command::new(tool_binary("jfr-symbolize"))
        .args([input.to_str().unwrap(), "--format", "json"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{:?}", out.status);
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn mutated_input_never_panics() {
    let jdk = &oracle_jdks()[0];
    let bytes = std::fs::read(recording(jdk)).unwrap();
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let mut outcomes = [0usize; 2];
    // One resolver for all rounds: its caches are what a long run would have too, and the
    // libraries are read once (a debug build takes seconds per libjvm.so symbol table).
    let mut s = Symbolizer::new(Options::default());
    for round in 0..400 {
        let mut m = bytes.clone();
        if round % 4 == 0 {
            m.truncate((next() as usize) % bytes.len());
        } else {
            for _ in 0..1 + round % 3 {
                let i = (next() as usize) % m.len();
                m[i] = next() as u8;
            }
        }
        let mut out = Vec::new();
        let outcome = symbolize::driver::run(
            &m,
            &mut s,
            &Filter::default(),
            Some(&mut out),
            "test",
            &mut |_, _| {},
        )
        .unwrap();
        outcomes[usize::from(outcome.error.is_some())] += 1;
    }
    // Both paths were taken: some mutations were caught as damage, some were not (they hit
    // values, not structure).
    assert!(outcomes[0] > 0 && outcomes[1] > 0, "{outcomes:?}");
}

#[test]
fn a_jdk_recording_is_copied_with_every_event_kept() {
    // A file the JDK wrote itself (every JDK event type, JDK metadata and constant pools): the
    // rewrite must keep every event and stay readable.
    for jdk in oracle_jdks() {
        let input = out_dir().join(format!("jdk{}-own.jfr", jdk.major));
        jdk_own_recording(&jdk, &input, &["settings=profile"]);
        let output = out_dir().join(format!("jdk{}-own-sym.jfr", jdk.major));
        let sym = jfr_symbolize(&[input.to_str().unwrap(), "-o", output.to_str().unwrap()]);
        assert!(
            sym.status.success(),
            "{}",
            String::from_utf8_lossy(&sym.stderr)
        );
        let counts = |file: &Path| -> Vec<(String, String)> {
            let s = run(Command::new(jdk.tool("jfr")).arg("summary").arg(file)).unwrap();
            s.lines()
                .filter_map(|l| {
                    let w: Vec<&str> = l.split_whitespace().collect();
                    (w.len() == 3 && w[0].contains('.') && w[1].parse::<u64>().is_ok())
                        .then(|| (w[0].to_string(), w[1].to_string()))
                })
                .filter(|(t, _)| {
                    !matches!(
                        t.as_str(),
                        "jdk.Metadata"
                            | "jdk.CheckPoint"
                            | "jdk.Checkpoint"
                            | "jfrnative.Symbolization"
                    )
                })
                .collect()
        };
        let before = counts(&input);
        assert!(
            before.len() > 50,
            "{}: only {} event types",
            jdk.name(),
            before.len()
        );
        assert_eq!(before, counts(&output), "{}", jdk.name());
        // Every event still decodes.
        run(Command::new(jdk.tool("jfr"))
            .args(["print", "--json"])
            .arg(&output))
        .unwrap_or_else(|e| panic!("{}: {e}", jdk.name()));
    }
}

#[test]
fn lost_samples_are_counted_as_the_jdk_reads_them() {
    let jdk = &oracle_jdks()[0];
    let golden =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../testdata/golden/lost_samples.jfr");
    let text = run(Command::new(jdk.tool("jfr"))
        .args(["print", "--json", "--events", "jdk.CPUTimeSamplesLost"])
        .arg(&golden))
    .unwrap();
    let json: Value = serde_json::from_str(&text).unwrap();
    let expected: i64 = json["recording"]["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["values"]["lostSamples"].as_i64().unwrap())
        .sum();
    assert!(expected > 0);
    let out = jfr_symbolize(&[golden.to_str().unwrap(), "--format", "json"]);
    let ours: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(ours["lostSamples"].as_i64(), Some(expected));
}

/// `jfr view` groups by method: a native function must have one method in the whole file, not
/// one per chunk, to be listed once.
#[test]
fn jfr_view_lists_each_native_function_once_across_chunks() {
    let Some(jdk) = oracle_jdks().into_iter().find(|j| j.major >= 21) else {
        panic!("jfr view needs JDK 21 or later");
    };
    let input = recording(&jdk);
    let output = out_dir().join("view-sym.jfr");
    let out = jfr_symbolize(&[input.to_str().unwrap(), "-o", output.to_str().unwrap()]);
    assert!(out.status.success());
    let summary = run(Command::new(jdk.tool("jfr")).arg("summary").arg(&output)).unwrap();
    let chunks = summary
        .lines()
        .find_map(|l| l.trim().strip_prefix("Chunks:"))
        .and_then(|n| n.trim().parse::<u32>().ok())
        .unwrap_or(0);
    assert!(chunks >= 3, "{chunks} chunks: {summary}");
    tests::format_rules::check_reader_rules(&output);
    // The agent's own file too (Burner is in the unnamed package).
    tests::format_rules::check_symbols_utf8(&input);
    tests::format_rules::check_frame_type_keys(&input);
    let view = run(Command::new(jdk.tool("jfr"))
        .args(["view", "--width", "250", "cpu-time-hot-methods"])
        .arg(&output))
    .unwrap();
    let natives: Vec<&str> = view
        .lines()
        .filter(|l| l.contains(".so"))
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert!(
        natives.iter().any(|m| m.starts_with("libburner.so.level3")),
        "{view}"
    );
    let mut seen = std::collections::BTreeSet::new();
    for m in &natives {
        assert!(seen.insert(*m), "{m} listed twice:\n{view}");
        // The library is the class: a placeholder names it once.
        assert!(m.matches(".so").count() <= 1, "{m}");
    }
}

/// The flame graph colours each frame by its kind, as the legend says: every frame's fill is
/// its kind's legend colour (in one of a few shades), where the kind is what the JSON view says
/// of a frame of that name.
#[test]
fn the_flame_graph_colours_frames_by_kind_with_a_legend() {
    let jdk = &oracle_jdks()[0];
    let input = recording(jdk);
    let svg_path = out_dir().join("kinds.svg");
    let out = jfr_symbolize(&[input.to_str().unwrap(), "-o", svg_path.to_str().unwrap()]);
    assert!(out.status.success());
    let svg = std::fs::read_to_string(&svg_path).unwrap();
    let json = jfr_symbolize(&[input.to_str().unwrap(), "--format", "json"]);
    let json: Value = serde_json::from_slice(&json.stdout).unwrap();
    let checked = tests::flame::kinds_by_colour(&svg, &json);
    for kind in ["jit", "interpreted", "native", "java-native"] {
        assert!(checked.contains_key(kind), "no {kind} frame: {checked:?}");
    }
    assert!(checked.len() >= 4, "frames of only {checked:?}");
}

/// The text report's top stacks are distinct as shown (stacks that differ only in lines are
/// merged), the JSON gives Java frames their lines, and folded stacks have no empty stack and
/// no line twice.
#[test]
fn reports_show_each_stack_once_and_java_lines() {
    let jdk = &oracle_jdks()[0];
    let input = recording(jdk);
    let text = jfr_symbolize(&[input.to_str().unwrap(), "--top", "30"]);
    let text = String::from_utf8(text.stdout).unwrap();
    let section = text
        .split("Top stacks")
        .nth(1)
        .unwrap()
        .split("Threads by")
        .next()
        .unwrap();
    // "  12.34% (56 samples)" starts a stack; its frames are indented further.
    let mut stacks: Vec<String> = Vec::new();
    for line in section.lines().skip(1) {
        if line.starts_with("  ") && !line.starts_with("   ") {
            stacks.push(String::new());
        } else if let Some(stack) = stacks.last_mut() {
            stack.push_str(line);
            stack.push('\n');
        }
    }
    assert!(stacks.len() >= 3, "{text}");
    let distinct: std::collections::HashSet<_> = stacks.iter().collect();
    assert_eq!(
        distinct.len(),
        stacks.len(),
        "a stack listed twice:\n{text}"
    );

    let json = jfr_symbolize(&[input.to_str().unwrap(), "--format", "json"]);
    let json: Value = serde_json::from_slice(&json.stdout).unwrap();
    let java_lines = json["frames"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["kind"] == "interpreted" || f["kind"] == "jit" || f["kind"] == "inlined")
        .filter(|f| f["line"].as_u64().is_some_and(|l| l > 0))
        .count();
    assert!(java_lines > 0, "no Java frame has its line");

    let folded = jfr_symbolize(&[input.to_str().unwrap(), "--format", "collapsed"]);
    let folded = String::from_utf8(folded.stdout).unwrap();
    let mut seen = std::collections::HashSet::new();
    for line in folded.lines() {
        let (stack, _) = line.rsplit_once(' ').unwrap();
        assert!(!stack.trim().is_empty(), "an empty stack: {line:?}");
        assert!(seen.insert(stack.to_string()), "{stack} twice");
    }
}

/// A file the JDK wrote itself has no native stacks: with its default `profile` settings it
/// holds only `jdk.ExecutionSample`s, whose Java profile the report gives, by count; with
/// `jdk.CPUTimeSample` (JDK 25) it gives the CPU profile. Either way it says why there are no
/// native frames.
#[test]
fn a_jdk_recording_gets_its_java_profile_and_the_hint() {
    for jdk in oracle_jdks() {
        let mut settings = vec!["settings=profile".to_string()];
        let mut cases = vec![("profile", settings.clone())];
        if jdk.major >= 25 {
            settings.push("jdk.CPUTimeSample#enabled=true".into());
            settings.push("jdk.CPUTimeSample#throttle=10ms".into());
            cases.push(("cpu-time", settings));
        }
        for (case, settings) in cases {
            let input = out_dir().join(format!("jdk{}-{case}.jfr", jdk.major));
            let settings: Vec<&str> = settings.iter().map(String::as_str).collect();
            jdk_own_recording(&jdk, &input, &settings);
            let what = format!("{} {case}", jdk.name());
            let events = |kind: &str| -> u64 {
                let s = run(Command::new(jdk.tool("jfr")).arg("summary").arg(&input)).unwrap();
                s.lines()
                    .find_map(|l| {
                        let w: Vec<&str> = l.split_whitespace().collect();
                        (w.first() == Some(&kind)).then(|| w[1].parse().unwrap())
                    })
                    .unwrap_or(0)
            };
            let text = jfr_symbolize(&[input.to_str().unwrap()]);
            assert!(text.status.success(), "{what}");
            let text = String::from_utf8(text.stdout).unwrap();
            let java_methods = text.split("Top Java methods").nth(1).unwrap_or("");
            assert!(java_methods.contains("Burner."), "{what}: {text}");
            assert!(!text.contains("Top native functions"), "{what}: {text}");
            if case == "profile" {
                let n = events("jdk.ExecutionSample");
                assert!(n > 0 && events("jdk.CPUTimeSample") == 0, "{what}");
                assert!(
                    text.contains("This file has no jdk.CPUTimeSample events")
                        && text.contains(&format!("Execution samples: {n} samples")),
                    "{what}: {text}"
                );
            } else {
                let n = events("jdk.CPUTimeSample");
                assert!(n > 0, "{what}");
                assert!(
                    text.contains("This file's CPU samples have no native stacks")
                        && text.contains(&format!("CPU samples: {n} samples")),
                    "{what}: {text}"
                );
            }
        }
    }
}

/// `--format sizes`: where the bytes of a recording go. Its totals agree with the file and with
/// the JDK's reader, the parts add up to the file, and a damaged file is an error.
#[test]
fn the_sizes_view_accounts_for_every_byte() {
    let jdk = &oracle_jdks()[0];
    let input = recording(jdk);
    let bytes = std::fs::read(&input).unwrap();
    let chunks = symbolize::jfr::read_chunks(&bytes).chunks.len();
    let samples = jfr_json(jdk, &input).unwrap().samples.len();
    let out = jfr_symbolize(&[input.to_str().unwrap(), "--format", "sizes"]);
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8(out.stdout).unwrap();
    let head = format!(
        "{} bytes in {chunks} chunks; {samples} jdk.CPUTimeSample events:",
        bytes.len()
    );
    assert!(text.starts_with(&head), "{head}\n{text}");
    // The table's rows (headers, metadata, framing, pools, events) add up to the file.
    let table_bytes: u64 = text
        .lines()
        .skip_while(|l| !l.starts_with("part "))
        .skip(1)
        .take_while(|l| !l.is_empty())
        .map(|l| {
            let words: Vec<&str> = l.split_whitespace().collect();
            words[words.len() - 4].parse::<u64>().unwrap()
        })
        .sum();
    assert_eq!(table_bytes, bytes.len() as u64, "{text}");
    for line in [
        "jdk.CPUTimeSample: bytes per event by field",
        "  nativeStackTrace ",
        "pool jdk.NativeStackTrace ",
        "event jdk.NativeLibrary ",
    ] {
        assert!(text.contains(line), "no {line:?} in\n{text}");
    }
    let to_file = out_dir().join("sizes.txt");
    let out = jfr_symbolize(&[
        input.to_str().unwrap(),
        "--format",
        "sizes",
        "-o",
        to_file.to_str().unwrap(),
    ]);
    assert!(out.status.success() && out.stdout.is_empty());
    assert_eq!(std::fs::read_to_string(&to_file).unwrap(), text);

    let damaged = out_dir().join("sizes-damaged.jfr");
    std::fs::write(&damaged, &bytes[..bytes.len() - 1]).unwrap();
    let out = jfr_symbolize(&[damaged.to_str().unwrap(), "--format", "sizes"]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("sizes-damaged.jfr"), "{stderr}");
}
