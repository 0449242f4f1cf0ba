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
use std::sync::atomic::{AtomicBool, Ordering};

use crate::slots::{Slot, RECORD_HEADER_WORDS};
use crate::stack::StackBounds;
use crate::stats::{self, STATS};
use crate::unwind::{walk_sample, Sample, Stop};
use crate::{agct, codemap, os, ucontext};

/// Whether samples are being taken (false before start and after stop).
pub static RECORDING: AtomicBool = AtomicBool::new(false);

/// Whether native frames are unwound with call-frame information (`cstack=dwarf`) or frame
/// pointers only (`cstack=fp`).
pub static USE_CFI: AtomicBool = AtomicBool::new(true);

/// Packs the third record word.
pub fn pack_meta(agct_code: i32, stop: Stop, native_count: usize) -> u64 {
    u64::from(agct_code as u32)
        | (u64::from(stop as u8) << 32)
        | ((native_count as u64 & 0xffff) << 40)
}

/// Unpacks [`pack_meta`].
pub fn unpack_meta(word: u64) -> (i32, Stop, usize) {
    (
        word as u32 as i32,
        Stop::from_u8((word >> 32) as u8),
        ((word >> 40) & 0xffff) as usize,
    )
}

/// The `SA_SIGINFO` handler for the timers' signal.
pub(crate) extern "C" fn on_sample(_signal: i32, info: *mut libc::siginfo_t, uc: *mut c_void) {
    let _errno = os::ErrnoGuard::save();
    if info.is_null() || uc.is_null() {
        return;
    }
    // SAFETY: `info` is the kernel's siginfo for this SA_SIGINFO handler; for timer signals
    // si_value and si_overrun are the fields the kernel filled.
    let (value, code, overrun) = unsafe {
        (
            (*info).si_value().sival_ptr,
            (*info).si_code,
            (*info).si_overrun(),
        )
    };
    // SAFETY: the only sender of this signal with a value is our timers, whose value is a slot
    // pointer (`Slot::as_signal_value`); anything else carries null and is ignored.
    let Some(slot) = (unsafe { Slot::from_signal_value(value) }) else {
        return;
    };
    if !RECORDING.load(Ordering::Relaxed) {
        stats::inc(&STATS.after_stop);
        return;
    }
    if slot.tid() != os::gettid() {
        stats::inc(&STATS.wrong_thread);
        return;
    }
    let weight = if code == libc::SI_TIMER {
        u64::from(overrun.max(0).unsigned_abs()).saturating_add(1)
    } else {
        1
    };
    let time_ns = os::monotonic_ns();
    // SAFETY: `uc` is the kernel's ucontext for this handler.
    let regs = unsafe { ucontext::regs(uc) };
    let bounds = StackBounds::of_current_thread(regs.sp, os::thread_control_block());
    // SAFETY: we are the handler on the slot's own thread (checked above), and it does not nest.
    let scratch = unsafe { slot.scratch() };
    let cfi = USE_CFI.load(Ordering::Relaxed);
    let Sample {
        count: native_count,
        stop,
        context,
    } = codemap::with_current(|map| match map {
        Some(map) => walk_sample(regs, &bounds, map, cfi, &mut scratch.pcs),
        None => Sample {
            count: 0,
            stop: Stop::UnknownCode,
            context: None,
        },
    });
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
    // SAFETY: on the interrupted thread, with its JNIEnv, after ClassLoad was enabled and
    // methods primed (the agent arms timers only after that). `agct_uc` is the kernel's
    // ucontext of this handler or, from `walk_sample`, that of a signal frame on this thread's
    // stack whose handler has not run yet: the thread's state is the one it describes, and its
    // whole `uc_mcontext` lies within the stack bounds (checked), which stay mapped and
    // unchanged while this handler runs above it.
    let agct_code = unsafe { agct::call(slot.env(), &mut scratch.frames, agct_uc) };
    let java_count = usize::try_from(agct_code).unwrap_or(0);
    let pcs = scratch.pcs.get(..native_count).unwrap_or_default();
    let frames = scratch.frames.get(..java_count).unwrap_or_default();
    let meta = pack_meta(agct_code, stop, native_count);
    let len = RECORD_HEADER_WORDS
        .saturating_add(native_count)
        .saturating_add(java_count.saturating_mul(2));
    let pushed = slot.ring.push(len, |i| match i {
        0 => time_ns as u64,
        1 => weight,
        2 => meta,
        i => {
            let i = i.saturating_sub(RECORD_HEADER_WORDS);
            match pcs.get(i) {
                Some(&pc) => pc,
                None => {
                    let j = i.saturating_sub(native_count);
                    match frames.get(j / 2) {
                        Some(f) if j % 2 == 0 => f.lineno as i64 as u64,
                        Some(f) => f.method_id as u64,
                        None => 0,
                    }
                }
            }
        }
    });
    if pushed {
        stats::inc(&STATS.samples);
        if stop.truncated() {
            stats::inc(&STATS.native_truncated);
        }
        if agct_code < 0 {
            stats::inc(stats::agct_error(agct_code));
        }
    } else {
        stats::inc(&slot.dropped);
        stats::inc(&STATS.dropped_ring_full);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn meta_round_trips() {
        for (code, stop, n) in [
            (-5, Stop::BadFrame, 3usize),
            (12, Stop::ReachedJava, 0),
            (0, Stop::Depth, 1024),
        ] {
            assert_eq!(unpack_meta(pack_meta(code, stop, n)), (code, stop, n));
        }
    }
}
