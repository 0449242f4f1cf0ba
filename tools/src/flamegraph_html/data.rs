//! The profile as the page reads it: one JSON document, written by hand for size and speed
//! (a string table, a function table and the nodes as flat arrays of integers).
//!
//! ```text
//! { "version": 1, "title": "...", "unit": "cpu" | "samples", "hasCpu": bool,
//!   "cpuScaleNs": G,                       // every node's CPU time is a multiple of G ns
//!   "kinds": [{"label", "description", "rgb": [r, g, b]}],      // Kind::ALL's order
//!   "strings": ["..."],
//!   "functions": [name, kind, library, file, shade, line, ...], // 6 integers a function;
//!                 // strings by index, -1 for none; kind into "kinds"; line: 0 unknown,
//!                 // -1 several, else the line (of the function's first node)
//!   "nodes": {                             // in pre-order, the root first
//!     "function": [...],                   // -1 for the root
//!     "up": [...],                         // depth of the node before + 1 − depth
//!     "lines": [step, line, ...],          // nodes not at their function's line
//!     "self": [[step, samples, cpu ÷ G, ...] per profile] },   // nodes with a self weight
//!                 // step: node index − the index listed before (the first: its index)
//!   "profiles": [{"name", "source", "total": [samples, ns], "recorded", "lost",
//!                 "lostCpuUnknown", "failed", "withNative", "nativeTruncated",
//!                 "nativeUnknown", "javaTruncated"}] }       // NEW first, then BASE
//! ```
//!
//! Every `<` in a string is written `\u003c`, so that no name can end the `<script>` element
//! the document sits in (`</script>`) or open an HTML comment in it.

use std::fmt::Write as _;

use rustc_hash::FxHashMap;
use symbolize::report::aggregate::Source;
use symbolize::report::collapsed::Unit;
use symbolize::report::{Aggregate, Kind, Weight};

use super::tree::{CallTree, Line};
use crate::flamegraph::kind_color;

/// A profile of the page and the name it is shown under.
pub struct Labelled<'a> {
    /// The recording's path, as the header shows it.
    pub name: String,
    /// Its samples.
    pub aggregate: &'a Aggregate,
}

/// `s` as a JSON string, with `<` escaped.
pub fn push_str(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '<' => out.push_str("\\u003c"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

fn push_numbers<T: std::fmt::Display>(out: &mut String, values: impl Iterator<Item = T>) {
    out.push('[');
    for (i, v) in values.enumerate() {
        if i > 0 {
            out.push(',');
        }
        let _ = write!(out, "{v}");
    }
    out.push(']');
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

fn kind_index(kind: Kind) -> usize {
    Kind::ALL.iter().position(|&k| k == kind).unwrap_or(0)
}

/// The index of `s` in the string table, which is written to `out` as it grows; -1 for none.
fn intern<'a>(
    strings: &mut FxHashMap<&'a str, usize>,
    s: Option<&'a str>,
    out: &mut String,
) -> i64 {
    let Some(s) = s else { return -1 };
    let next = strings.len();
    let id = *strings.entry(s).or_insert_with(|| {
        if next > 0 {
            out.push(',');
        }
        push_str(out, s);
        next
    });
    id as i64
}

fn weight(w: &Weight) -> String {
    format!("[{},{}]", w.samples, w.cpu_ns)
}

/// The document for `tree`, made of `profiles` (NEW first, then BASE for a difference), drawn
/// by `unit` until the reader picks the other.
pub fn document(tree: &CallTree, profiles: &[Labelled<'_>], unit: Unit, title: &str) -> String {
    let has_cpu = profiles
        .iter()
        .all(|p| p.aggregate.source == Source::CpuTime);
    let unit = if has_cpu { unit } else { Unit::Samples };
    let scale_ns = tree
        .nodes
        .iter()
        .flat_map(|n| n.self_weight.iter())
        .fold(0, |g, w| gcd(g, w.cpu_ns))
        .max(1);
    let mut out = String::with_capacity(64 + tree.nodes.len() * 24 + tree.functions.len() * 48);
    out.push_str("{\"version\":1,\"title\":");
    push_str(&mut out, title);
    let unit_name = match unit {
        Unit::CpuNanos => "cpu",
        Unit::Samples => "samples",
    };
    let _ = write!(
        out,
        ",\"unit\":\"{unit_name}\",\"hasCpu\":{has_cpu},\"cpuScaleNs\":{scale_ns},\"kinds\":["
    );
    for (i, kind) in Kind::ALL.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        let (r, g, b) = kind_color(*kind);
        out.push_str("{\"label\":");
        push_str(&mut out, kind.label());
        out.push_str(",\"description\":");
        // A difference merges a Java method's tiers into Kind::Java (tree::Identity).
        let description = if *kind == Kind::Java && profiles.len() > 1 {
            "Java (tiers merged)"
        } else {
            kind.description()
        };
        push_str(&mut out, description);
        let _ = write!(out, ",\"rgb\":[{r},{g},{b}]}}");
    }
    out.push_str("],\"strings\":[");
    let line_code = |line: Line| match line {
        Line::Unknown => 0i64,
        Line::At(l) => i64::from(l),
        Line::Several => -1,
    };
    // Each function's line is the line of its first node; nodes at another line are listed.
    let mut function_line = vec![None; tree.functions.len()];
    for n in &tree.nodes {
        if let Some(f) = n.function {
            function_line[f as usize].get_or_insert(line_code(n.line));
        }
    }
    let mut strings: FxHashMap<&str, usize> = FxHashMap::default();
    let mut table = Vec::with_capacity(tree.functions.len() * 6);
    for (i, f) in tree.functions.iter().enumerate() {
        table.push(intern(&mut strings, Some(&f.name), &mut out));
        table.push(kind_index(f.kind) as i64);
        table.push(intern(&mut strings, f.library.as_deref(), &mut out));
        table.push(intern(&mut strings, f.file.as_deref(), &mut out));
        table.push(i64::from(tree.shades[i]));
        table.push(function_line[i].unwrap_or(0));
    }
    out.push_str("],\"functions\":");
    push_numbers(&mut out, table.iter());
    out.push_str(",\"nodes\":{\"function\":");
    push_numbers(
        &mut out,
        tree.nodes.iter().map(|n| n.function.map_or(-1, i64::from)),
    );
    // In pre-order a node is at most one level below the one before it: how many levels up
    // from there (mostly 0) is smaller than its depth.
    out.push_str(",\"up\":");
    let mut previous = -1i64;
    push_numbers(
        &mut out,
        tree.nodes.iter().map(|n| {
            let up = previous + 1 - i64::from(n.depth);
            previous = i64::from(n.depth);
            up
        }),
    );
    out.push_str(",\"lines\":");
    let mut sparse = Vec::new();
    let mut last = 0usize;
    for (i, n) in tree.nodes.iter().enumerate() {
        let Some(f) = n.function else { continue };
        let line = line_code(n.line);
        if Some(line) != function_line[f as usize] {
            sparse.push((i - last) as i64);
            sparse.push(line);
            last = i;
        }
    }
    push_numbers(&mut out, sparse.iter());
    // Per profile, the nodes with a self weight: [node index step, samples, CPU ÷ G, ...].
    out.push_str(",\"self\":[");
    for p in 0..profiles.len() {
        if p > 0 {
            out.push(',');
        }
        let mut sparse = Vec::new();
        let mut last = 0usize;
        for (i, n) in tree.nodes.iter().enumerate() {
            let w = n.self_weight[p];
            if w.samples > 0 || w.cpu_ns > 0 {
                sparse.push((i - last) as u64);
                sparse.push(w.samples);
                sparse.push(w.cpu_ns / scale_ns);
                last = i;
            }
        }
        push_numbers(&mut out, sparse.iter());
    }
    out.push_str("]},\"profiles\":[");
    for (i, p) in profiles.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        let a = p.aggregate;
        out.push_str("{\"name\":");
        push_str(&mut out, &p.name);
        let source = match a.source {
            Source::CpuTime => "jdk.CPUTimeSample",
            Source::Execution => "jdk.ExecutionSample",
        };
        let _ = write!(
            out,
            ",\"source\":\"{source}\",\"total\":{},\"recorded\":{},\"lost\":{},\
             \"lostCpuUnknown\":{},\"failed\":{},\"withNative\":{},\"nativeTruncated\":{},\
             \"nativeUnknown\":{},\"javaTruncated\":{}}}",
            weight(&a.total),
            weight(&a.recorded),
            weight(&a.lost),
            a.lost_cpu_unknown,
            weight(&a.failed),
            weight(&a.with_native),
            weight(&a.native_truncated),
            weight(&a.native_unknown),
            weight(&a.java_truncated),
        );
    }
    out.push_str("]}");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_cannot_end_the_script_element() {
        let mut out = String::new();
        push_str(&mut out, "a</script><!--\"\\\n\u{1}é\u{2028}");
        assert_eq!(
            out,
            "\"a\\u003c/script>\\u003c!--\\\"\\\\\\n\\u0001é\u{2028}\""
        );
        let back: String = serde_json::from_str(&out).unwrap();
        assert_eq!(back, "a</script><!--\"\\\n\u{1}é\u{2028}");
    }
}
