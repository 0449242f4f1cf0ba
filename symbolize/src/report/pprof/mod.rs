//! The pprof view: a gzip-compressed `profile.proto` (`.pb.gz`) that `go tool pprof`,
//! Pyroscope, Parca and other pprof readers take.
//!
//! - **Values**: each sample has `samples`/`count` and `cpu`/`nanoseconds` (the sum of its
//!   events' `samplingPeriod`), `cpu` by default; a profile of the JDK's execution samples
//!   (no CPU time) has `samples`/`count` only. `period_type` is `cpu`/`nanoseconds` and
//!   `period` the sampling interval when the recording's settings state it (0 otherwise);
//!   `time_nanos` and `duration_nanos` span the recording's chunks (cut to `--from`/`--to`).
//! - **Samples**: one per distinct (thread, stack), with a `thread` label (absent for lost
//!   samples whose event names no thread). Every sample the other views count is here: lost
//!   samples and incomplete stacks keep their placeholder frames (`[no Java stack]`,
//!   `[lost samples: REASON]`, ...) as locations without an address, so the totals equal the
//!   JSON's.
//! - **Native locations**: one per recorded program counter (`address`: the interrupted
//!   instruction for the leaf, a return address below it, as recorded), in the mapping of
//!   the recorded library (`memory_start`/`memory_limit`/`file_offset` and `build_id` from
//!   `jdk.NativeLibrary`). Its lines are the inline chain, innermost function first, with
//!   DWARF's file and line (0 and no file when unknown). A mapping has `has_functions` when one
//!   of its locations got a function name: pprof then keeps ours instead of symbolizing it
//!   again; the other `has_*` flags say whether files and lines were found.
//! - **Java locations**: one per physical frame: a method and, before it, the methods the JIT
//!   inlined into it (frames of type "Inlined" join their caller's location, as pprof
//!   represents inlining). Function name `package.Class.method` (with its parameters when
//!   overloaded), system name with the descriptor, file name the class (JFR does not record
//!   source files), line as recorded (0 when unknown). Frame types (interpreted, compiled) have
//!   no place in pprof and are left out.
//! - Mappings are listed in the order samples use them: pprof's convention that the first is
//!   the main executable does not hold (the Java launcher is never in the native stacks).

pub mod proto;

use std::io::{self, Write};

use flate2::write::GzEncoder;
use flate2::Compression;
use indexmap::IndexSet;
use prost::Message;
use rustc_hash::{FxBuildHasher, FxHashMap};

use super::aggregate::{Aggregate, FrameKey, Names, Source};
use super::located::Located;

/// The string table: entry 0 is "".
struct Strings(IndexSet<String, FxBuildHasher>);

impl Strings {
    fn new() -> Strings {
        let mut set = IndexSet::default();
        set.insert(String::new());
        Strings(set)
    }

    fn index(&mut self, s: &str) -> i64 {
        match self.0.get_index_of(s) {
            Some(i) => i as i64,
            None => self.0.insert_full(s.to_string()).0 as i64,
        }
    }
}

fn signed(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

/// Builds functions and lines for the aggregate's frames, once each.
struct Functions<'a> {
    agg: &'a Aggregate,
    overloaded: Names,
    /// (name, system name, file) → function id.
    ids: FxHashMap<(i64, i64, i64), u64>,
    functions: Vec<proto::Function>,
    /// Frame index → its line, once built.
    lines: FxHashMap<u32, proto::Line>,
}

impl Functions<'_> {
    fn line(&mut self, strings: &mut Strings, frame_id: u32) -> Option<proto::Line> {
        if let Some(line) = self.lines.get(&frame_id) {
            return Some(*line);
        }
        let frame = self.agg.frames.get_index(frame_id as usize)?;
        let (name, system_name, file) = names(frame, &self.overloaded);
        let key = (
            strings.index(&name),
            strings.index(&system_name),
            strings.index(&file),
        );
        let next_id = self.functions.len() as u64 + 1;
        let function_id = *self.ids.entry(key).or_insert(next_id);
        if function_id == next_id {
            self.functions.push(proto::Function {
                id: function_id,
                name: key.0,
                system_name: key.1,
                filename: key.2,
                start_line: 0,
            });
        }
        let line = proto::Line {
            function_id,
            line: frame.line.map_or(0, i64::from),
        };
        self.lines.insert(frame_id, line);
        Some(line)
    }
}

/// A frame's (name, system name, file name). Java: `package.Class.method` (with parameters when
/// overloaded), the name with the descriptor, the class. Native: the function, itself, DWARF's
/// file. A placeholder: its text, itself, no file.
pub(crate) fn names(frame: &FrameKey, overloaded: &Names) -> (String, String, String) {
    let name = frame.shown_name(overloaded);
    if frame.kind.is_java() {
        let system = match &frame.descriptor {
            Some(d) => format!("{}{d}", frame.name),
            None => name.clone(),
        };
        let class = frame
            .name
            .rsplit_once('.')
            .map_or(String::new(), |(class, _)| class.to_string());
        return (name, system, class);
    }
    let file = frame.file.as_deref().unwrap_or("").to_string();
    (name.clone(), name, file)
}

/// The aggregate as a pprof profile. It needs the samples by location, which the aggregate
/// keeps only when [`Filter::locations`](super::Filter::locations) was set.
pub fn to_profile(agg: &Aggregate) -> io::Result<proto::Profile> {
    let located = agg.located.as_ref().ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            "pprof needs the samples by location: fold them with Filter::locations set",
        )
    })?;
    let mut strings = Strings::new();
    let mut functions = Functions {
        agg,
        overloaded: agg.overloaded(),
        ids: FxHashMap::default(),
        functions: Vec::new(),
        lines: FxHashMap::default(),
    };
    let locations: Vec<proto::Location> = located
        .locations
        .iter()
        .enumerate()
        .map(|(i, key)| proto::Location {
            id: i as u64 + 1,
            mapping_id: key.mapping.map_or(0, |m| u64::from(m) + 1),
            address: key.address.unwrap_or(0),
            line: key
                .frames
                .iter()
                .filter_map(|&f| functions.line(&mut strings, f))
                .collect(),
            is_folded: false,
        })
        .collect();
    let mappings = mappings(agg, located, &mut strings);
    let cpu = agg.source == Source::CpuTime;
    let thread_key = strings.index("thread");
    let mut keys: Vec<_> = located.samples.iter().collect();
    keys.sort_unstable_by(|a, b| a.0.cmp(b.0));
    let samples = keys
        .into_iter()
        .map(|(key, samples)| {
            let w = &samples.weight;
            let mut value = vec![signed(w.samples)];
            if cpu {
                value.push(signed(w.cpu_ns));
            }
            proto::Sample {
                location_id: key.locations.iter().map(|&l| u64::from(l) + 1).collect(),
                value,
                label: key
                    .thread
                    .iter()
                    .map(|t| proto::Label {
                        key: thread_key,
                        str: strings.index(t),
                        ..proto::Label::default()
                    })
                    .collect(),
            }
        })
        .collect();
    let mut value_type = |t: &str, unit: &str| proto::ValueType {
        r#type: strings.index(t),
        unit: strings.index(unit),
    };
    let counted = value_type("samples", "count");
    let cpu_ns = value_type("cpu", "nanoseconds");
    let (sample_type, default, period_type) = if cpu {
        (vec![counted, cpu_ns], cpu_ns.r#type, Some(cpu_ns))
    } else {
        (vec![counted], counted.r#type, None)
    };
    let period = match (cpu, agg.intervals_ns.len()) {
        (true, 1) => agg.intervals_ns.first().map_or(0, |&ns| signed(ns)),
        _ => 0,
    };
    let (time_nanos, duration_nanos) = agg
        .span_nanos
        .map_or((0, 0), |(start, end)| (start, end.saturating_sub(start)));
    Ok(proto::Profile {
        sample_type,
        sample: samples,
        mapping: mappings,
        location: locations,
        function: functions.functions,
        string_table: strings.0.into_iter().collect(),
        drop_frames: 0,
        keep_frames: 0,
        time_nanos,
        duration_nanos,
        period_type,
        period,
        comment: Vec::new(),
        default_sample_type: default,
    })
}

/// The mappings of `located`, with what their locations' frames say about their symbols.
fn mappings(agg: &Aggregate, located: &Located, strings: &mut Strings) -> Vec<proto::Mapping> {
    let mut files = vec![false; located.mappings.len()];
    let mut lines = vec![false; located.mappings.len()];
    for key in &located.locations {
        let Some(m) = key.mapping.map(|m| m as usize) else {
            continue;
        };
        for frame in key
            .frames
            .iter()
            .filter_map(|&f| agg.frames.get_index(f as usize))
        {
            if frame.file.is_some() {
                files[m] = true;
            }
            if frame.line.is_some() {
                lines[m] = true;
            }
        }
    }
    located
        .mappings
        .iter()
        .enumerate()
        .map(|(i, library)| proto::Mapping {
            id: i as u64 + 1,
            memory_start: library.base,
            memory_limit: library.top,
            file_offset: library.file_offset,
            filename: strings.index(&library.path),
            build_id: strings.index(library.build_id.as_deref().unwrap_or("")),
            has_functions: located.mapping_named.get(i).copied().unwrap_or(false),
            has_filenames: files[i],
            has_line_numbers: lines[i],
            // DWARF was read for it: it gives the inline chains with the lines.
            has_inline_frames: lines[i],
        })
        .collect()
}

/// Writes [`to_profile`], encoded and gzip-compressed, as pprof files are stored.
pub fn write(agg: &Aggregate, out: &mut dyn Write) -> io::Result<()> {
    let profile = to_profile(agg)?;
    let mut gz = GzEncoder::new(out, Compression::default());
    gz.write_all(&profile.encode_to_vec())?;
    gz.finish()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::io::Read;
    use std::sync::Arc;

    use super::*;
    use crate::profile::{ChunkProfile, JavaFrame, Lost, Sample, ThreadIds};
    use crate::report::Filter;
    use crate::{Options, Symbolizer};

    fn java(class: &str, method: &str, line: i64, frame_type: &str) -> JavaFrame {
        JavaFrame {
            class: Some(Arc::from(class)),
            method: Some(Arc::from(method)),
            descriptor: Some(Arc::from("()V")),
            line: Some(line),
            frame_type: Some(Arc::from(frame_type)),
        }
    }

    fn sample(thread: &str, java: &[JavaFrame], native: &[u64], weight_ns: u64) -> Sample {
        Sample {
            record_offset: 0,
            start_ticks: 0,
            thread: Some(Arc::from(thread)),
            thread_ids: ThreadIds::default(),
            weight_ns,
            failed: java.is_empty(),
            java: Arc::from(java),
            java_truncated: false,
            native: Arc::from(native),
            native_truncated: false,
            segments: Arc::from([]),
        }
    }

    /// Two threads; a compiled frame with a method inlined into it; a sample without a Java
    /// stack; PCs outside every library; lost samples without a thread.
    fn aggregate(locations: bool) -> Aggregate {
        let compiled = [
            java("demo.Inner", "work", 5, "Inlined"),
            java("demo.Outer", "loop", 9, "JIT compiled"),
            java("demo.Main", "main", 3, "Interpreted"),
        ];
        let profile = ChunkProfile {
            samples: vec![
                sample("main", &compiled, &[0x1000, 0x2000], 10_000_000),
                sample("main", &compiled, &[0x1000, 0x2000], 20_000_000),
                sample("worker", &[], &[0x3000], 10_000_000),
            ],
            lost: vec![Lost {
                start_ticks: 0,
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
        let filter = Filter {
            locations,
            ..Filter::default()
        };
        let mut symbolizer = Symbolizer::new(Options::default());
        agg.add_chunk(&profile, &mut symbolizer, &filter, 0, (0, 0, 1_000_000_000));
        agg
    }

    fn read_back(agg: &Aggregate) -> proto::Profile {
        let mut gz = Vec::new();
        write(agg, &mut gz).unwrap();
        let mut bytes = Vec::new();
        flate2::read::GzDecoder::new(gz.as_slice())
            .read_to_end(&mut bytes)
            .unwrap();
        proto::Profile::decode(bytes.as_slice()).unwrap()
    }

    #[test]
    fn samples_keep_their_totals_threads_and_inlined_java_frames() {
        let agg = aggregate(true);
        let p = read_back(&agg);
        let s = |i: i64| p.string_table[i as usize].as_str();
        assert_eq!(s(0), "");
        let types: Vec<(&str, &str)> = p
            .sample_type
            .iter()
            .map(|t| (s(t.r#type), s(t.unit)))
            .collect();
        assert_eq!(types, [("samples", "count"), ("cpu", "nanoseconds")]);
        assert_eq!(s(p.default_sample_type), "cpu");
        assert_eq!(p.period, 10_000_000);
        // Every sample, lost ones included: the aggregate's total.
        let sum = |i: usize| p.sample.iter().map(|x| x.value[i]).sum::<i64>();
        assert_eq!(sum(0), agg.total.samples as i64);
        assert_eq!(sum(1), agg.total.cpu_ns as i64);
        assert_eq!((sum(0), sum(1)), (5, 60_000_000));
        // The two identical samples of `main` are one, with both weights.
        assert_eq!(p.sample.len(), 3);
        let location = |id: u64| &p.location[id as usize - 1];
        let names = |id: u64| -> Vec<&str> {
            location(id)
                .line
                .iter()
                .map(|l| s(p.function[l.function_id as usize - 1].name))
                .collect()
        };
        let main = p
            .sample
            .iter()
            .find(|x| x.value == [2, 30_000_000])
            .expect("main's stack");
        assert_eq!(main.label.len(), 1);
        assert_eq!(
            (s(main.label[0].key), s(main.label[0].str)),
            ("thread", "main")
        );
        let stack: Vec<Vec<&str>> = main.location_id.iter().map(|&id| names(id)).collect();
        assert_eq!(
            stack,
            [
                vec!["[unknown]"],
                vec!["[unknown]"],
                vec!["demo.Inner.work", "demo.Outer.loop"],
                vec!["demo.Main.main"],
            ]
        );
        // Native PCs keep their address; Java frames have none, and their class as file name.
        assert_eq!(location(main.location_id[1]).address, 0x2000);
        let compiled = location(main.location_id[2]);
        assert_eq!((compiled.address, compiled.mapping_id), (0, 0));
        let lines: Vec<i64> = compiled.line.iter().map(|l| l.line).collect();
        assert_eq!(lines, [5, 9]);
        let work = &p.function[compiled.line[0].function_id as usize - 1];
        assert_eq!(
            (s(work.filename), s(work.system_name)),
            ("demo.Inner", "demo.Inner.work()V")
        );
        // The failed sample ends at its placeholder; the lost ones have no thread label.
        let worker = p
            .sample
            .iter()
            .find(|x| x.value == [1, 10_000_000])
            .unwrap();
        let worker_stack: Vec<Vec<&str>> = worker.location_id.iter().map(|&id| names(id)).collect();
        assert_eq!(worker_stack, [vec!["[unknown]"], vec!["[no Java stack]"]]);
        let lost = p
            .sample
            .iter()
            .find(|x| x.value == [2, 20_000_000])
            .unwrap();
        assert!(lost.label.is_empty());
        assert_eq!(
            names(lost.location_id[0]),
            ["[lost samples: sample buffer full]"]
        );
        // PCs outside every library: no mapping to point at.
        assert!(p.mapping.is_empty());
    }

    #[test]
    fn an_aggregate_without_locations_is_refused() {
        let agg = aggregate(false);
        assert!(agg.located.is_none());
        let e = write(&agg, &mut Vec::new()).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidInput);
    }
}
