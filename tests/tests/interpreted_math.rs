//! Math intrinsics called from interpreted code keep their Java stack. The interpreter's math
//! entry (`Math.sin` and the others) calls the JVM's libm stub with the interpreted caller's
//! rbp still live, so the stub's frame has two interpreter return addresses above it (the
//! entry's and the caller's): the walk used to find both and stop as ambiguous, losing the
//! Java stack of 22 to 29 % of the samples of an interpreted loop on every JDK 11 to 25.
//!
//! `testdata/vmstubs/InterpretedMath.java` under `-Xint` (every frame interpreted) at 1 ms on
//! every JDK of the matrix, read by the JDK's own `jfr print --json`.

use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;

use tests::jdk::matrix_jdks;
use tests::readers::{jfr_json, jvm_code_ranges};
use tests::workload::{agent_library, build_once, javac, run_java};

/// At least this share of the samples in a libm stub have the loop's Java frame (measured
/// after the fix: all of them, on JDK 11 to 25; before it, about a third of them had no Java
/// stack). Not all samples: under `-Xint` the JVM's own start and exit (the launcher loading
/// the main class, `Thread.exit`) take 2 to 4 % of the main thread's samples, outside the loop.
const MIN_WITH_JAVA_STACK: f64 = 0.99;
/// At least this share of the samples are in a libm stub (the case under test: measured
/// 0.74 to 0.80).
const MIN_IN_MATH_STUB: f64 = 0.10;

fn classes() -> PathBuf {
    static BUILT: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    build_once(&BUILT, "vmstubs", |jdk, src, dir| {
        javac(jdk, &src.join("InterpretedMath.java"), dir)
    })
}

#[test]
fn interpreted_math_calls_keep_their_java_stack() {
    for jdk in matrix_jdks() {
        let dir = std::env::temp_dir().join(format!(
            "jfrnative-interpreted-math-{}-{}",
            jdk.major,
            std::process::id()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("math.jfr");
        run_java(
            &jdk,
            Command::new(jdk.tool("java"))
                .arg("-Xint")
                .arg(format!(
                    "-agentpath:{}=file={},interval=1ms",
                    agent_library().display(),
                    file.display()
                ))
                .arg("-cp")
                .arg(classes())
                .args(["InterpretedMath", "2"]),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let code = jvm_code_ranges(&jdk, &file).unwrap();
        let in_math_stub = |pc: u64| {
            code.iter().any(|(name, start, end)| {
                // `StubRoutines::libmSin` up to JDK 21, `StubRoutines::dsin` on 25.
                *start <= pc
                    && pc < *end
                    && ["libm", "dsin", "dlog", "dexp", "dpow"]
                        .iter()
                        .any(|stub| name.starts_with(&format!("StubRoutines::{stub}")))
            })
        };
        let samples: Vec<_> = jfr_json(&jdk, &file)
            .unwrap()
            .samples
            .into_iter()
            .filter(|s| s.thread == "main")
            .collect();
        assert!(
            samples.len() >= 500,
            "{}: {} samples",
            jdk.name(),
            samples.len()
        );
        let n = samples.len() as f64;
        let in_stub: Vec<_> = samples
            .iter()
            .filter(|s| s.pcs.first().is_some_and(|&pc| in_math_stub(pc)))
            .collect();
        let with_java = |s: &tests::reading::SampleView| {
            s.java.iter().any(|f| f.starts_with("InterpretedMath.main"))
        };
        let stub_share = in_stub.len() as f64 / n;
        let whole = samples.iter().filter(|s| with_java(s)).count() as f64 / n;
        let stub_whole = in_stub.iter().filter(|s| with_java(s)).count();
        eprintln!(
            "{}: {} samples, in a libm stub {stub_share:.3} ({stub_whole} of {} with the Java \
             stack), with the Java stack {whole:.3}",
            jdk.name(),
            samples.len(),
            in_stub.len()
        );
        assert!(
            stub_share >= MIN_IN_MATH_STUB,
            "{}: {stub_share:.3}",
            jdk.name()
        );
        let stub_share_whole = stub_whole as f64 / in_stub.len() as f64;
        assert!(
            stub_share_whole >= MIN_WITH_JAVA_STACK,
            "{}: {stub_whole} of {} samples in a libm stub have the loop's Java frame",
            jdk.name(),
            in_stub.len()
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
