//! Samples of a virtual thread name it: four virtual threads burn CPU (yielding now and then,
//! so they move between carriers) at 1 ms on JDK 21+, and every sample of their work is
//! written as a virtual thread (`eventThread.virtual`) whose `javaThreadId` is one the program
//! printed, while samples of the carriers' own code (the scheduler) stay with the carrier; the
//! virtual thread's stack ends at its continuation's entry, as the JDK writes it.

use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;

use serde_json::Value;
use tests::jdk::oracle_jdks;
use tests::readers::{cpu_sample_events, run};
use tests::workload::{agent_library, repo};

/// Least share (%) of the samples in the virtual threads' work method written as one of them.
const MIN_NAMED_PERCENT: f64 = 95.0;

fn methods(sample: &Value) -> Vec<String> {
    sample["values"]["stackTrace"]["frames"]
        .as_array()
        .map(|frames| {
            frames
                .iter()
                .map(|f| {
                    format!(
                        "{}.{}",
                        f["method"]["type"]["name"]
                            .as_str()
                            .unwrap_or("?")
                            .replace('/', "."),
                        f["method"]["name"].as_str().unwrap_or("?")
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn samples_of_a_virtual_thread_name_it() {
    let mut ran = 0;
    for jdk in oracle_jdks().into_iter().filter(|j| j.major >= 21) {
        let dir = std::env::temp_dir().join(format!(
            "jfrnative-vthreads-{}-{}",
            std::process::id(),
            jdk.major
        ));
        std::fs::create_dir_all(&dir).unwrap();
        let what = jdk.name();
        run(Command::new(jdk.tool("javac"))
            .args(["--release", "21", "-d"])
            .arg(&dir)
            .arg(repo().join("testdata/vthreads/VirtualThreads.java")))
        .unwrap_or_else(|e| panic!("{what}: {e}"));
        let file = dir.join("vthreads.jfr");
        let out = run(Command::new(jdk.tool("java"))
            .arg(format!(
                "-agentpath:{}=file={},interval=1ms",
                agent_library().display(),
                file.display()
            ))
            .arg("-cp")
            .arg(&dir)
            .args(["VirtualThreads", "4", "3"]))
        .unwrap_or_else(|e| panic!("{what}: {e}"));
        let printed: BTreeSet<i64> = out
            .lines()
            .filter_map(|l| l.strip_prefix("VTHREAD ")?.trim().parse().ok())
            .collect();
        assert_eq!(printed.len(), 4, "{what}: {out}");
        let samples = cpu_sample_events(&jdk, &file).unwrap_or_else(|e| panic!("{what}: {e}"));
        let mut per_vthread: BTreeMap<i64, u64> = BTreeMap::new();
        let (mut work, mut named, mut wrongly_virtual) = (0u64, 0u64, 0u64);
        let (mut whole_virtual, mut ending_at_entry, mut truncated_virtual) = (0u64, 0u64, 0u64);
        for event in &samples {
            let s = &event["values"];
            let thread = &s["eventThread"];
            let is_virtual = thread["virtual"].as_bool().unwrap_or(false);
            let id = thread["javaThreadId"].as_i64().unwrap_or(0);
            let stack = methods(event);
            let in_work = stack.iter().any(|m| m == "VirtualThreads.spin");
            let in_vthread = stack.iter().any(|m| {
                m.starts_with("java.lang.VirtualThread.")
                    || m.starts_with("jdk.internal.vm.Continuation.")
            });
            if in_work {
                work += 1;
                if is_virtual && printed.contains(&id) {
                    named += 1;
                }
            }
            if is_virtual {
                *per_vthread.entry(id).or_default() += 1;
                // A complete Java stack of a virtual thread has its continuation, or the
                // carrier mounting or unmounting it (`VirtualThread.runContinuation`), in it.
                let whole = s["stackTrace"]["truncated"].as_bool() == Some(false);
                let mounting = stack
                    .iter()
                    .any(|m| m == "java.lang.VirtualThread.runContinuation");
                truncated_virtual += u64::from(!whole);
                if whole && !stack.is_empty() && !mounting {
                    whole_virtual += 1;
                    ending_at_entry += u64::from(
                        stack.last().map(String::as_str)
                            == Some("jdk.internal.vm.Continuation.enterSpecial"),
                    );
                }
                if whole && !stack.is_empty() && !in_vthread {
                    wrongly_virtual += 1;
                    eprintln!(
                        "{what}: virtual thread {id} sampled outside a continuation: {stack:?}"
                    );
                }
            }
        }
        let named_pct = 100.0 * named as f64 / work.max(1) as f64;
        eprintln!(
            "{what}: {work} samples in VirtualThreads.spin, {named} ({named_pct:.1}%) written as \
             one of the printed virtual threads; per virtual thread {per_vthread:?}; printed \
             {printed:?}"
        );
        assert!(
            work >= 300,
            "{what}: only {work} samples of the virtual threads' work"
        );
        assert!(
            named_pct >= MIN_NAMED_PERCENT,
            "{what}: only {named} of {work} samples of the work name their virtual thread"
        );
        for id in &printed {
            assert!(
                per_vthread.get(id).copied().unwrap_or(0) >= 20,
                "{what}: virtual thread {id} has {:?} samples",
                per_vthread.get(id)
            );
        }
        let unknown: Vec<&i64> = per_vthread
            .keys()
            .filter(|id| !printed.contains(id))
            .collect();
        assert!(
            unknown.is_empty(),
            "{what}: samples written as virtual threads the program did not start: {unknown:?}"
        );
        assert_eq!(
            wrongly_virtual, 0,
            "{what}: samples written as a virtual thread outside one"
        );
        // As the JDK writes them: a virtual thread's stack ends at its continuation's entry,
        // the carrier's frames below are left out (but for a carrier mounting or unmounting
        // it). Most stacks are truncated: the frames below the ones Loom thawed are still in
        // the heap, which the walk does not read (see docs/how-it-works.md, "Virtual threads").
        eprintln!(
            "{what}: {ending_at_entry} of {whole_virtual} whole virtual-thread stacks end at \
             Continuation.enterSpecial; {truncated_virtual} truncated"
        );
        assert!(
            ending_at_entry * 100 >= whole_virtual * 95,
            "{what}: only {ending_at_entry} of {whole_virtual} whole virtual-thread stacks end at \
             Continuation.enterSpecial"
        );
        ran += 1;
        let _ = std::fs::remove_dir_all(&dir);
    }
    if ran == 0 {
        eprintln!("no JDK 21+: nothing checked");
    }
}
