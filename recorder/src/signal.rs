//! The signal handler: one sample of the interrupted thread. Allowed here: atomics, clock_gettime,
//! reads inside the thread's stack bounds, AsyncGetCallTrace, writes into the thread's own
//! preallocated slot. No allocation, locks, logging, JVMTI/JNI, TLS or panics.

#![deny(
    clippy::indexing_slicing,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::arithmetic_side_effects
)]

use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};

use crate::buffers::{self, RECORD_HEADER_WORDS};
use crate::hotspot::javawalk::{kind, Interrupted};
use crate::hotspot::{self, codecache};
use crate::slots::{slot_at, Slot};
use crate::stack::HANDLER_STACK_BYTES;
use crate::stats::{self, STATS};
use crate::unwind::{walk_sample, Sample, Stop};
use crate::{agct, codemap, os, perf, ucontext};

/// Whether samples are being taken (false before start and after stop).
pub static RECORDING: AtomicBool = AtomicBool::new(false);

/// The running recording's number: records carry it, and the writer keeps only its own, so a
/// sample taken while one recording stops never lands in the next.
pub static EPOCH: AtomicU32 = AtomicU32::new(0);

/// Handlers running now (between their first check and their last write).
static IN_HANDLER: AtomicUsize = AtomicUsize::new(0);

/// Whether native frames are unwound with call-frame information (`cstack=dwarf`) or frame
/// pointers only (`cstack=fp`).
pub static USE_CFI: AtomicBool = AtomicBool::new(true);

/// The AsyncGetCallTrace code of a sample whose Java stack was not attempted: the interrupted
/// code runs on a stack that is not the thread's own (an alternate signal stack, a fiber).
pub const NOT_ON_THREAD_STACK: i32 = -101;

/// Whether the Java frames are also walked through HotSpot's frame descriptions (`jstack=vm`,
/// `agct-vm`).
pub static USE_VM_WALK: AtomicBool = AtomicBool::new(true);
/// Whether a VM walk that reaches the end of the stack is written rather than AsyncGetCallTrace's
/// frames (`jstack=vm`).
pub static PREFER_VM_WALK: AtomicBool = AtomicBool::new(true);

/// Record flag: the Java frames come from the VM walk (AsyncGetCallTrace failed).
pub const FLAG_VM_WALK: u8 = 1;
/// Record flag: the VM walk stopped before the end of the thread's Java stack.
pub const FLAG_JAVA_CUT: u8 = 2;

/// Packs the third record word.
pub fn pack_meta(agct_code: i32, stop: Stop, native_count: usize, flags: u8) -> u64 {
    u64::from(agct_code as u32)
        | (u64::from(stop as u8) << 32)
        | ((native_count as u64 & 0xffff) << 40)
        | (u64::from(flags) << 56)
}

/// Unpacks [`pack_meta`].
pub fn unpack_meta(word: u64) -> (i32, Stop, usize, u8) {
    (
        word as u32 as i32,
        Stop::from_u8((word >> 32) as u8),
        ((word >> 40) & 0xffff) as usize,
        (word >> 56) as u8,
    )
}

/// A Java frame's first record word: its kind and bytecode index.
pub fn pack_frame(kind: u8, bci: i32) -> u64 {
    (u64::from(kind) << 32) | u64::from(bci as u32)
}

/// Unpacks [`pack_frame`]: (kind, bci).
pub fn unpack_frame(word: u64) -> (u8, i32) {
    ((word >> 32) as u8, word as u32 as i32)
}

/// Packs the fourth record word: the slot's index and the recording's epoch.
pub fn pack_owner(slot_index: u32, epoch: u32) -> u64 {
    u64::from(slot_index) | (u64::from(epoch) << 32)
}

/// Unpacks [`pack_owner`].
pub fn unpack_owner(word: u64) -> (u32, u32) {
    (word as u32, (word >> 32) as u32)
}

/// Waits (up to `limit`) until no handler is running; after `RECORDING` was cleared and the
/// timers deleted, no new one starts a sample, so every record of the recording is in the
/// rings when this returns true.
pub fn wait_for_handlers(limit: std::time::Duration) -> bool {
    let start = std::time::Instant::now();
    while IN_HANDLER.load(Ordering::SeqCst) != 0 {
        if start.elapsed() >= limit {
            return false;
        }
        std::thread::sleep(std::time::Duration::from_micros(200));
    }
    true
}

/// Leaves `IN_HANDLER` when the sample is done, on every path.
struct InHandler;

impl InHandler {
    fn enter() -> InHandler {
        IN_HANDLER.fetch_add(1, Ordering::SeqCst);
        InHandler
    }
}

impl Drop for InHandler {
    fn drop(&mut self) {
        IN_HANDLER.fetch_sub(1, Ordering::SeqCst);
    }
}

/// The sampling interval, ns: a timer signal stands for `1 + overruns` of it.
pub static INTERVAL_NS: AtomicU64 = AtomicU64::new(0);

/// Where a signal comes from, once it is known to be the agent's.
#[derive(Clone, Copy)]
enum Source {
    /// The slot's CPU timer, with its overrun count.
    Timer { overrun: u64 },
    /// The slot's perf counter, with its descriptor; `limit`: the signal of its refresh limit
    /// (`POLL_HUP`: the counter is disabled now and is re-armed), not of an overflow below it.
    Perf { fd: i32, limit: bool },
}

/// The slot a signal is for, if it is one of the agent's own: a timer's (`si_code` `SI_TIMER`,
/// the value names a slot in the table, and the timer id is that slot's timer) or a perf
/// counter's (`si_code` `POLL_HUP`/`POLL_IN`, which no other process can send, and a
/// descriptor the agent bound to a slot; the slot must still name it, see [`on_sample`]).
/// Anything else (a signal queued from outside, a stale timer) is ignored, counted.
///
/// # Safety
/// `info` must be the kernel's siginfo of an `SA_SIGINFO` handler.
unsafe fn source_of(info: *const libc::siginfo_t) -> Option<(&'static Slot, Source)> {
    // SAFETY: the caller passes the kernel's siginfo; si_code is always valid.
    let code = unsafe { (*info).si_code };
    if code == perf::SI_CODE_LIMIT || code == perf::SI_CODE_WAKEUP {
        // SAFETY: for a file descriptor's signal (F_SETSIG) the kernel filled si_fd.
        let fd = unsafe { (*info).si_fd() };
        let slot = slot_at(perf::slot_of_fd(fd)?)?;
        let limit = code == perf::SI_CODE_LIMIT;
        return Some((slot, Source::Perf { fd, limit }));
    }
    if code != libc::SI_TIMER {
        return None;
    }
    // SAFETY: for SI_TIMER the kernel filled the timer fields (a sender faking SI_TIMER from
    // outside fills them with its own values, which are only compared below).
    let (value, timer_id, overrun) = unsafe {
        (
            (*info).si_value().sival_ptr as usize as u64,
            (*info).si_timerid(),
            (*info).si_overrun(),
        )
    };
    let slot = Slot::from_signal_value(value)?;
    let overrun = u64::from(overrun.max(0).unsigned_abs());
    (timer_id == slot.timer_id() && timer_id >= 0).then_some((slot, Source::Timer { overrun }))
}

/// Arms a perf counter again when the sample is done, on every path (a counter stays disabled
/// after the overflow that reached its limit). Not when recording stopped meanwhile or the slot
/// no longer names the counter: it is being closed. Declared after the slot's
/// [`crate::slots::SlotHandler`], so it runs while that still counts this handler.
struct Rearm<'a> {
    slot: &'a Slot,
    fd: i32,
}

impl Drop for Rearm<'_> {
    fn drop(&mut self) {
        if RECORDING.load(Ordering::SeqCst) && self.slot.perf_fd() == self.fd {
            perf::rearm(self.fd);
        }
    }
}

/// Adds the handler's run time to the statistics when it returns, on every path; declared
/// first, so that it is dropped last (after a perf counter's re-arm).
struct HandlerTime {
    start_ns: i64,
}

impl HandlerTime {
    fn start() -> HandlerTime {
        HandlerTime {
            start_ns: os::monotonic_ns(),
        }
    }
}

impl Drop for HandlerTime {
    fn drop(&mut self) {
        let ns = os::monotonic_ns().saturating_sub(self.start_ns).max(0) as u64;
        if let Some(bucket) = STATS.handler_ns.get(stats::walk_time_bucket(ns)) {
            stats::inc(bucket);
        }
    }
}

/// The `SA_SIGINFO` handler for the timers' and counters' signal.
pub(crate) extern "C" fn on_sample(_signal: i32, info: *mut libc::siginfo_t, uc: *mut c_void) {
    // An address in this frame: how deep the handler already is on the thread's stack.
    let here = 0u8;
    let here = std::ptr::addr_of!(here) as u64;
    let _errno = os::ErrnoGuard::save();
    let _time = HandlerTime::start();
    if info.is_null() || uc.is_null() {
        return;
    }
    let _in_handler = InHandler::enter();
    // SAFETY: `info` is the kernel's siginfo for this SA_SIGINFO handler.
    let Some((slot, source)) = (unsafe { source_of(info) }) else {
        stats::inc(&STATS.foreign_signals);
        return;
    };
    // Counted before the slot's counter is checked below: closing the counter waits for it.
    let _slot_handler = slot.enter_handler();
    if !RECORDING.load(Ordering::SeqCst) {
        stats::inc(&STATS.after_stop);
        return;
    }
    if slot.tid() != os::gettid() {
        stats::inc(&STATS.wrong_thread);
        return;
    }
    // The sample's CPU weight in ns, and how many samples the engine asked for with this signal.
    let (weight_ns, asked, _rearm) = match source {
        Source::Timer { overrun } => {
            let asked = overrun.saturating_add(1);
            let interval_ns = INTERVAL_NS.load(Ordering::Relaxed);
            (interval_ns.saturating_mul(asked), asked, None)
        }
        Source::Perf { fd, limit } => {
            if slot.perf_fd() != fd {
                // A counter being closed, or a descriptor number reused meanwhile.
                stats::inc(&STATS.stale_signals);
                return;
            }
            // The thread's CPU time since its previous sample: exact whatever the counter
            // missed (kernel time it may not count, time before its first overflow).
            let now_ns = os::thread_cpu_ns().max(0) as u64;
            let before_ns = slot.last_cpu_ns.swap(now_ns, Ordering::Relaxed);
            // An overflow below the limit leaves the counter enabled: no refresh, which would
            // only raise the limit. (Not `limit.then_some(Rearm { .. })`: its argument is
            // built, and dropped, re-arming, whatever `limit` is.)
            let rearm = if limit {
                Some(Rearm { slot, fd })
            } else {
                None
            };
            (now_ns.saturating_sub(before_ns), 1, rearm)
        }
    };
    // Too little stack left below the handler for the walk and AsyncGetCallTrace: skip.
    if slot
        .stack
        .headroom(here)
        .is_some_and(|left| left < HANDLER_STACK_BYTES)
    {
        slot.skipped.add(weight_ns, asked);
        stats::inc(&STATS.low_stack);
        return;
    }
    let Some(buffers) = buffers::current() else {
        return;
    };
    let hint = slot.index() as usize;
    let Some(mut scratch) = buffers.scratch(hint) else {
        slot.dropped.add(weight_ns, asked);
        stats::inc(&STATS.no_buffer);
        return;
    };
    let scratch = scratch.get();
    let time_ns = os::monotonic_ns();
    // SAFETY: `uc` is the kernel's ucontext for this handler.
    let regs = unsafe { ucontext::regs(uc) };
    let on_own_stack = slot.stack.bounds_from(regs.sp);
    let cfi = USE_CFI.load(Ordering::Relaxed);
    let Sample {
        count: native_count,
        stop,
        context,
        java_entry,
    } = match on_own_stack {
        Some(bounds) => codemap::with_current(|map| match map {
            Some(map) => walk_sample(regs, &bounds, map, cfi, &mut scratch.pcs),
            None => Sample {
                count: 0,
                stop: Stop::UnknownCode,
                context: None,
                java_entry: None,
            },
        }),
        None => {
            // Another stack (a fiber, an alternate signal stack, unknown bounds): its memory
            // is not known to be readable. The pc alone, flagged.
            stats::inc(&STATS.off_stack);
            let count = match scratch.pcs.first_mut() {
                Some(first) => {
                    *first = regs.pc;
                    1
                }
                None => 0,
            };
            Sample {
                count,
                stop: Stop::OffStack,
                context: None,
                java_entry: None,
            }
        }
    };
    // Our signal came with another one whose handler had not started: the sample is of the
    // code that signal interrupted, Java stack included.
    let agct_uc = match context {
        Some(inner) => {
            stats::inc(&STATS.other_handler_entered);
            inner as *mut c_void
        }
        None => uc,
    };
    if stop == Stop::UnknownCode {
        crate::unwind::watcher::unknown_pc_seen();
    }
    let walk_ns = os::monotonic_ns().saturating_sub(time_ns);
    if let Some(bucket) = STATS
        .walk_ns
        .get(stats::walk_time_bucket(walk_ns.max(0) as u64))
    {
        stats::inc(bucket);
    }
    let agct_code = if on_own_stack.is_some() {
        // SAFETY: on the interrupted thread (checked above), with its JNIEnv, after ClassLoad
        // was enabled and methods primed (the agent arms timers only after that), with enough
        // stack left (checked above). `agct_uc` is the kernel's ucontext of this handler or,
        // from `walk_sample`, that of a signal frame on this thread's stack whose handler has
        // not run yet: the thread's state is the one it describes, and its whole `uc_mcontext`
        // lies within the stack bounds (checked), which stay mapped and unchanged while this
        // handler runs above it.
        unsafe { agct::call(slot.env(), &mut scratch.frames, agct_uc) }
    } else {
        NOT_ON_THREAD_STACK
    };
    let mut java_count = usize::try_from(agct_code).unwrap_or(0);
    for k in scratch.kinds.iter_mut().take(java_count) {
        *k = kind::UNKNOWN;
    }
    let mut flags = 0u8;
    // The virtual thread the carrier runs, if any (fault-safe reads of its JavaThread).
    let vthread_id = hotspot::java_thread(slot.env() as u64)
        .and_then(hotspot::vthread::mounted_id)
        .map_or(0, |id| id as u64);
    if let (Some(bounds), Some(layout), Some(thread), true) = (
        on_own_stack,
        hotspot::java_layout(),
        hotspot::java_thread(slot.env() as u64),
        USE_VM_WALK.load(Ordering::Relaxed),
    ) {
        // SAFETY: `agct_uc` is the kernel's ucontext or one checked to lie on this thread's
        // stack (see the AsyncGetCallTrace call above).
        let interrupted = unsafe {
            Interrupted {
                regs: ucontext::regs(agct_uc),
                java_entry,
                bcp_register: ucontext::bcp_register(agct_uc),
                method_register: ucontext::method_register(agct_uc),
            }
        };
        let walk_bounds = slot
            .stack
            .bounds_from(interrupted.regs.sp)
            .unwrap_or(bounds);
        let walk = layout.walk_java(
            thread,
            interrupted,
            codecache::contains,
            &walk_bounds,
            &mut scratch.java,
        );
        if java_count > 0 {
            // Types where both walks name the same methods, frame by frame from the top.
            let pairs = scratch
                .frames
                .iter()
                .zip(scratch.java.iter().take(walk.count));
            let mut same = 0usize;
            for (k, (a, v)) in scratch.kinds.iter_mut().zip(pairs).take(java_count) {
                if a.method_id as u64 != v.method_id {
                    break;
                }
                *k = v.kind;
                same = same.saturating_add(1);
            }
            // How often the two walks agree on every frame: the check of the VM walk.
            stats::inc(&STATS.vm_walk_compared);
            if same == java_count && walk.count == java_count {
                stats::inc(&STATS.vm_walk_agreed);
            }
            // A virtual thread's walk cut short stopped where its frames are still frozen in
            // the heap (Loom's return barrier), which AsyncGetCallTrace skips without a sign:
            // the VM walk's frames are written, as truncated.
            let cut_vthread = vthread_id != 0 && !walk.complete;
            if walk.count > 0
                && (walk.complete || cut_vthread)
                && PREFER_VM_WALK.load(Ordering::Relaxed)
            {
                java_count = walk.count;
                flags |= FLAG_VM_WALK;
                if !walk.complete {
                    flags |= FLAG_JAVA_CUT;
                }
            }
        } else if walk.count > 0 || (walk.complete && stop == Stop::EndOfStack) {
            // Frames AsyncGetCallTrace could not walk; or none at all: the native walk reached
            // the thread's first frame without passing Java code, and the thread has no last
            // Java frame (it runs native code outside any Java call).
            java_count = walk.count;
            flags |= FLAG_VM_WALK;
            if !walk.complete {
                flags |= FLAG_JAVA_CUT;
            }
        }
    }
    let from_vm = flags & FLAG_VM_WALK != 0;
    let pcs = scratch.pcs.get(..native_count).unwrap_or_default();
    let frames = scratch.frames.get(..java_count).unwrap_or_default();
    let java = scratch.java.get(..java_count).unwrap_or_default();
    let kinds = scratch.kinds.get(..java_count).unwrap_or_default();
    let meta = pack_meta(agct_code, stop, native_count, flags);
    let owner = pack_owner(slot.index(), EPOCH.load(Ordering::Relaxed));
    let len = RECORD_HEADER_WORDS
        .saturating_add(native_count)
        .saturating_add(java_count.saturating_mul(2));
    let pushed = buffers.ring(hint, len).is_some_and(|mut ring| {
        ring.get().push(len, |i| match i {
            0 => time_ns as u64,
            1 => weight_ns,
            2 => meta,
            3 => owner,
            4 => vthread_id,
            i => {
                let i = i.saturating_sub(RECORD_HEADER_WORDS);
                match pcs.get(i) {
                    Some(&pc) => pc,
                    None => {
                        let j = i.saturating_sub(native_count);
                        let index = j / 2;
                        if from_vm {
                            match java.get(index) {
                                Some(f) if j % 2 == 0 => pack_frame(f.kind, f.bci),
                                Some(f) => f.method_id,
                                None => 0,
                            }
                        } else {
                            match frames.get(index) {
                                Some(f) if j % 2 == 0 => pack_frame(
                                    kinds.get(index).copied().unwrap_or(kind::UNKNOWN),
                                    f.lineno,
                                ),
                                Some(f) => f.method_id as u64,
                                None => 0,
                            }
                        }
                    }
                }
            }
        })
    });
    if pushed {
        stats::inc(&STATS.samples);
        if stop.truncated() {
            stats::inc(&STATS.native_truncated);
        }
        if agct_code < 0 && agct_code != NOT_ON_THREAD_STACK {
            stats::inc(stats::agct_error(agct_code));
        }
        if from_vm {
            stats::inc(&STATS.vm_walk_used);
        }
    } else {
        slot.dropped.add(weight_ns, asked);
        stats::inc(&STATS.dropped_ring_full);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn meta_round_trips() {
        for (code, stop, n, flags) in [
            (-5, Stop::BadFrame, 3usize, FLAG_VM_WALK | FLAG_JAVA_CUT),
            (12, Stop::ReachedJava, 0, 0),
            (0, Stop::Depth, 1024, FLAG_JAVA_CUT),
        ] {
            assert_eq!(
                unpack_meta(pack_meta(code, stop, n, flags)),
                (code, stop, n, flags)
            );
        }
        for (k, bci) in [(kind::INLINED, 17), (kind::NATIVE, -3), (kind::UNKNOWN, -1)] {
            assert_eq!(unpack_frame(pack_frame(k, bci)), (k, bci));
        }
    }

    #[test]
    fn owner_round_trips() {
        for (index, epoch) in [(0, 0), (7, 3), (u32::MAX, u32::MAX)] {
            assert_eq!(unpack_owner(pack_owner(index, epoch)), (index, epoch));
        }
    }
}
