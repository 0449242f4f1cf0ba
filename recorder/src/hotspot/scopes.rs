//! What Java code a pc of an nmethod stands for: its PcDesc (the table from code offsets to
//! debug-information offsets) and the chain of scopes there, innermost first: each scope
//! names a method and a bytecode index; every scope but the last was inlined into the next.
//! The scope data is HotSpot's compressed stream (UNSIGNED5 from JDK 21; before, the same
//! code without the excluded zero byte). A chain must end at the nmethod's own method, or it
//! is not trusted.

#![deny(
    clippy::indexing_slicing,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::arithmetic_side_effects
)]

use super::codeblob::Blob;
use super::layout::{DebugInfo, JavaLayout};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use super::cpu;
use super::mem::{read_ptr, read_u8};

/// Most scopes read for one pc (deeper inlining is cut, and the chain not trusted).
pub const MAX_SCOPES: usize = 64;
/// Most PcDescs an nmethod may have for the search to run (a bound on garbage sizes).
const MAX_PC_DESCS: u64 = 1 << 24;

/// What [`JavaLayout::leaf_call_descs`] and its caller made of a leaf call's return address
/// without debug information, by index (for the summary).
pub const LEAF_CALLS: [&str; 6] = [
    "inlined scopes the PcDescs around the call share",
    "method alone: no debug information between safepoints",
    "method alone: no PcDesc before or after the call",
    "method alone: code not straight from the one before to the call",
    "method alone: their scopes not ending at the method",
    "method alone: they share no inlined scope",
];

/// `DebugNonSafepoints` was on when the recording started (from the command line: every
/// nmethod has PcDescs between safepoints). Set later (by another agent), it would hold only for
/// the methods compiled since, so it is not read again.
static FLAG_AT_START: AtomicBool = AtomicBool::new(false);

/// Whether HotSpot recorded debug information between safepoints in every nmethod: our
/// CompiledMethodLoad events were on from the agent's load, before the first compilation, and
/// the command line left `DebugNonSafepoints` at its default (HotSpot's
/// `compute_recording_non_safepoints`: with JVMTI looking at compiled code, a default flag is
/// taken as true).
static RECORDED_FROM_START: AtomicBool = AtomicBool::new(false);

/// Our CompiledMethodLoad events are on from the agent's load (set by the agent).
static EVENTS_FROM_START: AtomicBool = AtomicBool::new(false);

/// The agent enabled CompiledMethodLoad at load, before any compilation.
pub fn set_recorded_from_start() {
    EVENTS_FROM_START.store(true, Ordering::Release);
}

/// Finds the `DebugNonSafepoints` flag in the JVM's flag table, once the fault hook is
/// installed (the table is read through it), before the first sample; and whether every
/// nmethod has debug information between safepoints by our events.
pub fn find_non_safepoint_flag(v: &super::vmstructs::VmStructs) {
    let on = super::flags::bool_flag(v, "DebugNonSafepoints") == Some(true);
    FLAG_AT_START.store(on, Ordering::Release);
    let default = super::flags::flag_is_default(v, "DebugNonSafepoints") == Some(true);
    RECORDED_FROM_START.store(
        default && EVENTS_FROM_START.load(Ordering::Acquire),
        Ordering::Release,
    );
}

/// Where the nmethods' debug information between safepoints comes from, for the summary: our
/// CompiledMethodLoad events from the start, `-XX:+DebugNonSafepoints`, or none (`None`).
pub fn non_safepoints() -> Option<&'static str> {
    if RECORDED_FROM_START.load(Ordering::Acquire) {
        Some("on (the agent's CompiledMethodLoad events, from its load)")
    } else if FLAG_AT_START.load(Ordering::Acquire) {
        Some("on (-XX:+DebugNonSafepoints)")
    } else {
        None
    }
}

/// Leaf calls' return addresses without debug information, by outcome ([`LEAF_CALLS`]).
pub static LEAF_CALL_COUNTS: [AtomicU64; LEAF_CALLS.len()] =
    [const { AtomicU64::new(0) }; LEAF_CALLS.len()];

/// Counts one outcome of [`LEAF_CALLS`].
pub fn count_leaf_call(outcome: usize) {
    if let Some(c) = LEAF_CALL_COUNTS.get(outcome) {
        c.fetch_add(1, Ordering::Relaxed);
    }
}

/// One scope: a `Method*` and a bytecode index (-1: the method's entry).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Scope {
    /// The `Method*`.
    pub method: u64,
    /// The bytecode index.
    pub bci: i32,
}

/// A PcDesc found in an nmethod: where its scopes start, with the tables they are read from.
pub struct PcDesc {
    tables: Tables,
    scope_offset: i64,
}

/// The ranges of an nmethod's debug information.
#[derive(Clone, Copy)]
struct Tables {
    pcs_begin: u64,
    pcs_end: u64,
    scopes: u64,
    metadata: u64,
}

/// Reads one compressed unsigned int at `*pos` (and moves past it). `excluded` is the number
/// of excluded low byte values: 1 for UNSIGNED5, 0 before.
pub fn read_compressed(
    mut byte_at: impl FnMut(u64) -> Option<u8>,
    pos: &mut u64,
    excluded: u32,
) -> Option<u32> {
    const LG_H: u32 = 6;
    const MAX_LENGTH: u32 = 5;
    let low = 256u32.checked_sub(excluded)?.checked_sub(1 << LG_H)?;
    let b0 = u32::from(byte_at(*pos)?);
    let mut sum = b0.checked_sub(excluded)?;
    *pos = pos.checked_add(1)?;
    if sum < low {
        return Some(sum);
    }
    let mut shift = LG_H;
    for i in 1..MAX_LENGTH {
        let b = u32::from(byte_at(*pos)?);
        *pos = pos.checked_add(1)?;
        let digit = b.checked_sub(excluded)?;
        sum = sum.wrapping_add(digit.checked_shl(shift).unwrap_or(0));
        if digit < low || i == MAX_LENGTH.checked_sub(1)? {
            return Some(sum);
        }
        shift = shift.checked_add(LG_H)?;
    }
    None
}

/// What two scope chains (innermost first, both ending at the same method) share, from the
/// outermost in: the scopes equal in both (method and bci), then the first whose method is the
/// same but whose bci differs, with the bci unknown (-1); written into `out` innermost first.
/// The count (at least 1 when both end at one method).
pub fn shared_scopes(a: &[Scope], b: &[Scope], out: &mut [Scope; MAX_SCOPES]) -> usize {
    let mut shared = 0usize;
    let mut differs = false;
    for (sa, sb) in a.iter().rev().zip(b.iter().rev()) {
        if sa.method != sb.method {
            break;
        }
        shared = shared.saturating_add(1);
        if sa.bci != sb.bci {
            differs = true;
            break;
        }
    }
    let start = a.len().saturating_sub(shared);
    let Some(suffix) = a.get(start..) else {
        return 0;
    };
    for (slot, scope) in out.iter_mut().zip(suffix) {
        *slot = *scope;
    }
    if differs {
        if let Some(first) = out.first_mut() {
            first.bci = -1;
        }
    }
    suffix.len().min(MAX_SCOPES)
}

impl JavaLayout {
    fn tables(&self, nm: u64) -> Option<Tables> {
        match self.debug_info {
            DebugInfo::InBlob {
                scopes_data_begin,
                scopes_pcs_offset,
                dependencies_offset,
                metadata_offset,
            } => {
                let at = |f: super::mem::Field| -> Option<u64> {
                    nm.checked_add(u64::try_from(f.int(nm)?).ok()?)
                };
                Some(Tables {
                    pcs_begin: at(scopes_pcs_offset)?,
                    pcs_end: at(dependencies_offset)?,
                    scopes: read_ptr(nm.checked_add(scopes_data_begin)?)?,
                    metadata: at(metadata_offset)?,
                })
            }
            DebugInfo::Immutable {
                immutable_data,
                scopes_pcs_offset,
                scopes_data_offset,
                mutable_data,
                relocation_size,
            } => {
                let data = read_ptr(nm.checked_add(immutable_data)?)?;
                let at = |f: super::mem::Field| -> Option<u64> {
                    data.checked_add(u64::try_from(f.int(nm)?).ok()?)
                };
                let mutable = read_ptr(nm.checked_add(mutable_data)?)?;
                Some(Tables {
                    pcs_begin: at(scopes_pcs_offset)?,
                    pcs_end: at(scopes_data_offset)?,
                    scopes: at(scopes_data_offset)?,
                    metadata: mutable.checked_add(u64::try_from(relocation_size.int(nm)?).ok()?)?,
                })
            }
        }
    }

    /// The number of PcDescs in `tables`, and the address of the `i`th: `None` if the table
    /// is not plausible.
    fn pc_descs(&self, tables: &Tables) -> Option<u64> {
        let size = self.pc_desc_size;
        if size == 0 || tables.pcs_end < tables.pcs_begin {
            return None;
        }
        let count = tables
            .pcs_end
            .checked_sub(tables.pcs_begin)?
            .checked_div(size)?;
        (count != 0 && count <= MAX_PC_DESCS).then_some(count)
    }

    /// The address of PcDesc `i` of `tables`.
    fn pc_desc_at(&self, tables: &Tables, i: u64) -> Option<u64> {
        tables
            .pcs_begin
            .checked_add(i.checked_mul(self.pc_desc_size)?)
    }

    /// The index of the first PcDesc of `tables` (of `count`) whose code offset is at or after
    /// `rel`: `count` if there is none.
    fn first_at_or_after(&self, tables: &Tables, count: u64, rel: i64) -> Option<u64> {
        let (mut lo, mut hi) = (0u64, count);
        while lo < hi {
            let mid = lo.checked_add(hi.checked_sub(lo)? / 2)?;
            let offset = self.pc_offset.int(self.pc_desc_at(tables, mid)?)?;
            if offset < rel {
                lo = mid.checked_add(1)?;
            } else {
                hi = mid;
            }
        }
        Some(lo)
    }

    /// The scope-decode offset of the PcDesc for `pc` in nmethod `blob`: the one at exactly
    /// `pc` (a return address), or with `approximate`, the first at or after it (the pc of an
    /// interrupted instruction; HotSpot's own sampler does the same).
    fn scope_offset(
        &self,
        blob: &Blob,
        tables: &Tables,
        pc: u64,
        approximate: bool,
    ) -> Option<i64> {
        let rel = i64::try_from(pc.checked_sub(blob.code_begin)?).ok()?;
        let count = self.pc_descs(tables)?;
        let lo = self.first_at_or_after(tables, count, rel)?;
        if lo >= count {
            return None;
        }
        let found = self.pc_desc_at(tables, lo)?;
        if !approximate && self.pc_offset.int(found)? != rel {
            return None;
        }
        self.scope_decode_offset.int(found)
    }

    /// The two PcDescs around the leaf call returning to `ret` in nmethod `blob`, a return
    /// address without one of its own (a call to an arraycopy stub, or another leaf call C2
    /// makes without debug information): the last one before `ret` and the first after it.
    /// HotSpot gives such a call none. A PcDesc describes the code up to its offset since the
    /// one before (`NonSafepointEmitter`: a run of instructions of one inlining chain, stretched
    /// over the instructions without any), so the call belongs to the next one's run, or, when
    /// it was made without a chain at all (an arraycopy expanded after parsing), to the code
    /// around it, of the one before; the next one is often code elsewhere (an uncommon trap
    /// after a jump back). So neither is taken alone: the caller writes what both say
    /// ([`shared_scopes`]). Both are returned only when all of these hold, else `None` (the
    /// method alone is written):
    /// - the JVM records PcDescs between safepoints: for every nmethod since the agent's load
    ///   (its CompiledMethodLoad events, [`non_safepoints`]), or by `-XX:+DebugNonSafepoints`
    ///   set before the first sample;
    /// - the one before is no sentinel, and the code from its offset runs straight to the call
    ///   ([`cpu::straight_to_call`]): no jump, return or other call leaves the path;
    /// - the one after exists.
    pub fn leaf_call_descs(&self, blob: &Blob, ret: u64) -> Option<(PcDesc, PcDesc)> {
        if !RECORDED_FROM_START.load(Ordering::Acquire) && !FLAG_AT_START.load(Ordering::Acquire) {
            count_leaf_call(1);
            return None;
        }
        let tables = self.tables(blob.at)?;
        let rel = i64::try_from(ret.checked_sub(blob.code_begin)?).ok()?;
        let count = self.pc_descs(&tables)?;
        let after = self.first_at_or_after(&tables, count, rel)?;
        let before = after.checked_sub(1);
        let desc = before.and_then(|i| self.pc_desc_at(&tables, i));
        // HotSpot's first PcDesc, a sentinel, has the offset -1.
        let offset = desc
            .and_then(|d| self.pc_offset.int(d))
            .and_then(|o| u64::try_from(o).ok());
        let next = (after < count)
            .then(|| self.pc_desc_at(&tables, after))
            .flatten();
        let (Some(desc), Some(offset), Some(next)) = (desc, offset, next) else {
            count_leaf_call(2);
            return None;
        };
        let from = blob.code_begin.checked_add(offset)?;
        if !cpu::straight_to_call(from, ret) {
            count_leaf_call(3);
            return None;
        }
        let before = PcDesc {
            scope_offset: self.scope_decode_offset.int(desc)?,
            tables,
        };
        let after = PcDesc {
            scope_offset: self.scope_decode_offset.int(next)?,
            tables,
        };
        Some((before, after))
    }

    /// The PcDesc for `pc` in nmethod `blob` (exactly at `pc`, or with `approximate` the first
    /// at or after it), kept for [`Self::scopes_from`]: one binary search serves both the
    /// question whether a return address has debug information and the reading of its scopes.
    pub fn pc_desc(&self, blob: &Blob, pc: u64, approximate: bool) -> Option<PcDesc> {
        let tables = self.tables(blob.at)?;
        let scope_offset = self.scope_offset(blob, &tables, pc, approximate)?;
        Some(PcDesc {
            tables,
            scope_offset,
        })
    }

    /// The scopes at `pc` of nmethod `blob` (method `method`), innermost first, into `out`;
    /// the count, or `None` if the PcDesc is missing or the chain does not end at `method`.
    pub fn scopes_at(
        &self,
        blob: &Blob,
        method: u64,
        pc: u64,
        approximate: bool,
        out: &mut [Scope; MAX_SCOPES],
    ) -> Option<usize> {
        self.scopes_from(&self.pc_desc(blob, pc, approximate)?, method, out)
    }

    /// The scopes of a PcDesc found by [`Self::pc_desc`] in an nmethod of method `method`,
    /// innermost first, into `out`; the count, or `None` if the chain does not end at `method`.
    pub fn scopes_from(
        &self,
        desc: &PcDesc,
        method: u64,
        out: &mut [Scope; MAX_SCOPES],
    ) -> Option<usize> {
        let tables = &desc.tables;
        let mut offset = desc.scope_offset;
        let excluded = u32::from(self.unsigned5);
        let mut count = 0usize;
        loop {
            if offset == 0 {
                // DebugInformationRecorder::serialized_null: no information here; HotSpot
                // reads it as the nmethod's method at its entry.
                if count != 0 {
                    return None;
                }
                *out.get_mut(0)? = Scope { method, bci: -1 };
                return Some(1);
            }
            let mut pos = tables.scopes.checked_add(u64::try_from(offset).ok()?)?;
            let sender = read_compressed(read_u8, &mut pos, excluded)?;
            let index = read_compressed(read_u8, &mut pos, excluded)?;
            let bci = read_compressed(read_u8, &mut pos, excluded)? as i32;
            let scope_method = match index {
                0 => 0,
                i => read_ptr(
                    tables
                        .metadata
                        .checked_add(u64::from(i.checked_sub(1)?).checked_mul(8)?)?,
                )?,
            };
            *out.get_mut(count)? = Scope {
                method: scope_method,
                bci: bci.wrapping_sub(1),
            };
            count = count.checked_add(1)?;
            if sender == 0 {
                return (scope_method == method).then_some(count);
            }
            offset = i64::from(sender);
        }
    }
}

#[cfg(test)]
#[allow(
    clippy::unwrap_used,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects
)]
mod tests {
    use super::*;

    /// HotSpot's writer (UNSIGNED5 with `excluded` = 1; the older code with 0).
    fn encode(mut value: u32, excluded: u32, out: &mut Vec<u8>) {
        let low = 256 - excluded - 64;
        for i in 0..5 {
            if value < low || i == 4 {
                out.push((excluded + value) as u8);
                return;
            }
            value -= low;
            out.push((excluded + low + (value % 64)) as u8);
            value >>= 6;
        }
    }

    #[test]
    fn compressed_ints_round_trip_in_both_encodings() {
        for excluded in [0, 1] {
            let values = [
                0u32,
                1,
                190,
                191,
                192,
                255,
                256,
                12_345,
                1 << 20,
                u32::MAX - 1,
            ];
            let mut bytes = Vec::new();
            for v in values {
                encode(v, excluded, &mut bytes);
            }
            let mut pos = 0u64;
            for v in values {
                let got = read_compressed(|i| bytes.get(i as usize).copied(), &mut pos, excluded);
                assert_eq!(got, Some(v), "excluded {excluded}");
            }
            assert_eq!(pos as usize, bytes.len());
        }
        // A zero byte is never written by UNSIGNED5.
        let mut pos = 0;
        assert_eq!(read_compressed(|_| Some(0), &mut pos, 1), None);
        // Reading past the data stops.
        let mut pos = 0;
        assert_eq!(
            read_compressed(|i| (i == 0).then_some(250), &mut pos, 1),
            None
        );
    }

    fn chain(scopes: &[(u64, i32)]) -> Vec<Scope> {
        scopes
            .iter()
            .map(|&(method, bci)| Scope { method, bci })
            .collect()
    }

    #[test]
    fn two_chains_share_their_equal_outer_scopes_then_one_with_an_unknown_bci() {
        let mut out = [Scope::default(); MAX_SCOPES];
        // shift@33 <- ASB.delete@33 <- SB.delete@3, and the same: all of it.
        let a = chain(&[(3, 33), (2, 33), (1, 3)]);
        assert_eq!(shared_scopes(&a, &a, &mut out), 3);
        assert_eq!(&out[..3], &a[..]);
        // The next PcDesc in another callee of ASB.delete: ASB.delete with its bci unknown.
        let b = chain(&[(4, 7), (2, 40), (1, 3)]);
        assert_eq!(shared_scopes(&a, &b, &mut out), 2);
        assert_eq!(&out[..2], &chain(&[(2, -1), (1, 3)])[..]);
        // An uncommon trap of another inlining chain: the method alone, bci unknown.
        let trap = chain(&[(9, 1), (8, 5), (1, 20)]);
        assert_eq!(shared_scopes(&a, &trap, &mut out), 1);
        assert_eq!(out[0], Scope { method: 1, bci: -1 });
        // One chain inside the other: the shorter, as it is.
        let inner = chain(&[(2, 33), (1, 3)]);
        assert_eq!(shared_scopes(&inner, &a, &mut out), 2);
        assert_eq!(&out[..2], &inner[..]);
        // Chains ending at different methods share nothing.
        assert_eq!(shared_scopes(&a, &chain(&[(5, 0)]), &mut out), 0);
        assert_eq!(shared_scopes(&[], &a, &mut out), 0);
    }
}
