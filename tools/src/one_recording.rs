//! The JDK's own Flight Recorder beside the agent (`--jdk-events`), and the merge of its
//! recording and ours into one file ([`symbolize::merge`]).

use std::io;
use std::path::{Path, PathBuf};

use symbolize::merge::{self, Input, JdkSamples, Origin, Summary};

/// The JDK's sampler events switched off in the recording `--jdk-events` starts: the CPU
/// profile comes from the agent (JDK 17 ignores the setting of `jdk.CPUTimeSample`, which it
/// does not have).
pub const JDK_SAMPLERS_OFF: [&str; 3] = [
    "jdk.ExecutionSample#enabled=false",
    "jdk.CPUTimeSample#enabled=false",
    "jdk.NativeMethodSample#enabled=false",
];

/// The name of the JDK recording `--jdk-events` starts (so that `jcmd JFR.check` shows whose
/// it is, and a recording of the user's own is left alone).
pub const RECORDING_NAME: &str = "jfrnative";

/// What `--jdk-events` was given: `default`, `profile`, or a `.jfc` file, checked.
pub fn settings(value: &str) -> Result<String, String> {
    match value {
        "default" | "profile" => Ok(value.to_string()),
        path if path.ends_with(".jfc") => {
            let p = Path::new(path);
            if !p.is_file() {
                return Err(format!("--jdk-events {path}: no such settings file"));
            }
            let abs = std::path::absolute(p).map_err(|e| format!("--jdk-events {path}: {e}"))?;
            let text = abs.display().to_string();
            if text.contains(',') {
                return Err(format!(
                    "--jdk-events {path}: the path contains ',', which separates the JDK's \
                     recording options"
                ));
            }
            Ok(text)
        }
        other => Err(format!(
            "--jdk-events {other}: give default, profile, or the path of a .jfc settings file"
        )),
    }
}

/// The directory the JDK writes its recordings into, beside `recording` (`OUT.jfr` →
/// `OUT.jdk/`). A JVM names its file there `hotspot-pid-PID-id-N-DATE.jfr`.
pub fn jdk_directory(recording: &Path) -> PathBuf {
    let mut name = recording.as_os_str().to_owned();
    if let Some(stripped) = recording.to_str().and_then(|s| s.strip_suffix(".jfr")) {
        name = stripped.into();
    }
    name.push(".jdk");
    PathBuf::from(name)
}

/// The `-XX:StartFlightRecording` option that starts the JDK's recording with `settings`, its
/// samplers off, written into `directory` when the JVM exits. The samplers are switched off by
/// [`JDK_SAMPLERS_OFF`], or, when `settings` is the file [`derived_settings`] of `directory`
/// (made by [`settings_for_java`] for a JVM older than 17, which takes no such options), in
/// that file itself.
pub fn start_option(settings: &str, directory: &Path) -> String {
    let start = format!(
        "-XX:StartFlightRecording=name={RECORDING_NAME},settings={settings},filename={}/",
        directory.display()
    );
    if Path::new(settings) == derived_settings(directory) {
        start
    } else {
        format!("{start},{}", JDK_SAMPLERS_OFF.join(","))
    }
}

/// The settings file `--jdk-events` writes into the JDK directory `directory` for a JVM older
/// than 17: the chosen settings with the samplers off ([`crate::jfc::samplers_off`]).
pub fn derived_settings(directory: &Path) -> PathBuf {
    directory.join("jfrnative-settings.jfc")
}

/// Writes a derived settings file at `path`, created anew: a file or link already there is
/// removed first (a link itself, not what it names), and the creation fails rather than
/// follow one planted in between (`O_EXCL | O_NOFOLLOW`). Readable by the JVM (0644).
pub fn write_derived(path: &Path, bytes: &[u8]) -> io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    match std::fs::remove_file(path) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(e),
    }
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o644)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)?;
    file.write_all(bytes)
}

/// For `record` of the `java` executable `java` with `--jdk-events` `settings` (`default`,
/// `profile` or a `.jfc` path) into `directory`: `None` when that JVM takes the samplers'
/// overrides (JDK 17 and later, or a JDK whose `release` file does not say), else the path of
/// the settings written for it ([`derived_settings`]): the chosen settings of its own JDK
/// (`HOME/lib/jfr/NAME.jfc`) or the user's file, with the samplers off.
pub fn settings_for_java(
    settings: &str,
    java: &Path,
    directory: &Path,
) -> Result<Option<PathBuf>, String> {
    let Some(home) = crate::jdk::home_of(java) else {
        return Ok(None);
    };
    match crate::jdk::feature_release(&home) {
        Some(release) if release < crate::jfc::OVERRIDES_SINCE => {
            let from = crate::jfc::source(settings, &home);
            let bytes = std::fs::read(&from).map_err(|e| {
                format!(
                    "--jdk-events: {} is JDK {release}, which takes no EVENT#setting options: \
                     jfrnative switches its samplers off in a copy of {}, which cannot be read: \
                     {e}",
                    java.display(),
                    from.display()
                )
            })?;
            let derived = crate::jfc::samplers_off_bytes(&bytes, &from).map_err(|e| {
                format!(
                    "--jdk-events: {} is JDK {release}, which takes no EVENT#setting options, \
                     and its settings could not be copied with the samplers off: {e}",
                    java.display()
                )
            })?;
            std::fs::create_dir_all(directory)
                .map_err(|e| format!("cannot create {}: {e}", directory.display()))?;
            let path = derived_settings(directory);
            write_derived(&path, &derived)
                .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
            Ok(Some(path))
        }
        _ => Ok(None),
    }
}

/// The JDK's recording of JVM `pid` (or of the only JVM) in `directory`: the file it wrote at
/// exit, else, for a JVM that was killed, the chunk files left in its repository
/// (`directory/repository/DATE_PID/`; the merge keeps their complete chunks).
pub fn jdk_files_of(directory: &Path, pid: Option<u32>) -> Vec<PathBuf> {
    let list = |dir: &Path| -> Vec<PathBuf> {
        let mut found: Vec<PathBuf> = std::fs::read_dir(dir)
            .into_iter()
            .flatten()
            .filter_map(|e| e.ok().map(|e| e.path()))
            .collect();
        found.sort();
        found
    };
    let name_of = |p: &Path| {
        p.file_name()
            .and_then(|n| n.to_str())
            .unwrap_or("")
            .to_string()
    };
    let dumped: Vec<PathBuf> = list(directory)
        .into_iter()
        .filter(|p| {
            let name = name_of(p);
            name.ends_with(".jfr")
                && match pid {
                    Some(pid) => name.starts_with(&format!("hotspot-pid-{pid}-")),
                    None => name.starts_with("hotspot-pid-"),
                }
        })
        .collect();
    if !dumped.is_empty() {
        return dumped;
    }
    let repositories: Vec<PathBuf> = list(&directory.join("repository"))
        .into_iter()
        .filter(|p| p.is_dir() && pid.is_none_or(|pid| name_of(p).ends_with(&format!("_{pid}"))))
        .collect();
    repositories
        .iter()
        .flat_map(|r| list(r))
        .filter(|p| name_of(p).ends_with(".jfr"))
        .collect()
}

/// Removes the JDK's files once merged, and their directory when nothing else is left in it.
pub fn remove_jdk_files(directory: &Path, files: &[PathBuf]) {
    for f in files {
        let _ = std::fs::remove_file(f);
        if let Some(parent) = f.parent().filter(|p| *p != directory) {
            let _ = std::fs::remove_dir(parent);
        }
    }
    let _ = std::fs::remove_file(derived_settings(directory));
    let _ = std::fs::remove_dir(directory.join("repository"));
    let _ = std::fs::remove_dir(directory);
}

/// Writes `bytes` over `path`: to `PATH.merging` first, renamed over it once whole.
pub fn replace(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let mut partial = path.as_os_str().to_owned();
    partial.push(".merging");
    let partial = PathBuf::from(partial);
    std::fs::write(&partial, bytes).map_err(|e| {
        io::Error::new(e.kind(), format!("cannot write {}: {e}", partial.display()))
    })?;
    std::fs::rename(&partial, path)
        .map_err(|e| io::Error::new(e.kind(), format!("cannot replace {}: {e}", path.display())))
}

/// Reads `files` and merges them.
pub fn merge_files(files: &[PathBuf], jdk_samples: JdkSamples) -> io::Result<(Vec<u8>, Summary)> {
    let contents: Vec<(String, Vec<u8>)> = files
        .iter()
        .map(|f| {
            std::fs::read(f)
                .map(|b| (f.display().to_string(), b))
                .map_err(|e| io::Error::new(e.kind(), format!("cannot read {}: {e}", f.display())))
        })
        .collect::<io::Result<_>>()?;
    let inputs: Vec<Input<'_>> = contents
        .iter()
        .map(|(name, bytes)| Input {
            name: name.clone(),
            bytes,
        })
        .collect();
    let mut out = Vec::with_capacity(contents.iter().map(|(_, b)| b.len()).sum());
    let summary = merge::merge(&inputs, jdk_samples, &mut out).map_err(io::Error::other)?;
    Ok((out, summary))
}

/// The summary in a few lines.
pub fn describe(summary: &Summary) -> Vec<String> {
    let chunks = |o: Origin| summary.chunks.get(&o).copied().unwrap_or(0);
    let mut lines = vec![format!(
        "one recording: {} chunk(s) of the JDK's Flight Recorder and {} of jfr-native, on the \
         JDK's clock",
        chunks(Origin::Jdk),
        chunks(Origin::Ours)
    )];
    if !summary.dropped.is_empty() {
        let left: Vec<String> = summary
            .dropped
            .iter()
            .map(|((o, name), n)| format!("{n} {name} ({o})"))
            .collect();
        lines.push(format!(
            "left out (recorded by the other source, or the JDK's own CPU samples): {}",
            left.join(", ")
        ));
    }
    if !summary.renamed.is_empty() {
        let names: Vec<String> = summary
            .renamed
            .iter()
            .map(|(old, new)| format!("{old} as {new}"))
            .collect();
        lines.push(format!(
            "ours declared differently by the JDK's chunks, renamed (one type each in JMC): {}",
            names.join(", ")
        ));
    }
    if !summary.split.is_empty() {
        let names: Vec<&str> = summary.split.iter().map(String::as_str).collect();
        lines.push(format!(
            "declared differently by the two sources, both with events (JMC shows each as two \
             types): {}",
            names.join(", ")
        ));
    }
    for (name, e) in &summary.damage {
        lines.push(format!(
            "{name}: damaged {e}; its complete chunks before it were merged"
        ));
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_jvm_before_17_gets_its_settings_with_the_samplers_off_in_a_file() {
        let top = tempfile::tempdir().unwrap();
        let home = top.path().join("jdk");
        std::fs::create_dir_all(home.join("bin")).unwrap();
        std::fs::create_dir_all(home.join("lib/jfr")).unwrap();
        let java = home.join("bin/java");
        std::fs::write(&java, "").unwrap();
        std::fs::write(
            home.join("lib/jfr/profile.jfc"),
            "<configuration>\n<event name=\"jdk.ExecutionSample\"><setting \
             name=\"enabled\">true</setting></event>\n</configuration>\n",
        )
        .unwrap();
        let directory = top.path().join("out.jdk");
        // JDK 17 and later, or a JDK that does not say: the overrides, as always.
        std::fs::write(home.join("release"), "JAVA_VERSION=\"17.0.9\"\n").unwrap();
        assert_eq!(settings_for_java("profile", &java, &directory), Ok(None));
        std::fs::remove_file(home.join("release")).unwrap();
        assert_eq!(settings_for_java("profile", &java, &directory), Ok(None));
        assert!(!directory.exists());
        let option = start_option("profile", &directory);
        assert!(
            option.ends_with(
                "out.jdk/,jdk.ExecutionSample#enabled=false,jdk.CPUTimeSample#enabled=false,\
                 jdk.NativeMethodSample#enabled=false"
            ),
            "{option}"
        );
        // JDK 11: its own profile.jfc, copied with the samplers off, and no overrides.
        std::fs::write(home.join("release"), "JAVA_VERSION=\"11.0.13\"\n").unwrap();
        let derived = settings_for_java("profile", &java, &directory)
            .unwrap()
            .unwrap();
        assert_eq!(derived, derived_settings(&directory));
        let text = std::fs::read_to_string(&derived).unwrap();
        assert!(
            text.contains(
                "<event name=\"jdk.ExecutionSample\"><setting name=\"enabled\">false</setting>"
            ),
            "{text}"
        );
        assert!(
            text.contains("<event name=\"jdk.NativeMethodSample\">"),
            "{text}"
        );
        let option = start_option(derived.to_str().unwrap(), &directory);
        assert_eq!(
            option,
            format!(
                "-XX:StartFlightRecording=name=jfrnative,settings={},filename={}/",
                derived.display(),
                directory.display()
            )
        );
        // A settings file that is not there: said, nothing made up.
        let e = settings_for_java("default", &java, &directory).unwrap_err();
        assert!(e.contains("is JDK 11") && e.contains("default.jfc"), "{e}");
        remove_jdk_files(&directory, &[]);
        assert!(!directory.exists());
    }
}
