//! Registers of the interrupted code, from the signal handler's `ucontext_t`.

use std::ffi::c_void;

use crate::hotspot::javawalk::Interrupted;
use crate::unwind::Regs;

/// pc, sp and fp at the interrupted instruction.
///
/// # Safety
/// `uc` must be the `ucontext_t*` the kernel passed to an `SA_SIGINFO` handler.
#[cfg(target_arch = "x86_64")]
pub unsafe fn regs(uc: *const c_void) -> Regs {
    // SAFETY: guaranteed by the caller: a valid ucontext_t from the kernel.
    let gregs = unsafe { &(*uc.cast::<libc::ucontext_t>()).uc_mcontext.gregs };
    Regs {
        pc: gregs[libc::REG_RIP as usize] as u64,
        sp: gregs[libc::REG_RSP as usize] as u64,
        fp: gregs[libc::REG_RBP as usize] as u64,
    }
}

/// r13 at the interrupted instruction: the template interpreter's bytecode pointer.
///
/// # Safety
/// `uc` must be a valid `ucontext_t*` (the kernel's, or one on the thread's stack checked to be
/// within its bounds).
#[cfg(target_arch = "x86_64")]
pub unsafe fn bcp_register(uc: *const c_void) -> u64 {
    // SAFETY: guaranteed by the caller.
    let gregs = unsafe { &(*uc.cast::<libc::ucontext_t>()).uc_mcontext.gregs };
    gregs[libc::REG_R13 as usize] as u64
}

/// rbx at the interrupted instruction: the template interpreter's `Method*` at a method's
/// entry.
///
/// # Safety
/// As [`bcp_register`].
#[cfg(target_arch = "x86_64")]
pub unsafe fn method_register(uc: *const c_void) -> u64 {
    // SAFETY: guaranteed by the caller.
    let gregs = unsafe { &(*uc.cast::<libc::ucontext_t>()).uc_mcontext.gregs };
    gregs[libc::REG_RBX as usize] as u64
}

/// The interrupted thread's state as the Java walk starts from it: the registers in `uc`, and
/// `java_entry`, where the native walk reached Java code.
///
/// # Safety
/// As [`bcp_register`].
#[cfg(target_arch = "x86_64")]
pub unsafe fn interrupted(uc: *const c_void, java_entry: Option<Regs>) -> Interrupted {
    // SAFETY: guaranteed by the caller.
    unsafe {
        Interrupted {
            regs: regs(uc),
            java_entry,
            bcp_register: bcp_register(uc),
            method_register: method_register(uc),
            thaw_not_started: false,
        }
    }
}
