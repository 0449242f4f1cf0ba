//! OpenTelemetry's official generated code (PyPI `opentelemetry-proto` 1.45.x, from proto
//! v1.10.0) as the independent reader of the OTLP export: `testdata/otlp/check_otlp.py` decodes
//! each file with `profiles_service_pb2` and prints a JSON summary (totals, threads, flat and
//! cumulative values per function, locations, mappings, and the format's rules it breaks).

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::readers::run;
use crate::workload::repo;

/// The Python of the virtualenv with `opentelemetry-proto` (tools/scripts/setup.sh), ready.
#[derive(Debug, Clone)]
pub struct OtlpReader {
    python: PathBuf,
}

/// The reader, from `JFRNATIVE_OTLP_PYTHON` (target/jdks.env) or the setup script's cache;
/// `None` (with a note) when missing, unless missing tools fail the tests (CI,
/// `JFRNATIVE_REQUIRE_JDKS`): then it panics.
pub fn otlp_reader() -> Option<OtlpReader> {
    let cache = std::env::var_os("JFRNATIVE_CACHE")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/jfr-native")));
    let candidates = std::env::var_os("JFRNATIVE_OTLP_PYTHON")
        .map(PathBuf::from)
        .into_iter()
        .chain(cache.map(|c| c.join("otlp-proto/bin/python")));
    let import =
        "from opentelemetry.proto.collector.profiles.v1development import profiles_service_pb2";
    for python in candidates {
        let ok = Command::new(&python)
            .args(["-c", import])
            .output()
            .is_ok_and(|o| o.status.success());
        if ok {
            return Some(OtlpReader { python });
        }
    }
    if crate::jdk::jdks_required() {
        panic!(
            "PyPI opentelemetry-proto not found (tools/scripts/setup.sh installs it and sets \
             JFRNATIVE_OTLP_PYTHON in target/jdks.env): required in CI"
        );
    }
    eprintln!(
        "note: PyPI opentelemetry-proto not found (run tools/scripts/setup.sh): the OTLP checks \
         are skipped"
    );
    None
}

impl OtlpReader {
    /// The summaries of `files`, in order (with every location and stack when `locations`).
    pub fn read_all(&self, files: &[&Path], locations: bool) -> Vec<Value> {
        let mut cmd = Command::new(&self.python);
        cmd.arg(repo().join("testdata/otlp/check_otlp.py"));
        if locations {
            cmd.arg("--locations");
        }
        cmd.args(files);
        let out = run(&mut cmd).unwrap_or_else(|e| panic!("check_otlp.py: {e}"));
        match serde_json::from_str(&out) {
            Ok(Value::Array(all)) => all,
            other => panic!("check_otlp.py printed no list: {other:?}"),
        }
    }

    /// The summary of one file, with every location and stack; panics if it breaks a rule of
    /// the format or holds other than one profile.
    pub fn read(&self, file: &Path) -> Value {
        let summary = self.read_all(&[file], true).remove(0);
        assert_eq!(
            summary["errors"],
            Value::Array(vec![]),
            "{}: the format's rules",
            file.display()
        );
        assert_eq!(summary["profiles"].as_array().map(Vec::len), Some(1));
        summary
    }
}

/// The one profile of a summary.
pub fn profile(summary: &Value) -> &Value {
    &summary["profiles"][0]
}

/// `a` within `tolerance` (a fraction) of `b`.
pub fn within(a: u64, b: u64, tolerance: f64) -> bool {
    (a as f64 - b as f64).abs() <= tolerance * b as f64
}
