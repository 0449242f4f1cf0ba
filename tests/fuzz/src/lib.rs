//! Helpers shared by the fuzz targets: splitting one input in two, the symbolizer's options
//! for fuzzing (no network, nothing but the recorded paths and the fuzz directory on disk),
//! and the reports jfr-symbolize writes from an aggregate.

use std::path::PathBuf;

use symbolize::report::{collapsed, json, otlp, pprof, text, Aggregate};
use symbolize::{Options, Symbolizer};

/// Splits `data` in two at the point its first four bytes (little-endian) name, modulo the
/// rest's length: a mutation of the prefix moves the cut, one of the rest changes either part.
pub fn split(data: &[u8]) -> (&[u8], &[u8]) {
    if data.len() < 4 {
        return (data, &[]);
    }
    let (head, rest) = data.split_at(4);
    let at = u32::from_le_bytes([head[0], head[1], head[2], head[3]]) as usize;
    rest.split_at(at % (rest.len() + 1))
}

/// A symbolizer that never asks debuginfod (no network) and looks for debug files nowhere: a
/// recorded library is read from its recorded path (as jfr-symbolize does), after the directory
/// `JFR_FUZZ_LIBS` names, if set (the fuzz script copies a few small libraries there).
pub fn symbolizer() -> Symbolizer {
    let search_dirs = std::env::var_os("JFR_FUZZ_LIBS")
        .map(PathBuf::from)
        .into_iter()
        .collect();
    Symbolizer::new(Options {
        debug_dirs: Vec::new(),
        search_dirs,
        sysroots: Vec::new(),
        kept_roots: Vec::new(),
        dwarf: true,
        debuginfod: None,
    })
}

/// Writes every report jfr-symbolize and `jfrnative` write from `agg` (collapsed stacks, text,
/// JSON, pprof, both OTLP shapes, the SVG and HTML flame graphs) into memory, and returns how
/// many bytes they made. An error writing to memory is a report refusing its input, which is
/// allowed; a panic is not.
pub fn write_reports(agg: &Aggregate) -> usize {
    let mut out: Vec<u8> = Vec::new();
    let unit = collapsed::Unit::CpuNanos;
    let _ = collapsed::write(agg, unit, &mut out);
    let _ = collapsed::write(agg, collapsed::Unit::Samples, &mut out);
    let _ = text::write(agg, 20, &mut out);
    let _ = text::write_summary(agg, 5, &mut out);
    let _ = json::write(agg, &mut out);
    let _ = pprof::write(agg, &mut out);
    let resource = [("service.name".to_string(), "fuzz".to_string())];
    for shape in [otlp::Shape::Aggregated, otlp::Shape::Timed] {
        let _ = otlp::write(agg, &resource, shape, &mut out);
    }
    let _ = tools::flamegraph::write(agg, unit, "fuzz", &mut out);
    let _ = tools::flamegraph_html::write(agg, "fuzz.jfr", unit, "fuzz", &mut out);
    out.len()
}
