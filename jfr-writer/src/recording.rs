//! [`Recording`]: interns constants, encodes events into the current chunk, and writes finished
//! chunks (header, events, metadata, one checkpoint) to the output in one piece, so the output
//! never holds a partial chunk that a crash could leave behind.

use crate::clock::Clock;
use crate::constants::*;
use crate::error::{Error, Result};
use crate::events::{Encoder, Event, EventType, EventTypes};
use crate::ids::*;
use crate::leb128;
use crate::metadata::Metadata;
use crate::output::ChunkOutput;
use crate::types::{all_types, NativeStackEncoding};

/// Chunk header size in bytes.
pub const HEADER_SIZE: usize = 68;
const MAGIC: [u8; 4] = *b"FLR\0";
const FLAG_COMPRESSED_INTS: u16 = 1;
const FLAG_FINAL_CHUNK: u16 = 2;

/// How a recording is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecordingOptions {
    /// The file's tick clock.
    pub clock: Clock,
    /// How native stacks are encoded.
    pub native_stack_encoding: NativeStackEncoding,
}

/// Totals since the recording started.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Totals {
    /// Chunks written.
    pub chunks: u64,
    /// Events written (in finished chunks).
    pub events: u64,
    /// Bytes written.
    pub bytes: u64,
}

/// A JFR recording being written to `W`, one chunk at a time.
pub struct Recording<W: ChunkOutput> {
    out: Option<W>,
    options: RecordingOptions,
    metadata: Metadata,
    /// Metadata bodies already serialized, by the event types they declare, with their ids.
    metadata_bodies: Vec<(EventTypes, Vec<u8>, u64)>,
    event_ids: [u64; EventType::ALL.len()],
    pool_ids: PoolClassIds,
    pools: Pools,
    /// The chunk being built: 68 header bytes (patched at the end), then event records.
    chunk: Vec<u8>,
    chunk_start_ticks: i64,
    chunk_events: u64,
    /// The event types written in the current chunk.
    chunk_event_types: EventTypes,
    chunk_min_ticks: i64,
    chunk_max_ticks: i64,
    last_chunk_start_nanos: Option<i64>,
    totals: Totals,
    /// Reused to build the key of a native stack with segments.
    segment_words: Vec<u64>,
}

/// Native frames between two Java frames of a sample (`jfrnative.NativeSegment`, a jfr-native
/// extension in `jdk.NativeStackTrace`): the native code that called back into Java (a JNI or
/// FFM upcall), placed before the Java frame that called it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NativeSegment<'a> {
    /// The index in the sample's Java stack (top first) of the frame whose call reached these
    /// native frames: they sit between frames `java_frame_index - 1` and `java_frame_index`.
    pub java_frame_index: u32,
    /// Native frames are missing after these.
    pub truncated: bool,
    /// The program counters, innermost first.
    pub pcs: &'a [u64],
}

impl<W: ChunkOutput> Recording<W> {
    /// Starts a recording whose first chunk begins at `start_ticks`.
    pub fn new(out: W, options: RecordingOptions, start_ticks: i64) -> Result<Recording<W>> {
        let metadata = Metadata::new(all_types(options.native_stack_encoding))?;
        let class_id = |name: &str| {
            metadata
                .class_id(name)
                .ok_or_else(|| Error::Metadata(format!("{name} not declared")))
        };
        let mut event_ids = [0; EventType::ALL.len()];
        for (slot, t) in event_ids.iter_mut().zip(EventType::ALL) {
            *slot = class_id(t.name())?;
        }
        let pool_ids = PoolClassIds {
            symbol: class_id("jdk.types.Symbol")?,
            package: class_id("jdk.types.Package")?,
            module: class_id("jdk.types.Module")?,
            class_loader: class_id("jdk.types.ClassLoader")?,
            class: class_id("java.lang.Class")?,
            method: class_id("jdk.types.Method")?,
            stack_trace: class_id("jdk.types.StackTrace")?,
            frame_type: class_id("jdk.types.FrameType")?,
            native_stack_trace: class_id("jdk.NativeStackTrace")?,
            thread: class_id("java.lang.Thread")?,
            thread_group: class_id("jdk.types.ThreadGroup")?,
        };
        Ok(Recording {
            out: Some(out),
            options,
            metadata,
            metadata_bodies: Vec::new(),
            event_ids,
            pool_ids,
            pools: Pools::default(),
            chunk: vec![0; HEADER_SIZE],
            chunk_start_ticks: start_ticks,
            chunk_events: 0,
            chunk_event_types: EventTypes::default(),
            chunk_min_ticks: i64::MAX,
            chunk_max_ticks: i64::MIN,
            last_chunk_start_nanos: None,
            totals: Totals::default(),
            segment_words: Vec::new(),
        })
    }

    /// Where the finished chunks go.
    pub fn output(&self) -> Option<&W> {
        self.out.as_ref()
    }

    /// The recording's options.
    pub fn options(&self) -> &RecordingOptions {
        &self.options
    }

    /// The class id of an event type (what `jdk.ActiveSetting.id` refers to).
    pub fn event_type_id(&self, t: EventType) -> u64 {
        self.event_ids[t as usize]
    }

    /// Interns a string as a `jdk.types.Symbol`.
    pub fn symbol(&mut self, s: &str) -> SymbolId {
        SymbolId(self.pools.symbols.intern(s, || s.into()))
    }

    /// Interns a package.
    pub fn package(&mut self, p: Package) -> PackageId {
        PackageId(self.pools.packages.intern(&p, || p.clone()))
    }

    /// Interns a module.
    pub fn module(&mut self, m: Module) -> ModuleId {
        ModuleId(self.pools.modules.intern(&m, || m.clone()))
    }

    /// Interns a class loader.
    pub fn class_loader(&mut self, l: ClassLoader) -> ClassLoaderId {
        ClassLoaderId(self.pools.class_loaders.intern(&l, || l.clone()))
    }

    /// Interns a class.
    pub fn class(&mut self, c: Class) -> ClassId {
        ClassId(self.pools.classes.intern(&c, || c.clone()))
    }

    /// Interns a method.
    pub fn method(&mut self, m: Method) -> MethodId {
        MethodId(self.pools.methods.intern(&m, || m.clone()))
    }

    /// Interns a Java stack trace (top frame first). No allocation when it repeats.
    #[inline]
    pub fn stack_trace(&mut self, frames: &[Frame], truncated: bool) -> StackTraceId {
        let key = StackRef { truncated, frames };
        StackTraceId(self.pools.stack_traces.intern(&key, || StackKey {
            truncated,
            frames: frames.into(),
        }))
    }

    /// Interns a native stack trace with the native frames between the sample's Java frames
    /// (`jfrnative.NativeSegment`s, by increasing Java frame index).
    pub fn native_stack_trace_with_segments(
        &mut self,
        pcs: &[u64],
        truncated: bool,
        segments: &[NativeSegment<'_>],
    ) -> NativeStackTraceId {
        if segments.is_empty() {
            return self.native_stack_trace(pcs, truncated);
        }
        let mut words = std::mem::take(&mut self.segment_words);
        words.clear();
        words.extend_from_slice(pcs);
        for s in segments {
            words.push(SEGMENT_MARK);
            words.push(segment_header(s.java_frame_index, s.truncated, s.pcs.len()));
            words.extend_from_slice(s.pcs);
        }
        let id = self.native_stack_trace(&words, truncated);
        self.segment_words = words;
        id
    }

    /// Interns a native stack trace (program counters, leaf first). No allocation when it repeats.
    #[inline]
    pub fn native_stack_trace(&mut self, pcs: &[u64], truncated: bool) -> NativeStackTraceId {
        let key = StackRef {
            truncated,
            frames: pcs,
        };
        NativeStackTraceId(self.pools.native_stack_traces.intern(&key, || StackKey {
            truncated,
            frames: pcs.into(),
        }))
    }

    /// Interns a thread.
    pub fn thread(&mut self, t: Thread) -> ThreadId {
        ThreadId(self.pools.threads.intern(&t, || t.clone()))
    }

    /// Interns a thread group.
    pub fn thread_group(&mut self, g: ThreadGroup) -> ThreadGroupId {
        ThreadGroupId(self.pools.thread_groups.intern(&g, || g.clone()))
    }

    /// Distinct constants interned so far (memory held by the recording grows with this).
    pub fn constant_count(&self) -> usize {
        self.pools.len()
    }

    /// Appends an event to the current chunk.
    #[inline]
    pub fn write<E: Event>(&mut self, event: &E) {
        // Encoded in place behind a one-byte size, which is what a sample needs; a record of
        // 128 bytes or more has its size widened afterwards.
        let start = self.chunk.len();
        self.chunk.push(0);
        leb128::write_u64(&mut self.chunk, self.event_ids[E::TYPE as usize]);
        let mut encoder = Encoder {
            out: &mut self.chunk,
            pools: &mut self.pools,
            native: self.options.native_stack_encoding,
        };
        event.encode(&mut encoder);
        let size = leb128::record_size(self.chunk.len() - start - 1);
        match u8::try_from(size) {
            Ok(byte) if byte < 0x80 => self.chunk[start] = byte,
            _ => {
                let mut prefix = Vec::with_capacity(leb128::MAX_VARINT_LEN);
                leb128::write_u64(&mut prefix, size);
                self.chunk.splice(start..=start, prefix);
            }
        }
        let t = event.start_ticks();
        self.chunk_min_ticks = self.chunk_min_ticks.min(t);
        self.chunk_max_ticks = self.chunk_max_ticks.max(t);
        self.chunk_events += 1;
        self.chunk_event_types.insert(E::TYPE);
    }

    /// The program counters of the native stacks that the current chunk's events reference,
    /// each stack once (a pc shared by several stacks repeats): what tells which libraries the
    /// chunk's `jdk.NativeLibrary` events must describe.
    pub fn chunk_native_pcs(&self) -> impl Iterator<Item = u64> + '_ {
        self.pools.marked_native_pcs()
    }

    /// Bytes of event records in the current chunk (for size-based rotation).
    pub fn chunk_event_bytes(&self) -> usize {
        self.chunk.len() - HEADER_SIZE
    }

    /// Events in the current chunk.
    pub fn chunk_events(&self) -> u64 {
        self.chunk_events
    }

    /// Totals of the chunks written so far.
    pub fn totals(&self) -> Totals {
        self.totals
    }

    /// Finishes the current chunk at `now_ticks`, writes it, and starts the next one there.
    pub fn rotate(&mut self, now_ticks: i64) -> Result<()> {
        self.write_chunk(now_ticks, false)
    }

    /// Finishes the last chunk and returns the output. An empty last chunk is not written
    /// unless it would be the only one (every file holds at least one chunk).
    pub fn finish(self, now_ticks: i64) -> Result<W> {
        self.finish_with_totals(now_ticks).map(|(out, _)| out)
    }

    /// [`Recording::finish`], also returning the totals of the whole file.
    pub fn finish_with_totals(mut self, now_ticks: i64) -> Result<(W, Totals)> {
        if self.chunk_events > 0 || self.totals.chunks == 0 {
            self.write_chunk(now_ticks, true)?;
        }
        let out = self.out.take().ok_or(Error::Finished)?;
        Ok((out, self.totals))
    }

    /// The index in `metadata_bodies` of the metadata of a chunk holding events of `written`
    /// (serialized on first use). Every chunk
    /// declares `jdk.CPUTimeSample` and `jdk.CPUTimeSamplesLost` (`jfr view` needs the latter
    /// declared even when nothing was lost), the other event types only when it holds one.
    fn metadata_body(&mut self, written: EventTypes) -> usize {
        let mut declared = written;
        declared.insert(EventType::CpuTimeSample);
        declared.insert(EventType::CpuTimeSamplesLost);
        match self
            .metadata_bodies
            .iter()
            .position(|(types, _, _)| *types == declared)
        {
            Some(i) => i,
            None => {
                let body = self.metadata.body(|t| {
                    EventType::ALL
                        .iter()
                        .any(|e| e.name() == t.name && declared.contains(*e))
                });
                let id = metadata_id(&body);
                self.metadata_bodies.push((declared, body, id));
                self.metadata_bodies.len() - 1
            }
        }
    }

    fn write_chunk(&mut self, now_ticks: i64, last: bool) -> Result<()> {
        let clock = self.options.clock;
        let start_ticks = self.chunk_start_ticks.min(self.chunk_min_ticks);
        let end_ticks = now_ticks.max(self.chunk_max_ticks).max(start_ticks);
        // JMC drops a chunk whose start time equals an earlier one's: keep them distinct.
        let mut start_nanos = clock.epoch_nanos(start_ticks);
        if let Some(prev) = self.last_chunk_start_nanos {
            start_nanos = start_nanos.max(prev.saturating_add(1));
        }
        let duration_nanos = clock
            .epoch_nanos(end_ticks)
            .saturating_sub(start_nanos)
            .max(0);

        self.pools.close();
        let metadata_offset = self.chunk.len();
        let index = self.metadata_body(self.chunk_event_types);
        let (_, body, metadata_id) = &self.metadata_bodies[index];
        Metadata::write_record(&mut self.chunk, start_ticks, *metadata_id, body);
        let checkpoint_offset = self.chunk.len();
        let mut payload = Vec::new();
        leb128::write_u64(&mut payload, 1);
        self.pools.write_checkpoint_payload(
            &self.pool_ids,
            self.options.native_stack_encoding,
            start_ticks,
            &mut payload,
        );
        leb128::write_u64(&mut self.chunk, leb128::record_size(payload.len()));
        self.chunk.extend_from_slice(&payload);

        let flags = FLAG_COMPRESSED_INTS | if last { FLAG_FINAL_CHUNK } else { 0 };
        let header = ChunkHeader {
            size: self.chunk.len() as u64,
            checkpoint_offset: checkpoint_offset as u64,
            metadata_offset: metadata_offset as u64,
            start_nanos,
            duration_nanos,
            start_ticks,
            ticks_per_second: clock.ticks_per_second,
            flags,
        };
        self.chunk[..HEADER_SIZE].copy_from_slice(&header.to_bytes());
        let out = self.out.as_mut().ok_or(Error::Finished)?;
        out.write_chunk(&self.chunk)?;

        self.totals.chunks += 1;
        self.totals.events += self.chunk_events;
        self.totals.bytes += self.chunk.len() as u64;
        self.last_chunk_start_nanos = Some(start_nanos);
        self.pools.clear_marks();
        self.chunk.clear();
        self.chunk.resize(HEADER_SIZE, 0);
        self.chunk_start_ticks = end_ticks;
        self.chunk_events = 0;
        self.chunk_event_types = EventTypes::default();
        self.chunk_min_ticks = i64::MAX;
        self.chunk_max_ticks = i64::MIN;
        Ok(())
    }
}

/// The 68-byte chunk header, big-endian.
struct ChunkHeader {
    size: u64,
    checkpoint_offset: u64,
    metadata_offset: u64,
    start_nanos: i64,
    duration_nanos: i64,
    start_ticks: i64,
    ticks_per_second: u64,
    flags: u16,
}

impl ChunkHeader {
    fn to_bytes(&self) -> [u8; HEADER_SIZE] {
        let mut h = [0u8; HEADER_SIZE];
        h[0..4].copy_from_slice(&MAGIC);
        h[4..6].copy_from_slice(&2u16.to_be_bytes());
        h[6..8].copy_from_slice(&1u16.to_be_bytes());
        h[8..16].copy_from_slice(&self.size.to_be_bytes());
        h[16..24].copy_from_slice(&self.checkpoint_offset.to_be_bytes());
        h[24..32].copy_from_slice(&self.metadata_offset.to_be_bytes());
        h[32..40].copy_from_slice(&self.start_nanos.to_be_bytes());
        h[40..48].copy_from_slice(&self.duration_nanos.to_be_bytes());
        h[48..56].copy_from_slice(&self.start_ticks.to_be_bytes());
        h[56..64].copy_from_slice(&self.ticks_per_second.to_be_bytes());
        // Byte 64: file state 0 = finished; byte 65: padding.
        h[66..68].copy_from_slice(&self.flags.to_be_bytes());
        h
    }
}

/// A metadata id derived from the metadata's bytes (FNV-1a, 31 bits, never 0): equal metadata
/// gets equal ids (the JDK may reuse its parsers), different metadata different ids.
fn metadata_id(body: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in body {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    (h & 0x7fff_ffff).max(1)
}
