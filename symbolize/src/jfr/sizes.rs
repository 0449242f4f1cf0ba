//! Where the bytes of a JFR file go: chunk headers, metadata, each constant pool, each event
//! type, and each field of an event, read by the file's own metadata. What
//! `jfr-symbolize --format sizes` prints.

use std::collections::BTreeMap;
use std::io::{self, Write};

use super::chunk::{Chunk, Record, HEADER_SIZE};
use super::value::{decode_field, decode_instance};
use super::{chunks, ReadError};

/// The event type whose fields are the per-sample cost.
const SAMPLE: &str = "jdk.CPUTimeSample";
/// Event types that stand for samples (the rest of the events are a per-chunk cost).
const SAMPLE_EVENTS: [&str; 2] = [SAMPLE, "jdk.CPUTimeSamplesLost"];
/// Constant pools written whatever the chunk's events reach (a per-chunk cost).
const FIXED_POOLS: [&str; 1] = ["jdk.types.FrameType"];

/// A count of things and the bytes they take.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Part {
    /// Records, constants or events.
    pub count: u64,
    /// Bytes, record sizes and keys included.
    pub bytes: u64,
}

impl Part {
    fn add(&mut self, bytes: usize) {
        self.count += 1;
        self.bytes += bytes as u64;
    }
}

/// The bytes of one file by what they hold.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Sizes {
    /// The file's size.
    pub file_bytes: u64,
    /// Chunks read.
    pub chunks: u64,
    /// Chunk headers.
    pub headers: Part,
    /// Metadata records.
    pub metadata: Part,
    /// Checkpoint records, without their pools' entries: record size, type, times, delta,
    /// mask, and each pool's class id and count.
    pub checkpoint_framing: Part,
    /// Constant pools by class name: entries and their bytes (key and value).
    pub pools: BTreeMap<String, Part>,
    /// Events by type name.
    pub events: BTreeMap<String, Part>,
    /// Per event type, the bytes of each part of its records in order: `size` (the record's
    /// size varint), `type id`, then every field by name.
    pub fields: BTreeMap<String, Vec<(String, u64)>>,
}

impl Sizes {
    /// `jdk.CPUTimeSample` events.
    pub fn samples(&self) -> u64 {
        self.events.get(SAMPLE).map_or(0, |p| p.count)
    }

    /// The bytes a chunk costs whatever its samples: header, metadata, checkpoint framing, the
    /// fixed pools and every event other than samples and lost samples (all chunks together).
    pub fn floor_bytes(&self) -> u64 {
        let events: u64 = self
            .events
            .iter()
            .filter(|(name, _)| !SAMPLE_EVENTS.contains(&name.as_str()))
            .map(|(_, p)| p.bytes)
            .sum();
        let pools: u64 = self
            .pools
            .iter()
            .filter(|(name, _)| FIXED_POOLS.contains(&name.as_str()))
            .map(|(_, p)| p.bytes)
            .sum();
        self.headers.bytes + self.metadata.bytes + self.checkpoint_framing.bytes + pools + events
    }
}

/// Measures every chunk of `bytes`; stops with an error at the first damaged chunk.
pub fn measure(bytes: &[u8]) -> Result<Sizes, ReadError> {
    let mut sizes = Sizes {
        file_bytes: bytes.len() as u64,
        ..Sizes::default()
    };
    for chunk in chunks(bytes) {
        let chunk = chunk?;
        sizes.chunks += 1;
        sizes.headers.add(HEADER_SIZE);
        for record in chunk.records() {
            let record = record?;
            match record.type_id {
                0 => sizes.metadata.add(record.bytes.len()),
                1 => measure_checkpoint(&chunk, &record, &mut sizes)?,
                _ => measure_event(&chunk, &record, &mut sizes)?,
            }
        }
    }
    Ok(sizes)
}

fn measure_checkpoint(chunk: &Chunk, record: &Record, sizes: &mut Sizes) -> Result<(), ReadError> {
    let md = &chunk.metadata;
    let mut c = record.payload(chunk.offset);
    let _start = c.varint()?;
    let _duration = c.varint()?;
    let _delta = c.varint()?;
    let _mask = c.u8()?;
    let pools = c.count()?;
    let mut entries_bytes = 0;
    for _ in 0..pools {
        let class_id = c.varint()?;
        let count = c.count()?;
        let name = md
            .class(class_id)
            .map_or_else(|| format!("class {class_id}"), |class| class.name.clone());
        let part = sizes.pools.entry(name).or_default();
        for _ in 0..count {
            let at = c.pos();
            let _key = c.varint()?;
            decode_instance(&mut c, md, class_id, 0)?;
            part.add(c.pos() - at);
            entries_bytes += c.pos() - at;
        }
    }
    sizes.checkpoint_framing.count += 1;
    sizes.checkpoint_framing.bytes += (record.bytes.len() - entries_bytes) as u64;
    Ok(())
}

fn measure_event(chunk: &Chunk, record: &Record, sizes: &mut Sizes) -> Result<(), ReadError> {
    let md = &chunk.metadata;
    let Some(class) = md.class(record.type_id) else {
        let name = format!("undeclared type {}", record.type_id);
        sizes
            .events
            .entry(name)
            .or_default()
            .add(record.bytes.len());
        return Ok(());
    };
    sizes
        .events
        .entry(class.name.clone())
        .or_default()
        .add(record.bytes.len());
    let fields = sizes.fields.entry(class.name.clone()).or_default();
    // As written (a writer may pad these varints).
    let size_bytes = jfr_writer::leb128::read_u64(record.bytes).map_or(0, |(_, n)| n);
    add_field(fields, "size", size_bytes);
    add_field(fields, "type id", record.payload_start - size_bytes);
    let mut c = record.payload(chunk.offset);
    for f in &class.fields {
        let at = c.pos();
        decode_field(&mut c, md, f, 0)?;
        add_field(fields, &f.name, c.pos() - at);
    }
    if c.remaining() > 0 {
        add_field(fields, "(trailing bytes)", c.remaining());
    }
    Ok(())
}

fn add_field(fields: &mut Vec<(String, u64)>, name: &str, bytes: usize) {
    match fields.iter_mut().find(|(n, _)| n == name) {
        Some((_, total)) => *total += bytes as u64,
        None => fields.push((name.to_string(), bytes as u64)),
    }
}

/// Writes `sizes` as a text table: totals, per chunk and per sample, then the fields of each
/// event type.
pub fn write_text(sizes: &Sizes, out: &mut dyn Write) -> io::Result<()> {
    let samples = sizes.samples();
    let chunks = sizes.chunks.max(1) as f64;
    let per = |bytes: u64, n: u64| {
        if n == 0 {
            "-".to_string()
        } else {
            format!("{:.2}", bytes as f64 / n as f64)
        }
    };
    writeln!(
        out,
        "{} bytes in {} chunks; {samples} {SAMPLE} events: {} bytes per sample; per-chunk \
         floor (header, metadata, checkpoint framing, fixed pools, events other than samples) \
         {:.0} bytes",
        sizes.file_bytes,
        sizes.chunks,
        per(sizes.file_bytes, samples),
        sizes.floor_bytes() as f64 / chunks,
    )?;
    writeln!(
        out,
        "\n{:<40} {:>10} {:>10} {:>10} {:>12} {:>10}",
        "part", "count", "bytes", "per chunk", "per sample", "per item"
    )?;
    let mut row = |name: &str, p: &Part| {
        writeln!(
            out,
            "{name:<40} {:>10} {:>10} {:>10.0} {:>12} {:>10}",
            p.count,
            p.bytes,
            p.bytes as f64 / chunks,
            per(p.bytes, samples),
            per(p.bytes, p.count),
        )
    };
    row("chunk headers", &sizes.headers)?;
    row("metadata", &sizes.metadata)?;
    row("checkpoint framing", &sizes.checkpoint_framing)?;
    for (name, part) in by_bytes(&sizes.pools) {
        row(&format!("pool {name}"), part)?;
    }
    for (name, part) in by_bytes(&sizes.events) {
        row(&format!("event {name}"), part)?;
    }
    for (name, part) in by_bytes(&sizes.events) {
        let Some(fields) = sizes.fields.get(name) else {
            continue;
        };
        writeln!(out, "\n{name}: bytes per event by field")?;
        for (field, bytes) in fields {
            writeln!(out, "  {field:<24} {:>8}", per(*bytes, part.count))?;
        }
        writeln!(out, "  {:<24} {:>8}", "total", per(part.bytes, part.count))?;
    }
    Ok(())
}

fn by_bytes(parts: &BTreeMap<String, Part>) -> Vec<(&String, &Part)> {
    let mut v: Vec<_> = parts.iter().collect();
    v.sort_by(|a, b| b.1.bytes.cmp(&a.1.bytes).then(a.0.cmp(b.0)));
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use jfr_writer::*;

    fn two_chunks() -> Vec<u8> {
        let clock = Clock {
            ticks_per_second: 1_000_000,
            origin_ticks: 0,
            origin_epoch_nanos: 1_767_225_600_000_000_000,
        };
        let options = RecordingOptions {
            clock,
            native_stack_encoding: NativeStackEncoding::Pooled,
        };
        let mut rec = Recording::new(Vec::new(), options, 0).unwrap();
        let thread = rec.thread(Thread {
            os_name: Some("main".into()),
            os_thread_id: 7,
            java_name: Some("main".into()),
            java_thread_id: 1,
            group: None,
            is_virtual: false,
        });
        for chunk in 0..2i64 {
            rec.write(&NativeLibrary {
                start_ticks: chunk * 1_000_000,
                name: "/usr/lib/libz.so.1",
                base_address: 0x7f00_0000_0000,
                top_address: 0x7f00_0001_0000,
                build_id: None,
                file_offset: 0,
            });
            for i in 0..10i64 {
                let native = rec.native_stack_trace(&[0x7f00_0000_1000 + i as u64 % 3], false);
                rec.write(&CpuTimeSample {
                    // 100,000 µs and more: 3 varint bytes.
                    start_ticks: chunk * 1_000_000 + 100_000 + i,
                    stack_trace: None,
                    thread: Some(thread),
                    failed: true,
                    sampling_period_ticks: 4_000,
                    biased: false,
                    native_stack_trace: Some(native),
                });
            }
            rec.rotate((chunk + 1) * 1_000_000).unwrap();
        }
        rec.finish(2_000_000).unwrap()
    }

    #[test]
    fn every_byte_is_counted_once_and_fields_add_up() {
        let bytes = two_chunks();
        let sizes = measure(&bytes).unwrap();
        assert_eq!(sizes.chunks, 2);
        assert_eq!(sizes.samples(), 20);
        let pools: u64 = sizes.pools.values().map(|p| p.bytes).sum();
        let events: u64 = sizes.events.values().map(|p| p.bytes).sum();
        assert_eq!(
            sizes.headers.bytes
                + sizes.metadata.bytes
                + sizes.checkpoint_framing.bytes
                + pools
                + events,
            bytes.len() as u64
        );
        for (name, fields) in &sizes.fields {
            let total: u64 = fields.iter().map(|(_, b)| b).sum();
            assert_eq!(total, sizes.events[name].bytes, "{name}");
        }
        let sample: BTreeMap<&str, u64> = sizes.fields[SAMPLE]
            .iter()
            .map(|(n, b)| (n.as_str(), *b / 20))
            .collect();
        let expected = [
            ("size", 1),
            ("type id", 1),
            ("startTime", 3),
            ("stackTrace", 1),
            ("eventThread", 1),
            ("failed", 1),
            ("samplingPeriod", 2),
            ("biased", 1),
            ("nativeStackTrace", 1),
        ];
        assert_eq!(sample, expected.into_iter().collect());
        // Three native stacks, written in each chunk that uses them; one thread per chunk.
        assert_eq!(sizes.pools["jdk.NativeStackTrace"].count, 6);
        assert_eq!(sizes.pools["java.lang.Thread"].count, 2);
        assert_eq!(sizes.events["jdk.NativeLibrary"].count, 2);
        let floor = sizes.floor_bytes();
        assert!(floor > sizes.metadata.bytes && floor < bytes.len() as u64);

        let mut text = Vec::new();
        write_text(&sizes, &mut text).unwrap();
        let text = String::from_utf8(text).unwrap();
        assert!(text.contains("20 jdk.CPUTimeSample events"), "{text}");
        assert!(
            text.contains("  startTime                    3.00"),
            "{text}"
        );
    }

    #[test]
    fn a_damaged_file_is_an_error() {
        let bytes = two_chunks();
        assert!(measure(&bytes[..bytes.len() - 10]).is_err());
        assert!(measure(b"not a recording").is_err());
    }
}
