//! A thread's stack as the handler may use it: its exact bounds, the part below them that is
//! not writable (HotSpot's guard zones), and the walk's only memory read.
//!
//! Bounds are taken off the handler: on the thread itself at ThreadStart (`pthread_getattr_np`),
//! or for threads that ran before an attach from HotSpot's `Thread::_stack_base` and
//! `_stack_size` (see [`crate::hotspot`]). Both include the guard zones at the low end, which
//! fault when touched: [`ThreadStack::new`] finds where they end by reading page by page
//! (reads that fault are recovered, see [`crate::fault`]).

#![deny(
    clippy::indexing_slicing,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::arithmetic_side_effects
)]

use std::sync::atomic::{AtomicU64, Ordering};

use crate::fault;
use crate::unwind::Memory;

const PAGE_BYTES: u64 = 4096;

/// Most pages searched for the end of the guard zones (HotSpot's are 4 to 6 pages on x86_64;
/// `-XX:StackRedPages` and the like may raise them).
const MAX_GUARD_PAGES: u64 = 256;

/// Stack the handler needs below the interrupted code's: the kernel's signal frame is already
/// on the stack when it runs; this is for the handler, the walk and AsyncGetCallTrace, with a
/// wide margin (a sample died with 7.5 KB left and survived with 9.5 KB before this check).
pub const HANDLER_STACK_BYTES: u64 = 32 * 1024;

/// A thread's stack: `[lo, hi)` is the whole mapping, `[usable_lo, hi)` the part that may be
/// read and written. All zero when unknown.
#[derive(Debug, Default)]
pub struct ThreadStack {
    lo: AtomicU64,
    hi: AtomicU64,
    usable_lo: AtomicU64,
}

impl ThreadStack {
    /// Unknown bounds: the handler then records the leaf pc only.
    pub fn unknown() -> ThreadStack {
        ThreadStack::default()
    }

    /// The stack `[lo, hi)` of a live thread, with its guard zones measured. Off the handler.
    pub fn new(lo: u64, hi: u64) -> ThreadStack {
        if lo >= hi {
            return ThreadStack::unknown();
        }
        let mut usable_lo = lo.next_multiple_of(PAGE_BYTES);
        let mut pages = 0;
        while usable_lo < hi && fault::read_u64(usable_lo).is_none() && pages < MAX_GUARD_PAGES {
            usable_lo = usable_lo.saturating_add(PAGE_BYTES);
            pages = pages.saturating_add(1);
        }
        if usable_lo >= hi || pages >= MAX_GUARD_PAGES {
            return ThreadStack::unknown();
        }
        ThreadStack {
            lo: AtomicU64::new(lo),
            hi: AtomicU64::new(hi),
            usable_lo: AtomicU64::new(usable_lo),
        }
    }

    /// The calling thread's stack (`pthread_getattr_np`). Not signal-safe.
    pub fn of_current_thread() -> ThreadStack {
        crate::os::current_stack_bounds()
            .map_or_else(ThreadStack::unknown, |(lo, hi)| ThreadStack::new(lo, hi))
    }

    /// Copies `other` (a recycled slot's new thread).
    pub fn set(&self, other: &ThreadStack) {
        self.hi.store(0, Ordering::Release);
        self.lo
            .store(other.lo.load(Ordering::Acquire), Ordering::Release);
        self.usable_lo
            .store(other.usable_lo.load(Ordering::Acquire), Ordering::Release);
        self.hi
            .store(other.hi.load(Ordering::Acquire), Ordering::Release);
    }

    /// `(lo, usable_lo, hi)`, for reports and tests.
    pub fn range(&self) -> (u64, u64, u64) {
        (
            self.lo.load(Ordering::Acquire),
            self.usable_lo.load(Ordering::Acquire),
            self.hi.load(Ordering::Acquire),
        )
    }

    /// Bytes of usable stack below `here` (an address in the running handler's frame): 0 if
    /// `here` is already in the guard zones (HotSpot unprotects them while it handles a stack
    /// overflow); `None` if `here` is not on this stack (an alternate signal stack, a fiber,
    /// unknown bounds).
    #[inline]
    pub fn headroom(&self, here: u64) -> Option<u64> {
        let (lo, usable_lo, hi) = self.range();
        (lo <= here && here < hi).then(|| here.saturating_sub(usable_lo))
    }

    /// Whether too little stack is left below `here` (an address in the running handler's
    /// frame) for the walks and AsyncGetCallTrace ([`HANDLER_STACK_BYTES`]): the headroom step
    /// of a sample, which is skipped then. Not when `here` is on another stack.
    #[inline]
    pub fn lacks_headroom(&self, here: u64) -> bool {
        self.headroom(here)
            .is_some_and(|left| left < HANDLER_STACK_BYTES)
    }

    /// What the walk may read for code interrupted at `sp`: `[sp, hi)` if `sp` is on this
    /// stack; `None` otherwise (the code runs on another stack: keep its pc only).
    #[inline]
    pub fn bounds_from(&self, sp: u64) -> Option<StackBounds> {
        let (_, usable_lo, hi) = self.range();
        (usable_lo <= sp && sp < hi).then_some(StackBounds { lo: sp, hi })
    }
}

/// `[lo, hi)`: addresses of the current thread's stack the walk may read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StackBounds {
    lo: u64,
    hi: u64,
}

impl Memory for StackBounds {
    #[inline]
    fn read_u64(&self, addr: u64) -> Option<u64> {
        if addr < self.lo || addr % 8 != 0 || addr.checked_add(8)? > self.hi {
            return None;
        }
        // Inside the thread's own stack, above the interrupted sp; a page that code made
        // unreadable there (mprotect) faults and is recovered.
        fault::read_u64(addr)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::arithmetic_side_effects)]
mod tests {
    use super::*;

    #[test]
    fn reads_only_inside_the_bounds() {
        fault::install().unwrap();
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
    fn guard_pages_at_the_bottom_are_not_usable() {
        fault::install().unwrap();
        let size = 16 * PAGE_BYTES as usize;
        // SAFETY: a fresh anonymous mapping used only here and unmapped at the end.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                size,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        assert_ne!(base, libc::MAP_FAILED);
        // SAFETY: the first three pages of our own mapping become a guard zone.
        let rc = unsafe { libc::mprotect(base, 3 * PAGE_BYTES as usize, libc::PROT_NONE) };
        assert_eq!(rc, 0);
        let lo = base as u64;
        let stack = ThreadStack::new(lo, lo + size as u64);
        assert_eq!(stack.range(), (lo, lo + 3 * PAGE_BYTES, lo + size as u64));
        assert_eq!(stack.headroom(lo + 4 * PAGE_BYTES), Some(PAGE_BYTES));
        assert_eq!(
            stack.headroom(lo + PAGE_BYTES),
            Some(0),
            "in the guard zone"
        );
        assert_eq!(stack.headroom(lo - 8), None, "below the stack");
        assert!(
            stack.bounds_from(lo + size as u64).is_none(),
            "above the stack"
        );
        assert!(stack.bounds_from(lo + 5 * PAGE_BYTES).is_some());
        // SAFETY: unmapping the mapping made above.
        unsafe { libc::munmap(base, size) };
    }

    #[test]
    fn the_current_thread_has_a_stack_with_this_frame_on_it() {
        fault::install().unwrap();
        let here = 0u64;
        let at = &here as *const u64 as u64;
        let stack = ThreadStack::of_current_thread();
        assert!(
            stack.headroom(at).is_some_and(|h| h > 0),
            "{stack:?} {at:#x}"
        );
        assert!(ThreadStack::unknown().bounds_from(at).is_none());
    }
}
