//! `jfrnative attach` from the host to a JVM in a container-like sandbox (its own PID and mount
//! namespaces, a chroot of bind mounts, a private `/tmp`: `testdata/sandbox/run.sh`), as root
//! and as an unprivileged user inside. The JVM runs the bundled demo (our C `mix`, zlib's
//! `deflate`, libc's `msort_with_tmp`, Java) with its JNI library at `/opt/jfrnative-sbx-TEST-PID/`
//! inside the sandbox only; the same path on the host holds a decoy: another library of the same
//! name, of another build. Checked:
//!
//! - samples from each of the demo's four busy threads;
//! - `mix` (the JNI library that exists only inside), `deflate` and `msort_with_tmp` named in the
//!   symbolized JFR: read through the container's root, never from the host's decoy;
//! - after the JVM is gone: with `--sysroot` on the libraries `jfrnative` kept, the same names;
//!   without it, `mix` is not named (the decoy's build-id differs, so it is not used);
//! - a second attach to the same JVM works, and nothing of either is left in its `/tmp`;
//! - `-o DIR/ --upload`: every chunk file read from the container's `/tmp` and sent;
//! - a JVM whose `/tmp` is read-only: exit 1 and one line that says why;
//! - a JVM killed while recorded: every chunk it finished is kept on the host.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output};
use std::time::{Duration, Instant};

use serde_json::Value;

use tests::jdk::{missing, oracle_jdks, Jdk};
use tests::otlp_endpoint::{FakeEndpoint, Plan};
use tests::readers::{chunk_files, run};
use tests::sandbox::Sandbox;
use tests::stress::jfr_summary;
use tests::workload::{jfrnative_demo, tool_binary, workload_dir};

/// The demo's threads that burn CPU.
const THREADS: [&str; 4] = ["c-checksum", "zlib-compress", "libc-qsort", "java-hashmap"];

fn work_dir(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("jfrnative-sbx-{}-{test}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A JDK whose files the sandbox has (it mounts the host's /usr); when none is there, says so
/// through [`missing`] (a panic where missing tools fail the tests).
fn sandbox_jdk() -> Option<Jdk> {
    let found = oracle_jdks()
        .into_iter()
        .find(|j| j.home.starts_with("/usr/"));
    if found.is_none() {
        missing(
            "a JDK under /usr/ (the sandbox mounts only the host's /usr)",
            "the container attach tests",
        );
    }
    found
}

/// The demo built for `jdk` (its class and JNI library) in `work/demo/build`.
fn demo_build(jdk: &Jdk, work: &Path) -> PathBuf {
    jfrnative_demo(jdk, &work.join("demo"), &["-d", "1s"]);
    work.join("demo/build")
}

/// The decoy at the app's path on the host (another library named like the demo's: the
/// workload's `libburner.so`), removed when dropped.
struct Decoy(PathBuf);

impl Decoy {
    fn at(dir: &Path) -> Decoy {
        std::fs::create_dir_all(dir).unwrap();
        std::fs::copy(
            workload_dir().join("libburner.so"),
            dir.join("libjfrnative_demo.so"),
        )
        .unwrap();
        Decoy(dir.to_path_buf())
    }
}

impl Drop for Decoy {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The demo in a sandbox for `test`, as `user` (`uid:gid`), its `/tmp` read-only when
/// `read_only_tmp`, its JNI library at `/opt/jfrnative-sbx-TEST-PID` inside: the JDK, the test's
/// work directory, that path, and the sandbox. `None` when sandboxes cannot be made here.
fn sandboxed_demo(
    test: &str,
    user: &str,
    read_only_tmp: bool,
) -> Option<(Jdk, PathBuf, String, Sandbox)> {
    if !Sandbox::available() {
        return None;
    }
    let jdk = sandbox_jdk()?;
    let work = work_dir(test);
    let app = format!("/opt/jfrnative-sbx-{test}-{}", std::process::id());
    let build = demo_build(&jdk, &work);
    let sandbox = Sandbox::start(
        &work.join("root"),
        user,
        read_only_tmp,
        &[(&build, &app)],
        &jdk.tool("java"),
        &[
            "--enable-native-access=ALL-UNNAMED".into(),
            format!("-Djava.library.path={app}"),
            "-cp".into(),
            app.clone(),
            "JfrNativeDemo".into(),
            "120".into(),
        ],
    );
    Some((jdk, work, app, sandbox))
}

fn attach(pid: u32, seconds: u32, output: &Path) -> Output {
    attach_with(pid, seconds, &[], output)
}

/// [`attach`] with more of `jfrnative attach`'s flags.
fn attach_with(pid: u32, seconds: u32, flags: &[&str], output: &Path) -> Output {
    Command::new(tool_binary("jfrnative"))
        .env_remove("DEBUGINFOD_URLS")
        .arg("attach")
        .arg(pid.to_string())
        .args(["-d", &format!("{seconds}s")])
        .args(flags)
        .arg("-o")
        .arg(output)
        .output()
        .unwrap()
}

/// `jfr-symbolize INPUT --format json` with `args`.
fn report(input: &Path, args: &[&str]) -> Value {
    let json = run(Command::new(tool_binary("jfr-symbolize"))
        .env_remove("DEBUGINFOD_URLS")
        .arg(input)
        .args(["-q", "--format", "json"])
        .args(args))
    .unwrap_or_else(|e| panic!("{e}"));
    serde_json::from_str(&json).unwrap()
}

/// The names of the report's native functions with CPU time.
fn native_names(report: &Value) -> Vec<String> {
    let frames = report["frames"].as_array().unwrap();
    report["nativeFunctions"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["total"]["cpuNanos"].as_u64().unwrap_or(0) > 0)
        .map(|f| {
            frames[f["frame"].as_u64().unwrap() as usize]["name"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect()
}

/// Samples per thread name in the report.
fn thread_samples(report: &Value, name: &str) -> u64 {
    report["threads"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["name"] == name)
        .map(|t| t["weight"]["samples"].as_u64().unwrap())
        .sum()
}

/// The stack frames `jfr print` shows for the symbolized file's CPU samples.
fn symbolized_text(jdk: &Jdk, file: &Path) -> String {
    run(Command::new(jdk.tool("jfr"))
        .args([
            "print",
            "--events",
            "jdk.CPUTimeSample",
            "--stack-depth",
            "64",
        ])
        .arg(file))
    .unwrap_or_else(|e| panic!("{e}"))
}

/// Checks one attach's recording: every busy thread, the three native names, from the
/// container's files.
fn assert_recording(jdk: &Jdk, out: &Output, recording: &Path) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "jfrnative attach: {stderr}");
    assert!(
        stderr.contains("has a root filesystem of its own"),
        "{stderr}"
    );
    let libs = recording.with_extension("libs");
    let json = report(recording, &["--sysroot", libs.to_str().unwrap()]);
    for thread in THREADS {
        assert!(thread_samples(&json, thread) > 0, "no samples of {thread}");
    }
    let names = native_names(&json);
    for name in ["mix", "deflate", "msort_with_tmp"] {
        assert!(names.iter().any(|n| n == name), "{name} not in {names:?}");
    }
    assert!(
        !names.iter().any(|n| n.starts_with("level")),
        "a name from the host's decoy: {names:?}"
    );
    // In the symbolized JFR, as `jfr print` shows a native frame: `library.function()`.
    let symbolized = symbolized_text(jdk, &recording.with_extension("symbolized.jfr"));
    for frame in [
        "libjfrnative_demo.so.mix()",
        "deflate()",
        "libc.so.6.msort_with_tmp()",
    ] {
        assert!(
            symbolized.contains(frame),
            "{frame} not in the symbolized JFR"
        );
    }
}

/// Whether `name` in a JVM's /tmp is its Flight Recorder's repository
/// (`YYYY_MM_DD_HH_MM_SS_PID`), which the JVM keeps until it exits.
fn is_jfr_repository(name: &str) -> bool {
    name.len() > 20
        && name.starts_with("20")
        && name.bytes().all(|b| b.is_ascii_digit() || b == b'_')
}

/// Nothing of jfrnative's in the JVM's /tmp: only what the JVM keeps itself (its attach socket,
/// its perf data, and its own Flight Recorder's repository once `--jdk-events` started it).
fn assert_tmp_clean(sandbox: &Sandbox) {
    let left: Vec<String> = sandbox
        .tmp_entries()
        .into_iter()
        .filter(|n| !n.starts_with(".java_pid") && !n.starts_with("hsperfdata_"))
        .filter(|n| !is_jfr_repository(n))
        .collect();
    assert!(left.is_empty(), "left in the JVM's /tmp: {left:?}");
}

#[test]
fn attach_into_a_container_as_root_names_its_libraries_and_leaves_nothing() {
    let Some((jdk, work, app, sandbox)) = sandboxed_demo("root", "0:0", false) else {
        return;
    };
    let _decoy = Decoy::at(Path::new(&app));
    let first = work.join("first.jfr");
    let out = attach(sandbox.pid, 4, &first);
    assert_recording(&jdk, &out, &first);
    assert_tmp_clean(&sandbox);
    // Again, into the same JVM (its agent is loaded already, from the same staged path).
    let second = work.join("second.jfr");
    let out = attach(sandbox.pid, 3, &second);
    assert_recording(&jdk, &out, &second);
    assert_tmp_clean(&sandbox);
    drop(sandbox);
    // The JVM is gone: the kept libraries still name its frames; the host's decoy never does.
    let libs = first.with_extension("libs");
    let names = native_names(&report(&first, &["--sysroot", libs.to_str().unwrap()]));
    assert!(names.iter().any(|n| n == "mix"), "{names:?}");
    let names = native_names(&report(&first, &[]));
    assert!(
        !names.iter().any(|n| n == "mix" || n.starts_with("level")),
        "without the container's files, {app}/libjfrnative_demo.so must not be named from the \
         host's copy: {names:?}"
    );
    let _ = std::fs::remove_dir_all(&work);
}

#[test]
fn attach_into_a_container_whose_jvm_runs_as_nobody() {
    // The demo's build directory is read by the JVM's user (it is created world-readable).
    let Some((jdk, work, _, sandbox)) = sandboxed_demo("nobody", "65534:65534", false) else {
        return;
    };
    let status = std::fs::read_to_string(format!("/proc/{}/status", sandbox.pid)).unwrap();
    assert!(
        status
            .lines()
            .any(|l| l.starts_with("Uid:") && l.contains("65534")),
        "{status}"
    );
    let recording = work.join("nobody.jfr");
    let out = attach(sandbox.pid, 4, &recording);
    assert_recording(&jdk, &out, &recording);
    assert_tmp_clean(&sandbox);
    // Again, into a directory of chunk files sent while they are written: every chunk file
    // arrives, the last ones too (they are taken before the staged directory goes).
    let endpoint = FakeEndpoint::start(Plan {
        unavailable: Duration::ZERO,
        stalled_until: Duration::ZERO,
        stall_for: Duration::ZERO,
    });
    let dir = work.join("chunks");
    let out = Command::new(tool_binary("jfrnative"))
        .env_remove("DEBUGINFOD_URLS")
        .arg("attach")
        .arg(sandbox.pid.to_string())
        .args(["-d", "4s", "--chunk", "1s", "--upload", &endpoint.url, "-o"])
        .arg(format!("{}/", dir.display()))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let chunks = chunk_files(&dir).len();
    assert!(chunks >= 3, "{chunks} chunk files");
    assert!(
        stderr.contains(&format!("upload: {chunks} chunk(s) sent")),
        "{stderr}"
    );
    assert_eq!(endpoint.requests().len(), chunks);
    assert_tmp_clean(&sandbox);
    drop(sandbox);
    let _ = std::fs::remove_dir_all(&work);
}

#[test]
fn a_container_with_a_read_only_tmp_gets_one_line_that_says_why() {
    let Some((_, work, _, sandbox)) = sandboxed_demo("readonly", "0:0", true) else {
        return;
    };
    let out = attach(sandbox.pid, 2, &work.join("ro.jfr"));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    let lines: Vec<&str> = stderr.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(lines.len(), 1, "{stderr}");
    assert!(
        lines[0].contains("Read-only file system") && lines[0].contains("writable /tmp"),
        "{stderr}"
    );
    drop(sandbox);
    let _ = std::fs::remove_dir_all(&work);
}

/// Waits until `jvm` catches SIGQUIT (bit 3 of `SigCgt` in `/proc/PID/status`): HotSpot has
/// installed its handlers, so it is a JVM that takes an attach. Panics after 60 s or if it
/// exits.
fn wait_until_it_catches_sigquit(jvm: &mut Child) {
    let status = format!("/proc/{}/status", jvm.id());
    let started = Instant::now();
    let deadline = started + Duration::from_secs(60);
    loop {
        let caught = std::fs::read_to_string(&status).is_ok_and(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("SigCgt:"))
                .and_then(|m| u64::from_str_radix(m.trim(), 16).ok())
                .is_some_and(|m| m & (1 << (libc::SIGQUIT - 1)) != 0)
        });
        if caught {
            eprintln!("the JVM catches SIGQUIT after {:?}", started.elapsed());
            return;
        }
        if let Ok(Some(exit)) = jvm.try_wait() {
            panic!("the JVM exited before it could be attached to: {exit}");
        }
        assert!(
            Instant::now() < deadline,
            "the JVM does not catch SIGQUIT after 60 s"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Waits until `dir` holds `n` chunk files (the host keeps only finished ones: `*.jfr`, copied
/// whole), while `attach` runs. Panics after 60 s or if `attach` ends first.
fn wait_for_chunk_files(dir: &Path, n: usize, attach: &mut Child) {
    let started = Instant::now();
    let deadline = started + Duration::from_secs(60);
    while !dir.is_dir() || chunk_files(dir).len() < n {
        if let Ok(Some(exit)) = attach.try_wait() {
            panic!("jfrnative attach ended ({exit}) before {n} chunk files were finished");
        }
        assert!(
            Instant::now() < deadline,
            "fewer than {n} chunk files finished after 60 s"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    eprintln!("{n} chunk files finished after {:?}", started.elapsed());
}

/// A JVM on the host that runs as another user (`nobody`), attached as root: the agent and the
/// recording go through its /tmp, owned by its user.
#[test]
fn attach_to_a_jvm_of_another_user_as_root() {
    if !Sandbox::available() {
        return;
    }
    let Some(jdk) = sandbox_jdk() else { return };
    let work = work_dir("user");
    let classes = workload_dir();
    let mut jvm = Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .arg(jdk.tool("java"))
        .arg(format!("-Djava.library.path={}", classes.display()))
        .arg("-cp")
        .arg(&classes)
        .args(["Burner", "60", "u-native:native,u-java:java"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Its attach needs a running JVM: until setpriv has exec'd java, the process is not one.
    wait_until_it_catches_sigquit(&mut jvm);
    let recording = work.join("user.jfr");
    let jvm_pid = jvm.id();
    let out = attach(jvm_pid, 3, &recording);
    let _ = jvm.kill();
    let _ = jvm.wait();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("runs as uid 65534"), "{stderr}");
    let json = report(&recording, &[]);
    for thread in ["u-native", "u-java"] {
        assert!(thread_samples(&json, thread) > 0, "no samples of {thread}");
    }
    let names = native_names(&json);
    assert!(names.iter().any(|n| n == "level3"), "{names:?}");
    // The stage (`jfrnative-` and 24 random hex digits) is gone from /tmp.
    let left: Vec<String> = std::fs::read_dir("/tmp")
        .unwrap()
        .filter_map(|e| Some(e.ok()?.file_name().to_string_lossy().into_owned()))
        .filter(|n| {
            n.strip_prefix("jfrnative-")
                .is_some_and(|h| h.len() == 24 && h.bytes().all(|b| b.is_ascii_hexdigit()))
        })
        .collect();
    assert!(left.is_empty(), "{left:?}");
    let _ = std::fs::remove_dir_all(&work);
}

/// A container's JVM killed while it is recorded: its /tmp goes with it, but every chunk it had
/// finished is on the host, readable by the JDK's own reader.
#[test]
fn a_container_jvm_killed_mid_recording_leaves_its_finished_chunks() {
    let Some((jdk, work, _, sandbox)) = sandboxed_demo("killed", "0:0", false) else {
        return;
    };
    let dir = work.join("chunks");
    let attach = Command::new(tool_binary("jfrnative"))
        .env_remove("DEBUGINFOD_URLS")
        .arg("attach")
        .arg(sandbox.pid.to_string())
        .args(["-d", "60s", "--chunk", "1s", "-o"])
        .arg(format!("{}/", dir.display()))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut attach = attach;
    wait_for_chunk_files(&dir, 2, &mut attach);
    drop(sandbox);
    let out = attach.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("ended with it"), "{stderr}");
    let chunks = chunk_files(&dir);
    assert!(chunks.len() >= 2, "{} chunk files: {stderr}", chunks.len());
    for chunk in &chunks {
        let read = Command::new(jdk.tool("jfr"))
            .arg("summary")
            .arg(chunk)
            .output()
            .unwrap();
        assert!(
            read.status.success(),
            "{}: {}",
            chunk.display(),
            String::from_utf8_lossy(&read.stderr)
        );
        assert!(String::from_utf8_lossy(&read.stdout).contains("jdk.CPUTimeSample"));
    }
    let _ = std::fs::remove_dir_all(&work);
}

/// `--jdk-events` into a container whose JVM runs as `nobody`: the JDK's own recording is
/// written into the stage by the JVM and read back through the stage's descriptor; both kinds
/// of events are in the one recording.
#[test]
fn attach_into_a_container_with_the_jdks_own_events() {
    let Some((jdk, work, _, sandbox)) = sandboxed_demo("jdkevents", "65534:65534", false) else {
        return;
    };
    let recording = work.join("events.jfr");
    let out = attach_with(sandbox.pid, 4, &["--jdk-events=default"], &recording);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert_tmp_clean(&sandbox);
    drop(sandbox);
    let summary = jfr_summary(&jdk, &recording).unwrap_or_else(|e| panic!("{e}"));
    let count = |name: &str| summary.get(name).copied().unwrap_or(0);
    assert!(count("jdk.CPUTimeSample") > 100, "{summary:?}");
    // The JDK's periodic events of those 4 s (jdk.CPULoad: every second).
    assert!(count("jdk.CPULoad") >= 2, "{summary:?}");
    let _ = std::fs::remove_dir_all(&work);
}

/// The JNI library of `testdata/deleted_lib` (built without frame pointers) and its class,
/// built for `jdk` into `dir`.
fn gone_build(jdk: &Jdk, dir: &Path) -> PathBuf {
    let src = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../testdata/deleted_lib");
    let build = dir.join("gone");
    std::fs::create_dir_all(&build).unwrap();
    let include = jdk.home.join("include");
    run(Command::new("gcc")
        .args(["-O2", "-fomit-frame-pointer", "-shared", "-fPIC"])
        .arg(format!("-I{}", include.display()))
        .arg(format!("-I{}", include.join("linux").display()))
        .arg("-o")
        .arg(build.join("libgone.so"))
        .arg(src.join("gone.c")))
    .unwrap_or_else(|e| panic!("{e}"));
    let javac = tests::jdk::javac_for(jdk).expect("a javac");
    run(Command::new(javac)
        .args(["--release", "11", "-d"])
        .arg(&build)
        .arg(src.join("Gone.java")))
    .unwrap_or_else(|e| panic!("{e}"));
    build
}

/// A library unpacked into the container's `/tmp`, loaded and deleted at once (as Netty's
/// loader does), in a JVM of another user: the agent rebuilds it from memory in the stage, and
/// `jfrnative attach` copies it out, so that its functions are named and its frames unwound
/// (whole Java stacks) after the JVM and its `/tmp` are gone.
#[test]
fn attach_into_a_container_names_a_library_deleted_after_loading() {
    if !Sandbox::available() {
        return;
    }
    let Some(jdk) = sandbox_jdk() else {
        return;
    };
    let work = work_dir("gone");
    let build = gone_build(&jdk, &work);
    let app = format!("/opt/jfrnative-sbx-gone-{}", std::process::id());
    let sandbox = Sandbox::start(
        &work.join("root"),
        "65534:65534",
        false,
        &[(&build, &app)],
        &jdk.tool("java"),
        &[
            "-cp".into(),
            app.clone(),
            "Gone".into(),
            format!("{app}/libgone.so"),
            "120".into(),
        ],
    );
    let recording = work.join("gone.jfr");
    // At 2 ms: enough samples in the library even when the test runs beside others.
    let out = attach_with(sandbox.pid, 4, &["-i", "2ms"], &recording);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "jfrnative attach: {stderr}");
    // Loaded before the attach: copied whole from the JVM's mapping by root.
    assert!(stderr.contains("copied from its mappings"), "{stderr}");
    assert_tmp_clean(&sandbox);
    drop(sandbox);
    let json = report(&recording, &[]);
    let names = native_names(&json);
    // (Java_Gone_spin tail-calls gone_outer at -O2: it is on no stack.)
    for name in ["gone_mix", "gone_inner", "gone_outer"] {
        assert!(names.iter().any(|n| n == name), "{name} not in {names:?}");
    }
    // Every sample in the library's innermost function keeps its native chain (the library's
    // unwind table: it has no frame pointers) out to gone_outer, and its whole Java stack.
    let frames = json["frames"].as_array().unwrap();
    let name_of = |id: &Value| {
        frames[id.as_u64().unwrap() as usize]["name"]
            .as_str()
            .unwrap()
    };
    let (mut inside, mut chained, mut whole) = (0u64, 0u64, 0u64);
    for stack in json["stacks"].as_array().unwrap() {
        let ids = stack["frames"].as_array().unwrap();
        let samples = stack["weight"]["samples"].as_u64().unwrap();
        if ids.iter().any(|id| name_of(id) == "gone_mix") {
            inside += samples;
            if ids.iter().any(|id| name_of(id) == "gone_outer") {
                chained += samples;
            }
            if ids.iter().any(|id| name_of(id) == "Gone.main") {
                whole += samples;
            }
        }
    }
    assert!(inside > 100, "{inside} samples in gone_mix");
    assert!(
        chained as f64 >= 0.99 * inside as f64,
        "{chained} of {inside} reach gone_outer"
    );
    assert!(
        whole as f64 >= 0.99 * inside as f64,
        "{whole} of {inside} whole"
    );
    let _ = std::fs::remove_dir_all(&work);
}

/// The JVMs a sandbox can run (it mounts the host's `/usr`): JDK 17 and 25.
fn sandbox_jdks() -> Vec<Jdk> {
    let found: Vec<Jdk> = oracle_jdks()
        .into_iter()
        .filter(|j| j.home.starts_with("/usr/"))
        .collect();
    if found.len() < 2 {
        missing(
            "JDK 17 and 25 under /usr/ (the sandbox mounts only the host's /usr)",
            "the container attach tests of jar libraries",
        );
    }
    found
}

/// Waits until every library of `parts` is mapped by the JVM `pid` (its loaders ran).
fn wait_for_libraries(pid: u32, libs: &[&tests::mavenlibs::MavenLib]) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let maps = std::fs::read_to_string(format!("/proc/{pid}/maps")).unwrap_or_default();
        if libs
            .iter()
            .all(|l| maps.lines().any(|line| l.matches(line)))
        {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "not all of {libs:?} mapped: {maps}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Jar libraries in a container, attached to after they were loaded (as a user who attaches to
/// a running service does): netty-tcnative and zstd-jni deleted right after loading (their
/// files reach the host only through the kernel's `/proc/PID/map_files`, whole, with the
/// `.symtab` that names their hot code), lz4-java on disk until the JVM exits. On JDK 17 and
/// 25, with the JVM as nobody: after the JVM and its `/tmp` are gone, their frames are named as
/// `nm` of the jars' files names them, and the Java stacks in them are whole.
#[test]
fn attach_into_a_container_names_jar_libraries_loaded_before() {
    if !Sandbox::available() {
        return;
    }
    let Some(class_path) = tests::jdk::third_party_reader(
        "MAVENLIBS_CP",
        "the container attach test of jar libraries",
    ) else {
        return;
    };
    let built = tests::mavenlibs::built(&class_path).unwrap_or_else(|e| panic!("{e}"));
    let jars = Path::new(class_path.split(':').next().unwrap())
        .parent()
        .unwrap()
        .to_path_buf();
    let libs: Vec<_> = ["tcnative", "zstd", "lz4"]
        .iter()
        .filter_map(|k| tests::mavenlibs::LIBRARIES.iter().find(|l| l.key == *k))
        .collect();
    let tables = tests::maven_figures::symbol_tables(&built, &libs);
    for jdk in sandbox_jdks() {
        let work = work_dir(&format!("jars{}", jdk.major));
        let mut args = vec![
            "-Dnativelibs.keystore=/opt/app/tls.p12".to_string(),
            "-cp".into(),
            "/opt/jars/*:/opt/app".into(),
            "NativeLibs".into(),
            "120".into(),
            "tls,zstd,lz4".into(),
        ];
        if jdk.major >= 22 {
            args.insert(0, "--enable-native-access=ALL-UNNAMED".into());
        }
        let sandbox = Sandbox::start(
            &work.join("root"),
            "65534:65534",
            false,
            &[(&built.dir, "/opt/app"), (&jars, "/opt/jars")],
            &jdk.tool("java"),
            &args,
        );
        wait_for_libraries(sandbox.pid, &libs);
        let recording = work.join("jars.jfr");
        let out = attach_with(sandbox.pid, 4, &["-i", "2ms"], &recording);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "JDK {}: {stderr}", jdk.major);
        assert!(stderr.contains("copied from its mappings"), "{stderr}");
        drop(sandbox);
        let after = work.join("after.symbolized.jfr");
        tests::workload::jfr_symbolize_ok(&recording, &["-q", "-o", after.to_str().unwrap()]);
        let (samples, ranges) = tests::maven_figures::read(&jdk, &recording, &after);
        let figures = tests::maven_figures::figures(&samples, &ranges, &tables);
        for lib in &libs {
            let f = figures.get(&(lib.key, true)).copied().unwrap_or_default();
            let what = format!("JDK {}: {}", jdk.major, lib.key);
            eprintln!("{what}: {}", f.line());
            assert!(f.reach >= 100 && f.nameable >= 50, "{what}: {}", f.line());
            assert!(
                f.named as f64 >= 0.85 * f.nameable as f64,
                "{what}: {}",
                f.line()
            );
            assert_eq!(f.wrong, 0, "{what}: {}", f.line());
            assert!(
                f.whole as f64 >= 0.99 * f.reach as f64,
                "{what}: {}",
                f.line()
            );
        }
        let _ = std::fs::remove_dir_all(&work);
    }
}
