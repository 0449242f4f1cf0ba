//! The buffers the signal handlers of all threads share: scratch space for one sample's walk,
//! and the rings that carry records to the writer. A handler takes one of each with a
//! compare-and-swap on its `busy` flag (never waits: if every one is busy it drops the sample,
//! counted), and gives it back when the sample is written. So memory grows with the number of
//! CPUs sampling at once, not with the number of threads: a thread costs only its
//! [`crate::sampling::slots::Slot`].
//!
//! One set of buffers is made per recording size (`depth`, `native_depth`) off the handler and
//! published through [`current`]; a set is replaced only between recordings, after every
//! handler has left (see [`crate::sampling::signal::wait_for_handlers`]), and the old one is kept (never
//! freed: a few hundred KB).

#![deny(
    clippy::indexing_slicing,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::arithmetic_side_effects
)]

use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicBool, AtomicPtr, Ordering};

use crate::hotspot::agct::CallFrame;
use crate::hotspot::javawalk::JavaFrame;
use crate::sampling::record::RECORD_HEADER_WORDS;
use crate::sampling::ring::Ring;

/// Smallest ring, in words (512 KiB): about 2 000 samples of 30 frames, 2 s of two busy CPUs
/// at 1 ms, while the writer drains every 10 ms.
const MIN_RING_WORDS: usize = 64 * 1024;

/// Space for one sample's walk.
pub struct Scratch {
    /// Native pcs of the current sample.
    pub pcs: Box<[u64]>,
    /// AsyncGetCallTrace output of the current sample.
    pub frames: Box<[CallFrame]>,
    /// The Java-frame walk's output of the current sample.
    pub java: Box<[JavaFrame]>,
    /// Frame kinds of the sample's Java frames (`jdk.types.FrameType` keys).
    pub kinds: Box<[u8]>,
}

struct Shared<T> {
    busy: AtomicBool,
    value: UnsafeCell<T>,
}

/// One recording size's buffers.
pub struct Buffers {
    scratch: Box<[Shared<Scratch>]>,
    rings: Box<[Shared<Ring>]>,
    depth: usize,
    native_depth: usize,
}

// SAFETY: each `value` is reached only through a `Taken` guard, which exists only while its
// `busy` flag is held (acquired with compare-and-swap), so one thread at a time uses it; the
// drain reads rings through `Ring::pop`, which is safe against one concurrent producer.
unsafe impl Sync for Buffers {}

/// A buffer taken from a [`Buffers`]; given back on drop.
pub struct Taken<'a, T> {
    shared: &'a Shared<T>,
}

impl<T> Taken<'_, T> {
    /// The buffer, exclusively.
    #[allow(clippy::mut_from_ref)]
    pub fn get(&mut self) -> &mut T {
        // SAFETY: this guard holds the `busy` flag (see `take`), so no other reference to the
        // value exists until it is dropped.
        unsafe { &mut *self.shared.value.get() }
    }
}

impl<T> Drop for Taken<'_, T> {
    fn drop(&mut self) {
        self.shared.busy.store(false, Ordering::Release);
    }
}

fn take<T>(all: &[Shared<T>], start: usize) -> Option<Taken<'_, T>> {
    let n = all.len();
    for i in 0..n {
        let at = start.wrapping_add(i).checked_rem(n)?;
        let shared = all.get(at)?;
        if shared
            .busy
            .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
        {
            return Some(Taken { shared });
        }
    }
    None
}

impl Buffers {
    /// Buffers for `sets` concurrent samples of up to `depth` Java and `native_depth` native
    /// frames.
    pub fn new(sets: usize, depth: usize, native_depth: usize) -> Buffers {
        let sets = sets.max(1);
        let max_record = RECORD_HEADER_WORDS
            .saturating_add(native_depth)
            .saturating_add(depth.saturating_mul(2));
        let ring_words = max_record.saturating_mul(4).max(MIN_RING_WORDS);
        let frame = CallFrame {
            lineno: 0,
            method_id: std::ptr::null_mut(),
        };
        Buffers {
            scratch: (0..sets)
                .map(|_| Shared {
                    busy: AtomicBool::new(false),
                    value: UnsafeCell::new(Scratch {
                        pcs: vec![0; native_depth].into(),
                        frames: vec![frame; depth].into(),
                        java: vec![JavaFrame::default(); depth].into(),
                        kinds: vec![0; depth].into(),
                    }),
                })
                .collect(),
            rings: (0..sets)
                .map(|_| Shared {
                    busy: AtomicBool::new(false),
                    value: UnsafeCell::new(Ring::new(ring_words)),
                })
                .collect(),
            depth,
            native_depth,
        }
    }

    /// Whether these buffers were made for `depth` and `native_depth`.
    pub fn fits(&self, depth: usize, native_depth: usize) -> bool {
        (self.depth, self.native_depth) == (depth, native_depth)
    }

    /// A free scratch set, trying first the one at `hint` (spread threads over the sets).
    #[inline]
    pub fn scratch(&self, hint: usize) -> Option<Taken<'_, Scratch>> {
        take(&self.scratch, hint)
    }

    /// A free ring with room for a `words`-long record, trying first the one at `hint`.
    #[inline]
    pub fn ring(&self, hint: usize, words: usize) -> Option<Taken<'_, Ring>> {
        let n = self.rings.len();
        for i in 0..n {
            let mut ring = take(&self.rings, hint.wrapping_add(i))?;
            if ring.get().has_room(words) {
                return Some(ring);
            }
        }
        None
    }

    /// How many rings there are.
    pub fn ring_count(&self) -> usize {
        self.rings.len()
    }

    /// The writer's side: pops the next record of ring `ring` into `out`; false when empty.
    pub fn pop(&self, ring: usize, out: &mut Vec<u64>) -> bool {
        let Some(shared) = self.rings.get(ring) else {
            return false;
        };
        // SAFETY: `pop` only reads what a producer published with Release and moves the
        // consumer index, which no producer writes: safe beside the one producer that may
        // hold the ring (single-producer single-consumer). The writer is the only consumer.
        let ring = unsafe { &*shared.value.get() };
        ring.pop(out)
    }

    /// Bytes these buffers hold.
    pub fn bytes(&self) -> usize {
        let scratch = self
            .native_depth
            .saturating_mul(8)
            .saturating_add(self.depth.saturating_mul(std::mem::size_of::<CallFrame>()));
        let ring = self
            .rings
            .first()
            // SAFETY: reading the fixed capacity only.
            .map_or(0, |r| unsafe { &*r.value.get() }.capacity_words())
            .saturating_mul(8);
        self.scratch
            .len()
            .saturating_mul(scratch)
            .saturating_add(self.rings.len().saturating_mul(ring))
    }
}

/// The buffers handlers use now (null before the first recording).
static CURRENT: AtomicPtr<Buffers> = AtomicPtr::new(std::ptr::null_mut());

/// The current buffers, for the handler and the writer.
#[inline]
pub fn current() -> Option<&'static Buffers> {
    // SAFETY: non-null values come from `Box::leak` in `prepare` and are never freed.
    unsafe { CURRENT.load(Ordering::Acquire).as_ref() }
}

/// Makes the current buffers fit a recording of `depth` and `native_depth` frames, with one
/// set per two CPUs' worth of concurrent handlers. Call only while no recording runs and no
/// handler can run (between recordings).
pub fn prepare(depth: usize, native_depth: usize) -> &'static Buffers {
    if let Some(b) = current().filter(|b| b.fits(depth, native_depth)) {
        return b;
    }
    let cpus = std::thread::available_parallelism().map_or(2, |n| n.get());
    let sets = cpus.saturating_mul(2).clamp(4, 64);
    let b: &'static Buffers = Box::leak(Box::new(Buffers::new(sets, depth, native_depth)));
    CURRENT.store((b as *const Buffers).cast_mut(), Ordering::Release);
    b
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;

    #[test]
    fn a_taken_buffer_is_not_given_twice_until_released() {
        let b = Buffers::new(2, 4, 4);
        let first = b.scratch(0).unwrap();
        let second = b.scratch(0).unwrap();
        assert!(b.scratch(0).is_none(), "both sets are busy");
        drop(first);
        assert!(b.scratch(1).is_some());
        drop(second);
    }

    #[test]
    fn records_from_many_rings_are_all_drained() {
        let b = Buffers::new(3, 4, 4);
        for i in 0..3u64 {
            let mut ring = b.ring(i as usize, 2).unwrap();
            assert!(ring.get().push(2, |j| i * 10 + j as u64));
        }
        let mut seen = Vec::new();
        let mut record = Vec::new();
        for ring in 0..b.ring_count() {
            while b.pop(ring, &mut record) {
                seen.push(record.clone());
            }
        }
        seen.sort();
        assert_eq!(seen, vec![vec![0, 1], vec![10, 11], vec![20, 21]]);
    }
}
