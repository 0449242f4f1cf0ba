//! One recording from the JDK's own Flight Recorder chunks and jfr-native's: every event of
//! both, in one file that the JDK's readers, JMC and async-profiler's converter each take as
//! one recording.
//!
//! A JFR file is a sequence of self-contained chunks, so the two sources' chunks can follow
//! each other. What makes that one recording rather than two glued together:
//!
//! - **One clock.** The JDK's readers convert every chunk's ticks with the first chunk's
//!   header (format notes §9.3). Our chunks are moved onto the JDK's clock: every tick of
//!   theirs (event fields annotated `@Timestamp(TICKS)` / `@Timespan(TICKS)`, checkpoint and
//!   metadata times, the header) is rewritten to the JDK's ticks at the same instant, from the
//!   two headers' (ticks, wall-clock) pairs. Both sources derive their ticks from the same
//!   monotonic clock, so instants agree to the microsecond.
//! - **One type per name.** JMC merges an event type across chunks only when its fields are
//!   the same (§9.6); a type declared differently in two chunks becomes two types, even with no
//!   events. So:
//!   - the JDK's `jdk.CPUTimeSample` and `jdk.CPUTimeSamplesLost` events are left out (JDK 25
//!     records them only when asked; the CPU profile comes from us, once), and the JDK's
//!     declaration of such a type is removed from its chunks where it differs from ours;
//!   - the JDK's CPU samplers `jdk.ExecutionSample` and `jdk.NativeMethodSample` are left out
//!     or kept ([`JdkSamples`]);
//!   - the facts about the JVM our agent also writes ([`OUR_DUPLICATES`]: `jdk.ThreadStart`,
//!     `jdk.JVMInformation`, ...) are left out of our chunks when the JDK's chunks have them,
//!     and our declaration is removed where it differs;
//!   - our `jdk.NativeLibrary` events (with the build-id and file offset the symbolizer
//!     needs) become [`OUR_LIBRARY_EVENT`] when the JDK's chunks have their own;
//!   - everything else of both stays (our `jdk.ActiveRecording` and `jdk.ActiveSetting` say
//!     how our samples were taken). A `jdk.` type both sides keep events of but declare
//!     differently (JDK 11's `jdk.ActiveRecording` has fields of its own) is renamed in our
//!     chunks to `jfrnative.` and the same name ([`Summary::renamed`]); any other such type
//!     is reported ([`Summary::split`]).
//! - **Threads.** Our `java.lang.Thread` constants carry the Linux tid (`osThreadId`, which JMC
//!   identifies a thread by) and `Thread.threadId()` (`javaThreadId`), as the JDK's do.
//! - **Chunk order.** Chunks are written by start time. JMC loads one chunk per start time, so
//!   a chunk starting on the same nanosecond as an earlier one starts 1 ns later (its events
//!   keep their instants within that nanosecond).
//! - **Class ids.** The JDK's readers reuse a constant of the previous chunk by (class id,
//!   key), and `jfr summary` counts events by class id across chunks: our class ids are moved
//!   above every id of the JDK's chunks, so that no id means two things in one file.
//! - **Metadata ids.** The JDK's readers reuse the previous chunk's metadata when the ids are
//!   equal (§9.1); every rebuilt chunk's id is a hash of its metadata's content.

pub mod reframe;

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use rustc_hash::{FxHashMap, FxHashSet};

use crate::jfr::metadata::Metadata;
use crate::jfr::{read_chunks, Chunk, ReadError};
pub use crate::profile::OUR_LIBRARY_EVENT;
use crate::rewrite::SYMBOLIZATION_EVENT;
use reframe::{event_counts, rebuild, Plan, Retime, TickClock};

/// What happens to the JDK's own CPU samples (`jdk.ExecutionSample`, `jdk.NativeMethodSample`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum JdkSamples {
    /// Left out: the CPU profile is ours alone.
    #[default]
    Drop,
    /// Kept beside ours (reports still count only `jdk.CPUTimeSample`).
    Keep,
}

/// The JDK's CPU samplers other than `jdk.CPUTimeSample`.
pub const JDK_SAMPLERS: [&str; 2] = ["jdk.ExecutionSample", "jdk.NativeMethodSample"];

/// Facts about the JVM that our agent records too: left out of our chunks when the JDK's have
/// them (the JDK's are the same facts, with more: a thread start's stack and parent).
pub const OUR_DUPLICATES: [&str; 5] = [
    "jdk.JVMInformation",
    "jdk.OSInformation",
    "jdk.CPUInformation",
    "jdk.ThreadStart",
    "jdk.ThreadEnd",
];

/// The event types of ours that always stay, and whose JDK events (JDK 25's own CPU-time
/// sampler) never do.
pub const OURS: [&str; 2] = ["jdk.CPUTimeSample", "jdk.CPUTimeSamplesLost"];

/// Where a chunk comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Origin {
    /// The JDK's Flight Recorder.
    Jdk,
    /// jfr-native's agent (its metadata declares `jdk.NativeStackTrace`).
    Ours,
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Origin::Jdk => "JDK",
            Origin::Ours => "jfr-native",
        })
    }
}

/// The origin of `chunk`.
pub fn origin(chunk: &Chunk<'_>) -> Origin {
    if chunk
        .metadata
        .class_by_name("jdk.NativeStackTrace")
        .is_some()
    {
        Origin::Ours
    } else {
        Origin::Jdk
    }
}

/// One input file.
pub struct Input<'a> {
    /// Its name, for messages.
    pub name: String,
    /// Its bytes.
    pub bytes: &'a [u8],
}

/// What a merge did.
#[derive(Debug, Default)]
pub struct Summary {
    /// Chunks written, by origin.
    pub chunks: BTreeMap<Origin, usize>,
    /// Events left out, by origin and type.
    pub dropped: BTreeMap<(Origin, String), u64>,
    /// Event classes removed from a source's metadata (declared differently by the other).
    pub pruned: BTreeSet<(Origin, String)>,
    /// Types both sources hold events of, declared differently (JMC shows them as two types).
    pub split: BTreeSet<String>,
    /// Our types renamed because the JDK's chunks declare the same name differently, with
    /// events of both (old name, new name): `jdk.X` becomes `jfrnative.X`.
    pub renamed: BTreeMap<String, String>,
    /// Inputs whose end was damaged (a JVM killed mid-chunk): their chunks before it are used.
    pub damage: Vec<(String, ReadError)>,
    /// Largest shift of a chunk's start to keep start times distinct, ns.
    pub start_shift_ns: i64,
}

/// A merge that cannot be done.
#[derive(Debug, Clone, PartialEq)]
pub struct MergeError(pub String);

impl fmt::Display for MergeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for MergeError {}

/// A field list as JMC compares it: names, types (by name), arrays and pool references.
type Signature = Vec<(String, String, bool, bool)>;

fn signature(md: &Metadata, name: &str) -> Option<Signature> {
    let class = md.class_by_name(name)?;
    Some(
        class
            .fields
            .iter()
            .map(|f| {
                let type_name = md.class(f.class_id).map_or("?", |c| c.name.as_str());
                (
                    f.name.clone(),
                    type_name.to_string(),
                    f.array,
                    f.constant_pool,
                )
            })
            .collect(),
    )
}

fn is_event(md: &Metadata, name: &str) -> bool {
    md.class_by_name(name)
        .is_some_and(|c| c.super_type.as_deref() == Some("jdk.jfr.Event"))
}

struct Source<'a> {
    origin: Origin,
    chunk: Chunk<'a>,
    /// Events by class name, before anything is left out.
    events: FxHashMap<String, u64>,
}

/// Writes to `out` one file holding the chunks of every input, the JDK's and ours, as the
/// module documentation says. `inputs` must hold at least one chunk of each origin.
pub fn merge(
    inputs: &[Input<'_>],
    jdk_samples: JdkSamples,
    out: &mut Vec<u8>,
) -> Result<Summary, MergeError> {
    let mut summary = Summary::default();
    let mut sources = Vec::new();
    for input in inputs {
        let read = read_chunks(input.bytes);
        if let Some(e) = read.error {
            // A JVM killed mid-chunk: its complete chunks are used; a file without any (the
            // chunk the JDK was writing) adds nothing.
            summary.damage.push((input.name.clone(), e));
        }
        for chunk in read.chunks {
            if chunk.metadata.class_by_name(SYMBOLIZATION_EVENT).is_some() {
                return Err(MergeError(format!(
                    "{}: already symbolized (jfr-symbolize wrote it); merge the recordings \
                     themselves, then symbolize the result",
                    input.name
                )));
            }
            let counts =
                event_counts(&chunk).map_err(|e| MergeError(format!("{}: {e}", input.name)))?;
            let events = counts
                .into_iter()
                .filter_map(|(id, n)| chunk.metadata.class(id).map(|c| (c.name.clone(), n)))
                .collect();
            sources.push(Source {
                origin: origin(&chunk),
                chunk,
                events,
            });
        }
    }
    for (origin, what) in [
        (
            Origin::Jdk,
            "the JDK's own Flight Recorder (-XX:StartFlightRecording, JFR.start)",
        ),
        (
            Origin::Ours,
            "jfr-native (a chunk declaring jdk.NativeStackTrace)",
        ),
    ] {
        if !sources.iter().any(|s| s.origin == origin) {
            return Err(MergeError(format!(
                "no chunk of {what} among the inputs: a merge needs both recordings"
            )));
        }
    }
    sources.sort_by_key(|s| (s.chunk.header.start_nanos, s.origin));

    // The events that stay, by origin and type, and each side's declarations.
    let jdk_dropped = |name: &str| {
        OURS.contains(&name) || (jdk_samples == JdkSamples::Drop && JDK_SAMPLERS.contains(&name))
    };
    let mut recorded: FxHashMap<Origin, FxHashSet<String>> = FxHashMap::default();
    let mut signatures: FxHashMap<(Origin, String), Signature> = FxHashMap::default();
    for s in &sources {
        for (name, _) in s.events.iter().filter(|(_, &n)| n > 0) {
            recorded.entry(s.origin).or_default().insert(name.clone());
        }
        for class in md_event_names(&s.chunk.metadata) {
            if let Some(sig) = signature(&s.chunk.metadata, &class) {
                signatures.entry((s.origin, class)).or_insert(sig);
            }
        }
    }
    let has = |o: Origin, name: &str| recorded.get(&o).is_some_and(|k| k.contains(name));
    let kept_jdk: FxHashSet<String> = recorded
        .get(&Origin::Jdk)
        .into_iter()
        .flatten()
        .filter(|n| !jdk_dropped(n))
        .cloned()
        .collect();
    // Ours leaves out the JVM's facts that the JDK's chunks record themselves.
    let ours_dropped = |name: &str| OUR_DUPLICATES.contains(&name) && kept_jdk.contains(name);
    let rename_libraries = kept_jdk.contains("jdk.NativeLibrary");
    let kept = |o: Origin, name: &str| match o {
        Origin::Jdk => kept_jdk.contains(name),
        Origin::Ours => has(Origin::Ours, name) && !ours_dropped(name),
    };
    // For a type the two sides declare differently, whose declaration stays: the side that
    // keeps events of it; when neither does, ours for our own types, else the JDK's.
    let mut winner: FxHashMap<String, Origin> = FxHashMap::default();
    for ((o, name), sig) in &signatures {
        if *o != Origin::Jdk || (rename_libraries && name == "jdk.NativeLibrary") {
            continue;
        }
        if signatures
            .get(&(Origin::Ours, name.clone()))
            .is_none_or(|theirs| theirs == sig)
        {
            continue;
        }
        let w = match (kept(Origin::Jdk, name), kept(Origin::Ours, name)) {
            (true, true) => {
                match name.strip_prefix("jdk.") {
                    Some(rest) => {
                        summary
                            .renamed
                            .insert(name.clone(), format!("jfrnative.{rest}"));
                    }
                    None => {
                        summary.split.insert(name.clone());
                    }
                }
                continue;
            }
            (true, false) => Origin::Jdk,
            (false, true) => Origin::Ours,
            (false, false) if OURS.contains(&name.as_str()) => Origin::Ours,
            (false, false) => Origin::Jdk,
        };
        winner.insert(name.clone(), w);
    }

    let target = sources
        .iter()
        .find(|s| s.origin == Origin::Jdk)
        .map(|s| TickClock::of(&s.chunk.header));
    // Our class ids start above every id of the JDK's chunks.
    let class_offset = sources
        .iter()
        .filter(|s| s.origin == Origin::Jdk)
        .map(|s| s.chunk.metadata.max_class_id())
        .max()
        .unwrap_or(0)
        + 1;
    let mut previous_start: Option<i64> = None;
    let last_index = sources.len() - 1;
    for (i, s) in sources.iter().enumerate() {
        let md = &s.chunk.metadata;
        let mut plan = Plan {
            last: i == last_index,
            ..Plan::default()
        };
        let mut start = s.chunk.header.start_nanos;
        if let Some(p) = previous_start.filter(|&p| start <= p) {
            summary.start_shift_ns = summary.start_shift_ns.max(p + 1 - start);
            start = p + 1;
        }
        previous_start = Some(start);
        plan.start_nanos = start;
        if s.origin == Origin::Ours && rename_libraries {
            plan.rename_classes.insert(
                "jdk.NativeLibrary".to_string(),
                OUR_LIBRARY_EVENT.to_string(),
            );
        }
        if s.origin == Origin::Ours {
            for (old, new) in &summary.renamed {
                plan.rename_classes.insert(old.clone(), new.clone());
            }
        }
        if s.origin == Origin::Ours {
            plan.class_offset = class_offset;
            plan.retime = target.map(|to| Retime {
                from: TickClock::of(&s.chunk.header),
                to,
            });
        }
        for name in md_event_names(md) {
            let dropped = match s.origin {
                Origin::Jdk => jdk_dropped(&name),
                Origin::Ours => ours_dropped(&name),
            };
            let n = s.events.get(&name).copied().unwrap_or(0);
            if dropped {
                if let Some(c) = md.class_by_name(&name) {
                    plan.drop_events.insert(c.id);
                }
                if n > 0 {
                    *summary.dropped.entry((s.origin, name.clone())).or_insert(0) += n;
                }
            }
            if winner.get(&name).is_some_and(|&w| w != s.origin) {
                plan.prune_classes.insert(name.clone());
                summary.pruned.insert((s.origin, name));
            }
        }
        let settings = rebuild(&s.chunk, &plan, out).map_err(|e| MergeError(e.to_string()))?;
        if settings > 0 {
            *summary
                .dropped
                .entry((
                    s.origin,
                    "jdk.ActiveSetting (of a removed type)".to_string(),
                ))
                .or_insert(0) += settings;
        }
        *summary.chunks.entry(s.origin).or_insert(0) += 1;
    }
    Ok(summary)
}

/// The names of the event classes `md` declares.
fn md_event_names(md: &Metadata) -> Vec<String> {
    let Some(classes) = md.root.children.iter().find(|e| e.name == "metadata") else {
        return Vec::new();
    };
    classes
        .children
        .iter()
        .filter(|c| c.name == "class")
        .filter_map(|c| c.attr("name"))
        .filter(|name| is_event(md, name))
        .map(str::to_string)
        .collect()
}
