//! Writing the HTML flame graph of a large profile: 10,000 and 100,000 distinct frames
//! (synthetic, [`tools::synthetic::profile`]), the call tree merged, the document written and
//! compressed. Prints each page's size and node count once; criterion reports the time.

#![allow(missing_docs)] // criterion_group! generates an undocumented fn.

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use symbolize::report::collapsed::Unit;
use tools::flamegraph_html;
use tools::synthetic;

fn page(agg: &symbolize::report::Aggregate) -> Vec<u8> {
    let mut out = Vec::new();
    flamegraph_html::write(agg, "synthetic.jfr", Unit::CpuNanos, "synthetic", &mut out).unwrap();
    out
}

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("html_flamegraph");
    group.sample_size(10);
    for (frames, stacks) in [(10_000, 4_000), (100_000, 40_000)] {
        let agg = synthetic::profile(frames, stacks, 1);
        let tree = flamegraph_html::tree::CallTree::build(
            &[&agg],
            flamegraph_html::tree::Identity::ByKind,
        );
        println!(
            "{frames} frames, {} stacks, {} nodes: page of {:.2} MB",
            agg.stacks.len(),
            tree.nodes.len(),
            page(&agg).len() as f64 / 1e6
        );
        group.bench_with_input(BenchmarkId::new("write", frames), &agg, |b, agg| {
            b.iter(|| black_box(page(agg)))
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
