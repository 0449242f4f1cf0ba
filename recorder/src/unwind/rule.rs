//! The compact unwind table the signal handler reads: per library, a sorted array of 8-byte
//! rows, each saying how to find the caller's frame from any pc up to the next row. Built off
//! the handler ([`super::build`]) from call-frame information; read here with a binary search,
//! no allocation, no locks, no syscalls.

#![deny(
    clippy::indexing_slicing,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::arithmetic_side_effects
)]

use std::sync::atomic::{AtomicUsize, Ordering};

/// How the canonical frame address (the caller's stack pointer) and the return address are
/// found at a pc.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// CFA = rsp (aarch64: sp) + offset.
    Rsp,
    /// CFA = rbp (aarch64: x29) + offset.
    Rbp,
    /// A PLT stub (`.plt`): CFA = rsp + 8, + 8 more once the stub has pushed its index (from
    /// the byte at `pc & 15 >= offset` on; the offset holds that threshold). GCC/binutils
    /// describe it with one fixed DWARF expression, recognised when the table is built.
    Plt,
    /// A signal trampoline (`__restore_rt`): the interrupted registers are in the ucontext at
    /// rsp.
    Signal,
    /// The outermost frame (return address undefined: `_start`, `clone3`, thread start).
    End,
    /// CFA = the word at rsp + offset, + 8: a function that keeps its caller's stack pointer
    /// in its own frame (OpenSSL's and BoringSSL's assembly, `.cfi_cfa_expression
    /// %rsp+40,deref,+8`: `DW_OP_breg7 40; DW_OP_deref; DW_OP_plus_uconst 8`).
    RspDeref,
    /// No usable call-frame information here: fall back to frame pointers.
    None,
}

/// One rule, packed: kind (3 bits), where the caller's frame pointer was saved
/// ([`crate::arch::RULE_FP_BITS`]: 0 = not saved in this frame, k = at CFA − 8k, all ones = not
/// recoverable), where the return address was saved ([`crate::arch::RULE_RA_BITS`], none on
/// x86_64: always at CFA − 8; on aarch64 0 = still in the link register, k = at CFA − 8k, all
/// ones = not recoverable), and the CFA offset (the remaining bits, signed, bytes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rule(u32);

/// Where the caller's rbp (aarch64: x29) is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SavedRbp {
    /// Not saved by this frame: the caller's rbp is the current one.
    Unchanged,
    /// Saved at CFA − 8 × the value.
    At(u8),
    /// Not recoverable (rbp is used for data and not restored by a rule we can follow).
    Lost,
}

/// Where the return address is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SavedRa {
    /// Still in the link register (aarch64 x30): a function that has not saved it (a leaf,
    /// or before its prologue), known only where the link register is ([`Regs::lr`]).
    ///
    /// [`Regs::lr`]: crate::arch::Regs::lr
    InLink,
    /// Saved at CFA − 8 × the value (x86_64: always 1, where the call pushed it).
    At(u8),
    /// Not recoverable.
    Lost,
}

const KIND_BITS: u32 = 3;
const RBP_BITS: u32 = crate::arch::RULE_FP_BITS;
const RA_BITS: u32 = crate::arch::RULE_RA_BITS;
const RA_SHIFT: u32 = KIND_BITS + RBP_BITS;
const OFFSET_SHIFT: u32 = RA_SHIFT + RA_BITS;
/// Largest CFA offset magnitude a rule holds (±1 MiB on x86_64, ±16 KiB on aarch64); larger
/// frames get [`Kind::None`].
pub const MAX_CFA_OFFSET: i64 = (1 << (32 - OFFSET_SHIFT - 1)) - 1;
const RBP_LOST: u8 = ((1u32 << RBP_BITS) - 1) as u8;
const RA_LOST: u32 = (1u32 << RA_BITS).wrapping_sub(1);

/// [`RA_LOST`], as a value: 0 on x86_64, where no rule reaches the comparisons it is in.
#[inline]
fn ra_lost() -> u32 {
    RA_LOST
}

impl Rule {
    /// A rule whose return address is at CFA − 8; `None` if the offset does not fit (the
    /// caller then uses [`Rule::NONE`]).
    pub fn new(kind: Kind, rbp: SavedRbp, cfa_offset: i64) -> Option<Rule> {
        if !(-MAX_CFA_OFFSET..=MAX_CFA_OFFSET).contains(&cfa_offset) {
            return None;
        }
        let kind_bits = match kind {
            Kind::Rsp => 0u32,
            Kind::Rbp => 1,
            Kind::Plt => 2,
            Kind::Signal => 3,
            Kind::End => 4,
            Kind::None => 5,
            Kind::RspDeref => 6,
        };
        let rbp_bits = match rbp {
            SavedRbp::Unchanged => 0u32,
            SavedRbp::At(k) if k != 0 && k < RBP_LOST => u32::from(k),
            SavedRbp::At(_) | SavedRbp::Lost => u32::from(RBP_LOST),
        };
        let ra_bits = if RA_BITS == 0 { 0 } else { 1u32 << RA_SHIFT };
        let offset_bits = (cfa_offset as i32 as u32) << OFFSET_SHIFT;
        Some(Rule(
            kind_bits | (rbp_bits << KIND_BITS) | ra_bits | offset_bits,
        ))
    }

    /// This rule with the return address at `ra`; `None` where the architecture cannot say
    /// so (x86_64: anywhere but CFA − 8).
    pub fn with_ra(self, ra: SavedRa) -> Option<Rule> {
        let bits = match ra {
            SavedRa::At(1) if RA_BITS == 0 => return Some(self),
            _ if RA_BITS == 0 => return None,
            SavedRa::InLink => 0,
            SavedRa::At(k) if k != 0 && u32::from(k) < ra_lost() => u32::from(k),
            SavedRa::At(_) | SavedRa::Lost => RA_LOST,
        };
        let mask = RA_LOST << RA_SHIFT;
        Some(Rule((self.0 & !mask) | (bits << RA_SHIFT)))
    }

    /// No call-frame information: fall back to frame pointers.
    pub const NONE: Rule = Rule(5);

    /// The rule's kind.
    #[inline]
    pub fn kind(self) -> Kind {
        match self.0 & ((1 << KIND_BITS) - 1) {
            0 => Kind::Rsp,
            1 => Kind::Rbp,
            2 => Kind::Plt,
            3 => Kind::Signal,
            4 => Kind::End,
            6 => Kind::RspDeref,
            _ => Kind::None,
        }
    }

    /// Where the caller's rbp is.
    #[inline]
    pub fn rbp(self) -> SavedRbp {
        match ((self.0 >> KIND_BITS) & u32::from(RBP_LOST)) as u8 {
            0 => SavedRbp::Unchanged,
            RBP_LOST => SavedRbp::Lost,
            k => SavedRbp::At(k),
        }
    }

    /// Where the return address is.
    #[inline]
    pub fn ra(self) -> SavedRa {
        if RA_BITS == 0 {
            return SavedRa::At(1);
        }
        match (self.0 >> RA_SHIFT) & RA_LOST {
            0 => SavedRa::InLink,
            k if k == RA_LOST => SavedRa::Lost,
            k => SavedRa::At(k as u8),
        }
    }

    /// The CFA offset in bytes (for [`Kind::Plt`], the threshold of `pc & 15`).
    #[inline]
    pub fn cfa_offset(self) -> i64 {
        i64::from((self.0 as i32) >> OFFSET_SHIFT)
    }
}

/// A rule that holds from `offset` (bytes from the table's base address) to the next row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(C)]
pub struct Row {
    /// Start, relative to [`Table::base`].
    pub offset: u32,
    /// The rule from there on.
    pub rule: Rule,
}

/// Tables alive in the process (made by [`Table::new`], not yet dropped), and their heap bytes:
/// what the unwind tables retain, whoever holds them (the table cache, the published code map,
/// retired code maps a handler may still read).
static TABLES_ALIVE: AtomicUsize = AtomicUsize::new(0);
static TABLE_BYTES_ALIVE: AtomicUsize = AtomicUsize::new(0);

/// How many tables are alive and their heap bytes (see [`Table::heap_bytes`]).
pub fn tables_alive() -> (usize, usize) {
    (
        TABLES_ALIVE.load(Ordering::Relaxed),
        TABLE_BYTES_ALIVE.load(Ordering::Relaxed),
    )
}

/// Code bytes per entry of a table's page index.
const PAGE_SHIFT: u32 = 12;

/// One library's rows, sorted by offset, with no two neighbours alike, and a page index so
/// that a lookup searches only the few rows of one 4 KiB page of code (a binary search over
/// the whole table would miss the cache at nearly every step).
#[derive(Debug)]
pub struct Table {
    /// The runtime address offsets count from (the library's lowest mapped address).
    pub base: u64,
    rows: Box<[Row]>,
    /// `pages[p]`: the index of the first row at or after offset `p << PAGE_SHIFT`.
    pages: Box<[u32]>,
}

impl Table {
    /// A table of `rows` (sorted by offset; neighbours with the same rule are merged here).
    pub fn new(base: u64, rows: Vec<Row>) -> Table {
        let mut merged: Vec<Row> = Vec::with_capacity(rows.len());
        for row in rows {
            match merged.last_mut() {
                Some(last) if last.rule == row.rule => {}
                Some(last) if last.offset == row.offset => last.rule = row.rule,
                _ => merged.push(row),
            }
        }
        let end_page = merged
            .last()
            .map_or(0, |r| (r.offset >> PAGE_SHIFT) as usize)
            .saturating_add(2);
        let pages = (0..end_page)
            .map(|p| {
                let start = (p as u64) << PAGE_SHIFT;
                merged.partition_point(|r| u64::from(r.offset) < start) as u32
            })
            .collect();
        let table = Table {
            base,
            rows: merged.into_boxed_slice(),
            pages,
        };
        TABLES_ALIVE.fetch_add(1, Ordering::Relaxed);
        TABLE_BYTES_ALIVE.fetch_add(table.heap_bytes(), Ordering::Relaxed);
        table
    }

    /// The rule at runtime address `pc`: [`Rule::NONE`] outside every described range.
    #[inline]
    pub fn rule(&self, pc: u64) -> Rule {
        let Some(offset) = pc
            .checked_sub(self.base)
            .and_then(|o| u32::try_from(o).ok())
        else {
            return Rule::NONE;
        };
        let page = (offset >> PAGE_SHIFT) as usize;
        let first = self
            .pages
            .get(page)
            .map_or(self.rows.len(), |&i| i as usize);
        let end = self
            .pages
            .get(page.wrapping_add(1))
            .map_or(self.rows.len(), |&i| i as usize);
        // The last row at or before `offset`: in this page's rows, else the one before them.
        let in_page = self
            .rows
            .get(first..end)
            .map_or(0, |rows| rows.partition_point(|r| r.offset <= offset));
        match first
            .wrapping_add(in_page)
            .checked_sub(1)
            .and_then(|i| self.rows.get(i))
        {
            Some(row) => row.rule,
            None => Rule::NONE,
        }
    }

    /// Number of rows.
    pub fn len(&self) -> usize {
        self.rows.len()
    }

    /// Whether the table has no rows.
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// Heap bytes the table holds.
    pub fn heap_bytes(&self) -> usize {
        std::mem::size_of_val(&*self.rows).saturating_add(std::mem::size_of_val(&*self.pages))
    }
}

impl Drop for Table {
    /// Never in the signal handler: it only borrows tables of a published code map, which are
    /// dropped by the thread that frees the map.
    fn drop(&mut self) {
        TABLES_ALIVE.fetch_sub(1, Ordering::Relaxed);
        TABLE_BYTES_ALIVE.fetch_sub(self.heap_bytes(), Ordering::Relaxed);
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;

    #[test]
    fn rules_round_trip() {
        for kind in [
            Kind::Rsp,
            Kind::Rbp,
            Kind::Plt,
            Kind::Signal,
            Kind::End,
            Kind::None,
        ] {
            for rbp in [SavedRbp::Unchanged, SavedRbp::At(2), SavedRbp::Lost] {
                for off in [0, 8, 16, -8, 4096, MAX_CFA_OFFSET, -MAX_CFA_OFFSET] {
                    let r = Rule::new(kind, rbp, off).unwrap();
                    assert_eq!((r.kind(), r.rbp(), r.cfa_offset()), (kind, rbp, off));
                }
            }
        }
        assert_eq!(
            Rule::new(Kind::Rsp, SavedRbp::Unchanged, MAX_CFA_OFFSET + 1),
            None
        );
        assert_eq!(Rule::NONE.kind(), Kind::None);
        assert_eq!(
            Rule::new(Kind::Rsp, SavedRbp::At(255), 8).unwrap().rbp(),
            SavedRbp::Lost
        );
    }

    #[test]
    fn the_return_address_is_at_cfa_minus_8_unless_the_architecture_says_more() {
        let r = Rule::new(Kind::Rsp, SavedRbp::At(2), 32).unwrap();
        assert_eq!(r.ra(), SavedRa::At(1));
        assert_eq!(r.with_ra(SavedRa::At(1)), Some(r));
        for ra in [SavedRa::InLink, SavedRa::At(3), SavedRa::Lost] {
            let with = r.with_ra(ra);
            if crate::arch::RULE_RA_BITS == 0 {
                assert_eq!(with, None, "x86_64 says nothing but CFA - 8");
            } else {
                let with = with.unwrap();
                assert_eq!(
                    (with.kind(), with.rbp(), with.ra(), with.cfa_offset()),
                    (Kind::Rsp, SavedRbp::At(2), ra, 32)
                );
            }
        }
    }

    #[test]
    fn lookup_takes_the_row_at_or_before_the_pc_and_merges_neighbours() {
        let rsp8 = Rule::new(Kind::Rsp, SavedRbp::Unchanged, 8).unwrap();
        let rsp16 = Rule::new(Kind::Rsp, SavedRbp::At(2), 16).unwrap();
        let t = Table::new(
            0x1000,
            vec![
                Row {
                    offset: 0x10,
                    rule: rsp8,
                },
                Row {
                    offset: 0x11,
                    rule: rsp16,
                },
                Row {
                    offset: 0x20,
                    rule: rsp16,
                },
                Row {
                    offset: 0x30,
                    rule: Rule::NONE,
                },
            ],
        );
        assert_eq!(t.len(), 3, "the repeated rsp16 row is merged");
        assert_eq!(t.rule(0x1000), Rule::NONE);
        assert_eq!(t.rule(0x1010), rsp8);
        assert_eq!(t.rule(0x1011), rsp16);
        assert_eq!(t.rule(0x102f), rsp16);
        assert_eq!(t.rule(0x1030), Rule::NONE);
        assert_eq!(t.rule(0x10), Rule::NONE, "below the base");
        assert_eq!(t.rule(u64::MAX), Rule::NONE);
        assert_eq!(t.heap_bytes(), 3 * 8 + 2 * 4);
    }

    #[test]
    fn page_index_gives_the_same_answers_as_a_full_search() {
        let rules: Vec<Rule> = (0..7)
            .map(|i| Rule::new(Kind::Rsp, SavedRbp::Unchanged, 8 * (i + 1)).unwrap())
            .collect();
        // Rows at irregular offsets, some pages empty, some crowded.
        let mut offset = 0x30u32;
        let mut rows = Vec::new();
        for i in 0..500u32 {
            rows.push(Row {
                offset,
                rule: rules[(i % 7) as usize],
            });
            offset += [1, 3, 17, 200, 4096, 9000, 5][(i % 7) as usize];
        }
        let t = Table::new(0x10_0000, rows.clone());
        for probe in (0..offset + 10_000).step_by(7) {
            let i = rows.partition_point(|r| r.offset <= probe);
            let want = i.checked_sub(1).map_or(Rule::NONE, |i| rows[i].rule);
            assert_eq!(t.rule(0x10_0000 + u64::from(probe)), want, "{probe:#x}");
        }
    }
}
