//! The registers a walk starts from and steps through, on every architecture.

/// Registers at the interrupted instruction, or of a frame the walk reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Regs {
    /// Program counter.
    pub pc: u64,
    /// Stack pointer.
    pub sp: u64,
    /// Frame pointer (rbp on x86_64, x29 on aarch64).
    pub fp: u64,
    /// The link register (aarch64 x30) where it is known to hold the return address of the
    /// frame at `pc` if that frame has not saved it: at an interrupted instruction (from a
    /// `ucontext_t`); 0 (unknown) in every frame a walk stepped to, and always on x86_64,
    /// whose calls push the return address.
    pub lr: u64,
}
