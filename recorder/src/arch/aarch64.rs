//! aarch64 Linux: `uc_mcontext.{regs, sp, pc}`, calls that leave the return address in the
//! link register x30 (a function saves it, with x29, in its frame record when it calls on),
//! and x29 frame records.

use std::ffi::c_void;

use super::regs::Regs;

/// The architecture's name, as messages say it.
pub const NAME: &str = "aarch64";

/// The ELF machine of the libraries this agent unwinds (`EM_AARCH64`).
pub const ELF_MACHINE: u16 = 183;

/// The same, as `object` names it.
pub const ELF_ARCHITECTURE: object::Architecture = object::Architecture::Aarch64;

/// The relocation types that fill an import slot with a function's address
/// (`R_AARCH64_JUMP_SLOT`, `R_AARCH64_GLOB_DAT`).
pub const SLOT_RELOCATIONS: [u32; 2] = [1026, 1025];

/// Whether a timer id of qemu-user's shape is taken as the agent's own. aarch64 is tested under qemu-user here, whose timer ids are not the kernel's (see
/// `sampling::source::same_timer`).
pub const QEMU_TIMER_IDS: bool = true;

/// Whether the HotSpot frame walk ([`crate::hotspot::javawalk`]) knows this architecture's
/// frames and stubs: yes, through `hotspot::cpu_aarch64`.
pub const VM_WALK: bool = true;

/// A return address as code can be found at: its pointer-authentication code removed. Code built
/// with `-mbranch-protection=pac-ret` (a hardening flag a distribution may build everything with;
/// HotSpot signs its own frames with `UseBranchProtection`) signs x30 (`paciasp`) before it saves
/// it, so a saved return address, or x30 itself in such a function, carries a signature in its top
/// bits. XPACLRI (`hint #7`) strips it exactly whatever the virtual-address size, and is a no-op on
/// a CPU without pointer authentication.
#[inline]
pub fn code_address(return_address: u64) -> u64 {
    let mut lr = return_address;
    // SAFETY: `hint #7` (XPACLRI) rewrites x30 alone, which the operand gives and takes back;
    // it reads no memory, writes no flags and uses no stack.
    unsafe {
        std::arch::asm!("hint #7", inout("x30") lr, options(nomem, nostack, preserves_flags));
    }
    lr
}

/// DWARF register numbers of the call-frame information.
pub mod dwarf {
    /// The stack pointer (sp, 31).
    pub const SP: gimli::Register = gimli::AArch64::SP;
    /// The frame pointer (x29).
    pub const FP: gimli::Register = gimli::AArch64::X29;
    /// The return address column: the link register (x30).
    pub const RA: gimli::Register = gimli::AArch64::X30;
    /// Whether the CFA expressions the table builder recognises (x86_64's) apply: no.
    pub const CFA_EXPRESSIONS: bool = false;
    /// The vendor extensions of its call-frame instructions: AArch64's, whose
    /// `DW_CFA_AARCH64_negate_ra_state` every function built with `-mbranch-protection=pac-ret`
    /// has (without it gimli stops at that instruction: the function's rows after its first
    /// are lost, and the walk falls back to frame pointers there).
    pub const VENDOR: gimli::Vendor = gimli::Vendor::AArch64;
}

/// The CFA at a function's first instruction, from sp: nothing is pushed by a call.
pub const ENTRY_CFA_OFFSET: i64 = 0;

/// Bits of a packed unwind rule saying where the caller's x29 was saved.
pub const RULE_FP_BITS: u32 = 7;
/// Bits saying where the return address (x30) was saved, or that it is still in x30.
pub const RULE_RA_BITS: u32 = 7;

/// At a signal trampoline (`__kernel_rt_sigreturn`), sp points at the kernel's
/// `rt_sigframe`: a `siginfo_t` (128 bytes), then the `ucontext_t`.
pub const UC_AT_TRAMPOLINE: u64 = 128;

/// Offsets of pc, sp, x29 and x30 in a `ucontext_t`.
pub mod uc {
    const MCONTEXT: usize = std::mem::offset_of!(libc::ucontext_t, uc_mcontext);
    const REGS: usize = MCONTEXT + std::mem::offset_of!(libc::mcontext_t, regs);
    /// The interrupted pc.
    pub const PC: u64 = (MCONTEXT + std::mem::offset_of!(libc::mcontext_t, pc)) as u64;
    /// The interrupted sp.
    pub const SP: u64 = (MCONTEXT + std::mem::offset_of!(libc::mcontext_t, sp)) as u64;
    /// The interrupted frame pointer.
    pub const FP: u64 = (REGS + 8 * 29) as u64;
    /// The interrupted link register.
    pub const LR: u64 = (REGS + 8 * 30) as u64;
}

/// The registers a `ucontext_t` at `uc` holds, read word by word through `read` (a signal
/// frame on the stack, found by the walk).
pub fn signal_regs(uc: u64, read: impl Fn(u64) -> Option<u64>) -> Option<Regs> {
    let at = |offset: u64| read(uc.checked_add(offset)?);
    Some(Regs {
        pc: at(uc::PC)?,
        sp: at(uc::SP)?,
        fp: at(uc::FP)?,
        lr: at(uc::LR)?,
    })
}

/// For code interrupted at a signal handler's first instruction (`regs`): the handler's
/// return address (into the signal trampoline, in x30) and where the kernel's `ucontext_t`
/// of that signal is (in the `rt_sigframe` at sp).
pub fn handler_entry(regs: Regs, _read: impl Fn(u64) -> Option<u64>) -> Option<(u64, u64)> {
    if regs.lr == 0 {
        return None;
    }
    Some((regs.lr, regs.sp.checked_add(UC_AT_TRAMPOLINE)?))
}

/// pc, sp, x29 and x30 at the interrupted instruction.
///
/// # Safety
/// `uc` must be a valid `ucontext_t*` (the kernel's, or one on the thread's stack checked to
/// be within its bounds).
pub unsafe fn regs(uc: *const c_void) -> Regs {
    // SAFETY: guaranteed by the caller: a valid ucontext_t.
    let m = unsafe { &(*uc.cast::<libc::ucontext_t>()).uc_mcontext };
    Regs {
        pc: m.pc,
        sp: m.sp,
        fp: m.regs[29],
        lr: m.regs[30],
    }
}

/// The template interpreter's bytecode pointer (`rbcp`, x22) and its `Method*` (`rmethod`,
/// x12) at the interrupted instruction (`register_aarch64.hpp`).
///
/// # Safety
/// As [`regs`].
pub unsafe fn interpreter_registers(uc: *const c_void) -> (u64, u64) {
    // SAFETY: guaranteed by the caller.
    let m = unsafe { &(*uc.cast::<libc::ucontext_t>()).uc_mcontext };
    (m.regs[22], m.regs[12])
}

/// If the instruction that faulted (in the kernel's `ucontext_t` at `uc`) is at `from`, makes
/// execution resume at `to` and says so.
///
/// # Safety
/// `uc` must be the writable `ucontext_t*` the kernel passed to an `SA_SIGINFO` handler.
pub unsafe fn resume_at(uc: *mut c_void, from: u64, to: u64) -> bool {
    // SAFETY: guaranteed by the caller; the kernel restores the registers from it when the
    // handler returns.
    let m = unsafe { &mut (*uc.cast::<libc::ucontext_t>()).uc_mcontext };
    if m.pc != from {
        return false;
    }
    m.pc = to;
    true
}

std::arch::global_asm!(
    ".pushsection .text.jfrnative_safe_read,\"ax\",@progbits",
    ".globl jfrnative_safe_read",
    ".hidden jfrnative_safe_read",
    ".type jfrnative_safe_read,@function",
    "jfrnative_safe_read:",
    // x0 = address; returns x0 = value, x1 = 1 (read) or 0 (faulted).
    "    mov x1, #1",
    ".globl jfrnative_safe_read_load",
    ".hidden jfrnative_safe_read_load",
    "jfrnative_safe_read_load:",
    "    ldr x0, [x0]",
    "    ret",
    ".globl jfrnative_safe_read_fault",
    ".hidden jfrnative_safe_read_fault",
    "jfrnative_safe_read_fault:",
    "    mov x0, #0",
    "    mov x1, #0",
    "    ret",
    ".size jfrnative_safe_read, . - jfrnative_safe_read",
    ".popsection",
);

#[cfg(test)]
mod tests {
    use super::code_address;

    /// A return address signed the way pac-ret signs it comes back whole, and an unsigned one
    /// unchanged. PACI1716 (`hint #8`: signs x17 with the modifier in x16) is in the hint space
    /// like XPACLRI: on a CPU without pointer authentication both do nothing and this still
    /// holds; qemu-user's CPU signs, so there the top bits differ before the strip.
    #[test]
    fn a_signed_return_address_is_stripped() {
        let plain = a_signed_return_address_is_stripped as *const () as u64;
        let mut signed = plain;
        // SAFETY: `hint #8` rewrites x17 alone (given and taken back) from x16; no memory,
        // flags or stack.
        unsafe {
            std::arch::asm!("hint #8", inout("x17") signed, in("x16") 0x7fff_0000u64,
                options(nomem, nostack, preserves_flags));
        }
        assert_eq!(code_address(signed), plain, "signed {signed:#x}");
        assert_eq!(code_address(plain), plain);
    }
}
