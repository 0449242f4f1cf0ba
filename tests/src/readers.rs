//! Independent readers of JFR files, each reduced to the same [`Reading`] so that tests can
//! compare them with what the writer was asked to write: the JDK's `jfr print --json`, the JDK's
//! `jdk.jfr.consumer.RecordingFile` (through the `JfrCount` oracle) and the `jfrs` crate.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use jfrs::reader::event::Accessor;
use jfrs::reader::value_descriptor::{Primitive, ValueDescriptor};
use jfrs::reader::JfrReader;
use serde_json::Value;

use crate::jdk::Jdk;
pub use crate::reading::Reading;
use crate::reading::{frame_text, library_line, lost_line, SampleView, SegmentView, CLOCK};

/// Runs a command and returns its stdout, or an error with its stderr.
pub fn run(cmd: &mut Command) -> Result<String, String> {
    let out = cmd.output().map_err(|e| format!("{cmd:?}: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "{cmd:?} exited with {}: {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
                .lines()
                .take(8)
                .collect::<Vec<_>>()
                .join("\n")
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The collapsed stacks (`frame;...;leaf COUNT`) async-profiler's converter makes of `file`
/// with `--cpu-time` and the extra `options`; panics unless it exits 0.
pub fn ap_collapsed(jar: &str, jdk: &Jdk, file: &Path, options: &[&str]) -> Vec<(String, u64)> {
    let out_file = file.with_extension(format!("ap{}.txt", options.join("")));
    let out = Command::new(jdk.tool("java"))
        .arg("-jar")
        .arg(jar)
        .arg("--cpu-time")
        .args(options)
        .args(["-o", "collapsed"])
        .arg(file)
        .arg(&out_file)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "converter on {}: {}{}",
        file.display(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let text = std::fs::read_to_string(&out_file).unwrap();
    text.lines()
        .map(|l| {
            let (stack, n) = l.rsplit_once(' ').unwrap_or_else(|| panic!("{l}"));
            (
                stack.to_string(),
                n.parse().unwrap_or_else(|_| panic!("{l}")),
            )
        })
        .collect()
}

// ---------------------------------------------------------------- jfr print --json

/// The `jdk.CPUTimeSample` events of `path` as `jfr print --json` of `jdk` shows them, with
/// stacks up to 64 frames.
pub fn cpu_sample_events(jdk: &Jdk, path: &Path) -> Result<Vec<Value>, String> {
    let text = run(Command::new(jdk.tool("jfr"))
        .args([
            "print",
            "--json",
            "--stack-depth",
            "64",
            "--events",
            "jdk.CPUTimeSample",
        ])
        .arg(path))?;
    let mut json: Value = serde_json::from_str(&text)
        .map_err(|e| format!("invalid JSON from {}: {e}", jdk.name()))?;
    match json["recording"]["events"].take() {
        Value::Array(events) => Ok(events),
        _ => Err("no recording.events array".into()),
    }
}

/// The `jfrnative.JvmCode` events of `path` (code the JVM generated, named) as `jfr print
/// --json` of `jdk` reads them: (name, start, end).
pub fn jvm_code_ranges(jdk: &Jdk, path: &Path) -> Result<Vec<(String, u64, u64)>, String> {
    let text = run(Command::new(jdk.tool("jfr"))
        .args(["print", "--json", "--events", "jfrnative.JvmCode"])
        .arg(path))?;
    let json: Value = serde_json::from_str(&text)
        .map_err(|e| format!("invalid JSON from {}: {e}", jdk.name()))?;
    json["recording"]["events"]
        .as_array()
        .ok_or("no recording.events array")?
        .iter()
        .map(|e| {
            let v = &e["values"];
            match (
                v["name"].as_str(),
                v["startAddress"].as_u64(),
                v["endAddress"].as_u64(),
            ) {
                (Some(name), Some(start), Some(end)) => Ok((name.to_string(), start, end)),
                _ => Err(format!("a jfrnative.JvmCode event without its fields: {v}")),
            }
        })
        .collect()
}

/// The CPU time of the lost samples (`jdk.CPUTimeSamplesLost.lostCpuTime`, a jfr-native field)
/// by thread name, in ticks of [`CLOCK`], as `jfr print --json` of `jdk` reads it.
pub fn lost_cpu_ticks_by_thread(jdk: &Jdk, path: &Path) -> Result<BTreeMap<String, u64>, String> {
    let text = run(Command::new(jdk.tool("jfr"))
        .args(["print", "--json", "--events", "jdk.CPUTimeSamplesLost"])
        .arg(path))?;
    let json: Value = serde_json::from_str(&text)
        .map_err(|e| format!("invalid JSON from {}: {e}", jdk.name()))?;
    let mut lost = BTreeMap::new();
    for e in json["recording"]["events"].as_array().into_iter().flatten() {
        let v = &e["values"];
        // A thread that is not a Java thread (`threads=all`) by its OS name.
        let thread = v["eventThread"]["javaName"]
            .as_str()
            .or(v["eventThread"]["osName"].as_str())
            .unwrap_or("null");
        let ticks = match v["lostCpuTime"].as_str() {
            Some(d) => iso_duration_ticks(d)?,
            None => return Err("a lost-samples event without lostCpuTime".into()),
        };
        *lost.entry(thread.to_string()).or_default() += ticks;
    }
    Ok(lost)
}

/// Reads `path` with `jfr print --json` of `jdk`.
pub fn jfr_json(jdk: &Jdk, path: &Path) -> Result<Reading, String> {
    // `jfr print` keeps only the top 5 frames of a stack unless told otherwise.
    let text = run(Command::new(jdk.tool("jfr"))
        .args(["print", "--json", "--stack-depth", "100000"])
        .arg(path))?;
    let json: Value = serde_json::from_str(&text)
        .map_err(|e| format!("invalid JSON from {}: {e}", jdk.name()))?;
    let events = json["recording"]["events"]
        .as_array()
        .ok_or("no recording.events array")?;
    let mut r = Reading::default();
    for e in events {
        let ty = e["type"].as_str().ok_or("event without type")?.to_string();
        *r.counts.entry(ty.clone()).or_default() += 1;
        let v = &e["values"];
        match ty.as_str() {
            "jdk.CPUTimeSample" => r.samples.push(json_sample(v)?),
            "jdk.NativeLibrary" => r.libraries.push(library_line(
                v["name"].as_str().unwrap_or("null"),
                json_u64(&v["baseAddress"])?,
                json_u64(&v["topAddress"])?,
                v["buildId"].as_str(),
                json_u64(&v["fileOffset"])?,
            )),
            "jdk.CPUTimeSamplesLost" => r.lost.push(lost_line(
                v["lostSamples"].as_i64().ok_or("lostSamples")?,
                v["eventThread"]["osThreadId"].as_i64(),
                v["reason"].as_str().unwrap_or("null"),
            )),
            _ => {}
        }
    }
    Ok(r.sorted())
}

fn json_u64(v: &Value) -> Result<u64, String> {
    v.as_u64()
        .or_else(|| v.as_i64().map(|i| i as u64))
        .ok_or_else(|| format!("not a number: {v}"))
}

/// `PT0.01S`-style ISO-8601 durations, as `jfr print --json` writes timespans, in ticks.
pub fn iso_duration_ticks(s: &str) -> Result<u64, String> {
    let body = s
        .strip_prefix("PT")
        .ok_or_else(|| format!("not a duration: {s}"))?;
    let mut nanos: u128 = 0;
    let mut number = String::new();
    for c in body.chars() {
        match c {
            '0'..='9' | '.' => number.push(c),
            'H' | 'M' | 'S' => {
                let (int, frac) = number.split_once('.').unwrap_or((&number, ""));
                let int: u128 = int.parse().map_err(|_| format!("bad duration {s}"))?;
                let frac_nanos: u128 = format!("{frac:0<9}")[..9]
                    .parse()
                    .map_err(|_| format!("bad duration {s}"))?;
                let unit = match c {
                    'H' => 3_600,
                    'M' => 60,
                    _ => 1,
                };
                nanos += (int * 1_000_000_000 + frac_nanos) * unit;
                number.clear();
            }
            _ => return Err(format!("unsupported duration {s}")),
        }
    }
    Ok((nanos * u128::from(CLOCK.ticks_per_second) / 1_000_000_000) as u64)
}

fn json_sample(v: &Value) -> Result<SampleView, String> {
    let st = &v["stackTrace"];
    let java = st["frames"]
        .as_array()
        .map(|frames| {
            frames
                .iter()
                .map(|f| {
                    frame_text(
                        f["method"]["type"]["name"].as_str().unwrap_or("?"),
                        f["method"]["name"].as_str().unwrap_or("?"),
                        f["lineNumber"].as_i64().unwrap_or(i64::MIN),
                        f["type"].as_str().unwrap_or("?"),
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    let nst = &v["nativeStackTrace"];
    let pcs = match nst["frames"].as_array() {
        Some(frames) => frames
            .iter()
            .map(|f| json_u64(&f["pc"]))
            .collect::<Result<_, _>>()?,
        None => vec![],
    };
    let mut segments = Vec::new();
    for s in nst["segments"].as_array().into_iter().flatten() {
        let pcs: Vec<u64> = s["frames"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|f| json_u64(&f["pc"]))
            .collect::<Result<_, _>>()?;
        segments.push(SegmentView {
            java_frame_index: s["javaFrameIndex"].as_i64().ok_or("javaFrameIndex")?,
            truncated: s["truncated"].as_bool().ok_or("segment truncated")?,
            pcs,
        });
    }
    Ok(SampleView {
        thread: v["eventThread"]["javaName"]
            .as_str()
            .unwrap_or("null")
            .to_string(),
        tid: v["eventThread"]["osThreadId"].as_i64().unwrap_or(-1),
        period_ticks: iso_duration_ticks(v["samplingPeriod"].as_str().ok_or("samplingPeriod")?)?,
        failed: v["failed"].as_bool().ok_or("failed")?,
        java_truncated: st["truncated"].as_bool(),
        java,
        native_truncated: nst["truncated"].as_bool(),
        pcs,
        segments,
    })
}

// ---------------------------------------------------------------- RecordingFile (JfrCount)

/// What the `JfrCount` oracle (`jdk.jfr.consumer.RecordingFile`) printed.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct OracleReading {
    /// `COUNT` lines.
    pub counts: BTreeMap<String, u64>,
    /// `NATIVE` lines of `jdk.CPUTimeSample`, as [`SampleView::pcs_text`], sorted.
    pub native: Vec<String>,
    /// `STACK` blocks of `jdk.CPUTimeSample`, as [`SampleView::java_text`], sorted.
    pub java: Vec<String>,
}

fn oracle_source() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../testdata/oracles/JfrCount.java")
}

/// Compiles the oracle once (with `--release 11`, so that every JDK's `RecordingFile` runs it).
fn oracle_classes(jdk: &Jdk) -> Result<PathBuf, String> {
    static CLASSES: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    CLASSES
        .get_or_init(|| {
            let javac = crate::jdk::javac_for(jdk)
                .ok_or("no javac found to compile the JfrCount oracle")?;
            let dir =
                std::env::temp_dir().join(format!("jfrnative-jfrcount-{}", std::process::id()));
            std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
            run(Command::new(javac)
                .args(["--release", "11", "-d"])
                .arg(&dir)
                .arg(oracle_source()))?;
            Ok(dir)
        })
        .clone()
}

/// The start time (ns since the epoch) of every `event_type` event of `path`, as
/// `RecordingFile` on `jdk` reads it (the `JfrCount` oracle's `--times`).
pub fn event_times(jdk: &Jdk, path: &Path, event_type: &str) -> Result<Vec<i64>, String> {
    Ok(all_event_times(jdk, path)?
        .remove(event_type)
        .unwrap_or_default())
}

/// Every event's start time (ns since the epoch) by type, in file order, as `RecordingFile`
/// on `jdk` reads them (the `JfrCount` oracle's `TIME` lines).
pub fn all_event_times(jdk: &Jdk, path: &Path) -> Result<BTreeMap<String, Vec<i64>>, String> {
    let classes = oracle_classes(jdk)?;
    let text = run(Command::new(jdk.tool("java"))
        .arg("-cp")
        .arg(classes)
        .args(["JfrCount", "--no-pcs", "--times"])
        .arg(path))?;
    let mut times: BTreeMap<String, Vec<i64>> = BTreeMap::new();
    for line in text.lines() {
        let mut w = line.split(' ');
        if w.next() != Some("TIME") {
            continue;
        }
        let (Some(ty), Some(Ok(t))) = (w.next(), w.next().map(str::parse::<i64>)) else {
            return Err(format!("a TIME line without a type and time: {line}"));
        };
        times.entry(ty.to_string()).or_default().push(t);
    }
    Ok(times)
}

/// The events of `path` by type, as `RecordingFile` on `jdk` counts them (the `JfrCount`
/// oracle's `COUNT` lines only: any stack or symbol text is fine).
pub fn recording_file_counts(jdk: &Jdk, path: &Path) -> Result<BTreeMap<String, u64>, String> {
    let classes = oracle_classes(jdk)?;
    let text = run(Command::new(jdk.tool("java"))
        .arg("-cp")
        .arg(classes)
        .args(["JfrCount", "--no-pcs", "--stacks", "0"])
        .arg(path))?;
    text.lines()
        .filter_map(|l| l.strip_prefix("COUNT "))
        .map(|l| {
            let (ty, n) = l.rsplit_once(' ').ok_or_else(|| l.to_string())?;
            Ok((ty.to_string(), n.parse().map_err(|_| l.to_string())?))
        })
        .collect()
}

/// Reads `path` with `RecordingFile` on `jdk` through the `JfrCount` oracle.
pub fn recording_file(jdk: &Jdk, path: &Path) -> Result<OracleReading, String> {
    let classes = oracle_classes(jdk)?;
    let text = run(Command::new(jdk.tool("java"))
        .arg("-cp")
        .arg(classes)
        .args(["JfrCount", "--stacks", "1000000"])
        .arg(path))?;
    let mut r = OracleReading::default();
    let mut current: Option<(String, Vec<String>)> = None;
    let flush = |current: &mut Option<(String, Vec<String>)>, java: &mut Vec<String>| {
        if let Some((truncated, frames)) = current.take() {
            java.push(format!(
                "java_truncated={truncated} java=[{}]",
                frames.join(",")
            ));
        }
    };
    for line in text.lines() {
        let words: Vec<&str> = line.split(' ').collect();
        match words.as_slice() {
            ["COUNT", ty, n] => {
                r.counts
                    .insert(ty.to_string(), n.parse().map_err(|_| line.to_string())?);
            }
            ["NATIVE", "jdk.CPUTimeSample", _n, pcs @ ..] => {
                let pcs: Vec<String> = pcs
                    .iter()
                    .map(|p| {
                        u64::from_str_radix(p.trim_start_matches("0x"), 16)
                            .map(|pc| format!("{pc:#x}"))
                    })
                    .collect::<Result<_, _>>()
                    .map_err(|_| line.to_string())?;
                r.native.push(format!("pcs=[{}]", pcs.join(",")));
            }
            ["STACK-BEGIN", "jdk.CPUTimeSample", _frames, truncated] => {
                flush(&mut current, &mut r.java);
                current = Some((
                    truncated.trim_start_matches("truncated=").to_string(),
                    vec![],
                ));
            }
            ["STACK-BEGIN", ..] => flush(&mut current, &mut r.java),
            ["STACK", "jdk.CPUTimeSample", rest @ ..] => {
                // "<frameType words...> <class>.<method> line=<n>": the type may contain spaces.
                let (line_word, rest) = rest.split_last().ok_or(line.to_string())?;
                let (method, type_words) = rest.split_last().ok_or(line.to_string())?;
                let line_no: i64 = line_word
                    .trim_start_matches("line=")
                    .parse()
                    .map_err(|_| line.to_string())?;
                let (class, name) = method.rsplit_once('.').ok_or(line.to_string())?;
                if let Some((_, frames)) = current.as_mut() {
                    frames.push(frame_text(class, name, line_no, &type_words.join(" ")));
                }
            }
            _ => {}
        }
    }
    flush(&mut current, &mut r.java);
    r.native.sort();
    r.java.sort();
    Ok(r)
}

// ---------------------------------------------------------------- jfrs

/// Reads `path` with the `jfrs` crate; also returns the number of chunks.
pub fn jfrs(path: &Path) -> Result<(Reading, u64), String> {
    let file = std::fs::File::open(path).map_err(|e| e.to_string())?;
    let mut reader = JfrReader::new(file);
    let mut r = Reading::default();
    let mut chunks = 0;
    for chunk in reader.chunks() {
        let (mut chunk_reader, chunk) = chunk.map_err(|e| format!("jfrs: {e:?}"))?;
        chunks += 1;
        for event in chunk_reader.events(&chunk) {
            let event = event.map_err(|e| format!("jfrs: {e:?}"))?;
            let ty = event.class.name().to_string();
            *r.counts.entry(ty.clone()).or_default() += 1;
            let v = event.value();
            match ty.as_str() {
                "jdk.CPUTimeSample" => r.samples.push(jfrs_sample(&v)?),
                "jdk.NativeLibrary" => r.libraries.push(library_line(
                    &string(&v, "name").unwrap_or_else(|| "null".into()),
                    long(&v, "baseAddress")? as u64,
                    long(&v, "topAddress")? as u64,
                    string(&v, "buildId").as_deref(),
                    long(&v, "fileOffset")? as u64,
                )),
                "jdk.CPUTimeSamplesLost" => r.lost.push(lost_line(
                    long(&v, "lostSamples")?,
                    v.get_field("eventThread")
                        .and_then(|t| long(&t, "osThreadId").ok()),
                    &string(&v, "reason").unwrap_or_else(|| "null".into()),
                )),
                _ => {}
            }
        }
    }
    Ok((r.sorted(), chunks))
}

fn long(v: &Accessor<'_>, name: &str) -> Result<i64, String> {
    match v.get_field(name).map(|f| f.value) {
        Some(ValueDescriptor::Primitive(Primitive::Long(x))) => Ok(*x),
        Some(ValueDescriptor::Primitive(Primitive::Integer(x))) => Ok(i64::from(*x)),
        other => Err(format!("field {name}: {other:?}")),
    }
}

fn boolean(v: &Accessor<'_>, name: &str) -> Option<bool> {
    match v.get_field(name).map(|f| f.value) {
        Some(ValueDescriptor::Primitive(Primitive::Boolean(b))) => Some(*b),
        _ => None,
    }
}

/// A string field, unwrapping a simple type (`jdk.types.Symbol` has `string`,
/// `jdk.types.FrameType` has `description`).
fn string(v: &Accessor<'_>, name: &str) -> Option<String> {
    let f = v.get_field(name)?;
    match f.value {
        ValueDescriptor::Primitive(Primitive::String(s)) => Some(s.to_string()),
        ValueDescriptor::Object(o) if o.fields.len() == 1 => ["string", "description"]
            .iter()
            .find_map(|inner| string(&f, inner)),
        _ => None,
    }
}

fn jfrs_sample(v: &Accessor<'_>) -> Result<SampleView, String> {
    let thread = v.get_field("eventThread");
    let st = v.get_field("stackTrace");
    let mut java = Vec::new();
    if let Some(frames) = st
        .as_ref()
        .and_then(|s| s.get_field("frames"))
        .and_then(|f| f.as_iter())
    {
        for f in frames {
            let method = f.get_field("method").ok_or("frame without method")?;
            let class = method
                .get_field("type")
                .and_then(|c| string(&c, "name"))
                .unwrap_or_else(|| "?".into());
            let name = string(&method, "name").unwrap_or_else(|| "?".into());
            let frame_type = string(&f, "type").unwrap_or_else(|| "?".into());
            java.push(frame_text(
                &class,
                &name,
                long(&f, "lineNumber")?,
                &frame_type,
            ));
        }
    }
    let nst = v.get_field("nativeStackTrace");
    let mut pcs = Vec::new();
    if let Some(frames) = nst
        .as_ref()
        .and_then(|s| s.get_field("frames"))
        .and_then(|f| f.as_iter())
    {
        for f in frames {
            pcs.push(long(&f, "pc")? as u64);
        }
    }
    let mut segments = Vec::new();
    if let Some(items) = nst
        .as_ref()
        .and_then(|s| s.get_field("segments"))
        .and_then(|f| f.as_iter())
    {
        for s in items {
            let mut pcs = Vec::new();
            if let Some(frames) = s.get_field("frames").and_then(|f| f.as_iter()) {
                for f in frames {
                    pcs.push(long(&f, "pc")? as u64);
                }
            }
            segments.push(SegmentView {
                java_frame_index: long(&s, "javaFrameIndex")?,
                truncated: boolean(&s, "truncated").ok_or("segment truncated")?,
                pcs,
            });
        }
    }
    Ok(SampleView {
        thread: thread
            .as_ref()
            .and_then(|t| string(t, "javaName"))
            .unwrap_or_else(|| "null".into()),
        tid: thread.as_ref().map_or(Ok(-1), |t| long(t, "osThreadId"))?,
        period_ticks: long(v, "samplingPeriod")? as u64,
        failed: boolean(v, "failed").ok_or("failed")?,
        java_truncated: st.as_ref().and_then(|s| boolean(s, "truncated")),
        java,
        native_truncated: nst.as_ref().and_then(|s| boolean(s, "truncated")),
        pcs,
        segments,
    })
}

// ---------------------------------------------------------------- jfr-symbolize --format json

/// (flat, cum) CPU ns of the frames named `name`, from `jfr-symbolize --format json`'s
/// stacks: flat where it is the leaf, cum where it is anywhere in the stack.
pub fn report_flat_cum(json: &Value, name: &str) -> (u64, u64) {
    let frames = json["frames"].as_array().unwrap();
    let named = |id: &Value| frames[id.as_u64().unwrap() as usize]["name"] == name;
    let (mut flat, mut cum) = (0, 0);
    for stack in json["stacks"].as_array().unwrap() {
        let ids = stack["frames"].as_array().unwrap();
        let ns = stack["weight"]["cpuNanos"].as_u64().unwrap();
        if ids.first().is_some_and(named) {
            flat += ns;
        }
        if ids.iter().any(named) {
            cum += ns;
        }
    }
    (flat, cum)
}

/// The chunk files (`*.jfr`) of a directory recording, in name (time) order.
pub fn chunk_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "jfr"))
        .collect();
    files.sort();
    files
}

/// Σ `samplingPeriod` and lost CPU time of `files`, ns, as `jfr print` of `jdk` reads the
/// recording `jfr assemble` makes of them (in `work`); and that recording.
pub fn assembled_cpu_ns(jdk: &Jdk, files: &[PathBuf], work: &Path) -> (u64, PathBuf) {
    let parts = work.join("assemble");
    std::fs::create_dir_all(&parts).unwrap();
    for f in files {
        std::fs::copy(f, parts.join(f.file_name().unwrap())).unwrap();
    }
    let whole = work.join("whole.jfr");
    run(Command::new(jdk.tool("jfr"))
        .arg("assemble")
        .arg(&parts)
        .arg(&whole))
    .unwrap();
    let lost: u64 = lost_cpu_ticks_by_thread(jdk, &whole)
        .unwrap()
        .values()
        .sum();
    // Lost CPU time is read in ticks of µs.
    (
        jfr_json(jdk, &whole).unwrap().period_ns() + lost * 1_000,
        whole,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_iso_durations() {
        assert_eq!(iso_duration_ticks("PT0.01S"), Ok(10_000));
        assert_eq!(iso_duration_ticks("PT0S"), Ok(0));
        assert_eq!(iso_duration_ticks("PT1M0.5S"), Ok(60_500_000));
        assert!(iso_duration_ticks("P1D").is_err());
    }
}
