//! The hot write path of the recorder's drain thread: intern a Java stack trace and a native
//! stack trace, write one `jdk.CPUTimeSample`. Reported as samples per second for 1, 100, 1,000
//! and 10,000 distinct stacks (used in turn: the worst case for caches), plus the file bytes
//! per sample once stacks repeat (printed).

#![allow(missing_docs)] // criterion_group! generates an undocumented fn.

use std::hint::black_box;
use std::io;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use jfr_writer::*;

const JAVA_DEPTH: usize = 12;
const NATIVE_DEPTH: usize = 8;
const SAMPLES_PER_CHUNK: u64 = 200_000;

struct Stacks {
    java: Vec<Vec<Frame>>,
    native: Vec<Vec<u64>>,
}

fn recording<W: io::Write>(
    out: W,
    native: NativeStackEncoding,
) -> (Recording<W>, Vec<MethodId>, ThreadId) {
    let clock = Clock {
        ticks_per_second: 1_000_000,
        origin_ticks: 0,
        origin_epoch_nanos: 1_767_225_600_000_000_000,
    };
    let mut rec = Recording::new(
        out,
        RecordingOptions {
            clock,
            native_stack_encoding: native,
        },
        0,
    )
    .unwrap();
    let mut methods = Vec::new();
    for c in 0..64 {
        let name = rec.symbol(&format!("com/example/Class{c}"));
        let class = rec.class(Class {
            class_loader: None,
            name,
            package: None,
            modifiers: 1,
            hidden: false,
        });
        for m in 0..8 {
            let (name, descriptor) = (rec.symbol(&format!("method{m}")), rec.symbol("(IJ)V"));
            methods.push(rec.method(Method {
                class,
                name,
                descriptor,
                modifiers: 1,
                hidden: false,
            }));
        }
    }
    let thread = rec.thread(Thread {
        os_name: Some("worker".into()),
        os_thread_id: 7,
        java_name: Some("worker".into()),
        java_thread_id: 7,
        group: None,
        is_virtual: false,
    });
    (rec, methods, thread)
}

/// `distinct` different stacks, deterministic (xorshift), realistic depths.
fn stacks(distinct: usize, methods: &[MethodId]) -> Stacks {
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut next = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let java = (0..distinct)
        .map(|_| {
            (0..JAVA_DEPTH)
                .map(|_| Frame {
                    method: methods[next() as usize % methods.len()],
                    line: (next() % 500) as i32,
                    bytecode_index: (next() % 100) as i32,
                    frame_type: FrameType::JitCompiled,
                })
                .collect()
        })
        .collect();
    let native = (0..distinct)
        .map(|_| {
            (0..NATIVE_DEPTH)
                .map(|_| 0x7f00_0000_0000 + next() % 0x100_0000)
                .collect()
        })
        .collect();
    Stacks { java, native }
}

fn write_sample<W: io::Write>(
    rec: &mut Recording<W>,
    s: &Stacks,
    i: usize,
    t: i64,
    thread: ThreadId,
) {
    let k = i % s.java.len();
    let stack_trace = rec.stack_trace(&s.java[k], false);
    let native = rec.native_stack_trace(&s.native[k], false);
    rec.write(&CpuTimeSample {
        start_ticks: t,
        stack_trace: Some(stack_trace),
        thread: Some(thread),
        failed: false,
        sampling_period_ticks: 10_000,
        biased: false,
        native_stack_trace: Some(native),
    });
}

/// File bytes per sample once every stack has been seen: (size after 2N − size after N) / N,
/// with samples 1 ms apart (4 busy threads at HZ=250) from `age_s` seconds into the recording
/// (µs ticks take 4 bytes for the first 268 s of a recording, 5 up to 9.5 hours).
fn bytes_per_sample(distinct: usize, native: NativeStackEncoding, age_s: i64) -> f64 {
    let size = |n: usize| {
        let (mut rec, methods, thread) = recording(Vec::new(), native);
        let s = stacks(distinct, &methods);
        let t = |i: usize| age_s * 1_000_000 + i as i64 * 1_000;
        for i in 0..n {
            write_sample(&mut rec, &s, i, t(i), thread);
        }
        rec.finish(t(n)).unwrap().len()
    };
    let n = 20_000.max(distinct * 4);
    (size(2 * n) - size(n)) as f64 / n as f64
}

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("intern_and_write_cpu_time_sample");
    group.throughput(Throughput::Elements(1));
    for distinct in [1usize, 100, 1_000, 10_000] {
        let (mut rec, methods, thread) = recording(io::sink(), NativeStackEncoding::Pooled);
        let s = stacks(distinct, &methods);
        let mut i = 0usize;
        group.bench_with_input(BenchmarkId::from_parameter(distinct), &distinct, |b, _| {
            b.iter(|| {
                write_sample(&mut rec, &s, i, i as i64 * 4_000, thread);
                i += 1;
                if rec.chunk_events() >= SAMPLES_PER_CHUNK {
                    rec.rotate(i as i64 * 4_000).unwrap();
                }
                black_box(&rec);
            })
        });
    }
    group.finish();
    for distinct in [1usize, 100, 1_000, 10_000] {
        for age_s in [10, 3_600] {
            eprintln!(
                "bytes per sample, {distinct} distinct stacks, {age_s} s into the recording: \
                 pooled {:.2}, inline {:.2}",
                bytes_per_sample(distinct, NativeStackEncoding::Pooled, age_s),
                bytes_per_sample(distinct, NativeStackEncoding::Inline, age_s)
            );
        }
    }
    let (rec, _, _) = recording(Vec::new(), NativeStackEncoding::Pooled);
    eprintln!(
        "fixed overhead (one chunk without events): {} bytes",
        rec.finish(0).unwrap().len()
    );
}

criterion_group!(benches, bench);
criterion_main!(benches);
