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

use jfr_writer::*;
use serde_json::Value;
use tests::go_pprof::{go_pprof, parse_raw, GoPprof, Raw, RawLine};
use tests::golden::{library_line, CLOCK};
use tests::jdk::{oracle_jdks, Jdk};
use tests::readers::{jfr_json, run};
use tests::symlibs::{llvm_symbolizer, sym_libs, RefFrame, BASE};
use tests::workload::{functions, jfr_symbolize, jni_gcc, run_java, workload_dir};

fn out_dir() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("jfrnative-pprof-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn golden(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(format!("../testdata/golden/{name}.jfr"))
}

/// `jfr-symbolize INPUT ARGS`; panics with its stderr when it fails.
fn symbolize(input: &Path, args: &[&str]) -> String {
    let mut all = vec![input.to_str().unwrap()];
    all.extend_from_slice(args);
    let out = jfr_symbolize(&all);
    assert!(
        out.status.success(),
        "jfr-symbolize {all:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// The pprof export of `input` (through the `.pb.gz` extension) and its JSON report.
fn export(input: &Path, name: &str, args: &[&str]) -> (PathBuf, Value) {
    let pprof = out_dir().join(format!("{name}.pb.gz"));
    let mut with_output = args.to_vec();
    with_output.extend(["-o", pprof.to_str().unwrap()]);
    symbolize(input, &with_output);
    let mut json_args = args.to_vec();
    json_args.extend(["--format", "json"]);
    let json = serde_json::from_str(&symbolize(input, &json_args)).unwrap();
    (pprof, json)
}

/// (flat, cum) CPU ns of the frames named `name`, from the JSON report's stacks: flat where it
/// is the leaf, cum where it is anywhere in the stack.
fn json_flat_cum(json: &Value, name: &str) -> (u64, u64) {
    let frames = json["frames"].as_array().unwrap();
    let named = |id: &Value| frames[id.as_u64().unwrap() as usize]["name"] == name;
    let (mut flat, mut cum) = (0, 0);
    for stack in json["stacks"].as_array().unwrap() {
        let ids = stack["frames"].as_array().unwrap();
        let ns = stack["weight"]["cpuNanos"].as_u64().unwrap();
        if ids.first().is_some_and(named) {
            flat += ns;
        }
        if ids.iter().any(named) {
            cum += ns;
        }
    }
    (flat, cum)
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
    assert!(top.contains("Time: Jan 1, 2026 at 12:00am (UTC)"), "{top}");
    assert!(top.contains("Duration: 1ms"), "{top}");
    let rows = go.top(&[], &pprof).rows;
    // Placeholders, lost samples among them, with the weights the other views give them.
    for (frame, ns) in [
        ("[no Java stack]", 50_000_000u64),
        ("[no Java frames]", 10_000_000),
        ("[native stack truncated]", 30_000_000),
        ("[native frames unknown]", 10_000_000),
        ("[Java stack truncated]", 10_000_000),
        ("[lost samples: sample buffer full]", 30_000_000),
        ("[lost samples: too little stack left]", 20_000_000),
    ] {
        assert_eq!(rows[frame].cum, ns, "{frame}: {top}");
        assert_eq!(json_flat_cum(&json, frame).1, ns, "{frame} in the JSON");
    }
    // A Java method and a native frame (known by its address: the library is not on disk).
    for name in ["demo.Main.run", "demo.Native.compute", "libdemo.so+0x1130"] {
        let (flat, cum) = json_flat_cum(&json, name);
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

/// The symbolizer's DWARF test library mapped at [`BASE`], one sample whose native stack is a
/// leaf in `sym_leaf` and a return address in `sym_outer` (which inlines `sym_middle`, which
/// inlines `sym_inner`, which calls `sym_leaf`), and Java frames with an inlined method.
/// Returns the recording and the two ELF addresses.
fn dwarf_recording() -> (PathBuf, u64, u64) {
    let libs = sym_libs();
    let fns = functions(&libs.dwarf);
    let find = |name: &str| fns.iter().find(|f| f.2 == name).unwrap().clone();
    let leaf_fn = find("sym_leaf");
    let leaf = (leaf_fn.0 + leaf_fn.1) / 2;
    // The return address of sym_outer's call to sym_leaf (through the PLT: it is exported),
    // from objdump's disassembly: the address of the instruction after the call.
    let outer = find("sym_outer");
    let disassembly = run(std::process::Command::new("objdump")
        .args(["-d", "--no-show-raw-insn"])
        .arg(format!("--start-address={:#x}", outer.0))
        .arg(format!("--stop-address={:#x}", outer.1))
        .arg(&libs.dwarf))
    .unwrap();
    let instructions: Vec<(u64, &str)> = disassembly
        .lines()
        .filter_map(|l| {
            let (address, text) = l.trim().split_once(":\t")?;
            Some((u64::from_str_radix(address, 16).ok()?, text))
        })
        .collect();
    let call = instructions
        .iter()
        .position(|(_, text)| {
            text.starts_with("call")
                && (text.contains("<sym_leaf@plt>") || text.contains("<sym_leaf>"))
        })
        .unwrap_or_else(|| panic!("sym_outer does not call sym_leaf:\n{disassembly}"));
    let ra = instructions.get(call + 1).map_or(outer.1, |i| i.0);

    let options = RecordingOptions {
        clock: CLOCK,
        native_stack_encoding: NativeStackEncoding::Pooled,
    };
    let mut rec = Recording::new(Vec::new(), options, 0).unwrap();
    let method = |rec: &mut Recording<Vec<u8>>, class: &str, name: &str| {
        let package_name = rec.symbol("demo");
        let package = rec.package(Package {
            name: package_name,
            module: None,
            exported: true,
        });
        let class_name = rec.symbol(class);
        let class = rec.class(Class {
            class_loader: None,
            name: class_name,
            package: Some(package),
            modifiers: 1,
            hidden: false,
        });
        let (name, descriptor) = (rec.symbol(name), rec.symbol("()V"));
        rec.method(Method {
            class,
            name,
            descriptor,
            modifiers: 1,
            hidden: false,
        })
    };
    let work = method(&mut rec, "demo/Inner", "work");
    let run_loop = method(&mut rec, "demo/Outer", "loop");
    let main = method(&mut rec, "demo/Main", "main");
    let frame = |method, line, frame_type| Frame {
        method,
        line,
        bytecode_index: 1,
        frame_type,
    };
    let java = [
        frame(work, 5, FrameType::Inlined),
        frame(run_loop, 9, FrameType::JitCompiled),
        frame(main, 3, FrameType::Interpreted),
    ];
    let sample_type = rec.event_type_id(EventType::CpuTimeSample) as i64;
    rec.write(&ActiveSetting {
        start_ticks: 0,
        event_type_id: sample_type,
        name: "interval",
        value: "1ms",
    });
    let path = libs.dwarf.display().to_string();
    rec.write(&NativeLibrary {
        start_ticks: 0,
        name: &path,
        base_address: BASE,
        top_address: BASE + 0x10_0000,
        build_id: Some(&libs.build_id),
        file_offset: 0,
    });
    let thread = rec.thread(Thread {
        os_name: Some("inline-worker".into()),
        os_thread_id: 77,
        java_name: Some("inline-worker".into()),
        java_thread_id: 7,
        group: None,
        is_virtual: false,
    });
    let stack_trace = Some(rec.stack_trace(&java, false));
    let native = Some(rec.native_stack_trace(&[BASE + leaf, BASE + ra], false));
    for (t, period_ticks) in [(100, 1_000), (200, 3_000)] {
        rec.write(&CpuTimeSample {
            start_ticks: t,
            stack_trace,
            thread: Some(thread),
            failed: false,
            sampling_period_ticks: period_ticks,
            biased: false,
            native_stack_trace: native,
            native_segments: &[],
        });
    }
    let bytes = rec.finish(1_000).unwrap();
    let file = out_dir().join("dwarf.jfr");
    std::fs::write(&file, bytes).unwrap();
    (file, leaf, ra)
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
    let (input, leaf, ra) = dwarf_recording();
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

/// A directory with the JNI workload's classes and its library built with `-g`.
fn workload_with_dwarf(jdk: &Jdk) -> PathBuf {
    let dir = out_dir().join("workload-g");
    std::fs::create_dir_all(&dir).unwrap();
    for entry in std::fs::read_dir(workload_dir()).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "class") {
            std::fs::copy(&path, dir.join(path.file_name().unwrap())).unwrap();
        }
    }
    let src = tests::workload::repo().join("testdata/java/burner.c");
    run(jni_gcc(jdk, &["-O2", "-g", "-fno-omit-frame-pointer"])
        .arg(src)
        .arg("-o")
        .arg(dir.join("libburner.so")))
    .unwrap();
    dir
}

#[test]
fn agent_recording_of_jni_code_reads_back_with_native_lines_and_build_ids() {
    let Some(go) = go_pprof() else { return };
    let Some(jdk) = oracle_jdks().into_iter().next() else {
        return;
    };
    let dir = workload_with_dwarf(&jdk);
    let recording = out_dir().join("agent.jfr");
    let mut java = tests::workload::java_with_agent_in(
        &jdk,
        &format!("file={},interval=10ms", recording.display()),
        &[],
        &dir,
    );
    java.args(["Burner", "1.5", "w-native:native,w-java:java"]);
    run_java(&jdk, &mut java).unwrap();
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
        let (flat, cum) = json_flat_cum(&json, name);
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
