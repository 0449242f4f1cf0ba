//! Flame graphs through `inferno` (the Rust port of flamegraph.pl): an interactive SVG with
//! search and zoom, coloured with the Java palette (green JIT, aqua inlined, yellow C++, red
//! C and other native code).

use std::io::{self, Write};

use inferno::flamegraph::{self, color::MultiPalette, Options, Palette};
use symbolize::report::{collapsed, Aggregate};

/// Writes the SVG flame graph of `agg`.
pub fn write(
    agg: &Aggregate,
    unit: collapsed::Unit,
    title: &str,
    out: &mut dyn Write,
) -> io::Result<()> {
    let mut folded = Vec::new();
    collapsed::write(agg, unit, true, &mut folded)?;
    let text = String::from_utf8_lossy(&folded);
    let mut options = Options::default();
    options.title = title.to_string();
    options.colors = Palette::Multi(MultiPalette::Java);
    options.count_name = match unit {
        collapsed::Unit::CpuNanos => "ns".to_string(),
        collapsed::Unit::Samples => "samples".to_string(),
    };
    if folded.is_empty() {
        // inferno refuses empty input; an empty profile still gets a valid SVG.
        options.title = format!("{title} (no samples)");
        return flamegraph::from_lines(&mut options, ["[no samples] 1"], out)
            .map_err(io::Error::other);
    }
    flamegraph::from_lines(&mut options, text.lines(), out).map_err(io::Error::other)
}
