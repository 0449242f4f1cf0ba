//! jfr-native's JVMTI agent (`libjfrnative.so`): samples every Java thread by its own CPU time
//! and records, for each sample, the native frames above the first Java frame (unwound from
//! call-frame information, or frame pointers) and the Java frames (HotSpot's own frame
//! descriptions, AsyncGetCallTrace where they do not reach) into a JFR file
//! (`jdk.CPUTimeSample` with a `nativeStackTrace`, JDK-8373791).
//!
//! `java -agentpath:libjfrnative.so=file=out.jfr,interval=10ms ...`; options in [`options`].
//!
//! The crate is built in wings, each a folder whose `mod.rs` says what it does and what it may
//! not do; dependencies point down this list, never up:
//! - [`writer`]: the writer thread. Drains the records, resolves methods, writes events
//!   through `jfr-writer`, rotates chunks. May allocate and lock; never touches what a handler
//!   owns.
//! - [`sampling`]: the signal side. Engines that signal each thread by its CPU time, the
//!   handler (`sampling::signal::on_sample`, in named steps), slots, buffers, rings, counters.
//!   No allocation, no locks, only fault-safe reads.
//! - [`hotspot`]: HotSpot's structures and the Java walk (and AsyncGetCallTrace), read
//!   through the JVM's own descriptions.
//! - [`unwind`]: the native walk from call-frame information, its tables and the code map.
//! - At the bottom: [`arch`] (what differs between x86_64 and aarch64: registers in a
//!   ucontext, the fault-safe load, CFI register numbers), [`fault`] (reads that may fault, recovered), [`os`] (libc), `jvmti`
//!   (bindings), [`options`] (pure).
//!
//! `agent.rs` holds the lifecycle (load, VM init, thread start and end, start, stop), above
//! every wing; this file holds the JVM-facing entry points only.
//!
//! A sample's way: a per-thread perf `task-clock` counter or CPU timer signals the thread →
//! `sampling::signal::on_sample` checks the signal's source and weight, the stack's headroom,
//! walks the native frames within the thread's stack bounds, then the Java frames, and writes
//! one record into a shared ring → the writer thread turns records into events.
//!
//! `unsafe` lives in `arch` (a signal's registers, the fault-safe load), `jvmti/`, `os`,
//! `fault` (the recoverable read and the fault hook), `sampling` (`perf`'s counters,
//! `ucontext`, `slots`' table, the shared `buffers`), `hotspot` (reading the JVM's tables,
//! `agct`), `unwind` (`codemap` publishing and freeing snapshots; `tables` mapping a library,
//! copying the vDSO) and the entry points below.

mod agent;
pub mod arch;
pub mod fault;
pub mod hotspot;
pub mod java_api;
pub(crate) mod jvmti;
pub mod options;
pub mod os;
pub mod process_threads;
pub mod sampling;
mod single_copy;
#[cfg(test)]
mod test_lib;
pub mod unwind;
pub mod writer;

use std::ffi::{c_char, c_void, CStr};

use agent::ffi_guard;
pub use agent::NOT_LIVE_YET;

fn options_text(options: *const c_char) -> String {
    if options.is_null() {
        return String::new();
    }
    // SAFETY: the JVM passes a NUL-terminated option string (or null, handled above).
    unsafe { CStr::from_ptr(options) }
        .to_string_lossy()
        .into_owned()
}

fn load(vm: *mut c_void, options: *const c_char, origin: agent::Origin) -> i32 {
    ffi_guard("Agent_OnLoad", -1, || {
        match agent::load(jvmti::Vm(vm.cast()), &options_text(options), origin) {
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
    load(vm, options, agent::Origin::Startup)
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
    load(vm, options, agent::Origin::Attach)
}

/// Called when the JVM unloads the agent; the file was finished at VMDeath.
#[no_mangle]
pub extern "system" fn Agent_OnUnload(_vm: *mut c_void) {}
