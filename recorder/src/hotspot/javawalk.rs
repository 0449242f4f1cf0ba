//! The Java-frame walk: HotSpot's frames read through its own structure descriptions, for
//! the samples AsyncGetCallTrace cannot walk (it returns "unknown Java" when the top frame is
//! in a prologue, an epilogue or a stub) and for the frame types it does not give.
//!
//! It starts at the interrupted pc when that is in the code cache, otherwise at the thread's
//! last Java frame (`JavaThread::_anchor`). Then, per physical frame:
//! - an nmethod: the scopes at the pc (innermost first; all but the last were inlined), and
//!   the sender at sp + frame size (return address and saved frame pointer just below it);
//! - the interpreter: the method and bytecode pointer in the frame (slots below the frame
//!   pointer, [`super::cpu`] gives the architecture's), the sender from the frame pointer;
//! - a frame returning into a virtual thread's return barrier: its older frames are still
//!   frozen in its continuation's heap stack chunks, read in [`super::continuation`];
//! - a frame returning into the VM's call stub (an entry frame) or into an FFM upcall stub:
//!   native code called Java there. The native frames between are unwound from call-frame
//!   information and written in their place (`kind::NATIVE_PC`), and the Java frames below
//!   continue at the frame anchor the boundary saved ([`super::boundaries`]), or the stack
//!   ends there.
//!
//! The top frame is not always complete: in a prologue or an epilogue, or in a frameless stub,
//! the return address is at sp, sp+8 or below the full frame (x86_64), or still in the link
//! register (aarch64). Each candidate is checked (the return address must be a call site with
//! a PcDesc in an nmethod, an interpreter frame with a valid method, or the call stub), and one
//! must win; else, past the prologue, the method's code from the pc is decoded to where its
//! frame is whole or to its `ret` ([`cpu::resume`]), and the sender found so must be one too;
//! else the walk stops there. On aarch64 the code is read first ([`cpu::RESUME_FIRST`]). Nothing
//! is guessed: a walk that cannot go on ends as truncated with what it has.

#![deny(
    clippy::indexing_slicing,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::arithmetic_side_effects
)]

use super::code_types::{Resume, Saved};
use super::codeblob::{Blob, BlobKind};
use super::cpu::{self, INTERPRETER_BCP};
use super::layout::JavaLayout;
use super::mem::read_ptr;
use super::scopes::{self, PcDesc, Scope, MAX_SCOPES};
use super::stubs::{self, StubKind};
use crate::unwind::{Memory, NativeFrames, Regs};

/// Frame kinds, as `jdk.types.FrameType` keys (see `jfr_writer::FrameType`).
pub mod kind {
    /// Interpreted.
    pub const INTERPRETED: u8 = 0;
    /// JIT compiled.
    pub const JIT_COMPILED: u8 = 1;
    /// Inlined into a compiled caller.
    pub const INLINED: u8 = 2;
    /// A native method.
    pub const NATIVE: u8 = 3;
    /// Not known.
    pub const UNKNOWN: u8 = 6;
    /// Not a Java frame: a native frame between two Java frames (a JNI or FFM upcall's native
    /// caller), its pc in the frame's `method_id`. The walk writes them in stack order, so a run
    /// of them sits before the Java frame that called into it.
    pub const NATIVE_PC: u8 = 0x10;
    /// Not a Java frame: the native frames between two Java frames could not all be walked
    /// (after the `NATIVE_PC` frames of the run that precedes it, if any).
    pub const NATIVE_GAP: u8 = 0x11;
}

/// The bytecode index AsyncGetCallTrace gives native methods.
pub const NATIVE_BCI: i32 = -3;
/// Interpreter frame slots below the frame pointer, the same on x86_64 and aarch64
/// (`frame_x86.hpp`, `frame_aarch64.hpp`: sender sp at -1 word, the `Method*` at -3); the
/// bytecode pointer's differs ([`cpu::INTERPRETER_BCP`]).
const INTERPRETER_SENDER_SP: u64 = 8;
const INTERPRETER_METHOD: u64 = 3 * 8;
/// Bound on physical frames (each also bounded by the output size).
const MAX_PHYSICAL_FRAMES: usize = 4096;

/// One Java frame of the walk.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct JavaFrame {
    /// The jmethodID.
    pub method_id: u64,
    /// The bytecode index (-1 unknown, -3 native).
    pub bci: i32,
    /// The frame kind ([`kind`]).
    pub kind: u8,
}

/// The interrupted thread's state, as the walk starts from it.
#[derive(Debug, Clone, Copy)]
pub struct Interrupted {
    /// pc, sp and rbp at the interrupted instruction.
    pub regs: Regs,
    /// Where the native walk reached Java code, if the pc is native code called from Java
    /// without a transition (a leaf call: the thread's anchor is not set).
    pub java_entry: Option<Regs>,
    /// r13: the template interpreter's bytecode pointer.
    pub bcp_register: u64,
    /// rbx: the template interpreter's `Method*` while it enters a method.
    pub method_register: u64,
    /// The native frames are in a virtual thread's thaw that has not changed its continuation
    /// yet ([`super::continuation::ThawStart`]): the continuation stub the native walk reached
    /// is crossed into the frames still all in the heap.
    pub thaw_not_started: bool,
}

/// What a walk gave.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JavaWalk {
    /// Frames written.
    pub count: usize,
    /// Whether the walk reached the end of the thread's Java stack.
    pub complete: bool,
    /// Whether it stopped at a boundary it could not cross: a virtual thread's frozen frames,
    /// an entry from native code. AsyncGetCallTrace passes such boundaries without a sign
    /// (it skips frozen frames), so its frames are not believed there.
    pub cut_at_boundary: bool,
}

/// Whose stack a `Continuation.enterSpecial` frame ends (the Java walk's `entry_owner`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryOwner {
    /// Not `Continuation.enterSpecial` (or the layout is not known yet).
    NotEntry,
    /// The mounted virtual thread's: its stack ends here.
    Virtual,
    /// The carrier's own (a carrier running code as itself, or no virtual thread mounted).
    Carrier,
    /// A virtual thread's entry whose thread objects cannot be read now.
    Unknown,
}

/// A physical frame: where it is and whether it is the interrupted one (its pc may be at
/// any instruction, not a call site).
#[derive(Debug, Clone, Copy)]
pub(super) struct At {
    pub pc: u64,
    pub sp: u64,
    pub fp: u64,
    /// The interrupted frame: it may be in its prologue or epilogue.
    pub top: bool,
    /// The pc is a call site with debug information (else the nearest following PcDesc is
    /// taken, as for an interrupted pc or the return address of a leaf call).
    pub exact: bool,
    /// The link register (aarch64) of the interrupted frame; 0 for any other.
    pub lr: u64,
}

impl At {
    /// A frame whose pc is a return address that may lack debug information (reached by the
    /// native walk, or recorded by a frame anchor).
    pub fn returned_to(r: Regs) -> At {
        At {
            pc: r.pc,
            sp: r.sp,
            fp: r.fp,
            top: false,
            exact: false,
            lr: 0,
        }
    }
}

/// Where one physical frame's step leaves the walk (see `Walker::step`).
#[derive(Debug, Clone, Copy)]
enum Step {
    /// The frame's sender: walked on once it is found above the frame (and the first one is
    /// where the walk's first physical Java frame returns to).
    Sender(At),
    /// The Java frame below a boundary crossed (a virtual thread's frozen frames, an entry
    /// from native code): walked on as it is.
    Across(At),
    /// The walk ends: `true` at the end of the Java stack, `false` when the output is full.
    End(bool),
}

pub(super) struct Out<'a> {
    frames: &'a mut [JavaFrame],
    count: usize,
    /// Where the walk's first physical Java frame returns to (0: not known yet).
    pub first_return: u64,
    /// The walk stopped at a boundary it could not cross (a virtual thread's frozen frames,
    /// an entry from native code).
    pub boundary_cut: bool,
}

impl Out<'_> {
    pub fn push(&mut self, frame: JavaFrame) -> bool {
        match self.frames.get_mut(self.count) {
            Some(slot) => {
                *slot = frame;
                self.count = self.count.saturating_add(1);
                true
            }
            None => false,
        }
    }

    /// A native frame between Java frames ([`kind::NATIVE_PC`]).
    pub fn push_native(&mut self, pc: u64) -> bool {
        self.push(JavaFrame {
            method_id: pc,
            bci: -1,
            kind: kind::NATIVE_PC,
        })
    }

    /// How many frames are written so far.
    pub fn len(&self) -> usize {
        self.count
    }

    /// Takes back the frames written after the first `count`.
    pub fn truncate(&mut self, count: usize) {
        self.count = self.count.min(count);
    }

    /// Native frames missing here ([`kind::NATIVE_GAP`]).
    pub fn push_gap(&mut self) -> bool {
        self.push(JavaFrame {
            method_id: 0,
            bci: -1,
            kind: kind::NATIVE_GAP,
        })
    }
}

/// One walk's context: the layout, the sampled thread, its stack and the native walk.
pub(super) struct Walker<'a, M: Memory, N: NativeFrames, C: Fn(u64) -> bool> {
    pub layout: &'a JavaLayout,
    /// The sampled `JavaThread*`: every boundary frame must name it.
    pub thread: u64,
    pub stack: &'a M,
    pub native: &'a N,
    pub in_code_cache: &'a C,
}

impl JavaLayout {
    /// Walks the Java frames of the interrupted thread (`JavaThread*` `thread`) into `frames`.
    /// `in_code_cache` tells JVM-generated code from native code; `stack` reads the thread's
    /// stack above the interrupted sp; `native` walks the native frames between Java frames.
    pub fn walk_java(
        &self,
        thread: u64,
        interrupted: Interrupted,
        in_code_cache: impl Fn(u64) -> bool,
        stack: &impl Memory,
        native: &impl NativeFrames,
        frames: &mut [JavaFrame],
    ) -> JavaWalk {
        let walker = Walker {
            layout: self,
            thread,
            stack,
            native,
            in_code_cache: &in_code_cache,
        };
        let mut out = Out {
            frames,
            count: 0,
            first_return: 0,
            boundary_cut: false,
        };
        let mut complete = walker.walk_into(interrupted, &mut out);
        if out.count == 0 && complete != Some(true) {
            // Nothing from the interrupted frame (a stub or blob that cannot be stepped
            // through, such as the uncommon-trap or deoptimization blob): from the thread's
            // last Java frame, if it has one (it runs VM code called from Java).
            let from_anchor = Interrupted {
                regs: Regs {
                    pc: 0,
                    sp: interrupted.regs.sp,
                    fp: 0,
                    lr: 0,
                },
                java_entry: None,
                thaw_not_started: false,
                ..interrupted
            };
            complete = walker.walk_into(from_anchor, &mut out);
            if out.count == 0 {
                // No last Java frame either: the interrupted frame's stack stays unknown (it
                // is not "no Java frames": the thread was in JVM-generated code).
                complete = None;
            }
        }
        JavaWalk {
            count: out.count,
            complete: complete == Some(true),
            cut_at_boundary: out.boundary_cut && complete != Some(true),
        }
    }
}

impl<M: Memory, N: NativeFrames, C: Fn(u64) -> bool> Walker<'_, M, N, C> {
    /// `Some(true)` at the end of the Java stack, `Some(false)`/`None` when cut short.
    fn walk_into(&self, interrupted: Interrupted, out: &mut Out<'_>) -> Option<bool> {
        // The interpreter's registers describe the top frame only.
        let mut registers = Some((interrupted.bcp_register, interrupted.method_register));
        let mut at = match self.first_frame(interrupted, &mut registers, out)? {
            Ok(at) => at,
            Err(end) => return Some(end),
        };
        // Only the walk's first frame can be the stub a thaw not started yet was called from.
        let mut thaw_not_started = interrupted.thaw_not_started;
        for _ in 0..MAX_PHYSICAL_FRAMES {
            let at_thaw_start = std::mem::take(&mut thaw_not_started) && out.count == 0;
            match self.step(at, at_thaw_start, &mut registers, out)? {
                Step::Across(next) => at = next,
                Step::Sender(next) => {
                    // Only the interrupted frame's sender may share its sp: a frameless frame
                    // whose return address is still in lr (aarch64).
                    if next.sp < at.sp || (next.sp == at.sp && !at.top) {
                        return None;
                    }
                    if out.first_return == 0 {
                        out.first_return = next.pc;
                    }
                    at = next;
                }
                Step::End(end) => return Some(end),
            }
        }
        None
    }

    /// The walk's first physical frame: the interrupted one if its pc is JVM-generated code,
    /// else where the native walk reached Java code, else the thread's last Java frame. A
    /// stub between native code and Java there is crossed (its native frames written).
    /// `Ok(frame)` to walk on, `Err(complete)` when the walk ends before any frame, `None`
    /// when it is cut. `registers` are dropped unless the first frame is the interrupted one.
    fn first_frame(
        &self,
        interrupted: Interrupted,
        registers: &mut Option<(u64, u64)>,
        out: &mut Out<'_>,
    ) -> Option<Result<At, bool>> {
        let regs = interrupted.regs;
        if (self.in_code_cache)(regs.pc) {
            match self.top_boundary(regs, out) {
                // An ordinary frame of JVM-generated code.
                None => Some(Ok(At {
                    pc: regs.pc,
                    sp: regs.sp,
                    fp: regs.fp,
                    top: true,
                    exact: false,
                    lr: regs.lr,
                })),
                // A stub between native code and Java: crossed.
                Some(crossed) => {
                    *registers = None;
                    crossed.next(out)
                }
            }
        } else if let Some(entry) = interrupted
            .java_entry
            .filter(|e| (self.in_code_cache)(e.pc))
        {
            *registers = None;
            self.java_entry_frame(entry, interrupted.thaw_not_started, out)
        } else {
            *registers = None;
            match self.thread_anchor()? {
                Some(at) => Some(Ok(at)),
                None => Some(Err(true)), // no Java frame at all
            }
        }
    }

    /// The first frame when the native walk reached Java code at `entry` (the pc was native
    /// code called from Java). As [`Self::first_frame`].
    fn java_entry_frame(
        &self,
        entry: Regs,
        thaw_not_started: bool,
        out: &mut Out<'_>,
    ) -> Option<Result<At, bool>> {
        // A thaw not started yet: its continuation stub is crossed in the walk's loop.
        let boundary = if thaw_not_started
            && stubs::find(entry.pc).is_some_and(|s| s.kind == StubKind::Continuation)
        {
            None
        } else {
            self.top_boundary(entry, out)
        };
        match boundary {
            // A leaf call from Java code: the frame is complete, but its pc is not always
            // a call site with debug information (leaf calls have none).
            None => Some(Ok(At::returned_to(entry))),
            // The native code was called by an upcall stub (`UpcallLinker::on_entry`):
            // its caller's native frames come next.
            Some(crossed) => crossed.next(out),
        }
    }

    /// One physical frame at `at`: its Java frames written, and where the walk goes on
    /// (`None`: it is cut). `at_thaw_start`: `at` is the walk's first frame and the stub a
    /// thaw not started yet was called from. `registers` (the interpreter's, for the top
    /// frame) are dropped at the first frame that is not the interpreter's, and taken by the
    /// first interpreted frame.
    fn step(
        &self,
        at: At,
        at_thaw_start: bool,
        registers: &mut Option<(u64, u64)>,
        out: &mut Out<'_>,
    ) -> Option<Step> {
        if stubs::find(at.pc).is_some_and(|s| s.kind == StubKind::Continuation) {
            // A virtual thread's older frames are still frozen in the heap (below the
            // return barrier), or are being moved (thaw, freeze): never stepped over as an
            // ordinary stub.
            return Some(
                match self.cross_continuation(at, at_thaw_start, out).next(out)? {
                    Ok(next) => Step::Across(next),
                    Err(end) => Step::End(end),
                },
            );
        }
        if at.pc == self.layout.call_stub_return {
            return match self.cross_entry(at, out).next(out)? {
                Ok(next) if next.sp > at.sp => Some(Step::Across(next)),
                Ok(_) => None,
                Err(end) => Some(Step::End(end)),
            };
        }
        let blob = self.layout.find_blob(at.pc)?;
        if blob.kind != BlobKind::Interpreter {
            *registers = None;
        }
        self.blob_step(&blob, at, registers, out)
    }

    /// [`Self::step`] for a frame in code blob `blob`: by its kind.
    fn blob_step(
        &self,
        blob: &Blob,
        at: At,
        registers: &mut Option<(u64, u64)>,
        out: &mut Out<'_>,
    ) -> Option<Step> {
        // A return address's PcDesc, looked up once: whether it has one decides the path
        // below, and its scopes are read from it.
        let return_desc = (blob.kind == BlobKind::Nmethod && !at.top)
            .then(|| self.layout.pc_desc(blob, at.pc, false));
        let entry_owner = if blob.kind == BlobKind::NativeNmethod {
            self.entry_owner(at.pc)
        } else {
            EntryOwner::NotEntry
        };
        let next = match blob.kind {
            BlobKind::NativeNmethod if entry_owner == EntryOwner::Virtual => {
                // A virtual thread's `Continuation.enterSpecial`: its stack ends here (the
                // carrier's frames below are not its own).
                return self.emit_compiled(blob, at, out).map(Step::End);
            }
            BlobKind::NativeNmethod if entry_owner == EntryOwner::Unknown => {
                // A virtual thread's entry, but whether the sample is written as the
                // virtual thread or as its carrier is not known now: cut here (its frames
                // above are right, but the stack is neither one's whole).
                let _ = self.emit_compiled(blob, at, out);
                return None;
            }
            // A return address without debug information: of a leaf call from the method
            // body or from an out-of-line stub (GC barriers, C1's slow paths).
            BlobKind::Nmethod if matches!(return_desc, Some(None)) => {
                let next = self.undescribed_sender(blob, at, false)?;
                if !self.emit_leaf_caller(blob, at, out)? {
                    return Some(Step::End(false));
                }
                next
            }
            BlobKind::Nmethod | BlobKind::NativeNmethod => {
                return self.compiled_step(blob, at, return_desc.flatten(), out);
            }
            BlobKind::Interpreter => {
                let next = self.interpreted_sender(at)?;
                let frame = self.interpreted_frame(at, registers.take())?;
                if !out.push(frame) {
                    return Some(Step::End(false));
                }
                next
            }
            BlobKind::Stub => self.stub_sender(blob, at)?,
            BlobKind::Upcall => match self.cross_upcall(blob, at, out).next(out)? {
                Ok(next) => next,
                Err(end) => return Some(Step::End(end)),
            },
        };
        Some(Step::Sender(next))
    }

    /// [`Self::step`] for a compiled frame (an nmethod's at a pc with debug information, or
    /// a native method's wrapper): its frames, and its sender. `return_desc`: the PcDesc at
    /// `at` if it is a return address that has one.
    fn compiled_step(
        &self,
        blob: &Blob,
        at: At,
        return_desc: Option<PcDesc>,
        out: &mut Out<'_>,
    ) -> Option<Step> {
        // aarch64 reads the interrupted method's code first (`cpu::RESUME_FIRST`): its lr and
        // the words below its frame hold stale return addresses into the method itself, which
        // the candidates cannot tell from the real one.
        let decoded_first = cpu::RESUME_FIRST
            && at.top
            && blob.kind == BlobKind::Nmethod
            && blob.frame_complete_at(at.pc);
        let next = if decoded_first {
            self.straight_sender(blob, at)
                .or_else(|| self.compiled_sender(blob, at))
        } else {
            self.compiled_sender(blob, at)
        };
        let crossed = if !at.top || blob.kind != BlobKind::Nmethod {
            None
        } else if blob.frame_complete_pc.is_some_and(|c| at.pc < c) {
            // In the prologue: the frame is where the prologue will have made it.
            self.prologue_sender(blob, at)
        } else if next.is_none() {
            // Interrupted in an out-of-line stub (saving or restoring registers
            // around its call): the method's frame is where the stub jumps back.
            self.undescribed_sender(blob, at, true)
        } else {
            None
        };
        if let Some(crossed) = crossed {
            if !self.emit_method_only(blob, out)? {
                return Some(Step::End(false));
            }
            return Some(Step::Sender(crossed));
        }
        let built = blob.frame_complete_at(at.pc);
        // Past the prologue, where no candidate return address was the one: the frame is
        // where the method's code from the pc finds it whole (or returns); not read again
        // where it was read first.
        let next = match next {
            None if at.top && built && blob.kind == BlobKind::Nmethod && !decoded_first => {
                self.straight_sender(blob, at)
            }
            next => next,
        };
        if next.is_none() && !(at.top && built && blob.kind == BlobKind::Nmethod) {
            return None;
        }
        // In a prologue whose code could not be followed (its sender found
        // among the candidates): the method alone, as above; the next PcDesc
        // may belong to a callee inlined further on.
        let in_prologue = at.top
            && blob.kind == BlobKind::Nmethod
            && blob.frame_complete_pc.is_some_and(|c| at.pc < c);
        let emitted = if in_prologue {
            self.emit_method_only(blob, out)?
        } else {
            self.emit_compiled_with(blob, at, return_desc, out)?
        };
        if !emitted {
            return Some(Step::End(false));
        }
        // The interrupted nmethod's own frames are known by its pc even when
        // its sender is not (a virtual thread's frames below are still frozen
        // in the heap, under Loom's return barrier): written, and the walk is
        // cut. Only past the prologue (`built`).
        Some(Step::Sender(next?))
    }

    /// The last Java frame the thread's own anchor records; `Some(None)` if it records none.
    pub(super) fn thread_anchor(&self) -> Option<Option<At>> {
        self.anchor_frame(self.thread.checked_add(self.layout.thread_anchor)?)
    }

    /// The last Java frame an anchor records; `Some(None)` if it records none.
    pub(super) fn anchor_frame(&self, anchor: u64) -> Option<Option<At>> {
        let sp = read_ptr(anchor.checked_add(self.layout.anchor_sp)?)?;
        if sp == 0 {
            return Some(None);
        }
        let pc = match read_ptr(anchor.checked_add(self.layout.anchor_pc)?)? {
            0 => self.stack.read_u64(sp.checked_sub(8)?)?,
            pc => pc,
        };
        let fp = read_ptr(anchor.checked_add(self.layout.anchor_fp)?)?;
        Some(Some(At {
            pc,
            sp,
            fp,
            top: false,
            exact: false,
            lr: 0,
        }))
    }

    /// The frames of a compiled frame; false when the output is full.
    pub(super) fn emit_compiled(&self, blob: &Blob, at: At, out: &mut Out<'_>) -> Option<bool> {
        self.emit_compiled_with(blob, at, None, out)
    }

    /// [`Self::emit_compiled`], with the PcDesc at `at` if the caller already found it.
    fn emit_compiled_with(
        &self,
        blob: &Blob,
        at: At,
        desc: Option<PcDesc>,
        out: &mut Out<'_>,
    ) -> Option<bool> {
        let method = read_ptr(blob.at.checked_add(self.layout.nm_method)?)?;
        if blob.kind == BlobKind::NativeNmethod {
            return Some(out.push(JavaFrame {
                method_id: self.layout.jmethod_id(method)?,
                bci: NATIVE_BCI,
                kind: kind::NATIVE,
            }));
        }
        let mut scopes = [Scope::default(); MAX_SCOPES];
        let count = match desc {
            Some(desc) => self.layout.scopes_from(&desc, method, &mut scopes)?,
            None => self
                .layout
                .scopes_at(blob, method, at.pc, !at.exact, &mut scopes)?,
        };
        self.emit_scopes(&scopes, count, out)
    }

    /// The frames of nmethod `blob` at `at`, the return address of a leaf call without debug
    /// information: the inlined scopes both PcDescs around the call say
    /// ([`JavaLayout::leaf_call_descs`], [`scopes::shared_scopes`]), else its method alone.
    /// False when the output is full.
    fn emit_leaf_caller(&self, blob: &Blob, at: At, out: &mut Out<'_>) -> Option<bool> {
        if let Some((before, after)) = self.layout.leaf_call_descs(blob, at.pc) {
            let method = read_ptr(blob.at.checked_add(self.layout.nm_method)?)?;
            let mut a = [Scope::default(); MAX_SCOPES];
            let mut b = [Scope::default(); MAX_SCOPES];
            let chains = self
                .layout
                .scopes_from(&before, method, &mut a)
                .zip(self.layout.scopes_from(&after, method, &mut b));
            match chains {
                Some((na, nb)) => {
                    let mut shared = [Scope::default(); MAX_SCOPES];
                    let count = scopes::shared_scopes(
                        a.get(..na).unwrap_or(&[]),
                        b.get(..nb).unwrap_or(&[]),
                        &mut shared,
                    );
                    if count > 1 {
                        scopes::count_leaf_call(0);
                        return self.emit_scopes(&shared, count, out);
                    }
                    scopes::count_leaf_call(5);
                }
                None => scopes::count_leaf_call(4),
            }
        }
        self.emit_method_only(blob, out)
    }

    /// Writes `count` scopes, innermost first: the last as the compiled frame, the others as
    /// inlined into it. False when the output is full; `None` (nothing written) if a scope's
    /// method has no jmethodID.
    fn emit_scopes(
        &self,
        scopes: &[Scope; MAX_SCOPES],
        count: usize,
        out: &mut Out<'_>,
    ) -> Option<bool> {
        let mut ids = [0u64; MAX_SCOPES];
        // Every method first: a scope without a jmethodID stops the walk before any of this
        // frame's scopes is written.
        for (id, scope) in ids.iter_mut().zip(scopes.iter()).take(count) {
            *id = self.layout.jmethod_id(scope.method)?;
        }
        let last = count.checked_sub(1)?;
        for (i, (id, scope)) in ids.iter().zip(scopes.iter()).take(count).enumerate() {
            let frame = JavaFrame {
                method_id: *id,
                bci: scope.bci,
                kind: if i == last {
                    kind::JIT_COMPILED
                } else {
                    kind::INLINED
                },
            };
            if !out.push(frame) {
                return Some(false);
            }
        }
        Some(true)
    }

    /// The frame of nmethod `blob` at a pc without debug information (a return address
    /// with no PcDesc, a pc in an out-of-line stub): its own method, with an unknown bytecode
    /// index. The methods inlined into it there are not known, and are not guessed from the
    /// next PcDesc (which may belong to another scope). False when the output is full.
    fn emit_method_only(&self, blob: &Blob, out: &mut Out<'_>) -> Option<bool> {
        let method = read_ptr(blob.at.checked_add(self.layout.nm_method)?)?;
        Some(out.push(JavaFrame {
            method_id: self.layout.jmethod_id(method)?,
            bci: -1,
            kind: kind::JIT_COMPILED,
        }))
    }

    /// The sender of nmethod `blob`'s frame at `at`, a pc without debug information. If the
    /// code from the pc jumps back into the method body (an out-of-line stub,
    /// [`cpu::follow`]), the frame is where it jumps back, above what the stub still
    /// had pushed; else (with `exit_only` false) it is the frame at `at` (a leaf call from the
    /// body). Either way the sender, below the method's frame size, must be a call site.
    fn undescribed_sender(&self, blob: &Blob, at: At, exit_only: bool) -> Option<At> {
        if blob.frame_bytes < 16 {
            return None;
        }
        let exit = cpu::follow(at.pc, |target| {
            self.layout
                .find_blob(target)
                .is_some_and(|b| b.at == blob.at)
        });
        let sp = match exit {
            Some(exit) => at.sp.checked_add(exit.sp_up)?,
            None if exit_only => return None,
            None => at.sp,
        };
        let body = At { sp, ..at };
        let next = self.sender(body, sp.checked_add(blob.frame_bytes)?, Saved::BelowReturn)?;
        self.known_sender(next)
    }

    /// The sender of nmethod `blob`'s frame interrupted in its prologue (stack banging, the
    /// frame's `push`/`sub`, the entry barrier's test), where the stale words of the stack
    /// below make guessing among candidate return addresses ambiguous: the prologue's code
    /// from the pc to where the frame is complete ([`cpu::prologue`]) says where the
    /// frame will be, and whether the caller's `rbp` is still in the register. The sender must
    /// be a call site.
    fn prologue_sender(&self, blob: &Blob, at: At) -> Option<At> {
        if blob.frame_bytes < 16 {
            return None;
        }
        let rest = cpu::prologue(at.pc, blob.frame_complete_pc?)?;
        let built_sp = at.sp.checked_add_signed(rest.sp_change)?;
        let saved = if rest.return_in_link {
            Saved::Link
        } else if rest.saves_rbp {
            Saved::InRegister
        } else {
            Saved::BelowReturn
        };
        let next = self.sender(at, built_sp.checked_add(blob.frame_bytes)?, saved)?;
        self.known_sender(next)
    }

    /// The sender of nmethod `blob`'s frame interrupted past its prologue at an instruction
    /// where `rsp` is not the frame's, such that the candidates of [`Self::pick_sender`] find
    /// none or more than one: inside a `push`/`pop` pair of the body (C2's scan of the
    /// secondary supers saves `rax` around `repne scasq`), or in the epilogue after its
    /// `pop rbp` (over stale return addresses). The code from the pc, in straight line
    /// ([`cpu::resume`]), says where the frame is: at the next instruction with debug
    /// information the frame is whole (`rsp` is the frame's), or at its `ret` the return
    /// address is at `rsp` (with the caller's `rbp` popped on the way or already in the
    /// register). The sender must be a call site.
    fn straight_sender(&self, blob: &Blob, at: At) -> Option<At> {
        if blob.frame_bytes < 16 {
            return None;
        }
        let resume = cpu::resume(
            at.pc,
            0..u64::MAX,
            |target| {
                self.layout
                    .find_blob(target)
                    .is_some_and(|b| b.at == blob.at)
            },
            |ip| self.layout.pc_desc(blob, ip, false).is_some(),
        )?;
        let next = match resume {
            Resume::Body { sp_up } => {
                // What the body still had pushed lies below its frame, never in it.
                if sp_up.checked_add(16)? > blob.frame_bytes {
                    return None;
                }
                let sp = at.sp.checked_add(sp_up)?;
                let body = At { sp, ..at };
                self.sender(body, sp.checked_add(blob.frame_bytes)?, Saved::BelowReturn)?
            }
            // C2 keeps no frame pointer: a `leave` is no compiled method's epilogue.
            Resume::ReturnThroughFrame { .. } => return None,
            returned => self.returned_sender(at, returned)?,
        };
        self.known_sender(next)
    }

    /// `next` if its pc is where a compiled frame returns to: a call site
    /// ([`Self::call_site`]), a virtual thread's return barrier, or a native method's wrapper
    /// (`Continuation.enterSpecial`).
    fn known_sender(&self, next: At) -> Option<At> {
        if stubs::find(next.pc).is_some_and(|s| s.kind == StubKind::Continuation)
            || self
                .layout
                .find_blob(next.pc)
                .is_some_and(|b| b.kind == BlobKind::NativeNmethod)
        {
            return Some(next);
        }
        self.call_site(next, false)
    }

    /// The frame of an interpreted method. `registers` (r13, rbx) are given for the top
    /// frame: its live bytecode pointer is in r13 (the slot is saved at calls only), and while
    /// the interpreter builds the frame of a method it enters, the method is in rbx and its
    /// slot not written yet: rbx is taken only if r13 points into its bytecodes.
    fn interpreted_frame(&self, at: At, registers: Option<(u64, u64)>) -> Option<JavaFrame> {
        let slot_method = at
            .fp
            .checked_sub(INTERPRETER_METHOD)
            .and_then(|a| self.stack.read_u64(a))
            .filter(|&m| self.layout.jmethod_id(m).is_some());
        let (method, live_bci) = match (slot_method, registers) {
            (Some(m), Some((bcp, _))) => (m, self.layout.bci_of(m, bcp)),
            (Some(m), None) => (m, None),
            (None, Some((bcp, rbx))) => (rbx, Some(self.layout.bci_of(rbx, bcp)?)),
            (None, None) => return None,
        };
        let method_id = self.layout.jmethod_id(method)?;
        if self.layout.is_native(method)? {
            return Some(JavaFrame {
                method_id,
                bci: NATIVE_BCI,
                kind: kind::NATIVE,
            });
        }
        let bci = match live_bci {
            Some(bci) => bci,
            None => {
                let slot = self.stack.read_u64(at.fp.checked_sub(INTERPRETER_BCP)?)?;
                self.layout.bci_of(method, slot)?
            }
        };
        Some(JavaFrame {
            method_id,
            bci,
            kind: kind::INTERPRETED,
        })
    }

    fn interpreted_sender(&self, at: At) -> Option<At> {
        let pc = crate::arch::code_address(self.stack.read_u64(at.fp.checked_add(8)?)?);
        let sp = self
            .stack
            .read_u64(at.fp.checked_sub(INTERPRETER_SENDER_SP)?)?;
        let fp = self.stack.read_u64(at.fp)?;
        // The sender's sp (its unextended sp, where a compiled sender's frame size counts
        // from) lies above this frame's fp on x86_64; on aarch64 an interpreted callee's frame
        // may reach above its interpreted caller's sp (the caller's machine sp is below its
        // expression stack, which the callee's locals and frame overlap).
        let above = if cpu::INTERPRETER_SENDER_ABOVE_FP {
            at.fp
        } else {
            at.sp
        };
        (at.fp > at.sp && sp > above).then_some(At {
            pc,
            sp,
            fp,
            top: false,
            exact: true,
            lr: 0,
        })
    }

    fn compiled_sender(&self, blob: &Blob, at: At) -> Option<At> {
        let full = (blob.frame_bytes >= 16)
            .then(|| at.sp.checked_add(blob.frame_bytes))
            .flatten();
        if !at.top {
            return self.sender(at, full?, Saved::BelowReturn);
        }
        let complete = blob.frame_complete_at(at.pc);
        self.pick_sender(at, full, complete, false)
    }

    fn stub_sender(&self, blob: &Blob, at: At) -> Option<At> {
        let full = (blob.frame_bytes >= 16)
            .then(|| at.sp.checked_add(blob.frame_bytes))
            .flatten();
        if at.top {
            if let Some(next) = self.stub_return(at) {
                return Some(next);
            }
            let complete = blob.frame_complete_at(at.pc);
            if let Some(next) = self.pick_sender(at, full, complete, true) {
                return Some(next);
            }
        } else if let Some(full) = full {
            // A runtime stub with a frame (the anchor of a call into the VM).
            return self.sender(at, full, Saved::BelowReturn);
        }
        self.rbp_sender(at)
    }

    /// The sender of a stub interrupted at `at`, from its own code: the instructions from the
    /// pc to its `ret` in straight line ([`cpu::resume`]: fall-through past conditional
    /// branches, jumps, all inside the stub, `rsp` followed through pushes, pops and
    /// immediate adjustments, and through its `leave` if it made its frame with `enter`) say
    /// where the return address is, whatever stale words lie between. In such a stub
    /// (`StubRoutines::dpow`: `enter`, pushes, a scratch area) the candidates of
    /// [`Self::pick_sender`] lie over those words: with debug information between safepoints,
    /// a stale return address of an earlier leaf call (an arraycopy's, in another method) was
    /// taken there for the stub's. `None`: the stub's bounds are not known, its code does not
    /// reach a `ret` that way (an indirect jump, `rsp` or `rbp` written otherwise), or what it
    /// finds is no call site (a hand-written stub need not keep `rsp` alike on every path to
    /// an instruction): the candidates decide, as before.
    fn stub_return(&self, at: At) -> Option<At> {
        // Only in a stub whose bounds HotSpot gave (its DynamicCodeGenerated event): the code
        // is followed inside them alone, and a `leave` counts only in a stub that made its
        // frame with `enter` at its first instruction.
        let stub = stubs::find(at.pc)?;
        if stub.kind != StubKind::Other {
            return None;
        }
        // The bounds hold every instruction and so every jump target: no other check.
        let resume = cpu::resume(at.pc, stub.start..stub.end, |_| true, |_| false)?;
        if matches!(resume, Resume::ReturnThroughFrame { .. }) && !cpu::makes_frame(stub.start) {
            return None;
        }
        self.returned_sender(at, resume)
            .and_then(|next| self.call_site(next, true))
    }

    /// The sender a `ret` found by [`cpu::resume`] from `at` returns to (not yet checked
    /// as a call site); `None` for [`Resume::Body`] or an unreadable word.
    fn returned_sender(&self, at: At, resume: Resume) -> Option<At> {
        // The caller's frame pointer: loaded on the way from sp + offset, or in the register.
        let loaded_fp = |loaded_at: Option<u64>| match loaded_at {
            Some(offset) => self.stack.read_u64(at.sp.checked_add(offset)?),
            None => Some(at.fp),
        };
        let (ret, fp) = match resume {
            Resume::Body { .. } => return None,
            Resume::ReturnInLink {
                sp_up,
                fp_loaded_at,
            } => {
                return Some(At {
                    pc: crate::arch::code_address(at.lr),
                    sp: at.sp.checked_add(sp_up)?,
                    fp: loaded_fp(fp_loaded_at)?,
                    top: false,
                    exact: true,
                    lr: 0,
                });
            }
            Resume::Return {
                sp_up,
                rbp_popped_at,
            } => (at.sp.checked_add(sp_up)?, loaded_fp(rbp_popped_at)?),
            Resume::ReturnThroughFrame { ret_above_fp } => {
                // The frame `enter` made lies above the pc's `rsp`, within what a stub pushes.
                if at.fp % 8 != 0 || at.fp.checked_sub(at.sp)? > cpu::MAX_PUSHED_BYTES {
                    return None;
                }
                (
                    at.fp.checked_add(ret_above_fp)?,
                    self.stack.read_u64(at.fp)?,
                )
            }
        };
        Some(At {
            pc: crate::arch::code_address(self.stack.read_u64(ret)?),
            sp: ret.checked_add(8)?,
            fp,
            top: false,
            exact: true,
            lr: 0,
        })
    }

    /// The sender of a stub without a frame size that made a frame-pointer frame (`enter()`),
    /// at the places [`cpu::RECORD_SENDER_SP`] gives. On x86_64 some (the nmethod entry
    /// barrier) leave one more word after it: the return address is at rbp+8 or rbp+16, and
    /// exactly one must be a call site. The one at rbp+16 is taken only
    /// in an nmethod or a native method's wrapper (whose entries the barrier guards): a stub
    /// called by the interpreter's math entry (`Math.sin` in an interpreted method) has the
    /// entry's return address at rbp+8 and the interpreted caller's at rbp+16, both in the
    /// interpreter with its frame.
    fn rbp_sender(&self, at: At) -> Option<At> {
        if at.fp <= at.sp || at.fp % 8 != 0 {
            return None;
        }
        let saved_rbp = self.stack.read_u64(at.fp)?;
        let mut found = None;
        for (above, compiled_only) in cpu::RECORD_SENDER_SP {
            let sender_sp = at.fp.checked_add(above)?;
            let Some(pc) = self.stack.read_u64(sender_sp.checked_sub(8)?) else {
                continue;
            };
            let pc = crate::arch::code_address(pc);
            if compiled_only
                && !self
                    .layout
                    .find_blob(pc)
                    .is_some_and(|b| matches!(b.kind, BlobKind::Nmethod | BlobKind::NativeNmethod))
            {
                continue;
            }
            let next = At {
                pc,
                sp: sender_sp,
                fp: saved_rbp,
                top: false,
                exact: true,
                lr: 0,
            };
            if let Some(next) = self.call_site(next, true) {
                if found.is_some() {
                    return None; // ambiguous
                }
                found = Some(next);
            }
        }
        found
    }

    /// The sender of the interrupted frame, among: the complete frame (preferred when the
    /// blob says its frame is complete at the pc) and the architecture's candidates
    /// ([`cpu::top_candidates`]: x86_64's return address at sp, frameless or before the
    /// prologue's push or after the epilogue's pop, and at sp+8, rbp pushed; aarch64's in lr,
    /// and in a frame record at sp). Exactly one candidate must be a real call site.
    /// `leaf`: the frame is a stub's; stubs are often called as leaf calls, whose return
    /// addresses have no debug information (nmethods are called with it).
    fn pick_sender(&self, at: At, full: Option<u64>, complete: bool, leaf: bool) -> Option<At> {
        if complete {
            if let Some(next) = full.and_then(|f| self.sender(at, f, Saved::BelowReturn)) {
                if let Some(next) = self.call_site(next, leaf) {
                    return Some(next);
                }
            }
        }
        let mut found: Option<At> = None;
        let candidates = cpu::top_candidates(at.sp, full, complete);
        let mut tried = [0u64; 3];
        for (i, candidate) in candidates.into_iter().enumerate() {
            let Some((sender_sp, saved)) = candidate else {
                continue;
            };
            // A frame of 16 bytes puts its complete sender where the pushed-rbp one is.
            if tried.contains(&sender_sp) {
                continue;
            }
            if let Some(t) = tried.get_mut(i) {
                *t = sender_sp;
            }
            let Some(next) = self.sender(at, sender_sp, saved) else {
                continue;
            };
            if let Some(next) = self.call_site(next, leaf) {
                if found.is_some() {
                    return None; // ambiguous
                }
                found = Some(next);
            }
        }
        found
    }

    /// The sender whose sp is `sender_sp`, its return address and frame pointer where `saved`
    /// says. Only the interrupted frame's return address can be in lr; its sender's sp may
    /// then be its own.
    fn sender(&self, at: At, sender_sp: u64, saved: Saved) -> Option<At> {
        let in_link = saved == Saved::Link;
        if sender_sp < at.sp || (sender_sp == at.sp && !in_link) || (in_link && !at.top) {
            return None;
        }
        let pc = if in_link {
            at.lr
        } else {
            self.stack.read_u64(sender_sp.checked_sub(8)?)?
        };
        let fp = match saved {
            Saved::BelowReturn => self.stack.read_u64(sender_sp.checked_sub(16)?)?,
            Saved::AtSp => self.stack.read_u64(at.sp)?,
            Saved::InRegister | Saved::Link => at.fp,
        };
        Some(At {
            pc: crate::arch::code_address(pc),
            sp: sender_sp,
            fp,
            top: false,
            exact: true,
            lr: 0,
        })
    }

    /// `next` if its pc is where a Java call returns: the call stub, a call site of an
    /// nmethod (it has a PcDesc there), or the interpreter with a valid frame at `next.fp`.
    /// With `leaf`, also the return address of a leaf call into a stub (no PcDesc): then the
    /// nmethod's own sender must be a call site, and `next` is read as inexact.
    fn call_site(&self, next: At, leaf: bool) -> Option<At> {
        if next.pc == self.layout.call_stub_return {
            return Some(next);
        }
        let blob = self.layout.find_blob(next.pc)?;
        match blob.kind {
            // A return address follows a call (a PcDesc alone no longer says so: there are
            // PcDescs between safepoints too).
            BlobKind::Nmethod if !cpu::follows_call(next.pc) => None,
            BlobKind::Nmethod => {
                let method = read_ptr(blob.at.checked_add(self.layout.nm_method)?)?;
                let mut scopes = [Scope::default(); MAX_SCOPES];
                if self
                    .layout
                    .scopes_at(&blob, method, next.pc, false, &mut scopes)
                    .is_some()
                {
                    return Some(next);
                }
                if !leaf || blob.frame_bytes < 16 {
                    return None;
                }
                self.layout
                    .scopes_at(&blob, method, next.pc, true, &mut scopes)?;
                let beyond = self.sender(
                    next,
                    next.sp.checked_add(blob.frame_bytes)?,
                    Saved::BelowReturn,
                )?;
                self.call_site(beyond, false)?;
                Some(At {
                    exact: false,
                    ..next
                })
            }
            BlobKind::Interpreter => {
                let method = self
                    .stack
                    .read_u64(next.fp.checked_sub(INTERPRETER_METHOD)?)?;
                self.layout.jmethod_id(method).map(|_| next)
            }
            BlobKind::Upcall => self.upcall_data(&blob, next.sp).map(|_| next),
            BlobKind::NativeNmethod | BlobKind::Stub => None,
        }
    }
}
