//! Recordings several tests read: a synthetic one of the symbolizer's DWARF test library (inline
//! chains, Java frames with an inlined method), and the JNI workload built with DWARF for agent
//! recordings with native lines.

use std::path::{Path, PathBuf};

use jfr_writer::*;

use crate::golden::CLOCK;
use crate::jdk::Jdk;
use crate::readers::run;
use crate::symlibs::{sym_libs, BASE};
use crate::workload::{functions, jni_gcc, workload_dir};

/// The symbolizer's DWARF test library mapped at [`BASE`], one sample whose native stack is a
/// leaf in `sym_leaf` and a return address in `sym_outer` (which inlines `sym_middle`, which
/// inlines `sym_inner`, which calls `sym_leaf`), and Java frames with an inlined method.
/// With `virtual_thread`, one more sample of the same stack, 1 ms, on a virtual thread
/// `virtual-1` (Java id 8, carried by OS thread 78). Written to `dir/dwarf.jfr`; returns the
/// recording and the two ELF addresses.
pub fn dwarf_recording(dir: &Path, virtual_thread: bool) -> (PathBuf, u64, u64) {
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
        });
    }
    if virtual_thread {
        let carried = rec.thread(Thread {
            os_name: Some("virtual-1".into()),
            os_thread_id: 78,
            java_name: Some("virtual-1".into()),
            java_thread_id: 8,
            group: None,
            is_virtual: true,
        });
        rec.write(&CpuTimeSample {
            start_ticks: 300,
            stack_trace,
            thread: Some(carried),
            failed: false,
            sampling_period_ticks: 1_000,
            biased: false,
            native_stack_trace: native,
        });
    }
    let bytes = rec.finish(1_000).unwrap();
    let file = dir.join("dwarf.jfr");
    std::fs::write(&file, bytes).unwrap();
    (file, leaf, ra)
}

/// A directory with the JNI workload's classes and its library built with `-g`.
/// Made in `parent/workload-g`.
pub fn workload_with_dwarf(jdk: &Jdk, parent: &Path) -> PathBuf {
    let dir = parent.join("workload-g");
    std::fs::create_dir_all(&dir).unwrap();
    for entry in std::fs::read_dir(workload_dir()).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "class") {
            std::fs::copy(&path, dir.join(path.file_name().unwrap())).unwrap();
        }
    }
    let src = crate::workload::repo().join("testdata/java/burner.c");
    run(jni_gcc(jdk, &["-O2", "-g", "-fno-omit-frame-pointer"])
        .arg(src)
        .arg("-o")
        .arg(dir.join("libburner.so")))
    .unwrap();
    dir
}

/// An agent recording at 10 ms of the JNI workload built with `-g` (`workload_with_dwarf`):
/// `Burner` for 1.5 s, one thread in native code (`w-native`) and one in Java (`w-java`).
/// Written to `parent/agent.jfr`: (the recording, the workload's directory).
pub fn burner_recording_with_dwarf(jdk: &Jdk, parent: &Path) -> (PathBuf, PathBuf) {
    let dir = workload_with_dwarf(jdk, parent);
    let recording = parent.join("agent.jfr");
    let mut java = crate::workload::java_with_agent_in(
        jdk,
        &format!("file={},interval=10ms", recording.display()),
        &[],
        &dir,
    );
    java.args(["Burner", "1.5", "w-native:native,w-java:java"]);
    crate::workload::run_java(jdk, &mut java).unwrap();
    (recording, dir)
}
