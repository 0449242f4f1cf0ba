//! One pass over a file: read each chunk, resolve its PCs, fold its samples, and (if asked)
//! write its symbolized copy, one chunk at a time.

use std::io::{self, Write};

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

/// Reads `bytes` chunk by chunk; writes the symbolized JFR to `jfr_out` when given; calls
/// `progress(bytes done, bytes total)` after each chunk.
pub fn run(
    bytes: &[u8],
    symbolizer: &mut Symbolizer,
    filter: &Filter,
    mut jfr_out: Option<&mut dyn Write>,
    tool: &str,
    progress: &mut dyn FnMut(usize, usize),
) -> io::Result<Outcome> {
    let mut outcome = Outcome::default();
    // The JDK's own sampler, kept in case the file has no CPU-time samples at all.
    let mut execution = Aggregate {
        source: Source::Execution,
        ..Aggregate::default()
    };
    let mut origin_nanos = None;
    let mut end_nanos = None;
    let mut buffer = Vec::new();
    let mut keys = FileKeys::default();
    for chunk in chunks(bytes) {
        let chunk = match chunk {
            Ok(chunk) => chunk,
            Err(e) => {
                outcome.error = Some(e);
                break;
            }
        };
        let profile = match read_chunk(&chunk) {
            Ok(p) => p,
            Err(e) => {
                outcome.error = Some(e);
                break;
            }
        };
        let h = chunk.header;
        let origin = *origin_nanos.get_or_insert(h.start_nanos);
        end_nanos = Some(h.start_nanos.saturating_add(h.duration_nanos.max(0)));
        if let Some(out) = jfr_out.as_deref_mut() {
            buffer.clear();
            let last = chunk.offset as usize + chunk.bytes.len() == bytes.len();
            match rewrite_chunk(
                &chunk,
                &profile,
                symbolizer,
                tool,
                last,
                &mut keys,
                &mut buffer,
            ) {
                Ok(stats) => outcome.rewrite += stats,
                Err(e) => {
                    outcome.error = Some(e);
                    break;
                }
            }
            out.write_all(&buffer)?;
        }
        let clock = (h.start_nanos, h.start_ticks, h.ticks_per_second);
        outcome
            .aggregate
            .add_chunk(&profile, symbolizer, filter, origin, clock);
        if !profile.execution_samples.is_empty() {
            execution.add_chunk(&profile, symbolizer, filter, origin, clock);
        }
        outcome.chunks += 1;
        progress(chunk.offset as usize + chunk.bytes.len(), bytes.len());
    }
    if outcome.aggregate.total.samples == 0 && execution.total.samples > 0 {
        outcome.aggregate = execution;
    }
    if let (Some(start), Some(end)) = (origin_nanos, end_nanos) {
        outcome.aggregate.span_nanos = Some(window(start, end, filter));
    }
    Ok(outcome)
}

/// `start..end` (ns since the epoch) cut to the filter's window (ns from `start`).
fn window(start: i64, end: i64, filter: &Filter) -> (i64, i64) {
    let at = |offset_ns: u64| start.saturating_add(i64::try_from(offset_ns).unwrap_or(i64::MAX));
    let from = filter.from_ns.map_or(start, at).clamp(start, end);
    let to = filter.to_ns.map_or(end, at).clamp(from, end);
    (from, to)
}
