//! The first two steps of a sample: whose signal this is (the agent's own, for this thread,
//! while recording) and what CPU time it stands for.

#![deny(
    clippy::indexing_slicing,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::arithmetic_side_effects
)]

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use crate::os;
use crate::sampling::perf;
use crate::sampling::slots::{slot_at, Slot};
use crate::sampling::stats::{self, STATS};

/// Whether samples are being taken (false before start and after stop).
pub static RECORDING: AtomicBool = AtomicBool::new(false);

/// The sampling interval, ns: a timer signal stands for `1 + overruns` of it.
pub static INTERVAL_NS: AtomicU64 = AtomicU64::new(0);

/// Where a signal comes from, once it is known to be the agent's.
#[derive(Clone, Copy)]
pub enum Source {
    /// The slot's CPU timer, with its overrun count.
    Timer {
        /// Expirations missed before this signal.
        overrun: u64,
    },
    /// The slot's perf counter, with its descriptor; `limit`: the signal of its refresh limit
    /// (`POLL_HUP`: the counter is disabled now and is re-armed), not of an overflow below it.
    Perf {
        /// The counter's descriptor.
        fd: i32,
        /// Whether this overflow reached the refresh limit.
        limit: bool,
    },
}

/// The slot a signal is for, if it is one of the agent's own: a timer's (`si_code` `SI_TIMER`,
/// the value names a slot in the table, and the timer id is that slot's timer) or a perf
/// counter's (`si_code` `POLL_HUP`/`POLL_IN`, which no other process can send, and a
/// descriptor the agent bound to a slot; the slot must still name it, see [`weigh`]).
/// A perf counter's signal for a descriptor no longer bound (a counter closed at thread exit
/// while its signal was pending) is [`Origin::Stale`]; anything else (a signal queued from
/// outside, a timer the agent does not know) is [`Origin::Foreign`]. The caller counts both.
///
/// # Safety
/// `info` must be the kernel's siginfo of an `SA_SIGINFO` handler.
pub unsafe fn of(info: *const libc::siginfo_t) -> Origin {
    // SAFETY: the caller passes the kernel's siginfo; si_code is always valid.
    let code = unsafe { (*info).si_code };
    if code == perf::SI_CODE_LIMIT || code == perf::SI_CODE_WAKEUP {
        // Positive codes cannot come from another process (the kernel refuses them in
        // rt_sigqueueinfo): this is a counter's signal, the agent's own or a stale one.
        // SAFETY: for a file descriptor's signal (F_SETSIG) the kernel filled si_fd.
        let fd = unsafe { (*info).si_fd() };
        let Some(slot) = perf::slot_of_fd(fd).and_then(slot_at) else {
            return Origin::Stale;
        };
        let limit = code == perf::SI_CODE_LIMIT;
        return Origin::Agent(slot, Source::Perf { fd, limit });
    }
    // SAFETY: as above.
    match unsafe { timer_of(info, code) } {
        Some((slot, source)) => Origin::Agent(slot, source),
        None => Origin::Foreign,
    }
}

/// Whose a signal is.
pub enum Origin {
    /// One of the agent's own, for this slot.
    Agent(&'static Slot, Source),
    /// A perf counter's signal whose descriptor is no longer bound to a slot.
    Stale,
    /// Not the agent's: queued from outside, or a timer it does not know.
    Foreign,
}

/// The slot of a CPU timer's signal (`SI_TIMER`), if the value and timer id name one.
///
/// # Safety
/// `info` must be the kernel's siginfo of an `SA_SIGINFO` handler, `code` its `si_code`.
unsafe fn timer_of(info: *const libc::siginfo_t, code: i32) -> Option<(&'static Slot, Source)> {
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
    same_timer(timer_id, slot.timer_id()).then_some((slot, Source::Timer { overrun }))
}

/// The timer ids qemu-user gives its guest (`TIMER_MAGIC | index`, `linux-user/syscall.c`);
/// a kernel's are small (one process's count of timers).
const QEMU_TIMER_MAGIC: i32 = 0x0caf_0000;

/// Whether a signal's `si_timerid` (`delivered`) is that of the slot's timer (`armed`, as
/// `timer_create` gave it). Under qemu-user the signal carries the host kernel's id, which
/// the guest never sees: there the signal's value (the slot) alone names the timer, and the
/// thread check ([`is_due`]) stands. Only where [`crate::arch::QEMU_TIMER_IDS`] says so
/// (aarch64): on x86_64 a kernel's id in that range must still match.
fn same_timer(delivered: i32, armed: i32) -> bool {
    (delivered == armed && delivered >= 0)
        || (crate::arch::QEMU_TIMER_IDS && armed & !0xffff == QEMU_TIMER_MAGIC)
}

/// Whether the slot's sample is to be taken now: recording runs, and the signal landed on the
/// slot's own thread. Counts why not.
pub fn is_due(slot: &Slot) -> bool {
    if !RECORDING.load(Ordering::SeqCst) {
        stats::inc(&STATS.after_stop);
        return false;
    }
    if slot.tid() != os::gettid() {
        stats::inc(&STATS.wrong_thread);
        return false;
    }
    true
}

/// Arms a perf counter again when the sample is done, on every path (a counter stays disabled
/// after the overflow that reached its limit). Not when recording stopped meanwhile or the slot
/// no longer names the counter: it is being closed. The handler keeps it after the slot's
/// [`crate::sampling::slots::SlotHandler`], so it runs while that still counts the handler.
pub struct Rearm<'a> {
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

/// What a signal stands for.
#[derive(Clone, Copy)]
pub struct Weight {
    /// The sample's CPU weight, ns.
    pub cpu_ns: u64,
    /// How many samples the engine asked for with this signal (a timer's 1 + overruns).
    pub asked: u64,
}

/// The CPU time the signal stands for, and for a perf counter's limit signal the re-arm to
/// keep until the sample is done. `None` for a signal of a counter the slot no longer has (a
/// counter being closed, or a descriptor number reused meanwhile): counted, not sampled.
pub fn weigh(slot: &Slot, source: Source) -> Option<(Weight, Option<Rearm<'_>>)> {
    match source {
        Source::Timer { overrun } => {
            let asked = overrun.saturating_add(1);
            slot.count_timer_intervals(asked);
            let interval_ns = INTERVAL_NS.load(Ordering::Relaxed);
            let cpu_ns = interval_ns.saturating_mul(asked);
            Some((Weight { cpu_ns, asked }, None))
        }
        Source::Perf { fd, limit } => {
            if slot.perf_fd() != fd {
                stats::inc(&STATS.stale_signals);
                return None;
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
            let cpu_ns = now_ns.saturating_sub(before_ns);
            Some((Weight { cpu_ns, asked: 1 }, rearm))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_timer_is_known_by_its_id_or_under_qemu_by_its_value_alone() {
        assert!(same_timer(3, 3));
        assert!(!same_timer(4, 3));
        assert!(!same_timer(-1, -1), "no timer");
        // qemu-user: the guest's id is qemu's, the signal carries the host kernel's. Taken
        // where the architecture is tested under qemu only (aarch64).
        assert_eq!(
            same_timer(7, QEMU_TIMER_MAGIC | 2),
            crate::arch::QEMU_TIMER_IDS
        );
        assert!(same_timer(QEMU_TIMER_MAGIC | 2, QEMU_TIMER_MAGIC | 2));
    }
}
