use std::sync::Arc;

use opentelemetry_proto::tonic::common::v1::any_value;
use opentelemetry_proto::tonic::profiles::v1development::ProfilesDictionary;

use super::*;
use crate::profile::{ChunkProfile, JavaFrame, Lost, Sample as JfrSample, ThreadIds};
use crate::report::Filter;
use crate::{LibraryRef, Options, Symbolizer};

fn java(class: &str, method: &str, line: i64, frame_type: &str) -> JavaFrame {
    JavaFrame {
        class: Some(Arc::from(class)),
        method: Some(Arc::from(method)),
        descriptor: Some(Arc::from("()V")),
        line: Some(line),
        frame_type: Some(Arc::from(frame_type)),
    }
}

fn sample(
    thread: &str,
    ids: ThreadIds,
    at_ticks: i64,
    java: &[JavaFrame],
    native: &[u64],
    weight_ns: u64,
) -> JfrSample {
    JfrSample {
        record_offset: 0,
        start_ticks: at_ticks,
        thread: Some(Arc::from(thread)),
        thread_ids: ids,
        weight_ns,
        failed: java.is_empty(),
        java: Arc::from(java),
        java_truncated: false,
        native: Arc::from(native),
        native_truncated: false,
        segments: Arc::from([]),
    }
}

const LIB_BASE: u64 = 0x7f00_0000_0000;

/// A library that is not on disk (its PCs get no name), two threads (one virtual), a compiled
/// frame with a method inlined into it, a sample without a Java stack, a PC outside every
/// library, lost samples without a thread. The chunk starts at 1 s after the epoch, with
/// 1,000 ticks a second.
fn aggregate(filter: &Filter) -> Aggregate {
    let compiled = [
        java("demo.Inner", "work", 5, "Inlined"),
        java("demo.Outer", "loop", 9, "JIT compiled"),
        java("demo.Main", "main", 3, "Interpreted"),
    ];
    let main = ThreadIds {
        java: Some(1),
        os: Some(100),
        is_virtual: Some(false),
    };
    let worker = ThreadIds {
        java: Some(21),
        os: Some(101),
        is_virtual: Some(true),
    };
    let pcs = [LIB_BASE + 0x1130, LIB_BASE + 0x2200];
    let profile = ChunkProfile {
        libraries: vec![LibraryRef {
            path: "/nonexistent/libdemo.so".into(),
            base: LIB_BASE,
            top: LIB_BASE + 0x10_000,
            build_id: Some("0123456789abcdef".into()),
            file_offset: 0,
        }],
        samples: vec![
            sample("main", main, 10, &compiled, &pcs, 10_000_000),
            sample("main", main, 20, &compiled, &pcs, 20_000_000),
            sample("worker", worker, 30, &[], &[0x3000], 10_000_000),
        ],
        lost: vec![Lost {
            start_ticks: 40,
            thread: None,
            thread_ids: ThreadIds::default(),
            samples: 2,
            cpu_ns: Some(20_000_000),
            reason: Some(Arc::from("sample buffer full")),
        }],
        interval_ns: Some(10_000_000),
        ..ChunkProfile::default()
    };
    let mut agg = Aggregate::default();
    let mut symbolizer = Symbolizer::new(Options::default());
    agg.add_chunk(
        &profile,
        &mut symbolizer,
        filter,
        0,
        (1_000_000_000, 0, 1_000),
    );
    agg.span_nanos = Some((1_000_000_000, 1_100_000_000));
    agg
}

fn events() -> Filter {
    Filter {
        events: true,
        ..Filter::default()
    }
}

fn read_back(agg: &Aggregate, shape: Shape) -> ExportProfilesServiceRequest {
    let mut bytes = Vec::new();
    write(
        agg,
        &[("service.name".into(), "demo".into())],
        shape,
        &mut bytes,
    )
    .unwrap();
    ExportProfilesServiceRequest::decode(bytes.as_slice()).unwrap()
}

fn attributes(d: &ProfilesDictionary, indices: &[i32]) -> Vec<(String, String)> {
    indices
        .iter()
        .map(|&i| {
            let a = &d.attribute_table[i as usize];
            let value = match a.value.as_ref().and_then(|v| v.value.as_ref()) {
                Some(any_value::Value::StringValue(s)) => s.clone(),
                Some(any_value::Value::IntValue(i)) => i.to_string(),
                Some(any_value::Value::BoolValue(b)) => b.to_string(),
                other => format!("{other:?}"),
            };
            (d.string_table[a.key_strindex as usize].clone(), value)
        })
        .collect()
}

/// The attributes of `main`'s samples: its thread, then the resource's service.
fn main_attributes() -> Vec<(String, String)> {
    [
        ("thread.name", "main"),
        ("thread.id", "1"),
        ("jfrnative.thread.virtual", "false"),
        ("service.name", "demo"),
    ]
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .to_vec()
}

#[test]
fn each_sample_keeps_its_time_weight_thread_and_frames() {
    let agg = aggregate(&events());
    let request = read_back(&agg, Shape::Timed);
    let d = request.dictionary.as_ref().unwrap();
    let s = |i: i32| d.string_table[i as usize].as_str();
    let resource = request.resource_profiles[0].resource.as_ref().unwrap();
    assert_eq!(resource.attributes[0].key, "service.name");
    let scope = &request.resource_profiles[0].scope_profiles[0];
    assert_eq!(scope.scope.as_ref().unwrap().name, "jfr-native");
    let p = &scope.profiles[0];
    let t = p.sample_type.unwrap();
    assert_eq!(
        (s(t.type_strindex), s(t.unit_strindex)),
        ("cpu", "nanoseconds")
    );
    assert_eq!(p.period, 10_000_000);
    assert_eq!(
        (p.time_unix_nano, p.duration_nano),
        (1_000_000_000, 100_000_000)
    );
    // Every event, lost ones included: the aggregate's total.
    let values: Vec<i64> = p.samples.iter().flat_map(|x| x.values.clone()).collect();
    assert_eq!(values.iter().sum::<i64>(), agg.total.cpu_ns as i64);
    assert_eq!(values.iter().sum::<i64>(), 60_000_000);
    assert_eq!(values.len(), 4, "three samples and one loss");
    // The two samples of `main` are one sample with two values and their times.
    assert_eq!(p.samples.len(), 3);
    let main = p.samples.iter().find(|x| x.values.len() == 2).unwrap();
    assert_eq!(main.values, [10_000_000, 20_000_000]);
    assert_eq!(main.timestamps_unix_nano, [1_010_000_000, 1_020_000_000]);
    assert_eq!(attributes(d, &main.attribute_indices), main_attributes());
    let stack = &d.stack_table[main.stack_index as usize].location_indices;
    let location = |i: i32| &d.location_table[i as usize];
    let names = |i: i32| -> Vec<&str> {
        location(i)
            .lines
            .iter()
            .map(|l| s(d.function_table[l.function_index as usize].name_strindex))
            .collect()
    };
    // Leaf first: two native PCs (named by library and address: the library is not on disk,
    // and a location without lines would vanish from a backend's flame graph), then the
    // compiled frame with the method inlined into it, then the interpreted one.
    assert_eq!(stack.len(), 4);
    for (i, offset) in [(0, 0x1130), (1, 0x2200)] {
        let l = location(stack[i]);
        assert_eq!(l.address, LIB_BASE + offset);
        assert_eq!(
            names(stack[i]),
            [format!("libdemo.so+{offset:#x}")],
            "{l:?}"
        );
        let m = &d.mapping_table[l.mapping_index as usize];
        assert_eq!(s(m.filename_strindex), "/nonexistent/libdemo.so");
        assert_eq!(
            (m.memory_start, m.memory_limit, m.file_offset),
            (LIB_BASE, LIB_BASE + 0x10_000, 0)
        );
        assert_eq!(
            attributes(d, &m.attribute_indices),
            [(BUILD_ID_GNU.to_string(), "0123456789abcdef".to_string())]
        );
        assert_eq!(
            attributes(d, &l.attribute_indices),
            [(FRAME_TYPE.to_string(), "native".to_string())]
        );
    }
    assert_eq!(names(stack[2]), ["demo.Inner.work", "demo.Outer.loop"]);
    let lines: Vec<i64> = location(stack[2]).lines.iter().map(|l| l.line).collect();
    assert_eq!(lines, [5, 9]);
    assert_eq!(
        attributes(d, &location(stack[2]).attribute_indices),
        [(FRAME_TYPE.to_string(), "jvm".to_string())]
    );
    let work = &d.function_table[location(stack[2]).lines[0].function_index as usize];
    assert_eq!(
        (s(work.filename_strindex), s(work.system_name_strindex)),
        ("demo.Inner", "demo.Inner.work()V")
    );
    assert_eq!(names(stack[3]), ["demo.Main.main"]);
    assert_eq!(
        (location(stack[2]).address, location(stack[2]).mapping_index),
        (0, 0)
    );
    // The virtual worker: no Java stack, a PC outside every library (no mapping).
    let worker = p
        .samples
        .iter()
        .find(|x| {
            attributes(d, &x.attribute_indices)
                .iter()
                .any(|a| a.1 == "worker")
        })
        .unwrap();
    assert!(attributes(d, &worker.attribute_indices)
        .contains(&("jfrnative.thread.virtual".to_string(), "true".to_string())));
    let worker_stack = &d.stack_table[worker.stack_index as usize].location_indices;
    assert_eq!(location(worker_stack[0]).address, 0x3000);
    assert_eq!(location(worker_stack[0]).mapping_index, 0);
    assert_eq!(names(worker_stack[1]), ["[no Java stack]"]);
    assert!(location(worker_stack[1]).attribute_indices.is_empty());
    // The loss: its CPU time at its time, no thread attribute (the service's only), its
    // placeholder frame.
    let lost = p.samples.iter().find(|x| x.values == [20_000_000]).unwrap();
    assert_eq!(
        attributes(d, &lost.attribute_indices),
        [("service.name".to_string(), "demo".to_string())]
    );
    assert_eq!(lost.timestamps_unix_nano, [1_040_000_000]);
    let lost_stack = &d.stack_table[lost.stack_index as usize].location_indices;
    assert_eq!(names(lost_stack[0]), ["[lost samples: sample buffer full]"]);
}

#[test]
fn without_events_each_sample_has_its_sum_and_no_thread_ids() {
    let filter = Filter {
        locations: true,
        ..Filter::default()
    };
    let request = read_back(&aggregate(&filter), Shape::Aggregated);
    let d = request.dictionary.as_ref().unwrap();
    let p = &request.resource_profiles[0].scope_profiles[0].profiles[0];
    assert_eq!(p.samples.len(), 3);
    assert!(p.samples.iter().all(|x| x.values.len() == 1));
    assert!(p.samples.iter().all(|x| x.timestamps_unix_nano.is_empty()));
    let total: i64 = p.samples.iter().map(|x| x.values[0]).sum();
    assert_eq!(total, 60_000_000);
    for x in &p.samples {
        assert!(attributes(d, &x.attribute_indices)
            .iter()
            .all(|(k, _)| k == THREAD_NAME || k == SERVICE_NAME));
    }
}

#[test]
fn without_a_service_name_in_the_resource_samples_carry_none() {
    let request = to_request(&aggregate(&events()), &[], Shape::Aggregated).unwrap();
    let d = request.dictionary.as_ref().unwrap();
    let p = &request.resource_profiles[0].scope_profiles[0].profiles[0];
    assert!(p.samples.iter().all(|x| attributes(d, &x.attribute_indices)
        .iter()
        .all(|(k, _)| k != SERVICE_NAME)));
}

/// The default shape, the one Grafana Pyroscope 2.2.1 takes: with `period` set it refuses a
/// sample whose number of values is not the number of sample types (one).
#[test]
fn aggregated_samples_have_one_value_their_sum_and_keep_thread_ids() {
    let agg = aggregate(&events());
    let request = read_back(&agg, Shape::Aggregated);
    let d = request.dictionary.as_ref().unwrap();
    let p = &request.resource_profiles[0].scope_profiles[0].profiles[0];
    assert_eq!(p.period, 10_000_000);
    let period_type = p.period_type.unwrap();
    assert_eq!(
        (
            d.string_table[period_type.type_strindex as usize].as_str(),
            d.string_table[period_type.unit_strindex as usize].as_str()
        ),
        ("cpu", "nanoseconds")
    );
    assert_eq!(p.samples.len(), 3);
    assert!(p.samples.iter().all(|x| x.values.len() == 1));
    assert!(p.samples.iter().all(|x| x.timestamps_unix_nano.is_empty()));
    let total: i64 = p.samples.iter().map(|x| x.values[0]).sum();
    assert_eq!(total, agg.total.cpu_ns as i64);
    assert_eq!(total, 60_000_000);
    let main = p
        .samples
        .iter()
        .find(|x| x.values == [30_000_000])
        .expect("main's two events summed");
    assert_eq!(attributes(d, &main.attribute_indices), main_attributes());
}

#[test]
fn period_is_the_shortest_interval_stated_and_zero_only_when_none_is() {
    let mut agg = aggregate(&events());
    agg.intervals_ns = [20_000_000, 1_000_000, 10_000_000].into();
    let p = |agg: &Aggregate| {
        read_back(agg, Shape::Aggregated).resource_profiles[0].scope_profiles[0].profiles[0].period
    };
    assert_eq!(p(&agg), 1_000_000);
    agg.intervals_ns.clear();
    assert_eq!(p(&agg), 0);
}

#[test]
fn timed_samples_without_event_times_are_refused() {
    let filter = Filter {
        locations: true,
        ..Filter::default()
    };
    let e = encode(&aggregate(&filter), &[], Shape::Timed).unwrap_err();
    assert_eq!(e.kind(), io::ErrorKind::InvalidInput);
    assert!(e.to_string().contains("Filter::events"), "{e}");
}

#[test]
fn an_aggregate_without_locations_is_refused() {
    let agg = aggregate(&Filter::default());
    let e = encode(&agg, &[], Shape::Aggregated).unwrap_err();
    assert_eq!(e.kind(), io::ErrorKind::InvalidInput);
}
