//! Counters shared by the signal handler (atomic increments only) and the drain thread.

use std::sync::atomic::{AtomicU64, Ordering};

/// AsyncGetCallTrace error codes counted separately (-1 to -10), plus "not available".
pub const AGCT_CODES: usize = 11;

/// The recorder's counters.
pub struct Stats {
    /// Signals handled that produced a record.
    pub samples: AtomicU64,
    /// Samples dropped because the thread's ring was full.
    pub dropped_ring_full: AtomicU64,
    /// Signals that arrived on a thread other than the slot's owner (ignored).
    pub wrong_thread: AtomicU64,
    /// Signals that arrived while recording was stopped.
    pub after_stop: AtomicU64,
    /// Native walks that ended truncated.
    pub native_truncated: AtomicU64,
    /// AsyncGetCallTrace failures by code: index `-code - 1` for -1..-10, 10 for any other.
    pub agct_errors: [AtomicU64; AGCT_CODES],
}

/// The process-wide counters.
pub static STATS: Stats = Stats {
    samples: AtomicU64::new(0),
    dropped_ring_full: AtomicU64::new(0),
    wrong_thread: AtomicU64::new(0),
    after_stop: AtomicU64::new(0),
    native_truncated: AtomicU64::new(0),
    agct_errors: [const { AtomicU64::new(0) }; AGCT_CODES],
};

impl Stats {
    /// Sets every counter to zero (a new recording starts).
    pub fn reset(&self) {
        for c in [
            &self.samples,
            &self.dropped_ring_full,
            &self.wrong_thread,
            &self.after_stop,
            &self.native_truncated,
        ]
        .into_iter()
        .chain(self.agct_errors.iter())
        {
            c.store(0, Ordering::Relaxed);
        }
    }
}

/// Adds one.
#[inline]
pub fn inc(c: &AtomicU64) {
    c.fetch_add(1, Ordering::Relaxed);
}

/// The counter for an AsyncGetCallTrace error code.
#[inline]
pub fn agct_error(code: i32) -> &'static AtomicU64 {
    let index = if (-10..=-1).contains(&code) {
        (-code - 1) as usize
    } else {
        AGCT_CODES - 1
    };
    &STATS.agct_errors[index.min(AGCT_CODES - 1)]
}

/// What an AsyncGetCallTrace error code means (HotSpot's `ticks_*` names).
pub fn agct_reason(code: i32) -> &'static str {
    match code {
        -1 => "no Java frame (ClassLoad not enabled)",
        -2 => "GC active",
        -3 => "unknown not Java (VM runtime code)",
        -4 => "not walkable, not Java",
        -5 => "unknown Java (JNI transition)",
        -6 => "not walkable, Java",
        -7 => "unknown state",
        -8 => "thread exiting",
        -9 => "deoptimizing",
        -10 => "safepoint",
        _ => "AsyncGetCallTrace not available",
    }
}
