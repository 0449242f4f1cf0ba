//! HotSpot's frames and generated code on linux-x86_64, as the Java walk reads them (the
//! same names as `cpu_aarch64` gives on aarch64; the walk calls whichever is [`super::cpu`]):
//! frame slots from `frame_x86.hpp` and `stubGenerator_x86_64.cpp`, and the code followed with
//! `iced-x86` ([`super::stub_exit`]).

#![deny(
    clippy::indexing_slicing,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::arithmetic_side_effects
)]

use super::code_types::{Entered, Saved, Unmade};
use super::mem::{read_u8, read_uint};

pub use super::stub_exit::{
    follow, follows_call, prime, prologue, resume, straight_to_call, MAX_PUSHED_BYTES,
    MAX_STRAIGHT_BYTES,
};

/// The template interpreter's locals slot, in bytes below the frame pointer (-7 words).
pub const INTERPRETER_LOCALS: u64 = 7 * 8;
/// The template interpreter's bytecode pointer slot, in bytes below rbp (-8 words).
pub const INTERPRETER_BCP: u64 = 8 * 8;
/// `frame::entry_frame_call_wrapper_offset` (-6 words from rbp).
pub const ENTRY_FRAME_CALL_WRAPPER: u64 = 6 * 8;
/// The call stub's `JavaThread*` argument (its 8th, on the stack): `[rbp + 24]`.
pub const ENTRY_FRAME_THREAD: i64 = 3 * 8;
/// Where a frame `enter()` made leaves its caller's sp above rbp, and whether only a compiled
/// caller's return address is taken there: 16, any caller; or 24 after the nmethod entry
/// barrier's stub, which leaves one more word, and guards only compiled methods' and native
/// wrappers' entries (see the walk's `rbp_sender`).
pub const RECORD_SENDER_SP: [(u64, bool); 2] = [(16, false), (24, true)];
/// Whether an interpreted frame's sender sp (its saved sender-sp slot) is always above its
/// frame pointer: yes (its frame is pushed below its caller's sp).
pub const INTERPRETER_SENDER_ABOVE_FP: bool = true;
/// Whether the top compiled frame is found from its code first: no, from the candidates
/// first (`pick_sender`), its code when they do not decide.
pub const RESUME_FIRST: bool = false;

/// `mov disp32(%rdi), %rax`: the first instruction of
/// `Continuation::get_continuation_entry_for_sp`, which loads `JavaThread::_cont_entry`.
const MOV_FROM_RDI: [u8; 3] = [0x48, 0x8b, 0x87];

/// x86 `ret`.
const RET: u8 = 0xc3;
/// x86 `pop rbp`.
const POP_RBP: u8 = 0x5d;
/// `push rbp` (1 byte) then `mov rbp, rsp` (3 bytes): the frame is built 4 bytes in.
const ENTER_BYTES: u64 = 4;
/// `push rbp; mov rbp, rsp`, as little-endian bytes: the `mov` in its 89 /r form (`48 89 e5`,
/// what a C compiler writes) and in its 8B /r form (`48 8b ec`, what HotSpot's assembler
/// writes for `enter()`: `StubRoutines::dpow` starts `55 48 8b ec`).
const ENTER: [u64; 2] = [0xe5_89_48_55, 0xec_8b_48_55];

/// The candidate senders of an interrupted frame at `sp` whose code does not say where its
/// return address is: at sp (frameless, before the prologue's push, after the epilogue's
/// pop), at sp+8 (rbp pushed), and the full frame `full` when the blob does not say it is
/// complete.
pub fn top_candidates(sp: u64, full: Option<u64>, complete: bool) -> [Option<(u64, Saved)>; 3] {
    [
        sp.checked_add(8).map(|s| (s, Saved::InRegister)),
        sp.checked_add(16).map(|s| (s, Saved::AtSp)),
        (if complete { None } else { full }).map(|f| (f, Saved::BelowReturn)),
    ]
}

/// Where a stub that makes an `enter()` frame (starting at `start`) is at `pc`: nothing
/// pushed yet or all popped (the return address at sp), rbp pushed but not yet (or no longer)
/// the frame's (the return address at sp+8, the caller's rbp at sp), or its frame made.
pub fn entered(pc: u64, start: u64) -> Option<Entered> {
    let byte = read_u8(pc)?;
    if pc == start || byte == RET {
        return Some(Entered::NotYet(LEAF_RETURN));
    }
    if pc < start.checked_add(ENTER_BYTES)? || byte == POP_RBP {
        return Some(Entered::NotYet(Unmade {
            ra_at: Some(8),
            fp_at: Some(0),
        }));
    }
    Some(Entered::Built)
}

/// Where a frameless stub native code calls as a leaf keeps its return address (at sp), as
/// does any code before its `push rbp` or after its `pop rbp`.
pub const LEAF_RETURN: Unmade = Unmade {
    ra_at: Some(0),
    fp_at: None,
};

/// Whether the code at `start` begins with `push rbp; mov rbp, rsp` (HotSpot's `enter()`),
/// so that past those two instructions rbp is its frame's. Signal-safe: a fault-safe read.
pub fn makes_frame(start: u64) -> bool {
    read_uint(start, 4).is_some_and(|first| ENTER.contains(&first))
}

/// The offset a libjvm function loads from its first argument with its first instruction
/// (`mov disp32(%rdi), %rax`): how `JavaThread::_cont_entry` is found where HotSpot does not
/// describe it (`Continuation::get_continuation_entry_for_sp`). `None` for other code.
pub fn loaded_offset(code: u64) -> Option<u64> {
    let first = read_uint(code, 4)?;
    if first.to_le_bytes().get(..3) != Some(&MOV_FROM_RDI[..]) {
        return None;
    }
    read_uint(code.checked_add(3)?, 4)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;

    #[test]
    fn enter_frames_are_recognised() {
        crate::fault::install().unwrap();
        // A C compiler's `push rbp; mov rbp, rsp`, HotSpot's (mov in its 8B /r form, as
        // `StubRoutines::dpow` starts), and a frameless stub.
        let rbp_frame: [u64; 1] = [u64::from_le_bytes([
            0x55, 0x48, 0x89, 0xe5, 0x90, 0x90, 0x90, 0x90,
        ])];
        let hotspot_frame: [u64; 1] = [u64::from_le_bytes([
            0x55, 0x48, 0x8b, 0xec, 0x48, 0x83, 0xec, 0x28,
        ])];
        let frameless: [u64; 1] = [u64::from_le_bytes([
            0x48, 0x8b, 0x07, 0xc3, 0x90, 0x90, 0x90, 0x90,
        ])];
        let a = rbp_frame.as_ptr() as u64;
        assert!(makes_frame(a));
        assert!(makes_frame(hotspot_frame.as_ptr() as u64));
        assert!(!makes_frame(frameless.as_ptr() as u64));
        let not_yet = |ra, fp| {
            Some(Entered::NotYet(Unmade {
                ra_at: ra,
                fp_at: fp,
            }))
        };
        assert_eq!(entered(a, a), not_yet(Some(0), None));
        assert_eq!(entered(a + 1, a), not_yet(Some(8), Some(0)));
        assert_eq!(entered(a + 4, a), Some(Entered::Built));
        let f = frameless.as_ptr() as u64;
        assert_eq!(entered(f + 3, f), not_yet(Some(0), None), "at its ret");
    }
}
