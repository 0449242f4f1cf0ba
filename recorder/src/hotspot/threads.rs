//! `JavaThread` → OS thread id and stack bounds, through the offsets HotSpot describes:
//! `Thread::_osthread` (`JavaThread::_osthread` in older releases), `OSThread::_thread_id`,
//! `Thread::_stack_base` (the top) and `Thread::_stack_size`.

use super::vmstructs::VmStructs;
use crate::fault;

/// Where a thread's identity and stack are in HotSpot's structures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ThreadLayout {
    osthread: u64,
    thread_id: u64,
    stack_base: Option<u64>,
    stack_size: Option<u64>,
}

/// A 4-byte field read through the fault-safe word read.
fn read_u32(addr: u64) -> Option<u32> {
    if addr % 4 != 0 {
        return None;
    }
    let word = fault::read_u64(addr & !7)?;
    Some((word >> ((addr & 7) * 8)) as u32)
}

impl ThreadLayout {
    /// The layout, if the JVM describes the fields the thread id needs.
    pub fn new(v: &VmStructs) -> Option<ThreadLayout> {
        Some(ThreadLayout {
            osthread: v.offset_in_any(&["Thread", "JavaThread"], "_osthread")?,
            thread_id: v.offset("OSThread", "_thread_id")?,
            stack_base: v.offset_in_any(&["Thread", "JavaThread"], "_stack_base"),
            stack_size: v.offset_in_any(&["Thread", "JavaThread"], "_stack_size"),
        })
    }

    /// The OS thread id of the `JavaThread` at `thread` (`Thread.eetop`).
    pub fn tid(&self, thread: u64) -> Option<i32> {
        let osthread = fault::read_u64(thread.checked_add(self.osthread)?)?;
        if osthread == 0 {
            return None;
        }
        let tid = read_u32(osthread.checked_add(self.thread_id)?)? as i32;
        (tid > 0).then_some(tid)
    }

    /// The stack `[lo, hi)` of the `JavaThread` at `thread`, guard zones included.
    pub fn stack(&self, thread: u64) -> Option<(u64, u64)> {
        let hi = fault::read_u64(thread.checked_add(self.stack_base?)?)?;
        let size = fault::read_u64(thread.checked_add(self.stack_size?)?)?;
        let lo = hi.checked_sub(size)?;
        (size > 0 && lo > 0).then_some((lo, hi))
    }
}

#[cfg(test)]
mod tests {
    use super::super::vmstructs::Field;
    use super::*;

    #[test]
    fn reads_the_thread_id_and_stack_through_described_offsets() {
        fault::install().unwrap();
        let v = VmStructs::from_entries(&[
            ("Thread", "_osthread", Field::Offset(8)),
            ("OSThread", "_thread_id", Field::Offset(12)),
            ("Thread", "_stack_base", Field::Offset(16)),
            ("Thread", "_stack_size", Field::Offset(24)),
        ]);
        let layout = ThreadLayout::new(&v).unwrap();
        let osthread = [0u64, 4321u64 << 32];
        let thread = [0u64, osthread.as_ptr() as u64, 0x20_0000, 0x10_0000];
        let at = thread.as_ptr() as u64;
        assert_eq!(layout.tid(at), Some(4321));
        assert_eq!(layout.stack(at), Some((0x10_0000, 0x20_0000)));
        assert_eq!(layout.tid(8), None, "unreadable");
        let without_osthread = [0u64; 4];
        assert_eq!(layout.tid(without_osthread.as_ptr() as u64), None);
        assert!(ThreadLayout::new(&VmStructs::default()).is_none());
    }
}
