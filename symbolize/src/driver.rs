//! One pass over a file: read each chunk, resolve its PCs, fold its samples, and (if asked)
//! write its symbolized copy, one chunk at a time.

use std::io::{self, Write};
use std::path::{Path, PathBuf};

use crate::jfr::{chunks, ReadError};
use crate::profile::read_chunk;
use crate::report::aggregate::Source;
use crate::report::{Aggregate, Filter};
use crate::resolve::Symbolizer;
use crate::rewrite::{rewrite_chunk, ChunkStats, FileKeys};

/// What a pass produced.
#[derive(Debug, Default)]
pub struct Outcome {
    /// Samples folded by stack: the `jdk.CPUTimeSample`s, or, in a file that has none, its
    /// `jdk.ExecutionSample`s ([`Source::Execution`]).
    pub aggregate: Aggregate,
    /// Chunks read (and written, with a JFR output).
    pub chunks: usize,
    /// Sum of the rewrite counters.
    pub rewrite: ChunkStats,
    /// The damage that stopped reading before the end of the file, if any.
    pub error: Option<ReadError>,
}

/// The files to read for `inputs`: each file as given, a directory as its `*.jfr` files in
/// name order (a directory recording's chunk files, `file=DIR/`; files still being written end
/// in `.part` and are left out). A directory without any is an error.
pub fn input_files(inputs: &[PathBuf]) -> io::Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    for input in inputs {
        if !input.is_dir() {
            files.push(input.clone());
            continue;
        }
        let mut found: Vec<PathBuf> = std::fs::read_dir(input)
            .map_err(|e| io::Error::new(e.kind(), format!("cannot read {}: {e}", input.display())))?
            .filter_map(|entry| entry.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|e| e == "jfr") && p.is_file())
            .collect();
        if found.is_empty() {
            return Err(io::Error::new(
                io::ErrorKind::NotFound,
                format!("no *.jfr files in {}", input.display()),
            ));
        }
        found.sort_by(|a, b| a.file_name().cmp(&b.file_name()));
        files.extend(found);
    }
    Ok(files)
}

/// The directories of libraries the agent kept beside `inputs` (`FILE.libs` for a recording
/// `FILE`, `DIR.libs` for a directory of chunks `DIR/` or one of its chunk files), those that
/// exist, once each.
pub fn kept_library_roots(inputs: &[PathBuf]) -> Vec<PathBuf> {
    let mut roots: Vec<PathBuf> = inputs
        .iter()
        .flat_map(|input| {
            let chunk_dir = (!input.is_dir())
                .then(|| input.parent().filter(|p| !p.as_os_str().is_empty()))
                .flatten()
                .map(kept_library_root);
            std::iter::once(kept_library_root(input)).chain(chunk_dir)
        })
        .filter(|root| root.is_dir())
        .collect();
    roots.sort();
    roots.dedup();
    roots
}

/// Where the agent keeps the libraries of the recording `input` (a file, or a directory of
/// chunks): `input` without trailing `/`, and `.libs`.
pub fn kept_library_root(input: &Path) -> PathBuf {
    // `components` drops a trailing `/`; the name is kept as bytes (not made UTF-8).
    let trimmed: PathBuf = input.components().collect();
    let mut name = trimmed.into_os_string();
    name.push(".libs");
    PathBuf::from(name)
}

#[cfg(test)]
mod kept_root_tests {
    use super::*;

    #[test]
    fn kept_libraries_are_found_beside_a_file_a_directory_or_its_chunks() {
        assert_eq!(
            kept_library_root(Path::new("/r/out.jfr")),
            Path::new("/r/out.jfr.libs")
        );
        assert_eq!(
            kept_library_root(Path::new("/r/rec/")),
            Path::new("/r/rec.libs")
        );
        let top = std::env::temp_dir().join(format!("jfrnative-kept-roots-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&top);
        std::fs::create_dir_all(top.join("rec.libs")).unwrap();
        std::fs::create_dir_all(top.join("rec")).unwrap();
        std::fs::write(top.join("rec/1.jfr"), b"").unwrap();
        std::fs::write(top.join("rec/2.jfr"), b"").unwrap();
        let inputs = [
            top.join("rec/1.jfr"),
            top.join("rec/"),
            top.join("rec/2.jfr"),
        ];
        assert_eq!(kept_library_roots(&inputs), [top.join("rec.libs")]);
        assert!(kept_library_roots(&[top.join("none.jfr")]).is_empty());
        let _ = std::fs::remove_dir_all(&top);
    }
}

/// A pass over one or more files (the chunks of a directory recording, or several recordings):
/// one aggregate, one symbolized JFR output, method keys kept across all of them, times
/// measured from the first chunk read.
pub struct Pass<'a> {
    symbolizer: &'a mut Symbolizer,
    filter: &'a Filter,
    tool: &'a str,
    outcome: Outcome,
    /// The JDK's own sampler, kept in case the files have no CPU-time samples at all.
    execution: Aggregate,
    origin_nanos: Option<i64>,
    /// The end of the latest chunk read (ns since the epoch).
    end_nanos: Option<i64>,
    buffer: Vec<u8>,
    keys: FileKeys,
}

/// What one file of a pass gave.
#[derive(Debug, Default)]
pub struct FileOutcome {
    /// Chunks read from it.
    pub chunks: usize,
    /// The damage that stopped reading it before its end, if any.
    pub error: Option<ReadError>,
}

impl<'a> Pass<'a> {
    /// A pass that resolves with `symbolizer`, keeps what `filter` selects, and names `tool`
    /// in the symbolized JFR.
    pub fn new(symbolizer: &'a mut Symbolizer, filter: &'a Filter, tool: &'a str) -> Pass<'a> {
        Pass {
            symbolizer,
            filter,
            tool,
            outcome: Outcome::default(),
            execution: Aggregate {
                source: Source::Execution,
                ..Aggregate::default()
            },
            origin_nanos: None,
            end_nanos: None,
            buffer: Vec::new(),
            keys: FileKeys::default(),
        }
    }

    /// Reads `bytes` (one file) chunk by chunk; writes the symbolized chunks to `jfr_out` when
    /// given (`last_file`: the last chunk of this file is the last of the output); calls
    /// `progress(bytes done, bytes total)` after each chunk. Damage ends this file only.
    pub fn add_file(
        &mut self,
        bytes: &[u8],
        mut jfr_out: Option<&mut dyn Write>,
        last_file: bool,
        progress: &mut dyn FnMut(usize, usize),
    ) -> io::Result<FileOutcome> {
        let mut file = FileOutcome::default();
        for chunk in chunks(bytes) {
            let chunk = match chunk {
                Ok(chunk) => chunk,
                Err(e) => {
                    file.error = Some(e);
                    break;
                }
            };
            let profile = match read_chunk(&chunk) {
                Ok(p) => p,
                Err(e) => {
                    file.error = Some(e);
                    break;
                }
            };
            let h = chunk.header;
            let origin = *self.origin_nanos.get_or_insert(h.start_nanos);
            let end = h.start_nanos.saturating_add(h.duration_nanos.max(0));
            self.end_nanos = Some(self.end_nanos.map_or(end, |e| e.max(end)));
            if let Some(out) = jfr_out.as_deref_mut() {
                self.buffer.clear();
                let last = last_file && chunk.offset as usize + chunk.bytes.len() == bytes.len();
                match rewrite_chunk(
                    &chunk,
                    &profile,
                    self.symbolizer,
                    self.tool,
                    last,
                    &mut self.keys,
                    &mut self.buffer,
                ) {
                    Ok(stats) => self.outcome.rewrite += stats,
                    Err(e) => {
                        file.error = Some(e);
                        break;
                    }
                }
                out.write_all(&self.buffer)?;
            }
            let clock = (h.start_nanos, h.start_ticks, h.ticks_per_second);
            self.outcome
                .aggregate
                .add_chunk(&profile, self.symbolizer, self.filter, origin, clock);
            if !profile.execution_samples.is_empty() {
                self.execution
                    .add_chunk(&profile, self.symbolizer, self.filter, origin, clock);
            }
            file.chunks += 1;
            self.outcome.chunks += 1;
            progress(chunk.offset as usize + chunk.bytes.len(), bytes.len());
        }
        if self.outcome.error.is_none() {
            self.outcome.error = file.error.clone();
        }
        Ok(file)
    }

    /// The pass's result: the CPU-time samples, or, where no file had any, the JDK's execution
    /// samples. `error` is the first damage met.
    pub fn finish(mut self) -> Outcome {
        if self.outcome.aggregate.total.samples == 0 && self.execution.total.samples > 0 {
            self.outcome.aggregate = self.execution;
        }
        if let (Some(start), Some(end)) = (self.origin_nanos, self.end_nanos) {
            self.outcome.aggregate.span_nanos = Some(window(start, end, self.filter));
        }
        self.outcome
    }
}

/// Reads `bytes` chunk by chunk; writes the symbolized JFR to `jfr_out` when given; calls
/// `progress(bytes done, bytes total)` after each chunk.
pub fn run(
    bytes: &[u8],
    symbolizer: &mut Symbolizer,
    filter: &Filter,
    jfr_out: Option<&mut dyn Write>,
    tool: &str,
    progress: &mut dyn FnMut(usize, usize),
) -> io::Result<Outcome> {
    let mut pass = Pass::new(symbolizer, filter, tool);
    pass.add_file(bytes, jfr_out, true, progress)?;
    Ok(pass.finish())
}

/// `start..end` (ns since the epoch) cut to the filter's window (ns from `start`).
fn window(start: i64, end: i64, filter: &Filter) -> (i64, i64) {
    let at = |offset_ns: u64| start.saturating_add(i64::try_from(offset_ns).unwrap_or(i64::MAX));
    let from = filter.from_ns.map_or(start, at).clamp(start, end);
    let to = filter.to_ns.map_or(end, at).clamp(from, end);
    (from, to)
}
