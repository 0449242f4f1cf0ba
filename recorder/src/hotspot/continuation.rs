//! A mounted virtual thread's frames that are still frozen in the heap.
//!
//! HotSpot thaws a remounted virtual thread lazily: a few frames go back onto the carrier's
//! stack, and the rest stay in its continuation's heap stack chunks
//! (`jdk.internal.vm.StackChunk`). The bottom thawed frame returns into the return barrier
//! (`StubRoutines::_cont_returnBarrier`), which thaws more when it is reached. The walk meets
//! that barrier as the sender of a frame, and goes on here, as the JDK's own sampler does
//! (`Continuation::top_frame`, `StackChunkFrameStream`): from the thread's continuation entry
//! (`JavaThread::_cont_entry`, a `ContinuationEntry` in `Continuation.enterSpecial`'s frame) to
//! its continuation (`ContinuationEntry::_cont`), to the continuation's newest chunk
//! (`Continuation.tail`), through each chunk's frames (compiled frames as on a stack; interpreted
//! frames with their frame pointer, locals and sender sp stored relative to themselves), to
//! older chunks (`StackChunk.parent`), and ends with `Continuation.enterSpecial`, where the
//! JDK ends a virtual thread's stack.
//!
//! Nothing is believed unchecked, and any failed check cuts the walk (truncated):
//! - no stop-the-world pause runs while the chunks are read (one could move a chunk under G1,
//!   Parallel or Serial, or flip generational ZGC's colors): the carrier runs Java code or the
//!   VM (thread state `_thread_in_Java`, `_thread_in_vm` and their transitions), which holds any
//!   safepoint back; or, in native code or blocked, HotSpot's safepoint counter is even before
//!   the walk and unchanged after it (else nothing read is written);
//! - the entry's continuation is the one the mounted virtual thread's object names (read
//!   through the collector's own encoding, [`super::oops`], and under generational ZGC only
//!   through pointers whose color allows a load now), and each chunk names that continuation;
//! - a chunk's header is not a forwarding pointer, its `sp`, `bottom` and `size` are in order,
//!   its first frame's return slot holds its saved `pc`, and every frame's pc is in a code blob
//!   that can be walked;
//! - after the walk, the continuation still has the same newest chunk.
//!
//! Where the layouts come from: `JavaThread::_cont_entry` from `gHotSpotVMStructs` (JDK 25), or
//! from the first instruction of `Continuation::get_continuation_entry_for_sp` (JDK 21); the
//! field offsets of the Java classes and of the chunk's stack from libjvm's symbol table
//! ([`super::symtab`]: the values HotSpot computed for this JVM, which change with compressed
//! references and compact headers); `ContinuationEntry::_cont` and `_flags` at 16 and 32 (the
//! same in JDK 21 and 25, checked on every use against the virtual thread's continuation).

#![deny(
    clippy::indexing_slicing,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::arithmetic_side_effects
)]

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};

use super::boundaries::Crossed;
use super::codeblob::BlobKind;
use super::javawalk::{kind, At, EntryOwner, JavaFrame, Out, Walker};
use super::mem::{read_int, read_ptr, Field};
use super::oops::{self, Oops};
use super::symtab::JvmSymbols;
use super::vmstructs::VmStructs;
use crate::unwind::{Memory, NativeFrames};

/// `ContinuationEntry::_cont` (a full-width reference, a stack root: never colored).
const ENTRY_CONT: u64 = 16;
/// `ContinuationEntry::_flags` (non-zero: a virtual thread's continuation).
const ENTRY_FLAGS: u64 = 32;
/// Most chunks one continuation is walked through.
const MAX_CHUNKS: usize = 64;
/// Most frames one chunk is walked through.
const MAX_CHUNK_FRAMES: usize = 4096;
/// Largest chunk believed, in words (a chunk holds at most a thread's stack).
const MAX_CHUNK_WORDS: i64 = 1 << 24;
/// Interpreter frame slots, in bytes below the frame pointer (`frame_x86.hpp`,
/// `frame_aarch64.hpp`; the locals' and the bytecode pointer's differ, [`super::cpu`]); in a
/// chunk the frame pointer, the locals and the sender sp are stored relative to their slot.
const SENDER_SP: u64 = 8;
const METHOD: u64 = 3 * 8;
const LOCALS: u64 = super::cpu::INTERPRETER_LOCALS;
const BCP: u64 = super::cpu::INTERPRETER_BCP;

/// Where a chunk's frames end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChunkEnd {
    /// `StackChunk.bottom`, in words (JDK 21 and 25's builds here).
    Bottom(u64),
    /// `StackChunk.argsize`, in words: the frames end `argsize` words before `size`.
    Argsize(u64),
}

/// What the walk reads of continuations and their chunks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ContinuationLayout {
    /// `JavaThread::_cont_entry`.
    pub cont_entry: u64,
    /// `JavaThread::_thread_state`.
    pub thread_state: Field,
    /// The states in which no stop-the-world pause can run: `_thread_in_vm`, `_thread_in_Java`
    /// and their transitions.
    pub running_states: [u64; 4],
    /// `SafepointSynchronize::_safepoint_counter` (libjvm's symbol table; 0: not found): odd
    /// while a safepoint is under way, one more at its start and one more at its end. A carrier
    /// in native code or blocked does not hold a safepoint back; its walk is believed only if
    /// the counter is even and the same before and after it (no collector's pause, which could
    /// move a chunk or flip generational ZGC's colors, ran meanwhile).
    pub safepoint_counter: u64,
    /// `JavaThread::_vthread` + `OopHandle::_obj`: the slot holding the mounted thread object.
    pub vthread_handle: (u64, u64),
    /// `JavaThread::_threadObj` + `OopHandle::_obj`: the slot holding the carrier's own.
    pub carrier_handle: (u64, u64),
    /// `java.lang.Thread.cont`: a carrier's innermost mounted continuation.
    pub thread_cont: u64,
    /// The return barrier's address.
    pub return_barrier: u64,
    /// `ContinuationEntry::_return_pc`: where a continuation's bottom frame returns into
    /// `Continuation.enterSpecial`.
    pub entry_return: u64,
    /// `java.lang.VirtualThread.cont`.
    pub vthread_cont: u64,
    /// `jdk.internal.vm.Continuation.tail`.
    pub cont_tail: u64,
    /// `StackChunk.parent`.
    pub chunk_parent: u64,
    /// `StackChunk.size` (words).
    pub chunk_size: u64,
    /// `StackChunk.sp` (words).
    pub chunk_sp: u64,
    /// Where the chunk's frames end.
    pub chunk_end: ChunkEnd,
    /// `StackChunk.pc`: the pc of the chunk's first frame.
    pub chunk_pc: u64,
    /// `StackChunk.cont`: the continuation the chunk belongs to.
    pub chunk_cont: u64,
    /// `InstanceStackChunkKlass::_offset_of_stack`: where a chunk's stack starts in it.
    pub offset_of_stack: u64,
    /// How references are stored.
    pub oops: Oops,
    /// Where in libjvm a thaw has not changed the continuation yet.
    pub thaw_start: ThawStart,
}

/// Most `thaw_slow` instances kept (JDK 25 has one per collector and reference width: 10).
const MAX_THAW_SLOW: usize = 16;

/// The code of libjvm in which a thaw has read but not yet changed the continuation: its
/// chunks still hold every frame, and their headers still say where. HotSpot changes a
/// chunk's `sp` and `pc` before it copies the frames out (`clear_chunk`,
/// `remove_top_compiled_frame_from_chunk`, `finalize_thaw`), so from then on the frames being
/// copied are neither on the stack nor where the chunk says; before then they are all in the
/// chunks. Two phases are known to come before: `Continuation::prepare_thaw` (called by the
/// thaw stubs first: it only reads, and may drop an empty newest chunk, an atomic store), and
/// `stackChunkOopDesc::relativize_derived_pointers_concurrently` called by `thaw_slow` (ZGC and
/// Shenandoah: the first thing `thaw_slow` does outside a preempted thaw; it rewrites derived
/// pointers and the colors of references in the frames, never their pcs, sizes or links).
/// Ranges are `[start, end)`; empty where libjvm's symbol table lacks them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ThawStart {
    /// `Continuation::prepare_thaw`.
    pub prepare: (u64, u64),
    /// `stackChunkOopDesc::relativize_derived_pointers_concurrently`.
    pub relativize: (u64, u64),
    /// Every instance of `thaw_slow` (`ThawBase::thaw_slow` in JDK 21, `Thaw<Config<..>>::`
    /// in JDK 25).
    pub thaw_slow: [(u64, u64); MAX_THAW_SLOW],
}

/// The names (or parts of them) [`ThawStart`] is read from.
const PREPARE_THAW: &str = "_ZN12Continuation12prepare_thawEP10JavaThreadb";
const RELATIVIZE: &str = "_ZN17stackChunkOopDesc40relativize_derived_pointers_concurrentlyEv";
const THAW_SLOW: &str = "9thaw_slowEP17stackChunkOopDesc";
/// The functions [`ThawStart`] needs from libjvm's symbol table.
pub const THAW_FUNCTIONS: &[&str] = &[PREPARE_THAW, RELATIVIZE, THAW_SLOW];

impl ThawStart {
    /// The ranges from libjvm's symbol table.
    fn read(s: &JvmSymbols) -> ThawStart {
        let first = |name| s.functions(name).next().unwrap_or((0, 0));
        let mut thaw_slow = [(0, 0); MAX_THAW_SLOW];
        for (slot, range) in thaw_slow.iter_mut().zip(s.functions(THAW_SLOW)) {
            *slot = range;
        }
        ThawStart {
            prepare: first(PREPARE_THAW),
            relativize: first(RELATIVIZE),
            thaw_slow,
        }
    }

    /// Whether the native frames `pcs` (the interrupted pc first, then return addresses) are
    /// in a thaw that has not changed the continuation yet: in `prepare_thaw`, or in
    /// `relativize_derived_pointers_concurrently` called by `thaw_slow` itself (GC code that
    /// relativizes a chunk elsewhere is not this).
    pub fn holds(&self, pcs: &[u64]) -> bool {
        // A return address is after its call: the call is in the function up to its end.
        let within = |(start, end): (u64, u64), pc: u64, ret: bool| {
            let pc = if ret { pc.wrapping_sub(1) } else { pc };
            start < end && start <= pc && pc < end
        };
        pcs.iter().enumerate().any(|(i, &pc)| {
            let ret = i != 0;
            within(self.prepare, pc, ret)
                || (within(self.relativize, pc, ret)
                    && pcs.get(i.wrapping_add(1)).is_some_and(|&caller| {
                        self.thaw_slow.iter().any(|&r| within(r, caller, true))
                    }))
        })
    }
}

/// `SafepointSynchronize::_safepoint_counter`.
const SAFEPOINT_COUNTER: &str = "_ZN20SafepointSynchronize18_safepoint_counterE";

/// The statics [`ContinuationLayout::read`] needs from libjvm's symbol table.
pub const SYMBOLS: &[&str] = &[
    "_ZN12StubRoutines19_cont_returnBarrierE",
    "_ZN17ContinuationEntry10_return_pcE",
    "_ZN12Continuation29get_continuation_entry_for_spEP10JavaThreadPl",
    "_ZN23java_lang_VirtualThread20_continuation_offsetE",
    "_ZN28jdk_internal_vm_Continuation12_tail_offsetE",
    "_ZN26jdk_internal_vm_StackChunk14_parent_offsetE",
    "_ZN26jdk_internal_vm_StackChunk12_size_offsetE",
    "_ZN26jdk_internal_vm_StackChunk10_sp_offsetE",
    "_ZN26jdk_internal_vm_StackChunk14_bottom_offsetE",
    "_ZN26jdk_internal_vm_StackChunk16_argsize_offsetE",
    "_ZN26jdk_internal_vm_StackChunk10_pc_offsetE",
    "_ZN26jdk_internal_vm_StackChunk12_cont_offsetE",
    "_ZN23InstanceStackChunkKlass16_offset_of_stackE",
    "_ZN16java_lang_Thread11_tid_offsetE",
    SAFEPOINT_COUNTER,
    "_ZN16java_lang_Thread20_continuation_offsetE",
];

/// A static `int` offset of libjvm's, which must be set (positive) by now.
fn offset(s: &JvmSymbols, name: &str) -> Result<u64, String> {
    s.int(name)
        .and_then(|v| u64::try_from(v).ok())
        .filter(|&v| v > 0)
        .ok_or_else(|| format!("{name} (libjvm's symbol table)"))
}

/// `JavaThread::_cont_entry`: described by JDK 25; read from the code that loads it on JDK 21.
fn cont_entry(v: &VmStructs, s: &JvmSymbols) -> Result<u64, String> {
    if let Some(o) = v.offset("JavaThread", "_cont_entry") {
        return Ok(o);
    }
    let code = s
        .address("_ZN12Continuation29get_continuation_entry_for_spEP10JavaThreadPl")
        .ok_or("JavaThread::_cont_entry")?;
    let disp = super::cpu::loaded_offset(code).ok_or("JavaThread::_cont_entry: unexpected code")?;
    let size = v.type_size("JavaThread").unwrap_or(u64::MAX);
    (disp % 8 == 0 && disp < size)
        .then_some(disp)
        .ok_or_else(|| "JavaThread::_cont_entry: implausible offset".into())
}

impl ContinuationLayout {
    /// The layout, or what this JVM lacks for it.
    pub fn read(v: &VmStructs, s: &JvmSymbols, oops: Oops) -> Result<ContinuationLayout, String> {
        let state = |name: &str| {
            v.int_constant(name)
                .and_then(|c| u64::try_from(c).ok())
                .ok_or_else(|| format!("{name} (gHotSpotVMIntConstants)"))
        };
        let chunk_end = match offset(s, "_ZN26jdk_internal_vm_StackChunk14_bottom_offsetE") {
            Ok(o) => ChunkEnd::Bottom(o),
            Err(_) => ChunkEnd::Argsize(offset(
                s,
                "_ZN26jdk_internal_vm_StackChunk16_argsize_offsetE",
            )?),
        };
        Ok(ContinuationLayout {
            cont_entry: cont_entry(v, s)?,
            thread_state: v
                .sized_offset("JavaThread", "_thread_state")
                .map(|(offset, width)| Field { offset, width })
                .ok_or("JavaThread::_thread_state")?,
            running_states: [
                state("_thread_in_vm")?,
                state("_thread_in_vm_trans")?,
                state("_thread_in_Java")?,
                state("_thread_in_Java_trans")?,
            ],
            safepoint_counter: s.address(SAFEPOINT_COUNTER).unwrap_or(0),
            vthread_handle: (
                v.offset("JavaThread", "_vthread")
                    .ok_or("JavaThread::_vthread")?,
                v.offset("OopHandle", "_obj").unwrap_or(0),
            ),
            carrier_handle: (
                v.offset("JavaThread", "_threadObj")
                    .ok_or("JavaThread::_threadObj")?,
                v.offset("OopHandle", "_obj").unwrap_or(0),
            ),
            thread_cont: offset(s, "_ZN16java_lang_Thread20_continuation_offsetE")?,
            return_barrier: s
                .pointer("_ZN12StubRoutines19_cont_returnBarrierE")
                .ok_or("StubRoutines::_cont_returnBarrier")?,
            entry_return: v
                .static_u64("ContinuationEntry", "_return_pc")
                .or_else(|| s.pointer("_ZN17ContinuationEntry10_return_pcE"))
                .filter(|&pc| pc != 0)
                .ok_or("ContinuationEntry::_return_pc")?,
            vthread_cont: offset(s, "_ZN23java_lang_VirtualThread20_continuation_offsetE")?,
            cont_tail: offset(s, "_ZN28jdk_internal_vm_Continuation12_tail_offsetE")?,
            chunk_parent: offset(s, "_ZN26jdk_internal_vm_StackChunk14_parent_offsetE")?,
            chunk_size: offset(s, "_ZN26jdk_internal_vm_StackChunk12_size_offsetE")?,
            chunk_sp: offset(s, "_ZN26jdk_internal_vm_StackChunk10_sp_offsetE")?,
            chunk_end,
            chunk_pc: offset(s, "_ZN26jdk_internal_vm_StackChunk10_pc_offsetE")?,
            chunk_cont: offset(s, "_ZN26jdk_internal_vm_StackChunk12_cont_offsetE")?,
            offset_of_stack: offset(s, "_ZN23InstanceStackChunkKlass16_offset_of_stackE")?,
            oops,
            thaw_start: ThawStart::read(s),
        })
    }

    /// Whether the carrier `thread` is in a state where no stop-the-world pause can run.
    fn running(&self, thread: u64) -> bool {
        self.thread_state
            .uint(thread)
            .is_some_and(|state| self.running_states.contains(&state))
    }

    /// The safepoint counter now, if no safepoint is under way (see
    /// [`ContinuationLayout::safepoint_counter`]).
    fn safepoint_epoch(&self) -> Option<u64> {
        if self.safepoint_counter == 0 {
            return None;
        }
        // Reads of the walk that follows (or came before) stay on their side of this one.
        std::sync::atomic::fence(Ordering::Acquire);
        let counter = read_ptr(self.safepoint_counter)?;
        std::sync::atomic::fence(Ordering::Acquire);
        (counter & 1 == 0).then_some(counter)
    }

    /// The object a thread handle (`(field, OopHandle::_obj)`) of `thread` names.
    fn handle_object(&self, thread: u64, (field, obj): (u64, u64)) -> Option<u64> {
        let slot = read_ptr(thread.checked_add(field)?.checked_add(obj)?)?;
        self.oops.handle(read_ptr(slot)?)
    }

    /// The continuation a virtual thread's walk may read through: the entry's continuation
    /// `entry_cont`, if the heap says the same (through pointers the collector allows to load
    /// now): the mounted virtual thread's `cont` or, while the virtual thread runs code as its
    /// carrier (`VirtualThread.switchToCarrierThread`: the thread object is the carrier's
    /// then), the carrier's innermost continuation `Thread.cont`. With whether the sample is
    /// the virtual thread's (else the carrier's).
    fn continuation(&self, thread: u64, entry_cont: u64) -> Option<(u64, bool)> {
        let current = self.handle_object(thread, self.vthread_handle)?;
        let carrier = self.handle_object(thread, self.carrier_handle)?;
        let (cont, is_virtual) = if current == carrier {
            (self.oops.field(carrier, self.thread_cont)?, false)
        } else {
            (self.oops.field(current, self.vthread_cont)?, true)
        };
        (cont == entry_cont).then_some((cont, is_virtual))
    }

    /// A chunk's frames: its stack's start, where its frames start and end.
    fn frames_of(&self, chunk: u64, cont: u64) -> Option<ChunkFrames> {
        // The chunk's back reference is rarely loaded, so under generational ZGC its color is
        // often stale (then it is not known where it points now, and the chunk, reached through
        // references the collector allows to load now, is believed on its own checks below).
        if !self.oops.field_may_name(chunk, self.chunk_cont, cont) {
            return None;
        }
        let int = |offset: u64| read_int(chunk.checked_add(offset)?, 4);
        let size = int(self.chunk_size)?;
        let sp = int(self.chunk_sp)?;
        let end = match self.chunk_end {
            ChunkEnd::Bottom(o) => int(o)?,
            ChunkEnd::Argsize(o) => size.checked_sub(int(o)?)?,
        };
        if !(0 <= sp && sp <= end && end <= size && size <= MAX_CHUNK_WORDS) {
            return None;
        }
        let start = chunk.checked_add(self.offset_of_stack)?;
        let word = |w: i64| start.checked_add(u64::try_from(w).ok()?.checked_mul(8)?);
        Some(ChunkFrames {
            sp: word(sp)?,
            end: word(end)?,
            pc: read_ptr(chunk.checked_add(self.chunk_pc)?)?,
        })
    }
}

/// Where a chunk's frames are.
struct ChunkFrames {
    /// The first frame's sp.
    sp: u64,
    /// Where the frames end.
    end: u64,
    /// The first frame's pc (`StackChunk.pc`).
    pc: u64,
}

/// How a walk into a virtual thread's frozen frames ended, counted for the summary.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Walked down to `Continuation.enterSpecial`.
    Walked = 0,
    /// A continuation stub other than the return barrier's entry (frames being thawed or
    /// frozen), or the layout is not known.
    NotBarrier,
    /// No continuation entry below the frame.
    NoEntry,
    /// The continuation is not a virtual thread's.
    NotVirtual,
    /// The carrier runs native code or is blocked, and a safepoint was under way before or
    /// during the walk (or HotSpot's safepoint counter is not known): a collector could have
    /// moved the chunk meanwhile.
    NotRunning,
    /// The entry's continuation is not the one the mounted virtual thread names (or a
    /// reference could not be decoded now: generational ZGC's bad color).
    OtherContinuation,
    /// A chunk failed a check (its continuation, its fields, its first frame).
    BadChunk,
    /// A chunk was moved by a collector, or replaced, during the walk.
    Moved,
    /// A yield is copying the frames into the chunk.
    Yielding,
    /// A frame in a chunk could not be walked.
    BadFrame,
    /// Walked down to `Continuation.enterSpecial` from a thaw not started yet.
    WalkedAtThawStart,
}

/// Names of the [`Outcome`]s, in order.
pub const OUTCOMES: [&str; 11] = [
    "walked",
    "in a thaw or freeze stub",
    "no continuation entry",
    "not a virtual thread",
    "carrier in native code or blocked, a safepoint under way (or not known)",
    "continuation not the mounted thread's",
    "chunk failed a check",
    "chunk moved",
    "yield in progress",
    "frame not walkable",
    "walked, from a thaw not started yet",
];

/// Walks into frozen frames, by [`Outcome`].
pub static OUTCOME_COUNTS: [AtomicU64; OUTCOMES.len()] =
    [const { AtomicU64::new(0) }; OUTCOMES.len()];

fn count(outcome: Outcome) {
    if let Some(c) = OUTCOME_COUNTS.get(outcome as usize) {
        c.fetch_add(1, Ordering::Relaxed);
    }
}

/// A mark word that is a forwarding pointer (the object was copied by a collector).
fn forwarded(mark: u64) -> bool {
    mark & 3 == 3
}

impl<M: Memory, N: NativeFrames, C: Fn(u64) -> bool> Walker<'_, M, N, C> {
    /// Whose stack a frame at `pc` ends, if it is `Continuation.enterSpecial`: a virtual
    /// thread's the sample is written as ([`EntryOwner::Virtual`]: the JDK ends its stack
    /// there), or a carrier's running code as itself ([`EntryOwner::Carrier`], see
    /// `ContinuationLayout::continuation`: the walk goes on into the carrier's frames), or not
    /// known now ([`EntryOwner::Unknown`]: the entry is a virtual thread's but its thread
    /// objects cannot be read now, under generational ZGC a handle whose color forbids a load;
    /// the stack is cut there, neither the virtual thread's whole nor the carrier's).
    pub(super) fn entry_owner(&self, pc: u64) -> EntryOwner {
        let Some(c) = layout().filter(|c| c.entry_return == pc) else {
            return EntryOwner::NotEntry;
        };
        if runs_virtual_thread(self.thread) != Some(true) {
            return EntryOwner::Carrier;
        }
        match (
            c.handle_object(self.thread, c.vthread_handle),
            c.handle_object(self.thread, c.carrier_handle),
        ) {
            (Some(current), Some(carrier)) if current != carrier => EntryOwner::Virtual,
            (Some(_), Some(_)) => EntryOwner::Carrier,
            _ => EntryOwner::Unknown,
        }
    }

    /// The walk reached the return barrier (`at`: a frame whose pc is the barrier), or, with
    /// `thaw_not_started`, the continuation stub a thaw that has not changed the continuation
    /// yet was called from (the walk's first frame; see [`ThawStart`]): the virtual thread's
    /// frames still frozen in its stack chunks, then its `Continuation.enterSpecial`, where
    /// its stack ends.
    pub(super) fn cross_continuation(
        &self,
        at: At,
        thaw_not_started: bool,
        out: &mut Out<'_>,
    ) -> Crossed {
        let Some(layout) = layout().filter(|l| l.return_barrier == at.pc || thaw_not_started)
        else {
            count(Outcome::NotBarrier);
            return Crossed::Cut;
        };
        match self.frozen_frames(layout, at, out) {
            Ok(crossed) => {
                count(if layout.return_barrier == at.pc {
                    Outcome::Walked
                } else {
                    Outcome::WalkedAtThawStart
                });
                crossed
            }
            Err(why) => {
                count(why);
                Crossed::Cut
            }
        }
    }

    /// The frozen frames, read while no stop-the-world pause can run: the carrier runs Java
    /// or VM code (it holds any safepoint back), or no safepoint was under way from before the
    /// walk to after it (a carrier in native code or blocked: what was read then may be of a
    /// chunk a pause moved, and none of it is written).
    fn frozen_frames(
        &self,
        c: &ContinuationLayout,
        at: At,
        out: &mut Out<'_>,
    ) -> Result<Crossed, Outcome> {
        if c.running(self.thread) {
            return self.frozen_frames_read(c, at, out);
        }
        let before = c.safepoint_epoch().ok_or(Outcome::NotRunning)?;
        let written = out.len();
        let crossed = self.frozen_frames_read(c, at, out);
        if c.safepoint_epoch() != Some(before) {
            out.truncate(written);
            return Err(Outcome::NotRunning);
        }
        crossed
    }

    fn frozen_frames_read(
        &self,
        c: &ContinuationLayout,
        at: At,
        out: &mut Out<'_>,
    ) -> Result<Crossed, Outcome> {
        use Outcome::*;
        // The entry lies in `enterSpecial`'s frame, below the thawed frames on this stack.
        let entry = read_ptr(self.thread.checked_add(c.cont_entry).ok_or(NoEntry)?)
            .filter(|&e| e >= at.sp)
            .ok_or(NoEntry)?;
        let flags = self
            .stack
            .read_u64(entry.checked_add(ENTRY_FLAGS).ok_or(NoEntry)?);
        if flags.ok_or(NoEntry)? as u32 == 0 {
            return Err(NotVirtual);
        }
        let entry_cont = self
            .stack
            .read_u64(entry.checked_add(ENTRY_CONT).ok_or(NoEntry)?)
            .ok_or(NoEntry)?;
        let (cont, is_virtual) = c
            .continuation(self.thread, entry_cont)
            .ok_or(OtherContinuation)?;
        let tail = c.oops.field(cont, c.cont_tail).ok_or(BadChunk)?;
        let tail_mark = read_ptr(tail).filter(|&m| !forwarded(m)).ok_or(Moved)?;
        let mut chunk = Some(tail);
        for _ in 0..MAX_CHUNKS {
            let Some(this) = chunk else {
                break;
            };
            if read_ptr(this).is_none_or(forwarded) {
                return Err(Moved);
            }
            let frames = c.frames_of(this, cont).ok_or(BadChunk)?;
            match self.chunk_frames(&frames, out)? {
                true => {}
                false => return Ok(Crossed::Full),
            }
            // An older chunk that cannot be followed now (not a null) cuts the walk.
            chunk = c.oops.field_or_null(this, c.chunk_parent).ok_or(BadChunk)?;
        }
        if chunk.is_some() {
            return Err(BadChunk); // more chunks than believed
        }
        // Nothing moved meanwhile: the continuation still starts with the same chunk, not
        // forwarded.
        if c.oops.field(cont, c.cont_tail) != Some(tail) || read_ptr(tail) != Some(tail_mark) {
            return Err(Moved);
        }
        // `Continuation.enterSpecial`, where the JDK ends a virtual thread's stack; a
        // carrier's goes on into its own frames below.
        let enter_special = At {
            pc: c.entry_return,
            sp: entry,
            fp: 0,
            top: false,
            exact: true,
            lr: 0,
        };
        if !is_virtual {
            return Ok(Crossed::Java(enter_special));
        }
        let blob = self
            .layout
            .find_blob(c.entry_return)
            .filter(|b| b.kind == BlobKind::NativeNmethod)
            .ok_or(BadFrame)?;
        Ok(match self.emit_compiled(&blob, enter_special, out) {
            Some(true) => Crossed::End,
            Some(false) => Crossed::Full,
            None => return Err(BadFrame),
        })
    }

    /// Writes one chunk's frames; `Ok(false)` when the output is full.
    fn chunk_frames(&self, chunk: &ChunkFrames, out: &mut Out<'_>) -> Result<bool, Outcome> {
        use Outcome::*;
        if chunk.sp >= chunk.end {
            return Ok(true); // empty
        }
        let mut sp = chunk.sp;
        // Where the next compiled frame's size counts from: its sp, or, under an interpreted
        // callee, the callee's sender sp (the adapter between them extended the stack).
        let mut unextended = sp;
        let mut pc = read_ptr(sp.checked_sub(8).ok_or(BadChunk)?).ok_or(BadChunk)?;
        if pc != chunk.pc {
            return Err(BadChunk);
        }
        // A yield in progress: the frames it froze are in the chunk, and still on the stack
        // above (the chunk's newest frame is the one `doYield` returns to).
        if pc == out.first_return {
            return Err(Yielding);
        }
        for _ in 0..MAX_CHUNK_FRAMES {
            let blob = self.layout.find_blob(pc).ok_or(BadFrame)?;
            let next = match blob.kind {
                BlobKind::Nmethod | BlobKind::NativeNmethod => {
                    if blob.frame_bytes < 16 {
                        return Err(BadFrame);
                    }
                    // Frozen at a call: the pc is a call site.
                    let frame = At {
                        pc,
                        sp,
                        fp: 0,
                        top: false,
                        exact: true,
                        lr: 0,
                    };
                    if !self.emit_compiled(&blob, frame, out).ok_or(BadFrame)? {
                        return Ok(false);
                    }
                    let next = unextended.checked_add(blob.frame_bytes).ok_or(BadFrame)?;
                    if next.checked_add(16).ok_or(BadFrame)? >= chunk.end {
                        return Ok(true);
                    }
                    unextended = next;
                    next
                }
                BlobKind::Interpreter => match self.chunk_interpreted(sp, chunk.end, out)? {
                    NextFrame::Full => return Ok(false),
                    NextFrame::Bottom => return Ok(true),
                    NextFrame::Sender {
                        sp,
                        unextended: sender,
                    } => {
                        unextended = sender;
                        sp
                    }
                },
                _ => return Err(BadFrame),
            };
            if next >= chunk.end {
                return Err(BadFrame);
            }
            sp = next;
            pc = read_ptr(sp.checked_sub(8).ok_or(BadFrame)?).ok_or(BadFrame)?;
        }
        Err(BadChunk)
    }

    /// Writes an interpreted frame of a chunk at `sp` (its fields relativized); its sender.
    fn chunk_interpreted(
        &self,
        sp: u64,
        end: u64,
        out: &mut Out<'_>,
    ) -> Result<NextFrame, Outcome> {
        let frame = || -> Option<(JavaFrame, u64, u64)> {
            let fp = from_slot(sp.checked_sub(16)?)?;
            if fp < sp || fp >= end {
                return None;
            }
            let method = read_ptr(fp.checked_sub(METHOD)?)?;
            let bcp = read_ptr(fp.checked_sub(BCP)?)?;
            let frame = JavaFrame {
                method_id: self.layout.jmethod_id(method)?,
                bci: self.layout.bci_of(method, bcp)?,
                kind: kind::INTERPRETED,
            };
            Some((frame, fp, from_fp(fp, LOCALS)?))
        };
        let (frame, fp, locals) = frame().ok_or(Outcome::BadFrame)?;
        if !out.push(frame) {
            return Ok(NextFrame::Full);
        }
        if locals.saturating_add(8) >= end {
            return Ok(NextFrame::Bottom);
        }
        let sender = from_fp(fp, SENDER_SP).ok_or(Outcome::BadFrame)?;
        let next = fp.checked_add(16).ok_or(Outcome::BadFrame)?;
        if sender < fp {
            return Err(Outcome::BadFrame);
        }
        Ok(NextFrame::Sender {
            sp: next,
            unextended: sender,
        })
    }
}

/// What walking a chunk's interpreted frame gave.
enum NextFrame {
    /// The output is full.
    Full,
    /// It is the chunk's bottom frame.
    Bottom,
    /// Its sender: its sp, and where a compiled sender's frame size counts from.
    Sender { sp: u64, unextended: u64 },
}

/// The frame pointer a chunk's interpreted frame saved at `slot` (below its return address):
/// a distance in words from the slot itself (`stackChunkFrameStream_x86.inline.hpp`).
fn from_slot(slot: u64) -> Option<u64> {
    let words = read_ptr(slot)? as i64;
    slot.checked_add_signed(words.checked_mul(8)?)
}

/// The address an interpreted frame's slot `below` bytes under its frame pointer `fp` stands
/// for in a chunk: a distance in words from `fp` (`relativize_interpreted_frame_metadata`).
fn from_fp(fp: u64, below: u64) -> Option<u64> {
    let words = read_ptr(fp.checked_sub(below)?)? as i64;
    fp.checked_add_signed(words.checked_mul(8)?)
}

/// The layout, once known (see [`prepare`] and [`retry`]).
static LAYOUT: OnceLock<ContinuationLayout> = OnceLock::new();

/// What [`retry`] needs until the layout is known: the collector's encoding and libjvm's
/// statics, read once; or why the layout cannot be known.
static PENDING: Mutex<Option<Result<(Oops, JvmSymbols), String>>> = Mutex::new(None);

/// `JavaThread::_cont_entry`, once known (before the rest of the layout: it does not wait for
/// the first virtual thread).
static CONT_ENTRY: OnceLock<u64> = OnceLock::new();

/// Whether the `JavaThread` at `thread` runs a virtual thread's continuation now (its innermost
/// continuation entry is a virtual thread's), as HotSpot decides it
/// (`JavaThread::is_vthread_mounted`): a carrier mounting or unmounting one is not. `None`
/// when the entry's place is not known. Fault-safe reads: callable from the signal handler.
#[inline]
pub fn runs_virtual_thread(thread: u64) -> Option<bool> {
    let offset = *CONT_ENTRY.get()?;
    let entry = read_ptr(thread.checked_add(offset)?)?;
    if entry == 0 {
        return Some(false);
    }
    Some(read_ptr(entry.checked_add(ENTRY_FLAGS)?)? as u32 != 0)
}

/// The layout, if it is known (a lock-free read for the signal handler).
#[inline]
pub fn layout() -> Option<&'static ContinuationLayout> {
    LAYOUT.get()
}

/// Reads what the layout needs (off the handler, once): the collector's encoding and libjvm's
/// statics; sets up the virtual-thread lookup with HotSpot's own `tid` offset; tries the
/// layout (see [`retry`]). Said once if it can never be known.
pub fn prepare(v: &VmStructs, java_major: u32) {
    let pending = oops::read(v, java_major)
        .map_err(str::to_string)
        .and_then(|oops| Ok((oops, JvmSymbols::read(SYMBOLS, THAW_FUNCTIONS)?)));
    if let Ok((oops, symbols)) = &pending {
        if let Ok(tid) = offset(symbols, "_ZN16java_lang_Thread11_tid_offsetE") {
            super::vthread::init_decoded(v, tid, *oops);
        }
        if let Ok(entry) = cont_entry(v, symbols) {
            let _ = CONT_ENTRY.set(entry);
        }
    }
    if let Err(why) = &pending {
        said_off(why);
    }
    if let Ok(mut p) = PENDING.lock() {
        *p = Some(pending);
    }
    retry(v);
}

/// Tries the layout again (the writer does, every drain period): HotSpot computes the offsets of
/// `jdk.internal.vm.StackChunk` when the class is first used (the first virtual thread), not
/// at start-up. Cheap once known, or once known to be impossible.
pub fn retry(v: &VmStructs) {
    if LAYOUT.get().is_some() {
        return;
    }
    let Ok(mut pending) = PENDING.lock() else {
        return;
    };
    let Some(Ok((oops, symbols))) = pending.as_ref() else {
        return;
    };
    // A class not used yet leaves its offsets at 0, and `enterSpecial` is generated at the
    // first continuation (JDK 21): tried again later.
    let generated = v
        .static_u64("ContinuationEntry", "_return_pc")
        .is_some_and(|pc| pc != 0)
        || symbols
            .pointer("_ZN17ContinuationEntry10_return_pcE")
            .is_some();
    if offset(symbols, "_ZN23InstanceStackChunkKlass16_offset_of_stackE").is_err() || !generated {
        return;
    }
    match ContinuationLayout::read(v, symbols, *oops) {
        Ok(layout) => {
            let _ = LAYOUT.set(layout);
        }
        Err(why) => {
            said_off(&why);
            *pending = Some(Err(why));
        }
    }
}

fn said_off(why: &str) {
    eprintln!(
        "jfr-native: the frames of remounted virtual threads still frozen in the heap are not \
         walked (their stacks are written truncated there): {why}"
    );
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::arithmetic_side_effects)]
mod tests {
    use super::*;

    fn start() -> ThawStart {
        let mut thaw_slow = [(0, 0); MAX_THAW_SLOW];
        thaw_slow[0] = (0x3000, 0x3500);
        thaw_slow[1] = (0x4000, 0x4500);
        ThawStart {
            prepare: (0x1000, 0x10c0),
            relativize: (0x2000, 0x20e0),
            thaw_slow,
        }
    }

    #[test]
    fn a_thaw_is_not_started_in_prepare_thaw_or_in_thaw_slows_first_relativization() {
        let s = start();
        // Interrupted in prepare_thaw; returning into it from a callee.
        assert!(s.holds(&[0x1010]));
        assert!(s.holds(&[0x9000, 0x1010]));
        // Relativizing, called by either thaw_slow, directly or below other callees.
        assert!(s.holds(&[0x2010, 0x3100, 0x5000]));
        assert!(s.holds(&[0x9000, 0x9100, 0x2010, 0x4100, 0x5000]));
        // Relativizing for something else (a collector's oop iteration), or the last frame.
        assert!(!s.holds(&[0x2010, 0x7000, 0x3100]));
        assert!(!s.holds(&[0x2010]));
        // thaw_slow copying frames (no relativization below it), and other code.
        assert!(!s.holds(&[0x9000, 0x3100, 0x5000]));
        assert!(!s.holds(&[]));
    }

    #[test]
    fn a_return_address_is_in_the_function_its_call_is_in() {
        let s = start();
        // A return address at a function's end belongs to that function's last call; the
        // interrupted pc there is the next function's first instruction.
        assert!(s.holds(&[0x9000, 0x10c0]));
        assert!(!s.holds(&[0x10c0]));
        assert!(!s.holds(&[0x9000, 0x1000]));
        // Unknown ranges (a libjvm without them) hold nothing.
        assert!(!ThawStart::default().holds(&[0, 1, 0x1010]));
    }
}
