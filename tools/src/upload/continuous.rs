//! `jfrnative record|attach -o DIR/ --upload`: each chunk file the agent finishes (it writes
//! `.part` and renames it whole) is made into one OTLP request and sent while the JVM runs, by
//! two threads of the `jfrnative` process:
//!
//! - the **watcher** looks at `DIR` every 200 ms, converts each new `*.jfr` file (symbolized,
//!   with a symbolizer kept from chunk to chunk) and adds the body to the [`Spool`] (so that
//!   the agent's `maxsize`/`maxage` may remove the chunk file at once);
//! - the **sender** posts the spool's bodies oldest first, one at a time: a body leaves the
//!   spool when the endpoint took it (2xx) or refused it for good (other 4xx, said); on 429,
//!   5xx or a failed connection it is tried again with backoff, and the bodies behind it wait,
//!   so they arrive in order. A request that timed out after the server had taken it is sent
//!   again (at least once).
//!
//! Memory holds one chunk and one body at a time; the disk holds at most the spool's bound
//! (past it the oldest bodies are dropped, said once). After the JVM, the sender goes on until
//! the spool is empty or a drain time has passed; what is left stays in the spool for the next
//! run with the same `-o DIR/`.

use std::collections::HashSet;
use std::ffi::OsString;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use clap::Args;
use symbolize::{Options, Symbolizer};

use super::endpoint::{Endpoint, UploadFlags};
use super::export::chunk_request;
use super::send::{encode_body, Answer, Backoff, Sender};
use super::spool::{parse_size, Spool};

/// The spool's bound when `--spool` is not given.
pub const DEFAULT_SPOOL_BYTES: u64 = 256 << 20;
/// How long the sender goes on after the recording when the spool is not yet empty.
pub const DRAIN: Duration = Duration::from_secs(30);
/// How often the watcher looks for new chunk files.
const POLL: Duration = Duration::from_millis(200);

/// The upload flags of `jfrnative record` and `attach`.
#[derive(Args, Debug, Clone, Default)]
pub struct ContinuousFlags {
    /// Where to send.
    #[command(flatten)]
    pub upload: UploadFlags,
    /// With --upload: the most disk the chunks waiting to be sent may take (in DIR.spool/
    /// beside the recording directory); past it the oldest are dropped: a size with k, mb or
    /// gb [default: 256mb].
    #[arg(long, value_name = "SIZE", requires = "upload")]
    pub spool: Option<String>,
}

impl ContinuousFlags {
    /// The spool's bound, bytes; the error names `--spool`.
    pub fn spool_bytes(&self) -> Result<u64, String> {
        match &self.spool {
            None => Ok(DEFAULT_SPOOL_BYTES),
            Some(s) => parse_size(s).map_err(|e| format!("bad --spool {e}")),
        }
    }
}

/// The spool directory of the recording directory `dir`: `DIR.spool` beside it.
pub fn spool_dir_of(dir: &Path) -> PathBuf {
    let dir: PathBuf = dir.components().collect();
    let mut name = dir.clone().into_os_string();
    name.push(".spool");
    PathBuf::from(name)
}

/// What to watch and where to send.
#[derive(Debug, Clone)]
pub struct Config {
    /// The recording directory.
    pub dir: PathBuf,
    /// The spool directory.
    pub spool_dir: PathBuf,
    /// The spool's bound, bytes.
    pub spool_bytes: u64,
    /// The endpoint.
    pub endpoint: Endpoint,
    /// The resource attributes of every request.
    pub resource: Vec<(String, String)>,
}

/// What was done, for the summary line.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Counts {
    /// Chunk files made into requests.
    pub converted: u64,
    /// Chunk files that could not be read or converted.
    pub unreadable: u64,
    /// Requests taken by the endpoint.
    pub sent: u64,
    /// Their bytes, as sent.
    pub sent_bytes: u64,
    /// Requests the endpoint refused for good.
    pub rejected: u64,
    /// Requests the endpoint took with a partial success: it said it refused some profiles
    /// (counted in `sent` too).
    pub partial: u64,
    /// Requests dropped to keep the spool within its bound.
    pub dropped: u64,
    /// Requests left in the spool at the end.
    pub left: u64,
    /// The most bytes the spool held.
    pub spool_peak_bytes: u64,
}

struct Shared {
    spool: Mutex<Spool>,
    /// Wakes the sender: a body was added, or the watcher is done.
    added: Condvar,
    stop_watching: AtomicBool,
    watcher_done: AtomicBool,
    /// When the sender gives up (set by [`Continuous::finish`]).
    deadline: Mutex<Option<Instant>>,
    counts: Mutex<Counts>,
    drop_said: AtomicBool,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The two threads of a continuous upload.
pub struct Continuous {
    shared: Arc<Shared>,
    watcher: Option<JoinHandle<()>>,
    sender: Option<JoinHandle<()>>,
    config: Config,
}

impl Continuous {
    /// Starts watching `config.dir` (the chunk files already there are left alone: they are
    /// not this recording's) and sending, with the spool's bodies of an earlier run first.
    pub fn start(config: Config) -> io::Result<Continuous> {
        let spool = Spool::open(&config.spool_dir, config.spool_bytes)?;
        let existing = chunk_files(&config.dir)?.into_iter().collect();
        let shared = Arc::new(Shared {
            spool: Mutex::new(spool),
            added: Condvar::new(),
            stop_watching: AtomicBool::new(false),
            watcher_done: AtomicBool::new(false),
            deadline: Mutex::new(None),
            counts: Mutex::new(Counts::default()),
            drop_said: AtomicBool::new(false),
        });
        let watcher = {
            let shared = shared.clone();
            let config = config.clone();
            std::thread::Builder::new()
                .name("jfrnative-upload-watch".into())
                .spawn(move || watch(&shared, &config, existing))?
        };
        let sender = {
            let shared = shared.clone();
            let sender = Sender::new(config.endpoint.clone());
            let spool_dir = config.spool_dir.clone();
            std::thread::Builder::new()
                .name("jfrnative-upload-send".into())
                .spawn(move || send(&shared, &sender, &spool_dir))?
        };
        Ok(Continuous {
            shared,
            watcher: Some(watcher),
            sender: Some(sender),
            config,
        })
    }

    /// The recording is over: the watcher takes the files there now, then stops.
    pub fn stop_watching(&self) {
        self.shared.stop_watching.store(true, Ordering::Release);
    }

    /// The recording is over: the watcher takes the files there now; returns once it has (they
    /// are in the spool, and the recording's directory may go).
    pub fn finish_watching(&mut self) {
        self.stop_watching();
        if let Some(w) = self.watcher.take() {
            let _ = w.join();
        }
    }

    /// Waits for the watcher, then for the sender to empty the spool, at most `drain`;
    /// returns what was done, and its summary for the user.
    pub fn finish(mut self, drain: Duration) -> (Counts, String) {
        self.finish_watching();
        *lock(&self.shared.deadline) = Some(Instant::now() + drain);
        self.shared.added.notify_all();
        if let Some(s) = self.sender.take() {
            let _ = s.join();
        }
        let spool = lock(&self.shared.spool);
        let mut counts = lock(&self.shared.counts).clone();
        counts.dropped = spool.dropped;
        counts.left = spool.len() as u64;
        counts.spool_peak_bytes = spool.peak_bytes;
        let text = summary(&self.config, &counts);
        (counts, text)
    }
}

/// A size for messages: `256 MB`, `12 KB`.
pub fn size_text(bytes: u64) -> String {
    if bytes >= 1 << 20 {
        format!("{:.0} MB", bytes as f64 / f64::from(1 << 20))
    } else {
        format!("{:.0} KB", bytes as f64 / 1024.0)
    }
}

/// The summary of an upload.
pub fn summary(config: &Config, c: &Counts) -> String {
    let mut text = format!(
        "upload: {} chunk(s) sent to {} ({:.1} KB)",
        c.sent,
        config.endpoint.url,
        c.sent_bytes as f64 / 1024.0
    );
    for (n, what) in [
        (c.dropped, "dropped to keep the spool within its bound"),
        (c.rejected, "refused by the endpoint"),
        (
            c.partial,
            "taken only in part (the endpoint said it refused some profiles)",
        ),
        (c.unreadable, "unreadable"),
    ] {
        if n > 0 {
            text.push_str(&format!("; {n} {what}"));
        }
    }
    if c.left > 0 {
        text.push_str(&format!(
            "\nupload: {} chunk(s) not sent yet are kept in {}: the next jfrnative --upload \
             with -o {}/ sends them first",
            c.left,
            config.spool_dir.display(),
            config.dir.display()
        ));
    }
    text
}

/// The names of the finished chunk files in `dir`, sorted (they sort in time order).
fn chunk_files(dir: &Path) -> io::Result<Vec<OsString>> {
    let mut names: Vec<OsString> = match std::fs::read_dir(dir) {
        Ok(entries) => entries
            .filter_map(|e| e.ok())
            .map(|e| e.file_name())
            .filter(|n| Path::new(n).extension().is_some_and(|e| e == "jfr"))
            .collect(),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Vec::new(),
        Err(e) => return Err(e),
    };
    names.sort();
    Ok(names)
}

fn watch(shared: &Shared, config: &Config, mut seen: HashSet<OsString>) {
    let options = Options {
        debuginfod: symbolize::Debuginfod::from_env(),
        ..Options::default()
    };
    let mut symbolizer = Symbolizer::new(options);
    loop {
        let last = shared.stop_watching.load(Ordering::Acquire);
        let names = chunk_files(&config.dir).unwrap_or_default();
        for name in names {
            if !seen.insert(name.clone()) {
                continue;
            }
            let path = config.dir.join(&name);
            let request = chunk_request(
                &path,
                &mut symbolizer,
                &config.resource,
                config.endpoint.shape,
            );
            let request = match request {
                Ok(r) => r,
                // Removed by the agent (maxage/maxsize) before it could be read.
                Err(e) if e.kind() == io::ErrorKind::NotFound => {
                    eprintln!(
                        "jfrnative: upload: {} was removed before it was read",
                        path.display()
                    );
                    lock(&shared.counts).unreadable += 1;
                    continue;
                }
                Err(e) => {
                    eprintln!("jfrnative: upload: {e}");
                    lock(&shared.counts).unreadable += 1;
                    continue;
                }
            };
            if let Some(damage) = &request.damage {
                eprintln!(
                    "jfrnative: upload: {}: damaged {damage}; the chunks before it are sent",
                    path.display()
                );
            }
            let body = encode_body(config.endpoint.gzip, &request.body);
            let pushed = lock(&shared.spool).push(&name.to_string_lossy(), &body);
            match pushed {
                Ok(dropped) => {
                    lock(&shared.counts).converted += 1;
                    if !dropped.is_empty() && !shared.drop_said.swap(true, Ordering::AcqRel) {
                        eprintln!(
                            "jfrnative: upload: the spool {} passed its bound ({}): the oldest \
                             chunks not sent are dropped (said once; the count comes at the end)",
                            config.spool_dir.display(),
                            size_text(config.spool_bytes)
                        );
                    }
                }
                Err(e) => {
                    eprintln!("jfrnative: upload: {e}");
                    lock(&shared.counts).unreadable += 1;
                }
            }
            shared.added.notify_all();
        }
        if last {
            break;
        }
        std::thread::sleep(POLL);
    }
    shared.watcher_done.store(true, Ordering::Release);
    shared.added.notify_all();
}

/// Whether the deadline (set once the recording is over) has passed.
fn past_deadline(shared: &Shared) -> bool {
    lock(&shared.deadline).is_some_and(|d| Instant::now() >= d)
}

/// Sleeps `wait`, or until the deadline passes.
fn sleep_until_deadline(shared: &Shared, wait: Duration) {
    let end = Instant::now() + wait;
    while Instant::now() < end && !past_deadline(shared) {
        std::thread::sleep((end - Instant::now()).min(Duration::from_millis(100)));
    }
}

fn send(shared: &Shared, sender: &Sender, spool_dir: &Path) {
    let mut backoff = Backoff::new();
    let mut outage: Option<Instant> = None;
    let mut rejection_said = false;
    loop {
        let entry = {
            let mut spool = lock(&shared.spool);
            match spool.take_oldest() {
                Some(e) => Some(e),
                None if shared.watcher_done.load(Ordering::Acquire) => break,
                None => {
                    // Woken by a new body, or after a while to look at the flags again.
                    let (mut spool, _) = shared
                        .added
                        .wait_timeout(spool, POLL)
                        .unwrap_or_else(|e| e.into_inner());
                    spool.take_oldest()
                }
            }
        };
        let Some(entry) = entry else {
            continue;
        };
        if past_deadline(shared) {
            lock(&shared.spool).keep();
            break;
        }
        let body = match std::fs::read(&entry.path) {
            Ok(b) => b,
            Err(e) => {
                eprintln!(
                    "jfrnative: upload: cannot read {}: {e}",
                    entry.path.display()
                );
                lock(&shared.spool).done(&entry);
                lock(&shared.counts).unreadable += 1;
                continue;
            }
        };
        match sender.post(&body) {
            Answer::Sent { partial, .. } => {
                lock(&shared.spool).done(&entry);
                let mut counts = lock(&shared.counts);
                counts.sent += 1;
                counts.sent_bytes += body.len() as u64;
                drop(counts);
                backoff.reset();
                if let Some(since) = outage.take() {
                    eprintln!(
                        "jfrnative: upload: {} answers again after {:.0?}: sending the chunks \
                         that waited",
                        sender.endpoint().url,
                        since.elapsed()
                    );
                }
                if let Some(p) = partial {
                    lock(&shared.counts).partial += 1;
                    eprintln!("jfrnative: upload: {}: {p}", entry.path.display());
                }
            }
            Answer::Rejected { why } => {
                lock(&shared.spool).done(&entry);
                lock(&shared.counts).rejected += 1;
                if !rejection_said {
                    rejection_said = true;
                    eprintln!(
                        "jfrnative: upload: {} refused a chunk ({why}): it is not sent again \
                         (further refusals are counted at the end)",
                        sender.endpoint().url
                    );
                }
            }
            Answer::Retry { why, after } => {
                lock(&shared.spool).keep();
                if outage.is_none() {
                    outage = Some(Instant::now());
                    eprintln!(
                        "jfrnative: upload: {}: {why}; retrying with backoff, chunks wait in {}",
                        sender.endpoint().url,
                        spool_dir.display()
                    );
                }
                sleep_until_deadline(shared, backoff.wait(after));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_spool_sits_beside_the_recording_directory() {
        assert_eq!(
            spool_dir_of(Path::new("/tmp/rec/")),
            Path::new("/tmp/rec.spool")
        );
        assert_eq!(spool_dir_of(Path::new("rec")), Path::new("rec.spool"));
        let flags = ContinuousFlags {
            spool: Some("1mb".into()),
            ..ContinuousFlags::default()
        };
        assert_eq!(flags.spool_bytes(), Ok(1 << 20));
        assert_eq!(
            ContinuousFlags::default().spool_bytes(),
            Ok(DEFAULT_SPOOL_BYTES)
        );
        let bad = ContinuousFlags {
            spool: Some("lots".into()),
            ..ContinuousFlags::default()
        };
        assert!(bad
            .spool_bytes()
            .unwrap_err()
            .starts_with("bad --spool 'lots'"));
    }
}
