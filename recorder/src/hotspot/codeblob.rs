//! The code blob that holds a pc: the code heap whose committed range holds it, then its
//! segment map (one byte per segment: 0 at a block's first segment, otherwise how many
//! segments to step back, 0xFF for free space), then the used block's blob. This is how
//! HotSpot itself finds a blob (`CodeHeap::find_start`); every read is fault-safe, and the
//! result is checked (the blob must be used and hold the pc), so a heap changing meanwhile
//! gives `None` or a blob that the walk validates further.

#![deny(
    clippy::indexing_slicing,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::arithmetic_side_effects
)]

use super::layout::{CodeStart, JavaLayout};
use super::mem::{read_ptr, read_u8, read_uint};

/// Segment-map value of free space.
const FREE_SEGMENT: u8 = 0xff;
/// Most heaps HotSpot has (non-nmethod, profiled, non-profiled): a bound for the loop.
const MAX_HEAPS: i64 = 8;
/// Bound on segment-map steps (a step is up to 254 segments).
const MAX_STEPS: u32 = 4096;

/// What a blob is, from its name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BlobKind {
    /// A JIT-compiled Java method.
    Nmethod,
    /// A compiled wrapper of a native method.
    NativeNmethod,
    /// The template interpreter.
    Interpreter,
    /// An FFM upcall stub (`upcall_stub`; `UpcallStub` in some builds): native code calling a
    /// Java method through `java.lang.foreign`.
    Upcall,
    /// Anything else: stubs, adapters, buffers.
    Stub,
}

/// A code blob.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Blob {
    /// Its address (the `CodeBlob`).
    pub at: u64,
    /// Its kind.
    pub kind: BlobKind,
    /// Where its code starts.
    pub code_begin: u64,
    /// Its frame size in bytes (return address and saved rbp included), 0 if none.
    pub frame_bytes: u64,
    /// The first pc at which its frame is complete, if it says.
    pub frame_complete_pc: Option<u64>,
}

impl Blob {
    /// Whether its frame is complete (built by the prologue) at `pc`; false if it does not say.
    #[inline]
    pub fn frame_complete_at(&self, pc: u64) -> bool {
        self.frame_complete_pc.is_some_and(|c| pc >= c)
    }
}

/// The blob kind for a name read as two little-endian words.
pub fn kind_of_name(first: u64, second: Option<u64>) -> BlobKind {
    const NMETHOD: &[u8; 8] = b"nmethod\0";
    const NATIVE: &[u8; 16] = b"native nmethod\0\0";
    const INTERPRETER: &[u8; 12] = b"Interpreter\0";
    const UPCALL: &[u8; 11] = b"upcall_stub";
    const UPCALL_CAMEL: &[u8; 11] = b"UpcallStub\0";
    let bytes = |w: u64| w.to_le_bytes();
    if bytes(first) == *NMETHOD {
        return BlobKind::Nmethod;
    }
    let Some(second) = second else {
        return BlobKind::Stub;
    };
    let mut both = [0u8; 16];
    for (i, b) in bytes(first).into_iter().chain(bytes(second)).enumerate() {
        if let Some(slot) = both.get_mut(i) {
            *slot = b;
        }
    }
    if both.get(..15) == NATIVE.get(..15) {
        BlobKind::NativeNmethod
    } else if both.get(..12) == Some(&INTERPRETER[..]) {
        BlobKind::Interpreter
    } else if both.get(..11) == Some(&UPCALL[..]) || both.get(..11) == Some(&UPCALL_CAMEL[..]) {
        BlobKind::Upcall
    } else {
        BlobKind::Stub
    }
}

/// The name's first two words, read fault-safely at any alignment (a name is a string in
/// libjvm; the second word may be absent at a page end).
fn name_words(name: u64) -> Option<(u64, Option<u64>)> {
    if name == 0 {
        return Some((0, None));
    }
    let first = read_uint(name, 8)?;
    Some((first, name.checked_add(8).and_then(|a| read_uint(a, 8))))
}

impl JavaLayout {
    /// The blob that holds `pc`, if any.
    pub fn find_blob(&self, pc: u64) -> Option<Blob> {
        let array = read_ptr(self.heaps)?;
        let len = self.array_len.int(array)?.clamp(0, MAX_HEAPS);
        let data = read_ptr(array.checked_add(self.array_data)?)?;
        for i in 0..len {
            let heap = read_ptr(data.checked_add((i as u64).checked_mul(8)?)?)?;
            let low = read_ptr(heap.checked_add(self.heap_low)?)?;
            let high = read_ptr(heap.checked_add(self.heap_high)?)?;
            if !(low <= pc && pc < high) {
                continue;
            }
            return self.blob_in_heap(heap, low, pc);
        }
        None
    }

    fn blob_in_heap(&self, heap: u64, low: u64, pc: u64) -> Option<Blob> {
        let log2 = self.log2_segment_size.uint(heap)?;
        if !(4..=16).contains(&log2) {
            return None;
        }
        let segmap = read_ptr(heap.checked_add(self.segmap_low)?)?;
        let mut segment = pc.checked_sub(low)? >> log2;
        let mut step = read_u8(segmap.checked_add(segment)?)?;
        if step == FREE_SEGMENT {
            return None;
        }
        let mut steps = 0u32;
        while step > 0 {
            segment = segment.checked_sub(u64::from(step))?;
            step = read_u8(segmap.checked_add(segment)?)?;
            steps = steps.checked_add(1)?;
            if step == FREE_SEGMENT || steps > MAX_STEPS {
                return None;
            }
        }
        let block = low.checked_add(segment << log2)?;
        if read_u8(block.checked_add(self.block_used)?)? == 0 {
            return None;
        }
        let at = block.checked_add(self.heap_block_size)?;
        let size = u64::try_from(self.blob_size.int(at)?).ok()?;
        if pc >= at.checked_add(size)? {
            return None;
        }
        self.blob_at(at)
    }

    /// Where the name of `blob` is (a NUL-terminated string in libjvm).
    pub fn blob_name_ptr(&self, blob: &Blob) -> Option<u64> {
        read_ptr(blob.at.checked_add(self.blob_name)?)
    }

    /// One past the last byte of `blob`.
    pub fn blob_end(&self, blob: &Blob) -> Option<u64> {
        let size = u64::try_from(self.blob_size.int(blob.at)?).ok()?;
        blob.at.checked_add(size)
    }

    /// The blob at `at` (already known to be one).
    pub fn blob_at(&self, at: u64) -> Option<Blob> {
        let code_begin = match self.code_start {
            CodeStart::Pointer(o) => read_ptr(at.checked_add(o)?)?,
            CodeStart::Offset(f) => at.checked_add(u64::try_from(f.int(at)?).ok()?)?,
        };
        // -1: the blob does not say (buffers, many stubs).
        let frame_words = self.frame_size.int(at)?;
        let frame_bytes = u64::try_from(frame_words).unwrap_or(0).checked_mul(8)?;
        let complete = self.frame_complete.int(at)?;
        let frame_complete_pc = u64::try_from(complete)
            .ok()
            .and_then(|c| code_begin.checked_add(c));
        let (first, second) = name_words(read_ptr(at.checked_add(self.blob_name)?)?)?;
        Some(Blob {
            at,
            kind: kind_of_name(first, second),
            code_begin,
            frame_bytes,
            frame_complete_pc,
        })
    }
}

#[cfg(test)]
#[allow(clippy::indexing_slicing, clippy::unwrap_used)]
mod tests {
    use super::*;

    fn words(s: &[u8]) -> (u64, Option<u64>) {
        let mut b = [0u8; 16];
        b[..s.len()].copy_from_slice(s);
        (
            u64::from_le_bytes(b[..8].try_into().unwrap()),
            Some(u64::from_le_bytes(b[8..].try_into().unwrap())),
        )
    }

    #[test]
    fn blob_kinds_come_from_their_names() {
        let kind = |s: &[u8]| {
            let (a, b) = words(s);
            kind_of_name(a, b)
        };
        assert_eq!(kind(b"nmethod\0"), BlobKind::Nmethod);
        assert_eq!(kind(b"native nmethod\0"), BlobKind::NativeNmethod);
        assert_eq!(kind(b"Interpreter\0"), BlobKind::Interpreter);
        assert_eq!(kind(b"nmethods\0"), BlobKind::Stub);
        assert_eq!(kind(b"upcall_stub\0"), BlobKind::Upcall);
        assert_eq!(kind(b"upcall_stub_(I)V"), BlobKind::Upcall);
        assert_eq!(kind(b"UpcallStub\0"), BlobKind::Upcall);
        assert_eq!(kind(b"StubRoutines (1)"), BlobKind::Stub);
        assert_eq!(kind(b"vtable chunks\0"), BlobKind::Stub);
        assert_eq!(kind_of_name(0, None), BlobKind::Stub);
    }
}
