//! A real OpenTelemetry Collector (v0.165.0, built from the Collector's own Go modules, feature
//! gate `service.profilesSupport`) receives what `jfrnative record -o DIR/ --upload` and
//! `jfr-symbolize --upload` send, and forwards it over a second OTLP/HTTP hop (its `otlp_http`
//! exporter) to a stand-in that only records bodies. Checked on what the Collector forwarded,
//! decoded by OpenTelemetry's official generated code:
//!
//! - nothing refused or dropped: every chunk file arrives, once; the Collector's own counters
//!   say it accepted and sent every sample, and refused, failed and failed to send none; its
//!   log has no error;
//! - Σ values = Σ `samplingPeriod` (and lost CPU time) as `jfr print` reads the chunk files;
//! - function names (the JNI library's `Java_Burner_nativeBurn`, the Java methods), the
//!   library's GNU build-id as `readelf` gives it, thread names and ids;
//! - Grafana Pyroscope 2.2.1's ingest rules (`pkg/ingester/otlp/convert.go`): `period_type`
//!   and a non-zero `period` on every profile, one value per sample in the default shape. No
//!   Pyroscope server can be built from the registries here (docs/fleet.md), so these rules
//!   are asserted on what the Collector forwarded.
//!
//! The timed shape (`--otlp-shape timed`, one value and one timestamp per sample) passes the
//! Collector unchanged too.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use serde_json::Value;
use tests::collector::{collector_binary, metric_sum, Collector};
use tests::jdk::oracle_jdks;
use tests::otlp::{otlp_reader, profile, within, OtlpReader};
use tests::otlp_endpoint::{Answer, FakeEndpoint, Plan};
use tests::readers::{assembled_cpu_ns, chunk_files, jfr_json};
use tests::symlibs::build_id;
use tests::workload::{agent_library, tool_binary, workload_dir};

const SERVICE: &str = "collector-test";
/// What the OTLP reader says of the Collector's first dictionary attribute.
const COLLECTOR_ZERO_ATTRIBUTE: &str = "attribute_table[0] is not the zero value";

fn out_dir(test: &str) -> PathBuf {
    let dir =
        std::env::temp_dir().join(format!("jfrnative-collector-{}-{test}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A second hop that takes everything at once.
fn next_hop() -> FakeEndpoint {
    FakeEndpoint::start(Plan {
        unavailable: Duration::ZERO,
        stalled_until: Duration::ZERO,
        stall_for: Duration::ZERO,
    })
}

/// The bodies `hop` took, decoded by the official code (with locations), in arrival order.
fn forwarded(reader: &OtlpReader, hop: &FakeEndpoint, work: &Path) -> Vec<Value> {
    let requests = hop.requests();
    assert!(requests.iter().all(|r| r.answer == Answer::Accepted));
    let files: Vec<PathBuf> = requests
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let f = work.join(format!("forwarded-{i}.otlp.pb"));
            std::fs::write(&f, &r.body).unwrap();
            f
        })
        .collect();
    let paths: Vec<&Path> = files.iter().map(PathBuf::as_path).collect();
    let summaries = reader.read_all(&paths, true);
    for s in &summaries {
        // The Collector (v0.165.0) writes the dictionary's first attribute as a KeyValue with an
        // empty value (bytes 12 00), not the zero value the format asks for; our own export's
        // is the zero value (tests/tests/otlp.rs). Every other rule holds.
        let errors: Vec<&Value> = s["errors"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| *e != COLLECTOR_ZERO_ATTRIBUTE)
            .collect();
        assert!(errors.is_empty(), "{}: {errors:?}", s["file"]);
        let p = profile(s);
        assert_eq!(p["resource"]["service.name"], SERVICE);
        // And on every sample, where Pyroscope reads it after a Collector (which writes the
        // resource's attributes as string-table references Pyroscope 2.2.1 does not read).
        for a in p["thread_attributes"].as_array().unwrap() {
            assert_eq!(a["service.name"], SERVICE, "{a}");
        }
        // Pyroscope 2.2.1 names the profile from period_type and refuses period 0.
        assert_eq!(p["period_type"], serde_json::json!(["cpu", "nanoseconds"]));
        assert_eq!(p["period"], 10_000_000);
    }
    summaries
}

/// The Collector's counters after `samples` OTLP samples went through it: all accepted, and
/// sent by the second hop and the debug exporter each; none refused, failed or failed to send;
/// and a log without errors.
fn assert_collector_delivered(collector: &Collector, samples: u64) {
    let hop = "exporter=\"otlp_http/hop0\"";
    let sent = "otelcol_exporter_sent_profile_samples";
    // Its counters are read by its metric reader: give the last export a moment.
    let mut m = collector.metrics();
    for _ in 0..50 {
        if metric_sum(&m, sent, hop) == samples as f64 {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
        m = collector.metrics();
    }
    eprintln!("collector metrics: {m:?}");
    let expected = samples as f64;
    assert_eq!(
        metric_sum(&m, "otelcol_receiver_accepted_profile_samples", ""),
        expected,
        "{m:?}"
    );
    assert_eq!(metric_sum(&m, sent, hop), expected, "{m:?}");
    assert_eq!(
        metric_sum(&m, sent, "exporter=\"debug\""),
        expected,
        "{m:?}"
    );
    for name in [
        "otelcol_receiver_refused_profile_samples",
        "otelcol_receiver_failed_profile_samples",
        "otelcol_exporter_send_failed_profile_samples",
        "otelcol_exporter_enqueue_failed_profile_samples",
    ] {
        assert_eq!(metric_sum(&m, name, ""), 0.0, "{name}: {m:?}");
    }
    let log = collector.log_text();
    assert!(
        !log.lines().any(|l| l.contains("\terror\t")),
        "the Collector logged an error:\n{log}"
    );
    // The debug exporter saw the profiles in detail.
    assert!(
        log.contains("Java_Burner_nativeBurn"),
        "debug exporter's log"
    );
}

/// The OTLP samples (distinct thread and stack) of `summaries`.
fn otlp_samples(summaries: &[Value]) -> u64 {
    summaries
        .iter()
        .map(|s| profile(s)["samples"].as_u64().unwrap())
        .sum()
}

#[test]
fn a_recording_uploaded_while_it_runs_goes_through_a_real_collector_whole() {
    let Some(reader) = otlp_reader() else { return };
    let Some(binary) = collector_binary() else {
        return;
    };
    let Some(jdk) = oracle_jdks().into_iter().next() else {
        return;
    };
    let work = out_dir("record");
    let hop = next_hop();
    let collector = Collector::start(&binary, &work.join("collector"), &[&hop.url]);
    let dir = work.join("rec");
    let workload = workload_dir();
    let out = Command::new(tool_binary("jfrnative"))
        .env_remove("DEBUGINFOD_URLS")
        .env("OTEL_SERVICE_NAME", SERVICE)
        .arg("record")
        .arg("--agent")
        .arg(agent_library())
        .args(["-i", "10ms", "--chunk", "1s"])
        .arg("-o")
        .arg(format!("{}/", dir.display()))
        .args(["--upload", &collector.url, "--"])
        .arg(jdk.tool("java"))
        .arg(format!("-Djava.library.path={}", workload.display()))
        .arg("-cp")
        .arg(&workload)
        .args(["Burner", "4", "w-native:native,w-java:java"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    eprintln!("{stderr}");
    assert!(out.status.success(), "jfrnative: {stderr}");
    let files = chunk_files(&dir);
    assert!(files.len() >= 3, "{} chunk files", files.len());
    assert!(
        stderr.contains(&format!("upload: {} chunk(s) sent to", files.len())),
        "every chunk sent: {stderr}"
    );
    assert!(!stderr.contains("refused") && !stderr.contains("dropped"));

    let summaries = forwarded(&reader, &hop, &work);
    assert_eq!(summaries.len(), files.len(), "one profile per chunk file");
    assert_collector_delivered(&collector, otlp_samples(&summaries));
    let (jfr_ns, whole) = assembled_cpu_ns(&jdk, &files, &work);
    let total: u64 = summaries
        .iter()
        .map(|s| profile(s)["total"].as_u64().unwrap())
        .sum();
    assert!(
        within(total, jfr_ns, 0.001),
        "forwarded {total} ns against jfr print's {jfr_ns} ns"
    );
    eprintln!(
        "collector: {} profiles, {} samples, {total} ns forwarded; jfr print {jfr_ns} ns",
        summaries.len(),
        otlp_samples(&summaries)
    );
    // Aggregated: one value per sample, no timestamps.
    for s in &summaries {
        let p = profile(s);
        assert_eq!(p["values"], p["samples"]);
        assert_eq!(p["timestamps"], 0);
    }

    // Names, the JNI library's build-id, threads.
    let cum = |name: &str| -> u64 {
        summaries
            .iter()
            .map(|s| profile(s)["cum"][name].as_u64().unwrap_or(0))
            .sum()
    };
    for name in [
        "Java_Burner_nativeBurn",
        "Burner.nativeBurn",
        "Burner.javaBurn",
        "Burner.main",
    ] {
        assert!(cum(name) > 0, "{name} forwarded");
    }
    let library = workload.join("libburner.so");
    let expected_id = build_id(&library).expect("readelf gives libburner.so's build-id");
    let burner_mappings: Vec<&Value> = summaries
        .iter()
        .flat_map(|s| s["mappings"].as_array().unwrap())
        .filter(|m| m["filename"].as_str().unwrap().ends_with("/libburner.so"))
        .collect();
    assert!(!burner_mappings.is_empty());
    for m in burner_mappings {
        assert_eq!(
            m["attributes"]["process.executable.build_id.gnu"],
            expected_id
        );
    }
    for thread in ["w-native", "w-java"] {
        let attrs: Vec<&Value> = summaries
            .iter()
            .flat_map(|s| profile(s)["thread_attributes"].as_array().unwrap())
            .filter(|a| a["thread.name"] == thread)
            .collect();
        assert!(!attrs.is_empty(), "{thread}");
        assert!(attrs.iter().all(|a| a["thread.id"].as_i64().is_some()));
    }

    // The same recording in one request from jfr-symbolize, in both shapes.
    let before = hop.requests().len();
    for shape in ["aggregated", "timed"] {
        let out = Command::new(tool_binary("jfr-symbolize"))
            .env_remove("DEBUGINFOD_URLS")
            .env("OTEL_SERVICE_NAME", SERVICE)
            .arg(&whole)
            .args(["--otlp-shape", shape, "--upload", &collector.url])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "jfr-symbolize {shape}: {stderr}");
        assert!(!stderr.contains("rejected"), "{stderr}");
    }
    let all = forwarded(&reader, &hop, &work);
    assert_eq!(all.len(), before + 2);
    // The timed shape has one value per CPU sample and one per loss (as in tests/otlp.rs),
    // both counted by the JDK's own reader.
    let reading = jfr_json(&jdk, &whole).unwrap();
    let losses = reading
        .counts
        .get("jdk.CPUTimeSamplesLost")
        .copied()
        .unwrap_or(0);
    let jfr_values = reading.samples.len() as u64 + losses;
    for (shape, s) in ["aggregated", "timed"].iter().zip(&all[before..]) {
        let p = profile(s);
        assert!(
            within(p["total"].as_u64().unwrap(), jfr_ns, 0.001),
            "{shape}: {} against {jfr_ns}",
            p["total"]
        );
        if *shape == "timed" {
            assert_eq!(
                p["values"].as_u64().unwrap(),
                jfr_values,
                "{shape}: one value per CPU sample ({}) and per loss ({losses})",
                reading.samples.len()
            );
            assert_eq!(p["timestamps"], p["values"], "{shape}");
        } else {
            assert_eq!(p["values"], p["samples"], "{shape}");
        }
    }
    assert_collector_delivered(&collector, otlp_samples(&all));
}
