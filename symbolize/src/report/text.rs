//! The text report: totals, top native functions, top Java methods, top stacks, threads.

use std::io::{self, Write};

use rustc_hash::FxHashMap;

use super::aggregate::{Aggregate, Weight};
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

/// Functions of the kind `native` (or Java), by self CPU time, then total. Frames of one
/// function at different source lines count as one function (the first such frame names it).
pub fn top_functions(agg: &Aggregate, native: bool) -> Vec<FunctionWeight> {
    let mut first: FxHashMap<(&str, Option<&str>, bool), u32> = FxHashMap::default();
    let function: Vec<u32> = (0..agg.frames.len())
        .filter_map(|i| {
            let f = agg.frames.get_index(i)?;
            let key = (f.name.as_ref(), f.library.as_deref(), f.kind.is_native());
            Some(*first.entry(key).or_insert(i as u32))
        })
        .collect();
    let function_of = |id: u32| function.get(id as usize).copied().unwrap_or(id);
    let mut by_frame: FxHashMap<u32, FunctionWeight> = FxHashMap::default();
    let mut seen = Vec::new();
    for (stack, w) in &agg.stacks {
        seen.clear();
        let wanted = |id: u32| {
            agg.frames
                .get_index(id as usize)
                .is_some_and(|f| f.kind.is_native() == native && !is_thread_root(f.name.as_ref()))
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
    out.sort_by(|a, b| {
        (b.self_weight.cpu_ns, b.total_weight.cpu_ns, a.frame).cmp(&(
            a.self_weight.cpu_ns,
            a.total_weight.cpu_ns,
            b.frame,
        ))
    });
    out
}

fn is_thread_root(name: &str) -> bool {
    name.starts_with('[') && name.ends_with(']')
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

/// Writes the short report: the totals and the top native functions and Java methods,
/// `limit` rows each.
pub fn write_summary(agg: &Aggregate, limit: usize, out: &mut dyn Write) -> io::Result<()> {
    let all = agg.total.cpu_ns;
    writeln!(
        out,
        "CPU samples: {} ({:.3} CPU-s); lost: {}; with native frames: {} ({:.1}% of CPU); native stack truncated: {}; Java stack failed: {}",
        agg.total.samples,
        secs(all),
        agg.lost_samples,
        agg.with_native.samples,
        pct(agg.with_native.cpu_ns, all),
        agg.native_truncated.samples,
        agg.failed.samples,
    )?;
    for (title, native) in [("Top native functions", true), ("Top Java methods", false)] {
        writeln!(out)?;
        writeln!(out, "{title} by self CPU time:")?;
        writeln!(
            out,
            "{:>8} {:>8} {:>10}  function",
            "self%", "total%", "self-s"
        )?;
        for f in top_functions(agg, native).iter().take(limit) {
            let Some(frame) = agg.frames.get_index(f.frame as usize) else {
                continue;
            };
            let mut name = frame.name.to_string();
            if let Some(lib) = &frame.library {
                if !name.starts_with(lib.as_ref()) {
                    name = format!("{name} [{lib}]");
                }
            }
            if let Some((file, _)) = &frame.source {
                name = format!("{name} ({file})");
            }
            writeln!(
                out,
                "{:>7.2}% {:>7.2}% {:>10.3}  {name}",
                pct(f.self_weight.cpu_ns, all),
                pct(f.total_weight.cpu_ns, all),
                secs(f.self_weight.cpu_ns)
            )?;
        }
    }
    Ok(())
}

/// Writes the report: [`write_summary`], then the top stacks and the threads; `limit` rows per
/// table.
pub fn write(agg: &Aggregate, limit: usize, out: &mut dyn Write) -> io::Result<()> {
    let all = agg.total.cpu_ns;
    write_summary(agg, limit, out)?;
    writeln!(out)?;
    writeln!(out, "Top stacks (leaf first):")?;
    let mut stacks: Vec<_> = agg.stacks.iter().collect();
    stacks.sort_by(|a, b| b.1.cpu_ns.cmp(&a.1.cpu_ns).then_with(|| a.0.cmp(b.0)));
    for (stack, w) in stacks.into_iter().take(limit.min(10)) {
        writeln!(out, "  {:.2}% ({} samples)", pct(w.cpu_ns, all), w.samples)?;
        if stack.is_empty() {
            writeln!(
                out,
                "      (no frames: neither a native nor a Java stack was taken)"
            )?;
        }
        for &id in stack.iter().take(24) {
            if let Some(frame) = agg.frames.get_index(id as usize) {
                let kind = if frame.kind == Kind::Native {
                    frame.library.as_deref().unwrap_or("native").to_string()
                } else {
                    frame.kind.label().to_string()
                };
                writeln!(out, "      {}  [{kind}]", frame.name)?;
            }
        }
        if stack.len() > 24 {
            writeln!(out, "      ... {} more frames", stack.len() - 24)?;
        }
    }
    writeln!(out)?;
    writeln!(out, "Threads by CPU time:")?;
    let mut threads: Vec<_> = agg.threads.iter().collect();
    threads.sort_by(|a, b| b.1.cpu_ns.cmp(&a.1.cpu_ns).then_with(|| a.0.cmp(b.0)));
    for (name, w) in threads.into_iter().take(limit) {
        writeln!(
            out,
            "{:>7.2}% {:>10.3} s {:>8} samples  {name}",
            pct(w.cpu_ns, all),
            secs(w.cpu_ns),
            w.samples
        )?;
    }
    Ok(())
}
