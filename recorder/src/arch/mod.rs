//! What differs between the processor architectures the agent runs on, behind one interface:
//! one file per architecture (`x86_64.rs`, `aarch64.rs`), exactly one compiled in, each giving
//! the same names. Everything above this wing is written once; nothing above it tests
//! `target_arch`.
//!
//! Each architecture gives:
//! - the interrupted registers in a signal's `ucontext_t` ([`regs`], [`signal_regs`],
//!   [`interpreter_registers`]) and the fault hook's way out ([`resume_at`]);
//! - the one fault-safe load (`jfrnative_safe_read`, in assembly; see [`crate::fault`]);
//! - how a signal frame and a handler just entered look from the stack ([`UC_AT_TRAMPOLINE`],
//!   [`handler_entry`]);
//! - the DWARF register numbers of its call-frame information ([`dwarf`]), where a function's
//!   return address is at its first instruction ([`ENTRY_CFA_OFFSET`]) and how many bits of an
//!   unwind rule say where the return address was saved ([`RULE_FP_BITS`], [`RULE_RA_BITS`]);
//! - a return address as code can be found at ([`code_address`]: aarch64 strips a
//!   pointer-authentication code);
//! - its ELF machine and import relocations;
//! - whether the HotSpot frame walk knows its frames ([`VM_WALK`]).
//!
//! The frame record (`[fp]` the caller's fp, `[fp + 8]` the return address) is the same on
//! both; on aarch64 the caller's sp is not `fp + 16` but at least that (GCC puts the record at
//! the bottom of the frame), which a frame-pointer step takes as the caller's sp.

#[cfg(target_arch = "aarch64")]
mod aarch64;
#[cfg(target_arch = "x86_64")]
mod x86_64;

mod regs;

#[cfg(target_arch = "aarch64")]
pub use aarch64::*;
pub use regs::Regs;
#[cfg(target_arch = "x86_64")]
pub use x86_64::*;

/// The first byte past the registers of a `ucontext_t` (`uc_mcontext`), which a walk checks
/// to be readable before it takes a signal frame's registers, and HotSpot's
/// AsyncGetCallTrace reads.
pub const MCONTEXT_END: u64 = (std::mem::offset_of!(libc::ucontext_t, uc_mcontext)
    + std::mem::size_of::<libc::mcontext_t>()) as u64;
