//! Tables of pages that are made on demand outside the signal handler, leaked, and read by the
//! handler without locks: the slot table ([`super::slots`]) and the counter descriptor table
//! ([`super::perf`]). A page, once published, is never freed or replaced.

#![deny(
    clippy::indexing_slicing,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::arithmetic_side_effects
)]

use std::sync::atomic::{AtomicPtr, Ordering};

/// The page `entry` points to, if it was made. Signal-safe: one load.
#[inline]
pub fn page<T>(entry: &AtomicPtr<T>) -> Option<&'static T> {
    // SAFETY: a non-null entry was published by `page_or_make` from `Box::leak`, and pages are
    // never freed.
    unsafe { entry.load(Ordering::Acquire).as_ref() }
}

/// The page `entry` points to, made by `make` if there is none yet (not in the handler: it
/// allocates). Two threads may make one at once: the first published is kept, the other freed.
pub fn page_or_make<T>(entry: &AtomicPtr<T>, make: impl FnOnce() -> Box<T>) -> Option<&'static T> {
    if entry.load(Ordering::Acquire).is_null() {
        let made: *mut T = Box::into_raw(make());
        if entry
            .compare_exchange(
                std::ptr::null_mut(),
                made,
                Ordering::AcqRel,
                Ordering::Acquire,
            )
            .is_err()
        {
            // SAFETY: `made` comes from `Box::into_raw` just above and lost the race: it was
            // never published, nobody else has it.
            drop(unsafe { Box::from_raw(made) });
        }
    }
    page(entry)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[allow(clippy::unwrap_used)]
    fn a_page_is_made_once_and_kept() {
        let entry: AtomicPtr<[u32; 4]> = AtomicPtr::new(std::ptr::null_mut());
        assert!(page(&entry).is_none());
        let first = page_or_make(&entry, || Box::new([1; 4])).unwrap();
        let again = page_or_make(&entry, || Box::new([2; 4])).unwrap();
        assert!(std::ptr::eq(first, again));
        assert_eq!(page(&entry), Some(&[1; 4]));
    }
}
