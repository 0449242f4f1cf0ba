//! Folded stacks (`root;...;leaf weight`), as flamegraph.pl, inferno and speedscope read them.

use std::io::{self, Write};

use rustc_hash::FxHashMap;

use super::aggregate::{Aggregate, FrameKey, Source};

/// What a folded line's number counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// CPU time in ns (the sum of `samplingPeriod`).
    CpuNanos,
    /// Samples.
    Samples,
}

impl Unit {
    /// The unit that `agg` can be weighed by: a profile of execution samples has no CPU time,
    /// so it is always counted in samples.
    pub fn for_aggregate(self, agg: &Aggregate) -> Unit {
        match agg.source {
            Source::CpuTime => self,
            Source::Execution => Unit::Samples,
        }
    }
}

/// A frame's text in a folded line: ';' separates frames, so it becomes ':'. Readers split
/// the weight off at the last space, so spaces inside names (C++ signatures) are kept.
pub fn folded(name: &str) -> String {
    name.replace(';', ":")
}

/// One line per distinct folded text, root first, sorted, with the weights of every stack that
/// folds to it summed (stacks that differ only in line numbers, which the text does not show,
/// give one line). `name` gives the text of a frame; ';' in it becomes ':'.
pub fn lines(
    agg: &Aggregate,
    unit: Unit,
    name: &dyn Fn(&FrameKey) -> String,
) -> Vec<(String, u64)> {
    let unit = unit.for_aggregate(agg);
    let mut by_text: FxHashMap<String, u64> = FxHashMap::default();
    for (stack, w) in &agg.stacks {
        let mut line = String::new();
        for (i, &id) in stack.iter().rev().enumerate() {
            if i > 0 {
                line.push(';');
            }
            let Some(frame) = agg.frames.get_index(id as usize) else {
                continue;
            };
            line.push_str(&folded(&name(frame)));
        }
        let weight = match unit {
            Unit::CpuNanos => w.cpu_ns,
            Unit::Samples => w.samples,
        };
        *by_text.entry(line).or_default() += weight;
    }
    let mut lines: Vec<(String, u64)> = by_text.into_iter().filter(|(_, w)| *w > 0).collect();
    lines.sort();
    lines
}

/// Writes [`lines`] with each frame's name. Every sample is in one line: a stack with missing
/// parts ends in a placeholder frame that says so (`[no Java stack]`, `[lost samples]`), so
/// the weights sum to the profile's total (lost samples whose CPU time the file does not give
/// count only in samples).
pub fn write(agg: &Aggregate, unit: Unit, out: &mut dyn Write) -> io::Result<()> {
    let overloaded = agg.overloaded();
    for (line, weight) in lines(agg, unit, &|f| f.shown_name(&overloaded)) {
        writeln!(out, "{line} {weight}")?;
    }
    Ok(())
}
