//! The short form of `tools/scripts/stress.sh`: the stress program (`testdata/stress`) run
//! twice per JDK with the agent at 1 ms (the second run with `threads=all`: the JVM's own GC,
//! JIT and VM threads sampled too, through the GC storm): short-lived threads, dlopen/dlclose churn, a GC storm
//! in 64 MB, deoptimization storms, virtual threads (JDK 21+), StackOverflowErrors in Java and
//! through JNI, and 10000 junk signals of the agent's signal from another process. Every run must
//! exit 0 with `STRESS OK`, leave no `hs_err` file, and leave a recording `jfr summary` reads with
//! CPU samples in it. A run that outlives its limit (4 times its duration plus a minute) counts as
//! hung; the limit only stops a hang, it measures nothing.

use std::time::Duration;

use tests::jdk::{matrix_jdks, Jdk};
use tests::stress::{agent_signal, java, jfr_summary, run_dir, run_guarded, stress_dir};

/// Runs per JDK.
const RUNS: usize = 2;
/// Seconds each part of the stress program runs.
const SECONDS: u64 = 5;
/// Short-lived threads per run (the script's runs use the program's 10000).
const THREADS: u32 = 5000;
/// Junk signals per run.
const SIGNALS: u32 = 10_000;

/// One run; Ok with a line for the log, or what went wrong.
fn stress_run(jdk: &Jdk, run: usize) -> Result<String, String> {
    let name = format!("jdk{}-run{run}", jdk.major);
    let dir = run_dir("stress", &name);
    let jfr = dir.join("out.jfr");
    let signal = agent_signal();
    let threads = if run % 2 == 1 { "all" } else { "java" };
    let options = format!(
        "file={},interval=1ms,signal={signal},threads={threads}",
        jfr.display()
    );
    let mut cmd = java(jdk, Some(&options), &dir);
    cmd.arg("-Xmx64m")
        .arg("Stress")
        .arg(format!("seconds={SECONDS}"))
        .arg(format!("threads={THREADS}"))
        .arg(format!(
            "sender={}",
            stress_dir().join("sigsender").display()
        ))
        .arg(format!("signal={signal}"))
        .arg(format!("signals={SIGNALS}"));
    let limit = Duration::from_secs(4 * SECONDS + 60);
    let out = run_guarded(&mut cmd, &dir, limit, |_| {})?;
    let what = format!(
        "{} run {run}, threads={threads} ({})",
        jdk.name(),
        dir.display()
    );
    if out.status.is_none() || out.code() != Some(0) || out.crashed() {
        return Err(format!("{what}: {}", out.describe()));
    }
    if !out.stdout.lines().any(|l| l == "STRESS OK") {
        return Err(format!("{what}: no STRESS OK: {}", out.describe()));
    }
    let counts = jfr_summary(jdk, &jfr).map_err(|e| format!("{what}: the recording: {e}"))?;
    let samples = counts.get("jdk.CPUTimeSample").copied().unwrap_or(0);
    if samples == 0 {
        return Err(format!("{what}: no jdk.CPUTimeSample in the recording"));
    }
    Ok(format!(
        "{what}: STRESS OK in {:.1} s, {samples} samples; {}",
        out.wall.as_secs_f64(),
        out.stdout.lines().collect::<Vec<_>>().join("; ")
    ))
}

#[test]
fn stress_program_ends_cleanly_with_the_agent() {
    let mut errors = Vec::new();
    for jdk in matrix_jdks() {
        for run in 0..RUNS {
            match stress_run(&jdk, run) {
                Ok(line) => eprintln!("{line}"),
                Err(e) => {
                    eprintln!("{e}");
                    errors.push(e);
                }
            }
        }
    }
    assert!(
        errors.is_empty(),
        "{} stress runs failed:\n{}",
        errors.len(),
        errors.join("\n\n")
    );
}
