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
    /// Signals of the agent's number that no timer of the agent sent (queued from outside,
    /// or a timer no slot owns): ignored.
    pub foreign_signals: AtomicU64,
    /// Signals of a perf counter the slot no longer has (closed or replaced meanwhile): ignored.
    pub stale_signals: AtomicU64,
    /// Perf counters found stopped without their signal (lost) and started again by the
    /// writer.
    pub perf_restarted: AtomicU64,
    /// Samples skipped: too little stack left below the handler.
    pub low_stack: AtomicU64,
    /// Samples dropped: every scratch buffer was in use.
    pub no_buffer: AtomicU64,
    /// Samples of code running off the thread's own stack (pc only).
    pub off_stack: AtomicU64,
    /// Native walks that ended truncated.
    pub native_truncated: AtomicU64,
    /// Samples that interrupted another signal's handler at its entry (the two signals arrived
    /// together) and were taken from the code that handler's signal interrupted.
    pub other_handler_entered: AtomicU64,
    /// Samples whose last native frame is a JVM stub (arraycopy, vtable or itable stub,
    /// adapter, runtime stub) the native walk stopped at.
    pub vm_stub_frames: AtomicU64,
    /// Samples whose Java frames come from HotSpot's frame descriptions (AsyncGetCallTrace
    /// failed).
    pub vm_walk_used: AtomicU64,
    /// Samples where both AsyncGetCallTrace and the VM walk ran.
    pub vm_walk_compared: AtomicU64,
    /// Of those, the ones where both gave the same methods, frame for frame.
    pub vm_walk_agreed: AtomicU64,
    /// AsyncGetCallTrace failures by code: index `-code - 1` for -1..-10, 10 for any other.
    pub agct_errors: [AtomicU64; AGCT_CODES],
    /// How long the native walks took (see [`walk_time_bucket`]).
    pub walk_ns: [AtomicU64; WALK_BUCKETS],
    /// How long the sample handler ran, from its first check to its return (same buckets):
    /// the agent's in-process cost per sample. Wall time: a run during which the thread was
    /// preempted counts the time it waited, hence quantiles rather than a mean. The kernel's
    /// cost of the interrupt and of delivering the signal is not in it.
    pub handler_ns: [AtomicU64; WALK_BUCKETS],
}

/// Width of the fine buckets of the walk-time histogram.
const WALK_FINE_NS: u64 = 50;
/// Fine buckets: 0 to 12.8 µs in steps of 50 ns; then one bucket per doubling.
const WALK_FINE: usize = 256;
/// Buckets of the walk-time histogram.
pub const WALK_BUCKETS: usize = WALK_FINE + 20;

/// The histogram bucket of a walk that took `ns`.
#[inline]
pub fn walk_time_bucket(ns: u64) -> usize {
    let fine = ns / WALK_FINE_NS;
    if fine < WALK_FINE as u64 {
        return fine as usize;
    }
    let doublings = (63 - (fine / WALK_FINE as u64).leading_zeros()) as usize;
    (WALK_FINE + doublings).min(WALK_BUCKETS - 1)
}

/// The upper bound in ns of bucket `i`.
fn bucket_upper_ns(i: usize) -> u64 {
    if i < WALK_FINE {
        (i as u64 + 1) * WALK_FINE_NS
    } else {
        (WALK_FINE as u64 * WALK_FINE_NS) << (i - WALK_FINE + 1)
    }
}

/// The walk time (ns, a bucket's upper bound) below which `quantile` of the walks fell, from
/// the histogram; `None` if nothing was recorded.
pub fn walk_time_quantile_ns(quantile: f64) -> Option<u64> {
    time_quantile_ns(&STATS.walk_ns, quantile)
}

/// The same for the sample handler's run time ([`Stats::handler_ns`]).
pub fn handler_time_quantile_ns(quantile: f64) -> Option<u64> {
    time_quantile_ns(&STATS.handler_ns, quantile)
}

/// A bucket's upper bound below which `quantile` of a time histogram's entries fell.
fn time_quantile_ns(histogram: &[AtomicU64; WALK_BUCKETS], quantile: f64) -> Option<u64> {
    let counts: Vec<u64> = histogram
        .iter()
        .map(|c| c.load(Ordering::Relaxed))
        .collect();
    let total: u64 = counts.iter().sum();
    let wanted = ((total as f64) * quantile).ceil().max(1.0) as u64;
    let mut seen = 0;
    for (i, n) in counts.iter().enumerate() {
        seen += n;
        if seen >= wanted && total > 0 {
            return Some(bucket_upper_ns(i));
        }
    }
    None
}

/// The process-wide counters.
pub static STATS: Stats = Stats {
    samples: AtomicU64::new(0),
    dropped_ring_full: AtomicU64::new(0),
    wrong_thread: AtomicU64::new(0),
    after_stop: AtomicU64::new(0),
    foreign_signals: AtomicU64::new(0),
    stale_signals: AtomicU64::new(0),
    perf_restarted: AtomicU64::new(0),
    low_stack: AtomicU64::new(0),
    no_buffer: AtomicU64::new(0),
    off_stack: AtomicU64::new(0),
    native_truncated: AtomicU64::new(0),
    other_handler_entered: AtomicU64::new(0),
    vm_stub_frames: AtomicU64::new(0),
    vm_walk_used: AtomicU64::new(0),
    vm_walk_compared: AtomicU64::new(0),
    vm_walk_agreed: AtomicU64::new(0),
    agct_errors: [const { AtomicU64::new(0) }; AGCT_CODES],
    walk_ns: [const { AtomicU64::new(0) }; WALK_BUCKETS],
    handler_ns: [const { AtomicU64::new(0) }; WALK_BUCKETS],
};

impl Stats {
    /// Sets every counter to zero (a new recording starts).
    pub fn reset(&self) {
        for c in [
            &self.samples,
            &self.dropped_ring_full,
            &self.wrong_thread,
            &self.after_stop,
            &self.foreign_signals,
            &self.stale_signals,
            &self.perf_restarted,
            &self.low_stack,
            &self.no_buffer,
            &self.off_stack,
            &self.native_truncated,
            &self.other_handler_entered,
            &self.vm_stub_frames,
            &self.vm_walk_used,
            &self.vm_walk_compared,
            &self.vm_walk_agreed,
        ]
        .into_iter()
        .chain(self.agct_errors.iter())
        .chain(self.walk_ns.iter())
        .chain(self.handler_ns.iter())
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

/// What an AsyncGetCallTrace error code means: HotSpot's `ticks_*` names (`forte.cpp`), and
/// the thread states `AsyncGetCallTrace` returns them in.
pub fn agct_reason(code: i32) -> &'static str {
    match code {
        -1 => "no class load (ClassLoad events not enabled)",
        -2 => "GC active",
        -3 => "unknown not Java (in native or VM code with no last Java frame)",
        -4 => "not walkable, not Java (in native or VM code, its last Java frame not walkable)",
        // `_thread_in_Java`: Java code, or native code entered without a state transition (a
        // critical FFM downcall, a leaf stub) where the top frame is not Java code.
        -5 => "unknown Java (in Java state, the top frame not found)",
        -6 => "not walkable, Java (in Java state, the Java frames not walkable)",
        -7 => "unknown state",
        -8 => "thread exiting",
        -9 => "deoptimizing",
        -10 => "safepoint",
        crate::hotspot::agct::NOT_ON_THREAD_STACK => "not attempted: not on the thread's own stack",
        _ => "AsyncGetCallTrace not available",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn walk_time_buckets_cover_every_duration() {
        assert_eq!(walk_time_bucket(0), 0);
        assert_eq!(walk_time_bucket(49), 0);
        assert_eq!(walk_time_bucket(50), 1);
        assert_eq!(walk_time_bucket(12_799), 255);
        assert_eq!(walk_time_bucket(12_800), 256);
        assert_eq!(walk_time_bucket(25_600), 257);
        assert_eq!(walk_time_bucket(u64::MAX), WALK_BUCKETS - 1);
        for ns in [0, 10, 60, 1_999, 13_000, 30_000, 1 << 30] {
            assert!(bucket_upper_ns(walk_time_bucket(ns)) > ns, "{ns}");
        }
    }
}
