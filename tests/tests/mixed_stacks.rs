//! The native frames between Java frames (`jdk.NativeStackTrace.segments`, an upcall's native
//! callers) keep their place in every view `jfr-symbolize` makes: the symbolized JFR read by the
//! JDK's `jfr print --json`, pprof read by `go tool pprof -traces`, OTLP read by OpenTelemetry's
//! official generated code, and our own folded stacks and JSON report. The input is the golden
//! `single_chunk` recording (pooled and inline), whose two upcall samples are built with known
//! segments (`tests/src/golden.rs`); its libraries are not on this machine or have another
//! build-id, so every native frame is named `library+offset` on any machine.

use std::path::{Path, PathBuf};

use serde_json::Value;
use tests::go_pprof::go_pprof;
use tests::jdk::oracle_jdks;
use tests::otlp::otlp_reader;
use tests::readers::run;
use tests::workload::{jfr_symbolize_ok, repo};

/// The two upcall samples, leaf first, as every view must name them. The first: libc's and our
/// library's frames between `compute` (called back) and `run` (which called the native code).
/// The second: a segment whose walk fell short (`[native frames missing]` before the Java frame
/// it did not reach), and one between `run` and `main`.
const UPCALL_STACKS: [&[&str]; 2] = [
    &[
        "demo.Native.compute",
        "libc.so.6+0x46d10",
        "libc.so.6+0x47a02",
        "libdemo.so+0x1402",
        "demo.Main.run",
        "demo.Main.main",
    ],
    &[
        "libc.so.6+0x15d4a0",
        "demo.Native.compute",
        "libc.so.6+0x46d10",
        "[native frames missing]",
        "demo.Main.run",
        "libdemo.so+0x1130",
        "demo.Main.main",
    ],
];

fn out_dir() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("jfrnative-mixed-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Runs `jfr-symbolize INPUT -q ARGS`, which must succeed; its standard output.
fn symbolize(input: &Path, args: &[&str]) -> String {
    let mut all = vec!["-q"];
    all.extend_from_slice(args);
    jfr_symbolize_ok(input, &all)
}

/// The stacks of `view` that hold a `libc.so.6+0x46d10` frame (the upcall samples' only common
/// native frame), each leaf first, checked against [`UPCALL_STACKS`] in any order.
fn assert_upcall_stacks(view: &str, stacks: Vec<Vec<String>>) {
    let mut found: Vec<Vec<String>> = stacks
        .into_iter()
        .filter(|s| s.iter().any(|f| f == "libc.so.6+0x46d10"))
        .collect();
    found.sort();
    let mut want: Vec<Vec<String>> = UPCALL_STACKS
        .iter()
        .map(|s| s.iter().map(|f| f.to_string()).collect())
        .collect();
    want.sort();
    assert_eq!(
        found, want,
        "{view}: the upcall samples' stacks, leaf first"
    );
}

/// Folded stacks (`root;...;leaf COUNT`), leaf first.
fn folded_stacks(text: &str) -> Vec<Vec<String>> {
    text.lines()
        .filter_map(|l| l.rsplit_once(' '))
        .map(|(stack, _)| stack.split(';').rev().map(str::to_string).collect())
        .collect()
}

/// `go tool pprof -traces`: blocks between dashed lines; a block's frames are its lines after
/// the `thread:` label (the first carries the value), leaf first.
fn pprof_traces(text: &str) -> Vec<Vec<String>> {
    text.split("-----------+-------------------------------------------------------")
        .skip(1)
        .map(|block| {
            block
                .lines()
                .map(str::trim)
                .filter(|l| !l.is_empty() && !l.contains(':'))
                .map(|l| {
                    // The first frame follows the value ("10ms   frame").
                    let frame = match l.split_once("   ") {
                        Some((value, frame)) if value.ends_with('s') => frame.trim(),
                        _ => l,
                    };
                    frame.trim_end_matches(" (inline)").to_string()
                })
                .collect()
        })
        .collect()
}

/// The symbolized file's stacks as `jfr print --json` reads them: a Java frame as
/// `package.Class.method`, a native one as `library+offset` (`unknown` frames by their method
/// alone: the placeholders), leaf first.
fn jdk_stacks(events: &[Value]) -> Vec<Vec<String>> {
    events
        .iter()
        .filter_map(|e| e["values"]["stackTrace"]["frames"].as_array())
        .map(|frames| {
            frames
                .iter()
                .map(|f| {
                    let class = f["method"]["type"]["name"].as_str().unwrap_or("?");
                    let method = f["method"]["name"].as_str().unwrap_or("?");
                    match (f["type"].as_str(), class) {
                        (Some("Native"), "unknown") => method.to_string(),
                        (Some("Native"), library) if method.starts_with("0x") => {
                            format!("{library}+{method}")
                        }
                        _ => format!("{}.{method}", class.replace('/', ".")),
                    }
                })
                .collect()
        })
        .collect()
}

/// The OTLP export's stacks as the official code decodes them: a location by its lines'
/// functions (inlined ones first), or, without lines, by its mapping's file name and offset.
fn otlp_stacks(summary: &Value) -> Vec<Vec<String>> {
    let locations = summary["locations"].as_array().unwrap();
    let mappings = summary["mappings"].as_array().unwrap();
    let name = |index: u64| -> Vec<String> {
        let location = &locations[index as usize];
        let lines = location["lines"].as_array().unwrap();
        if !lines.is_empty() {
            return lines
                .iter()
                .map(|l| l["function"].as_str().unwrap().to_string())
                .collect();
        }
        let mapping = &mappings[location["mapping"].as_u64().unwrap() as usize - 1];
        let file = mapping["filename"].as_str().unwrap();
        let offset = location["address"].as_u64().unwrap() - mapping["start"].as_u64().unwrap()
            + mapping["offset"].as_u64().unwrap();
        vec![format!(
            "{}+{offset:#x}",
            file.rsplit('/').next().unwrap_or(file)
        )]
    };
    summary["profiles"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|p| p["stacks"].as_array().unwrap().iter())
        .map(|s| {
            s["locations"]
                .as_array()
                .unwrap()
                .iter()
                .flat_map(|l| name(l.as_u64().unwrap()))
                .collect()
        })
        .collect()
}

/// Our JSON report's `stacks`, each a list of indexes into `frames`, leaf first.
fn json_report_stacks(report: &Value) -> Vec<Vec<String>> {
    let frames = report["frames"].as_array().unwrap();
    report["stacks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            s["frames"]
                .as_array()
                .unwrap()
                .iter()
                .map(|i| {
                    frames[i.as_u64().unwrap() as usize]["name"]
                        .as_str()
                        .unwrap()
                        .to_string()
                })
                .collect()
        })
        .collect()
}

#[test]
fn native_frames_between_java_frames_keep_their_place_in_every_view() {
    let dir = out_dir();
    let jdk = &oracle_jdks()[0];
    for name in ["single_chunk", "single_chunk_inline"] {
        let input = repo().join(format!("testdata/golden/{name}.jfr"));
        let view = |what: &str| format!("{name}: {what}");

        let folded = symbolize(&input, &["--format", "collapsed", "--samples"]);
        assert_upcall_stacks(&view("folded stacks"), folded_stacks(&folded));

        let report: Value =
            serde_json::from_str(&symbolize(&input, &["--format", "json"])).unwrap();
        assert_upcall_stacks(&view("JSON report"), json_report_stacks(&report));
        assert_eq!(report["withNativeBetweenJava"]["samples"], 2, "{name}");

        let symbolized = dir.join(format!("{name}.symbolized.jfr"));
        symbolize(&input, &["-o", symbolized.to_str().unwrap()]);
        let text = run(std::process::Command::new(jdk.tool("jfr"))
            .args(["print", "--json", "--stack-depth", "64", "--events"])
            .arg("jdk.CPUTimeSample")
            .arg(&symbolized))
        .unwrap();
        let json: Value = serde_json::from_str(&text).unwrap();
        let events = json["recording"]["events"].as_array().unwrap();
        assert_upcall_stacks(
            &view(&format!("symbolized JFR read by {}", jdk.name())),
            jdk_stacks(events),
        );

        if let Some(go) = go_pprof() {
            let pprof = dir.join(format!("{name}.pb.gz"));
            symbolize(&input, &["-o", pprof.to_str().unwrap()]);
            let traces = go.run(&["-traces"], &pprof).unwrap();
            assert_upcall_stacks(&view("go tool pprof -traces"), pprof_traces(&traces));
        }

        if let Some(reader) = otlp_reader() {
            let otlp = dir.join(format!("{name}.otlp.pb"));
            symbolize(&input, &["-o", otlp.to_str().unwrap()]);
            let summary = reader.read_all(&[&otlp], true).remove(0);
            assert_eq!(
                summary["errors"],
                Value::Array(vec![]),
                "{name}: OTLP rules"
            );
            assert_upcall_stacks(&view("OTLP, official code"), otlp_stacks(&summary));
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}
