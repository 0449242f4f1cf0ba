//! Agent options: `file=out.jfr,interval=10ms,...` parsed into [`Options`]. Pure and unit-tested:
//! every error names the option and the values it accepts.

use std::fmt;

/// Largest Java depth accepted (AsyncGetCallTrace frames per sample).
pub const MAX_DEPTH: usize = 4096;
/// Largest native depth accepted.
pub const MAX_NATIVE_DEPTH: usize = 1024;

/// When to finish a chunk and start the next one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChunkPolicy {
    /// Finish a chunk after this long (0 = never by time).
    pub duration_ns: u64,
    /// Finish a chunk once its events take this many bytes (0 = never by size).
    pub size_bytes: u64,
}

/// A directory of chunk files (`file=DIR/`): each finished chunk is a file of its own, and the
/// oldest are removed past these bounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RepositoryOptions {
    /// Keep at most this many bytes of files (0 = no bound; the newest file is always kept).
    pub max_size_bytes: u64,
    /// Keep files whose chunk ended at most this long ago (`None` = no bound).
    pub max_age_ns: Option<u64>,
}

/// The size bound of a directory recording that gives neither `maxsize` nor `maxage`, as the
/// JDK's own disk recordings.
pub const DEFAULT_MAX_SIZE_BYTES: u64 = 250 << 20;

/// Parsed agent options.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Options {
    /// Output path, `%p` and `%t` expanded: a file, or with [`Options::repository`] a
    /// directory.
    pub file: String,
    /// `file` names a directory of chunk files (it ends in `/` or is a directory): its bounds.
    pub repository: Option<RepositoryOptions>,
    /// CPU time between samples of one thread.
    pub interval_ns: u64,
    /// Signal number for the timers; `None` = the first free real-time signal.
    pub signal: Option<i32>,
    /// Most Java frames per sample.
    pub depth: usize,
    /// Most native frames per sample.
    pub native_depth: usize,
    /// What signals the samples.
    pub engine: Engine,
    /// How native frames are unwound.
    pub cstack: CStack,
    /// How Java frames are walked.
    pub jstack: JStack,
    /// Chunk rotation.
    pub chunk: ChunkPolicy,
    /// How `nativeStackTrace` is written (`nstack=`).
    pub nstack: NStack,
    /// Which threads are sampled (`threads=`).
    pub threads: Threads,
    /// A file the writer keeps current with the recording's state and counters (for the
    /// `jfrnative` CLI's status line), `%p` and `%t` expanded.
    pub status: Option<String>,
    /// Where copies of the libraries that may not outlive the JVM are kept (`keep_libs=`;
    /// `None`: `keep_libs=off`): `FILE.libs` by default, laid out as a root the recorded paths
    /// are found under (`jfr-symbolize --sysroot`).
    pub keep_libs: Option<String>,
    /// At most this many bytes of kept libraries (`keep_libs_max=`).
    pub keep_libs_max_bytes: u64,
    /// Whether the summary is printed to the JVM's stderr when the recording stops
    /// (`summary=on`, the default, or `off`: a Java API user starting and stopping often).
    /// Failures are printed either way.
    pub summary: bool,
    /// The options as given, for `jdk.ActiveSetting` events.
    pub given: Vec<(String, String)>,
}

/// The default bound of the kept libraries.
pub const DEFAULT_KEEP_LIBS_MAX_BYTES: u64 = 256 << 20;

/// How the `nativeStackTrace` field is written (`nstack=`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NStack {
    /// A key into a deduplicated `jdk.NativeStackTrace` constant pool: small files
    /// (`nstack=pooled`, the default). JDK Mission Control puts the events of every chunk after
    /// the first into a type of its own (`jdk.CPUTimeSample` + a random suffix).
    Pooled,
    /// The struct in every event: larger files, one event type in JMC (`nstack=inline`).
    Inline,
}

/// Which threads of the process are sampled (`threads=`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Threads {
    /// The Java threads the JVM tells JVMTI about (`threads=java`, the default), as the JDK's
    /// own `jdk.CPUTimeSample` does.
    Java,
    /// Every thread of the process (`threads=all`): the Java threads, and the JVM's own (GC,
    /// JIT compilers, the VM thread, ...) and native threads, found in `/proc/self/task`
    /// within two scans (100 ms) of their start, with native stacks only.
    All,
}

/// What signals a thread's samples (`engine=`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Engine {
    /// A `task-clock` perf counter per thread (`perf_event_open`), driven by a high-resolution
    /// timer: `interval` is met even below the scheduler tick (`engine=perf`, the default). Where
    /// perf is refused (`perf_event_paranoid` 3, a seccomp filter, no perf support) the
    /// recording uses `timer`, said once.
    Perf,
    /// A POSIX timer on each thread's CPU clock (`engine=timer`): expires on the scheduler tick
    /// only (at most HZ real samples per CPU-second, the missed expirations weighed in).
    Timer,
}

impl Engine {
    /// The option's value.
    pub fn name(self) -> &'static str {
        match self {
            Engine::Perf => "perf",
            Engine::Timer => "timer",
        }
    }
}

/// How the signal handler unwinds native frames (`cstack=`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CStack {
    /// Call-frame information (`.eh_frame`, `.debug_frame`, the vDSO's), frame pointers where a
    /// library has none (`cstack=dwarf`, the default).
    Dwarf,
    /// Frame pointers only (`cstack=fp`).
    Fp,
}

/// How the signal handler takes Java frames (`jstack=`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JStack {
    /// HotSpot's own frame descriptions (gHotSpotVMStructs) first, with every frame's type;
    /// AsyncGetCallTrace where that walk does not reach the end of the stack (`jstack=vm`, the
    /// default: its stacks agree more often with the JDK's own sampler at the same instant).
    Vm,
    /// AsyncGetCallTrace first; the VM walk for the samples it cannot walk, and for the types of
    /// the frames where both walks name the same methods (`jstack=agct-vm`).
    AgctVm,
    /// AsyncGetCallTrace alone (`jstack=agct`): no frame types, failed samples stay failed.
    Agct,
}

/// A bad option.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OptionError {
    /// The option's name (or the whole item if it has no `=`).
    pub option: String,
    /// What is wrong and what is accepted.
    pub message: String,
}

impl fmt::Display for OptionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "jfr-native: bad agent option '{}': {}",
            self.option, self.message
        )
    }
}

impl std::error::Error for OptionError {}

fn err(option: &str, message: impl Into<String>) -> OptionError {
    OptionError {
        option: option.to_string(),
        message: message.into(),
    }
}

/// Parses `value` as a duration with a unit: `ns`, `us`, `ms`, `s`, `m`, `h` or `d`.
pub fn parse_duration_ns(value: &str) -> Option<u64> {
    let split = value.find(|c: char| !c.is_ascii_digit())?;
    let (number, unit) = value.split_at(split);
    let n: u64 = number.parse().ok()?;
    let scale = match unit {
        "ns" => 1,
        "us" => 1_000,
        "ms" => 1_000_000,
        "s" => 1_000_000_000,
        "m" => 60_000_000_000,
        "h" => 3_600_000_000_000,
        "d" => 86_400_000_000_000,
        _ => return None,
    };
    n.checked_mul(scale)
}

fn parse_size_bytes(value: &str) -> Option<u64> {
    let lower = value.to_ascii_lowercase();
    let split = lower.find(|c: char| !c.is_ascii_digit())?;
    let (number, unit) = lower.split_at(split);
    let n: u64 = number.parse().ok()?;
    let scale = match unit {
        "b" => 1,
        "k" | "kb" => 1 << 10,
        "m" | "mb" => 1 << 20,
        "g" | "gb" => 1 << 30,
        _ => return None,
    };
    n.checked_mul(scale)
}

fn parse_chunk(value: &str) -> Result<ChunkPolicy, String> {
    let usage = "a duration (e.g. 5s), a size (e.g. 16mb) or both separated by '/' (5s/16mb)";
    let mut policy = ChunkPolicy {
        duration_ns: 0,
        size_bytes: 0,
    };
    for part in value.split('/') {
        if let Some(ns) = parse_duration_ns(part).filter(|&ns| ns >= 100_000_000) {
            policy.duration_ns = ns;
        } else if let Some(bytes) = parse_size_bytes(part).filter(|&b| b >= 64 << 10) {
            policy.size_bytes = bytes;
        } else {
            return Err(format!("'{part}' is not {usage}, at least 100ms or 64kb"));
        }
    }
    Ok(policy)
}

fn parse_count(value: &str, max: usize) -> Result<usize, String> {
    match value.parse::<usize>() {
        Ok(n) if (1..=max).contains(&n) => Ok(n),
        _ => Err(format!("'{value}' is not a whole number from 1 to {max}")),
    }
}

/// Expands `%p` (pid) and `%t` (timestamp) in a file name.
pub fn expand_file(template: &str, pid: u32, timestamp: &str) -> String {
    template
        .replace("%p", &pid.to_string())
        .replace("%t", timestamp)
}

/// What a load of the agent asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    /// Start a recording.
    Start(Options),
    /// Stop the running recording and finish its file (`stop`, from a second attach).
    Stop,
}

/// Parses the option string of a load: `stop`, or the options of a new recording.
pub fn parse_command(options: &str, pid: u32, timestamp: &str) -> Result<Command, OptionError> {
    if options.trim() == "stop" {
        return Ok(Command::Stop);
    }
    parse(options, pid, timestamp).map(Command::Start)
}

/// The `status` file named in an option string, found even if another option is bad, so that
/// the error can be reported there.
pub fn status_path(options: &str, pid: u32, timestamp: &str) -> Option<String> {
    options
        .split(',')
        .filter_map(|item| item.trim().strip_prefix("status="))
        .find(|v| !v.is_empty())
        .map(|v| expand_file(v, pid, timestamp))
}

/// An option's value, as its accepted words: the first whose word matches.
fn choice<T: Copy>(value: &str, words: &[(&str, T)], accepted: &str) -> Result<T, String> {
    words
        .iter()
        .find(|(word, _)| *word == value)
        .map(|&(_, v)| v)
        .ok_or_else(|| format!("'{value}' is not {accepted}"))
}

/// The options being parsed, with the values that are checked only once all are known.
struct Parsing<'a> {
    o: Options,
    file: Option<String>,
    max_size: Option<u64>,
    max_age: Option<u64>,
    keep_libs: Option<String>,
    pid: u32,
    timestamp: &'a str,
}

/// One agent option: its name, and how its value is applied (`Err`: what is wrong and what is
/// accepted; the error names the option).
struct Spec {
    name: &'static str,
    apply: fn(&mut Parsing<'_>, &str) -> Result<(), String>,
}

/// Every agent option, in the order the messages list them.
const OPTIONS: &[Spec] = &[
    Spec {
        name: "file",
        apply: |p, value| {
            if value.is_empty() {
                return Err("needs a path".into());
            }
            p.file = Some(expand_file(value, p.pid, p.timestamp));
            Ok(())
        },
    },
    Spec {
        name: "interval",
        apply: |p, value| {
            p.o.interval_ns = parse_duration_ns(value)
                .filter(|&ns| (100_000..=10_000_000_000).contains(&ns))
                .ok_or_else(|| format!("'{value}' is not a duration from 100us to 10s with a unit ns, us, ms or s (e.g. 10ms)"))?;
            Ok(())
        },
    },
    Spec {
        name: "engine",
        apply: |p, value| {
            p.o.engine = choice(
                value,
                &[("perf", Engine::Perf), ("timer", Engine::Timer)],
                "perf (a perf_event task-clock counter per thread, the default) or timer (a CPU timer per thread, limited to the scheduler tick)",
            )?;
            Ok(())
        },
    },
    Spec {
        name: "signal",
        apply: |p, value| {
            let (lo, hi) = (libc::SIGRTMIN(), libc::SIGRTMAX());
            let n: i32 = value
                .parse()
                .map_err(|_| format!("'{value}' is not a number"))?;
            if n != libc::SIGPROF && !(lo..=hi).contains(&n) {
                return Err(format!(
                    "{n} is not a real-time signal ({lo} to {hi}) or SIGPROF ({})",
                    libc::SIGPROF
                ));
            }
            p.o.signal = Some(n);
            Ok(())
        },
    },
    Spec {
        name: "depth",
        apply: |p, value| {
            p.o.depth = parse_count(value, MAX_DEPTH)?;
            Ok(())
        },
    },
    Spec {
        name: "native_depth",
        apply: |p, value| {
            p.o.native_depth = parse_count(value, MAX_NATIVE_DEPTH)?;
            Ok(())
        },
    },
    Spec {
        name: "cstack",
        apply: |p, value| {
            p.o.cstack = choice(
                value,
                &[("dwarf", CStack::Dwarf), ("fp", CStack::Fp)],
                "dwarf (call-frame information, the default) or fp (frame pointers)",
            )?;
            Ok(())
        },
    },
    Spec {
        name: "jstack",
        apply: |p, value| {
            p.o.jstack = choice(
                value,
                &[("vm", JStack::Vm), ("agct-vm", JStack::AgctVm), ("agct", JStack::Agct)],
                "vm (HotSpot's frame descriptions, then AsyncGetCallTrace; the default), agct-vm (AsyncGetCallTrace, then HotSpot's frame descriptions) or agct (AsyncGetCallTrace alone)",
            )?;
            Ok(())
        },
    },
    Spec {
        name: "nstack",
        apply: |p, value| {
            p.o.nstack = choice(
                value,
                &[("pooled", NStack::Pooled), ("inline", NStack::Inline)],
                "pooled (a constant pool, the default) or inline (in every event, one event type in JDK Mission Control)",
            )?;
            Ok(())
        },
    },
    Spec {
        name: "threads",
        apply: |p, value| {
            p.o.threads = choice(
                value,
                &[("java", Threads::Java), ("all", Threads::All)],
                "java (the Java threads, the default) or all (every thread of the process: the JVM's own GC, JIT and VM threads and native threads too)",
            )?;
            Ok(())
        },
    },
    Spec {
        name: "chunk",
        apply: |p, value| {
            p.o.chunk = parse_chunk(value)?;
            Ok(())
        },
    },
    Spec {
        name: "maxsize",
        apply: |p, value| {
            let bytes = parse_size_bytes(value)
                .filter(|&b| b >= 1 << 20)
                .ok_or_else(|| {
                    format!("'{value}' is not a size of at least 1mb (e.g. 250mb, 2gb)")
                })?;
            p.max_size = Some(bytes);
            Ok(())
        },
    },
    Spec {
        name: "maxage",
        apply: |p, value| {
            let ns = parse_duration_ns(value)
                .filter(|&ns| ns >= 1_000_000_000)
                .ok_or_else(|| {
                    format!("'{value}' is not a duration of at least 1s with a unit s, m, h or d (e.g. 6h)")
                })?;
            p.max_age = Some(ns);
            Ok(())
        },
    },
    Spec {
        name: "keep_libs",
        apply: |p, value| {
            if value.is_empty() {
                return Err("needs a directory, or off".into());
            }
            p.keep_libs = Some(expand_file(value, p.pid, p.timestamp));
            Ok(())
        },
    },
    Spec {
        name: "keep_libs_max",
        apply: |p, value| {
            p.o.keep_libs_max_bytes = parse_size_bytes(value).ok_or_else(|| {
                format!("'{value}' is not a size (e.g. 256mb, 1gb; keep_libs=off keeps none)")
            })?;
            Ok(())
        },
    },
    Spec {
        name: "summary",
        apply: |p, value| {
            p.o.summary = choice(
                value,
                &[("on", true), ("off", false)],
                "on (print the summary when the recording stops, the default) or off",
            )?;
            Ok(())
        },
    },
    Spec {
        name: "status",
        apply: |p, value| {
            if value.is_empty() {
                return Err("needs a path".into());
            }
            p.o.status = Some(expand_file(value, p.pid, p.timestamp));
            Ok(())
        },
    },
];

/// The accepted keys, for messages.
fn accepted() -> String {
    let names: Vec<&str> = OPTIONS.iter().map(|s| s.name).collect();
    format!("{} (or the single command stop)", names.join(", "))
}

/// The options every recording starts from.
fn defaults() -> Options {
    Options {
        file: String::new(),
        repository: None,
        interval_ns: 10_000_000,
        signal: None,
        depth: 2048,
        native_depth: 128,
        engine: Engine::Perf,
        cstack: CStack::Dwarf,
        jstack: JStack::Vm,
        nstack: NStack::Pooled,
        threads: Threads::Java,
        chunk: ChunkPolicy {
            duration_ns: 5_000_000_000,
            size_bytes: 0,
        },
        status: None,
        keep_libs: None,
        keep_libs_max_bytes: DEFAULT_KEEP_LIBS_MAX_BYTES,
        summary: true,
        given: Vec::new(),
    }
}

/// Parses the agent option string. `pid` and `timestamp` expand `%p` and `%t`.
pub fn parse(options: &str, pid: u32, timestamp: &str) -> Result<Options, OptionError> {
    // HotSpot's jcmd parser cuts an argument at its first '=' and passes only the part before it
    // to JVMTI.agent_load, so `file=out.jfr,interval=10ms` arrives as `file`.
    if OPTIONS.iter().any(|s| s.name == options.trim()) {
        return Err(err(
            options.trim(),
            "has no value: jcmd cuts its arguments at '=', so quote the options inside the argument: \
             jcmd PID JVMTI.agent_load /path/libjfrnative.so '\"file=out.jfr,interval=10ms\"'",
        ));
    }
    let mut p = Parsing {
        o: defaults(),
        file: None,
        max_size: None,
        max_age: None,
        keep_libs: None,
        pid,
        timestamp,
    };
    for item in options.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        // An item without a key (`=x`) is named whole: an error must name an option, and ''
        // names none (found by the fuzz target agent_options).
        let Some((key, value)) = item.split_once('=').filter(|(key, _)| !key.is_empty()) else {
            return Err(err(
                item,
                format!("expected key=value; accepted keys: {}", accepted()),
            ));
        };
        let Some(spec) = OPTIONS.iter().find(|s| s.name == key) else {
            return Err(err(
                key,
                format!("unknown option; accepted: {}", accepted()),
            ));
        };
        (spec.apply)(&mut p, value).map_err(|message| err(key, message))?;
        p.o.given.push((key.to_string(), value.to_string()));
    }
    finish(p)
}

/// Checks what needs all the options: the file, and the bounds of a directory of chunks.
fn finish(p: Parsing<'_>) -> Result<Options, OptionError> {
    let Parsing {
        mut o,
        file,
        max_size,
        max_age,
        keep_libs,
        ..
    } = p;
    o.file = file.ok_or_else(|| {
        err(
            "file",
            "is required, e.g. file=out.jfr (%p = pid, %t = timestamp)",
        )
    })?;
    o.keep_libs = match keep_libs.as_deref() {
        Some("off") => None,
        Some(dir) => Some(dir.to_string()),
        None => Some(format!("{}.libs", o.file.trim_end_matches('/'))),
    };
    let directory = o.file.ends_with('/') || std::path::Path::new(&o.file).is_dir();
    if directory {
        o.repository = Some(RepositoryOptions {
            max_size_bytes: max_size.unwrap_or(if max_age.is_none() {
                DEFAULT_MAX_SIZE_BYTES
            } else {
                0
            }),
            max_age_ns: max_age,
        });
    } else if let Some(option) = [("maxsize", max_size), ("maxage", max_age)]
        .into_iter()
        .find_map(|(name, v)| v.map(|_| name))
    {
        return Err(err(
            option,
            format!(
                "bounds a directory of chunk files: give file=DIR/ (a path ending in '/'), not \
                 the file {}",
                o.file
            ),
        ));
    }
    Ok(o)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Found by the fuzz target agent_options: `=ts /t` was refused as the unknown option ''.
    #[test]
    fn an_item_without_a_key_is_named_whole() {
        let e = parse("file=a,=ts /t", 1, "t").unwrap_err();
        assert_eq!(e.option, "=ts /t");
        assert!(e.message.starts_with("expected key=value"), "{e}");
    }

    #[test]
    fn stop_command_and_status_path() {
        assert_eq!(parse_command(" stop ", 1, "t"), Ok(Command::Stop));
        assert!(matches!(
            parse_command("file=a", 1, "t"),
            Ok(Command::Start(_))
        ));
        assert_eq!(
            status_path("interval=bad,status=/tmp/s-%p", 7, "t").as_deref(),
            Some("/tmp/s-7")
        );
        assert_eq!(status_path("file=a,status=", 7, "t"), None);
    }

    fn p(s: &str) -> Result<Options, OptionError> {
        parse(s, 42, "20260101-000000")
    }

    #[test]
    fn kept_libraries_go_beside_the_recording_unless_told() {
        assert_eq!(
            p("file=/r/a.jfr").unwrap().keep_libs.as_deref(),
            Some("/r/a.jfr.libs")
        );
        assert_eq!(
            p("file=/r/d/").unwrap().keep_libs.as_deref(),
            Some("/r/d.libs")
        );
        let o = p("file=a.jfr,keep_libs=/k/%p,keep_libs_max=1gb").unwrap();
        assert_eq!(
            (o.keep_libs.as_deref(), o.keep_libs_max_bytes),
            (Some("/k/42"), 1 << 30)
        );
        assert_eq!(p("file=a.jfr,keep_libs=off").unwrap().keep_libs, None);
        let e = p("file=a.jfr,keep_libs_max=lots").unwrap_err().to_string();
        assert!(e.contains("keep_libs_max"), "{e}");
        let e = p("file=a.jfr,keep_libs=").unwrap_err().to_string();
        assert!(e.contains("keep_libs"), "{e}");
    }

    #[test]
    fn defaults_and_expansion() {
        let o = p("file=/tmp/x-%p-%t.jfr").unwrap();
        assert_eq!(o.file, "/tmp/x-42-20260101-000000.jfr");
        assert_eq!(o.interval_ns, 10_000_000);
        assert_eq!((o.depth, o.native_depth, o.signal), (2048, 128, None));
        assert_eq!(
            o.chunk,
            ChunkPolicy {
                duration_ns: 5_000_000_000,
                size_bytes: 0
            }
        );
    }

    #[test]
    fn all_options() {
        let o = p(
            "file=a.jfr,interval=1ms,signal=40,depth=64,native_depth=32,chunk=2s/1mb,status=s-%p,cstack=fp",
        )
        .unwrap();
        assert_eq!(o.cstack, CStack::Fp);
        assert_eq!(p("file=a").unwrap().cstack, CStack::Dwarf);
        assert_eq!(p("file=a").unwrap().jstack, JStack::Vm);
        assert_eq!(p("file=a").unwrap().engine, Engine::Perf);
        assert_eq!(p("file=a,engine=timer").unwrap().engine, Engine::Timer);
        assert_eq!(p("file=a,jstack=agct").unwrap().jstack, JStack::Agct);
        assert_eq!(p("file=a,jstack=agct-vm").unwrap().jstack, JStack::AgctVm);
        assert_eq!(p("file=a").unwrap().nstack, NStack::Pooled);
        assert_eq!(p("file=a,nstack=inline").unwrap().nstack, NStack::Inline);
        assert_eq!(p("file=a").unwrap().threads, Threads::Java);
        assert_eq!(p("file=a,threads=all").unwrap().threads, Threads::All);
        assert_eq!(o.status.as_deref(), Some("s-42"));
        assert_eq!(o.interval_ns, 1_000_000);
        assert_eq!(o.signal, Some(40));
        assert_eq!((o.depth, o.native_depth), (64, 32));
        assert_eq!(
            o.chunk,
            ChunkPolicy {
                duration_ns: 2_000_000_000,
                size_bytes: 1 << 20
            }
        );
        assert_eq!(o.given.len(), 8);
        assert_eq!(parse_duration_ns("250us"), Some(250_000));
        assert_eq!(parse_duration_ns("2s"), Some(2_000_000_000));
        assert_eq!(parse_duration_ns("10"), None);
    }

    #[test]
    fn a_directory_keeps_a_rolling_set_of_chunk_files() {
        let o = p("file=/tmp/rec-%p/").unwrap();
        assert_eq!(o.file, "/tmp/rec-42/");
        assert_eq!(
            o.repository,
            Some(RepositoryOptions {
                max_size_bytes: DEFAULT_MAX_SIZE_BYTES,
                max_age_ns: None
            })
        );
        let o = p("file=d/,maxsize=1gb,maxage=6h").unwrap();
        assert_eq!(
            o.repository,
            Some(RepositoryOptions {
                max_size_bytes: 1 << 30,
                max_age_ns: Some(6 * 3_600_000_000_000)
            })
        );
        // maxage alone: no size bound unless one is given.
        let o = p("file=d/,maxage=30m").unwrap();
        assert_eq!(o.repository.unwrap().max_size_bytes, 0);
        assert_eq!(o.repository.unwrap().max_age_ns, Some(1_800_000_000_000));
        // An existing directory without the slash.
        let dir = std::env::temp_dir();
        let o = p(&format!("file={}", dir.display())).unwrap();
        assert!(o.repository.is_some());
        assert_eq!(p("file=a.jfr").unwrap().repository, None);
    }

    #[test]
    fn the_summary_is_on_unless_turned_off() {
        assert!(p("file=a.jfr").unwrap().summary);
        assert!(p("file=a.jfr,summary=on").unwrap().summary);
        assert!(!p("file=a.jfr,summary=off").unwrap().summary);
    }

    #[test]
    fn errors_name_the_option_and_the_accepted_values() {
        let cases = [
            ("interval=10", "interval", "unit"),
            ("file=a,interval=fast", "interval", "10ms"),
            ("file=a,interval=1ns", "interval", "100us"),
            ("file=a,signal=11", "signal", "real-time"),
            ("file=a,depth=0", "depth", "1 to 4096"),
            ("file=a,native_depth=x", "native_depth", "1 to 1024"),
            ("file=a,chunk=soon", "chunk", "duration"),
            ("file=a,cstack=lbr", "cstack", "dwarf"),
            ("file=a,jstack=jvmti", "jstack", "agct"),
            ("file=a,engine=itimer", "engine", "timer"),
            ("file=a,nstack=both", "nstack", "inline"),
            ("file=a,threads=gc", "threads", "all (every thread"),
            ("file=a,bogus=1", "bogus", "accepted: file, interval"),
            ("file=a,verbose", "verbose", "key=value"),
            ("interval=10ms", "file", "required"),
            ("file=", "file", "path"),
            ("file", "file", "quote the options"),
            ("file=a,status=", "status", "path"),
            ("file=a,summary=quiet", "summary", "on (print the summary"),
            ("file=a.jfr,maxsize=1gb", "maxsize", "file=DIR/"),
            ("file=a.jfr,maxage=1h", "maxage", "file=DIR/"),
            ("file=d/,maxsize=10kb", "maxsize", "at least 1mb"),
            ("file=d/,maxage=10ms", "maxage", "at least 1s"),
            ("file=d/,maxage=5", "maxage", "unit s, m, h or d"),
            ("stop,file=a", "stop", "key=value"),
        ];
        for (input, option, fragment) in cases {
            let e = p(input).unwrap_err();
            assert_eq!(e.option, option, "{input}");
            let text = e.to_string();
            assert!(text.contains(fragment), "{input}: {text}");
            assert!(text.contains(&format!("'{option}'")), "{input}: {text}");
        }
    }
}
