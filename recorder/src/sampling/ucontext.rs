//! Registers of the interrupted code, from the signal handler's `ucontext_t` (read by the
//! architecture's wing, [`crate::arch`]).

use std::ffi::c_void;

use crate::hotspot::javawalk::Interrupted;
use crate::unwind::Regs;

/// pc, sp and fp (and aarch64's link register) at the interrupted instruction.
///
/// # Safety
/// `uc` must be the `ucontext_t*` the kernel passed to an `SA_SIGINFO` handler.
pub unsafe fn regs(uc: *const c_void) -> Regs {
    // SAFETY: guaranteed by the caller: a valid ucontext_t from the kernel.
    unsafe { crate::arch::regs(uc) }
}

/// The interrupted thread's state as the Java walk starts from it: the registers in `uc`, and
/// `java_entry`, where the native walk reached Java code.
///
/// # Safety
/// `uc` must be a valid `ucontext_t*` (the kernel's, or one on the thread's stack checked to be
/// within its bounds).
pub unsafe fn interrupted(uc: *const c_void, java_entry: Option<Regs>) -> Interrupted {
    // SAFETY: guaranteed by the caller.
    let (bcp_register, method_register) = unsafe { crate::arch::interpreter_registers(uc) };
    Interrupted {
        // SAFETY: as above.
        regs: unsafe { regs(uc) },
        java_entry,
        bcp_register,
        method_register,
        thaw_not_started: false,
    }
}
