//! A real OpenTelemetry Collector for the fleet tests: `tools/fleet/collector`, the Collector's
//! own modules at v0.165.0 (built by `tools/scripts/build-collector.sh`, which the set-up runs),
//! started with the feature gate `service.profilesSupport`. Its profiles pipeline goes from the
//! `otlp` receiver (OTLP/HTTP on 127.0.0.1) to an `otlp_http` exporter towards the URLs given
//! (a second hop the test reads back, a backend) and to the `debug` exporter at detailed
//! verbosity (its log). Its own telemetry (Prometheus text on 127.0.0.1) counts what it
//! accepted, refused, sent and failed to send.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::workload::repo;

/// The Collector's binary: `JFRNATIVE_OTELCOL` (target/jdks.env), else built now by the
/// script. `None` (with a note) when it cannot be had, unless missing tools fail the tests
/// (CI, `JFRNATIVE_REQUIRE_JDKS`): then it panics.
pub fn collector_binary() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("JFRNATIVE_OTELCOL").map(PathBuf::from) {
        if path.is_file() {
            return Some(path);
        }
    }
    let built = Command::new("bash")
        .arg(repo().join("tools/scripts/build-collector.sh"))
        .stderr(Stdio::inherit())
        .output();
    match built {
        Ok(o) if o.status.success() => {
            return Some(PathBuf::from(String::from_utf8_lossy(&o.stdout).trim()));
        }
        Ok(o) => eprintln!("note: build-collector.sh failed: {}", o.status),
        Err(e) => eprintln!("note: cannot run build-collector.sh: {e}"),
    }
    if crate::jdk::jdks_required() {
        panic!("the OpenTelemetry Collector could not be built (tools/scripts/build-collector.sh): required in CI");
    }
    eprintln!("note: no OpenTelemetry Collector: the Collector tests are skipped");
    None
}

/// A free TCP port of 127.0.0.1 (free when asked: the Collector binds it a moment later).
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// A running Collector; stopped (killed) when dropped.
pub struct Collector {
    child: Child,
    /// The URL its `otlp` receiver takes profiles at (`/v1development/profiles`).
    pub url: String,
    metrics_port: u16,
    /// Its log (stderr: the debug exporter's detailed output among the rest).
    pub log: PathBuf,
}

impl Collector {
    /// Starts `binary` with its config and log in `dir`, forwarding every profile to each of
    /// `forward` (full OTLP/HTTP profiles URLs; none: the debug exporter alone), and waits until
    /// its receiver answers.
    pub fn start(binary: &Path, dir: &Path, forward: &[&str]) -> Collector {
        std::fs::create_dir_all(dir).unwrap();
        let (http_port, metrics_port) = (free_port(), free_port());
        let mut exporters = String::new();
        let mut names = Vec::new();
        for (i, url) in forward.iter().enumerate() {
            // No queue and no retries: an export that fails is an error the receiver returns
            // to the sender, and counted, not held.
            exporters.push_str(&format!(
                "  otlp_http/hop{i}:\n    profiles_endpoint: {url}\n    compression: none\n    \
                 sending_queue:\n      enabled: false\n    retry_on_failure:\n      enabled: false\n"
            ));
            names.push(format!("otlp_http/hop{i}"));
        }
        names.push("debug".into());
        let config = format!(
            "receivers:\n  otlp:\n    protocols:\n      http:\n        endpoint: 127.0.0.1:{http_port}\n\
             exporters:\n{exporters}  debug:\n    verbosity: detailed\n\
             service:\n  telemetry:\n    metrics:\n      level: detailed\n      readers:\n        \
             - pull:\n            exporter:\n              prometheus:\n                host: 127.0.0.1\n\
             \x20               port: {metrics_port}\n\
             \x20 pipelines:\n    profiles:\n      receivers: [otlp]\n      exporters: [{}]\n",
            names.join(", ")
        );
        let config_path = dir.join("collector.yaml");
        std::fs::write(&config_path, config).unwrap();
        let log = dir.join("collector.log");
        let log_file = std::fs::File::create(&log).unwrap();
        let child = Command::new(binary)
            .arg("--feature-gates=service.profilesSupport")
            .arg(format!("--config=file:{}", config_path.display()))
            .stdout(log_file.try_clone().unwrap())
            .stderr(log_file)
            .spawn()
            .expect("start the Collector");
        let collector = Collector {
            child,
            url: format!("http://127.0.0.1:{http_port}/v1development/profiles"),
            metrics_port,
            log,
        };
        let start = Instant::now();
        while TcpStream::connect(("127.0.0.1", http_port)).is_err() {
            assert!(
                start.elapsed() < Duration::from_secs(30),
                "the Collector did not open its receiver: {}",
                collector.log_text()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        collector
    }

    /// Its log so far.
    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Its own metrics whose names start with `otelcol_`: each sample line's value by its name
    /// and labels as written (`name{label="value",...}`).
    pub fn metrics(&self) -> BTreeMap<String, f64> {
        let mut stream = TcpStream::connect(("127.0.0.1", self.metrics_port)).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        stream
            .write_all(b"GET /metrics HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n")
            .unwrap();
        let mut text = String::new();
        stream.read_to_string(&mut text).unwrap();
        parse_metrics(&text)
    }
}

/// The sum of `metrics`' samples named `name` whose labels hold `label` (`exporter="debug"`;
/// empty: all).
pub fn metric_sum(metrics: &BTreeMap<String, f64>, name: &str, label: &str) -> f64 {
    metrics
        .iter()
        .filter(|(k, _)| k.split('{').next() == Some(name) && k.contains(label))
        .map(|(_, v)| v)
        .sum()
}

impl Drop for Collector {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Prometheus text's samples of metrics named `otelcol_...`: value by name and labels.
pub fn parse_metrics(text: &str) -> BTreeMap<String, f64> {
    text.lines()
        .filter(|l| l.starts_with("otelcol_"))
        .filter_map(|l| {
            let (key, value) = l.rsplit_once(' ')?;
            Some((key.to_string(), value.parse::<f64>().ok()?))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metrics_are_summed_by_name_and_label() {
        let text = "# HELP otelcol_receiver_accepted_profile_samples x\n\
             otelcol_receiver_accepted_profile_samples{receiver=\"otlp\",transport=\"http\"} 7\n\
             otelcol_receiver_accepted_profile_samples{receiver=\"otlp\",transport=\"grpc\"} 3\n\
             otelcol_exporter_sent_profile_samples{exporter=\"debug\"} 10\n\
             otelcol_exporter_sent_profile_samples{exporter=\"otlp_http/hop0\"} 9\n\
             go_goroutines 12\n";
        let m = parse_metrics(text);
        assert_eq!(
            metric_sum(&m, "otelcol_receiver_accepted_profile_samples", ""),
            10.0
        );
        let sent = "otelcol_exporter_sent_profile_samples";
        assert_eq!(metric_sum(&m, sent, "exporter=\"otlp_http/hop0\""), 9.0);
        assert_eq!(metric_sum(&m, sent, ""), 19.0);
        assert_eq!(metric_sum(&m, "go_goroutines", ""), 0.0);
    }
}
