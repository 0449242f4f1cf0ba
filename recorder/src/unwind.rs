//! Frame-pointer walk of the native frames above the first Java frame. Pure: memory is read
//! through [`Memory`] (bounds-checked by the caller) and code is classified through [`CodeKind`],
//! so it is tested over synthetic stacks. Stops, never faults, on anything implausible.

#![deny(
    clippy::indexing_slicing,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::arithmetic_side_effects
)]

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

/// Classifies program counters.
pub trait CodeKind {
    /// The kind of code at `pc`.
    fn kind(&self, pc: u64) -> Code;
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
    /// The next pc is in Java code: the native part is complete (as far as frame pointers tell).
    ReachedJava = 0,
    /// The frame chain ended (fp or return address 0): the bottom of a native-only stack.
    EndOfStack = 1,
    /// `out` is full and the next frame is still native.
    Depth = 2,
    /// A frame pointer was outside the stack, misaligned or not above the previous one.
    BadFrame = 3,
    /// A pc in neither native nor Java code.
    UnknownCode = 4,
}

impl Stop {
    /// Whether native frames may be missing.
    pub fn truncated(self) -> bool {
        matches!(self, Stop::Depth | Stop::BadFrame | Stop::UnknownCode)
    }

    /// Decodes [`Stop`] from its `u8`.
    pub fn from_u8(v: u8) -> Stop {
        match v {
            0 => Stop::ReachedJava,
            1 => Stop::EndOfStack,
            2 => Stop::Depth,
            3 => Stop::BadFrame,
            _ => Stop::UnknownCode,
        }
    }
}

/// Walks from `regs` (leaf first) into `out`; returns how many pcs it wrote and why it stopped.
/// The first pc is the interrupted instruction, the others are return addresses.
pub fn walk_fp(
    regs: Regs,
    mem: &impl Memory,
    code: &impl CodeKind,
    out: &mut [u64],
) -> (usize, Stop) {
    let mut r = regs;
    let mut n = 0usize;
    loop {
        match code.kind(r.pc) {
            Code::Java => return (n, Stop::ReachedJava),
            Code::Unknown => return (n, Stop::UnknownCode),
            Code::Native => {}
        }
        let Some(slot) = out.get_mut(n) else {
            return (n, Stop::Depth);
        };
        *slot = r.pc;
        n = n.wrapping_add(1);
        if r.fp == 0 {
            return (n, Stop::EndOfStack);
        }
        if r.fp < r.sp || r.fp % 8 != 0 {
            return (n, Stop::BadFrame);
        }
        let (Some(next_fp), Some(ret)) = (mem.read_u64(r.fp), mem.read_u64(r.fp.wrapping_add(8)))
        else {
            return (n, Stop::BadFrame);
        };
        if ret == 0 {
            return (n, Stop::EndOfStack);
        }
        // Frames live higher up the stack than their callees; a chain that does not climb is
        // garbage (code without frame pointers keeps data in rbp).
        if next_fp != 0 && next_fp <= r.fp {
            return (n, Stop::BadFrame);
        }
        r = Regs {
            pc: ret,
            sp: r.fp.wrapping_add(16),
            fp: next_fp,
        };
    }
}

#[cfg(test)]
#[allow(
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects,
    clippy::unwrap_used
)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    struct Stack {
        lo: u64,
        hi: u64,
        words: HashMap<u64, u64>,
    }

    impl Memory for Stack {
        fn read_u64(&self, addr: u64) -> Option<u64> {
            (addr >= self.lo && addr + 8 <= self.hi && addr % 8 == 0)
                .then(|| *self.words.get(&addr).unwrap_or(&0))
        }
    }

    /// Native code at 0x1000..0x2000, Java at 0x5000..0x6000, nothing elsewhere.
    struct Layout;

    impl CodeKind for Layout {
        fn kind(&self, pc: u64) -> Code {
            match pc {
                0x1000..=0x1fff => Code::Native,
                0x5000..=0x5fff => Code::Java,
                _ => Code::Unknown,
            }
        }
    }

    /// A stack whose frames at `fps` hold (next fp, return address) pairs.
    fn stack(frames: &[(u64, u64, u64)]) -> Stack {
        let mut words = HashMap::new();
        for &(fp, next_fp, ret) in frames {
            words.insert(fp, next_fp);
            words.insert(fp + 8, ret);
        }
        Stack {
            lo: 0x7000,
            hi: 0x9000,
            words,
        }
    }

    /// Walks `stack` from the registers `pc`, `sp`, `fp` with the `Layout` code map.
    fn walk(stack: &Stack, pc: u64, sp: u64, fp: u64, out: &mut [u64]) -> (usize, Stop) {
        walk_fp(Regs { pc, sp, fp }, stack, &Layout, out)
    }

    #[test]
    fn walks_native_frames_up_to_java() {
        let s = stack(&[
            (0x7100, 0x7200, 0x1200),
            (0x7200, 0x7300, 0x1300),
            (0x7300, 0x7400, 0x5010),
        ]);
        let mut out = [0u64; 8];
        let (n, stop) = walk(&s, 0x1100, 0x7080, 0x7100, &mut out);
        assert_eq!(&out[..n], &[0x1100, 0x1200, 0x1300]);
        assert_eq!(stop, Stop::ReachedJava);
        assert!(!stop.truncated());
    }

    #[test]
    fn leaf_in_java_gives_an_empty_native_stack() {
        let s = stack(&[]);
        let mut out = [0u64; 8];
        assert_eq!(
            walk(&s, 0x5000, 0x7000, 0x7100, &mut out),
            (0, Stop::ReachedJava)
        );
    }

    #[test]
    fn stops_on_frames_outside_the_stack_or_not_climbing() {
        let mut out = [0u64; 8];
        // fp outside the bounds (heap pointer in rbp, as in malloc).
        let s = stack(&[]);
        assert_eq!(
            walk(&s, 0x1100, 0x7000, 0x55_0000, &mut out),
            (1, Stop::BadFrame)
        );
        // fp below sp, misaligned, and a loop.
        assert_eq!(walk(&s, 0x1100, 0x7200, 0x7100, &mut out).1, Stop::BadFrame);
        assert_eq!(walk(&s, 0x1100, 0x7000, 0x7103, &mut out).1, Stop::BadFrame);
        let looped = stack(&[(0x7100, 0x7100, 0x1200)]);
        assert_eq!(
            walk(&looped, 0x1100, 0x7000, 0x7100, &mut out),
            (1, Stop::BadFrame)
        );
        // Small integer in rbp (zlib): below sp.
        assert_eq!(
            walk(&s, 0x1100, 0x7000, 0x40, &mut out),
            (1, Stop::BadFrame)
        );
    }

    #[test]
    fn end_of_stack_unknown_code_and_depth() {
        let mut out = [0u64; 8];
        let root = stack(&[(0x7100, 0, 0x1200)]);
        assert_eq!(
            walk(&root, 0x1100, 0x7000, 0x7100, &mut out),
            (2, Stop::EndOfStack)
        );
        assert_eq!(
            walk(&root, 0x1100, 0x7000, 0, &mut out),
            (1, Stop::EndOfStack)
        );
        let unknown = stack(&[(0x7100, 0x7200, 0x9999)]);
        assert_eq!(
            walk(&unknown, 0x1100, 0x7000, 0x7100, &mut out),
            (1, Stop::UnknownCode)
        );
        let deep: Vec<_> = (0..20)
            .map(|i| (0x7100 + i * 0x10, 0x7110 + i * 0x10, 0x1200 + i))
            .collect();
        let deep = stack(&deep);
        let (n, stop) = walk(&deep, 0x1100, 0x7000, 0x7100, &mut out);
        assert_eq!((n, stop), (8, Stop::Depth));
        assert!(stop.truncated());
        let mut none: [u64; 0] = [];
        assert_eq!(walk(&deep, 0x1100, 0, 0, &mut none), (0, Stop::Depth));
    }
}
