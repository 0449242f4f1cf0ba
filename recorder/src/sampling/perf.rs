//! The `perf` sampling engine's kernel side: one software `task-clock` counter per thread
//! (`perf_event_open`), which counts the thread's own CPU time and signals that same thread
//! every `interval_ns` of it. Unlike the thread CPU timers of the `timer` engine, which expire
//! only on the scheduler tick (HZ=250 here: at most 250 real samples per CPU-second, whatever
//! the interval), the counter is driven by a high-resolution timer, so `interval=1ms` gives
//! about 1,000 real stacks per CPU-second.
//!
//! The counter is armed for [`OVERFLOWS_PER_REFRESH`] overflows at a time
//! (`PERF_EVENT_IOC_REFRESH`). Each overflow sends the agent's signal to the owning thread
//! (`F_SETOWN_EX` with `F_OWNER_TID`), with the counter's descriptor in `si_fd`: `si_code`
//! `POLL_IN` while the counter stays enabled, `POLL_HUP` on the last overflow of the batch,
//! which disables it; the handler then arms it again with one `ioctl` ([`rearm`]). Why batches,
//! not one overflow per refresh: on a virtual machine the refresh costs more than the rest of
//! the handler (7 us per call measured here on a nested KVM guest, where the whole sample costs
//! about 40 us, most of it the timer interrupt itself; see `tools/scripts/interrupt_cost.sh`);
//! one call in 16 samples makes it small. Why not unlimited: a thread that runs with the signal
//! blocked would queue one real-time signal per overflow; a batch bounds that queue at 16 per
//! thread. A refresh of a counter that is still enabled adds to its limit, harmless: it only
//! delays the next `POLL_HUP`. No ring buffer is mapped (the `mlock` budget of an unprivileged
//! user, 516 KiB, would not cover many threads). The handler's own CPU time counts toward the
//! thread's next sample like any other (its weight is the thread's CPU time since the previous
//! one).
//!
//! Descriptors: counters are opened only while fewer than [`budget`] are open (a quarter of
//! the descriptor limit, leaving 1,024 to the application), and moved to numbers from 1,024 up,
//! so that the application's own descriptors keep the low numbers `select()` can handle.
//!
//! A lost signal: when the user's queue of pending real-time signals is full
//! (`RLIMIT_SIGPENDING`), the kernel sends a counter's overflow as a plain SIGIO, whose default
//! action ends the process (HotSpot does not handle SIGIO). [`protect_from_sigio`] installs a
//! handler that only counts it, where SIGIO has none; the writer finds counters that stopped
//! without their signal and starts them again ([`count`], [`rearm`]). A sample's weight is not the
//! counter's period but the thread's CPU time since its previous sample, read in the handler,
//! so the sum of `samplingPeriod` is the thread's CPU time whatever the counter missed.
//!
//! The handler finds a counter's slot by its descriptor through a table filled outside the
//! handler ([`slot_of_fd`]); the slot must also name the same descriptor and thread.

#![deny(
    clippy::indexing_slicing,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::arithmetic_side_effects
)]

use std::io;
use std::sync::atomic::{AtomicPtr, AtomicU32, AtomicU64, Ordering};

use perf_event_open_sys::bindings;

use super::pages;

/// `fcntl` commands and the owner type the `libc` crate does not define for glibc (values from
/// the kernel's `include/uapi/asm-generic/fcntl.h`, the same on x86_64, aarch64, ppc64le and
/// s390x; this agent is built for x86_64 and aarch64).
const F_SETSIG: libc::c_int = 10;
const F_SETOWN_EX: libc::c_int = 15;
const F_OWNER_TID: libc::c_int = 0;

/// `struct f_owner_ex` of `F_SETOWN_EX`.
#[repr(C)]
struct OwnerEx {
    kind: libc::c_int,
    pid: libc::pid_t,
}

/// `si_code` of a counter's signal: `POLL_HUP` on the overflow that reaches its refresh limit
/// (the counter is disabled then), `POLL_IN` on the overflows before it.
pub const SI_CODE_LIMIT: i32 = 6;
/// See [`SI_CODE_LIMIT`].
pub const SI_CODE_WAKEUP: i32 = 1;

/// Whether the counters may count kernel time (`exclude_kernel=0`): permitted to root, to
/// `CAP_PERFMON` and where `perf_event_paranoid` is 1 or less. Otherwise they count user time
/// only: a thread in a system call is sampled when it gets back to user code, and its weight
/// (the thread's CPU time since its last sample) still holds the kernel time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// User and kernel time.
    UserAndKernel,
    /// User time only.
    User,
}

/// A `task-clock` counter on one thread that signals that thread.
#[derive(Debug, PartialEq, Eq)]
pub struct PerfCounter {
    fd: i32,
}

fn attr(interval_ns: u64, scope: Scope) -> bindings::perf_event_attr {
    let mut attr = bindings::perf_event_attr {
        type_: bindings::PERF_TYPE_SOFTWARE,
        size: std::mem::size_of::<bindings::perf_event_attr>() as u32,
        config: u64::from(bindings::PERF_COUNT_SW_TASK_CLOCK),
        ..Default::default()
    };
    attr.__bindgen_anon_1.sample_period = interval_ns.max(1);
    attr.set_disabled(1);
    attr.set_exclude_kernel(u64::from(scope == Scope::User));
    attr.set_exclude_hv(1);
    attr
}

/// The lowest descriptor number counters are moved to.
const FIRST_FD: i32 = 1024;
/// Descriptors left to the application below the limit.
const APPLICATION_FDS: u64 = 1024;

/// Counters open now (for [`budget`]).
static OPEN: AtomicU32 = AtomicU32::new(0);

/// How many counters may be open at once: a quarter of the descriptor limit, and no more than
/// leaves 1,024 descriptors to the application (0 with a limit of 1,024: timers then).
pub fn budget() -> u32 {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit fills the struct it is given.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } != 0 {
        return 0;
    }
    let soft = limit.rlim_cur;
    let budget = (soft / 4).min(soft.saturating_sub(APPLICATION_FDS));
    u32::try_from(budget).unwrap_or(u32::MAX)
}

/// Moves `fd` to the lowest free number from 1,024 up (close-on-exec kept); `fd` itself
/// where that is not possible.
fn move_high(fd: i32) -> i32 {
    // SAFETY: fcntl on our own descriptor; on success the copy is ours and the original closed.
    let high = unsafe { libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, FIRST_FD) };
    if high < 0 {
        return fd;
    }
    close_fd(fd);
    high
}

fn open_fd(tid: i32, interval_ns: u64, scope: Scope) -> io::Result<i32> {
    let mut attr = attr(interval_ns, scope);
    // SAFETY: a fully initialized perf_event_attr (zeroed by Default, then set), a thread of
    // this process, any CPU, no group; the kernel owns the returned descriptor.
    let fd = unsafe {
        perf_event_open_sys::perf_event_open(
            &mut attr,
            tid,
            -1,
            -1,
            libc::c_ulong::from(bindings::PERF_FLAG_FD_CLOEXEC),
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(fd)
}

fn close_fd(fd: i32) {
    // SAFETY: a descriptor this module opened and owns; closed once (callers take `self`).
    unsafe { libc::close(fd) };
}

/// Checks whether this process may open counters, on the calling thread, without arming
/// anything: the scope that works, or the error of the last attempt (`EACCES` at
/// `perf_event_paranoid` 3, `EPERM` under a seccomp filter such as Docker's default, `ENOENT`
/// or `ENOSYS` without perf support).
pub fn probe(interval_ns: u64) -> io::Result<Scope> {
    let tid = crate::os::gettid();
    let mut last = io::Error::from_raw_os_error(libc::ENOSYS);
    for scope in [Scope::UserAndKernel, Scope::User] {
        match open_fd(tid, interval_ns, scope) {
            Ok(fd) => {
                close_fd(fd);
                return Ok(scope);
            }
            Err(e) => last = e,
        }
    }
    Err(last)
}

impl PerfCounter {
    /// Opens a counter of `scope` on thread `tid` (of this process) that sends `signal` to
    /// `tid` every `interval_ns` of its CPU time, disabled: [`PerfCounter::start`] arms it once
    /// the slot knows its descriptor. Refused (`EMFILE`) when [`budget`] counters are open.
    pub fn open(tid: i32, signal: i32, interval_ns: u64, scope: Scope) -> io::Result<PerfCounter> {
        if OPEN.fetch_add(1, Ordering::AcqRel) >= budget() {
            OPEN.fetch_sub(1, Ordering::AcqRel);
            return Err(io::Error::from_raw_os_error(libc::EMFILE));
        }
        let fd = match open_fd(tid, interval_ns, scope) {
            Ok(fd) => fd,
            Err(e) => {
                OPEN.fetch_sub(1, Ordering::AcqRel);
                return Err(e);
            }
        };
        // Before O_ASYNC: the kernel keeps the descriptor number it was set on for `si_fd`.
        let counter = PerfCounter { fd: move_high(fd) };
        let fd = counter.fd;
        let owner = OwnerEx {
            kind: F_OWNER_TID,
            pid: tid,
        };
        // SAFETY: fcntl on our own descriptor: asynchronous notification, with `signal` (so the
        // siginfo carries si_fd), to thread `tid`; `owner` outlives the call.
        let failed = unsafe {
            libc::fcntl(fd, libc::F_SETFL, libc::O_ASYNC) != 0
                || libc::fcntl(fd, F_SETSIG, signal) != 0
                || libc::fcntl(fd, F_SETOWN_EX, &owner as *const OwnerEx) != 0
        };
        if failed {
            let e = io::Error::last_os_error();
            counter.close();
            return Err(e);
        }
        Ok(counter)
    }

    /// The counter's descriptor (`si_fd` of its signals).
    pub fn fd(&self) -> i32 {
        self.fd
    }

    /// Starts counting: the first signal comes after `interval_ns` of the thread's CPU time.
    pub fn start(&self) -> io::Result<()> {
        if rearm(self.fd) {
            Ok(())
        } else {
            Err(io::Error::last_os_error())
        }
    }

    /// Stops counting (no more signals), without closing.
    pub fn disable(&self) {
        // SAFETY: an ioctl on our own counter.
        unsafe { perf_event_open_sys::ioctls::DISABLE(self.fd, 0) };
    }

    /// Disables and closes the counter: no signal is sent for it any more.
    pub fn close(self) {
        self.disable();
        close_fd(self.fd);
        OPEN.fetch_sub(1, Ordering::AcqRel);
    }
}

/// The CPU time counter `fd` has counted, ns (it does not advance while the counter is
/// disabled). Not for the handler.
pub fn count(fd: i32) -> Option<u64> {
    let mut value = 0u64;
    // SAFETY: reads 8 bytes into `value` (read_format 0: the count alone).
    let n = unsafe { libc::read(fd, (&mut value as *mut u64).cast(), 8) };
    (n == 8).then_some(value)
}

/// SIGIOs received (overflow signals the kernel could not queue as the agent's signal).
pub static SIGIO_RECEIVED: AtomicU64 = AtomicU64::new(0);

extern "C" fn on_sigio(_signal: i32, _info: *mut libc::siginfo_t, _uc: *mut libc::c_void) {
    SIGIO_RECEIVED.fetch_add(1, Ordering::Relaxed);
}

/// Where SIGIO has its default action (which ends the process), installs a handler that only
/// counts it: a counter's overflow arrives as SIGIO when the real-time signal queue is full. An
/// application that installs its own later replaces it.
pub fn protect_from_sigio() {
    if crate::os::signal_is_free(libc::SIGIO) {
        let _ = crate::os::install_handler(libc::SIGIO, on_sigio);
    }
}

/// Overflows a counter is armed for by one refresh (see the module's documentation): at most
/// this many signals queue for a thread that blocks the agent's signal while it runs.
pub const OVERFLOWS_PER_REFRESH: i32 = 16;

/// Arms counter `fd` for [`OVERFLOWS_PER_REFRESH`] more overflows (`PERF_EVENT_IOC_REFRESH`),
/// enabling it if it was disabled. Async-signal-safe: one system call. False if the kernel
/// refused.
#[inline]
pub fn rearm(fd: i32) -> bool {
    // SAFETY: an ioctl on a descriptor; on a descriptor that is not a counter (closed and
    // reused meanwhile) the kernel refuses it without effect.
    unsafe { perf_event_open_sys::ioctls::REFRESH(fd, OVERFLOWS_PER_REFRESH) == 0 }
}

/// Descriptors per page of the descriptor table, and pages: descriptors up to 4 M.
const PAGE_FDS: usize = 4096;
const PAGES: usize = 1024;

type Page = [AtomicU32; PAGE_FDS];

/// Descriptor → slot index + 1 (0: none). Pages are made outside the handler and never freed.
static FD_TABLE: [AtomicPtr<Page>; PAGES] = [const { AtomicPtr::new(std::ptr::null_mut()) }; PAGES];

fn entry(fd: i32, make: bool) -> Option<&'static AtomicU32> {
    let fd = usize::try_from(fd).ok()?;
    let page_ptr = FD_TABLE.get(fd / PAGE_FDS)?;
    let page = if make {
        pages::page_or_make(page_ptr, || {
            Box::new([const { AtomicU32::new(0) }; PAGE_FDS])
        })?
    } else {
        pages::page(page_ptr)?
    };
    page.get(fd % PAGE_FDS)
}

/// Records that counter `fd` belongs to the slot with table index `slot_index` (not in the
/// handler: may allocate a page). False if the descriptor is beyond the table.
pub fn bind_fd(fd: i32, slot_index: u32) -> bool {
    match (entry(fd, true), slot_index.checked_add(1)) {
        (Some(e), Some(value)) => {
            e.store(value, Ordering::Release);
            true
        }
        _ => false,
    }
}

/// Forgets counter `fd` (before it is closed).
pub fn unbind_fd(fd: i32) {
    if let Some(e) = entry(fd, false) {
        e.store(0, Ordering::Release);
    }
}

/// The index of the slot counter `fd` belongs to, if any. Signal-safe: two bounds-checked
/// loads.
#[inline]
pub fn slot_of_fd(fd: i32) -> Option<u32> {
    entry(fd, false)?.load(Ordering::Acquire).checked_sub(1)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;

    #[test]
    fn the_descriptor_table_maps_and_forgets() {
        assert_eq!(slot_of_fd(-1), None);
        assert_eq!(slot_of_fd(i32::MAX), None);
        assert!(bind_fd(70_000, 5));
        assert_eq!(slot_of_fd(70_000), Some(5));
        assert_eq!(slot_of_fd(70_001), None);
        unbind_fd(70_000);
        assert_eq!(slot_of_fd(70_000), None);
        assert!(!bind_fd(i32::MAX, 1));
        assert!(!bind_fd(3, u32::MAX));
    }
}
