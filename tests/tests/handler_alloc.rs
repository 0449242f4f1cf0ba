//! The agent's signal handler never allocates, checked in the real JVM: the workload runs under
//! `LD_PRELOAD=alloc_guard.so` (`testdata/alloc_guard`), an interposer of malloc, calloc,
//! realloc, reallocarray, free, memalign, posix_memalign, aligned_alloc, valloc and pvalloc that
//! counts every call made while the agent's signal is blocked in the calling thread. The agent
//! installs its handler without `SA_NODEFER` and with an empty mask, so the signal is blocked in
//! a thread exactly while the handler runs there (neither glibc nor HotSpot 17/25 blocks a
//! real-time signal around an allocation: with the agent not loaded the guard counts 0). The
//! guard is first shown to catch an allocation inside a handler, for each function it watches.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus};
use std::time::{Duration, Instant};

use tests::jdk::oracle_jdks;
use tests::readers::{jfrs, run};
use tests::workload::java_with_agent;

/// The agent's timer signal in these runs: SIGRTMIN+6 under glibc, free in HotSpot 17 and 25
/// (the agent refuses a signal that already has a handler).
const SIGNAL: i32 = 40;

fn out_dir() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("jfrnative-handler-alloc-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Builds `alloc_guard.so` and `guard_selftest` into `dir`.
fn build_guard(dir: &Path) -> (PathBuf, PathBuf) {
    let src = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../testdata/alloc_guard");
    let (guard, selftest) = (dir.join("alloc_guard.so"), dir.join("guard_selftest"));
    run(Command::new("gcc")
        .args(["-O2", "-Wall", "-Wextra", "-Werror", "-shared", "-fPIC"])
        .arg(src.join("alloc_guard.c"))
        .arg("-o")
        .arg(&guard))
    .unwrap_or_else(|e| panic!("building alloc_guard.so: {e}"));
    // -fno-builtin: gcc would otherwise turn realloc(NULL, n) into malloc(n).
    run(Command::new("gcc")
        .args(["-O2", "-fno-builtin", "-Wall", "-Wextra", "-Werror"])
        .arg(src.join("guard_selftest.c"))
        .arg("-o")
        .arg(&selftest))
    .unwrap_or_else(|e| panic!("building guard_selftest: {e}"));
    (guard, selftest)
}

/// Runs `cmd` under the guard, which appends its report to `report` (removed first).
fn guarded<'a>(cmd: &'a mut Command, guard: &Path, report: &Path) -> &'a mut Command {
    let _ = std::fs::remove_file(report);
    cmd.env("LD_PRELOAD", guard)
        .env("ALLOC_GUARD_SIGNAL", SIGNAL.to_string())
        .env("ALLOC_GUARD_OUT", report)
}

/// What the guard wrote (see `alloc_guard.c`).
#[derive(Debug)]
struct GuardReport {
    text: String,
}

impl GuardReport {
    fn read(path: &Path) -> GuardReport {
        let text = std::fs::read_to_string(path)
            .unwrap_or_else(|e| panic!("no guard report {}: {e}", path.display()));
        GuardReport { text }
    }

    fn lines(&self, kind: &str) -> Vec<&str> {
        self.text
            .lines()
            .filter(|l| l.split_whitespace().next() == Some(kind))
            .collect()
    }

    /// The `key=value` fields of the `end` line (the destructor's), which must be there.
    fn end(&self) -> Vec<(&str, &str)> {
        let ends = self.lines("end");
        assert_eq!(
            ends.len(),
            1,
            "expected one end line (the guard's destructor):\n{}",
            self.text
        );
        ends[0]
            .split_whitespace()
            .skip(1)
            .filter_map(|f| f.split_once('='))
            .collect()
    }

    fn end_field(&self, key: &str) -> String {
        self.end()
            .into_iter()
            .find(|(k, _)| *k == key)
            .unwrap_or_else(|| panic!("no {key} in the end line:\n{}", self.text))
            .1
            .to_string()
    }

    /// The number of allocator calls inside the handler: the `inside` lines (written at once),
    /// which must agree with the destructor's total.
    fn inside(&self) -> usize {
        let live = self.lines("inside").len();
        assert_eq!(
            self.end_field("inside"),
            live.to_string(),
            "inside lines and total disagree:\n{}",
            self.text
        );
        live
    }

    /// The first `inside` lines, and the first callers as `addr2line` resolves them.
    fn explain(&self) -> String {
        let inside = self.lines("inside");
        let mut text: Vec<String> = inside.iter().take(8).map(|l| l.to_string()).collect();
        if inside.len() > 8 {
            text.push(format!("... {} more", inside.len() - 8));
        }
        let mut seen = Vec::new();
        for line in self.lines("where") {
            // where pid=P caller=0xADDR OBJECT+0xOFF (SYMBOL+0xOFF)
            let Some((object, offset)) = line
                .split_whitespace()
                .nth(3)
                .and_then(|w| w.rsplit_once("+0x"))
            else {
                continue;
            };
            if seen.contains(&(object, offset)) {
                continue;
            }
            seen.push((object, offset));
            let resolved = run(Command::new("addr2line")
                .args(["-f", "-C", "-i", "-e", object])
                .arg(format!("0x{offset}")))
            .unwrap_or_else(|e| e);
            text.push(format!("{object}+0x{offset}:\n{}", resolved.trim_end()));
        }
        text.extend(self.lines("end").iter().map(|l| l.to_string()));
        text.join("\n")
    }

    /// Asserts that the guard watched the right signal and was active in the process, and that
    /// the handler was installed without `SA_NODEFER` (else "blocked" would not mean "inside").
    fn assert_armed(&self, what: &str) {
        assert!(
            self.lines("start")
                .iter()
                .any(|l| l.ends_with(&format!(" signal={SIGNAL}"))),
            "{what}: the guard did not start with signal {SIGNAL}:\n{}",
            self.text
        );
        assert!(
            !self.lines("active").is_empty(),
            "{what}: no allocator call went through the guard:\n{}",
            self.text
        );
        assert_eq!(self.end_field("signal"), SIGNAL.to_string(), "{what}");
        assert_eq!(
            self.end_field("handler"),
            "installed",
            "{what}: no handler for signal {SIGNAL} at exit:\n{}",
            self.text
        );
        assert_eq!(
            self.end_field("nodefer"),
            "0",
            "{what}: the handler has SA_NODEFER: the guard cannot tell when it runs"
        );
    }
}

/// The guard counts exactly one allocation inside a handler that makes one, for each function
/// it watches, and none for a handler that makes none (the same call made outside the handler).
fn assert_guard_detects(guard: &Path, selftest: &Path, dir: &Path) {
    let modes = [
        "none",
        "malloc",
        "calloc",
        "realloc",
        "reallocarray",
        "free",
        "memalign",
        "posix_memalign",
        "aligned_alloc",
        "valloc",
        "pvalloc",
    ];
    for mode in modes {
        let report = dir.join(format!("selftest-{mode}.txt"));
        let out = guarded(Command::new(selftest).arg(mode), guard, &report)
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && stdout.contains("handler ran"),
            "guard_selftest {mode}: {}\n{stdout}{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        let report = GuardReport::read(&report);
        report.assert_armed(&format!("guard_selftest {mode}"));
        let expected = usize::from(mode != "none");
        assert_eq!(
            report.inside(),
            expected,
            "guard_selftest {mode}: allocations counted inside the handler:\n{}",
            report.text
        );
        if expected == 1 {
            let inside = report.lines("inside");
            assert!(
                inside[0].contains(&format!(" fn={mode} ")),
                "guard_selftest {mode}: {}",
                inside[0]
            );
        }
    }
}

/// How long a 2-second workload may take before it counts as hung (an allocating handler can
/// deadlock the JVM in malloc: seen with JDK 17 and a `Box::new` in the handler).
const DEADLINE: Duration = Duration::from_secs(60);

/// Runs `cmd` under the guard with stdout and stderr in files `log.out` and `log.err`; kills it
/// after [`DEADLINE`]. Returns its exit status (`None`: killed) and its output.
fn run_with_deadline(
    mut cmd: Command,
    guard: &Path,
    report: &Path,
    log: &Path,
) -> (Option<ExitStatus>, String) {
    let (out, err) = (log.with_extension("out"), log.with_extension("err"));
    let mut child = guarded(&mut cmd, guard, report)
        .stdout(std::fs::File::create(&out).unwrap())
        .stderr(std::fs::File::create(&err).unwrap())
        .spawn()
        .unwrap();
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break Some(status);
        }
        if start.elapsed() > DEADLINE {
            child.kill().unwrap();
            child.wait().unwrap();
            break None;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let text = |p: &Path| std::fs::read_to_string(p).unwrap_or_default();
    (status, text(&out) + &text(&err))
}

/// `jdk.CPUTimeSample` events in `file`, per the `jfrs` reader.
fn cpu_samples(what: &str, file: &Path) -> u64 {
    let (reading, _) = jfrs(file).unwrap_or_else(|e| panic!("{what}: jfrs: {e}"));
    reading
        .counts
        .get("jdk.CPUTimeSample")
        .copied()
        .unwrap_or(0)
}

#[test]
fn signal_handler_never_allocates() {
    let dir = out_dir();
    let (guard, selftest) = build_guard(&dir);
    assert_guard_detects(&guard, &selftest, &dir);

    let jdks = oracle_jdks();
    // Both engines: the perf engine's handler also reads the thread's CPU clock and re-arms
    // its counter.
    let runs = jdks
        .iter()
        .map(|jdk| (jdk, "dwarf", "perf"))
        .chain(jdks.first().map(|jdk| (jdk, "fp", "perf")))
        .chain(jdks.last().map(|jdk| (jdk, "dwarf", "timer")));
    for (jdk, cstack, engine) in runs {
        let what = format!("{} with cstack={cstack}, engine={engine}", jdk.name());
        let name = dir.join(format!("jdk{}-{cstack}-{engine}", jdk.major));
        let (file, report) = (name.with_extension("jfr"), name.with_extension("txt"));
        let options = format!(
            "file={},interval=1ms,signal={SIGNAL},cstack={cstack},engine={engine}",
            file.display()
        );
        let java = java_with_agent(jdk, &options, &[], 2.0, "w-native:native,w-java:java");
        let (status, output) = run_with_deadline(java, &guard, &report, &name);
        let report = GuardReport::read(&report);
        // First the allocations: the guard writes each at once, so they are there even if the
        // JVM hung (an allocating handler can deadlock in malloc) or died.
        let inside = report.lines("inside").len();
        assert!(
            inside == 0,
            "{what}: {inside} allocator calls inside the signal handler{}:\n{}",
            if status.is_none() {
                format!(" (and the JVM did not finish in {DEADLINE:?}: killed)")
            } else {
                String::new()
            },
            report.explain()
        );
        let status = status.unwrap_or_else(|| {
            panic!("{what}: the JVM did not finish in {DEADLINE:?}; killed\n{output}")
        });
        assert!(
            status.success(),
            "{what}: the JVM failed ({status}):\n{output}"
        );
        report.assert_armed(&what);
        assert_eq!(report.inside(), 0, "{what}");
        let samples = cpu_samples(&what, &file);
        eprintln!(
            "{what}: {samples} samples; guard: {}",
            report.lines("end").join(" ")
        );
        assert!(
            samples >= 200,
            "{what}: only {samples} samples: the handler hardly ran\n{output}"
        );
    }
}
