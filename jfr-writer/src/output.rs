//! Where finished chunks go: [`ChunkOutput`]. Any [`Write`] takes them one after the other (a
//! file that grows by whole chunks); a [`Repository`] makes each chunk a file of its own in a
//! directory and keeps a rolling set of them, like the JDK's own disk repository.

use std::collections::VecDeque;
use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use crate::clock::utc_timestamp;

/// Takes each finished chunk in one piece (header, events, metadata and checkpoint).
pub trait ChunkOutput {
    /// Stores one finished chunk; `bytes` is the whole chunk.
    fn write_chunk(&mut self, bytes: &[u8]) -> io::Result<()>;
}

/// A stream takes the chunks back to back, each written and flushed as a whole.
impl<W: Write> ChunkOutput for W {
    fn write_chunk(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.write_all(bytes)?;
        self.flush()
    }
}

/// When a [`Repository`] removes its oldest files.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Retention {
    /// Remove the oldest files while the set is larger than this (0: no bound). The newest file
    /// is always kept.
    pub max_size_bytes: u64,
    /// Remove files whose chunk ended longer ago than this (`None`: no bound). The newest file
    /// is always kept.
    pub max_age: Option<Duration>,
}

/// One file the repository wrote and still keeps.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChunkFile {
    /// Its path.
    pub path: PathBuf,
    /// Its size.
    pub bytes: u64,
    /// When it was written (its chunk's end).
    pub written: SystemTime,
}

/// A directory of chunk files, one per chunk, named so that their names sort in time order
/// (`PREFIX-YYYYMMDD-HHMMSS-mmm-SEQ.jfr`: the chunk's start time in UTC, then a sequence
/// number), the way `jfr assemble` and `jfr-symbolize DIR` order them. A chunk is written to
/// `NAME.jfr.part` and renamed when complete, so the directory never holds a partial `.jfr`
/// file: a process killed at any moment loses only the chunk it was building. Only files this
/// repository wrote are ever removed.
#[derive(Debug)]
pub struct Repository {
    dir: PathBuf,
    prefix: String,
    retention: Retention,
    sequence: u64,
    kept: VecDeque<ChunkFile>,
    removed: u64,
}

impl Repository {
    /// A repository in `dir` (created if missing) whose files start with `prefix`.
    pub fn create(dir: &Path, prefix: &str, retention: Retention) -> io::Result<Repository> {
        fs::create_dir_all(dir)?;
        Ok(Repository {
            dir: dir.to_path_buf(),
            prefix: prefix.to_string(),
            retention,
            sequence: 0,
            kept: VecDeque::new(),
            removed: 0,
        })
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The files kept now, oldest first.
    pub fn kept(&self) -> impl Iterator<Item = &ChunkFile> {
        self.kept.iter()
    }

    /// How many files the retention removed so far.
    pub fn removed(&self) -> u64 {
        self.removed
    }

    /// The file name of the next chunk, which starts at `start_nanos` (ns since the epoch).
    fn name(&mut self, start_nanos: i64) -> String {
        self.sequence += 1;
        let secs = start_nanos.div_euclid(1_000_000_000);
        let millis = start_nanos.rem_euclid(1_000_000_000) / 1_000_000;
        format!(
            "{}-{}-{millis:03}-{:06}.jfr",
            self.prefix,
            utc_timestamp(secs),
            self.sequence
        )
    }

    /// Removes the oldest files past the retention bounds, keeping the newest.
    fn enforce(&mut self, now: SystemTime) {
        let mut total: u64 = self.kept.iter().map(|f| f.bytes).sum();
        while self.kept.len() > 1 {
            let Some(oldest) = self.kept.front() else {
                break;
            };
            let too_big =
                self.retention.max_size_bytes > 0 && total > self.retention.max_size_bytes;
            let too_old = self.retention.max_age.is_some_and(|age| {
                now.duration_since(oldest.written)
                    .is_ok_and(|elapsed| elapsed > age)
            });
            if !too_big && !too_old {
                break;
            }
            // A file removed by someone else meanwhile is gone all the same.
            match fs::remove_file(&oldest.path) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(_) => break,
            }
            total = total.saturating_sub(oldest.bytes);
            self.kept.pop_front();
            self.removed += 1;
        }
    }
}

/// The chunk's start time from its header (offset 32, big-endian ns since the epoch).
fn chunk_start_nanos(bytes: &[u8]) -> i64 {
    bytes
        .get(32..40)
        .and_then(|b| b.try_into().ok())
        .map_or(0, i64::from_be_bytes)
}

impl ChunkOutput for Repository {
    fn write_chunk(&mut self, bytes: &[u8]) -> io::Result<()> {
        let name = self.name(chunk_start_nanos(bytes));
        let path = self.dir.join(&name);
        let part = self.dir.join(format!("{name}.part"));
        let written = (|| {
            let mut file = fs::File::create(&part)?;
            file.write_all(bytes)?;
            file.flush()?;
            drop(file);
            fs::rename(&part, &path)
        })();
        if let Err(e) = written {
            let _ = fs::remove_file(&part);
            return Err(io::Error::new(e.kind(), format!("{}: {e}", path.display())));
        }
        let now = SystemTime::now();
        self.kept.push_back(ChunkFile {
            path,
            bytes: bytes.len() as u64,
            written: now,
        });
        self.enforce(now);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chunk(start_nanos: i64, len: usize) -> Vec<u8> {
        let mut bytes = vec![0u8; len.max(68)];
        bytes[32..40].copy_from_slice(&start_nanos.to_be_bytes());
        bytes
    }

    fn temp_dir(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("jfr-writer-{}-{name}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        dir
    }

    fn names(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn files_are_named_in_time_order_and_complete() {
        let dir = temp_dir("names");
        let mut repo = Repository::create(&dir, "jfrnative-7", Retention::default()).unwrap();
        // 2026-11-24 10:15:00.123 UTC, twice in the same millisecond, then a second later.
        let t = 1_795_515_300_123_000_000;
        for start in [t, t, t + 1_000_000_000] {
            repo.write_chunk(&chunk(start, 100)).unwrap();
        }
        assert_eq!(
            names(&dir),
            [
                "jfrnative-7-20261124-101500-123-000001.jfr",
                "jfrnative-7-20261124-101500-123-000002.jfr",
                "jfrnative-7-20261124-101501-123-000003.jfr",
            ]
        );
        assert_eq!(repo.kept().count(), 3);
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn max_size_removes_the_oldest_files_and_keeps_the_newest() {
        let dir = temp_dir("size");
        let retention = Retention {
            max_size_bytes: 250,
            max_age: None,
        };
        let mut repo = Repository::create(&dir, "r", retention).unwrap();
        for i in 0..5 {
            repo.write_chunk(&chunk(i * 1_000_000_000, 100)).unwrap();
        }
        // 100 bytes each: two fit under 250.
        assert_eq!(names(&dir).len(), 2);
        assert_eq!(repo.removed(), 3);
        assert!(names(&dir)[1].ends_with("-000005.jfr"));
        // One chunk larger than the bound on its own is still kept.
        repo.write_chunk(&chunk(9_000_000_000, 1_000)).unwrap();
        assert_eq!(names(&dir).len(), 1);
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn max_age_removes_files_older_than_the_bound() {
        let dir = temp_dir("age");
        let retention = Retention {
            max_size_bytes: 0,
            max_age: Some(Duration::from_millis(200)),
        };
        let mut repo = Repository::create(&dir, "r", retention).unwrap();
        repo.write_chunk(&chunk(0, 100)).unwrap();
        repo.write_chunk(&chunk(1, 100)).unwrap();
        assert_eq!(names(&dir).len(), 2);
        std::thread::sleep(Duration::from_millis(300));
        repo.write_chunk(&chunk(2, 100)).unwrap();
        assert_eq!(names(&dir).len(), 1, "{:?}", names(&dir));
        assert_eq!(repo.removed(), 2);
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn files_of_others_in_the_directory_are_left_alone() {
        let dir = temp_dir("others");
        fs::create_dir_all(&dir).unwrap();
        fs::write(dir.join("a-user-file.jfr"), b"mine").unwrap();
        let retention = Retention {
            max_size_bytes: 1,
            max_age: None,
        };
        let mut repo = Repository::create(&dir, "r", retention).unwrap();
        for i in 0..3 {
            repo.write_chunk(&chunk(i, 100)).unwrap();
        }
        let left = names(&dir);
        assert_eq!(left.len(), 2, "{left:?}");
        assert!(left.contains(&"a-user-file.jfr".to_string()));
        let _ = fs::remove_dir_all(&dir);
    }
}
