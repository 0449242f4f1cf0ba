//! `jfrnative record -o DIR/ --upload URL` through an outage: a stand-in endpoint on 127.0.0.1
//! answers 503, then stalls (reads requests and never answers), then accepts. Every chunk file
//! of the recording arrives exactly once and in order (the profiles' start times, read by the
//! official generated code, are the chunk files' start times from their headers, one for one),
//! the values sum to Σ `samplingPeriod` of the chunk files as `jfr print` reads them (within
//! 0.1 %), requests carry the content type, the encoding and the header asked for, and the
//! spool on disk never holds more than its bound. With a bound too small for the outage, the
//! oldest chunks are dropped, said once, and those that arrive still arrive once and in order.
//! `jfr-symbolize --upload` retries a busy endpoint; a bad URL or header is exit 2 and one line
//! naming it, before anything is read or recorded.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tests::jdk::{oracle_jdks, Jdk};
use tests::otlp::{otlp_reader, profile, within, OtlpReader};
use tests::otlp_endpoint::{Answer, FakeEndpoint, Plan, Request};
use tests::readers::{assembled_cpu_ns, chunk_files};
use tests::workload::{agent_library, tool_binary, workload_dir};

/// The spool's bound in the test where an outage outlasts it, bytes (`--spool 14336`): a few
/// bodies, well below the 20-30 KB the outage spools. Most chunks of that recording are
/// 0.8-2 KB gzip-compressed; the first, with the recording's metadata and the JVM's start, is
/// 5 KB on a quiet machine and 9.6-9.9 KB on a loaded one (8 KiB, the bound
/// before, did not hold it).
const SPOOL_BOUND: u64 = 14 << 10;

fn out_dir(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("jfrnative-upload-{}-{test}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The bytes of every file in `dir` (0 when it is missing).
fn dir_bytes(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .filter_map(|e| e.ok()?.metadata().ok())
                .map(|m| m.len())
                .sum()
        })
        .unwrap_or(0)
}

/// `jfrnative record --chunk 1s -o DIR/ --upload URL ... -- java ... Burner SECONDS`, with
/// requests timing out after 1 s; returns its output and the most bytes its spool held, looked
/// at every 10 ms.
fn record(jdk: &Jdk, dir: &Path, url: &str, spool: &str, seconds: f64) -> (Output, u64) {
    let workload = workload_dir();
    let spool_dir = PathBuf::from(format!("{}.spool", dir.display()));
    let peak = Arc::new(AtomicU64::new(0));
    let done = Arc::new(AtomicBool::new(false));
    let watcher = {
        let (peak, done, spool_dir) = (peak.clone(), done.clone(), spool_dir.clone());
        std::thread::spawn(move || {
            while !done.load(Ordering::Acquire) {
                peak.fetch_max(dir_bytes(&spool_dir), Ordering::AcqRel);
                std::thread::sleep(Duration::from_millis(10));
            }
        })
    };
    let out = Command::new(tool_binary("jfrnative"))
        .env_remove("DEBUGINFOD_URLS")
        .env("OTEL_EXPORTER_OTLP_PROFILES_TIMEOUT", "1000")
        .env("OTEL_SERVICE_NAME", "upload-test")
        .arg("record")
        .arg("--agent")
        .arg(agent_library())
        .args(["-i", "10ms", "--chunk", "1s", "--gzip", "--spool", spool])
        .args(["--header", "X-Scope-OrgID=tenant-1"])
        .arg("-o")
        .arg(format!("{}/", dir.display()))
        .args(["--upload", url, "--"])
        .arg(jdk.tool("java"))
        .arg(format!("-Djava.library.path={}", workload.display()))
        .arg("-cp")
        .arg(&workload)
        .args([
            "Burner",
            &seconds.to_string(),
            "w-native:native,w-java:java",
        ])
        .output()
        .unwrap();
    done.store(true, Ordering::Release);
    watcher.join().unwrap();
    assert!(
        out.status.success(),
        "jfrnative: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    (out, peak.load(Ordering::Acquire))
}

/// A chunk file's start, ns since the epoch, from its header (big-endian, at byte 32, after
/// the magic, the version, the size and the two offsets).
fn chunk_start_nanos(file: &Path) -> u64 {
    let bytes = std::fs::read(file).unwrap();
    assert_eq!(&bytes[..4], b"FLR\0", "{}", file.display());
    u64::from_be_bytes(bytes[32..40].try_into().unwrap())
}

/// The accepted requests' bodies, decoded by the official code, in the order they arrived;
/// checks each request's headers.
fn accepted(reader: &OtlpReader, requests: &[Request], dir: &Path) -> Vec<serde_json::Value> {
    let mut files = Vec::new();
    for (i, r) in requests
        .iter()
        .filter(|r| r.answer == Answer::Accepted)
        .enumerate()
    {
        assert_eq!(r.header("content-type"), Some("application/x-protobuf"));
        assert_eq!(r.header("content-encoding"), Some("gzip"));
        assert_eq!(r.header("x-scope-orgid"), Some("tenant-1"));
        let file = dir.join(format!("request-{i}.otlp.pb.gz"));
        std::fs::write(&file, &r.body).unwrap();
        files.push(file);
    }
    let paths: Vec<&Path> = files.iter().map(PathBuf::as_path).collect();
    let summaries = reader.read_all(&paths, false);
    for s in &summaries {
        assert_eq!(s["errors"], serde_json::json!([]), "{}", s["file"]);
        assert_eq!(profile(s)["resource"]["service.name"], "upload-test");
    }
    summaries
}

#[test]
fn every_chunk_arrives_once_and_in_order_through_an_outage() {
    let Some(reader) = otlp_reader() else { return };
    let Some(jdk) = oracle_jdks().into_iter().next() else {
        return;
    };
    let work = out_dir("outage");
    let dir = work.join("rec");
    let endpoint = FakeEndpoint::start(Plan {
        unavailable: Duration::from_secs(2),
        stalled_until: Duration::from_secs(6),
        stall_for: Duration::from_secs(3),
    });
    let bound: u64 = 2 << 20;
    let (out, peak) = record(&jdk, &dir, &endpoint.url, "2mb", 6.0);
    let stderr = String::from_utf8_lossy(&out.stderr);
    eprintln!("{stderr}");
    let requests = endpoint.requests();
    let answers: Vec<Answer> = requests.iter().map(|r| r.answer).collect();
    // The outage happened, with both kinds of failure.
    assert!(answers.contains(&Answer::Unavailable), "{answers:?}");
    assert!(answers.contains(&Answer::Stalled), "{answers:?}");
    assert!(stderr.contains("answers again after"), "{stderr}");
    let summaries = accepted(&reader, &requests, &work);
    let files = chunk_files(&dir);
    assert!(files.len() >= 5, "{} chunk files", files.len());
    // Every chunk file once, in order: the profiles' starts are the chunk files' starts.
    let sent: Vec<u64> = summaries
        .iter()
        .map(|s| profile(s)["time_unix_nano"].as_u64().unwrap())
        .collect();
    let recorded: Vec<u64> = files.iter().map(|f| chunk_start_nanos(f)).collect();
    assert_eq!(sent, recorded, "chunks sent against chunk files");
    // Chunks waited through the outage: the spool held several at once, within its bound.
    // (They were sent back to back as the endpoint came back.)
    let accepted_at: Vec<Duration> = requests
        .iter()
        .filter(|r| r.answer == Answer::Accepted)
        .map(|r| r.at)
        .collect();
    let waited = accepted_at
        .iter()
        .take_while(|at| **at < accepted_at[0] + Duration::from_millis(500))
        .count();
    assert!(
        waited >= 2,
        "{waited} chunks sent as the outage ended: {accepted_at:?}"
    );
    assert!(
        peak > 0 && peak <= bound,
        "spool peak {peak} bytes, bound {bound}"
    );
    let total: u64 = summaries
        .iter()
        .map(|s| profile(s)["total"].as_u64().unwrap())
        .sum();
    let (expected, _) = assembled_cpu_ns(&jdk, &files, &work);
    assert!(
        within(total, expected, 0.001),
        "uploaded {total} ns against jfr print's {expected} ns"
    );
    assert!(
        stderr.contains(&format!(
            "upload: {} chunk(s) sent to {}",
            files.len(),
            endpoint.url
        )),
        "{stderr}"
    );
    assert!(!stderr.contains("dropped"), "{stderr}");
    // Nothing is left in the spool.
    assert_eq!(
        dir_bytes(&PathBuf::from(format!("{}.spool", dir.display()))),
        0
    );
}

#[test]
fn past_its_bound_the_spool_drops_the_oldest_and_says_so_once() {
    let Some(reader) = otlp_reader() else { return };
    let Some(jdk) = oracle_jdks().into_iter().next() else {
        return;
    };
    let work = out_dir("bound");
    let dir = work.join("rec");
    let endpoint = FakeEndpoint::start(Plan {
        unavailable: Duration::from_secs(11),
        stalled_until: Duration::from_secs(11),
        stall_for: Duration::ZERO,
    });
    // A bound of a few chunks: the outage lasts longer than it holds (the 10-15 chunks of the
    // run take 20-30 KB in the default, aggregated shape, gzip-compressed).
    let (out, peak) = record(&jdk, &dir, &endpoint.url, &SPOOL_BOUND.to_string(), 9.0);
    let stderr = String::from_utf8_lossy(&out.stderr);
    eprintln!("{stderr}");
    let requests = endpoint.requests();
    let summaries = accepted(&reader, &requests, &work);
    let files = chunk_files(&dir);
    let recorded: Vec<u64> = files.iter().map(|f| chunk_start_nanos(f)).collect();
    let sent: Vec<u64> = summaries
        .iter()
        .map(|s| profile(s)["time_unix_nano"].as_u64().unwrap())
        .collect();
    // Said once, counted at the end.
    assert_eq!(stderr.matches("passed its bound").count(), 1, "{stderr}");
    let dropped: usize = stderr
        .lines()
        .find_map(|l| {
            l.split("; ")
                .find_map(|p| p.strip_suffix(" dropped to keep the spool within its bound"))
        })
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no dropped count: {stderr}"));
    assert!(dropped >= 1);
    // What arrives, arrives once and in order, and is all the chunks but the dropped ones.
    assert!(sent.windows(2).all(|w| w[0] < w[1]), "{sent:?}");
    assert!(
        sent.iter().all(|s| recorded.contains(s)),
        "{sent:?} {recorded:?}"
    );
    assert_eq!(
        sent.len() + dropped,
        recorded.len(),
        "{sent:?} {recorded:?}"
    );
    // The newest chunks are kept: the last one recorded arrives.
    assert_eq!(sent.last(), recorded.last());
    // Within the bound on disk, but for a body being sent, which is never dropped: the spool
    // drops the oldest bodies before it writes a new one, so that what it holds stays within
    // the bound, or is the body in flight alone and the new one. Every body in flight was
    // posted at least once, so the largest of them is among the requests received.
    let largest = requests.iter().map(|r| r.body.len() as u64).max().unwrap();
    let sizes: Vec<usize> = requests.iter().map(|r| r.body.len()).collect();
    eprintln!(
        "spool peak {peak} bytes: bound {SPOOL_BOUND} + largest body {largest}; bodies {sizes:?}"
    );
    // The premise of that bound: every body fits the bound alone (a body larger than the bound
    // is written whatever the bound, beside the one in flight).
    assert!(
        largest <= SPOOL_BOUND,
        "a body of {largest} bytes: the bound of {SPOOL_BOUND} does not hold it"
    );
    assert!(
        peak <= SPOOL_BOUND + largest,
        "spool peak {peak} bytes, past the bound {SPOOL_BOUND} + one body of {largest}"
    );
}

#[test]
fn jfr_symbolize_sends_one_recording_retrying_a_busy_endpoint() {
    let Some(reader) = otlp_reader() else { return };
    let endpoint = FakeEndpoint::start(Plan {
        unavailable: Duration::from_millis(700),
        stalled_until: Duration::from_millis(700),
        stall_for: Duration::ZERO,
    });
    let work = out_dir("one-shot");
    let input =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../testdata/golden/report_totals.jfr");
    let out = Command::new(tool_binary("jfr-symbolize"))
        .env_remove("DEBUGINFOD_URLS")
        .env("OTEL_EXPORTER_OTLP_HEADERS", "x-scope-orgid=tenant-1")
        .env("OTEL_SERVICE_NAME", "upload-test")
        .arg(&input)
        .args(["--upload", &endpoint.url, "--gzip"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    // No -o: the upload is the only output.
    assert!(out.stdout.is_empty());
    assert!(stderr.contains("HTTP 503; trying again in"), "{stderr}");
    assert!(stderr.contains("sent 13 samples"), "{stderr}");
    let requests = endpoint.requests();
    let answers: Vec<Answer> = requests.iter().map(|r| r.answer).collect();
    assert_eq!(answers.last(), Some(&Answer::Accepted), "{answers:?}");
    assert_eq!(
        answers.iter().filter(|a| **a == Answer::Accepted).count(),
        1
    );
    let summaries = accepted(&reader, &requests, &work);
    // The golden recording's total (the JSON report's: 190 ms with its lost samples).
    assert_eq!(profile(&summaries[0])["total"], 190_000_000);
    assert_eq!(
        profile(&summaries[0])["resource"]["service.name"],
        "upload-test"
    );
}

#[test]
fn a_bad_endpoint_or_header_stops_before_anything_runs() {
    let work = out_dir("bad");
    let input =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../testdata/golden/report_totals.jfr");
    let cases: [(&str, &[&str], &str); 4] = [
        (
            "jfr-symbolize",
            &["--upload", "collector:4318"],
            "jfr-symbolize: bad --upload 'collector:4318': ",
        ),
        (
            "jfr-symbolize",
            &["--upload", "http://h/p", "--header", "token"],
            "jfr-symbolize: bad --header 'token': ",
        ),
        (
            "jfrnative",
            &["--upload", "ftp://h/p"],
            "jfrnative: bad --upload 'ftp://h/p': ",
        ),
        (
            "jfrnative",
            &["--upload", "http://h/p", "--header", "a b=1"],
            "jfrnative: bad --header 'a b=1': ",
        ),
    ];
    for (tool, args, message) in cases {
        let rec = work.join("rec");
        let mut cmd = Command::new(tool_binary(tool));
        if tool == "jfrnative" {
            cmd.args(["record", "--agent"])
                .arg(agent_library())
                .arg("-o")
                .arg(format!("{}/", rec.display()))
                .args(args)
                .args(["--", "java", "-version"]);
        } else {
            cmd.arg(&input).args(args);
        }
        let out = cmd.output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{tool} {args:?}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(stderr.starts_with(message), "{stderr}");
        // Nothing was recorded.
        assert!(!rec.exists(), "{tool} {args:?} made {}", rec.display());
    }
    // A file output cannot take --upload: it needs a directory of chunk files.
    let out = Command::new(tool_binary("jfrnative"))
        .args(["record", "--upload", "http://h/p", "-o"])
        .arg(work.join("one.jfr"))
        .args(["--", "java", "-version"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.starts_with(
            "jfrnative: --upload sends each finished chunk of a directory recording: give -o DIR/"
        ),
        "{stderr}"
    );
}
