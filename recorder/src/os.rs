//! Thin wrappers over the libc calls the agent makes: per-thread CPU timers, the signal handler
//! installation, thread ids, errno and clocks. Every return code is checked.

use std::ffi::c_void;
use std::io;
use std::mem::MaybeUninit;

/// The kernel thread id of the caller (a raw syscall: async-signal-safe).
pub fn gettid() -> i32 {
    // SAFETY: gettid takes no arguments and cannot fail.
    unsafe { libc::syscall(libc::SYS_gettid) as i32 }
}

fn clock_ns(clock: libc::clockid_t) -> i64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: valid clock id and out-pointer; clock_gettime is async-signal-safe (vDSO).
    unsafe { libc::clock_gettime(clock, &mut ts) };
    ts.tv_sec
        .saturating_mul(1_000_000_000)
        .saturating_add(ts.tv_nsec)
}

/// CLOCK_MONOTONIC in nanoseconds (async-signal-safe).
pub fn monotonic_ns() -> i64 {
    clock_ns(libc::CLOCK_MONOTONIC)
}

/// CLOCK_REALTIME in nanoseconds since the epoch.
pub fn realtime_ns() -> i64 {
    clock_ns(libc::CLOCK_REALTIME)
}

/// CPU time of the calling thread in nanoseconds (async-signal-safe: a system call).
pub fn thread_cpu_ns() -> i64 {
    clock_ns(libc::CLOCK_THREAD_CPUTIME_ID)
}

/// The process's CPU time so far (user and system, every thread, ended ones included:
/// `getrusage(RUSAGE_SELF)`), ns.
pub fn process_cpu_ns() -> u64 {
    // SAFETY: getrusage writes into the zeroed struct it is given and reads nothing else.
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut usage);
        usage
    };
    let us = |t: libc::timeval| (t.tv_sec.max(0) as u64) * 1_000_000 + t.tv_usec.max(0) as u64;
    (us(usage.ru_utime) + us(usage.ru_stime)) * 1_000
}

/// The CPU clock of thread `tid` of this process: CPUCLOCK_SCHED | CPUCLOCK_PERTHREAD, as glibc
/// builds `pthread_getcpuclockid`.
fn thread_cpu_clock(tid: i32) -> libc::clockid_t {
    ((!tid) << 3) | 6
}

/// CPU time of thread `tid` of this process in nanoseconds (0 if it is gone).
pub fn thread_cpu_ns_of(tid: i32) -> i64 {
    clock_ns(thread_cpu_clock(tid))
}

/// Saves errno on creation and restores it on drop: the signal handler makes syscalls that may
/// clobber the errno of the code it interrupted.
pub struct ErrnoGuard(i32);

impl ErrnoGuard {
    /// Saves the current errno.
    pub fn save() -> ErrnoGuard {
        // SAFETY: __errno_location returns the calling thread's errno slot, always valid.
        ErrnoGuard(unsafe { *libc::__errno_location() })
    }
}

impl Drop for ErrnoGuard {
    fn drop(&mut self) {
        // SAFETY: as in `save`.
        unsafe { *libc::__errno_location() = self.0 };
    }
}

/// A POSIX timer on one thread's CPU clock that signals that same thread, made with the raw
/// system calls so that its id is the kernel's: the one a timer signal carries in `si_timerid`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ThreadTimer(i32);

impl ThreadTimer {
    /// Creates a timer on `tid`'s CPU clock that sends `signal` to `tid` with `value` as
    /// `si_value`. `SIGEV_THREAD_ID`: the signal lands on the thread that burned the CPU, so the
    /// handler only ever reads its own stack.
    pub fn create(tid: i32, signal: i32, value: u64) -> io::Result<ThreadTimer> {
        let clock = thread_cpu_clock(tid);
        // SAFETY: sigevent is plain data; all-zero is a valid start.
        let mut sev: libc::sigevent = unsafe { MaybeUninit::zeroed().assume_init() };
        sev.sigev_notify = libc::SIGEV_THREAD_ID;
        sev.sigev_signo = signal;
        sev.sigev_value = libc::sigval {
            sival_ptr: value as usize as *mut c_void,
        };
        sev.sigev_notify_thread_id = tid;
        let mut id: libc::c_int = -1;
        // SAFETY: valid clock, kernel-layout sigevent and out-pointer for the kernel timer id.
        let rc = unsafe {
            libc::syscall(
                libc::SYS_timer_create,
                clock,
                &mut sev as *mut libc::sigevent,
                &mut id as *mut libc::c_int,
            )
        };
        if rc != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(ThreadTimer(id))
    }

    /// The kernel's id of the timer (`si_timerid` of its signals).
    pub fn id(&self) -> i32 {
        self.0
    }

    /// Arms the timer to fire every `interval_ns` of the thread's CPU time (0 disarms).
    pub fn arm(&self, interval_ns: u64) -> io::Result<()> {
        let ts = libc::timespec {
            tv_sec: (interval_ns / 1_000_000_000) as libc::time_t,
            tv_nsec: (interval_ns % 1_000_000_000) as libc::c_long,
        };
        let spec = libc::itimerspec {
            it_interval: ts,
            it_value: ts,
        };
        // SAFETY: a timer we created and have not deleted; valid itimerspec.
        let rc = unsafe {
            libc::syscall(
                libc::SYS_timer_settime,
                self.0,
                0,
                &spec as *const libc::itimerspec,
                std::ptr::null_mut::<libc::itimerspec>(),
            )
        };
        if rc != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// Deletes the timer (timers outlive their thread otherwise).
    pub fn delete(self) {
        // SAFETY: a timer we created; deleting twice is prevented by taking `self`.
        unsafe { libc::syscall(libc::SYS_timer_delete, self.0) };
    }
}

/// The handler type installed with `SA_SIGINFO`.
pub type SigHandler = extern "C" fn(i32, *mut libc::siginfo_t, *mut c_void);

/// Whether `signal` has no handler yet (default disposition), so the agent may take it without
/// displacing anyone (JDK 25's own sampler needs SIGPROF).
pub fn signal_is_free(signal: i32) -> bool {
    // SAFETY: sigaction is plain data; zero is a valid start.
    let mut old: libc::sigaction = unsafe { MaybeUninit::zeroed().assume_init() };
    // SAFETY: querying only (null new action), valid out-pointer.
    let rc = unsafe { libc::sigaction(signal, std::ptr::null(), &mut old) };
    rc == 0 && old.sa_sigaction == libc::SIG_DFL
}

/// The first free real-time signal, starting at SIGRTMIN+4 (glibc and the JVM use the first few).
pub fn free_realtime_signal() -> Option<i32> {
    (libc::SIGRTMIN() + 4..=libc::SIGRTMAX()).find(|&s| signal_is_free(s))
}

/// Installs `handler` for `signal` for the life of the process (never restored: a pending
/// signal after restoring SIG_DFL would kill the JVM). `SA_RESTART` keeps interrupted syscalls
/// going; no `SA_NODEFER`, so the handler never nests on one thread.
pub fn install_handler(signal: i32, handler: SigHandler) -> io::Result<()> {
    // SAFETY: sigaction is plain data; zero is a valid start.
    let mut action: libc::sigaction = unsafe { MaybeUninit::zeroed().assume_init() };
    action.sa_sigaction = handler as usize;
    action.sa_flags = libc::SA_SIGINFO | libc::SA_RESTART;
    // SAFETY: valid signal set pointer.
    unsafe { libc::sigemptyset(&mut action.sa_mask) };
    // SAFETY: valid action; the handler is an `extern "C"` fn of the SA_SIGINFO shape.
    if unsafe { libc::sigaction(signal, &action, std::ptr::null_mut()) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// The calling thread's stack as `[low, high)`, from `pthread_getattr_np` (not signal-safe:
/// call it on the thread itself, outside the handler).
pub fn current_stack_bounds() -> Option<(u64, u64)> {
    // SAFETY: pthread_attr_t is plain data, initialized by pthread_getattr_np.
    let mut attr: libc::pthread_attr_t = unsafe { MaybeUninit::zeroed().assume_init() };
    // SAFETY: valid thread and attr.
    if unsafe { libc::pthread_getattr_np(libc::pthread_self(), &mut attr) } != 0 {
        return None;
    }
    let mut addr: *mut c_void = std::ptr::null_mut();
    let mut size: libc::size_t = 0;
    // SAFETY: attr was initialized above; valid out-pointers.
    let rc = unsafe { libc::pthread_attr_getstack(&attr, &mut addr, &mut size) };
    // SAFETY: attr was initialized above and is destroyed once.
    unsafe { libc::pthread_attr_destroy(&mut attr) };
    (rc == 0).then(|| (addr as u64, addr as u64 + size as u64))
}

/// `dlpi_adds + dlpi_subs` of the dynamic loader: changes whenever a library is loaded or
/// unloaded, so the code map is re-read only then.
pub fn loaded_objects_generation() -> u64 {
    unsafe extern "C" fn first(
        info: *mut libc::dl_phdr_info,
        _size: libc::size_t,
        data: *mut c_void,
    ) -> libc::c_int {
        // SAFETY: dl_iterate_phdr passes a valid info for the duration of the callback, and
        // `data` is the `u64` passed below.
        unsafe { *data.cast::<u64>() = (*info).dlpi_adds.wrapping_add((*info).dlpi_subs) };
        1 // stop after the first object: the counters are the same in every entry
    }
    let mut generation = 0u64;
    // SAFETY: `first` matches the callback type and only writes through `data`, which points at
    // a live u64 for the whole call.
    unsafe { libc::dl_iterate_phdr(Some(first), (&mut generation as *mut u64).cast()) };
    generation
}

/// Whether the kernel task `tid` of this process still exists (`/proc/self/task/TID`). Once it
/// is gone, no signal handler can run on it and no signal can be delivered to it.
pub fn thread_exists(tid: i32) -> bool {
    std::path::Path::new(&format!("/proc/self/task/{tid}")).exists()
}

/// Copies `buf.len()` bytes of this process's memory at `address` into `buf` with
/// `process_vm_readv`: an address that is not mapped readable (a library unloaded meanwhile)
/// is an error, never a fault. Not for the signal handler (it is a system call that may take
/// the mm's lock).
pub fn read_own_memory(address: u64, buf: &mut [u8]) -> io::Result<()> {
    let mut done = 0usize;
    while done < buf.len() {
        let rest = &mut buf[done..];
        let local = libc::iovec {
            iov_base: rest.as_mut_ptr().cast(),
            iov_len: rest.len(),
        };
        let remote = libc::iovec {
            iov_base: (address.wrapping_add(done as u64)) as *mut c_void,
            iov_len: rest.len(),
        };
        // SAFETY: `local` describes `rest`, writable for its length; the remote range is only
        // read by the kernel, which checks it against this process's mappings.
        let n = unsafe { libc::process_vm_readv(libc::getpid(), &local, 1, &remote, 1, 0) };
        match n {
            n if n > 0 => done += n as usize,
            0 => return Err(io::Error::from(io::ErrorKind::UnexpectedEof)),
            _ => {
                let e = io::Error::last_os_error();
                if e.kind() != io::ErrorKind::Interrupted {
                    return Err(e);
                }
            }
        }
    }
    Ok(())
}

/// Whether the object already loaded from `path` exports `symbol`: `dlopen` with
/// `RTLD_NOLOAD`, which loads nothing (false if no object of that name is loaded).
pub fn loaded_object_exports(path: &str, symbol: &std::ffi::CStr) -> bool {
    let Ok(path) = std::ffi::CString::new(path) else {
        return false;
    };
    // SAFETY: RTLD_NOLOAD returns a handle only to an object already loaded (nothing is
    // mapped, no constructor runs); a NUL-terminated path.
    let handle = unsafe { libc::dlopen(path.as_ptr(), libc::RTLD_LAZY | libc::RTLD_NOLOAD) };
    if handle.is_null() {
        return false;
    }
    // SAFETY: a live handle and a NUL-terminated name.
    let found = !unsafe { libc::dlsym(handle, symbol.as_ptr()) }.is_null();
    // SAFETY: the handle dlopen gave above, released once (it took one reference).
    unsafe { libc::dlclose(handle) };
    found
}
