//! One slot per sampled thread: its identity, its ring, the scratch buffers its signal handler
//! walks into, and its timer. Slots are allocated outside the handler and never freed: the timer
//! carries a pointer to its slot in `si_value`, and a signal may still be pending after the
//! thread ends, so the pointer must stay valid for the life of the process.
//!
//! A slot is recycled for a new thread once its thread has ended, its kernel task is gone (no
//! handler can run on it any more, no signal can be delivered to it) and its ring is drained
//! ([`FREE`]); the drain forgets the old thread's state before freeing the slot. A late signal
//! from the old timer cannot arrive: the timer is deleted and the thread it targeted is gone.

use std::cell::UnsafeCell;
use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicPtr, AtomicU64, Ordering};
use std::sync::Mutex;

use crate::agct::CallFrame;
use crate::jvmti::JniEnv;
use crate::os::ThreadTimer;
use crate::ring::Ring;

/// Words before the native pcs in a record: time, weight, packed (agct code, stop, native count).
pub const RECORD_HEADER_WORDS: usize = 3;

/// Buffers only the owning thread's signal handler touches.
pub struct Scratch {
    /// Native pcs of the current sample.
    pub pcs: Box<[u64]>,
    /// AsyncGetCallTrace output of the current sample.
    pub frames: Box<[CallFrame]>,
}

/// Who a slot belongs to, for the drain.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    /// Java thread name.
    pub name: String,
    /// Java thread id (`Thread.getId()`), 0 if unknown.
    pub java_id: i64,
}

/// A sampled thread.
pub struct Slot {
    /// Kernel thread id.
    tid: AtomicI32,
    /// The thread's JNIEnv, for AsyncGetCallTrace.
    env: AtomicPtr<*const crate::jvmti::sys::JniNativeInterface>,
    identity: Mutex<Identity>,
    /// Records from the handler to the drain thread.
    pub ring: Ring,
    /// Samples dropped because `ring` was full.
    pub dropped: AtomicU64,
    /// The thread has ended (its timer is deleted).
    pub ended: AtomicBool,
    /// The thread's CPU timer, while armed.
    pub timer: Mutex<Option<ThreadTimer>>,
    depth: usize,
    native_depth: usize,
    scratch: UnsafeCell<Scratch>,
}

// SAFETY: all fields but `scratch` are Sync; `scratch` is only accessed through
// `Slot::scratch`, whose contract restricts it to the owning thread's signal handler, which
// never runs concurrently with itself (no SA_NODEFER, one signal number).
unsafe impl Sync for Slot {}
// SAFETY: `env` is only used on the owning thread (by its handler); the rest is Send.
unsafe impl Send for Slot {}

impl Slot {
    /// A slot for the calling thread, with room for `depth` Java and `native_depth` native frames
    /// per sample and a ring of several full-size records.
    pub fn new(
        tid: i32,
        env: JniEnv,
        name: String,
        java_id: i64,
        depth: usize,
        native_depth: usize,
    ) -> Slot {
        let max_record = RECORD_HEADER_WORDS + native_depth + 2 * depth;
        let frame = CallFrame {
            lineno: 0,
            method_id: std::ptr::null_mut(),
        };
        Slot {
            tid: AtomicI32::new(tid),
            env: AtomicPtr::new(env),
            identity: Mutex::new(Identity { name, java_id }),
            ring: Ring::new((4 * max_record).max(16 * 1024)),
            dropped: AtomicU64::new(0),
            ended: AtomicBool::new(false),
            timer: Mutex::new(None),
            depth,
            native_depth,
            scratch: UnsafeCell::new(Scratch {
                pcs: vec![0; native_depth].into(),
                frames: vec![frame; depth].into(),
            }),
        }
    }

    /// The kernel thread id of the thread that owns the slot.
    #[inline]
    pub fn tid(&self) -> i32 {
        self.tid.load(Ordering::Acquire)
    }

    /// The owning thread's JNIEnv.
    #[inline]
    pub fn env(&self) -> JniEnv {
        self.env.load(Ordering::Acquire)
    }

    /// The owning thread's Java identity.
    pub fn identity(&self) -> Identity {
        self.identity.lock().map(|i| i.clone()).unwrap_or(Identity {
            name: String::new(),
            java_id: 0,
        })
    }

    /// Gives a free slot to thread `tid`. The caller took it from [`FREE`], so its previous
    /// thread is gone, its timer deleted and its ring empty.
    pub fn reuse(&self, tid: i32, env: JniEnv, name: String, java_id: i64) {
        if let Ok(mut i) = self.identity.lock() {
            *i = Identity { name, java_id };
        }
        self.env.store(env, Ordering::Release);
        self.tid.store(tid, Ordering::Release);
        self.dropped.store(0, Ordering::Relaxed);
        self.ended.store(false, Ordering::Release);
    }

    /// Whether the slot was made for `depth` Java and `native_depth` native frames.
    pub fn fits(&self, depth: usize, native_depth: usize) -> bool {
        (self.depth, self.native_depth) == (depth, native_depth)
    }

    /// Deletes the thread's timer, if armed (idempotent).
    pub fn disarm(&self) {
        if let Some(timer) = self.timer.lock().ok().and_then(|mut t| t.take()) {
            timer.delete();
        }
    }

    /// The pointer a timer carries in `si_value`.
    pub fn as_signal_value(&'static self) -> *mut c_void {
        self as *const Slot as *mut c_void
    }

    /// The slot a timer signal refers to.
    ///
    /// # Safety
    /// `value` must be null or a pointer made by [`Slot::as_signal_value`].
    pub unsafe fn from_signal_value(value: *mut c_void) -> Option<&'static Slot> {
        // SAFETY: per the contract, non-null values point at a leaked, never-freed Slot.
        unsafe { value.cast::<Slot>().cast_const().as_ref() }
    }

    /// The handler's scratch buffers.
    ///
    /// # Safety
    /// Only the signal handler running on the thread `self.tid` may call this, and only once per
    /// invocation (the handler does not nest), so the reference is unique.
    #[allow(clippy::mut_from_ref)]
    pub unsafe fn scratch(&self) -> &mut Scratch {
        // SAFETY: uniqueness is guaranteed by the caller (see above).
        unsafe { &mut *self.scratch.get() }
    }
}

/// The slots of threads that may still be sampled or drained (for the drain thread and
/// ThreadEnd; never touched by the handler).
pub static SLOTS: Mutex<Vec<&'static Slot>> = Mutex::new(Vec::new());

/// Slots whose thread is gone and whose ring is drained, ready for new threads.
pub static FREE: Mutex<Vec<&'static Slot>> = Mutex::new(Vec::new());

/// Slots allocated and slots reused, for the summary.
pub static SLOTS_CREATED: AtomicU64 = AtomicU64::new(0);
/// See [`SLOTS_CREATED`].
pub static SLOTS_REUSED: AtomicU64 = AtomicU64::new(0);
