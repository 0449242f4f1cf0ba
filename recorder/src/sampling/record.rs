//! One sample's record, as the handler writes it into a ring and the writer reads it back:
//! [`RECORD_HEADER_WORDS`] words (time, weight, packed meta, packed owner, virtual thread),
//! then the native pcs, then two words per Java frame (packed kind and bytecode index, then the
//! jmethodID). The packing functions are the one definition both sides use.

#![deny(
    clippy::indexing_slicing,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::arithmetic_side_effects
)]

use std::sync::atomic::AtomicU32;

use crate::hotspot::agct::CallFrame;
use crate::hotspot::javawalk::{kind, JavaFrame};
use crate::unwind::Stop;

/// Words before the native pcs in a record: time, weight, packed (agct code, stop, native
/// count), packed (slot index, recording epoch), the mounted virtual thread's id (0: none).
pub const RECORD_HEADER_WORDS: usize = 5;

/// The running recording's number: records carry it, and the writer keeps only its own, so a
/// sample taken while one recording stops never lands in the next.
pub static EPOCH: AtomicU32 = AtomicU32::new(0);

/// Record flag: the Java frames come from the VM walk (AsyncGetCallTrace failed).
pub const FLAG_VM_WALK: u8 = 1;
/// Record flag: the Java frames stop before the end of the thread's Java stack (the VM walk
/// was cut, or AsyncGetCallTrace walked a thread running a continuation).
pub const FLAG_JAVA_CUT: u8 = 2;

/// Packs the third record word.
pub fn pack_meta(agct_code: i32, stop: Stop, native_count: usize, flags: u8) -> u64 {
    u64::from(agct_code as u32)
        | (u64::from(stop as u8) << 32)
        | ((native_count as u64 & 0xffff) << 40)
        | (u64::from(flags) << 56)
}

/// Unpacks [`pack_meta`].
pub fn unpack_meta(word: u64) -> (i32, Stop, usize, u8) {
    (
        word as u32 as i32,
        Stop::from_u8((word >> 32) as u8),
        ((word >> 40) & 0xffff) as usize,
        (word >> 56) as u8,
    )
}

/// A Java frame's first record word: its kind and bytecode index.
pub fn pack_frame(kind: u8, bci: i32) -> u64 {
    (u64::from(kind) << 32) | u64::from(bci as u32)
}

/// Unpacks [`pack_frame`]: (kind, bci).
pub fn unpack_frame(word: u64) -> (u8, i32) {
    ((word >> 32) as u8, word as u32 as i32)
}

/// Packs the fourth record word: the slot's index and the recording's epoch.
pub fn pack_owner(slot_index: u32, epoch: u32) -> u64 {
    u64::from(slot_index) | (u64::from(epoch) << 32)
}

/// Unpacks [`pack_owner`].
pub fn unpack_owner(word: u64) -> (u32, u32) {
    (word as u32, (word >> 32) as u32)
}

/// The Java frames of a sample, as one of the two walks gave them.
#[derive(Clone, Copy)]
pub enum JavaFrames<'a> {
    /// The VM walk's frames, each with its kind.
    Vm(&'a [JavaFrame]),
    /// AsyncGetCallTrace's frames, with the kinds the VM walk agreed on.
    Agct(&'a [CallFrame], &'a [u8]),
}

impl JavaFrames<'_> {
    fn len(&self) -> usize {
        match self {
            JavaFrames::Vm(frames) => frames.len(),
            JavaFrames::Agct(frames, _) => frames.len(),
        }
    }

    /// The two record words of frame `index` (0 past the end).
    fn words(&self, index: usize) -> (u64, u64) {
        match self {
            JavaFrames::Vm(frames) => frames
                .get(index)
                .map_or((0, 0), |f| (pack_frame(f.kind, f.bci), f.method_id)),
            JavaFrames::Agct(frames, kinds) => frames.get(index).map_or((0, 0), |f| {
                let kind = kinds.get(index).copied().unwrap_or(kind::UNKNOWN);
                (pack_frame(kind, f.lineno), f.method_id as u64)
            }),
        }
    }
}

/// Everything one record holds.
pub struct Record<'a> {
    /// When the sample was taken (monotonic ns).
    pub time_ns: i64,
    /// The CPU time it stands for, ns.
    pub weight_ns: u64,
    /// The third word ([`pack_meta`]).
    pub meta: u64,
    /// The fourth word ([`pack_owner`]).
    pub owner: u64,
    /// The mounted virtual thread's id (0: none).
    pub vthread_id: u64,
    /// The native pcs, innermost first.
    pub pcs: &'a [u64],
    /// The Java frames, innermost first.
    pub java: JavaFrames<'a>,
}

impl Record<'_> {
    /// The record's length in words.
    pub fn words(&self) -> usize {
        RECORD_HEADER_WORDS
            .saturating_add(self.pcs.len())
            .saturating_add(self.java.len().saturating_mul(2))
    }

    /// Word `i` of the record.
    pub fn word(&self, i: usize) -> u64 {
        match i {
            0 => self.time_ns as u64,
            1 => self.weight_ns,
            2 => self.meta,
            3 => self.owner,
            4 => self.vthread_id,
            i => {
                let i = i.saturating_sub(RECORD_HEADER_WORDS);
                match self.pcs.get(i) {
                    Some(&pc) => pc,
                    None => {
                        let j = i.saturating_sub(self.pcs.len());
                        let (first, second) = self.java.words(j / 2);
                        if j % 2 == 0 {
                            first
                        } else {
                            second
                        }
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn meta_round_trips() {
        for (code, stop, n, flags) in [
            (-5, Stop::BadFrame, 3usize, FLAG_VM_WALK | FLAG_JAVA_CUT),
            (12, Stop::ReachedJava, 0, 0),
            (0, Stop::Depth, 1024, FLAG_JAVA_CUT),
        ] {
            assert_eq!(
                unpack_meta(pack_meta(code, stop, n, flags)),
                (code, stop, n, flags)
            );
        }
        for (k, bci) in [(kind::INLINED, 17), (kind::NATIVE, -3), (kind::UNKNOWN, -1)] {
            assert_eq!(unpack_frame(pack_frame(k, bci)), (k, bci));
        }
    }

    #[test]
    fn owner_round_trips() {
        for (index, epoch) in [(0, 0), (7, 3), (u32::MAX, u32::MAX)] {
            assert_eq!(unpack_owner(pack_owner(index, epoch)), (index, epoch));
        }
    }

    #[test]
    #[allow(clippy::unwrap_used)]
    fn a_record_is_read_back_word_for_word() {
        let ring = crate::sampling::ring::Ring::new(64);
        let java = [JavaFrame {
            method_id: 0x77,
            bci: 12,
            kind: kind::INLINED,
        }];
        let record = Record {
            time_ns: 5,
            weight_ns: 1_000_000,
            meta: pack_meta(0, Stop::ReachedJava, 2, FLAG_VM_WALK),
            owner: pack_owner(3, 1),
            vthread_id: 9,
            pcs: &[0x10, 0x20],
            java: JavaFrames::Vm(&java),
        };
        assert!(ring.push(record.words(), |i| record.word(i)));
        let mut out = Vec::new();
        assert!(ring.pop(&mut out));
        let expected = vec![
            5,
            1_000_000,
            record.meta,
            record.owner,
            9,
            0x10,
            0x20,
            pack_frame(kind::INLINED, 12),
            0x77,
        ];
        assert_eq!(out, expected);
        assert_eq!(out.len(), record.words());
    }
}
