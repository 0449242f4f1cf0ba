//! With the agent a JVM behaves as it does without it: the small programs of
//! `testdata/stress/Parity.java` run on JDK 17 and JDK 25 with and without the agent (at 1 ms),
//! and must end the same way: exit code, stdout, the uncaught exception's line on stderr, and no
//! `hs_err` file with the agent where the run without it has none. Covered: System.exit,
//! uncaught exceptions, shutdown hooks, Runtime.halt, StackOverflowError in Java and through JNI
//! (caught, and uncaught), and SIGTERM. Each agent run must also leave a readable recording.

use std::path::Path;
use std::time::Duration;

use tests::jdk::{oracle_jdks, Jdk};
use tests::stress::{java, jfr_summary, run_dir, run_guarded, JvmRun};

/// A mode of the Parity program and the exit code it has without the agent.
struct Mode {
    name: &'static str,
    code: i32,
}

const fn mode(name: &'static str, code: i32) -> Mode {
    Mode { name, code }
}

/// Longest a parity run may take before it counts as hung (they take about a second).
const LIMIT: Duration = Duration::from_secs(120);

/// What must be the same with and without the agent.
#[derive(Debug, PartialEq, Eq)]
struct Outcome {
    /// Exit code (None: killed by a signal or hung).
    code: Option<i32>,
    stdout: String,
    /// The `Exception in thread ...` lines of stderr.
    uncaught: Vec<String>,
    /// Whether the JVM crashed (an hs_err file or the fatal error banner).
    crashed: bool,
}

impl Outcome {
    fn of(run: &JvmRun) -> Outcome {
        Outcome {
            code: run.code(),
            stdout: run.stdout.clone(),
            uncaught: run
                .stderr
                .lines()
                .filter(|l| l.starts_with("Exception in thread"))
                .map(str::to_string)
                .collect(),
            crashed: run.crashed(),
        }
    }
}

/// Sends SIGTERM to `pid` once `stdout` of its run says READY (the `sleep` mode).
fn terminate_when_ready(pid: u32, stdout: &Path) {
    let stdout = stdout.to_path_buf();
    std::thread::spawn(move || {
        for _ in 0..LIMIT.as_millis() / 50 {
            let text = std::fs::read_to_string(&stdout).unwrap_or_default();
            if text.lines().any(|l| l == "READY") {
                let pid = libc::pid_t::try_from(pid).unwrap_or(libc::pid_t::MAX);
                // SAFETY: kill has no memory-safety preconditions; `pid` is our child, alive
                // (it printed READY and then sleeps for ten minutes).
                unsafe { libc::kill(pid, libc::SIGTERM) };
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    });
}

/// Runs `mode` on `jdk`, with the agent or without; the run's directory is kept.
fn run_mode(jdk: &Jdk, mode: &Mode, agent: bool) -> Result<(JvmRun, Option<String>), String> {
    let name = format!(
        "jdk{}-{}-{}",
        jdk.major,
        mode.name,
        if agent { "agent" } else { "plain" }
    );
    let dir = run_dir("parity", &name);
    let jfr = dir.join("out.jfr");
    let options = format!("file={},interval=1ms", jfr.display());
    let mut cmd = java(jdk, agent.then_some(options.as_str()), &dir);
    cmd.arg("Parity").arg(mode.name);
    let stdout = dir.join("stdout");
    let run = run_guarded(&mut cmd, &dir, LIMIT, |pid| {
        if mode.name == "sleep" {
            terminate_when_ready(pid, &stdout);
        }
    })?;
    // The recording of an agent run that ended (a crash or hang is reported as such).
    let recording = (agent && run.status.is_some() && !run.crashed())
        .then(|| jfr_summary(jdk, &jfr).err())
        .flatten();
    Ok((run, recording))
}

/// Runs every mode on every JDK both ways; fails with every difference found.
fn assert_parity(modes: &[Mode]) {
    let mut errors = Vec::new();
    for jdk in oracle_jdks() {
        for mode in modes {
            let what = format!("{} Parity {}", jdk.name(), mode.name);
            let (plain, with_agent) =
                match (run_mode(&jdk, mode, false), run_mode(&jdk, mode, true)) {
                    (Ok((plain, _)), Ok(agent)) => (plain, agent),
                    (Err(e), _) | (_, Err(e)) => {
                        errors.push(format!("{what}: {e}"));
                        continue;
                    }
                };
            let (agent, recording) = with_agent;
            let (p, a) = (Outcome::of(&plain), Outcome::of(&agent));
            eprintln!(
                "{what}: without the agent {:?} in {:.1} s, with it {:?} in {:.1} s",
                p.code,
                plain.wall.as_secs_f64(),
                a.code,
                agent.wall.as_secs_f64()
            );
            // The program itself must do what the test expects of it.
            if p.code != Some(mode.code) || p.crashed {
                errors.push(format!(
                    "{what} without the agent: expected exit code {}, got: {}",
                    mode.code,
                    plain.describe()
                ));
                continue;
            }
            if a != p {
                errors.push(format!(
                    "{what}: with the agent {a:?}\nwithout it {p:?}\nthe agent's run: {}",
                    agent.describe()
                ));
            }
            if let Some(e) = recording {
                errors.push(format!("{what}: the agent's recording: {e}"));
            }
        }
    }
    assert!(errors.is_empty(), "{}", errors.join("\n\n"));
}

#[test]
fn exit_codes_hooks_and_uncaught_exceptions_match() {
    assert_parity(&[
        mode("ok", 0),
        mode("exit3", 3),
        mode("throw", 1),
        mode("hook", 4),
        mode("halt", 7),
    ]);
}

#[test]
fn stack_overflow_handling_matches() {
    assert_parity(&[
        mode("soe-java", 0),
        mode("soe-jni", 0),
        mode("soe-uncaught", 1),
    ]);
}

#[test]
fn sigterm_matches() {
    // 128 + SIGTERM: the JVM runs its shutdown hooks and exits with that code.
    assert_parity(&[mode("sleep", 143)]);
}
