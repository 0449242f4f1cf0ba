//! Finding the Java launcher and the JDK the user means, and the platform check.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

/// The agent works on Linux x86_64 only (frame layout, signal context, HotSpot symbols).
pub fn check_platform(os: &str, arch: &str) -> Result<(), String> {
    if (os, arch) == ("linux", "x86_64") {
        Ok(())
    } else {
        Err(format!(
            "unsupported platform {os}/{arch}: jfr-native records HotSpot JVMs on Linux x86_64 only"
        ))
    }
}

fn is_file(path: &Path) -> bool {
    path.metadata().is_ok_and(|m| m.is_file())
}

/// The first file `name` in the directories of `path` (a `PATH` value).
pub fn search_path(name: &str, path: Option<&OsStr>) -> Option<PathBuf> {
    std::env::split_paths(path?)
        .map(|dir| dir.join(name))
        .find(|p| is_file(p))
}

/// The `java` executable a command line's first word means: a path is taken as it is; `java`
/// is `$JAVA_HOME/bin/java` if `JAVA_HOME` is set, else the first `java` on `PATH`.
pub fn resolve_java(
    program: &str,
    java_home: Option<&OsStr>,
    path: Option<&OsStr>,
) -> Result<PathBuf, String> {
    let name = Path::new(program)
        .file_name()
        .and_then(OsStr::to_str)
        .unwrap_or("");
    if name != "java" {
        return Err(format!(
            "the command must start with java (or a path to a java executable), not '{program}': \
             jfrnative adds the agent to the java command's options"
        ));
    }
    if program.contains('/') {
        let p = PathBuf::from(program);
        return if is_file(&p) {
            Ok(p)
        } else {
            Err(format!("{program}: no such Java executable"))
        };
    }
    java_in_home_or_path(java_home, path)
}

/// `$JAVA_HOME/bin/java`, else `java` on `PATH`; the error says what to do.
pub fn java_in_home_or_path(
    java_home: Option<&OsStr>,
    path: Option<&OsStr>,
) -> Result<PathBuf, String> {
    if let Some(home) = java_home.filter(|h| !h.is_empty()) {
        let java = Path::new(home).join("bin/java");
        return if is_file(&java) {
            Ok(java)
        } else {
            Err(format!(
                "JAVA_HOME is {} but it has no bin/java: point JAVA_HOME at a JDK 17 to 25 \
                 (e.g. /usr/lib/jvm/java-17-openjdk-amd64) or unset it to use java from PATH",
                Path::new(home).display()
            ))
        };
    }
    search_path("java", path).ok_or_else(|| {
        "no JDK found: JAVA_HOME is not set and there is no java on PATH; install a JDK 17 to 25 \
         (e.g. apt-get install openjdk-17-jdk-headless) or set JAVA_HOME"
            .to_string()
    })
}

/// The feature release of the JDK at `home` (11, 17, 25, ...), from its `release` file's
/// `JAVA_VERSION` ("11.0.13", "25", and "1.8.0_392" as 8).
pub fn feature_release(home: &Path) -> Option<u32> {
    let release = std::fs::read_to_string(home.join("release")).ok()?;
    let line = release.lines().find(|l| l.starts_with("JAVA_VERSION="))?;
    feature_of(line.trim_start_matches("JAVA_VERSION=").trim_matches('"'))
}

/// The feature release of a version ("11", "17", "11.0.13", "21.0.8+9", "8.0_392", and
/// "1.8" as 8).
pub fn feature_of(version: &str) -> Option<u32> {
    let mut parts = version.trim().split(['.', '_', '+', '-']);
    match parts.next()?.parse().ok()? {
        1 => parts.next()?.parse().ok(),
        major => Some(major),
    }
}

/// The JDK home of a `java` executable (symbolic links resolved): the parent of its `bin`.
pub fn home_of(java: &Path) -> Option<PathBuf> {
    let real = java.canonicalize().ok()?;
    Some(real.parent()?.parent()?.to_path_buf())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn platforms() {
        assert!(check_platform("linux", "x86_64").is_ok());
        let e = check_platform("macos", "aarch64").unwrap_err();
        assert!(e.contains("unsupported platform macos/aarch64"), "{e}");
        assert!(check_platform("linux", "aarch64").is_err());
    }

    #[test]
    fn feature_releases_from_the_release_file() {
        let dir = std::env::temp_dir().join(format!("jfrnative-release-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        for (text, want) in [
            ("JAVA_VERSION=\"11.0.13\"\n", Some(11)),
            ("IMPLEMENTOR=x\nJAVA_VERSION=\"25\"\n", Some(25)),
            ("JAVA_VERSION=\"21.0.8+9\"\n", Some(21)),
            ("JAVA_VERSION=\"1.8.0_392\"\n", Some(8)),
            ("JAVA_VERSION=\"junk\"\n", None),
            ("OS_NAME=Linux\n", None),
        ] {
            std::fs::write(dir.join("release"), text).unwrap();
            assert_eq!(feature_release(&dir), want, "{text}");
        }
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(feature_release(&dir), None, "no release file");
    }

    #[test]
    fn java_resolution_and_its_errors() {
        let dir = std::env::temp_dir().join(format!("jfrnative-jdk-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("bin")).unwrap();
        std::fs::write(dir.join("bin/java"), "").unwrap();
        let home = Some(dir.as_os_str());
        assert_eq!(
            resolve_java("java", home, None).unwrap(),
            dir.join("bin/java")
        );
        let on_path = std::env::join_paths([dir.join("bin")]).unwrap();
        assert_eq!(
            resolve_java("java", None, Some(&on_path)).unwrap(),
            dir.join("bin/java")
        );
        let e = resolve_java("java", Some(OsStr::new("/nonexistent")), Some(&on_path));
        assert!(e.unwrap_err().contains("JAVA_HOME is /nonexistent"));
        let e = resolve_java("java", None, Some(OsStr::new("/nonexistent"))).unwrap_err();
        assert!(e.contains("no JDK found"), "{e}");
        let e = resolve_java("python3", home, None).unwrap_err();
        assert!(e.contains("must start with java"), "{e}");
        let e = resolve_java("/nonexistent/bin/java", home, None).unwrap_err();
        assert!(e.contains("no such Java executable"), "{e}");
        assert_eq!(
            home_of(&dir.join("bin/java")).unwrap(),
            dir.canonicalize().unwrap()
        );
        std::fs::remove_dir_all(dir).unwrap();
    }
}
