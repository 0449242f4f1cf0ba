//! The reports count every sample: on a file with whole, stackless, truncated and lost samples
//! (`testdata/golden/report_totals.jfr`), every format's total is the file's Σ`samplingPeriod`
//! plus the CPU time of its lost samples, as the JDK's `jfr print --json` reads them; and each
//! kind of missing part is counted apart, under a placeholder frame that names it.

use std::path::PathBuf;
use std::process::Command;

use serde_json::Value;
use tests::golden::REPORT_TOTALS_PLACEHOLDERS_NS;
use tests::jdk::oracle_jdks;
use tests::readers::{jfr_json, run};
use tests::workload::jfr_symbolize;

fn golden(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(format!("../testdata/golden/{name}.jfr"))
}

fn stdout_of(args: &[&str]) -> String {
    let out = jfr_symbolize(args);
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// `PT0.03S`, `PT1M2.5S`: an ISO-8601 duration as `jfr print --json` writes a timespan, in ns.
fn iso_duration_ns(text: &str) -> u64 {
    let mut rest = text.strip_prefix("PT").unwrap_or_else(|| panic!("{text}"));
    let mut ns = 0f64;
    for (unit, scale) in [('H', 3600e9), ('M', 60e9), ('S', 1e9)] {
        if let Some((n, tail)) = rest.split_once(unit) {
            ns += n.parse::<f64>().unwrap_or_else(|_| panic!("{text}")) * scale;
            rest = tail;
        }
    }
    ns.round() as u64
}

/// (samples, CPU ns) of the file's CPU samples and of its lost samples, read by `jfr`.
fn expected_totals() -> ((u64, u64), (u64, u64)) {
    let jdk = &oracle_jdks()[0];
    let file = golden("report_totals");
    let reading = jfr_json(jdk, &file).unwrap();
    let period_ns = reading.period_ns();
    let lost = run(Command::new(jdk.tool("jfr"))
        .args(["print", "--json", "--events", "jdk.CPUTimeSamplesLost"])
        .arg(&file))
    .unwrap();
    let lost: Value = serde_json::from_str(&lost).unwrap();
    let events = lost["recording"]["events"].as_array().unwrap();
    let lost_samples: u64 = events
        .iter()
        .map(|e| e["values"]["lostSamples"].as_u64().unwrap())
        .sum();
    let lost_ns: u64 = events
        .iter()
        .map(|e| iso_duration_ns(e["values"]["lostCpuTime"].as_str().unwrap()))
        .sum();
    (
        (reading.samples.len() as u64, period_ns),
        (lost_samples, lost_ns),
    )
}

fn folded_total(text: &str) -> u64 {
    text.lines()
        .map(|l| l.rsplit_once(' ').unwrap().1.parse::<u64>().unwrap())
        .sum()
}

#[test]
fn every_format_counts_every_sample_lost_ones_included() {
    let ((samples, cpu_ns), (lost_samples, lost_ns)) = expected_totals();
    assert!(samples >= 8 && lost_samples > 0 && lost_ns > 0);
    let (all_samples, all_ns) = (samples + lost_samples, cpu_ns + lost_ns);
    let file = golden("report_totals");
    let file = file.to_str().unwrap();

    let folded = stdout_of(&[file, "--format", "collapsed"]);
    assert_eq!(folded_total(&folded), all_ns, "{folded}");
    let counted = stdout_of(&[file, "--format", "collapsed", "--samples"]);
    assert_eq!(folded_total(&counted), all_samples, "{counted}");
    for line in folded.lines() {
        assert!(!line.starts_with(' '), "a line without a frame: {folded}");
    }
    // Each missing part under its own placeholder, with its own weight.
    for (frame, ns) in REPORT_TOTALS_PLACEHOLDERS_NS {
        let weight: u64 = folded
            .lines()
            .filter(|l| {
                l.split(';')
                    .any(|f| f.trim_end_matches(char::is_numeric).trim() == frame)
            })
            .map(|l| l.rsplit_once(' ').unwrap().1.parse::<u64>().unwrap())
            .sum();
        assert_eq!(weight, ns, "{frame}: {folded}");
    }

    let json: Value = serde_json::from_str(&stdout_of(&[file, "--format", "json"])).unwrap();
    assert_eq!(json["total"]["cpuNanos"].as_u64(), Some(all_ns));
    assert_eq!(json["total"]["samples"].as_u64(), Some(all_samples));
    assert_eq!(json["recorded"]["cpuNanos"].as_u64(), Some(cpu_ns));
    assert_eq!(json["lost"]["cpuNanos"].as_u64(), Some(lost_ns));
    assert_eq!(json["lostSamples"].as_u64(), Some(lost_samples));
    let stacks_ns: u64 = json["stacks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["weight"]["cpuNanos"].as_u64().unwrap())
        .sum();
    assert_eq!(stacks_ns, all_ns);
    // Truncated (frames, then a cut) and unknown (no frame at all) are counted apart.
    assert_eq!(json["nativeTruncated"]["samples"].as_u64(), Some(1));
    assert_eq!(json["nativeUnknown"]["samples"].as_u64(), Some(1));
    assert_eq!(json["failed"]["samples"].as_u64(), Some(2));
    assert_eq!(json["javaTruncated"]["samples"].as_u64(), Some(1));

    let text = stdout_of(&[file]);
    let total_line = format!(
        "Total: {all_samples} samples, {:.3} CPU-s",
        all_ns as f64 / 1e9
    );
    assert!(text.contains(&total_line), "{total_line}\n{text}");
    assert!(
        text.contains("native stack truncated (walk stopped before the Java frames): 1 samples")
            && text
                .contains("native frames unknown (walk stopped before its first frame): 1 samples"),
        "{text}"
    );

    let svg_path =
        std::env::temp_dir().join(format!("jfrnative-reports-{}.svg", std::process::id()));
    let out = jfr_symbolize(&[file, "-o", svg_path.to_str().unwrap()]);
    assert!(out.status.success());
    let svg = std::fs::read_to_string(&svg_path).unwrap();
    let _ = std::fs::remove_file(&svg_path);
    let root = format!("<title>all ({} ns, 100%)</title>", separated(all_ns));
    assert!(svg.contains(&root), "{root} not in the flame graph");
    // Placeholders and frames without a symbol have their own colours.
    let kinds = tests::flame::kinds_by_colour(&svg, &json);
    for kind in [
        "placeholder",
        "unsymbolized",
        "jit",
        "interpreted",
        "java-native",
    ] {
        assert!(kinds.contains_key(kind), "no {kind} frame: {kinds:?}");
    }
}

/// 190000000 → "190,000,000", as inferno writes counts.
fn separated(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[test]
fn a_filter_keeps_the_lost_samples_of_the_threads_it_keeps() {
    let file = golden("report_totals");
    let file = file.to_str().unwrap();
    let json: Value = serde_json::from_str(&stdout_of(&[
        file, "--format", "json", "--thread", "worker",
    ]))
    .unwrap();
    // worker-0: 4 samples of 10+40+10+10 ms, and 2 lost of 10 ms each.
    assert_eq!(json["recorded"]["samples"].as_u64(), Some(4));
    assert_eq!(json["lost"]["samples"].as_u64(), Some(2));
    assert_eq!(json["total"]["cpuNanos"].as_u64(), Some(90_000_000));
}

/// In the symbolized JFR a frame known only by its address names its library once: the class
/// is the library, the method the address (`libdemo.so` `0x1130`, as `jfr` shows it:
/// `libdemo.so.0x1130`), not `libdemo.so.libdemo.so+0x1130`.
#[test]
fn a_frame_known_by_its_address_names_its_library_once() {
    let jdk = &oracle_jdks()[0];
    let output = std::env::temp_dir().join(format!("jfrnative-reports-{}.jfr", std::process::id()));
    let out = jfr_symbolize(&[
        golden("report_totals").to_str().unwrap(),
        "-o",
        output.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let events = tests::readers::cpu_sample_events(jdk, &output).unwrap();
    let _ = std::fs::remove_file(&output);
    let mut native = 0;
    for e in &events {
        for f in e["values"]["stackTrace"]["frames"]
            .as_array()
            .into_iter()
            .flatten()
        {
            if f["type"] != "Native" || f["method"]["type"]["name"] != "libdemo.so" {
                continue;
            }
            native += 1;
            let method = f["method"]["name"].as_str().unwrap();
            assert!(
                method.starts_with("0x") && u64::from_str_radix(&method[2..], 16).is_ok(),
                "{method}"
            );
        }
    }
    assert!(native >= 10, "{native} frames of libdemo.so");
}

#[test]
fn the_symbolized_file_follows_the_rules_other_readers_need() {
    let jdk = &oracle_jdks()[0];
    let output = std::env::temp_dir().join(format!("jfrnative-rules-{}.jfr", std::process::id()));
    let out = jfr_symbolize(&[
        golden("report_totals").to_str().unwrap(),
        "-o",
        output.to_str().unwrap(),
    ]);
    assert!(out.status.success());
    tests::format_rules::check_reader_rules(&output);
    // The JDK reads the 5-byte form back as -1: the line of a native frame without DWARF.
    let events = tests::readers::cpu_sample_events(jdk, &output).unwrap();
    let _ = std::fs::remove_file(&output);
    let unknown_lines = events
        .iter()
        .flat_map(|e| {
            e["values"]["stackTrace"]["frames"]
                .as_array()
                .cloned()
                .unwrap_or_default()
        })
        .filter(|f| f["type"] == "Native" && f["method"]["type"]["name"] == "libdemo.so")
        .inspect(|f| assert_eq!(f["lineNumber"], -1, "{f}"))
        .count();
    assert!(unknown_lines > 0);
}

/// A symbol the input writes in another encoding than UTF-8 (here Latin-1, which the JDK reads
/// as the same text; older agents wrote a null one) is written in UTF-8 in the symbolized file,
/// which async-profiler's converter would otherwise refuse whole.
#[test]
fn the_symbolized_file_has_every_symbol_in_utf8() {
    let jdk = &oracle_jdks()[0];
    let dir = std::env::temp_dir().join(format!("jfrnative-latin1-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut bytes = std::fs::read(golden("report_totals")).unwrap();
    let encodings = tests::format_rules::symbol_encodings(&bytes);
    // Latin-1 (5) has UTF-8's layout (length, then the bytes): the file stays valid.
    for &(offset, _) in &encodings {
        bytes[offset as usize] = 5;
    }
    let input = dir.join("latin1.jfr");
    std::fs::write(&input, &bytes).unwrap();
    let encodings = tests::format_rules::symbol_encodings(&bytes);
    assert!(encodings.iter().all(|&(_, e)| e == 5), "{encodings:?}");
    let before = jfr_json(jdk, &golden("report_totals")).unwrap();
    assert_eq!(
        jfr_json(jdk, &input).unwrap(),
        before,
        "the JDK reads the same"
    );
    let output = dir.join("latin1-sym.jfr");
    let out = jfr_symbolize(&[input.to_str().unwrap(), "-o", output.to_str().unwrap()]);
    assert!(out.status.success());
    tests::format_rules::check_reader_rules(&output);
    let from_utf8 = dir.join("utf8-sym.jfr");
    let golden_path = golden("report_totals");
    let out = jfr_symbolize(&[
        golden_path.to_str().unwrap(),
        "-o",
        from_utf8.to_str().unwrap(),
    ]);
    assert!(out.status.success());
    assert_eq!(
        jfr_json(jdk, &output).unwrap(),
        jfr_json(jdk, &from_utf8).unwrap(),
        "the symbolized files read the same"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
