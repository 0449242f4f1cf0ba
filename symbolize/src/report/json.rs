//! The JSON view for scripts: totals, threads, functions and stacks with every frame's kind,
//! library and source line. `total` = `recorded` + `lost`, and the stacks' weights sum to it
//! (lost samples are stacks of one placeholder frame).

use std::io::{self, Write};

use serde_json::{json, Value};

use super::aggregate::{Aggregate, Source, Weight};
use super::text::top_functions;

fn weight(w: &Weight) -> Value {
    json!({ "cpuNanos": w.cpu_ns, "samples": w.samples })
}

/// The whole aggregate as one JSON document.
pub fn to_json(agg: &Aggregate) -> Value {
    let overloaded = agg.overloaded();
    let frames: Vec<Value> = agg
        .frames
        .iter()
        .map(|f| {
            json!({
                "name": f.shown_name(&overloaded),
                "descriptor": f.descriptor.as_deref(),
                "kind": f.kind.label(),
                "library": f.library.as_deref(),
                "file": f.file.as_deref(),
                "line": f.line,
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
        "source": match agg.source {
            Source::CpuTime => "jdk.CPUTimeSample",
            Source::Execution => "jdk.ExecutionSample",
        },
        "nativeStacksRecorded": agg.chunks_with_native_field > 0,
        "total": weight(&agg.total),
        "recorded": weight(&agg.recorded),
        "lost": weight(&agg.lost),
        "lostSamples": agg.lost.samples,
        "lostWithoutCpuTime": agg.lost_cpu_unknown,
        "withNativeFrames": weight(&agg.with_native),
        "withNativeBetweenJava": weight(&agg.with_segments),
        "nativeTruncated": weight(&agg.native_truncated),
        "nativeUnknown": weight(&agg.native_unknown),
        "failed": weight(&agg.failed),
        "javaTruncated": weight(&agg.java_truncated),
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
