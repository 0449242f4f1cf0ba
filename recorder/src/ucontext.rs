//! Registers of the interrupted code, from the signal handler's `ucontext_t`.

use std::ffi::c_void;

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
