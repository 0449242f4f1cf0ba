//! The `jfrnative.JvmCode` events: the names of the JVM-generated code (stubs, adapters,
//! runtime stubs, vtable and itable stubs) that a chunk's native stacks reach.
//!
//! Chunks are read independently, so each chunk names the code its own stacks reach, at its
//! end, as it describes the libraries they reach ([`super::library_events`]). Names come from
//! [`crate::hotspot::code_names`]; a pc in the code cache that names no stub (a Java frame's
//! pc, kept alone because no walk could leave it) gets no event and stays unknown.

use jfr_writer::{ChunkOutput, JvmCode, Recording};

use crate::hotspot::code_names::{self, Named};
use crate::unwind::jvm_code;

/// Writes one event per named range that the current chunk's native stacks reach; returns
/// how many.
pub fn finish_chunk<W: ChunkOutput>(rec: &mut Recording<W>, now_ticks: i64) -> usize {
    let mut pcs: Vec<u64> = rec
        .chunk_native_pcs()
        .filter(|&pc| jvm_code::contains(pc))
        .collect();
    pcs.sort_unstable();
    pcs.dedup();
    let mut ranges: Vec<Named> = Vec::new();
    for pc in pcs {
        // Sorted: a pc in the range named last needs no new lookup.
        if ranges.last().is_some_and(|r| r.start <= pc && pc < r.end) {
            continue;
        }
        if let Some(named) = code_names::name_of(pc) {
            if !ranges.contains(&named) {
                ranges.push(named);
            }
        }
    }
    for r in &ranges {
        rec.write(&JvmCode {
            start_ticks: now_ticks,
            name: &r.name,
            start_address: r.start,
            end_address: r.end,
        });
    }
    ranges.len()
}
