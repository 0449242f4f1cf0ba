//! AsyncGetCallTrace: HotSpot's signal-safe Java stack walker, resolved with `dlsym`.

use std::ffi::c_void;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::jvmti::{JMethodId, JniEnv};

/// One frame as AsyncGetCallTrace returns it: `lineno` is a bytecode index (-3 = native method).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct CallFrame {
    /// Bytecode index, or a negative marker.
    pub lineno: i32,
    /// The method.
    pub method_id: JMethodId,
}

#[repr(C)]
struct CallTrace {
    env_id: JniEnv,
    num_frames: i32,
    frames: *mut CallFrame,
}

type AgctFn = unsafe extern "C" fn(*mut CallTrace, i32, *mut c_void);

static AGCT: AtomicUsize = AtomicUsize::new(0);

/// Looks AsyncGetCallTrace up in the loaded libjvm; false if it is not exported.
pub fn resolve() -> bool {
    // SAFETY: dlsym with RTLD_DEFAULT and a NUL-terminated name; the launcher loads libjvm with
    // RTLD_GLOBAL, so its exports are visible.
    let p = unsafe { libc::dlsym(libc::RTLD_DEFAULT, c"AsyncGetCallTrace".as_ptr()) };
    AGCT.store(p as usize, Ordering::Release);
    !p.is_null()
}

/// Error code when AsyncGetCallTrace is missing.
pub const NOT_AVAILABLE: i32 = -100;

/// The code of a sample whose Java stack was not attempted: the interrupted code runs on a
/// stack that is not the thread's own (an alternate signal stack, a fiber).
pub const NOT_ON_THREAD_STACK: i32 = -101;

/// The code of a sample whose Java stack AsyncGetCallTrace was not asked for: the VM walk was
/// whole (`jstack=vm`; it is asked for one such sample in
/// [`crate::hotspot::sample::AGREEMENT_PERIOD`]).
pub const NOT_CALLED: i32 = -102;

/// The code of a sample of a thread that is not a Java thread (the JVM's own, or a native
/// thread: `threads=all`): it has no Java stack, and none was looked for.
pub const NOT_JAVA_THREAD: i32 = -103;

/// Whether `code` says AsyncGetCallTrace gave no frames when it was asked (an error it
/// returned, or [`NOT_AVAILABLE`]); not the codes of samples it was not asked for.
pub fn failed(code: i32) -> bool {
    code < 0 && code != NOT_ON_THREAD_STACK && code != NOT_CALLED && code != NOT_JAVA_THREAD
}

/// Walks the Java stack of the interrupted thread into `frames`; returns the frame count, or
/// AsyncGetCallTrace's negative error code.
///
/// # Safety
/// Must be called in a signal handler on the thread interrupted at `ucontext`, with `env` that
/// thread's JNIEnv, ClassLoad events enabled and jmethodIDs primed (AsyncGetCallTrace's contract).
pub unsafe fn call(env: JniEnv, frames: &mut [CallFrame], ucontext: *mut c_void) -> i32 {
    let f = AGCT.load(Ordering::Acquire);
    if f == 0 || env.is_null() {
        return NOT_AVAILABLE;
    }
    // SAFETY: a non-zero value was stored by `resolve` from dlsym of AsyncGetCallTrace, whose
    // signature is void(ASGCT_CallTrace*, jint, void*).
    let agct: AgctFn = unsafe { std::mem::transmute::<usize, AgctFn>(f) };
    let mut trace = CallTrace {
        env_id: env,
        num_frames: 0,
        frames: frames.as_mut_ptr(),
    };
    let depth = i32::try_from(frames.len()).unwrap_or(i32::MAX);
    // SAFETY: the caller upholds AsyncGetCallTrace's contract; `frames` has room for `depth`.
    unsafe { agct(&mut trace, depth, ucontext) };
    trace.num_frames
}
