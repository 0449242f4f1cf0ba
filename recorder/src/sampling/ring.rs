//! A single-producer single-consumer ring of 64-bit words: one signal handler at a time (see
//! [`crate::sampling::buffers`]) pushes whole records, the drain thread pops them. Atomics only; a record that does not fit
//! is refused (the caller counts it), never partially written.

#![deny(
    clippy::indexing_slicing,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::arithmetic_side_effects
)]

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

/// The ring. Capacity is fixed at creation (never allocated by the producer).
pub struct Ring {
    words: Box<[AtomicU64]>,
    /// Total words ever consumed (consumer-owned).
    head: AtomicUsize,
    /// Total words ever produced (producer-owned).
    tail: AtomicUsize,
}

impl Ring {
    /// A ring of `capacity` words.
    pub fn new(capacity: usize) -> Ring {
        Ring {
            words: (0..capacity.max(1)).map(|_| AtomicU64::new(0)).collect(),
            head: AtomicUsize::new(0),
            tail: AtomicUsize::new(0),
        }
    }

    fn slot(&self, index: usize) -> Option<&AtomicU64> {
        self.words.get(index.checked_rem(self.words.len())?)
    }

    /// Producer: whether a record of `len` words fits now.
    #[inline]
    pub fn has_room(&self, len: usize) -> bool {
        let used = self
            .tail
            .load(Ordering::Relaxed)
            .wrapping_sub(self.head.load(Ordering::Acquire));
        len.checked_add(1)
            .is_some_and(|needed| self.words.len().saturating_sub(used) >= needed)
    }

    /// The ring's size in words.
    pub fn capacity_words(&self) -> usize {
        self.words.len()
    }

    /// Producer: writes the record `len` words long produced by `fill(i)` for i in 0..len, preceded
    /// by a length word. Returns false (nothing written) if it does not fit.
    #[inline]
    pub fn push(&self, len: usize, mut fill: impl FnMut(usize) -> u64) -> bool {
        let tail = self.tail.load(Ordering::Relaxed);
        let head = self.head.load(Ordering::Acquire);
        let used = tail.wrapping_sub(head);
        let Some(needed) = len.checked_add(1) else {
            return false;
        };
        if self.words.len().saturating_sub(used) < needed {
            return false;
        }
        let mut at = tail;
        if let Some(w) = self.slot(at) {
            w.store(len as u64, Ordering::Relaxed);
        }
        for i in 0..len {
            at = at.wrapping_add(1);
            if let Some(w) = self.slot(at) {
                w.store(fill(i), Ordering::Relaxed);
            }
        }
        self.tail
            .store(tail.wrapping_add(needed), Ordering::Release);
        true
    }

    /// Consumer: pops one record into `out` (cleared first). Returns false if the ring is empty.
    pub fn pop(&self, out: &mut Vec<u64>) -> bool {
        out.clear();
        let head = self.head.load(Ordering::Relaxed);
        let tail = self.tail.load(Ordering::Acquire);
        if head == tail {
            return false;
        }
        let len = self.slot(head).map_or(0, |w| w.load(Ordering::Relaxed)) as usize;
        let len = len.min(tail.wrapping_sub(head).saturating_sub(1));
        let mut at = head;
        for _ in 0..len {
            at = at.wrapping_add(1);
            out.push(self.slot(at).map_or(0, |w| w.load(Ordering::Relaxed)));
        }
        self.head.store(at.wrapping_add(1), Ordering::Release);
        true
    }
}

#[cfg(test)]
#[allow(clippy::arithmetic_side_effects, clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip_and_wrap() {
        let r = Ring::new(10);
        let mut out = Vec::new();
        for round in 0..50u64 {
            assert!(r.push(3, |i| round * 10 + i as u64));
            assert!(r.push(2, |i| round * 100 + i as u64));
            assert!(r.pop(&mut out));
            assert_eq!(out, vec![round * 10, round * 10 + 1, round * 10 + 2]);
            assert!(r.pop(&mut out));
            assert_eq!(out, vec![round * 100, round * 100 + 1]);
            assert!(!r.pop(&mut out));
        }
    }

    #[test]
    fn full_ring_refuses_whole_records() {
        let r = Ring::new(8);
        assert!(r.push(4, |_| 1));
        assert!(!r.push(3, |_| 2), "needs 4 words, 3 free");
        assert!(r.push(2, |_| 3));
        let mut out = Vec::new();
        assert!(r.pop(&mut out));
        assert_eq!(out, vec![1; 4]);
        assert!(r.pop(&mut out));
        assert_eq!(out, vec![3; 2]);
        assert!(!r.push(8, |_| 0), "larger than the ring");
    }

    #[test]
    fn concurrent_producer_and_consumer_agree() {
        let r = std::sync::Arc::new(Ring::new(64));
        let producer = {
            let r = r.clone();
            std::thread::spawn(move || {
                let mut sent = 0u64;
                while sent < 20_000 {
                    if r.push(5, |i| sent * 8 + i as u64) {
                        sent += 1;
                    }
                }
            })
        };
        let mut out = Vec::new();
        let mut got = 0u64;
        while got < 20_000 {
            if r.pop(&mut out) {
                assert_eq!(out, (0..5).map(|i| got * 8 + i).collect::<Vec<_>>());
                got += 1;
            }
        }
        producer.join().unwrap();
    }
}
