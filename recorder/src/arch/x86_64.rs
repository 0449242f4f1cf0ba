//! x86_64 Linux: `uc_mcontext.gregs[REG_*]`, calls that push the return address, rbp frames.

use std::ffi::c_void;

use super::regs::Regs;

/// The architecture's name, as messages say it.
pub const NAME: &str = "x86_64";

/// The ELF machine of the libraries this agent unwinds (`EM_X86_64`).
pub const ELF_MACHINE: u16 = 62;

/// The same, as `object` names it.
pub const ELF_ARCHITECTURE: object::Architecture = object::Architecture::X86_64;

/// The relocation types that fill an import slot with a function's address
/// (`R_X86_64_JUMP_SLOT`, `R_X86_64_GLOB_DAT`).
pub const SLOT_RELOCATIONS: [u32; 2] = [7, 6];

/// Whether a timer id of qemu-user's shape is taken as the agent's own. x86_64 is tested natively here: a timer's id must always match.
pub const QEMU_TIMER_IDS: bool = false;

/// Whether the HotSpot frame walk ([`crate::hotspot::javawalk`]) knows this architecture's
/// frames and stubs.
pub const VM_WALK: bool = true;

/// DWARF register numbers of the call-frame information.
pub mod dwarf {
    /// The stack pointer (rsp).
    pub const SP: gimli::Register = gimli::X86_64::RSP;
    /// The frame pointer (rbp).
    pub const FP: gimli::Register = gimli::X86_64::RBP;
    /// The return address column.
    pub const RA: gimli::Register = gimli::X86_64::RA;
    /// Whether the CFA expressions the table builder recognises (binutils' PLT expression,
    /// OpenSSL's `rsp + N, deref, + 8`) are this architecture's.
    pub const CFA_EXPRESSIONS: bool = true;
    /// The vendor extensions of its call-frame instructions: none.
    pub const VENDOR: gimli::Vendor = gimli::Vendor::Default;
}

/// The CFA at a function's first instruction, from sp: the call pushed the return address.
pub const ENTRY_CFA_OFFSET: i64 = 8;

/// Bits of a packed unwind rule saying where the caller's rbp was saved.
pub const RULE_FP_BITS: u32 = 8;
/// Bits saying where the return address was saved: none, it is always at CFA − 8.
pub const RULE_RA_BITS: u32 = 0;

/// At a signal trampoline (`__restore_rt`, after the handler's `ret` popped `pretcode`), the
/// kernel's `ucontext_t` is this many bytes above sp.
pub const UC_AT_TRAMPOLINE: u64 = 0;

/// Offsets of rip, rsp and rbp in a `ucontext_t`.
pub mod uc {
    const GREGS: u64 = std::mem::offset_of!(libc::ucontext_t, uc_mcontext) as u64;
    /// The interrupted pc.
    pub const PC: u64 = GREGS + 8 * libc::REG_RIP as u64;
    /// The interrupted sp.
    pub const SP: u64 = GREGS + 8 * libc::REG_RSP as u64;
    /// The interrupted frame pointer.
    pub const FP: u64 = GREGS + 8 * libc::REG_RBP as u64;
}

/// A return address as code can be found at: x86_64 keeps no signature in it.
#[inline]
pub const fn code_address(return_address: u64) -> u64 {
    return_address
}

/// The registers a `ucontext_t` at `uc` holds, read word by word through `read` (a signal
/// frame on the stack, found by the walk).
pub fn signal_regs(uc: u64, read: impl Fn(u64) -> Option<u64>) -> Option<Regs> {
    let at = |offset: u64| read(uc.checked_add(offset)?);
    Some(Regs {
        pc: at(uc::PC)?,
        sp: at(uc::SP)?,
        fp: at(uc::FP)?,
        lr: 0,
    })
}

/// For code interrupted at a signal handler's first instruction (`regs`): the handler's
/// return address (into the signal trampoline, at sp) and where the kernel's `ucontext_t` of
/// that signal is (above it).
pub fn handler_entry(regs: Regs, read: impl Fn(u64) -> Option<u64>) -> Option<(u64, u64)> {
    Some((read(regs.sp)?, regs.sp.checked_add(8)?))
}

/// pc, sp and fp at the interrupted instruction.
///
/// # Safety
/// `uc` must be a valid `ucontext_t*` (the kernel's, or one on the thread's stack checked to
/// be within its bounds).
pub unsafe fn regs(uc: *const c_void) -> Regs {
    // SAFETY: guaranteed by the caller: a valid ucontext_t.
    let gregs = unsafe { &(*uc.cast::<libc::ucontext_t>()).uc_mcontext.gregs };
    Regs {
        pc: gregs[libc::REG_RIP as usize] as u64,
        sp: gregs[libc::REG_RSP as usize] as u64,
        fp: gregs[libc::REG_RBP as usize] as u64,
        lr: 0,
    }
}

/// The template interpreter's bytecode pointer (r13) and, at a method's entry, its `Method*`
/// (rbx) at the interrupted instruction.
///
/// # Safety
/// As [`regs`].
pub unsafe fn interpreter_registers(uc: *const c_void) -> (u64, u64) {
    // SAFETY: guaranteed by the caller.
    let gregs = unsafe { &(*uc.cast::<libc::ucontext_t>()).uc_mcontext.gregs };
    (
        gregs[libc::REG_R13 as usize] as u64,
        gregs[libc::REG_RBX as usize] as u64,
    )
}

/// If the instruction that faulted (in the kernel's `ucontext_t` at `uc`) is at `from`, makes
/// execution resume at `to` and says so.
///
/// # Safety
/// `uc` must be the writable `ucontext_t*` the kernel passed to an `SA_SIGINFO` handler.
pub unsafe fn resume_at(uc: *mut c_void, from: u64, to: u64) -> bool {
    // SAFETY: guaranteed by the caller; the kernel restores the registers from it when the
    // handler returns.
    let gregs = unsafe { &mut (*uc.cast::<libc::ucontext_t>()).uc_mcontext.gregs };
    match gregs.get_mut(libc::REG_RIP as usize) {
        Some(rip) if *rip as u64 == from => {
            *rip = to as i64;
            true
        }
        _ => false,
    }
}

std::arch::global_asm!(
    ".pushsection .text.jfrnative_safe_read,\"ax\",@progbits",
    ".globl jfrnative_safe_read",
    ".hidden jfrnative_safe_read",
    ".type jfrnative_safe_read,@function",
    "jfrnative_safe_read:",
    // rdi = address; returns rax = value, rdx = 1 (read) or 0 (faulted).
    "    mov edx, 1",
    ".globl jfrnative_safe_read_load",
    ".hidden jfrnative_safe_read_load",
    "jfrnative_safe_read_load:",
    "    mov rax, qword ptr [rdi]",
    "    ret",
    ".globl jfrnative_safe_read_fault",
    ".hidden jfrnative_safe_read_fault",
    "jfrnative_safe_read_fault:",
    "    xor eax, eax",
    "    xor edx, edx",
    "    ret",
    ".size jfrnative_safe_read, . - jfrnative_safe_read",
    ".popsection",
);
