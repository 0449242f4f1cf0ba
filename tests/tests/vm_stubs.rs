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
//! file (the named frame of library `jvm-generated` above the Java frames). async-profiler
//! (`ASYNC_PROFILER_LIB`, from Maven Central) samples the same run beside the agent (its own
//! signal and timers, CPU time at 1 ms): each stub's share of its thread's samples must be
//! async-profiler's within four standard errors of the difference of two sampled shares, so
//! that the stub names and shares do not rest on our own `jfrnative.JvmCode` events alone.

use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;

use tests::jdk::{oracle_jdks, third_party_reader};
use tests::readers::{jfr_json, jvm_code_ranges};
use tests::reading::SampleView;
use tests::workload::{agent_library, build_once, javac, jfr_symbolize, run_java};

/// At least this share of the `delete` thread's samples show the arraycopy stub above the
/// loop's Java frames (async-profiler shows it on more than 80 %).
const MIN_ARRAYCOPY_SHARE: f64 = 0.80;
/// How many standard errors of the difference of two sampled shares ours may be from
/// async-profiler's. Measured in one run each: differences 0.002-0.023 (JDK 17: arraycopy
/// 0.944/0.949, vtable 0.024/0.022, itable 0.218/0.231; JDK 25: 0.927/0.923, 0.077/0.081,
/// 0.131/0.108), with about 1,000 samples per thread each.
const STANDARD_ERRORS: f64 = 4.0;

fn vmstubs_dir() -> PathBuf {
    static BUILT: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    build_once(&BUILT, "vmstubs", |jdk, src, dir| {
        javac(jdk, &src.join("VmStubs.java"), dir)
    })
}

/// How many samples of `thread` there are.
fn count(samples: &[SampleView], thread: &str) -> u64 {
    samples.iter().filter(|s| s.thread == thread).count() as u64
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

/// (share, samples) of `thread`'s samples in async-profiler's collapsed output (`threads`: each
/// stack's first frame is `[NAME tid=N]`) whose leaf frame `holds`.
fn ap_share(collapsed: &str, thread: &str, holds: impl Fn(&str) -> bool) -> (f64, u64) {
    let (mut all, mut hit) = (0, 0);
    for line in collapsed.lines() {
        let (stack, n) = line.rsplit_once(' ').expect("STACK COUNT");
        let n: u64 = n.parse().expect("a count");
        let frames: Vec<&str> = stack.split(';').collect();
        if frames[0].trim_start_matches('[').split(" tid=").next() != Some(thread) {
            continue;
        }
        all += n;
        if holds(frames[frames.len() - 1]) {
            hit += n;
        }
    }
    (hit as f64 / all.max(1) as f64, all)
}

/// Asserts that our share of `thread`'s samples in a stub (`ours` of `n_ours` samples) is
/// async-profiler's (`ap` of `n_ap`) within [`STANDARD_ERRORS`] standard errors of their
/// difference (pooled), and that a stub async-profiler saw at least 10 times is seen by us too.
fn assert_like_async_profiler(what: &str, (ours, n_ours): (f64, u64), (ap, n_ap): (f64, u64)) {
    let pooled = (ours * n_ours as f64 + ap * n_ap as f64) / (n_ours + n_ap) as f64;
    let error = (pooled * (1.0 - pooled) * (1.0 / n_ours as f64 + 1.0 / n_ap as f64)).sqrt();
    let tolerance = STANDARD_ERRORS * error;
    eprintln!(
        "{what}: ours {ours:.3} of {n_ours} samples, async-profiler {ap:.3} of {n_ap}: \
         difference {:.3}, tolerance {tolerance:.3}",
        (ours - ap).abs()
    );
    assert!(n_ap >= 100, "{what}: async-profiler has {n_ap} samples");
    assert!(
        (ours - ap).abs() <= tolerance,
        "{what}: ours {ours:.3}, async-profiler's {ap:.3} (tolerance {tolerance:.3})"
    );
    if ap * n_ap as f64 >= 10.0 {
        assert!(ours > 0.0, "{what}: async-profiler sees it, we never do");
    }
}

/// The stub frame of a symbolized sample (`jvm-generated.NAME`), if its first frame is one.
fn top_stub(sample: &SampleView) -> Option<&str> {
    sample.java.first()?.strip_prefix("jvm-generated.")
}

#[test]
fn samples_in_jvm_stubs_keep_the_stub_as_a_named_native_frame() {
    let ap_lib = third_party_reader("ASYNC_PROFILER_LIB", "async-profiler");
    for jdk in oracle_jdks() {
        let dir = std::env::temp_dir().join(format!(
            "jfrnative-vmstubs-{}-{}",
            jdk.major,
            std::process::id()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("stubs.jfr");
        let ap_file = dir.join("async-profiler.collapsed");
        let classes = vmstubs_dir();
        let out = run_java(
            &jdk,
            Command::new(jdk.tool("java"))
                .arg(format!(
                    "-agentpath:{}=file={},interval=1ms",
                    agent_library().display(),
                    file.display()
                ))
                .args(ap_lib.iter().map(|lib| {
                    format!(
                        "-agentpath:{lib}=start,event=cpu,interval=1ms,threads,collapsed,file={}",
                        ap_file.display()
                    )
                }))
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
        let arraycopy_top = share(&samples, "delete", |s| {
            top_stub(s).is_some_and(|n| n.contains("arraycopy"))
        });
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
        if ap_lib.is_some() {
            let collapsed = std::fs::read_to_string(&ap_file).unwrap();
            for (thread, ours, stub) in [
                ("delete", arraycopy_top, "arraycopy"),
                ("vcalls", vtable, "vtable stub"),
                ("icalls", itable, "itable stub"),
            ] {
                assert_like_async_profiler(
                    &format!("{}: {thread}: {stub}", jdk.name()),
                    (ours, count(&samples, thread)),
                    ap_share(&collapsed, thread, |leaf| leaf.contains(stub)),
                );
            }
        }
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
