//! Reads that cannot crash: a fault in one of the agent's own memory reads ends that read,
//! never the JVM.
//!
//! Bounds checks cannot see every unreadable address: a page of a thread's own stack that code
//! protected with `mprotect`, a structure of a thread that has just exited. HotSpot treats a
//! fault it does not recognise in a thread's stack as stack growth and retries the instruction
//! forever, or as a crash. So every read of the handler's walk, and of HotSpot's structures,
//! goes through [`read_u64`]: one load instruction at a known address. The agent's `SIGSEGV`
//! and `SIGBUS` hook ([`install`]) checks the faulting pc: if it is that instruction, execution
//! resumes at a landing that returns "unreadable"; any other fault goes on to the handler that
//! was installed before (the JVM's), with the same arguments, as if the hook were not there.
//!
//! AsyncGetCallTrace is not wrapped: HotSpot's own walkers read through its `SafeFetch`, whose
//! faults its signal handler must see, and a fault elsewhere in the JVM is the JVM's to report.

use std::ffi::c_void;
use std::mem::MaybeUninit;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;

// The load itself is assembly, one per architecture (`crate::arch`): `jfrnative_safe_read`
// with its labels `jfrnative_safe_read_load` (the load) and `jfrnative_safe_read_fault`.

/// What `jfrnative_safe_read` returns (rax:rdx on x86_64, x0:x1 on aarch64).
#[repr(C)]
struct SafeRead {
    value: u64,
    read: u64,
}

extern "C" {
    fn jfrnative_safe_read(addr: u64) -> SafeRead;
    static jfrnative_safe_read_load: u8;
    static jfrnative_safe_read_fault: u8;
}

/// Faults recovered by the hook since the process started.
pub static RECOVERED: AtomicU64 = AtomicU64::new(0);

/// Whether the hook is installed: only then may [`read_u64`] touch an address that can fault.
static INSTALLED: AtomicBool = AtomicBool::new(false);

/// The actions the hook replaced, by signal (`SIGSEGV`, `SIGBUS`); written once, before the
/// hook is installed, and only read afterwards.
static PREVIOUS: [PreviousAction; 2] = [PreviousAction::new(), PreviousAction::new()];

struct PreviousAction {
    set: AtomicBool,
    action: std::cell::UnsafeCell<MaybeUninit<libc::sigaction>>,
}

// SAFETY: `action` is written once under `INSTALL` before `set` is released, and only read
// after `set` is acquired.
unsafe impl Sync for PreviousAction {}

impl PreviousAction {
    const fn new() -> PreviousAction {
        PreviousAction {
            set: AtomicBool::new(false),
            action: std::cell::UnsafeCell::new(MaybeUninit::uninit()),
        }
    }

    fn get(&self) -> Option<&libc::sigaction> {
        if !self.set.load(Ordering::Acquire) {
            return None;
        }
        // SAFETY: `set` is released only after `action` was fully written, and it is never
        // written again.
        Some(unsafe { (*self.action.get()).assume_init_ref() })
    }
}

static INSTALL: Mutex<()> = Mutex::new(());

/// The 8-byte word at `addr`, or `None` if reading it faulted. Before [`install`] succeeded
/// this refuses to read at all (nothing could catch the fault).
#[inline]
pub fn read_u64(addr: u64) -> Option<u64> {
    if !INSTALLED.load(Ordering::Relaxed) || addr % 8 != 0 {
        return None;
    }
    // SAFETY: `jfrnative_safe_read` performs one load from `addr`; if the load faults, the
    // installed hook resumes at `jfrnative_safe_read_fault`, which returns `read == 0`. The
    // function touches no memory other than `addr` and follows the C calling convention.
    let r = unsafe { jfrnative_safe_read(addr) };
    (r.read == 1).then_some(r.value)
}

/// The address of the load instruction that may fault (a label of the assembly above).
fn load_pc() -> u64 {
    std::ptr::addr_of!(jfrnative_safe_read_load) as u64
}

/// Where a faulted load resumes.
fn fault_pc() -> u64 {
    std::ptr::addr_of!(jfrnative_safe_read_fault) as u64
}

/// The hook for `SIGSEGV` and `SIGBUS`.
extern "C" fn on_fault(signal: i32, info: *mut libc::siginfo_t, uc: *mut c_void) {
    if !uc.is_null() {
        // SAFETY: `uc` is the kernel's ucontext for this SA_SIGINFO handler, writable.
        if unsafe { crate::arch::resume_at(uc, load_pc(), fault_pc()) } {
            RECOVERED.fetch_add(1, Ordering::Relaxed);
            return;
        }
    }
    let index = usize::from(signal != libc::SIGSEGV);
    let Some(previous) = PREVIOUS.get(index).and_then(PreviousAction::get) else {
        return;
    };
    chain(signal, info, uc, previous);
}

/// Hands a fault that is not ours to the action the hook replaced.
fn chain(signal: i32, info: *mut libc::siginfo_t, uc: *mut c_void, previous: &libc::sigaction) {
    let handler = previous.sa_sigaction;
    if handler == libc::SIG_DFL || handler == libc::SIG_IGN {
        // The default action must happen: put it back; the faulting instruction runs again on
        // return and the kernel applies it.
        // SAFETY: restoring a sigaction obtained from the kernel.
        unsafe { libc::sigaction(signal, previous, std::ptr::null_mut()) };
        return;
    }
    if previous.sa_flags & libc::SA_SIGINFO != 0 {
        // SAFETY: the previous action was installed with SA_SIGINFO, so its handler has this
        // shape; it gets exactly the arguments the kernel gave us.
        let f: extern "C" fn(i32, *mut libc::siginfo_t, *mut c_void) =
            unsafe { std::mem::transmute(handler) };
        f(signal, info, uc);
    } else {
        // SAFETY: a plain handler takes the signal number only.
        let f: extern "C" fn(i32) = unsafe { std::mem::transmute(handler) };
        f(signal);
    }
}

const SIGNALS: [i32; 2] = [libc::SIGSEGV, libc::SIGBUS];

/// Installs the hook for `SIGSEGV` and `SIGBUS` in front of the JVM's handlers (idempotent).
/// Call it after the JVM installed its own (at VM init or on attach). On failure nothing is
/// left installed.
pub fn install() -> std::io::Result<()> {
    let _guard = INSTALL.lock().unwrap_or_else(|e| e.into_inner());
    if INSTALLED.load(Ordering::Acquire) {
        return Ok(());
    }
    for (slot, signal) in PREVIOUS.iter().zip(SIGNALS) {
        // SAFETY: sigaction is plain data; zero is a valid start.
        let mut old: libc::sigaction = unsafe { MaybeUninit::zeroed().assume_init() };
        // SAFETY: querying only.
        if unsafe { libc::sigaction(signal, std::ptr::null(), &mut old) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
        if old.sa_sigaction == on_fault as *const () as usize {
            continue; // installed by an earlier call that was undone halfway: keep its record
        }
        // SAFETY: written before `set` is released and while no hook of ours is installed
        // for this signal, so no reader can see it half-written (see `PreviousAction`).
        unsafe { (*slot.action.get()).write(old) };
        slot.set.store(true, Ordering::Release);
    }
    for (done, (slot, signal)) in PREVIOUS.iter().zip(SIGNALS).enumerate() {
        let Some(old) = slot.get() else {
            continue;
        };
        let mut action = *old;
        action.sa_sigaction = on_fault as *const () as usize;
        // The JVM's flags and mask (it blocks most signals in its handler), as SA_SIGINFO.
        action.sa_flags = (old.sa_flags | libc::SA_SIGINFO) & !libc::SA_RESETHAND;
        // SAFETY: a valid action whose handler has the SA_SIGINFO shape.
        if unsafe { libc::sigaction(signal, &action, std::ptr::null_mut()) } != 0 {
            let error = std::io::Error::last_os_error();
            restore(&SIGNALS[..done]);
            return Err(error);
        }
    }
    INSTALLED.store(true, Ordering::Release);
    Ok(())
}

/// Puts back the actions the hook replaced for `signals`.
fn restore(signals: &[i32]) {
    for (slot, signal) in PREVIOUS.iter().zip(SIGNALS) {
        if let (true, Some(old)) = (signals.contains(&signal), slot.get()) {
            // SAFETY: restoring an action obtained from the kernel.
            unsafe { libc::sigaction(signal, old, std::ptr::null_mut()) };
        }
    }
}

/// Removes the hook again (a start that failed after installing it: the library may be
/// unloaded next, and no handler may point into it).
pub fn uninstall() {
    let _guard = INSTALL.lock().unwrap_or_else(|e| e.into_inner());
    if INSTALLED.swap(false, Ordering::AcqRel) {
        restore(&SIGNALS);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_readable_memory_and_recovers_from_unreadable() {
        install().unwrap();
        let word = 0x1122_3344_5566_7788u64;
        assert_eq!(read_u64(&word as *const u64 as u64), Some(word));
        assert_eq!(read_u64(8), None, "the zero page");
        // A page mapped without access: a fault the hook recovers, then a readable neighbour.
        // SAFETY: a fresh anonymous mapping, used only here and unmapped at the end.
        let page = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                8192,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        assert_ne!(page, libc::MAP_FAILED);
        // SAFETY: the first page of our own mapping.
        assert_eq!(unsafe { libc::mprotect(page, 4096, libc::PROT_NONE) }, 0);
        let before = RECOVERED.load(Ordering::Relaxed);
        assert_eq!(read_u64(page as u64), None);
        assert_eq!(read_u64(page as u64 + 4096), Some(0));
        assert!(RECOVERED.load(Ordering::Relaxed) > before);
        assert_eq!(read_u64(&word as *const u64 as u64 + 1), None, "misaligned");
        // SAFETY: unmapping the mapping made above.
        unsafe { libc::munmap(page, 8192) };
    }
}
