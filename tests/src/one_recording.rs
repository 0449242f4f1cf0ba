//! Reading a recording that holds the JDK's own events and ours: what JMC's parser makes of
//! it (`testdata/oracles/JmcOneRecording.java`), and its chunks' start times.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use crate::jdk::Jdk;
use crate::readers::run;
use crate::workload::repo;

/// One thread as JMC tells threads apart: its name, Java thread id, and its events by type.
#[derive(Debug, Clone)]
pub struct Lane {
    /// The thread's name.
    pub name: String,
    /// Its Java thread id (0 for threads without one).
    pub java_id: i64,
    /// Events whose `eventThread` it is, by type.
    pub events: BTreeMap<String, u64>,
}

/// What JMC's parser made of a file.
#[derive(Debug, Default)]
pub struct JmcView {
    /// Event types by identifier (a split type shows up twice, once with a suffix).
    pub types: BTreeMap<String, u64>,
    /// Thread lanes.
    pub lanes: Vec<Lane>,
    /// First and last event time (ns since the epoch) by type.
    pub ranges: BTreeMap<String, (i64, i64)>,
    /// Chunks loaded and events skipped, as the parser counts them.
    pub chunks: u64,
    /// Events the parser skipped.
    pub skipped: u64,
}

/// Reads `file` with JMC's parser (classpath `jmc_cp`) on `jdk`; panics if JMC cannot load it.
pub fn jmc_view(jdk: &Jdk, jmc_cp: &str, file: &Path) -> JmcView {
    let oracle = repo().join("testdata/oracles/JmcOneRecording.java");
    let text = run(Command::new(jdk.tool("java"))
        .arg("-cp")
        .arg(jmc_cp)
        .arg(&oracle)
        .arg(file))
    .unwrap_or_else(|e| panic!("JMC on {}: {e}", file.display()));
    let mut view = JmcView::default();
    for line in text.lines() {
        let w: Vec<&str> = line.split('\t').collect();
        match w.as_slice() {
            ["TYPE", id, n] => {
                view.types.insert(id.to_string(), n.parse().unwrap());
            }
            ["LANE", name, id, events] => view.lanes.push(Lane {
                name: name.to_string(),
                java_id: id.parse().unwrap_or(0),
                events: events
                    .split(',')
                    .filter_map(|e| e.split_once('='))
                    .map(|(t, n)| (t.to_string(), n.parse().unwrap()))
                    .collect(),
            }),
            ["RANGE", ty, first, last] => {
                view.ranges.insert(
                    ty.to_string(),
                    (first.parse().unwrap(), last.parse().unwrap()),
                );
            }
            _ => {
                if let Some(n) = line.strip_prefix("CHUNKS ") {
                    view.chunks = n.trim().parse().unwrap();
                } else if let Some(n) = line.strip_prefix("SKIPPED ") {
                    view.skipped = n.trim().parse().unwrap();
                } else if line.starts_with("ERROR") {
                    panic!("JMC cannot load {}: {line}", file.display());
                }
            }
        }
    }
    view
}

/// The start times (ns since the epoch) of the chunks of `file`, in file order.
pub fn chunk_starts(file: &Path) -> Vec<i64> {
    let bytes = std::fs::read(file).unwrap();
    let mut starts = Vec::new();
    let mut at = 0usize;
    while at + 68 <= bytes.len() {
        let u64_at = |o: usize| u64::from_be_bytes(bytes[at + o..at + o + 8].try_into().unwrap());
        assert_eq!(
            &bytes[at..at + 4],
            b"FLR\0",
            "a chunk at {at} of {}",
            file.display()
        );
        starts.push(u64_at(32) as i64);
        at += u64_at(8) as usize;
    }
    starts
}

/// The event types `jfr summary` of `jdk` lists for `file`, with their counts (a type listed
/// twice is listed twice).
pub fn summary_types(jdk: &Jdk, file: &Path) -> Vec<(String, u64)> {
    let text = run(Command::new(jdk.tool("jfr")).arg("summary").arg(file))
        .unwrap_or_else(|e| panic!("jfr summary {}: {e}", file.display()));
    text.lines()
        .filter_map(|l| {
            let mut w = l.split_whitespace();
            let name = w.next()?;
            let n = w.next()?.parse().ok()?;
            name.contains('.').then(|| (name.to_string(), n))
        })
        .collect()
}
