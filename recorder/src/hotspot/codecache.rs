//! Where HotSpot's code cache lies: `CodeCache::_low_bound` and `_high_bound`, the reserved
//! range of every code heap (JIT-compiled methods, the interpreter, stubs). Reserved once at
//! start-up, so a pc inside it is JVM-generated code whatever was committed or mapped since:
//! the code map never goes stale for JIT code, and a code cache on large pages (mapped as
//! `/anon_hugepage (deleted)`, which looks like a file) is never taken for a native library.

use std::sync::atomic::{AtomicU64, Ordering};

use super::vmstructs::VmStructs;

static LOW: AtomicU64 = AtomicU64::new(0);
static HIGH: AtomicU64 = AtomicU64::new(0);

/// The code cache's bounds from the JVM's own description, if it has them (after the VM has
/// initialized its code cache: at VM init or on attach).
pub fn read(v: &VmStructs) -> Option<(u64, u64)> {
    let low = v.static_u64("CodeCache", "_low_bound")?;
    let high = v.static_u64("CodeCache", "_high_bound")?;
    (low != 0 && low < high).then_some((low, high))
}

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
