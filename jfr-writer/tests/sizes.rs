//! What a sample and a chunk cost, in bytes (deterministic counts, not timings): the goals of a
//! profiler that runs for hours.

use jfr_writer::*;

const JAVA_DEPTH: usize = 12;
const NATIVE_DEPTH: usize = 8;
const THREADS: usize = 8;
/// One second of ticks (µs).
const SECOND: i64 = 1_000_000;

fn options() -> RecordingOptions {
    RecordingOptions {
        clock: Clock {
            ticks_per_second: SECOND as u64,
            origin_ticks: 0,
            origin_epoch_nanos: 1_767_225_600_000_000_000,
        },
        native_stack_encoding: NativeStackEncoding::Pooled,
    }
}

/// A recording with `distinct` Java and native stacks over 512 methods, and 8 threads.
struct Workload {
    rec: Recording<Vec<u8>>,
    java: Vec<Vec<Frame>>,
    native: Vec<Vec<u64>>,
    threads: Vec<ThreadId>,
}

impl Workload {
    fn new(distinct: usize) -> Workload {
        let mut rec = Recording::new(Vec::new(), options(), 0).unwrap();
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
                let (name, descriptor) = (rec.symbol(&format!("method{m}")), rec.symbol("()V"));
                methods.push(rec.method(Method {
                    class,
                    name,
                    descriptor,
                    modifiers: 1,
                    hidden: false,
                }));
            }
        }
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
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
                        line: (next() % 2_000) as i32,
                        bytecode_index: (next() % 300) as i32,
                        frame_type: FrameType::JitCompiled,
                    })
                    .collect()
            })
            .collect();
        let native = (0..distinct)
            .map(|_| {
                (0..NATIVE_DEPTH)
                    .map(|_| 0x7f3a_0000_0000 + next() % 0x4000_0000)
                    .collect()
            })
            .collect();
        let threads = (0..THREADS as i64)
            .map(|t| {
                rec.thread(Thread {
                    os_name: Some(format!("worker-{t}").into()),
                    os_thread_id: 1_000 + t,
                    java_name: Some(format!("worker-{t}").into()),
                    java_thread_id: 20 + t,
                    group: None,
                    is_virtual: false,
                })
            })
            .collect();
        Workload {
            rec,
            java,
            native,
            threads,
        }
    }

    /// Sample `i`, `age` into the recording: one every 500 µs (8 busy threads at 250 Hz), its
    /// CPU time near 4 ms but not a round number (a measured time).
    fn sample(&mut self, i: usize, age: i64) {
        let k = i % self.java.len();
        let stack_trace = self.rec.stack_trace(&self.java[k], false);
        let native = self.rec.native_stack_trace(&self.native[k], false);
        self.rec.write(&CpuTimeSample {
            start_ticks: age + i as i64 * 500,
            stack_trace: Some(stack_trace),
            thread: Some(self.threads[i % THREADS]),
            failed: false,
            sampling_period_ticks: 3_900 + (i as u64 * 37) % 200,
            biased: false,
            native_stack_trace: Some(native),
        });
    }
}

/// File bytes per sample once every stack has been seen, in one chunk: the size after 2N
/// samples less the size after N, over N.
fn steady_state_bytes_per_sample(distinct: usize, age: i64) -> f64 {
    let size = |n: usize| {
        let mut w = Workload::new(distinct);
        for i in 0..n {
            w.sample(i, age);
        }
        let end = age + n as i64 * 500;
        w.rec.finish(end).unwrap().len()
    };
    let n = 20_000.max(4 * distinct);
    (size(2 * n) - size(n)) as f64 / n as f64
}

#[test]
fn a_sample_costs_at_most_16_bytes_at_steady_state() {
    // size 1, type 1, startTime 4 (µs ticks below 2^28: the first 268 s of a recording),
    // stackTrace 1, eventThread 1, failed 1, samplingPeriod 2, biased 1, nativeStackTrace 1.
    assert_eq!(steady_state_bytes_per_sample(100, 10 * SECOND), 13.0);
    // 10,000 distinct stacks: keys of 2 bytes for all but the first 127 of each pool.
    let many = steady_state_bytes_per_sample(10_000, 10 * SECOND);
    assert!((14.9..=15.0).contains(&many), "{many}");
    // An hour into the recording, startTime takes 5 bytes (up to 9.5 hours).
    let late = steady_state_bytes_per_sample(10_000, 3_600 * SECOND);
    assert!(late <= 16.0, "{late} bytes per sample");
}

/// A chunk with what the recorder writes at every chunk start, and nothing else.
fn context_chunk() -> Vec<u8> {
    let mut rec = Recording::new(Vec::new(), options(), 0).unwrap();
    let sample_type = rec.event_type_id(EventType::CpuTimeSample) as i64;
    rec.write(&ActiveRecording {
        start_ticks: 0,
        id: 1,
        name: "jfr-native",
        destination: Some("/srv/app/profiles/app-1234.jfr"),
        disk: true,
        max_age_ms: 0,
        flush_interval_ms: 5_000,
        max_size_bytes: 0,
        recording_start_ms: 1_767_225_600_000,
        recording_duration_ms: 0,
    });
    for (name, value) in [
        ("interval", "1ms"),
        ("file", "/srv/app/profiles/app-%p.jfr"),
    ] {
        rec.write(&ActiveSetting {
            start_ticks: 0,
            event_type_id: sample_type,
            name,
            value,
        });
    }
    rec.write(&OsInformation {
        start_ticks: 0,
        os_version: "Linux version 6.12.48+deb13-amd64 (debian-kernel@lists.debian.org) \
                     (x86_64-linux-gnu-gcc-14 (Debian 14.2.0-19) 14.2.0) #1 SMP",
    });
    rec.write(&CpuInformation {
        start_ticks: 0,
        cpu: "x86_64",
        description: "AMD EPYC 7B13",
        sockets: 0,
        cores: 0,
        hw_threads: 2,
    });
    rec.write(&NativeLibrary {
        start_ticks: 0,
        name: "/usr/lib/x86_64-linux-gnu/libz.so.1.3.1",
        base_address: 0x7f3a_1234_0000,
        top_address: 0x7f3a_1235_8000,
        build_id: Some("0123456789abcdef0123456789abcdef01234567"),
        file_offset: 0x2000,
    });
    rec.finish(5 * SECOND).unwrap()
}

#[test]
fn a_chunk_costs_at_most_6_5_kb_before_its_samples() {
    // 6,157 bytes, of which metadata 5.6 KB; 7,400 bytes before the metadata declared only
    // the types a chunk uses (metadata 6.9 KB).
    let chunk = context_chunk();
    assert!(chunk.len() <= 6_500, "{} bytes", chunk.len());
    // A chunk of samples only declares the two CPU-time event types and what they reach.
    let empty = Recording::new(Vec::new(), options(), 0)
        .unwrap()
        .finish(0)
        .unwrap();
    assert!(empty.len() <= 4_000, "{} bytes", empty.len());
}
