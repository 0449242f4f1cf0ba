//! Rebuilding one chunk for a merged file: some event types left out, some event classes
//! removed from the metadata, and, for a chunk of ours, every tick moved onto the JDK's clock.
//! Records that need no change are copied byte for byte; checkpoints keep their pools and get
//! their chain re-linked; the metadata goes last with an id that is a hash of its content.

use rustc_hash::{FxHashMap, FxHashSet};

use crate::jfr::chunk::HEADER_SIZE;
use crate::jfr::cursor::Cursor;
use crate::jfr::encode::encode_instance;
use crate::jfr::metadata::{Element, Metadata};
use crate::jfr::value::decode_instance;
use crate::jfr::{Chunk, Header, ReadError, Record, Value};
use crate::rewrite::{append_record, fnv1a, CheckpointHead};
use jfr_writer::leb128::write_u64;

/// A chunk's tick clock: `start_ticks` at `start_nanos` (ns since the epoch), `ticks_per_second`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TickClock {
    /// Ns since the epoch at `start_ticks`.
    pub start_nanos: i64,
    /// Ticks at `start_nanos`.
    pub start_ticks: i64,
    /// Tick frequency.
    pub ticks_per_second: i64,
}

impl TickClock {
    /// The clock a chunk header states.
    pub fn of(h: &Header) -> TickClock {
        TickClock {
            start_nanos: h.start_nanos,
            start_ticks: h.start_ticks,
            ticks_per_second: h.ticks_per_second.max(1),
        }
    }
}

/// Moves ticks of one clock onto another: the same instants, other numbers.
#[derive(Debug, Clone, Copy)]
pub struct Retime {
    /// The clock the chunk was written with.
    pub from: TickClock,
    /// The clock it is written with now.
    pub to: TickClock,
}

impl Retime {
    /// The instant `ticks` of `from` as ticks of `to`, rounded to the nearest.
    pub fn instant(&self, ticks: i64) -> i64 {
        let (f, t) = (self.from, self.to);
        let ns = 1_000_000_000i128;
        // Both sides in units of 1 / (ns · from.tps · to.tps) s, exact integers for any real
        // clock. Saturating: a damaged header's frequencies near 2^63 overflow even i128 (found
        // by the fuzz target merge); the instant is then wrong, but that chunk's clock is too.
        let offset_ns_times_ftps = (i128::from(f.start_nanos) - i128::from(t.start_nanos))
            .saturating_mul(i128::from(f.ticks_per_second))
            .saturating_add((i128::from(ticks) - i128::from(f.start_ticks)) * ns);
        let num = offset_ns_times_ftps.saturating_mul(i128::from(t.ticks_per_second));
        let den = ns * i128::from(f.ticks_per_second);
        let moved = i128::from(t.start_ticks).saturating_add(div_round(num, den));
        moved.clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64
    }

    /// A duration of `ticks` of `from` in ticks of `to`.
    pub fn span(&self, ticks: i64) -> i64 {
        let num = i128::from(ticks) * i128::from(self.to.ticks_per_second);
        let moved = div_round(num, i128::from(self.from.ticks_per_second));
        moved.clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64
    }
}

fn div_round(num: i128, den: i128) -> i128 {
    let half = den / 2;
    // Saturating: `num` may have saturated itself (see Retime::instant).
    if num >= 0 {
        num.saturating_add(half) / den
    } else {
        num.saturating_sub(half) / den
    }
}

/// What to do to a chunk.
#[derive(Debug, Default)]
pub struct Plan {
    /// Event class ids whose events are left out.
    pub drop_events: FxHashSet<u64>,
    /// Class names removed from the metadata (event classes without events in the output).
    pub prune_classes: FxHashSet<String>,
    /// Classes renamed in the metadata (old name → new name).
    pub rename_classes: FxHashMap<String, String>,
    /// Ticks moved onto another clock.
    pub retime: Option<Retime>,
    /// Added to every class id (metadata, records, pools, settings' event type ids), so that
    /// the chunk's ids meet none of another source's: the JDK's readers key constants reused
    /// across chunks, and `jfr summary` its counts, by class id alone.
    pub class_offset: u64,
    /// The output chunk's start, ns since the epoch (differs from the input's by at most a few
    /// ns: JMC loads only one chunk per start time).
    pub start_nanos: i64,
    /// Marks the last chunk of the output.
    pub last: bool,
}

/// Events of one chunk by class id (every record that is neither metadata nor checkpoint).
pub fn event_counts(chunk: &Chunk<'_>) -> Result<FxHashMap<u64, u64>, ReadError> {
    let mut counts = FxHashMap::default();
    for record in chunk.records() {
        let record = record?;
        if record.type_id > 1 {
            *counts.entry(record.type_id).or_insert(0) += 1;
        }
    }
    Ok(counts)
}

/// How a field's ticks are moved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TickKind {
    Instant,
    Span,
}

/// For each class of the metadata, the fields annotated `@Timestamp(TICKS)` or
/// `@Timespan(TICKS)` (field index, kind).
fn tick_fields(md: &Metadata) -> FxHashMap<u64, Vec<(usize, TickKind)>> {
    let id_of = |name: &str| md.class_by_name(name).map(|c| c.id.to_string());
    let (timestamp, timespan) = (id_of("jdk.jfr.Timestamp"), id_of("jdk.jfr.Timespan"));
    let kind_of = |field: &Element| {
        field.children.iter().find_map(|a| {
            if a.name != "annotation" || a.attr("value") != Some("TICKS") {
                return None;
            }
            let class = a.attr("class");
            if class.is_some() && class == timestamp.as_deref() {
                Some(TickKind::Instant)
            } else if class.is_some() && class == timespan.as_deref() {
                Some(TickKind::Span)
            } else {
                None
            }
        })
    };
    let mut out = FxHashMap::default();
    let Some(classes) = md.root.children.iter().find(|e| e.name == "metadata") else {
        return out;
    };
    for class in classes.children.iter().filter(|e| e.name == "class") {
        let Some(id) = class.attr("id").and_then(|v| v.parse::<u64>().ok()) else {
            continue;
        };
        let fields: Vec<(usize, TickKind)> = class
            .children
            .iter()
            .filter(|f| f.name == "field")
            .enumerate()
            .filter_map(|(i, f)| kind_of(f).map(|k| (i, k)))
            .collect();
        if !fields.is_empty() {
            out.insert(id, fields);
        }
    }
    out
}

/// The chunk rebuilt by `plan`, appended to `out`; returns how many `jdk.ActiveSetting` events
/// went with a removed class (the events `plan` drops are counted by the caller).
pub fn rebuild(chunk: &Chunk<'_>, plan: &Plan, out: &mut Vec<u8>) -> Result<u64, ReadError> {
    let ticks = tick_fields(&chunk.metadata);
    if plan.retime.is_some() {
        // Pools are copied as they are: a constant with ticks would keep the old clock.
        if let Some(id) = chunk.pools.keys().find(|id| ticks.contains_key(id)) {
            let name = chunk.metadata.class(*id).map_or("?", |c| c.name.as_str());
            return Err(ReadError {
                offset: chunk.offset,
                what: format!("constants of {name} hold ticks: this chunk cannot be retimed"),
            });
        }
    }
    let events = EventEdits {
        plan,
        ticks: &ticks,
        // Settings of a removed class point at a class id the chunk no longer declares (JMC
        // fails on them): they go with it.
        pruned_ids: plan
            .prune_classes
            .iter()
            .filter_map(|n| chunk.metadata.class_by_name(n))
            .map(|c| c.id as i64)
            .collect(),
        setting: chunk
            .metadata
            .class_by_name("jdk.ActiveSetting")
            .and_then(|c| c.field_index("id").map(|i| (c.id, i))),
    };
    let instant = |t: i64| plan.retime.map_or(t, |r| r.instant(t));
    let span = |t: i64| plan.retime.map_or(t, |r| r.span(t));
    let mut body = vec![0u8; HEADER_SIZE];
    let mut last_checkpoint: Option<usize> = None;
    let mut dropped = 0u64;
    for record in chunk.records() {
        let record = record?;
        match record.type_id {
            0 => {}
            1 => {
                let mut head = CheckpointHead::read(chunk, &record)?;
                let here = body.len();
                let (start, duration) = (
                    instant(head.start_ticks),
                    span(head.duration as i64).max(0) as u64,
                );
                let mut payload = head.relinked(start, duration, last_checkpoint, here);
                if plan.class_offset == 0 {
                    payload.extend_from_slice(head.rest);
                } else {
                    let rest = head.rest;
                    renumber_pools(
                        chunk,
                        &mut head.cursor,
                        rest,
                        plan.class_offset,
                        &mut payload,
                    )?;
                }
                append_record(&mut body, 1, &payload);
                last_checkpoint = Some(here);
            }
            t if plan.drop_events.contains(&t) => {}
            _ => {
                if !events.copy(chunk, &record, &mut body)? {
                    dropped += 1;
                }
            }
        }
    }
    let md = edited(&chunk.metadata, plan).map_err(|what| ReadError {
        offset: chunk.offset + chunk.header.metadata_offset,
        what,
    })?;
    let start_ticks = instant(chunk.header.start_ticks);
    let metadata_at = body.len();
    let metadata_id = fnv1a(&md.payload(0, 0)) & (i64::MAX as u64);
    append_record(&mut body, 0, &md.payload(start_ticks, metadata_id));
    let to = plan.retime.map(|r| r.to);
    let header = Header {
        size: body.len() as u64,
        checkpoint_offset: last_checkpoint.unwrap_or(0) as u64,
        metadata_offset: metadata_at as u64,
        start_nanos: plan.start_nanos,
        start_ticks,
        ticks_per_second: to.map_or(chunk.header.ticks_per_second, |c| c.ticks_per_second),
        state: 0,
        flags: (chunk.header.flags & !2) | if plan.last { 2 } else { 0 },
        ..chunk.header
    };
    body[..HEADER_SIZE].copy_from_slice(&header.encode());
    out.extend_from_slice(&body);
    Ok(dropped)
}

/// What is done to each event of a chunk, worked out once per chunk.
struct EventEdits<'a> {
    plan: &'a Plan,
    /// Tick fields by class id ([`tick_fields`]).
    ticks: &'a FxHashMap<u64, Vec<(usize, TickKind)>>,
    /// Class ids of the removed classes.
    pruned_ids: FxHashSet<i64>,
    /// `jdk.ActiveSetting`'s class id and the index of its `id` field.
    setting: Option<(u64, usize)>,
}

impl EventEdits<'_> {
    /// Appends event `record` to `body`: as it is, or with its tick fields retimed, its type
    /// id renumbered, and, a `jdk.ActiveSetting`, the event type id it is about renumbered.
    /// Returns false, appending nothing, for a setting of a removed class.
    fn copy(
        &self,
        chunk: &Chunk<'_>,
        record: &Record<'_>,
        body: &mut Vec<u8>,
    ) -> Result<bool, ReadError> {
        let (plan, md) = (self.plan, &chunk.metadata);
        let setting_field = self
            .setting
            .filter(|&(id, _)| id == record.type_id)
            .map(|(_, field)| field)
            .filter(|_| plan.class_offset != 0 || !self.pruned_ids.is_empty());
        let retime = plan.retime.zip(self.ticks.get(&record.type_id));
        if retime.is_none() && setting_field.is_none() {
            if plan.class_offset == 0 {
                body.extend_from_slice(record.bytes);
            } else {
                let payload = &record.bytes[record.payload_start..];
                append_record(body, record.type_id + plan.class_offset, payload);
            }
            return Ok(true);
        }
        let mut c = record.payload(chunk.offset);
        let Value::Struct(mut values) = decode_instance(&mut c, md, record.type_id, 0)? else {
            return Err(c.error("an event that is not a struct"));
        };
        if let Some(Value::Int(id)) = setting_field.and_then(|i| values.get_mut(i)) {
            if self.pruned_ids.contains(id) {
                return Ok(false);
            }
            if md.class(*id as u64).is_some() {
                *id += plan.class_offset as i64;
            }
        }
        if let Some((r, fields)) = retime {
            for &(i, kind) in fields {
                if let Some(Value::Int(v)) = values.get_mut(i) {
                    *v = match kind {
                        TickKind::Instant => r.instant(*v),
                        TickKind::Span => r.span(*v),
                    };
                }
            }
        }
        let mut payload = Vec::with_capacity(record.bytes.len() + 8);
        encode_instance(md, record.type_id, &Value::Struct(values), &mut payload);
        append_record(body, record.type_id + plan.class_offset, &payload);
        Ok(true)
    }
}

/// The rest of a checkpoint (`rest`: from its type mask on, `c` positioned there) with every
/// pool's class id plus `offset`; entries are copied as they are.
fn renumber_pools(
    chunk: &Chunk<'_>,
    c: &mut Cursor<'_>,
    rest: &[u8],
    offset: u64,
    out: &mut Vec<u8>,
) -> Result<(), ReadError> {
    let base = c.pos();
    out.push(c.u8()?);
    let pools = c.count()?;
    write_u64(out, pools as u64);
    for _ in 0..pools {
        let class_id = c.varint()?;
        let start = c.pos() - base;
        let count = c.count()?;
        for _ in 0..count {
            let _key = c.varint()?;
            decode_instance(c, &chunk.metadata, class_id, 0)?;
        }
        write_u64(out, class_id + offset);
        out.extend_from_slice(&rest[start..c.pos() - base]);
    }
    Ok(())
}

/// `md` without the classes `plan` prunes, with the classes it renames renamed.
fn edited(md: &Metadata, plan: &Plan) -> Result<Metadata, String> {
    let mut root = md.root.clone();
    if let Some(classes) = root.children.iter_mut().find(|e| e.name == "metadata") {
        classes.children.retain(|c| {
            !(c.name == "class"
                && c.attr("name")
                    .is_some_and(|n| plan.prune_classes.contains(n)))
        });
        if plan.class_offset != 0 {
            for class in classes.children.iter_mut() {
                renumber(class, plan.class_offset);
            }
        }
        for class in classes.children.iter_mut().filter(|c| c.name == "class") {
            let new = class.attr("name").and_then(|n| plan.rename_classes.get(n));
            if let Some(new) = new.cloned() {
                for (key, value) in class.attrs.iter_mut() {
                    if key == "name" {
                        *value = new.clone();
                    }
                }
            }
        }
    }
    Metadata::from_tree(md.start_ticks, md.id, root)
}

/// Adds `offset` to a class element's `id` and to every `class` attribute below it (fields,
/// annotations, settings).
fn renumber(e: &mut Element, offset: u64) {
    let is_class = e.name == "class";
    for (key, value) in e.attrs.iter_mut() {
        if key == "class" || (is_class && key == "id") {
            if let Ok(id) = value.parse::<u64>() {
                *value = (id + offset).to_string();
            }
        }
    }
    for child in e.children.iter_mut() {
        renumber(child, offset);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Found by the fuzz target merge: tick frequencies near 2^63 (a damaged header) overflowed
    /// i128 (a panic in debug builds); now the instant saturates, and real clocks are unchanged.
    #[test]
    fn absurd_tick_frequencies_do_not_overflow() {
        let clock = |start_nanos, tps| TickClock {
            start_nanos,
            start_ticks: 0,
            ticks_per_second: tps,
        };
        let r = Retime {
            from: clock(i64::MIN, i64::MAX),
            to: clock(i64::MAX, i64::MAX),
        };
        for ticks in [i64::MIN, -1, 0, 1, i64::MAX] {
            let _ = r.instant(ticks);
            let _ = r.span(ticks);
        }
        let real = Retime {
            from: clock(1_000, 1_000_000_000),
            to: clock(0, 1_000_000_000),
        };
        assert_eq!(real.instant(5), 1_005);
    }

    #[test]
    fn microsecond_ticks_move_onto_a_nanosecond_clock_at_the_same_instant() {
        let r = Retime {
            // µs since 12:00:00.000 (tick 0).
            from: TickClock {
                start_nanos: 1_000_000_000_000,
                start_ticks: 0,
                ticks_per_second: 1_000_000,
            },
            // ns since boot; 11:59:59.5 was tick 7_000_000_000.
            to: TickClock {
                start_nanos: 999_500_000_000,
                start_ticks: 7_000_000_000,
                ticks_per_second: 1_000_000_000,
            },
        };
        assert_eq!(r.instant(0), 7_500_000_000);
        assert_eq!(r.instant(1), 7_500_001_000);
        assert_eq!(r.instant(-3), 7_499_997_000);
        assert_eq!(r.span(10_000), 10_000_000);
    }

    #[test]
    fn a_faster_clock_onto_a_slower_one_rounds_to_the_nearest_tick() {
        let r = Retime {
            from: TickClock {
                start_nanos: 0,
                start_ticks: 0,
                ticks_per_second: 1_000_000_000,
            },
            to: TickClock {
                start_nanos: 0,
                start_ticks: 100,
                ticks_per_second: 1_000_000,
            },
        };
        assert_eq!(r.instant(1_499), 101);
        assert_eq!(r.instant(1_500), 102);
        assert_eq!(r.instant(-1_500), 98);
        assert_eq!(r.span(2_600), 3);
    }
}
