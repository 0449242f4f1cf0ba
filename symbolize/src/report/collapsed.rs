//! Folded stacks (`root;...;leaf weight`), as flamegraph.pl, inferno and speedscope read them.

use std::io::{self, Write};

use super::aggregate::Aggregate;

/// What a folded line's number counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// CPU time in ns (the sum of `samplingPeriod`).
    CpuNanos,
    /// Samples.
    Samples,
}

/// Writes one line per distinct stack, sorted, root first. `annotate` adds the suffixes
/// flame graph palettes colour by: `_[j]` JIT compiled, `_[i]` inlined, `_[0]` interpreted.
pub fn write(agg: &Aggregate, unit: Unit, annotate: bool, out: &mut dyn Write) -> io::Result<()> {
    let mut lines: Vec<(String, u64)> = agg
        .stacks
        .iter()
        .map(|(stack, w)| {
            let mut line = String::new();
            for (i, &id) in stack.iter().rev().enumerate() {
                if i > 0 {
                    line.push(';');
                }
                let Some(frame) = agg.frames.get_index(id as usize) else {
                    continue;
                };
                // ';' separates frames; readers split the weight off at the last space, so
                // spaces inside names (C++ signatures) are kept.
                line.extend(frame.name.chars().map(|c| if c == ';' { ':' } else { c }));
                if annotate {
                    line.push_str(match frame.kind {
                        super::Kind::Compiled => "_[j]",
                        super::Kind::Inlined => "_[i]",
                        super::Kind::Interpreted => "_[0]",
                        _ => "",
                    });
                }
            }
            let weight = match unit {
                Unit::CpuNanos => w.cpu_ns,
                Unit::Samples => w.samples,
            };
            (line, weight)
        })
        .collect();
    lines.sort();
    for (line, weight) in lines {
        writeln!(out, "{line} {weight}")?;
    }
    Ok(())
}
