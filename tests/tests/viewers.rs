//! Real viewers read our files: JDK Mission Control's own parser and async-profiler's converter,
//! fetched by version from Maven Central by the set-up (`testdata/readers/pom.xml`; nothing of
//! them is in the repository). Their location comes from the environment (target/jdks.env); in
//! CI they are required, elsewhere a test whose variable is unset says so and passes:
//!
//! - `JMC_CP`: a classpath with JMC's core parser (`org.openjdk.jmc:flightrecorder` and
//!   `common` 9.1.2) and its runtime needs, lz4-java and the OWASP encoder;
//! - `AP_CONVERTER_JAR`: async-profiler's converter (`tools.profiler:jfr-converter` 4.5).
//!
//! The file they are given is a real multi-chunk recording of the demo (our C, zlib, libc's
//! qsort and Java, at 1 ms with a chunk a second), symbolized; the converter also gets the
//! symbolized golden files. What each reader shows is compared with the JDK's own reader
//! (`RecordingFile` through `JfrCount`, `jfr print --json`), sample for sample, since both
//! readers can misread a file without an error. The format rules they depend on are asserted
//! without them in `tests/src/format_rules.rs`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use serde_json::Value;
use tests::golden::all_cases;
use tests::jdk::{find, javac_for, third_party_reader, Jdk};
use tests::readers::{ap_collapsed, cpu_sample_events, run};
use tests::workload::{agent_library, jfr_symbolize, repo, tool_binary};

/// A JDK with `javac` for the demo: 25 if installed, else 17.
fn demo_jdk() -> Jdk {
    [find(25), find(17)]
        .into_iter()
        .flatten()
        .find(|j| javac_for(j).is_some_and(|c| c.starts_with(&j.home)))
        .expect("no JDK with javac for the demo")
}

/// The demo recorded once per test process (4 s at 1 ms, a chunk a second) and symbolized by
/// `jfrnative demo`: its directory, with `demo.jfr` and `demo.symbolized.jfr`.
fn demo_recording() -> PathBuf {
    static MADE: OnceLock<PathBuf> = OnceLock::new();
    MADE.get_or_init(|| {
        let jdk = demo_jdk();
        let dir = std::env::temp_dir().join(format!("jfrnative-viewers-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        agent_library();
        run(Command::new(tool_binary("jfrnative"))
            .env("JAVA_HOME", &jdk.home)
            .env_remove("DEBUGINFOD_URLS")
            .args(["demo", "-d", "4s", "-i", "1ms", "--chunk", "1s", "--dir"])
            .arg(&dir))
        .unwrap_or_else(|e| panic!("jfrnative demo: {e}"));
        dir
    })
    .clone()
}

/// The number of chunks `jfr summary` reports.
fn chunks(jdk: &Jdk, file: &Path) -> u64 {
    let summary = run(Command::new(jdk.tool("jfr")).arg("summary").arg(file)).unwrap();
    summary
        .lines()
        .find_map(|l| l.trim().strip_prefix("Chunks:"))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("no chunk count: {summary}"))
}

/// The frames of every `jdk.CPUTimeSample` of `file` as the JDK's `RecordingFile` gives them
/// (`JfrCount --stacks`): per sample, its frames leaf first as (type, `class.method`).
fn jdk_stacks(jdk: &Jdk, file: &Path) -> Vec<Vec<(String, String)>> {
    let text = run(Command::new(jdk.tool("java"))
        .arg(repo().join("testdata/oracles/JfrCount.java"))
        .args(["--no-pcs", "--stacks", "100000000"])
        .arg(file))
    .unwrap();
    let mut stacks: Vec<Vec<(String, String)>> = Vec::new();
    let mut in_sample = false;
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("STACK-BEGIN ") {
            in_sample = rest.starts_with("jdk.CPUTimeSample ");
            if in_sample {
                stacks.push(Vec::new());
            }
        } else if let Some(rest) = line.strip_prefix("STACK jdk.CPUTimeSample ") {
            assert!(in_sample, "{line}");
            // "<type> <class>.<method> line=<n>": the type may have a space ("JIT compiled"),
            // a native function too ("operator new(unsigned long)"), the type of a native
            // frame has none.
            let (frame, _line) = rest.rsplit_once(" line=").unwrap();
            let (frame_type, method) = match frame.strip_prefix("JIT compiled ") {
                Some(m) => ("JIT compiled", m),
                None => frame.split_once(' ').unwrap(),
            };
            stacks
                .last_mut()
                .unwrap()
                .push((frame_type.to_string(), method.to_string()));
        }
    }
    stacks
}

/// What JMC's parser makes of a file (`testdata/oracles/JmcFrames.java`).
#[derive(Debug, Default)]
struct JmcReading {
    /// Event types named `jdk.CPUTimeSample…` with their sample counts.
    types: BTreeMap<String, u64>,
    /// Frames by JMC's frame type.
    frame_types: BTreeMap<String, u64>,
    /// Frames of type NATIVE by `class.method` as JMC names them.
    native: BTreeMap<String, u64>,
    chunks: u64,
    skipped: u64,
}

fn jmc_reading(jdk: &Jdk, jmc_cp: &str, file: &Path) -> JmcReading {
    let out = Command::new(jdk.tool("java"))
        .arg("-cp")
        .arg(jmc_cp)
        .arg(repo().join("testdata/oracles/JmcFrames.java"))
        .arg(file)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "JMC on {}: {stdout}\n{}",
        file.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    let mut r = JmcReading::default();
    for line in stdout.lines() {
        let number = |s: &str| s.parse::<u64>().unwrap_or_else(|_| panic!("{line}"));
        if let Some(rest) = line.strip_prefix("NATIVEFRAME\t") {
            let mut parts = rest.rsplitn(2, '\t');
            let (n, frame) = (parts.next().unwrap(), parts.next().unwrap());
            let (class, method) = frame.split_once('\t').unwrap();
            r.native.insert(format!("{class}.{method}"), number(n));
        } else if let Some((key, n)) = line.rsplit_once(' ') {
            match key.split_once(' ') {
                Some(("TYPE", t)) => drop(r.types.insert(t.to_string(), number(n))),
                Some(("FRAMETYPE", t)) => drop(r.frame_types.insert(t.to_string(), number(n))),
                None if key == "CHUNKS" => r.chunks = number(n),
                None if key == "SKIPPED" => r.skipped = number(n),
                _ => {}
            }
        }
    }
    r
}

/// JMC's parser on the symbolized multi-chunk recording: one event type `jdk.CPUTimeSample`
/// (no per-chunk copy with a random suffix) holding every sample, every chunk loaded, every
/// native frame of the JDK's reader typed NATIVE under its library and function, and the Java
/// frames with their types.
#[test]
fn jmc_reads_the_symbolized_multi_chunk_recording_as_one_event_type() {
    let Some(jmc_cp) = third_party_reader("JMC_CP", "JDK Mission Control's parser") else {
        return;
    };
    let jdk = demo_jdk();
    let file = demo_recording().join("demo.symbolized.jfr");
    let chunks = chunks(&jdk, &file);
    assert!(chunks >= 3, "{chunks} chunks");
    let stacks = jdk_stacks(&jdk, &file);
    // A sample whose Java walk failed in Java code has no frame at all and no stack trace (as
    // the JDK writes its own failed samples): rare, but JMC loads it all the same.
    let events = cpu_sample_events(&jdk, &file).unwrap();
    let stackless = events.len() - stacks.len();
    assert!(
        stackless * 100 <= events.len(),
        "{stackless} of {} samples without a stack",
        events.len()
    );
    let jmc = jmc_reading(&jdk, &jmc_cp, &file);
    eprintln!(
        "{} samples ({stackless} without a stack) in {chunks} chunks; JMC: types {:?}, frame types {:?}, {} native functions",
        events.len(),
        jmc.types,
        jmc.frame_types,
        jmc.native.len()
    );
    assert_eq!(
        jmc.types,
        BTreeMap::from([("jdk.CPUTimeSample".to_string(), events.len() as u64)]),
        "JMC split the event type or lost samples"
    );
    assert_eq!(jmc.chunks, chunks);
    assert_eq!(jmc.skipped, 0);
    // Native frames: the same functions under the same libraries, as often as the JDK reads.
    let mut native: BTreeMap<String, u64> = BTreeMap::new();
    for (_, method) in stacks.iter().flatten().filter(|(t, _)| t == "Native") {
        *native.entry(method.clone()).or_default() += 1;
    }
    assert_eq!(jmc.native, native, "native frames: JMC against the JDK");
    for function in [
        "libjfrnative_demo.so.mix",
        "libc.so.6.msort_with_tmp",
        "JfrNativeDemo.compress",
    ] {
        assert!(native.contains_key(function), "no {function}: {native:?}");
    }
    assert!(
        native.keys().any(|m| m.starts_with("libz.so")),
        "no zlib frame: {native:?}"
    );
    // Java frames keep their types.
    let typed = |t: &str| jmc.frame_types.get(t).copied().unwrap_or(0);
    assert!(
        typed("INTERPRETED") > 0 && typed("JIT_COMPILED") > 0,
        "{jmc:?}"
    );
    let java = typed("INTERPRETED") + typed("JIT_COMPILED") + typed("INLINED");
    assert!(typed("UNKNOWN") * 100 <= java, "{:?}", jmc.frame_types);
}

/// JMC's parser on the raw single-chunk golden files (pooled and inline), whose native stacks
/// carry the `segments` extension (native frames between Java frames): every sample loaded
/// under the one event type, nothing skipped. JMC does not know the field and reads the rest.
#[test]
fn jmc_reads_raw_files_whose_native_stacks_have_segments() {
    let Some(jmc_cp) = third_party_reader("JMC_CP", "JDK Mission Control's parser") else {
        return;
    };
    let jdk = demo_jdk();
    for name in ["single_chunk", "single_chunk_inline"] {
        let file = repo().join(format!("testdata/golden/{name}.jfr"));
        let events = cpu_sample_events(&jdk, &file).unwrap();
        let with_segments = events
            .iter()
            .filter(|e| {
                e.pointer("/values/nativeStackTrace/segments")
                    .and_then(Value::as_array)
                    .is_some_and(|s| !s.is_empty())
            })
            .count();
        assert!(with_segments > 0, "{name}: no sample with segments");
        let jmc = jmc_reading(&jdk, &jmc_cp, &file);
        assert_eq!(
            jmc.types,
            BTreeMap::from([("jdk.CPUTimeSample".to_string(), events.len() as u64)]),
            "{name}: JMC split the event type or lost samples"
        );
        assert_eq!((jmc.chunks, jmc.skipped), (1, 0), "{name}");
    }
}

/// What the converter made of a file: samples in the file, samples converted, samples with
/// a native leaf.
struct Converted {
    samples: u64,
    converted: u64,
    native_leaf: u64,
}

/// Checks the converter's output for `file` against the JDK's `jfr print --json`: exit 0, as
/// many samples as `jdk.CPUTimeSample` events with a stack trace (the converter skips an event
/// without one: a failed sample with neither Java nor native frames, written as the JDK writes
/// its own failed samples), per native leaf function as many samples (the converter names a
/// native frame by its function alone), and with `--threads` as many samples per thread.
fn check_converter(jar: &str, jdk: &Jdk, file: &Path) -> Converted {
    let all = cpu_sample_events(jdk, file).unwrap();
    let (events, stackless): (Vec<&Value>, Vec<&Value>) = all
        .iter()
        .partition(|e| !e["values"]["stackTrace"].is_null());
    for e in &stackless {
        assert_eq!(e["values"]["failed"], true, "a sample without stack: {e}");
    }
    let mut native_leaves: BTreeMap<String, u64> = BTreeMap::new();
    let mut threads: BTreeMap<String, u64> = BTreeMap::new();
    for e in &events {
        let leaf = &e["values"]["stackTrace"]["frames"][0];
        if leaf["type"] == "Native" {
            let name = leaf["method"]["name"].as_str().unwrap().to_string();
            *native_leaves.entry(name).or_default() += 1;
        }
        let thread = &e["values"]["eventThread"];
        let name = match &thread["javaName"] {
            Value::String(s) => s.clone(),
            _ => thread["osName"].as_str().unwrap_or_default().to_string(),
        };
        *threads.entry(name).or_default() += 1;
    }
    let what = file.display();
    let collapsed = ap_collapsed(jar, jdk, file, &[]);
    let total: u64 = collapsed.iter().map(|(_, n)| n).sum();
    assert_eq!(total, events.len() as u64, "{what}: samples converted");
    let mut ap_leaves: BTreeMap<String, u64> = BTreeMap::new();
    for (stack, n) in &collapsed {
        let leaf = stack.rsplit(';').next().unwrap();
        *ap_leaves.entry(leaf.to_string()).or_default() += n;
    }
    for (name, n) in &native_leaves {
        assert_eq!(
            ap_leaves.get(name),
            Some(n),
            "{what}: samples with the native leaf {name}"
        );
    }
    let by_thread = ap_collapsed(jar, jdk, file, &["--threads"]);
    let mut ap_threads: BTreeMap<String, u64> = BTreeMap::new();
    for (stack, n) in &by_thread {
        // The root frame is "[NAME tid=ID]".
        let root = stack.split(';').next().unwrap();
        let name = root
            .strip_prefix('[')
            .and_then(|r| r.rsplit_once(" tid="))
            .map_or(root, |(name, _)| name);
        *ap_threads.entry(name.to_string()).or_default() += n;
    }
    assert_eq!(ap_threads, threads, "{what}: samples per thread");
    Converted {
        samples: all.len() as u64,
        converted: total,
        native_leaf: native_leaves.values().sum(),
    }
}

/// async-profiler's converter on the symbolized multi-chunk recording and on every symbolized
/// golden file: it converts every sample that has a stack trace (all but under 1% of the demo's), each
/// native leaf function of the recording is a frame of its own with its samples, and each
/// thread keeps its samples.
#[test]
fn async_profiler_converts_every_sample_of_the_symbolized_files() {
    let Some(jar) = third_party_reader("AP_CONVERTER_JAR", "async-profiler's converter") else {
        return;
    };
    let jdk = demo_jdk();
    let demo = demo_recording().join("demo.symbolized.jfr");
    assert!(chunks(&jdk, &demo) >= 3);
    let c = check_converter(&jar, &jdk, &demo);
    eprintln!(
        "demo: {} of {} samples converted, {} with a native leaf",
        c.converted, c.samples, c.native_leaf
    );
    // Every sample with a stack is converted (checked above); those without one, failed Java
    // walks with no native frame, are rare.
    assert!(
        (c.samples - c.converted) * 100 <= c.samples,
        "demo: {} of {} samples without a stack",
        c.samples - c.converted,
        c.samples
    );
    assert!(c.native_leaf * 2 >= c.samples, "native leaves");
    let collapsed = ap_collapsed(&jar, &jdk, &demo, &[]);
    for function in ["mix", "msort_with_tmp", "Java_JfrNativeDemo_compress"] {
        assert!(
            collapsed
                .iter()
                .any(|(s, _)| s.split(';').any(|f| f == function)),
            "no frame {function}"
        );
    }
    let dir = demo_recording();
    let mut golden_native = 0;
    for case in all_cases() {
        let golden = repo().join(format!("testdata/golden/{}.jfr", case.name));
        let output = dir.join(format!("{}.symbolized.jfr", case.name));
        let out = jfr_symbolize(&[golden.to_str().unwrap(), "-o", output.to_str().unwrap()]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let c = check_converter(&jar, &jdk, &output);
        eprintln!(
            "{}: {} of {} samples converted, {} with a native leaf",
            case.name, c.converted, c.samples, c.native_leaf
        );
        golden_native += c.native_leaf;
    }
    assert!(golden_native > 0, "no native leaf in the golden files");
}
