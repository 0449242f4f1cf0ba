//! What the Java walk learns from HotSpot's generated code, the same on every architecture:
//! each architecture's code reader ([`super::cpu`]: `cpu_x86_64` on x86_64, `cpu_aarch64` on
//! aarch64) answers in these types.

/// Where an out-of-line stub goes back to the method body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Exit {
    /// The jump's target.
    pub target: u64,
    /// How far sp moves up from the pc to the jump (bytes the stub still had pushed).
    pub sp_up: u64,
}

/// Where a compiled method's code, followed from a pc in its body or epilogue, finds the
/// method's frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resume {
    /// An instruction where the frame is whole, reached with sp moved up `sp_up` bytes (what
    /// the body still had pushed, such as C2's secondary-supers scan's `push rax` on x86_64,
    /// or the breadcrumb below a runtime call on aarch64).
    Body {
        /// How far sp moves up from the pc to that instruction.
        sp_up: u64,
    },
    /// The method's return: the return address is at `sp + sp_up` (its caller's sp 8 bytes
    /// above).
    Return {
        /// How far above sp the return address is.
        sp_up: u64,
        /// Where the caller's frame pointer is: loaded from `sp + offset` on the way (`Some`),
        /// or already back in the register (`None`: no instruction on the way writes it).
        rbp_popped_at: Option<u64>,
    },
    /// A stub's return after its `leave` (the frame `enter` made, which the pc was inside: no
    /// instruction on the way wrote the frame pointer before the `leave`): the return address
    /// is at `fp + ret_above_fp`, the caller's frame pointer at `fp`.
    ReturnThroughFrame {
        /// How far above the frame pointer register's value the return address is.
        ret_above_fp: u64,
    },
    /// aarch64: the return with the return address in the link register (never written on
    /// the way), the caller's sp at `sp + sp_up`.
    ReturnInLink {
        /// How far sp moves up from the pc to the return.
        sp_up: u64,
        /// Where the caller's frame pointer is, as in [`Resume::Return`].
        fp_loaded_at: Option<u64>,
    },
}

/// What the rest of a compiled method's prologue does, from a pc in it to the pc where its
/// frame is complete.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Prologue {
    /// How far sp moves from the pc to the frame's completion (negative: down, the frame
    /// still to be made).
    pub sp_change: i64,
    /// Whether the caller's frame pointer is still to be saved (it is in the register, not yet
    /// in the frame).
    pub saves_rbp: bool,
    /// Whether the return address is still to be saved: it is in the link register (aarch64,
    /// before the frame record's store; never on x86_64, where the call pushed it).
    pub return_in_link: bool,
}

/// Where the return address of the interrupted frame may be, before the frame is known: the
/// candidates the walk checks when the code does not say it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Saved {
    /// The return address just below the caller's sp, the caller's frame pointer just below it
    /// (a complete frame, or the frame record just made).
    BelowReturn,
    /// The return address just below the caller's sp, the caller's frame pointer at sp (x86_64:
    /// `rbp` pushed, frame not allocated yet).
    AtSp,
    /// The return address just below the caller's sp, the caller's frame pointer still in the
    /// register.
    InRegister,
    /// aarch64: the return address still in the link register, the caller's frame pointer in
    /// its register.
    Link,
}

/// Where the return address and the caller's frame pointer of a frame not made (or no longer
/// made) are: the return address at `sp + ra_at` (`None`: in the link register), the caller's
/// frame pointer at `sp + fp_at` (`None`: in the register).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Unmade {
    /// Where the return address is, above sp.
    pub ra_at: Option<u64>,
    /// Where the caller's frame pointer is, above sp.
    pub fp_at: Option<u64>,
}

/// A stub that makes an `enter()` frame, at an interrupted pc.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Entered {
    /// Its frame is not made (or no longer).
    NotYet(Unmade),
    /// Its frame is made: the frame pointer register is its frame's.
    Built,
}
