//! Where native code calls Java, and the Java walk crosses back into native code:
//! - the **call stub** (JNI `Call*Method`, JNA callbacks, the launcher, thread start): an entry
//!   frame whose `JavaCallWrapper` saved the frame anchor of the Java code below
//!   (`frame::sender_for_entry_frame`);
//! - an **FFM upcall stub** (`java.lang.foreign`): its frame data (`UpcallStub::FrameData`)
//!   saved that anchor (`frame::sender_for_upcall_stub_frame`);
//! - a sample taken **inside** one of these stubs, or in a stub native code calls as a leaf
//!   (`jni_fast_Get*Field`).
//!
//! At each, the native caller's registers come from the stub's `enter()` frame (rbp), and the
//! native frames from there down to the Java code below are unwound from call-frame
//! information and written in place (`kind::NATIVE_PC`). The native walk must land exactly
//! on the saved anchor's frame (same sp); if it does not, the frames it found are kept and a
//! `kind::NATIVE_GAP` says some are missing, and the Java frames continue at the anchor.
//!
//! Nothing is taken on trust: each boundary frame names the sampled thread (the call stub's
//! 8th argument at `[rbp + 24]`, `JavaCallWrapper::_thread`, `FrameData::thread`), and a frame
//! that does not, or a frame anchor that does not lie above the boundary, cuts the walk
//! (truncated). Layouts: `cpu/x86/stubGenerator_x86_64.cpp` (`generate_call_stub`),
//! `share/runtime/javaCalls.hpp`, `cpu/x86/upcallLinker_x86_64.cpp`, `cpu/x86/frame_x86.cpp`.

#![deny(
    clippy::indexing_slicing,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::arithmetic_side_effects
)]

use super::code_types::{Entered, Unmade};
use super::codeblob::{Blob, BlobKind};
use super::cpu::{self, ENTRY_FRAME_CALL_WRAPPER, ENTRY_FRAME_THREAD};
use super::javawalk::{At, Out, Walker};
use super::stubs::{self, StubKind};
use crate::unwind::{Memory, NativeFrames, Regs, Stop};

/// `JavaCallWrapper::_thread` (its first field: `share/runtime/javaCalls.hpp`, the same in JDK
/// 17 to 25; checked on every use against the sampled thread).
const WRAPPER_THREAD: u64 = 0;
/// The wrapper lives in the frame of `JavaCalls::call`, a few hundred bytes above the call
/// stub's frame (128 to 144 bytes measured): a farther one is not believed (async-profiler
/// uses the same bound).
const MAX_WRAPPER_DISTANCE: u64 = 512;
/// Most bytes between a stub's sp and its rbp (its frame).
const MAX_STUB_FRAME: u64 = 64 * 1024;
/// Most bytes a call from JVM-generated code into the VM leaves between the frame anchor it
/// set and the sp of its call: `MacroAssembler::call_VM` first calls a local label (8 bytes)
/// and sets the anchor above that return address, then `call_VM_leaf_base` aligns the stack to
/// 16 bytes (8 more).
const CALL_PADDING: u64 = 16;
/// Native frames written between two Java frames (one run).
pub const MAX_SEGMENT_FRAMES: usize = 128;

/// What crossing a boundary gave.
#[derive(Debug, Clone, Copy)]
pub(super) enum Crossed {
    /// The Java frame below.
    Java(At),
    /// No Java frame below: the end of the thread's Java stack.
    End,
    /// The output is full.
    Full,
    /// The boundary could not be crossed: the walk is cut.
    Cut,
}

impl Crossed {
    /// `Ok(frame)` to walk on, `Err(complete)` when the walk ends here, `None` when it is cut
    /// (said in `out`).
    pub fn next(self, out: &mut Out<'_>) -> Option<Result<At, bool>> {
        match self {
            Crossed::Java(at) => Some(Ok(at)),
            Crossed::End => Some(Err(true)),
            Crossed::Full => Some(Err(false)),
            Crossed::Cut => {
                out.boundary_cut = true;
                None
            }
        }
    }
}

impl<M: Memory, N: NativeFrames, C: Fn(u64) -> bool> Walker<'_, M, N, C> {
    /// If `regs` (the interrupted pc, or the return address where the native walk reached
    /// JVM-generated code) are in a stub between native code and Java (the call stub, an
    /// upcall stub, a leaf stub called by native code): its pc is written as a native frame,
    /// then the native frames of its caller, then the Java frames below are found. `None` for
    /// any other code.
    pub(super) fn top_boundary(&self, regs: Regs, out: &mut Out<'_>) -> Option<Crossed> {
        let (caller, java) = match stubs::find(regs.pc).map(|s| (s.kind, s.start)) {
            Some((StubKind::CallStub, start)) => {
                let (caller, frame) = self.enter_frame_caller(regs, start)?;
                (caller, self.entry_java(frame))
            }
            Some((StubKind::NativeLeaf, _)) => {
                // Frameless, called by native code: its return address is at sp (x86_64) or
                // in lr (aarch64).
                (self.not_entered(regs, cpu::LEAF_RETURN)?, None)
            }
            // Frames being moved between the stack and the heap (a virtual thread's thaw or
            // freeze): not walked.
            Some((StubKind::Continuation, _)) => return Some(Crossed::Cut),
            Some(_) => return None,
            None => {
                let blob = self.layout.find_blob(regs.pc)?;
                if blob.kind != BlobKind::Upcall {
                    return None;
                }
                let (caller, frame) = self.enter_frame_caller(regs, blob.code_begin)?;
                // The upcall's own frame data holds the anchor only once `on_entry` saved it;
                // until then (and again after `on_exit`) the thread's anchor is set.
                let java = frame.and_then(|_| {
                    let data = self.upcall_data(&blob, regs.sp)?;
                    self.anchor_frame(data.checked_add(self.layout.upcall?.jfa)?)
                });
                (caller, java)
            }
        };
        if !out.push_native(regs.pc) {
            return Some(Crossed::Full);
        }
        // While the thread's own anchor is set (native code or the VM runs), it is the Java
        // frame below; the boundary's saved one is that same frame or not written yet.
        let anchor = match self.thread_anchor() {
            Some(Some(at)) => Some(Some(at)),
            _ => java,
        };
        Some(self.cross(caller, anchor, out))
    }

    /// The Java frame below a call stub whose frame is at rbp `frame`, from its wrapper:
    /// `Some(None)` when it records none (the first entry of a thread); `None` when the frame
    /// is not known or does not name the thread.
    fn entry_java(&self, frame: Option<u64>) -> Option<Option<At>> {
        let fp = frame?;
        if self
            .stack
            .read_u64(fp.checked_add_signed(ENTRY_FRAME_THREAD)?)?
            != self.thread
        {
            return None;
        }
        let wrapper = self
            .stack
            .read_u64(fp.checked_sub(ENTRY_FRAME_CALL_WRAPPER)?)?;
        if wrapper <= fp || wrapper.checked_sub(fp)? > MAX_WRAPPER_DISTANCE {
            return None;
        }
        if self.stack.read_u64(wrapper.checked_add(WRAPPER_THREAD)?)? != self.thread {
            return None;
        }
        self.anchor_frame(wrapper.checked_add(self.layout.wrapper_anchor)?)
    }

    /// A Java frame returned into the call stub (`at`: its pc is the call stub's return
    /// address, its fp the call stub's rbp): the native code that called Java, then the Java
    /// frames below it.
    pub(super) fn cross_entry(&self, at: At, out: &mut Out<'_>) -> Crossed {
        let Some(java) = self.entry_java(Some(at.fp)) else {
            return Crossed::Cut;
        };
        let Some(below) = java else {
            // The thread's first entry into Java: its Java stack ends here.
            return Crossed::End;
        };
        match self.rbp_caller(at.fp) {
            Some(caller) => self.cross(caller, Some(Some(below)), out),
            None => Crossed::Cut,
        }
    }

    /// A Java frame returned into an upcall stub (`at`: sp is the stub frame's, fp its rbp):
    /// the native code that called the upcall, then the Java frames below it.
    pub(super) fn cross_upcall(&self, blob: &Blob, at: At, out: &mut Out<'_>) -> Crossed {
        let below = self.upcall_data(blob, at.sp).and_then(|data| {
            let jfa = data.checked_add(self.layout.upcall?.jfa)?;
            self.anchor_frame(jfa)
        });
        match (below, self.rbp_caller(at.fp)) {
            // A thread attached to run the upcall: no Java frame below.
            (Some(None), _) => Crossed::End,
            (Some(Some(below)), Some(caller)) => self.cross(caller, Some(Some(below)), out),
            _ => Crossed::Cut,
        }
    }

    /// The frame data of the upcall stub `blob` whose frame has sp `sp`, if it names the
    /// sampled thread.
    pub(super) fn upcall_data(&self, blob: &Blob, sp: u64) -> Option<u64> {
        let layout = self.layout.upcall?;
        let offset = layout.frame_data_offset.uint(blob.at)?;
        let data = sp.checked_add(offset)?;
        (self.stack.read_u64(data.checked_add(layout.thread)?)? == self.thread).then_some(data)
    }

    /// The caller of an `enter()` frame at rbp `fp`: return address at `[fp + 8]`, its sp
    /// `fp + 16`, its rbp `[fp]`.
    fn rbp_caller(&self, fp: u64) -> Option<Regs> {
        if fp % 8 != 0 {
            return None;
        }
        Some(Regs {
            pc: crate::arch::code_address(self.stack.read_u64(fp.checked_add(8)?)?),
            sp: fp.checked_add(16)?,
            fp: self.stack.read_u64(fp)?,
            lr: 0,
        })
    }

    /// The caller of a stub that builds an `enter()` frame (`push rbp; mov rbp, rsp` ...
    /// `leave` or `pop rbp`, `ret` on x86_64; `stp x29, x30, [sp, #-16]!; mov x29, sp` ...
    /// `leave()`, `ret` on aarch64), interrupted at `regs` (its code starts at `start`), and
    /// the stub's frame pointer once its frame is built.
    fn enter_frame_caller(&self, regs: Regs, start: u64) -> Option<(Regs, Option<u64>)> {
        match cpu::entered(regs.pc, start)? {
            Entered::NotYet(unmade) => Some((self.not_entered(regs, unmade)?, None)),
            Entered::Built => {
                if regs.fp <= regs.sp || regs.fp.checked_sub(regs.sp)? > MAX_STUB_FRAME {
                    return None;
                }
                Some((self.rbp_caller(regs.fp)?, Some(regs.fp)))
            }
        }
    }

    /// The caller of a stub interrupted at `regs` before its frame is made (or after it is
    /// taken down), as `unmade` says: the return address at sp plus an offset or in lr, the
    /// caller's frame pointer likewise or still in the register.
    fn not_entered(&self, regs: Regs, unmade: Unmade) -> Option<Regs> {
        let Unmade { ra_at, fp_at } = unmade;
        let fp = match fp_at {
            Some(at) => self.stack.read_u64(regs.sp.checked_add(at)?)?,
            None => regs.fp,
        };
        Some(match ra_at {
            Some(at) => Regs {
                pc: crate::arch::code_address(self.stack.read_u64(regs.sp.checked_add(at)?)?),
                sp: regs.sp.checked_add(at)?.checked_add(8)?,
                fp,
                lr: 0,
            },
            None => Regs {
                pc: crate::arch::code_address(regs.lr),
                sp: regs.sp,
                fp,
                lr: 0,
            },
        })
    }

    /// Whether the native walk, reaching Java code at `reached`, landed on the frame anchor's
    /// frame `below`: the same sp, or up to [`CALL_PADDING`] below it (a call into the VM
    /// from JVM-generated code), in the same code blob.
    fn lands_on(&self, reached: Regs, below: At) -> bool {
        let Some(padding) = below.sp.checked_sub(reached.sp) else {
            return false;
        };
        if padding == 0 {
            return true;
        }
        padding <= CALL_PADDING
            && matches!(
                (self.layout.find_blob(reached.pc), self.layout.find_blob(below.pc)),
                (Some(a), Some(b)) if a.at == b.at
            )
    }

    /// Walks the native frames from `caller` down to Java code, writing them as native frames
    /// between Java frames. `anchor`: the Java frame below as the boundary saved it
    /// (`Some(None)`: none), or `None` when it is not known: then the frame where the native
    /// walk reaches Java is taken.
    fn cross(&self, caller: Regs, anchor: Option<Option<At>>, out: &mut Out<'_>) -> Crossed {
        let mut pcs = [0u64; MAX_SEGMENT_FRAMES];
        let (count, stop, reached) = self.native.walk(caller, &mut pcs);
        for &pc in pcs.iter().take(count) {
            if !out.push_native(pc) {
                return Crossed::Full;
            }
        }
        let reached = reached.filter(|_| stop == Stop::ReachedJava);
        match anchor {
            Some(Some(below)) => {
                // The native code was called from the anchor's frame: the walk must land
                // there, or frames are missing in between.
                if !reached.is_some_and(|r| self.lands_on(r, below)) && !out.push_gap() {
                    return Crossed::Full;
                }
                Crossed::Java(below)
            }
            Some(None) => Crossed::End,
            None => match reached {
                Some(r) => Crossed::Java(At::returned_to(r)),
                None => {
                    let _ = out.push_gap();
                    Crossed::Cut
                }
            },
        }
    }
}
