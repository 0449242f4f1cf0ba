//! The Maven-library workload (`testdata/mavenlibs`, issue 39): real JNI libraries as Maven
//! jars ship them (fetched by `tools/scripts/setup.sh` into `MAVENLIBS_CP`), whose loaders
//! unpack the `.so` into a temporary directory and delete it, and an FFM critical downcall into
//! a frameless library of ours deleted right after loading (JDK 22+). Built once per test
//! process; recorded with `jfrnative record`; each library's file is also taken from its jar,
//! for `nm` to say what its functions are (`crate::maven_figures`).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

use crate::jdk::{find, javac_for, Jdk};
use crate::readers::run;
use crate::workload::{agent_library, repo, tool_binary};

/// One library of the workload.
#[derive(Debug, Clone, Copy)]
pub struct MavenLib {
    /// A short name.
    pub key: &'static str,
    /// How the loader's copy's file name starts ...
    pub prefix: &'static str,
    /// ... and ends (the recorded path may add ` (deleted)`, which is not part of it).
    pub suffix: &'static str,
    /// How the jar's file name in `MAVENLIBS_CP` starts; empty for our own library.
    pub jar: &'static str,
    /// How the library's path inside the jar ends.
    pub member: &'static str,
    /// The Java thread whose loop calls it.
    pub thread: &'static str,
    /// Whether the loader deletes the file right after loading it (else at JVM exit).
    pub deleted_at_load: bool,
    /// The first JDK whose runs have it.
    pub min_jdk: u32,
}

impl MavenLib {
    /// Whether `path` (a recorded path or a file name, with or without ` (deleted)`) is this
    /// library's copy.
    pub fn matches(&self, path: &str) -> bool {
        let path = path.strip_suffix(" (deleted)").unwrap_or(path);
        let name = path.rsplit('/').next().unwrap_or(path);
        name.starts_with(self.prefix) && name.ends_with(self.suffix)
    }
}

/// The libraries, as their loaders behave (checked by the test on every run, from
/// `/proc/self/maps` while the workload runs and the files after it exits).
pub const LIBRARIES: [MavenLib; 7] = [
    MavenLib {
        key: "snappy",
        prefix: "snappy-",
        suffix: "-libsnappyjava.so",
        jar: "snappy-java-",
        member: "native/Linux/x86_64/libsnappyjava.so",
        thread: "snappy-worker",
        deleted_at_load: false,
        min_jdk: 17,
    },
    MavenLib {
        key: "lz4",
        prefix: "liblz4-java-",
        suffix: ".so",
        jar: "lz4-java-",
        member: "linux/amd64/liblz4-java.so",
        thread: "lz4-worker",
        deleted_at_load: false,
        min_jdk: 17,
    },
    MavenLib {
        key: "sqlite",
        prefix: "sqlite-",
        suffix: "-libsqlitejdbc.so",
        jar: "sqlite-jdbc-",
        member: "native/Linux/x86_64/libsqlitejdbc.so",
        thread: "sqlite-worker",
        deleted_at_load: false,
        min_jdk: 17,
    },
    MavenLib {
        key: "zstd",
        prefix: "libzstd-jni-",
        suffix: ".so",
        jar: "zstd-jni-",
        member: ".so",
        thread: "zstd-worker",
        deleted_at_load: true,
        min_jdk: 17,
    },
    MavenLib {
        key: "tcnative",
        prefix: "libnetty_tcnative_linux_x86_64",
        suffix: ".so",
        jar: "netty-tcnative-boringssl-static-",
        member: "META-INF/native/libnetty_tcnative_linux_x86_64.so",
        thread: "tls-worker",
        deleted_at_load: true,
        min_jdk: 17,
    },
    MavenLib {
        key: "jna",
        prefix: "jna",
        suffix: ".tmp",
        jar: "jna-",
        member: "linux-x86-64/libjnidispatch.so",
        thread: "jna-worker",
        deleted_at_load: true,
        min_jdk: 17,
    },
    MavenLib {
        key: "critical",
        prefix: "libcritical-",
        suffix: ".so",
        jar: "",
        member: "",
        thread: "critical-worker",
        deleted_at_load: true,
        min_jdk: 22,
    },
];

/// The library whose copy `path` is.
pub fn library_of(path: &str) -> Option<&'static MavenLib> {
    LIBRARIES.iter().find(|l| l.matches(path))
}

/// The workload, built: classes, our library, a TLS key, and each library's file from its jar.
#[derive(Debug, Clone)]
pub struct Built {
    /// Classes, `libcritical.so`, `tls.p12`, and `libs/KEY.so`.
    pub dir: PathBuf,
    /// The jars (`MAVENLIBS_CP`).
    pub class_path: String,
}

impl Built {
    /// The file of `lib` as its jar has it (ours: as built).
    pub fn library_file(&self, lib: &MavenLib) -> PathBuf {
        if lib.jar.is_empty() {
            self.dir.join("libcritical.so")
        } else {
            self.dir.join("libs").join(format!("{}.so", lib.key))
        }
    }
}

/// The workload built once per test process from the jars of `class_path` (`MAVENLIBS_CP`).
pub fn built(class_path: &str) -> Result<Built, String> {
    static BUILT: OnceLock<Result<Built, String>> = OnceLock::new();
    BUILT.get_or_init(|| build(class_path)).clone()
}

fn build(class_path: &str) -> Result<Built, String> {
    let jdk17 = find(17).ok_or("no JDK 17 to compile NativeLibs")?;
    let javac = javac_for(&jdk17).ok_or("no javac of JDK 17")?;
    let src = repo().join("testdata/mavenlibs");
    let dir = std::env::temp_dir().join(format!("jfrnative-mavenlibs-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("libs")).map_err(|e| e.to_string())?;
    run(Command::new("gcc")
        .args(["-O2", "-fomit-frame-pointer", "-shared", "-fPIC"])
        .arg(src.join("critical.c"))
        .arg("-o")
        .arg(dir.join("libcritical.so")))?;
    run(Command::new(&javac)
        .args(["--release", "17", "-cp", class_path, "-d"])
        .arg(&dir)
        .arg(src.join("NativeLibs.java")))?;
    // The FFM part, for Java 22 (JDK 25's javac).
    if let Some(javac25) = find(25).and_then(|j| javac_for(&j)).filter(|j| j != &javac) {
        run(Command::new(javac25)
            .args(["--release", "22", "-d"])
            .arg(&dir)
            .arg(src.join("CriticalDeleted.java")))?;
    }
    run(Command::new(jdk17.tool("keytool"))
        .args([
            "-genkeypair",
            "-keyalg",
            "RSA",
            "-keysize",
            "2048",
            "-alias",
            "tls",
            "-dname",
            "CN=localhost",
            "-validity",
            "3650",
            "-storetype",
            "PKCS12",
            "-storepass",
            "changeit",
            "-keypass",
            "changeit",
            "-keystore",
        ])
        .arg(dir.join("tls.p12")))?;
    let built = Built {
        dir,
        class_path: class_path.to_string(),
    };
    for lib in LIBRARIES.iter().filter(|l| !l.jar.is_empty()) {
        extract(&built, lib)?;
    }
    Ok(built)
}

/// Takes `lib`'s file out of its jar into [`Built::library_file`].
fn extract(built: &Built, lib: &MavenLib) -> Result<(), String> {
    let jar = built
        .class_path
        .split(':')
        .find(|j| {
            let name = j.rsplit('/').next().unwrap_or(j);
            name.starts_with(lib.jar)
                && name[lib.jar.len()..].starts_with(|c: char| c.is_ascii_digit())
        })
        .ok_or(format!("no {}* jar in MAVENLIBS_CP", lib.jar))?;
    let listing = run(Command::new("unzip").args(["-Z1", jar]))?;
    let member = listing
        .lines()
        .find(|m| m.ends_with(lib.member) && linux_x86_64(m))
        .ok_or(format!("{jar} has no Linux x86-64 {}", lib.member))?;
    let out = Command::new("unzip")
        .args(["-p", jar, member])
        .output()
        .map_err(|e| e.to_string())?;
    if !out.status.success() || out.stdout.is_empty() {
        return Err(format!("unzip -p {jar} {member} failed"));
    }
    std::fs::write(built.library_file(lib), out.stdout).map_err(|e| e.to_string())
}

/// Whether a jar member's path is the Linux x86-64 (glibc) build: the jars name the platform
/// in the directories (`Linux/x86_64/`, `linux/amd64/`, `linux-x86-64/`) or in the file name.
fn linux_x86_64(member: &str) -> bool {
    let m = member.to_ascii_lowercase();
    let linux = m.contains("linux") && !m.contains("musl") && !m.contains("android");
    let x64 = m.contains("x86_64") || m.contains("amd64") || m.contains("x86-64");
    linux && x64 && !m.contains("freebsd")
}

/// Seconds the workload runs in the test.
pub const SECONDS: &str = "4";

/// `jfrnative record -i 2ms --threads all -o DIR/rec.jfr -- JAVA ... NativeLibs SECONDS`.
pub fn record(jdk: &Jdk, built: &Built, dir: &Path) -> Output {
    agent_library();
    let mut cmd = Command::new(tool_binary("jfrnative"));
    cmd.env_remove("DEBUGINFOD_URLS")
        .args(["record", "-i", "2ms", "--threads", "all", "-o"])
        .arg(dir.join("rec.jfr"))
        .arg("--")
        .arg(jdk.tool("java"));
    if jdk.major >= 22 {
        cmd.arg("--enable-native-access=ALL-UNNAMED");
    }
    cmd.arg(format!(
        "-Dnativelibs.keystore={}",
        built.dir.join("tls.p12").display()
    ))
    .arg(format!(
        "-Dnativelibs.critical={}",
        built.dir.join("libcritical.so").display()
    ))
    .arg("-cp")
    .arg(format!("{}:{}", built.class_path, built.dir.display()))
    .args(["NativeLibs", SECONDS]);
    cmd.output()
        .unwrap_or_else(|e| panic!("jfrnative record: {e}"))
}

/// The paths of the `MAPPED START PATH` lines the workload prints once every library is
/// loaded: the mappings of files in a temporary directory, with ` (deleted)` for a file gone
/// already.
pub fn mapped(stdout: &str) -> Vec<String> {
    mapped_at(stdout)
        .into_iter()
        .map(|(_, path)| path)
        .collect()
}

/// The `MAPPED START PATH` lines: each file's lowest mapped address, as the JVM read its own
/// `/proc/self/maps`, and its path.
pub fn mapped_at(stdout: &str) -> Vec<(u64, String)> {
    stdout
        .lines()
        .filter_map(|l| l.strip_prefix("MAPPED "))
        .filter_map(|l| {
            let (start, path) = l.split_once(' ')?;
            Some((u64::from_str_radix(start, 16).ok()?, path.to_string()))
        })
        .collect()
}
