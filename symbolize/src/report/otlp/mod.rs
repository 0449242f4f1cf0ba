//! The OpenTelemetry profiles view (OTLP, package `opentelemetry.proto.profiles.v1development`,
//! proto v1.10.0): one `ExportProfilesServiceRequest`, the body that OTLP/HTTP posts to
//! `/v1development/profiles` (its fields are numbered as `ProfilesData`'s, so a file of it reads
//! as either).
//!
//! The messages are the generated code of OpenTelemetry's own crate (`opentelemetry-proto` with
//! its `profiles` feature, generated from proto v1.10.0, prost only): the format is still in
//! development and its field numbers have changed between releases, so the code that the
//! format's owners generate and publish is used rather than messages derived here by hand (as
//! pprof's stable `profile.proto` is in [`super::pprof`]).
//!
//! It is built from the same samples by location as pprof ([`Located`]), so every frame the
//! symbolized profile holds reaches both alike:
//!
//! - **One profile** per aggregate (all the chunks read; `jfrnative --upload` sends one request
//!   per chunk file). Sample type `cpu`/`nanoseconds` (`samples`/`count` for a profile of the
//!   JDK's execution samples, which carry no CPU time); `period_type` `cpu`/`nanoseconds` and
//!   `period` the sampling interval the recording's settings state: when chunks state several
//!   (files recorded at different intervals), the shortest; 0 only when no chunk states one.
//!   The values are CPU ns whatever the period, so no value depends on it; backends name the
//!   profile from it (Grafana Pyroscope refuses a profile whose `period` is 0).
//!   `time_unix_nano` and `duration_nano` span the chunks read (cut to `--from`/`--to`).
//! - **Samples**: one per distinct (thread, stack), in the [`Shape`] asked for:
//!   [`Shape::Aggregated`] (the default) one value, the CPU ns of its events summed, and no
//!   timestamps, the shape every backend tried takes; [`Shape::Timed`] one value per event (its
//!   `samplingPeriod` in ns) and that event's time in `timestamps_unix_nano` (needs
//!   [`Filter::events`](super::Filter::events); Pyroscope 2.2.1 refuses it: "sample values
//!   length mismatch"). Lost samples (one value per `jdk.CPUTimeSamplesLost`: the CPU time it
//!   says was lost, 0 when it does not say) and incomplete stacks keep the placeholder frames
//!   of the other views (`[no Java stack]`, `[lost samples: REASON]`, ...), so in either shape
//!   the values sum to the other views' total, Σ `samplingPeriod`.
//! - **Sample attributes**: `thread.name` and `thread.id` (`Thread.threadId()`, the JVM's
//!   `javaThreadId`) of the semantic conventions, and [`THREAD_VIRTUAL`] when the file says
//!   whether the thread is virtual (no convention names that). Each is left out when the event
//!   does not say. Then the resource's `service.name`, on every sample: Grafana Pyroscope
//!   (2.2.1) names a sample's service from its own `service.name` first, and cannot read the
//!   resource's once an OpenTelemetry Collector (v0.165.0) has forwarded it (the Collector
//!   writes resource attributes as string-table references, which Pyroscope does not read: the
//!   profile lands as `unknown_service`).
//! - **Native locations**: the recorded program counter in the mapping of the recorded library
//!   (`memory_start`/`memory_limit`/`file_offset`, the file name as recorded), whose GNU build-id
//!   is the attribute `process.executable.build_id.gnu` (the key OpenTelemetry's profiles
//!   specification requires on a mapping, and the one Pyroscope's OTLP ingest reads to
//!   symbolize). Its lines are the inline chain (innermost first, DWARF's file and line, 0 when
//!   unknown). A PC no symbol holds is named as every other view names it: its nearest symbol
//!   below with the offset (`deflateEnd+0x3f0`), else the library and the ELF address
//!   (`libz.so.1+0x1234`), else `[unknown]`. Address-only locations are not shown at all by a
//!   backend that does not symbolize them itself (Pyroscope without a symbolizer leaves the
//!   frame out and gives its time to its caller), so a name is worth more than leaving the
//!   address to a backend; the address, mapping and build-id stay for one that re-symbolizes.
//! - **Java locations**: one per physical frame, the methods the JIT inlined into it as lines
//!   before it; function name `package.Class.method` (with parameters when overloaded), system
//!   name with the descriptor, file name the class (JFR records no source file), line as
//!   recorded (0 when unknown), as in pprof.
//! - Every location but a placeholder has `profile.frame.type`: `jvm` for Java frames, `native`
//!   for native ones.

pub mod dictionary;

use std::io::{self, Write};

use opentelemetry_proto::tonic::common::v1::{any_value, AnyValue, InstrumentationScope, KeyValue};
use opentelemetry_proto::tonic::profiles::v1development::{
    Mapping, Profile, ResourceProfiles, Sample, ScopeProfiles, ValueType,
};
use opentelemetry_proto::tonic::resource::v1::Resource;
use prost::Message;
use rustc_hash::FxHashMap;

pub use opentelemetry_proto::tonic::collector::profiles::v1development::ExportProfilesServiceRequest;

use self::dictionary::{Dictionary, Value};
use super::aggregate::{Aggregate, FrameKey, Kind, Source};
use super::located::{Located, LocationKey};
use super::pprof::names;

/// The mapping attribute holding a GNU build-id (hex), from OpenTelemetry's semantic
/// conventions.
pub const BUILD_ID_GNU: &str = "process.executable.build_id.gnu";
/// The sample attribute holding the thread's name (semantic conventions).
pub const THREAD_NAME: &str = "thread.name";
/// The sample attribute holding the thread's managed id, `Thread.threadId()` on the JVM
/// (semantic conventions).
pub const THREAD_ID: &str = "thread.id";
/// The sample attribute saying whether the thread is virtual (jfr-native's own: the semantic
/// conventions have none).
pub const THREAD_VIRTUAL: &str = "jfrnative.thread.virtual";
/// The location attribute naming the kind of code (semantic conventions: `jvm`, `native`,
/// `kernel`, ...).
pub const FRAME_TYPE: &str = "profile.frame.type";
/// The resource attribute naming the service (semantic conventions), also put on every sample.
pub const SERVICE_NAME: &str = "service.name";
/// The instrumentation scope's name.
pub const SCOPE_NAME: &str = "jfr-native";

/// How a profile's samples carry their values: two of the shapes `profiles.proto` documents.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// One value per (thread, stack), the CPU ns of its events summed; no timestamps.
    #[default]
    Aggregated,
    /// One value per event, its CPU ns, with the event's time in `timestamps_unix_nano`.
    Timed,
}

/// The aggregate as an OTLP export request whose resource has `resource` (key, value) as its
/// string attributes (`service.name`, ...), its samples in `shape`. It needs the samples by
/// location, which the aggregate keeps only when [`Filter::locations`](super::Filter::locations)
/// or [`Filter::events`](super::Filter::events) was set; [`Shape::Timed`] needs the events.
pub fn to_request(
    agg: &Aggregate,
    resource: &[(String, String)],
    shape: Shape,
) -> io::Result<ExportProfilesServiceRequest> {
    let located = agg.located.as_ref().ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            "OTLP needs the samples by location: fold them with Filter::events set",
        )
    })?;
    if shape == Shape::Timed && located.samples.values().any(|s| s.events.is_empty()) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "timed OTLP samples need each event's time: fold them with Filter::events set",
        ));
    }
    let mut dict = Dictionary::new();
    let locations = locations(agg, located, &mut dict);
    // The service's name on every sample too: backends read it there when the resource's is
    // out of their reach (see the module's documentation).
    let service = resource
        .iter()
        .find(|(k, _)| k == SERVICE_NAME)
        .map(|(_, name)| dict.attribute(SERVICE_NAME, Value::Str(name.clone())));
    let mut keys: Vec<_> = located.samples.iter().collect();
    keys.sort_unstable_by(|a, b| a.0.cmp(b.0));
    let samples = keys
        .into_iter()
        .map(|(key, samples)| {
            let stack = key
                .locations
                .iter()
                .filter_map(|&l| locations.get(l as usize).copied())
                .collect();
            let mut attribute_indices = Vec::new();
            if let Some(name) = &key.thread {
                attribute_indices.push(dict.attribute(THREAD_NAME, Value::Str(name.to_string())));
            }
            if let Some(id) = key.thread_ids.java {
                attribute_indices.push(dict.attribute(THREAD_ID, Value::Int(id)));
            }
            if let Some(is_virtual) = key.thread_ids.is_virtual {
                attribute_indices.push(dict.attribute(THREAD_VIRTUAL, Value::Bool(is_virtual)));
            }
            attribute_indices.extend(service);
            let (values, timestamps_unix_nano) = if shape == Shape::Aggregated {
                (vec![signed(agg.measure(&samples.weight))], Vec::new())
            } else {
                samples
                    .events
                    .iter()
                    .map(|e| {
                        (
                            signed(agg.measure(&e.weight)),
                            u64::try_from(e.time_nanos).unwrap_or(0),
                        )
                    })
                    .unzip()
            };
            Sample {
                stack_index: dict.stack(stack),
                attribute_indices,
                link_index: 0,
                values,
                timestamps_unix_nano,
            }
        })
        .collect();
    let mut value_type = |t: &str, unit: &str| ValueType {
        type_strindex: dict.string(t),
        unit_strindex: dict.string(unit),
    };
    let (sample_type, period_type, period) = match agg.source {
        Source::CpuTime => {
            let cpu = value_type("cpu", "nanoseconds");
            // The shortest interval stated (the set is ordered); 0 when none is.
            let period = agg.intervals_ns.first().map_or(0, |&ns| signed(ns));
            (cpu, Some(cpu), period)
        }
        Source::Execution => (value_type("samples", "count"), None, 0),
    };
    let (start, end) = agg.span_nanos.unwrap_or((0, 0));
    let profile = Profile {
        sample_type: Some(sample_type),
        samples,
        time_unix_nano: u64::try_from(start).unwrap_or(0),
        duration_nano: u64::try_from(end.saturating_sub(start)).unwrap_or(0),
        period_type,
        period,
        ..Profile::default()
    };
    let string_attribute = |(key, value): &(String, String)| KeyValue {
        key: key.clone(),
        value: Some(AnyValue {
            value: Some(any_value::Value::StringValue(value.clone())),
        }),
        ..KeyValue::default()
    };
    Ok(ExportProfilesServiceRequest {
        resource_profiles: vec![ResourceProfiles {
            resource: Some(Resource {
                attributes: resource.iter().map(string_attribute).collect(),
                ..Resource::default()
            }),
            scope_profiles: vec![ScopeProfiles {
                scope: Some(InstrumentationScope {
                    name: SCOPE_NAME.to_string(),
                    version: env!("CARGO_PKG_VERSION").to_string(),
                    ..InstrumentationScope::default()
                }),
                profiles: vec![profile],
                schema_url: String::new(),
            }],
            schema_url: String::new(),
        }],
        dictionary: Some(dict.finish()),
    })
}

fn signed(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

/// The dictionary index of each of `located`'s locations, in its order (with their mappings,
/// functions and attributes added to `dict`).
fn locations(agg: &Aggregate, located: &Located, dict: &mut Dictionary) -> Vec<i32> {
    let mappings: Vec<i32> = located
        .mappings
        .iter()
        .map(|library| {
            let attribute_indices = library
                .build_id
                .iter()
                .map(|id| dict.attribute(BUILD_ID_GNU, Value::Str(id.clone())))
                .collect();
            let mapping = Mapping {
                memory_start: library.base,
                memory_limit: library.top,
                file_offset: library.file_offset,
                filename_strindex: dict.string(&library.path),
                attribute_indices,
            };
            dict.mapping(mapping)
        })
        .collect();
    let overloaded = agg.overloaded();
    // Frame index → function index.
    let mut functions: FxHashMap<u32, i32> = FxHashMap::default();
    let mut function = |dict: &mut Dictionary, id: u32, frame: &FrameKey| {
        *functions.entry(id).or_insert_with(|| {
            let (name, system_name, file) = names(frame, &overloaded);
            dict.function(&name, &system_name, &file)
        })
    };
    located
        .locations
        .iter()
        .map(|key| {
            let frames: Vec<(u32, &FrameKey)> = key
                .frames
                .iter()
                .filter_map(|&id| Some((id, agg.frames.get_index(id as usize)?)))
                .collect();
            let lines = frames
                .iter()
                .map(|&(id, frame)| (function(dict, id, frame), frame.line.map_or(0, i64::from)))
                .collect();
            let attribute_indices = frame_type(key, &frames)
                .map(|t| dict.attribute(FRAME_TYPE, Value::Str(t.to_string())))
                .into_iter()
                .collect();
            let mapping = key
                .mapping
                .and_then(|m| mappings.get(m as usize).copied())
                .unwrap_or(0);
            dict.location(mapping, key.address.unwrap_or(0), lines, attribute_indices)
        })
        .collect()
}

/// The location's `profile.frame.type`, from its outermost frame; none for a placeholder.
fn frame_type(key: &LocationKey, frames: &[(u32, &FrameKey)]) -> Option<&'static str> {
    let (_, outer) = frames.last()?;
    match outer.kind {
        k if k.is_java() => Some("jvm"),
        Kind::Kernel if key.mapping.is_none() && key.address.is_none() => Some("kernel"),
        _ if key.address.is_some() || outer.kind.is_native() => Some("native"),
        _ => None,
    }
}

/// [`to_request`], encoded: the bytes of an `.otlp.pb` file and of an OTLP/HTTP request body.
pub fn encode(agg: &Aggregate, resource: &[(String, String)], shape: Shape) -> io::Result<Vec<u8>> {
    Ok(to_request(agg, resource, shape)?.encode_to_vec())
}

/// Writes [`encode`] to `out`.
pub fn write(
    agg: &Aggregate,
    resource: &[(String, String)],
    shape: Shape,
    out: &mut dyn Write,
) -> io::Result<()> {
    out.write_all(&encode(agg, resource, shape)?)
}

#[cfg(test)]
mod tests;
