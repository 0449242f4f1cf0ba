//! The interrupted thread's stack bounds and the walk's only memory read.

use crate::unwind::Memory;

/// Largest distance from the stack pointer to the top of the stack accepted for the bound taken
/// from the thread control block (glibc's default thread stack is 8 MiB; the JVM's 1 MiB).
const MAX_STACK_BYTES: u64 = 64 << 20;

/// `[lo, hi)`: addresses known to be mapped stack of the current thread.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StackBounds {
    lo: u64,
    hi: u64,
}

impl StackBounds {
    /// Bounds for the thread running the signal handler, interrupted at `sp`: from `sp` up to
    /// `pthread_self()`. glibc places the thread control block at the top of a pthread-created
    /// thread's stack mapping, so everything in between is this thread's mapped stack. If the
    /// control block is not just above `sp` (a user-provided stack, the primordial thread), the
    /// bounds are empty and the walk records the leaf pc only: never guess.
    pub fn of_current_thread(sp: u64, thread_control_block: u64) -> StackBounds {
        if thread_control_block > sp && thread_control_block - sp <= MAX_STACK_BYTES {
            StackBounds {
                lo: sp,
                hi: thread_control_block,
            }
        } else {
            StackBounds { lo: 0, hi: 0 }
        }
    }
}

impl Memory for StackBounds {
    #[inline]
    fn read_u64(&self, addr: u64) -> Option<u64> {
        if addr < self.lo || addr % 8 != 0 || addr.checked_add(8)? > self.hi {
            return None;
        }
        // SAFETY: `[lo, hi)` is the current thread's own mapped stack (see `of_current_thread`:
        // from the interrupted sp up to glibc's thread control block, which sits at the top of
        // the same mapping), the handler runs on that same thread, and the address is 8-aligned
        // with all 8 bytes inside the bounds. Stack memory above sp stays mapped while the
        // thread lives, and the thread is running this handler.
        Some(unsafe { std::ptr::read_volatile(addr as *const u64) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_only_inside_the_bounds() {
        let words = [1u64, 2, 3, 4];
        let lo = words.as_ptr() as u64;
        let b = StackBounds { lo, hi: lo + 32 };
        assert_eq!(b.read_u64(lo), Some(1));
        assert_eq!(b.read_u64(lo + 24), Some(4));
        assert_eq!(b.read_u64(lo + 32), None);
        assert_eq!(b.read_u64(lo + 4), None);
        assert_eq!(b.read_u64(lo - 8), None);
        assert_eq!(b.read_u64(u64::MAX - 7), None);
    }

    #[test]
    fn implausible_control_block_gives_empty_bounds() {
        assert_eq!(
            StackBounds::of_current_thread(0x1000, 0x800).read_u64(0x1000),
            None
        );
        assert_eq!(
            StackBounds::of_current_thread(0x1000, 0x1000 + (1 << 40)).read_u64(0x1000),
            None
        );
    }
}
