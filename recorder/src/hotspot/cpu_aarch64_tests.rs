//! Tests of the aarch64 code reader on HotSpot's instruction sequences (encodings checked with
//! GNU as), placed in memory as code would be. They run on any host: the reader decodes words,
//! it does not execute them.

#![allow(
    clippy::unwrap_used,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects
)]

use super::*;

const NOP: u32 = 0xD503_201F;
const RET: u32 = 0xD65F_03C0;
/// ldp x29, x30, [sp, #48]
const LDP_48: u32 = 0xA943_7BFD;
/// add sp, sp, #64
const ADD_SP_64: u32 = 0x9101_03FF;
/// sub sp, sp, #64
const SUB_SP_64: u32 = 0xD101_03FF;
/// stp x29, x30, [sp, #48]
const STP_48: u32 = 0xA903_7BFD;
/// ldr x8, [x28, #40]; cmp sp, x8; b.hi .+8 (the return poll)
const POLL: [u32; 3] = [0xF940_1788, 0xEB28_63FF, 0x5400_0048];
/// add sp, sp, #0x400
const ADD_SP_400: u32 = 0x9110_03FF;
/// sub sp, sp, #0x400
const SUB_SP_400: u32 = 0xD110_03FF;
/// bl .+16
const BL: u32 = 0x9400_0004;
/// blr x8
const BLR: u32 = 0xD63F_0100;
/// stp xzr, x9, [sp, #-16]!
const BREADCRUMB: u32 = 0xA9BF_27FF;
/// mov sp, x29
const MOV_SP_FP: u32 = 0x9100_03BF;
/// mov x30, x0
const MOV_LR_X0: u32 = 0xAA00_03FE;
/// mov x0, x1
const MOV_X0_X1: u32 = 0xAA01_03E0;
/// stp x0, x1, [sp, #-16]!; ldp x0, x1, [sp], #16
const PUSH_X0_X1: u32 = 0xA9BF_07E0;
const POP_X0_X1: u32 = 0xA8C1_07E0;

/// Code words at an address of their own (8-byte aligned: a `Vec<u64>` holds them).
struct Code {
    words: Vec<u64>,
}

impl Code {
    fn new(insns: &[u32]) -> Code {
        crate::fault::install().unwrap();
        let mut words = vec![0u64; insns.len().div_ceil(2) + 1];
        for (i, w) in insns.iter().enumerate() {
            words[i / 2] |= u64::from(*w) << (32 * (i % 2));
        }
        Code { words }
    }
    fn at(&self, index: usize) -> u64 {
        self.words.as_ptr() as u64 + 4 * index as u64
    }
    fn range(&self) -> std::ops::Range<u64> {
        self.at(0)..self.at(self.words.len() * 2)
    }
}

fn resume_in(code: &Code, index: usize, whole: bool) -> Option<Resume> {
    resume(code.at(index), code.range(), |_| true, |_| whole)
}

#[test]
fn the_small_epilogue_finds_the_record_then_the_link_register() {
    let mut insns = vec![LDP_48, ADD_SP_64];
    insns.extend(POLL);
    insns.push(RET);
    let code = Code::new(&insns);
    // Before the load: the return address is still in the record, 8 bytes below the
    // caller's sp (sp + 64).
    assert_eq!(
        resume_in(&code, 0, true),
        Some(Resume::Return {
            sp_up: 56,
            rbp_popped_at: Some(48)
        })
    );
    // After it: in lr, x29 already the caller's; the caller's sp is sp + 64, then sp.
    assert_eq!(
        resume_in(&code, 1, true),
        Some(Resume::ReturnInLink {
            sp_up: 64,
            fp_loaded_at: None
        })
    );
    for poll in 2..6 {
        assert_eq!(
            resume_in(&code, poll, true),
            Some(Resume::ReturnInLink {
                sp_up: 0,
                fp_loaded_at: None
            }),
            "at {poll}"
        );
    }
}

#[test]
fn the_large_epilogue_pops_the_record() {
    let code = Code::new(&[ADD_SP_400, POP_RECORD, RET]);
    assert_eq!(
        resume_in(&code, 0, true),
        Some(Resume::Return {
            sp_up: 0x408,
            rbp_popped_at: Some(0x400)
        })
    );
    assert_eq!(
        resume_in(&code, 1, true),
        Some(Resume::Return {
            sp_up: 8,
            rbp_popped_at: Some(0)
        })
    );
}

#[test]
fn a_call_of_the_body_means_the_frame_is_whole() {
    let code = Code::new(&[MOV_X0_X1, NOP, BL, NOP]);
    assert_eq!(resume_in(&code, 0, true), Some(Resume::Body { sp_up: 0 }));
    // Not a call of the body (a stub's): stepped over, lr then unknown; the code runs on
    // past the end of the range.
    assert_eq!(resume_in(&code, 0, false), None);
}

#[test]
fn the_breadcrumb_below_a_runtime_call_is_counted() {
    let code = Code::new(&[MOV_X0_X1, BREADCRUMB, BLR, ADD_SP_16, MOV_X0_X1, BL]);
    // Before the breadcrumb, at it, at the call: the frame is at the pc's sp, then 16 above.
    assert_eq!(resume_in(&code, 0, true), Some(Resume::Body { sp_up: 0 }));
    assert_eq!(resume_in(&code, 1, true), Some(Resume::Body { sp_up: 0 }));
    assert_eq!(resume_in(&code, 2, true), Some(Resume::Body { sp_up: 16 }));
    // Returned, before the breadcrumb is taken back.
    assert_eq!(resume_in(&code, 3, true), Some(Resume::Body { sp_up: 16 }));
}

/// add sp, sp, #16
const ADD_SP_16: u32 = 0x9100_43FF;

#[test]
fn leave_returns_through_the_frame() {
    let code = Code::new(&[MOV_X0_X1, MOV_SP_FP, POP_RECORD, RET]);
    assert_eq!(
        resume_in(&code, 0, false),
        Some(Resume::ReturnThroughFrame { ret_above_fp: 8 })
    );
    // Past `mov sp, x29`: sp is the record's.
    assert_eq!(
        resume_in(&code, 2, false),
        Some(Resume::Return {
            sp_up: 8,
            rbp_popped_at: Some(0)
        })
    );
}

#[test]
fn a_link_register_written_otherwise_is_not_followed() {
    let code = Code::new(&[MOV_LR_X0, RET]);
    assert_eq!(resume_in(&code, 0, true), None);
    let code = Code::new(&[MOV_X0_X1, SP_OTHER, RET]);
    assert_eq!(resume_in(&code, 0, true), None);
}

/// sub sp, sp, x8
const SP_OTHER: u32 = 0xCB28_63FF;

#[test]
fn the_prologue_says_what_is_still_to_be_made() {
    // Small frame: nop (patchable), sub sp, stp at its top.
    let code = Code::new(&[NOP, SUB_SP_64, STP_48, NOP]);
    let complete = code.at(3);
    let from = |i| prologue(code.at(i), complete);
    let all = Prologue {
        sp_change: -64,
        saves_rbp: true,
        return_in_link: true,
    };
    assert_eq!(from(0), Some(all));
    assert_eq!(from(1), Some(all));
    assert_eq!(
        from(2),
        Some(Prologue {
            sp_change: 0,
            ..all
        })
    );
    // Large frame: the record first, then the rest.
    let code = Code::new(&[PUSH_RECORD, SUB_SP_400, NOP]);
    let complete = code.at(2);
    assert_eq!(
        prologue(code.at(0), complete),
        Some(Prologue {
            sp_change: -0x410,
            ..all
        })
    );
    assert_eq!(
        prologue(code.at(1), complete),
        Some(Prologue {
            sp_change: -0x400,
            saves_rbp: false,
            return_in_link: false
        })
    );
    let code = Code::new(&[SP_OTHER, NOP]);
    assert_eq!(prologue(code.at(0), code.at(1)), None);
}

#[test]
fn an_out_of_line_stub_is_followed_back_to_the_body() {
    // Body at 0..2; the stub saves x0/x1, calls, restores, jumps back to 1.
    let back = 0x17FF_FFFC; // b .-16 (from index 5 to index 1)
    let code = Code::new(&[MOV_X0_X1, NOP, PUSH_X0_X1, BL, POP_X0_X1, back]);
    let body = code.at(0)..code.at(2);
    let is_body = |t: u64| body.contains(&t);
    assert_eq!(
        follow(code.at(2), is_body),
        Some(Exit {
            target: code.at(1),
            sp_up: 0
        })
    );
    assert_eq!(
        follow(code.at(3), is_body),
        Some(Exit {
            target: code.at(1),
            sp_up: 16
        })
    );
}

#[test]
fn return_addresses_follow_calls() {
    let code = Code::new(&[BL, NOP, BLR, NOP, MOV_X0_X1, NOP]);
    assert!(follows_call(code.at(1)));
    assert!(follows_call(code.at(3)));
    assert!(!follows_call(code.at(5)));
    assert!(straight_to_call(code.at(1), code.at(3)));
    assert!(
        !straight_to_call(code.at(0), code.at(3)),
        "a call on the way"
    );
}

#[test]
fn enter_frames_are_recognised() {
    let code = Code::new(&[
        PUSH_RECORD,
        MOV_FP_SP,
        MOV_X0_X1,
        MOV_SP_FP,
        POP_RECORD,
        RET,
    ]);
    assert!(makes_frame(code.at(0)));
    assert!(!makes_frame(code.at(1)));
    let start = code.at(0);
    let in_link = Some(Entered::NotYet(Unmade {
        ra_at: None,
        fp_at: None,
    }));
    let at_sp = Some(Entered::NotYet(Unmade {
        ra_at: Some(8),
        fp_at: Some(0),
    }));
    assert_eq!(entered(code.at(0), start), in_link);
    assert_eq!(entered(code.at(1), start), at_sp);
    assert_eq!(entered(code.at(2), start), Some(Entered::Built));
    assert_eq!(entered(code.at(3), start), Some(Entered::Built));
    assert_eq!(entered(code.at(4), start), at_sp);
    assert_eq!(entered(code.at(5), start), in_link);
    let signed = Code::new(&[PAC_SP[0], PUSH_RECORD, MOV_FP_SP]);
    assert!(makes_frame(signed.at(0)));
}
