//! Where the JVM's generated code lies: the code cache's reserved range, which the agent reads
//! from HotSpot's own description ([`crate::hotspot::codecache::read`]) and publishes here once.
//! Reserved at start-up, so a pc inside it is JVM-generated code (JIT-compiled methods, the
//! interpreter, stubs) whatever was committed or mapped since: the code map never goes stale
//! for JIT code, and a code cache on large pages (mapped as `/anon_hugepage (deleted)`, which
//! looks like a file) is never taken for a native library. The native walk stops there; the
//! Java walk starts there.

use std::sync::atomic::{AtomicU64, Ordering};

static LOW: AtomicU64 = AtomicU64::new(0);
static HIGH: AtomicU64 = AtomicU64::new(0);

/// Publishes the bounds for [`bounds`].
pub fn set(low: u64, high: u64) {
    LOW.store(low, Ordering::Release);
    HIGH.store(high, Ordering::Release);
}

/// The published bounds, if any.
pub fn bounds() -> Option<(u64, u64)> {
    let (low, high) = (LOW.load(Ordering::Acquire), HIGH.load(Ordering::Acquire));
    (low < high).then_some((low, high))
}

/// Whether `pc` is in the code cache's reserved range (false if it is not known).
#[inline]
pub fn contains(pc: u64) -> bool {
    bounds().is_some_and(|(low, high)| low <= pc && pc < high)
}
