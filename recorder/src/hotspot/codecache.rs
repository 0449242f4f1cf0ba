//! Where HotSpot's code cache lies: `CodeCache::_low_bound` and `_high_bound`, the reserved
//! range of every code heap (JIT-compiled methods, the interpreter, stubs), read from the JVM's
//! own description. The agent publishes it to the walks in [`crate::unwind::jvm_code`].

use super::vmstructs::VmStructs;

/// The code cache's bounds from the JVM's own description, if it has them (after the VM has
/// initialized its code cache: at VM init or on attach).
pub fn read(v: &VmStructs) -> Option<(u64, u64)> {
    let low = v.static_u64("CodeCache", "_low_bound")?;
    let high = v.static_u64("CodeCache", "_high_bound")?;
    (low != 0 && low < high).then_some((low, high))
}
