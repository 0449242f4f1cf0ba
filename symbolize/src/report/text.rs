//! The text report: totals, top native functions, top Java methods, top stacks, threads.

use std::io::{self, Write};

use rustc_hash::FxHashMap;

use super::aggregate::{Aggregate, Source, Weight};
use super::Kind;

/// One function's self and total weight.
#[derive(Debug, Clone, PartialEq)]
pub struct FunctionWeight {
    /// Frame index in [`Aggregate::frames`].
    pub frame: u32,
    /// Weight of samples where it is the leaf (native) or the topmost Java frame (Java).
    pub self_weight: Weight,
    /// Weight of samples where it appears anywhere (counted once per stack).
    pub total_weight: Weight,
}

/// For each frame, the first frame of the same function: same name, library and descriptor,
/// any line; of the same kind when `by_kind`, else only both native or both not.
fn first_frames(agg: &Aggregate, by_kind: bool) -> Vec<u32> {
    type Function<'a> = (
        &'a str,
        Option<&'a str>,
        Option<&'a str>,
        Result<Kind, bool>,
    );
    let mut first: FxHashMap<Function<'_>, u32> = FxHashMap::default();
    (0..agg.frames.len())
        .filter_map(|i| {
            let f = agg.frames.get_index(i)?;
            let kind = if by_kind {
                Ok(f.kind)
            } else {
                Err(f.kind.is_native())
            };
            let key = (
                f.name.as_ref(),
                f.library.as_deref(),
                f.descriptor.as_deref(),
                kind,
            );
            Some(*first.entry(key).or_insert(i as u32))
        })
        .collect()
}

/// Functions of the kind `native` (or Java), by self CPU time, then total. Frames of one
/// function at different source lines count as one function (the first such frame names it).
pub fn top_functions(agg: &Aggregate, native: bool) -> Vec<FunctionWeight> {
    // Frames of one function at different lines, and of one Java method in different tiers
    // (interpreted, JIT, inlined), are one function here.
    let function = first_frames(agg, false);
    let function_of = |id: u32| function.get(id as usize).copied().unwrap_or(id);
    let mut by_frame: FxHashMap<u32, FunctionWeight> = FxHashMap::default();
    let mut seen = Vec::new();
    for (stack, w) in &agg.stacks {
        seen.clear();
        let wanted = |id: u32| {
            agg.frames.get_index(id as usize).is_some_and(|f| {
                if native {
                    f.kind.is_native()
                } else {
                    f.kind.is_java()
                }
            })
        };
        // Self: the first frame of the wanted kind counted from the leaf.
        if let Some(&leaf) = stack.iter().find(|&&id| wanted(id)) {
            if !native || stack.first() == Some(&leaf) {
                let e = entry(&mut by_frame, function_of(leaf));
                e.self_weight.cpu_ns += w.cpu_ns;
                e.self_weight.samples += w.samples;
            }
        }
        for &id in stack {
            let f = function_of(id);
            if wanted(id) && !seen.contains(&f) {
                seen.push(f);
                let e = entry(&mut by_frame, f);
                e.total_weight.cpu_ns += w.cpu_ns;
                e.total_weight.samples += w.samples;
            }
        }
    }
    let mut out: Vec<FunctionWeight> = by_frame.into_values().collect();
    let m = |w: &Weight| agg.measure(w);
    out.sort_by(|a, b| {
        (m(&b.self_weight), m(&b.total_weight), a.frame).cmp(&(
            m(&a.self_weight),
            m(&a.total_weight),
            b.frame,
        ))
    });
    out
}

/// The stacks merged by function (frames that differ only in line number are one frame), by
/// weight, heaviest first: (frame ids of the first such stack, weight).
pub fn top_stacks(agg: &Aggregate) -> Vec<(Vec<u32>, Weight)> {
    let function = first_frames(agg, true);
    let mut merged: FxHashMap<Vec<u32>, Weight> = FxHashMap::default();
    for (stack, w) in &agg.stacks {
        let key: Vec<u32> = stack
            .iter()
            .map(|&id| function.get(id as usize).copied().unwrap_or(id))
            .collect();
        merged.entry(key).or_default().add_weight(*w);
    }
    let mut stacks: Vec<_> = merged.into_iter().collect();
    stacks.sort_by(|a, b| {
        agg.measure(&b.1)
            .cmp(&agg.measure(&a.1))
            .then_with(|| a.0.cmp(&b.0))
    });
    stacks
}

fn entry(map: &mut FxHashMap<u32, FunctionWeight>, frame: u32) -> &mut FunctionWeight {
    map.entry(frame).or_insert(FunctionWeight {
        frame,
        self_weight: Weight::default(),
        total_weight: Weight::default(),
    })
}

fn pct(part: u64, all: u64) -> f64 {
    if all == 0 {
        0.0
    } else {
        part as f64 * 100.0 / all as f64
    }
}

fn secs(ns: u64) -> f64 {
    ns as f64 / 1e9
}

fn cpu(agg: &Aggregate, w: &Weight) -> String {
    match agg.source {
        Source::CpuTime => format!("{} samples, {:.3} CPU-s", w.samples, secs(w.cpu_ns)),
        Source::Execution => format!("{} samples", w.samples),
    }
}

/// Writes the totals: every sample, lost ones included, and the samples whose stacks lack a
/// part, each apart.
pub fn write_totals(agg: &Aggregate, out: &mut dyn Write) -> io::Result<()> {
    let all = agg.measure(&agg.total);
    let share = |w: &Weight| pct(agg.measure(w), all);
    if agg.source == Source::Execution {
        writeln!(
            out,
            "This file has no jdk.CPUTimeSample events: it was recorded by the JDK's own sampler \
             (jdk.ExecutionSample, as with its default `profile` settings). Below is its Java \
             profile from {} execution samples, weighed by count: these events carry no CPU time \
             and no native stacks. Record with jfr-native (jfrnative record, or \
             -agentpath:libjfrnative.so) for CPU time and native frames.",
            agg.total.samples
        )?;
        writeln!(out)?;
    }
    if agg.source == Source::CpuTime
        && agg.chunks_with_native_field == 0
        && agg.recorded.samples > 0
    {
        writeln!(
            out,
            "This file's CPU samples have no native stacks: it was recorded by the JDK's own \
             CPU-time sampler, not by jfr-native. Below is its Java profile. Record with \
             jfr-native (jfrnative record, or -agentpath:libjfrnative.so) for native frames."
        )?;
        writeln!(out)?;
    }
    let label = match agg.source {
        Source::CpuTime => "CPU samples",
        Source::Execution => "Execution samples",
    };
    writeln!(out, "{label}: {}", cpu(agg, &agg.recorded))?;
    if agg.lost.samples > 0 {
        let unknown = if agg.lost_cpu_unknown > 0 {
            format!(
                " ({} of them with no CPU time in the file)",
                agg.lost_cpu_unknown
            )
        } else {
            String::new()
        };
        writeln!(out, "Lost samples: {}{unknown}", cpu(agg, &agg.lost))?;
        writeln!(out, "Total: {}", cpu(agg, &agg.total))?;
    }
    let rows = [
        ("with native frames", &agg.with_native),
        (
            "with native frames between Java frames (upcalls)",
            &agg.with_segments,
        ),
        (
            "native stack truncated (walk stopped before the Java frames)",
            &agg.native_truncated,
        ),
        (
            "native frames unknown (walk stopped before its first frame)",
            &agg.native_unknown,
        ),
        ("no Java stack (not taken)", &agg.failed),
        ("Java stack truncated", &agg.java_truncated),
    ];
    for (what, w) in rows {
        if agg.source == Source::Execution && what == "with native frames" {
            continue;
        }
        writeln!(out, "  {what}: {} ({:.1}%)", cpu(agg, w), share(w))?;
    }
    Ok(())
}

/// Writes the short report: the totals and the top native functions and Java methods,
/// `limit` rows each.
pub fn write_summary(agg: &Aggregate, limit: usize, out: &mut dyn Write) -> io::Result<()> {
    let all = agg.measure(&agg.total);
    let overloaded = agg.overloaded();
    write_totals(agg, out)?;
    let by = match agg.source {
        Source::CpuTime => "self CPU time",
        Source::Execution => "self samples",
    };
    for (title, native) in [("Top native functions", true), ("Top Java methods", false)] {
        let no_native_stacks = agg.chunks_with_native_field == 0 && agg.with_native.samples == 0;
        if native && (agg.source == Source::Execution || no_native_stacks) {
            continue;
        }
        writeln!(out)?;
        writeln!(out, "{title} by {by}:")?;
        writeln!(
            out,
            "{:>8} {:>8} {:>10}  function",
            "self%",
            "total%",
            match agg.source {
                Source::CpuTime => "self-s",
                Source::Execution => "self",
            }
        )?;
        for f in top_functions(agg, native).iter().take(limit) {
            let Some(frame) = agg.frames.get_index(f.frame as usize) else {
                continue;
            };
            let mut name = frame.shown_name(&overloaded);
            if let Some(lib) = &frame.library {
                if !name.starts_with(lib.as_ref()) {
                    name = format!("{name} [{lib}]");
                }
            }
            if let Some(file) = &frame.file {
                name = format!("{name} ({file})");
            }
            let own = match agg.source {
                Source::CpuTime => format!("{:.3}", secs(f.self_weight.cpu_ns)),
                Source::Execution => f.self_weight.samples.to_string(),
            };
            writeln!(
                out,
                "{:>7.2}% {:>7.2}% {own:>10}  {name}",
                pct(agg.measure(&f.self_weight), all),
                pct(agg.measure(&f.total_weight), all),
            )?;
        }
    }
    Ok(())
}

/// Writes the report: [`write_summary`], then the top stacks and the threads; `limit` rows per
/// table.
pub fn write(agg: &Aggregate, limit: usize, out: &mut dyn Write) -> io::Result<()> {
    let all = agg.measure(&agg.total);
    let overloaded = agg.overloaded();
    write_summary(agg, limit, out)?;
    writeln!(out)?;
    writeln!(out, "Top stacks (leaf first; lines merged):")?;
    for (stack, w) in top_stacks(agg).into_iter().take(limit.min(10)) {
        writeln!(
            out,
            "  {:.2}% ({} samples)",
            pct(agg.measure(&w), all),
            w.samples
        )?;
        for &id in stack.iter().take(24) {
            if let Some(frame) = agg.frames.get_index(id as usize) {
                let kind = match frame.kind {
                    Kind::Native | Kind::Vm | Kind::Unsymbolized | Kind::Kernel => {
                        frame.library.as_deref().unwrap_or("native").to_string()
                    }
                    other => other.label().to_string(),
                };
                let name = frame.shown_name(&overloaded);
                if frame.kind == Kind::Placeholder {
                    writeln!(out, "      {name}")?;
                } else {
                    writeln!(out, "      {name}  [{kind}]")?;
                }
            }
        }
        if stack.len() > 24 {
            writeln!(out, "      ... {} more frames", stack.len() - 24)?;
        }
    }
    writeln!(out)?;
    writeln!(
        out,
        "Threads by {}:",
        match agg.source {
            Source::CpuTime => "CPU time",
            Source::Execution => "samples",
        }
    )?;
    let mut threads: Vec<_> = agg.threads.iter().collect();
    threads.sort_by(|a, b| {
        agg.measure(b.1)
            .cmp(&agg.measure(a.1))
            .then_with(|| a.0.cmp(b.0))
    });
    for (name, w) in threads.into_iter().take(limit) {
        writeln!(
            out,
            "{:>7.2}% {:>10.3} s {:>8} samples  {name}",
            pct(agg.measure(w), all),
            secs(w.cpu_ns),
            w.samples
        )?;
    }
    Ok(())
}
