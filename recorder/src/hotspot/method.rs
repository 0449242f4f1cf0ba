//! A `Method*` → its jmethodID (the id AsyncGetCallTrace and JVMTI use), its bytecode index
//! for a bytecode pointer, and whether it is native. The jmethodID is read where HotSpot keeps
//! it: the holder class's `_methods_jmethod_ids` array (length first), at the method's id
//! number; the agent creates the ids of every class when it is prepared, as
//! AsyncGetCallTrace requires. A pointer that is not a method fails one of the reads or
//! checks and gives `None`.

#![deny(
    clippy::indexing_slicing,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::arithmetic_side_effects
)]

use super::layout::JavaLayout;
use super::mem::read_ptr;

/// `JVM_ACC_NATIVE`.
const ACC_NATIVE: u64 = 0x0100;
/// Bound on a class's method count (u2 id numbers).
const MAX_IDS: u64 = 1 << 16;

impl JavaLayout {
    /// The jmethodID of `method`, if it has one.
    pub fn jmethod_id(&self, method: u64) -> Option<u64> {
        if method == 0 || method % 8 != 0 {
            return None;
        }
        let const_method = read_ptr(method.checked_add(self.const_method)?)?;
        if const_method == 0 || const_method % 8 != 0 {
            return None;
        }
        let constants = read_ptr(const_method.checked_add(self.constants)?)?;
        if constants == 0 || constants % 8 != 0 {
            return None;
        }
        let idnum = self.method_idnum.uint(const_method)?;
        let holder = read_ptr(constants.checked_add(self.pool_holder)?)?;
        if holder == 0 || holder % 8 != 0 {
            return None;
        }
        let ids = read_ptr(holder.checked_add(self.jmethod_ids)?)?;
        if ids == 0 || ids % 8 != 0 {
            return None;
        }
        let len = read_ptr(ids)?;
        if idnum >= len || len > MAX_IDS {
            return None;
        }
        let id = read_ptr(ids.checked_add(idnum.checked_add(1)?.checked_mul(8)?)?)?;
        (id != 0).then_some(id)
    }

    /// Whether `method` is native (read from its access flags).
    pub fn is_native(&self, method: u64) -> Option<bool> {
        Some(self.access_flags.uint(method)? & ACC_NATIVE != 0)
    }

    /// The bytecode index of bytecode pointer `bcp` in `method`, if it points into the
    /// method's bytecodes.
    pub fn bci_of(&self, method: u64, bcp: u64) -> Option<i32> {
        let const_method = read_ptr(method.checked_add(self.const_method)?)?;
        let start = const_method.checked_add(self.const_method_size)?;
        let size = self.code_size.uint(const_method)?;
        let bci = bcp.checked_sub(start)?;
        (bci < size).then(|| i32::try_from(bci).ok()).flatten()
    }
}
