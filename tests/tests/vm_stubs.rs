//! Code the JVM generates (stubs) is native code: a sample taken in it keeps its pc as the top
//! native frame, named, above the Java frames that called it.
//!
//! `testdata/vmstubs/VmStubs.java`, JDK 17 and 25 at 1 ms, three threads: `StringBuilder.delete`
//! on a 1 MB builder (its time is in the arraycopy stub), a megamorphic virtual call (the
//! `vtable stub`) and a megamorphic interface call (the `itable stub`). Before the agent kept
//! these pcs, 1,395 of 1,396 samples of the `delete` loop had no native frame at all and the
//! stub's CPU was shown as `delete`'s own.
//!
//! Read by the JDK's own reader (`jfr print --json`): the raw file (each top pc of those
//! samples lies in a `jfrnative.JvmCode` range whose name says which stub), and the symbolized
//! file (the named frame of library `jvm-generated` above the Java frames).

use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;

use tests::jdk::oracle_jdks;
use tests::readers::{jfr_json, jvm_code_ranges};
use tests::reading::SampleView;
use tests::workload::{agent_library, build_once, javac, jfr_symbolize, run_java};

/// At least this share of the `delete` thread's samples show the arraycopy stub above the
/// loop's Java frames (async-profiler shows it on more than 80 %).
const MIN_ARRAYCOPY_SHARE: f64 = 0.80;
/// At least this share of the megamorphic threads' samples show their dispatch stub
/// (async-profiler's own test asks for 1 %).
const MIN_DISPATCH_SHARE: f64 = 0.02;

fn vmstubs_dir() -> PathBuf {
    static BUILT: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    build_once(&BUILT, "vmstubs", |jdk, src, dir| {
        javac(jdk, &src.join("VmStubs.java"), dir)
    })
}

/// The share of `thread`'s samples for which `holds` is true.
fn share(samples: &[SampleView], thread: &str, holds: impl Fn(&SampleView) -> bool) -> f64 {
    let of_thread: Vec<&SampleView> = samples.iter().filter(|s| s.thread == thread).collect();
    assert!(
        of_thread.len() >= 100,
        "{thread}: {} samples",
        of_thread.len()
    );
    of_thread.iter().filter(|s| holds(s)).count() as f64 / of_thread.len() as f64
}

/// The stub frame of a symbolized sample (`jvm-generated.NAME`), if its first frame is one.
fn top_stub(sample: &SampleView) -> Option<&str> {
    sample.java.first()?.strip_prefix("jvm-generated.")
}

#[test]
fn samples_in_jvm_stubs_keep_the_stub_as_a_named_native_frame() {
    for jdk in oracle_jdks() {
        let dir = std::env::temp_dir().join(format!(
            "jfrnative-vmstubs-{}-{}",
            jdk.major,
            std::process::id()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("stubs.jfr");
        let classes = vmstubs_dir();
        let out = run_java(
            &jdk,
            Command::new(jdk.tool("java"))
                .arg(format!(
                    "-agentpath:{}=file={},interval=1ms",
                    agent_library().display(),
                    file.display()
                ))
                .arg("-cp")
                .arg(&classes)
                .args(["VmStubs", "4"]),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains("JVM stubs as native frames"), "{stderr}");

        // The raw file: the pc is kept, and the file names the code it is in.
        let code = jvm_code_ranges(&jdk, &file).unwrap();
        let named = |pc: u64| {
            code.iter()
                .find(|(_, start, end)| *start <= pc && pc < *end)
                .map(|(name, _, _)| name.as_str())
        };
        let raw = jfr_json(&jdk, &file).unwrap().samples;
        let arraycopy_raw = share(&raw, "delete", |s| {
            s.pcs
                .first()
                .and_then(|&pc| named(pc))
                .is_some_and(|n| n.contains("arraycopy"))
        });
        assert!(
            arraycopy_raw >= MIN_ARRAYCOPY_SHARE,
            "{}: {arraycopy_raw:.3} of `delete`'s samples have an arraycopy stub's pc on top; \
             named ranges: {code:?}",
            jdk.name()
        );

        // The symbolized file, as the JDK's reader shows it.
        let symbolized = dir.join("stubs.symbolized.jfr");
        let s = jfr_symbolize(&[
            file.to_str().unwrap(),
            "-q",
            "-o",
            symbolized.to_str().unwrap(),
        ]);
        assert!(s.status.success(), "{}", String::from_utf8_lossy(&s.stderr));
        let samples = jfr_json(&jdk, &symbolized).unwrap().samples;
        // The stub, then the Java frames of the loop that called it. (Which inlined frame
        // called the stub is the scope at a leaf call's return address, which has no debug
        // information of its own: see the note in docs/how-it-works.md.)
        let arraycopy = share(&samples, "delete", |s| {
            top_stub(s).is_some_and(|n| n.contains("arraycopy"))
                && s.java.iter().any(|f| f.starts_with("VmStubs.delete:"))
        });
        let vtable = share(&samples, "vcalls", |s| {
            top_stub(s).is_some_and(|n| n.starts_with("vtable stub"))
        });
        let itable = share(&samples, "icalls", |s| {
            top_stub(s).is_some_and(|n| n.starts_with("itable stub"))
        });
        eprintln!(
            "{}: arraycopy above delete {arraycopy:.3}, vtable stub {vtable:.3}, itable stub \
             {itable:.3}",
            jdk.name()
        );
        assert!(
            arraycopy >= MIN_ARRAYCOPY_SHARE,
            "{}: {arraycopy:.3}",
            jdk.name()
        );
        assert!(vtable >= MIN_DISPATCH_SHARE, "{}: {vtable:.3}", jdk.name());
        assert!(itable >= MIN_DISPATCH_SHARE, "{}: {itable:.3}", jdk.name());
        // Every pc of JVM-generated code in these threads is named.
        for s in samples
            .iter()
            .filter(|s| ["delete", "vcalls", "icalls"].contains(&s.thread.as_str()))
        {
            assert!(
                !s.java.iter().any(|f| f.starts_with("unknown.")),
                "{}: an unnamed frame: {:?}",
                jdk.name(),
                s.java
            );
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}
