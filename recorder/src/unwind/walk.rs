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

use super::rule::{Kind, Rule, SavedRa, SavedRbp};
use super::types::{Code, CodeKind, Memory, Regs, Stop};
use crate::arch::{self, MCONTEXT_END};

/// The registers of the code a signal interrupted, from the signal frame whose trampoline
/// (`__restore_rt`, `__kernel_rt_sigreturn`) is about to run with `sp` at the frame.
fn signal_frame(sp: u64, mem: &impl Memory) -> Option<Regs> {
    arch::signal_regs(sp.checked_add(arch::UC_AT_TRAMPOLINE)?, |a| mem.read_u64(a))
}

/// Most signal frames [`walk_sample`] looks through at the top of one sample (one per other
/// signal that arrived together with ours).
pub const MAX_ENTERED_HANDLERS: usize = 4;

/// If the interrupted code is a signal handler the kernel has just entered, the address of the
/// kernel's `ucontext_t` of that handler's signal and the registers it holds (the code that
/// signal interrupted).
///
/// The rule: the leaf is native code that has not moved the stack pointer since it was called
/// from a signal frame. That is, the word at `sp` is a return address into a signal trampoline
/// (its rule, looked up one byte back like every return address, is [`Kind::Signal`]), the
/// leaf's own rule, where it has one, puts the CFA at `sp + 8` (nothing pushed, no frame), and
/// the whole `uc_mcontext` of the ucontext right above that return address can be read. This is
/// exactly the state the kernel leaves when it delivers two signals at once: it builds the
/// first signal's frame and enters its handler, then, before that handler's first instruction,
/// builds ours on top. The same state holds at such a handler's `ret` and all through a handler
/// that never touches the stack; those few instructions are attributed to the interrupted code
/// as well. A handler that has made a frame or called a function (real work of its own) is not
/// matched and is sampled as it is.
pub fn entered_handler(regs: Regs, mem: &impl Memory, code: &impl CodeKind) -> Option<(u64, Regs)> {
    let (kind, rule) = code.classify(regs.pc, Some(regs.pc));
    let nothing_pushed = match rule.kind() {
        Kind::Rsp => rule.cfa_offset() == arch::ENTRY_CFA_OFFSET && rule.ra() != SavedRa::Lost,
        Kind::None => true,
        Kind::Rbp | Kind::Plt | Kind::Signal | Kind::End | Kind::RspDeref => false,
    };
    if kind != Code::Native || !nothing_pushed {
        return None;
    }
    let (ra, uc) = arch::handler_entry(regs, |a| mem.read_u64(a))?;
    let (ra_kind, ra_rule) = code.classify(ra, Some(ra.checked_sub(1)?));
    if ra_kind != Code::Native || ra_rule.kind() != Kind::Signal {
        return None;
    }
    mem.read_u64(uc.checked_add(MCONTEXT_END)?.checked_sub(8)?)?;
    // The kernel builds a signal frame below the interrupted stack pointer, on the same stack
    // (sigaltstack frames lie outside the bounds the handler reads).
    arch::signal_regs(uc, |a| mem.read_u64(a))
        .filter(|inner| inner.sp > uc)
        .map(|inner| (uc, inner))
}

/// A sample's native walk: how many pcs, why it stopped, and where it was taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sample {
    /// Pcs written.
    pub count: usize,
    /// Why the walk ended.
    pub stop: Stop,
    /// The address of the kernel's `ucontext_t` the sample was taken from, when the handler's
    /// own context was another signal handler just entered ([`entered_handler`]); `None`: the
    /// handler's own.
    pub context: Option<u64>,
    /// Where the walk reached Java code (stop `ReachedJava` after at least one native frame):
    /// the registers of the first Java frame, its pc a return address.
    pub java_entry: Option<Regs>,
}

/// Walks one sample: first looks through the signal frames of handlers the kernel entered just
/// before ours (at most [`MAX_ENTERED_HANDLERS`], only with `cfi`: the trampoline is known by
/// its call-frame information), then [`walk`]s from the code they interrupted.
pub fn walk_sample(
    regs: Regs,
    mem: &impl Memory,
    code: &impl CodeKind,
    cfi: bool,
    out: &mut [u64],
) -> Sample {
    let mut r = regs;
    let mut context = None;
    if cfi {
        for _ in 0..MAX_ENTERED_HANDLERS {
            match entered_handler(r, mem, code) {
                Some((uc, inner)) => {
                    context = Some(uc);
                    r = inner;
                }
                None => break,
            }
        }
    }
    let (count, stop, java_entry) = walk_to_java(r, mem, code, cfi, out);
    Sample {
        count,
        stop,
        context,
        java_entry: java_entry.filter(|_| count > 0),
    }
}

/// The caller's frame by frame pointers: `[fp]` is the caller's rbp, `[fp + 8]` the return
/// address, and the caller's stack starts at `fp + 16` (on aarch64, at or above it).
fn fp_step(r: Regs, mem: &impl Memory) -> Option<Regs> {
    if r.fp < r.sp || r.fp % 8 != 0 {
        return None;
    }
    Some(Regs {
        pc: arch::code_address(mem.read_u64(r.fp.checked_add(8)?)?),
        sp: r.fp.checked_add(16)?,
        fp: mem.read_u64(r.fp)?,
        lr: 0,
    })
}

/// The caller's frame by a CFA rule (`Rsp`, `Rbp`, `Plt`, `RspDeref`); `None` if it cannot be
/// found.
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
        // The caller's sp, kept in this frame (read from the stack, bounds-checked).
        Kind::RspDeref => mem
            .read_u64(r.sp.checked_add_signed(rule.cfa_offset())?)?
            .checked_add(8)?,
        _ => return None,
    };
    // The return address sits below the CFA (x86_64: just below), at or above the current
    // sp; or, in a frame that has not saved it, in the link register. Either may be signed
    // (aarch64's pac-ret).
    let ra = match rule.ra() {
        SavedRa::At(k) => {
            let ra_slot = cfa.checked_sub(u64::from(k).checked_mul(8)?)?;
            if ra_slot < r.sp {
                return None;
            }
            mem.read_u64(ra_slot)?
        }
        SavedRa::InLink if r.lr != 0 => r.lr,
        SavedRa::InLink | SavedRa::Lost => return None,
    };
    let pc = arch::code_address(ra);
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
        pc,
        sp: cfa,
        fp,
        lr: 0,
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
    let (n, stop, _) = walk_to_java(regs, mem, code, cfi, out);
    (n, stop)
}

/// [`walk`], also giving the registers at the Java frame where it stopped (`ReachedJava`).
pub fn walk_to_java(
    regs: Regs,
    mem: &impl Memory,
    code: &impl CodeKind,
    cfi: bool,
    out: &mut [u64],
) -> (usize, Stop, Option<Regs>) {
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
            Code::Java => return (n, Stop::ReachedJava, rbp_known.then_some(r)),
            Code::Unknown => return (n, Stop::UnknownCode, None),
            Code::Native => {}
        }
        let Some(slot) = out.get_mut(n) else {
            return (n, Stop::Depth, None);
        };
        *slot = r.pc;
        n = n.wrapping_add(1);
        let next = match rule.kind() {
            Kind::End => return (n, Stop::EndOfStack, None),
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
            // aarch64's outermost frames (`_start`, a thread's start) say `.cfi_undefined x30`,
            // which reads as a return address still in x30, and zero x29.
            Kind::Rsp | Kind::Rbp
                if rule.ra() == SavedRa::InLink && r.lr == 0 && rbp_known && r.fp == 0 =>
            {
                return (n, Stop::EndOfStack, None)
            }
            Kind::Rsp | Kind::Rbp | Kind::Plt | Kind::RspDeref => {
                exact_pc = false;
                cfa_step(r, rule, &mut rbp_known, mem)
            }
        };
        // A signal frame may return to another stack (sigaltstack); every other caller lives
        // higher up the same stack, or (a frameless leaf whose return address is in the link
        // register, once per walk: the caller's lr is unknown) at the same sp.
        let climbs = |next: &Regs| {
            next.sp > r.sp
                || rule.kind() == Kind::Signal
                || (next.sp == r.sp && r.lr != 0 && rule.ra() == SavedRa::InLink)
        };
        match next {
            Some(next) if next.pc != 0 && climbs(&next) => r = next,
            _ => return (n, Stop::BadFrame, None),
        }
    }
}

// The synthetic stacks are x86_64's: return addresses pushed by calls.
#[cfg(all(test, target_arch = "x86_64"))]
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
        let (n, stop) = walk(Regs { pc, sp, fp, lr: 0 }, s, code, cfi, &mut out);
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
                    fp: 0,
                    lr: 0,
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

    /// leaf (0x1100, no frame) <- powerx5 (0x1200: keeps its caller's sp at rsp + 40 and uses
    /// rbp for data, having saved the caller's at CFA - 24: BoringSSL's `bn_powerx5`) <- outer
    /// (0x1300, frame pointer) <- Java.
    #[test]
    fn cfi_follows_a_cfa_kept_in_the_frame() {
        let code = layout(&[
            (0x100, rule(Kind::Rsp, SavedRbp::Unchanged, 8)),
            (0x180, Rule::NONE),
            (0x200, rule(Kind::RspDeref, SavedRbp::At(3), 40)),
            (0x280, Rule::NONE),
            (0x300, rule(Kind::Rbp, SavedRbp::At(2), 16)),
            (0x380, Rule::NONE),
        ]);
        // leaf at sp 0x7000 returns into powerx5 ([0x7000]); powerx5's sp is 0x7008 and its
        // caller's sp - 8 (0x7100) is at 0x7008 + 40: CFA 0x7108, return address at 0x7100,
        // the caller's rbp (0x7200) at CFA - 24. outer: [0x7200] = 0x7400, [0x7208] -> Java.
        let s = stack(&[
            (0x7000, 0x1210),
            (0x7030, 0x7100),
            (0x7100, 0x1310),
            (0x70f0, 0x7200),
            (0x7200, 0x7400),
            (0x7208, 0x5010),
        ]);
        let (pcs, stop) = walk_with(&s, &code, true, 0x1100, 0x7000, 0xbad0);
        assert_eq!(pcs, [0x1100, 0x1210, 0x1310]);
        assert_eq!(stop, Stop::ReachedJava);
        // A kept sp that points below the frame is refused, not followed.
        let below = stack(&[(0x7000, 0x1210), (0x7030, 0x6000)]);
        let (pcs, stop) = walk_with(&below, &code, true, 0x1100, 0x7000, 0xbad0);
        assert_eq!((pcs, stop), (vec![0x1100, 0x1210], Stop::BadFrame));
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
        use crate::arch::uc::{FP as RBP, PC as RIP, SP as RSP};
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

    /// Code for the entered-handler tests: a handler at 0x1100 (CFA rsp + 8 at its entry, rsp +
    /// 16 from 0x1104 on, after it made a frame), the trampoline at 0x1600 (found at 0x15ff),
    /// native code without a frame at 0x1700, a function with an rbp frame at 0x1800.
    fn handler_layout() -> Layout {
        layout(&[
            (0x100, rule(Kind::Rsp, SavedRbp::Unchanged, 8)),
            (0x104, rule(Kind::Rsp, SavedRbp::Unchanged, 16)),
            (0x5ff, rule(Kind::Signal, SavedRbp::Unchanged, 0)),
            (0x640, Rule::NONE),
            (0x700, rule(Kind::Rsp, SavedRbp::Unchanged, 8)),
            (0x800, rule(Kind::Rbp, SavedRbp::At(2), 16)),
        ])
    }

    /// A signal frame whose return address is at `at` and whose ucontext (right above it)
    /// holds `pc`, `sp`, `fp`.
    fn signal_frame_words(at: u64, pc: u64, sp: u64, fp: u64) -> Vec<(u64, u64)> {
        use crate::arch::uc::{FP as RBP, PC as RIP, SP as RSP};
        let uc = at + 8;
        vec![(at, 0x1600), (uc + RIP, pc), (uc + RSP, sp), (uc + RBP, fp)]
    }

    fn sample_with(s: &Stack, code: &Layout, cfi: bool, pc: u64, sp: u64) -> (Vec<u64>, Sample) {
        let mut out = [0u64; 8];
        let sample = walk_sample(
            Regs {
                pc,
                sp,
                fp: 0,
                lr: 0,
            },
            s,
            code,
            cfi,
            &mut out,
        );
        (out[..sample.count].to_vec(), sample)
    }

    #[test]
    fn a_sample_at_another_handlers_entry_is_taken_from_the_code_its_signal_interrupted() {
        let code = handler_layout();
        // The other handler (0x1100) was entered with sp 0x7000 and has run no instruction; its
        // signal interrupted Java code at 0x5010, sp 0x7800.
        let s = stack(&signal_frame_words(0x7000, 0x5010, 0x7800, 0x7900));
        let (pcs, sample) = sample_with(&s, &code, true, 0x1100, 0x7000);
        assert_eq!(
            pcs,
            Vec::<u64>::new(),
            "no native frame: the thread was in Java"
        );
        assert_eq!(
            (sample.stop, sample.context),
            (Stop::ReachedJava, Some(0x7008))
        );
        // Interrupted in native code (0x1700, frameless, returning into Java): the native
        // frames start there.
        let mut words = signal_frame_words(0x7000, 0x1700, 0x7800, 0x7900);
        words.push((0x7800, 0x5020));
        let s = stack(&words);
        let (pcs, sample) = sample_with(&s, &code, true, 0x1100, 0x7000);
        assert_eq!(pcs, [0x1700]);
        assert_eq!(
            (sample.stop, sample.context),
            (Stop::ReachedJava, Some(0x7008))
        );
        // The same stack walked as it is: the handler and the trampoline come first.
        let (pcs, stop) = walk_with(&s, &code, true, 0x1100, 0x7000, 0);
        assert_eq!(
            (pcs, stop),
            (vec![0x1100, 0x1600, 0x1700], Stop::ReachedJava)
        );
    }

    #[test]
    fn signals_that_arrived_together_are_looked_through_one_by_one() {
        let code = handler_layout();
        // Two other handlers entered at once, each at its entry; the outer signal interrupted
        // Java.
        let mut words = signal_frame_words(0x7000, 0x1100, 0x7400, 0);
        words.extend(signal_frame_words(0x7400, 0x5010, 0x7800, 0x7900));
        let s = stack(&words);
        let (pcs, sample) = sample_with(&s, &code, true, 0x1100, 0x7000);
        assert_eq!(pcs, Vec::<u64>::new());
        assert_eq!(
            (sample.stop, sample.context),
            (Stop::ReachedJava, Some(0x7408))
        );
    }

    #[test]
    fn a_handler_at_work_is_sampled_as_it_is() {
        let code = handler_layout();
        // The handler made a frame (0x1104: CFA rsp + 16): its return address is at sp + 8.
        let s = stack(&signal_frame_words(0x7008, 0x5010, 0x7800, 0x7900));
        let (pcs, sample) = sample_with(&s, &code, true, 0x1104, 0x7000);
        assert_eq!(pcs, [0x1104, 0x1600]);
        assert_eq!((sample.stop, sample.context), (Stop::ReachedJava, None));
        // A handler deeper in its work: a frame-pointer function called by the handler.
        // It saved the handler's rbp at 0x7010 and returns to 0x1110 (CFA rsp + 16 there).
        let mut words = signal_frame_words(0x7028, 0x5010, 0x7800, 0x7900);
        words.extend([(0x7010, 0x7100), (0x7018, 0x1110)]);
        let s = stack(&words);
        let mut out = [0u64; 8];
        let sample = walk_sample(
            Regs {
                pc: 0x1800,
                sp: 0x7000,
                fp: 0x7010,
                lr: 0,
            },
            &s,
            &code,
            true,
            &mut out,
        );
        assert_eq!(sample.context, None);
        assert_eq!(out[..sample.count], [0x1800, 0x1110, 0x1600]);
    }

    #[test]
    fn only_a_return_into_a_signal_trampoline_with_a_readable_context_restarts_a_sample() {
        let code = handler_layout();
        // Native code at entry (CFA rsp + 8) returning into Java, not into a trampoline.
        let s = stack(&[(0x7000, 0x5010)]);
        let (pcs, sample) = sample_with(&s, &code, true, 0x1700, 0x7000);
        assert_eq!((pcs, sample.context), (vec![0x1700], None));
        // A Java leaf above a signal frame is not a handler.
        let s = stack(&signal_frame_words(0x7000, 0x5010, 0x7800, 0x7900));
        assert_eq!(sample_with(&s, &code, true, 0x5000, 0x7000).1.context, None);
        // The ucontext's registers run past the readable stack.
        let mut s = stack(&signal_frame_words(0x7000, 0x5010, 0x7800, 0x7900));
        s.hi = 0x7000 + MCONTEXT_END;
        assert_eq!(sample_with(&s, &code, true, 0x1100, 0x7000).1.context, None);
        s.hi += 8;
        assert_eq!(
            sample_with(&s, &code, true, 0x1100, 0x7000).1.context,
            Some(0x7008)
        );
        // An interrupted sp at or below the signal frame: not a frame the kernel built.
        let s = stack(&signal_frame_words(0x7000, 0x5010, 0x7008, 0x7900));
        assert_eq!(sample_with(&s, &code, true, 0x1100, 0x7000).1.context, None);
        // Frame pointers only: the trampoline is not known.
        let s = stack(&signal_frame_words(0x7000, 0x5010, 0x7800, 0x7900));
        assert_eq!(
            sample_with(&s, &code, false, 0x1100, 0x7000).1.context,
            None
        );
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

// aarch64's own: return addresses in x30 until a function saves them in its frame record.
// Run under qemu-user (`cargo test -p recorder --target aarch64-unknown-linux-gnu --lib
// unwind`, the runner in .cargo/config.toml).
#[cfg(all(test, target_arch = "aarch64"))]
#[allow(clippy::indexing_slicing, clippy::unwrap_used)]
mod aarch64_tests {
    use super::*;
    use crate::unwind::rule::{Row, Table};
    use std::collections::HashMap;

    struct Stack(HashMap<u64, u64>);

    impl Memory for Stack {
        fn read_u64(&self, addr: u64) -> Option<u64> {
            (0x7000..0x9000)
                .contains(&addr)
                .then(|| *self.0.get(&addr).unwrap_or(&0))
        }
    }

    struct Layout(Table);

    impl CodeKind for Layout {
        fn kind(&self, pc: u64) -> Code {
            match pc {
                0x1000..=0x1fff => Code::Native,
                0x5000..=0x5fff => Code::Java,
                _ => Code::Unknown,
            }
        }
        fn rule(&self, pc: u64) -> Rule {
            self.0.rule(pc)
        }
    }

    /// leaf (0x1100: no frame, CFA = sp, return address in x30) <- middle (0x1200:
    /// `stp x29, x30, [sp, #-32]!`: CFA = sp + 32, x29 at CFA - 32, x30 at CFA - 24) <- outer
    /// (0x1300, the outermost: `.cfi_undefined x30`, x29 = 0).
    fn layout() -> Layout {
        let leaf = Rule::new(Kind::Rsp, SavedRbp::Unchanged, 0)
            .unwrap()
            .with_ra(SavedRa::InLink)
            .unwrap();
        let middle = Rule::new(Kind::Rsp, SavedRbp::At(4), 32)
            .unwrap()
            .with_ra(SavedRa::At(3))
            .unwrap();
        let rows = [(0x100, leaf), (0x200, middle), (0x300, leaf)];
        Layout(Table::new(
            0x1000,
            rows.iter()
                .map(|&(offset, rule)| Row { offset, rule })
                .collect(),
        ))
    }

    fn walk_from(words: &[(u64, u64)], regs: Regs) -> (Vec<u64>, Stop) {
        let mut out = [0u64; 8];
        let s = Stack(words.iter().copied().collect());
        let (n, stop) = walk(regs, &s, &layout(), true, &mut out);
        (out[..n].to_vec(), stop)
    }

    #[test]
    fn a_frameless_leaf_returns_through_the_link_register() {
        // middle's frame record at 0x7000 (its sp): x29 0x7400, x30 into Java.
        let words = [(0x7000, 0x7400), (0x7008, 0x5010)];
        let regs = Regs {
            pc: 0x1100,
            sp: 0x7000,
            fp: 0x7000,
            lr: 0x1210,
        };
        assert_eq!(
            walk_from(&words, regs),
            (vec![0x1100, 0x1210], Stop::ReachedJava)
        );
        // Without the link register (a frame stepped to) the leaf's caller is unknown.
        let lost = Regs { lr: 0, ..regs };
        assert_eq!(walk_from(&words, lost), (vec![0x1100], Stop::BadFrame));
    }

    #[test]
    fn the_outermost_frame_ends_the_stack() {
        // middle returns into outer (0x1310) with x29 = 0: outer says x30 is undefined.
        let words = [(0x7000, 0), (0x7008, 0x1310)];
        let regs = Regs {
            pc: 0x1210,
            sp: 0x7000,
            fp: 0x7000,
            lr: 0,
        };
        assert_eq!(
            walk_from(&words, regs),
            (vec![0x1210, 0x1310], Stop::EndOfStack)
        );
    }
}
