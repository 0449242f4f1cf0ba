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
//! - [`types`]: what the walk is given and gives: [`Regs`], [`Code`] and [`CodeKind`],
//!   [`Memory`], [`Stop`].
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
pub mod types;
pub mod walk;
pub mod watcher;

pub use rule::Rule;
pub use types::{Code, CodeKind, Memory, Regs, Stop};
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
