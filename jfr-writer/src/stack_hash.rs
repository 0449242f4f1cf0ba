//! The hash of an interned stack, computed on every sample (a stack is looked up in its pool
//! before it is known to repeat). Hashing a Java stack field by field through the pool's
//! hasher was the largest cost of writing a sample: about 50 dependent multiplications for 12
//! frames. Here each frame is packed into whole words and word pairs are mixed by independent
//! folded multiplications (as in wyhash and foldhash), which the CPU runs side by side; only the
//! final value goes through the pool's hasher. Stacks are not chosen by an adversary, so a
//! fast, well-mixed hash is what the pools need.

/// Constants from the digits of π (as in wyhash's secrets): the two words of a pair get
/// different ones, so that swapped words hash differently, and pairs alternate between two
/// sets.
const SECRETS: [u64; 4] = [
    0x243f_6a88_85a3_08d3,
    0x1319_8a2e_0370_7344,
    0xa409_3822_299f_31d0,
    0x082e_fa98_ec4e_6c89,
];

/// The high and low halves of the 128-bit product, xored.
#[inline(always)]
fn fold(x: u64, y: u64) -> u64 {
    let product = u128::from(x) * u128::from(y);
    (product as u64) ^ ((product >> 64) as u64)
}

/// Mixes a sequence of words: pairs of words are folded independently, then combined with a
/// rotation that depends on the position, so order matters.
#[inline(always)]
fn words_hash(len: usize, truncated: bool, words: impl Iterator<Item = [u64; 2]>) -> u64 {
    let mut acc = (len as u64) ^ (u64::from(truncated) << 63) ^ SECRETS[0];
    for (i, [a, b]) in words.enumerate() {
        let secret = i & 2;
        acc = acc.rotate_left(23) ^ fold(a ^ SECRETS[secret], b ^ SECRETS[secret + 1]);
    }
    fold(acc, SECRETS[1])
}

/// A Java frame packed into the two words its stack's hash mixes; every field of the frame
/// must reach them.
pub(crate) trait FrameWords {
    /// The frame's two words.
    fn words(&self) -> [u64; 2];
}

/// The hash of a Java stack: each frame is two words ([`FrameWords`]).
#[inline]
pub(crate) fn java_stack_hash<F: FrameWords>(truncated: bool, frames: &[F]) -> u64 {
    words_hash(frames.len(), truncated, frames.iter().map(F::words))
}

/// The hash of a native stack: its program counters, two at a time.
#[inline]
pub(crate) fn native_stack_hash(truncated: bool, pcs: &[u64]) -> u64 {
    let pairs = pcs.chunks_exact(2);
    let last = pairs.remainder().first().map(|&pc| [pc, !0]);
    let words = pairs.map(|p| [p[0], p[1]]).chain(last);
    words_hash(pcs.len(), truncated, words)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    /// A frame as its two words: (method, line) and (bytecode index, type).
    #[derive(Clone, Copy)]
    struct Frame {
        method: u32,
        line: i32,
        bytecode_index: i32,
        frame_type: u8,
    }

    impl FrameWords for Frame {
        fn words(&self) -> [u64; 2] {
            [
                u64::from(self.method) | u64::from(self.line as u32) << 32,
                u64::from(self.bytecode_index as u32) | u64::from(self.frame_type) << 32,
            ]
        }
    }

    fn frame(method: u32, line: i32) -> Frame {
        Frame {
            method,
            line,
            bytecode_index: 3,
            frame_type: 1,
        }
    }

    #[test]
    fn every_part_of_a_stack_changes_its_hash() {
        let base = [frame(1, 10), frame(2, 20), frame(3, 30)];
        let mut hashes = HashSet::new();
        hashes.insert(java_stack_hash(false, &base));
        hashes.insert(java_stack_hash(true, &base));
        hashes.insert(java_stack_hash(false, &base[..2]));
        hashes.insert(java_stack_hash(false, &[base[1], base[0], base[2]]));
        hashes.insert(java_stack_hash(false, &[frame(1, 11), base[1], base[2]]));
        let mut typed = base;
        typed[2].frame_type = 2;
        hashes.insert(java_stack_hash(false, &typed));
        let mut bci = base;
        bci[0].bytecode_index = -1;
        hashes.insert(java_stack_hash(false, &bci));
        assert_eq!(hashes.len(), 7);

        let pcs = [0x7f00_0000_1000u64, 0x7f00_0000_2000, 0x7f00_0000_3000];
        let mut hashes = HashSet::new();
        hashes.insert(native_stack_hash(false, &pcs));
        hashes.insert(native_stack_hash(true, &pcs));
        hashes.insert(native_stack_hash(false, &pcs[..2]));
        hashes.insert(native_stack_hash(false, &[pcs[1], pcs[0], pcs[2]]));
        hashes.insert(native_stack_hash(false, &[pcs[0], pcs[1], pcs[2] + 1]));
        hashes.insert(native_stack_hash(false, &[]));
        assert_eq!(hashes.len(), 6);
    }

    #[test]
    fn distinct_stacks_spread_over_the_high_and_low_bits() {
        // 100,000 native stacks that differ only in their leaf pc by 16: no full-hash collision,
        // and the top 7 bits (hashbrown's tag) and low 16 bits (its bucket) take every value.
        let mut hashes = HashSet::new();
        let (mut tags, mut buckets) = (HashSet::new(), HashSet::new());
        for i in 0..100_000u64 {
            let h = native_stack_hash(false, &[0x7f12_3400_0000 + 16 * i, 0x7f12_3456_7890]);
            hashes.insert(h);
            tags.insert(h >> 57);
            buckets.insert(h & 0xffff);
        }
        assert_eq!(hashes.len(), 100_000);
        assert_eq!(tags.len(), 128);
        assert!(buckets.len() > 49_000, "{} low-bit values", buckets.len());
    }
}
