//! Unwinding the native frames above the first Java frame, in the signal handler.
//!
//! The handler's path, in reading order:
//! - [`mod@walk`]: the walk itself, from the interrupted registers: call-frame information where a
//!   library has it, frame pointers where it has not, through signal frames and PLT stubs,
//!   until the first Java frame. Pure: memory is read through [`Memory`] (bounds-checked by
//!   the caller) and code is classified through [`CodeKind`], so it is tested over synthetic
//!   stacks. Stops, never faults, on anything implausible. A sample starts with
//!   [`walk_sample`]: if our signal arrived together with another one, so that the interrupted
//!   code is the other signal's handler at its entry, the sample is taken from the code that
//!   signal interrupted instead (its `ucontext_t` on the stack, also given to
//!   AsyncGetCallTrace).
//! - [`rule`]: the compact per-library table the walk looks rules up in (binary search).
//!
//! Off the handler:
//! - [`build`]: turns a library's `.eh_frame` or `.debug_frame` into a [`rule::Table`].
//! - [`tables`]: finds each loaded library's file (or the vDSO in memory), builds its table
//!   once and keeps it while the library stays loaded.
//! - [`load_hook`]: holds each library the JVM loads open from its `dlopen` on (through
//!   [`got`], `libjvm.so`'s import slot), so that a file deleted right after loading stays
//!   readable whole;
//! - [`image`]: rebuilds the file of a library whose file is gone and was not held (loaded
//!   before the agent, or by a loader other than the JVM's) from the process's memory, for its
//!   table and to keep it with the recording.
//! - [`watcher`]: re-reads the code map ([`codemap`]) when libraries are loaded or
//!   unloaded and publishes it, with the tables, to the handler.
//! - [`jvm_code`]: the code cache's range, where native code ends and the JVM's begins.

pub mod build;
pub mod codemap;
pub mod got;
pub mod image;
pub mod jvm_code;
pub mod load_hook;
pub mod rule;
pub mod tables;
pub mod walk;
pub mod watcher;

pub use rule::Rule;
pub use walk::{walk, walk_sample, Sample};

use std::sync::atomic::{AtomicBool, Ordering};

/// Whether native frames are unwound with call-frame information (`cstack=dwarf`) or frame
/// pointers only (`cstack=fp`).
pub static USE_CFI: AtomicBool = AtomicBool::new(true);

/// The native step of a sample: the frames from `regs` through the code map `map` (the
/// current one, see [`codemap::with_current`]), reading `stack` (the thread's own stack from
/// the interrupted sp). With no readable stack (the code runs on a fiber, an alternate signal
/// stack, or a thread of unknown bounds) only the pc is kept, as [`Stop::OffStack`]. A pc in
/// unknown code makes the watcher look for new libraries.
#[deny(
    clippy::indexing_slicing,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::arithmetic_side_effects
)]
pub fn native_step(
    regs: Regs,
    map: Option<&codemap::CodeMap>,
    stack: Option<&impl Memory>,
    out: &mut [u64],
) -> Sample {
    let Some(stack) = stack else {
        let count = match out.first_mut() {
            Some(first) => {
                *first = regs.pc;
                1
            }
            None => 0,
        };
        return Sample {
            count,
            stop: Stop::OffStack,
            context: None,
            java_entry: None,
        };
    };
    let cfi = USE_CFI.load(Ordering::Relaxed);
    let sample = match map {
        Some(map) => walk_sample(regs, stack, map, cfi, out),
        None => Sample {
            count: 0,
            stop: Stop::UnknownCode,
            context: None,
            java_entry: None,
        },
    };
    if sample.stop == Stop::UnknownCode {
        watcher::unknown_pc_seen();
    }
    sample
}

/// Registers at the interrupted instruction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Regs {
    /// Program counter.
    pub pc: u64,
    /// Stack pointer.
    pub sp: u64,
    /// Frame pointer (rbp).
    pub fp: u64,
}

/// What kind of code a program counter is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Code {
    /// A file-backed native library (or the vDSO): walk on.
    Native,
    /// JVM-generated code (JIT, interpreter, stubs): the Java part starts here.
    Java,
    /// Neither: the walk cannot tell where it is.
    Unknown,
}

/// Classifies program counters and gives their unwind rules.
pub trait CodeKind {
    /// The kind of code at `pc`.
    fn kind(&self, pc: u64) -> Code;

    /// How to unwind from `pc` ([`Rule::NONE`]: no call-frame information, use frame pointers).
    fn rule(&self, _pc: u64) -> Rule {
        Rule::NONE
    }

    /// The kind of code at `pc` and, if it is native and `rule_pc` is given, the rule at
    /// `rule_pc` (`pc`, or `pc - 1` for a return address). One lookup where an implementation
    /// can share it.
    fn classify(&self, pc: u64, rule_pc: Option<u64>) -> (Code, Rule) {
        let code = self.kind(pc);
        let rule = match (code, rule_pc) {
            (Code::Native, Some(at)) => self.rule(at),
            _ => Rule::NONE,
        };
        (code, rule)
    }
}

/// The native walk between Java frames: from a native caller's registers to the first return
/// address in JVM-generated code. The Java walk ([`crate::hotspot`]) is given one over the
/// handler's code map and unwind tables ([`CodeMapWalk`]); a test gives its own.
pub trait NativeFrames {
    /// Walks from `regs` into `out`: the pcs written, why the walk stopped, and the registers
    /// at the Java frame where it stopped (stop [`Stop::ReachedJava`], rbp known).
    fn walk(&self, regs: Regs, out: &mut [u64]) -> (usize, Stop, Option<Regs>);
}

/// [`NativeFrames`] over a code map and a stack, with call-frame information as `cstack=`
/// says. Without either, every walk stops at once, in unknown code.
pub struct CodeMapWalk<'a, M: Memory> {
    /// The thread's stack.
    pub mem: Option<&'a M>,
    /// The code map.
    pub map: Option<&'a codemap::CodeMap>,
}

impl<M: Memory> NativeFrames for CodeMapWalk<'_, M> {
    fn walk(&self, regs: Regs, out: &mut [u64]) -> (usize, Stop, Option<Regs>) {
        match (self.mem, self.map) {
            (Some(mem), Some(map)) => {
                let cfi = USE_CFI.load(Ordering::Relaxed);
                walk::walk_to_java(regs, mem, map, cfi, out)
            }
            _ => (0, Stop::UnknownCode, None),
        }
    }
}

/// Reads 8-byte words, or refuses.
pub trait Memory {
    /// The word at `addr`, or `None` if it may not be read.
    fn read_u64(&self, addr: u64) -> Option<u64>;
}

/// Why a walk ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Stop {
    /// The next pc is in Java code: the native part is complete (as far as the unwind
    /// information tells).
    ReachedJava = 0,
    /// The outermost frame (call-frame information marks the return address undefined:
    /// thread start): the bottom of a native-only stack.
    EndOfStack = 1,
    /// `out` is full and the next frame is still native.
    Depth = 2,
    /// The next frame could not be found: a frame pointer or CFA outside the stack,
    /// misaligned or not above the previous one, a zero return address or frame pointer, an
    /// unreadable slot.
    BadFrame = 3,
    /// A pc in neither native nor Java code.
    UnknownCode = 4,
    /// The interrupted code runs on a stack that is not the thread's own (a fiber, an
    /// alternate signal stack) or the thread's stack is not known: its pc alone was kept.
    OffStack = 5,
    /// The interrupted pc is in JVM-generated code that neither the native walk nor the Java
    /// walk could step out of (a stub in the middle of a transition): its pc alone was kept,
    /// so that the sample still says where it was.
    JvmCode = 6,
}

impl Stop {
    /// Whether native frames may be missing.
    pub fn truncated(self) -> bool {
        matches!(
            self,
            Stop::Depth | Stop::BadFrame | Stop::UnknownCode | Stop::OffStack | Stop::JvmCode
        )
    }

    /// Decodes [`Stop`] from its `u8`.
    pub fn from_u8(v: u8) -> Stop {
        match v {
            0 => Stop::ReachedJava,
            1 => Stop::EndOfStack,
            2 => Stop::Depth,
            3 => Stop::BadFrame,
            5 => Stop::OffStack,
            6 => Stop::JvmCode,
            _ => Stop::UnknownCode,
        }
    }
}
