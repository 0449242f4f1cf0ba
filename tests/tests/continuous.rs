//! Continuous recording into a directory (`file=DIR/`): each chunk a file of its own, a
//! rolling set bounded by `maxage`/`maxsize`, nothing but finished chunks on disk even when the
//! JVM is killed, and every file readable by the JDK's readers, by `jfr assemble` and by
//! `jfr-symbolize DIR`.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant, SystemTime};

use tests::jdk::{oracle_jdks, Jdk};
use tests::readers::{event_times, recording_file_counts, run};
use tests::workload::{java_with_agent, jfr_symbolize, run_java};

fn out_dir(test: &str, jdk: &Jdk) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "jfrnative-continuous-{}-{test}-{}",
        std::process::id(),
        jdk.major
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The names in `dir` ending in `suffix`, sorted.
fn names(dir: &Path, suffix: &str) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut names: Vec<String> = entries
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(suffix))
        .collect();
    names.sort();
    names
}

/// `jdk.CPUTimeSample` events of `file` per RecordingFile on every JDK (they must agree).
fn samples_in(file: &Path) -> u64 {
    let counts: Vec<u64> = oracle_jdks()
        .iter()
        .map(|jdk| {
            recording_file_counts(jdk, file)
                .unwrap_or_else(|e| panic!("{}: {}: {e}", jdk.name(), file.display()))
                .get("jdk.CPUTimeSample")
                .copied()
                .unwrap_or(0)
        })
        .collect();
    assert!(
        counts.windows(2).all(|w| w[0] == w[1]),
        "{}: readers disagree: {counts:?}",
        file.display()
    );
    counts[0]
}

/// `CPU samples: N samples` of jfr-symbolize's text report.
fn report_samples(report: &str) -> u64 {
    report
        .lines()
        .find_map(|l| l.strip_prefix("CPU samples: "))
        .and_then(|l| l.split_whitespace().next()?.parse().ok())
        .unwrap_or_else(|| panic!("no total in the report:\n{report}"))
}

#[test]
fn a_directory_keeps_a_rolling_set_of_chunk_files() {
    for jdk in oracle_jdks() {
        let what = jdk.name();
        let dir = out_dir("rolling", &jdk);
        let repo = dir.join("rec");
        // 1 s chunks for 7 s, files kept for 3 s: the oldest go while the JVM runs.
        let options = format!("file={}/,chunk=1s,maxage=3s,interval=1ms", repo.display());
        let out = run_java(
            &jdk,
            &mut java_with_agent(&jdk, &options, &[], 3.5, "w-native:native,w-java:java"),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let log = String::from_utf8_lossy(&out.stderr);
        let files = names(&repo, ".jfr");
        assert!(
            names(&repo, ".part").is_empty(),
            "{what}: partial files left"
        );
        let removed: u64 = log
            .lines()
            .find_map(|l| l.trim().strip_prefix("chunk files: "))
            .and_then(|l| l.split(", ").nth(1)?.split(' ').next()?.parse().ok())
            .unwrap_or_else(|| panic!("{what}: no chunk files line: {log}"));
        eprintln!(
            "{what}: {} files kept, {removed} removed: {files:?}",
            files.len()
        );
        assert!(
            removed >= 2,
            "{what}: only {removed} files removed by maxage=3s"
        );
        assert!(
            (2..=5).contains(&files.len()),
            "{what}: {} files kept with 1 s chunks and maxage=3s",
            files.len()
        );
        // Each file is one finished chunk, readable on its own; names sort in time order.
        let mut total = 0;
        let mut last_start = i64::MIN;
        for name in &files {
            assert!(
                name.starts_with("jfrnative-") && name.ends_with(".jfr"),
                "{what}: {name}"
            );
            let file = repo.join(name);
            total += samples_in(&file);
            let times = event_times(&jdk, &file, "jdk.CPUTimeSample").unwrap();
            let first = times.iter().copied().min().unwrap_or(i64::MAX);
            assert!(
                first >= last_start,
                "{what}: {name} starts before the file before it"
            );
            last_start = times.iter().copied().max().unwrap_or(last_start);
        }
        assert!(total > 0, "{what}: no samples kept");
        // The JDK's own tool assembles the directory into one recording.
        let assembled = dir.join("assembled.jfr");
        run(Command::new(jdk.tool("jfr"))
            .arg("assemble")
            .arg(&repo)
            .arg(&assembled))
        .unwrap_or_else(|e| panic!("{what}: jfr assemble: {e}"));
        assert_eq!(samples_in(&assembled), total, "{what}: jfr assemble");
        // jfr-symbolize takes the directory, and the same files one by one.
        let report = jfr_symbolize(&[repo.to_str().unwrap()]);
        assert!(report.status.success(), "{what}: {report:?}");
        let text = String::from_utf8_lossy(&report.stdout);
        assert_eq!(report_samples(&text), total, "{what}: jfr-symbolize DIR");
        let paths: Vec<String> = files
            .iter()
            .map(|n| repo.join(n).to_string_lossy().into_owned())
            .collect();
        let args: Vec<&str> = paths.iter().map(String::as_str).collect();
        let report = jfr_symbolize(&args);
        assert!(report.status.success(), "{what}: {report:?}");
        assert_eq!(
            report_samples(&String::from_utf8_lossy(&report.stdout)),
            total,
            "{what}: jfr-symbolize FILE..."
        );
        // One symbolized JFR of the whole directory, read by the JDK.
        let symbolized = dir.join("all.symbolized.jfr");
        let out = jfr_symbolize(&[repo.to_str().unwrap(), "-o", symbolized.to_str().unwrap()]);
        assert!(out.status.success(), "{what}: {out:?}");
        assert_eq!(
            samples_in(&symbolized),
            total,
            "{what}: symbolized directory"
        );
    }
}

#[test]
fn a_killed_jvm_loses_at_most_the_chunk_in_progress() {
    let chunk = Duration::from_secs(1);
    for jdk in oracle_jdks() {
        let what = jdk.name();
        let dir = out_dir("sigkill", &jdk);
        let repo = dir.join("rec");
        let options = format!("file={}/,chunk=1s,interval=1ms", repo.display());
        let mut child = java_with_agent(&jdk, &options, &[], 60.0, "w-native:native")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        // Until 4 chunk files are there (a slow start-up on a loaded machine is waited for).
        let start = Instant::now();
        while names(&repo, ".jfr").len() < 4 && start.elapsed() < Duration::from_secs(60) {
            std::thread::sleep(Duration::from_millis(50));
        }
        std::thread::sleep(Duration::from_millis(600));
        let killed_at = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .unwrap()
            .as_nanos() as i64;
        child.kill().unwrap();
        child.wait().unwrap();
        let files = names(&repo, ".jfr");
        assert!(
            files.len() >= 4,
            "{what}: {} files after the kill",
            files.len()
        );
        // Every .jfr file is complete and readable; a .part file (a chunk being written at the
        // kill) may remain, and is no .jfr file.
        let mut newest = i64::MIN;
        let mut total = 0;
        for name in &files {
            let file = repo.join(name);
            total += samples_in(&file);
            let times = event_times(&jdk, &file, "jdk.CPUTimeSample").unwrap();
            newest = newest.max(times.iter().copied().max().unwrap_or(i64::MIN));
        }
        let lost = Duration::from_nanos((killed_at - newest).max(0) as u64);
        eprintln!(
            "{what}: {} files, {total} samples; the newest sample kept is {lost:?} before the kill",
            files.len()
        );
        // At most the chunk in progress (1 s), plus the writer's period and scheduling slack.
        assert!(
            lost <= chunk + Duration::from_millis(500),
            "{what}: the samples of the last {lost:?} before the kill are lost"
        );
        let report = jfr_symbolize(&[repo.to_str().unwrap()]);
        assert!(report.status.success(), "{what}: {report:?}");
        assert_eq!(
            report_samples(&String::from_utf8_lossy(&report.stdout)),
            total,
            "{what}: jfr-symbolize DIR after the kill"
        );
    }
}
