//! `jfrnative record` of a command that is not `java` (a build tool, a script, a container
//! entrypoint): the agent goes into `JAVA_TOOL_OPTIONS`, which every HotSpot JVM the command
//! starts reads, and each JVM writes its own recording, `STEM-PID.jfr` (the agent expands `%p`).

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};

/// The `JAVA_TOOL_OPTIONS` value: what the user had there, then the agent.
pub fn tool_options(
    existing: Option<&OsStr>,
    agent: &Path,
    options: &str,
) -> Result<OsString, String> {
    let agentpath = format!("-agentpath:{}={options}", agent.display());
    // The JVM splits JAVA_TOOL_OPTIONS at white space.
    if agentpath.chars().any(char::is_whitespace) {
        return Err(format!(
            "the agent's path or the output path has a space, which JAVA_TOOL_OPTIONS cannot \
             carry: {agentpath}; choose an output without spaces with -o, or install the agent \
             where its path has none"
        ));
    }
    let mut value = OsString::new();
    if let Some(existing) = existing.filter(|e| !e.is_empty()) {
        value.push(existing);
        value.push(" ");
    }
    value.push(agentpath);
    Ok(value)
}

/// The recording file pattern for `output` (`out.jfr` → `out-%p.jfr`).
pub fn pattern_of(output: &Path) -> PathBuf {
    let stem = output.with_extension("");
    let mut s = stem.into_os_string();
    s.push("-%p.jfr");
    PathBuf::from(s)
}

/// The recordings written for `pattern` (from [`pattern_of`]): `(pid, file)`, by pid.
pub fn recordings(pattern: &Path) -> Vec<(u32, PathBuf)> {
    let dir = match pattern.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let Some(name) = pattern.file_name().and_then(OsStr::to_str) else {
        return Vec::new();
    };
    let Some((prefix, suffix)) = name.split_once("%p") else {
        return Vec::new();
    };
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Vec::new();
    };
    let mut found: Vec<(u32, PathBuf)> = entries
        .filter_map(|e| {
            let file = e.ok()?.file_name();
            let pid = file.to_str()?.strip_prefix(prefix)?.strip_suffix(suffix)?;
            let pid: u32 = pid
                .parse()
                .ok()
                .filter(|_| pid.bytes().all(|b| b.is_ascii_digit()))?;
            Some((pid, dir.join(&file)))
        })
        .collect();
    found.sort();
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_users_options_are_kept_before_the_agent() {
        let agent = Path::new("/opt/jfr/libjfrnative.so");
        let v = tool_options(Some(OsStr::new("-Xmx1g -Dx=y")), agent, "file=a-%p.jfr").unwrap();
        assert_eq!(
            v,
            "-Xmx1g -Dx=y -agentpath:/opt/jfr/libjfrnative.so=file=a-%p.jfr"
        );
        let v = tool_options(None, agent, "file=a.jfr").unwrap();
        assert_eq!(v, "-agentpath:/opt/jfr/libjfrnative.so=file=a.jfr");
        let e = tool_options(None, agent, "file=my dir/a.jfr").unwrap_err();
        assert!(e.contains("space"), "{e}");
    }

    #[test]
    fn recordings_are_found_by_pid() {
        let dir = std::env::temp_dir().join(format!("jfrnative-any-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let pattern = pattern_of(&dir.join("run.jfr"));
        assert_eq!(pattern, dir.join("run-%p.jfr"));
        for name in [
            "run-12.jfr",
            "run-7.jfr",
            "run-7.jfr.status",
            "run-x.jfr",
            "run-12.svg",
        ] {
            std::fs::write(dir.join(name), b"").unwrap();
        }
        assert_eq!(
            recordings(&pattern),
            vec![(7, dir.join("run-7.jfr")), (12, dir.join("run-12.jfr"))]
        );
        std::fs::remove_dir_all(dir).unwrap();
    }
}
