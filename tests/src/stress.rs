//! The stress and parity programs (`testdata/stress`), built by the tests, and guarded runs of
//! a JVM: each in its own directory, with a limit after which a run counts as hung and is
//! killed, and a look for the `hs_err_pid*.log` a crash leaves.

use std::collections::BTreeMap;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use crate::jdk::{find, javac_for, Jdk};
use crate::readers::run;
use crate::workload::{agent_library, repo};

/// A directory with `libstress.so`, `libchurn0.so` to `libchurn3.so`, `sigsender` and the
/// classes of `Stress`, `Parity` and `Jni`, built by `testdata/stress/build.sh` once per test
/// process.
pub fn stress_dir() -> PathBuf {
    static BUILT: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    BUILT
        .get_or_init(|| {
            let jdk = find(17).or_else(|| find(25)).ok_or("no JDK")?;
            // A JDK with javac and the JNI headers: the javac's own.
            let javac = javac_for(&jdk).ok_or("no javac")?;
            let home = javac
                .parent()
                .and_then(Path::parent)
                .ok_or("javac outside a JDK")?;
            let dir = std::env::temp_dir().join(format!("jfrnative-stress-{}", std::process::id()));
            run(Command::new("bash")
                .arg(repo().join("testdata/stress/build.sh"))
                .arg(&dir)
                .env("JAVA_HOME", home))?;
            Ok(dir)
        })
        .clone()
        .unwrap_or_else(|e| panic!("building the stress programs: {e}"))
}

/// The signal the stress runs give the agent (`signal=`) and the sender sends: SIGRTMIN+5.
pub fn agent_signal() -> i32 {
    libc::SIGRTMIN() + 5
}

/// `java` of `jdk` with the agent (if `agent_options` is given, with `file=` and the rest),
/// `-XX:ErrorFile` in `dir`, no core dump, and the stress directory as class and library path;
/// add JVM options, the main class and its arguments. Runs in `dir`.
pub fn java(jdk: &Jdk, agent_options: Option<&str>, dir: &Path) -> Command {
    let mut cmd = Command::new(jdk.tool("java"));
    cmd.current_dir(dir)
        .arg(format!(
            "-XX:ErrorFile={}",
            dir.join("hs_err_pid%p.log").display()
        ))
        .arg("-XX:-CreateCoredumpOnCrash");
    if let Some(options) = agent_options {
        cmd.arg(format!(
            "-agentpath:{}={options}",
            agent_library().display()
        ));
    }
    let programs = stress_dir();
    cmd.arg(format!("-Djava.library.path={}", programs.display()))
        .arg("-cp")
        .arg(programs);
    cmd
}

/// How a guarded run ended.
#[derive(Debug)]
pub struct JvmRun {
    /// The exit status; None if the run hung and was killed.
    pub status: Option<ExitStatus>,
    /// Its stdout.
    pub stdout: String,
    /// Its stderr.
    pub stderr: String,
    /// The `hs_err_pid*.log` files in its directory.
    pub hs_err: Vec<PathBuf>,
    /// Whether HotSpot printed its fatal error banner (which comes before the hs_err file, and
    /// without one when the report gets stuck on a lock that a crashed thread holds).
    pub fatal_error: bool,
    /// Wall time.
    pub wall: Duration,
}

impl JvmRun {
    /// Whether the JVM crashed: an hs_err file or the fatal error banner.
    pub fn crashed(&self) -> bool {
        self.fatal_error || !self.hs_err.is_empty()
    }

    /// The exit code, if the JVM exited (rather than died of a signal or hung).
    pub fn code(&self) -> Option<i32> {
        self.status.and_then(|s| s.code())
    }

    /// A description of how it ended, for messages: exit code or signal, hang, hs_err files
    /// with their "Problematic frame", the last lines of stdout and stderr.
    pub fn describe(&self) -> String {
        use std::os::unix::process::ExitStatusExt;
        let end = match self.status {
            None => format!("hung (killed after {:.0} s)", self.wall.as_secs_f64()),
            Some(s) => match (s.code(), s.signal()) {
                (Some(c), _) => format!("exit code {c}"),
                (None, Some(sig)) => format!("killed by signal {sig}"),
                (None, None) => format!("{s}"),
            },
        };
        let mut text = end;
        if self.fatal_error && self.hs_err.is_empty() {
            text += "\nfatal error banner, no hs_err file";
        }
        for f in &self.hs_err {
            let report = std::fs::read_to_string(f).unwrap_or_default();
            let frame: Vec<&str> = report
                .lines()
                .skip_while(|l| !l.starts_with("# Problematic frame"))
                .take(2)
                .collect();
            text += &format!("\n{}: {}", f.display(), frame.join(" "));
        }
        // HotSpot prints a line per thread that crashes while another reports: count them.
        let tail = |s: &str| -> String {
            let also = |l: &&str| l.starts_with("[thread ") && l.ends_with(" also had an error]");
            let lines: Vec<&str> = s.lines().filter(|l| !also(l)).collect();
            let mut text = lines[lines.len().saturating_sub(12)..].join("\n");
            let n = s.lines().filter(also).count();
            if n > 0 {
                text += &format!("\n({n} more threads \"also had an error\")");
            }
            text
        };
        text + &format!(
            "\n--- stdout (end)\n{}\n--- stderr (end)\n{}",
            tail(&self.stdout),
            tail(&self.stderr)
        )
    }
}

/// The `hs_err_pid*.log` files in `dir`.
pub fn hs_err_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .map(|e| e.path())
                .filter(|p| {
                    p.file_name()
                        .and_then(|n| n.to_str())
                        .is_some_and(|n| n.starts_with("hs_err_pid") && n.ends_with(".log"))
                })
                .collect()
        })
        .unwrap_or_default();
    files.sort();
    files
}

/// How long a JVM that reported a crash may take to end before it counts as hung (a crash
/// report that waits for a lock a crashed thread holds never ends).
pub const AFTER_CRASH: Duration = Duration::from_secs(30);

/// Runs `cmd` to its end with stdout and stderr in `dir/stdout` and `dir/stderr`; if it is
/// still running after `limit`, or [`AFTER_CRASH`] after it reported a crash, kills it
/// (SIGKILL) and reports it as hung. `started` is called with the child's pid once it runs (for
/// runs that need signalling).
pub fn run_guarded(
    cmd: &mut Command,
    dir: &Path,
    limit: Duration,
    started: impl FnOnce(u32),
) -> Result<JvmRun, String> {
    let out = File::create(dir.join("stdout")).map_err(|e| e.to_string())?;
    let err = File::create(dir.join("stderr")).map_err(|e| e.to_string())?;
    let start = Instant::now();
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        .spawn()
        .map_err(|e| format!("{cmd:?}: {e}"))?;
    started(child.id());
    let mut crashed: Option<Instant> = None;
    let status = loop {
        if let Some(status) = child.try_wait().map_err(|e| e.to_string())? {
            break Some(status);
        }
        if crashed.is_none() && crash_reported(dir) {
            crashed = Some(Instant::now());
        }
        if start.elapsed() > limit || crashed.is_some_and(|t| t.elapsed() > AFTER_CRASH) {
            // Killing is all that is left; a failed kill means it ended meanwhile.
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let wall = start.elapsed();
    let read = |name: &str| std::fs::read_to_string(dir.join(name)).unwrap_or_default();
    let (stdout, stderr) = (read("stdout"), read("stderr"));
    Ok(JvmRun {
        status,
        fatal_error: stdout.contains(FATAL_ERROR) || stderr.contains(FATAL_ERROR),
        stdout,
        stderr,
        hs_err: hs_err_files(dir),
        wall,
    })
}

/// The first line of HotSpot's fatal error report, on stdout.
const FATAL_ERROR: &str = "A fatal error has been detected by the Java Runtime Environment";

/// Whether the run in `dir` has an hs_err file or printed the fatal error banner.
fn crash_reported(dir: &Path) -> bool {
    let printed = |name: &str| {
        std::fs::read_to_string(dir.join(name)).is_ok_and(|text| text.contains(FATAL_ERROR))
    };
    !hs_err_files(dir).is_empty() || printed("stdout") || printed("stderr")
}

/// Event counts per type from `jfr summary` of `jdk`; an error if it cannot read the file.
pub fn jfr_summary(jdk: &Jdk, file: &Path) -> Result<BTreeMap<String, u64>, String> {
    let text = run(Command::new(jdk.tool("jfr")).arg("summary").arg(file))?;
    // The table: " jdk.CPUTimeSample    1071    15178".
    Ok(text
        .lines()
        .filter_map(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            match w.as_slice() {
                [name, count, _size] if name.contains('.') => {
                    Some((name.to_string(), count.parse().ok()?))
                }
                _ => None,
            }
        })
        .collect())
}

/// A fresh directory for one run: `<temp>/jfrnative-<test>-<pid>/<name>`.
pub fn run_dir(test: &str, name: &str) -> PathBuf {
    let dir = std::env::temp_dir()
        .join(format!("jfrnative-{test}-{}", std::process::id()))
        .join(name);
    // A leftover from an earlier run with the same pid would confuse the hs_err check.
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    dir
}
