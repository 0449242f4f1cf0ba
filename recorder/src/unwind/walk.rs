//! The native walk: from the interrupted registers up to the first Java frame. At each frame
//! the library's call-frame rule says where the caller's stack pointer (the CFA), return
//! address and rbp are; where there is no rule, frame pointers are followed. Every read goes
//! through [`Memory`]; every step must climb the stack; the output's size bounds the loop.

#![deny(
    clippy::indexing_slicing,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::arithmetic_side_effects
)]

use super::rule::{Kind, Rule, SavedRbp};
use super::{Code, CodeKind, Memory, Regs, Stop};

/// Where rip, rsp and rbp of the interrupted code are, in bytes from the start of a
/// `ucontext_t` (x86_64 Linux: `uc_mcontext.gregs[REG_*]`).
mod ucontext_offsets {
    const GREGS: u64 = std::mem::offset_of!(libc::ucontext_t, uc_mcontext) as u64;
    pub const RIP: u64 = GREGS + 8 * libc::REG_RIP as u64;
    pub const RSP: u64 = GREGS + 8 * libc::REG_RSP as u64;
    pub const RBP: u64 = GREGS + 8 * libc::REG_RBP as u64;
}

/// The registers of the code a signal interrupted, from the signal frame whose trampoline
/// (`__restore_rt`) is about to run with `sp` pointing at the kernel's `ucontext_t`.
fn signal_frame(sp: u64, mem: &impl Memory) -> Option<Regs> {
    let at = |offset: u64| mem.read_u64(sp.checked_add(offset)?);
    Some(Regs {
        pc: at(ucontext_offsets::RIP)?,
        sp: at(ucontext_offsets::RSP)?,
        fp: at(ucontext_offsets::RBP)?,
    })
}

/// The caller's frame by frame pointers: `[fp]` is the caller's rbp, `[fp + 8]` the return
/// address, and the caller's stack starts at `fp + 16`.
fn fp_step(r: Regs, mem: &impl Memory) -> Option<Regs> {
    if r.fp < r.sp || r.fp % 8 != 0 {
        return None;
    }
    Some(Regs {
        pc: mem.read_u64(r.fp.checked_add(8)?)?,
        sp: r.fp.checked_add(16)?,
        fp: mem.read_u64(r.fp)?,
    })
}

/// The caller's frame by a CFA rule (`Rsp`, `Rbp`, `Plt`); `None` if it cannot be found.
/// `rbp_known` says whether `r.fp` holds the real rbp; it is updated for the caller.
fn cfa_step(r: Regs, rule: Rule, rbp_known: &mut bool, mem: &impl Memory) -> Option<Regs> {
    let cfa = match rule.kind() {
        Kind::Rsp => r.sp.checked_add_signed(rule.cfa_offset())?,
        Kind::Rbp if *rbp_known => r.fp.checked_add_signed(rule.cfa_offset())?,
        Kind::Plt => {
            // The stub pushes its relocation index before jumping to the resolver.
            let pushed = u64::try_from(rule.cfa_offset()).ok()?;
            r.sp.checked_add(if r.pc & 15 >= pushed { 16 } else { 8 })?
        }
        _ => return None,
    };
    // The return address sits just below the CFA, at or above the current sp.
    let ra_slot = cfa.checked_sub(8)?;
    if ra_slot < r.sp {
        return None;
    }
    let fp = match rule.rbp() {
        SavedRbp::Unchanged => r.fp,
        SavedRbp::At(k) => {
            let slot = cfa.checked_sub(u64::from(k).checked_mul(8)?)?;
            if slot < r.sp {
                // In an epilogue, after `pop %rbp`: GCC's CFI keeps the save rule until the
                // return, but the slot is below sp and rbp already holds the caller's value.
                r.fp
            } else {
                *rbp_known = true;
                mem.read_u64(slot)?
            }
        }
        SavedRbp::Lost => {
            *rbp_known = false;
            0
        }
    };
    Some(Regs {
        pc: mem.read_u64(ra_slot)?,
        sp: cfa,
        fp,
    })
}

/// Walks from `regs` (leaf first) into `out`; returns how many pcs it wrote and why it stopped.
/// The first pc is the interrupted instruction; the others are return addresses, except the
/// pc a signal frame gives back (an interrupted instruction again). With `cfi` false, frame
/// pointers only (`cstack=fp`).
pub fn walk(
    regs: Regs,
    mem: &impl Memory,
    code: &impl CodeKind,
    cfi: bool,
    out: &mut [u64],
) -> (usize, Stop) {
    let mut r = regs;
    let mut n = 0usize;
    // Whether r.fp is the real rbp (false after a frame that used rbp for data and whose
    // rules do not restore it).
    let mut rbp_known = true;
    // Whether r.pc is an interrupted instruction (looked up as is) or a return address
    // (looked up at pc - 1: a call can be the last instruction of a function).
    let mut exact_pc = true;
    loop {
        let rule_pc = cfi.then(|| if exact_pc { r.pc } else { r.pc.wrapping_sub(1) });
        let (kind, rule) = code.classify(r.pc, rule_pc);
        match kind {
            Code::Java => return (n, Stop::ReachedJava),
            Code::Unknown => return (n, Stop::UnknownCode),
            Code::Native => {}
        }
        let Some(slot) = out.get_mut(n) else {
            return (n, Stop::Depth);
        };
        *slot = r.pc;
        n = n.wrapping_add(1);
        let next = match rule.kind() {
            Kind::End => return (n, Stop::EndOfStack),
            Kind::Signal => {
                rbp_known = true;
                exact_pc = true;
                signal_frame(r.sp, mem)
            }
            Kind::None if rbp_known => {
                exact_pc = false;
                fp_step(r, mem)
            }
            Kind::None => None,
            Kind::Rsp | Kind::Rbp | Kind::Plt => {
                exact_pc = false;
                cfa_step(r, rule, &mut rbp_known, mem)
            }
        };
        match next {
            // A signal frame may return to another stack (sigaltstack); every other caller
            // lives higher up the same stack.
            Some(next) if next.pc != 0 && (next.sp > r.sp || rule.kind() == Kind::Signal) => {
                r = next
            }
            _ => return (n, Stop::BadFrame),
        }
    }
}

#[cfg(test)]
#[allow(
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects,
    clippy::unwrap_used
)]
mod tests {
    use super::*;
    use crate::unwind::rule::{Row, Table};
    use std::collections::HashMap;

    struct Stack {
        lo: u64,
        hi: u64,
        words: HashMap<u64, u64>,
    }

    impl Memory for Stack {
        fn read_u64(&self, addr: u64) -> Option<u64> {
            (addr >= self.lo && addr + 8 <= self.hi && addr % 8 == 0)
                .then(|| *self.words.get(&addr).unwrap_or(&0))
        }
    }

    /// Native code at 0x1000..0x2000 (with CFI rules from `table`), Java at 0x5000..0x6000,
    /// nothing elsewhere.
    struct Layout {
        table: Table,
    }

    impl CodeKind for Layout {
        fn kind(&self, pc: u64) -> Code {
            match pc {
                0x1000..=0x1fff => Code::Native,
                0x5000..=0x5fff => Code::Java,
                _ => Code::Unknown,
            }
        }
        fn rule(&self, pc: u64) -> Rule {
            self.table.rule(pc)
        }
    }

    fn layout(rows: &[(u32, Rule)]) -> Layout {
        Layout {
            table: Table::new(
                0x1000,
                rows.iter()
                    .map(|&(offset, rule)| Row { offset, rule })
                    .collect(),
            ),
        }
    }

    fn rule(kind: Kind, rbp: SavedRbp, off: i64) -> Rule {
        Rule::new(kind, rbp, off).unwrap()
    }

    /// A stack holding `words` at their addresses, readable in 0x7000..0x9000.
    fn stack(words: &[(u64, u64)]) -> Stack {
        Stack {
            lo: 0x7000,
            hi: 0x9000,
            words: words.iter().copied().collect(),
        }
    }

    /// A stack whose frames at `fps` hold (next fp, return address) pairs.
    fn fp_stack(frames: &[(u64, u64, u64)]) -> Stack {
        let words: Vec<(u64, u64)> = frames
            .iter()
            .flat_map(|&(fp, next_fp, ret)| [(fp, next_fp), (fp + 8, ret)])
            .collect();
        stack(&words)
    }

    fn walk_with(
        s: &Stack,
        code: &Layout,
        cfi: bool,
        pc: u64,
        sp: u64,
        fp: u64,
    ) -> (Vec<u64>, Stop) {
        let mut out = [0u64; 8];
        let (n, stop) = walk(Regs { pc, sp, fp }, s, code, cfi, &mut out);
        (out[..n].to_vec(), stop)
    }

    #[test]
    fn frame_pointers_up_to_java() {
        let s = fp_stack(&[
            (0x7100, 0x7200, 0x1200),
            (0x7200, 0x7300, 0x1300),
            (0x7300, 0x7400, 0x5010),
        ]);
        let none = layout(&[]);
        for cfi in [false, true] {
            let (pcs, stop) = walk_with(&s, &none, cfi, 0x1100, 0x7080, 0x7100);
            assert_eq!(pcs, [0x1100, 0x1200, 0x1300]);
            assert_eq!(stop, Stop::ReachedJava);
            assert!(!stop.truncated());
        }
        assert_eq!(
            walk_with(&s, &none, false, 0x5000, 0x7000, 0x7100),
            (vec![], Stop::ReachedJava),
            "a leaf in Java gives an empty native stack"
        );
    }

    #[test]
    fn frame_pointers_stop_on_implausible_frames() {
        let none = layout(&[]);
        let s = fp_stack(&[]);
        // fp outside the bounds (heap pointer in rbp, as in malloc), below sp, misaligned,
        // a small integer (zlib), zero.
        for fp in [0x55_0000, 0x6f00, 0x7103, 0x40, 0] {
            assert_eq!(
                walk_with(&s, &none, false, 0x1100, 0x7000, fp),
                (vec![0x1100], Stop::BadFrame),
                "fp {fp:#x}"
            );
        }
        // A frame that does not climb, and a zero return address.
        let looped = fp_stack(&[(0x7100, 0x7100, 0x1200)]);
        assert_eq!(
            walk_with(&looped, &none, false, 0x1100, 0x7000, 0x7100).1,
            Stop::BadFrame
        );
        let zero_ra = fp_stack(&[(0x7100, 0x7200, 0)]);
        assert_eq!(
            walk_with(&zero_ra, &none, false, 0x1100, 0x7000, 0x7100),
            (vec![0x1100], Stop::BadFrame)
        );
        let unknown = fp_stack(&[(0x7100, 0x7200, 0x9999)]);
        assert_eq!(
            walk_with(&unknown, &none, false, 0x1100, 0x7000, 0x7100),
            (vec![0x1100], Stop::UnknownCode)
        );
    }

    #[test]
    fn depth_limit_truncates() {
        let deep: Vec<_> = (0..20)
            .map(|i| (0x7100 + i * 0x10, 0x7110 + i * 0x10, 0x1200 + i))
            .collect();
        let s = fp_stack(&deep);
        let (pcs, stop) = walk_with(&s, &layout(&[]), false, 0x1100, 0x7000, 0x7100);
        assert_eq!((pcs.len(), stop), (8, Stop::Depth));
        assert!(stop.truncated());
        let mut none: [u64; 0] = [];
        assert_eq!(
            walk(
                Regs {
                    pc: 0x1100,
                    sp: 0,
                    fp: 0
                },
                &s,
                &layout(&[]),
                true,
                &mut none
            ),
            (0, Stop::Depth)
        );
    }

    /// leaf (0x1100, no frame: CFA = rsp + 8) <- middle (0x1200, pushes rbx: rsp + 16, rbp
    /// used for data) <- outer (0x1300, frame pointer: rbp + 16, rbp saved at CFA - 16) <-
    /// Java. Frame pointers alone lose `middle` and fail on its clobbered rbp.
    #[test]
    fn cfi_keeps_the_caller_of_a_frameless_leaf_and_passes_code_without_frame_pointers() {
        let code = layout(&[
            (0x100, rule(Kind::Rsp, SavedRbp::Unchanged, 8)),
            (0x180, Rule::NONE),
            (0x200, rule(Kind::Rsp, SavedRbp::Unchanged, 16)),
            (0x280, Rule::NONE),
            (0x300, rule(Kind::Rbp, SavedRbp::At(2), 16)),
            (0x380, Rule::NONE),
        ]);
        // leaf at sp 0x7000: [0x7000] = return into middle. middle at sp 0x7008: [0x7008] =
        // its saved rbx, [0x7010] = return into outer. outer: rbp = 0x7200 holds the saved rbp
        // (0x7400), [0x7208] returns into Java. Neither leaf nor middle touched rbp.
        let s = stack(&[
            (0x7000, 0x1210),
            (0x7008, 0xdead),
            (0x7010, 0x1310),
            (0x7200, 0x7400),
            (0x7208, 0x5010),
        ]);
        let (pcs, stop) = walk_with(&s, &code, true, 0x1100, 0x7000, 0x7200);
        assert_eq!(pcs, [0x1100, 0x1210, 0x1310]);
        assert_eq!(stop, Stop::ReachedJava);
        // The same stack by frame pointers: rbp is outer's frame, so middle and outer vanish
        // and the walk still "reaches Java". This is the silent loss CFI fixes.
        assert_eq!(
            walk_with(&s, &code, false, 0x1100, 0x7000, 0x7200),
            (vec![0x1100], Stop::ReachedJava)
        );
    }

    #[test]
    fn cfi_restores_a_saved_rbp_and_stops_when_rbp_is_lost() {
        // f (0x1100) saved the caller's rbp at CFA - 16 and uses rbp for data; its caller g
        // (0x1200) has an rbp-based CFA.
        let code = layout(&[
            (0x100, rule(Kind::Rsp, SavedRbp::At(2), 24)),
            (0x200, rule(Kind::Rbp, SavedRbp::At(2), 16)),
            (0x300, rule(Kind::Rsp, SavedRbp::Lost, 16)),
            (0x380, rule(Kind::Rbp, SavedRbp::At(2), 16)),
        ]);
        let s = stack(&[
            (0x7008, 0x7200), // f's save of g's rbp (CFA 0x7018 - 16)
            (0x7010, 0x1210), // return into g
            (0x7200, 0x7300),
            (0x7208, 0x5010),
        ]);
        let (pcs, stop) = walk_with(&s, &code, true, 0x1100, 0x7000, 42);
        assert_eq!((pcs, stop), (vec![0x1100, 0x1210], Stop::ReachedJava));
        // A frame whose rbp is lost, then a caller that needs rbp: truncated, not guessed.
        let s = stack(&[(0x7008, 0x1390)]);
        let (pcs, stop) = walk_with(&s, &code, true, 0x1300, 0x7000, 0x7200);
        assert_eq!((pcs, stop), (vec![0x1300, 0x1390], Stop::BadFrame));
    }

    #[test]
    fn an_epilogue_after_pop_rbp_keeps_the_restored_rbp() {
        // libc's msort_with_tmp at its epilogue: CFA = rsp + 32, rbp "saved at CFA - 48", but
        // that slot was popped (below sp): rbp is already the caller's, whose frame is
        // rbp-based.
        let code = layout(&[
            (0x100, rule(Kind::Rsp, SavedRbp::At(6), 32)),
            (0x200, rule(Kind::Rbp, SavedRbp::At(2), 16)),
        ]);
        let s = stack(&[(0x7018, 0x1210), (0x7200, 0x7300), (0x7208, 0x5010)]);
        let (pcs, stop) = walk_with(&s, &code, true, 0x1100, 0x7000, 0x7200);
        assert_eq!((pcs, stop), (vec![0x1100, 0x1210], Stop::ReachedJava));
    }

    #[test]
    fn return_addresses_are_looked_up_one_byte_back() {
        // g's call to a noreturn function is its last instruction: the return address is the
        // first byte of h, whose rule would be wrong for g.
        let code = layout(&[
            (0x100, rule(Kind::Rsp, SavedRbp::Unchanged, 8)),
            (0x200, rule(Kind::Rsp, SavedRbp::Unchanged, 24)),
            (0x210, rule(Kind::Rsp, SavedRbp::Unchanged, 8)), // h
        ]);
        let s = stack(&[(0x7000, 0x1210), (0x7018, 0x5000)]);
        let (pcs, stop) = walk_with(&s, &code, true, 0x1100, 0x7000, 0);
        assert_eq!((pcs, stop), (vec![0x1100, 0x1210], Stop::ReachedJava));
    }

    #[test]
    fn plt_stub_before_and_after_its_push() {
        let code = layout(&[(0x400, rule(Kind::Plt, SavedRbp::Unchanged, 11))]);
        let s = stack(&[(0x7000, 0x5001), (0x7008, 0x5002)]);
        assert_eq!(
            walk_with(&s, &code, true, 0x1404, 0x7000, 0),
            (vec![0x1404], Stop::ReachedJava)
        );
        let s = stack(&[(0x7000, 0x99), (0x7008, 0x5002)]);
        assert_eq!(
            walk_with(&s, &code, true, 0x140b, 0x7000, 0),
            (vec![0x140b], Stop::ReachedJava)
        );
    }

    #[test]
    fn signal_frames_give_back_the_interrupted_registers() {
        use ucontext_offsets::{RBP, RIP, RSP};
        // handler (0x1100, CFA rsp+8) returns into the trampoline (0x1600), whose ucontext at
        // 0x7010 holds the interrupted pc 0x1700 (a frameless leaf, looked up as is: its rule
        // starts exactly there), sp 0x7800, rbp 0x7900.
        let code = layout(&[
            (0x100, rule(Kind::Rsp, SavedRbp::Unchanged, 16)),
            (0x5ff, rule(Kind::Signal, SavedRbp::Unchanged, 0)),
            (0x640, Rule::NONE),
            (0x700, rule(Kind::Rsp, SavedRbp::Unchanged, 8)),
        ]);
        let uc = 0x7010;
        let s = stack(&[
            (0x7008, 0x1600),
            (uc + RIP, 0x1700),
            (uc + RSP, 0x7800),
            (uc + RBP, 0x7900),
            (0x7800, 0x5000),
        ]);
        let (pcs, stop) = walk_with(&s, &code, true, 0x1100, 0x7000, 0);
        assert_eq!(
            (pcs, stop),
            (vec![0x1100, 0x1600, 0x1700], Stop::ReachedJava)
        );
        // A signal frame whose ucontext lies beyond the readable stack ends the walk.
        let mut s = stack(&[(0x7008, 0x1600)]);
        s.hi = 0x7080;
        let (pcs, stop) = walk_with(&s, &code, true, 0x1100, 0x7000, 0);
        assert_eq!((pcs, stop), (vec![0x1100, 0x1600], Stop::BadFrame));
    }

    #[test]
    fn cfi_stops_on_frames_that_do_not_climb_and_at_thread_start() {
        let code = layout(&[
            (0x100, rule(Kind::Rsp, SavedRbp::Unchanged, 0)),
            (0x200, rule(Kind::Rsp, SavedRbp::Unchanged, -64)),
            (0x300, rule(Kind::End, SavedRbp::Unchanged, 0)),
        ]);
        let s = stack(&[(0x7000, 0x1300)]);
        for pc in [0x1100, 0x1200] {
            assert_eq!(
                walk_with(&s, &code, true, pc, 0x7008, 0),
                (vec![pc], Stop::BadFrame)
            );
        }
        let (pcs, stop) = walk_with(&s, &code, true, 0x1300, 0x7000, 0);
        assert_eq!((pcs, stop), (vec![0x1300], Stop::EndOfStack));
        assert!(!stop.truncated());
    }
}
