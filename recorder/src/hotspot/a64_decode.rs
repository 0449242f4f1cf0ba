//! The few A64 instructions the Java walk must understand in HotSpot's generated code,
//! decoded from their fixed 32-bit encodings (Arm ARM, "A64 Instruction Set Encoding"):
//! control flow, the stack pointer's moves (`add`/`sub sp` by an immediate, pre- and
//! post-indexed loads and stores through sp, `mov sp, x29`), and which general registers an
//! instruction loads or computes, so that the walk knows when x29 and x30 stop holding what
//! they held at the pc. Anything else that writes sp is [`Insn::SpOther`]: the callers give up
//! there, never guess.
//!
//! Hand-decoded rather than through a disassembler crate: the signal handler needs a dozen
//! bit patterns, no allocation and no tables (`disarm64`'s decoder is 3.7 MB of generated
//! source, `yaxpeax-arm` decodes every instruction into a rich value, `capstone` allocates);
//! async-profiler's aarch64 walk matches the same fixed masks.

#![deny(
    clippy::indexing_slicing,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::arithmetic_side_effects
)]

/// The frame pointer, x29.
pub const FP: u8 = 29;
/// The link register, x30.
pub const LR: u8 = 30;
/// Register number 31: sp as a base or a destination of `add`/`sub` (immediate), else xzr.
pub const SP: u8 = 31;

/// One decoded instruction, as much as the walk needs of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Insn {
    /// `ret` through x30 (also `retaa`/`retab`).
    Ret,
    /// A call: `bl`, `blr` (and its authenticating forms). It writes x30.
    Call,
    /// `b` to an address.
    Jump(u64),
    /// A conditional branch (`b.cond`, `cbz`/`cbnz`, `tbz`/`tbnz`): the walk falls through.
    Conditional,
    /// Any other way out: `br`, `eret`, `brk`, `udf`, an unallocated encoding.
    Leaves,
    /// `add`/`sub sp, sp, #imm`: sp moves up by the value (negative: down).
    SpAdd(i64),
    /// `add`/`sub sp, x29, #imm` (`mov sp, x29` of `leave()`): sp becomes x29 plus the value.
    SpFromFp(i64),
    /// sp written some other way.
    SpOther,
    /// A load or store through sp: `pair` of two registers (`ldp`/`stp`) or one, at
    /// `sp + offset` (before any write-back), then sp moved up by `writeback`.
    SpAccess {
        /// A load (else a store).
        load: bool,
        /// The first register, and the second of a pair.
        regs: [Option<u8>; 2],
        /// Whether the registers are general ones (else SIMD/FP).
        general: bool,
        /// Where the access is, from sp before the write-back.
        offset: i64,
        /// How far sp moves up after it (0: no write-back).
        writeback: i64,
    },
    /// Anything else: the general registers it writes (31 is xzr here: none).
    Other([Option<u8>; 2]),
}

impl Insn {
    /// Whether the instruction writes general register `r` (x29 or x30) other than through a
    /// load from sp, which [`Insn::SpAccess`] says.
    pub fn writes(&self, r: u8) -> bool {
        match *self {
            Insn::Call => r == LR,
            Insn::Other(regs) => regs.contains(&Some(r)),
            Insn::SpAccess {
                load: true,
                regs,
                general: true,
                ..
            } => regs.contains(&Some(r)),
            _ => false,
        }
    }
}

fn bits(w: u32, low: u32, count: u32) -> u32 {
    (w >> low) & ((1u32 << count).wrapping_sub(1))
}

/// `value` of `count` bits, sign-extended.
fn signed(value: u32, count: u32) -> i64 {
    let shift = 64u32.wrapping_sub(count);
    (i64::from(value) << shift) >> shift
}

/// Decodes the instruction `w` at address `pc`.
pub fn decode(w: u32, pc: u64) -> Insn {
    // Branches, exceptions and system instructions.
    if w & 0xFFFF_FC1F == 0xD65F_0000 {
        return if bits(w, 5, 5) == u32::from(LR) {
            Insn::Ret
        } else {
            Insn::Leaves
        };
    }
    if w & 0xFFFF_FBFF == 0xD65F_0BFF {
        return Insn::Ret; // retaa, retab
    }
    if w & 0xFC00_0000 == 0x9400_0000
        || w & 0xFFFF_FC1F == 0xD63F_0000
        || w & 0xFEFF_F800 == 0xD63F_0800
    {
        return Insn::Call;
    }
    if w & 0xFC00_0000 == 0x1400_0000 {
        let offset = signed(bits(w, 0, 26), 26).wrapping_mul(4);
        return Insn::Jump(pc.wrapping_add_signed(offset));
    }
    if w & 0xFF00_0010 == 0x5400_0000 || w & 0x7C00_0000 == 0x3400_0000 {
        return Insn::Conditional; // b.cond; cbz/cbnz (x011010), tbz/tbnz (x011011)
    }
    if w & 0xFFFF_F01F == 0xD503_201F || w & 0xFFFF_F01F == 0xD503_301F {
        return Insn::Other([None, None]); // hint (nop, pac/aut/xpac of x30 in place), barriers
    }
    if w & 0xFFF0_0000 == 0xD530_0000 {
        return Insn::Other([Some(bits(w, 0, 5) as u8), None]); // mrs
    }
    if w & 0x1C00_0000 == 0x1400_0000 {
        // Other branches and exception-generating instructions: br, eret, svc, brk, ...
        return if w & 0xFFE0_0000 == 0xD500_0000 {
            Insn::Other([None, None]) // other system instructions (msr, sys)
        } else {
            Insn::Leaves
        };
    }
    if w & 0x0A00_0000 == 0x0800_0000 {
        return load_store(w);
    }
    data_processing(w)
}

/// Loads and stores (op0 bits x1x0).
fn load_store(w: u32) -> Insn {
    let vector = bits(w, 26, 1) == 1;
    let rt = bits(w, 0, 5) as u8;
    let rn = bits(w, 5, 5) as u8;
    if w & 0x3800_0000 == 0x2800_0000 {
        // Load/store pair: opc(31:30) 101 V(26) type(24:23) L(22) imm7 Rt2 Rn Rt.
        let opc = bits(w, 30, 2);
        let scale: i64 = match (vector, opc) {
            (false, 0) | (false, 1) | (true, 0) => 4,
            (false, 2) | (true, 1) => 8,
            (true, 2) => 16,
            _ => return Insn::Leaves,
        };
        let load = bits(w, 22, 1) == 1;
        let imm = signed(bits(w, 15, 7), 7).wrapping_mul(scale);
        let rt2 = bits(w, 10, 5) as u8;
        let kind = bits(w, 23, 2); // 00 no-allocate, 01 post, 10 offset, 11 pre
        let (offset, writeback) = match kind {
            1 => (0, imm),
            3 => (imm, imm),
            _ => (imm, 0),
        };
        if rn == SP {
            return Insn::SpAccess {
                load,
                regs: [Some(rt), Some(rt2)],
                general: !vector,
                offset,
                writeback,
            };
        }
        return general_writes(load && !vector, [Some(rt), Some(rt2)], writeback != 0, rn);
    }
    if w & 0x3800_0000 == 0x3800_0000 {
        // Load/store register: size(31:30) 111 V 0/1(24) opc(23:22) ...
        let opc = bits(w, 22, 2);
        let load = opc != 0;
        let unsigned_offset = bits(w, 24, 1) == 1;
        let indexed = !unsigned_offset && bits(w, 21, 1) == 0 && bits(w, 10, 1) == 1;
        if rn == SP && (indexed || unsigned_offset) {
            let size = bits(w, 30, 2);
            let (offset, writeback) = if unsigned_offset {
                let scale = if vector && opc >= 2 { 4 } else { size };
                (i64::from(bits(w, 10, 12)) << scale, 0)
            } else {
                let imm = signed(bits(w, 12, 9), 9);
                if bits(w, 11, 1) == 1 {
                    (imm, imm) // pre-index
                } else {
                    (0, imm) // post-index
                }
            };
            return Insn::SpAccess {
                load,
                regs: [Some(rt), None],
                general: !vector,
                offset,
                writeback,
            };
        }
        return general_writes(load && !vector, [Some(rt), None], indexed, rn);
    }
    // Literal loads, exclusive and acquire/release accesses: a load writes Rt; a store
    // exclusive writes its status register Rs.
    if w & 0x3B00_0000 == 0x1800_0000 {
        return general_writes(!vector, [Some(rt), None], false, rn);
    }
    if w & 0x3F00_0000 == 0x0800_0000 {
        let load = bits(w, 22, 1) == 1;
        let rs = bits(w, 16, 5) as u8;
        return Insn::Other(if load {
            [Some(rt), None]
        } else {
            [Some(rs), None]
        });
    }
    // SIMD structure loads and stores (`ld1`/`st1` of 1 to 4 registers: HotSpot's vector
    // register saves): vector registers only; a post-indexed one through sp moves it by the
    // bytes it transfers, the register-offset form by a register (not followed).
    if w & 0xBFBF_0000 == 0x0C9F_0000 && rn == SP {
        let registers: i64 = match bits(w, 12, 4) {
            0b0111 => 1,
            0b1000 | 0b1010 => 2,
            0b0100 | 0b0110 => 3,
            0b0000 | 0b0010 => 4,
            _ => return Insn::SpOther,
        };
        let bytes = if bits(w, 30, 1) == 1 { 16 } else { 8 };
        let moved = registers.wrapping_mul(bytes);
        return Insn::SpAccess {
            load: bits(w, 22, 1) == 1,
            regs: [None, None],
            general: false,
            offset: 0,
            writeback: moved,
        };
    }
    if rn == SP && bits(w, 23, 1) == 1 {
        return Insn::SpOther;
    }
    Insn::Other([None, None])
}

/// A load or store not through sp: the general registers it writes (its loaded ones, and its
/// base with a write-back).
fn general_writes(loads: bool, regs: [Option<u8>; 2], writeback: bool, rn: u8) -> Insn {
    let loaded = if loads { regs } else { [None, None] };
    match (writeback, loaded) {
        (true, [a, None]) => Insn::Other([a, Some(rn)]),
        (true, [None, b]) => Insn::Other([Some(rn), b]),
        // Three registers written: the base is reported in place of the second loaded one
        // only when it matters (x29 or x30); a pair load with write-back through another base
        // is not emitted by HotSpot.
        (true, [a, b]) if rn == FP || rn == LR => Insn::Other([a.or(b), Some(rn)]),
        _ => Insn::Other(loaded),
    }
}

/// Data processing (immediate, register, SIMD and FP).
fn data_processing(w: u32) -> Insn {
    let rd = bits(w, 0, 5) as u8;
    let rn = bits(w, 5, 5) as u8;
    if w & 0x1F00_0000 == 0x1100_0000 {
        // Add/subtract (immediate): sf op S 10001 sh imm12 Rn Rd.
        let set_flags = bits(w, 29, 1) == 1;
        if set_flags || rd != SP {
            return Insn::Other([(rd != SP).then_some(rd), None]);
        }
        let mut imm = i64::from(bits(w, 10, 12));
        if bits(w, 22, 1) == 1 {
            imm <<= 12;
        }
        if bits(w, 30, 1) == 1 {
            imm = imm.wrapping_neg();
        }
        if bits(w, 31, 1) == 0 {
            return Insn::SpOther;
        }
        return match rn {
            SP => Insn::SpAdd(imm),
            FP => Insn::SpFromFp(imm),
            _ => Insn::SpOther,
        };
    }
    if w & 0x1F80_0000 == 0x1200_0000 {
        // Logical (immediate): Rd is sp unless the flags are set (ands).
        return if rd == SP && bits(w, 29, 2) != 3 {
            Insn::SpOther
        } else {
            Insn::Other([(rd != SP).then_some(rd), None])
        };
    }
    if w & 0x1F20_0000 == 0x0B20_0000 {
        // Add/subtract (extended register): Rd is sp unless the flags are set.
        return if rd == SP && bits(w, 29, 1) == 0 {
            Insn::SpOther
        } else {
            Insn::Other([(rd != SP).then_some(rd), None])
        };
    }
    if w & 0x0E00_0000 == 0x0E00_0000 {
        // SIMD and floating point: writes a general register only in moves to one (fmov,
        // umov, fcvtzs, ...): counted as written, which only makes the walk give up sooner.
        return Insn::Other([(rd != SP).then_some(rd), None]);
    }
    if w & 0x1E00_0000 == 0x0400_0000 {
        // SVE: HotSpot saves vector registers with it where the CPU has it (`sve_str` of z
        // registers around a GC barrier's runtime call). `addvl`/`addpl` of sp move sp by a
        // multiple of the vector length, not followed; any other may write the general
        // register in its low bits (`rdvl`, `cntd`, ...): counted as written.
        let vl_add = w & 0xFFA0_F800 == 0x0420_5000;
        return if vl_add && rd == SP {
            Insn::SpOther
        } else {
            Insn::Other([(rd != SP).then_some(rd), None])
        };
    }
    if w & 0x1800_0000 == 0 {
        return Insn::Leaves; // reserved, unallocated, SME: not in code the walk reads
    }
    Insn::Other([(rd != SP).then_some(rd), None])
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;

    /// Encodings from GNU as (`aarch64-linux-gnu-as`, `objdump -d`), as HotSpot emits them.
    #[test]
    fn hotspot_frame_instructions_decode() {
        let at = 0x1000;
        // stp x29, x30, [sp, #-16]!
        assert_eq!(
            decode(0xA9BF_7BFD, at),
            Insn::SpAccess {
                load: false,
                regs: [Some(29), Some(30)],
                general: true,
                offset: -16,
                writeback: -16
            }
        );
        // ldp x29, x30, [sp], #16
        assert_eq!(
            decode(0xA8C1_7BFD, at),
            Insn::SpAccess {
                load: true,
                regs: [Some(29), Some(30)],
                general: true,
                offset: 0,
                writeback: 16
            }
        );
        // ldp x29, x30, [sp, #48]
        assert_eq!(
            decode(0xA943_7BFD, at),
            Insn::SpAccess {
                load: true,
                regs: [Some(29), Some(30)],
                general: true,
                offset: 48,
                writeback: 0
            }
        );
        // stp xzr, x9, [sp, #-16]! (C2's breadcrumb)
        assert!(matches!(
            decode(0xA9BF_27FF, at),
            Insn::SpAccess {
                load: false,
                offset: -16,
                writeback: -16,
                ..
            }
        ));
        assert_eq!(decode(0xD100_83FF, at), Insn::SpAdd(-32)); // sub sp, sp, #0x20
        assert_eq!(decode(0x9100_83FF, at), Insn::SpAdd(32)); // add sp, sp, #0x20
        assert_eq!(decode(0xD140_07FF, at), Insn::SpAdd(-4096)); // sub sp, sp, #1, lsl #12
        assert_eq!(decode(0x9100_03BF, at), Insn::SpFromFp(0)); // mov sp, x29
        assert_eq!(decode(0x9100_03FD, at), Insn::Other([Some(29), None])); // mov x29, sp
        assert_eq!(decode(0xCB28_63FF, at), Insn::SpOther); // sub sp, sp, x8
        assert_eq!(decode(0xD65F_03C0, at), Insn::Ret);
        assert_eq!(decode(0xD65F_0BFF, at), Insn::Ret); // retaa
        assert_eq!(decode(0xD61F_0200, at), Insn::Leaves); // br x16
        assert_eq!(decode(0xD63F_0100, at), Insn::Call); // blr x8
        assert_eq!(decode(0x9400_0004, at), Insn::Call); // bl .+16
        assert_eq!(decode(0x17FF_FFFF, at), Insn::Jump(at - 4)); // b .-4
        assert_eq!(decode(0x5400_0048, at), Insn::Conditional); // b.hi
        assert_eq!(decode(0xB400_0040, at), Insn::Conditional); // cbz x0
        assert_eq!(decode(0x3700_0040, at), Insn::Conditional); // tbnz w0, #0
        assert_eq!(decode(0xD503_201F, at), Insn::Other([None, None])); // nop
        assert_eq!(decode(0xD503_233F, at), Insn::Other([None, None])); // paciasp
        assert_eq!(decode(0xD420_0000, at), Insn::Leaves); // brk #0
                                                           // ldr x8, [x28, #0x28] (the return poll's load): writes x8 only.
        assert_eq!(decode(0xF940_1788, at), Insn::Other([Some(8), None]));
        // str x30, [sp, #8]: a store through sp, no write-back.
        assert!(matches!(
            decode(0xF900_07FE, at),
            Insn::SpAccess {
                load: false,
                offset: 8,
                writeback: 0,
                ..
            }
        ));
        // ldr x30, [sp], #16
        assert!(matches!(
            decode(0xF841_07FE, at),
            Insn::SpAccess {
                load: true,
                offset: 0,
                writeback: 16,
                ..
            }
        ));
        // stp d8, d9, [sp, #-16]!: vector registers, sp moves.
        assert!(matches!(
            decode(0x6DBF_27E8, at),
            Insn::SpAccess {
                general: false,
                writeback: -16,
                ..
            }
        ));
        // mov x30, x0 (orr x30, xzr, x0) writes x30.
        assert!(decode(0xAA00_03FE, at).writes(LR));
        // ld1 {v0.2d-v3.2d}, [sp], #64 and st1 {v0.16b}, [sp], #16: sp moves by what they
        // transfer; ld1 ..., [sp], x8: by a register.
        assert!(matches!(
            decode(0x4CDF_2FE0, at),
            Insn::SpAccess {
                load: true,
                general: false,
                writeback: 64,
                ..
            }
        ));
        assert!(matches!(
            decode(0x4C9F_73E0, at),
            Insn::SpAccess {
                load: false,
                writeback: 16,
                ..
            }
        ));
        assert_eq!(decode(0x4CC8_2FE0, at), Insn::SpOther);
        // addvl sp, sp, #-2; str z0, [sp]; rdvl x30, #1.
        assert_eq!(decode(0x043F_57DF, at), Insn::SpOther);
        assert!(matches!(decode(0xE580_43E0, at), Insn::Other(_)));
        assert!(matches!(decode(0x8580_47E1, at), Insn::Other(_))); // ldr z1, [sp, #1, mul vl]
        assert!(decode(0x04BF_503E, at).writes(LR));
        // cmp sp, x8 (subs xzr, sp, x8): no write.
        assert_eq!(decode(0xEB28_63FF, at), Insn::Other([None, None]));
    }
}
