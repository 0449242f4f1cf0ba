//! jfr-native's JVMTI agent (`libjfrnative.so`): samples every Java thread by its own CPU time
//! and records, for each sample, the native frames above the first Java frame (unwound from
//! call-frame information, or frame pointers) and the Java frames (AsyncGetCallTrace) into a JFR file (`jdk.CPUTimeSample` with a
//! `nativeStackTrace`, JDK-8373791).
//!
//! `java -agentpath:libjfrnative.so=file=out.jfr,interval=10ms ...`; options in [`options`].
//!
//! A sample's way: a per-thread perf `task-clock` counter ([`perf`], `engine=perf`, the default)
//! or CPU timer (`timer_create` on the thread's CPU clock, `SIGEV_THREAD_ID`, carrying the
//! thread's slot index; `engine=timer`, or where perf is refused: [`engine`]) → signal on that
//! thread → `signal::on_sample`: checks that the signal is the agent's own ([`slots`]) and that
//! enough stack is left ([`stack`]), walks the native frames within the thread's stack bounds
//! ([`unwind`]; tables kept current by `unwind::watcher`; reads that fault are recovered by
//! [`fault`]), calls AsyncGetCallTrace ([`agct`]), writes one record into a shared ring
//! ([`buffers`], [`ring`]) → the writer thread (`drain`) resolves methods and writes events
//! through `jfr-writer`, rotating chunks. Threads that ran before an attach are found through
//! HotSpot's own structure descriptions ([`hotspot`]).
//!
//! `unsafe` lives in `jvmti/`, `os`, `perf` (the counters), `ucontext`, `fault` (the recoverable read and the fault
//! hook), `slots` (the slot table), `buffers` (buffers shared by handlers), `hotspot` (reading
//! the JVM's tables), `agct`, `codemap` (publishing and freeing snapshots), `unwind::tables`
//! (mapping a library, copying the vDSO) and the entry points below.

pub mod agct;
mod agent;
pub mod buffers;
pub mod codemap;
pub(crate) mod drain;
pub mod engine;
pub mod fault;
pub mod hotspot;
pub(crate) mod jvmti;
pub(crate) mod library_events;
pub(crate) mod methods;
pub mod options;
pub mod os;
pub mod output;
pub mod perf;
pub mod ring;
pub mod signal;
pub mod slots;
pub mod stack;
pub mod stats;
pub mod status;
pub mod ucontext;
pub mod unwind;

use std::ffi::{c_char, c_void, CStr};

/// Runs a JVM-facing entry point. A bug in the recorder must never take the JVM down: a panic
/// is caught, sampling is disabled, and `fallback` is returned.
pub(crate) fn ffi_guard<T>(what: &'static str, fallback: T, f: impl FnOnce() -> T) -> T {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).unwrap_or_else(|_| {
        agent::disable(what);
        fallback
    })
}

fn options_text(options: *const c_char) -> String {
    if options.is_null() {
        return String::new();
    }
    // SAFETY: the JVM passes a NUL-terminated option string (or null, handled above).
    unsafe { CStr::from_ptr(options) }
        .to_string_lossy()
        .into_owned()
}

fn load(vm: *mut c_void, options: *const c_char, live: bool) -> i32 {
    ffi_guard("Agent_OnLoad", -1, || {
        match agent::load(jvmti::Vm(vm.cast()), &options_text(options), live) {
            Ok(()) => 0,
            Err(message) => {
                eprintln!("{message}");
                -1
            }
        }
    })
}

/// Called by the JVM for `-agentpath:libjfrnative.so=OPTIONS`.
///
/// # Safety
/// `vm` must be the JavaVM and `options` null or a NUL-terminated string, as the JVM passes them.
#[no_mangle]
pub unsafe extern "system" fn Agent_OnLoad(
    vm: *mut c_void,
    options: *const c_char,
    _reserved: *mut c_void,
) -> i32 {
    load(vm, options, false)
}

/// Called by the JVM for `jcmd PID JVMTI.agent_load libjfrnative.so OPTIONS`.
///
/// # Safety
/// As for [`Agent_OnLoad`].
#[no_mangle]
pub unsafe extern "system" fn Agent_OnAttach(
    vm: *mut c_void,
    options: *const c_char,
    _reserved: *mut c_void,
) -> i32 {
    load(vm, options, true)
}

/// Called when the JVM unloads the agent; the file was finished at VMDeath.
#[no_mangle]
pub extern "system" fn Agent_OnUnload(_vm: *mut c_void) {}
