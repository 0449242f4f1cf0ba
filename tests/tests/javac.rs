//! The agent on a real, JIT-heavy program nobody here wrote: `javac` compiling
//! `java.util.concurrent` from the JDK's own `src.zip`, at 1 ms, with and without
//! `-XX:+UseTransparentHugePages`. The JIT keeps committing new code while it runs; a sample in
//! code the agent's map did not know yet was written with an empty, truncated native stack
//! (2.1% of samples with the map re-read on demand; none since JIT code is known by the code
//! cache's bounds), so the share of truncated native stacks shows how current the map is kept.

use tests::jdk::{missing, oracle_jdks};
use tests::readers::{jfr_json, run};
use tests::workload::{agent_library, concurrent_sources, javac_concurrent, why_no_sources};

/// Most samples (%) whose native stack may be truncated.
const MAX_TRUNCATED_PERCENT: usize = 1;

#[test]
fn javac_native_stacks_are_rarely_cut_short_by_new_jit_code() {
    for jdk in oracle_jdks() {
        let dir = std::env::temp_dir().join(format!(
            "jfrnative-javac-{}-{}",
            std::process::id(),
            jdk.major
        ));
        let Some(sources) = concurrent_sources(&jdk, &dir.join("src")) else {
            missing(&why_no_sources(&jdk), "the javac run");
            continue;
        };
        for jvm_flag in [None, Some("-XX:+UseTransparentHugePages")] {
            let what = format!("{} javac {}", jdk.name(), jvm_flag.unwrap_or(""));
            let file = dir.join("javac.jfr");
            let mut options = vec![format!(
                "-agentpath:{}=file={},interval=1ms,cstack=dwarf",
                agent_library().display(),
                file.display()
            )];
            options.extend(jvm_flag.map(String::from));
            let mut javac = javac_concurrent(&jdk, &dir, &sources, &options);
            run(&mut javac).unwrap_or_else(|e| panic!("{what}: {e}"));
            let reading = jfr_json(&jdk, &file).unwrap_or_else(|e| panic!("{what}: {e}"));
            let samples = reading.samples.len();
            let truncated = reading
                .samples
                .iter()
                .filter(|s| s.native_truncated == Some(true))
                .count();
            eprintln!("{what}: {truncated} of {samples} samples with a truncated native stack");
            assert!(samples >= 300, "{what}: only {samples} samples");
            assert!(
                truncated * 100 <= samples * MAX_TRUNCATED_PERCENT,
                "{what}: {truncated} of {samples} native stacks truncated"
            );
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}
