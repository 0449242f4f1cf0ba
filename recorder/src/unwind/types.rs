//! The native walk's own vocabulary, below everything else in the wing: the registers a walk
//! starts from ([`Regs`]), how code is classified ([`Code`], [`CodeKind`]), how memory is read
//! ([`Memory`]) and why a walk ended ([`Stop`]).

use super::rule::Rule;

pub use crate::arch::Regs;

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
