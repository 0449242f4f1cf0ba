//! Golden JFR files: regenerated from fixed inputs and compared byte for byte with
//! `testdata/golden/*.jfr` (bless with `UPDATE_GOLDEN=1`).

use std::path::PathBuf;

use tests::golden::all_cases;

fn golden_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../testdata/golden")
}

#[test]
fn golden_files_are_byte_identical() {
    let update = std::env::var_os("UPDATE_GOLDEN").is_some();
    let mut mismatches = Vec::new();
    for case in all_cases() {
        let path = golden_dir().join(format!("{}.jfr", case.name));
        if update {
            std::fs::write(&path, &case.bytes).unwrap();
            continue;
        }
        match std::fs::read(&path) {
            Ok(committed) if committed == case.bytes => {}
            Ok(committed) => {
                let first = committed.iter().zip(&case.bytes).position(|(a, b)| a != b);
                mismatches.push(format!(
                    "{}: {} bytes committed, {} generated, first difference at {:?}",
                    path.display(),
                    committed.len(),
                    case.bytes.len(),
                    first
                ));
            }
            Err(e) => mismatches.push(format!(
                "{}: {e} (run with UPDATE_GOLDEN=1)",
                path.display()
            )),
        }
    }
    assert!(
        mismatches.is_empty(),
        "golden files differ:\n{}",
        mismatches.join("\n")
    );
}

use std::process::Command;

use tests::golden::Case;
use tests::jdk::{oracle_jdks, required};
use tests::readers::{jfr_json, jfrs, recording_file, run, Reading};

fn golden_path(case: &Case) -> PathBuf {
    golden_dir().join(format!("{}.jfr", case.name))
}

/// Compares field by field so a failure names what differs.
fn assert_reading(reader: &str, case: &Case, got: &Reading) {
    let want = &case.expected.reading;
    assert_eq!(
        got.counts, want.counts,
        "{reader}, {}: event counts",
        case.name
    );
    for (g, w) in got.samples.iter().zip(&want.samples) {
        assert_eq!(
            g.to_string(),
            w.to_string(),
            "{reader}, {}: a CPU-time sample",
            case.name
        );
    }
    assert_eq!(
        got.samples.len(),
        want.samples.len(),
        "{reader}, {}: samples",
        case.name
    );
    assert_eq!(
        got.libraries, want.libraries,
        "{reader}, {}: native libraries",
        case.name
    );
    assert_eq!(got.lost, want.lost, "{reader}, {}: lost samples", case.name);
}

#[test]
fn jfrs_reads_every_golden_file() {
    for case in all_cases() {
        let (reading, chunks) =
            jfrs(&golden_path(&case)).unwrap_or_else(|e| panic!("{}: {e}", case.name));
        assert_eq!(chunks, case.expected.chunks, "{}: chunks", case.name);
        assert_reading("jfrs", &case, &reading);
    }
}

#[test]
fn jdk_json_reads_every_golden_file() {
    for jdk in oracle_jdks() {
        for case in all_cases() {
            let reading = jfr_json(&jdk, &golden_path(&case))
                .unwrap_or_else(|e| panic!("{}: {e}", case.name));
            assert_reading(
                &format!("jfr print --json of {}", jdk.name()),
                &case,
                &reading,
            );
        }
    }
}

#[test]
fn recording_file_reads_every_golden_file() {
    for jdk in oracle_jdks() {
        for case in all_cases() {
            let got = recording_file(&jdk, &golden_path(&case))
                .unwrap_or_else(|e| panic!("{}: {e}", case.name));
            let reader = format!("RecordingFile of {}", jdk.name());
            assert_eq!(
                got.counts, case.expected.reading.counts,
                "{reader}, {}: counts",
                case.name
            );
            let mut native: Vec<String> = case
                .expected
                .reading
                .samples
                .iter()
                .map(|s| s.pcs_text())
                .collect();
            native.sort();
            assert_eq!(got.native, native, "{reader}, {}: native stacks", case.name);
            let mut java: Vec<String> = case
                .expected
                .reading
                .samples
                .iter()
                .filter_map(|s| s.java_text())
                .collect();
            java.sort();
            assert_eq!(got.java, java, "{reader}, {}: Java stacks", case.name);
        }
    }
}

/// Event types with an array field anywhere (text `jfr print` cannot print them: JDK bug).
const HAS_ARRAY_FIELD: &[&str] = &["jdk.CPUTimeSample"];

#[test]
fn jfr_tool_accepts_every_golden_file() {
    for jdk in oracle_jdks() {
        let jfr = jdk.tool("jfr");
        for case in all_cases() {
            let path = golden_path(&case);
            let summary = run(Command::new(&jfr).arg("summary").arg(&path)).unwrap();
            assert!(
                summary.contains(&format!("Chunks: {}", case.expected.chunks)),
                "{}: {summary}",
                case.name
            );
            for (ty, n) in &case.expected.reading.counts {
                let row = summary
                    .lines()
                    .find(|l| l.split_whitespace().next() == Some(ty));
                let count = row.and_then(|l| l.split_whitespace().nth(1));
                assert_eq!(
                    count,
                    Some(n.to_string().as_str()),
                    "{} summary of {}: {ty}",
                    jdk.name(),
                    case.name
                );
            }
            let metadata = run(Command::new(&jfr).arg("metadata").arg(&path)).unwrap();
            assert!(
                metadata.contains("  NativeStackTrace nativeStackTrace;"),
                "{}: metadata",
                case.name
            );
            let frame = metadata
                .split("@Name(\"jdk.NativeStackFrame\")")
                .nth(1)
                .unwrap_or_default();
            let frame = frame.split('}').next().unwrap_or_default();
            for want in ["@Unsigned", "@MemoryAddress", "long pc;"] {
                assert!(
                    frame.contains(want),
                    "{}: NativeStackFrame lacks {want}: {frame}",
                    case.name
                );
            }
            for ty in case
                .expected
                .reading
                .counts
                .keys()
                .filter(|t| !HAS_ARRAY_FIELD.contains(&t.as_str()))
            {
                let text = run(Command::new(&jfr)
                    .args(["print", "--events", ty])
                    .arg(&path))
                .unwrap_or_else(|e| {
                    panic!("{} text print of {ty} in {}: {e}", jdk.name(), case.name)
                });
                let printed = text
                    .lines()
                    .filter(|l| l.starts_with(&format!("{ty} {{")))
                    .count() as u64;
                assert_eq!(
                    printed,
                    case.expected.reading.counts[ty],
                    "{} text print of {ty} in {}",
                    jdk.name(),
                    case.name
                );
            }
        }
    }
}

#[test]
fn text_print_shows_library_addresses_in_hex() {
    let Some(jdk) = oracle_jdks().into_iter().next() else {
        return;
    };
    let path = golden_dir().join("single_chunk.jfr");
    let text = run(Command::new(jdk.tool("jfr"))
        .args(["print", "--events", "jdk.NativeLibrary"])
        .arg(&path))
    .unwrap();
    assert!(text.contains("baseAddress = 0x7F1000000000"), "{text}");
    assert!(
        text.contains("baseAddress = 0xFFFFFFFFFF600000"),
        "unsigned address: {text}"
    );
    assert!(
        text.contains("buildId = \"0123456789abcdef0123456789abcdef01234567\""),
        "{text}"
    );
}

/// The header fields a structural walk checks.
struct Header {
    size: u64,
    checkpoint_offset: u64,
    metadata_offset: u64,
    start_nanos: i64,
    start_ticks: i64,
    ticks_per_second: i64,
    state: u8,
    flags: u16,
}

fn be(bytes: &[u8], at: usize) -> u64 {
    u64::from_be_bytes(bytes[at..at + 8].try_into().unwrap())
}

fn headers(bytes: &[u8]) -> Vec<Header> {
    let mut at = 0;
    let mut out = Vec::new();
    while at < bytes.len() {
        let h = &bytes[at..];
        assert_eq!(&h[..4], b"FLR\0", "magic at {at}");
        assert_eq!(u16::from_be_bytes([h[4], h[5]]), 2, "major version");
        let header = Header {
            size: be(h, 8),
            checkpoint_offset: be(h, 16),
            metadata_offset: be(h, 24),
            start_nanos: be(h, 32) as i64,
            start_ticks: be(h, 48) as i64,
            ticks_per_second: be(h, 56) as i64,
            state: h[64],
            flags: u16::from_be_bytes([h[66], h[67]]),
        };
        at += header.size as usize;
        out.push(header);
    }
    assert_eq!(at, bytes.len(), "chunks end exactly at the end of the file");
    out
}

#[test]
fn chunk_headers_follow_the_format_rules() {
    for case in all_cases() {
        let hs = headers(&case.bytes);
        assert_eq!(hs.len() as u64, case.expected.chunks, "{}", case.name);
        let first = &hs[0];
        for (i, h) in hs.iter().enumerate() {
            let what = format!("{} chunk {i}", case.name);
            assert_eq!(h.state, 0, "{what}: finished");
            assert_eq!(h.flags & 1, 1, "{what}: compressed integers");
            assert_eq!(
                h.flags & 2 != 0,
                i == hs.len() - 1,
                "{what}: final-chunk flag on the last chunk only"
            );
            assert!(
                h.metadata_offset >= 68 && h.metadata_offset < h.size,
                "{what}: metadata offset"
            );
            assert!(
                h.checkpoint_offset >= 68 && h.checkpoint_offset < h.size,
                "{what}: checkpoint offset"
            );
            // One clock: every chunk's (start ticks, start nanos) lies on the first chunk's mapping.
            assert_eq!(
                h.ticks_per_second, first.ticks_per_second,
                "{what}: tick rate"
            );
            let predicted = first.start_nanos
                + (h.start_ticks - first.start_ticks) * (1_000_000_000 / h.ticks_per_second);
            assert!(
                (h.start_nanos - predicted).abs() <= 1,
                "{what}: start time off the file's clock"
            );
            if i > 0 {
                assert!(
                    h.start_nanos > hs[i - 1].start_nanos,
                    "{what}: distinct, increasing start times"
                );
            }
        }
    }
}

/// What async-profiler's converter needs of every file, raw ones included: symbols in UTF-8
/// and HotSpot's frame-type keys (`tests/src/format_rules.rs`).
#[test]
fn golden_files_follow_the_rules_other_readers_need() {
    for case in all_cases() {
        let path = golden_path(&case);
        tests::format_rules::check_symbols_utf8(&path);
        tests::format_rules::check_frame_type_keys(&path);
    }
}

/// JDK 25's `jfr scrub` rewrites a file through the JDK's own chunk writer; what it writes must
/// read back as what we wrote.
#[test]
fn jdk25_scrub_round_trip_preserves_every_event() {
    let Some(jdk) = required(25) else {
        return;
    };
    let dir = std::env::temp_dir().join(format!("jfrnative-scrub-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for case in all_cases() {
        let out = dir.join(format!("{}.jfr", case.name));
        let _ = std::fs::remove_file(&out);
        run(Command::new(jdk.tool("jfr"))
            .arg("scrub")
            .arg(golden_path(&case))
            .arg(&out))
        .unwrap();
        let reading = jfr_json(&jdk, &out).unwrap_or_else(|e| panic!("{}: {e}", case.name));
        assert_reading("jfr scrub + jfr print --json", &case, &reading);
    }
    let _ = std::fs::remove_dir_all(&dir);
}
