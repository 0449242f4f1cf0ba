//! Following a recording through the agent's status file (`status=PATH`), and the live status
//! line drawn from it.

use std::path::Path;
use std::time::Duration;

/// What the agent last wrote.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Status {
    /// `recording`, `finished` or `failed`.
    pub state: String,
    /// Samples written.
    pub samples: u64,
    /// Samples lost.
    pub lost: u64,
    /// Samples without a Java stack.
    pub failed: u64,
    /// CPU time sampled, ns.
    pub cpu_ns: u64,
    /// Chunks finished.
    pub chunks: u64,
    /// Why the recording failed.
    pub message: String,
}

impl Status {
    /// Parses the status file's text.
    pub fn parse(text: &str) -> Status {
        let mut s = Status::default();
        for (key, value) in text.lines().filter_map(|l| l.split_once('=')) {
            let n = || value.parse().unwrap_or(0);
            match key {
                "state" => s.state = value.to_string(),
                "samples" => s.samples = n(),
                "lost" => s.lost = n(),
                "failed" => s.failed = n(),
                "cpu_ns" => s.cpu_ns = n(),
                "chunks" => s.chunks = n(),
                "message" => s.message = value.to_string(),
                _ => {}
            }
        }
        s
    }

    /// Reads the status file; `None` until the agent has written it.
    pub fn read(path: &Path) -> Option<Status> {
        std::fs::read_to_string(path)
            .ok()
            .map(|t| Status::parse(&t))
    }

    /// Whether the recording ended with an error.
    pub fn is_failed(&self) -> bool {
        self.state == "failed"
    }
}

/// The one-line status shown while recording.
pub fn line(elapsed: Duration, status: Option<&Status>) -> String {
    let secs = elapsed.as_secs_f64();
    match status {
        None => format!("jfrnative: {secs:6.1} s  waiting for the agent"),
        Some(s) => format!(
            "jfrnative: {secs:6.1} s  {} samples ({:.1} CPU-s)  lost {}  {}",
            s.samples,
            s.cpu_ns as f64 / 1e9,
            s.lost,
            s.state
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_what_the_agent_writes() {
        let s = Status::parse(
            "state=failed\nsamples=7\nlost=1\nfailed=2\ncpu_ns=70000000\nchunks=3\nmessage=a=b c\n",
        );
        assert!(s.is_failed());
        assert_eq!((s.samples, s.lost, s.failed, s.chunks), (7, 1, 2, 3));
        assert_eq!(s.message, "a=b c");
        let l = line(Duration::from_millis(2500), Some(&s));
        assert!(
            l.contains("2.5 s") && l.contains("7 samples") && l.contains("lost 1"),
            "{l}"
        );
        assert!(line(Duration::ZERO, None).contains("waiting"));
    }
}
