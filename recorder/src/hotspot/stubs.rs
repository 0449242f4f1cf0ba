//! HotSpot's stub routines, by name and range, from JVMTI `DynamicCodeGenerated` events: the
//! code-cache blob `StubRoutines` holds many stubs, and only their names say which one a pc is
//! in. The Java walk needs a few of them: the call stub (where native code enters Java, JNI
//! upcalls), the continuation stubs (a virtual thread being thawed: its stack is changing),
//! and stubs native code calls as leaves (`jni_fast_Get*Field`). Every other stub is kept by
//! its range, for the walk to follow its code to its `ret` (whether it makes an `enter()` frame
//! is read from its first bytes when needed, `cpu::makes_frame`).
//!
//! Events arrive off the signal handler (at start-up, replayed by `GenerateEvents`, and later
//! for stubs generated lazily). Each change publishes a new sorted table with one atomic
//! pointer swap; tables are never freed (a handler may still read one; they change a few times
//! in a run). Adapters (`I2C/C2I adapters`), of which a program makes thousands, are left out:
//! the walk knows them as frameless blobs.

#![deny(
    clippy::indexing_slicing,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::arithmetic_side_effects
)]

use std::sync::atomic::{AtomicPtr, Ordering};
use std::sync::Mutex;

/// What a stub is to the walk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StubKind {
    /// `call_stub`: native code (`JavaCalls::call_helper`) calling Java.
    CallStub,
    /// A continuation stub (`cont_thaw`, `cont_returnBarrier`, `cont_preempt`; JDK 21's
    /// `Cont thaw...` on x86_64, `Cont thaw` and `cont return barrier...` on aarch64): the
    /// virtual thread's frames are being moved between its stack and the heap.
    Continuation,
    /// A stub native code calls (`jni_fast_Get*Field`): a native leaf, its return address at
    /// `[sp]`.
    NativeLeaf,
    /// Another stub. Whether it makes an `enter()` frame is read from its first instruction
    /// when needed (`cpu::makes_frame`): the events `GenerateEvents` replays when the recording
    /// starts come before the fault hook that reads code safely.
    Other,
}

/// One stub's code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stub {
    /// First byte.
    pub start: u64,
    /// One past the last byte.
    pub end: u64,
    /// What it is.
    pub kind: StubKind,
}

/// The published table (sorted by start), or null.
static TABLE: AtomicPtr<Vec<Stub>> = AtomicPtr::new(std::ptr::null_mut());
/// Every stub recorded so far (off the handler).
static ALL: Mutex<Vec<Stub>> = Mutex::new(Vec::new());

/// The kind of stub `name`, or `None` for a stub the table leaves out.
fn kind_of(name: &str) -> Option<StubKind> {
    if name == "call_stub" {
        return Some(StubKind::CallStub);
    }
    if name.starts_with("cont_") || name.starts_with("Cont ") || name.starts_with("cont ") {
        return Some(StubKind::Continuation);
    }
    if name.starts_with("jni_fast_") {
        return Some(StubKind::NativeLeaf);
    }
    // Adapters and upcall stubs are found by their blobs; vtable and itable stubs, made one by
    // one as a program runs, end in an indirect jump that no walk follows.
    if name.starts_with("I2C/C2I adapters")
        || name.starts_with("upcall_stub")
        || name == "UpcallStub"
        || name == "vtable stub"
        || name == "itable stub"
    {
        return None;
    }
    Some(StubKind::Other)
}

/// Records stub `name` at `[start, start + len)` (a `DynamicCodeGenerated` event).
pub fn record(name: &str, start: u64, len: u64) {
    let Some(end) = start.checked_add(len).filter(|&e| e > start) else {
        return;
    };
    let Some(kind) = kind_of(name) else {
        return;
    };
    let stub = Stub { start, end, kind };
    let Ok(mut all) = ALL.lock() else {
        return;
    };
    if all.contains(&stub) {
        return; // replayed by GenerateEvents
    }
    // A range that holds recorded ones whole is a blob's (`StubRoutines (1)`, replayed by
    // `GenerateEvents` after the stubs inside it): the stubs stay, the blob is not kept.
    if all
        .iter()
        .any(|s| start <= s.start && s.end <= end && (s.start, s.end) != (start, end))
    {
        return;
    }
    // Otherwise a range reused by another stub replaces the old one.
    all.retain(|s| s.end <= start || s.start >= end);
    all.push(stub);
    all.sort_by_key(|s| s.start);
    let table = Box::into_raw(Box::new(all.clone()));
    // The previous table is left allocated: a handler may still be reading it.
    TABLE.store(table, Ordering::Release);
}

/// The stub holding `pc`, if it is one of the table's. Signal-safe: a binary search.
#[inline]
pub fn find(pc: u64) -> Option<Stub> {
    // SAFETY: a non-null pointer comes from `Box::into_raw` in `record` and is never freed.
    let table = unsafe { TABLE.load(Ordering::Acquire).as_ref() }?;
    let i = table.partition_point(|s| s.start <= pc);
    let stub = *table.get(i.checked_sub(1)?)?;
    (pc < stub.end).then_some(stub)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn stubs_are_found_by_pc_and_kind() {
        crate::fault::install().unwrap();
        let a = 0x9000;
        record("jbyte_arraycopy", a, 8);
        record("call_stub", 0x1000, 0x100);
        record("jni_fast_GetIntField", 0x2000, 0x40);
        record("cont_returnBarrier", 0x3000, 0x20);
        record("I2C/C2I adapters(0xabc)", 0x4000, 0x20);
        record("call_stub", 0x1000, 0x100); // a replay changes nothing
        assert_eq!(find(a + 3).unwrap().kind, StubKind::Other);
        assert_eq!(find(0x10ff).unwrap().kind, StubKind::CallStub);
        assert_eq!(find(0x1100), None);
        assert_eq!(find(0x2010).unwrap().kind, StubKind::NativeLeaf);
        assert_eq!(find(0x3000).unwrap().kind, StubKind::Continuation);
        // A blob replayed after the stubs inside it keeps them, and is not kept itself.
        record("StubRoutines (1)", 0x1000, 0x3000);
        assert_eq!(find(0x10ff).unwrap().kind, StubKind::CallStub);
        assert_eq!(find(0x2010).unwrap().kind, StubKind::NativeLeaf);
        assert_eq!(find(0x1800), None);
        // vtable and itable stubs are left out
        record("vtable stub", 0x5000, 0x20);
        assert_eq!(find(0x5000), None);
        assert_eq!(find(0x4000), None, "adapters are left out");
        assert_eq!(find(0xfff), None);
    }

    /// Each JDK's names of its continuation stubs, as its libjvm's `DynamicCodeGenerated`
    /// events give them (JDK 21 names its return barrier differently on each architecture).
    #[test]
    fn continuation_stubs_are_known_by_each_jdks_names() {
        for name in [
            "cont_thaw",                             // JDK 25
            "cont_returnBarrier",                    // JDK 25
            "Cont thaw return barrier",              // JDK 21, x86_64
            "cont return barrier",                   // JDK 21, aarch64
            "cont return barrier exception handler", // JDK 21, aarch64
        ] {
            assert_eq!(kind_of(name), Some(StubKind::Continuation), "{name}");
        }
        assert_eq!(kind_of("continuation"), Some(StubKind::Other));
    }
}
