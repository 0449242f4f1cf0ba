//! The writer never panics, whatever it is handed, and its sizes meet the format goals.

use jfr_writer::*;

fn options(native: NativeStackEncoding) -> RecordingOptions {
    RecordingOptions {
        clock: Clock {
            ticks_per_second: 1_000_000,
            origin_ticks: 0,
            origin_epoch_nanos: 0,
        },
        native_stack_encoding: native,
    }
}

#[test]
fn handles_from_another_recording_do_not_panic() {
    for native in [NativeStackEncoding::Pooled, NativeStackEncoding::Inline] {
        // Handles minted by a recording with many constants, used in one with none.
        let mut big = Recording::new(Vec::new(), options(native), 0).unwrap();
        let mut foreign_stack = None;
        let mut foreign_native = None;
        let mut foreign_thread = None;
        for i in 0..50u64 {
            let name = big.symbol(&format!("c{i}"));
            let class = big.class(Class {
                class_loader: None,
                name,
                package: None,
                modifiers: 0,
                hidden: false,
            });
            let method = big.method(Method {
                class,
                name,
                descriptor: name,
                modifiers: 0,
                hidden: false,
            });
            let frame = Frame {
                method,
                line: 1,
                bytecode_index: 1,
                frame_type: FrameType::Unknown,
            };
            foreign_stack = Some(big.stack_trace(&[frame], false));
            foreign_native = Some(big.native_stack_trace(&[i], false));
            foreign_thread = Some(big.thread(Thread {
                os_name: None,
                os_thread_id: i as i64,
                java_name: None,
                java_thread_id: 0,
                group: None,
                is_virtual: false,
            }));
        }
        let mut small = Recording::new(Vec::new(), options(native), 0).unwrap();
        small.write(&CpuTimeSample {
            start_ticks: i64::MIN,
            stack_trace: foreign_stack,
            thread: foreign_thread,
            failed: true,
            sampling_period_ticks: u64::MAX,
            biased: true,
            native_stack_trace: foreign_native,
        });
        small.write(&ThreadStart {
            start_ticks: i64::MAX,
            event_thread: foreign_thread,
            stack_trace: foreign_stack,
            thread: None,
            parent_thread: foreign_thread,
        });
        small.rotate(5).unwrap();
        let bytes = small.finish(-5).unwrap();
        assert_eq!(&bytes[..4], b"FLR\0");
    }
}

#[test]
fn odd_strings_and_values_are_written() {
    let mut rec = Recording::new(Vec::new(), options(NativeStackEncoding::Pooled), 0).unwrap();
    let long = "x".repeat(100_000);
    for name in ["", "\0", "ünïcödé 🚀", long.as_str()] {
        rec.write(&NativeLibrary {
            start_ticks: 1,
            name,
            base_address: u64::MAX,
            top_address: 0,
            build_id: Some(name),
            file_offset: u64::MAX,
        });
        rec.write(&CpuTimeSamplesLost {
            start_ticks: 1,
            lost_samples: i32::MIN,
            thread: None,
            reason: name,
            lost_cpu_ns: u64::MAX,
        });
    }
    let pcs: Vec<u64> = (0..10_000).map(|i| u64::MAX - i).collect();
    let nst = rec.native_stack_trace(&pcs, true);
    let empty = rec.native_stack_trace(&[], false);
    assert_ne!(nst, empty);
    assert_eq!(
        rec.native_stack_trace(&pcs, true),
        nst,
        "interning is by value"
    );
    assert_ne!(
        rec.native_stack_trace(&pcs, false),
        nst,
        "truncation is part of the value"
    );
    let bytes = rec.finish(2).unwrap();
    assert!(bytes.len() > 100_000);
}

#[test]
fn many_rotations_give_one_complete_chunk_each() {
    let mut rec = Recording::new(Vec::new(), options(NativeStackEncoding::Pooled), 0).unwrap();
    for chunk in 0..20i64 {
        rec.write(&OsInformation {
            start_ticks: chunk * 10,
            os_version: "Linux",
        });
        rec.rotate(chunk * 10 + 5).unwrap();
    }
    assert_eq!(rec.totals().chunks, 20);
    let bytes = rec.finish(1_000).unwrap();
    // The empty last chunk is not written; the chunks tile the output exactly.
    let mut at = 0;
    let mut chunks = 0;
    while at < bytes.len() {
        let size = u64::from_be_bytes(bytes[at + 8..at + 16].try_into().unwrap()) as usize;
        assert_eq!(bytes[at + 64], 0, "finished chunk");
        at += size;
        chunks += 1;
    }
    assert_eq!((at, chunks), (bytes.len(), 20));
}

/// Deterministic sizes (not timings): the fixed overhead of a file and the cost of a repeated
/// sample in both native-stack encodings.
#[test]
fn pooled_native_stacks_are_compact() {
    let empty = Recording::new(Vec::new(), options(NativeStackEncoding::Pooled), 0)
        .unwrap()
        .finish(0)
        .unwrap();
    assert!(
        empty.len() < 8 * 1024,
        "fixed overhead {} bytes",
        empty.len()
    );

    let size = |native, samples: i64| {
        let mut rec = Recording::new(Vec::new(), options(native), 0).unwrap();
        let pcs: Vec<u64> = (0..8).map(|i| 0x7f00_0000_0000 + i * 0x111).collect();
        for i in 0..samples {
            let n = rec.native_stack_trace(&pcs, false);
            rec.write(&CpuTimeSample {
                start_ticks: i * 4_000,
                stack_trace: None,
                thread: None,
                failed: false,
                sampling_period_ticks: 10_000,
                biased: false,
                native_stack_trace: Some(n),
            });
        }
        rec.finish(samples * 4_000).unwrap().len() as i64
    };
    let per_sample = |native| (size(native, 20_000) - size(native, 10_000)) / 10_000;
    let (pooled, inline) = (
        per_sample(NativeStackEncoding::Pooled),
        per_sample(NativeStackEncoding::Inline),
    );
    eprintln!("bytes per repeated sample: pooled {pooled}, inline {inline}");
    // size 1 + type 1 + startTime 4 (µs ticks below 2^28) + stack 1 + thread 1 + failed 1
    // + period 2 + biased 1 + native key 1.
    assert_eq!(pooled, 13);
    assert!(inline > 4 * pooled);
}
