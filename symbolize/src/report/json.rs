//! The JSON view for scripts: totals, threads, functions and stacks with every frame's kind,
//! library and source line.

use std::io::{self, Write};

use serde_json::{json, Value};

use super::aggregate::{Aggregate, Weight};
use super::text::top_functions;

fn weight(w: &Weight) -> Value {
    json!({ "cpuNanos": w.cpu_ns, "samples": w.samples })
}

/// The whole aggregate as one JSON document.
pub fn to_json(agg: &Aggregate) -> Value {
    let frames: Vec<Value> = agg
        .frames
        .iter()
        .map(|f| {
            json!({
                "name": &*f.name,
                "kind": f.kind.label(),
                "library": f.library.as_deref(),
                "file": f.source.as_ref().map(|s| &*s.0),
                "line": f.source.as_ref().map(|s| s.1),
            })
        })
        .collect();
    let mut stacks: Vec<_> = agg.stacks.iter().collect();
    stacks.sort_by(|a, b| b.1.cpu_ns.cmp(&a.1.cpu_ns).then_with(|| a.0.cmp(b.0)));
    let mut threads: Vec<_> = agg.threads.iter().collect();
    threads.sort_by(|a, b| b.1.cpu_ns.cmp(&a.1.cpu_ns).then_with(|| a.0.cmp(b.0)));
    let functions = |native: bool| -> Vec<Value> {
        top_functions(agg, native)
            .iter()
            .map(|f| json!({ "frame": f.frame, "self": weight(&f.self_weight), "total": weight(&f.total_weight) }))
            .collect()
    };
    json!({
        "total": weight(&agg.total),
        "withNativeFrames": weight(&agg.with_native),
        "nativeTruncated": weight(&agg.native_truncated),
        "failed": weight(&agg.failed),
        "lostSamples": agg.lost_samples,
        "frames": frames,
        "nativeFunctions": functions(true),
        "javaMethods": functions(false),
        "threads": threads.iter().map(|(name, w)| json!({ "name": &***name, "weight": weight(w) })).collect::<Vec<_>>(),
        "stacks": stacks.iter().map(|(s, w)| json!({ "frames": s, "weight": weight(w) })).collect::<Vec<_>>(),
    })
}

/// Writes [`to_json`], pretty-printed.
pub fn write(agg: &Aggregate, out: &mut dyn Write) -> io::Result<()> {
    serde_json::to_writer_pretty(&mut *out, &to_json(agg))?;
    writeln!(out)
}
