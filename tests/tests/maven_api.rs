//! The Maven artifact `io.github.jfrnative:jfr-native` (issue 41): `bash tools/scripts/maven.sh`
//! installs it (`mvn install` at the root: the Java API, the JMH profiler, the agent and
//! `jfr-symbolize` in the jar) and builds and tests `testdata/maven-api` offline against it.
//! Its JUnit tests assert the API's behaviour in the JVM (see `JfrNativeApiTest`,
//! `JmhProfilerTest`); this test checks that they ran and passed, and what they left:
//! - the JNI workload's recording names `jfrnative_api_spin` above its Java caller
//!   (`Workload.spin`) in the collapsed stacks;
//! - a JVM started with `-agentpath:` used that agent (one `libjfrnative` mapping), and so did
//!   one whose agent `jcmd JVMTI.agent_load` attached;
//! - JMH's own output names `jfrnative_jmh_hash` as the benchmark's top native function, and
//!   the flame graph the profiler left names it too.
//!
//! The jar is built from the workspace's release build (`JFRNATIVE_LIB`, `JFRNATIVE_SYMBOLIZER`),
//! not the portable one. Skipped (with a note) where `mvn` is not installed, unless CI or
//! `JFRNATIVE_REQUIRE_JDKS` require it. About 35 s here once the release build is done.

use std::path::{Path, PathBuf};
use std::process::Command;

use tests::jdk::jdks_required;
use tests::workload::{agent_library, repo, tool_binary};

fn mvn_installed() -> bool {
    std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join("mvn").is_file()))
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The surefire report of one test class: (tests, failures + errors, skipped).
fn surefire_counts(out: &Path, class: &str) -> (u32, u32, u32) {
    let xml = read(&out.join(format!("surefire-reports/TEST-io.jfrnative.it.{class}.xml")));
    let suite = xml
        .lines()
        .find(|l| l.contains("<testsuite "))
        .expect("a <testsuite> element");
    let attr = |name: &str| -> u32 {
        let key = format!(" {name}=\"");
        let at = suite.find(&key).map(|i| i + key.len()).expect(name);
        suite[at..].split('"').next().unwrap().parse().expect(name)
    };
    (
        attr("tests"),
        attr("failures") + attr("errors"),
        attr("skipped"),
    )
}

#[test]
fn maven_artifact_api_and_jmh_profiler() {
    if !mvn_installed() {
        assert!(
            !jdks_required(),
            "mvn not found (tools/scripts/setup.sh installs Debian's maven): required in CI"
        );
        eprintln!("note: mvn not found: the Maven artifact's test is skipped");
        return;
    }
    let target =
        std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| repo().join("target"), PathBuf::from);
    let out = target.join("maven-api-test");
    // The jar carries this workspace's release build, the one every other test runs (built once
    // per test process), not the portable build `mvn install` makes by default: that is a second
    // build of the whole workspace, and what is tested here is the Java side.
    let run = Command::new("bash")
        .arg(repo().join("tools/scripts/maven.sh"))
        .env("OUT", &out)
        .env("JFRNATIVE_LIB", agent_library())
        .env("JFRNATIVE_SYMBOLIZER", tool_binary("jfr-symbolize"))
        .output()
        .expect("running tools/scripts/maven.sh");
    let stdout = String::from_utf8_lossy(&run.stdout);
    let stderr = String::from_utf8_lossy(&run.stderr);
    println!("{stdout}");
    assert!(
        run.status.success(),
        "tools/scripts/maven.sh failed:\n{stdout}\n{stderr}"
    );

    // Every test of the API and the profiler ran and passed (the comparison is not asked for).
    for (class, least) in [("JfrNativeApiTest", 7), ("JmhProfilerTest", 2)] {
        let (tests, failed, skipped) = surefire_counts(&out, class);
        assert!(
            tests >= least && failed == 0 && skipped == 0,
            "{class}: {tests} tests, {failed} failed, {skipped} skipped"
        );
    }

    // The JNI workload: its native function above the Java method that calls it.
    let collapsed = read(&out.join("junit/record/spin.collapsed"));
    let above_caller = collapsed.lines().any(|line| {
        line.find("io.jfrnative.it.Workload.spin")
            .zip(line.find("jfrnative_api_spin"))
            .is_some_and(|(caller, leaf)| caller < leaf)
    });
    assert!(
        above_caller,
        "no stack with jfrnative_api_spin above Workload.spin:\n{collapsed}"
    );

    // The -agentpath: JVM and the attached one: the API used that agent, one mapping.
    for case in ["agentpath", "attach"] {
        let jvm = read(&out.join(format!("junit/{case}/jvm.txt")));
        assert!(jvm.contains("origin=agent already loaded\n"), "{jvm}");
        let mappings = jvm
            .lines()
            .find_map(|l| l.strip_prefix("mappings=["))
            .expect("a mappings line");
        assert_eq!(mappings.matches("libjfrnative").count(), 1, "{jvm}");
    }

    // JMH: its output's secondary result, and the profiler's files.
    let jmh = read(&out.join("jmh/jmh.txt"));
    let secondary = jmh
        .split("Secondary result \"io.jfrnative.it.HashBench.hash:jfrnative\":")
        .nth(1)
        .unwrap_or_else(|| panic!("no jfrnative secondary result in JMH's output:\n{jmh}"));
    let top_native = secondary
        .lines()
        .skip_while(|l| !l.starts_with("native functions"))
        .nth(1)
        .unwrap_or_default();
    assert!(
        top_native.contains("jfrnative_jmh_hash"),
        "the top native function is not jfrnative_jmh_hash:\n{secondary}"
    );
    let bench = out.join("jmh/io.jfrnative.it.HashBench.hash-Throughput");
    for name in ["fork-1.jfr", "fork-1.symbolized.jfr", "fork-1.txt"] {
        assert!(bench.join(name).is_file(), "{} missing", name);
    }
    assert!(read(&bench.join("fork-1.html")).contains("jfrnative_jmh_hash"));
}
