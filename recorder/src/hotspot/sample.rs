//! The Java step of a sample: AsyncGetCallTrace and the VM walk ([`super::javawalk`]) of the
//! interrupted thread, and which of the two a record takes.

#![deny(
    clippy::indexing_slicing,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::arithmetic_side_effects
)]

use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, Ordering};

use super::agct::{self, CallFrame, NOT_ON_THREAD_STACK};
use super::javawalk::{kind, Interrupted, JavaFrame};
use super::{java_layout, java_thread, vthread};
use crate::jvmti::JniEnv;
use crate::unwind::{jvm_code, Memory, Stop};

/// Whether the Java frames are also walked through HotSpot's frame descriptions (`jstack=vm`,
/// `agct-vm`).
pub static USE_VM_WALK: AtomicBool = AtomicBool::new(true);
/// Whether a VM walk that reaches the end of the stack is written rather than AsyncGetCallTrace's
/// frames (`jstack=vm`).
pub static PREFER_VM_WALK: AtomicBool = AtomicBool::new(true);

/// The interrupted thread, as the Java step sees it.
pub struct Thread<'a, M: Memory> {
    /// Its JNIEnv.
    pub env: JniEnv,
    /// Its stack from the sp the walk starts at, if the sample runs on it; `None` for another
    /// stack (a fiber, an alternate signal stack), whose memory is not known to be readable.
    pub stack: Option<&'a M>,
    /// The `ucontext_t` the sample is of: the handler's own, or that of a signal whose handler
    /// our signal interrupted at its entry (see [`crate::unwind::walk_sample`]).
    pub uc: *mut c_void,
    /// The registers in `uc`, and where the native walk reached Java code.
    pub at: Interrupted,
}

/// Where the Java step writes.
pub struct Out<'a> {
    /// AsyncGetCallTrace's frames.
    pub agct: &'a mut [CallFrame],
    /// The kinds of AsyncGetCallTrace's frames, where the VM walk agrees.
    pub kinds: &'a mut [u8],
    /// The VM walk's frames.
    pub vm: &'a mut [JavaFrame],
}

/// What the Java step gave.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JavaStack {
    /// AsyncGetCallTrace's result: a frame count, or its negative error code
    /// ([`NOT_ON_THREAD_STACK`] when it was not called).
    pub agct_code: i32,
    /// Frames to write.
    pub count: usize,
    /// Whether they are the VM walk's frames (else AsyncGetCallTrace's).
    pub from_vm: bool,
    /// Whether the VM walk stopped before the end of the thread's Java stack.
    pub cut: bool,
    /// The mounted virtual thread's id (0: none).
    pub vthread_id: u64,
    /// Whether both walks ran, and if so whether they agreed frame for frame.
    pub compared: Option<bool>,
}

/// Takes the Java frames of the interrupted `thread`, whose native walk stopped for
/// `native_stop`.
///
/// # Safety
/// In the signal handler, on the interrupted thread, after the agent primed
/// AsyncGetCallTrace (ClassLoad enabled, methods primed) and checked that enough stack is
/// left; `thread.uc` is the kernel's ucontext of this handler or one the native walk found on
/// this thread's stack.
pub unsafe fn take<M: Memory>(
    thread: &Thread<'_, M>,
    native_stop: Stop,
    out: Out<'_>,
) -> JavaStack {
    let agct_code = match thread.stack {
        // SAFETY: on the interrupted thread (the caller's contract), with its JNIEnv, after
        // ClassLoad was enabled and methods primed, with enough stack left. `thread.uc` is the
        // kernel's ucontext of this handler or, from the native walk, that of a signal frame
        // on this thread's stack whose handler has not run yet: the thread's state is the one
        // it describes, and its whole `uc_mcontext` lies within the stack bounds (checked),
        // which stay mapped and unchanged while this handler runs above it.
        Some(_) => unsafe { agct::call(thread.env, out.agct, thread.uc) },
        None => NOT_ON_THREAD_STACK,
    };
    let mut java_count = usize::try_from(agct_code).unwrap_or(0);
    for k in out.kinds.iter_mut().take(java_count) {
        *k = kind::UNKNOWN;
    }
    let mut result = JavaStack {
        agct_code,
        count: java_count,
        from_vm: false,
        cut: false,
        vthread_id: 0,
        compared: None,
    };
    // The virtual thread the carrier runs, if any (fault-safe reads of its JavaThread).
    let java_thread = java_thread(thread.env as u64);
    result.vthread_id = java_thread
        .and_then(vthread::mounted_id)
        .map_or(0, |id| id as u64);
    let (Some(stack), Some(layout), Some(java_thread), true) = (
        thread.stack,
        java_layout(),
        java_thread,
        USE_VM_WALK.load(Ordering::Relaxed),
    ) else {
        return result;
    };
    let walk = layout.walk_java(java_thread, thread.at, jvm_code::contains, stack, out.vm);
    if java_count > 0 {
        // Types where both walks name the same methods, frame by frame from the top.
        let pairs = out.agct.iter().zip(out.vm.iter().take(walk.count));
        let mut same = 0usize;
        for (k, (a, v)) in out.kinds.iter_mut().zip(pairs).take(java_count) {
            if a.method_id as u64 != v.method_id {
                break;
            }
            *k = v.kind;
            same = same.saturating_add(1);
        }
        // How often the two walks agree on every frame: the check of the VM walk.
        result.compared = Some(same == java_count && walk.count == java_count);
        // A virtual thread's walk cut short stopped where its frames are still frozen in
        // the heap (Loom's return barrier), which AsyncGetCallTrace skips without a sign:
        // the VM walk's frames are written, as truncated.
        let cut_vthread = result.vthread_id != 0 && !walk.complete;
        if walk.count > 0
            && (walk.complete || cut_vthread)
            && PREFER_VM_WALK.load(Ordering::Relaxed)
        {
            java_count = walk.count;
            result.from_vm = true;
            result.cut = !walk.complete;
        }
    } else if walk.count > 0 || (walk.complete && native_stop == Stop::EndOfStack) {
        // Frames AsyncGetCallTrace could not walk; or none at all: the native walk reached
        // the thread's first frame without passing Java code, and the thread has no last
        // Java frame (it runs native code outside any Java call).
        java_count = walk.count;
        result.from_vm = true;
        result.cut = !walk.complete;
    }
    result.count = java_count;
    result
}
