//! The pprof export read back by `go tool pprof` (`-raw`, `-top`, `-traces`, `-tagfocus`):
//! totals equal to the JSON report's in ns and in samples, placeholders kept, flat and cum of
//! native functions and Java methods as the JSON's stacks give them, inline chains as several
//! lines of one location with the file:line llvm-symbolizer gives, mappings with the recorded
//! range, file offset and build-id (as `jfr print` reads the `jdk.NativeLibrary` events), and
//! a thread label per sample. On the committed golden recording, on a recording of the
//! symbolizer's DWARF test library written here, and on an agent recording of the JNI
//! workload with a library built with `-g`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde_json::Value;
use tests::go_pprof::{go_pprof, parse_raw, GoPprof, Raw, RawLine};
use tests::golden::{library_line, REPORT_TOTALS_PLACEHOLDERS_NS};
use tests::jdk::{oracle_jdks, Jdk};
use tests::readers::{jfr_json, report_flat_cum};
use tests::recordings::{burner_recording_with_dwarf, dwarf_recording};
use tests::symlibs::{llvm_symbolizer, sym_libs, RefFrame, BASE};
use tests::workload::jfr_symbolize_ok;

fn out_dir() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("jfrnative-pprof-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn golden(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(format!("../testdata/golden/{name}.jfr"))
}

/// The pprof export of `input` (through the `.pb.gz` extension) and its JSON report.
fn export(input: &Path, name: &str, args: &[&str]) -> (PathBuf, Value) {
    let pprof = out_dir().join(format!("{name}.pb.gz"));
    let mut with_output = args.to_vec();
    with_output.extend(["-o", pprof.to_str().unwrap()]);
    jfr_symbolize_ok(input, &with_output);
    let mut json_args = args.to_vec();
    json_args.extend(["--format", "json"]);
    let json = serde_json::from_str(&jfr_symbolize_ok(input, &json_args)).unwrap();
    (pprof, json)
}

/// The totals of `-raw` and `-top` equal the JSON's, in samples and in ns.
fn assert_totals(go: &GoPprof, pprof: &Path, raw: &Raw, json: &Value) {
    assert_eq!(raw.sample_types, "samples/count cpu/nanoseconds[dflt]");
    assert_eq!(raw.period_type, "cpu nanoseconds");
    let (samples, cpu_ns) = (
        json["total"]["samples"].as_u64().unwrap(),
        json["total"]["cpuNanos"].as_u64().unwrap(),
    );
    assert!(samples > 0);
    assert_eq!(raw.total(0), samples, "samples");
    assert_eq!(raw.total(1), cpu_ns, "CPU ns");
    let top = go.top(&[], pprof);
    assert_eq!((top.shown, top.total), (cpu_ns, cpu_ns), "-top total");
    let by_samples = go.top(&["-sample_index=samples"], pprof);
    assert_eq!((by_samples.shown, by_samples.total), (samples, samples));
}

/// Every mapping of `raw` is a `jdk.NativeLibrary` of the recording as `jfr print --json`
/// reads it (path, range, build-id, file offset).
fn assert_mappings_recorded(raw: &Raw, recording: &Path, jdk: &Jdk) {
    let reading = jfr_json(jdk, recording).unwrap();
    assert!(!raw.mappings.is_empty());
    for m in raw.mappings.values() {
        let build_id = (!m.build_id.is_empty()).then_some(m.build_id.as_str());
        let line = library_line(&m.file, m.start, m.limit, build_id, m.offset);
        assert!(
            reading.libraries.contains(&line),
            "mapping {line} is not a recorded library: {:#?}",
            reading.libraries
        );
    }
}

#[test]
fn golden_recording_reads_back_with_its_totals_placeholders_threads_and_build_ids() {
    let Some(go) = go_pprof() else { return };
    let Some(jdk) = oracle_jdks().into_iter().next() else {
        return;
    };
    let input = golden("report_totals");
    let (pprof, json) = export(&input, "golden", &[]);
    let raw = parse_raw(&go.run(&["-raw"], &pprof).unwrap());
    assert_totals(&go, &pprof, &raw, &json);
    // The recording's interval setting (10ms) and clock (2026-01-01, 1 ms of chunk).
    assert_eq!(raw.period, 10_000_000);
    let top = go.run(&["-top"], &pprof).unwrap();
    // The same instant as Go before 1.26 and Go 1.26 print it.
    assert!(
        top.contains("Time: Jan 1, 2026 at 12:00am (UTC)")
            || top.contains("Time: 2026-01-01 00:00:00 UTC"),
        "{top}"
    );
    assert!(top.contains("Duration: 1ms"), "{top}");
    let rows = go.top(&[], &pprof).rows;
    // Placeholders, lost samples among them, with the weights the other views give them.
    for (frame, ns) in REPORT_TOTALS_PLACEHOLDERS_NS {
        assert_eq!(rows[frame].cum, ns, "{frame}: {top}");
        assert_eq!(report_flat_cum(&json, frame).1, ns, "{frame} in the JSON");
    }
    // A Java method and a native frame (known by its address: the library is not on disk).
    for name in ["demo.Main.run", "demo.Native.compute", "libdemo.so+0x1130"] {
        let (flat, cum) = report_flat_cum(&json, name);
        assert!(cum > 0, "{name}");
        assert_eq!(
            (rows[name].flat, rows[name].cum),
            (flat, cum),
            "{name}: {top}"
        );
    }
    // Native locations keep the recorded PC in the recorded library's mapping.
    let leaf = raw
        .locations
        .values()
        .find(|l| {
            l.lines
                .first()
                .is_some_and(|x| x.function == "libdemo.so+0x1130")
        })
        .unwrap();
    assert_eq!(leaf.address, 0x7f10_0000_1130);
    let mapping = &raw.mappings[&leaf.mapping.unwrap()];
    assert_eq!(mapping.file, "/opt/demo/libdemo.so");
    assert_eq!(mapping.build_id, "0123456789abcdef0123456789abcdef01234567");
    // Nothing was named in it: pprof may symbolize it where the library is.
    assert!(!mapping.flags.contains("[FN]"), "{mapping:?}");
    assert_mappings_recorded(&raw, &input, &jdk);
    // A thread label on every sample with a thread; -tagfocus selects by it.
    assert!(raw.samples.iter().all(|s| s.thread.is_some()));
    for thread in json["threads"].as_array().unwrap() {
        let name = thread["name"].as_str().unwrap();
        let focused = go.top(&[&format!("-tagfocus=thread={name}")], &pprof);
        assert_eq!(
            focused.shown,
            thread["weight"]["cpuNanos"].as_u64().unwrap(),
            "thread {name}"
        );
    }
    // -traces: one trace per (thread, stack), the lost samples under their thread.
    let traces = go.run(&["-traces"], &pprof).unwrap();
    let blocks: Vec<&str> = traces
        .split("-----------+-------------------------------------------------------")
        .filter(|b| b.contains("thread:"))
        .collect();
    assert_eq!(blocks.len(), raw.samples.len(), "{traces}");
    assert!(
        blocks.iter().any(
            |b| b.contains("thread:  main") && b.contains("[lost samples: sample buffer full]")
        ),
        "{traces}"
    );
}

fn basename(p: &str) -> String {
    Path::new(p)
        .file_name()
        .map_or(p.to_string(), |n| n.to_string_lossy().into_owned())
}

/// A location's lines as (function, file name, line), to compare with a reference tool's.
fn as_refs(lines: &[RawLine]) -> Vec<RefFrame> {
    lines
        .iter()
        .map(|l| RefFrame {
            function: l.function.clone(),
            file: (!l.file.is_empty()).then(|| basename(&l.file)),
            line: l.line as u32,
        })
        .collect()
}

#[test]
fn inlined_functions_are_lines_of_one_location_with_dwarf_files_and_lines() {
    let Some(go) = go_pprof() else { return };
    let (input, leaf, ra) = dwarf_recording(&out_dir(), false);
    let (pprof, json) = export(&input, "dwarf", &[]);
    let raw = parse_raw(&go.run(&["-raw"], &pprof).unwrap());
    assert_totals(&go, &pprof, &raw, &json);
    assert_eq!(raw.period, 1_000_000, "the interval setting");
    assert_eq!(raw.samples.len(), 1, "{raw:#?}");
    let sample = &raw.samples[0];
    assert_eq!(sample.values, [2, 4_000_000]);
    assert_eq!(sample.thread.as_deref(), Some("inline-worker"));
    // Leaf, return address (three lines), the compiled Java frame with its inlined method,
    // the interpreted one.
    assert_eq!(sample.locations.len(), 4, "{raw:#?}");
    let location = |i: usize| &raw.locations[&sample.locations[i]];
    let libs = sym_libs();
    let llvm = llvm_symbolizer(&libs.dwarf, &[leaf, ra - 1]).unwrap();
    assert_eq!(location(0).address, BASE + leaf);
    assert_eq!(as_refs(&location(0).lines), llvm[0], "leaf");
    // Shown with the recorded return address, looked up one byte back.
    assert_eq!(location(1).address, BASE + ra);
    assert_eq!(as_refs(&location(1).lines), llvm[1], "return address");
    let chain: Vec<&str> = location(1)
        .lines
        .iter()
        .map(|l| l.function.as_str())
        .collect();
    assert_eq!(chain, ["sym_inner", "sym_middle", "sym_outer"]);
    assert!(location(1).lines.iter().all(|l| l.line > 0));
    let java = |i: usize| {
        location(i)
            .lines
            .iter()
            .map(|l| (l.function.as_str(), l.file.as_str(), l.line))
            .collect::<Vec<_>>()
    };
    assert_eq!(
        java(2),
        [
            ("demo.Inner.work", "demo.Inner", 5),
            ("demo.Outer.loop", "demo.Outer", 9)
        ]
    );
    assert_eq!(java(3), [("demo.Main.main", "demo.Main", 3)]);
    assert_eq!((location(2).address, location(2).mapping), (0, None));
    // The mapping: the recorded library, its build-id (readelf's), and DWARF was used.
    let mapping = &raw.mappings[&location(0).mapping.unwrap()];
    assert_eq!(mapping.file, libs.dwarf.display().to_string());
    assert_eq!(mapping.build_id, libs.build_id);
    assert_eq!(
        (mapping.start, mapping.limit, mapping.offset),
        (BASE, BASE + 0x10_0000, 0)
    );
    assert_eq!(mapping.flags, "[FN][FL][LN][IN]");
    // Each inlined function is a node of its own in -top; -traces lists the whole chain.
    let rows = go.top(&[], &pprof).rows;
    for (name, flat) in [
        ("sym_leaf", 4_000_000),
        ("sym_inner", 0),
        ("sym_middle", 0),
        ("sym_outer", 0),
        ("demo.Inner.work", 0),
        ("demo.Outer.loop", 0),
    ] {
        assert_eq!(
            (rows[name].flat, rows[name].cum),
            (flat, 4_000_000),
            "{name}"
        );
    }
    let traces = go.run(&["-traces"], &pprof).unwrap();
    let order: Vec<&str> = traces
        .lines()
        .filter_map(|l| {
            l.split_whitespace()
                .find(|w| w.starts_with("sym_") || w.starts_with("demo."))
        })
        .collect();
    assert_eq!(
        order,
        [
            "sym_leaf",
            "sym_inner",
            "sym_middle",
            "sym_outer",
            "demo.Inner.work",
            "demo.Outer.loop",
            "demo.Main.main"
        ],
        "{traces}"
    );
}

#[test]
fn agent_recording_of_jni_code_reads_back_with_native_lines_and_build_ids() {
    let Some(go) = go_pprof() else { return };
    let Some(jdk) = oracle_jdks().into_iter().next() else {
        return;
    };
    let (recording, dir) = burner_recording_with_dwarf(&jdk, &out_dir());
    let (pprof, json) = export(&recording, "agent", &[]);
    let raw = parse_raw(&go.run(&["-raw"], &pprof).unwrap());
    assert_totals(&go, &pprof, &raw, &json);
    assert_eq!(raw.period, 10_000_000);
    assert_mappings_recorded(&raw, &recording, &jdk);

    // Flat and cum of the JNI chain's leaf and of the Java methods, as the JSON's stacks give
    // them; level3's also as the JSON's native function table gives it.
    let rows = go.top(&[], &pprof).rows;
    let level3 = json["nativeFunctions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| json["frames"][f["frame"].as_u64().unwrap() as usize]["name"] == "level3")
        .expect("level3 in the JSON");
    assert_eq!(
        (rows["level3"].flat, rows["level3"].cum),
        (
            level3["self"]["cpuNanos"].as_u64().unwrap(),
            level3["total"]["cpuNanos"].as_u64().unwrap()
        )
    );
    assert!(rows["level3"].flat > 100_000_000, "{rows:#?}");
    for name in [
        "level3",
        "Java_Burner_nativeBurn",
        "Burner.nativeBurn",
        "Burner.javaBurn",
    ] {
        let (flat, cum) = report_flat_cum(&json, name);
        assert!(cum > 0, "{name} not in the JSON stacks");
        assert_eq!((rows[name].flat, rows[name].cum), (flat, cum), "{name}");
    }

    // libburner.so: the build-id readelf gives, and file:line on every location as
    // llvm-symbolizer gives it for the ELF address (a leaf at its PC, a return address one
    // byte back). The library's first PT_LOAD maps file offset 0 at address 0, so the ELF
    // address is the PC less the mapping's start.
    let lib = dir.join("libburner.so");
    let (burner_id, burner) = raw
        .mappings
        .iter()
        .find(|(_, m)| m.file == lib.display().to_string())
        .expect("a mapping for libburner.so");
    assert_eq!(burner.build_id, tests::symlibs::build_id(&lib).unwrap());
    assert_eq!(burner.offset, 0);
    assert_eq!(burner.flags, "[FN][FL][LN][IN]");
    let mut positions: BTreeMap<u64, BTreeSet<bool>> = BTreeMap::new();
    for s in &raw.samples {
        for (i, l) in s.locations.iter().enumerate() {
            positions.entry(*l).or_default().insert(i == 0);
        }
    }
    let checked: Vec<(u64, u64)> = raw
        .locations
        .iter()
        .filter(|(_, l)| l.mapping == Some(*burner_id))
        .filter_map(|(id, l)| {
            let leaf = positions.get(id)?;
            (leaf.len() == 1).then(|| {
                let address = l.address - burner.start;
                (
                    *id,
                    if leaf.contains(&true) {
                        address
                    } else {
                        address - 1
                    },
                )
            })
        })
        .collect();
    assert!(checked.len() >= 4, "{checked:?}");
    let addresses: Vec<u64> = checked.iter().map(|c| c.1).collect();
    let llvm = llvm_symbolizer(&lib, &addresses).unwrap();
    let mut with_line = 0;
    for ((id, address), reference) in checked.iter().zip(&llvm) {
        let ours = as_refs(&raw.locations[id].lines);
        assert_eq!(&ours, reference, "at {address:#x}");
        if ours
            .iter()
            .all(|f| f.file.as_deref() == Some("burner.c") && f.line > 0)
        {
            with_line += 1;
        }
    }
    assert!(with_line >= 4, "{with_line} locations with burner.c:LINE");

    // -traces: the JNI chain under its thread label, from level3 to the Java native method.
    let traces = go.run(&["-traces"], &pprof).unwrap();
    let chain = [
        "level3",
        "level2",
        "level1",
        "Java_Burner_nativeBurn",
        "Burner.nativeBurn",
    ];
    let whole = traces
        .split("-----------+-------------------------------------------------------")
        .filter(|b| b.contains("thread:  w-native"))
        .filter(|b| {
            let names: Vec<&str> = b
                .lines()
                .filter_map(|l| l.split_whitespace().last())
                .collect();
            names.windows(chain.len()).any(|w| w == chain)
        })
        .count();
    assert!(whole > 0, "{traces}");
}
