//! The way out of an out-of-line stub of compiled code: from a pc in the stub (the return
//! address of its call into libjvm, or the interrupted instruction) to its jump back into the
//! method body, and how far the stack pointer moves on the way.
//!
//! C2 and C1 put the slow paths of GC barriers, monitors and class-initialization patching
//! after the method body. Such a stub saves the live registers below the method's frame (an
//! area whose size depends on the registers live there, vector registers included), calls
//! the runtime without a frame anchor, restores the registers and jumps back. The stub has no
//! debug information and no frame size of its own; its code says both where it returns and
//! how much it pushed. The instructions from the pc to the jump are decoded with `iced-x86`
//! (decoder only: no allocation; its tables are built once, off the signal handler, by
//! [`prime`]), following the stack pointer through `push`/`pop`, `add`/`sub`/`lea` of `rsp`.
//! Anything else that writes `rsp`, a return or an indirect branch ends the search with
//! nothing: no frame is guessed. The caller checks the result against the method's frame
//! (its sender must be a call site).
//!
//! The same decoding follows a method's prologue ([`prologue`]) to where its frame is
//! complete: a sample there finds the frame half made, over stale words of earlier calls; and
//! its body or epilogue ([`resume`]) to where the frame is whole again or to the `ret`: a
//! sample between a `push` and its `pop` in the body, or after the epilogue's `pop rbp`.

#![deny(
    clippy::indexing_slicing,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::arithmetic_side_effects
)]

use iced_x86::{
    Code, Decoder, DecoderOptions, FlowControl, Instruction, Mnemonic, OpKind, Register,
};

use super::code_types::{Exit, Prologue, Resume};
use crate::fault;

/// Bytes of code copied at a time.
const WINDOW: usize = 256;
/// Most instructions decoded (a stub restoring 32 vector and 16 general registers has ~60).
const MAX_INSTRUCTIONS: usize = 384;
/// Most forward jumps followed inside the code.
const MAX_JUMPS: usize = 4;
/// Most bytes a stub may have pushed (a bound on a misread).
const MAX_PUSHED: i64 = 64 * 1024;
/// The most bytes a stub may have pushed (`MAX_PUSHED`), as an unsigned distance.
pub const MAX_PUSHED_BYTES: u64 = MAX_PUSHED.unsigned_abs();

/// Builds the decoder's tables (a lazily initialized static of `iced-x86`, allocated on first
/// use): called once off the signal handler, before any sample.
pub fn prime() {
    let mut decoder = Decoder::new(64, &[0x90], DecoderOptions::NONE);
    let _ = decoder.decode();
}

/// A copy of code bytes, refilled as the decoding moves on.
struct Window {
    bytes: [u8; WINDOW],
    /// Address of `bytes[0]` (8-byte aligned).
    base: u64,
    /// Valid bytes.
    len: usize,
}

impl Window {
    /// A window holding nothing yet.
    fn empty() -> Window {
        Window {
            bytes: [0; WINDOW],
            base: 0,
            len: 0,
        }
    }

    /// Copies up to [`WINDOW`] bytes from the word holding `at` (fewer where memory ends).
    fn fill(&mut self, at: u64) -> bool {
        self.base = at & !7;
        self.len = 0;
        for chunk in self.bytes.chunks_exact_mut(8) {
            let Some(addr) = self.base.checked_add(self.len as u64) else {
                break;
            };
            let Some(word) = fault::read_u64(addr) else {
                break;
            };
            chunk.copy_from_slice(&word.to_le_bytes());
            self.len = self.len.saturating_add(8);
        }
        at.checked_sub(self.base)
            .is_some_and(|skip| (skip as usize) < self.len)
    }

    /// The instruction at `ip`, refilling the window when it is outside or too near its end.
    fn decode(&mut self, ip: u64) -> Option<Instruction> {
        let inside = ip
            .checked_sub(self.base)
            .map(|o| o as usize)
            .filter(|&o| o.saturating_add(15) < self.len || (self.len < WINDOW && o < self.len));
        let offset = match inside {
            Some(o) => o,
            None => {
                if !self.fill(ip) {
                    return None;
                }
                ip.checked_sub(self.base)? as usize
            }
        };
        let code = self.bytes.get(offset..self.len)?;
        let mut decoder = Decoder::with_ip(64, code, ip, DecoderOptions::NONE);
        let instruction = decoder.decode();
        (!instruction.is_invalid()).then_some(instruction)
    }
}

/// How an instruction moves `rsp`: `Some(bytes up)` (negative: down), `None` if it writes
/// `rsp` in a way not followed.
fn sp_change(i: &Instruction) -> Option<i64> {
    match i.code() {
        Code::Push_r64 | Code::Pushq_imm8 | Code::Pushq_imm32 | Code::Pushfq => return Some(-8),
        Code::Pop_r64 if i.op0_register() != Register::RSP => return Some(8),
        Code::Popfq => return Some(8),
        // A direct call returns with `rsp` as it was.
        Code::Call_rel32_64 => return Some(0),
        Code::Add_rm64_imm8 | Code::Add_rm64_imm32 if writes_rsp(i) => {
            return Some(i.immediate(1) as i64);
        }
        Code::Sub_rm64_imm8 | Code::Sub_rm64_imm32 if writes_rsp(i) => {
            return (i.immediate(1) as i64).checked_neg();
        }
        Code::Lea_r64_m if writes_rsp(i) => {
            let plain = i.memory_base() == Register::RSP && i.memory_index() == Register::None;
            return plain.then_some(i.memory_displacement64() as i64);
        }
        _ => {}
    }
    // A comparison only reads `rsp` (C2's return poll from JDK 17: `cmp rsp, [r15 + off]`).
    if matches!(i.mnemonic(), Mnemonic::Cmp | Mnemonic::Test) && !i.is_stack_instruction() {
        return Some(0);
    }
    if i.is_stack_instruction() || uses_rsp_register(i) {
        return None;
    }
    Some(0)
}

/// Whether the first operand is the register `rsp`.
fn writes_rsp(i: &Instruction) -> bool {
    i.op0_kind() == OpKind::Register && i.op0_register() == Register::RSP
}

/// Whether any operand is `rsp` (or a part of it) as a register (not as a memory base).
fn uses_rsp_register(i: &Instruction) -> bool {
    (0..i.op_count()).any(|n| {
        i.op_kind(n) == OpKind::Register && i.op_register(n).full_register() == Register::RSP
    })
}

/// Follows the code from `pc` to a jump back to an address below `pc` for which `is_body`
/// holds (the method body of the same blob), and how much `rsp` moves on the way. Direct
/// calls are stepped over (they return with `rsp` unchanged); conditional branches are not
/// taken (the stub's paths meet again before the exit); forward jumps within the code are
/// followed. `None` if the code leaves otherwise (a return, an indirect branch), writes `rsp`
/// in a way not followed, or is not readable. Signal-safe: no allocation, fault-safe reads.
pub fn follow(pc: u64, is_body: impl Fn(u64) -> bool) -> Option<Exit> {
    let mut window = Window::empty();
    let mut ip = pc;
    let mut up: i64 = 0;
    let mut jumps = 0usize;
    for _ in 0..MAX_INSTRUCTIONS {
        let i = window.decode(ip)?;
        up = up.checked_add(sp_change(&i)?)?;
        if !(-MAX_PUSHED..=MAX_PUSHED).contains(&up) {
            return None;
        }
        match i.flow_control() {
            FlowControl::Next | FlowControl::ConditionalBranch | FlowControl::Call => {
                ip = i.next_ip();
            }
            FlowControl::UnconditionalBranch if i.op0_kind() == OpKind::NearBranch64 => {
                let target = i.near_branch_target();
                if target < pc && is_body(target) {
                    return (up >= 0 && up % 8 == 0).then_some(Exit {
                        target,
                        sp_up: up as u64,
                    });
                }
                jumps = jumps.saturating_add(1);
                if target <= ip || jumps > MAX_JUMPS {
                    return None;
                }
                ip = target;
            }
            _ => return None,
        }
    }
    None
}

/// What the code followed so far did to `rbp`.
#[derive(Clone, Copy)]
enum Rbp {
    /// Not written: the register holds what it held at the pc.
    Untouched,
    /// Last written by a `pop rbp` from `rsp + offset` (offset from the pc's `rsp`).
    PoppedAt(u64),
    /// Written otherwise.
    Clobbered,
}

/// Follows a compiled method's or a stub's code from `pc` (past its prologue) in straight line
/// until its frame is known: an instruction for which `is_whole` holds (a pc with debug
/// information), or the `ret` (through a `leave` if no instruction on the way wrote `rbp`
/// before it: [`Resume::ReturnThroughFrame`]). Conditional branches are not taken (in compiled
/// code `rsp` is the same on every path to an instruction), calls are stepped over (they return
/// with `rsp` as it was), unconditional direct jumps are followed while their target is in the
/// code (`in_method`). Every instruction on the way must lie in `within` (a stub's own bounds:
/// falling through past its end would reach the next stub's code). `None` if the code leaves
/// otherwise, writes `rsp` in a way not followed, writes `rbp` after its `pop` (or, reaching
/// the `ret`, without one), or is not readable. Signal-safe: no allocation, fault-safe reads.
pub fn resume(
    pc: u64,
    within: std::ops::Range<u64>,
    in_method: impl Fn(u64) -> bool,
    is_whole: impl Fn(u64) -> bool,
) -> Option<Resume> {
    let in_code = |t: u64| within.contains(&t) && in_method(t);
    let mut window = Window::empty();
    let mut ip = pc;
    let mut up: i64 = 0;
    let mut jumps = 0usize;
    let mut rbp = Rbp::Untouched;
    // Whether `rsp` has moved only by pushes and pops so far (not by the epilogue's `add`).
    let mut only_pops = true;
    for _ in 0..MAX_INSTRUCTIONS {
        // A pc with debug information in the body, not in the epilogue (past its `add rsp` or
        // `pop rbp`): an epilogue's pc (a return poll) may have one too, with the frame gone.
        if is_whole(ip) && only_pops && matches!(rbp, Rbp::Untouched) && up >= 0 && up % 8 == 0 {
            return u64::try_from(up).ok().map(|sp_up| Resume::Body { sp_up });
        }
        if !within.contains(&ip) {
            return None;
        }
        let i = window.decode(ip)?;
        let flow = i.flow_control();
        if i.code() == Code::Leaveq {
            // `mov rsp, rbp; pop rbp` of a frame made before the pc: what follows is counted
            // from the `rbp` register's value.
            if !matches!(rbp, Rbp::Untouched) {
                return None;
            }
            return after_leave(&mut window, i.next_ip(), &within, &in_code, jumps);
        }
        if flow == FlowControl::Return {
            if i.code() != Code::Retnq {
                return None; // `ret imm16`: not a compiled method's
            }
            let rbp_popped_at = match rbp {
                Rbp::Untouched => None,
                Rbp::PoppedAt(offset) => Some(offset),
                Rbp::Clobbered => return None,
            };
            return u64::try_from(up).ok().map(|sp_up| Resume::Return {
                sp_up,
                rbp_popped_at,
            });
        }
        let change = match flow {
            // An indirect call (`call r10`: a leaf call into the VM) returns with `rsp` as
            // it was, as a direct one.
            FlowControl::IndirectCall if !uses_rsp_register(&i) => 0,
            _ => sp_change(&i)?,
        };
        rbp = match rbp_write(&i) {
            RbpWrite::None => rbp,
            RbpWrite::Pop => Rbp::PoppedAt(u64::try_from(up).ok()?),
            RbpWrite::Other => Rbp::Clobbered,
        };
        if change != 0 && !matches!(i.code(), Code::Push_r64 | Code::Pop_r64) {
            only_pops = false;
        }
        up = up.checked_add(change)?;
        if !(-MAX_PUSHED..=MAX_PUSHED).contains(&up) {
            return None;
        }
        ip = straight_on(&i, true, &mut jumps, &in_code)?;
    }
    None
}

/// Where straight-line code goes on after instruction `i`: the next one (past a conditional
/// branch not taken, and with `calls`, past a call, which returns with `rsp` as it was), or
/// a direct jump's target while it is in the code and `jumps` stays within [`MAX_JUMPS`].
/// `None` for anything else (a return, an indirect jump).
fn straight_on(
    i: &Instruction,
    calls: bool,
    jumps: &mut usize,
    in_method: &impl Fn(u64) -> bool,
) -> Option<u64> {
    match i.flow_control() {
        FlowControl::Next | FlowControl::ConditionalBranch => Some(i.next_ip()),
        FlowControl::Call | FlowControl::IndirectCall if calls => Some(i.next_ip()),
        FlowControl::UnconditionalBranch if i.op0_kind() == OpKind::NearBranch64 => {
            let target = i.near_branch_target();
            *jumps = jumps.saturating_add(1);
            (*jumps <= MAX_JUMPS && in_method(target)).then_some(target)
        }
        _ => None,
    }
}

/// [`resume`] past a `leave`, at `ip`: the instructions to the `ret` may only pop (or add to
/// `rsp`) and must not write `rbp`; the return address is then 8 bytes and what they popped
/// above the `rbp` register's value.
fn after_leave(
    window: &mut Window,
    mut ip: u64,
    within: &std::ops::Range<u64>,
    in_method: &impl Fn(u64) -> bool,
    mut jumps: usize,
) -> Option<Resume> {
    let mut above: i64 = 8;
    for _ in 0..MAX_INSTRUCTIONS {
        if !within.contains(&ip) {
            return None;
        }
        let i = window.decode(ip)?;
        let flow = i.flow_control();
        if flow == FlowControl::Return {
            if i.code() != Code::Retnq {
                return None;
            }
            return u64::try_from(above)
                .ok()
                .map(|ret_above_fp| Resume::ReturnThroughFrame { ret_above_fp });
        }
        if !matches!(rbp_write(&i), RbpWrite::None) {
            return None;
        }
        above = above.checked_add(sp_change(&i)?)?;
        if !(8..=MAX_PUSHED).contains(&above) {
            return None;
        }
        ip = straight_on(&i, false, &mut jumps, in_method)?;
    }
    None
}

/// How an instruction writes `rbp`.
enum RbpWrite {
    /// It does not.
    None,
    /// `pop rbp`.
    Pop,
    /// It may, otherwise.
    Other,
}

/// Whether the instruction may write `rbp` (or a part of it): as its first operand (the
/// destination; `push`, `cmp`, `test` and `bt` only read it), or as any operand of an
/// exchange.
fn rbp_write(i: &Instruction) -> RbpWrite {
    if i.code() == Code::Pop_r64 && i.op0_register() == Register::RBP {
        return RbpWrite::Pop;
    }
    let is_rbp = |n: u32| {
        i.op_kind(n) == OpKind::Register && i.op_register(n).full_register() == Register::RBP
    };
    let written = match i.mnemonic() {
        Mnemonic::Push | Mnemonic::Cmp | Mnemonic::Test | Mnemonic::Bt => false,
        Mnemonic::Xchg | Mnemonic::Xadd | Mnemonic::Cmpxchg => (0..i.op_count()).any(is_rbp),
        _ => i.op_count() > 0 && is_rbp(0),
    };
    if written {
        RbpWrite::Other
    } else {
        RbpWrite::None
    }
}

/// Whether the bytes right before `ret` are a call instruction (direct `call rel32`, or indirect
/// through a register or memory, 2 to 7 bytes long) that returns there: what makes a code
/// address a return address. With debug information between safepoints, many pcs of compiled
/// code have a PcDesc, so having one no longer tells a return address from a stale word.
/// Signal-safe: no allocation, fault-safe reads.
pub fn follows_call(ret: u64) -> bool {
    let mut window = Window::empty();
    (2u64..=7).any(|len| {
        ret.checked_sub(len)
            .and_then(|at| window.decode(at))
            .is_some_and(|i| {
                i.next_ip() == ret
                    && matches!(
                        i.flow_control(),
                        FlowControl::Call | FlowControl::IndirectCall
                    )
            })
    })
}

/// Most bytes between a PcDesc and the leaf call it may stand for ([`straight_to_call`]): the
/// guards and argument set-up of an arraycopy call are under 100 bytes.
pub const MAX_STRAIGHT_BYTES: u64 = 128;

/// Whether the code from `from` (an instruction boundary) runs straight to a call that returns
/// to `ret`: every instruction before it falls through or branches conditionally (no jump,
/// return or other call), the last is a call (direct or indirect) ending exactly at `ret`, and
/// the whole is at most [`MAX_STRAIGHT_BYTES`]. Then no debug information of its own lies
/// between `from` and the call, and the fall-through path reaches it. Signal-safe: no
/// allocation, fault-safe reads.
pub fn straight_to_call(from: u64, ret: u64) -> bool {
    if from >= ret || ret.saturating_sub(from) > MAX_STRAIGHT_BYTES {
        return false;
    }
    let mut window = Window::empty();
    let mut ip = from;
    while ip < ret {
        let Some(i) = window.decode(ip) else {
            return false;
        };
        let next = i.next_ip();
        if next == ret {
            return matches!(
                i.flow_control(),
                FlowControl::Call | FlowControl::IndirectCall
            );
        }
        if next > ret
            || !matches!(
                i.flow_control(),
                FlowControl::Next | FlowControl::ConditionalBranch
            )
        {
            return false;
        }
        ip = next;
    }
    false
}

/// Follows a method's prologue from `pc` to `complete` (where the method says its frame is
/// complete), in straight line: stack banging, the frame's `push`/`sub`, the nmethod entry
/// barrier's test (its conditional branch not taken, its call stepped over). `None` if the
/// code does not reach `complete` so, writes `rsp` in a way not followed, or is not readable.
/// Signal-safe: no allocation, fault-safe reads.
pub fn prologue(pc: u64, complete: u64) -> Option<Prologue> {
    let mut window = Window::empty();
    let mut ip = pc;
    let mut change: i64 = 0;
    let mut saves_rbp = false;
    for _ in 0..MAX_INSTRUCTIONS {
        if ip == complete {
            return Some(Prologue {
                sp_change: change,
                saves_rbp,
                return_in_link: false,
            });
        }
        if ip > complete {
            return None;
        }
        let i = window.decode(ip)?;
        change = change.checked_add(sp_change(&i)?)?;
        if !(-MAX_PUSHED..=MAX_PUSHED).contains(&change) {
            return None;
        }
        saves_rbp |= stores_rbp(&i);
        match i.flow_control() {
            FlowControl::Next | FlowControl::ConditionalBranch | FlowControl::Call => {
                ip = i.next_ip();
            }
            _ => return None,
        }
    }
    None
}

/// Whether the instruction saves `rbp` on the stack: `push rbp`, or a store of `rbp` to
/// memory addressed by `rsp`.
fn stores_rbp(i: &Instruction) -> bool {
    match i.code() {
        Code::Push_r64 => i.op0_register() == Register::RBP,
        Code::Mov_rm64_r64 => {
            i.op0_kind() == OpKind::Memory
                && i.memory_base() == Register::RSP
                && i.op1_register() == Register::RBP
        }
        _ => false,
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

    /// `code` placed at an 8-byte aligned address after a body of `body` bytes of `nop`s;
    /// returns the buffer and the address of the stub's first byte.
    fn placed(body: usize, code: &[u8]) -> (Vec<u64>, u64) {
        let mut bytes = vec![0x90u8; body];
        bytes.extend_from_slice(code);
        bytes.resize(bytes.len().div_ceil(8) * 8 + 64, 0xcc);
        let words: Vec<u64> = bytes
            .chunks_exact(8)
            .map(|c| u64::from_le_bytes(c.try_into().unwrap()))
            .collect();
        let start = words.as_ptr() as u64;
        (words, start + body as u64)
    }

    fn follow_in(body: usize, code: &[u8]) -> (Option<Exit>, u64) {
        crate::fault::install().unwrap();
        prime();
        let (words, stub) = placed(body, code);
        let begin = words.as_ptr() as u64;
        let exit = follow(stub, |a| a >= begin && a < stub);
        (exit, begin)
    }

    /// rel32 of a `jmp` at `at` (5 bytes) to `to`.
    fn rel32(at: usize, to: usize) -> [u8; 4] {
        ((to as i64 - (at as i64 + 5)) as i32).to_le_bytes()
    }

    #[test]
    fn a_zgc_style_restore_is_followed_to_the_body() {
        // mov rbx, rax; vmovdqu ymm1, [rsp+0x20]; mov rcx, [rsp+8]; pop rdx; add rsp, 0x48;
        // jmp body+16
        let mut code = vec![0x48, 0x89, 0xc3];
        code.extend_from_slice(&[0xc5, 0xfe, 0x6f, 0x4c, 0x24, 0x20]);
        code.extend_from_slice(&[0x48, 0x8b, 0x4c, 0x24, 0x08]);
        code.push(0x5a);
        code.extend_from_slice(&[0x48, 0x83, 0xc4, 0x48]);
        let at = 64 + code.len();
        code.push(0xe9);
        code.extend_from_slice(&rel32(at, 16));
        let (exit, begin) = follow_in(64, &code);
        assert_eq!(
            exit,
            Some(Exit {
                target: begin + 16,
                sp_up: 8 + 0x48
            })
        );
    }

    #[test]
    fn a_c1_stub_jumps_back_at_once_and_lea_and_calls_are_followed() {
        // lea rsp, [rsp+0x10]; call rel32 (stepped over); jne +0 (not taken); jmp short back
        let mut code = vec![0x48, 0x8d, 0x64, 0x24, 0x10];
        code.extend_from_slice(&[0xe8, 0, 0, 0, 0]);
        code.extend_from_slice(&[0x75, 0x00]);
        let at = 32 + code.len();
        code.extend_from_slice(&[0xeb, (8i64 - (at as i64 + 2)) as i8 as u8]);
        let (exit, begin) = follow_in(32, &code);
        assert_eq!(
            exit,
            Some(Exit {
                target: begin + 8,
                sp_up: 0x10
            })
        );
    }

    /// The way through `code` from its byte `from` to its end.
    fn prologue_of(code: &[u8], from: usize) -> Option<Prologue> {
        crate::fault::install().unwrap();
        prime();
        let (_words, start) = placed(0, code);
        prologue(start + from as u64, start + code.len() as u64)
    }

    #[test]
    fn a_prologue_is_followed_to_the_complete_frame() {
        // C2 with a stack bang: mov [rsp-0x14000], eax; push rbp; sub rsp, 0x30; then the
        // entry barrier: cmp dword [r15+0x24], 0x2c00; je +5; call rel32
        let mut code = vec![0x89, 0x84, 0x24, 0x00, 0xc0, 0xfe, 0xff];
        code.push(0x55);
        code.extend_from_slice(&[0x48, 0x83, 0xec, 0x30]);
        code.extend_from_slice(&[0x41, 0x81, 0x7f, 0x24, 0x00, 0x2c, 0x00, 0x00]);
        code.extend_from_slice(&[0x0f, 0x84, 0x05, 0x00, 0x00, 0x00]);
        code.extend_from_slice(&[0xe8, 0, 0, 0, 0]);
        let whole = Prologue {
            sp_change: -0x38,
            saves_rbp: true,
            return_in_link: false,
        };
        assert_eq!(prologue_of(&code, 0), Some(whole));
        assert_eq!(prologue_of(&code, 7), Some(whole));
        let pushed = Prologue {
            sp_change: -0x30,
            saves_rbp: false,
            return_in_link: false,
        };
        assert_eq!(prologue_of(&code, 8), Some(pushed));
        let built = Prologue {
            sp_change: 0,
            saves_rbp: false,
            return_in_link: false,
        };
        assert_eq!(prologue_of(&code, 12), Some(built));
        assert_eq!(prologue_of(&code, 26), Some(built));
        // C2 without a bang: sub rsp, 0x18 (imm32); mov [rsp+0x10], rbp
        let mut code = vec![0x48, 0x81, 0xec, 0x18, 0x00, 0x00, 0x00];
        code.extend_from_slice(&[0x48, 0x89, 0x6c, 0x24, 0x10]);
        let unsaved = Prologue {
            sp_change: 0,
            saves_rbp: true,
            return_in_link: false,
        };
        assert_eq!(prologue_of(&code, 7), Some(unsaved));
        assert_eq!(
            prologue_of(&code, 0),
            Some(Prologue {
                sp_change: -0x18,
                saves_rbp: true,
                return_in_link: false,
            })
        );
        // a return or a jump on the way: no prologue
        assert_eq!(prologue_of(&[0x55, 0xc3, 0x90], 0), None);
        assert_eq!(prologue_of(&[0xeb, 0x00, 0x90], 0), None);
        // a pc past the completion
        crate::fault::install().unwrap();
        let (_words, start) = placed(0, &[0x90; 8]);
        assert_eq!(prologue(start + 4, start + 2), None);
    }

    #[test]
    fn code_that_leaves_otherwise_gives_nothing() {
        // add rsp, 8; ret
        assert_eq!(follow_in(16, &[0x48, 0x83, 0xc4, 0x08, 0xc3]).0, None);
        // mov rsp, rbp; jmp back
        let mut code = vec![0x48, 0x89, 0xec];
        code.push(0xe9);
        code.extend_from_slice(&rel32(16 + 3, 0));
        assert_eq!(follow_in(16, &code).0, None);
        // jmp rax
        assert_eq!(follow_in(16, &[0xff, 0xe0]).0, None);
        // a jump back with more pushed than popped (push rax; jmp back)
        let mut code = vec![0x50, 0xe9];
        code.extend_from_slice(&rel32(16 + 1, 0));
        assert_eq!(follow_in(16, &code).0, None);
        // a jump back to an address that is no body
        let mut code = vec![0xe9];
        code.extend_from_slice(&rel32(16, 0));
        crate::fault::install().unwrap();
        let (_words, stub) = placed(16, &code);
        assert_eq!(follow(stub, |_| false), None);
        // unreadable code
        assert_eq!(follow(8, |_| true), None);
    }

    /// `resume` over `code` placed at an aligned address, from its byte `from`, the method
    /// being `code` and the instructions with debug information at the bytes `whole`.
    fn resume_in(code: &[u8], from: usize, whole: &[usize]) -> Option<Resume> {
        resume_within(code, from, whole, code.len())
    }

    /// [`resume_in`] with every instruction bounded to the first `len` bytes of `code`.
    fn resume_within(code: &[u8], from: usize, whole: &[usize], len: usize) -> Option<Resume> {
        crate::fault::install().unwrap();
        prime();
        let (_words, start) = placed(0, code);
        let end = start + code.len() as u64;
        resume(
            start + from as u64,
            start..start + len as u64,
            |t| t >= start && t < end,
            |ip| whole.iter().any(|&w| start + w as u64 == ip),
        )
    }

    #[test]
    fn the_body_is_followed_to_where_its_frame_is_whole() {
        // C2's secondary-supers scan (JDK 11, invokeCallback): push rax; mov rax, rax;
        // mov rdi, [rsi+0x28]; mov ecx, [rdi]; add rdi, 8; test rax, rax; repne scasq; pop rax;
        // jne +4; mov [rsi+0x20], rax; then a call returning to an instruction with debug
        // information
        let mut code = vec![0x50, 0x48, 0x8b, 0xc0, 0x48, 0x8b, 0x7e, 0x28, 0x8b, 0x0f];
        code.extend_from_slice(&[0x48, 0x83, 0xc7, 0x08, 0x48, 0x85, 0xc0, 0xf2, 0x48, 0xaf]);
        code.push(0x58);
        code.extend_from_slice(&[0x0f, 0x85, 0x04, 0x00, 0x00, 0x00]);
        code.extend_from_slice(&[0x48, 0x89, 0x46, 0x20]);
        code.extend_from_slice(&[0xe8, 0, 0, 0, 0]);
        let ret = code.len();
        code.push(0x90);
        let scan = 17; // the repne scasq
        assert_eq!(
            resume_in(&code, scan, &[ret]),
            Some(Resume::Body { sp_up: 8 })
        );
        assert_eq!(resume_in(&code, 1, &[ret]), Some(Resume::Body { sp_up: 8 }));
        // from the push itself (not yet pushed), and from the pop's successor
        assert_eq!(resume_in(&code, 0, &[ret]), Some(Resume::Body { sp_up: 0 }));
        assert_eq!(
            resume_in(&code, 21, &[ret]),
            Some(Resume::Body { sp_up: 0 })
        );
        // an instruction with debug information at the pc: the frame is whole there
        assert_eq!(
            resume_in(&code, ret, &[ret]),
            Some(Resume::Body { sp_up: 0 })
        );
        // a jump out of the method: nothing
        let mut out = vec![0x50, 0x58, 0xe9];
        out.extend_from_slice(&0x1000i32.to_le_bytes());
        assert_eq!(resume_in(&out, 0, &[]), None);
        // a loop back to the pc without debug information: nothing (bounded)
        assert_eq!(resume_in(&[0x90, 0xeb, 0xfd], 0, &[]), None);
    }

    #[test]
    fn the_epilogue_is_followed_to_its_return() {
        // C2 on JDK 11 (thread-local poll): add rsp, 0x10; pop rbp; mov r10, [r15+0x108];
        // test [r10], eax; ret
        let mut code = vec![0x48, 0x83, 0xc4, 0x10, 0x5d];
        code.extend_from_slice(&[0x4d, 0x8b, 0x97, 0x08, 0x01, 0x00, 0x00]);
        code.extend_from_slice(&[0x41, 0x85, 0x02, 0xc3]);
        assert_eq!(
            resume_in(&code, 0, &[]),
            Some(Resume::Return {
                sp_up: 0x18,
                rbp_popped_at: Some(0x10)
            })
        );
        assert_eq!(
            resume_in(&code, 4, &[]),
            Some(Resume::Return {
                sp_up: 8,
                rbp_popped_at: Some(0)
            })
        );
        for past_pop in [5, 12, 15] {
            assert_eq!(
                resume_in(&code, past_pop, &[]),
                Some(Resume::Return {
                    sp_up: 0,
                    rbp_popped_at: None
                })
            );
        }
        // Debug information in the epilogue (non-safepoint PcDescs can sit there: at the
        // `pop rbp`, at the return poll): past `add rsp` or `pop rbp` the frame is gone, so
        // the way out is the `ret`, not that pc.
        for whole in [4, 5, 12] {
            assert_eq!(
                resume_in(&code, 0, &[whole]),
                Some(Resume::Return {
                    sp_up: 0x18,
                    rbp_popped_at: Some(0x10)
                }),
                "debug information at {whole}"
            );
        }
        // C2 from JDK 17: pop rbp; cmp rsp, [r15+0x448]; ja +0x10 (the poll stub); ret
        let mut code = vec![0x5d, 0x49, 0x3b, 0xa7, 0x48, 0x04, 0x00, 0x00];
        code.extend_from_slice(&[0x0f, 0x87, 0x10, 0x00, 0x00, 0x00, 0xc3]);
        assert_eq!(
            resume_in(&code, 1, &[]),
            Some(Resume::Return {
                sp_up: 0,
                rbp_popped_at: None
            })
        );
        // rbp written after its pop, or without one: its value is not known
        assert_eq!(resume_in(&[0x5d, 0x48, 0x89, 0xc5, 0xc3], 0, &[]), None);
        assert_eq!(resume_in(&[0x48, 0x8b, 0xe8, 0xc3], 0, &[]), None);
        // a store of rbp does not write it; mov rsp, rbp does not move rsp in a known way
        assert_eq!(
            resume_in(&[0x48, 0x89, 0x6e, 0x10, 0xc3], 0, &[]),
            Some(Resume::Return {
                sp_up: 0,
                rbp_popped_at: None
            })
        );
        assert_eq!(resume_in(&[0x48, 0x89, 0xec, 0x5d, 0xc3], 0, &[]), None);
        // ret imm16: not a compiled method's
        assert_eq!(resume_in(&[0xc2, 0x08, 0x00], 0, &[]), None);
    }

    #[test]
    fn a_stub_frame_is_followed_through_its_leave() {
        // StubRoutines::dpow's end (JDK 21): add rsp, 0x28; pop rbx; leave; ret, and a
        // conditional branch on the way
        let mut code = vec![0x48, 0x85, 0xc0, 0x74, 0x00];
        code.extend_from_slice(&[0x48, 0x83, 0xc4, 0x28, 0x5b, 0xc9, 0xc3]);
        for from in [0, 3, 5, 9, 10] {
            assert_eq!(
                resume_in(&code, from, &[]),
                Some(Resume::ReturnThroughFrame { ret_above_fp: 8 }),
                "from {from}"
            );
        }
        // past the leave: the return address is at rsp
        assert_eq!(
            resume_in(&code, 11, &[]),
            Some(Resume::Return {
                sp_up: 0,
                rbp_popped_at: None
            })
        );
        // a word popped between the leave and the ret
        assert_eq!(
            resume_in(&[0xc9, 0x59, 0xc3], 0, &[]),
            Some(Resume::ReturnThroughFrame { ret_above_fp: 16 })
        );
        // rbp written before the leave (its value is then not the frame's), or after it
        assert_eq!(resume_in(&[0x48, 0x89, 0xc5, 0xc9, 0xc3], 0, &[]), None);
        assert_eq!(resume_in(&[0x5d, 0xc9, 0xc3], 0, &[]), None);
        assert_eq!(resume_in(&[0xc9, 0x5d, 0xc3], 0, &[]), None);
        // a push after the leave would reach below rbp + 8: not a frame's end
        assert_eq!(resume_in(&[0xc9, 0x50, 0x50, 0xc3], 0, &[]), None);
        // the ret past the code's bounds (the next stub's) is not this code's
        assert_eq!(resume_within(&[0x90, 0xc3], 0, &[], 1), None);
        assert_eq!(resume_within(&[0xc9, 0xc3], 0, &[], 1), None);
        assert_eq!(
            resume_within(&[0x90, 0xc3], 0, &[], 2),
            Some(Resume::Return {
                sp_up: 0,
                rbp_popped_at: None
            })
        );
    }

    /// `code` placed in readable memory; returns the buffer and its first byte's address.
    fn code_at(code: &[u8]) -> (Vec<u64>, u64) {
        crate::fault::install().unwrap();
        prime();
        placed(0, code)
    }

    #[test]
    fn straight_code_to_a_call_is_recognized_and_anything_else_is_not() {
        // cmp eax, 5; jb +2; mov r10, imm64; call r10
        let arraycopy = [
            0x83, 0xf8, 0x05, 0x72, 0x02, 0x49, 0xba, 1, 2, 3, 4, 5, 6, 7, 8, 0x41, 0xff, 0xd2,
        ];
        let (words, at) = code_at(&arraycopy);
        let ret = at + arraycopy.len() as u64;
        assert!(straight_to_call(at, ret), "guards, set-up, call r10");
        assert!(
            straight_to_call(at + 5, ret),
            "from an instruction boundary"
        );
        assert!(!straight_to_call(at, ret - 1), "ret inside the call");
        assert!(!straight_to_call(at, at), "empty");
        assert!(!straight_to_call(ret, at), "backwards");
        drop(words);

        // A direct call in between: the code is not one straight path to the last call.
        // call +0; mov r10, imm64; call r10
        let two_calls = [
            0xe8, 0, 0, 0, 0, 0x49, 0xba, 1, 2, 3, 4, 5, 6, 7, 8, 0x41, 0xff, 0xd2,
        ];
        let (words, at) = code_at(&two_calls);
        let ret = at + two_calls.len() as u64;
        assert!(!straight_to_call(at, ret), "another call before");
        assert!(straight_to_call(at, at + 5), "the first call alone");
        drop(words);

        // An unconditional jump before the call: the fall-through does not reach it.
        let jumped = [0xeb, 0x00, 0x41, 0xff, 0xd2];
        let (words, at) = code_at(&jumped);
        assert!(
            !straight_to_call(at, at + jumped.len() as u64),
            "jmp before"
        );
        drop(words);

        // The last instruction ends at ret but is no call.
        let no_call = [0x90, 0x90, 0x90];
        let (words, at) = code_at(&no_call);
        assert!(!straight_to_call(at, at + 3), "no call");
        drop(words);

        // Too far: more than MAX_STRAIGHT_BYTES of nops before the call.
        let mut long = vec![0x90u8; MAX_STRAIGHT_BYTES as usize];
        long.extend_from_slice(&[0x41, 0xff, 0xd2]);
        let (words, at) = code_at(&long);
        assert!(!straight_to_call(at, at + long.len() as u64), "too far");
        assert!(
            straight_to_call(at + 8, at + long.len() as u64),
            "within the bound"
        );
        drop(words);
    }

    #[test]
    fn return_addresses_follow_a_call() {
        // nop; call rel32; call r10; call [rip+0]; mov eax, 1; nop
        let code = [
            0x90, 0xe8, 0, 0, 0, 0, 0x41, 0xff, 0xd2, 0xff, 0x15, 0, 0, 0, 0, 0xb8, 1, 0, 0, 0,
            0x90,
        ];
        let (words, at) = code_at(&code);
        for (ret, is) in [
            (6, true),
            (9, true),
            (15, true),
            (20, false),
            (1, false),
            (3, false),
        ] {
            assert_eq!(follows_call(at + ret), is, "return address at {ret}");
        }
        drop(words);
    }
}
