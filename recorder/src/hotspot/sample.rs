//! The Java step of a sample: the VM walk ([`super::javawalk`]) of the interrupted thread and,
//! where it does not reach the end of the thread's Java stack, AsyncGetCallTrace; which of the
//! two a record takes.
//!
//! With `jstack=vm` (the default) AsyncGetCallTrace is called only where the VM walk is not
//! whole, and on one sample in [`AGREEMENT_PERIOD`] to count how often the two walks name the
//! same frames (the check of the VM walk, in the summary). A stack the VM walk could not finish
//! is written as truncated unless AsyncGetCallTrace walked further; AsyncGetCallTrace says
//! nothing of where it stopped, so at a boundary it does not cross (a virtual thread's frozen
//! frames) the VM walk's frames are written, truncated.

#![deny(
    clippy::indexing_slicing,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::arithmetic_side_effects
)]

use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};

use super::agct::{self, CallFrame, NOT_CALLED, NOT_ON_THREAD_STACK};
use super::javawalk::{kind, Interrupted, JavaFrame};
use super::{continuation, java_layout, java_thread, vthread};
use crate::jvmti::JniEnv;
use crate::unwind::{jvm_code, Memory, NativeFrames, Stop};

/// Whether the Java frames are also walked through HotSpot's frame descriptions (`jstack=vm`,
/// `agct-vm`).
pub static USE_VM_WALK: AtomicBool = AtomicBool::new(true);
/// Whether the VM walk goes first and AsyncGetCallTrace only where it is not whole
/// (`jstack=vm`); else AsyncGetCallTrace goes first (`jstack=agct-vm`).
pub static PREFER_VM_WALK: AtomicBool = AtomicBool::new(true);

/// With `jstack=vm`, one sample in this many whose VM walk is whole also calls
/// AsyncGetCallTrace, to count how often the two agree.
pub const AGREEMENT_PERIOD: u32 = 32;

/// Samples whose VM walk was whole (for [`AGREEMENT_PERIOD`]).
static WHOLE_WALKS: AtomicU32 = AtomicU32::new(0);

/// The interrupted thread, as the Java step sees it.
pub struct Thread<'a, M: Memory, N: NativeFrames> {
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
    /// The native walk, for the native frames between Java frames.
    pub native: &'a N,
}

/// Where the Java step writes.
pub struct Out<'a> {
    /// AsyncGetCallTrace's frames.
    pub agct: &'a mut [CallFrame],
    /// The kinds of AsyncGetCallTrace's frames, where the VM walk agrees.
    pub kinds: &'a mut [u8],
    /// The VM walk's frames (native frames between Java frames among them).
    pub vm: &'a mut [JavaFrame],
}

/// What the Java step gave.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JavaStack {
    /// AsyncGetCallTrace's result: a frame count, or its negative error code
    /// ([`NOT_ON_THREAD_STACK`], [`NOT_CALLED`] when it was not called).
    pub agct_code: i32,
    /// Frames to write.
    pub count: usize,
    /// Whether they are the VM walk's frames (else AsyncGetCallTrace's).
    pub from_vm: bool,
    /// Whether the frames stop before the end of the thread's Java stack (the VM walk's were
    /// cut; AsyncGetCallTrace's of a thread running a continuation may lack its frozen frames).
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
pub unsafe fn take<M: Memory, N: NativeFrames>(
    thread: &Thread<'_, M, N>,
    native_stop: Stop,
    out: Out<'_>,
) -> JavaStack {
    let java_thread = java_thread(thread.env as u64);
    // The virtual thread the carrier runs, if any (fault-safe reads of its JavaThread): only
    // while its continuation runs, as the JDK decides (mounting and unmounting are the
    // carrier's).
    let vthread_id = java_thread
        .filter(|&t| continuation::runs_virtual_thread(t) != Some(false))
        .and_then(vthread::mounted_id)
        .map_or(0, |id| id as u64);
    let vm_first = PREFER_VM_WALK.load(Ordering::Relaxed);
    let walk = match (thread.stack, java_layout(), java_thread) {
        (Some(stack), Some(layout), Some(java_thread)) if USE_VM_WALK.load(Ordering::Relaxed) => {
            Some(layout.walk_java(
                java_thread,
                thread.at,
                jvm_code::contains,
                stack,
                thread.native,
                out.vm,
            ))
        }
        _ => None,
    };
    // A thread with no Java frame at all: the native walk reached its first frame, and the
    // VM walk found no last Java frame (it runs native code outside any Java call).
    let whole = walk.filter(|w| w.complete && (w.count > 0 || native_stop == Stop::EndOfStack));
    let agct_wanted = match whole {
        Some(_) if vm_first => WHOLE_WALKS.fetch_add(1, Ordering::Relaxed) % AGREEMENT_PERIOD == 0,
        _ => true,
    };
    let agct_code = match (thread.stack, agct_wanted) {
        // SAFETY: on the interrupted thread (the caller's contract), with its JNIEnv, after
        // ClassLoad was enabled and methods primed, with enough stack left. `thread.uc` is the
        // kernel's ucontext of this handler or, from the native walk, that of a signal frame
        // on this thread's stack whose handler has not run yet: the thread's state is the one
        // it describes, and its whole `uc_mcontext` lies within the stack bounds (checked),
        // which stay mapped and unchanged while this handler runs above it.
        (Some(_), true) => unsafe { agct::call(thread.env, out.agct, thread.uc) },
        (Some(_), false) => NOT_CALLED,
        (None, _) => NOT_ON_THREAD_STACK,
    };
    let agct_count = usize::try_from(agct_code).unwrap_or(0);
    let vm_java = walk.map_or(0, |w| java_frames(out.vm, w.count));
    let compared = match walk {
        Some(w) if agct_count > 0 => Some(agree(out.agct, out.kinds, out.vm, w.count, agct_count)),
        _ => None,
    };
    let use_vm = match walk {
        None => false,
        Some(_) if whole.is_some() => vm_first || agct_count == 0,
        // Not whole: AsyncGetCallTrace's frames where they go further, but not past a boundary
        // the VM walk could not cross (at a virtual thread's frozen frames AsyncGetCallTrace
        // skips them without a sign); the VM walk's, truncated, otherwise.
        Some(w) if vm_first => {
            w.count > 0
                && (agct_count == 0
                    || w.cut_at_boundary
                    || vthread_id != 0
                    || vm_java >= agct_count)
        }
        // `jstack=agct-vm`: the VM walk where AsyncGetCallTrace failed.
        Some(w) => w.count > 0 && agct_count == 0,
    };
    // AsyncGetCallTrace skips a virtual thread's frozen frames without a sign: its stack of
    // a thread running a continuation is not known to be whole.
    let in_continuation = java_thread.and_then(continuation::runs_virtual_thread) == Some(true);
    JavaStack {
        agct_code,
        count: match walk {
            Some(w) if use_vm => w.count,
            _ => agct_count,
        },
        from_vm: use_vm,
        cut: if use_vm {
            whole.is_none()
        } else {
            agct_count > 0 && in_continuation
        },
        vthread_id,
        compared,
    }
}

/// The Java frames among the first `count` frames of the VM walk (not the native frames
/// between them).
fn java_frames(vm: &[JavaFrame], count: usize) -> usize {
    vm.iter()
        .take(count)
        .filter(|f| !matches!(f.kind, kind::NATIVE_PC | kind::NATIVE_GAP))
        .count()
}

/// Gives AsyncGetCallTrace's frames the kinds of the VM walk's frames where both name the same
/// methods, from the top (`kind::UNKNOWN` after the first difference); whether they agree on
/// every frame.
fn agree(
    agct: &[CallFrame],
    kinds: &mut [u8],
    vm: &[JavaFrame],
    vm_count: usize,
    agct_count: usize,
) -> bool {
    let mut java = vm
        .iter()
        .take(vm_count)
        .filter(|f| !matches!(f.kind, kind::NATIVE_PC | kind::NATIVE_GAP));
    let mut same = 0usize;
    let mut differs = false;
    for (k, a) in kinds.iter_mut().zip(agct.iter()).take(agct_count) {
        *k = kind::UNKNOWN;
        if differs {
            continue;
        }
        match java.next() {
            Some(v) if v.method_id == a.method_id as u64 => {
                *k = v.kind;
                same = same.saturating_add(1);
            }
            _ => differs = true,
        }
    }
    same == agct_count && java.next().is_none()
}
