//! Which virtual thread a carrier thread runs (JDK 19+). HotSpot keeps the mounted thread's
//! `java.lang.Thread` in `JavaThread::_vthread` and the carrier's own in `_threadObj`, both
//! `OopHandle`s (a pointer to a slot holding the object's address); when they differ, a virtual
//! thread is mounted, and its `threadId()` is its `tid` field. HotSpot does not describe where
//! `java.lang.Thread.tid` lies in the object: [`tid_offset`] finds it on live threads at start-up,
//! where JNI gives each thread's id, and the offset must be the only one that holds the id of
//! every thread tried; where libjvm's symbol table has HotSpot's own
//! (`java_lang_Thread::_tid_offset`), that is taken instead, and the handles are decoded as
//! the collector stores them ([`super::oops`]: colored pointers under generational ZGC, where
//! no measured offset can match). `tid` never changes, so a read of an object a collector is
//! copying gives the same value from either copy; the handle is read again after the id, which
//! must still name the same object.

#![deny(
    clippy::indexing_slicing,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::arithmetic_side_effects
)]

use std::sync::OnceLock;

use super::mem::read_ptr;
use super::oops::Oops;
use super::vmstructs::VmStructs;

/// Farthest offset (bytes) from an object's start where the `tid` field is looked for.
const MAX_TID_OFFSET: u64 = 512;

/// Where a carrier's mounted virtual thread and its id are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VThreadLayout {
    /// `JavaThread::_vthread` (an `OopHandle`).
    vthread: u64,
    /// `JavaThread::_threadObj` (an `OopHandle`).
    thread_obj: u64,
    /// `OopHandle::_obj`: the slot holding the object's address.
    handle_obj: u64,
    /// Offset of `java.lang.Thread.tid` in the object (HotSpot's, or measured).
    tid: u64,
    /// How the handles' slots hold the objects (`None`: plain addresses).
    oops: Option<Oops>,
}

static LAYOUT: OnceLock<VThreadLayout> = OnceLock::new();

/// The object address an `OopHandle` at `addr` refers to (0: none).
fn handle_target(addr: u64, handle_obj: u64, oops: Option<Oops>) -> Option<u64> {
    let slot = read_ptr(addr.checked_add(handle_obj)?)?;
    if slot == 0 || slot % 8 != 0 {
        return None;
    }
    let raw = read_ptr(slot)?;
    match oops {
        Some(oops) => oops.handle(raw),
        None => Some(raw),
    }
}

/// The offset of `tid` in a `java.lang.Thread`: `threads` are (object address, `threadId()`)
/// of live threads with distinct ids; the offset is the only 8-byte-aligned one below
/// 512 bytes that holds its thread's id in every object. `None` with fewer than two
/// threads, or when no offset or more than one fits.
pub fn tid_offset(threads: &[(u64, i64)]) -> Option<u64> {
    let mut ids: Vec<i64> = threads.iter().map(|&(_, id)| id).collect();
    ids.sort_unstable();
    ids.dedup();
    if ids.len() < 2 || ids.len() != threads.len() {
        return None;
    }
    let mut found = None;
    for offset in (8..MAX_TID_OFFSET).step_by(8) {
        let fits = threads.iter().all(|&(object, id)| {
            object % 8 == 0
                && object
                    .checked_add(offset)
                    .and_then(read_ptr)
                    .is_some_and(|v| v as i64 == id)
        });
        if fits {
            if found.is_some() {
                return None;
            }
            found = Some(offset);
        }
    }
    found
}

/// Sets the layout: the handles' offsets from `v`, the `tid` offset measured by [`tid_offset`].
/// `false` if this JVM has no virtual threads (no `JavaThread::_vthread`).
pub fn init(v: &VmStructs, tid: u64) -> bool {
    init_with(v, tid, None)
}

/// Sets the layout with HotSpot's own `tid` offset and the collector's encoding of the
/// handles' objects; `false` if this JVM has no virtual threads.
pub fn init_decoded(v: &VmStructs, tid: u64, oops: Oops) -> bool {
    init_with(v, tid, Some(oops))
}

fn init_with(v: &VmStructs, tid: u64, oops: Option<Oops>) -> bool {
    let layout = (|| {
        Some(VThreadLayout {
            vthread: v.offset("JavaThread", "_vthread")?,
            thread_obj: v.offset("JavaThread", "_threadObj")?,
            handle_obj: v.offset("OopHandle", "_obj").unwrap_or(0),
            tid,
            oops,
        })
    })();
    match layout {
        Some(layout) => LAYOUT.set(layout).is_ok() || LAYOUT.get() == Some(&layout),
        None => false,
    }
}

/// Whether the virtual-thread lookup is set up.
pub fn ready() -> bool {
    LAYOUT.get().is_some()
}

/// The `threadId()` of the virtual thread mounted on the `JavaThread` at `thread`, if one is
/// (and the layout is known). Fault-safe reads only: callable from the signal handler.
#[inline]
pub fn mounted_id(thread: u64) -> Option<i64> {
    let layout = LAYOUT.get()?;
    mounted_id_with(layout, thread)
}

fn mounted_id_with(layout: &VThreadLayout, thread: u64) -> Option<i64> {
    let vthread = handle_target(
        thread.checked_add(layout.vthread)?,
        layout.handle_obj,
        layout.oops,
    )?;
    let carrier = handle_target(
        thread.checked_add(layout.thread_obj)?,
        layout.handle_obj,
        layout.oops,
    )?;
    if vthread == 0 || vthread == carrier || vthread % 8 != 0 {
        return None;
    }
    let id = read_ptr(vthread.checked_add(layout.tid)?)? as i64;
    // The handle still names the same object: a collector that moved it meanwhile (the thread
    // may be in native code during a pause) could have left other data at the old address.
    let again = handle_target(
        thread.checked_add(layout.vthread)?,
        layout.handle_obj,
        layout.oops,
    )?;
    (id > 0 && again == vthread).then_some(id)
}

#[cfg(test)]
#[allow(
    clippy::unwrap_used,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects
)]
mod tests {
    use super::*;
    use crate::fault;

    /// A fake `java.lang.Thread` with `tid` at byte 24 and other longs around it.
    fn object(id: i64) -> Box<[u64; 8]> {
        Box::new([0x1, 0x2, 7, id as u64, 5, 1, 0, 9])
    }

    #[test]
    fn finds_the_tid_offset_that_fits_every_thread() {
        fault::install().unwrap();
        let (a, b, c) = (object(1), object(23), object(24));
        let at = |o: &[u64; 8]| o.as_ptr() as u64;
        assert_eq!(
            tid_offset(&[(at(&a), 1), (at(&b), 23), (at(&c), 24)]),
            Some(24)
        );
        // Thread 1 alone also fits offset 40 (a field holding 1): ambiguous, and one thread is
        // not enough.
        assert_eq!(tid_offset(&[(at(&a), 1)]), None);
        // Ids that fit nowhere (the addresses are not the objects: a tagged handle).
        assert_eq!(tid_offset(&[(at(&b) + 3, 23), (at(&c) + 3, 24)]), None);
        assert_eq!(tid_offset(&[(at(&b), 23), (at(&c), 23)]), None, "same ids");
    }

    #[test]
    fn reads_the_mounted_virtual_threads_id() {
        fault::install().unwrap();
        let carrier = object(3);
        let virtual_thread = object(1042);
        let carrier_slot = Box::new(carrier.as_ptr() as u64);
        let virtual_slot = Box::new(virtual_thread.as_ptr() as u64);
        let slot_addr = |s: &u64| s as *const u64 as u64;
        // A JavaThread with _threadObj at 8 and _vthread at 16.
        let mounted = [0, slot_addr(&carrier_slot), slot_addr(&virtual_slot)];
        let unmounted = [0, slot_addr(&carrier_slot), slot_addr(&carrier_slot)];
        let layout = VThreadLayout {
            vthread: 16,
            thread_obj: 8,
            handle_obj: 0,
            tid: 24,
            oops: None,
        };
        assert_eq!(
            mounted_id_with(&layout, mounted.as_ptr() as u64),
            Some(1042)
        );
        assert_eq!(mounted_id_with(&layout, unmounted.as_ptr() as u64), None);
        assert_eq!(mounted_id_with(&layout, 8), None, "unreadable thread");
        let no_vthread = [0, slot_addr(&carrier_slot), 0];
        assert_eq!(mounted_id_with(&layout, no_vthread.as_ptr() as u64), None);
    }
}
