//! The bundled Java + JNI workload (`testdata/java`), built by the tests, and runs of it with
//! the agent.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

use crate::jdk::{find, Jdk};
use crate::readers::run;

/// The workspace root.
pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Whether `name` is a variable Cargo sets for the test (or binary) it runs, about that
/// package: `CARGO_MANIFEST_DIR`, `CARGO_PKG_NAME`, ...
fn package_variable(name: &str) -> bool {
    matches!(
        name,
        "CARGO_MANIFEST_DIR"
            | "CARGO_MANIFEST_PATH"
            | "CARGO_MANIFEST_LINKS"
            | "CARGO_CRATE_NAME"
            | "CARGO_BIN_NAME"
            | "CARGO_PRIMARY_PACKAGE"
            | "CARGO_TARGET_TMPDIR"
    ) || name.starts_with("CARGO_PKG_")
        || name.starts_with("CARGO_BIN_EXE_")
}

/// `cargo build --release ARGS --quiet` in the workspace; returns `target/release`.
fn release_build(args: &[&str]) -> Result<PathBuf, String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut build = Command::new(cargo);
    // Without the variables Cargo set for this test about its own package: ring's build script
    // reruns when CARGO_MANIFEST_DIR or CARGO_PKG_NAME change, so a build from a test after one
    // from a shell (or the other way) rebuilt ring, rustls, ureq, symbolize and the tools
    // (1m47s here).
    for (name, _) in std::env::vars_os() {
        if name.to_str().is_some_and(package_variable) {
            build.env_remove(name);
        }
    }
    run(build
        .current_dir(repo())
        .args(["build", "--release", "--quiet"])
        .args(args))?;
    let target =
        std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| repo().join("target"), PathBuf::from);
    Ok(target.join("release"))
}

/// `target/release`, with the agent and the tools built once per test process, in one build:
/// `-p recorder` alone unifies the features of the dependencies it shares with the tools
/// differently (libc without `extra_traits`), and the two builds then rebuild the agent and
/// everything above it each time they alternate (3.5-4 minutes a switch on a loaded machine).
fn release_binaries() -> PathBuf {
    static BUILT: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    BUILT
        .get_or_init(|| release_build(&["-p", "recorder", "-p", "tools", "--lib", "--bins"]))
        .clone()
        .unwrap_or_else(|e| panic!("building the agent and the tools: {e}"))
}

/// The environment variable that names another agent library for the tests to run instead of
/// the workspace's (`JFRNATIVE_AGENT=/path/libjfrnative.so`): to check that a test fails on an
/// older agent, for example. The tools are still the workspace's.
pub const AGENT_OVERRIDE: &str = "JFRNATIVE_AGENT";

/// `target/release/libjfrnative.so`, built once per test process; or the library that
/// [`AGENT_OVERRIDE`] names, which must exist.
pub fn agent_library() -> PathBuf {
    if let Some(path) = std::env::var_os(AGENT_OVERRIDE).filter(|p| !p.is_empty()) {
        let path = PathBuf::from(path);
        assert!(
            path.is_file(),
            "{AGENT_OVERRIDE}={}: no such file",
            path.display()
        );
        return path;
    }
    release_binaries().join("libjfrnative.so")
}

/// Builds the workload in `testdata/NAME` once per test process: `build(jdk, source, out)`
/// compiles from `source` into a fresh directory `out`, which is returned. Panics with the
/// build's error.
pub fn build_once(
    cell: &'static OnceLock<Result<PathBuf, String>>,
    name: &str,
    build: impl FnOnce(&Jdk, &Path, &Path) -> Result<(), String>,
) -> PathBuf {
    cell.get_or_init(|| {
        let jdk = find(17).or_else(|| find(25)).ok_or("no JDK")?;
        let dir = std::env::temp_dir().join(format!("jfrnative-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
        build(&jdk, &repo().join("testdata").join(name), &dir)?;
        Ok(dir)
    })
    .clone()
    .unwrap_or_else(|e| panic!("building the {name} workload: {e}"))
}

/// A directory with `libburner.so` (`-O2 -fno-omit-frame-pointer`) and `Burner.class`.
pub fn workload_dir() -> PathBuf {
    static BUILT: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    build_once(&BUILT, "java", |jdk, src, dir| {
        run(jni_gcc(jdk, &["-O2", "-fno-omit-frame-pointer"])
            .arg(src.join("burner.c"))
            .arg("-o")
            .arg(dir.join("libburner.so")))?;
        javac(jdk, &src.join("Burner.java"), dir)
    })
}

/// A directory with `libwholeproc.so` (pthreads of its own, zlib) and `WholeProcess.class`: the
/// whole-process tests' program (`testdata/wholeproc`).
pub fn wholeproc_dir() -> PathBuf {
    static BUILT: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    build_once(&BUILT, "wholeproc", |jdk, src, dir| {
        run(jni_gcc(jdk, &["-O2", "-fno-omit-frame-pointer"])
            .arg(src.join("wholeproc.c"))
            .arg("-o")
            .arg(dir.join("libwholeproc.so"))
            .args(["-lz", "-lpthread"]))?;
        javac(jdk, &src.join("WholeProcess.java"), dir)
    })
}

/// `gcc FLAGS -shared -fPIC` with `jdk`'s JNI headers; add sources, `-o` and libraries.
pub fn jni_gcc(jdk: &Jdk, flags: &[&str]) -> Command {
    let include = jdk.home.join("include");
    let mut cmd = Command::new("gcc");
    cmd.args(flags)
        .args(["-shared", "-fPIC"])
        .arg(format!("-I{}", include.display()))
        .arg(format!("-I{}", include.join("linux").display()));
    cmd
}

/// Compiles `source` into `dir` with `--release 11`, so that every JDK of the matrix runs it
/// ([`crate::jdk::MATRIX`]).
pub fn javac(jdk: &Jdk, source: &Path, dir: &Path) -> Result<(), String> {
    let javac = crate::jdk::javac_for(jdk)
        .ok_or_else(|| format!("no javac found to compile {}", source.display()))?;
    run(Command::new(javac)
        .args(["--release", "11", "-d"])
        .arg(dir)
        .arg(source))
    .map(drop)
}

/// `target/release/NAME`, a binary of the `tools` package, built once per test process.
pub fn tool_binary(name: &str) -> PathBuf {
    release_binaries().join(name)
}

/// Runs `jfr-symbolize` with `args`, without `DEBUGINFOD_URLS` (so that no test asks a server
/// of the environment), and returns its output.
pub fn jfr_symbolize(args: &[&str]) -> Output {
    Command::new(tool_binary("jfr-symbolize"))
        .env_remove("DEBUGINFOD_URLS")
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("running jfr-symbolize: {e}"))
}

/// Runs `jfr-symbolize INPUT ARGS`, which must succeed (else panics with its stderr); returns
/// its standard output.
pub fn jfr_symbolize_ok(input: &Path, args: &[&str]) -> String {
    let mut all = vec![input.to_str().expect("a UTF-8 path")];
    all.extend_from_slice(args);
    let out = jfr_symbolize(&all);
    assert!(
        out.status.success(),
        "jfr-symbolize {all:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("UTF-8 output")
}

/// `java [jvm_args] -agentpath:...=agent_options Burner seconds threads`.
pub fn java_with_agent(
    jdk: &Jdk,
    agent_options: &str,
    jvm_args: &[&str],
    seconds: f64,
    threads: &str,
) -> Command {
    let mut cmd = java_with_agent_in(jdk, agent_options, jvm_args, &workload_dir());
    cmd.arg("Burner").arg(seconds.to_string()).arg(threads);
    cmd
}

/// `java [jvm_args] -agentpath:...=agent_options` with `dir` as class and library path; add the
/// main class and its arguments.
pub fn java_with_agent_in(
    jdk: &Jdk,
    agent_options: &str,
    jvm_args: &[&str],
    dir: &Path,
) -> Command {
    let mut cmd = Command::new(jdk.tool("java"));
    cmd.args(jvm_args)
        .arg(format!(
            "-agentpath:{}={agent_options}",
            agent_library().display()
        ))
        .arg(format!("-Djava.library.path={}", dir.display()))
        .arg("-cp")
        .arg(dir);
    cmd
}

/// Runs the workload to completion; panics with its output if it fails.
pub fn run_workload(
    jdk: &Jdk,
    agent_options: &str,
    jvm_args: &[&str],
    seconds: f64,
    threads: &str,
) -> Output {
    run_java(
        jdk,
        &mut java_with_agent(jdk, agent_options, jvm_args, seconds, threads),
    )
    .unwrap_or_else(|e| panic!("{e}"))
}

/// Runs `java` of `jdk` to completion; an error with its output if it fails.
pub fn run_java(jdk: &Jdk, java: &mut Command) -> Result<Output, String> {
    let out = java.output().map_err(|e| format!("{java:?}: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "{} failed: {}\n{}",
            jdk.name(),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(out)
}

/// The `CPU <thread> <ns>` lines the workload prints: each thread's CPU time per ThreadMXBean.
pub fn thread_cpu_ns(stdout: &[u8]) -> BTreeMap<String, u64> {
    String::from_utf8_lossy(stdout)
        .lines()
        .filter_map(|l| {
            let mut w = l.split_whitespace();
            (w.next() == Some("CPU")).then_some(())?;
            Some((w.next()?.to_string(), w.next()?.parse().ok()?))
        })
        .collect()
}

/// `(start, end, name)` of every defined function in an ELF file, from `nm -S`.
pub fn functions(elf: &Path) -> Vec<(u64, u64, String)> {
    let text = run(Command::new("nm").args(["-S", "--defined-only"]).arg(elf)).unwrap_or_default();
    text.lines()
        .filter_map(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            match w.as_slice() {
                [addr, size, kind, name] if kind.eq_ignore_ascii_case("t") => {
                    let start = u64::from_str_radix(addr, 16).ok()?;
                    Some((
                        start,
                        start + u64::from_str_radix(size, 16).ok()?,
                        name.to_string(),
                    ))
                }
                _ => None,
            }
        })
        .collect()
}

/// The number right after `prefix` in `text` (the first occurrence), e.g. a counter of the
/// agent's summary line: `number_after(stderr, "retained: ")`.
pub fn number_after(text: &str, prefix: &str) -> Option<f64> {
    let at = text.find(prefix)? + prefix.len();
    text[at..]
        .split(|c: char| !(c.is_ascii_digit() || c == '.'))
        .next()?
        .parse()
        .ok()
}

/// The JDK's `src.zip`: its own, or for a JDK whose link is dangling (Debian's JDK 17 links it to
/// the `openjdk-17-source` package), the one `setup.sh` unpacked under `target/`.
pub fn src_zip(jdk: &Jdk) -> Option<PathBuf> {
    let own = jdk.home.join("lib/src.zip");
    if own.is_file() {
        return Some(own);
    }
    let fetched = repo().join(format!("target/openjdk-{}-source/src.zip", jdk.major));
    fetched.is_file().then_some(fetched)
}

/// Why `jdk` gives no [`concurrent_sources`]: its `src.zip` or its `javac` missing, or the
/// unpacking failed; for [`crate::jdk::missing`].
pub fn why_no_sources(jdk: &Jdk) -> String {
    let why = if src_zip(jdk).is_none() {
        "has no src.zip (nor target/openjdk-N-source/src.zip)"
    } else if !jdk.tool("javac").exists() {
        "has no javac of its own"
    } else {
        "has a src.zip that could not be unpacked"
    };
    format!("{} {why}", jdk.name())
}

/// `java/util/concurrent` sources unpacked from `jdk`'s [`src_zip`] into `dir`, if it has
/// one and a `javac`.
pub fn concurrent_sources(jdk: &Jdk, dir: &Path) -> Option<Vec<PathBuf>> {
    let zip = src_zip(jdk)?;
    if !jdk.tool("javac").exists() {
        return None;
    }
    std::fs::create_dir_all(dir).ok()?;
    crate::readers::run(
        Command::new("unzip")
            .args(["-q", "-o"])
            .arg(&zip)
            .arg("java.base/java/util/concurrent/*")
            .arg("-d")
            .arg(dir),
    )
    .ok()?;
    let sources = java_files(&dir.join("java.base/java/util/concurrent"))?;
    (!sources.is_empty()).then_some(sources)
}

/// The `.java` files directly in `dir`, sorted; `None` when it cannot be read.
fn java_files(dir: &Path) -> Option<Vec<PathBuf>> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .ok()?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "java"))
        .collect();
    files.sort();
    Some(files)
}

/// [`concurrent_sources`] with those of its subpackages `atomic` and `locks` and of
/// `java.util` itself (unpacked into `dir`): about twice the samples of a javac run.
pub fn concurrent_sources_with_subpackages(jdk: &Jdk, dir: &Path) -> Option<Vec<PathBuf>> {
    let mut sources = concurrent_sources(jdk, dir)?;
    let zip = src_zip(jdk)?;
    crate::readers::run(
        Command::new("unzip")
            .args(["-q", "-o"])
            .arg(&zip)
            .arg("java.base/java/util/*.java")
            .arg("-x")
            .arg("java.base/java/util/*/*")
            .arg("-d")
            .arg(dir),
    )
    .ok()?;
    for sub in ["concurrent/atomic", "concurrent/locks", ""] {
        sources.extend(java_files(&dir.join("java.base/java/util").join(sub))?);
    }
    Some(sources)
}

/// `javac` of `jdk` compiling `sources` (from [`concurrent_sources`] under `dir/src`) into
/// `dir/out`, with `jvm_options` given to its JVM (`-J`).
pub fn javac_concurrent(
    jdk: &Jdk,
    dir: &Path,
    sources: &[PathBuf],
    jvm_options: &[String],
) -> Command {
    let out = dir.join("out");
    let _ = std::fs::create_dir_all(&out);
    let mut javac = Command::new(jdk.tool("javac"));
    for option in jvm_options {
        javac.arg(format!("-J{option}"));
    }
    javac
        .arg("--patch-module")
        .arg(format!("java.base={}", dir.join("src/java.base").display()))
        .arg("-d")
        .arg(out)
        .args(sources);
    javac
}

/// `jfrnative demo --dir DIR` with `args` (duration, interval, ...), `jdk` as its `JAVA_HOME`:
/// builds the demo into `DIR/build` and records it into `DIR/demo.jfr`. Panics with its output
/// when it fails.
pub fn jfrnative_demo(jdk: &Jdk, dir: &Path, args: &[&str]) {
    agent_library();
    let out = Command::new(tool_binary("jfrnative"))
        .env("JAVA_HOME", &jdk.home)
        .arg("demo")
        .args(args)
        .arg("--dir")
        .arg(dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "jfrnative demo: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}
