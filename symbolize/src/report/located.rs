//! Samples kept by thread and by location: what an export that keeps program counters,
//! libraries, inline chains and thread names needs (pprof, OTLP), beside the folded stacks of
//! the other views. Collected only when [`Filter::locations`](super::Filter::locations) asks;
//! with [`Filter::events`](super::Filter::events) each sample's time and weight and its
//! thread's ids are kept too (OTLP).

use std::sync::Arc;

use indexmap::IndexSet;
use rustc_hash::{FxBuildHasher, FxHashMap};

use super::weight::Weight;
use crate::profile::ThreadIds;
use crate::resolve::LibraryRef;

/// One location of a stack: the frames that share one program counter (a native function and
/// the functions inlined into it), one physical Java frame (a method and the methods the JIT
/// inlined into it), or one placeholder.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct LocationKey {
    /// Index into [`Located::mappings`] of the library that holds the program counter; `None`
    /// for Java frames, placeholders and PCs outside every recorded library.
    pub mapping: Option<u32>,
    /// The program counter as recorded: the interrupted instruction for the leaf, a return
    /// address for the native frames below it; `None` for Java frames and placeholders.
    pub address: Option<u64>,
    /// Indexes into [`Aggregate::frames`](super::Aggregate::frames), innermost first: the
    /// inlined functions (methods), then the function they were inlined into. Never empty.
    pub frames: Vec<u32>,
}

/// What one sample of [`Located::samples`] is told apart by.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SampleKey {
    /// The thread's name; `None` when the event names no thread (some lost samples).
    pub thread: Option<Arc<str>>,
    /// The thread's ids, kept only with [`Filter::events`](super::Filter::events) (all `None`
    /// otherwise, so that pprof has one sample per thread name and stack).
    pub thread_ids: ThreadIds,
    /// Indexes into [`Located::locations`], leaf first.
    pub locations: Vec<u32>,
}

/// One event as recorded: a sample, or one `jdk.CPUTimeSamplesLost` (its samples and their CPU
/// time).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Event {
    /// When it was taken, ns since the epoch (its `startTime` on the chunk's clock).
    pub time_nanos: i64,
    /// What it weighs.
    pub weight: Weight,
}

/// The samples of one [`SampleKey`].
#[derive(Debug, Default, Clone)]
pub struct Samples {
    /// Their weight.
    pub weight: Weight,
    /// Each event, in the order read, with [`Filter::events`](super::Filter::events); empty
    /// otherwise.
    pub events: Vec<Event>,
}

/// Whose a sample is and when it was taken, as [`Located::add`] keeps it.
#[derive(Debug, Clone)]
pub(crate) struct Origin {
    /// The thread's name.
    pub thread: Option<Arc<str>>,
    /// The thread's ids.
    pub thread_ids: ThreadIds,
    /// When, ns since the epoch.
    pub time_nanos: i64,
}

/// The samples of an [`Aggregate`](super::Aggregate) by thread and by location. Every sample
/// the aggregate counts is here, lost samples included: the weights sum to its `total`.
#[derive(Debug, Default)]
pub struct Located {
    /// The libraries the native locations lie in, as the recording lists them.
    pub mappings: IndexSet<LibraryRef, FxBuildHasher>,
    /// Per mapping: whether one of its locations got a function name (from the symbol table,
    /// MiniDebugInfo or DWARF), rather than only an address.
    pub mapping_named: Vec<bool>,
    /// Distinct locations.
    pub locations: IndexSet<LocationKey, FxBuildHasher>,
    /// (thread, locations) → weight (and events).
    pub samples: FxHashMap<SampleKey, Samples>,
}

/// Where a location ends in a stack being built, and what it is: the aggregate marks one after
/// each location's frames, and [`Located::add`] turns them into [`LocationKey`]s.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Cut<'p> {
    /// The stack's length when the location's last frame was pushed.
    pub end: usize,
    /// The library holding the program counter.
    pub library: Option<&'p LibraryRef>,
    /// The program counter.
    pub address: Option<u64>,
    /// Whether the location's function got a name.
    pub named: bool,
}

impl Cut<'_> {
    /// Ends the frames pushed since the last cut as one location without an address (Java
    /// frames, a placeholder), if any were pushed.
    pub fn close(cuts: &mut Vec<Cut<'_>>, end: usize) {
        if cuts.last().map_or(0, |c| c.end) < end {
            cuts.push(Cut {
                end,
                library: None,
                address: None,
                named: true,
            });
        }
    }
}

impl Located {
    /// Adds the weight `w` of a sample of `origin` whose frames are `stack` (leaf first), cut
    /// into locations by `cuts`; with `events`, the sample's time and thread ids too.
    pub(crate) fn add(
        &mut self,
        origin: &Origin,
        stack: &[u32],
        cuts: &[Cut<'_>],
        w: Weight,
        events: bool,
    ) {
        let mut locations = Vec::with_capacity(cuts.len());
        let mut start = 0;
        for cut in cuts {
            let Some(frames) = stack.get(start..cut.end) else {
                continue;
            };
            let mapping = cut.library.map(|l| self.mapping(l, cut.named));
            let key = LocationKey {
                mapping,
                address: cut.address,
                frames: frames.to_vec(),
            };
            locations.push(self.locations.insert_full(key).0 as u32);
            start = cut.end;
        }
        let key = SampleKey {
            thread: origin.thread.clone(),
            thread_ids: if events {
                origin.thread_ids
            } else {
                ThreadIds::default()
            },
            locations,
        };
        let samples = self.samples.entry(key).or_default();
        samples.weight.add_weight(w);
        if events {
            samples.events.push(Event {
                time_nanos: origin.time_nanos,
                weight: w,
            });
        }
    }

    fn mapping(&mut self, library: &LibraryRef, named: bool) -> u32 {
        let i = match self.mappings.get_index_of(library) {
            Some(i) => i,
            None => {
                self.mapping_named.push(false);
                self.mappings.insert_full(library.clone()).0
            }
        };
        if named {
            if let Some(n) = self.mapping_named.get_mut(i) {
                *n = true;
            }
        }
        i as u32
    }
}
