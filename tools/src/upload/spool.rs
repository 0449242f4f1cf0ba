//! The spool: request bodies waiting to be sent, one file each, in a directory of their own,
//! sent oldest first. It is bounded in bytes: past its bound the oldest bodies are dropped
//! (never the one being sent, never the newest), so that an endpoint that stays away costs a
//! bounded disk and no memory, while one that comes back within the bound loses nothing.
//! Bodies left at exit stay for the next run with the same spool, which sends them first.
//! The bound holds for the files on disk at every moment (bodies are dropped before the new
//! one is written), except that the body being sent is never dropped.
//!
//! Files are `SEQUENCE-NAME.otlp` (sequence 10 digits, so that names sort in the order bodies
//! were added), written as `.tmp` and renamed whole.

use std::collections::VecDeque;
use std::io;
use std::path::{Path, PathBuf};

/// One spooled body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// Its file.
    pub path: PathBuf,
    /// Its size in bytes.
    pub bytes: u64,
}

/// A bounded directory of bodies.
#[derive(Debug)]
pub struct Spool {
    dir: PathBuf,
    limit_bytes: u64,
    entries: VecDeque<Entry>,
    next_sequence: u64,
    /// The body being sent (the oldest), kept when bodies are dropped.
    in_flight: Option<PathBuf>,
    /// Bodies dropped to stay within the bound, since opened.
    pub dropped: u64,
    /// The most bytes held at once, since opened.
    pub peak_bytes: u64,
}

impl Spool {
    /// The spool in `dir` (made if missing), holding at most `limit_bytes`; bodies left there
    /// by an earlier run are kept, oldest first, and partial files removed.
    pub fn open(dir: &Path, limit_bytes: u64) -> io::Result<Spool> {
        std::fs::create_dir_all(dir).map_err(|e| {
            io::Error::new(e.kind(), format!("cannot create {}: {e}", dir.display()))
        })?;
        let mut found: Vec<(u64, Entry)> = Vec::new();
        for entry in std::fs::read_dir(dir)? {
            let path = entry?.path();
            let name = path
                .file_name()
                .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
            if name.ends_with(".tmp") {
                let _ = std::fs::remove_file(&path);
                continue;
            }
            let Some(sequence) = name
                .strip_suffix(".otlp")
                .and_then(|n| n.split_once('-'))
                .and_then(|(s, _)| s.parse::<u64>().ok())
            else {
                continue;
            };
            let bytes = std::fs::metadata(&path)?.len();
            found.push((sequence, Entry { path, bytes }));
        }
        found.sort_by_key(|(s, _)| *s);
        let next_sequence = found.last().map_or(0, |(s, _)| s + 1);
        let entries: VecDeque<Entry> = found.into_iter().map(|(_, e)| e).collect();
        let mut spool = Spool {
            dir: dir.to_path_buf(),
            limit_bytes,
            entries,
            next_sequence,
            in_flight: None,
            dropped: 0,
            peak_bytes: 0,
        };
        spool.peak_bytes = spool.bytes();
        Ok(spool)
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The bound, bytes.
    pub fn limit_bytes(&self) -> u64 {
        self.limit_bytes
    }

    /// Bytes held.
    pub fn bytes(&self) -> u64 {
        self.entries.iter().map(|e| e.bytes).sum()
    }

    /// Bodies held.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether no body is held.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Adds `body` under `name` (what it came from), first dropping the oldest bodies while
    /// the spool would hold more than its bound with it (the one being sent is kept: the bound
    /// can be passed by it alone). Returns the names of the dropped files.
    pub fn push(&mut self, name: &str, body: &[u8]) -> io::Result<Vec<String>> {
        let mut dropped = Vec::new();
        while self.bytes() + body.len() as u64 > self.limit_bytes {
            let in_flight = self.in_flight.as_ref();
            let Some(i) =
                (0..self.entries.len()).find(|&i| Some(&self.entries[i].path) != in_flight)
            else {
                break;
            };
            if let Some(victim) = self.entries.remove(i) {
                let _ = std::fs::remove_file(&victim.path);
                self.dropped += 1;
                dropped.push(
                    victim
                        .path
                        .file_name()
                        .map_or_else(String::new, |n| n.to_string_lossy().into_owned()),
                );
            }
        }
        let file = format!("{:010}-{name}.otlp", self.next_sequence);
        let path = self.dir.join(&file);
        let tmp = self.dir.join(format!("{file}.tmp"));
        std::fs::write(&tmp, body)
            .and_then(|()| std::fs::rename(&tmp, &path))
            .map_err(|e| {
                let _ = std::fs::remove_file(&tmp);
                io::Error::new(e.kind(), format!("cannot write {}: {e}", path.display()))
            })?;
        self.next_sequence += 1;
        self.entries.push_back(Entry {
            path,
            bytes: body.len() as u64,
        });
        self.peak_bytes = self.peak_bytes.max(self.bytes());
        Ok(dropped)
    }

    /// The oldest body, marked as being sent (it is not dropped until [`Spool::done`]).
    pub fn take_oldest(&mut self) -> Option<Entry> {
        let oldest = self.entries.front()?.clone();
        self.in_flight = Some(oldest.path.clone());
        Some(oldest)
    }

    /// The body being sent is done with (sent, or refused for good): it is removed.
    pub fn done(&mut self, entry: &Entry) {
        self.entries.retain(|e| e.path != entry.path);
        let _ = std::fs::remove_file(&entry.path);
        self.in_flight = None;
    }

    /// The body being sent stays for a later try.
    pub fn keep(&mut self) {
        self.in_flight = None;
    }
}

/// A size as `--spool` takes it: bytes, or a number with k, kb, m, mb, g, gb (powers of 1024).
pub fn parse_size(text: &str) -> Result<u64, String> {
    let t = text.trim().to_ascii_lowercase();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (number, unit) = t.split_at(split);
    let scale: u64 = match unit.trim() {
        "" | "b" => 1,
        "k" | "kb" => 1 << 10,
        "m" | "mb" => 1 << 20,
        "g" | "gb" => 1 << 30,
        _ => return Err(format!("'{text}': a size such as 64mb, 500k or 1gb")),
    };
    number
        .parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(scale))
        .filter(|&n| n > 0)
        .ok_or_else(|| format!("'{text}': a size such as 64mb, 500k or 1gb"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("jfrnative-spool-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        d
    }

    fn names(spool: &Spool) -> Vec<String> {
        spool
            .entries
            .iter()
            .map(|e| e.path.file_name().unwrap().to_string_lossy().into_owned())
            .collect()
    }

    #[test]
    fn bodies_come_out_oldest_first_and_the_oldest_go_past_the_bound() {
        let d = dir("bound");
        let mut s = Spool::open(&d, 250).unwrap();
        assert!(s.push("a.jfr", &[1; 100]).unwrap().is_empty());
        assert!(s.push("b.jfr", &[2; 100]).unwrap().is_empty());
        // The oldest is being sent: it is kept, the next oldest goes.
        let a = s.take_oldest().unwrap();
        assert!(a.path.ends_with("0000000000-a.jfr.otlp"));
        assert_eq!(
            s.push("c.jfr", &[3; 100]).unwrap(),
            ["0000000001-b.jfr.otlp"]
        );
        assert_eq!(
            names(&s),
            ["0000000000-a.jfr.otlp", "0000000002-c.jfr.otlp"]
        );
        s.keep();
        assert_eq!(s.take_oldest().unwrap(), a);
        s.done(&a);
        assert!(!a.path.exists());
        assert_eq!(s.push("d.jfr", &[4; 100]).unwrap(), Vec::<String>::new());
        assert_eq!(
            s.push("e.jfr", &[5; 100]).unwrap(),
            ["0000000002-c.jfr.otlp"]
        );
        assert_eq!(s.dropped, 2);
        assert!(s.peak_bytes <= 250, "{}", s.peak_bytes);
        assert!(s.bytes() <= s.limit_bytes());
        // A body larger than the bound is still written, alone.
        assert_eq!(s.push("big.jfr", &[6; 400]).unwrap().len(), 2);
        assert_eq!(names(&s), ["0000000005-big.jfr.otlp"]);
        // What is left is found again, in order, by the next run; partial files go.
        std::fs::write(d.join("0000000009-x.jfr.otlp.tmp"), b"partial").unwrap();
        drop(s);
        let mut again = Spool::open(&d, 1000).unwrap();
        assert_eq!(names(&again), ["0000000005-big.jfr.otlp"]);
        assert!(!d.join("0000000009-x.jfr.otlp.tmp").exists());
        again.push("f.jfr", b"x").unwrap();
        assert_eq!(names(&again)[1], "0000000006-f.jfr.otlp");
        assert_eq!(
            std::fs::read(&again.take_oldest().unwrap().path).unwrap(),
            [6; 400]
        );
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn sizes_read_as_the_agent_writes_them() {
        assert_eq!(parse_size("64mb"), Ok(64 << 20));
        assert_eq!(parse_size("500k"), Ok(500 << 10));
        assert_eq!(parse_size("1GB"), Ok(1 << 30));
        assert_eq!(parse_size("4096"), Ok(4096));
        assert!(parse_size("0").is_err());
        assert!(parse_size("ten mb").is_err());
        assert!(parse_size("5tb").is_err());
    }
}
