//! The status file (`status=PATH`): a few `key=value` lines the writer thread keeps current,
//! replaced atomically (write a temporary file, rename), so that a tool outside the JVM (the
//! `jfrnative` CLI's status line) can follow a recording and learn why it failed.

use std::io::Write;

/// Where the recording stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    /// Samples are being taken.
    Recording,
    /// The file is finished.
    Finished,
    /// The recording could not start or stopped on an error (see `message`).
    Failed,
}

impl State {
    fn name(self) -> &'static str {
        match self {
            State::Recording => "recording",
            State::Finished => "finished",
            State::Failed => "failed",
        }
    }
}

/// The counters a status file reports.
#[derive(Debug, Default, Clone, Copy)]
pub struct Counts {
    /// Samples written.
    pub samples: u64,
    /// Samples lost (buffer full).
    pub lost: u64,
    /// Samples without a Java stack.
    pub failed: u64,
    /// CPU time the samples stand for, ns.
    pub cpu_ns: u64,
    /// Chunks finished.
    pub chunks: u64,
}

/// Writes the status file at `path`. Errors are ignored: the status file is a convenience and
/// must never stop a recording.
pub fn write(path: &str, state: State, counts: &Counts, message: &str) {
    let text = format!(
        "state={}\nsamples={}\nlost={}\nfailed={}\ncpu_ns={}\nchunks={}\nmessage={}\n",
        state.name(),
        counts.samples,
        counts.lost,
        counts.failed,
        counts.cpu_ns,
        counts.chunks,
        message.replace('\n', " "),
    );
    let tmp = format!("{path}.tmp");
    let written = std::fs::File::create(&tmp).and_then(|mut f| f.write_all(text.as_bytes()));
    if written.is_ok() {
        let _ = std::fs::rename(&tmp, path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_key_value_lines_atomically() {
        let dir = std::env::temp_dir().join(format!("jfrnative-status-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("s").to_string_lossy().into_owned();
        let counts = Counts {
            samples: 7,
            lost: 1,
            failed: 2,
            cpu_ns: 70,
            chunks: 3,
        };
        write(&path, State::Failed, &counts, "no\nsignal");
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(
            text,
            "state=failed\nsamples=7\nlost=1\nfailed=2\ncpu_ns=70\nchunks=3\nmessage=no signal\n"
        );
        assert!(!std::path::Path::new(&format!("{path}.tmp")).exists());
        std::fs::remove_dir_all(dir).unwrap();
    }
}
