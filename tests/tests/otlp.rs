//! The OTLP profiles export (`jfr-symbolize -o OUT.otlp.pb`) read back by OpenTelemetry's
//! official generated code (PyPI `opentelemetry-proto` 1.45, `testdata/otlp/check_otlp.py`):
//! the format's rules hold; the values sum to Σ `samplingPeriod` (+ the lost CPU time) as
//! `jfr print --json` reads it, within 0.1 %, and exactly to the JSON report's total; flat and
//! cumulative values of native functions and Java methods as the JSON report's stacks give
//! them; inline chains as lines of one location with the file:line llvm-symbolizer gives;
//! mappings with the recorded range and the build-id `readelf -n` gives; thread name, id and
//! virtual flag on each sample as the recording has them. On the committed golden recording (a
//! raw one whose libraries are not on disk: mappings and addresses only), on a recording of the
//! symbolizer's DWARF test library written here, and on an agent recording of the JNI
//! workload with a library built with `-g`.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde_json::Value;
use tests::golden::{CLOCK, REPORT_TOTALS_PLACEHOLDERS_NS};
use tests::jdk::{oracle_jdks, Jdk};
use tests::otlp::{otlp_reader, profile, within, OtlpReader};
use tests::readers::{cpu_sample_events, jfr_json, lost_cpu_ticks_by_thread, report_flat_cum};
use tests::recordings::{burner_recording_with_dwarf, dwarf_recording};
use tests::symlibs::{build_id, llvm_symbolizer, sym_libs, RefFrame, BASE};
use tests::workload::jfr_symbolize_ok;

fn out_dir() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("jfrnative-otlp-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The OTLP export of `input` (the format from the `.otlp.pb` extension) and the JSON report.
fn export(input: &Path, name: &str) -> (PathBuf, Value) {
    let file = out_dir().join(format!("{name}.otlp.pb"));
    jfr_symbolize_ok(input, &["-o", file.to_str().unwrap()]);
    let json = serde_json::from_str(&jfr_symbolize_ok(input, &["--format", "json"])).unwrap();
    (file, json)
}

/// In both shapes of `recording`'s export, the profile's total equals the JSON report's, and is
/// within 0.1 % of Σ `samplingPeriod` of the CPU samples and Σ `lostCpuTime` of the losses as
/// `jfr print --json` of `jdk` reads `recording`. `summary` is the default (aggregated) export:
/// one value per sample, no timestamps, `period` set (Grafana Pyroscope's rules); the timed
/// export (`--otlp-shape timed`) has one value per CPU sample and per loss.
fn assert_totals(reader: &OtlpReader, summary: &Value, json: &Value, jdk: &Jdk, recording: &Path) {
    let reading = jfr_json(jdk, recording).unwrap();
    let lost_ticks: u64 = lost_cpu_ticks_by_thread(jdk, recording)
        .unwrap()
        .values()
        .sum();
    // Durations are read in ticks of the golden clock (µs).
    let jfr_print_ns = reading.period_ns() + lost_ticks * 1_000_000_000 / CLOCK.ticks_per_second;
    let losses = reading
        .counts
        .get("jdk.CPUTimeSamplesLost")
        .copied()
        .unwrap_or(0);
    let timed_file = out_dir().join(format!(
        "{}.timed.otlp.pb",
        recording.file_stem().unwrap().to_string_lossy()
    ));
    jfr_symbolize_ok(
        recording,
        &["--otlp-shape", "timed", "-o", timed_file.to_str().unwrap()],
    );
    let timed = reader.read(&timed_file);
    for (shape, summary) in [("aggregated", summary), ("timed", &timed)] {
        assert_eq!(summary["errors"], serde_json::json!([]), "{shape}");
        let p = profile(summary);
        assert_eq!(p["sample_type"], serde_json::json!(["cpu", "nanoseconds"]));
        assert_eq!(p["period_type"], serde_json::json!(["cpu", "nanoseconds"]));
        assert!(p["period"].as_u64().unwrap() > 0, "{shape}: period set");
        let total = p["total"].as_u64().unwrap();
        assert!(total > 0);
        assert_eq!(
            total,
            json["total"]["cpuNanos"].as_u64().unwrap(),
            "{shape}: the JSON's total"
        );
        assert!(
            within(total, jfr_print_ns, 0.001),
            "{shape}: OTLP {total} ns against jfr print's {jfr_print_ns} ns"
        );
        eprintln!(
            "{} ({shape}): OTLP total {total} ns, jfr print {jfr_print_ns} ns",
            recording.display()
        );
    }
    let p = profile(summary);
    assert_eq!(
        p["values"], p["samples"],
        "aggregated: one value per sample"
    );
    assert_eq!(p["timestamps"], 0, "aggregated: no timestamps");
    let p = profile(&timed);
    assert_eq!(
        p["values"].as_u64().unwrap(),
        reading.samples.len() as u64 + losses,
        "timed: one value per CPU sample and per loss"
    );
    assert_eq!(
        p["timestamps"], p["values"],
        "timed: one timestamp per value"
    );
}

/// The locations of a summary's file.
fn locations(summary: &Value) -> &Vec<Value> {
    summary["locations"].as_array().unwrap()
}

/// The lines of `location` as (function, file base name, line).
fn refs(location: &Value) -> Vec<RefFrame> {
    location["lines"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| RefFrame {
            function: l["function"].as_str().unwrap().to_string(),
            file: l["file"].as_str().filter(|f| !f.is_empty()).map(|f| {
                Path::new(f)
                    .file_name()
                    .unwrap()
                    .to_string_lossy()
                    .into_owned()
            }),
            line: l["line"].as_u64().unwrap() as u32,
        })
        .collect()
}

#[test]
fn golden_recording_exports_every_sample_with_its_mappings_build_ids_and_threads() {
    let Some(reader) = otlp_reader() else { return };
    let Some(jdk) = oracle_jdks().into_iter().next() else {
        return;
    };
    let input =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../testdata/golden/report_totals.jfr");
    let (file, json) = export(&input, "golden");
    let summary = reader.read(&file);
    assert_totals(&reader, &summary, &json, &jdk, &input);
    let p = profile(&summary);
    // The recording's interval and clock (2026-01-01, 1 ms of chunk).
    assert_eq!(p["period"], 10_000_000);
    assert_eq!(p["time_unix_nano"], CLOCK.origin_epoch_nanos);
    assert_eq!(p["duration_nano"], 1_000_000);
    assert_eq!(p["resource"]["service.name"], "unknown_service:java");
    assert_eq!(p["scope"]["name"], "jfr-native");
    // Placeholders, lost samples among them, with the weights the other views give them.
    for (frame, ns) in REPORT_TOTALS_PLACEHOLDERS_NS {
        assert_eq!(p["cum"][frame], ns, "{frame}");
        assert_eq!(report_flat_cum(&json, frame).1, ns, "{frame} in the JSON");
    }
    for name in ["demo.Main.run", "demo.Native.compute"] {
        let (flat, cum) = report_flat_cum(&json, name);
        assert!(cum > 0, "{name}");
        assert_eq!(p["cum"][name], cum, "{name}");
        assert_eq!(p["flat"][name].as_u64().unwrap_or(0), flat, "{name}");
    }
    // Per thread, as the JSON report counts them (the lost samples under their thread).
    for thread in json["threads"].as_array().unwrap() {
        let name = thread["name"].as_str().unwrap();
        assert_eq!(
            p["threads"][name], thread["weight"]["cpuNanos"],
            "thread {name}"
        );
    }
    // A raw recording whose libraries are not here: its native frames are the recorded PCs in
    // the recorded mappings with their build-ids (for a backend that symbolizes), named as the
    // report names them (library and address: a location without lines would vanish from a
    // backend that does not symbolize).
    let reading = jfr_json(&jdk, &input).unwrap();
    let mappings = summary["mappings"].as_array().unwrap();
    assert_eq!(mappings.len(), 2, "{mappings:#?}");
    for m in mappings {
        let id = m["attributes"]["process.executable.build_id.gnu"].as_str();
        let line = tests::golden::library_line(
            m["filename"].as_str().unwrap(),
            m["start"].as_u64().unwrap(),
            m["limit"].as_u64().unwrap(),
            id,
            m["offset"].as_u64().unwrap(),
        );
        assert!(id.is_some(), "{m}");
        assert!(
            reading.libraries.contains(&line),
            "{line}: {:#?}",
            reading.libraries
        );
    }
    assert_eq!(
        summary["native_locations"],
        summary["native_locations_with_build_id"]
    );
    let recorded_pcs: BTreeSet<u64> = reading.samples.iter().flat_map(|s| s.pcs.clone()).collect();
    let native: Vec<&Value> = locations(&summary)
        .iter()
        .filter(|l| l["mapping"].as_u64().unwrap() > 0)
        .collect();
    assert!(!native.is_empty());
    for l in native {
        assert!(
            recorded_pcs.contains(&l["address"].as_u64().unwrap()),
            "{l}"
        );
        let lines = l["lines"].as_array().unwrap();
        assert_eq!(lines.len(), 1, "{l}");
        let name = lines[0]["function"].as_str().unwrap();
        assert!(name.contains(".so") && name.contains("+0x"), "{l}");
        let (flat, cum) = report_flat_cum(&json, name);
        assert!(cum > 0, "{name} is not in the report");
        assert_eq!(p["flat"][name].as_u64().unwrap_or(0), flat, "{name}");
        assert_eq!(p["cum"][name], cum, "{name}");
        assert_eq!(l["attributes"]["profile.frame.type"], "native");
    }
    // Thread name and id on every sample with a thread, as the recording has them.
    for t in p["thread_attributes"].as_array().unwrap() {
        if let Some(name) = t["thread.name"].as_str() {
            let id = match name {
                "main" => 1,
                _ => 20,
            };
            assert_eq!(t["thread.id"], id, "{t}");
            assert_eq!(t["jfrnative.thread.virtual"], false, "{t}");
        }
    }
    // The same bytes with --format otlp, and from a file named .otlp.
    let other = out_dir().join("golden.otlp");
    jfr_symbolize_ok(&input, &["-o", other.to_str().unwrap()]);
    assert_eq!(
        std::fs::read(&other).unwrap(),
        std::fs::read(&file).unwrap()
    );
}

#[test]
fn inline_chains_are_lines_of_one_location_and_virtual_threads_are_said() {
    let Some(reader) = otlp_reader() else { return };
    let Some(jdk) = oracle_jdks().into_iter().next() else {
        return;
    };
    let dir = out_dir().join("dwarf");
    std::fs::create_dir_all(&dir).unwrap();
    let (input, leaf, ra) = dwarf_recording(&dir, true);
    let (file, json) = export(&input, "dwarf");
    let summary = reader.read(&file);
    assert_totals(&reader, &summary, &json, &jdk, &input);
    let p = profile(&summary);
    assert_eq!(p["period"], 1_000_000, "the interval setting");
    assert_eq!(p["total"], 5_000_000);
    // One stack, two threads: each a sample of its own with its events' values and times.
    let stacks = p["stacks"].as_array().unwrap();
    assert_eq!(stacks.len(), 2, "{stacks:#?}");
    let of = |name: &str| {
        stacks
            .iter()
            .find(|s| s["attributes"]["thread.name"] == name)
            .unwrap_or_else(|| panic!("no sample of {name}: {stacks:#?}"))
    };
    let worker = of("inline-worker");
    assert_eq!(
        worker["attributes"],
        serde_json::json!({"thread.name": "inline-worker", "thread.id": 7, "jfrnative.thread.virtual": false, "service.name": "unknown_service:java"})
    );
    assert_eq!(worker["weight"], 4_000_000);
    let carried = of("virtual-1");
    assert_eq!(
        carried["attributes"],
        serde_json::json!({"thread.name": "virtual-1", "thread.id": 8, "jfrnative.thread.virtual": true, "service.name": "unknown_service:java"})
    );
    assert_eq!(worker["locations"], carried["locations"]);
    // Leaf, return address (three lines), the compiled Java frame with its inlined method,
    // the interpreted one.
    let stack: Vec<&Value> = worker["locations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| &locations(&summary)[i.as_u64().unwrap() as usize])
        .collect();
    assert_eq!(stack.len(), 4, "{stack:#?}");
    let libs = sym_libs();
    let llvm = llvm_symbolizer(&libs.dwarf, &[leaf, ra - 1]).unwrap();
    assert_eq!(stack[0]["address"], BASE + leaf);
    assert_eq!(refs(stack[0]), llvm[0], "leaf");
    assert_eq!(stack[1]["address"], BASE + ra);
    assert_eq!(refs(stack[1]), llvm[1], "return address");
    let chain: Vec<String> = refs(stack[1]).into_iter().map(|r| r.function).collect();
    assert_eq!(chain, ["sym_inner", "sym_middle", "sym_outer"]);
    let java = |l: &Value| {
        refs(l)
            .into_iter()
            .map(|r| (r.function, r.line))
            .collect::<Vec<_>>()
    };
    assert_eq!(
        java(stack[2]),
        [
            ("demo.Inner.work".to_string(), 5),
            ("demo.Outer.loop".to_string(), 9)
        ]
    );
    assert_eq!(stack[2]["lines"][0]["file"], "demo.Inner");
    assert_eq!(stack[2]["lines"][0]["system"], "demo.Inner.work()V");
    assert_eq!(java(stack[3]), [("demo.Main.main".to_string(), 3)]);
    assert_eq!(
        (&stack[2]["mapping"], &stack[2]["address"]),
        (&Value::from(0), &Value::from(0))
    );
    assert_eq!(stack[2]["attributes"]["profile.frame.type"], "jvm");
    assert_eq!(stack[0]["attributes"]["profile.frame.type"], "native");
    // The mapping: the recorded library and range, and the build-id readelf gives.
    let mapping = &summary["mappings"][stack[0]["mapping"].as_u64().unwrap() as usize - 1];
    assert_eq!(mapping["filename"], libs.dwarf.display().to_string());
    assert_eq!(
        mapping["attributes"]["process.executable.build_id.gnu"],
        build_id(&libs.dwarf).unwrap()
    );
    assert_eq!(
        (&mapping["start"], &mapping["limit"], &mapping["offset"]),
        (
            &Value::from(BASE),
            &Value::from(BASE + 0x10_0000),
            &Value::from(0)
        )
    );
    // Flat and cum as the JSON's stacks give them, each inlined function a node of its own.
    for name in [
        "sym_leaf",
        "sym_inner",
        "sym_middle",
        "sym_outer",
        "demo.Inner.work",
    ] {
        let (flat, cum) = report_flat_cum(&json, name);
        assert_eq!(p["cum"][name], cum, "{name}");
        assert_eq!(p["flat"][name].as_u64().unwrap_or(0), flat, "{name}");
    }
}

#[test]
fn agent_recording_exports_native_lines_build_ids_and_thread_ids() {
    let Some(reader) = otlp_reader() else { return };
    let Some(jdk) = oracle_jdks().into_iter().next() else {
        return;
    };
    let (recording, _) = burner_recording_with_dwarf(&jdk, &out_dir());
    // The agent's own clock: Σ samplingPeriod in ns from jfr print's durations.
    let events = cpu_sample_events(&jdk, &recording).unwrap();
    let reading = jfr_json(&jdk, &recording).unwrap();
    let (file, json) = export(&recording, "agent");
    let summary = reader.read(&file);
    let p = profile(&summary);
    assert_totals(&reader, &summary, &json, &jdk, &recording);
    assert_eq!(p["period"], 10_000_000);

    // Every native location has a mapping with a build-id, which is readelf's for each file
    // here, and every mapping is a recorded jdk.NativeLibrary.
    assert!(summary["native_locations"].as_u64().unwrap() > 10);
    assert_eq!(
        summary["native_locations"],
        summary["native_locations_with_build_id"]
    );
    for m in summary["mappings"].as_array().unwrap() {
        let path = Path::new(m["filename"].as_str().unwrap());
        let id = m["attributes"]["process.executable.build_id.gnu"]
            .as_str()
            .unwrap();
        let line = tests::golden::library_line(
            &path.display().to_string(),
            m["start"].as_u64().unwrap(),
            m["limit"].as_u64().unwrap(),
            Some(id),
            m["offset"].as_u64().unwrap(),
        );
        assert!(reading.libraries.contains(&line), "{line}");
        if path.is_file() {
            assert_eq!(build_id(path).unwrap(), id, "{}", path.display());
        }
    }
    // The hot native and Java functions are named, with lines, and weigh what the JSON report
    // says.
    for name in [
        "level3",
        "Java_Burner_nativeBurn",
        "Burner.nativeBurn",
        "Burner.javaBurn",
    ] {
        let (flat, cum) = report_flat_cum(&json, name);
        assert!(cum > 0, "{name} not in the JSON stacks");
        assert_eq!(p["cum"][name], cum, "{name}");
        assert_eq!(p["flat"][name].as_u64().unwrap_or(0), flat, "{name}");
    }
    assert!(p["flat"]["level3"].as_u64().unwrap() > 100_000_000);
    let lines_of = |function: &str| -> Vec<(String, u64)> {
        locations(&summary)
            .iter()
            .flat_map(|l| l["lines"].as_array().unwrap().iter())
            .filter(|l| l["function"] == function)
            .map(|l| {
                (
                    l["file"].as_str().unwrap().to_string(),
                    l["line"].as_u64().unwrap(),
                )
            })
            .collect()
    };
    let level3 = lines_of("level3");
    assert!(!level3.is_empty());
    assert!(
        level3
            .iter()
            .all(|(f, l)| f.ends_with("burner.c") && *l > 0),
        "{level3:?}"
    );
    let java_burn = lines_of("Burner.javaBurn");
    assert!(
        java_burn.iter().any(|(f, l)| f == "Burner" && *l > 0),
        "{java_burn:?}"
    );
    // Each thread's id is its javaThreadId as jfr print reads it; none is virtual.
    let mut ids = std::collections::BTreeMap::new();
    for e in &events {
        let t = &e["values"]["eventThread"];
        if let (Some(name), Some(id)) = (t["javaName"].as_str(), t["javaThreadId"].as_i64()) {
            ids.insert(name.to_string(), id);
        }
    }
    let attributes = p["thread_attributes"].as_array().unwrap();
    for name in ["w-native", "w-java"] {
        let t = attributes
            .iter()
            .find(|t| t["thread.name"] == name)
            .unwrap_or_else(|| panic!("no sample of {name}"));
        assert_eq!(t["thread.id"], ids[name], "{name}");
        assert_eq!(t["jfrnative.thread.virtual"], false, "{name}");
        assert_eq!(
            p["threads"][name],
            json["threads"]
                .as_array()
                .unwrap()
                .iter()
                .find(|j| j["name"] == name)
                .unwrap()["weight"]["cpuNanos"]
        );
    }
}
